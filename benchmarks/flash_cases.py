"""Flash (lattice/search/flash.py) on ARX's JUnit cases on Adult, run as ARX runs them: `--algorithm flash`,
with `--practical-monotonicity` where ARX's case sets that flag; prints the table of results/privacy-models.md
("Flash on ARX's cases").

    python -m benchmarks.flash_cases [--only CASE ...]

Per case: Flash's node and ARX's score of it, its checks (distinct evaluations), and for comparison the checks of
the other exact searches on the same problem (OLA, best-first, exhaustive). The cases are facts kept in
tests/test_arx_cases_metrics.py (`CASES`) and tests/test_arx_cases_grassberger.py; a case with ARX's flag has the
facts of the case named beside it (case 10 and 11 of TestAnonymizationTCloseness repeat 2 and 3). CPU seconds
(process time) of each search alone; the machine is shared.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from benchmarks.arx_metric_cases import cases_module, grassberger_cases
from benchmarks.common import DATA, machine
from kgen import Config, prepare, read_csv
from lattice.search.base import Limits, run_search
from lattice.search.bestfirst import BestFirst
from lattice.search.exhaustive import Exhaustive
from lattice.search.flash import Flash, PracticalFlash
from lattice.search.ola import OLA

# (ARX's case, the case of tests/test_arx_cases_metrics.py that holds its facts, ARX's practical-monotonicity flag);
# ARX's node and score where the flag changes them (TestAnonymizationTCloseness 10 and 11 repeat 2 and 3)
PRACTICAL_ANSWERS = {"TCloseness 10": ((1, 4, 1, 0, 3, 1, 2, 1), 390765.61326019815),
                     "TCloseness 11": ((1, 4, 1, 0, 3, 1, 2, 1), 390765.61326019815)}
RUNS = [("KAnonymity 0", "KAnonymity 0", False), ("KAnonymity 4", "KAnonymity 0", True),
        ("KAnonymity 5", "KAnonymity 1", True), ("LDiversity 4", "LDiversity 0", True),
        ("LDiversity 5", "LDiversity 1", True), ("EntropyLDiversity 4", "LDiversity 0", True),
        ("EntropyLDiversity 5", "EntropyLDiversity 5", True),
        ("OrderedDistanceTCloseness 4", "OrderedDistanceTCloseness 4", True),
        ("OrderedDistanceTCloseness 5", "OrderedDistanceTCloseness 1", True),
        ("TCloseness 8", "TCloseness 0", True), ("TCloseness 9", "TCloseness 1", True),
        ("TCloseness 2", "TCloseness 2", False), ("TCloseness 3", "TCloseness 3", False),
        ("TCloseness 6", "TCloseness 6", False), ("TCloseness 7", "TCloseness 7", False),
        ("TCloseness 10", "TCloseness 2", True), ("TCloseness 11", "TCloseness 3", True)]


def prepared_case(module: object, case: object) -> object:
    """The case's problem as `run_case` builds it (every attribute but the sensitive one a QI)."""
    adult = DATA / "adult"
    qis = [c for c in module.COLUMNS if c != case.sensitive]  # type: ignore[attr-defined]
    config = Config(qi=qis, k=1, suppression=case.suppression, metric=case.metric,  # type: ignore[attr-defined]
                    sensitive=[case.sensitive] if case.sensitive else [], hierarchy_dir=str(adult),  # type: ignore[attr-defined]
                    keep_unnamed=True, allow_k1=True)
    models = [module.build_model(spec, adult) for spec in case.models]  # type: ignore[attr-defined]
    if not any(isinstance(m, module.KAnonymity) for m in models):  # type: ignore[attr-defined]
        models.insert(0, module.KAnonymity(1))  # type: ignore[attr-defined]
    return prepare(read_csv(adult / "adult.csv"), config, models, require_feasible=False)


def timed(search: object, prepared: object) -> tuple[object, float]:
    start = time.process_time()
    result = run_search(search, prepared.problem(), Limits())  # type: ignore[arg-type, attr-defined]
    return result, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="ARX cases to run (default: all)")
    only = parser.parse_args().only
    module = cases_module()
    cases = {c.name: c for c in [*module.CASES, *grassberger_cases()]}
    print(f"# {machine()}")
    print("| ARX case (the same facts as) | practical | ARX's node; score | flash's node; score | flash checks | "
          "flash CPU s | OLA | best-first | exhaustive | matched |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, source, practical in RUNS:
        if only and name not in only:
            continue
        case = cases[source]
        node, score = PRACTICAL_ANSWERS.get(name, (case.node, case.score))
        prepared = prepared_case(module, replace(case, name=name))
        result, seconds = timed(PracticalFlash() if practical else Flash(), prepared)
        found = None if result.best is None else result.best.node
        value = None if found is None else module.arx_score(prepared, found, case.metric)
        others = [timed(search, prepared)[0].evaluations for search in (OLA(), BestFirst(), Exhaustive())]
        matched = found == node and (score is None or abs(value - score) <= 1e-9 * abs(score))
        print(f"| {name} (= {source}) | {'yes' if practical else 'no'} | {words(node, score)} | "
              f"{words(found, value)} | {result.evaluations} | {seconds:.2f} | "
              f"{' | '.join(map(str, others))} | {'yes' if matched else 'no'} |")


def words(node: tuple | None, score: float | None) -> str:
    return "none" if node is None else f"{','.join(map(str, node))}; {score}"


if __name__ == "__main__":
    main()
