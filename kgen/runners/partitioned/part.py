"""One partition on its worker: its rows as leaf codes, and its own class tables for roll-up.

Why: the partition is the unit of work and of memory. After pass 0 a partition holds only one narrow leaf
code per row and QI (the lookup arrays, leaf -> code per level, are shared by all its tasks), so a worker
holds about 20 bytes per row of a 10-QI table instead of the table. For a node it groups its rows (or, by
roll-up, the classes of a cached more specific node: a partition's classes of a lower node refine those of a
higher node, because every hierarchy is a tree) and returns its classes as global keys with counts, split
over the reducers. Class tables stay cached here, bounded in bytes, never shipped.

The `Part` object lives in its worker's memory and every task on it is pinned to that worker, so the cache
persists between batches.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kgen.runners.partitioned import keys as keying
from lattice.node import Node

Chunk = tuple  # ("dense", counts) over the reducer's key range, ("split", singletons, keys, counts) or
# ("sparse", keys, counts): see `split`


@dataclass(eq=False)
class ClassTable:
    """The classes of `node` in one partition: their codes per QI (only QIs of the layout) and sizes."""

    node: Node
    codes: dict[int, np.ndarray]
    sizes: np.ndarray

    @property
    def count(self) -> int:
        return int(self.sizes.size)

    @property
    def nbytes(self) -> int:
        return self.sizes.nbytes + sum(c.nbytes for c in self.codes.values())


@dataclass(frozen=True)
class Plan:
    """How every partition handles one node of a batch: its key layout and, when its key span is small, the
    reducers' contiguous key ranges (`ranges`, dense counting allowed); else keys are hashed to reducers."""

    node: Node
    layout: keying.Layout
    ranges: tuple[int, ...] | None


@dataclass(eq=False)
class Part:
    """A partition's leaf codes (`leaves[i]`, narrow ints), its row count and global row offset, the lookup
    arrays (`lookups[i][level]`: leaf code -> code at that level) and the roll-up cache."""

    index: int
    offset: int
    n: int
    leaves: list[np.ndarray]
    lookups: list[tuple[np.ndarray, ...]]
    capacity: int = 64 << 20
    max_fraction: float = 0.125
    cache: OrderedDict = field(default_factory=OrderedDict)
    held: int = 0
    hits: int = 0
    misses: int = 0
    _maps: dict = field(default_factory=dict)

    def level_map(self, qi: int, low: int, high: int) -> np.ndarray:
        """Code at level `high` of each code at level `low` (a function: the hierarchy is a tree)."""
        known = self._maps.get((qi, low, high))
        if known is None:
            lk = self.lookups[qi]
            known = np.zeros(int(lk[low].max()) + 1 if lk[low].size else 0, dtype=np.int32)
            known[lk[low]] = lk[high]
            self._maps[(qi, low, high)] = known
        return known

    def column(self, qi: int, level: int) -> np.ndarray:
        leaves = self.leaves[qi]
        return leaves if level == 0 else self.lookups[qi][level][leaves]

    def source_for(self, node: Node) -> ClassTable | None:
        best = None
        target = np.asarray(node)
        for cached in self.cache.values():
            if (best is None or cached.count < best.count) and np.all(np.asarray(cached.node) <= target):
                best = cached
        return best

    def classes(self, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
        """The node's classes in this partition: sorted global keys and their sizes (roll-up when a cached
        table of a node below it is small enough, else from the rows)."""
        node, lay = plan.node, plan.layout
        if self.n == 0:
            return keying.fold({}, lay, 0), np.zeros(0, dtype=np.int64)
        source = self.source_for(node)
        if source is not None:
            self.hits += 1
            self.cache.move_to_end(source.node)
            columns = {i: (source.codes[i] if source.node[i] == node[i] else
                           self.level_map(i, source.node[i], node[i])[source.codes[i]]) for i in lay.qis}
            found = keying.group(keying.fold(columns, lay, source.count), lay, source.sizes)
        else:
            self.misses += 1
            columns = {i: self.column(i, node[i]) for i in lay.qis}
            found = keying.group(keying.fold(columns, lay, self.n), lay)
        self.keep(node, lay, *found)
        return found

    def keep(self, node: Node, lay: keying.Layout, keys: np.ndarray, sizes: np.ndarray) -> None:
        """Cache a class table when it is small enough to be worth rolling up from."""
        if node in self.cache or sizes.size > self.max_fraction * self.n:
            return
        table = ClassTable(node, keying.unfold(keys, lay), sizes)
        if table.nbytes > self.capacity:
            return
        self.cache[node] = table
        self.held += table.nbytes
        while self.held > self.capacity:
            _, old = self.cache.popitem(last=False)
            self.held -= old.nbytes

    def map_batch(self, plans: Sequence[Plan], reducers: int) -> list[list[Chunk]]:
        """For each reducer, the chunk of each node of the batch it owns (the map side of one batch)."""
        out: list[list[Chunk]] = [[] for _ in range(reducers)]
        for plan in plans:
            for r, chunk in enumerate(split(*self.classes(plan), plan, reducers)):
                out[r].append(chunk)
        return out


def split(keys: np.ndarray, sizes: np.ndarray, plan: Plan, reducers: int) -> list[Chunk]:
    """A partition's classes of one node cut into one chunk per reducer: dense count vectors over each
    reducer's key range when the span is small and well filled, else sorted keys. One-word keys are cut by
    key range (a binary search in the sorted keys: no pass over them); when the span fits uint32 they are
    shipped as ("split", singletons, keys, counts): the keys of one-row classes alone (4 bytes each; a low
    node's classes are nearly all singletons) and key/count pairs for the rest. Multi-word keys go by hash
    as ("sparse", keys, counts)."""
    sizes = sizes.astype(np.int32)  # a class of one partition has fewer than 2**31 rows: 4 bytes shipped, not 8
    if keys.ndim == 1:
        ranges = plan.ranges or keying.bounds(plan.layout.span, reducers)
        span = ranges[-1]
        if plan.ranges is not None and span <= 2 * keys.shape[0]:  # dense: 4 bytes per key, a pair 8-12 per class
            dense = np.bincount(keys, weights=sizes, minlength=span).astype(np.int32)
            return [("dense", dense[ranges[r]:ranges[r + 1]]) for r in range(reducers)]
        cuts = np.searchsorted(keys, ranges)
        if span > 1 << 32:
            return [("sparse", keys[cuts[r]:cuts[r + 1]], sizes[cuts[r]:cuts[r + 1]]) for r in range(reducers)]
        keys = keys.astype(np.uint32)
        single = sizes == 1
        out: list[Chunk] = []
        for r in range(reducers):
            part = slice(cuts[r], cuts[r + 1])
            one, k, s = single[part], keys[part], sizes[part]
            out.append(("split", k[one], k[~one], s[~one]))
        return out
    owner = keying.bucket(keys, reducers)
    return [("sparse", keys[owner == r], sizes[owner == r]) for r in range(reducers)]


def map_batch(part: Part, plans: Sequence[Plan], reducers: int) -> list[list[Chunk]]:
    """Task: the map side of a batch on one partition."""
    return part.map_batch(plans, reducers)


def cache_figures(part: Part) -> dict:
    """Task: the roll-up cache's figures (for benchmarks)."""
    return {"tables": len(part.cache), "bytes": part.held, "hits": part.hits, "misses": part.misses}
