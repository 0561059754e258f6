"""Conditional floors across groups (issue 30, sixth round) stay sound (SPEC section 11): what a group needs with
the other genes held at a node's levels (`CertifyLoop.condition`) is a floor for every feasible node at or below
those levels, the program's row (`CutModel.add_conditional_floor`) keeps every feasible node, and the certified
search with them returns exhaustive's optimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_certify import up_set_problem
from test_certify_cuts import wide_up_sets
from test_certify_floors import assert_proves_exhaustives_optimum, feasible_nodes

from lattice.hitting import CutModel
from lattice.search import certify
from lattice.search.base import Limits
from lattice.search.certify import Certify, CertifyLoop


def decomposed(heights, generators, groups, seed):
    loop = CertifyLoop(Certify(seed_evaluations=0, groups=groups), up_set_problem(heights, generators),
                       Limits(seed=seed), 0)
    loop.budget.done = None  # go on after every node is evaluated (the loop itself would stop: optimum known)
    loop.decompose(groups)
    return loop


def below_outside(node, x, genes):
    return all(node[i] <= x[i] for i in range(len(x)) if i not in genes)


@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.sampled_from([1, 2, 3]), st.integers(0, 3), st.data())
def test_every_conditional_floor_holds_for_every_feasible_node_below_its_held_levels(case, groups, seed, data):
    heights, generators = case
    loop = decomposed(heights, generators, groups, seed)
    x = tuple(data.draw(st.integers(0, h)) for h in heights)
    loop.hold(x)
    feasible = list(feasible_nodes(heights, generators))
    for genes, units, held in loop.conditionals:
        for node in feasible:
            if below_outside(node, held, genes):
                assert sum(loop.gene_cost(i, node[i]) for i in genes) >= units, (genes, units, held, node)


@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.sampled_from([1, 2]), st.integers(0, 3), st.data())
def test_the_programs_conditional_rows_keep_every_feasible_node(case, groups, seed, data):
    heights, generators = case
    loop = decomposed(heights, generators, groups, seed)
    for _ in range(3):
        loop.hold(tuple(data.draw(st.integers(0, h)) for h in heights))
    model = loop.model
    for node in feasible_nodes(heights, generators):
        z = [0] * model.columns
        for i, (a, b) in enumerate(zip(model.lower, model.upper)):
            for level in range(a + 1, min(node[i], b) + 1):
                z[model.column(i, level)] = 1
        for cols, weights, need in model.conditionals:
            assert sum(w * z[c] for c, w in zip(cols, weights)) >= need, (node, cols, weights, need)


@settings(max_examples=50, deadline=None)
@given(wide_up_sets(), st.integers(0, 3), st.sampled_from([1, 2, 3]), st.sampled_from([1e-4, 1.0]), st.booleans())
def test_certify_with_conditional_floors_and_deepened_groups_returns_the_exhaustive_optimum(
        case, seed, groups, work, deepen):
    heights, generators = case
    gap_before, certify.DEEPEN_GAP = certify.DEEPEN_GAP, 1.0  # deepen in the first round (small problems end soon)
    try:
        certified = Certify(seed_evaluations=0, cuts=2, groups=groups, collect=3, round_work=work,
                            conditional=True, deepen=deepen).run(up_set_problem(heights, generators),
                                                                 Limits(seed=seed))
    finally:
        certify.DEEPEN_GAP = gap_before
    assert_proves_exhaustives_optimum(certified, heights, generators)


@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.sampled_from([1, 2]), st.integers(0, 3), st.data())
def test_the_short_cuts_of_a_solution_are_infeasible_nodes_with_the_other_genes_at_their_top(
        case, groups, seed, data):
    heights, generators = case
    loop = decomposed(heights, generators, groups, seed)
    before = set(loop.budget.infeasible)
    loop.project(tuple(data.draw(st.integers(0, h)) for h in heights))
    feasible = up_set_problem(heights, generators).evaluator.predicate
    for node in set(loop.budget.infeasible) - before:
        assert not feasible(node)
    for node in loop.tags.stored(False):
        assert not feasible(tuple(int(v) for v in node))


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_a_conditional_floor_binds_below_its_levels_and_lets_go_above(solver):
    # two genes of 2 levels each, unit steps; "gene 0 at or below 0 -> gene 1 costs at least 2"
    model = CutModel((0, 0), (2, 2), [[1, 1], [1, 1]], solver)
    assert model.add_conditional_floor((1,), 2, {0: 0})
    model.add_cover((0, 0))  # and the bottom is infeasible: (0, 1) would cost 1, but the floor wants (0, 2)
    solution = model.solve()
    assert solution.status == "optimal" and solution.node == (1, 0) and solution.cost == 1
    model.add_cover((1, 1))  # now (2, 0), (1, 2) or (0, 2): the floor lets (0, 2) cost 2, not (0, 1)'s 1
    solution = model.solve()
    assert solution.cost == 2 and solution.node != (0, 1)
    assert not model.add_conditional_floor((1,), 2, {0: -1})  # a condition below the box never holds
