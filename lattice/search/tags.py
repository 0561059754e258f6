"""Predictive tags of lattice nodes: what monotone feasibility already decides without an evaluation.

A feasible node tags its up-set feasible, an infeasible node its down-set infeasible. `DenseTags` holds one
int8 per node of a box (each tagging is one slice assignment); `SparseTags` keeps only the tagging nodes, for
boxes too large for an array. Shared by OLA, best-first, Samarati, Incognito, the certified search and the
GA's `kgen+` preset; `decided`, `classify` and `feasibility` are the one home of "answer from this search's
evaluations or the tags, else evaluate (and tag)".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from lattice.box import Box
from lattice.node import Node

FEASIBLE, UNKNOWN, INFEASIBLE = 1, 0, -1
MEMO_BYTES = 64 << 20


def memo_entries(dims: int, budget: int = MEMO_BYTES) -> int:
    """How many node-keyed memo entries fit in `budget` bytes (a tuple of `dims` ints and a dict slot each):
    memos of searches that run under a time limit on huge boxes are cleared at this size, not grown."""
    return max(1 << 12, budget // (8 * dims + 160))


class DenseTags:
    """Tags of every node of a box in one int8 array (1 feasible, -1 infeasible, 0 unknown).

    Tagging the up-set or down-set of a node is one slice assignment.
    """

    def __init__(self, box: Box) -> None:
        self.lower = box.lower
        self.shape = tuple(b - a + 1 for a, b in zip(box.lower, box.upper))
        self.array = np.zeros(self.shape, dtype=np.int8)
        self.flat = self.array.reshape(-1)  # a view, indexed like the box's nodes in C order

    def index(self, node: Node) -> tuple[int, ...]:
        return tuple(x - a for x, a in zip(node, self.lower))

    def get(self, node: Node) -> int:
        return int(self.array[self.index(node)])

    def tag(self, node: Node, feasible: bool) -> None:
        offset = self.index(node)
        if feasible:
            self.array[tuple(slice(o, None) for o in offset)] = FEASIBLE
        else:
            self.array[tuple(slice(0, o + 1) for o in offset)] = INFEASIBLE

    def node(self, flat_index: int) -> Node:
        """The node at a position of `flat`."""
        return tuple(int(i) + a for i, a in zip(np.unravel_index(flat_index, self.shape), self.lower))

    def undecided(self, bottom: Node, top: Node) -> bool:
        """Whether some node of the sub-lattice [bottom, top] has no tag yet."""
        box = tuple(slice(b - a, t - a + 1) for b, t, a in zip(bottom, top, self.lower))
        return bool((self.array[box] == UNKNOWN).any())


class SparseTags:
    """Tags kept as the lists of tagging nodes, for boxes too large for an array.

    A node is tagged feasible if a feasible tagging node lies below it, infeasible if an infeasible one lies
    above it. Only tagging nodes not already implied are stored; decided answers never change, so they are
    remembered, in a memo cleared when it reaches `memo_entries(dims)` (OLA under a time limit on 60 QIs
    otherwise grew it by about 1 MB a second).
    """

    def __init__(self, dims: int) -> None:
        self.nodes = {FEASIBLE: np.empty((64, dims), dtype=np.int32), INFEASIBLE: np.empty((64, dims), dtype=np.int32)}
        self.count = {FEASIBLE: 0, INFEASIBLE: 0}
        self.decided: dict[Node, int] = {}
        self.memo_limit = memo_entries(dims)

    def get(self, node: Node) -> int:
        tag = self.decided.get(node)
        if tag is not None:
            return tag
        if len(self.decided) >= self.memo_limit:
            self.decided.clear()
        x = np.asarray(node, dtype=np.int32)
        tag = UNKNOWN
        if self.count[FEASIBLE] and (self.nodes[FEASIBLE][: self.count[FEASIBLE]] <= x).all(axis=1).any():
            tag = FEASIBLE
        elif self.count[INFEASIBLE] and (self.nodes[INFEASIBLE][: self.count[INFEASIBLE]] >= x).all(axis=1).any():
            tag = INFEASIBLE
        if tag != UNKNOWN:
            self.decided[node] = tag
        return tag

    def stored(self, feasible: bool) -> np.ndarray:
        """The tagging nodes of one kind, one row each (a view: `tag` may overwrite it, copy it to keep it).
        A search that asks many questions along one line of the lattice (the certified search's climbs) reads
        them once."""
        kind = FEASIBLE if feasible else INFEASIBLE
        return self.nodes[kind][: self.count[kind]]

    def tag(self, node: Node, feasible: bool, undecided: bool = False) -> None:
        """Tag `node`'s up-set feasible or its down-set infeasible. Stored nodes the new one implies are
        dropped (so every look-up scans only the kind's extreme nodes: at Cargo q = 25 the certified search
        otherwise kept thousands of dominated ones). `undecided`: the caller knows that no tag decides the
        node yet (it just evaluated a node the tags left open), so the look-up is skipped."""
        kind = FEASIBLE if feasible else INFEASIBLE
        if not undecided and self.get(node) == kind:
            return
        store, n = self.nodes[kind], self.count[kind]
        if n:
            x = np.asarray(node, dtype=np.int32)
            implied = ((store[:n] >= x) if feasible else (store[:n] <= x)).all(axis=1)
            if implied.any():
                kept = store[:n][~implied]
                n = len(kept)
                store[:n] = kept
        if n == len(store):
            store = self.nodes[kind] = np.concatenate([store, np.empty_like(store)])
        store[n] = node
        self.count[kind] = n + 1
        self.decided[node] = kind


def make_tags(box: Box, dense_limit: int) -> DenseTags | SparseTags:
    return DenseTags(box) if box.size <= dense_limit else SparseTags(box.dims)


def unknown_chain(node: Node, box: Box, tags: DenseTags | SparseTags) -> list[Node]:
    """A chain up from `node` (included) through nodes of unknown feasibility, raising the relatively least-raised
    attribute first (so it stays balanced), until no upper neighbour is unknown. Best-first search and Samarati
    search such chains for their feasibility boundary, to raise an infeasible node to a maximal infeasible one."""
    spans = [b - a + 1 for a, b in zip(box.lower, box.upper)]
    y = list(node)
    path = [tuple(y)]
    while True:
        open_ = [i for i in range(len(y)) if y[i] < box.upper[i]
                 and tags.get(tuple(y[:i] + [y[i] + 1] + y[i + 1 :])) == UNKNOWN]
        if not open_:
            return path
        i = min(open_, key=lambda j: ((y[j] - box.lower[j] + 1) / spans[j], j))
        y[i] += 1
        path.append(tuple(y))


class KnowsEvaluations(Protocol):
    """What `decided`, `classify` and `feasibility` need of a search's Budget."""

    def known(self, node: Node) -> Any: ...

    def evaluate_many(self, nodes: Iterable[Node]) -> list[Any]: ...


def decided(budget: KnowsEvaluations, tags: DenseTags | SparseTags | None, node: Node) -> bool | None:
    """What the search already knows of a node's feasibility: from its own evaluations, else from the tags,
    else None."""
    known = budget.known(node)
    if known is not None:
        return bool(known.feasible)
    if tags is None:
        return None
    tag = tags.get(node)
    return True if tag == FEASIBLE else False if tag == INFEASIBLE else None


def classify(budget: KnowsEvaluations, tags: DenseTags | SparseTags | None, node: Node,
             stats: dict | None = None) -> bool:
    """Whether one node is feasible: decided for free (counted in `stats["tag_hits"]`), else evaluated (and
    tagged). The one-node form of `feasibility`, for searches that walk the lattice node by node."""
    answer = decided(budget, tags, node)
    if answer is None:
        return feasibility(budget, tags, [node])[0]
    if stats is not None:
        stats["tag_hits"] += 1
    return answer


def feasibility(budget: KnowsEvaluations, tags: DenseTags | SparseTags | None, nodes: Sequence[Node]) -> list[bool]:
    """Whether each node is feasible: decided ones for free, the others evaluated in one batch (and tagged)."""
    answers = {node: decided(budget, tags, node) for node in dict.fromkeys(nodes)}
    unknown = [node for node, answer in answers.items() if answer is None]
    if unknown:
        for node, e in zip(unknown, budget.evaluate_many(unknown)):
            answers[node] = bool(e.feasible)
            if tags is not None:
                tags.tag(node, e.feasible)
    return [bool(answers[node]) for node in nodes]
