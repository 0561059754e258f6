"""Privacy models: constraints on the classes of a node. A class that breaks one is suppressed.

A model answers, for each class of a partition, whether the class violates it. The evaluator suppresses
violating classes within the suppression limit; models never see rows they do not need.

Models on a sensitive attribute (l-diversity, t-closeness) read `table.sensitive[column] = (codes, labels)`
and `partition.rows`; they count the (class, sensitive value) pairs with one `bincount` (or a sort when the
dense count table would be too large), never with a Python loop over rows or classes.

The ordered t-closeness distance needs an order of the sensitive values: numeric order when every label
parses as a number, otherwise the labels' string order (so one missing or text value among numbers makes
the order lexicographic: "100" < "20"). See docs/privacy-models.md.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fitness.encoding import EncodedTable
from fitness.partition import Partition
from lattice.errors import InputError

# Equal to the threshold counts as satisfying; rounding must not flip a class that meets it exactly.
TOLERANCE = 1e-9
_CHUNK_CELLS = 1 << 22


class PrivacyModel(Protocol):
    """`needs_rows`: the model reads `partition.rows` (row -> class).
    `monotone_with_suppression`: feasibility stays monotone under generalization when t > 0 (SPEC section 3);
    with t = 0 every model here is monotone."""

    name: str
    needs_rows: bool
    monotone_with_suppression: bool

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray: ...

    def describe(self) -> dict: ...


@dataclass(frozen=True)
class KAnonymity:
    """Every released class has at least k rows."""

    k: int
    name: str = "k-anonymity"
    needs_rows: bool = False
    monotone_with_suppression: bool = True

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        return partition.sizes < self.k

    def describe(self) -> dict:
        return {"model": self.name, "k": self.k}


# --- counting sensitive values per class ---------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ValueCounts:
    """The non-zero (class, sensitive value) counts of a partition, sorted by class then value code.

    `distinct[c]` is the number of distinct values in class c (every class has at least one)."""

    cls: np.ndarray
    value: np.ndarray
    count: np.ndarray
    sizes: np.ndarray
    distinct: np.ndarray


def sensitive_column(table: EncodedTable, column: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """The codes and labels of a sensitive attribute; an InputError names a column not declared sensitive."""
    try:
        return table.sensitive[column]
    except KeyError:
        raise InputError(f"{column!r} is not a sensitive attribute of this table (--sensitive)",
                         column=column) from None


def value_counts(partition: Partition, table: EncodedTable, column: str) -> ValueCounts:
    """Count each sensitive value in each class of the partition (which must carry `rows`)."""
    if partition.rows is None:
        raise ValueError("this privacy model needs the partition's rows (needs_rows = True)")
    codes, labels = sensitive_column(table, column)
    card = max(len(labels), 1)
    count = partition.count
    key = partition.rows.astype(np.int64) * card + codes
    span = count * card
    if span <= max(4 * key.size, 1 << 16):
        counts = np.bincount(key, minlength=span)
        keys = np.flatnonzero(counts)
        found = counts[keys]
    else:
        ordered = np.sort(key)
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) if ordered.size else \
            np.zeros(0, dtype=np.int64)
        keys = ordered[starts]
        found = np.diff(np.concatenate((starts, [ordered.size])))
    cls = keys // card
    return ValueCounts(cls, keys % card, found, partition.sizes, np.bincount(cls, minlength=count))


def class_entropy(vc: ValueCounts) -> np.ndarray:
    """Shannon entropy (natural log) of the sensitive values in each class."""
    cnt = vc.count.astype(np.float64)
    weighted = np.bincount(vc.cls, weights=cnt * np.log(cnt), minlength=vc.sizes.size)
    sizes = vc.sizes.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.log(sizes) - weighted / sizes
    return np.maximum(np.nan_to_num(h), 0.0)


def recursive_ratio(vc: ValueCounts, l: int) -> np.ndarray:  # noqa: E741 (l is the model's name for it)
    """Per class, r_1 / (r_l + ... + r_m) with r_1 >= r_2 >= ... the value counts (inf when the class has
    fewer than l values). Recursive (c, l)-diversity holds iff this ratio is below c."""
    order = np.lexsort((-vc.count, vc.cls))
    cls, cnt = vc.cls[order], vc.count[order].astype(np.float64)
    starts = np.concatenate(([0], np.cumsum(vc.distinct)[:-1]))
    rank = np.arange(cls.size) - starts[cls]
    top = cnt[starts] if cls.size else np.zeros(vc.sizes.size)
    tail = np.bincount(cls, weights=np.where(rank >= l - 1, cnt, 0.0), minlength=vc.sizes.size)
    with np.errstate(divide="ignore"):
        return np.where(tail > 0, top / np.where(tail > 0, tail, 1.0), np.inf)


def _is_number(label: str) -> bool:
    try:
        return math.isfinite(float(label))
    except ValueError:
        return False


def value_order(labels: tuple[str, ...]) -> np.ndarray:
    """rank[code] = position of the value in the order used by the ordered distance: numeric when every
    label is a number, else the labels' string order (codes are already sorted that way)."""
    if labels and all(_is_number(v) for v in labels):
        order = np.argsort(np.array([float(v) for v in labels]), kind="stable")
    else:
        order = np.argsort(np.array(labels, dtype=object), kind="stable") if labels else np.zeros(0, np.int64)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    return rank


_GLOBAL: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _global_distribution(table: EncodedTable, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The value distribution of the whole table (t-closeness' reference) and the value ranks; cached."""
    per_table = _GLOBAL.setdefault(table, {})
    if column not in per_table:
        codes, labels = sensitive_column(table, column)
        q = np.bincount(codes, minlength=len(labels)).astype(np.float64) / max(table.n, 1)
        per_table[column] = (q, value_order(labels))
    return per_table[column]


def equal_distance(vc: ValueCounts, q: np.ndarray) -> np.ndarray:
    """EMD with equal ground distance (= total variation): 1/2 sum_v |p_v - q_v| per class.

    Values absent from a class contribute q_v, so 1/2 (1 + sum over present v of (|p_v - q_v| - q_v))."""
    p = vc.count / vc.sizes[vc.cls]
    qv = q[vc.value]
    present = np.bincount(vc.cls, weights=np.abs(p - qv) - qv, minlength=vc.sizes.size)
    return np.clip(0.5 * (1.0 + present), 0.0, 1.0)


def ordered_distance(vc: ValueCounts, q: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """EMD with ordered ground distance |i - j| / (m - 1) (Li et al.): per class,
    1/(m-1) * sum_i |sum_{j<=i} (p_j - q_j)| over the m values in order. Dense in chunks of classes."""
    m = q.size
    count = vc.sizes.size
    out = np.zeros(count)
    if m <= 1 or count == 0:
        return out
    q_ordered = np.empty(m)
    q_ordered[rank] = q
    cum_q = np.cumsum(q_ordered)
    p = vc.count / vc.sizes[vc.cls]
    pos = rank[vc.value]
    chunk = max(1, _CHUNK_CELLS // m)
    for start in range(0, count, chunk):
        stop = min(start + chunk, count)
        lo, hi = np.searchsorted(vc.cls, [start, stop])
        dense = np.zeros((stop - start) * m)
        dense[(vc.cls[lo:hi] - start) * m + pos[lo:hi]] = p[lo:hi]
        cum_p = np.cumsum(dense.reshape(stop - start, m), axis=1)
        out[start:stop] = np.abs(cum_p - cum_q).sum(axis=1) / (m - 1)
    return np.clip(out, 0.0, 1.0)


# --- the models ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DistinctLDiversity:
    """Every released class holds at least l distinct values of the sensitive attribute."""

    column: str
    l: int  # noqa: E741 (l is the model's name for it)
    name: str = "distinct-l-diversity"
    needs_rows: bool = True
    monotone_with_suppression: bool = True

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        return value_counts(partition, table, self.column).distinct < self.l

    def describe(self) -> dict:
        return {"model": "l-diversity", "variant": "distinct", "l": self.l, "sensitive": self.column}


@dataclass(frozen=True)
class EntropyLDiversity:
    """Every released class has sensitive-value entropy -sum p log p >= log l."""

    column: str
    l: float  # noqa: E741 (l is the model's name for it)
    name: str = "entropy-l-diversity"
    needs_rows: bool = True
    monotone_with_suppression: bool = False

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        h = class_entropy(value_counts(partition, table, self.column))
        return h < math.log(self.l) - TOLERANCE

    def describe(self) -> dict:
        return {"model": "l-diversity", "variant": "entropy", "l": self.l, "sensitive": self.column}


@dataclass(frozen=True)
class RecursiveCLDiversity:
    """Recursive (c, l)-diversity: with value counts r_1 >= r_2 >= ... >= r_m in a class,
    r_1 < c (r_l + r_{l+1} + ... + r_m). A class with fewer than l values breaks it."""

    column: str
    c: float
    l: int  # noqa: E741 (l is the model's name for it)
    name: str = "recursive-cl-diversity"
    needs_rows: bool = True
    monotone_with_suppression: bool = False

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        return ~(recursive_ratio(value_counts(partition, table, self.column), self.l) < self.c)

    def describe(self) -> dict:
        return {"model": "l-diversity", "variant": "recursive", "c": self.c, "l": self.l,
                "sensitive": self.column}


@dataclass(frozen=True)
class TCloseness:
    """The distribution of the sensitive values in every released class is within EMD t of their
    distribution in the whole table. `distance`: "equal" (categorical) or "ordered" (ordered values)."""

    column: str
    t: float
    distance: str = "equal"
    name: str = "t-closeness"
    needs_rows: bool = True
    monotone_with_suppression: bool = False

    def __post_init__(self) -> None:
        if self.distance not in DISTANCES:
            raise InputError(f"unknown t-closeness distance {self.distance!r}; choose equal or ordered")

    def distances(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        vc = value_counts(partition, table, self.column)
        q, rank = _global_distribution(table, self.column)
        return equal_distance(vc, q) if self.distance == "equal" else ordered_distance(vc, q, rank)

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        return self.distances(partition, table) > self.t + TOLERANCE

    def describe(self) -> dict:
        return {"model": self.name, "t": self.t, "distance": self.distance, "sensitive": self.column}


DISTANCES = ("equal", "ordered")
L_VARIANTS = ("distinct", "entropy", "recursive")


def l_diversity(column: str, l: float, variant: str = "distinct", c: float | None = None) -> PrivacyModel:  # noqa: E741 (l is the model's name for it)
    """The l-diversity model of a variant; InputError for parameters that cannot work."""
    if variant not in L_VARIANTS:
        raise InputError(f"unknown l-diversity variant {variant!r}; choose distinct, entropy or recursive")
    if not isinstance(l, (int, float)) or l < 1:
        raise InputError(f"l must be a number >= 1, got {l}")
    if variant == "entropy":
        return EntropyLDiversity(column, float(l) if not float(l).is_integer() else int(l))
    if not float(l).is_integer():
        raise InputError(f"l must be a whole number for {variant} l-diversity, got {l}")
    if variant == "distinct":
        return DistinctLDiversity(column, int(l))
    if c is None or not c > 0:
        raise InputError(f"recursive (c, l)-diversity needs c > 0 (--c), got {c}")
    return RecursiveCLDiversity(column, float(c), int(l))


def t_closeness(column: str, t: float, distance: str = "equal") -> TCloseness:
    if not 0.0 <= t <= 1.0:
        raise InputError(f"t of t-closeness must be in [0, 1], got {t}")
    return TCloseness(column, float(t), distance)


def model_from_description(d: Mapping[str, object]) -> PrivacyModel:
    """Rebuild a model from its `describe()` dict (as saved in a report)."""
    kind = d.get("model")
    if kind == "k-anonymity":
        return KAnonymity(int(d["k"]))  # type: ignore[arg-type]
    if kind == "l-diversity":
        return l_diversity(str(d["sensitive"]), d["l"], str(d.get("variant", "distinct")),  # type: ignore[arg-type]
                           d.get("c"))  # type: ignore[arg-type]
    if kind == "t-closeness":
        return t_closeness(str(d["sensitive"]), float(d["t"]), str(d.get("distance", "equal")))  # type: ignore[arg-type]
    raise InputError(f"unknown privacy model in the report: {dict(d)!r}")


def sensitive_figures(partition: Partition, released: np.ndarray, table: EncodedTable, column: str,
                      recursive_l: int | None = None) -> dict:
    """The privacy figures of the released classes (`released[c]` true) for one sensitive attribute:
    the least distinct l, the least entropy l (exp of the least entropy), the largest equal and ordered
    t-closeness distances, and with `recursive_l` the largest r_1 / (r_l + ... + r_m) (recursive (c, l)
    holds for every c above it). None when nothing is released."""
    vc = value_counts(partition, table, column)
    if not released.any():
        return {"sensitive": column, "classes": 0, "min_distinct_l": None, "min_entropy_l": None,
                "max_t_equal": None, "max_t_ordered": None}
    q, rank = _global_distribution(table, column)
    figures = {
        "sensitive": column,
        "classes": int(released.sum()),
        "min_distinct_l": int(vc.distinct[released].min()),
        "min_entropy_l": float(np.exp(class_entropy(vc)[released].min())),
        "max_t_equal": float(equal_distance(vc, q)[released].max()),
        "max_t_ordered": float(ordered_distance(vc, q, rank)[released].max()),
    }
    if recursive_l is not None:
        figures["recursive_l"] = int(recursive_l)
        figures["max_recursive_ratio"] = float(recursive_ratio(vc, recursive_l)[released].max())
    return figures
