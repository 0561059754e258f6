"""OLA (El Emam et al. 2009): exact search by recursive binary search over sub-lattices with predictive tagging.

KMIN(B, T), with T known feasible: for every node N at the middle height of the sub-lattice [B, T], classify
N (by its tag, else by evaluating it and tagging: a feasible node tags every node above it feasible, an
infeasible one every node below it infeasible) and recurse into [B, N] if N is feasible, else into [N, T].
A two-node sub-lattice yields B if it is feasible, else T. Every k-minimal node (feasible, no feasible node
below it) is reached this way and is evaluated, so the minimal nodes of the evaluated feasible nodes are
exactly the k-minimal nodes, and for a loss that never decreases when a level rises the best evaluated
node is the optimum. Without monotone feasibility tagging is unsound and OLA evaluates the whole box;
without a monotone loss it also evaluates every node not known infeasible.

A box of more than `max_nodes` nodes (the largest whose tags fit one array) is refused unless a time limit
bounds the run: the number of k-minimal nodes, and with it OLA's work, can grow with the box (60 binary QIs:
2^60 nodes), and most of that work is look-ups of tagged nodes, which an evaluation budget does not count
(with `max_evaluations=40` alone, OLA on 60 binary QIs had made 21 evaluations and 90,112 tag look-ups after
10 s, and ran on). Without monotone feasibility it evaluates every node, and the cap is exhaustive search's
(either limit). Under a time limit, larger boxes keep sparse tags.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from lattice.node import Node, height
from lattice.search.base import (
    EVALUATE_ALL_MAX_NODES,
    Budget,
    Limits,
    Problem,
    SearchResult,
    guarded,
    require_limit_beyond,
)
from lattice.search.tags import FEASIBLE, INFEASIBLE, DenseTags, SparseTags, classify, make_tags, memo_entries


def level_nodes(base: Sequence[int], ranges: Sequence[int], h: int) -> Iterator[Node]:
    """The nodes base + d with 0 <= d_i <= ranges_i and sum(d) = h, in lexicographic order of d."""
    q = len(ranges)
    suffix = [0] * (q + 1)
    for i in range(q - 1, -1, -1):
        suffix[i] = suffix[i + 1] + ranges[i]
    if not 0 <= h <= suffix[0]:
        return
    x = list(base)

    def fill(i: int, rest: int) -> Iterator[Node]:
        if i == q - 1:
            x[i] = base[i] + rest
            yield tuple(x)
            return
        for d in range(max(0, rest - suffix[i + 1]), min(ranges[i], rest) + 1):
            x[i] = base[i] + d
            yield from fill(i + 1, rest - d)

    if q == 0:
        yield ()
    else:
        yield from fill(0, h)


@dataclass(frozen=True)
class OLA:
    """Optimal Lattice Anonymization over the problem's box; exact when it completes (see the module doc).

    Parameters
    ----------
    dense_limit : int
        Boxes with at most this many nodes keep their tags in one array (one byte per node), larger ones as
        lists of tagging nodes.
    max_nodes : int
        The largest box it accepts without a `time_limit`.
    batch : int
        Nodes per evaluation batch when it evaluates the box node by node (feasibility or loss not monotone).
    name : str
        The algorithm's name in results and reports.
    """

    dense_limit: int = 1 << 26
    max_nodes: int = 1 << 26
    batch: int = 256
    name: str = "ola"
    exact: ClassVar[bool] = True  # its best is the optimum of the objective when it stops `complete`
    all_minimal: ClassVar[bool] = True  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: `minimal`: every k-minimal node (with monotone
        feasibility); `best`: the optimum when `stopped` is `complete`; `trace`: one record of nodes visited, tag
        hits and pruned sub-lattices.
        """
        if problem.monotone_feasibility:
            require_limit_beyond(self.name, problem, limits, self.max_nodes,
                                 "may have to visit a large share of them", time_only=True)
        else:
            require_limit_beyond(self.name, problem, limits, min(self.max_nodes, EVALUATE_ALL_MAX_NODES),
                                 "evaluates every node when feasibility is not monotone and keeps each evaluation")
        budget = Budget(problem, limits)
        box = problem.box
        tagging = problem.monotone_feasibility
        mode = "tagging" if tagging else "whole box (feasibility not monotone)"
        if tagging and not problem.monotone_loss:
            mode = "tagging, then every node not tagged infeasible (loss not monotone)"
        params = {"dense_limit": self.dense_limit, "max_nodes": self.max_nodes, "predictive_tagging": tagging,
                  "mode": mode}
        stats = {"visited": 0, "tag_hits": 0, "pruned": 0}

        def body(trace: list[dict]) -> None:
            try:
                if not tagging:
                    for _ in budget.evaluate_in_batches(box.nodes(), self.batch):
                        pass
                    return
                tags = make_tags(box, self.dense_limit)
                self._search(budget, tags, stats)
                if not problem.monotone_loss:
                    candidates = (node for node in box.nodes() if tags.get(node) != INFEASIBLE)
                    for _ in budget.evaluate_in_batches(candidates, self.batch):
                        pass
            finally:
                trace.append({"evaluations": budget.evaluations, "visited": stats["visited"],
                              "tag_hits": stats["tag_hits"], "pruned": stats["pruned"],
                              "feasible": len(budget.feasible),
                              "seconds": budget.seconds})

        return guarded(budget, self.name, body, params)

    def _search(self, budget: Budget, tags: DenseTags | SparseTags, stats: dict) -> None:
        box = budget.problem.box

        def visit(node: Node) -> bool:
            stats["visited"] += 1
            if stats["visited"] % 4096 == 0:
                budget.check_time()
            return classify(budget, tags, node, stats)

        done: set[tuple[Node, Node]] = set()
        done_limit = memo_entries(2 * box.dims)  # a shortcut only: clearing it costs repeated work, not exactness
        dense = isinstance(tags, DenseTags)

        def kmin(bottom: Node, top: Node) -> None:
            # Shortcuts that keep OLA exact: a sub-lattice searched before holds no k-minimal node that was not
            # evaluated then; a bottom tagged feasible is either k-minimal (so its tag is its own evaluation)
            # or has a feasible node below it, and then no node of [bottom, top] is k-minimal; and when every
            # node of the sub-lattice is tagged, each k-minimal one carries its own evaluation's tag.
            if (bottom, top) in done:
                return
            if len(done) >= done_limit:
                done.clear()
            done.add((bottom, top))
            if tags.get(bottom) == FEASIBLE or (dense and not tags.undecided(bottom, top)):
                stats["pruned"] += 1
                return
            span = height(top) - height(bottom)
            if span > 1:
                ranges = [t - b for b, t in zip(bottom, top)]
                for node in level_nodes(bottom, ranges, span // 2):
                    if visit(node):
                        kmin(bottom, node)
                    else:
                        kmin(node, top)
            elif span == 1:
                visit(bottom)  # a feasible bottom is a candidate; otherwise the (feasible) top is

        if not visit(box.upper):
            return  # monotone: nothing in the box is feasible
        if box.lower == box.upper:
            return
        kmin(box.lower, box.upper)

