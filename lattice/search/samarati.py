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
from lattice.search.base import Budget, Evaluated, Limits, Problem, SearchResult, Stopped, guarded, objective_key
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
        budget = Budget(problem, limits)
        box = problem.box
        monotone = problem.monotone_feasibility
        mode = "binary search on heights" if monotone else "heights scanned upwards (feasibility not monotone)"
        probes: list[dict] = []
        params = {"batch": self.batch, "climb": self.climb, "mode": mode, "probes": probes}
        low, high = height(box.lower), height(box.upper)
        ranges = [b - a for a, b in zip(box.lower, box.upper)]
        tags = make_tags(box, self.dense_limit) if monotone else None

        def climb(node: Node) -> None:
            """Raise an infeasible node to a maximal infeasible one, so that its down-set tag covers as much of
            the lower heights as one node can: walk up through untagged nodes (raising the relatively least
            raised QI), binary-search the walk for its last infeasible node, and repeat from there."""
            assert tags is not None
            start = node
            while True:
                path = unknown_chain(start, box, tags)[1:]
                lo, hi = -1, len(path)  # path[lo] infeasible (start when -1), path[hi] feasible
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (lo, mid) if classify(budget, tags, path[mid]) else (mid, hi)
                if lo < 0:
                    return
                start = path[lo]

        def probe(h: int, whole: bool) -> bool:
            """Whether height h has a feasible node (every node evaluated when `whole`)."""
            found = False
            chunk: list[Node] = []

            def flush() -> bool:
                results = budget.evaluate_many(chunk)
                chunk.clear()
                for e in results:
                    if tags is not None:
                        tags.tag(e.node, e.feasible)
                if self.climb and tags is not None:
                    for e in results:
                        if not e.feasible:
                            climb(e.node)
                return any(e.feasible for e in results)

            for count, node in enumerate(level_nodes(box.lower, ranges, h - low)):
                if count % 4096 == 4095:
                    budget.check_time()  # most nodes of a large level may be skipped by their tags
                tag = tags.get(node) if tags is not None else None
                if tag == INFEASIBLE:
                    continue
                if tag == FEASIBLE and not whole:
                    found = True
                    break
                chunk.append(node)
                if len(chunk) == self.batch:
                    found = flush() or found
                    if found and not whole:
                        break
            if chunk and (whole or not found):
                found = flush() or found
            probes.append({"height": h, "feasible": found, "evaluations": budget.evaluations})
            return found

        def body(trace: list[dict]) -> None:
            if monotone:
                if not probe(high, whole=False):
                    return  # the top is infeasible, so is everything
                lo, hi = low, high
                while lo < hi:
                    mid = (lo + hi) // 2
                    if probe(mid, whole=False):
                        hi = mid
                    else:
                        lo = mid + 1
                probe(hi, whole=True)
            else:
                for h in range(low, high + 1):
                    if probe(h, whole=True):
                        return
            trace.append({"evaluations": budget.evaluations, "seconds": budget.seconds})

        result = guarded(budget, self.name, body, params)
        if result.stopped == Stopped.COMPLETE and budget.feasible:
            lowest = min(height(n) for n in budget.feasible)
            found: list[Evaluated] = [budget.known(n) for n in budget.feasible if height(n) == lowest]
            result.minimal = sorted(e.node for e in found)
            result.best = min(found, key=objective_key)
            params["height"] = lowest
        return result

