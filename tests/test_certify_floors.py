"""Issue 30's third round stays sound (SPEC section 11): the floors the groups prove (`CutModel.add_floor`) hold
for every feasible node, and the certified search with floors, short rounds of capped work and the solver's
other solutions as proposals still returns exhaustive's optimum, with every bound on the way at most the
optimum."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from test_certify import key, up_set_problem
from test_certify_cuts import truth, wide_up_sets

from lattice.hitting import CutModel
from lattice.search.base import Limits
from lattice.search.certify import Certify, CertifyLoop
from lattice.search.exhaustive import Exhaustive


def feasible_nodes(heights, generators):
    problem = up_set_problem(heights, generators)
    for node in itertools.product(*(range(h + 1) for h in heights)):
        if problem.evaluator.predicate(node):
            yield node


@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.sampled_from([1, 2, 3]), st.integers(0, 3))
def test_every_floor_a_group_proves_holds_for_every_feasible_node(case, groups, seed):
    heights, generators = case
    loop = CertifyLoop(Certify(seed_evaluations=0, groups=groups), up_set_problem(heights, generators),
                       Limits(seed=seed), 0)
    loop.budget.done = None
    loop.decompose(groups)
    for genes, units in loop.floors:
        for node in feasible_nodes(heights, generators):
            assert sum(loop.gene_cost(i, node[i]) for i in genes) >= units, (genes, units, node)


@settings(max_examples=50, deadline=None)
@given(wide_up_sets(), st.integers(0, 3), st.sampled_from([1, 2, 3]), st.sampled_from([0, 3]),
       st.sampled_from([1e-4, 1.0]))
def test_certify_with_floors_capped_rounds_and_collected_solutions_returns_the_exhaustive_optimum(
        case, seed, groups, collect, work):
    heights, generators = case
    certified = Certify(seed_evaluations=0, cuts=2, groups=groups, collect=collect, round_work=work).run(
        up_set_problem(heights, generators), Limits(seed=seed))
    assert_proves_exhaustives_optimum(certified, heights, generators)


def assert_proves_exhaustives_optimum(certified: object, heights: tuple, generators: list) -> None:
    """The certified search finished, found exhaustive search's optimum and minimal set, and proved its loss."""
    expected = Exhaustive().run(up_set_problem(heights, generators), Limits())
    assert certified.stopped == "complete"  # type: ignore[attr-defined]
    assert key(certified) == key(expected)
    if expected.best is not None:
        assert certified.params["lower_bound"] == expected.best.loss  # type: ignore[attr-defined]


@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.integers(0, 3), st.sampled_from([1, 2]), st.integers(1, 60))
def test_a_search_with_floors_stopped_by_a_limit_proves_at_most_the_optimum(case, seed, groups, evaluations):
    heights, generators = case
    best = truth(heights, generators)
    result = Certify(seed_evaluations=0, cuts=2, groups=groups, collect=3, round_work=1e-4).run(
        up_set_problem(heights, generators), Limits(max_evaluations=evaluations, seed=seed))
    lower = result.params.get("lower_bound")
    if best is not None and lower is not None:
        assert lower <= best.loss + 1e-12
    if best is None:
        assert result.best is None


def test_a_floor_lifts_the_programs_bound_to_it_at_once():
    # no cuts: the least node costs 0; a floor of 3 units on genes 0 and 1 makes the optimum 3 (e.g. (2, 1, 0))
    model = CutModel((0, 0, 0), (2, 2, 2), [[1, 1], [1, 1], [1, 1]], "cpsat")
    assert model.solve().cost == 0
    assert model.add_floor((0, 1), 3)
    solution = model.solve()
    assert solution.status == "optimal" and solution.cost == 3 and sum(solution.node[:2]) == 3
    assert not model.add_floor((2,), 0)  # nothing to add: every node costs that much on gene 2


def test_a_floor_above_the_fixed_genes_cost_leaves_no_candidate():
    model = CutModel((1, 0), (1, 2), [[1], [1, 1]], "cpsat")
    assert model.add_floor((0,), 2)  # gene 0 is fixed at level 1 (cost 1): no node reaches 2
    assert model.solve().status == "infeasible"


def test_the_solver_returns_its_other_solutions_when_asked():
    model = CutModel((0,) * 4, (3,) * 4, [[1, 1, 1]] * 4, "cpsat")
    model.add_cover((1, 1, 1, 1))
    solution = model.solve(collect=5)
    assert solution.status == "optimal" and solution.cost == 2
    assert solution.node not in solution.others and len(solution.others) <= 5
    for other in solution.others:  # each one meets the cut
        assert any(x > 1 for x in other)


@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.integers(0, 3), st.sampled_from([0, 1, 2]))
def test_every_cover_cut_of_a_run_with_collected_solutions_is_an_infeasible_node(case, seed, groups):
    heights, generators = case
    problem = up_set_problem(heights, generators)
    cut = []
    add_cover = CutModel.add_cover

    def recorded(self, node):
        cut.append(tuple(node))
        return add_cover(self, node)

    CutModel.add_cover = recorded
    try:
        Certify(seed_evaluations=0, cuts=1, groups=groups, collect=8, pairs=False).run(problem, Limits(seed=seed))
    finally:
        CutModel.add_cover = add_cover
    assert not any(problem.evaluator.predicate(node) for node in cut)

