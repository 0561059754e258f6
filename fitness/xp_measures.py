"""Per-class measures of a sensitive column and the cell-cost correction, written against an array namespace.

Why: entropy and recursive l-diversity, both t-closeness distances and the cell-cost metrics (NCP, Loss,
non-uniform entropy) used to send a whole `--device gpu` run back to the CPU. They need, per class, the
counts of each sensitive value, and, for the metrics, one weighted sum over the suppressed rows. Both are
computed here with the same rules as `fitness.xp_kernel`: no size is read back to the host, classes stay a
*histogram with holes* (ids `0..count-1`, unused ids have size 0), and every array shape is known before the
data is seen.

The (class, value) counts are `ValueRuns`: one entry per (class id, value) pair, sorted by class id then
value rank. On the counting path (`count * m` within the backend's counting limit) every cell of the dense
(count x m) histogram is an entry, zero counts included; on the sort path the distinct pair keys are sorted
and each run of equal keys is an entry, unused entries (past the last run) carrying the class id `count`,
one past the last. Values are *ranks* (the ordered distance's order, `fitness.models.value_order`), so
the ordered distance reads the runs in order, and the other measures ignore the numbering.

The formulas are those of `fitness.models` (`class_entropy`, `class_recursive_ratio`, `equal_distance`,
`ordered_distance`) and `fitness.objective.CellCosts`: integer figures (distinct counts, the recursive
model's r_1 and tail) are exact; float figures (entropy, distances, the cost correction) equal the CPU's up
to the order of float summation (tests: relative 1e-12), which the models' TOLERANCE of 1e-9 absorbs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Backend(Protocol):
    """What these measures ask of `fitness.xp_kernel.Backend` (the kernel imports this module, so the type is
    named by what it offers rather than imported back)."""

    xp: Any

    def sums(self, index: Any, size: int, weights: Any) -> Any: ...

    def counts(self, index: Any, size: int, weights: Any = None) -> Any: ...

    def count_limit(self, n: int) -> int: ...


@dataclass(frozen=True)
class ValueRuns:
    """The (class, sensitive value) counts of a node (see the module docstring).

    Attributes
    ----------
    cls : array of int64
        Class id of each entry, `count` for an unused entry; non-decreasing.
    pos : array of int64
        Value rank of each entry (increasing within a class).
    cnt : array of int64
        Rows of the entry (0 for an empty cell or an unused entry).
    count : int
        Class ids in the histogram (the node's `Classes.sizes.size`).
    m : int
        Distinct values of the column.
    """

    cls: Any
    pos: Any
    cnt: Any
    count: int
    m: int


def value_runs(backend: Backend, ids: Any, count: int, ranked: Any, m: int) -> ValueRuns:
    """The `ValueRuns` of classes `ids` (class id per row, in [0, count)) and value ranks `ranked` per row."""
    xp = backend.xp
    n = ids.size
    pair = ids * m + ranked.astype(xp.int64)
    span = count * m
    if span <= backend.count_limit(n):
        cells = xp.arange(span, dtype=xp.int64)
        return ValueRuns(cells // m, cells % m, backend.counts(pair, span), count, m)
    ordered = xp.sort(pair)
    del pair
    starts = xp.empty(n, dtype=bool)
    starts[:1] = True
    starts[1:] = ordered[1:] != ordered[:-1]
    run = xp.cumsum(starts) - 1
    del starts
    cnt = backend.counts(run, n)
    key = xp.full(n, span, dtype=xp.int64)  # unused entries: class `count`
    key[run] = ordered  # every row of a run writes the same key
    return ValueRuns(key // m, key % m, cnt, count, m)


def _per_class(backend: Backend, runs: ValueRuns, weights: Any) -> Any:
    """Per class id, the float sum of `weights` over its entries (unused entries dropped)."""
    return backend.sums(runs.cls, runs.count + 1, weights)[: runs.count]


def _per_class_int(backend: Backend, runs: ValueRuns, weights: Any) -> Any:
    """Per class id, the integer sum of non-negative integer `weights` over its entries."""
    return backend.counts(runs.cls, runs.count + 1, weights=weights)[: runs.count]


def distinct(backend: Backend, runs: ValueRuns) -> Any:
    """Per class id, the number of distinct values (`ValueCounts.distinct`)."""
    return _per_class_int(backend, runs, (runs.cnt > 0).astype(backend.xp.int64))


def entropy(backend: Backend, runs: ValueRuns, sizes: Any) -> Any:
    """Per class id, the entropy (natural log) of its values, as `fitness.models.class_entropy`."""
    xp = backend.xp
    present = runs.cnt > 0
    c = xp.where(present, runs.cnt, 1).astype(xp.float64)
    weighted = _per_class(backend, runs, xp.where(present, c * xp.log(c), 0.0))
    s = xp.where(sizes > 0, sizes, 1).astype(xp.float64)
    return xp.maximum(xp.log(s) - weighted / s, 0.0)


def recursive_ratio(backend: Backend, runs: ValueRuns, sizes: Any, n: int, l: int) -> Any:  # noqa: E741
    """Per class id, r_1 / (r_l + ... + r_m) (inf when the tail is empty), as `class_recursive_ratio`.

    The entries are sorted by class, then by decreasing count, through one int64 key
    `cls * (n + 1) + (n - cnt)` (no permutation), from which class and count are read back."""
    xp = backend.xp
    base = n + 1
    ordered = xp.sort(runs.cls * base + (n - runs.cnt))
    cls = ordered // base
    cnt = n - ordered % base
    del ordered
    count = runs.count
    first = xp.searchsorted(cls, xp.arange(count, dtype=xp.int64))  # each class's first (largest) entry
    rank = xp.arange(cls.size, dtype=xp.int64) - first[xp.minimum(cls, count - 1)]
    top = xp.where(sizes > 0, cnt[xp.minimum(first, cls.size - 1)], 0)
    tail = backend.counts(cls, count + 1, weights=xp.where(rank >= l - 1, cnt, 0))[:count]
    return xp.where(tail > 0, top / xp.where(tail > 0, tail, 1), xp.inf)


def _shares(backend: Backend, runs: ValueRuns, sizes: Any) -> tuple[Any, Any]:
    """Per entry, whether it belongs to a class (not unused) and its class's size (1 where none)."""
    xp = backend.xp
    used = runs.cls < runs.count
    size = xp.where(used, sizes[xp.minimum(runs.cls, runs.count - 1)], 1)
    return used, xp.where(size > 0, size, 1).astype(xp.float64)


def equal_distance(backend: Backend, runs: ValueRuns, sizes: Any, q_ranked: Any) -> Any:
    """Per class id, the equal-distance EMD 1/2 sum_v |p_v - q_v|, as `fitness.models.equal_distance`."""
    xp = backend.xp
    _, size = _shares(backend, runs, sizes)
    p = runs.cnt.astype(xp.float64) / size
    qv = q_ranked[runs.pos]
    present = _per_class(backend, runs, xp.where(runs.cnt > 0, xp.abs(p - qv) - qv, 0.0))
    return xp.clip(0.5 * (1.0 + present), 0.0, 1.0)


def ordered_distance(backend: Backend, runs: ValueRuns, sizes: Any, cum_q: Any) -> Any:
    """Per class id, the ordered EMD 1/(m-1) sum_i |P_i - Q_i| (P, Q the cumulative shares in value order),
    as `fitness.models.ordered_distance`, without the dense (classes x m) matrix.

    Between an entry at rank `lo` and its class's next entry (or m) P is constant, a = (rows of the class
    up to this entry) / size, counted exactly in integers; Q is non-decreasing, so the sum of |a - Q_i|
    over that stretch splits at `searchsorted(Q, a)` into two sums read from the prefix sums of Q. Ranks
    before a class's first entry have P = 0 and add Q_i."""
    xp = backend.xp
    m, count = runs.m, runs.count
    if m <= 1:
        return xp.zeros(count, dtype=xp.float64)
    used, size = _shares(backend, runs, sizes)
    prefix = xp.concatenate([xp.zeros(1, dtype=xp.float64), xp.cumsum(cum_q)])  # prefix[i] = Q_0 + ... + Q_{i-1}
    total = xp.cumsum(runs.cnt)
    first = xp.searchsorted(runs.cls, xp.arange(count, dtype=xp.int64))
    size_first = runs.cls.size - 1
    before = total[xp.minimum(first, size_first)] - runs.cnt[xp.minimum(first, size_first)]
    a = (total - before[xp.minimum(runs.cls, count - 1)]).astype(xp.float64) / size
    lo = runs.pos
    same = xp.concatenate([runs.cls[1:] == runs.cls[:-1], xp.zeros(1, dtype=bool)])
    hi = xp.where(same, xp.concatenate([runs.pos[1:], xp.full(1, m, dtype=xp.int64)]), m)
    k = xp.clip(xp.searchsorted(cum_q, a), lo, hi)
    stretch = a * (k - lo) - (prefix[k] - prefix[lo]) + (prefix[hi] - prefix[k]) - a * (hi - k)
    starts = xp.concatenate([xp.ones(1, dtype=bool), runs.cls[1:] != runs.cls[:-1]])
    stretch = stretch + xp.where(starts, prefix[lo], 0.0)
    summed = _per_class(backend, runs, xp.where(used, stretch, 0.0))
    return xp.clip(summed / (m - 1), 0.0, 1.0)


def breaks(backend: Backend, measure: str, runs: ValueRuns, sizes: Any, n: int, bound: float, l: int,  # noqa: E741
           reference: tuple[Any, Any]) -> Any:
    """Per class id, whether it breaks a `fitness.models.MeasureRule` (`measure`, `bound`, `l`);
    `reference` is the column's (q by rank, cumulative q by rank)."""
    if measure == "entropy":
        return entropy(backend, runs, sizes) < bound
    if measure == "recursive":
        return ~(recursive_ratio(backend, runs, sizes, n, l) < bound)
    if measure == "t-equal":
        return equal_distance(backend, runs, sizes, reference[0]) > bound
    if measure == "t-ordered":
        return ordered_distance(backend, runs, sizes, reference[1]) > bound
    raise ValueError(f"unknown measure {measure!r}")


def cost_correction(backend: Backend, leaves: tuple[Any, ...], extra: tuple[Any, ...], suppressed: Any) -> Any:
    """The float64 device scalar sum over suppressed rows and QIs of (suppressed cost - cost at the node):
    `extra[i]` is QI i's per-leaf table at the node's level (None where it is zero everywhere), `suppressed`
    the per-row mask. `CellCosts.with_correction` turns it into the loss."""
    xp = backend.xp
    row = None
    for leaf, table in zip(leaves, extra, strict=True):
        if table is None:
            continue
        row = table[leaf] if row is None else row + table[leaf]
    if row is None:
        return xp.zeros((), dtype=xp.float64)
    return xp.where(suppressed, row, 0.0).sum()
