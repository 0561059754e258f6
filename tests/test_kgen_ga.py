"""KGen driven by DEAP: the toolbox's parts, the Logbook trace, the hall of fame, stopping through the Budget,
and randomness that depends on the seed alone."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from deap import base, tools

from lattice.box import Box
from lattice.node import leq, precision_loss
from lattice.search import operators
from lattice.search.base import Limits, Problem, guarded
from lattice.search.kgen_ga import TRACE_FIELDS, KGen, _Run, make_budget
from lattice.search.stopping import Patience, Stall, Stopped, StopSearch


@dataclass(frozen=True)
class Verdict:
    node: tuple
    feasible: bool
    loss: float
    los: float


class UpSet:
    """Feasible above one of `minimal`; loss LOG. `noise`: draw from the global random stream on every batch,
    as a parallel backend living in the same process may (Dask's scheduler and client do)."""

    def __init__(self, heights, minimal, noise: bool = False) -> None:
        self.heights, self.minimal, self.noise = heights, minimal, noise
        self.seen: dict = {}

    def cached(self, node):
        return self.seen.get(tuple(node))

    def evaluate(self, node):
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes):
        if self.noise:
            random.random()
        for n in nodes:
            n = tuple(n)
            self.seen[n] = Verdict(n, any(leq(m, n) for m in self.minimal), precision_loss(n, self.heights), 0.0)
        return [self.seen[tuple(n)] for n in nodes]


HEIGHTS = (3, 4, 2, 3, 2, 4, 3)
MINIMAL = [(1, 2, 2, 1, 0, 3, 1), (2, 4, 0, 1, 1, 1, 0), (3, 0, 1, 3, 2, 0, 2), (0, 3, 1, 2, 2, 2, 3)]


def problem(noise: bool = False) -> Problem:
    return Problem(UpSet(HEIGHTS, MINIMAL, noise), Box.full(HEIGHTS), HEIGHTS, True, True, loss_is_log=True)


def run_by_hand(ga: KGen, limits: Limits):
    """A run whose internals (toolbox, logbook, hall of fame) the test can inspect afterwards."""
    p = problem()
    budget = make_budget(p, limits, [Stall(ga.max_stall), Patience(ga.patience)])
    run = _Run(ga, p, budget, random.Random(limits.seed))
    return run, guarded(budget, ga.name, run.body)


def outcome(result) -> tuple:
    best = result.best
    untimed = [{k: v for k, v in r.items() if k != "seconds"} for r in result.trace]
    return None if best is None else tuple(best.node), result.evaluations, result.stopped, untimed


@pytest.mark.parametrize("selection", ["tournament", "roulette"])
@pytest.mark.parametrize("mutation_mode", ["single", "reset"])
def test_the_toolbox_holds_deaps_population_and_our_operators(selection, mutation_mode):
    run = _Run(KGen(selection=selection, mutation_mode=mutation_mode, population=6), problem(),
               make_budget(problem(), Limits(max_evaluations=50), []), random.Random(0))
    tb = run.toolbox
    assert isinstance(tb, base.Toolbox)
    assert tb.population.func is tools.initRepeat
    population = tb.population(n=6)
    assert len(population) == 6 and all(hasattr(ind, "fitness") and not ind.fitness.valid for ind in population)
    expected_select = operators.sel_tournament if selection == "tournament" else operators.sel_roulette
    assert tb.select.func is expected_select and tb.select.keywords["fit_attr"] == "penalized"
    assert tb.mate.func is operators.crossover
    expected_mutate = operators.standard_mutation if mutation_mode == "single" else operators.reset_mutation
    assert tb.mutate.func is expected_mutate
    assert tb.mutate_h.func is operators.horizontal_mutation
    assert tb.map.func is map  # DEAP's default: a population is one batch through toolbox.evaluate, not mapped


def test_the_trace_is_the_logbook_and_its_best_is_the_hall_of_fame_and_the_budgets():
    run, result = run_by_hand(KGen(population=12), Limits(max_evaluations=150, seed=4))
    assert len(run.logbook) == len(result.trace) >= 2
    assert result.trace == [{k: record[k] for k in TRACE_FIELDS} for record in run.logbook]
    assert run.logbook.select("generation") == [t["generation"] for t in result.trace]
    assert list(run.hall[0]) == list(result.best.node) == result.trace[-1]["best_node"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("preset", ["paper", "kgen+", "memetic"])
def test_the_traces_best_node_is_the_results_even_among_nodes_of_equal_loss(seed, preset):
    # many feasible nodes share a LOG here, and a budget stop can cut a batch: the last record must still name
    # the result's node (least loss, then LOS, then the smaller node), not merely one of the same loss
    result = KGen(preset=preset, population=10).run(problem(), Limits(max_evaluations=37 + seed, seed=seed))
    assert result.stopped == Stopped.BUDGET
    assert result.trace[-1]["best_node"] == list(result.best.node)
    assert result.trace[-1]["evaluations"] == result.evaluations


@pytest.mark.parametrize("preset", ["paper", "kgen+", "memetic"])
@pytest.mark.parametrize("selection", ["tournament", "roulette"])
def test_the_result_depends_on_the_seed_alone_not_on_others_drawing_from_the_global_stream(preset, selection):
    ga = KGen(preset=preset, selection=selection, population=10)
    quiet = ga.run(problem(), Limits(max_evaluations=120, seed=8))
    random.seed(1)
    noisy = ga.run(problem(noise=True), Limits(max_evaluations=120, seed=8))
    random.seed(2)
    noisy_again = ga.run(problem(noise=True), Limits(max_evaluations=120, seed=8))
    assert outcome(quiet) == outcome(noisy) == outcome(noisy_again)
    assert outcome(ga.run(problem(), Limits(max_evaluations=120, seed=9))) != outcome(quiet)


def test_stall_and_patience_stop_through_the_budget_at_the_end_of_a_generation():
    budget = make_budget(problem(), Limits(), [Stall(2), Patience(0)])
    budget.evaluate_many([(3, 4, 2, 3, 2, 4, 3)])
    budget.end_iteration()  # something new was evaluated before the first generation ended
    budget.end_iteration()
    with pytest.raises(StopSearch) as stop:
        budget.end_iteration()  # two generations in a row evaluated nothing new
    assert stop.value.reason == Stopped.STALLED
    patient = make_budget(problem(), Limits(), [Stall(100), Patience(2)])
    patient.evaluate_many([(3, 4, 2, 3, 2, 4, 3)])
    patient.end_iteration()
    patient.evaluate_many([(0, 0, 0, 0, 0, 0, 0)])  # infeasible: the best node does not change
    patient.end_iteration()
    with pytest.raises(StopSearch):
        patient.end_iteration()


def test_every_generation_ends_with_the_budgets_end_iteration(monkeypatch):
    calls = []
    ga = KGen(population=8, patience=0, max_stall=1000)
    p = problem()
    budget = make_budget(p, Limits(max_evaluations=60, seed=1), [])
    original = budget.end_iteration
    monkeypatch.setattr(budget, "end_iteration", lambda: (calls.append(budget.evaluations), original())[1])
    run = _Run(ga, p, budget, random.Random(1))
    result = guarded(budget, ga.name, run.body)
    assert result.stopped == Stopped.BUDGET  # during a generation, which therefore did not end
    assert calls == [t["evaluations"] for t in result.trace[1:-1]]


def test_the_ga_module_keeps_no_fake_map_and_no_private_tag_lookup():
    import lattice.search.kgen_ga as module

    assert not hasattr(module, "batch_map")
    assert not hasattr(operators, "drive")
    assert not hasattr(module._Run, "tagged")
