"""Growth of time and memory with the table's size (issue 15): the synthetic table (10 numeric QIs, k = 2,
t = 0.5 %, the KGen GA for about 200 evaluations) at 10k, 100k, 1M and 4M rows.

Two fresh processes per size, one after the other (never in parallel):

* the phases, through the API in a child process: `pandas.read_csv` of the same file (the yardstick of
  issue 15: read + prepare within 2x of it, side by side in the same process), read
  (`kgen.io.table.read_table`) and prepare (`kgen.run.pipeline.prepare`), in that order, `--rounds` times (each cell is
  the median over the rounds, and the ratio the median of the rounds' ratios: the first round of each also
  pays for its first allocations); then search (`kgen.run.pipeline.search`), and release + check
  (`kgen.run.pipeline.finish`, which builds the release and its report, then `kgen.write_release`:
  the release streamed to a file, re-read and checked by the independent checker), each in wall and CPU seconds;
* the whole command line, `python -m kgen anonymize ...` under `/usr/bin/time -v`: its wall and CPU seconds
  and its peak resident set size ("Maximum resident set size"), per row of the table.

    python -m benchmarks.growth [--rows 10000,100000,1000000,4000000] [--evaluations 200] [--rounds 3]
                                [--tree PATH]

`--tree` measures another checkout of kgen (e.g. the main branch) with the same script. The table goes to
results/benchmarks/growth.md (a section per tree).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import common, synthetic

K, SUPPRESSION, SEED = 2, 0.005, 1

PHASES_CHILD = """
import json, sys, time, tempfile, os
import pandas as pd
path, columns, evaluations = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
k, suppression, seed, rounds = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
from kgen import write_release
from kgen.run.pipeline import finish, search
from kgen.run.prepare import prepare
from kgen.run.config import Config
from kgen.io.table import read_table
out = {}
def phase(name, body):
    wall, cpu = time.perf_counter(), time.process_time()
    value = body()
    out.setdefault(name, []).append([time.perf_counter() - wall, time.process_time() - cpu])
    return value
config = Config(qi=tuple(columns), k=k, suppression=suppression, max_evaluations=evaluations, seed=seed)
for _ in range(rounds):
    frame = phase("pandas", lambda: pd.read_csv(path))
    del frame
    table = prepared = None
    table = phase("read", lambda: read_table(path))
    prepared = phase("prepare", lambda: prepare(table, config))
result = phase("search", lambda: search(prepared))
with tempfile.TemporaryDirectory() as folder:
    phase("release", lambda: write_release(finish(prepared, result), os.path.join(folder, "out.csv")))
out["evaluations"] = result.evaluations
print(json.dumps(out))
"""


def environment(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def phases(tree: Path, path: Path, evaluations: int, rounds: int) -> dict:
    """Wall and CPU seconds of each phase through the API, in a fresh process run from a neutral folder: per
    phase the median over the rounds (one round for search and release), and `ratio`, the median over the
    rounds of (read + prepare) / pandas.read_csv, wall and CPU."""
    arguments = [str(path), ",".join(synthetic.COLUMNS), str(evaluations), str(K), str(SUPPRESSION), str(SEED),
                 str(rounds)]
    out = subprocess.run([sys.executable, "-c", PHASES_CHILD, *arguments], capture_output=True, text=True, check=True,
                         cwd="/", env=environment(tree))
    raw = json.loads(out.stdout.strip().splitlines()[-1])
    result = {name: [statistics.median(r[i] for r in runs) for i in (0, 1)] for name, runs in raw.items()
              if isinstance(runs, list)}
    result["evaluations"] = raw["evaluations"]
    result["ratio"] = [statistics.median((read[i] + prep[i]) / pandas[i]
                                         for pandas, read, prep in zip(raw["pandas"], raw["read"], raw["prepare"]))
                       for i in (0, 1)]
    return result


def whole_cli(tree: Path, path: Path, evaluations: int) -> dict:
    """`python -m kgen anonymize` under /usr/bin/time -v: wall, CPU (user + system) and peak RSS in bytes."""
    with tempfile.TemporaryDirectory() as folder:
        command = ["/usr/bin/time", "-v", sys.executable, "-m", "kgen", "anonymize", str(path),
                   "--qi", ",".join(synthetic.COLUMNS), "--k", str(K), "--suppression", str(SUPPRESSION),
                   "--max-evaluations", str(evaluations), "--seed", str(SEED), "--quiet",
                   "--output", os.path.join(folder, "out.csv")]
        wall = time.perf_counter()
        out = subprocess.run(command, capture_output=True, text=True, cwd="/", env=environment(tree))
        wall = time.perf_counter() - wall
    if out.returncode != 0:
        raise SystemExit(f"kgen anonymize failed ({out.returncode}): {out.stderr[-2000:]}")

    def field(name: str) -> float:
        return float(re.search(rf"{re.escape(name)}: ([0-9.]+)", out.stderr).group(1))  # type: ignore[union-attr]

    return {"wall": wall, "cpu": field("User time (seconds)") + field("System time (seconds)"),
            "rss": int(field("Maximum resident set size (kbytes)")) * 1024}


def pair(seconds: list[float]) -> str:
    return f"{seconds[0]:.2f} / {seconds[1]:.2f}"


def measure(tree: Path, sizes: list[int], evaluations: int, rounds: int) -> list[list[object]]:
    rows = []
    for n in sizes:
        path = synthetic.path(n)
        p = phases(tree, path, evaluations, rounds)
        c = whole_cli(tree, path, evaluations)
        ratio = p["ratio"]
        rows.append([f"{n:,}", f"{path.stat().st_size / 2**20:.1f}", pair(p["pandas"]), pair(p["read"]),
                     pair(p["prepare"]), f"{ratio[0]:.1f}x / {ratio[1]:.1f}x", p["evaluations"], pair(p["search"]),
                     pair(p["release"]), f"{c['wall']:.1f} / {c['cpu']:.1f}", f"{c['rss'] / 2**20:.0f}",
                     f"{c['rss'] / n:.0f}"])
        print(rows[-1], flush=True)
    return rows


HEADERS = ["rows", "CSV MiB", "pandas.read_csv s", "read s", "prepare s", "read + prepare / pandas (wall / CPU)",
           "evaluations", "search s", "release + check s", "kgen anonymize s", "peak RSS MiB", "peak RSS B / row"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000,4000000")
    parser.add_argument("--evaluations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of pandas, read and prepare per size")
    parser.add_argument("--tree", type=Path, default=common.REPO, help="the kgen checkout to measure")
    parser.add_argument("--label", default=None, help="the section's name (default: this tree)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.rows.split(",")]
    rows = measure(args.tree.resolve(), sizes, args.evaluations, args.rounds)
    label = args.label or ("this tree" if args.tree.resolve() == common.REPO else str(args.tree))
    body = ("Each cell: wall / CPU seconds (CPU = user + system; pyarrow's reader uses both cores, so its CPU can "
            "exceed its wall time). Phases through the API in one fresh process: pandas.read_csv of the same file, "
            f"read and prepare, side by side, {args.rounds} rounds (medians; the ratio is the median of the rounds' "
            "ratios); `kgen anonymize` and its peak RSS (`/usr/bin/time -v`, maximum resident set "
            f"size) in a second fresh process. k = {K}, t = {SUPPRESSION:.1%}, KGen GA, seed {SEED}, "
            f"--max-evaluations {args.evaluations}. Machine: {common.machine()}; shared with other work, sizes run "
            f"one after the other; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n"
            + common.markdown(HEADERS, rows))
    heading = f"## {label}"
    target = common.RESULTS / "growth.md"
    text = target.read_text(encoding="utf-8") if target.exists() else (
        "# Growth with the table's size (issue 15)\n\nProduced by `python -m benchmarks.growth` "
        "(benchmarks/growth.py); see its docstring for what each column measures.\n")
    if heading in text:  # replace this tree's earlier section, keep the others
        start = text.index(heading)
        following = text.find("\n## ", start + len(heading))
        text = text[:start].rstrip("\n") + "\n" + (text[following:] if following >= 0 else "")
    target.write_text(f"{text.rstrip()}\n\n{heading}\n\n{body}\n", encoding="utf-8")
    print(body)


if __name__ == "__main__":
    main()
