"""Issue 30: the certified search at scale, old code beside new in one run (Cargo 2000, k = 2, t = 0.5 %).

Each row is a fresh process (`python -m benchmarks.certify --one`), run in this checkout ("new") or in a
checkout of the code before the change measured ("old", `--old PATH`: a `git worktree` of it; 3240dc1 for
issue 30's first round, b2e6cf9 for its second, 27b8ffa its third, 393cbbc its fourth), so both
read the same data and their wall and CPU seconds (the process's user + system time, solver threads included)
come from the same machine in the same hour. Rows of one table run one after the other, except table C's
long runs, which run side by side (old and new at the same time, under the same load).

    python -m benchmarks.certify_scale --old ../wt-old --tables A,B       # about 15 minutes
    python -m benchmarks.certify_scale --old ../wt-old --tables C         # 10 minutes, 4 processes at once
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

from benchmarks.certify import fmt, interval
from benchmarks.common import RESULTS, machine, markdown

REPO = Path(__file__).resolve().parent.parent


def spawn(repo: Path, spec: dict) -> dict:
    """`benchmarks.certify --one spec` in `repo`; its JSON, with the process's own wall and CPU seconds."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.certify", "--one", json.dumps(spec)], cwd=repo,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(repo)})
    _, _, usage = os.wait4(process.pid, 0)
    stdout = process.stdout.read() if process.stdout else ""
    stderr = process.stderr.read() if process.stderr else ""
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    out = json.loads(lines[-1]) if lines else {"stopped": "error", "error": stderr.strip()[-160:]}
    out["process_cpu"] = usage.ru_utime + usage.ru_stime
    out["process_wall"] = time.perf_counter() - start
    print(json.dumps({"repo": str(repo), **spec, **out}), flush=True)
    return out


def spec(q: int, algorithm: str, options: dict | None = None, time_limit: float | None = None,
         max_evaluations: int | None = None, bound: bool = False, tighten: float | None = None,
         seed: int = 1) -> dict:
    return {"q": q, "algorithm": algorithm, "options": options or {}, "time_limit": time_limit,
            "max_evaluations": max_evaluations, "bound": bound, "tighten": tighten, "seed": seed}


def gap(r: dict, low: str = "lower_bound") -> float | None:
    return None if r.get(low) is None or r.get("log") is None else r["log"] - r[low]


def row_certify(code: str, r: dict) -> list:
    return [code, r.get("stopped"), r.get("optimal"), interval(r), fmt(gap(r), 4), r.get("evaluations", ""),
            fmt(r.get("wall")), fmt(r.get("cpu")), fmt(r.get("process_cpu")), fmt(r.get("rounds")),
            fmt(r.get("cover_cuts")), fmt(r.get("solver_seconds")), r.get("error", "")]


CERTIFY_HEAD = ["code", "stopped", "optimal", "interval [bound, found]", "gap", "evaluations", "wall s", "CPU s",
                "process CPU s", "rounds", "cuts", "solver s", "note"]


def table_certify(old: Path, qs: list[int], limit: float) -> str:
    rows = []
    for q in qs:
        for code, repo in (("old", old), ("new", REPO)):
            rows.append([q, *row_certify(code, spawn(repo, spec(q, "certify", time_limit=limit)))])
    return markdown(["q", *CERTIFY_HEAD], rows)


def table_strategies(q: int, limit: float, strategies: list[str]) -> str:
    rows = []
    for strategy in strategies:
        r = spawn(REPO, spec(q, "certify", {"strategy": strategy}, time_limit=limit))
        rows.append([q, strategy, *row_certify("new", r)[1:]])
    return markdown(["q", "strategy", *CERTIFY_HEAD[1:]], rows)


def table_ga_bound(old: Path, qs: list[int], seeds: list[int], tighten: int) -> str:
    rows = []
    for q in qs:
        for seed in seeds:
            for code, repo, extra in (("old", old, None), ("new", REPO, tighten)):
                r = spawn(repo, spec(q, "kgen", {"preset": "kgen+"}, max_evaluations=5000, bound=True,
                                     tighten=extra, seed=seed))
                rows.append([q, seed, code, fmt(r.get("log"), 5), fmt(r.get("bound_lower"), 5),
                             fmt(gap(r, "bound_lower"), 4), r.get("bound_cuts", ""), fmt(r.get("wall")),
                             fmt(r.get("cpu")), fmt(r.get("bound_wall")), fmt(r.get("bound_cpu")), r.get("error", "")])
    return markdown(["q", "seed", "code", "GA LOG (kgen+, 5,000 evaluations)", "proved bound", "gap", "cuts",
                     "GA wall s", "GA CPU s", "bound wall s", "bound CPU s", "note"], rows)


def table_long(old: Path, qs: list[int], limit: float) -> str:
    jobs = [(q, code, repo) for q in qs for code, repo in (("old", old), ("new", REPO))]
    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(lambda job: spawn(job[2], spec(job[0], "certify", time_limit=limit)), jobs))
    return markdown(["q", *CERTIFY_HEAD], [[q, *row_certify(code, r)] for (q, code, _), r in zip(jobs, results)])


def table_auto(qs: list[int]) -> str:
    rows = []
    for q in qs:
        r = spawn(REPO, spec(q, "auto"))
        rows.append([q, *row_certify("new", r)])
    return markdown(["q", *CERTIFY_HEAD], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the code before issue 30")
    parser.add_argument("--tables", default="A,B", help="A: certify q = 15, 20, 25; B: GA + bound; C: long runs; "
                        "S: CP-SAT strategies at q = 25; D: auto with its default limit")
    parser.add_argument("--limit", type=float, default=300.0, help="time limit of table A's runs")
    parser.add_argument("--long-limit", type=float, default=600.0, help="time limit of table C's runs")
    parser.add_argument("--seeds", default="1", help="GA seeds of table B (the old benchmark always runs seed 1)")
    parser.add_argument("--tighten", type=int, default=10, help="rounds of the new tightened bound")
    args = parser.parse_args(argv)
    tables = args.tables.split(",")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    seeds = [int(s) for s in args.seeds.split(",")]
    sections = []
    if "A" in tables:
        sections.append((f"A. Certified search, old and new code ({args.limit:g} s limit)",
                         table_certify(args.old, [15, 20, 25], args.limit)))
    if "S" in tables:
        sections.append(("S. CP-SAT strategies, new code, q = 25",
                         table_strategies(25, args.limit, ["adaptive", "default", "lp0", "core"])))
    if "B" in tables:
        sections.append((f"B. The bound beside a GA answer: old certified_bound, new tightened_bound "
                         f"({args.tighten} rounds)", table_ga_bound(args.old, [25, 97], seeds, args.tighten)))
    if "C" in tables:
        sections.append((f"C. Long certified runs ({args.long_limit:g} s; old and new side by side)",
                         table_long(args.old, [50, 97], args.long_limit)))
    if "D" in tables:
        sections.append(("D. auto with its default limit (60 s)", table_auto([12, 25, 50, 97])))
    header = (f"Machine: {machine()}, shared (load average {load[0]:.1f} at the start); {started}. Old: "
              f"{args.old}. Wall and CPU seconds of the search itself; process CPU s: the whole process's user + "
              f"system time (data loading and the solver's threads included).\n\n")
    text = header + "\n\n".join(f"## {title}\n\n{body}" for title, body in sections) + "\n"
    print(text)
    out = RESULTS / f"certify-scale.{'-'.join(tables)}.part.md"
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
