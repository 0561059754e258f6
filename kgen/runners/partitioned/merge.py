"""The reduce side of a batch: each reducer owns a share of the class keys and returns scalars per node.

Why: the classes of a low node are nearly as many as the rows; gathering them in one process would put the
table back together. Keys are cut over the reducers by range (small spans) or by hash, so each reducer
sums the counts of its own classes from every partition and sends back only what the evaluation needs:
suppressed rows, released classes, the smallest released class and the sum of squared released class sizes
(with k-anonymity, a class is released iff it has at least k rows). Those scalars merge by sum and min.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgen.runners.partitioned import keys as keying
from kgen.runners.partitioned.part import Chunk, Plan

COUNT_BITS = 31  # a partition's class has fewer than 2**31 rows (its counts are shipped as int32)
COUNT_MASK = (1 << COUNT_BITS) - 1


@dataclass(frozen=True)
class Figures:
    """What one reducer (or, merged, all of them) knows of a node's classes under k-anonymity."""

    suppressed: int = 0
    classes: int = 0
    smallest: int = 0  # 0 when no class is released
    squares: int = 0  # sum of |E|^2 over released classes

    def merge(self, other: Figures) -> Figures:
        smallest = min((s for s in (self.smallest, other.smallest) if s), default=0)
        return Figures(self.suppressed + other.suppressed, self.classes + other.classes, smallest,
                       self.squares + other.squares)


def pairs(chunk: Chunk) -> tuple[np.ndarray, np.ndarray]:
    """A non-dense chunk as (keys, counts)."""
    if chunk[0] == "sparse":
        return chunk[1], chunk[2]
    _, singles, keys, counts = chunk
    return np.concatenate([singles, keys]), np.concatenate([np.ones(singles.size, dtype=np.int32), counts])


def merge_split(chunks: Sequence[Chunk]) -> tuple[np.ndarray, np.ndarray]:
    """The summed classes of "split" chunks (one-word uint32 keys): one stable sort of the keys alone merges
    the sorted runs (a class's key appears once per partition holding it); each class's size is the number
    of its appearances plus, for the classes with more than one row in a partition, that count less one."""
    singles = [c[1] for c in chunks]
    keys = [c[2] for c in chunks]
    every = np.concatenate(singles + keys)
    if every.size == 0:
        return every.astype(np.int64), np.zeros(0, dtype=np.int64)
    every.sort(kind="stable")  # merges the partitions' sorted runs
    first = keying.firsts(every)
    distinct = every[first]
    sizes = np.diff(np.append(first, every.size))
    several = np.concatenate(keys)
    if several.size:
        counts = np.concatenate([c[3] for c in chunks]).astype(np.int64)
        np.add.at(sizes, np.searchsorted(distinct, several), counts - 1)
    return distinct.astype(np.int64), sizes


def combine(chunks: Sequence[Chunk], plan: Plan, reducer: int) -> tuple[np.ndarray, np.ndarray]:
    """The summed classes (keys, sizes) of one node from every partition's chunk for this reducer."""
    dense = [c[1] for c in chunks if c[0] == "dense"]
    rest = [c for c in chunks if c[0] != "dense"]
    if dense:
        assert plan.ranges is not None
        low = plan.ranges[reducer]
        total = np.sum(dense, axis=0, dtype=np.int64)
        for chunk in rest:
            keys, sizes = pairs(chunk)
            np.add.at(total, keys.astype(np.int64) - low, sizes)
        present = np.flatnonzero(total)
        return present + low, total[present]
    if rest and all(c[0] == "split" for c in rest):
        return merge_split(rest)
    sparse = [pairs(c) for c in rest]
    keys = np.concatenate([c[0] for c in sparse]) if sparse else keying.fold({}, plan.layout, 0)
    sizes = np.concatenate([c[1] for c in sparse]).astype(np.int64) if sparse else np.zeros(0, dtype=np.int64)
    if len(sparse) <= 1:
        return keys, sizes
    if keys.dtype == np.uint32:  # pack key and count into one uint64 and sort that: no permutation to apply
        packed = keys.astype(np.uint64) << np.uint64(COUNT_BITS)
        packed |= sizes.astype(np.uint64)
        packed.sort(kind="stable")  # merges the partitions' sorted runs
        merged = packed >> np.uint64(COUNT_BITS)
        first = keying.firsts(merged)
        counts = np.add.reduceat((packed & np.uint64(COUNT_MASK)).astype(np.int64), first)
        return merged[first].astype(np.int64), counts
    # the same span everywhere: grouping with weights sums a class's counts over the partitions
    widest = keying.Layout(plan.layout.words, tuple(max(s, 1 << 40) for s in plan.layout.spans)) \
        if keys.ndim == 1 else plan.layout  # never count densely here: the keys are few among the span
    return keying.group(keys, widest, sizes, runs=True)


def figures(sizes: np.ndarray, k: int) -> Figures:
    released = sizes[sizes >= k]
    return Figures(int(sizes[sizes < k].sum()), int(released.size), int(released.min()) if released.size else 0,
                   int(np.sum(released * released)))


def reduce_batch(plans: Sequence[Plan], reducer: int, k: int, *parts: list[Chunk]) -> list[Figures]:
    """Task: one reducer's figures for each node of a batch; `parts[p][j]` = partition p's chunk of node j."""
    return [figures(combine([chunks[j] for chunks in parts], plan, reducer)[1], k) for j, plan in enumerate(plans)]


def small_keys(plan: Plan, reducer: int, k: int, *parts: list[Chunk]) -> np.ndarray:
    """Task: this reducer's keys of classes smaller than k (the suppressed classes of the released node)."""
    keys, sizes = combine([chunks[0] for chunks in parts], plan, reducer)
    return keys[sizes < k]


def size_counts(plan: Plan, reducer: int, k: int, *parts: list[Chunk]) -> dict[int, int]:
    """Task: this reducer's released classes (k rows or more) as {class size: classes}: the node's
    class-size histogram, which the risk figures read (`kgen.report.risk.sizes_report`), summed over reducers."""
    _, sizes = combine([chunks[0] for chunks in parts], plan, reducer)
    values, counts = np.unique(sizes[sizes >= k], return_counts=True)
    return {int(v): int(c) for v, c in zip(values.tolist(), counts.tolist())}
