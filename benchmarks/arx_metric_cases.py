"""Issue 27 item 5: ARX's JUnit cases on Adult scored with ARX's metrics (`--metric arx-entropy`,
`arx-entropy-nm`, `arx-dm`, `arx-loss`), run through kgen's exact search (bestfirst); prints the table of
results/privacy-models.md ("ARX's JUnit cases scored with ARX's metrics").

    python -m benchmarks.arx_metric_cases [--only NAME ...]

The cases are facts (parameters, ARX's optimum and score) kept once, in tests/test_arx_cases_metrics.py (and
ARX's Grassberger entropy cases in tests/test_arx_cases_grassberger.py), and read from there. CPU seconds
(process time) of one case's prepare and search; the machine is shared, so wall time would say little.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

from benchmarks.common import DATA, machine

REPO = Path(__file__).resolve().parents[1]


def cases_module() -> ModuleType:
    """tests/test_arx_cases_metrics.py, loaded as a module (its `CASES`, `run_case`)."""
    spec = importlib.util.spec_from_file_location("arx_cases", REPO / "tests" / "test_arx_cases_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def grassberger_cases() -> list:
    """ARX's entropy l-diversity cases with Grassberger's estimator (tests/test_arx_cases_grassberger.py)."""
    sys.path.insert(0, str(REPO / "tests"))  # it imports `run_case` from its neighbour
    module = importlib.import_module("test_arx_cases_grassberger")
    return list(module.MATCHED) + [case for case, _, _ in module.UNMATCHED]


def model_words(models: tuple[tuple, ...]) -> str:
    words = {"k": "k = {}", "entropy-l": "entropy l = {}", "recursive": "recursive (c, l) = ({:g}, {})",
             "equal": "equal t = {}", "ordered": "ordered t = {}", "hierarchical": "hierarchical t = {}",
             "average-risk": "average risk {}", "sample-uniqueness": "sample uniqueness {}",
             "k-map": "k-map K = {} (estimated)", "uniqueness": "{1} uniqueness {0}",
             "beta": "{} beta = {:g}", "grassberger": "entropy l = {} (Grassberger)"}
    return ", ".join(words[kind].format(*args) for kind, *args in models)


def node_text(node: tuple[int, ...] | None) -> str:
    return "none" if node is None else "(" + ",".join(map(str, node)) + ")"


def row(case: object, node: tuple[int, ...] | None, score: float | None, cpu: float) -> str:
    """One line of the table: ARX's facts, kgen's node and score, CPU seconds, matched."""
    want = case.score  # type: ignore[attr-defined]
    same_score = (want is None and score is None) or (
        want is not None and score is not None and abs(score - want) <= 1e-9 * abs(want))
    matched = node == case.node and same_score  # type: ignore[attr-defined]
    return (f"| {case.name} | {model_words(case.models)} | {case.suppression * 100:g} % | "  # type: ignore[attr-defined]
            f"`{case.metric}` | {node_text(case.node)} | {'—' if want is None else repr(want)} | "  # type: ignore[attr-defined]
            f"{'same' if node == case.node else node_text(node)} | {'—' if score is None else repr(score)} | "  # type: ignore[attr-defined]
            f"{cpu:.1f} | {'yes' if matched else 'no'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case names (e.g. 'KAnonymity 0'); default: every case")
    args = parser.parse_args()
    module = cases_module()
    print(f"{machine()}\n")
    print("| ARX test, case | model | suppression | `--metric` | ARX's optimum | ARX's score | kgen's node | "
          "kgen's score | CPU s | matched |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case in module.CASES + grassberger_cases():
        if args.only and case.name not in args.only:
            continue
        start = time.process_time()
        node, score = module.run_case(case, DATA / "adult")
        print(row(case, node, score, time.process_time() - start), flush=True)


if __name__ == "__main__":
    main()
