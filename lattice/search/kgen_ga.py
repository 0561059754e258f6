"""KGen: the genetic algorithm of the paper (SPEC section 4), driven by DEAP.

A `deap.base.Toolbox` holds the parts: `population` (`tools.initRepeat` of uniform individuals), `evaluate`
(a whole population as one batch through the Budget), `select` (the age-penalized tournament, or roulette,
with the signature of DEAP's `tools.selTournament` / `tools.selRoulette` over the penalized fitness), `mate`
(the lattice crossover), `mutate` (standard or reset mutation) and `mutate_h` (horizontal mutation). A
`tools.Statistics` and a `tools.Logbook` keep one record per generation (the result's `trace`, which reports
and the convergence figure read); a `tools.HallOfFame` keeps the best feasible node evaluated.

One generation, in the manner of DEAP's `eaMuPlusLambda`: select `population` parents, pair them, cross
each pair with probability `crossover` (the meets/joins the crossover needs are answered in one batch), mutate
each child (standard mutation with probability `mutation`, horizontal mutation with probability
min(1, 0.4 + age/10)), evaluate the children in one batch, and select the survivors from parents + children
with the same penalized selection. Ages: 0 at birth, +1 for every generation an individual survives. The
Budget stops the run: evaluation budget and time before each batch, the whole box evaluated after one, and
the GA's own conditions (`Stall`, `Patience`) at the end of each generation.

All randomness is drawn here, from one `random.Random(seed)`: DEAP's selections draw from the global
`random` module, so the registered ones are DEAP's with the stream made explicit
(lattice/search/operators.py). The result therefore depends on the seed alone, not on the evaluator or on
anything else drawing from the global stream, which the GA never touches.

Presets: `paper` is the paper's algorithm. `kgen+` (measured in docs/search.md) answers feasibility from
predictive tags where monotonicity already decides it, pushes every new feasible individual down to a
minimal feasible node (binary search per gene in random order), seeds the population with descents from the
top node, and uses 40 individuals. `memetic` is kgen+ with a local search on the best node after each
generation (swap moves, then iterated-local-search kicks: `_Run.polished_population`); it is `auto`'s GA.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, ClassVar

from deap import base, tools

from lattice.errors import InputError
from lattice.hitting import integer_step_costs
from lattice.node import Node, precision_loss
from lattice.search import operators
from lattice.search.base import (
    DEFAULT_MAX_EVALUATIONS,
    Budget,
    Evaluated,
    Limits,
    Problem,
    SearchResult,
    StopSearch,
    guarded,
    objective_key,
)
from lattice.search.stopping import Condition, Patience, Stall
from lattice.search.tags import SparseTags, decided, feasibility

PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"population": 100, "tagging": False, "descent": False, "seeds": 0, "infeasible_weight": 0.0,
              "polish": False},
    "kgen+": {"population": 40, "tagging": True, "descent": True, "seeds": 4, "infeasible_weight": 0.0,
              "polish": False},
    "memetic": {"population": 40, "tagging": True, "descent": True, "seeds": 4, "infeasible_weight": 0.0,
                "polish": True},
}
SELECTIONS = ("tournament", "roulette")
MUTATIONS = ("single", "reset")
HORIZONTAL_MODES = ("paper", "prototype")
DESCENT_ORDERS = ("random", "weight")
TRACE_FIELDS = ("generation", "evaluations", "best_loss", "best_node", "feasible_fraction", "seconds")


class FitnessMax(base.Fitness):
    """DEAP fitness to maximize: f = 1 - loss (and the penalized score w = (1 - pn) f)."""

    weights = (1.0,)


class Individual(list):
    """A chromosome (one level per QI) with its DEAP fitness, penalized fitness, age and feasibility.

    A list with a `fitness`, as DEAP's `creator.create("Individual", list, fitness=...)` would make, but a
    plain class: nothing is added to DEAP's global `creator` namespace. `penalized` holds w = (1 - pn) f,
    set before each selection. `born` marks an individual created in the current generation: it enters the
    next population with age 0, while a survivor (or an unchanged copy of a parent) ages by one.
    """

    def __init__(self, genes: Sequence[int], age: int = 0, born: bool = True) -> None:
        super().__init__(genes)
        self.fitness = FitnessMax()
        self.penalized = FitnessMax()
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


class Ranked(list):
    """A feasible node in the hall of fame, ranked by the Budget's objective: least loss, then least LOS,
    then the smaller node (every component of the fitness minimized), so the hall's first entry is the
    Budget's best node and not merely one of the same loss."""

    def __init__(self, evaluation: Evaluated, fitness_class: type[base.Fitness]) -> None:
        super().__init__(evaluation.node)
        loss, los, node = objective_key(evaluation)
        self.fitness = fitness_class((float(loss), float(los), *(float(v) for v in node)))


def make_budget(problem: Problem, limits: Limits, conditions: Sequence[Condition]) -> Budget:
    """The run's Budget: the search's limits plus the GA's own stopping conditions (checked by
    `budget.end_iteration()` after each generation)."""
    return Budget(problem, limits, conditions=list(conditions))


@dataclass(frozen=True)
class KGen:
    """The KGen genetic algorithm. Defaults (preset "paper") are the paper's parameters.

    Parameters
    ----------
    preset : str
        Fills the fields left at None: "paper" (population 100, no tagging, no descent, no seeds) or "kgen+"
        (population 40, predictive tagging, descent, 4 seeds); both score infeasible nodes 0.
    population : int, optional
        Individuals per generation (>= 2).
    crossover, mutation : float
        Probability that a pair crosses (0.9) and that a child gets the standard mutation (0.2).
    tournsize : int
        Tournament size (2).
    selection : str
        "tournament" or "roulette" (the paper's figure 5), both over the age-penalized fitness.
    age_rescale : bool
        The prototype's penalty: ages rescaled min-max onto [0, 0.9] within the population.
    mutation_mode : str
        "single" (the paper: one gene) or "reset" (the prototype: each gene redrawn with probability
        `mutation`).
    horizontal_rate : float
        The paper's horizontalMutationRate (0.4).
    horizontal_mode : str
        "paper" (probability min(1, horizontal_rate + age/10)) or "prototype" (age/10).
    horizontal_fraction : float
        Share of the genes a horizontal mutation moves (0.2).
    tagging : bool, optional
        Answer feasibility from predictive tags (monotone problems) instead of evaluating.
    descent : bool, optional
        Push every new feasible individual down to a minimal feasible node.
    descent_order : str
        "random" or "weight" (lowering the genes of smallest height first).
    seeds : int, optional
        Initial individuals made by descents from the top.
    infeasible_weight : float, optional
        Fitness factor of infeasible nodes (f = 1 - loss otherwise). The SPEC leaves an infeasible node's
        score open; 1 (scored like a feasible node) lets the low, infeasible nodes win every selection, and on
        Cargo 2000 at 25 QIs such a run never finds a feasible node (docs/search.md).
    polish : bool, optional
        The memetic step (preset "memetic"): after each generation, the best node found, if not polished
        yet, is improved by swap moves (`operators.swap_move`: one gene down, another up by less than the
        saving, then a descent) until none improves, and joins the population. Needs LOG and monotone
        feasibility; elsewhere it is off (`params["polish"]` says so).
    max_evaluations : int
        The budget when the limits give none (5000).
    max_stall : int
        Stop after this many generations that evaluated no new node.
    patience : int
        Stop after this many generations without a better best node (0 = never; a kgen addition to the paper,
        whose budget alone keeps a converged population redrawing cached nodes for thousands of generations
        on small lattices).
    name : str
        The algorithm's name in results.

    Raises
    ------
    InputError
        On an unknown preset or an invalid value.
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
    polish: bool | None = None
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS
    max_stall: int = 100
    patience: int = 300
    name: str = "kgen"
    exact: ClassVar[bool] = False  # a heuristic: its best is not proved optimal
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

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
        """Every parameter by name (presets resolved), for reports."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Run the GA on `problem` under `limits`.

        Parameters
        ----------
        problem : Problem
            The evaluator, the pre-pruned box and the heights.
        limits : Limits
            Evaluation budget (`max_evaluations` of this GA when None), time limit, seed, progress callback.

        Returns
        -------
        SearchResult
            The best feasible node evaluated, the minimal ones, why the run stopped, and the trace: one
            Logbook record per generation (generation, evaluations, best_loss, best_node,
            feasible_fraction, seconds).
        """
        limits = limits.bounded(self.max_evaluations)
        budget = make_budget(problem, limits, [Stall(self.max_stall), Patience(self.patience)])
        run = _Run(self, problem, budget, random.Random(limits.seed))
        params = dict(self.params, seed=limits.seed, max_evaluations=limits.max_evaluations,
                      tagging=run.tags is not None, descent=run.descent, polish=run.polish)
        return guarded(budget, self.name, run.body, params)


class _Run:
    """The state of one run: budget, rng, toolbox, predictive tags (kgen+), logbook and hall of fame."""

    def __init__(self, ga: KGen, problem: Problem, budget: Budget, rng: random.Random) -> None:
        self.ga, self.problem, self.budget, self.rng = ga, problem, budget, rng
        self.lower, self.upper = problem.box.lower, problem.box.upper
        # Skipping a node whose feasibility the tags decide is safe only when a feasible-tagged node cannot
        # beat the known feasible node below it (monotone loss); the descent itself needs only monotone
        # feasibility (without tags its probes are evaluated).
        self.descent = bool(ga.descent and problem.monotone_feasibility)
        tagging = (ga.tagging or ga.descent) and problem.monotone_feasibility and problem.monotone_loss
        self.tags = SparseTags(problem.box.dims) if tagging else None
        # the memetic step compares LOG step costs before evaluating, and descends (monotone feasibility)
        self.polish = bool(ga.polish and self.descent and self.tags is not None and problem.loss_is_log)
        self.steps = integer_step_costs(problem.heights)[0] if self.polish else []
        self.polished: set[Node] = set()  # the tabu list: nodes already pushed to a swap-optimal node
        self.partners = operators.swap_partners(problem.box.dims)
        self.kick_range = operators.kick_range(problem.box.dims)
        self.toolbox = self.make_toolbox()
        self.stats = tools.Statistics(key=attrgetter("feasible"))
        self.stats.register("feasible_fraction", lambda flags: sum(flags) / len(flags) if len(flags) else 0.0)
        self.logbook = tools.Logbook()
        self.logbook.header = TRACE_FIELDS
        # the best feasible node evaluated (crossover and descent probes included), ranked like Budget.best
        self.hall = tools.HallOfFame(1)
        self.ranked_fitness = type("Objective", (base.Fitness,), {"weights": (-1.0,) * (2 + problem.box.dims)})
        self.archived = 0  # how many of the budget's feasible nodes the hall of fame has seen

    def make_toolbox(self) -> base.Toolbox:
        ga, rng, lower, upper = self.ga, self.rng, self.lower, self.upper
        tb = base.Toolbox()
        tb.register("individual", lambda: Individual(self.problem.box.random_node(rng)))
        tb.register("population", tools.initRepeat, list, tb.individual)
        tb.register("evaluate", self.evaluate)
        if ga.selection == "tournament":
            tb.register("select", operators.sel_tournament, tournsize=ga.tournsize, fit_attr="penalized", rng=rng)
        else:
            tb.register("select", operators.sel_roulette, fit_attr="penalized", rng=rng)
        tb.register("probe", operators.crossover_probe)
        tb.register("mate", operators.crossover, rng=rng)
        if ga.mutation_mode == "single":
            tb.register("mutate", operators.standard_mutation, lower=lower, upper=upper, rng=rng)
        else:
            tb.register("mutate", operators.reset_mutation, lower=lower, upper=upper, rate=ga.mutation, rng=rng)
        tb.register("mutate_h", operators.horizontal_mutation, lower=lower, upper=upper, rng=rng,
                    fraction=ga.horizontal_fraction)
        tb.register("horizontal_probability", operators.horizontal_probability, base=ga.horizontal_rate,
                    mode=ga.horizontal_mode)
        return tb

    # --- evaluation ---------------------------------------------------------------------------------------

    def feasibility(self, nodes: Sequence[Node]) -> list[bool]:
        """Each node's feasibility: from this run's evaluations or the tags, else evaluated in one batch."""
        return feasibility(self.budget, self.tags, nodes)

    def evaluate(self, individuals: list[Individual]) -> list[Individual]:
        """The toolbox's `evaluate`: the whole population as one batch. Sets each individual's feasibility
        and fitness; with the descent, every newborn feasible individual is replaced by its descent."""
        self.assess(individuals)
        return self.descended(individuals) if self.descent else individuals

    def assess(self, individuals: Sequence[Individual]) -> None:
        """Feasibility and fitness. A loss that is not LOG is known only from an evaluation, so the nodes
        whose fitness needs it are evaluated (one batch)."""
        nodes = [ind.node for ind in individuals]
        feasible = self.feasibility(nodes)
        if not self.problem.loss_is_log:
            missing = [n for n, f in zip(nodes, feasible)
                       if (f or self.ga.infeasible_weight > 0) and self.budget.known(n) is None]
            if missing:
                for e in self.budget.evaluate_many(list(dict.fromkeys(missing))):
                    if self.tags is not None:
                        self.tags.tag(tuple(e.node), e.feasible)
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
            assert evaluation is not None, "assess() evaluates every node whose fitness needs its loss"
            loss = evaluation.loss
        return weight * (1.0 - loss)

    # --- selection ----------------------------------------------------------------------------------------

    def penalized(self, individuals: list[Individual]) -> list[Individual]:
        """The individuals with their penalized fitness w = (1 - pn(age)) f set, ready for `toolbox.select`."""
        scores = operators.penalized_scores([ind.fitness.values[0] for ind in individuals],
                                            [ind.age for ind in individuals], self.ga.age_rescale)
        for ind, w in zip(individuals, scores):
            ind.penalized.values = (w,)
        return individuals

    # --- variation ----------------------------------------------------------------------------------------

    def offspring(self, parents: list[Individual]) -> list[Individual]:
        """Crossover of consecutive pairs, then mutation of every child (DEAP's varAnd, with the lattice
        crossover's feasibility questions answered in one batch)."""
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
                node = tb.mutate_h(node)
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
                while (known := decided(self.budget, self.tags, probe)) is not None:
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
        self.assess(finals)
        out = list(individuals)
        for i, final in zip(targets, finals):
            out[i] = final
        return out

    def seeded(self) -> list[Individual]:
        """The initial population (`toolbox.population`, uniform in the box), its first `seeds` replaced by
        descents from the top node."""
        population = self.toolbox.population(n=self.ga.population)
        seeds = min(self.ga.seeds or 0, self.ga.population) if self.descent else 0
        if seeds:
            top = self.problem.box.upper
            if self.feasibility([top])[0]:
                population[:seeds] = [Individual(n) for n in self.descend([top] * seeds)]
        return population

    # --- the memetic step (preset "memetic") ---------------------------------------------------------------

    def drive(self, coroutine: Generator[Node, bool, Any]) -> Any:
        """Run an operator coroutine (`operators.descend`, `operators.swap_move`) to its end, answering each
        probe from this run's evaluations and tags, else by evaluating it."""
        answer = None
        try:
            while True:
                probe = coroutine.send(answer)
                answer = self.feasibility([probe])[0]
        except StopIteration as stop:
            return stop.value

    def local_optimum(self, node: Node) -> Node:
        """A swap-optimal node below or beside the feasible `node`, never costlier: descend, then apply
        improving swap moves (each followed by a descent, the raised gene first) until none is left or the
        node was polished before (the tabu list)."""
        movable = [i for i, (a, b) in enumerate(zip(self.lower, self.upper)) if a < b]
        order = list(movable)
        self.rng.shuffle(order)
        node = self.drive(operators.descend(node, self.lower, order))
        while node not in self.polished:
            self.polished.add(node)
            self.rng.shuffle(order)
            move = self.drive(operators.swap_move(node, self.lower, self.upper, self.steps, order,
                                                   partners=self.partners))
            if move is None:
                break
            better, raised = move
            rest = [i for i in movable if i != raised]
            self.rng.shuffle(rest)
            node = self.drive(operators.descend(better, self.lower, [raised, *rest]))
        return node

    def polished_population(self, population: list[Individual]) -> list[Individual]:
        """The population with the best node found pushed to a swap-optimal node, or, once the best is
        swap-optimal, with a kicked copy of it (`kicked`): the result replaces the least fit individual when it
        is fitter (so the GA recombines it)."""
        if not self.polish or not len(self.hall):
            return population
        start = tuple(self.hall[0])
        node = self.local_optimum(start) if start not in self.polished else self.kicked(start)
        if node == start:
            return population
        better = Individual(node)
        self.assess([better])
        worst = min(range(len(population)), key=lambda k: population[k].fitness.values[0])
        if better.fitness.values[0] <= population[worst].fitness.values[0]:
            return population
        return [better if k == worst else ind for k, ind in enumerate(population)]

    def kicked(self, node: Node) -> Node:
        """An iterated local search step from the swap-optimal `node`: raise a few genes (`kick_range`, each to a
        random higher level: feasible without an evaluation, by monotonicity), descend with the raised genes
        last (the others drop into the room they leave), then polish (`local_optimum`)."""
        room = [i for i, (x, b) in enumerate(zip(node, self.upper)) if x < b]
        if not room:
            return node
        raised = self.rng.sample(room, min(len(room), self.rng.randint(*self.kick_range)))
        y = list(node)
        for i in raised:
            y[i] = self.rng.randint(y[i] + 1, self.upper[i])
        rest = [i for i, (a, b) in enumerate(zip(self.lower, self.upper)) if a < b and i not in raised]
        self.rng.shuffle(rest)
        down = self.drive(operators.descend(tuple(y), self.lower, [*rest, *raised]))
        return self.local_optimum(down)

    # --- the generational loop ----------------------------------------------------------------------------

    def record(self, generation: int, population: Sequence[Individual]) -> None:
        """One Logbook record: the budget's figures, the hall of fame's best and the population's statistics."""
        budget = self.budget
        fresh = budget.feasible[self.archived:]
        self.archived = len(budget.feasible)
        self.hall.update([Ranked(budget.known(n), self.ranked_fitness) for n in fresh])
        best = budget.known(tuple(self.hall[0])) if len(self.hall) else None
        self.logbook.record(generation=generation, evaluations=budget.evaluations,
                            best_loss=None if best is None else best.loss,
                            best_node=None if best is None else list(best.node),
                            seconds=budget.seconds, **self.stats.compile(population))

    def body(self, trace: list[dict]) -> None:
        """The generational loop (like DEAP's eaMuPlusLambda, mu = lambda = population); the Logbook's
        records become `trace`, also when a stopping condition ends the run."""
        budget, ga, tb = self.budget, self.ga, self.toolbox
        population: list[Individual] = []
        generation = 0
        try:
            population = tb.evaluate(self.seeded())
            self.record(generation, population)
            population = self.polished_population(population)
            while True:
                generation += 1
                parents = tb.select(self.penalized(population), len(population))
                children = tb.evaluate(self.offspring(parents))
                survivors = tb.select(self.penalized(population + children), ga.population)
                population = [s.copy_as(s.age if s.born else s.age + 1, born=False) for s in survivors]
                self.record(generation, population)
                population = self.polished_population(population)
                budget.end_iteration()
        except StopSearch:
            if not len(self.logbook) or self.logbook[-1]["evaluations"] != budget.evaluations:
                self.record(generation, population)
            raise
        finally:
            trace.extend({key: record[key] for key in TRACE_FIELDS} for record in self.logbook)
