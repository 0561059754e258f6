"""Issue 30 item 2: does the GA reach the proved optimum? Old code beside new (both memetic), in one run.

Cargo 2000 (3,942 rows, the first q columns after `nr`), k = 2, suppression 0.5 %, 5,000 evaluations, seeds
1-10. Each (code, q) is one fresh process (`--one`) running every seed one after the other; the old and the new
process of a q run side by side (started together, so under the same load). "old" is a checkout of the code
before this change (`--old PATH`, e.g. `git worktree add ../wt-oldga main`), imported through PYTHONPATH from
this script; "new" is this checkout. Per seed: the LOG found, the distinct evaluations counted (the Budget's
rule: a node counts once, when it is first evaluated; nodes whose feasibility monotonicity decides from
earlier evaluations, and nodes evaluated before, are not evaluations), the evaluation at which that LOG was
first reached, and the search's wall and CPU seconds (`time.process_time`, the process's own threads).

    python -m benchmarks.ga_optimum --old ../wt-basega                 # q = 8, 10, 12, 25, 97
    python -m benchmarks.ga_optimum --old ../wt-oldga --old-preset kgen+   # the first round: kgen+ before
    python -m benchmarks.ga_optimum --old ../wt-oldga --qs 25 --seeds 1-10 --auto 120
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NEW_PRESET = "memetic"


def one(spec: dict) -> list[dict]:
    """Every seed of one (q, algorithm, preset) in this process; one dict per seed."""
    import lattice
    from experiments.common import load_cargo
    from kgen.run.prepare import prepare
    from lattice.search.base import Limits

    dataset = load_cargo()
    prepared = prepare(dataset.table, dataset.config(spec["q"]))
    rows = []
    for seed in spec["seeds"]:
        search = make(spec)
        cpu, wall = time.process_time(), time.perf_counter()
        result = search.run(prepared.problem(), Limits(spec["evaluations"], spec["time_limit"], seed))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        log = None if result.best is None else float(result.best.loss)
        reached = next((t["evaluations"] for t in result.trace if t.get("best_loss") == log), None)
        rows.append({"seed": seed, "log": log, "evaluations": result.evaluations, "reached": reached,
                     "stopped": str(result.stopped), "cpu": cpu, "wall": wall, "code": lattice.__file__,
                     "lower_bound": result.params.get("lower_bound"), "optimal": result.params.get("optimal")})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def make(spec: dict) -> object:
    """The search of a spec: the GA with its preset, or `auto` (the old code's takes `ga_preset`)."""
    if spec["algorithm"] == "auto":
        from lattice.search.auto import Auto

        key = "preset" if "preset" in Auto.__dataclass_fields__ else "ga_preset"
        return Auto(**{key: spec["preset"]})
    from lattice.search.kgen_ga import KGen

    return KGen(preset=spec["preset"])


def spawn(repo: Path, spec: dict) -> list[dict]:
    """`one(spec)` in a fresh interpreter importing the code of `repo`."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", json.dumps(spec)], cwd=repo,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)}, check=False)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if not rows:
        print(done.stderr[-400:], file=sys.stderr)
    return rows


def side_by_side(old: Path, spec: dict, old_preset: str) -> tuple[list[dict], list[dict]]:
    """The old code (`old_preset`) and the new (memetic) on the same spec, started together."""
    with ThreadPoolExecutor(2) as pool:
        before = pool.submit(spawn, old, {**spec, "preset": old_preset})
        after = pool.submit(spawn, REPO, {**spec, "preset": NEW_PRESET})
        return before.result(), after.result()


def fmt(value: object, digits: int = 5) -> str:
    return "" if value is None else f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def table(q: int, old_rows: list[dict], new_rows: list[dict], optimum: float | None) -> str:
    """One markdown table: a row per seed, old beside new, and a line counting the seeds at the optimum."""
    head = ("| q | seed | old LOG | old evaluations (reached at) | old CPU s | old wall s | new LOG | "
            "new evaluations (reached at) | new CPU s | new wall s |\n|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for a, b in zip(old_rows, new_rows):
        lines.append(f"| {q} | {a['seed']} | {fmt(a['log'])} | {a['evaluations']} ({a['reached']}) | "
                     f"{a['cpu']:.2f} | {a['wall']:.2f} | {fmt(b['log'])} | {b['evaluations']} ({b['reached']}) | "
                     f"{b['cpu']:.2f} | {b['wall']:.2f} |")
    best = optimum if optimum is not None else min(r["log"] for r in old_rows + new_rows if r["log"] is not None)
    hits = [sum(1 for r in rows if r["log"] is not None and r["log"] <= best + 1e-9) for rows in (old_rows, new_rows)]
    cpu = [sum(r["cpu"] for r in rows) for rows in (old_rows, new_rows)]
    lines.append(f"\nq = {q}: at LOG {best:.5g} ({'proved optimum' if optimum else 'best of both'}): old "
                 f"{hits[0]}/{len(old_rows)}, new {hits[1]}/{len(new_rows)}; CPU s in all: old {cpu[0]:.1f}, "
                 f"new {cpu[1]:.1f}")
    if q in CERTIFIED:
        near = [sum(1 for r in rows if r["log"] is not None and r["log"] <= CERTIFIED[q] + 0.01)
                for rows in (old_rows, new_rows)]
        means = [sum(r["log"] for r in rows) / len(rows) for rows in (old_rows, new_rows)]
        lines.append(f"q = {q}: within 0.01 of certify's best {CERTIFIED[q]} (<= {CERTIFIED[q] + 0.01:.5g}): old "
                     f"{near[0]}/{len(old_rows)}, new {near[1]}/{len(new_rows)}; mean LOG old {means[0]:.4f}, "
                     f"new {means[1]:.4f}")
    return "\n".join(lines)


OPTIMA = {8: 0.8375, 10: 0.86167, 12: 0.81806, 25: 0.826}  # proved (exhaustive / certify; results/benchmarks)
CERTIFIED = {97: 0.84381}  # the best certify finds in 600 s (results/benchmarks/certify-scale.md, sixth round)


def seeds_of(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--old", type=Path, help="a checkout of the code before the change")
    parser.add_argument("--old-preset", default="memetic", help="the old code's preset (memetic; kgen+ before it)")
    parser.add_argument("--qs", default="8,10,12,25,97")
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--evaluations", type=int, default=5000)
    parser.add_argument("--auto", type=float, help="also `auto` at each q with this time limit (seed 1)")
    args = parser.parse_args(argv)
    if args.one:
        one(json.loads(args.one))
        return 0
    if args.old is None:
        parser.error("--old PATH is needed (a checkout of the code before the change)")
    print(f"load average at start: {os.getloadavg()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for q in (int(v) for v in args.qs.split(",")):
        spec = {"q": q, "algorithm": "kgen", "seeds": seeds_of(args.seeds), "evaluations": args.evaluations,
                "time_limit": None}
        old_rows, new_rows = side_by_side(args.old.resolve(), spec, args.old_preset)
        print(table(q, old_rows, new_rows, OPTIMA.get(q)), flush=True)
        if args.auto:
            old_auto, new_auto = side_by_side(args.old.resolve(), {**spec, "algorithm": "auto", "seeds": [1],
                                                                   "evaluations": None, "time_limit": args.auto},
                                              args.old_preset)
            for code, rows in ((f"old auto ({args.old_preset})", old_auto), ("new auto (memetic)", new_auto)):
                for r in rows:
                    print(f"q = {q} {code}: LOG {fmt(r['log'])} in [{fmt(r['lower_bound'])}, {fmt(r['log'])}], "
                          f"optimal {r['optimal']}, {r['evaluations']} evaluations, {r['cpu']:.1f} CPU s, "
                          f"{r['wall']:.1f} wall s ({r['stopped']})", flush=True)
        print(f"load average: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
