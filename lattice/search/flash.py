"""Flash (Kohlmayer et al. 2012), ARX's default optimal search, with ARX's order of checks.

Flash walks the lattice level by level; on each level it takes the nodes whose feasibility is not yet known in
a fixed order (the strategy: least height, then least mean relative level, then most distinct values kept)
and, from each, climbs a greedy path to the top through unknown nodes, always to the first unknown successor
in the same order. Its binary phase searches that path for its lowest feasible node: every check tags a
feasible node's up-set feasible and an infeasible node's down-set infeasible, and the successors of every
infeasible node checked go to a priority queue (the same order) whose nodes start paths of their own. Its
linear phase is a depth-first walk up from a node, through successors in the same order. ARX chooses the
phases by what is monotone (`FLASHAlgorithm.create`), and so does this search:

- feasibility and loss monotone: the binary phase alone. Every k-minimal node is checked (a node is skipped
  only when a check above it was infeasible or one below it feasible), so the best checked node is the
  optimum (ties of equal loss are then followed up, `evaluate_ties`);
- feasibility monotone, loss not: the binary phase, and a linear phase from the lowest feasible node of each
  path that evaluates every node above it not known infeasible (every feasible node lies above a k-minimal
  one, and each k-minimal node is the lowest feasible node of its path);
- feasibility not monotone: the linear phase alone, from every node in level order; with a monotone loss it
  skips the nodes strictly above a feasible node (they cannot cost less), else it evaluates every node.
  (ARX, when k-anonymity is among such models, first runs a binary phase on k-anonymity alone and skips the
  nodes it proves not k-anonymous; an evaluation here answers for all models at once, so this search checks
  those nodes too: the same answer, more checks.)

ARX's "practical monotonicity" (`PracticalFlash`) treats feasibility and loss as monotone whatever the model:
the binary phase alone, with tagging both ways. On a model that is not monotone (entropy or recursive
l-diversity, t-closeness with suppression) that is a heuristic: a node tagged feasible is never checked and
may break the model (it is never chosen: the answer is the best node checked), and a feasible node tagged
infeasible is never found. It reproduces ARX's answers where ARX runs so (its JUnit cases flagged
`practical`), and is not declared exact.

What is ARX's, in detail, so that the order of checks is ARX's: the nodes of a level are taken in ARX's
identifier order (the last QI most significant) and stably sorted by the strategy, whose three figures are
computed as ARX computes them (the same floating-point operations); a node's successors are listed raising
the first QI first, then stably sorted; the queue is Java's binary heap (`JavaHeap`), whose ties fall as
Java's fall. Where ARX first checks the bottom node only to cache it, this search does not (that check
decides nothing in ARX). ARX's pruning of nodes by lower bounds on the loss (off in ARX's monotone case) is
not done: it saves checks, not answers. Among checked nodes of equal loss the budget keeps the least LOS, then
the smaller node (ARX: the first checked of least height).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lattice.node import Node, height
from lattice.search.base import (
    EVALUATE_ALL_MAX_NODES,
    Budget,
    Limits,
    Problem,
    SearchResult,
    evaluate_ties,
    guarded,
    minimal_nodes,
    refuse_box_beyond,
    require_limit_beyond,
)
from lattice.search.ola import level_nodes
from lattice.search.tags import FEASIBLE, INFEASIBLE, DenseTags, classify

PRACTICAL = "practical monotonicity assumed"  # the words the report and summary show for the heuristic


def strategy_keys(top: Sequence[int], level_sizes: Sequence[Sequence[int]] | None) -> Callable[[Node], tuple]:
    """ARX's order of nodes (`FLASHStrategy`): a node's (height / the top's height, mean of level / the top's
    level, 1 - mean share of distinct values kept), smaller first.

    `top` is the top of the searched lattice (ARX's solution space: the hierarchies' heights, or the maximum
    levels where they are limited, as `--max-level` limits kgen's box).

    Computed with ARX's floating-point operations in ARX's order, so that nodes tie exactly where they tie in
    ARX. A figure that is NaN in ARX for every node (a QI of height 0 divides 0 by 0) compares equal there, so
    it is 0 here. `level_sizes`: per QI, its distinct values at each level (None: the third figure is 0).
    """
    total = float(sum(top))
    cache: dict[Node, tuple] = {}

    def key(node: Node) -> tuple:
        found = cache.get(node)
        if found is not None:
            return found
        level = float(sum(node)) / total if total else math.nan
        prec = distinct = 0.0
        for i, x in enumerate(node):
            prec += float(x) / float(top[i]) if top[i] else math.nan
            if level_sizes is not None:
                distinct += float(level_sizes[i][x]) / float(level_sizes[i][0])
        n = float(len(node))
        figures = (level, prec / n, 1.0 - distinct / n if level_sizes is not None else 0.0)
        found = cache[node] = tuple(0.0 if math.isnan(f) else f for f in figures)
        return found

    return key


class JavaHeap:
    """`java.util.PriorityQueue` of nodes under a key: the same array heap, so that equal keys leave in Java's
    order (ARX's queue of Flash's path starts). Duplicates are kept, as Java keeps them."""

    def __init__(self, key: Callable[[Node], tuple]) -> None:
        self.key = key
        self.items: list[Node] = []

    def __len__(self) -> int:
        return len(self.items)

    def push(self, node: Node) -> None:
        """Java's `offer`: append, then sift up while strictly smaller than the parent."""
        items, key = self.items, self.key
        items.append(node)
        k, x = len(items) - 1, key(node)
        while k > 0:
            parent = (k - 1) >> 1
            if x >= key(items[parent]):
                break
            items[k] = items[parent]
            k = parent
        items[k] = node

    def pop(self) -> Node:
        """Java's `poll`: the root; the last item sifts down from the root to the smaller child (the left one
        on a tie) while strictly larger than it."""
        items, key = self.items, self.key
        result, last = items[0], items.pop()
        n = len(items)
        if n:
            k, x, half = 0, key(last), n >> 1
            while k < half:
                child = 2 * k + 1
                if child + 1 < n and key(items[child]) > key(items[child + 1]):
                    child += 1
                if x <= key(items[child]):
                    break
                items[k] = items[child]
                k = child
            items[k] = last
        return result


@dataclass(frozen=True)
class Flash:
    """Flash with ARX's order of checks; exact when it completes (see the module doc).

    Parameters
    ----------
    max_nodes : int
        The largest box it accepts (its tags, visits and prunings are one byte per node each).
    name : str
        The algorithm's name in results and reports.
    """

    max_nodes: int = 1 << 24
    name: str = "flash"
    practical_monotonicity: ClassVar[bool] = False  # ARX's heuristic: `PracticalFlash`
    exact: ClassVar[bool] = True  # its best is the optimum of the objective when it stops `complete`
    all_minimal: ClassVar[bool] = True  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). `params["mode"]` names the phases ARX's rule chose;
        `trace`: one record of checks, tag hits and paths."""
        refuse_box_beyond(self.name, problem.box, self.max_nodes)
        budget = Budget(problem, limits)
        walk = FlashWalk(budget, self.practical_monotonicity)
        if walk.linear:  # the linear phase may evaluate (and keep) most of the box, as exhaustive search does
            require_limit_beyond(self.name, problem, limits, EVALUATE_ALL_MAX_NODES,
                                 "evaluates every node it cannot rule out when the model or the loss is not monotone")
        params = {"mode": walk.mode, "practical_monotonicity": self.practical_monotonicity}
        if self.practical_monotonicity:
            params["heuristic"] = PRACTICAL

        def body(trace: list[dict]) -> None:
            try:
                walk.run()
                if self.exact and walk.monotone_loss:  # a node above a k-minimal one, of equal loss, may win on LOS
                    evaluate_ties(budget, budget.evaluate_many(walk.minimal()))
            finally:
                trace.append({"evaluations": budget.evaluations, **walk.stats, "seconds": budget.seconds})

        return guarded(budget, self.name, body, params)


@dataclass(frozen=True)
class PracticalFlash(Flash):
    """Flash under ARX's practical monotonicity: every model and loss treated as monotone (the binary phase
    alone, tagging both ways). A heuristic unless the model and the loss are monotone: not declared exact."""

    practical_monotonicity: ClassVar[bool] = True
    exact: ClassVar[bool] = False
    all_minimal: ClassVar[bool] = False


class FlashWalk:
    """One run of Flash over a budget's box: ARX's phases as the problem's flags (or practical monotonicity)
    choose them, with their tags. `run` walks; `minimal` gives the minimal feasible nodes checked."""

    def __init__(self, budget: Budget, practical: bool) -> None:
        problem = budget.problem
        self.budget, self.box = budget, problem.box
        self.binary = practical or problem.monotone_feasibility  # anonymity tags are predictive
        self.monotone_loss = practical or problem.monotone_loss
        self.linear = not (self.binary and self.monotone_loss)
        self.key = strategy_keys(self.box.upper, problem.level_sizes)
        self.tags = DenseTags(self.box)  # feasible up-sets / infeasible down-sets (binary), checked nodes otherwise
        shape = self.tags.shape
        self.visited = np.zeros(shape, dtype=bool)  # the linear phase's own visits
        self.pruned = np.zeros(shape, dtype=bool)  # strictly above a feasible node, loss monotone (linear only)
        self.successors: dict[Node, list[Node]] = {}
        self.stats = {"checks": 0, "tag_hits": 0, "paths": 0}
        self.mode = ("binary" if not self.linear else "binary, then linear above each path's lowest feasible node"
                     if self.binary else "linear, skipping nodes above a feasible one" if self.monotone_loss
                     else "linear, every node")

    def run(self) -> None:
        """ARX's outer loop: level by level, each unknown node in order starts the binary or the linear phase."""
        queue = JavaHeap(self.key)
        for level in range(height(self.box.lower), height(self.box.upper) + 1):
            for node in self.level_order(level):
                self.budget.check_time()
                if self.binary:
                    self.binary_phase(node, queue)
                else:
                    self.linear_phase(node)

    def level_order(self, level: int) -> list[Node]:
        """The nodes of a level not yet skipped, in ARX's identifier order (the last QI most significant),
        stably sorted by the strategy."""
        lower, upper = self.box.lower, self.box.upper
        ranges = [b - a for a, b in zip(lower, upper)]
        nodes = (node[::-1] for node in level_nodes(lower[::-1], ranges[::-1], level - height(lower)))
        skip = self.binary_skip if self.binary else self.linear_skip
        return sorted((n for n in nodes if not skip(n)), key=self.key)

    def sorted_successors(self, node: Node) -> list[Node]:
        """The upper neighbours in the box, the first QI raised first, stably sorted by the strategy."""
        found = self.successors.get(node)
        if found is None:
            upper = self.box.upper
            ups = [node[:i] + (x + 1,) + node[i + 1 :] for i, x in enumerate(node) if x < upper[i]]
            found = self.successors[node] = sorted(ups, key=self.key)
        return found

    def binary_skip(self, node: Node) -> bool:
        """Whether the binary phase skips a node: its feasibility is known (checked or tagged)."""
        known = self.tags.get(node) != 0
        self.stats["tag_hits"] += known
        return known

    def linear_skip(self, node: Node) -> bool:
        """Whether the linear phase skips a node: visited; with predictive tags, tagged infeasible; without,
        checked, or strictly above a feasible node under a monotone loss."""
        index = self.tags.index(node)
        if self.visited[index]:
            return True
        if self.binary:
            return self.tags.get(node) == INFEASIBLE
        return self.tags.get(node) != 0 or bool(self.pruned[index])

    def check(self, node: Node) -> bool:
        """Evaluate a node (once) and tag it: predictively in the binary modes, itself alone otherwise."""
        self.stats["checks"] += 1
        if self.binary:
            return classify(self.budget, self.tags, node)
        feasible = bool(self.budget.evaluate(node).feasible)
        self.tags.array[self.tags.index(node)] = FEASIBLE if feasible else INFEASIBLE
        return feasible

    def binary_phase(self, start: Node, queue: JavaHeap) -> None:
        """ARX's `binarySearch`: paths from `start` and from every queued successor of an infeasible check."""
        queue.push(start)
        while queue:
            self.budget.check_time()
            node = queue.pop()
            if self.binary_skip(node):
                continue
            self.stats["paths"] += 1
            lowest = self.check_path(self.path(node), queue)
            if self.linear and lowest is not None:
                self.linear_phase(lowest)

    def path(self, node: Node) -> list[Node]:
        """ARX's `findPath`: from `node` up through the first successor not skipped, until there is none."""
        path = [node]
        while True:
            up = next((s for s in self.sorted_successors(path[-1]) if not self.binary_skip(s)), None)
            if up is None:
                return path
            path.append(up)

    def check_path(self, path: list[Node], queue: JavaHeap) -> Node | None:
        """ARX's `checkPath`: binary search of the path for its lowest feasible node; an infeasible check queues
        its successors not skipped. A node skipped on the way (tagged meanwhile) sends the search lower."""
        low, high, lowest = 0, len(path) - 1, None
        while low <= high:
            mid = (low + high) // 2
            node = path[mid]
            if self.binary_skip(node):
                high = mid - 1
                continue
            if self.check(node):
                lowest, high = node, mid - 1
            else:
                for up in self.sorted_successors(node):
                    if not self.binary_skip(up):
                        queue.push(up)
                low = mid + 1
        return lowest

    def linear_phase(self, start: Node) -> None:
        """ARX's `linearSearch`: a depth-first walk up from `start` through successors in order, checking each
        node it enters (ARX's recursion, on an explicit stack)."""
        if not self.enter(start):
            return
        stack: list[Iterator[Node]] = [iter(self.sorted_successors(start))]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
            elif self.enter(child):
                self.budget.check_time()
                stack.append(iter(self.sorted_successors(child)))

    def enter(self, node: Node) -> bool:
        """Visit a node of the linear phase unless it is skipped: evaluate it if it is not yet (with predictive
        tags only feasible nodes are entered), and under a monotone loss prune what lies strictly above a
        feasible one. Returns whether it was entered."""
        if self.linear_skip(node):
            return False
        index = self.tags.index(node)
        self.visited[index] = True
        if self.binary:
            if self.budget.known(node) is None:
                self.stats["checks"] += 1
                self.budget.evaluate(node)
            return True
        if self.check(node) and self.monotone_loss:
            kept = self.pruned[index]
            self.pruned[tuple(slice(i, None) for i in index)] = True
            self.pruned[index] = kept
        return True

    def minimal(self) -> list[Node]:
        """The minimal feasible nodes among those checked (the k-minimal nodes when the walk is exact)."""
        return minimal_nodes(self.budget.feasible)
