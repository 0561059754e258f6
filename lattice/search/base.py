"""The one interface of every search: a Problem and Limits in, a SearchResult out.

A search never evaluates a node itself: it asks its `Budget`, a view of the problem's evaluator for this one
search. The evaluator owns the node -> evaluation cache (it is shared by every search of a run); the Budget
keeps only what belongs to this search: the nodes it has evaluated (its distinct-evaluation count: asking
again for a node it counted is free), its stopping conditions (lattice/search/stopping.py), and its archive
of feasible and infeasible nodes, the best one under the objective (least loss, then least LOS, then the
lexicographically smaller node) and the closest one to feasibility.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

import numpy as np

from lattice.box import Box
from lattice.errors import InputError
from lattice.node import Node
from lattice.search.stopping import (
    BoxDone,
    Condition,
    MaxEvaluations,
    Progress,
    Stopped,
    StopSearch,
    TimeLimit,
    first_reached,
)

__all__ = ["Stopped", "StopSearch"]  # re-exported: they live in lattice/search/stopping.py

# The budget of the searches that never end on their own (KGen, random search) when the limits give none:
# the paper's 5000 distinct evaluations. `Limits.bounded` is the one place that applies it.
DEFAULT_MAX_EVALUATIONS = 5000


class Evaluated(Protocol):
    """What a search needs to know of an evaluated node (fitness.evaluator.Evaluation is one)."""

    node: Node
    feasible: bool
    loss: float
    los: float


class Evaluator(Protocol):
    """Evaluates nodes and owns their cache (fitness.evaluator.NodeEvaluator is one).

    `evaluate_many` may compute in parallel but returns results in input order; `cached` returns a node's
    evaluation if the evaluator has it, and never computes.
    """

    def evaluate(self, node: Node) -> Evaluated: ...

    def evaluate_many(self, nodes: Sequence[Node]) -> list[Evaluated]: ...

    def cached(self, node: Node) -> Evaluated | None: ...


@dataclass(frozen=True)
class Problem:
    """A search problem: what to search and what the search may assume.

    Parameters
    ----------
    evaluator : Evaluator
        Evaluates nodes (and caches them); searches reach it only through a `Budget`.
    box : Box
        The (pre-pruned) sub-lattice searched.
    heights : Node
        The hierarchy heights (LOG and accuracy are relative to them).
    monotone_feasibility : bool
        A feasible node's generalizations are feasible (predictive tagging is sound).
    monotone_loss : bool
        The loss never decreases when a level rises (exact searches may stop early on it).
    loss_is_log : bool
        The loss is LOG, `precision_loss(node, heights)`, known before the node is evaluated (exact searches
        may visit nodes in increasing loss).
    level_costs : tuple of tuple of float, optional
        For a separable objective other than LOG (NCP, Loss, entropy), per QI the loss of each level when
        nothing is suppressed (the constant part folded into QI 0); the loss of a node is at least their sum
        (a suppressed cell costs the most) and equal to it when nothing is suppressed. The certified search
        and bound use it (lattice/search/certify.py); None when the objective has no such form.
    level_sizes : tuple of tuple of int, optional
        Per QI, its distinct values at each level (level 0 first): the third figure of Flash's order of nodes
        (ARX's `FLASHStrategy`, lattice/search/flash.py); None: not known, that figure is left out.
    """

    evaluator: Evaluator
    box: Box
    heights: Node
    monotone_feasibility: bool = True
    monotone_loss: bool = True
    loss_is_log: bool = False
    level_costs: tuple[tuple[float, ...], ...] | None = None
    level_sizes: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class Limits:
    """Limits shared by every search.

    Parameters
    ----------
    max_evaluations : int, optional
        The most distinct nodes the search may evaluate (a node asked again is free); None: no such limit
        (KGen and random search then take `DEFAULT_MAX_EVALUATIONS`, see `bounded`).
    time_limit : float, optional
        Seconds after which the search stops (checked before each batch of evaluations).
    seed : int
        Seed of the search's own random stream (searches that draw).
    on_progress : callable, optional
        Called as `on_progress(evaluations, best)` after each batch that evaluated a new node.
    """

    max_evaluations: int | None = None
    time_limit: float | None = None
    seed: int = 0
    on_progress: Callable[[int, Evaluated | None], None] | None = None

    def bounded(self, max_evaluations: int = DEFAULT_MAX_EVALUATIONS) -> Limits:
        """These limits with `max_evaluations` when they give none (a search that never ends on its own).

        Parameters
        ----------
        max_evaluations : int
            The budget to apply when `self.max_evaluations` is None.

        Returns
        -------
        Limits
            `self` if it has a budget, else a copy with `max_evaluations`.
        """
        return self if self.max_evaluations is not None else replace(self, max_evaluations=max_evaluations)


@dataclass
class SearchResult:
    """What a search returns.

    Parameters
    ----------
    algorithm : str
        The search's name.
    best : Evaluated or None
        The best feasible node evaluated (None when none was found).
    minimal : list of Node
        The minimal nodes among the feasible nodes evaluated (for exact searches: the k-minimal nodes).
    evaluations : int
        Distinct nodes evaluated by this search.
    seconds : float
        Wall time of the search.
    stopped : Stopped
        Why it ended (docs/search.md lists the values); `complete` makes an exact search's best the optimum.
    trace : list of dict
        The search's progress records (e.g. one per GA generation).
    params : dict
        The search's parameters and statistics, as reported.
    closest : Evaluated or None
        The evaluated node with the least LOS (then least loss, then smaller node): when nothing feasible was
        found, the node that came closest, i.e. the fewest rows a larger suppression limit must allow.
    infeasible : list of Node
        Every infeasible node evaluated (their down-sets prove lower bounds, lattice/search/certify.py).
    exact : bool
        The search's own declaration (`Search.exact`), copied by `run_search`: with `complete`, `best` is the
        optimum.
    """

    algorithm: str
    best: Any
    minimal: list[Node]
    evaluations: int
    seconds: float
    stopped: Stopped
    trace: list[dict] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    closest: Any = None
    infeasible: list[Node] = field(default_factory=list)
    exact: bool = False

    @property
    def complete(self) -> bool:
        """Whether the search ran to its end."""
        return self.stopped == Stopped.COMPLETE

    @property
    def optimal(self) -> bool:
        """Whether `best` is proved the optimum: an exact search that ran to its end."""
        return self.exact and self.complete and self.best is not None


def run_search(search: Search, problem: Problem, limits: Limits) -> SearchResult:
    """Run `search` and record its declared exactness on the result (what reports and summaries read)."""
    return replace(search.run(problem, limits), exact=bool(getattr(search, "exact", False)))


class Search(Protocol):
    """A search algorithm: `run(problem, limits)` evaluates through a `Budget` and returns a SearchResult.

    Every search declares, once, what its answer guarantees: `exact` (its best is the optimum of the objective
    when it stops `complete`; reports, summaries, experiments and tests read this, never a list of names)
    and `all_minimal` (it also returns every minimal feasible node)."""

    name: str
    exact: ClassVar[bool]
    all_minimal: ClassVar[bool]

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits`.

        Parameters
        ----------
        problem : Problem
            The evaluator, the box and the monotonicity flags.
        limits : Limits
            Evaluation budget, time limit (either stops the search with the best found so far), seed and
            progress callback.

        Returns
        -------
        SearchResult
            The best feasible node evaluated, the minimal ones, why the search stopped; each search's own
            docstring says what its `best` and `minimal` guarantee.
        """
        ...


def objective_key(e: Evaluated) -> tuple:
    """The order of the objective: least loss, then least LOS, then the smaller node."""
    return (e.loss, e.los, tuple(e.node))


def closeness_key(e: Evaluated) -> tuple:
    """The order of closeness to feasibility: least LOS, then least loss, then the smaller node."""
    return (e.los, e.loss, tuple(e.node))


class Budget:
    """One search's view of the problem's evaluator: its distinct evaluations, its stopping, its archive.

    The evaluator owns the evaluations; the Budget keeps the set of nodes this search has evaluated. A node
    this search already counted is free; a node new to it counts once, even if the evaluator had it cached
    from another search. Every stopping condition is checked here: the time limit before each batch, the
    evaluation budget on the batch (the new nodes that fit are evaluated, then the search stops), the whole
    box evaluated after each batch, and the search's own `conditions` when it calls `end_iteration`.

    Parameters
    ----------
    problem : Problem
        The problem searched (its evaluator computes and caches).
    limits : Limits
        `max_evaluations` and `time_limit` become the `MaxEvaluations` and `TimeLimit` conditions;
        `on_progress` is called after each batch that evaluated a new node.
    conditions : sequence of Condition
        A generational search's own conditions (e.g. `Stall`, `Patience`), checked by `end_iteration`.
    stop_when_box_done : bool
        Stop with `complete` once every node of the box is evaluated (nothing is left to learn, the best node
        is the optimum). A search whose answer is not the best node (Datafly's walk) turns it off.

    Raises
    ------
    StopSearch
        From `evaluate_many`, `check_time` and `end_iteration`, with the `Stopped` value of the condition
        that holds; `guarded` turns it into the result.
    """

    def __init__(self, problem: Problem, limits: Limits, conditions: Sequence[Condition] = (),
                 stop_when_box_done: bool = True) -> None:
        self.problem, self.limits = problem, limits
        self.evaluator = problem.evaluator
        self.counted: set[Node] = set()
        self.feasible: list[Node] = []
        self.infeasible: list[Node] = []
        self.best: Evaluated | None = None
        self.closest: Evaluated | None = None
        self.iteration = 0
        self.in_box = 0
        self.start = time.perf_counter()
        self.cap = None if limits.max_evaluations is None else MaxEvaluations(limits.max_evaluations)
        self.clock = None if limits.time_limit is None else TimeLimit(limits.time_limit)
        self.done = BoxDone() if stop_when_box_done else None
        self.conditions = list(conditions)

    @property
    def evaluations(self) -> int:
        """Distinct nodes this search has evaluated."""
        return len(self.counted)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start

    @property
    def box_done(self) -> bool:
        """Whether every node of the box has been evaluated by this search."""
        return self.in_box >= self.problem.box.size

    def progress(self) -> Progress:
        """What the stopping conditions look at, now."""
        best = None if self.best is None else objective_key(self.best)
        return Progress(self.evaluations, self.seconds, self.iteration, best, self.box_done)

    def check_time(self) -> None:
        """Stop (StopSearch("time")) once the time limit has passed; searches whose steps are mostly free
        look-ups call it in their loops too."""
        if self.clock is not None:
            self.clock.check(self.progress())

    def end_iteration(self) -> None:
        """End one iteration of a generational search: stop with the first of its `conditions` that holds
        (every condition is updated)."""
        self.iteration += 1
        stopped = first_reached(self.conditions, self.progress())
        if stopped is not None:
            raise StopSearch(stopped)

    def known(self, node: Node) -> Evaluated | None:
        """The node's evaluation if this search has evaluated it (a free answer), else None."""
        return self._evaluation(node) if node in self.counted else None

    def evaluate(self, node: Node) -> Evaluated:
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes: Iterable[Node]) -> list[Evaluated]:
        """Evaluations of `nodes` in input order; the nodes new to this search go to the evaluator in one batch.

        When the budget cannot cover every new node, the first ones that fit are evaluated and archived and
        StopSearch("budget") is raised. Once every node of the box is evaluated, StopSearch("complete") ends
        the search, whose best node is then the exact optimum (a GA on a small lattice would otherwise go on
        drawing cached nodes until its stall limit).
        """
        nodes = [tuple(int(v) for v in n) for n in nodes]
        self.check_time()
        new = [n for n in dict.fromkeys(nodes) if n not in self.counted]
        fits = new if self.cap is None else new[: self.cap.remaining(self.evaluations)]
        fresh: dict[Node, Evaluated] = {}
        if fits:
            fresh = dict(zip(fits, self.evaluator.evaluate_many(fits)))
            for n, e in fresh.items():
                self._archive(n, e)
            if self.limits.on_progress is not None:
                self.limits.on_progress(self.evaluations, self.best)
            if self.done is not None:
                self.done.check(self.progress())
        if len(fits) < len(new):
            raise StopSearch(self.cap.stopped)  # type: ignore[union-attr]
        return [fresh[n] if n in fresh else self._evaluation(n) for n in nodes]

    def evaluate_in_batches(self, nodes: Iterable[Node], size: int) -> Iterator[list[Evaluated]]:
        """Evaluate `nodes` (any iterable, read lazily) in batches of `size`, so that a parallel evaluator gets
        work to share; yields each batch's evaluations."""
        batch: list[Node] = []
        for node in nodes:
            batch.append(node)
            if len(batch) == size:
                yield self.evaluate_many(batch)
                batch = []
        if batch:
            yield self.evaluate_many(batch)

    def _evaluation(self, node: Node) -> Evaluated:
        """A counted node's evaluation, from the evaluator's cache (computed again, and not counted again, if the
        evaluator no longer holds it)."""
        e = self.evaluator.cached(node)
        return e if e is not None else self.evaluator.evaluate(node)

    def _archive(self, node: Node, e: Evaluated) -> None:
        self.counted.add(node)
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
    """The nodes of `nodes` with no other node of `nodes` below them, sorted.

    By increasing height a node can only lie above one kept before it. The kept nodes are held as bitsets, one
    per (gene, level): bit j of `below[(i, v)]` says that kept node j has gene i at level v or lower, so a node x
    lies above a kept one iff the AND of its genes' bitsets `below[(i, x_i)]` is not empty. Rows are first
    screened a block at a time against the nodes kept before the block; the few that pass are then checked one
    by one (a node kept in the block may lie below a later one). Why: comparing each node with every kept one
    gene by gene made this quadratic in whole int64 rows; after a 600-s certified search at Cargo q = 97 (about
    140,000 evaluations) it ran a further 113 s past the user's time limit.
    """
    if not nodes:
        return []
    array = np.array(sorted(set(nodes), key=lambda n: (sum(n), n)), dtype=np.int64)
    tops = array.max(axis=0) + 1
    offsets = np.concatenate(([0], np.cumsum(tops)[:-1]))
    gene_of = np.repeat(np.arange(array.shape[1]), tops)  # the gene and level of each bitset row
    level_of = np.arange(int(tops.sum())) - np.repeat(offsets, tops)
    below = np.zeros((int(tops.sum()), (len(array) + 63) // 64), dtype=np.uint64)
    kept: list[int] = []

    def covered(rows: np.ndarray) -> np.ndarray:
        """Whether each row lies above a node kept so far."""
        words = (len(kept) + 63) // 64
        if not words:
            return np.zeros(len(rows), dtype=bool)
        return np.bitwise_and.reduce(below[:, :words][offsets + rows], axis=1).any(axis=1)

    start = 0
    while start < len(array):
        block = max(1, min(1024, (1 << 20) // (array.shape[1] * ((len(kept) + 63) // 64 + 1))))  # <= 8 MB gathered
        rows = np.arange(start, min(start + block, len(array)))
        for index in rows[~covered(array[rows])]:
            if not covered(array[index : index + 1])[0]:
                word, bit = divmod(len(kept), 64)
                below[level_of >= array[index][gene_of], word] |= np.uint64(1 << bit)
                kept.append(int(index))
        start += len(rows)
    return sorted(tuple(int(v) for v in array[i]) for i in kept)


def evaluate_ties(budget: Budget, minimal: Sequence[Evaluated]) -> None:
    """Evaluate every node reachable upwards from the minimal nodes of least loss through nodes of that loss.

    For a monotone loss that is not LOG, the optimum is a k-minimal node of least loss or a node above one with
    the same loss and a smaller LOS (the tie rule); a node of higher loss, and everything above it, cannot win.
    Exact searches (best-first, Incognito) call it with the k-minimal nodes' evaluations; each node's upper
    neighbours are evaluated in one batch.
    """
    if not minimal:
        return
    least = min(e.loss for e in minimal)
    queue = deque(tuple(e.node) for e in minimal if e.loss == least)
    seen = set(queue)
    upper = budget.problem.box.upper
    while queue:
        x = queue.popleft()
        ups = [y for i in range(len(x)) if x[i] < upper[i] and (y := x[:i] + (x[i] + 1,) + x[i + 1 :]) not in seen]
        seen.update(ups)
        queue.extend(e.node for e in budget.evaluate_many(ups) if e.loss == least)

# The largest box a search that may evaluate every node accepts without a limit: every evaluation is kept (by
# the evaluator's cache, and the node by the budget: about 1 KB per node measured at 20 to 60 QIs, when the
# budget still kept its own cache), so 2^21 nodes is about 2 GB.
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


def stopped_by(body: Callable[[list[dict]], None], trace: list[dict]) -> Stopped:
    """Run `body(trace)`; why it ended: `complete` when it returns, the value of the StopSearch it raised, or
    `interrupted` on Ctrl-C. The one place where a search's stop becomes its `stopped`."""
    try:
        body(trace)
    except StopSearch as stop:
        return stop.reason
    except KeyboardInterrupt:
        return Stopped.INTERRUPTED
    return Stopped.COMPLETE


def guarded(budget: Budget, algorithm: str, body: Callable[[list[dict]], None],
            params: dict | None = None) -> SearchResult:
    """Run `body(trace)` (see `stopped_by`) and return the budget's result, the best found so far.

    The body appends its progress records (e.g. one per GA generation) to `trace` as it goes.
    """
    trace: list[dict] = []
    stopped = stopped_by(body, trace)
    return budget.result(algorithm, stopped, trace, params)
