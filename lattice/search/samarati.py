"""Samarati's algorithm (Samarati 2001): binary search on the height of the distance-vector lattice.

Every path from the bottom to the top of the lattice meets a lowest feasible node, and with monotone
feasibility (going up never needs more suppression) a height with no feasible node has none below it
either. So the lowest height with a node that is k-anonymous within the suppression limit (MaxSup) is found
by binary search over heights: probe the middle height of the open range, go down when some node there is
feasible, up otherwise. Every feasible node of that height is a k-minimal generalization (nothing feasible
lies below it), and they are exactly the k-minimal generalizations of minimal height. The search returns
them all in `minimal` and, as `best`, the preferred one by the objective (the tie rule of
`base.objective_key`), not the best node met on the way (a higher probe may have found a lower loss).

A probe evaluates the height's nodes in batches (so a parallel evaluator shares them) and stops at the first
batch with a feasible node; infeasible nodes met tag their down-sets, which later, lower probes skip. Samarati
tests a height node by node; by default (`climb`) each infeasible node found is first raised to a maximal
infeasible node (a binary search on a chain of untagged nodes above it), whose down-set tag then covers much
of the height and of every lower one: the same answer with far fewer evaluations (Cargo 2000, q = 10: 1,405
instead of 37,488; `climb=False, batch=256` is the plain level test). Without
monotone feasibility the binary search is unsound; heights are then scanned upwards from the bottom, which
still finds the lowest feasible height. Samarati's distance-vector matrix, which she uses to count outliers
without building generalized tables, is not needed: the evaluator's class counting replaces it (the tests
check the two agree on the worked example of her slides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lattice.node import Node, height
from lattice.search.base import (
    EVALUATE_ALL_MAX_NODES,
    Budget,
    Evaluated,
    Limits,
    Problem,
    SearchResult,
    Stopped,
    guarded,
    objective_key,
    require_limit_beyond,
)
from lattice.search.ola import level_nodes
from lattice.search.tags import FEASIBLE, INFEASIBLE, classify, make_tags, unknown_chain


@dataclass(frozen=True)
class Samarati:
    """Binary search for the lowest feasible height (see the module doc).

    Parameters
    ----------
    batch : int
        Nodes per evaluation batch of a probe.
    dense_limit : int
        Boxes up to this size keep their tags in an array.
    climb : bool
        Raise each infeasible node found to a maximal infeasible one (see the module doc).
    name : str
        The algorithm's name in results and reports.
    """

    batch: int = 16
    dense_limit: int = 1 << 26
    climb: bool = True
    name: str = "samarati"
    exact: ClassVar[bool] = False  # a heuristic: its best is not proved optimal
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: When `stopped` is `complete`: `minimal`, every
        k-minimal node of the lowest feasible height; `best`, the one the objective prefers (not the LOG optimum in
        general); `params["probes"]`, the heights probed.
        """
        require_limit_beyond(self.name, problem, limits, EVALUATE_ALL_MAX_NODES,
                             "evaluates every node of the heights it probes")
        run = SamaratiRun(self, problem, limits)
        result = guarded(run.budget, self.name, run.body, run.params)
        return run.finish(result)


class SamaratiRun:
    """The state of one Samarati search (budget, tags, probes), advanced in named steps: `body` (the binary
    search on heights, or the upward scan), `probe` (one height), `flush` (one batch of a probe), `climb` (an
    infeasible node raised to a maximal one) and `finish` (every k-minimal node of the lowest height)."""

    def __init__(self, search: Samarati, problem: Problem, limits: Limits) -> None:
        self.search = search
        self.budget = Budget(problem, limits)
        self.box = box = problem.box
        self.monotone = problem.monotone_feasibility
        mode = "binary search on heights" if self.monotone else "heights scanned upwards (feasibility not monotone)"
        self.probes: list[dict] = []
        self.params = {"batch": search.batch, "climb": search.climb, "mode": mode, "probes": self.probes}
        self.low, self.high = height(box.lower), height(box.upper)
        self.ranges = [b - a for a, b in zip(box.lower, box.upper)]
        self.tags = make_tags(box, search.dense_limit) if self.monotone else None

    def climb(self, node: Node) -> None:
        """Raise an infeasible node to a maximal infeasible one, so that its down-set tag covers as much of
        the lower heights as one node can: walk up through untagged nodes (raising the relatively least
        raised QI), binary-search the walk for its last infeasible node, and repeat from there."""
        tags = self.tags
        assert tags is not None
        start = node
        while True:
            path = unknown_chain(start, self.box, tags)[1:]
            lo, hi = -1, len(path)  # path[lo] infeasible (start when -1), path[hi] feasible
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if classify(self.budget, tags, path[mid]) else (mid, hi)
            if lo < 0:
                return
            start = path[lo]

    def flush(self, chunk: list[Node]) -> bool:
        """Evaluate one batch of a probe (tag it, climb its infeasible nodes); whether a node is feasible."""
        results = self.budget.evaluate_many(chunk)
        chunk.clear()
        tags = self.tags
        if tags is not None:
            for e in results:
                tags.tag(e.node, e.feasible)
            if self.search.climb:
                for e in results:
                    if not e.feasible:
                        self.climb(e.node)
        return any(e.feasible for e in results)

    def probe(self, h: int, whole: bool) -> bool:
        """Whether height h has a feasible node (every node evaluated when `whole`)."""
        found = False
        chunk: list[Node] = []
        tags, budget = self.tags, self.budget
        for count, node in enumerate(level_nodes(self.box.lower, self.ranges, h - self.low)):
            if count % 4096 == 4095:
                budget.check_time()  # most nodes of a large level may be skipped by their tags
            tag = tags.get(node) if tags is not None else None
            if tag == INFEASIBLE:
                continue
            if tag == FEASIBLE and not whole:
                found = True
                break
            chunk.append(node)
            if len(chunk) == self.search.batch:
                found = self.flush(chunk) or found
                if found and not whole:
                    break
        if chunk and (whole or not found):
            found = self.flush(chunk) or found
        self.probes.append({"height": h, "feasible": found, "evaluations": budget.evaluations})
        return found

    def body(self, trace: list[dict]) -> None:
        """The binary search on heights (monotone feasibility), else the upward scan."""
        if self.monotone:
            if not self.probe(self.high, whole=False):
                return  # the top is infeasible, so is everything
            lo, hi = self.low, self.high
            while lo < hi:
                mid = (lo + hi) // 2
                if self.probe(mid, whole=False):
                    hi = mid
                else:
                    lo = mid + 1
            self.probe(hi, whole=True)
        else:
            for h in range(self.low, self.high + 1):
                if self.probe(h, whole=True):
                    return
        trace.append({"evaluations": self.budget.evaluations, "seconds": self.budget.seconds})

    def finish(self, result: SearchResult) -> SearchResult:
        """A complete search's answer: every feasible node of the lowest height, the objective's choice."""
        budget = self.budget
        if result.stopped == Stopped.COMPLETE and budget.feasible:
            lowest = min(height(n) for n in budget.feasible)
            found: list[Evaluated] = [budget.known(n) for n in budget.feasible if height(n) == lowest]
            result.minimal = sorted(e.node for e in found)
            result.best = min(found, key=objective_key)
            self.params["height"] = lowest
        return result
