"""The certified search finds exhaustive's optimum (ties included), every reported lower bound is at most the
true optimum, and the bound is refused where it would be unsound (SPEC section 11, issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgen import Config, from_mapping, prepare
from kgen.cli.main import main
from kgen.run.pipeline import finish, search
from kgen.run.record import lower_bound_record
from lattice.box import Box
from lattice.errors import InputError
from lattice.hitting import CutModel, integer_step_costs, maximal_nodes
from lattice.node import leq, precision_loss
from lattice.search.base import Limits, Problem
from lattice.search.certify import Certify, certified_bound
from lattice.search.exhaustive import Exhaustive
from lattice.search.kgen_ga import KGen
from lattice.search.random_search import RandomSearch


class Verdict:
    def __init__(self, node, feasible, loss, los):
        self.node, self.feasible, self.loss, self.los, self.log = node, feasible, loss, los, loss


class Oracle:
    """Feasibility from a predicate, loss LOG, LOS from a function (to exercise the tie rule)."""

    def __init__(self, heights, feasible, los=lambda node: 0.0):
        self.heights, self.predicate, self.los, self.store = heights, feasible, los, {}

    def evaluate(self, node):
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes):
        out = [Verdict(tuple(n), self.predicate(tuple(n)), precision_loss(n, self.heights), self.los(tuple(n)))
               for n in nodes]
        self.store.update((v.node, v) for v in out)
        return out

    def cached(self, node):
        return self.store.get(tuple(node))


def up_set_problem(heights, minimal, box=None, los=lambda node: 0.0) -> Problem:
    return Problem(Oracle(heights, lambda node: any(leq(m, node) for m in minimal), los),
                   box or Box.full(tuple(heights)), tuple(heights), True, True, loss_is_log=True)


@st.composite
def up_sets(draw):
    dims = draw(st.integers(1, 5))
    heights = tuple(draw(st.integers(0, 4)) for _ in range(dims))
    minimal = [tuple(draw(st.integers(0, h)) for h in heights) for _ in range(draw(st.integers(1, 5)))]
    return heights, minimal


def key(result):
    best = result.best
    return None if best is None else (best.loss, best.los, tuple(best.node))


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=120, deadline=None)
@given(up_sets(), st.integers(0, 3), st.sampled_from([0, 5]), st.sampled_from([1, 4]))
def test_certified_optimum_equals_exhaustive_with_ties_on_los(case, los_seed, seed_evaluations, cuts):
    heights, generators = case
    los = (lambda node: ((sum(node) * 7 + los_seed * node[0]) % 5) / 10) if heights else (lambda node: 0.0)
    certified = Certify(seed_evaluations=seed_evaluations, cuts=cuts).run(
        up_set_problem(heights, generators, los=los), Limits(seed=los_seed))
    expected = Exhaustive().run(up_set_problem(heights, generators, los=los), Limits())
    assert certified.stopped == "complete"
    assert key(certified) == key(expected)
    if expected.best is not None:
        assert certified.params["optimal"] and certified.params["lower_bound"] == expected.best.loss


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=80, deadline=None)
@given(up_sets(), st.integers(1, 40), st.integers(0, 5))
def test_every_lower_bound_is_at_most_the_true_optimum(case, evaluations, seed):
    heights, generators = case
    truth = Exhaustive().run(up_set_problem(heights, generators), Limits()).best
    for algorithm in (KGen(), RandomSearch(), Certify(seed_evaluations=3)):
        result = algorithm.run(up_set_problem(heights, generators), Limits(max_evaluations=evaluations, seed=seed))
        bound = certified_bound(up_set_problem(heights, generators), result.infeasible, result.best)
        own = result.params.get("lower_bound")
        for value in (bound["lower_bound"], own):
            if value is not None and truth is not None:
                assert value <= truth.loss + 1e-12
        if bound["optimal"]:
            assert result.best.loss == truth.loss


def test_a_bound_from_all_infeasible_nodes_is_the_optimum_and_proves_it():
    heights = (3, 2, 4)
    problem = up_set_problem(heights, [(1, 2, 1), (3, 0, 2), (0, 1, 4)])
    exhaustive = Exhaustive().run(problem, Limits())
    bound = certified_bound(problem, exhaustive.infeasible, exhaustive.best)
    assert bound["lower_bound"] == exhaustive.best.loss and bound["optimal"]
    weaker = certified_bound(problem, exhaustive.infeasible[:3], exhaustive.best)
    assert weaker["lower_bound"] < exhaustive.best.loss and not weaker["optimal"]


@pytest.mark.parametrize("solver", ["cpsat", "milp"])
def test_cut_model_solvers_find_the_least_cost_node_outside_the_down_sets(solver):
    heights = (3, 2, 4)
    steps, _ = integer_step_costs(heights)
    model = CutModel((0, 0, 1), heights, steps, solver)
    for m in [(2, 2, 1), (3, 1, 2), (0, 2, 4)]:
        model.add_cover(m)
    solution = model.solve()
    brute = min((model.cost(n), n) for n in Box((0, 0, 1), heights).nodes()
                if not any(leq(n, m) for m in [(2, 2, 1), (3, 1, 2), (0, 2, 4)]))
    assert solution.status == "optimal" and solution.cost == brute[0]
    model.set_cutoff(brute[0] - 1)
    assert model.solve().status == "infeasible"


def test_maximal_nodes_keep_only_undominated_nodes():
    nodes = [(1, 1), (2, 0), (0, 2), (1, 0), (2, 0), (0, 1)]
    assert sorted(maximal_nodes(nodes)) == [(0, 2), (1, 1), (2, 0)]


# --- through the API: real evaluator, report fields, refusals ----------------------------------------------

ROWS = st.lists(st.tuples(st.integers(0, 99), st.integers(0, 30), st.integers(0, 9), st.sampled_from("pqr")),
                min_size=4, max_size=40)


def table_of(rows):
    return from_mapping({"a": [str(r[0]) for r in rows], "b": [str(r[1]) for r in rows],
                         "c": [str(r[2]) for r in rows], "s": [r[3] for r in rows]})


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=25, deadline=None)
@given(ROWS, st.integers(2, 3), st.sampled_from([0.0, 0.1, 0.25]), st.booleans())
def test_on_random_tables_certify_equals_exhaustive_and_bounds_hold(rows, k, suppression, diverse):
    assume(not diverse or len({r[3] for r in rows}) >= 2)  # l = 2 needs two sensitive values (else InputError)
    config = Config(qi=["a", "b", "c"], k=k, suppression=suppression, sensitive=["s"],
                    l=2 if diverse else None, prune=False, keep_unnamed=True)
    prepared = prepare(table_of(rows), config, require_feasible=False)
    truth = Exhaustive().run(prepared.problem(), Limits()).best
    certified = Certify(seed_evaluations=10).run(prepared.problem(), Limits())
    assert key(certified) == (None if truth is None else (truth.loss, truth.los, tuple(truth.node)))
    ga = KGen(max_evaluations=15).run(prepared.problem(), Limits(max_evaluations=15))
    if ga.best is not None and truth is not None:
        record = lower_bound_record(prepared, ga)
        assert record["lower_bound"] <= truth.loss + 1e-12
        assert record["gap"] >= ga.best.loss - truth.loss - 1e-12


def test_certify_refuses_non_monotone_models_and_other_metrics():
    rows = [(i % 7, i % 5, i % 3, "pqr"[i % 3]) for i in range(30)]
    entropy = prepare(table_of(rows), Config(qi=["a", "b", "c"], k=2, suppression=0.2, sensitive=["s"], l=2,
                                             l_variant="entropy", keep_unnamed=True))
    with pytest.raises(InputError, match="monotone feasibility"):
        Certify().run(entropy.problem(), Limits())
    ncp = prepare(table_of(rows), Config(qi=["a", "b", "c"], k=2, suppression=0.2, metric="dm", keep_unnamed=True))
    with pytest.raises(InputError, match="LOG objective"):
        Certify().run(ncp.problem(), Limits())
    ga = prepare(table_of(rows), Config(qi=["a", "b", "c"], k=2, suppression=0.2, sensitive=["s"], l=2,
                                        l_variant="entropy", keep_unnamed=True, algorithm="kgen"))
    record = lower_bound_record(ga, search(ga))
    assert record["lower_bound"] is None and record["gap"] is None and "monotone" in record["bound"]["note"]


def test_reports_carry_the_bound_and_no_bound_skips_it(tmp_path: Path):
    rows = [(i % 13, (i * 7) % 11, i % 4, "pqr"[i % 3]) for i in range(60)]
    prepared = prepare(table_of(rows), Config(qi=["a", "b", "c"], k=3, suppression=0.05, max_evaluations=10,
                                              keep_unnamed=True))
    report = finish(prepared, search(prepared)).report
    assert report["lower_bound"] is not None and report["lower_bound"] <= report["log"]
    assert report["gap"] == pytest.approx(report["log"] - report["lower_bound"])
    skipped = prepare(table_of(rows), Config(qi=["a", "b", "c"], k=3, suppression=0.05, bound=False, keep_unnamed=True))
    report = finish(skipped, search(skipped)).report
    assert report["lower_bound"] is None and "no-bound" in report["bound"]["note"]
    source = tmp_path / "t.csv"
    source.write_text("a,b,c\n" + "".join(f"{a},{b},{c}\n" for a, b, c, _ in rows))
    out = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(source), "--qi", "a,b,c", "--k", "3", "--suppression", "0.05", "--algorithm",
                 "certify", "--output", str(out), "--quiet"]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["optimal"] is True and report["lower_bound"] == report["log"]
    exhaustive = prepare(table_of(rows), Config(qi=["a", "b", "c"], k=3, suppression=0.05, algorithm="exhaustive",
                                                keep_unnamed=True))
    assert report["log"] == search(exhaustive).best.log


def test_certify_stops_on_the_evaluation_budget_with_a_valid_interval():
    heights = (4, 4, 4, 4, 4, 4)
    generators = [(4, 0, 1, 3, 2, 2), (1, 3, 3, 0, 2, 4), (2, 2, 2, 2, 2, 2), (0, 4, 4, 1, 1, 3)]
    truth = Exhaustive().run(up_set_problem(heights, generators), Limits()).best.loss
    result = Certify(seed_evaluations=0, cuts=1).run(up_set_problem(heights, generators), Limits(max_evaluations=12))
    assert result.stopped == "budget"
    lower = result.params["lower_bound"]
    assert lower is None or lower <= truth
    assert result.best is None or result.best.loss >= truth


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=25, deadline=None, database=None)
@given(ROWS, st.integers(2, 3), st.sampled_from([0.0, 0.1, 0.25]), st.sampled_from(["ncp", "loss", "entropy"]))
def test_separable_metrics_are_certified_without_suppression_and_bounded_with_it(rows, k, suppression, metric):
    """NCP, Loss and entropy are sums of per-attribute level costs when nothing is suppressed (suppressed cells
    cost the most), so their bound holds with any suppression limit, and the certified search is exact at 0."""
    config = Config(qi=["a", "b", "c"], k=k, suppression=suppression, metric=metric, prune=False, keep_unnamed=True)
    prepared = prepare(table_of(rows), config, require_feasible=False)
    truth = Exhaustive().run(prepared.problem(), Limits()).best
    if prepared.problem().monotone_loss:  # no row may be suppressed: floor(t n) = 0
        certified = Certify(seed_evaluations=5).run(prepared.problem(), Limits())
        assert key(certified) == (None if truth is None else (truth.loss, truth.los, tuple(truth.node)))
        if truth is not None:
            assert certified.params["optimal"] and certified.params["lower_bound"] <= truth.loss
    else:
        with pytest.raises(InputError, match="monotone loss"):
            Certify().run(prepared.problem(), Limits())
    ga = KGen(max_evaluations=12).run(prepared.problem(), Limits(max_evaluations=12))
    if ga.best is not None and truth is not None:
        bound = certified_bound(prepared.problem(), ga.infeasible, ga.best)
        assert bound["lower_bound"] is not None and bound["lower_bound"] <= truth.loss + 1e-12
