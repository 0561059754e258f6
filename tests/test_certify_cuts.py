"""Issue 30's short cuts and bounds stay sound (SPEC section 11): the pair cuts are maximal infeasible nodes of
their pair's plane, the cuts they imply are dropped only for infeasible nodes, the decomposition bound of
groups of genes never exceeds the optimum, and the certified search with both still returns exhaustive's
optimum; a primal side's nodes are absorbed between rounds."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_certify import key, up_set_problem

from lattice.box import Box
from lattice.hitting import CutModel
from lattice.search.base import Limits
from lattice.search.certify import Certify, CertifyLoop, descend, tightened_bound
from lattice.search.exhaustive import Exhaustive
from lattice.search.kgen_ga import KGen


@st.composite
def wide_up_sets(draw):
    """Up-set problems of 4-7 genes (enough for groups of 2 and pairs across them)."""
    dims = draw(st.integers(4, 7))
    heights = tuple(draw(st.integers(0, 3)) for _ in range(dims))
    minimal = [tuple(draw(st.integers(0, h)) for h in heights) for _ in range(draw(st.integers(1, 6)))]
    return heights, minimal


def truth(heights, generators):
    return Exhaustive().run(up_set_problem(heights, generators), Limits()).best


@settings(max_examples=40, deadline=None)
@given(wide_up_sets())
def test_every_pair_cut_is_a_maximal_infeasible_node_of_its_pair_plane(case):
    heights, generators = case
    problem = up_set_problem(heights, generators)
    feasible = problem.evaluator.predicate
    loop = CertifyLoop(Certify(seed_evaluations=0), problem, Limits(), 0)
    loop.budget.done = None  # walk on after every node is evaluated (the loop itself would stop: optimum known)
    for i, j in itertools.combinations([g for g, h in enumerate(heights) if h > 0], 2):
        steps = loop.staircase(i, j)
        for a, b in steps:
            node = list(heights)
            node[i], node[j] = a, b
            assert not feasible(tuple(node))
            for gene, level in ((i, a), (j, b)):
                if level < heights[gene]:
                    raised = node[:]
                    raised[gene] = level + 1
                    assert feasible(tuple(raised)), (i, j, steps)
        # every infeasible node of the plane lies below one step
        for a in range(heights[i] + 1):
            for b in range(heights[j] + 1):
                node = list(heights)
                node[i], node[j] = a, b
                if not feasible(tuple(node)):
                    assert any(a <= sa and b <= sb for sa, sb in steps)


@settings(max_examples=60, deadline=None)
@given(wide_up_sets(), st.lists(st.lists(st.integers(0, 3), min_size=7, max_size=7), max_size=20))
def test_only_infeasible_nodes_have_cuts_the_pair_cuts_imply(case, raw):
    heights, generators = case
    problem = up_set_problem(heights, generators)
    loop = CertifyLoop(Certify(seed_evaluations=0), problem, Limits(), 0)
    loop.budget.done = None
    loop.pair_cuts()
    nodes = [tuple(min(v, h) for v, h in zip(values, heights)) for values in raw]
    kept = set(loop.unimplied(nodes))
    for node in nodes:
        if node not in kept:
            assert not problem.evaluator.predicate(node)


@settings(max_examples=60, deadline=None)
@given(wide_up_sets(), st.lists(st.lists(st.integers(0, 3), min_size=7, max_size=7), max_size=20))
def test_a_groups_pair_cuts_imply_cuts_only_of_infeasible_nodes(case, raw):
    # a group's loop walks the pairs of its own genes (the last ones here) and reads only those in `unimplied`
    heights, generators = case
    problem = up_set_problem(heights, generators)
    loop = CertifyLoop(Certify(seed_evaluations=0, groups=2, pairs=False), problem, Limits(), 0)
    loop.budget.done = None
    genes = list(range(len(heights)))[2:]
    sub = loop.group_loop(genes, None)
    assert sub.search.pairs
    sub.budget.done = None  # a group box walked whole would stop the walks (`complete`) before the table is kept
    sub.pair_cuts()
    nodes = [tuple(v if i in genes else h for i, (v, h) in enumerate(zip(values, heights)))
             for values in ([min(v, h) for v, h in zip(values, heights)] for values in raw)]
    kept = set(sub.unimplied(nodes))
    for node in nodes:
        if node not in kept:
            assert not problem.evaluator.predicate(node)


@settings(max_examples=50, deadline=None)
@given(wide_up_sets(), st.integers(0, 3), st.sampled_from([1, 2, 3]), st.booleans())
def test_certify_with_groups_and_pairs_returns_the_exhaustive_optimum(case, seed, groups, pairs):
    heights, generators = case
    certified = Certify(seed_evaluations=0, cuts=2, groups=groups, pairs=pairs).run(
        up_set_problem(heights, generators), Limits(seed=seed))
    expected = Exhaustive().run(up_set_problem(heights, generators), Limits())
    assert certified.stopped == "complete"
    assert key(certified) == key(expected)
    if expected.best is not None:
        assert certified.params["lower_bound"] == expected.best.loss
        bound = certified.params.get("decomposition_bound")
        assert bound is None or bound <= expected.best.loss + 1e-12


@settings(max_examples=30, deadline=None)
@given(wide_up_sets(), st.integers(0, 3), st.sampled_from([1, 2]), st.integers(1, 30))
def test_the_decomposition_bound_never_exceeds_the_optimum(case, seed, groups, evaluations):
    heights, generators = case
    best = truth(heights, generators)
    loop = CertifyLoop(Certify(seed_evaluations=0, groups=groups), up_set_problem(heights, generators),
                       Limits(seed=seed), 0)
    loop.budget.done = None
    loop.decompose(groups)
    if best is not None and "decomposition_bound" in loop.params:
        assert loop.params["decomposition_bound"] <= best.loss + 1e-12
        assert loop.lower is not None and loop.lower <= best.loss + 1e-12
    ga = KGen().run(up_set_problem(heights, generators), Limits(max_evaluations=evaluations, seed=seed))
    record = tightened_bound(up_set_problem(heights, generators), ga.infeasible, ga.best, groups=groups)
    if best is not None and record["lower_bound"] is not None:
        assert record["lower_bound"] <= best.loss + 1e-12


def test_the_decomposition_bound_sums_the_groups_own_optima():
    # the groups interleave the genes: {0, 2} and {1, 3}. With genes 1 and 3 at the top, genes 0 and 2 need
    # (2, 2) (from generator (2, 2, 2, 2); (3, 3) from the others); with 0 and 2 at the top, 1 and 3 need nothing
    heights = (3, 3, 3, 3)
    generators = [(2, 2, 2, 2), (3, 0, 3, 0), (2, 2, 3, 0), (3, 0, 2, 2)]
    loop = CertifyLoop(Certify(seed_evaluations=0, groups=2), up_set_problem(heights, generators), Limits(), 0)
    loop.budget.done = None
    loop.decompose(1)  # groups of one gene: x0 >= 2 and x2 >= 2 with the others at the top; 4 of 12 levels
    assert loop.params["decomposition_bound"] == 4 / 12
    loop = CertifyLoop(Certify(seed_evaluations=0, groups=2), up_set_problem(heights, generators), Limits(), 0)
    loop.budget.done = None
    loop.decompose(2)
    assert loop.params["groups"] == 2 and loop.params["groups_solved"] == 2
    # the sum, 4 + 0 of 12 levels, LOG 1/3, below the optimum (3, 0, 3, 0), LOG 0.5
    assert loop.params["decomposition_bound"] == 4 / 12 < truth(heights, generators).loss == 0.5


def test_a_primal_side_is_called_between_rounds_and_its_nodes_absorbed():
    heights = (3, 3, 3, 3)
    generators = [(2, 2, 2, 2), (3, 0, 3, 0)]
    seen = []

    def primal(loop: CertifyLoop) -> None:
        seen.append(loop.rounds)
        loop.budget.evaluate((3, 0, 3, 0))

    result = Certify(seed_evaluations=0, pairs=False, primal=primal).run(up_set_problem(heights, generators), Limits())
    assert seen and seen[0] == 1
    assert key(result) == key(Exhaustive().run(up_set_problem(heights, generators), Limits()))


def test_pair_walks_are_skipped_when_they_would_take_half_an_evaluation_limit():
    heights = (3,) * 6
    problem = up_set_problem(heights, [(2,) * 6])
    loop = CertifyLoop(Certify(seed_evaluations=0), problem, Limits(max_evaluations=20), 0)
    loop.pair_cuts()
    assert loop.params["pair_cuts"] == "skipped" and loop.budget.evaluations == 0
    assert Box.full(heights).size == 4**6


@settings(max_examples=30, deadline=None)
@given(wide_up_sets(), st.integers(0, 3))
def test_certify_with_the_descent_as_primal_side_returns_the_exhaustive_optimum(case, seed):
    heights, generators = case
    certified = Certify(seed_evaluations=0, cuts=2, primal=descend).run(up_set_problem(heights, generators),
                                                                        Limits(seed=seed))
    assert certified.stopped == "complete"
    assert key(certified) == key(Exhaustive().run(up_set_problem(heights, generators), Limits()))


def test_the_descent_ends_at_a_minimal_feasible_node():
    heights = (3, 3, 3, 3)
    generators = [(2, 2, 2, 2), (3, 0, 3, 0)]
    problem = up_set_problem(heights, generators)
    loop = CertifyLoop(Certify(seed_evaluations=0), problem, Limits(), 0)
    loop.last_maximal = [(2, 1, 3, 3)]  # maximal infeasible: raising gene 1 gives (2, 2, 3, 3), feasible
    descend(loop)
    found = loop.budget.best.node
    assert problem.evaluator.predicate(found)
    for g in range(4):
        if found[g] > 0:
            assert not problem.evaluator.predicate(found[:g] + (found[g] - 1,) + found[g + 1 :])


def test_a_decomposition_stopped_at_once_by_its_time_limit_still_returns_a_sound_bound():
    heights = (3,) * 6
    generators = [(2, 2, 2, 2, 2, 2), (3, 0, 3, 0, 3, 0)]
    best = truth(heights, generators)
    ga = KGen().run(up_set_problem(heights, generators), Limits(max_evaluations=20, seed=1))
    record = tightened_bound(up_set_problem(heights, generators), ga.infeasible, ga.best, seconds=0.0, groups=2)
    assert record["lower_bound"] is None or record["lower_bound"] <= best.loss


def test_a_lost_cut_is_an_internal_error_at_once_not_a_loop_for_ever(monkeypatch):
    """Planted: the program keeps none of its cover cuts. Each infeasible solution then comes back; the loop
    raises on the second proposal instead of proposing it for ever (a soundness bug fails its test fast)."""
    monkeypatch.setattr(CutModel, "add_cover", lambda self, node: False)
    heights = (3, 3, 3, 3)
    generators = [(2, 2, 2, 2), (3, 0, 3, 0)]
    with pytest.raises(RuntimeError, match="a second time"):
        Certify(seed_evaluations=0, pairs=False).run(up_set_problem(heights, generators), Limits(max_evaluations=500))
