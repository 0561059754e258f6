"""End-to-end search times: each algorithm on each benchmark problem, from a cold evaluation cache.

Rows: dataset, algorithm, prepare seconds (encoding, hierarchies, pruning; once per dataset), search seconds,
distinct evaluations, evaluations per second, how it stopped, and the LOG of the best node (exact searches
must agree with each other). KGen runs with the paper's parameters (population 100, 5000 evaluations).

    python -m benchmarks.search [--quick] [--cases adult,cargo10,cargo25,cargo97,synthetic]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks import common
from kgen.run.prepare import Prepared
from lattice.search.base import Limits, Search


def algorithm(name: str, **options: object) -> Search:
    """A search by registry name; the search layer's classes directly while they are not registered yet."""
    from kgen.run.algorithms import REGISTRY, make_search
    if name in REGISTRY:
        return make_search(name, options)
    if name == "ola":
        from lattice.search.ola import OLA
        return OLA(**options)  # type: ignore[arg-type]
    if name == "kgen":
        from lattice.search.kgen_ga import KGen
        return KGen(**options)  # type: ignore[arg-type]
    raise KeyError(name)


# dataset -> (loader, [(algorithm, options, limits)])
def cases(quick: bool) -> dict[str, tuple[Callable[[], Prepared], list[tuple[str, dict, Limits]]]]:
    ga = Limits(max_evaluations=5000, seed=1)
    exact_limit = Limits(time_limit=60.0 if quick else 600.0)
    return {
        "adult": (common.adult, [("exhaustive", {}, Limits()), ("ola", {}, exact_limit),
                                 ("bestfirst", {}, Limits()), ("kgen", {}, ga)]),
        "cargo10": (lambda: common.cargo(10), [("bestfirst", {}, Limits()), ("ola", {}, exact_limit),
                                               ("kgen", {}, ga)]),
        "cargo25": (lambda: common.cargo(25), [("kgen", {}, ga)]),
        "cargo97": (lambda: common.cargo(97), [("kgen", {}, ga)]),
        "synthetic": (common.synthetic_table, [
            ("bestfirst", {}, Limits(time_limit=120.0 if quick else 300.0)),
            ("kgen", {}, Limits(max_evaluations=5000, seed=1, time_limit=120.0 if quick else 300.0))]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="adult,cargo10,cargo25,cargo97,synthetic")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    table = cases(args.quick)
    rows = []
    for name in args.cases.split(","):
        load, runs = table[name]
        start = time.perf_counter()
        prepared = load()
        prepare_seconds = time.perf_counter() - start
        for algo, options, limits in runs:
            prepared.evaluator.clear_cache()
            search = algorithm(algo, **options)
            start = time.perf_counter()
            result = search.run(prepared.problem(), limits)
            seconds = time.perf_counter() - start
            best = result.best
            row = [name, prepared.encoded.n, len(prepared.encoded.qis), f"{prepared.box.size:.3g}", algo,
                   f"{prepare_seconds:.2f}", f"{seconds:.2f}", result.evaluations,
                   f"{result.evaluations / seconds:.0f}" if seconds else "-", result.stopped,
                   f"{best.log:.4f}" if best is not None else "none", list(best.node) if best is not None else "-"]
            rows.append(row)
            print(row, flush=True)
    headers = ["dataset", "rows", "QIs", "box nodes", "algorithm", "prepare s", "search s", "evaluations",
               "eval/s", "stopped", "best LOG", "best node"]
    notes = ("Wall-clock seconds on this machine (shared with other jobs: compare rows of one run). Each search "
             "starts from a cold evaluation cache; `prepare s` is `kgen.run.pipeline.prepare` (read table given, "
             "hierarchies, encoding, pre-pruning). k = 2, t = 0.005 everywhere. `stopped` = complete (exact), "
             "budget or time.")
    common.write("search", "End-to-end search times (issue 5)", headers, rows, notes)


if __name__ == "__main__":
    main()
