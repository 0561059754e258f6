"""The fast exact kernel: class sizes from mixed-radix integer keys over the code columns.

Columns are folded into one int64 key, `key = key * card + code`; when the next column would overflow it,
the key is re-densified first. Every counting of keys, here and in `fitness.models` (sensitive values per
class), goes through `count_keys`: `np.bincount` when the key's span is small, else a sort (as uint32 when
the span fits: about 1.6x faster) and run lengths. SPEC section 8: never `np.unique` here.

`group` is the general form used by the roll-up (`fitness.rollup`): rows may carry weights (the sizes of
the classes they stand for), and each class gets a representative row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from fitness.partition import Partition

_MAX_SPAN = 1 << 62
_U32 = 1 << 32
_EMPTY = np.zeros(0, dtype=np.int64)


def count_limit(n: int) -> int:
    """The largest key span that `count_keys` counts with `np.bincount` for n rows (past it, it sorts)."""
    return max(4 * n, 1 << 16)


class KeyCounts(NamedTuple):
    """The distinct values of a key, in increasing order, and what `count_keys` was asked for about them.

    Attributes
    ----------
    sizes : np.ndarray
        int64, per distinct value the number of rows holding it (or the sum of their weights).
    values : np.ndarray or None
        int64, the distinct values themselves (when asked for).
    ids : np.ndarray or None
        Per row, the rank of its value among the distinct values (when asked for).
    representatives : np.ndarray or None
        One row holding each distinct value (when asked for and there are at most `max_groups` values).
    """

    sizes: np.ndarray
    values: np.ndarray | None = None
    ids: np.ndarray | None = None
    representatives: np.ndarray | None = None


def count_keys(key: np.ndarray, span: int, weights: np.ndarray | None = None, *, values: bool = False,
               ids: bool = False, representatives: bool = False, max_groups: int | None = None) -> KeyCounts:
    """Count the distinct values of an integer key: the one home of the count-or-sort idiom.

    While `span` is at most max(4 n, 65,536) the values are counted with `np.bincount` into `span` bins
    (`_count_by_bins`); past that the key is sorted (as uint32 when the span fits) and the runs of equal values
    are measured (`_count_by_sort`): two ways with no state in common, hence two helpers. The sort
    takes a permutation (`argsort`) only when per-row ids or weights need it; without one, representatives
    are found by a binary search in the distinct values. Representatives come back only when there are at
    most `max_groups` distinct values (they cost a pass over the rows).

    Parameters
    ----------
    key : np.ndarray
        Non-negative integers below `span`, one per row.
    span : int
        An upper bound (exclusive) on the key's values.
    weights : np.ndarray, optional
        Positive integer weights per row: sizes are then sums of weights.
    values, ids, representatives : bool
        What to return beside the sizes (see `KeyCounts`).
    max_groups : int, optional
        Representatives only when there are at most this many distinct values.

    Returns
    -------
    KeyCounts
        Sizes in increasing order of the key's values, with what was asked for.
    """
    n = key.size
    if n == 0:
        return KeyCounts(_EMPTY, _EMPTY if values else None, _EMPTY if ids else None,
                         _EMPTY if representatives else None)
    if span <= count_limit(n):
        return _count_by_bins(key, span, weights, values, ids, representatives, max_groups)
    return _count_by_sort(key, span, weights, values, ids, representatives, max_groups)


def _wants_representatives(representatives: bool, max_groups: int | None, groups: int) -> bool:
    """Representatives cost a pass over the rows: only when asked for and there are few enough groups."""
    return representatives and (max_groups is None or groups <= max_groups)


def _count_by_bins(key: np.ndarray, span: int, weights: np.ndarray | None, values: bool, ids: bool,
                   representatives: bool, max_groups: int | None) -> KeyCounts:
    """`count_keys` for a span small enough to count: one `np.bincount` over `span` bins, no sort."""
    counts = np.bincount(key, weights=weights, minlength=span)
    if weights is None:
        present = counts > 0
        sizes = counts[present]
    else:  # a present value may not weigh zero: every weight is positive
        present = np.bincount(key, minlength=span) > 0
        sizes = counts[present].astype(np.int64)
    reps = None
    if _wants_representatives(representatives, max_groups, sizes.size):
        last = np.empty(span, dtype=np.int64)
        last[key] = np.arange(key.size)  # any row of a value represents it; the last write wins
        reps = last[present]
    return KeyCounts(sizes, np.flatnonzero(present) if values else None,
                     (np.cumsum(present) - 1)[key] if ids else None, reps)


def _count_by_sort(key: np.ndarray, span: int, weights: np.ndarray | None, values: bool, ids: bool,
                   representatives: bool, max_groups: int | None) -> KeyCounts:
    """`count_keys` for a span too wide for bins: sort the key (as uint32 when the span fits: about 1.6x
    faster) and measure the runs of equal values. A permutation (`argsort`) is taken only when per-row ids
    or weights need one; without it, representatives come from a binary search in the distinct values."""
    n = key.size
    compact = key.astype(np.uint32) if span <= _U32 else key
    order = np.argsort(compact) if ids or weights is not None else None
    ordered = compact[order] if order is not None else np.sort(compact)
    starts = np.empty(n, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    first = np.flatnonzero(starts)
    if weights is None:
        sizes = np.diff(np.append(first, n))
    else:
        assert order is not None
        sizes = np.add.reduceat(weights[order], first).astype(np.int64, copy=False)
    row_ids = None
    if ids:
        assert order is not None
        row_ids = np.empty(n, dtype=np.int64)
        row_ids[order] = np.cumsum(starts) - 1
    reps = None
    if _wants_representatives(representatives, max_groups, sizes.size):
        if order is not None:
            reps = order[first]
        else:
            reps = np.empty(sizes.size, dtype=np.int64)
            reps[np.searchsorted(ordered[first], compact)] = np.arange(n)
    return KeyCounts(sizes, ordered[first].astype(np.int64) if values else None, row_ids, reps)


def densify(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """Renumber key values to 0..d-1 keeping their order; returns (new key, d)."""
    counted = count_keys(key, span, ids=True)
    assert counted.ids is not None
    return counted.ids, int(counted.sizes.size)


def combine(columns: Sequence[np.ndarray], cards: Sequence[int], n: int) -> tuple[np.ndarray, int]:
    """One int64 key per row, equal iff the rows agree on every column; and the key's span.

    The key is re-densified only when the next column would overflow it (densifying more often costs more
    than it saves: measured on Cargo 2000 at 25 and 97 QIs).
    """
    key: np.ndarray | None = None
    span = 1
    for column, card in zip(columns, cards):
        if card <= 1:
            continue
        if key is None:
            key = column.astype(np.int64)
            span = card
            continue
        if span * card >= _MAX_SPAN:
            key, span = densify(key, span)
            if span == n:  # every row is alone: no further column can merge two rows
                return key, span
        key *= card
        key += column
        span *= card
    if key is None:
        return np.zeros(n, dtype=np.int64), 1
    return key, span


def group(columns: Sequence[np.ndarray], cards: Sequence[int], n: int, weights: np.ndarray | None = None,
          with_ids: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Group n rows by their values in `columns` (codes in [0, card)).

    Returns (sizes, representatives, ids): `sizes[c]` = number of rows of class c (or the sum of their
    `weights`), `representatives[c]` = one row of class c, `ids[r]` = row r's class when `with_ids`.
    Classes are numbered in the order of their keys.
    """
    if n == 0:
        return _EMPTY, _EMPTY, (_EMPTY if with_ids else None)
    counted = count_keys(*combine(columns, cards, n), weights, ids=with_ids, representatives=True)
    assert counted.representatives is not None
    return counted.sizes, counted.representatives, counted.ids


def sizes_and_representatives(columns: Sequence[np.ndarray], cards: Sequence[int], n: int,
                              max_classes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Class sizes, and one representative row per class when there are at most `max_classes` classes.

    Cheaper than `group` when many classes are expected: the sort path sorts the keys without a
    permutation and finds representatives only when they are wanted.
    """
    if n == 0:
        return _EMPTY, _EMPTY
    counted = count_keys(*combine(columns, cards, n), representatives=True, max_groups=max_classes)
    return counted.sizes, counted.representatives


def class_sizes(columns: Sequence[np.ndarray], cards: Sequence[int], n: int) -> np.ndarray:
    """Only the class sizes (the cheapest path: a plain sort, no permutation, when counting cannot do)."""
    if n == 0:
        return _EMPTY
    return count_keys(*combine(columns, cards, n)).sizes


def partition(columns: Sequence[np.ndarray], cards: Sequence[int], n: int, with_rows: bool = False) -> Partition:
    """The classes of rows that agree on every column."""
    if n == 0:
        return Partition(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64) if with_rows else None)
    if with_rows:
        sizes, _, ids = group(columns, cards, n, with_ids=True)
        return Partition(sizes, ids)
    return Partition(class_sizes(columns, cards, n))


def partition_with_population(columns: Sequence[np.ndarray], population: Sequence[np.ndarray],
                              cards: Sequence[int], n: int, m: int) -> Partition:
    """The classes of `n` released rows (`columns`) with, per class, the number of the `m` population rows
    (`population`, the same codes) that fall in it: one key over both, counted per membership. Classes only
    the population has are not classes of the release and are dropped; `rows` maps released rows.

    Why one grouping and not two: the class of a released row and of a population row must be the same
    numbered class, which a joint key gives for free."""
    joint = [np.concatenate((np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)))
             for a, b in zip(columns, population)]
    _, _, ids = group(joint, cards, n + m, with_ids=True)
    released = np.bincount(ids[:n], minlength=int(ids.max()) + 1 if ids.size else 0)
    counted = np.bincount(ids[n:], minlength=released.size)
    keep = released > 0
    renumber = np.cumsum(keep) - 1
    return Partition(released[keep], renumber[ids[:n]], counted[keep], int(keep.size - keep.sum()))
