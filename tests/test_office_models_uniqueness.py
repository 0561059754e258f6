"""The population-uniqueness threshold (`--max-population-uniqueness U --sampling-fraction F --uniqueness-model
M`): hand-computed cases, the checker's estimators (written again) against the model's (`fitness.uniqueness`,
kgen risk's), a release that meets U and one that misses it, the exact searches against exhaustive search (the
model is not monotone), the parameter shared with k-map, and every command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness import privacy
from fitness.encoding import EncodedTable
from fitness.partition import Partition
from fitness.privacy import common, kmap
from fitness.privacy import uniqueness as family
from fitness.privacy.uniqueness import PopulationUniqueness, arx_suppression_count, estimated_share
from fitness.uniqueness import pitman_uniques, population_uniqueness
from kgen import Config, check_k_anonymity, from_mapping, prepare
from kgen.check import claims
from kgen.check.rules import rules_from_models
from kgen.check.rules import uniqueness as rule
from kgen.cli.main import main
from lattice.errors import NoSolutionError
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.ola import OLA

ZAYATZ_SHARE = 28 / 11 / 8  # test_risk.test_zayatz_by_hand: classes 1, 1, 2 of 4 rows, N = 8 (F = 1/2)


def table(n: int) -> EncodedTable:
    return EncodedTable(n, ())


def test_the_threshold_by_hand() -> None:
    sizes = Partition(np.array([1, 1, 2]))
    assert estimated_share(sizes.sizes, 4, 0.5, "zayatz") == pytest.approx(ZAYATZ_SHARE)
    assert not PopulationUniqueness(0.32, 0.5, "zayatz").violating(sizes, table(4)).any()
    # above 0.31: ARX's binary search suppresses one unique (sizes 1, 2 left: 1 x 7/17 / (3/8) / 8 = 7/51)
    assert estimated_share(np.array([1, 2]), 4, 0.5, "zayatz") == pytest.approx(7 / 51)
    assert PopulationUniqueness(0.31, 0.5, "zayatz").violating(sizes, table(4)).tolist() == [True, False, False]
    assert estimated_share(sizes.sizes, 4, 1.0, "dankar") == 0.5  # F = 1: the sample is the population
    # with the two uniques suppressed by another model, no sample unique is left: nothing more to suppress
    already = np.array([True, True, False])
    assert not PopulationUniqueness(0.01, 0.5, "zayatz").enforce(sizes, table(4), already).any()


def test_arxs_binary_search_finds_the_least_count_of_a_monotone_condition() -> None:
    for least in range(9):
        assert arx_suppression_count(8, lambda m, t=least: m >= t, lambda m: False) == least


def test_arxs_binary_search_on_a_non_monotone_condition_gives_arxs_count() -> None:
    """Holds after suppressing 2 classes and from 6 on, not at 3 to 5. By hand, ARX's search: 4 fails
    (low 4), 6 holds (high 4), 5 fails (low 5), then 5 fails and one more class is suppressed: 6, not 2."""
    asked: list[int] = []

    def holds(m: int) -> bool:
        asked.append(m)
        return m == 2 or m >= 6

    assert arx_suppression_count(8, holds, lambda m: False) == 6
    assert asked[:4] == [0, 4, 6, 5]


def test_arxs_binary_search_stops_once_a_failing_count_passes_the_limit() -> None:
    assert arx_suppression_count(8, lambda m: m >= 5, lambda m: m > 3) is None  # 4 fails over the limit
    assert arx_suppression_count(8, lambda m: m >= 5, lambda m: m > 5) == 5
    # on the way to 2, 4 holds above the limit (ARX goes on), then 1 fails within it
    assert arx_suppression_count(8, lambda m: m >= 2, lambda m: m > 2) == 2
    assert arx_suppression_count(8, lambda m: m >= 2, lambda m: m > 0) is None  # 1 fails over the limit


def test_the_smallest_classes_are_suppressed_until_the_share_holds() -> None:
    """F = 1: the share is the sample uniques over the released rows. Classes 1, 1, 1, 5, 5, 10 (23 rows):
    3/23 > 0.05; suppressing one unique gives 2/22 = 0.091, two give 1/21 = 0.048 <= 0.05. Ties among the
    uniques: the first row first (the evaluator's partitions carry rows; without them, the classes' order)."""
    sizes = Partition(np.array([5, 1, 10, 1, 5, 1]))
    marked = PopulationUniqueness(0.05, 1.0).enforce(sizes, table(23), np.zeros(6, dtype=bool))
    assert marked.tolist() == [False, True, False, True, False, False]
    # 8 rows, classes 1, 2, 1, 1, 1, 2 whose first rows are 4, 1, 3, 5, 0, 6; U = 0.2: 4/8, 3/7, 2/6, then 1/5
    # holds, so three of the four uniques go, in first-row order: classes 4, 2, 0 (class 3 is kept)
    rows = np.array([4, 1, 1, 2, 0, 3, 5, 5], dtype=np.int64)
    with_rows = Partition(np.array([1, 2, 1, 1, 1, 2]), rows=rows)
    marked = PopulationUniqueness(0.2, 1.0).enforce(with_rows, table(8), np.zeros(6, dtype=bool))
    assert marked.tolist() == [True, False, True, False, True, False]


def release(sizes: list[int], suppressed: int = 0) -> object:
    q = [f"v{i}" for i, size in enumerate(sizes) for _ in range(size)] + ["*"] * suppressed
    return from_mapping({"q": q})


def passes(t: object, u: float, f: float = 0.5, model: str = "zayatz") -> bool:
    d = PopulationUniqueness(u, f, model).describe()
    k, rules = rules_from_models([{"model": "k-anonymity", "k": 1}, d], False)
    return check_k_anonymity(t, ["q"], k, 1.0, rules).passed


def test_the_rule_passes_a_release_at_u_and_fails_one_row_off() -> None:
    assert passes(release([1, 1, 2]), ZAYATZ_SHARE)
    assert not passes(release([1, 1, 2]), ZAYATZ_SHARE * 0.999)
    assert not passes(release([1, 1, 1, 1]), ZAYATZ_SHARE)  # one row of the pair made unique: 4 uniques
    assert passes(release([2, 2], suppressed=2), 0.01)  # no sample unique left: 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 6), min_size=1, max_size=25), st.integers(0, 4),
       st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.7, 1.0]), st.sampled_from(rule.MODELS))
def test_the_checker_estimates_what_the_model_estimates(sizes: list[int], extra: int, f: float, model: str) -> None:
    rows = sum(sizes) + extra
    mine, theirs = estimated_share(np.array(sizes), rows, f, model), rule.uniqueness_share(np.array(sizes), rows, f,
                                                                                            model)
    histogram = {s: sizes.count(s) for s in set(sizes)}
    # kgen risk's figure, every fit made (without Dankar's fallback on Zayatz, which the criterion lacks)
    assert mine == population_uniqueness(histogram, f, rows, model, fallback=False)["share"]
    assert (mine is None) == (theirs is None)
    if mine is not None:
        assert theirs == pytest.approx(mine, rel=1e-6, abs=1e-12)


def test_the_checker_fits_pitman_as_the_model_does_on_random_histograms() -> None:
    """The checker's Pitman (ARX's Newton-Raphson run, written again with scalar arithmetic) and the model's
    (`fitness.uniqueness`, vectorized) find the same estimate, or both none, on Zipf-like histograms of up to
    400 classes at sampling fractions 0.001 to 0.1 (some have no estimate: both must say so)."""
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(60):
        sizes = rng.zipf(float(rng.uniform(1.3, 3.0)), size=int(rng.integers(2, 400)))
        values, counts = np.unique(sizes[sizes < 500], return_counts=True)
        histogram = {int(v): int(c) for v, c in zip(values, counts)}
        population = int(sum(s * c for s, c in histogram.items()) / rng.uniform(0.001, 0.1))
        mine = pitman_uniques(histogram, population)
        theirs = rule.pitman(histogram, population)
        assert mine["converged"] == (theirs is not None), histogram
        if theirs is not None:
            found += 1
            assert theirs == pytest.approx(mine["uniques"], rel=1e-9)
    assert 40 <= found < 60


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 9), st.sampled_from("abc")), min_size=6, max_size=30),
       st.sampled_from([0.0, 0.2, 1.0]), st.sampled_from([0.05, 0.2, 0.5]), st.sampled_from(["dankar", "zayatz"]))
def test_exact_searches_find_exhaustives_optimum(rows: list, suppression: float, u: float, model: str) -> None:
    columns = {"n": [str(a) for a, _ in rows], "c": [b for _, b in rows]}
    config = Config(qi=["n", "c"], k=1, allow_k1=True, suppression=suppression, max_population_uniqueness=u,
                    sampling_fraction=0.3, uniqueness_model=model)
    try:
        prepared = prepare(columns, config)
    except NoSolutionError:
        return
    assert not prepared.evaluator.monotone_feasibility
    expected = Exhaustive().run(prepared.problem(), Limits())
    for search in (BestFirst(), OLA(), Incognito()):
        found = search.run(prepared.problem(), Limits())
        assert (None if found.best is None else found.best.loss) == (
            None if expected.best is None else expected.best.loss), search


def test_the_sampling_fraction_is_one_parameter_that_k_map_and_uniqueness_share() -> None:
    assert kmap.FAMILY.parameters[1] is common.SAMPLING_FRACTION is family.FAMILY.parameters[1]
    assert [p.name for p in privacy.parameters()].count("sampling_fraction") == 1
    values = {p.name: p.default for p in privacy.parameters()} | {"max_population_uniqueness": 0.2,
                                                                   "sampling_fraction": 0.1}
    assert privacy.report_values(values)["sampling_fraction"] == 0.1  # kept although k-map is not asked
    claimed = PopulationUniqueness(0.2, 0.1).describe()
    directions = {name: privacy.stricter_direction(name) for name in privacy.FAMILIES}
    assert claims.weaker_model(claimed, [{**claimed, "max_population_uniqueness": 0.1}], directions) is None
    assert claims.weaker_model(claimed, [{**claimed, "max_population_uniqueness": 0.3}], directions)
    assert claims.weaker_model(claimed, [{**claimed, "uniqueness_model": "zayatz"}], directions)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    path = tmp_path / "data.csv"
    path.write_text("age,sex\n" + "".join(f"{a},{s}\n" for a, s in zip(rng.integers(20, 60, 200),
                                                                      rng.choice(["F", "M"], 200))))
    return path


def test_every_command_runs_checks_and_applies_the_threshold(data: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "out.csv"
    flags = ["--max-population-uniqueness", "0.05", "--sampling-fraction", "0.2", "--uniqueness-model", "zayatz"]
    base = ["--qi", "age,sex", "--hierarchy", "age=decimal", "--k", "1", "--allow-k1", "--suppression", "0"]
    assert main(["anonymize", str(data), *base, *flags, "--output", str(output)]) == 0
    assert "population uniqueness <= 0.05 (zayatz" in capsys.readouterr().out
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["max_population_uniqueness"] == 0.05 and report["sampling_fraction"] == 0.2
    assert report["verified"]["passed"] is True
    assert main(["check", str(output), "--qi", "age,sex", "--k", "1", *flags]) == 0
    assert main(["check", str(output), "--qi", "age,sex", "--k", "1", *flags[:4], "--uniqueness-model",
                 "zayatz", "--max-population-uniqueness", "0.0001"]) == 1
    assert main(["check", str(output), "--report", str(output.with_suffix(".json"))]) == 0
    capsys.readouterr()
    assert main(["risk", str(output), "--qi", "age,sex", "--sampling-fraction", "0.2", "--uniqueness-model",
                 "zayatz", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["population_uniqueness"]["share"] <= 0.05
    again = tmp_path / "again.csv"
    assert main(["apply", str(data), "--report", str(output.with_suffix(".json")), "--output", str(again),
                 "--allow-k1", "--quiet"]) == 0
    assert again.read_bytes() == output.read_bytes()


def test_a_threshold_without_a_sampling_fraction_is_a_one_line_error(data: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    code = main(["anonymize", str(data), "--qi", "age,sex", "--k", "2", "--max-population-uniqueness", "0.1",
                 "--output", str(tmp_path / "o.csv")])
    error = capsys.readouterr().err
    assert code == 2 and "--sampling-fraction" in error and "Traceback" not in error
