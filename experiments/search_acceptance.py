"""Acceptance figures of the search layer (issue 3): OLA against exhaustive, KGen's hit rates, accuracy and
LOG gap (SPEC section 6), and GA wall times at 25 and 97 QIs. Public API only.

    python -m experiments.search_acceptance [--quick] [--out results/search_acceptance.json]

Prints one block per acceptance point and writes every figure to a JSON file. `--quick` runs 3 seeds and
skips the exhaustive search of Cargo 10 (for a smoke test); the acceptance uses the default 10 seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from kgen.io.table import Table, read_csv
from kgen.run.algorithms import make_search
from kgen.run.config import Config
from kgen.run.prepare import Prepared, prepare
from lattice.accuracy import log_gap, overall_accuracy
from lattice.search.base import Limits, SearchResult

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KGEN_SHARED", REPO.parent / "shared"))
CARGO = SHARED / "data" / "cargo2000" / "c2k_data_comma.csv"
ADULT = SHARED / "data" / "adult"
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
PRESETS = {"paper": {"preset": "paper"}, "kgen+": {"preset": "kgen+"}}
# ablation on Adult: the paper's operators with one kgen+ ingredient at a time
ABLATION = {
    "paper, infeasible scored 1-LOG": {"preset": "paper", "infeasible_weight": 1.0},
    "paper, population 40": {"preset": "paper", "population": 40},
    "kgen+ without descent": {"preset": "kgen+", "descent": False, "seeds": 0},
    "kgen+ without seeds": {"preset": "kgen+", "seeds": 0},
    "kgen+, population 100": {"preset": "kgen+", "population": 100},
}


def cargo_problem(table: Table, q: int) -> Prepared:
    qis = [c for c in table.columns if c != "nr"][:q]
    return prepare(table, Config(qi=qis, identifiers=["nr"], k=2, suppression=0.005, keep_unnamed=True))


def adult_problem(table: Table, k: int, t: float) -> Prepared:
    return prepare(table, Config(qi=ADULT_QIS, k=k, suppression=t, hierarchy_dir=str(ADULT), keep_unnamed=True))


def run(prepared: Prepared, algorithm: str, options: dict | None = None, **limits) -> tuple[SearchResult, float]:
    start = time.perf_counter()
    result = make_search(algorithm, options or {}).run(prepared.problem(), Limits(**limits))
    return result, time.perf_counter() - start


def ga_runs(prepared: Prepared, options: dict, seeds: range, optimum: SearchResult | None,
            max_evaluations: int | None = None) -> dict:
    """Seeds of one GA configuration: hits of the optimum's loss, accuracy, LOG gap, time, evaluations."""
    rows = []
    for seed in seeds:
        result, seconds = run(prepared, "kgen", options, seed=seed, max_evaluations=max_evaluations)
        row = {"seed": seed, "loss": result.best.loss if result.best else None, "evaluations": result.evaluations,
               "seconds": seconds, "stopped": result.stopped,
               "generations": result.trace[-1]["generation"] if result.trace else 0}
        if optimum is not None:
            row["hit"] = result.best is not None and result.best.loss == optimum.best.loss
            row["gap"] = log_gap(row["loss"], optimum.best.loss)
            row["accuracy"] = overall_accuracy(result.minimal, optimum.minimal, prepared.heights)
        rows.append(row)
    summary = {"runs": rows, "seconds_mean": statistics.mean(r["seconds"] for r in rows),
               "evaluations_mean": statistics.mean(r["evaluations"] for r in rows)}
    if optimum is not None:
        summary.update(hits=sum(r["hit"] for r in rows), seeds=len(rows),
                       accuracy_mean=statistics.mean(r["accuracy"] for r in rows),
                       gap_mean=statistics.mean(r["gap"] for r in rows), gap_max=max(r["gap"] for r in rows))
    return summary


def exact_line(name: str, result: SearchResult, seconds: float) -> str:
    return (f"  {name:<10} LOG {result.best.loss:.4f} node {result.best.node} evaluations {result.evaluations:>7} "
            f"time {seconds:7.2f} s  minimal {len(result.minimal)}  ({result.stopped})")


def ga_line(name: str, s: dict) -> str:
    text = f"  {name:<28} time/run {s['seconds_mean']:6.2f} s  evaluations/run {s['evaluations_mean']:7.0f}"
    if "hits" in s:
        text += (f"  hits {s['hits']}/{s['seeds']}  accuracy {s['accuracy_mean']:.3f}  gap mean "
                 f"{s['gap_mean']:.4f} max {s['gap_max']:.4f}")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(REPO / "results" / "search_acceptance.json"))
    args = parser.parse_args(argv)
    seeds = range(3 if args.quick else 10)
    figures: dict = {"seeds": len(seeds), "python": platform.python_version(), "cpus": os.cpu_count()}
    cargo = read_csv(CARGO)

    print("== Cargo 2000, first 5 QIs, k=2, t=0.005")
    c5 = cargo_problem(cargo, 5)
    ex5, ex5_s = run(c5, "exhaustive")
    ola5, ola5_s = run(c5, "ola")
    print(exact_line("exhaustive", ex5, ex5_s))
    print(exact_line("ola", ola5, ola5_s))
    agree = (ex5.best.loss, ex5.best.node, ex5.minimal) == (ola5.best.loss, ola5.best.node, ola5.minimal)
    print(f"  OLA and exhaustive agree (optimum and every k-minimal node): {agree}")
    figures["cargo5"] = {"exhaustive": {"log": ex5.best.loss, "evaluations": ex5.evaluations, "seconds": ex5_s},
                         "ola": {"log": ola5.best.loss, "evaluations": ola5.evaluations, "seconds": ola5_s},
                         "agree": agree, "box": c5.box.size}
    for name, options in PRESETS.items():
        s = ga_runs(c5, options, seeds, ola5)
        print(ga_line(f"kgen {name}", s))
        figures["cargo5"][name] = s

    print("== Cargo 2000, first 10 QIs, k=2, t=0.005")
    c10 = cargo_problem(cargo, 10)
    ola10, ola10_s = run(c10, "ola")
    print(f"  box {c10.box.size} nodes (pre-pruned; full lattice {c10.box.size and _full(c10)})")
    print(exact_line("ola", ola10, ola10_s))
    figures["cargo10"] = {"ola": {"log": ola10.best.loss, "node": ola10.best.node, "evaluations": ola10.evaluations,
                                  "seconds": ola10_s, "minimal": len(ola10.minimal)}, "box": c10.box.size}
    if not args.quick:
        ex10, ex10_s = run(c10, "exhaustive")
        print(exact_line("exhaustive", ex10, ex10_s))
        agree10 = (ex10.best.loss, ex10.best.node, ex10.minimal) == (ola10.best.loss, ola10.best.node, ola10.minimal)
        print(f"  OLA and exhaustive agree: {agree10}; OLA used {ola10.evaluations / ex10.evaluations:.2%} of the "
              f"evaluations and {ola10_s / ex10_s:.2%} of the time")
        figures["cargo10"]["exhaustive"] = {"log": ex10.best.loss, "evaluations": ex10.evaluations,
                                            "seconds": ex10_s, "agree": agree10}
    for name, options in PRESETS.items():
        s = ga_runs(c10, options, seeds, ola10)
        print(ga_line(f"kgen {name} (5000 evaluations)", s))
        figures["cargo10"][name] = s

    print("== Adult, 8 QIs, budget 500 evaluations: hits of the exact optimum per setting")
    adult = read_csv(ADULT / "adult.csv")
    figures["adult"] = {}
    configurations = dict(PRESETS, **({} if args.quick else ABLATION))
    totals = {name: 0 for name in configurations}
    for k in (2, 5, 10):
        for t in (0.0, 0.01):
            prepared = adult_problem(adult, k, t)
            exact, exact_s = run(prepared, "ola")
            key = f"k={k} t={t}"
            entry = {"optimum": exact.best.loss, "ola_evaluations": exact.evaluations, "ola_seconds": exact_s,
                     "box": prepared.box.size, "minimal": len(exact.minimal)}
            cells = []
            for name, options in configurations.items():
                s = ga_runs(prepared, options, seeds, exact, max_evaluations=500)
                entry[name] = s
                totals[name] += s["hits"]
                cells.append(f"{name} {s['hits']}/{s['seeds']}")
            figures["adult"][key] = entry
            print(f"  {key:<11} optimum LOG {exact.best.loss:.4f} ({len(exact.minimal)} k-minimal, OLA "
                  f"{exact.evaluations} evaluations)  " + "  ".join(cells[:2]))
            if len(cells) > 2:
                print("              ablation: " + "  ".join(cells[2:]))
    print("  total hits: " + "  ".join(f"{n} {h}/{6 * len(seeds)}" for n, h in totals.items()))
    figures["adult_totals"] = totals

    print("== Cargo 2000 with 25 and 97 QIs: GA wall time for 5000 evaluations (seed 0)")
    figures["scale"] = {}
    for q in (25, 97):
        prepared = cargo_problem(cargo, q)
        literal = {"paper, infeasible 1-LOG": ABLATION["paper, infeasible scored 1-LOG"]}
        for name, options in dict(PRESETS, **literal).items():
            s = ga_runs(prepared, options, range(1), None)
            r = s["runs"][0]
            best = "none feasible" if r["loss"] is None else f"{r['loss']:.4f}"
            print(f"  q={q:<3} kgen {name:<6} {r['evaluations']} evaluations in {r['seconds']:.1f} s "
                  f"({r['generations']} generations, {r['stopped']}), best LOG {best}")
            figures["scale"][f"q={q} {name}"] = r

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(figures, indent=1, default=list) + "\n")
    print(f"wrote {args.out}")
    return 0


def _full(prepared: Prepared) -> int:
    size = 1
    for h in prepared.heights:
        size *= h + 1
    return size


if __name__ == "__main__":
    raise SystemExit(main())
