"""The one interface of every search: a Problem and Limits in, a SearchResult out.

A search never evaluates a node itself: it asks a `Budget`, which caches evaluations, counts the distinct
nodes evaluated (a cache hit is free), enforces the evaluation budget and time limit, and keeps the archive
of feasible nodes and the best one under the objective (least loss, then least LOS, then the
lexicographically smaller node).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from lattice.box import Box
from lattice.errors import InputError
from lattice.node import Node
from lattice.search.stopping import Stopped, StopSearch

__all__ = ["Stopped", "StopSearch"]  # re-exported: they live in lattice/search/stopping.py


class Evaluation(Protocol):
    """What a search needs to know of an evaluated node."""

    node: Node
    feasible: bool
    loss: float
    los: float


class Evaluator(Protocol):
    """Evaluates nodes; `evaluate_many` may run in parallel but returns results in input order."""

    def evaluate(self, node: Node) -> Evaluation: ...

    def evaluate_many(self, nodes: Sequence[Node]) -> list[Evaluation]: ...


@dataclass(frozen=True)
class Problem:
    """A search problem: the evaluator, the (pre-pruned) box and the hierarchy heights.

    `monotone_feasibility`: a feasible node's generalizations are feasible (predictive tagging is sound).
    `monotone_loss`: the loss never decreases when a level rises (exact searches may stop early on it).
    `loss_is_log`: the loss is LOG, `precision_loss(node, heights)`, known before evaluating the node (exact
    searches may visit nodes in increasing loss).
    `level_costs`: for a separable objective other than LOG (NCP, Loss, entropy), per QI the loss of each
    level when nothing is suppressed (the constant part folded into QI 0); the loss of a node is at least
    their sum (a suppressed cell costs the most) and equal to it when nothing is suppressed. The certified
    search and bound use it (lattice/search/certify.py); None when the objective has no such form.
    """

    evaluator: Evaluator
    box: Box
    heights: Node
    monotone_feasibility: bool = True
    monotone_loss: bool = True
    loss_is_log: bool = False
    level_costs: tuple[tuple[float, ...], ...] | None = None


@dataclass(frozen=True)
class Limits:
    """Limits shared by every search. `max_evaluations` counts distinct real evaluations."""

    max_evaluations: int | None = None
    time_limit: float | None = None
    seed: int = 0
    on_progress: Callable[[int, Evaluation | None], None] | None = None


@dataclass
class SearchResult:
    """The result of a search. `best` is None when no feasible node was found; `stopped` says why it ended."""

    algorithm: str
    best: Any
    minimal: list[Node]
    evaluations: int
    seconds: float
    stopped: Stopped
    trace: list[dict] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    # the evaluated node with the least LOS (then least loss, then smaller node): when nothing feasible was
    # found, the node that came closest, i.e. the fewest rows a larger suppression limit must allow
    closest: Any = None
    infeasible: list[Node] = field(default_factory=list)  # every infeasible node evaluated (certified bounds)

    @property
    def exact(self) -> bool:
        return self.stopped == Stopped.COMPLETE


class Search(Protocol):
    name: str

    def run(self, problem: Problem, limits: Limits) -> SearchResult: ...


def objective_key(e: Evaluation) -> tuple:
    return (e.loss, e.los, tuple(e.node))


def closeness_key(e: Evaluation) -> tuple:
    return (e.los, e.loss, tuple(e.node))


class Budget:
    """Cache, counter, limits and archive around a problem's evaluator."""

    def __init__(self, problem: Problem, limits: Limits) -> None:
        self.problem, self.limits = problem, limits
        self.cache: dict[Node, Evaluation] = {}
        self.feasible: list[Node] = []
        self.infeasible: list[Node] = []
        self.best: Evaluation | None = None
        self.closest: Evaluation | None = None
        self.start = time.perf_counter()
        self.box_size = problem.box.size
        self.in_box = 0

    @property
    def evaluations(self) -> int:
        return len(self.cache)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> int | None:
        cap = self.limits.max_evaluations
        return None if cap is None else cap - len(self.cache)

    def check_time(self) -> None:
        if self.limits.time_limit is not None and self.seconds > self.limits.time_limit:
            raise StopSearch(Stopped.TIME)

    def known(self, node: Node) -> Evaluation | None:
        return self.cache.get(node)

    def evaluate(self, node: Node) -> Evaluation:
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes: Iterable[Node]) -> list[Evaluation]:
        """Evaluate nodes (cached ones for free), in one batch for the evaluator.

        When the budget cannot cover all new nodes, the first ones that fit are evaluated and archived,
        then StopSearch("budget") is raised. Once every node of the box has been evaluated, nothing is left
        to learn: StopSearch("complete") ends the search, whose best node is then the exact optimum (a GA
        on a small lattice would otherwise go on drawing cached nodes until its stall limit).
        """
        nodes = [tuple(int(v) for v in n) for n in nodes]
        self.check_time()
        new: list[Node] = []
        for n in nodes:
            if n not in self.cache and n not in new:
                new.append(n)
        remaining = self.remaining()
        short = remaining is not None and len(new) > remaining
        if short:
            new = new[: max(remaining, 0)]
        if new:
            for n, e in zip(new, self.problem.evaluator.evaluate_many(new)):
                self._archive(n, e)
            if self.limits.on_progress is not None:
                self.limits.on_progress(self.evaluations, self.best)
            if self.in_box >= self.box_size:
                raise StopSearch(Stopped.COMPLETE)
        if short:
            raise StopSearch(Stopped.BUDGET)
        return [self.cache[n] for n in nodes]

    def _archive(self, node: Node, e: Evaluation) -> None:
        self.cache[node] = e
        self.in_box += node in self.problem.box
        if self.closest is None or closeness_key(e) < closeness_key(self.closest):
            self.closest = e
        if e.feasible:
            self.feasible.append(node)
            if self.best is None or objective_key(e) < objective_key(self.best):
                self.best = e
        else:
            self.infeasible.append(node)

    def result(self, algorithm: str, stopped: Stopped, trace: list[dict] | None = None,
               params: dict | None = None) -> SearchResult:
        return SearchResult(algorithm, self.best, minimal_nodes(self.feasible), self.evaluations,
                            self.seconds, stopped, trace or [], params or {}, closest=self.closest,
                            infeasible=self.infeasible)


def minimal_nodes(nodes: Sequence[Node]) -> list[Node]:
    """The nodes of `nodes` with no other node of `nodes` below them, sorted."""
    if not nodes:
        return []
    array = np.array(sorted(set(nodes), key=lambda n: (sum(n), n)), dtype=np.int64)
    minimal = np.empty((0, array.shape[1]), dtype=np.int64)
    for row in array:
        if minimal.size == 0 or not np.any(np.all(minimal <= row, axis=1)):
            minimal = np.vstack([minimal, row])
    return sorted(tuple(int(v) for v in row) for row in minimal)


# The largest box a search that may evaluate every node accepts without a limit: every evaluation is kept (by
# the budget and by the evaluator's cache, about 1 KB per node measured at 20 to 60 QIs), so 2^21 nodes is
# about 2 GB.
EVALUATE_ALL_MAX_NODES = 1 << 21
# The largest box best-first search accepts (a tag byte and an 8-byte key per node).
BESTFIRST_MAX_NODES = 1 << 25


def refuse_box_beyond(name: str, box: Box, max_nodes: int) -> None:
    """Refuse (InputError) a box of more than `max_nodes` nodes whatever the limits: a search whose tables are
    sized by the box (best-first, Incognito) cannot even start on a larger one."""
    if box.size > max_nodes:
        raise InputError(f"the search box has {box.size:,} nodes; '{name}' handles at most {max_nodes:,}: use "
                         "'kgen' (the genetic algorithm) or 'certify' for this many QIs")


def require_limit_beyond(name: str, problem: Problem, limits: Limits, max_nodes: int, why: str,
                         time_only: bool = False) -> None:
    """Refuse (InputError) a box of more than `max_nodes` nodes unless the limits bound the run.

    An exact search whose work and memory grow with the box would otherwise run without end (exhaustive
    search on 60 binary QIs has 2^60 nodes): with `--max-evaluations` or `--time-limit` it stops in time and
    its memory is bounded by the evaluations it can make. `time_only`: only a time limit bounds the search
    (OLA: most of its steps are look-ups of tagged nodes, which an evaluation budget does not count). The
    message names what would help: a limit, best-first search when it takes the box, KGen, fewer QIs.
    """
    box = problem.box
    if box.size <= max_nodes or limits.time_limit is not None or (
            limits.max_evaluations is not None and not time_only):
        return
    limit = "--time-limit (an evaluation limit does not bound its tag look-ups)" if time_only else (
        "--max-evaluations or --time-limit")
    exact = name != "bestfirst" and problem.monotone_feasibility and box.size <= BESTFIRST_MAX_NODES
    other = "--algorithm bestfirst (exact, evaluates far fewer nodes) or kgen" if exact else (
        "--algorithm kgen (the genetic algorithm)")
    raise InputError(f"the search box has {box.size:,} nodes; '{name}' {why}, so without a limit it handles at "
                     f"most {max_nodes:,}: give {limit}, use {other}, or fewer quasi-identifiers")


def guarded(budget: Budget, algorithm: str, body: Callable[[list[dict]], None],
            params: dict | None = None) -> SearchResult:
    """Run `body(trace)`; a budget or time stop, or Ctrl-C, ends it with the best result so far.

    The body appends its progress records (e.g. one per GA generation) to `trace` as it goes.
    """
    trace: list[dict] = []
    try:
        body(trace)
        stopped = Stopped.COMPLETE
    except StopSearch as stop:
        stopped = stop.reason
    except KeyboardInterrupt:
        stopped = Stopped.INTERRUPTED
    return budget.result(algorithm, stopped, trace, params)
