"""Issue 27: every model of fitness/privacy/ on Adult (the README's 8 QIs, salary-class sensitive) with every
exact search and the GA: optimum LOG, classes, suppressed rows and CPU seconds, each release re-checked by the
model's independent rule (kgen/check/rules/) on the released table's own strings.

    python -m benchmarks.privacy_models_office [--output results/privacy-models.md] [--only population]
    python -m benchmarks.privacy_models_office --safepub   # the differential-privacy rows (SafePub) only
    python -m benchmarks.privacy_models_office --only uniqueness   # sample and population uniqueness only
    python -m benchmarks.privacy_models_office --only grassberger  # entropy l-diversity, Grassberger / Shannon

CPU seconds (process time) of the search alone, from a cold evaluator cache; the machine is shared, so wall
time would say little.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import ADULT_QIS, DATA, machine, markdown
from fitness.models import EntropyLDiversity, KAnonymity
from fitness.privacy.average_risk import AverageRisk
from fitness.privacy.common import TableRef
from fitness.privacy.disclosure import DeltaDisclosure
from fitness.privacy.hierarchical_t import HierarchicalTCloseness
from fitness.privacy.kmap import KMap
from fitness.privacy.kmap_population import KMapPopulation
from fitness.privacy.likeness import BetaLikeness
from fitness.privacy.presence import DeltaPresence
from fitness.privacy.sample_uniqueness import SampleUniqueness
from fitness.privacy.uniqueness import PopulationUniqueness
from kgen.check.kanonymity import check_k_anonymity, group_codes, suppressed_mask
from kgen.check.rules import average_risk, disclosure, hierarchical_t, kmap, likeness, rules_from_models
from kgen.io.table import read_csv
from kgen.report.provenance import sha256_file
from kgen.run.config import Config
from kgen.run.pipeline import anonymize, finish
from kgen.run.prepare import prepare
from lattice.hierarchy import Hierarchy
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.certify import Certify
from lattice.search.exhaustive import Exhaustive
from lattice.search.flash import Flash
from lattice.search.incognito import Incognito
from lattice.search.kgen_ga import KGen
from lattice.search.ola import OLA

SENSITIVE = "salary-class"
SUPPRESSION = 0.01


def salary_hierarchy() -> Hierarchy:
    with open(DATA / "adult" / "adult_hierarchy_salary-class.csv", newline="") as handle:
        return Hierarchy.from_rows(SENSITIVE, list(csv.reader(handle, delimiter=";")))


def cases() -> list[tuple[str, list, Callable]]:
    """(label, models, check(classes, released_sizes, release) -> bool) of each model's run."""
    tree = salary_hierarchy()

    def per_class(bad: Callable) -> Callable:
        return lambda classes, kept, table: not bad(classes, table.column(SENSITIVE))[np.unique(classes[kept])].any()

    return [
        ("--max-average-risk 0.05", [KAnonymity(1), AverageRisk(0.05)],
         lambda classes, kept, table: not average_risk.breaks(np.bincount(classes[kept])[np.unique(classes[kept])],
                                                              0.05)),
        ("--k-map 10 --sampling-fraction 0.1 (poisson: k' = 6)", [KAnonymity(1), KMap(10, 0.1)],
         lambda classes, kept, table: bool((np.bincount(classes[kept])[np.unique(classes[kept])]
                                            >= kmap.derived_k(10, 0.1, "poisson", 0.01)).all())),
        ("--beta-likeness 0.5 (basic)", [KAnonymity(1), BetaLikeness(SENSITIVE, 0.5)],
         per_class(lambda c, v: likeness.breaking(c, v, 0.5, "basic"))),
        ("--beta-likeness 0.5 --beta-variant enhanced", [KAnonymity(1), BetaLikeness(SENSITIVE, 0.5, "enhanced")],
         per_class(lambda c, v: likeness.breaking(c, v, 0.5, "enhanced"))),
        ("--delta-disclosure 1.0", [KAnonymity(1), DeltaDisclosure(SENSITIVE, 1.0)],
         per_class(lambda c, v: disclosure.breaking(c, v, 1.0))),
        ("hierarchical t-closeness, t = 0.1 (salary-class hierarchy)",
         [KAnonymity(1), HierarchicalTCloseness(SENSITIVE, 0.1, tree)],
         per_class(lambda c, v: hierarchical_t.breaking(c, v, tree.paths, 0.1))),
    ]


def population_cases(folder: Path) -> list[tuple[str, list, Path, dict]]:
    """(label, models, input, Config fields) of delta-presence and k-map with a population: a research subset
    / sample of 10 % of Adult's rows (seeded, written to `folder`), Adult itself the population."""
    adult = DATA / "adult" / "adult.csv"
    lines = adult.read_text(encoding="utf-8").splitlines(keepends=True)
    chosen = np.sort(np.random.default_rng(0).choice(len(lines) - 1, (len(lines) - 1) // 10, replace=False))
    subset = folder / "adult_subset.csv"
    subset.write_text(lines[0] + "".join(lines[1 + i] for i in chosen), encoding="utf-8")
    subset_ref, population_ref = TableRef(str(subset), sha256_file(subset)), TableRef(str(adult), sha256_file(adult))
    return [
        ("--delta-presence 0.05,0.15 --research-subset (10 % of the rows)",
         [KAnonymity(1), DeltaPresence(0.05, 0.15, subset_ref)], adult,
         {"delta_presence": "0.05,0.15", "research_subset": str(subset)}),
        ("--k-map 10 --population adult.csv (input: the 10 % sample)",
         [KAnonymity(1), KMapPopulation(10, population_ref)], subset, {"k_map": 10, "population": str(adult)}),
    ]


def uniqueness_cases() -> list[tuple[str, list, dict]]:
    """(label, models, Config fields) of the uniqueness thresholds, enforced as ARX does (the smallest classes
    suppressed, ARX's binary search, within the limit); population uniqueness with Zayatz's estimator (Dankar's
    rule fits Pitman's model, minutes over a whole lattice)."""
    return [
        ("--max-sample-uniqueness 0.01", [KAnonymity(1), SampleUniqueness(0.01)], {"max_sample_uniqueness": 0.01}),
        ("--max-population-uniqueness 0.01 --uniqueness-model zayatz --sampling-fraction 0.2",
         [KAnonymity(1), PopulationUniqueness(0.01, 0.2, "zayatz")],
         {"max_population_uniqueness": 0.01, "uniqueness_model": "zayatz", "sampling_fraction": 0.2}),
    ]


def grassberger_cases() -> list[tuple[str, list, dict]]:
    """(label, models, Config fields) of entropy l-diversity on salary-class (2 values) under Grassberger's
    estimator and, for contrast, Shannon's at the same l (docs/privacy-models.md, "Entropy l-diversity")."""
    return [
        ("--l 1.7 --l-variant entropy --l-estimator grassberger",
         [KAnonymity(1), EntropyLDiversity(SENSITIVE, 1.7, "grassberger")],
         {"l": 1.7, "l_variant": "entropy", "l_estimator": "grassberger"}),
        ("--l 1.7 --l-variant entropy (Shannon)", [KAnonymity(1), EntropyLDiversity(SENSITIVE, 1.7)],
         {"l": 1.7, "l_variant": "entropy"}),
    ]


def population_check(done: object) -> bool:
    """The independent rules of the population models, on the release with its report (node, hierarchies)."""
    report = done.report  # type: ignore[attr-defined]
    k, rules = rules_from_models(report["models"], dropped=False)
    return check_k_anonymity(done.release, list(ADULT_QIS), k, SUPPRESSION, rules,  # type: ignore[attr-defined]
                             {"report": report}).passed


def run_case(label: str, prepared: object, check: Callable, rows: list) -> None:
    """Every search of `searches` on one prepared problem, a row each."""
    monotone = prepared.evaluator.monotone_feasibility  # type: ignore[attr-defined]
    for name, search, limits in searches(monotone):
        prepared.evaluator.clear_cache()  # type: ignore[attr-defined]
        start = time.process_time()
        result = search.run(prepared.problem(), limits)  # type: ignore[attr-defined]
        seconds = time.process_time() - start
        stopped = getattr(result.stopped, "value", result.stopped)
        if result.best is None:
            rows.append((label, name, "none", "", "", "", result.evaluations, f"{seconds:.1f}", stopped, ""))
            continue
        done = finish(prepared, result)  # type: ignore[arg-type]
        best = result.best
        rows.append((label, name, str(tuple(best.node)).replace(" ", ""), f"{best.log:.4f}", best.classes,
                     best.suppressed, result.evaluations, f"{seconds:.1f}", stopped,
                     "PASS" if check(done) else "FAIL"))
        print(rows[-1], flush=True)


# the searches a run is limited to (`--searches`); None: every one
CHOSEN: set[str] | None = None


def searches(monotone: bool) -> list[tuple[str, object, Limits]]:
    exact = [("exhaustive", Exhaustive()), ("bestfirst", BestFirst()), ("ola", OLA()), ("incognito", Incognito()),
             ("flash", Flash())]
    if monotone:
        exact.append(("certify", Certify()))
    every = [(n, s, Limits()) for n, s in exact] + [("kgen (GA, seed 0)", KGen(), Limits(seed=0))]
    return [entry for entry in every if CHOSEN is None or entry[0].split(" ")[0] in CHOSEN]


# (epsilon, delta, search share, score) of the SafePub rows: the defaults (share 0.1, precision), ARX's JUnit
# split (epsilon 2 with a search budget of 1: share 0.5) and its other score functions
SAFEPUB = [(2.0, 1e-5, 0.1, "precision"), (2.0, 1e-5, 0.5, "precision"), (2.0, 1e-5, 0.5, "discernibility"),
           (2.0, 1e-5, 0.5, "aecs"), (1.0, 1e-6, 0.1, "precision")]


def safepub_rows(table: object, seeds: range = range(3)) -> list[tuple]:
    """Each SafePub setting with a few seeds: the sample, derived k, the node drawn, its figures, and the
    independent check of the release (every released class >= the k the checker derives again)."""
    rows = []
    for eps, delta, share, score in SAFEPUB:
        for seed in seeds:
            config = Config(qi=list(ADULT_QIS), k=2, keep_unnamed=True, hierarchy_dir=str(DATA / "adult"),
                            differential_privacy=f"{eps:g},{delta:g}", dp_search_share=share, dp_score=score,
                            seed=seed)
            start = time.process_time()
            done = anonymize(table, config)
            seconds = time.process_time() - start
            d = next(m for m in done.report["models"] if m["model"] == "differential-privacy")
            k, rules = rules_from_models(done.report["models"], False)
            verdict = check_k_anonymity(done.release, list(ADULT_QIS), k, 1.0, rules).passed
            e = done.evaluation
            rows.append((f"({eps:g}, {delta:g}), share {share:g}", score, seed, f"{d['beta']:.4f}", d["derived_k"],
                         d["sampled_rows"], str(tuple(e.node)).replace(" ", ""), f"{e.log:.4f}", e.classes,
                         e.suppressed, d["dp_steps"], done.search.evaluations, f"{seconds:.1f}",
                         "PASS" if verdict else "FAIL"))
            print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, help="also write the table (Markdown) here")
    parser.add_argument("--safepub", action="store_true", help="only the differential-privacy (SafePub) rows")
    parser.add_argument("--only", choices=("population", "uniqueness", "grassberger"),
                        help="only delta-presence and k-map with a population, only the uniqueness thresholds, or "
                             "only entropy l-diversity with Grassberger's estimator")
    parser.add_argument("--searches", help="only these searches, comma-separated (flash,ola,kgen,...)")
    args = parser.parse_args(argv)
    global CHOSEN
    CHOSEN = set(args.searches.split(",")) if args.searches else None
    if args.safepub:
        headers = ("(epsilon, delta), search share", "score", "seed", "beta", "k", "sampled", "node", "LOG",
                   "classes", "suppressed", "steps", "evaluations", "CPU s", "check")
        print(markdown(headers, safepub_rows(read_csv(DATA / "adult" / "adult.csv"))))
        print(f"{machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        return 0
    table = read_csv(DATA / "adult" / "adult.csv")
    rows: list = []
    for label, models, check in [] if args.only else cases():
        config = Config(qi=list(ADULT_QIS), k=1, allow_k1=True, suppression=SUPPRESSION, sensitive=[SENSITIVE],
                        hierarchy_dir=str(DATA / "adult"))

        def released_check(done: object, check: Callable = check) -> bool:
            released = done.release  # type: ignore[attr-defined]
            classes = group_codes(released, list(ADULT_QIS))
            return bool(check(classes, ~suppressed_mask(released, list(ADULT_QIS)), released))

        run_case(label, prepare(table, config, models), released_check, rows)
    chosen = [*(uniqueness_cases() if args.only in (None, "uniqueness") else []),
              *(grassberger_cases() if args.only in (None, "grassberger") else [])]
    for label, models, fields in chosen:
        config = Config(qi=list(ADULT_QIS), k=1, allow_k1=True, suppression=SUPPRESSION, sensitive=[SENSITIVE],
                        hierarchy_dir=str(DATA / "adult"), **fields)
        run_case(label, prepare(table, config, models), population_check, rows)  # the rules read the report
    with tempfile.TemporaryDirectory() as folder:
        for label, models, data, fields in population_cases(Path(folder)) if args.only in (None, "population") else []:
            config = Config(qi=list(ADULT_QIS), k=1, allow_k1=True, suppression=SUPPRESSION, sensitive=[SENSITIVE],
                            hierarchy_dir=str(DATA / "adult"), **fields)
            run_case(label, prepare(read_csv(data), config, models), population_check, rows)
    headers = ("model (k = 1, suppression 1 %)", "search", "node", "LOG", "classes", "suppressed", "evaluations",
               "CPU s", "stopped", "rule check")
    text = (f"Adult ({table.n} rows), QIs {', '.join(ADULT_QIS)}; sensitive {SENSITIVE}; suppression limit "
            f"{SUPPRESSION:.0%}. {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; the machine was "
            "shared with other sessions (CPU seconds, not wall time).\n\n" + markdown(headers, rows) + "\n")
    print(text)
    if args.output:
        args.output.write_text("# Issue 27's privacy models on Adult\n\n" + text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
