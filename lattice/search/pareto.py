"""A two-objective search of the lattice: the feasible nodes that no other feasible node beats on both the loss
and a risk (SPEC section 14, the risk-utility frontier).

Why here and not in the fitness layer: the search only ranks what the evaluator says; the risk of a node is a
function of its evaluation given by the caller (`risk(evaluation) -> float`), so the lattice layer stays free
of any measure. The GA is NSGA-II's selection (DEAP's `tools.selNSGA2`: non-dominated sorting, then crowding
distance) over KGen's own lattice operators (crossover through meet and join, the paper's mutation and the
horizontal one; lattice/search/operators.py), every draw from one seeded `random.Random`. Each generation's
children go to the Budget in one batch (the one evaluator: cache, parallel runners). Every feasible node ever
evaluated is kept in an archive, and the answer is the non-dominated set of that archive, polished by a
Pareto local search: the lattice neighbours (one level up or down) of each point are evaluated until none
joins the set or a limit stops it. On a box of at most `exhaustive_max` nodes the whole box is evaluated as
well, so that the set is the exact frontier (`params["complete"]`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from deap import base, tools

from lattice.node import Node
from lattice.search.base import Budget, Evaluated, Limits, Problem, SearchResult, guarded
from lattice.search.operators import crossover, crossover_probe, horizontal_mutation, standard_mutation

INFEASIBLE = 2.0  # both objectives of an infeasible node start here (losses and risks lie in [0, 1])


def pareto_front(points: Sequence[tuple[float, float, Node]]) -> list[tuple[float, float, Node]]:
    """The non-dominated points of (loss, risk, node): none has another with loss and risk both at most its own,
    one of them strictly. Of equal (loss, risk), the smaller node is kept. Sorted by increasing loss (so
    decreasing risk)."""
    front: list[tuple[float, float, Node]] = []
    for loss, risk, node in sorted(points, key=lambda p: (p[0], p[1], p[2])):
        if not front or risk < front[-1][1]:
            front.append((loss, risk, node))
    return front


def hypervolume(front: Sequence[tuple[float, float]], reference: tuple[float, float] = (1.0, 1.0)) -> float:
    """The area dominated by a two-objective front (both minimized) and bounded by `reference`: the usual
    measure of how close a found front comes to the true one (their ratio is 1 when they are equal)."""
    area, previous_risk = 0.0, reference[1]
    for loss, risk in sorted((p[0], p[1]) for p in front):
        if loss >= reference[0] or risk >= previous_risk:
            continue
        area += (reference[0] - loss) * (previous_risk - risk)
        previous_risk = risk
    return area


class FitnessMin2(base.Fitness):
    """DEAP fitness of two minimized objectives: (loss, risk)."""

    weights = (-1.0, -1.0)


class Member(list):
    """A node with its two-objective fitness (a plain class: nothing is added to DEAP's global creator)."""

    def __init__(self, genes: Sequence[int]) -> None:
        super().__init__(genes)
        self.fitness = FitnessMin2()
        self.feasible = False


@dataclass(frozen=True)
class ParetoGA:
    """NSGA-II over the lattice for (loss, risk) (see the module doc).

    Parameters
    ----------
    population : int
        Members kept per generation.
    generations : int
        Generations at most (a time or evaluation limit may stop it earlier).
    mutation : float
        Probability that a child is mutated (the paper's one-gene mutation, or half the time the horizontal one).
    local_search : bool
        Polish the archive's front with its lattice neighbours after the generations.
    exhaustive_max : int
        On a box of at most this many nodes, every node is evaluated too: the answer is exact (0: never).
    name : str
        The algorithm's name in results.
    """

    population: int = 60
    generations: int = 60
    mutation: float = 0.4
    local_search: bool = True
    exhaustive_max: int = 20_000
    name: str = "nsga2"
    exact: ClassVar[bool] = False
    all_minimal: ClassVar[bool] = False

    def run(self, problem: Problem, limits: Limits, risk: Callable[[Evaluated], float]) -> SearchResult:
        """Search `problem` for the (loss, `risk`) frontier within `limits`. The result's `params["front"]` is the
        frontier found, as [loss, risk, node] sorted by loss; `params["complete"]` says it is exact (the whole box
        was evaluated); `params["ga_front"]` is what the GA and the local search found before that."""
        budget = Budget(problem, limits, stop_when_box_done=False)
        run = _Run(self, problem, budget, risk, random.Random(limits.seed))
        result = guarded(budget, self.name, run.body, run.params)
        result.params["front"] = [[loss, r, list(node)] for loss, r, node in run.front()]
        return result


class _Run:
    """The state of one run: the budget, the rng, the archive of feasible nodes' objectives."""

    def __init__(self, ga: ParetoGA, problem: Problem, budget: Budget, risk: Callable[[Evaluated], float],
                 rng: random.Random) -> None:
        self.ga, self.problem, self.budget, self.risk, self.rng = ga, problem, budget, risk, rng
        self.lower, self.upper = problem.box.lower, problem.box.upper
        self.archive: dict[Node, tuple[float, float]] = {}
        self.params: dict = {"population": ga.population, "generations": ga.generations, "mutation": ga.mutation,
                             "local_search": ga.local_search, "exhaustive_max": ga.exhaustive_max,
                             "complete": False}

    def evaluate(self, nodes: Sequence[Node]) -> list[Evaluated]:
        """Evaluate in one batch; feasible nodes join the archive with their (loss, risk)."""
        evaluations = self.budget.evaluate_many(nodes)
        for e in evaluations:
            if e.feasible and tuple(e.node) not in self.archive:
                self.archive[tuple(e.node)] = (float(e.loss), float(self.risk(e)))
        return evaluations

    def front(self) -> list[tuple[float, float, Node]]:
        return pareto_front([(loss, r, node) for node, (loss, r) in self.archive.items()])

    def assess(self, members: Sequence[Member]) -> None:
        for member, e in zip(members, self.evaluate([tuple(m) for m in members])):
            member.feasible = bool(e.feasible)
            member.fitness.values = self.archive[tuple(e.node)] if e.feasible else (
                INFEASIBLE + float(e.los), INFEASIBLE + float(e.los))

    def first_population(self) -> list[Member]:
        """The box's corners and random nodes (the top is feasible whenever anything is)."""
        nodes = [tuple(self.upper), tuple(self.lower)]
        nodes += [self.problem.box.random_node(self.rng) for _ in range(self.ga.population - 2)]
        members = [Member(n) for n in nodes]
        self.assess(members)
        return members

    def children(self, parents: Sequence[Member]) -> list[Member]:
        """Pairs drawn at random; KGen's crossover (its probes evaluated in one batch), then mutation."""
        pairs = [(self.rng.choice(parents), self.rng.choice(parents)) for _ in range(len(parents) // 2)]
        probes = [crossover_probe(a, b, a.feasible, b.feasible) for a, b in pairs]
        asked = [p for p in probes if p is not None]
        known = {tuple(e.node): bool(e.feasible) for e in self.evaluate(asked)} if asked else {}
        nodes: list[Node] = []
        for (a, b), probe in zip(pairs, probes):
            nodes += crossover(a, b, a.feasible, b.feasible, None if probe is None else known[probe], self.rng)
        out = []
        for node in nodes:
            if self.rng.random() < self.ga.mutation:
                node = (standard_mutation(node, self.lower, self.upper, self.rng) if self.rng.random() < 0.5
                        else horizontal_mutation(node, self.lower, self.upper, self.rng))
            out.append(Member(node))
        self.assess(out)
        return out

    def neighbours(self, node: Node) -> list[Node]:
        out = []
        for i, x in enumerate(node):
            if x > self.lower[i]:
                out.append(node[:i] + (x - 1,) + node[i + 1:])
            if x < self.upper[i]:
                out.append(node[:i] + (x + 1,) + node[i + 1:])
        return out

    def polish(self) -> None:
        """Pareto local search: evaluate the neighbours of the front's points until the front stops changing."""
        done: set[Node] = set()
        while True:
            todo = [node for _, _, node in self.front() if node not in done]
            if not todo:
                return
            done.update(todo)
            self.evaluate([n for node in todo for n in self.neighbours(node)])

    def body(self, trace: list[dict]) -> None:
        """Generations of NSGA-II, the local search, then (small box) every node."""
        members = self.first_population()
        for generation in range(self.ga.generations):
            members = tools.selNSGA2(members + self.children(members), self.ga.population)
            trace.append({"generation": generation, "evaluations": self.budget.evaluations,
                          "front": len(self.front()), "seconds": self.budget.seconds})
        self.params["ga_front"] = [[loss, r, list(node)] for loss, r, node in self.front()]
        if self.ga.local_search:
            self.polish()
            self.params["polished_front"] = [[loss, r, list(n)] for loss, r, n in self.front()]
        self.params["ga_evaluations"] = self.budget.evaluations
        if self.problem.box.size <= self.ga.exhaustive_max:
            batch: list[Node] = []
            for node in self.problem.box.nodes():
                batch.append(node)
                if len(batch) == 512:
                    self.evaluate(batch)
                    batch = []
            self.evaluate(batch)
            self.params["complete"] = True


def ratio(found: Sequence[Sequence], exact: Sequence[Sequence], margin: float = 0.1) -> float:
    """The hypervolume of `found` over that of `exact` ([loss, risk, ...] rows; 1 when equal).

    Both objectives are first scaled to [0, 1] over the exact front's range (its ideal and nadir points) and the
    reference point is (1 + margin, 1 + margin), the usual normalization: without it the risk axis, whose values
    are orders of magnitude below the loss's, would count for nothing."""
    losses, risks = [p[0] for p in exact], [p[1] for p in exact]
    lo_l, span_l = min(losses), (max(losses) - min(losses)) or 1.0
    lo_r, span_r = min(risks), (max(risks) - min(risks)) or 1.0

    def scaled(rows: Sequence[Sequence]) -> list[tuple[float, float]]:
        return [((p[0] - lo_l) / span_l, (p[1] - lo_r) / span_r) for p in rows]

    reference = (1.0 + margin, 1.0 + margin)
    whole = hypervolume(scaled(exact), reference)
    return 1.0 if whole == 0 else hypervolume(scaled(found), reference) / whole


__all__ = ["ParetoGA", "hypervolume", "pareto_front", "ratio"]
