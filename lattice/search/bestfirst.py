"""Best-first exact search: nodes in increasing LOG, settled by climbs to maximal infeasible nodes and tagging.

When the loss is LOG (`problem.loss_is_log`) it is known before any evaluation, so the optimum is the first
feasible node in increasing LOG (ties: every node of that LOG not known infeasible is evaluated, and the
budget keeps the least LOS, then the smaller node). A node of unknown feasibility is resolved by climbing
from it through unknown nodes (raising the least-raised attribute first, so the chain stays balanced) and
searching that chain for its feasibility boundary with probes leaning high; from the highest infeasible
node found it climbs again until that node is maximal infeasible. Every evaluated node tags its up-set
feasible or its down-set infeasible, so one maximal infeasible node settles many low nodes at once.
The search stops at the first LOG above the optimum's, so it evaluates fewer nodes than OLA, which must
find every k-minimal node.

Exactness (agreement with exhaustive search) under the problem's flags:
- tagging is used only with `monotone_feasibility`; without it, nodes are evaluated one LOG level at a
  time (still stopping after the first level with a feasible node, since LOG does not depend on the data);
- when the loss is not LOG: with monotone feasibility and loss, every node is tagged, the k-minimal nodes
  are evaluated, and from those of least loss the search climbs through every node of that same loss (a
  node of equal loss can win on LOS); otherwise every node not tagged infeasible is evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lattice.box import Box
from lattice.node import Node
from lattice.search.base import (
    BESTFIRST_MAX_NODES,
    EVALUATE_ALL_MAX_NODES,
    Budget,
    Limits,
    Problem,
    SearchResult,
    evaluate_ties,
    guarded,
    refuse_box_beyond,
    require_limit_beyond,
)
from lattice.search.tags import FEASIBLE, INFEASIBLE, UNKNOWN, DenseTags, classify, unknown_chain


def log_keys(box: Box, heights: Node) -> np.ndarray:
    """Exact integer LOG keys of every node (C order): sum of x_i * (M / h_i), M the lcm of the heights > 0.

    Proportional to LOG, so equal keys are exactly equal LOG (float LOG could split or merge ties).
    """
    positive = [h for h in heights if h > 0]
    scale = math.lcm(*positive) if positive else 1
    shape = tuple(b - a + 1 for a, b in zip(box.lower, box.upper))
    keys = np.zeros(shape, dtype=np.int64)
    for i, (a, b, h) in enumerate(zip(box.lower, box.upper, heights)):
        if h > 0:
            view = [1] * len(shape)
            view[i] = shape[i]
            keys += (np.arange(a, b + 1, dtype=np.int64) * (scale // h)).reshape(view)
    return keys.reshape(-1)


@dataclass(frozen=True)
class BestFirst:
    """Exact search in increasing LOG with predictive tagging (see the module doc).

    Parameters
    ----------
    max_nodes : int
        The largest box it accepts, whatever the limits (it keeps a tag byte and an 8-byte key per node);
        without monotone feasibility, boxes beyond exhaustive search's cap need a time or evaluation limit.
    chunk : int
        Nodes of the LOG order read at a time.
    split : float
        Where on an unknown stretch of a climb a node is probed (0.5 = binary search; higher leans to maximal
        infeasible nodes; 0.85 measured best on Adult and Cargo 2000).
    name : str
        The algorithm's name in results and reports.
    """

    max_nodes: int = BESTFIRST_MAX_NODES
    chunk: int = 4096
    split: float = 0.85
    name: str = "bestfirst"
    exact: ClassVar[bool] = True  # its best is the optimum of the objective when it stops `complete`
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: `best`: the optimum when `stopped` is
        `complete`; `minimal`: the minimal feasible nodes it evaluated (not every k-minimal node: it stops at the
        optimum's LOG); `params["mode"]` says which of its modes the problem's flags chose.
        """
        box = problem.box
        refuse_box_beyond(self.name, box, self.max_nodes)
        if not problem.monotone_feasibility:  # no tagging: it may evaluate (and keep) every node
            require_limit_beyond(self.name, problem, limits, EVALUATE_ALL_MAX_NODES,
                                 "may evaluate every node when feasibility is not monotone and keeps each evaluation")
        budget = Budget(problem, limits)
        log_order = bool(getattr(problem, "loss_is_log", False))
        tagging = problem.monotone_feasibility
        if log_order:
            mode = "log order, tagging" if tagging else "log order, level by level (feasibility not monotone)"
        elif tagging and problem.monotone_loss:
            mode = "k-minimal nodes, then their ties (loss not LOG)"
        else:
            mode = "every node not tagged infeasible"
        stats = {"resolved": 0, "tag_hits": 0}
        params = {"mode": mode, "predictive_tagging": tagging}

        def body(trace: list[dict]) -> None:
            try:
                tags = DenseTags(box)
                if log_order and tagging:
                    self._log_tagging(problem, budget, tags, stats)
                elif log_order:
                    self._log_levels(problem, budget, tags)
                elif tagging and problem.monotone_loss:
                    self._tag_all(problem, budget, tags, stats)
                    self._minimal_then_ties(problem, budget, tags)
                else:
                    if tagging:
                        self._tag_all(problem, budget, tags, stats)
                    budget.evaluate_many([tags.node(int(i)) for i in np.flatnonzero(tags.flat != INFEASIBLE)])
            finally:
                trace.append({"evaluations": budget.evaluations, "resolved": stats["resolved"],
                              "tag_hits": stats["tag_hits"], "seconds": budget.seconds})

        return guarded(budget, self.name, body, params)

    # --- resolving one node by binary search on a path to the top -------------------------------------

    def _resolve(self, node: Node, problem: Problem, budget: Budget, tags: DenseTags, stats: dict) -> None:
        """Settle the unknown `node`, and raise the infeasible node found to a maximal infeasible one.

        Climb from the node through unknown nodes to one whose upper neighbours are all known, and search
        that chain for its feasibility boundary, probing at fraction `split` of the unknown stretch: a
        maximal infeasible node tags the largest down-set, and the top of the climb is one when it is
        infeasible, so probes lean high (a feasible probe still shortens the next climb). From the highest
        infeasible node found, climb again, until it is the top of its own climb (maximal infeasible) or
        the node itself is feasible. Every step evaluates at least one node, so it ends.
        """
        stats["resolved"] += 1
        box = problem.box
        start = node
        while True:
            path = unknown_chain(start, box, tags)
            states = [tags.get(p) for p in path]
            lo = max((i for i, s in enumerate(states) if s == INFEASIBLE), default=-1)
            hi = min((i for i, s in enumerate(states) if s == FEASIBLE), default=len(path))
            while hi - lo > 1:
                mid = min(hi - 1, max(lo + 1, lo + round(self.split * (hi - lo))))
                if classify(budget, tags, path[mid], stats):
                    hi = mid
                else:
                    lo = mid
            if lo < 0 or lo == len(path) - 1:
                return  # the node is feasible, or path[lo] is maximal infeasible (and covers the node)
            start = path[lo]

    # --- the modes ----------------------------------------------------------------------------------

    def _log_tagging(self, problem: Problem, budget: Budget, tags: DenseTags, stats: dict) -> None:
        keys = log_keys(problem.box, problem.heights)
        order = np.argsort(keys, kind="stable")  # ties in lexicographic order
        best_key: int | None = None
        for start in range(0, order.size, self.chunk):
            block = order[start : start + self.chunk]
            for flat in block[tags.flat[block] != INFEASIBLE]:
                if best_key is not None and keys[flat] > best_key:
                    return
                if tags.flat[flat] == INFEASIBLE:  # tagged since the block was read
                    continue
                node = tags.node(int(flat))
                if tags.flat[flat] == UNKNOWN:
                    self._resolve(node, problem, budget, tags, stats)
                if tags.flat[flat] == FEASIBLE:
                    budget.evaluate(node)  # for its LOS: ties on LOG are broken by LOS
                    if best_key is None:
                        best_key = int(keys[flat])

    def _log_levels(self, problem: Problem, budget: Budget, tags: DenseTags) -> None:
        keys = log_keys(problem.box, problem.heights)
        order = np.argsort(keys, kind="stable")
        bounds = np.flatnonzero(np.diff(keys[order])) + 1
        for level in np.split(order, bounds):
            results = budget.evaluate_many([tags.node(int(i)) for i in level])
            if any(e.feasible for e in results):
                return

    def _tag_all(self, problem: Problem, budget: Budget, tags: DenseTags, stats: dict) -> None:
        """Resolve every node, lowest first (so infeasible tags reach far down)."""
        sums = np.indices(tags.shape).sum(axis=0).reshape(-1)
        for flat in np.argsort(sums, kind="stable"):
            if tags.flat[flat] == UNKNOWN:
                self._resolve(tags.node(int(flat)), problem, budget, tags, stats)

    def _minimal_then_ties(self, problem: Problem, budget: Budget, tags: DenseTags) -> None:
        """Evaluate the k-minimal nodes; then climb from those of least loss through nodes of equal loss."""
        feasible = tags.array == FEASIBLE
        minimal = feasible.copy()
        for axis in range(feasible.ndim):
            below = np.zeros_like(feasible)
            src = [slice(None)] * feasible.ndim
            dst = [slice(None)] * feasible.ndim
            src[axis], dst[axis] = slice(0, -1), slice(1, None)
            below[tuple(dst)] = feasible[tuple(src)]
            minimal &= ~below
        evaluate_ties(budget, budget.evaluate_many([tags.node(int(i)) for i in np.flatnonzero(minimal.reshape(-1))]))
