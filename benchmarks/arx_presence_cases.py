"""Issue 27: ARX's remaining JUnit cases on Adult run through kgen's exact search (bestfirst): the
Combinations cases with delta-presence (under both `--delta-presence-variant`s), the Subset cases, and the
heuristic / top-down / genetic cases (checked against kgen's exact optimum); prints the tables of
results/privacy-models.md ("ARX's remaining cases on Adult").

    python -m benchmarks.arx_presence_cases [--only combinations|subset|heuristic ...]

The cases are facts (parameters, ARX's answer and score) kept once, in tests/test_arx_cases_office.py and
tests/test_arx_cases_heuristic.py, and read from there. CPU seconds (process time) of one case's prepare and
search; the machine is shared, so wall time would say little.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from benchmarks.common import DATA, machine

REPO = Path(__file__).resolve().parents[1]
ADULT = DATA / "adult"
WORDS = {"k": "k = 5", "t": "hierarchical t = 0.2", "cl": "recursive (c, l) = (4, 5)"}


def test_module(name: str) -> ModuleType:
    """tests/NAME.py loaded as a module (the tests folder on the path: one test module imports another)."""
    sys.path.insert(0, str(REPO / "tests"))
    spec = importlib.util.spec_from_file_location(name, REPO / "tests" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def node_text(node: tuple[int, ...]) -> str:
    return "(" + ",".join(map(str, node)) + ")"


def timed(run: object, *args: object) -> tuple[object, float]:
    start = time.process_time()
    value = run(*args)  # type: ignore[operator]
    return value, time.process_time() - start


def combinations(office: ModuleType, folder: Path) -> None:
    """Combinations with delta-presence (0.05, 0.15): kgen's optimum under the definition (the default) and
    under `--delta-presence-variant arx` (ARX's order of checks), each against ARX's answer."""
    print("| ARX test, case | models with δ-presence (0.05, 0.15) | suppression | `--metric` | ARX's optimum | "
          "ARX's score | kgen's node | kgen's score | CPU s | outcome |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = [(*c, None, None) for c in office.COMBINATIONS_DELTA_PRESENCE] + list(office.ARX_EMPTY_CLASSES_PASS)
    for case, models, suppression, metric, arx_node, arx_score, *_ in rows:
        found = {}
        for variant in ("definition", "arx"):
            config = office.combination_config(ADULT, folder, models, suppression, metric, variant)
            (node, score), cpu = timed(office.population_optimum, ADULT / "adult.csv", config, metric)
            found[variant] = (node, score, cpu, node == arx_node and abs(score - arx_score) <= 1e-12 * arx_score)
        node, score, cpu, same = found["definition"]
        with_arx = f"with `--delta-presence-variant arx` {'' if found['arx'][3] else 'not '}ARX's node and score"
        outcome = (f"matched; {with_arx} too" if same else f"differs; {with_arx}") + f" ({found['arx'][2]:.1f} CPU s)"
        print(f"| Combinations {case} | {', '.join(WORDS[m] for m in models)} | {suppression * 100:g} % | "
              f"`{metric}` | {node_text(arx_node)} | {arx_score!r} | "
              f"{'same' if node == arx_node else node_text(node)} | {score!r} | {cpu:.1f} | {outcome} |", flush=True)


def subset(office: ModuleType, folder: Path) -> None:
    print("| ARX test, case | models, `--delta-presence 0,1` with the subset | subset rows | ARX's optimum | "
          "ARX's score | kgen's node | kgen's score | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    lines = (ADULT / "adult.csv").read_text().splitlines(keepends=True)
    for number, (size, models, arx_node, arx_score) in enumerate(office.SUBSET_INCLUSION):
        rows = office.arx_random_subset(size)
        path = folder / f"subset{size}.csv"
        path.write_text(lines[0] + "".join(line for i, line in enumerate(lines[1:]) if i in rows))
        config = office.Config(qi=office.qis_without("occupation"), suppression=0.0, metric="entropy",
                               allow_k1=True, hierarchy_dir=str(ADULT), keep_unnamed=True, delta_presence="0,1",
                               research_subset=str(path), **{"k": 1, **office.combination(ADULT, *models)})
        (node, score), cpu = timed(office.population_optimum, ADULT / "adult.csv", config, "entropy")
        print(f"| Subset {number} | {', '.join(WORDS[m] for m in models)} | {len(rows)} ({size} draws below {size}) | "
              f"{node_text(arx_node)} | {arx_score!r} | {'same' if node == arx_node else node_text(node)} | "
              f"{score!r} | {cpu:.1f} |", flush=True)


def heuristic(module: ModuleType) -> None:
    print("| ARX's case (each of the three files) | k | suppression | `--metric` | Heuristic | HeuristicTopDown | "
          "Genetic | kgen's exact optimum | its score | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for number, suppression, metric, k, answers, _, _ in module.HEURISTIC_CASES:
        case = module.Case(f"heuristic {number}", suppression, metric, None, (("k", k),), None, None)
        (node, score), cpu = timed(module.run_case, case, ADULT)
        cells = " | ".join(f"{node_text(a)} {s!r}" for a, s in (answers[w] for w in
                                                                   ("Heuristic", "HeuristicTopDown", "Genetic")))
        print(f"| {number} | {k} | {suppression * 100:g} % | `{metric}` | {cells} | {node_text(node)} | "
              f"{score!r} | {cpu:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=("combinations", "subset", "heuristic"),
                        help="which table; default: every one")
    args = parser.parse_args()
    office = test_module("test_arx_cases_office")
    print(f"{machine()}\n")
    with tempfile.TemporaryDirectory() as folder:
        if not args.only or "combinations" in args.only:
            combinations(office, Path(folder))
        if not args.only or "subset" in args.only:
            print()
            subset(office, Path(folder))
    if not args.only or "heuristic" in args.only:
        print()
        heuristic(test_module("test_arx_cases_heuristic"))


if __name__ == "__main__":
    main()
