"""Peak memory (RSS) of complete runs, each in its own subprocess (`resource.getrusage` in the child).

A run = read the CSV, `kgen.api.prepare`, the search, and `finish` (the release and its report), as
`kgen anonymize` does. The 1,000,000-row synthetic table with the KGen GA is issue 5's 2 GB target.

    python -m benchmarks.memory [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from benchmarks import common

CHILD = """
import json, resource, sys, time
from benchmarks import common
from kgen.api import finish
from benchmarks.search import algorithm
from lattice.search.base import Limits
case, algo, evaluations, time_limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
start = time.perf_counter()
load = {"adult": common.adult, "cargo97": lambda: common.cargo(97), "synthetic": common.synthetic_table}[case]
prepared = load()
prepared_at = time.perf_counter() - start
rss_prepared = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = algorithm(algo).run(prepared.problem(), Limits(max_evaluations=evaluations, seed=1, time_limit=time_limit))
released = finish(prepared, result) if result.best is not None else None
print(json.dumps({"rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "rss_prepared_kib": rss_prepared,
                  "prepare_s": prepared_at, "total_s": time.perf_counter() - start,
                  "evaluations": result.evaluations, "stopped": result.stopped,
                  "released": released is not None}))
"""


def run(case: str, algo: str, evaluations: int, time_limit: float) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, case, algo, str(evaluations), str(time_limit)],
                         capture_output=True, text=True, check=True, cwd=str(common.REPO))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    limit = 120.0 if args.quick else 300.0
    runs = [("adult", "kgen", 5000), ("cargo97", "kgen", 5000), ("synthetic", "kgen", 5000)]
    rows = []
    for case, algo, evaluations in runs:
        r = run(case, algo, evaluations, limit)
        row = [case, algo, r["evaluations"], r["stopped"], f"{r['prepare_s']:.1f}", f"{r['total_s']:.1f}",
               f"{r['rss_prepared_kib'] / 1024:.0f}", f"{r['rss_kib'] / 1024:.0f}",
               "yes" if r["rss_kib"] <= 2 * 1024 * 1024 else "NO"]
        rows.append(row)
        print(row, flush=True)
    headers = ["dataset", "algorithm", "evaluations", "stopped", "prepare s", "total s",
               "peak RSS after prepare MiB", "peak RSS MiB", "<= 2 GiB"]
    notes = ("Peak resident set size (`ru_maxrss`) of a fresh Python process per run: read CSV + prepare + search "
             f"(max 5000 evaluations, time limit {limit:.0f} s) + release. Includes the interpreter and numpy.")
    common.write("memory", "Peak memory of complete runs (issue 5)", headers, rows, notes)


if __name__ == "__main__":
    main()
