"""Roll-up (ARX's main trick): the classes of a node from the class table of a more specific node.

If x <= y (every level of x at most y's), every class of x lies inside one class of y, because a
hierarchy maps each value at a level to exactly one value at any higher level. So the classes of y are
the groups of x's classes by their codes at y's levels. A class table is (sizes, the class codes per QI):
rolling up maps each class's codes to y's levels through small per-level lookup tables and groups the m
classes weighted by their sizes instead of the n rows, which is what makes evaluating high nodes cheap.
A level map is a function because the hierarchy is a tree (`Hierarchy.from_rows` rejects two parents).

`RollupCache` keeps the class tables of recently evaluated nodes (bounded in bytes) and answers a node
from the cached node below it with the fewest classes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fitness import kernel
from fitness.encoding import EncodedTable
from lattice.node import Node


@dataclass(frozen=True, eq=False)
class ClassTable:
    """The classes of `node`: `sizes[c]` rows; `codes[i][c]` the code of class c for QI i at `node[i]` (None
    for a QI generalized to one value there), or `codes` None when the table is for its sizes only."""

    node: Node
    sizes: np.ndarray
    codes: tuple[np.ndarray | None, ...] | None

    @property
    def count(self) -> int:
        return int(self.sizes.size)

    @property
    def nbytes(self) -> int:
        return self.sizes.nbytes + sum(c.nbytes for c in self.codes or () if c is not None)


class LevelMaps:
    """Per QI and pair of levels a <= b, the code at level b of each code at level a (a hierarchy is a tree,
    so this is a function); built once from the encoded columns and kept (each is one small array)."""

    def __init__(self, table: EncodedTable) -> None:
        self.table = table
        self._maps: dict[tuple[int, int, int], np.ndarray] = {}

    def __call__(self, qi: int, low: int, high: int) -> np.ndarray:
        known = self._maps.get((qi, low, high))
        if known is None:
            column = self.table.qis[qi]
            known = np.zeros(column.cards[low], dtype=np.int32)
            known[column.leaf_map(low)] = column.leaf_map(high)  # from the leaves: no pass over the rows
            self._maps[(qi, low, high)] = known
        return known


def direct(table: EncodedTable, node: Sequence[int], max_classes: int | None = None) -> ClassTable:
    """The class table of a node from all n rows. With `max_classes`, class codes are kept only when there
    are at most that many classes (else `codes` is None: the table is then for its sizes only)."""
    columns, cards = table.columns(node)
    limit = table.n if max_classes is None else max_classes
    sizes, representatives = kernel.sizes_and_representatives(columns, cards, table.n, limit)
    codes = None
    if representatives is not None:
        codes = tuple(column[representatives] if card > 1 else None for column, card in zip(columns, cards))
    return ClassTable(tuple(node), sizes, codes)


def roll_up(table: EncodedTable, source: ClassTable, node: Sequence[int],
            maps: LevelMaps | None = None) -> ClassTable:
    """The class table of `node` >= `source.node`, from the source's classes (exact, see module doc).

    Each class's codes at `node` come from its codes at the source node through the small level maps, so
    the work is proportional to the source's class count, not to n.
    """
    if source.codes is None:
        raise ValueError("cannot roll up from a class table without codes")
    maps = maps or LevelMaps(table)
    columns, cards, where = [], [], []
    for i, (qi, low, high) in enumerate(zip(table.qis, source.node, node)):
        card = qi.cards[high]
        if card > 1:
            codes = source.codes[i]
            assert codes is not None  # one value at the lower level means one value above it
            columns.append(codes if low == high else maps(i, low, high)[codes])
            cards.append(card)
            where.append(i)
    sizes, local, _ = kernel.group(columns, cards, source.count, weights=source.sizes)
    out: list[np.ndarray | None] = [None] * len(table.qis)
    for i, column in zip(where, columns):
        out[i] = column[local]
    return ClassTable(tuple(node), sizes, tuple(out))


class RollupCache:
    """Class tables of evaluated nodes, answering new nodes by roll-up when that is cheaper.

    `capacity`: the most bytes held over all cached tables (8 bytes per class plus 4 per class and QI).
    `max_fraction`: roll up only from a table with at most this fraction of n classes (else grouping the
    m representatives costs about as much as grouping the n rows, and the direct kernel is used).
    `min_saving`: and only when that spares at least this many rows: a roll-up makes more (small) numpy
    calls than the direct kernel, so on small tables (Adult's 30,162 rows) grouping all rows directly is
    faster (measured: benchmarks/evaluation.py).
    """

    def __init__(self, table: EncodedTable, capacity: int | None = None, max_fraction: float = 0.125,
                 max_tables: int = 256, min_saving: int = 65536) -> None:
        self.table = table
        self.capacity = capacity if capacity is not None else 256 << 20
        self.max_fraction = max_fraction
        self.max_tables = max_tables
        self.min_saving = min_saving
        self.clear()

    def clear(self) -> None:
        """Forget every class table (the settings stay)."""
        self._tables: OrderedDict[Node, ClassTable] = OrderedDict()
        self._anchor: ClassTable | None = None  # the bottom node's table: below every node, never evicted
        self._anchored = False
        self.maps = LevelMaps(self.table)
        self._held = 0
        self._nodes = np.zeros((0, len(self.table.qis)), dtype=np.int32)
        self._leaf_counts: dict[int, np.ndarray] = {}  # per QI, the rows holding each leaf (`projection`)
        self._keys: list[Node] = []
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        """How many class tables are kept (the bottom node's anchor aside)."""
        return len(self._tables)

    def _rebuild_index(self) -> None:
        self._keys = list(self._tables)
        self._nodes = np.array(self._keys, dtype=np.int32).reshape(len(self._keys), len(self.table.qis))

    def anchor(self) -> ClassTable | None:
        """The bottom node's class table (the distinct rows), kept when duplicates make it small enough."""
        if not self._anchored and self.table.n >= self.min_saving:
            self._anchored = True
            bottom = direct(self.table, (0,) * len(self.table.qis), int(self.max_fraction * self.table.n))
            if bottom.codes is not None:
                self._anchor = bottom
        return self._anchor

    def source_for(self, node: Sequence[int]) -> ClassTable | None:
        """The cached table of a node <= `node` with the fewest classes, if it is worth rolling up from.

        The bottom node's table (`anchor`) is built only for a node that the direct kernel could not simply
        count: one whose key spans more values than `np.bincount` takes (a node near the top, as pre-pruning
        evaluates them, costs one count over the rows, less than building the anchor)."""
        best = self.anchor() if self._anchored or not self._countable(node) else None
        if self._keys:
            below = np.flatnonzero(np.all(self._nodes <= np.asarray(node, dtype=np.int32), axis=1))
            for i in below:
                candidate = self._tables[self._keys[i]]
                if best is None or candidate.count < best.count:
                    best = candidate
        n = self.table.n
        if best is None or best.count > self.max_fraction * n or n - best.count < self.min_saving:
            return None
        return best

    def projection(self, node: Node, qi: int | None) -> ClassTable:
        """The class table of a node where every QI but `qi` (or every QI) is generalized to one value: the
        classes are `qi`'s values at its level, so their sizes are its leaves' counts summed per value (a
        roll-up from the QI's own leaf histogram, counted once per QI): work per distinct value, not per row.
        The same table as `direct` gives (classes in increasing code order)."""
        codes: list[np.ndarray | None] = [None] * len(self.table.qis)
        if qi is None:
            return ClassTable(node, np.array([self.table.n] if self.table.n else [], dtype=np.int64), tuple(codes))
        column = self.table.qis[qi]
        counts = self._leaf_counts.get(qi)
        if counts is None:
            counts = self._leaf_counts[qi] = np.bincount(column.codes[0], minlength=column.cards[0])
        level = node[qi]
        card = column.cards[level]
        per_value = np.bincount(column.leaf_map(level), weights=counts, minlength=card) if level else counts
        present = np.flatnonzero(per_value)
        codes[qi] = present.astype(np.uint8 if card <= 1 << 8 else np.uint16 if card <= 1 << 16 else np.int32)
        return ClassTable(node, per_value[present].astype(np.int64), tuple(codes))

    def _countable(self, node: Sequence[int]) -> bool:
        """Whether the direct kernel counts `node`'s classes with one `np.bincount` (its key's span, the
        product of its levels' cardinalities, is within the kernel's counting limit)."""
        limit = kernel.count_limit(self.table.n)
        span = 1
        for qi, level in zip(self.table.qis, node):
            span *= qi.cards[level]
            if span > limit:
                return False
        return True

    @property
    def active(self) -> bool:
        """Whether the table is big enough for roll-ups to pay (else use the direct kernel alone)."""
        return self.table.n >= self.min_saving

    def classes(self, node: Sequence[int]) -> ClassTable:
        """The class table of `node` (rolled up from a cached table when one is below it and small)."""
        node = tuple(int(v) for v in node)
        known = self._tables.get(node)
        if known is not None:
            self._tables.move_to_end(node)
            return known
        varying = ([i for i, (qi, level) in enumerate(zip(self.table.qis, node)) if qi.cards[level] > 1]
                   if self.active else None)  # a small table's evaluations skip this (the direct kernel is cheap)
        source = self.source_for(node) if varying is None or len(varying) > 1 else None
        if varying is not None and len(varying) <= 1:
            self.hits += 1  # one QI left: its classes are its values, counted from its leaves (`projection`)
            result = self.projection(node, varying[0] if varying else None)
        elif source is not None:
            self.hits += 1
            if source.node in self._tables:
                self._tables.move_to_end(source.node)
            result = roll_up(self.table, source, node, self.maps)
        else:
            self.misses += 1
            small = self.table.n >= self.min_saving
            result = direct(self.table, node, int(self.max_fraction * self.table.n) if small else 0)
        self.add(result)
        return result

    def add(self, classes: ClassTable) -> None:
        """Keep a table (evicting the least recently used ones past the capacity)."""
        useless = (self.table.n < self.min_saving or classes.codes is None
                   or classes.count > self.max_fraction * self.table.n or classes.nbytes > self.capacity)
        if useless:
            return  # never a useful roll-up source
        self._tables[classes.node] = classes
        self._held += classes.nbytes
        while self._held > self.capacity or len(self._tables) > self.max_tables:
            _, old = self._tables.popitem(last=False)
            self._held -= old.nbytes
        self._rebuild_index()
