"""The KGen operators (SPEC section 4): crossover cases, mutations, penalty, selection, descent."""

from __future__ import annotations

import random

import pytest
from deap import tools
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice.node import leq
from lattice.search import operators as op
from lattice.search.kgen_ga import FitnessMax


@st.composite
def boxes_with_nodes(draw, min_dims=1, max_dims=8, count=2):
    """A box (lower, upper) and `count` nodes inside it."""
    dims = draw(st.integers(min_dims, max_dims))
    lower = draw(st.lists(st.integers(0, 3), min_size=dims, max_size=dims))
    upper = [a + draw(st.integers(0, 4)) for a in lower]
    nodes = [tuple(draw(st.integers(a, b)) for a, b in zip(lower, upper)) for _ in range(count)]
    return tuple(lower), tuple(upper), nodes


def inside(node, lower, upper) -> bool:
    return leq(lower, node) and leq(node, upper)


def drive(coroutine, answer):
    """Run a `descend` coroutine to its end with a direct feasibility oracle."""
    try:
        probe = next(coroutine)
        while True:
            probe = coroutine.send(answer(probe))
    except StopIteration as stop:
        return stop.value


# --- crossover ---------------------------------------------------------------------------------------------

def test_probe_is_meet_for_feasible_parents_join_for_infeasible_and_none_for_mixed():
    p0, p1 = (1, 4, 2), (3, 0, 2)
    assert op.crossover_probe(p0, p1, True, True) == (1, 0, 2)
    assert op.crossover_probe(p0, p1, False, False) == (3, 4, 2)
    assert op.crossover_probe(p0, p1, True, False) is None
    assert op.crossover_probe(p0, p1, False, True) is None


def test_both_feasible_with_feasible_meet_gives_the_meet_alone():
    assert op.crossover((1, 4, 2), (3, 0, 2), True, True, True, random.Random(0)) == [(1, 0, 2)]


def test_neither_feasible_with_feasible_join_gives_the_join_alone():
    assert op.crossover((1, 4, 2), (3, 0, 2), False, False, True, random.Random(0)) == [(3, 4, 2)]


@settings(max_examples=200, deadline=None)
@given(boxes_with_nodes(), st.integers(0, 10**6))
def test_both_feasible_with_infeasible_meet_gives_one_child_between_meet_and_each_parent(box, seed):
    _, _, (p0, p1) = box
    children = op.crossover(p0, p1, True, True, False, random.Random(seed))
    low = op.meet(p0, p1)
    assert len(children) == 2
    assert inside(children[0], low, p0) and inside(children[1], low, p1)


@settings(max_examples=200, deadline=None)
@given(boxes_with_nodes(), st.integers(0, 10**6))
def test_neither_feasible_with_infeasible_join_gives_join_and_a_child_between_each_parent_and_join(box, seed):
    _, _, (p0, p1) = box
    children = op.crossover(p0, p1, False, False, False, random.Random(seed))
    high = op.join(p0, p1)
    assert len(children) == 3 and children[0] == high
    assert inside(children[1], p0, high) and inside(children[2], p1, high)


@settings(max_examples=200, deadline=None)
@given(boxes_with_nodes(), st.integers(0, 10**6), st.booleans())
def test_one_feasible_parent_gives_one_child_between_meet_and_that_parent(box, seed, first_feasible):
    _, _, (p0, p1) = box
    children = op.crossover(p0, p1, first_feasible, not first_feasible, None, random.Random(seed))
    feasible_parent = p0 if first_feasible else p1
    assert len(children) == 1 and inside(children[0], op.meet(p0, p1), feasible_parent)


def test_crossover_without_the_probe_answer_it_needs_is_an_error():
    with pytest.raises(ValueError):
        op.crossover((0, 1), (1, 0), True, True, None, random.Random(0))
    with pytest.raises(ValueError):
        op.crossover((0, 1), (1, 0), False, False, None, random.Random(0))


def test_rand_between_draws_every_node_of_a_small_box():
    rng = random.Random(1)
    seen = {op.rand_between((0, 1), (1, 3), rng) for _ in range(400)}
    assert seen == {(a, b) for a in (0, 1) for b in (1, 2, 3)}


# --- mutation ----------------------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(boxes_with_nodes(count=1), st.integers(0, 10**6))
def test_standard_mutation_changes_exactly_one_gene_inside_the_box(box, seed):
    lower, upper, (x,) = box
    y = op.standard_mutation(x, lower, upper, random.Random(seed))
    changed = [i for i in range(len(x)) if x[i] != y[i]]
    assert inside(y, lower, upper)
    assert len(changed) == (1 if lower != upper else 0)


def test_standard_mutation_reaches_every_other_level_of_the_gene():
    rng = random.Random(3)
    seen = {op.standard_mutation((2,), (0,), (4,), rng) for _ in range(300)}
    assert seen == {(0,), (1,), (3,), (4,)}


def test_reset_mutation_keeps_the_node_at_rate_0_and_stays_in_the_box_at_rate_1():
    rng = random.Random(0)
    lower, upper, x = (0, 1, 2), (3, 4, 5), (1, 2, 3)
    assert op.reset_mutation(x, lower, upper, 0.0, rng) == x
    moved = [op.reset_mutation(x, lower, upper, 1.0, rng) for _ in range(50)]
    assert all(inside(y, lower, upper) for y in moved) and any(y != x for y in moved)


@pytest.mark.parametrize(("q", "m"), [(1, 1), (2, 2), (3, 2), (8, 2), (10, 2), (11, 4), (25, 6), (97, 20)])
def test_horizontal_count_is_a_fifth_of_the_genes_rounded_up_to_even_at_least_two(q, m):
    assert op.horizontal_count(q) == m


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=300, deadline=None)
@given(st.integers(2, 30), st.integers(0, 10**6), st.data())
def test_horizontal_mutation_changes_exactly_m_genes_half_up_half_down_inside_the_box(q, seed, data):
    lower = tuple(data.draw(st.integers(0, 2)) for _ in range(q))
    x = tuple(a + data.draw(st.integers(1, 3)) for a in lower)  # room below every gene
    upper = tuple(v + data.draw(st.integers(1, 3)) for v in x)  # and above
    y = op.horizontal_mutation(x, lower, upper, random.Random(seed))
    m = op.horizontal_count(q)
    up = [i for i in range(q) if y[i] > x[i]]
    down = [i for i in range(q) if y[i] < x[i]]
    assert inside(y, lower, upper)
    assert len(up) + len(down) == m
    assert (len(up), len(down)) == ((m + 1) // 2, m // 2)


def test_horizontal_mutation_alternates_starting_upwards():
    class Scripted(random.Random):
        """Picks the first candidate gene and the extreme level, to expose the order of moves."""

        def choice(self, seq):
            return seq[0]

        def randint(self, a, b):
            return b

    y = op.horizontal_mutation((2, 2, 2, 2, 2), (0,) * 5, (4,) * 5, Scripted(), fraction=0.8)
    assert y == (4, 1, 4, 1, 2)  # up, down, up, down on genes 0..3; the paper's example moves 2 of 5


def test_horizontal_mutation_stops_when_no_gene_has_room_in_the_needed_direction():
    # every gene is at its top: nothing can rise first, so nothing changes
    assert op.horizontal_mutation((3, 3), (0, 0), (3, 3), random.Random(0)) == (3, 3)


def test_horizontal_probability_paper_and_prototype():
    assert op.horizontal_probability(0) == pytest.approx(0.4)
    assert op.horizontal_probability(3) == pytest.approx(0.7)
    assert op.horizontal_probability(9) == 1.0
    assert op.horizontal_probability(0, mode="prototype") == 0.0
    assert op.horizontal_probability(3, mode="prototype") == pytest.approx(0.3)
    with pytest.raises(ValueError):
        op.horizontal_probability(1, mode="other")


# --- penalty and selection ---------------------------------------------------------------------------------

def test_penalty_grows_a_tenth_per_generation_up_to_0_9():
    assert [op.penalty(a) for a in (0, 1, 3, 9, 10, 50)] == pytest.approx([0, 0.1, 0.3, 0.9, 0.9, 0.9])


def test_paper_figure_5_scores_and_roulette_probabilities():
    scores = op.penalized_scores([0.85, 0.44, 0.55], [0, 3, 1])
    assert scores == pytest.approx([0.85, 0.308, 0.495])
    assert [round(p, 2) for p in op.roulette_probabilities(scores)] == [0.51, 0.19, 0.30]


class Scored(list):
    """A DEAP individual whose fitness and penalized fitness are given."""

    def __init__(self, name: str, fitness: float, penalized: float | None = None) -> None:
        super().__init__([name])
        self.fitness = FitnessMax((fitness,))
        self.penalized = FitnessMax((fitness if penalized is None else penalized,))


def population(scores) -> list[Scored]:
    return [Scored(f"s{i}", s) for i, s in enumerate(scores)]


def test_roulette_draws_with_the_figure_5_frequencies():
    scores = op.penalized_scores([0.85, 0.44, 0.55], [0, 3, 1])
    pool = population(scores)
    picks = op.sel_roulette(pool, 30000, rng=random.Random(7))
    freq = [sum(p is ind for p in picks) / len(picks) for ind in pool]
    assert freq == pytest.approx(op.roulette_probabilities(scores), abs=0.01)


def test_roulette_with_all_scores_zero_is_uniform():
    assert op.roulette_probabilities([0.0, 0.0]) == [0.5, 0.5]
    pool = population([0.0, 0.0])
    picks = op.sel_roulette(pool, 100, rng=random.Random(0))
    assert len(picks) == 100 and {id(p) for p in picks} == {id(ind) for ind in pool}


def test_rescaled_penalties_map_ages_min_max_onto_0_0_9():
    assert op.rescaled_penalties([2, 4, 6]) == pytest.approx([0.0, 0.45, 0.9])
    assert op.rescaled_penalties([5, 5]) == [0.0, 0.0]
    assert op.penalized_scores([1.0, 1.0, 1.0], [2, 4, 6], rescale=True) == pytest.approx([1.0, 0.55, 0.1])


class Drawn(random.Random):
    """An rng whose choice returns scripted positions (to fix a tournament's aspirants)."""

    def __init__(self, indices):
        super().__init__(0)
        self.indices = list(indices)

    def choice(self, seq):
        return seq[self.indices.pop(0)]


def test_tournament_winner_is_the_highest_penalized_score_not_the_highest_fitness():
    # fitness 0.9 aged 9 (w = 0.09) loses to fitness 0.5 newborn (w = 0.5)
    fitnesses, ages = [0.9, 0.5, 0.7], [9, 0, 2]
    pool = [Scored(f"s{i}", f, w) for i, (f, w) in enumerate(zip(fitnesses, op.penalized_scores(fitnesses, ages)))]
    assert op.sel_tournament(pool, 1, 2, "penalized", rng=Drawn([0, 1])) == [pool[1]]
    assert op.sel_tournament(pool, 1, 2, "penalized", rng=Drawn([0, 2])) == [pool[2]]
    assert op.sel_tournament(pool, 2, 3, "penalized", rng=Drawn([0, 1, 2, 2, 0, 0])) == [pool[2], pool[2]]
    assert op.sel_tournament(pool, 1, 2, "fitness", rng=Drawn([0, 1])) == [pool[0]]  # unpenalized: the oldest


def test_tournament_keeps_the_first_drawn_on_ties_and_refuses_empty_populations():
    pool = population([0.5, 0.5])
    assert op.sel_tournament(pool, 1, 2, rng=Drawn([1, 0]))[0] is pool[1]
    with pytest.raises(ValueError):
        op.sel_tournament([], 1, 2, rng=random.Random(0))
    with pytest.raises(ValueError):
        op.sel_roulette([], 1, rng=random.Random(0))


def deap_with_stream(select, seed: int, *args, **kwargs):
    """Run one of DEAP's selections with the global stream seeded, giving the caller's state back."""
    saved = random.getstate()
    random.seed(seed)
    try:
        return select(*args, **kwargs)
    finally:
        random.setstate(saved)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.integers(1, 40), st.integers(1, 5),
       st.integers(0, 10**6))
def test_tournament_is_deaps_sel_tournament_with_the_stream_made_explicit(scores, k, tournsize, seed):
    pool = population(scores)
    ours = op.sel_tournament(pool, k, tournsize, "penalized", rng=random.Random(seed))
    theirs = deap_with_stream(tools.selTournament, seed, pool, k, tournsize, fit_attr="penalized")
    assert [id(i) for i in ours] == [id(i) for i in theirs]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=30), st.integers(1, 40), st.integers(0, 10**6))
def test_roulette_is_deaps_sel_roulette_with_the_stream_made_explicit(scores, k, seed):
    pool = population(scores)
    ours = op.sel_roulette(pool, k, "penalized", rng=random.Random(seed))
    theirs = deap_with_stream(tools.selRoulette, seed, pool, k, fit_attr="penalized")
    assert [id(i) for i in ours] == [id(i) for i in theirs]


def test_selections_never_draw_from_the_global_stream():
    random.seed(99)
    before = random.getstate()
    pool = population([0.3, 0.0, 0.9, 0.4])
    op.sel_tournament(pool, 50, 3, rng=random.Random(1))
    op.sel_roulette(pool, 50, rng=random.Random(1))
    op.sel_roulette(population([0.0, 0.0]), 50, rng=random.Random(1))
    assert random.getstate() == before


# --- descent -----------------------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(boxes_with_nodes(count=3), st.integers(0, 10**6))
def test_descent_reaches_a_minimal_feasible_node_below_the_start(box, seed):
    lower, upper, minimal_seeds = box
    # a monotone feasibility: above one of the seed nodes; start from the top (feasible)

    def feasible(node):
        return any(leq(m, node) for m in minimal_seeds)

    order = list(range(len(lower)))
    random.Random(seed).shuffle(order)
    probes = []

    def answer(node):
        probes.append(node)
        return feasible(node)

    result = drive(op.descend(upper, lower, order), answer)
    assert feasible(result) and leq(result, upper) and leq(lower, result)
    below = [tuple(v - (j == i) for j, v in enumerate(result)) for i in range(len(result)) if result[i] > lower[i]]
    assert not any(feasible(b) for b in below)  # minimal: no feasible node directly below
    assert len(probes) <= sum((b - a).bit_length() for a, b in zip(lower, upper))  # binary search per gene
