"""k-Optimize (Bayardo and Agrawal 2005): optimal k-anonymization over ordered value cut points.

A different generalization model from the hierarchy lattice: each QI's values are put in order and cut into
intervals of consecutive values; a generalization is the set of cut points chosen (item i = "start a new
interval at this value"; the least value of each QI always starts one, so it is no item). The empty set
releases one interval per QI; the set of all items releases the table as it is. The cost is the
discernibility metric with suppression: every released row costs the size of its class, every suppressed row
(one in a class of fewer than k) costs n.

The search is a set-enumeration tree over the items (a node's children append one item of its tail),
depth first with branch and bound: a node's subtree holds the sets between its head H and H plus its tail T.
Adding cut points only splits classes, so a row suppressed under H stays suppressed below it (cost n) and
every other row's class is at least as large as under H + T and at least k: the sum of these per-row costs is
a lower bound on every set of the subtree. A subtree is cut when its bound reaches the best cost found, and an
item of the tail is dropped when the bound of H plus that item does (it can then join no better set below H);
both prunings are repeated whenever the best cost improves. A suppression limit, when given, cuts every
subtree whose head already suppresses too many rows (adding cut points never suppresses fewer). The tail is
tried in increasing cost of H plus the item, and a greedy descent from the empty set gives the first upper
bound, so that pruning starts early. The search is exact when it
completes (`stopped == "complete"`) and returns the best set found when a limit stops it.

Only the tree search lives here: costs and bounds are data and come from a `CutOracle` (kgen.koptimize builds
one from a table). `ChosenNode` is the lattice search that releases the node k-Optimize chose once
kgen.run.pipeline.prepare has turned its cut points into one-level hierarchies.
"""

from __future__ import annotations

import math
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from lattice.errors import InputError
from lattice.search.base import Budget, Limits, Problem, SearchResult, Stopped, guarded, stopped_by
from lattice.search.stopping import MaxEvaluations, Progress, TimeLimit


class CutScore(Protocol):
    cost: float
    suppressed: int
    feasible: bool


class CutOracle(Protocol):
    """Costs and bounds of cut-point sets (items are 0 .. items - 1)."""

    items: int

    def score(self, cuts: frozenset[int]) -> CutScore: ...

    def lower_bound(self, head: frozenset[int], specific: frozenset[int]) -> float:
        """A lower bound on the cost of every feasible set S with head <= S <= specific (inf if none)."""
        ...


@dataclass(frozen=True)
class CutProblem:
    """A k-Optimize problem: the oracle of a table's cut points."""

    oracle: CutOracle


@dataclass(frozen=True)
class CutEvaluation:
    """A scored cut-point set; `node` is the sorted items (the search's node), `loss` its cost."""

    node: tuple[int, ...]
    feasible: bool
    loss: float
    suppressed: int
    los: float = 0.0


@dataclass(frozen=True)
class KOptimize:
    """Bayardo and Agrawal's k-Optimize over cut-point sets (see the module doc).

    Parameters
    ----------
    max_items : int
        The most cut points it accepts (the depth of the tree).
    greedy_seed : bool
        Start from the cost of a greedy descent (an upper bound found quickly), not from the empty set's.
    memo : int
        How many costed sets are remembered (the most recent).
    name : str
        The algorithm's name in results and reports.
    """

    max_items: int = 2000
    greedy_seed: bool = True
    memo: int = 1 << 16
    name: str = "k-optimize"
    exact: ClassVar[bool] = True  # its cut points are optimal in its own model (intervals of the data) when complete
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

    def run(self, problem: CutProblem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits`.

        Parameters
        ----------
        problem : CutProblem
            The oracle of a table's cut points.
        limits : Limits
            `max_evaluations` caps the costings, `time_limit` the seconds.

        Returns
        -------
        SearchResult
            `best`: the least-cost feasible set (its `node` the sorted items), the optimum when `stopped`
            is `complete`; `evaluations`: the oracle's costings (a set forgotten by the memo and costed
            again counts twice).
        """
        oracle = problem.oracle
        if oracle.items > self.max_items:
            raise ValueError(f"{oracle.items} cut points; k-optimize handles at most {self.max_items}")
        run = KOptimizeRun(self, oracle, limits)
        trace: list[dict] = []
        stopped = stopped_by(run.body, trace)
        best = run.best
        return SearchResult(self.name, best[0] if best else None, [best[0].node] if best else [], run.calls,
                            time.perf_counter() - run.start, stopped, trace, {**run.stats, "items": oracle.items})


class KOptimizeRun:
    """The state of one k-Optimize search (the memo of costed sets, the best set, the counters), advanced in
    named steps: `seed` (the greedy descent), `visit` (the set-enumeration tree), `prune` (the bound's cuts of
    a tail) and `score` (one costing, memoized)."""

    def __init__(self, search: KOptimize, oracle: CutOracle, limits: Limits) -> None:
        self.search, self.oracle, self.limits = search, oracle, limits
        self.start = time.perf_counter()
        self.scored: OrderedDict[frozenset[int], CutEvaluation] = OrderedDict()  # the most recent `memo` sets
        self.calls = 0
        self.stats = {"tree_nodes": 0, "bounds": 0, "pruned_subtrees": 0, "pruned_items": 0}
        self.best: list[CutEvaluation] = []
        self.cap = None if limits.max_evaluations is None else MaxEvaluations(limits.max_evaluations)
        self.clock = None if limits.time_limit is None else TimeLimit(limits.time_limit)

    def progress(self) -> Progress:
        return Progress(self.calls, time.perf_counter() - self.start)

    def check(self) -> None:
        if self.clock is not None:
            self.clock.check(self.progress())

    def score(self, cuts: frozenset[int]) -> CutEvaluation:
        """The set's costing: from the memo, else the oracle's (counted; the best set kept)."""
        known = self.scored.get(cuts)
        if known is not None:
            self.scored.move_to_end(cuts)
            return known
        if self.cap is not None:  # a costing beyond the budget: stop before it
            self.cap.check(self.progress())
        self.calls += 1
        s = self.oracle.score(cuts)
        known = self.scored[cuts] = CutEvaluation(tuple(sorted(cuts)), bool(s.feasible), float(s.cost),
                                                  int(s.suppressed))
        if len(self.scored) > self.search.memo:
            self.scored.popitem(last=False)
        best = self.best
        if known.feasible and (not best or (known.loss, known.node) < (best[0].loss, best[0].node)):
            best[:] = [known]
        if self.limits.on_progress is not None:
            self.limits.on_progress(self.calls, best[0] if best else None)
        return known

    def cost(self) -> float:
        return self.best[0].loss if self.best else math.inf

    def bound(self, head: frozenset[int], specific: frozenset[int]) -> float:
        self.stats["bounds"] += 1
        return self.oracle.lower_bound(head, specific)

    def prune(self, head: frozenset[int], tail: list[int]) -> list[int]:
        """The tail's items whose subtrees the bound does not rule out (empty: the whole subtree is pruned)."""
        while True:
            specific = head.union(tail)
            if self.bound(head, specific) >= self.cost():
                self.stats["pruned_subtrees"] += 1
                return []
            kept = [v for v in tail if self.bound(head | {v}, specific) < self.cost()]
            self.stats["pruned_items"] += len(tail) - len(kept)
            if len(kept) == len(tail):
                return tail
            tail = kept

    def visit(self, head: frozenset[int], tail: list[int]) -> None:
        """One node of the set-enumeration tree: cost it, prune its tail, visit its children best first."""
        self.check()
        self.stats["tree_nodes"] += 1
        self.score(head)
        tail = self.prune(head, tail)
        tail.sort(key=lambda v: (self.score(head | {v}).loss if self.score(head | {v}).feasible else math.inf, v))
        while tail:
            v = tail.pop(0)
            self.visit(head | {v}, list(tail))
            tail = self.prune(head, tail)

    def seed(self) -> None:
        """A greedy descent from the empty set (add the item that lowers the cost most, while one does), so
        that the bound prunes from the start."""
        current = self.score(frozenset())
        while True:
            self.check()
            chosen = frozenset(current.node)
            options = [self.score(chosen | {v}) for v in range(self.oracle.items) if v not in chosen]
            better = [e for e in options if e.feasible and e.loss < current.loss]
            if not better:
                return
            current = min(better, key=lambda e: (e.loss, e.node))

    def body(self, trace: list[dict]) -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, self.oracle.items + 200))
        try:
            if self.search.greedy_seed:
                self.seed()
                self.stats["seed_cost"] = self.cost()
            self.visit(frozenset(), list(range(self.oracle.items)))
        finally:
            sys.setrecursionlimit(limit)
            trace.append({**self.stats, "evaluations": self.calls, "seconds": time.perf_counter() - self.start})


@dataclass(frozen=True)
class ChosenNode:
    """Releases the top of the box: the node a cut-point algorithm chose before the lattice was built.

    kgen.run.pipeline.prepare turns the chosen cut points into one-level hierarchies, which put its intervals at
    level 1.

    Parameters
    ----------
    outcome : dict
        That algorithm's record (its cut points, cost, evaluations, seconds, how it stopped), reported as this
        search's parameters.
    name : str
        The algorithm's name in results and reports.
    """

    outcome: dict = field(default_factory=dict)
    name: str = "k-optimize"
    exact: ClassVar[bool] = False  # optimal among interval cut points, not over a hierarchy lattice
    all_minimal: ClassVar[bool] = False

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: The top node's evaluation as `best`, with the
        cut-point search's evaluations, seconds and `stopped` added to its own.
        """
        if not self.outcome:
            raise InputError("k-optimize chooses its own intervals from the data: run it through kgen.anonymize "
                             "(Config(algorithm='k-optimize')), not as a search of a hierarchy lattice")
        budget = Budget(problem, limits)
        result = guarded(budget, self.name, lambda trace: budget.evaluate(problem.box.upper), dict(self.outcome))
        result.evaluations = int(self.outcome.get("evaluations", 0)) + result.evaluations
        result.seconds += float(self.outcome.get("seconds", 0.0))
        result.stopped = Stopped(self.outcome.get("stopped", result.stopped))
        return result


def items_of(domains: Sequence[int]) -> list[tuple[int, int]]:
    """The items of QIs with `domains[j]` ordered values: (QI j, value rank r >= 1), QI by QI."""
    return [(j, r) for j, m in enumerate(domains) for r in range(1, m)]
