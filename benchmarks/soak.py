"""Soak run (issue 8): 100 consecutive anonymizations of Cargo 2000 subsets in one process.

Each run draws its own settings from `random.Random(run)`: a row subset (500 to all 3,942 rows), the first
q QIs after `nr` (q = 3..6 for exhaustive, up to 25 for the other registered algorithms, which get an
evaluation budget), k in {2, 3, 5, 10}, t in {0, 0.005, 0.02}, the fast or bitset kernel, and an algorithm from
the registry. Every run goes through the real command (`kgen.cli.main.main`): the subset is written as a CSV,
anonymized to an output file and report, and the release is verified with `kgen check`.

Resident memory is recorded after every run, after a garbage collection: VmRSS as is, and again after
glibc's `malloc_trim(0)` ("held": without freed pages kept for reuse). The acceptance (issue 8): RSS after the
last run is within 10 % of RSS after the first few (warm-up) runs, i.e. no cache or archive outlives its
run. "Held" and the count of live Python heap blocks are reported beside it as stricter diagnostics: held
memory can grow while live objects do not (allocator arenas fragmented by many short-lived small buffers).
Prints the figures and writes results/benchmarks/soak.md; exit status 1 if the acceptance fails.

    python benchmarks/soak.py [--runs 100] [--warmup 5] [--data PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import ctypes
import ctypes.util
import gc
import io
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kgen.cli.main import main
from kgen.run.algorithms import REGISTRY

DATA = Path(os.environ.get("KGEN_DATA", "/work/shared/data")) / "cargo2000" / "c2k_data_comma.csv"
RESULTS = Path(__file__).resolve().parent.parent / "results" / "benchmarks"
LIMIT = 1.10


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _malloc_trim() -> Callable[[], object] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


MALLOC_TRIM = _malloc_trim()


def memory(trim: bool) -> tuple[float, float | None]:
    """(RSS, RSS after returning the allocator's free pages to the system, if `trim`) in MiB, after a
    garbage collection. The first includes memory that was freed but that glibc keeps for reuse; the second
    is what the process holds once that is given back. Trimming changes later RSS figures, so the soak trims
    only where it takes the baseline and at the end."""
    gc.collect()
    raw = rss_mib()
    if not trim or MALLOC_TRIM is None:
        return raw, None
    MALLOC_TRIM(0)
    return raw, rss_mib()


def settings(run: int, rows: int, warmup: int) -> dict:
    """The settings of one run, drawn from the run number (deterministic).

    The warm-up runs use the largest settings (all rows, the most QIs, each kernel in turn), so that the
    baseline taken after them already holds the largest working set; a later rise is then growth across
    runs (a leak), not a bigger table."""
    rng = random.Random(run)
    algorithm = sorted(REGISTRY)[run % len(REGISTRY)]
    exact = REGISTRY[algorithm].exact  # exact searches get small lattices; the others a budget
    if run <= warmup:
        return {"algorithm": algorithm, "rows": rows, "q": 6 if exact else 25, "k": 2, "t": 0.005,
                "kernel": ("fast", "bitset")[run % 2], "budget": None if exact else 1000, "seed": run}
    return {
        "algorithm": algorithm,
        "rows": rng.choice([500, 1000, 2000, rows]),
        "q": rng.randint(3, 6) if exact else rng.choice([5, 10, 15, 25]),
        "k": rng.choice([2, 3, 5, 10]),
        "t": rng.choice([0.0, 0.005, 0.02]),
        "kernel": rng.choice(["fast", "fast", "bitset"]),
        "budget": None if exact else rng.choice([200, 500, 1000]),
        "seed": run,
    }


def anonymize_once(run: int, header: list[str], body: list[list[str]], folder: Path, warmup: int
                   ) -> tuple[dict, int, float]:
    """One anonymization and its check through the CLI; returns its settings, exit status and seconds."""
    s = settings(run, len(body), warmup)
    rng = random.Random(10_000 + run)
    subset = sorted(rng.sample(range(len(body)), s["rows"]))
    source, output = folder / f"cargo_{run}.csv", folder / f"cargo_{run}_out.csv"
    with open(source, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(body[i] for i in subset)
    qi = ",".join(header[1 : 1 + s["q"]])
    argv = ["anonymize", str(source), "--qi", qi, "--identifier", "nr", "--keep-unnamed", "--k", str(s["k"]),
            "--suppression", str(s["t"]), "--algorithm", s["algorithm"], "--kernel", s["kernel"],
            "--seed", str(s["seed"]), "--output", str(output), "--quiet"]
    if s["budget"] is not None:
        argv += ["--max-evaluations", str(s["budget"])]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(argv)
        if code == 0:
            code = main(["check", str(output), "--qi", qi, "--k", str(s["k"]), "--suppression", str(s["t"])])
            code = 10 + code if code else 0  # 11: a release that fails its check
    seconds = time.perf_counter() - start
    if code not in (0, 3):  # 3: a budgeted heuristic may find no feasible node; anything else is a bug
        raise SystemExit(f"run {run} ({s}) ended with exit {code}: {err.getvalue().strip()}")
    for path in folder.iterdir():
        path.unlink()
    return s, code, seconds


@dataclass(frozen=True)
class Record:
    run: int
    settings: dict
    code: int
    seconds: float
    rss: float  # MiB, after gc
    held: float | None  # MiB, after gc and malloc_trim (baseline and last run only)
    blocks: int  # live Python heap blocks


def main_soak(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5, help="runs after which the baseline is taken")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"soak: Cargo 2000 not found at {args.data} (set KGEN_DATA or --data)", file=sys.stderr)
        return 2
    with open(args.data, newline="", encoding="utf-8") as handle:
        header, *body = list(csv.reader(handle))
    before = memory(trim=False)
    records: list[Record] = []
    total = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kgen-soak-") as name:
        for run in range(1, args.runs + 1):
            s, code, seconds = anonymize_once(run, header, body, Path(name), args.warmup)
            rss, held = memory(trim=run in (args.warmup, args.runs))
            records.append(Record(run, s, code, seconds, rss, held, sys.getallocatedblocks()))
            if run % 10 == 0 or run == args.warmup:
                shown = f" ({held:.1f} MiB held after trimming)" if held is not None else ""
                print(f"run {run:3d}: RSS {rss:6.1f} MiB{shown}, {records[-1].blocks:,} Python blocks "
                      f"({s['algorithm']}, {s['rows']} rows, q = {s['q']}, k = {s['k']}, t = {s['t']}, "
                      f"{s['kernel']}, {seconds:.2f} s)", flush=True)
    total = time.perf_counter() - total
    base, last = records[args.warmup - 1], records[-1]
    rss_ratio = last.rss / base.rss
    held_ratio = last.held / base.held if last.held and base.held else math.nan
    above = ", above the limit" if held_ratio > LIMIT else ""
    passed = rss_ratio <= LIMIT
    no_solution = sum(1 for r in records if r.code == 3)
    summary = (
        f"{'PASS' if passed else 'FAIL'}: RSS after run {args.runs} is {last.rss:.1f} MiB, {rss_ratio:.3f} x the "
        f"{base.rss:.1f} MiB after run {args.warmup} (limit {LIMIT:.2f}; peak {max(r.rss for r in records):.1f} "
        f"MiB; {before[0]:.1f} MiB before the first run). Held after malloc_trim: {base.held or math.nan:.1f} "
        f"-> {last.held or math.nan:.1f} MiB ({held_ratio:.3f} x{above}); live "
        f"Python heap blocks {base.blocks:,} -> {last.blocks:,}. {args.runs} runs in {total:.0f} s: "
        f"{args.runs - no_solution} releases passed `kgen check`, {no_solution} budgeted runs found no feasible "
        "node (exit 3)."
    )
    print(summary)
    write_report(records, summary, args)
    return 0 if passed else 1


def write_report(records: list[Record], summary: str, args: argparse.Namespace) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    per_algorithm: dict[str, list[float]] = {}
    for r in records:
        per_algorithm.setdefault(r.settings["algorithm"], []).append(r.seconds)
    lines = [
        "# Soak: 100 anonymizations of Cargo 2000 subsets in one process",
        "",
        "`python benchmarks/soak.py` (issue 8). Each run writes a subset of Cargo 2000 as CSV, anonymizes it "
        "through `kgen.cli.main.main` (output + report written atomically) and verifies the release with "
        "`kgen check`; settings vary per run (rows, q, k, t, kernel, algorithm; budgets for heuristics). The "
        f"first {args.warmup} runs use the largest settings, so the baseline after them holds the largest "
        "working set. After each run: `gc.collect()` and VmRSS (\"RSS\"); after the baseline run and the last "
        "one also glibc `malloc_trim(0)` and VmRSS again (\"held\": without the freed pages the allocator keeps "
        "for reuse).",
        "",
        f"Machine: {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        f"**{summary}**",
        "",
        "| algorithm | runs | median s | max s |",
        "|---|---|---|---|",
    ]
    for algorithm, times in sorted(per_algorithm.items()):
        lines.append(f"| {algorithm} | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} |")
    lines += ["", "| run | algorithm | rows | q | k | t | kernel | budget | exit | seconds | RSS MiB | held MiB "
              "| Python blocks |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        s = r.settings
        if r.run <= args.warmup or r.run % 5 == 0:
            lines.append(f"| {r.run} | {s['algorithm']} | {s['rows']} | {s['q']} | {s['k']} | {s['t']} | "
                         f"{s['kernel']} | {s['budget'] or '-'} | {r.code} | {r.seconds:.2f} | {r.rss:.1f} | "
                         f"{'-' if r.held is None else f'{r.held:.1f}'} | {r.blocks:,} |")
    (RESULTS / "soak.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main_soak())
