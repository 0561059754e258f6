"""The fast exact kernel: class sizes from mixed-radix integer keys over the code columns.

Columns are folded into one int64 key, `key = key * card + code`; when the key's span would overflow (or
grow past what counting can afford), it is re-densified first. Classes are counted with `np.bincount` when the
span is small and by sorting and run lengths otherwise (SPEC section 8: faster than `np.unique`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fitness.partition import Partition

_MAX_SPAN = 1 << 62


def _count_limit(n: int) -> int:
    return max(4 * n, 1 << 16)


def densify(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """Renumber key values to 0..d-1 keeping their order; returns (new key, d)."""
    if span <= _count_limit(key.size):
        present = np.bincount(key, minlength=span) > 0
        remap = np.cumsum(present) - 1
        return remap[key], int(present.sum())
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.empty(key.size, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    dense = np.empty(key.size, dtype=np.int64)
    dense[order] = np.cumsum(starts) - 1
    return dense, int(starts.sum())


def combine(columns: Sequence[np.ndarray], cards: Sequence[int], n: int) -> tuple[np.ndarray, int]:
    """One int64 key per row, equal iff the rows agree on every column; and the key's span."""
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for column, card in zip(columns, cards):
        if card <= 1:
            continue
        if span * card >= _MAX_SPAN:
            key, span = densify(key, span)
        key *= card
        key += column
        span *= card
    return key, span


def partition(columns: Sequence[np.ndarray], cards: Sequence[int], n: int, with_rows: bool = False) -> Partition:
    """The classes of rows that agree on every column."""
    if n == 0:
        return Partition(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64) if with_rows else None)
    key, span = combine(columns, cards, n)
    if with_rows:
        rows, count = densify(key, span)
        return Partition(np.bincount(rows, minlength=count), rows)
    if span <= _count_limit(n):
        counts = np.bincount(key, minlength=span)
        return Partition(counts[counts > 0])
    ordered = np.sort(key)
    bounds = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    return Partition(np.diff(np.concatenate(([0], bounds, [n]))))
