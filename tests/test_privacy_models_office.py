"""The privacy models of issue 27 (fitness/privacy/): average re-identification risk, estimated k-map,
beta-likeness and delta-disclosure privacy. Hand-computed examples from each definition, the searches'
optima against exhaustive search on random tables, and the models' promises to the evaluator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness.encoding import EncodedTable, dense_codes
from fitness.models import KAnonymity
from fitness.partition import Partition
from fitness.privacy.average_risk import AverageRisk, average_prosecutor_risk
from fitness.privacy.disclosure import DeltaDisclosure, largest_disclosure
from fitness.privacy.hierarchical_t import HierarchicalTCloseness
from fitness.privacy.kmap import KMap, derived_k
from fitness.privacy.likeness import BetaLikeness, largest_gains
from kgen import Config, prepare
from kgen.check.rules import average_risk as risk_rule
from kgen.check.rules import disclosure as disclosure_rule
from kgen.check.rules import hierarchical_t as hierarchical_rule
from kgen.check.rules import kmap as kmap_rule
from kgen.check.rules import likeness as likeness_rule
from lattice.errors import InputError, NoSolutionError
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.certify import Certify
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.ola import OLA

EMPTY = EncodedTable(0, ())


def sized(*sizes: int) -> Partition:
    return Partition(np.array(sizes, dtype=np.int64))


# --- average re-identification risk ------------------------------------------------------------------------

def test_average_risk_suppresses_the_fewest_smallest_classes_that_bring_the_mean_to_r() -> None:
    # classes 1, 1, 2, 4, 4: mean risk 5/12; without the two 1s 3/10, without the 2 as well 2/8 = 0.25
    partition = sized(4, 1, 2, 1, 4)
    assert average_prosecutor_risk(partition.sizes) == pytest.approx(5 / 12)
    assert AverageRisk(0.25).violating(partition, EMPTY).tolist() == [False, True, True, True, False]
    assert AverageRisk(0.3).violating(partition, EMPTY).tolist() == [False, True, False, True, False]
    assert not AverageRisk(5 / 12).violating(partition, EMPTY).any()  # equal meets it


def test_average_risk_applies_after_the_per_class_models() -> None:
    # k = 2 suppresses the 1s; the mean of 2, 4, 4 is 3/10 <= 0.3 already, so nothing more
    partition = sized(4, 1, 2, 1, 4)
    already = KAnonymity(2).violating(partition, EMPTY)
    assert not AverageRisk(0.3).enforce(partition, EMPTY, already).any()
    assert AverageRisk(0.25).enforce(partition, EMPTY, already).tolist() == [False, False, True, False, False]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=9), st.floats(0.05, 1.0))
def test_average_risk_suppresses_the_fewest_rows_of_any_choice(sizes: list[int], r: float) -> None:
    partition = sized(*sizes)
    chosen = AverageRisk(r).violating(partition, EMPTY)
    kept = partition.sizes[~chosen]
    assert kept.size <= (r + 1e-9) * kept.sum()
    best = min(int(partition.sizes[[i for i in range(len(sizes)) if mask >> i & 1]].sum())
               for mask in range(1 << len(sizes))
               if (rest := np.array([s for i, s in enumerate(sizes) if not mask >> i & 1])).size
               <= (r + 1e-9) * rest.sum())
    assert int(partition.sizes[chosen].sum()) == best
    assert risk_rule.breaks(kept, r) is False
    assert risk_rule.mean_risk(kept) == average_prosecutor_risk(kept)
    rows = np.repeat(np.arange(len(sizes)), sizes)  # the checker's rule on the same classes marks as many rows
    marked = risk_rule.MeanRiskRule(r).breaking(None, rows, partition.sizes, {"starred": np.zeros(rows.size, bool)})
    assert int(partition.sizes[marked].sum()) == best


def test_average_risk_refuses_a_threshold_outside_0_1() -> None:
    for bad in (0, -0.1, 1.5, True, "0.1"):
        with pytest.raises(InputError, match="max-average-risk"):
            AverageRisk(bad)  # type: ignore[arg-type]


# --- k-map estimated with ARX's estimators ---------------------------------------------------------------

def test_k_map_derives_k_prime_as_arx_from_the_poisson_tail() -> None:
    # k = 5, pi = 0.1: lambda = 0.5; P(X <= 3) = e^-0.5 (1 + 0.5 + 0.125 + 0.0208) = 0.99825 >= 0.99 first
    # at c = 4, so k' = 4 + 1 = 5, type-1 error 0.00175
    lam = 0.5
    cdf3 = math.exp(-lam) * (1 + lam + lam**2 / 2 + lam**3 / 6)
    assert derived_k(5, 0.1, "poisson", 0.01) == (5, pytest.approx(1 - cdf3))
    # zero-truncated: P(1..3 | X >= 1) = (0.30327 + 0.07582 + 0.01264) / 0.39347 = 0.99555: k' = 4
    positive = 1 - math.exp(-lam)
    mass = math.exp(-lam) * (lam + lam**2 / 2 + lam**3 / 6) / positive
    assert derived_k(5, 0.1, "zero-truncated-poisson", 0.01) == (4, pytest.approx(1 - mass))
    # a sample that is the whole population keeps k; a tiny one needs little
    assert KMap(5, 1.0).derived_k == 5
    assert KMap(1000, 0.0001).derived_k == 3


@pytest.mark.parametrize("estimator", ["poisson", "zero-truncated-poisson"])
def test_the_checker_derives_the_same_k_prime_on_its_own(estimator: str) -> None:
    for k in (1, 2, 3, 5, 10, 50, 1000):
        for fraction in (1e-5, 1e-3, 0.01, 0.1, 0.3, 0.9, 1.0):
            for alpha in (0.0, 0.01, 0.05, 0.5):
                assert kmap_rule.derived_k(k, fraction, estimator, alpha) == derived_k(k, fraction, estimator,
                                                                                       alpha)[0]


def test_k_map_is_k_prime_anonymity_on_class_sizes() -> None:
    model = KMap(5, 0.1, "zero-truncated-poisson")
    assert model.min_class_size == model.count_rule.min_rows == 4
    assert model.violating(sized(3, 4, 9), EMPTY).tolist() == [True, False, False]
    assert model.describe() == {"model": "k-map", "k_map": 5, "sampling_fraction": 0.1,
                                "estimator": "zero-truncated-poisson", "significance": 0.01, "derived_k": 4,
                                "type1_error": pytest.approx(0.0044517, abs=1e-6)}


@pytest.mark.parametrize("bad", [dict(k=0, sampling_fraction=0.1), dict(k=3, sampling_fraction=0.0),
                                 dict(k=3, sampling_fraction=1.2), dict(k=3, sampling_fraction=0.1, estimator="x"),
                                 dict(k=3, sampling_fraction=0.1, significance=2.0)])
def test_k_map_refuses_parameters_that_cannot_work(bad: dict) -> None:
    with pytest.raises(InputError):
        KMap(**bad)


# --- beta-likeness and delta-disclosure ----------------------------------------------------------------------

def sensitive_table(values: list[str]) -> EncodedTable:
    return EncodedTable(len(values), (), {"s": dense_codes(values)})


# 10 rows: a x5, b x4, c x1 (p = .5, .4, .1); class 0 = {a, a, b, c}, class 1 = {a, a, a, b, b, b}
VALUES = ["a", "a", "b", "c", "a", "a", "a", "b", "b", "b"]
ROWS = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])


def test_beta_likeness_bounds_the_relative_gain_of_each_value() -> None:
    table, partition = sensitive_table(VALUES), Partition(np.bincount(ROWS), ROWS)
    # class 0: c has share .25 against .1, gain 1.5; class 1: a has .5 against .5, b .5 against .4: gain .25
    assert largest_gains(partition, table, "s").tolist() == pytest.approx([1.5, 0.25])
    assert BetaLikeness("s", 1.5).violating(partition, table).tolist() == [False, False]
    assert BetaLikeness("s", 1.4).violating(partition, table).tolist() == [True, False]
    # enhanced: the bound for b is min(beta, -ln .4 = 0.916), for c min(beta, -ln .1 = 2.303)
    assert BetaLikeness("s", 2.0, "enhanced").violating(partition, table).tolist() == [False, False]
    assert BetaLikeness("s", 0.2, "enhanced").violating(partition, table).tolist() == [True, True]
    assert likeness_rule.breaking(ROWS, VALUES, 1.4, "basic").tolist() == [True, False]
    assert likeness_rule.breaking(ROWS, VALUES, 0.2, "enhanced").tolist() == [True, True]


def test_enhanced_beta_likeness_is_tighter_for_frequent_values() -> None:
    # a class of a alone: gain (1 - .5) / .5 = 1 <= beta = 2 (basic), but above -ln .5 = 0.693 (enhanced)
    values, rows = ["a", "a", "b", "b"], np.array([0, 0, 1, 1])
    table, partition = sensitive_table(values), Partition(np.bincount(rows), rows)
    assert not BetaLikeness("s", 2.0).violating(partition, table).any()
    assert BetaLikeness("s", 2.0, "enhanced").violating(partition, table).all()


def test_delta_disclosure_bounds_the_log_ratio_of_each_present_value_strictly() -> None:
    table, partition = sensitive_table(VALUES), Partition(np.bincount(ROWS), ROWS)
    # class 0: log2(.25 / .1) = 1.3219 (c); class 1: log2(.5 / .4) = 0.3219 (b)
    expected = [math.log2(2.5), math.log2(1.25)]
    assert largest_disclosure(partition, table, "s").tolist() == pytest.approx(expected)
    assert DeltaDisclosure("s", 1.33).violating(partition, table).tolist() == [False, False]
    assert DeltaDisclosure("s", 1.32).violating(partition, table).tolist() == [True, False]
    assert DeltaDisclosure("s", math.log2(1.25)).violating(partition, table).tolist() == [True, True]  # strict
    assert disclosure_rule.breaking(ROWS, VALUES, 1.32).tolist() == [True, False]
    assert disclosure_rule.disclosure(ROWS, VALUES).tolist() == pytest.approx(expected)


def test_delta_disclosure_is_not_monotone_even_without_suppression() -> None:
    # 9 rows, a x2 (p = 2/9), b x7. A = {a, b, b, b}: a at 1/4, |log2(.25 / .222)| = 0.17; B = {b, b, b, b}:
    # 0.36; merged A + B holds a at 1/8: |log2(.125 / .222)| = 0.83 >= 0.8 although neither part broke it
    values = ["a", "b", "b", "b", "b", "b", "b", "b", "a"]
    apart, merged = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2]), np.array([0, 0, 0, 0, 0, 0, 0, 0, 1])
    table, model = sensitive_table(values), DeltaDisclosure("s", 0.8)
    assert model.violating(Partition(np.bincount(apart), apart), table).tolist() == [False, False, True]
    assert model.violating(Partition(np.bincount(merged), merged), table).tolist() == [True, True]
    assert not model.monotone and not model.monotone_with_suppression


def test_sensitive_models_refuse_bad_parameters() -> None:
    for bad in (0, -1.0, math.inf, True):
        with pytest.raises(InputError, match="beta"):
            BetaLikeness("s", bad)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="delta"):
            DeltaDisclosure("s", bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="variant"):
        BetaLikeness("s", 1.0, "strong")


def test_monotonicity_is_declared_as_arx_declares_it() -> None:
    assert (AverageRisk(0.1).monotone, AverageRisk(0.1).monotone_with_suppression) == (True, True)
    assert (KMap(3, 0.1).monotone, KMap(3, 0.1).monotone_with_suppression) == (True, True)
    assert (BetaLikeness("s", 1.0).monotone, BetaLikeness("s", 1.0).monotone_with_suppression) == (True, False)
    assert (DeltaDisclosure("s", 1.0).monotone, DeltaDisclosure("s", 1.0).monotone_with_suppression) == (False,
                                                                                                          False)


# --- the searches' optima against exhaustive search on random tables ------------------------------------------

@st.composite
def small_problems(draw):
    n = draw(st.integers(6, 30))
    columns = {}
    for j in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            columns[f"q{j}"] = [str(draw(st.integers(0, draw(st.sampled_from([9, 99]))))) for _ in range(n)]
        else:
            columns[f"q{j}"] = [draw(st.sampled_from("abcd")) for _ in range(n)]
    qis = list(columns)
    columns["s"] = [draw(st.sampled_from("xyz")) for _ in range(n)]
    suppression = draw(st.sampled_from([0.0, 0.1, 0.3]))
    model = draw(st.sampled_from(["risk", "kmap", "beta", "beta-enhanced", "delta", "tree"]))
    return columns, qis, suppression, model, draw(st.integers(0, 3))


def models_of(name: str, choice: int) -> list:
    if name == "risk":
        return [KAnonymity(1 + choice % 3), AverageRisk((0.2, 0.34, 0.5, 0.75)[choice])]  # after k, too
    if name == "kmap":
        return [KAnonymity(1), KMap((2, 3, 5, 10)[choice], (0.5, 0.1, 0.3, 0.2)[choice], ESTIMATORS[choice % 2])]
    if name == "tree":
        return [KAnonymity(1), HierarchicalTCloseness("s", (0.1, 0.2, 0.3, 0.5)[choice], xyz_hierarchy())]
    if name == "delta":
        return [KAnonymity(1), DeltaDisclosure("s", (0.5, 1.0, 1.6, 3.0)[choice])]
    return [KAnonymity(1), BetaLikeness("s", (0.5, 1.0, 2.0, 4.0)[choice], name.partition("-")[2] or "basic")]


ESTIMATORS = ("poisson", "zero-truncated-poisson")


def xyz_hierarchy():
    from lattice.hierarchy import Hierarchy

    return Hierarchy.from_rows("s", [["x", "G", "*"], ["y", "G", "*"], ["z", "H", "*"]])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems())
def test_every_exact_search_finds_exhaustives_optimum_under_each_model(case) -> None:
    columns, qis, suppression, name, choice = case
    config = Config(qi=qis, k=1, suppression=suppression, sensitive=["s"], keep_unnamed=True, allow_k1=True)
    try:
        prepared = prepare(columns, config, models_of(name, choice))
    except NoSolutionError:  # monotone feasibility and an infeasible top: no node is feasible, proved up front
        return
    truth = Exhaustive().run(prepared.problem(), Limits())
    expected = None if truth.best is None else truth.best.loss
    problem = prepared.problem()
    if not problem.monotone_feasibility:  # certify's cuts need it: it refuses such a problem
        with pytest.raises(InputError, match="monotone feasibility"):
            Certify().run(problem, Limits())
    for search in (BestFirst(), OLA(), Incognito()) + ((Certify(),) if problem.monotone_feasibility else ()):
        prepared.evaluator.clear_cache()
        found = search.run(prepared.problem(), Limits())
        assert found.stopped == "complete", (search, found.stopped)
        assert (None if found.best is None else found.best.loss) == expected, search


# --- t-closeness with the hierarchical distance --------------------------------------------------------------

def abcd_hierarchy():
    from lattice.hierarchy import Hierarchy

    return Hierarchy.from_rows("s", [["a", "X", "*"], ["b", "X", "*"], ["c", "Y", "*"], ["d", "Y", "*"]])


def test_hierarchical_distance_is_the_emd_on_the_hierarchy() -> None:
    # a, b under X; c, d under Y; the table holds each twice (q = 1/4 each). By hand, the cheapest transport:
    # {a}: .25 to b within X (distance 1/2), .5 to c, d across (1): .125 + .5 = .625
    # {a, c}: .25 a -> b and .25 c -> d, both within a group: .25
    # {b, b, c, d, d} (p = 0, .4, .2, .4): .15 b -> a and .05 d -> c within (1/2), .1 d -> a across: .2
    values, rows = ["a", "a", "c", "b", "b", "c", "d", "d"], np.array([0, 1, 1, 2, 2, 2, 2, 2])
    table, partition = sensitive_table(values), Partition(np.bincount(rows), rows)
    model = HierarchicalTCloseness("s", 0.25, abcd_hierarchy())
    assert model.distances(partition, table).tolist() == pytest.approx([0.625, 0.25, 0.2])
    assert model.violating(partition, table).tolist() == [True, False, False]
    assert HierarchicalTCloseness("s", 0.2, abcd_hierarchy()).violating(partition, table).tolist() == [True, True,
                                                                                                     False]
    assert hierarchical_rule.distances(rows, values, abcd_hierarchy().paths).tolist() == pytest.approx(
        [0.625, 0.25, 0.2])
    assert hierarchical_rule.breaking(rows, values, abcd_hierarchy().paths, 0.2).tolist() == [True, True, False]


def test_hierarchical_t_closeness_names_a_value_its_hierarchy_lacks() -> None:
    table = sensitive_table(["a", "e"])
    with pytest.raises(InputError, match="'e'"):
        HierarchicalTCloseness("s", 0.2, abcd_hierarchy()).violating(Partition(np.array([2]), np.zeros(2, int)), table)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abcd")), min_size=1, max_size=40))
def test_the_checker_and_the_model_compute_the_same_measures_on_random_classes(pairs) -> None:
    classes, values = [c for c, _ in pairs], [v for _, v in pairs]
    rows = np.unique(classes, return_inverse=True)[1].reshape(-1)
    table, partition = sensitive_table(values), Partition(np.bincount(rows), rows)
    model = HierarchicalTCloseness("s", 0.3, abcd_hierarchy())
    assert hierarchical_rule.distances(rows, values, abcd_hierarchy().paths).tolist() == pytest.approx(
        model.distances(partition, table).tolist())
    assert disclosure_rule.disclosure(rows, values).tolist() == pytest.approx(
        largest_disclosure(partition, table, "s").tolist())
    for beta, variant in ((0.5, "basic"), (1.0, "enhanced"), (3.0, "basic")):
        assert likeness_rule.breaking(rows, values, beta, variant).tolist() == BetaLikeness(
            "s", beta, variant).violating(partition, table).tolist()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems(), st.integers(1, 3))
def test_the_bitset_kernel_evaluates_every_node_as_the_fast_kernel_does(case, k: int) -> None:
    columns, qis, suppression, name, choice = case
    models = [KAnonymity(k)] + models_of(name, choice)[1:]
    try:
        fast = prepare(columns, Config(qi=qis, k=k, suppression=suppression, sensitive=["s"],
                                       keep_unnamed=True, allow_k1=True), models)
        bitset = prepare(columns, Config(qi=qis, k=k, suppression=suppression, sensitive=["s"], kernel="bitset",
                                         keep_unnamed=True, allow_k1=True),
                         models)
    except NoSolutionError:
        return
    for node in fast.box.nodes():
        assert bitset.evaluator.feasible(node) == fast.evaluator.evaluate(node).feasible
        assert bitset.evaluator.evaluate(node) == fast.evaluator.evaluate(node)


def test_a_release_under_the_hierarchical_distance_is_refused_for_want_of_a_check_rule() -> None:
    """No option or check rule yet (docs/privacy-models.md): publishing must refuse, not check it as t-closeness."""
    from kgen.check.rules import rules_from_models

    model = HierarchicalTCloseness("s", 0.2, abcd_hierarchy())
    with pytest.raises(InputError, match="no independent check rule for the privacy model 'hierarchical-t-closeness'"):
        rules_from_models([model.describe()], False)
