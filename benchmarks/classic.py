"""The classic algorithms beside OLA, best-first and exhaustive search on the experiments' settings, and
k-Optimize's utility beside full-domain generalization on Adult.

Part 1, per setting (Adult q = 8, 9; Cargo 2000 q = 2..10; fraud F q = 2..15; k, t and hierarchies as in
experiments/common.py): every algorithm from a cold evaluation cache, with its distinct evaluations, wall and
CPU seconds, and the checks of issue 17: samarati's nodes are feasible and of the minimal height (that of
the lowest k-minimal node of exhaustive, or of OLA where exhaustive did not finish), and are exactly the
k-minimal nodes of that height; incognito's minimal set equals exhaustive's (else OLA's); the releases of
samarati, incognito and datafly, written to a CSV file, pass the independent check (kgen.check.kanonymity).

Part 2: k-Optimize (ordered cut points, exact) against the full-domain optimum under the same cost (OLA with
the DM objective over the ARX hierarchies) on Adult QI sets where k-Optimize completes, same k and t: DM,
classes, AECS, suppressed rows, NCP.

    python -m benchmarks.classic [--quick] [--time-limit S] [--parts 1,2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks import common
from experiments import common as experiments
from kgen.check.kanonymity import check_k_anonymity
from kgen.io.csvio import format_csv
from kgen.io.files import write_atomic
from kgen.io.table import read_csv
from kgen.run import pipeline as api
from kgen.run.algorithms import make_search
from kgen.run.config import Config
from lattice.errors import InputError
from lattice.node import height
from lattice.search.base import Limits, SearchResult

experiments.SHARED = common.DATA.parent  # the shared data where the benchmarks find it (KGEN_SHARED)
load_adult, load_cargo, load_fraud = experiments.load_adult, experiments.load_cargo, experiments.load_fraud
ALGORITHMS = ("exhaustive", "ola", "bestfirst", "samarati", "incognito", "datafly")


def settings(quick: bool) -> list[tuple[str, object, int]]:
    adult, cargo, fraud = load_adult(), load_cargo(), load_fraud()
    if quick:
        return [("adult", adult, 8), ("cargo2000", cargo, 5), ("fraud", fraud, 5)]
    return ([("adult", adult, q) for q in (8, 9)] + [("cargo2000", cargo, q) for q in range(2, 11)]
            + [("fraud", fraud, q) for q in range(2, 16)])


def passes_check(prepared: api.Prepared, result: SearchResult, folder: Path) -> bool:
    """Write the release of the search's best node to a CSV file and check it with kgen.check.kanonymity."""
    released = api.finish(prepared, result).release
    path = folder / "release.csv"
    write_atomic(path, format_csv(released.columns, zip(*(released.values[c] for c in released.columns))))
    config = prepared.config
    return check_k_anonymity(read_csv(path), list(config.qi), config.k, config.suppression).passed


def part1(quick: bool, time_limit: float) -> tuple[list[list[object]], list[str]]:
    rows: list[list[object]] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        for name, dataset, q in settings(quick):
            prepared = api.prepare(dataset.table, dataset.config(q))
            results: dict[str, SearchResult] = {}
            for algorithm in ALGORITHMS:
                prepared.evaluator.clear_cache()
                wall, cpu = time.perf_counter(), time.process_time()
                try:
                    result = make_search(algorithm).run(prepared.problem(), Limits(time_limit=time_limit))
                except InputError:  # an exact search's size cap: a missing point, like a time-out
                    result = SearchResult(algorithm, None, [], 0, 0.0, "refused (box too large)")
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                results[algorithm] = result
                rows.append([name, q, f"{prepared.box.size:.3g}", algorithm, result.evaluations, f"{wall:.2f}",
                             f"{cpu:.2f}", result.stopped,
                             f"{result.best.log:.4f}" if result.best is not None else "none",
                             len(result.minimal), ""])
            reference = next((results[a] for a in ("exhaustive", "ola") if results[a].stopped == "complete"), None)
            source = "exhaustive" if results["exhaustive"].stopped == "complete" else "ola"
            verdicts: dict[str, str] = {}
            if reference is None:
                problems.append(f"{name} q={q}: no exact reference finished: samarati and incognito unverified")
            for algorithm in ("samarati", "incognito"):
                if results[algorithm].stopped != "complete":
                    problems.append(f"{name} q={q}: {algorithm} did not finish ({results[algorithm].stopped})")
            if reference is not None and reference.minimal:
                lowest = min(height(n) for n in reference.minimal)
                sam = results["samarati"]
                ok = (sam.stopped == "complete" and sam.best is not None and sam.best.feasible
                      and height(sam.best.node) == lowest
                      and sam.minimal == sorted(n for n in reference.minimal if height(n) == lowest))
                verdicts["samarati"] = (f"minimal height {lowest} = {source}'s: {'yes' if ok else 'NO'}"
                                        if sam.stopped == "complete" else f"did not finish ({sam.stopped})")
                inc = results["incognito"]
                same = inc.stopped == "complete" and sorted(inc.minimal) == sorted(reference.minimal)
                verdicts["incognito"] = (f"minimal set = {source}'s: {'yes' if same else 'NO'}"
                                         if inc.stopped == "complete" else f"did not finish ({inc.stopped})")
                for algorithm in ("samarati", "incognito"):
                    if "NO" in verdicts[algorithm]:
                        problems.append(f"{name} q={q}: {algorithm}: {verdicts[algorithm]}")
            for algorithm in ("samarati", "incognito", "datafly"):
                result = results[algorithm]
                if result.best is None:
                    continue
                prepared.evaluator.clear_cache()
                checked = passes_check(prepared, result, Path(folder))
                verdicts[algorithm] = (verdicts.get(algorithm, "") + "; " if algorithm in verdicts else "") + (
                    "kgen check: PASS" if checked else "kgen check: FAIL")
                if not checked:
                    problems.append(f"{name} q={q}: {algorithm}: release fails kgen check")
            for row in rows[-len(ALGORITHMS):]:
                row[-1] = verdicts.get(str(row[3]), "")
                print(row, flush=True)
    return rows, problems


ADULT_CUT_QIS = (("age", "sex", "race"), ("age", "sex"), ("age", "race"))


def part2(quick: bool, time_limit: float) -> list[list[object]]:
    dataset = load_adult()
    rows: list[list[object]] = []
    ks = (2, 5) if quick else (2, 5, 10, 50)
    for qis in ADULT_CUT_QIS[:1] if quick else ADULT_CUT_QIS:
        for k in ks:
            base = dict(qi=list(qis), k=k, suppression=dataset.suppression, hierarchy_dir=dataset.hierarchy_dir,
                        metric="dm", time_limit=time_limit, keep_unnamed=True)
            for label, config in (("full-domain optimum (OLA, DM)", Config(**base, algorithm="ola")),
                                  ("k-optimize (cut points)", Config(**base, algorithm="k-optimize"))):
                wall, cpu = time.perf_counter(), time.process_time()
                result = api.anonymize(dataset.table, config)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                r = result.report
                rows.append([",".join(qis), k, label, f"{r['dm']:.6g}", r["classes"], f"{r['aecs']:.1f}",
                             r["suppressed"], f"{r['metrics']['ncp']:.4f}", result.search.stopped,
                             result.search.evaluations, f"{wall:.2f}", f"{cpu:.2f}",
                             " ".join(f"{a}:{v['distinct_after']}" for a, v in r["attributes"].items())])
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--parts", default="1,2")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    sections = []
    if "1" in parts:
        rows, problems = part1(args.quick, args.time_limit)
        headers = ["dataset", "q", "box nodes", "algorithm", "evaluations", "wall s", "CPU s", "stopped", "best LOG",
                   "minimal nodes", "checks"]
        sections.append("## The classic searches beside OLA, best-first and exhaustive\n\n"
                        f"Each search from a cold cache, time limit {args.time_limit:g} s; k and t as in "
                        "experiments/common.py (k = 2, t = 0.005). Problems: "
                        + ("; ".join(problems) if problems else "none") + ".\n\n" + common.markdown(headers, rows))
    if "2" in parts:
        rows = part2(args.quick, args.time_limit)
        headers = ["Adult QIs", "k", "model", "DM", "classes", "AECS", "suppressed", "NCP", "stopped", "evaluations",
                   "wall s", "CPU s", "distinct values released"]
        sections.append("## k-Optimize beside full-domain generalization on Adult (t = 0.005, cost DM)\n\n"
                        + common.markdown(headers, rows))
    text = (f"# Classic algorithms (issue 17)\n\nMachine: {common.machine()} (shared with other jobs: compare rows "
            f"of one run); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Command: `python -m "
            f"benchmarks.classic{' --quick' if args.quick else ''} --time-limit {args.time_limit:g} --parts "
            f"{args.parts}`.\n\n" + "\n\n".join(sections) + "\n")
    common.RESULTS.mkdir(parents=True, exist_ok=True)
    name = "classic-quick.md" if args.quick else "classic.md"
    (common.RESULTS / name).write_text(text, encoding="utf-8")
    print(f"wrote {common.RESULTS / name}")


if __name__ == "__main__":
    main()
