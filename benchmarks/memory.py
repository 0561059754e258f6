"""Peak memory (RSS) of complete runs, each in its own subprocess (`resource.getrusage` in the child).

A run = read the CSV, `kgen.run.pipeline.prepare`, the search, and `finish` (the release and its report), as
`kgen anonymize` does. The 1,000,000-row synthetic table with the KGen GA is issue 5's 2 GB target.

`--ingest` measures only reading and preparing (issue 11: a 2,000,000-row CSV must not need more than 6x the
file's size): peak RSS per MB of input of a fresh process that reads the synthetic table (10 QIs) and
prepares it, for this tree and, with `--before PATH`, for another checkout of kgen (e.g. the main branch), run
one after the other; the rows go to a section of results/benchmarks/memory.md.

    python -m benchmarks.memory [--quick]
    python -m benchmarks.memory --ingest [--rows 2000000] [--before /work/main] [--cli]

`--cli` adds the whole `kgen anonymize` path (read, prepare, 30 GA evaluations, release written and re-read
for the independent check) in a child process, peak RSS from `RUSAGE_CHILDREN`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import common, synthetic

CHILD = """
import json, resource, sys, time
from benchmarks import common
from kgen.run.pipeline import finish
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


INGEST_CHILD = """
import json, os, resource, sys, time
from kgen.run.prepare import prepare
from kgen.run.config import Config
from kgen.io.table import read_csv
path, columns = sys.argv[1], sys.argv[2].split(",")
wall, cpu = time.perf_counter(), time.process_time()
table = read_csv(path)
read_s, rss_read = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
prepared = prepare(table, Config(qi=tuple(columns), k=2, suppression=0.005))
print(json.dumps({"read_s": read_s, "total_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "rss_read_kib": rss_read, "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "rows": prepared.table.n}))
"""
INGEST_SECTION = "## Reading and preparing a large CSV (issue 11)"


def ingest(tree: Path, path: Path) -> dict:
    """Read + prepare `path` with the kgen of `tree` in a fresh process (run from a neutral folder, so that
    only `tree` is on the path); peak RSS from the child's own `ru_maxrss`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", INGEST_CHILD, str(path), ",".join(synthetic.COLUMNS)],
                         capture_output=True, text=True, check=True, cwd="/", env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


CLI_CHILD = """
import os, resource, subprocess, sys, tempfile, time
tree, path, columns = sys.argv[1:4]
with tempfile.TemporaryDirectory() as folder:
    wall = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kgen", "anonymize", path, "--qi", columns, "--k", "2", "--suppression",
                    "0.005", "--max-evaluations", "30", "--seed", "1", "--output", os.path.join(folder, "out.csv"),
                    "--quiet"], check=True, cwd="/", env={**os.environ, "PYTHONPATH": tree})
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(time.perf_counter() - wall, used.ru_utime + used.ru_stime, used.ru_maxrss)
"""


def cli(tree: Path, path: Path) -> dict:
    """The whole `kgen anonymize` path on `path` with the kgen of `tree`, in a child process."""
    out = subprocess.run([sys.executable, "-c", CLI_CHILD, str(tree), str(path), ",".join(synthetic.COLUMNS)],
                         capture_output=True, text=True, check=True, cwd="/")
    wall, cpu, rss = out.stdout.split()
    return {"total_s": float(wall), "cpu_s": float(cpu), "rss_kib": int(rss)}


def ingest_rows(rows: int, before: Path | None, with_cli: bool = False) -> list[list[object]]:
    path = synthetic.path(rows)
    megabytes = path.stat().st_size / 2**20
    trees = ([("before (" + str(before) + ")", before)] if before else []) + [("this tree", common.REPO)]
    table = []
    for label, tree in trees:
        r = ingest(tree, path)
        peak = r["rss_kib"] / 1024
        table.append([label, "read + prepare", f"{rows:,}", f"{megabytes:.1f}", f"{r['total_s']:.1f}",
                      f"{r['cpu_s']:.1f}", f"{peak:.0f}", f"{peak / megabytes:.1f}",
                      f"{r['rss_kib'] * 1024 / rows:.0f}", "yes" if peak <= 6 * megabytes else "NO"])
        print(table[-1], flush=True)
    for label, tree in trees if with_cli else ():
        r = cli(tree, path)
        peak = r["rss_kib"] / 1024
        table.append([label, "kgen anonymize (30 evaluations)", f"{rows:,}", f"{megabytes:.1f}",
                      f"{r['total_s']:.1f}", f"{r['cpu_s']:.1f}", f"{peak:.0f}", f"{peak / megabytes:.1f}",
                      f"{r['rss_kib'] * 1024 / rows:.0f}", "-"])
        print(table[-1], flush=True)
    return table


def write_section(markdown_path: Path, heading: str, body: str) -> None:
    """Put `heading` + `body` at the end of a results file, replacing an earlier version of that section."""
    text = markdown_path.read_text(encoding="utf-8") if markdown_path.exists() else ""
    if heading in text:
        text = text[: text.index(heading)].rstrip("\n") + "\n"
    markdown_path.write_text(f"{text}\n{heading}\n\n{body}\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--ingest", action="store_true", help="measure only reading + preparing (issue 11)")
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the synthetic table for --ingest")
    parser.add_argument("--before", type=Path, default=None, help="another kgen checkout to measure first")
    parser.add_argument("--cli", action="store_true", help="with --ingest: also the whole kgen anonymize path")
    args = parser.parse_args()
    if args.ingest:
        rows = ingest_rows(args.rows, args.before, args.cli)
        headers = ["code", "what", "rows", "file MB", "wall s", "CPU s", "peak RSS MiB", "peak RSS / file MB",
                   "peak RSS B / row", "read + prepare <= 6x"]
        body = ("Peak resident set size (`ru_maxrss`) of a fresh Python process that reads the synthetic table "
                f"(benchmarks/synthetic.py, 10 numeric QIs) with `kgen.io.table.read_csv` and runs "
                "`kgen.run.pipeline.prepare` (k = 2, t = 0.5 %: hierarchies, encoding, evaluator, pre-pruning), "
                "per MB (MiB) of the CSV file. "
                "Includes the interpreter and numpy (about 42 MiB). With `--cli`, also the whole `kgen anonymize` path "
                "(read, prepare, KGen GA for 30 evaluations, release written in chunks, re-read and checked "
                "independently) in a child process. Runs one after the other, not in parallel; wall times on a "
                "shared, loaded machine: compare CPU seconds.\n\n"
                f"Machine: {common.machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
                + common.markdown(headers, rows))
        write_section(common.RESULTS / "memory.md", INGEST_SECTION, body)
        print(body)
        return
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
    kept = (common.RESULTS / "memory.md").read_text(encoding="utf-8") if (common.RESULTS / "memory.md").exists() else ""
    common.write("memory", "Peak memory of complete runs (issue 5)", headers, rows, notes)
    if INGEST_SECTION in kept:  # keep the --ingest section, measured separately
        write_section(common.RESULTS / "memory.md", INGEST_SECTION,
                      kept[kept.index(INGEST_SECTION) + len(INGEST_SECTION):].strip())


if __name__ == "__main__":
    main()
