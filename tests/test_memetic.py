"""The memetic GA preset (issue 30 item 2) finds exhaustive's optimum on small problems, its swap moves are
the improving ones, the same seed gives the same result (also at 60 QIs, where swap partners and kicks adapt
to q); `auto` (the default search) returns exhaustive's optimum with its proof, and the summary says which
answer it gave."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_certify import table_of, up_set_problem

from kgen import Config, anonymize, prepare
from kgen.report.summary import bound_line
from kgen.run.algorithms import make_search
from lattice.box import Box
from lattice.errors import InputError
from lattice.hitting import integer_step_costs
from lattice.node import leq, precision_loss
from lattice.search import operators
from lattice.search.auto import Auto
from lattice.search.base import Limits
from lattice.search.exhaustive import Exhaustive
from lattice.search.kgen_ga import KGen


def drive(coroutine, feasible):
    answer = None
    try:
        while True:
            answer = feasible(coroutine.send(answer))
    except StopIteration as stop:
        return stop.value


@st.composite
def wide_up_sets(draw):
    """Up to 12 QIs: feasible = above one of a few generators; the optimum is the least LOG generator."""
    dims = draw(st.integers(2, 12))
    heights = tuple(draw(st.integers(1, 4)) for _ in range(dims))
    minimal = [tuple(draw(st.integers(0, h)) for h in heights) for _ in range(draw(st.integers(1, 6)))]
    return heights, minimal


@pytest.mark.slow  # about 30 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=40, deadline=None)
@given(wide_up_sets(), st.integers(0, 5))
def test_memetic_finds_the_least_loss_generator_at_up_to_twelve_qis(case, seed):
    heights, minimal = case
    result = KGen(preset="memetic").run(up_set_problem(heights, minimal), Limits(max_evaluations=5000, seed=seed))
    assert result.best.loss == min(precision_loss(m, heights) for m in minimal)


ROWS = st.lists(st.tuples(st.integers(0, 99), st.integers(0, 30), st.integers(0, 9), st.sampled_from("pqr")),
                min_size=4, max_size=40)


@pytest.mark.slow  # about 15 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=20, deadline=None)
@given(ROWS, st.integers(2, 3), st.sampled_from([0.0, 0.1, 0.25]), st.integers(0, 3))
def test_memetic_and_auto_find_exhaustives_optimum_on_random_tables(rows, k, suppression, seed):
    config = Config(qi=["a", "b", "c"], k=k, suppression=suppression, prune=False, keep_unnamed=True)
    prepared = prepare(table_of(rows), config, require_feasible=False)
    truth = Exhaustive().run(prepared.problem(), Limits()).best
    ga = KGen(preset="memetic").run(prepared.problem(), Limits(seed=seed))
    auto = Auto(ga_evaluations=8).run(prepared.problem(), Limits(seed=seed))
    if truth is None:
        assert ga.best is None and auto.best is None
        return
    assert ga.best.loss == truth.loss
    assert auto.best.loss == truth.loss and auto.params["optimal"] and auto.params["lower_bound"] == truth.loss
    assert auto.params["auto"]["answer"] == "proved optimum"
    limited = Auto(ga_evaluations=1).run(prepared.problem(), Limits(max_evaluations=3, seed=seed))
    proved = limited.params["auto"]["answer"] == "proved optimum"
    assert proved == bool(limited.params["optimal"])
    assert not proved or (limited.best.loss == truth.loss == limited.params["lower_bound"])
    assert limited.params["lower_bound"] is None or limited.params["lower_bound"] <= truth.loss


def test_memetic_reaches_the_optimum_of_a_ten_qi_problem_beside_a_costlier_minimal_node():
    # (3, 0, ...) is a minimal feasible node of LOG 0.1; the optimum (LOG 0.067) is gene 0 down, gene 1 up
    heights = (3,) * 10
    minimal = [(3, 0, 0, 0, 0, 0, 0, 0, 0, 0), (1, 1, 0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 2, 2, 2, 2, 2, 2, 2, 2)]
    for seed in range(3):
        result = KGen(preset="memetic").run(up_set_problem(heights, minimal), Limits(max_evaluations=400, seed=seed))
        assert result.best.node == (1, 1, 0, 0, 0, 0, 0, 0, 0, 0)


def test_a_swap_move_lowers_one_gene_and_raises_another_by_less_than_the_saving():
    # feasible: above (2, 0, 0) or above (1, 1, 0); heights 2, 4, 4: LOG steps 1/2, 1/4, 1/4
    heights = (2, 4, 4)
    minimal = [(2, 0, 0), (1, 1, 0)]
    steps = integer_step_costs(heights)[0]
    feasible = lambda node: any(leq(m, node) for m in minimal)  # noqa: E731
    move = drive(operators.swap_move((2, 0, 0), (0, 0, 0), heights, steps, [0, 1, 2]), feasible)
    assert move is not None
    node, raised = move
    assert (node, raised) == ((1, 1, 0), 1)
    # from (1, 1, 0) the one cheaper swap neighbour, (0, 1, 1) (1/2 saved for 1/4), is infeasible
    assert drive(operators.swap_move((1, 1, 0), (0, 0, 0), heights, steps, [0, 1, 2]), feasible) is None


def test_the_memetic_result_depends_on_the_seed_alone():
    problem = lambda: up_set_problem((3, 4, 2, 4, 3, 4), [(3, 0, 2, 1, 0, 0), (1, 2, 0, 2, 1, 3), (0, 4, 1, 0, 2, 2)])  # noqa: E731
    runs = [KGen(preset="memetic").run(problem(), Limits(max_evaluations=150, seed=s)) for s in (4, 4)]
    random.seed(99)  # the global stream is not the GA's
    runs.append(KGen(preset="memetic").run(problem(), Limits(max_evaluations=150, seed=4)))
    outcomes = [(r.best.node, r.evaluations, [t["best_loss"] for t in r.trace]) for r in runs]
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert runs[0].params["polish"] is True


def test_the_memetic_step_is_off_where_it_would_be_unsound():
    sound = up_set_problem((3, 2, 3), [(1, 1, 2)])
    box = Box.full((3, 2, 3))
    from lattice.search.base import Problem

    unsound = Problem(sound.evaluator, box, sound.heights, False, True, loss_is_log=True)
    assert KGen(preset="memetic").run(unsound, Limits(max_evaluations=20)).params["polish"] is False


def test_auto_is_the_default_search_of_the_api_and_says_it_proved_its_answer():
    rows = [(i % 7, i % 5, i % 3, "pqr"[i % 3]) for i in range(30)]
    result = anonymize(table_of(rows), Config(qi=["a", "b", "c"], k=2, suppression=0.1, keep_unnamed=True))
    report = result.report
    assert Config(qi=["a"]).algorithm == "auto" and report["algorithm"] == "auto"
    assert report["optimal"] and bound_line(report)[0] == "  proved optimal"


def test_the_summary_gives_an_unproved_answer_its_interval_and_a_fallback_its_reason():
    stopped = {"optimal": False, "gap": 0.05, "lower_bound": 0.8, "metric": "log"}
    assert bound_line(stopped) == ["  best found, within [0.8000, 0.8500] (log; the optimum is proved in it)"]
    fallback = {"optimal": None, "gap": None, "parameters": {"auto": {"answer": "ga", "why": "needs monotone"}}}
    assert bound_line(fallback) == ["  auto: ga instead of the certified search (needs monotone)"]


def test_auto_refuses_the_options_of_the_ga_alone_and_takes_a_preset():
    with pytest.raises(InputError, match="--algorithm kgen"):
        make_search("auto", {"ga_population": 10})
    assert make_search("auto", {"preset": "kgen+"}).preset == "kgen+"
    with pytest.raises(InputError, match="unknown preset"):
        make_search("auto", {"preset": "nope"})


def test_a_swap_may_drop_a_gene_by_several_levels_when_allowed():
    # heights 3, 5: one level of gene 0 costs 1/3, of gene 1 1/5; (0, 2) -> (1, 0) saves 2/5 - 1/3
    heights = (3, 5)
    minimal = [(0, 2), (1, 0)]
    steps = integer_step_costs(heights)[0]
    feasible = lambda node: any(leq(m, node) for m in minimal)  # noqa: E731
    assert drive(operators.swap_move((0, 2), (0, 0), heights, steps, [0, 1], max_drop=1), feasible) is None
    assert drive(operators.swap_move((0, 2), (0, 0), heights, steps, [0, 1], max_drop=2), feasible) == ((1, 0), 0)


def test_differential_privacy_runs_with_the_default_search_named_auto():
    config = Config(qi=["a"], k=2, suppression=1.0, differential_privacy="2,1e-5")
    config.check()  # accepted: with differential privacy the default means SafePub's walk
    assert config.algorithm == "auto"
    with pytest.raises(InputError, match="randomized search"):
        Config(qi=["a"], k=2, suppression=1.0, differential_privacy="2,1e-5", algorithm="ola").check()


def test_swap_partners_and_kick_sizes_are_the_old_ones_up_to_25_qis_and_grow_past_them():
    for q in range(1, 26):
        assert operators.swap_partners(q) == operators.PARTNERS == 6 and operators.kick_range(q) == (2, 4)
    assert operators.swap_partners(97) == 2 and operators.kick_range(97) == (9, 31)
    sizes = [operators.kick_range(q) for q in range(26, 200)]
    assert all(a <= b and c <= d for (a, c), (b, d) in zip(sizes, sizes[1:]))  # never shrink as q grows


def test_a_swap_move_tries_only_the_cheapest_partners_it_is_given():
    # gene 0 (height 1: step 1) may drop if gene 2 (step 1/3) rises two levels; gene 1 (step 1/4) is the
    # cheaper partner but raising it does not repair the drop: one partner finds no move, two find (0, 0, 2)
    heights = (1, 4, 3)
    minimal = [(1, 0, 0), (0, 0, 2)]
    steps = integer_step_costs(heights)[0]
    feasible = lambda node: any(leq(m, node) for m in minimal)  # noqa: E731
    start = (1, 0, 0)
    assert drive(operators.swap_move(start, (0, 0, 0), heights, steps, [0], partners=1), feasible) is None
    assert drive(operators.swap_move(start, (0, 0, 0), heights, steps, [0], partners=2), feasible) == ((0, 0, 2), 2)


def wide_problem():
    """60 QIs of height 2, feasible above one of three generators; the optimum is the sparse one."""
    rng = random.Random(7)
    heights = (2,) * 60
    optimum = tuple(2 if i % 3 == 0 else 0 for i in range(60))  # LOG 1/3
    others = [tuple(rng.choice((1, 2)) for _ in range(60)) for _ in range(2)]  # LOG about 3/4
    return heights, [optimum, *others]


def test_memetic_with_wide_kicks_finds_the_optimum_of_a_sixty_qi_problem():
    heights, minimal = wide_problem()
    assert operators.kick_range(60) == (3, 12) and operators.swap_partners(60) == 2
    for seed in range(3):
        result = KGen(preset="memetic").run(up_set_problem(heights, minimal), Limits(max_evaluations=1000, seed=seed))
        assert result.best.node == minimal[0]


def test_the_memetic_result_at_sixty_qis_depends_on_the_seed_alone():
    heights, minimal = wide_problem()
    runs = [KGen(preset="memetic").run(up_set_problem(heights, minimal), Limits(max_evaluations=600, seed=5))
            for _ in range(2)]
    random.seed(99)  # the global stream is not the GA's
    runs.append(KGen(preset="memetic").run(up_set_problem(heights, minimal), Limits(max_evaluations=600, seed=5)))
    outcomes = [(r.best.node, r.evaluations, [t["best_loss"] for t in r.trace]) for r in runs]
    assert outcomes[0] == outcomes[1] == outcomes[2]
