"""The node kernel written once against an array namespace (`numpy` on a CPU, `cupy` on a GPU).

Why a second kernel beside `fitness.kernel`: the CPU kernel branches on data (the exact number of distinct
keys after a re-densify, `np.flatnonzero` of run starts, compacted class-size arrays). On a GPU every such
branch is a device-to-host round trip that stalls the pipeline, and most of the arithmetic is cheap. This
kernel therefore keeps every data-dependent size on the device:

- a QI's code at level L is gathered from its leaf code through a small per-level lookup array
  (`lookup[L][leaf]`), so the table lives on the device once, as leaf codes in the narrowest integer type;
- the codes are folded into one int64 key per row (mixed radix, `key = key * card + code`). When the next
  column would push the key's span past 2**62 the key is re-densified first (ranks of its distinct values).
  The new span is bounded by n without asking the device how many distinct values there were. Skipping this
  step merges distinct rows (issue 11 item 7: 70 binary QIs), so the tests pin it;
- classes are counted into a *histogram with holes*: a count per key value when the span is small (counting
  path), else per run of the sorted keys (sort path, class ids by a cumulative sum of run starts). Absent
  classes have count 0 and every statistic masks them out, so no compaction (and no host sync) is needed;
- per node the kernel returns four int64 device scalars (released classes, suppressed rows, smallest released
  class, sum of squared released sizes); a batch of nodes comes back to the host as one (m, 4) array.

Privacy models evaluated here: those that are nothing but counts (`fitness.models.CountRule`): a least class
size k (count < k) and least numbers of distinct sensitive values per class (distinct < l, counted from
(class, value) pair keys the same way); and those that compare a per-class measure of a sensitive column with
a bound (`fitness.models.MeasureRule`: entropy and recursive l-diversity, equal and ordered t-closeness),
computed by `fitness.xp_measures` from the same (class, value) counts. `fitness.device_evaluator.device_spec`
builds the `ModelSpec` from the models' rules. The cell-cost metrics (NCP, Loss, non-uniform entropy) add one
float per node: the suppressed cells' extra cost (`xp_measures.cost_correction`), sent back as the fifth
figure (its float64 bits in the int64 row).

The few operations that differ between numpy and CuPy (counting into bins, copying to the host) go through
`Backend`; everything else is the common array API subset both libraries implement identically.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fitness import xp_measures
from fitness.encoding import EncodedTable
from fitness.models import MeasureRule, reference_distribution
from fitness.objective import CellCosts

MAX_SPAN = 1 << 62  # the key never reaches this: key * card + code stays below 2**63
U32 = 1 << 32
NO_CLASS = int(np.iinfo(np.int64).max)  # the "smallest class" of a node that releases nothing (reported as 0)
STATS = ("classes", "suppressed", "smallest", "sum_squares", "cost_correction")


class Backend:
    """An array namespace and the few operations numpy and CuPy spell differently.

    `count_factor`: the counting path is used while the key span is at most `count_factor * n` (a histogram
    of `span` int64 counts); past it the keys are sorted. numpy: 4 (as `fitness.kernel`); CuPy: 1 (device
    memory is the scarce resource, and a GPU radix sort is cheap). `min_count`: spans up to this are always
    counted (tests set 0 with `count_factor` 0 to force the sort path on small tables). `scatter_add`:
    `cupyx.scatter_add` for CuPy (see `counts`); None for numpy's bincount.
    """

    def __init__(self, xp: Any, name: str, count_factor: int, min_count: int = 1 << 16,
                 scatter_add: Any = None, device_id: int = 0) -> None:
        self.xp = xp
        self.name = name
        self.count_factor = count_factor
        self.min_count = min_count
        self._scatter_add = scatter_add
        self.device_id = device_id

    def activate(self) -> Any:
        """A context in which the namespace works on this backend's device: CuPy's `Device(device_id)` (each
        worker thread or process evaluates on its own GPU); nothing for numpy."""
        if self.name == "cupy":
            return self.xp.cuda.Device(self.device_id)
        return contextlib.nullcontext()

    def on_device(self, device_id: int) -> Backend:
        """The same backend on another device (see `fitness.device_evaluator.pick_device`)."""
        return Backend(self.xp, self.name, self.count_factor, self.min_count, self._scatter_add, device_id)

    def sums(self, index: Any, size: int, weights: Any) -> Any:
        """float64 sums of `weights` per value of `index` in [0, size) (numpy: `bincount`; CuPy: a float
        scatter-add, whose order of addition is the GPU's: equal to numpy's up to float rounding)."""
        xp = self.xp
        if self._scatter_add is None:
            return xp.bincount(index, weights=weights, minlength=size)
        out = xp.zeros(size, dtype=xp.float64)
        self._scatter_add(out, index, weights.astype(xp.float64, copy=False))
        return out

    def count_limit(self, n: int) -> int:
        return max(self.count_factor * n, self.min_count)

    def counts(self, index: Any, size: int, weights: Any = None) -> Any:
        """int64 counts of each value of `index` in [0, size) (or the sums of integer `weights`), length size.

        numpy: `bincount`. CuPy: an atomic scatter-add (`cupyx.scatter_add`) into a zeroed array (CuPy's
        bincount reads the maximum of `index` back to the host to size its output; here the size is known).
        The tests run the scatter-add path on numpy with `np.add.at`."""
        xp = self.xp
        if self._scatter_add is None:
            return xp.bincount(index, weights=weights, minlength=size).astype(xp.int64, copy=False)
        out = xp.zeros(size, dtype=xp.uint64)  # CUDA's atomicAdd has no int64 overload; uint64 it has
        values = xp.ones(index.size, dtype=xp.uint64) if weights is None else weights.astype(xp.uint64)
        self._scatter_add(out, index, values)
        return out.view(xp.int64)

    def to_host(self, array: Any) -> np.ndarray:
        asnumpy = getattr(self.xp, "asnumpy", None)  # CuPy's device-to-host copy
        return asnumpy(array) if asnumpy is not None else np.asarray(array)

    def free(self) -> None:
        """Return cached device blocks to the driver (CuPy's memory pool); nothing to do for numpy."""
        if self.name == "cupy":
            self.xp.get_default_memory_pool().free_all_blocks()


NUMPY = Backend(np, "numpy", 4)


def cupy_device_count() -> int:
    """The CUDA devices CuPy sees. Raises ImportError without CuPy and RuntimeError without a driver."""
    cp = importlib.import_module("cupy")
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception as error:  # CuPy raises CUDARuntimeError without a driver; its class needs CUDA to import
        raise RuntimeError(f"CuPy cannot reach a CUDA device ({type(error).__name__}: {error})") from None


def cupy_backend(device_id: int = 0) -> Backend:
    """The CuPy backend on GPU `device_id`. Raises ImportError without CuPy and RuntimeError without a
    usable CUDA device (the caller turns both into one line for the user)."""
    cp = importlib.import_module("cupy")
    count = cupy_device_count()
    if count < 1:
        raise RuntimeError("CuPy sees no CUDA device")
    if not 0 <= device_id < count:
        raise RuntimeError(f"CUDA device {device_id} does not exist: CuPy sees {count}")
    try:  # a first kernel: CuPy compiles on demand, and a driver/toolkit mismatch only shows here
        with cp.cuda.Device(device_id):
            if int((cp.arange(4, dtype=cp.int64) * 2).sum()) != 12:
                raise RuntimeError("CuPy computed 2 * (0 + 1 + 2 + 3) wrong")
    except Exception as error:
        raise RuntimeError(f"CuPy cannot run a kernel ({type(error).__name__}: {error})") from None
    import cupyx  # type: ignore[import-not-found]

    return Backend(cp, "cupy", 1, scatter_add=cupyx.scatter_add, device_id=device_id)


def narrow_dtype(card: int) -> np.dtype:
    """The narrowest unsigned type holding codes 0..card-1."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if card <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


def level_lookup(leaf_codes: np.ndarray, level_codes: np.ndarray, leaf_card: int, dtype: np.dtype) -> np.ndarray:
    """lookup[leaf] = the code at a level of every leaf code (a hierarchy is a tree, so this is a function)."""
    lookup = np.zeros(leaf_card, dtype=dtype)
    lookup[leaf_codes] = level_codes
    return lookup


@dataclass(eq=False)
class DeviceTable:
    """An encoded table on a backend: per QI its leaf codes (narrowest dtype) and per level a lookup array
    from leaf code to level code (None at level 0, where the code is the leaf code; each in the narrowest
    dtype of its level's codes); per needed sensitive column its codes and cardinality (from `from_encoded`:
    the values' ranks in the ordered distance's order) and, for the measures, its reference distribution
    (q by rank, cumulative q by rank); with a cell-cost metric, per QI and level the per-leaf extra cost of a
    suppressed cell (`costs`, None where it is zero everywhere)."""

    backend: Backend
    n: int
    leaves: tuple[Any, ...]
    lookups: tuple[tuple[Any, ...], ...]
    cards: tuple[tuple[int, ...], ...]
    sensitive: dict[str, tuple[Any, int]] = field(default_factory=dict)
    references: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    costs: tuple[tuple[Any, ...], ...] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held on the device (leaf codes, lookups, sensitive codes)."""
        arrays = list(self.leaves) + [a for levels in self.lookups for a in levels if a is not None]
        arrays += [codes for codes, _ in self.sensitive.values()]
        arrays += [a for pair in self.references.values() for a in pair]
        arrays += [a for levels in self.costs or () for a in levels if a is not None]
        return int(sum(a.nbytes for a in arrays))

    @staticmethod
    def from_encoded(table: EncodedTable, backend: Backend, chunk_rows: int = 1 << 22,
                     sensitive: Sequence[str] = (), costs: CellCosts | None = None) -> DeviceTable:
        """Move an encoded table to the device: its leaf codes (in chunks, see `from_codes`), per level the
        lookup from leaf code to level code (`EncodedQI.leaf_map`: from the hierarchy's maps, no pass over the
        rows per level), the `sensitive` columns as value ranks with their reference distributions, and with
        `costs` the per-leaf extra cost of a suppressed cell per QI and level."""
        leaves, lookups, cards = [], [], []
        for qi in table.qis:
            leaves.append(qi.codes[0])
            lookups.append([qi.leaf_map(level).astype(narrow_dtype(qi.cards[level]))
                            for level in range(1, qi.height + 1)])
            cards.append(tuple(qi.cards))
        columns, references = {}, {}
        for name in sensitive:
            codes, labels = table.sensitive[name]
            q, rank = reference_distribution(table, name)
            columns[name] = (rank[codes] if codes.size else codes, max(len(labels), 1))
            q_ranked = np.zeros(max(len(labels), 1))
            q_ranked[rank] = q
            references[name] = (q_ranked, np.cumsum(q_ranked))
        device = DeviceTable.from_codes(backend, table.n, leaves, lookups, cards, columns, chunk_rows)
        xp = backend.xp
        device.references.update({name: (xp.asarray(q), xp.asarray(cum)) for name, (q, cum) in references.items()})
        if costs is None:
            return device
        extra = tuple(tuple(_nonzero(backend, costs.extra_cost(i, level)) for level in range(qi.height + 1))
                      for i, qi in enumerate(table.qis))
        return dataclasses.replace(device, costs=extra)

    @staticmethod
    def from_codes(backend: Backend, n: int, leaves: Sequence[np.ndarray], lookups: Sequence[Sequence[np.ndarray]],
                   cards: Sequence[Sequence[int]], sensitive: dict[str, tuple[np.ndarray, int]] | None = None,
                   chunk_rows: int = 1 << 22) -> DeviceTable:
        """Move host leaf codes and lookups to the device: the entry point of a columnar reader.

        `leaves[i]`: the n leaf codes of QI i (any integer dtype); `lookups[i][L - 1]`: for each level L >= 1,
        the level-L code of every leaf code; `cards[i][L]`: the number of codes at level L; `sensitive`: per
        column its n codes and cardinality. Each column is converted to its narrowest type and copied
        `chunk_rows` rows at a time, so the host never stages more than one chunk in that type."""
        xp = backend.xp
        device_leaves, device_lookups = [], []
        for leaf_codes, levels, card in zip(leaves, lookups, cards, strict=True):
            if leaf_codes.size != n or len(levels) != len(card) - 1:
                raise ValueError("leaf codes must have n rows and one lookup per level above the leaves")
            device_leaves.append(_upload(backend, leaf_codes, narrow_dtype(max(card[0], 1)), chunk_rows))
            device_lookups.append((None, *(xp.asarray(lookup.astype(narrow_dtype(max(c, 1)), copy=False))
                                           for lookup, c in zip(levels, card[1:]))))
        columns = {name: (_upload(backend, codes, narrow_dtype(card), chunk_rows), card)
                   for name, (codes, card) in (sensitive or {}).items()}
        return DeviceTable(backend, n, tuple(device_leaves), tuple(device_lookups),
                           tuple(tuple(int(c) for c in card) for card in cards), columns)


def _nonzero(backend: Backend, table: np.ndarray) -> Any:
    """A per-leaf table on the device, or None when it is zero everywhere (no gather for it)."""
    return backend.xp.asarray(table) if table.size and np.any(table != 0) else None


def _upload(backend: Backend, host: np.ndarray, dtype: np.dtype, chunk_rows: int) -> Any:
    xp = backend.xp
    out = xp.empty(host.size, dtype=dtype)
    step = max(int(chunk_rows), 1)
    for start in range(0, host.size, step):
        stop = min(start + step, host.size)
        out[start:stop] = xp.asarray(host[start:stop].astype(dtype, copy=False))
    return out


# --- the kernel ------------------------------------------------------------------------------------------

def densify(backend: Backend, key: Any, span: int) -> Any:
    """The rank of each key among the distinct key values (0..d-1, order kept). d <= min(span, n) is left on
    the device: callers bound the new span by n."""
    xp = backend.xp
    n = key.size
    if span <= backend.count_limit(n):
        present = backend.counts(key, span) > 0
        return (xp.cumsum(present) - 1)[key]
    order = xp.argsort(key.astype(xp.uint32) if span <= U32 else key)
    ordered = key[order]
    del key
    starts = xp.empty(n, dtype=bool)
    starts[:1] = True
    starts[1:] = ordered[1:] != ordered[:-1]
    del ordered
    dense = xp.empty(n, dtype=xp.int64)
    dense[order] = xp.cumsum(starts) - 1
    return dense


def fold(table: DeviceTable, node: Sequence[int]) -> tuple[Any, int]:
    """One int64 key per row, equal iff the rows agree on every QI at `node`; and an upper bound of its
    span (every key is in [0, span))."""
    backend = table.backend
    xp = backend.xp
    n = table.n
    key = None
    span = 1
    for leaf, lookups, cards, level in zip(table.leaves, table.lookups, table.cards, node):
        card = cards[level]
        if card <= 1:
            continue
        column = leaf if level == 0 else lookups[level][leaf]
        if key is None:
            key = column.astype(xp.int64)
            span = card
            continue
        if span * card >= MAX_SPAN:
            key = densify(backend, key, span)
            span = min(span, n)
        key *= card
        key += column
        span *= card
    if key is None:
        return xp.zeros(n, dtype=xp.int64), 1
    return key, span


@dataclass(frozen=True)
class Classes:
    """A node's classes as a histogram with holes: `sizes[c]` rows in class c (0 for an unused id), and,
    when asked for, `ids[r]` the class of row r."""

    sizes: Any
    ids: Any | None


def classes(table: DeviceTable, node: Sequence[int], with_ids: bool = False) -> Classes:
    """The classes of a node (see `Classes`); no host round trip."""
    backend = table.backend
    xp = backend.xp
    n = table.n
    key, span = fold(table, node)
    if span <= backend.count_limit(n):
        return Classes(backend.counts(key, span), key if with_ids else None)
    compact = key.astype(xp.uint32) if span <= U32 else key
    del key  # free what can be freed as soon as it is dead: device memory bounds the rows per card
    if with_ids:
        order = xp.argsort(compact)
        ordered = compact[order]
    else:
        ordered = xp.sort(compact)
    del compact
    starts = xp.empty(n, dtype=bool)
    starts[:1] = True
    starts[1:] = ordered[1:] != ordered[:-1]
    del ordered
    run = xp.cumsum(starts) - 1  # class id of each sorted position, 0..d-1
    del starts
    sizes = backend.counts(run, n)
    ids = None
    if with_ids:
        ids = xp.empty(n, dtype=xp.int64)
        ids[order] = run
    return Classes(sizes, ids)


def distinct_values(table: DeviceTable, found: Classes, column: str) -> Any:
    """Per class id, the number of distinct values of a sensitive column (0 for unused ids)."""
    backend = table.backend
    xp = backend.xp
    codes, card = table.sensitive[column]
    count = int(found.sizes.size)
    pair = found.ids * card + codes
    span = count * card
    if span <= backend.count_limit(table.n):
        present = backend.counts(pair, span) > 0
        return present.reshape(count, card).sum(axis=1, dtype=xp.int64)
    ordered = xp.sort(pair)
    starts = xp.empty(ordered.size, dtype=bool)
    starts[:1] = True
    starts[1:] = ordered[1:] != ordered[:-1]
    return backend.counts(ordered // card, count, weights=starts)


@dataclass(frozen=True)
class ModelSpec:
    """The privacy models the kernel evaluates: k (classes smaller are suppressed; 1 = none), the least
    numbers of distinct values as (sensitive column, l) pairs, and the measure rules
    (`fitness.models.MeasureRule`: entropy, recursive, t-equal, t-ordered)."""

    k: int = 1
    distinct: tuple[tuple[str, int], ...] = ()
    measures: tuple[MeasureRule, ...] = ()

    @property
    def needs_ids(self) -> bool:
        return bool(self.distinct or self.measures)

    @property
    def columns(self) -> tuple[str, ...]:
        """The sensitive columns the models read, each once, in order."""
        names = [column for column, _ in self.distinct] + [rule.column for rule in self.measures]
        return tuple(dict.fromkeys(names))


def violating(table: DeviceTable, found: Classes, spec: ModelSpec) -> Any:
    """Per class id, whether the (present) class breaks a model."""
    backend = table.backend
    sizes = found.sizes
    present = sizes > 0
    bad = sizes < spec.k
    for column, l in spec.distinct:  # noqa: E741 (the model's name for it)
        bad |= distinct_values(table, found, column) < l
    runs: dict[str, xp_measures.ValueRuns] = {}  # one count of (class, value) pairs per column and node
    for rule in spec.measures:
        if rule.column not in runs:
            codes, card = table.sensitive[rule.column]
            runs[rule.column] = xp_measures.value_runs(backend, found.ids, int(sizes.size), codes, card)
        bad |= xp_measures.breaks(backend, rule.measure, runs[rule.column], sizes, table.n, rule.bound, rule.l,
                                  table.references[rule.column])
    return bad & present


def node_stats(table: DeviceTable, node: Sequence[int], spec: ModelSpec) -> Any:
    """The int64 device vector (released classes, suppressed rows, smallest released class or NO_CLASS, sum of
    squared released class sizes, the cell-cost correction's float64 bits or 0) of a node."""
    xp = table.backend.xp
    found = classes(table, node, spec.needs_ids or table.costs is not None)
    sizes = found.sizes
    bad = violating(table, found, spec)
    released = (sizes > 0) & ~bad
    if table.costs is None:
        correction = xp.zeros(1, dtype=xp.int64)
    else:
        extra = tuple(levels[level] for levels, level in zip(table.costs, node, strict=True))
        total = xp_measures.cost_correction(table.backend, table.leaves, extra, bad[found.ids])
        correction = xp.reshape(total.astype(xp.float64), (1,)).view(xp.int64)
    return xp.concatenate([xp.stack([  # Python scalars, not device scalars: no host-to-device copy per node
        released.sum(dtype=xp.int64),
        xp.where(bad, sizes, 0).sum(dtype=xp.int64),
        xp.where(released, sizes, NO_CLASS).min(),
        xp.where(released, sizes * sizes, 0).sum(dtype=xp.int64),
    ]), correction])


def batch_stats(table: DeviceTable, nodes: Sequence[Sequence[int]], spec: ModelSpec) -> np.ndarray:
    """`node_stats` of every node as one host (len(nodes), 5) int64 array: one device-to-host copy per batch
    (the last column holds float64 bits: read it with `corrections`)."""
    backend = table.backend
    if not nodes:
        return np.zeros((0, len(STATS)), dtype=np.int64)
    stacked = backend.xp.stack([node_stats(table, node, spec) for node in nodes])
    return backend.to_host(stacked).astype(np.int64, copy=False).reshape(len(nodes), len(STATS))


def corrections(figures: np.ndarray) -> np.ndarray:
    """The cell-cost corrections (float64) of a `batch_stats` array."""
    return np.ascontiguousarray(figures[:, len(STATS) - 1]).view(np.float64)


def suppressed_mask(table: DeviceTable, node: Sequence[int], spec: ModelSpec) -> np.ndarray:
    """Host boolean mask of the rows a node suppresses (n bytes copied back: for the release, once)."""
    found = classes(table, node, with_ids=True)
    bad = violating(table, found, spec)
    return table.backend.to_host(bad[found.ids]).astype(bool, copy=False)


def class_sizes(table: DeviceTable, node: Sequence[int]) -> np.ndarray:
    """The sizes of the node's classes on the host, sorted (for tests and checks)."""
    sizes = table.backend.to_host(classes(table, node).sizes)
    return np.sort(sizes[sizes > 0])
