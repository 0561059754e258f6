"""The pieces of issue 30 keep the certified search sound: `auto` returns exhaustive's optimum or an interval
around it, the tightened bound beside a heuristic answer never exceeds the true optimum, the climbs reach
maximal infeasible nodes, the pruned tag stores answer like every tag ever given, and every CP-SAT strategy
finds the same optimum (SPEC section 11)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_certify import key, up_set_problem, up_sets

from lattice.box import Box
from lattice.hitting import STRATEGIES
from lattice.node import leq
from lattice.search.auto import Auto
from lattice.search.base import Limits, Problem
from lattice.search.certify import Certify, CertifyLoop, tightened_bound
from lattice.search.exhaustive import Exhaustive
from lattice.search.kgen_ga import KGen
from lattice.search.random_search import RandomSearch
from lattice.search.tags import FEASIBLE, INFEASIBLE, UNKNOWN, SparseTags


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=60, deadline=None)
@given(up_sets(), st.integers(0, 3))
def test_auto_returns_the_exhaustive_optimum_with_its_proof(case, seed):
    heights, generators = case
    result = Auto(ga_evaluations=6).run(up_set_problem(heights, generators), Limits(seed=seed))
    expected = Exhaustive().run(up_set_problem(heights, generators), Limits())
    assert result.stopped == "complete"
    assert key(result) == key(expected)
    if expected.best is not None:
        assert result.params["optimal"] and result.params["lower_bound"] == expected.best.loss
        assert result.params["auto"]["answer"] == "proved optimum"


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=60, deadline=None)
@given(up_sets(), st.integers(1, 30), st.integers(0, 4))
def test_auto_under_an_evaluation_limit_brackets_the_optimum(case, evaluations, seed):
    heights, generators = case
    truth = Exhaustive().run(up_set_problem(heights, generators), Limits()).best
    result = Auto().run(up_set_problem(heights, generators), Limits(max_evaluations=evaluations, seed=seed))
    lower = result.params.get("lower_bound")
    if truth is not None:
        assert lower is None or lower <= truth.loss + 1e-12
        assert result.best is None or result.best.loss >= truth.loss
        if result.params.get("optimal"):
            assert result.best.loss == truth.loss


def test_auto_runs_the_ga_where_the_certified_search_is_unsound_and_the_box_is_large():
    heights = (3, 2, 3)
    sound = up_set_problem(heights, [(1, 1, 2)])
    unsound = Problem(sound.evaluator, sound.box, sound.heights, False, True, loss_is_log=True)
    result = Auto(fallback_nodes=10).run(unsound, Limits(max_evaluations=20))
    assert result.params["auto"]["answer"] == "ga" and "monotone feasibility" in result.params["auto"]["why"]
    assert "certified" not in result.params


def test_auto_applies_its_default_time_limit_only_without_a_user_limit():
    problem = up_set_problem((2, 2), [(1, 1)])
    assert Auto(time_limit=7.0).run(problem, Limits()).params["auto"]["time_limit"] == 7.0
    assert Auto(time_limit=7.0).run(problem, Limits(time_limit=3.0)).params["auto"]["time_limit"] == 3.0
    assert Auto().seed_evaluations(problem, Limits(max_evaluations=10)) == 5


@settings(max_examples=80, deadline=None)
@given(up_sets(), st.integers(1, 40), st.integers(0, 5), st.sampled_from([0.0, 0.05, 2.0]),
       st.sampled_from([None, 0, 1, 3]))
def test_the_tightened_bound_never_exceeds_the_true_optimum(case, evaluations, seed, seconds, rounds):
    heights, generators = case
    truth = Exhaustive().run(up_set_problem(heights, generators), Limits()).best
    for algorithm in (KGen(), RandomSearch()):
        result = algorithm.run(up_set_problem(heights, generators), Limits(max_evaluations=evaluations, seed=seed))
        record = tightened_bound(up_set_problem(heights, generators), result.infeasible, result.best, seconds,
                                 rounds=rounds)
        if truth is not None and record["lower_bound"] is not None:
            assert record["lower_bound"] <= truth.loss + 1e-12
        if record["optimal"]:
            assert result.best.loss == truth.loss
        if record["found"] is not None and truth is not None:
            assert record["found"] >= truth.loss


@settings(max_examples=40, deadline=None)
@given(up_sets(), st.integers(0, 5))
def test_the_tightened_bound_proves_a_ga_answer_optimal_when_given_time(case, seed):
    heights, generators = case
    truth = Exhaustive().run(up_set_problem(heights, generators), Limits()).best
    ga = KGen().run(up_set_problem(heights, generators), Limits(max_evaluations=8, seed=seed))
    record = tightened_bound(up_set_problem(heights, generators), ga.infeasible, ga.best, 60.0, rounds=None,
                             work_limit=None)
    if truth is not None and ga.best is not None:
        assert record["lower_bound"] == pytest.approx(min(truth.loss, ga.best.loss))
        assert record["optimal"] == (ga.best.loss == truth.loss)


@settings(max_examples=80, deadline=None)
@given(up_sets(), st.integers(0, 9))
def test_a_climb_ends_at_a_maximal_infeasible_node(case, seed):
    heights, generators = case
    problem = up_set_problem(heights, generators)
    feasible = problem.evaluator.predicate
    loop = CertifyLoop(Certify(seed_evaluations=0), problem, Limits(seed=seed), 0)
    rng = random.Random(seed)
    for _ in range(4):  # later climbs see the earlier ones' tags
        x = problem.box.random_node(rng)
        if feasible(x):
            continue
        order = list(range(len(heights)))
        rng.shuffle(order)
        m = loop.maximal_above(x, order)
        assert leq(x, m) and not feasible(m)
        for i, h in enumerate(heights):
            if m[i] < h:
                assert feasible(m[:i] + (m[i] + 1,) + m[i + 1 :])
        loop.tags.tag(m, False)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 4), st.lists(st.tuples(st.lists(st.integers(0, 3), min_size=4, max_size=4), st.booleans()),
                                   max_size=25))
def test_pruned_tag_stores_answer_like_every_tag_given(dims, tagged):
    tags = SparseTags(dims)
    given_tags: list[tuple[tuple[int, ...], bool]] = []
    for values, feasible in tagged:
        node = tuple(values[:dims])
        if tags.get(node) == (INFEASIBLE if feasible else FEASIBLE):
            continue  # a contradiction a monotone problem never produces
        tags.tag(node, feasible)
        given_tags.append((node, feasible))
    for node in Box.full((3,) * dims).nodes():
        if any(f and leq(n, node) for n, f in given_tags):
            expected = FEASIBLE
        elif any(not f and leq(node, n) for n, f in given_tags):
            expected = INFEASIBLE
        else:
            expected = UNKNOWN
        fresh = SparseTags(dims)
        fresh.nodes, fresh.count = tags.nodes, tags.count  # the stores alone, without the memo
        assert fresh.get(node) == expected


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_cpsat_strategy_finds_the_exhaustive_optimum(strategy):
    heights = (4, 4, 4, 4, 4, 4)
    generators = [(4, 0, 1, 3, 2, 2), (1, 3, 3, 0, 2, 4), (2, 2, 2, 2, 2, 2), (0, 4, 4, 1, 1, 3)]
    result = Certify(seed_evaluations=0, cuts=2, strategy=strategy).run(up_set_problem(heights, generators),
                                                                        Limits())
    assert key(result) == key(Exhaustive().run(up_set_problem(heights, generators), Limits()))
    assert result.params["optimal"] and result.params["strategy"] == strategy


def test_a_seed_that_spends_the_budget_still_leaves_a_proved_bound():
    heights = (4, 4, 4, 4, 4, 4)
    generators = [(4, 0, 1, 3, 2, 2), (1, 3, 3, 0, 2, 4), (2, 2, 2, 2, 2, 2), (0, 4, 4, 1, 1, 3)]
    truth = Exhaustive().run(up_set_problem(heights, generators), Limits()).best.loss
    result = Certify(seed_evaluations=50).run(up_set_problem(heights, generators), Limits(max_evaluations=10))
    assert result.stopped == "budget"
    assert result.params["lower_bound"] is not None and result.params["lower_bound"] <= truth


def test_a_loop_stopped_before_its_first_solve_still_proves_a_bound():
    heights = (4, 4, 4, 4, 4, 4)
    generators = [(4, 0, 1, 3, 2, 2), (1, 3, 3, 0, 2, 4), (2, 2, 2, 2, 2, 2), (0, 4, 4, 1, 1, 3)]
    problem = up_set_problem(heights, generators)
    truth = Exhaustive().run(problem, Limits()).best.loss
    ga = KGen().run(up_set_problem(heights, generators), Limits(max_evaluations=60, seed=3))
    record = tightened_bound(up_set_problem(heights, generators), ga.infeasible, ga.best, seconds=0.0)
    assert record["rounds"] == 0 and record["lower_bound"] is not None
    assert record["lower_bound"] <= truth
