"""The certified search beside best-first and OLA, its solvers, its cuts per round, and the GA's proved gap.

Cargo 2000 (3,942 rows, the first q columns after `nr`, decimal hierarchies as in experiments/common.py),
k = 2, t = 0.5 %. Every run is a fresh process (`--one`), so each starts from a cold cache, CPU seconds are
its own, and the HiGHS solver (highspy), which cannot share a process with OR-tools (both bundle HiGHS),
can be measured too.

    python -m benchmarks.certify                 # tables A-D (about 10 minutes on 2 shared cores)
    python -m benchmarks.certify --long 25,50,97 --time-limit 600   # table E: one long run at a time
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import RESULTS, machine, markdown

REPO = Path(__file__).resolve().parent.parent


def one(q: int, algorithm: str, options: dict, time_limit: float | None, max_evaluations: int | None,
        bound: bool, tighten: float | None = None, seed: int = 1) -> dict:
    """One search in this process; its figures as a dict (printed as JSON by `--one`)."""
    from experiments.common import load_cargo
    from kgen.run.algorithms import make_search
    from kgen.run.prepare import prepare
    from lattice.search.base import Limits
    from lattice.search.certify import certified_bound

    prepared = prepare(load_cargo().table, load_cargo().config(q))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        if algorithm == "auto":  # issue 30's search, until kgen/algorithms.py registers it
            from lattice.search.auto import Auto

            search = Auto(**options)
        else:
            search = make_search(algorithm, options)
        result = search.run(prepared.problem(), Limits(max_evaluations, time_limit, seed))
    except Exception as error:  # a refusal (box too large) is a row, not a crash
        return {"q": q, "algorithm": algorithm, "options": options, "stopped": "refused", "error": str(error)[:80]}
    out = {"q": q, "algorithm": algorithm, "options": options, "stopped": result.stopped,
           "evaluations": result.evaluations, "wall": time.perf_counter() - wall0,
           "cpu": time.process_time() - cpu0, "box": prepared.box.size,
           "log": None if result.best is None else result.best.log,
           "infeasible": len(result.infeasible)}
    for key in ("lower_bound", "optimal", "rounds", "cover_cuts", "solver_seconds", "solves", "conditional_floors"):
        if key in result.params:
            out[key] = result.params[key]
    if bound:
        cpu1, wall1 = time.process_time(), time.perf_counter()
        if tighten:  # issue 30: the loop started from the search's evaluations, for `tighten` rounds
            from lattice.search.certify import tightened_bound

            record = tightened_bound(prepared.problem(), result.infeasible, result.best, rounds=int(tighten))
        else:
            record = certified_bound(prepared.problem(), result.infeasible, result.best)
        out.update(bound_lower=record["lower_bound"], bound_optimal=record["optimal"], bound_cuts=record["cuts"],
                   bound_wall=time.perf_counter() - wall1, bound_cpu=time.process_time() - cpu1)
    return out


def spawn(q: int, algorithm: str, options: dict | None = None, time_limit: float | None = None,
          max_evaluations: int | None = None, bound: bool = False) -> dict:
    """`one` in a fresh interpreter; its CPU seconds include the solver's threads."""
    spec = json.dumps({"q": q, "algorithm": algorithm, "options": options or {}, "time_limit": time_limit,
                       "max_evaluations": max_evaluations, "bound": bound})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmarks.certify", "--one", spec], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"q": q, "algorithm": algorithm, "options": options or {}, "stopped": "error",
                "error": done.stderr.strip().splitlines()[-1][:100] if done.stderr.strip() else "no output"}
    out = json.loads(lines[-1])
    out["process_cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out["process_wall"] = time.perf_counter() - start
    print(json.dumps(out), flush=True)
    return out


def fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e4 else f"{value:.3g}"
    return str(value)


def interval(r: dict) -> str:
    low, high = r.get("lower_bound"), r.get("log")
    if high is None:
        return ""
    return f"[{fmt(low, 5)}, {fmt(high, 5)}]"


def table_searches(qs: list[int], exact_limit: float) -> str:
    rows = []
    for q in qs:
        for name in ("certify", "bestfirst", "ola"):
            r = spawn(q, name, time_limit=exact_limit)
            rows.append([q, name, r.get("stopped"), r.get("evaluations", ""), fmt(r.get("wall")), fmt(r.get("cpu")),
                         fmt(r.get("log"), 6), fmt(r.get("rounds")), fmt(r.get("cover_cuts")),
                         fmt(r.get("solver_seconds")), r.get("error", "")])
    return markdown(["q", "search", "stopped", "evaluations", "wall s", "CPU s", "LOG", "rounds", "cuts",
                     "solver s", "note"], rows)


def table_solvers(qs: list[int], limit: float) -> str:
    rows = []
    for q in qs:
        for solver in ("cpsat", "highs", "milp"):
            r = spawn(q, "certify", {"solver": solver}, time_limit=limit)
            rows.append([q, solver, r.get("stopped"), r.get("evaluations", ""), fmt(r.get("wall")), fmt(r.get("cpu")),
                         fmt(r.get("solves")), fmt(r.get("solver_seconds")),
                         fmt((r.get("solver_seconds") or 0) / max(r.get("solves") or 1, 1)), interval(r)])
    return markdown(["q", "solver", "stopped", "evaluations", "wall s", "CPU s", "solves", "solver s",
                     "s per solve", "interval"], rows)


def table_cuts(q: int, counts: list[int], limit: float) -> str:
    rows = []
    for cuts in counts:
        r = spawn(q, "certify", {"cuts": cuts}, time_limit=limit)
        rows.append([q, cuts, r.get("stopped"), r.get("evaluations", ""), fmt(r.get("wall")), fmt(r.get("cpu")),
                     fmt(r.get("rounds")), fmt(r.get("cover_cuts")), fmt(r.get("solver_seconds")), interval(r)])
    return markdown(["q", "cuts per round", "stopped", "evaluations", "wall s", "CPU s", "rounds", "cuts",
                     "solver s", "interval"], rows)


def table_ga_gap(qs: list[int]) -> str:
    rows = []
    for q in qs:
        for preset in ("paper", "kgen+"):
            r = spawn(q, "kgen", {"preset": preset}, max_evaluations=5000, bound=True)
            share = (r.get("bound_wall") or 0) / max((r.get("wall") or 0) + (r.get("bound_wall") or 0), 1e-9)
            gap = None if r.get("bound_lower") is None or r.get("log") is None else r["log"] - r["bound_lower"]
            rows.append([q, preset, r.get("evaluations", ""), r.get("infeasible", ""), fmt(r.get("log"), 5),
                         fmt(r.get("bound_lower"), 5), fmt(gap, 4), r.get("bound_cuts", ""), fmt(r.get("wall")),
                         fmt(r.get("cpu")), fmt(r.get("bound_wall")), fmt(r.get("bound_cpu")), f"{share:.0%}"])
    return markdown(["q", "GA preset", "evaluations", "infeasible", "found LOG", "proved bound", "gap", "cuts",
                     "GA wall s", "GA CPU s", "bound wall s", "bound CPU s", "bound share of wall"], rows)


def table_long(qs: list[int], limit: float) -> str:
    rows = []
    for q in qs:
        r = spawn(q, "certify", time_limit=limit)
        gap = None if r.get("lower_bound") is None or r.get("log") is None else r["log"] - r["lower_bound"]
        rows.append([q, fmt(limit), r.get("stopped"), r.get("optimal"), interval(r), fmt(gap, 4),
                     r.get("evaluations", ""), fmt(r.get("wall")), fmt(r.get("cpu")), fmt(r.get("rounds")),
                     fmt(r.get("cover_cuts")), fmt(r.get("solves")), fmt(r.get("solver_seconds"))])
    return markdown(["q", "time limit s", "stopped", "optimal", "interval [bound, found]", "gap", "evaluations",
                     "wall s", "CPU s", "rounds", "cuts", "solves", "solver s"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--qs", default="5,8,10,12,15,20", help="q of table A")
    parser.add_argument("--exact-limit", type=float, default=60.0, help="time limit of table A's runs")
    parser.add_argument("--long", help="q of table E (long certified runs, one at a time), e.g. 25,50,97")
    parser.add_argument("--time-limit", type=float, default=600.0, help="time limit of table E's runs")
    parser.add_argument("--tables", default="A,B,C,D", help="which of tables A-D to run")
    parser.add_argument("--out", type=Path, default=RESULTS / "certify.md")
    args = parser.parse_args(argv)
    if args.one:
        spec = json.loads(args.one)
        print(json.dumps(one(spec["q"], spec["algorithm"], spec["options"], spec["time_limit"],
                             spec["max_evaluations"], spec["bound"], spec.get("tighten"), spec.get("seed", 1))))
        return 0
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    sections = []
    tables = set(args.tables.split(",")) if args.tables else set()
    if "A" in tables:
        sections.append(("A. Certified search beside best-first and OLA (time limit "
                         f"{args.exact_limit:g} s each)", table_searches([int(q) for q in args.qs.split(",")],
                                                                            args.exact_limit)))
    if "B" in tables:
        sections.append(("B. Solvers of the cut model (CP-SAT incremental model with hints; HiGHS live model, "
                         "rows added; scipy milp rebuilt every solve), q = 10, 120 s limit",
                         table_solvers([10], 120.0)))
    if "C" in tables:
        sections.append(("C. Maximal infeasible nodes raised per round (q = 15; q = 20), 120 s limit",
                         table_cuts(15, [1, 4, 16, 32, 64], 120.0) + "\n\n" + table_cuts(20, [16, 32, 64], 120.0)))
    if "D" in tables:
        sections.append(("D. The GA's proved gap (5,000 evaluations, seed 1) and what the bound costs",
                         table_ga_gap([25, 97])))
    if args.long:
        sections.append((f"E. Long certified runs (time limit {args.time_limit:g} s, one at a time)",
                         table_long([int(q) for q in args.long.split(",")], args.time_limit)))
    text = "\n\n".join(f"## {title}\n\n{body}" for title, body in sections)
    header = (f"Machine: {machine()}, shared (load average {load[0]:.1f} at the start); {start}. Wall and CPU "
              "seconds of the search itself (CPU = the process's user + system time).\n\n")
    print(header + text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(f".{'-'.join(sorted(tables)) or 'long'}.part.md").write_text(header + text + "\n",
                                                                                    encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
