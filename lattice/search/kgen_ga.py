"""KGen: the genetic algorithm of the paper (SPEC section 4) on a DEAP toolbox.

One generation: select parents with the age penalty, pair them, cross each pair with probability
`crossover` (the lattice crossover; the meets/joins it needs are evaluated in one batch), mutate each child
(standard mutation with probability `mutation`, horizontal mutation with probability min(1, 0.4 + age/10)),
evaluate the children in one batch, and select the survivors from parents + children with the same
penalized selection. Ages: 0 at birth, +1 for every generation an individual survives.

Every evaluation goes through the Budget (cache, distinct-evaluation budget, time limit, archive), called
once per batch through `toolbox.map`, so a parallel evaluator sees whole batches; all randomness is drawn
here from one `random.Random(seed)`, so the result does not depend on how the evaluator runs.

Presets: `paper` is the paper's algorithm. `kgen+` (measured in docs/search.md) answers feasibility from
predictive tags where monotonicity already decides it, pushes every new feasible individual down to a
minimal feasible node (binary search per gene in random order), seeds the population with descents from the
top node, and uses 40 individuals.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from deap import base

from lattice.errors import InputError
from lattice.node import Node, precision_loss
from lattice.search import operators
from lattice.search.base import (
    DEFAULT_MAX_EVALUATIONS,
    Budget,
    Evaluated,
    Limits,
    Problem,
    SearchResult,
    Stopped,
    StopSearch,
    guarded,
)
from lattice.search.tags import FEASIBLE, INFEASIBLE, SparseTags

PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"population": 100, "tagging": False, "descent": False, "seeds": 0, "infeasible_weight": 0.0},
    "kgen+": {"population": 40, "tagging": True, "descent": True, "seeds": 4, "infeasible_weight": 0.0},
}
SELECTIONS = ("tournament", "roulette")
MUTATIONS = ("single", "reset")
HORIZONTAL_MODES = ("paper", "prototype")
DESCENT_ORDERS = ("random", "weight")


class FitnessMax(base.Fitness):
    """DEAP fitness to maximize: f = 1 - loss."""

    weights = (1.0,)


class Individual(list):
    """A chromosome (one level per QI) with its DEAP fitness, age, feasibility and loss.

    `born` marks an individual created in the current generation: it enters the next population with age
    0, while a survivor (or an unchanged copy of a parent) ages by one.
    """

    def __init__(self, genes: Sequence[int], age: int = 0, born: bool = True) -> None:
        super().__init__(genes)
        self.fitness = FitnessMax()
        self.age = age
        self.born = born
        self.feasible = False

    @property
    def node(self) -> Node:
        return tuple(self)

    def copy_as(self, age: int, born: bool) -> Individual:
        other = Individual(self, age, born)
        other.fitness.values = self.fitness.values
        other.feasible = self.feasible
        return other


def batch_map(function: Callable[[list], list], items: Sequence) -> list:
    """The toolbox's map: hands the whole batch to `function` at once (the Budget's `evaluate_many`), so the
    problem's evaluator can spread it over workers and return results in input order."""
    return function(list(items))


@dataclass(frozen=True)
class KGen:
    """The KGen genetic algorithm. Defaults (preset "paper") are the paper's parameters.

    `preset` fills the fields left at None: "paper" (population 100, no tagging, no descent, no seeds) or
    "kgen+" (population 40, predictive tagging, descent, 4 seeds); both score infeasible nodes 0.
    `selection`: "tournament" (of `tournsize`) or "roulette"; `age_rescale`: the prototype's min-max penalty.
    `mutation_mode`: "single" (the paper: one gene) or "reset" (the prototype: each gene redrawn with
    probability `mutation`). `horizontal_mode`: "paper" (min(1, horizontal_rate + age/10)) or "prototype"
    (age/10); `horizontal_fraction`: share of genes it moves. `tagging`: answer feasibility from predictive
    tags (monotone problems) instead of evaluating; `descent`: push every new feasible individual down to a
    minimal feasible node ("random" or "weight" gene order, "weight" lowering the genes of smallest height
    first); `seeds`: initial individuals made by descents from the top; `infeasible_weight`: fitness factor
    of infeasible nodes (f = 1 - loss otherwise). The SPEC leaves an infeasible node's score open; 1 (scored
    like a feasible node) lets the low, infeasible nodes win every selection, and on Cargo 2000 at 25 QIs
    such a run never finds a feasible node (docs/search.md). `max_evaluations` applies when the limits give
    none; `max_stall`: stop after this many generations that evaluated no new node; `patience`: stop after this many
    generations without a better best node (0 = never; a kgen addition to the paper, whose budget alone keeps a
    converged population redrawing cached nodes for thousands of generations on small lattices). Invalid values raise
    InputError.
    """

    preset: str = "paper"
    population: int | None = None
    crossover: float = 0.9
    mutation: float = 0.2
    tournsize: int = 2
    selection: str = "tournament"
    age_rescale: bool = False
    mutation_mode: str = "single"
    horizontal_rate: float = 0.4
    horizontal_mode: str = "paper"
    horizontal_fraction: float = 0.2
    tagging: bool | None = None
    descent: bool | None = None
    descent_order: str = "random"
    seeds: int | None = None
    infeasible_weight: float | None = None
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS
    max_stall: int = 100
    patience: int = 300
    name: str = "kgen"

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise InputError(f"unknown preset {self.preset!r}; choose one of: {', '.join(PRESETS)}")
        for key, value in PRESETS[self.preset].items():
            if getattr(self, key) is None:
                object.__setattr__(self, key, value)
        checks = [
            (self.selection in SELECTIONS, f"selection must be one of {', '.join(SELECTIONS)}"),
            (self.mutation_mode in MUTATIONS, f"mutation_mode must be one of {', '.join(MUTATIONS)}"),
            (self.horizontal_mode in HORIZONTAL_MODES,
             f"horizontal_mode must be one of {', '.join(HORIZONTAL_MODES)}"),
            (self.descent_order in DESCENT_ORDERS, f"descent_order must be one of {', '.join(DESCENT_ORDERS)}"),
            (isinstance(self.population, int) and self.population >= 2, "population must be a whole number >= 2"),
            (isinstance(self.tournsize, int) and self.tournsize >= 1, "tournsize must be a whole number >= 1"),
            (all(0.0 <= r <= 1.0 for r in (self.crossover, self.mutation, self.horizontal_rate,
                                           self.horizontal_fraction, self.infeasible_weight)),
             "crossover, mutation, horizontal_rate, horizontal_fraction and infeasible_weight must be in [0, 1]"),
            (self.seeds >= 0 and self.max_evaluations >= 1 and self.max_stall >= 1 and self.patience >= 0,
             "seeds must be >= 0, max_evaluations and max_stall >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise InputError(f"algorithm kgen: {message}")

    @property
    def params(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        limits = limits.bounded(self.max_evaluations)
        # SPEC section 9: DEAP's own operators draw from the global `random`, so it is seeded for the run, and
        # the caller's global random state is given back afterwards, whatever happens.
        caller = random.getstate()
        random.seed(limits.seed)
        try:
            run = _Run(self, problem, Budget(problem, limits), random.Random(limits.seed))
            params = dict(self.params, seed=limits.seed, max_evaluations=limits.max_evaluations,
                          tagging=run.tags is not None, descent=run.descent)
            return guarded(run.budget, self.name, run.body, params)
        finally:
            random.setstate(caller)


class _Run:
    """The state of one run: budget, rng, toolbox and (for the descent) predictive tags."""

    def __init__(self, ga: KGen, problem: Problem, budget: Budget, rng: random.Random) -> None:
        self.ga, self.problem, self.budget, self.rng = ga, problem, budget, rng
        self.lower, self.upper = problem.box.lower, problem.box.upper
        # Skipping a node whose feasibility the tags decide is safe only when a feasible-tagged node cannot
        # beat the known feasible node below it (monotone loss); the descent itself needs only monotone
        # feasibility (without tags its probes are evaluated).
        self.descent = bool(ga.descent and problem.monotone_feasibility)
        tagging = (ga.tagging or ga.descent) and problem.monotone_feasibility and problem.monotone_loss
        self.tags = SparseTags(problem.box.dims) if tagging else None
        self.toolbox = self.make_toolbox()

    def make_toolbox(self) -> base.Toolbox:
        ga, rng, lower, upper = self.ga, self.rng, self.lower, self.upper
        tb = base.Toolbox()
        tb.register("map", batch_map)
        tb.register("evaluate", self.evaluate_nodes)
        tb.register("individual", lambda: Individual(self.problem.box.random_node(rng)))
        tb.register("probe", operators.crossover_probe)
        tb.register("mate", operators.crossover, rng=rng)
        if ga.mutation_mode == "single":
            tb.register("mutate", operators.standard_mutation, lower=lower, upper=upper, rng=rng)
        else:
            tb.register("mutate", operators.reset_mutation, lower=lower, upper=upper, rate=ga.mutation, rng=rng)
        tb.register("mutate_horizontal", operators.horizontal_mutation, lower=lower, upper=upper, rng=rng,
                    fraction=ga.horizontal_fraction)
        tb.register("horizontal_probability", operators.horizontal_probability, base=ga.horizontal_rate,
                    mode=ga.horizontal_mode)
        tb.register("select", self.select)
        return tb

    # --- evaluation ---------------------------------------------------------------------------------------

    def evaluate_nodes(self, nodes: list[Node]) -> list[Evaluated]:
        """One batch through the Budget; feeds the predictive tags."""
        evaluations = self.budget.evaluate_many(nodes)
        if self.tags is not None:
            for e in evaluations:
                self.tags.tag(tuple(e.node), e.feasible)
        return evaluations

    def feasibility(self, nodes: Sequence[Node]) -> list[bool]:
        """Whether each node is feasible: from the cache, else (with tagging) from the predictive tags, else
        by evaluating the remaining nodes in one batch through `toolbox.map`."""
        answers: dict[Node, bool] = {}
        unknown: list[Node] = []
        for node in nodes:
            if node in answers:
                continue
            cached = self.budget.known(node)
            if cached is not None:
                answers[node] = cached.feasible
            elif (tagged := self.tagged(node)) is not None:
                answers[node] = tagged
            elif node not in unknown:
                unknown.append(node)
        if unknown:
            for node, e in zip(unknown, self.toolbox.map(self.toolbox.evaluate, unknown)):
                answers[node] = e.feasible
        return [answers[node] for node in nodes]

    def tagged(self, node: Node) -> bool | None:
        if self.tags is None:
            return None
        tag = self.tags.get(node)
        return True if tag == FEASIBLE else False if tag == INFEASIBLE else None

    def evaluate(self, individuals: Sequence[Individual]) -> None:
        """Set each individual's feasibility and fitness. A loss that is not LOG is known only from an
        evaluation, so nodes whose fitness needs it are evaluated (one batch)."""
        nodes = [ind.node for ind in individuals]
        feasible = self.feasibility(nodes)
        if not self.problem.loss_is_log:
            missing = [n for n, f in zip(nodes, feasible)
                       if (f or self.ga.infeasible_weight > 0) and self.budget.known(n) is None]
            if missing:
                self.toolbox.map(self.toolbox.evaluate, list(dict.fromkeys(missing)))
        for ind, f in zip(individuals, feasible):
            ind.feasible = f
            ind.fitness.values = (self.fitness(ind.node, f),)

    def fitness(self, node: Node, feasible: bool) -> float:
        """f = 1 - loss (SPEC section 4: the loss is LOG by default), times `infeasible_weight` for an
        infeasible node."""
        weight = 1.0 if feasible else self.ga.infeasible_weight
        if weight == 0.0:
            return 0.0
        if self.problem.loss_is_log:
            loss = precision_loss(node, self.problem.heights)
        else:
            evaluation = self.budget.known(node)
            assert evaluation is not None, "evaluate() evaluates every node whose fitness needs its loss"
            loss = evaluation.loss
        return weight * (1.0 - loss)

    # --- selection ----------------------------------------------------------------------------------------

    def select(self, individuals: Sequence[Individual], k: int) -> list[Individual]:
        scores = operators.penalized_scores([ind.fitness.values[0] for ind in individuals],
                                            [ind.age for ind in individuals], self.ga.age_rescale)
        if self.ga.selection == "tournament":
            chosen = operators.tournament(scores, k, self.ga.tournsize, self.rng)
        else:
            chosen = operators.roulette(scores, k, self.rng)
        return [individuals[i] for i in chosen]

    # --- variation ----------------------------------------------------------------------------------------

    def offspring(self, parents: list[Individual]) -> list[Individual]:
        tb, rng = self.toolbox, self.rng
        pairs = list(zip(parents[0::2], parents[1::2]))
        crossing = [rng.random() < self.ga.crossover for _ in pairs]
        probes = [tb.probe(a.node, b.node, a.feasible, b.feasible) if c else None for (a, b), c in zip(pairs, crossing)]
        asked = [p for p in probes if p is not None]
        answers = dict(zip(asked, self.feasibility(asked)))
        children: list[Individual] = []
        for (a, b), c, probe in zip(pairs, crossing, probes):
            if c:
                feasible = None if probe is None else answers[probe]
                children.extend(Individual(n) for n in tb.mate(a.node, b.node, a.feasible, b.feasible, feasible))
            else:
                children.extend([a.copy_as(a.age, born=False), b.copy_as(b.age, born=False)])
        if len(parents) % 2:
            last = parents[-1]
            children.append(last.copy_as(last.age, born=False))
        mutated = []
        for child in children:
            node = child.node
            if rng.random() < self.ga.mutation:
                node = tb.mutate(node)
            if rng.random() < tb.horizontal_probability(child.age):
                node = tb.mutate_horizontal(node)
            mutated.append(child if node == child.node else Individual(node))
        return mutated

    # --- descent (kgen+) ----------------------------------------------------------------------------------

    def descend(self, starts: list[Node]) -> list[Node]:
        """Minimal feasible nodes below the feasible `starts`, all descents advancing together so that every
        round of unknown probes is one batch."""
        movable = [i for i, (a, b) in enumerate(zip(self.lower, self.upper)) if a < b]
        results: list[Node | None] = [None] * len(starts)
        waiting: dict[int, tuple[Any, Node]] = {}

        def advance(index: int, coroutine: Any, answer: bool | None) -> None:
            try:
                probe = coroutine.send(answer)
                while (known := self.tagged(probe)) is not None:
                    probe = coroutine.send(known)
                waiting[index] = (coroutine, probe)
            except StopIteration as stop:
                results[index] = stop.value

        heights = self.problem.heights
        for index, start in enumerate(starts):
            order = list(movable)
            self.rng.shuffle(order)
            if self.ga.descent_order == "weight":  # largest LOG step first; the shuffle breaks ties
                order.sort(key=lambda i: heights[i])
            advance(index, operators.descend(start, self.lower, order), None)
        while waiting:
            batch = dict(waiting)
            waiting.clear()
            probes = [probe for _, probe in batch.values()]
            answers = dict(zip(probes, self.feasibility(probes)))
            for index, (coroutine, probe) in batch.items():
                advance(index, coroutine, answers[probe])
        return [r for r in results if r is not None]

    def descended(self, individuals: list[Individual]) -> list[Individual]:
        """The individuals with every newborn feasible one replaced by its descent (evaluated)."""
        targets = [i for i, ind in enumerate(individuals) if ind.born and ind.feasible]
        if not targets:
            return individuals
        finals = [Individual(n) for n in self.descend([individuals[i].node for i in targets])]
        self.evaluate(finals)
        out = list(individuals)
        for i, final in zip(targets, finals):
            out[i] = final
        return out

    def seeded(self) -> list[Individual]:
        """The initial population: `seeds` descents from the top node, the rest uniform in the box."""
        population = [self.toolbox.individual() for _ in range(self.ga.population)]
        seeds = min(self.ga.seeds or 0, self.ga.population) if self.descent else 0
        if seeds:
            top = self.problem.box.upper
            if self.feasibility([top])[0]:
                population[:seeds] = [Individual(n) for n in self.descend([top] * seeds)]
        return population

    # --- the generational loop ----------------------------------------------------------------------------

    def body(self, trace: list[dict]) -> None:
        budget, ga, tb = self.budget, self.ga, self.toolbox
        box_size = self.problem.box.size
        population: list[Individual] = []
        generation, stall, seen = 0, 0, 0
        best_key, improved = None, 0

        def record() -> None:
            best = budget.best
            trace.append({
                "generation": generation, "evaluations": budget.evaluations,
                "best_loss": None if best is None else best.loss,
                "best_node": None if best is None else list(best.node),
                "feasible_fraction": sum(ind.feasible for ind in population) / len(population) if population else 0.0,
                "seconds": budget.seconds,
            })

        try:
            population = self.seeded()
            self.evaluate(population)
            if self.descent:
                population = self.descended(population)
            record()
            while budget.evaluations < box_size:
                generation += 1
                parents = tb.select(population, len(population))
                children = self.offspring(parents)
                self.evaluate(children)
                if self.descent:
                    children = self.descended(children)
                survivors = tb.select(population + children, ga.population)
                population = [s.copy_as(s.age if s.born else s.age + 1, born=False) for s in survivors]
                record()
                stall = stall + 1 if budget.evaluations == seen else 0
                seen = budget.evaluations
                if stall >= ga.max_stall:
                    raise StopSearch(Stopped.STALLED)
                key = None if budget.best is None else (budget.best.loss, budget.best.los, budget.best.node)
                if key != best_key:
                    best_key, improved = key, generation
                elif ga.patience and generation - improved >= ga.patience:
                    raise StopSearch(Stopped.STALLED)
        except StopSearch:
            if not trace or trace[-1]["evaluations"] != budget.evaluations:
                record()
            raise
