"""The risk-utility frontier (issue 28, docs/frontier.md): its acceptance figures.

A. Adult, 8 QIs (file order), k = 2, t = 1 %, (LOG, average prosecutor risk): the exact frontier (every node
   evaluated) beside NSGA-II alone (no exhaustive check) for five seeds: hypervolume ratio (both objectives
   scaled to the exact front's range, reference point 1.1), exact points found, evaluations, CPU and wall
   seconds.
B. Adult, the README's 4 QIs, k = 2 .. 50, t = 1 %, (LOG, highest prosecutor risk): the frontier's optimum LOG
   at every k against a separate certified search (`kgen.anonymize`, algorithm certify) at that k.
C. Cargo 2000 (3,942 records), 25 QIs, k = 2, t = 0.5 %, (LOG, average risk): seconds, points, and every
   point's release checked by kgen.check.

    python -m benchmarks.frontier            # all three, about a minute of CPU; writes results/frontier.md
"""

from __future__ import annotations

import dataclasses
import sys
import time

from benchmarks.common import ADULT_QIS, DATA, REPO, machine
from kgen.io.table import read_csv
from kgen.run.config import Config
from kgen.run.frontier import Measure, frontier
from kgen.run.pipeline import anonymize
from kgen.run.prepare import prepare
from lattice.search.base import Limits
from lattice.search.pareto import ParetoGA, pareto_front, ratio

README_QIS = ("sex", "age", "race", "marital-status")
SEEDS = (0, 1, 2, 3, 4)


def clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def since(start: tuple[float, float]) -> tuple[float, float]:
    return time.process_time() - start[0], time.perf_counter() - start[1]


def table_a() -> list[str]:
    """NSGA-II against the exact frontier on Adult 8 QIs."""
    table = read_csv(DATA / "adult" / "adult.csv")
    prepared = prepare(table, Config(qi=ADULT_QIS, k=2, suppression=0.01, hierarchy_dir=str(DATA / "adult"),
        keep_unnamed=True))
    risk = Measure(prepared, "average", None).of

    start = clock()
    exact = ParetoGA(generations=0, local_search=False, exhaustive_max=10**7).run(
        prepared.problem(), Limits(seed=0), risk).params["front"]
    cpu, wall = since(start)
    lines = [f"Exact frontier (every one of {prepared.box.size:,} nodes evaluated): {len(exact)} points, "
             f"{cpu:.1f} CPU s ({wall:.1f} s wall).", "",
             "| seed | points | exact points found | hypervolume ratio | ratio before the local search | evaluations | "
             "CPU s | wall s |", "|---|---|---|---|---|---|---|---|"]
    exact_nodes = {tuple(p[2]) for p in exact}
    for seed in SEEDS:
        prepared.evaluator.clear_cache()
        start = clock()
        found = ParetoGA(exhaustive_max=0).run(prepared.problem(), Limits(seed=seed), risk)
        cpu, wall = since(start)
        front = found.params["front"]
        hits = sum(tuple(p[2]) in exact_nodes for p in front)
        before = ratio(found.params["ga_front"], exact)
        lines.append(f"| {seed} | {len(front)} | {hits} of {len(exact)} | {ratio(front, exact):.4f} | {before:.4f} | "
                     f"{found.evaluations} | {cpu:.2f} | {wall:.2f} |")
        print(lines[-1], flush=True)
    return lines


def table_b() -> list[str]:
    """The highest-risk frontier against certify at every k."""
    table = read_csv(DATA / "adult" / "adult.csv")
    config = Config(qi=README_QIS, suppression=0.01, hierarchy_dir=str(DATA / "adult"), keep_unnamed=True)
    start = clock()
    result = frontier(table, config, "highest", 2, 50)
    cpu, wall = since(start)
    per_k = {row["k"]: row for row in result["per_k"]}
    start = clock()
    equal, rows = 0, []
    for k in range(2, 51):
        alone = anonymize(table, dataclasses.replace(config, k=k, algorithm="certify", bound=False))
        same = abs(per_k[k]["log"] - alone.evaluation.log) < 1e-12 and alone.search.optimal
        equal += same
        if not same:
            rows.append(f"k = {k}: frontier {per_k[k]['log']} certify {alone.evaluation.log}")
    cpu_alone, wall_alone = since(start)
    lines = [f"Frontier: {len(result['points'])} points from {result['frontier']['certify_runs']} certified searches "
             f"(k 2 to 50), {cpu:.1f} CPU s ({wall:.1f} s wall). Certify alone at each of the 49 k: "
             f"{cpu_alone:.1f} CPU s ({wall_alone:.1f} s wall). Optimum LOG equal at {equal} of 49 k."] + rows
    lines += ["", "| k range | node (sex, age, race, marital-status) | LOG | highest risk |", "|---|---|---|---|"]
    for p in result["points"]:
        ks = [k for k, row in per_k.items() if row["node"] == p["levels"]]
        lines.append(f"| {min(ks)}-{max(ks)} | {tuple(p['levels'])} | {p['log']:.4f} | {p['risk']:.4f} |")
    print("\n".join(lines), flush=True)
    return lines


def table_c() -> list[str]:
    """Cargo 2000 with 25 QIs."""
    sys.path.insert(0, str(REPO))
    from experiments.common import load_cargo  # the 3,942 records (the file's last line is all commas)

    dataset = load_cargo()
    start = clock()
    result = frontier(dataset.table, dataset.config(25), "average", 2, 50)
    cpu, wall = since(start)
    checked = sum(bool(p["checked"]["passed"]) for p in result["points"])
    feasible = sum(p["los"] <= 0.005 + 1e-12 for p in result["points"])
    how = result["frontier"]
    line = (f"Cargo 2000, {dataset.table.n:,} rows, 25 QIs, k = 2, t = 0.5 %: {len(result['points'])} points in "
            f"{cpu:.1f} CPU s ({wall:.1f} s wall), {how['evaluations']:,} evaluations; feasible {feasible} of "
            f"{len(result['points'])}, passed kgen.check {checked} of {len(result['points'])}; LOG from "
            f"{result['points'][0]['log']:.3f} to {result['points'][-1]['log']:.3f}.")
    print(line, flush=True)
    return [line, "", *cargo_stability(dataset)]


def cargo_stability(dataset: object) -> list[str]:
    """No exact frontier exists at 25 QIs (10^13 nodes): the default GA (60 generations of 60) and one five
    times longer (300 of 100), two seeds each, against the non-dominated union of the four."""
    prepared = prepare(dataset.table, dataset.config(25))  # type: ignore[attr-defined]
    risk = Measure(prepared, "average", None).of

    runs = {}
    for generations, population in ((60, 60), (300, 100)):
        for seed in (0, 1):
            prepared.evaluator.clear_cache()
            start = clock()
            found = ParetoGA(generations=generations, population=population).run(prepared.problem(), Limits(seed=seed),
                                                                               risk)
            runs[(generations, population, seed)] = (found, since(start)[0])
    union = pareto_front([(p[0], p[1], tuple(p[2])) for found, _ in runs.values() for p in found.params["front"]])
    lines = ["| generations x population | seed | points | hypervolume ratio to the union | evaluations | CPU s |",
             "|---|---|---|---|---|---|"]
    for (generations, population, seed), (found, cpu) in runs.items():
        front = found.params["front"]
        lines.append(f"| {generations} x {population} | {seed} | {len(front)} | {ratio(front, union):.4f} | "
                     f"{found.evaluations:,} | {cpu:.2f} |")
    print("\n".join(lines), flush=True)
    return lines


def main() -> None:
    a, b, c = table_a(), table_b(), table_c()
    text = ["# The risk-utility frontier (issue 28)", "",
            f"`python -m benchmarks.frontier` on {machine()}; the machine was shared with other sessions (load "
            "about 7 on 2 cores): compare CPU seconds, not wall.", "",
            "## A. NSGA-II against the exact frontier: Adult, 8 QIs, k = 2, t = 1 %, (LOG, average risk)", "",
            *a, "", "## B. Highest prosecutor risk: Adult, README QIs, k = 2 to 50, t = 1 %", "", *b, "",
            "## C. Cargo 2000, 25 QIs, (LOG, average risk)", "", *c, ""]
    (REPO / "results" / "frontier.md").write_text("\n".join(text), encoding="utf-8")
    print("wrote results/frontier.md")


if __name__ == "__main__":
    main()
