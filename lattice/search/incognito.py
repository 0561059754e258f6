"""Incognito (LeFevre, DeWitt, Ramakrishnan 2005): every k-anonymous full-domain generalization, bottom-up
over subsets of the quasi-identifiers.

Subset property: a table k-anonymous on a set of QIs is k-anonymous on every subset. Here the table on a
subset S is the node with the QIs outside S at their top level (their coarsest generalization), which is a
generalization of every node that agrees with it on S: with monotone feasibility a node can be feasible only
if, for every QI i of S, the node with i raised to its top is feasible. That is the paper's candidate
pruning, and it holds with suppression within a limit too, because raising a level never needs more
suppression. (When a top level holds one value, as in most hierarchies, that node is exactly the projection
onto S; when it holds several, the test is weaker but still sound.)

Iteration i takes the subsets of i QIs whose every (i-1)-subset still has a feasible node (the a-priori
join), and in each subset S the nodes whose QIs of S are all below their top (a node with a QI of S at its
top belongs to a smaller subset, already decided). A node is a candidate when every such raised node is
feasible; candidates are visited bottom-up, one height at a time (nodes of a height are incomparable, so a
height is one batch for the evaluator, and the roll-up cache answers from the classes of nodes below):
a candidate above a feasible one is marked feasible without an evaluation (the generalization property),
the others are evaluated. When every subset is done, every feasible node of the box is tagged feasible
and every k-minimal node was evaluated, so the minimal set is exact, and so is the optimum: for LOG it is
a minimal node; for another monotone loss the nodes of equal loss above the best minimal ones are
evaluated too (ties go to LOS); for a loss that is not monotone every feasible node is evaluated.

Without monotone feasibility the subset property fails; the search then evaluates the whole box (like OLA)
and says so in its parameters.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lattice.search.base import (
    Budget,
    Limits,
    Problem,
    SearchResult,
    evaluate_ties,
    guarded,
    minimal_nodes,
    refuse_box_beyond,
)
from lattice.search.tags import FEASIBLE, UNKNOWN, DenseTags


@dataclass(frozen=True)
class Incognito:
    """Incognito with the subset property and the generalization property (see the module doc).

    Parameters
    ----------
    max_nodes : int
        The largest box it accepts, whatever the limits (it keeps one tag byte per node).
    batch : int
        The most nodes per evaluation batch.
    name : str
        The algorithm's name in results and reports.
    """

    max_nodes: int = 1 << 25
    batch: int = 4096
    name: str = "incognito"
    exact: ClassVar[bool] = True  # its best is the optimum of the objective when it stops `complete`
    all_minimal: ClassVar[bool] = True  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: `minimal`: every k-minimal node and `best`: the
        optimum for any metric, when `stopped` is `complete`.
        """
        box = problem.box
        refuse_box_beyond(self.name, box, self.max_nodes)
        budget = Budget(problem, limits)
        monotone = problem.monotone_feasibility
        if not monotone:
            mode = "whole box (feasibility not monotone: the subset property does not hold)"
        elif problem.loss_is_log:
            mode = "subsets bottom-up; optimum among the k-minimal nodes (LOG)"
        elif problem.monotone_loss:
            mode = "subsets bottom-up; k-minimal nodes, then their ties (loss not LOG)"
        else:
            mode = "subsets bottom-up; then every feasible node (loss not monotone)"
        stats = {"subsets": 0, "candidates": 0, "marked": 0}
        params = {"mode": mode, "subset_property": monotone, "batch": self.batch}

        def body(trace: list[dict]) -> None:
            try:
                if not monotone:
                    for _ in budget.evaluate_in_batches(box.nodes(), self.batch):
                        pass
                    return
                tags = DenseTags(box)
                if self._search(budget, tags, stats):
                    self._optimum(problem, budget, tags)
            finally:
                trace.append({"evaluations": budget.evaluations, **stats, "seconds": budget.seconds})

        return guarded(budget, self.name, body, params)

    def _search(self, budget: Budget, tags: DenseTags, stats: dict) -> bool:
        """Tag every feasible node of the box feasible; False when even the top is infeasible."""
        box = budget.problem.box
        top = box.upper
        feasible = budget.evaluate(top).feasible
        tags.tag(top, feasible)
        if not feasible:
            return False
        free = [i for i in range(box.dims) if box.lower[i] < box.upper[i]]
        alive: set[tuple[int, ...]] = {()}
        layer: list[tuple[int, ...]] = [()]
        for size in range(1, len(free) + 1):
            if size == 1:
                subsets = [(i,) for i in free]
            else:  # a-priori join: two live (size-1)-subsets with the same first size-2 QIs
                subsets = [a + (b[-1],) for a, b in itertools.combinations(layer, 2) if a[:-1] == b[:-1]]
                subsets = [s for s in subsets
                           if all(s[:j] + s[j + 1 :] in alive for j in range(size))]
            layer = []
            for subset in subsets:
                budget.check_time()
                stats["subsets"] += 1
                if self._subset(subset, budget, tags, stats):
                    layer.append(subset)
            alive.update(layer)
            if not layer:
                break
        return True

    def _subset(self, subset: tuple[int, ...], budget: Budget, tags: DenseTags, stats: dict) -> bool:
        """Decide the nodes of one subset (its QIs below their top, the others at it); whether any is feasible."""
        box = budget.problem.box
        tops = [b - a for a, b in zip(box.lower, box.upper)]  # offsets of the top levels in the tag array

        def index(raised: int | None) -> tuple:
            return tuple((tops[i] if i == raised else slice(0, tops[i])) if i in subset else tops[i]
                         for i in range(box.dims))

        region = tags.array[index(None)]  # a view: tagging the box updates it
        candidate = region == UNKNOWN
        for axis, i in enumerate(subset):  # the subset property: each node with one QI raised to its top
            candidate &= np.expand_dims(tags.array[index(i)] == FEASIBLE, axis)
        stats["candidates"] += int(candidate.sum())
        heights = np.indices(region.shape).sum(axis=0)
        base = list(box.upper)
        for h in np.unique(heights[candidate]):
            todo = np.argwhere(candidate & (heights == h) & (region == UNKNOWN))
            stats["marked"] += int((candidate & (heights == h) & (region == FEASIBLE)).sum())
            nodes = []
            for offsets in todo:
                node = list(base)
                for i, o in zip(subset, offsets):
                    node[i] = box.lower[i] + int(o)
                nodes.append(tuple(node))
            for results in budget.evaluate_in_batches(nodes, self.batch):
                for e in results:
                    tags.tag(e.node, e.feasible)
        return bool((region == FEASIBLE).any())

    def _optimum(self, problem: Problem, budget: Budget, tags: DenseTags) -> None:
        """Make the budget's best the exact optimum (see the module doc)."""
        if problem.loss_is_log:
            return
        if not problem.monotone_loss:
            feasible = (tags.node(int(i)) for i in np.flatnonzero(tags.flat == FEASIBLE))
            for _ in budget.evaluate_in_batches(feasible, self.batch):
                pass
            return
        evaluate_ties(budget, [budget.known(n) for n in minimal_nodes(budget.feasible)])
