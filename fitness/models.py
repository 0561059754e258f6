"""Privacy models: constraints on the classes of a node. A class that breaks one is suppressed.

Every model implements `PrivacyModel` (after ARX's privacy criteria): a per-class check vectorized over the
class table (`violating`), the smallest class it allows (`min_class_size`), whether feasibility stays
monotone under generalization without and with suppression, what it reads (`needs_rows`), and, when it is
nothing but counts, the `CountRule` an array kernel evaluates without the model's code. The evaluator's fast
paths ask these, never a model's type: see docs/privacy-models.md, "Adding a model".

Models on a sensitive attribute (l-diversity, t-closeness) read `table.sensitive[column] = (codes, labels)`
and `partition.rows`; they count the (class, sensitive value) pairs with `fitness.kernel.count_keys`, never
with a Python loop over rows or classes.

The ordered t-closeness distance needs an order of the sensitive values: numeric order when every label
parses as a number, otherwise the labels' string order (so one missing or text value among numbers makes
the order lexicographic: "100" < "20"). See docs/privacy-models.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from fitness.encoding import EncodedTable, select_rows
from fitness.grassberger import grassberger_entropy
from fitness.kernel import count_keys
from fitness.labels import is_number
from fitness.parameters import is_real, require_whole
from fitness.partition import Partition
from lattice.errors import InputError

# Equal to the threshold counts as satisfying; rounding must not flip a class that meets it exactly.
TOLERANCE = 1e-9
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class CountRule:
    """A model that is nothing but counts per class, in the form array kernels evaluate without the model's
    code (`fitness.xp_kernel.ModelSpec`): a class breaks it iff it has fewer than `min_rows` rows, or, with a
    `column`, fewer than `min_distinct` distinct values of that sensitive column.

    Parameters
    ----------
    min_rows : int
        Classes with fewer rows break the model.
    column : str, optional
        The sensitive column whose distinct values are counted (None: the rule is the row count alone).
    min_distinct : int
        Classes with fewer distinct values of `column` break the model.
    """

    min_rows: int
    column: str | None = None
    min_distinct: int = 0


MEASURES = ("entropy", "recursive", "t-equal", "t-ordered")


@dataclass(frozen=True)
class MeasureRule:
    """A model that compares one per-class measure of a sensitive column with a bound, in the form array
    kernels evaluate without the model's code (`fitness.xp_measures`): what a GPU needs to evaluate entropy and
    recursive l-diversity and t-closeness without calling the model. A class breaks the rule iff

    - "entropy": its entropy (natural log) of the column's values is below `bound` (= ln l - TOLERANCE);
    - "recursive": r_1 / (r_l + ... + r_m) is not below `bound` (= c), `l` giving where the tail starts;
    - "t-equal" / "t-ordered": its equal / ordered EMD to the whole table's distribution is above `bound`
      (= t + TOLERANCE).

    The bound carries the model's TOLERANCE, so the kernel compares exactly as `violating` does.

    Parameters
    ----------
    measure : str
        One of `MEASURES`.
    column : str
        The sensitive column.
    bound : float
        The bound the measure is compared with (see above).
    l : int
        With "recursive", where the tail starts (else 0).
    """

    measure: str
    column: str
    bound: float
    l: int = 0  # noqa: E741 (the model's name for it)


class PrivacyModel(Protocol):
    """The interface every privacy model implements (ARX's criteria: minimal class size, monotonicity).

    Attributes
    ----------
    name : str
        Short name for messages ("k-anonymity", "entropy-l-diversity", ...).
    params : dict
        The model's parameters for reports (`describe()` is {"model": family} plus these).
    needs_rows : bool
        `violating` reads `partition.rows` (row -> class) and the sensitive columns; when False it reads the
        class sizes alone, so the evaluator may hand it sizes counted by any kernel (roll-up, bitsets).
    min_class_size : int
        Every class with fewer rows breaks the model (k for k-anonymity, l for distinct l-diversity, 1 for
        t-closeness). The evaluator's floor is the largest over its models: classes below it are suppressed
        without asking further (the bitset kernel's early stop).
    monotone : bool
        Without suppression, a node's generalizations are feasible when it is (true of every model here).
    monotone_with_suppression : bool
        The same when classes may be suppressed (t > 0): SPEC section 3.
    count_rule : CountRule or None
        The model as counts for array kernels (the device evaluator); None when it is more than that.
    measure_rule : MeasureRule or None
        The model as a per-class measure and a bound for array kernels; None for a count rule or a model an
        array kernel cannot evaluate (the device evaluator then falls back to the CPU).

    A model may also declare `sample_based = True` (absent means False): it judges the released classes
    together, not one at a time (ARX's sample-based criteria, e.g. an average-risk threshold). The evaluator
    then asks it last, `enforce(partition, table, suppressed, limit) -> mask`, with the classes the per-class
    models suppress and the most rows the limit allows, for the further classes to suppress
    (`fitness.privacy.average_risk`, `fitness.privacy.uniqueness`).

    A model whose verdict depends on the models beside it may declare `beside(others) -> model`: the model as
    it runs next to `others` (delta-presence under ARX's order of checks lets population classes without a
    subset row pass only beside a model with a minimal class size). `in_company` asks it.
    """

    name: str
    needs_rows: bool
    min_class_size: int
    monotone: bool
    monotone_with_suppression: bool
    count_rule: CountRule | None
    measure_rule: MeasureRule | None

    @property
    def params(self) -> dict: ...

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Per class of `partition`, whether it breaks the model (a bool mask of `partition.count`)."""
        ...

    def describe(self) -> dict:
        """{"model": family, **params}: what a report saves and `fitness.privacy.read_model` reads back."""
        ...


def in_company(models: Sequence[PrivacyModel]) -> list[PrivacyModel]:
    """The models as they run together: each that declares `beside` is handed the others (idempotent).

    Why here and not in each model's builder: the run builds models family by family and `kgen apply` reads
    them one description at a time; the evaluator and the registry both settle the combination through this
    one function, so a model never judges alone what depends on its company.
    """
    return [m.beside([o for o in models if o is not m]) if hasattr(m, "beside") else m  # type: ignore[attr-defined]
            for m in models]


@dataclass(frozen=True)
class KAnonymity:
    """Every released class has at least k rows.

    Parameters
    ----------
    k : int
        The least class size.
    """

    k: int
    name: ClassVar[str] = "k-anonymity"
    needs_rows: ClassVar[bool] = False
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        require_whole("k", self.k, 1)

    @property
    def min_class_size(self) -> int:
        return self.k

    @property
    def count_rule(self) -> CountRule:
        return CountRule(self.k)

    @property
    def params(self) -> dict:
        return {"k": self.k}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes smaller than k."""
        return partition.sizes < self.k

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


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
    counted = count_keys(key, count * card, values=True)
    assert counted.values is not None
    cls = counted.values // card
    return ValueCounts(cls, counted.values % card, counted.sizes, partition.sizes, np.bincount(cls, minlength=count))


def class_entropy(vc: ValueCounts) -> np.ndarray:
    """Shannon entropy (natural log) of the sensitive values in each class."""
    cnt = vc.count.astype(np.float64)
    weighted = np.bincount(vc.cls, weights=cnt * np.log(cnt), minlength=vc.sizes.size)
    sizes = vc.sizes.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.log(sizes) - weighted / sizes
    return np.maximum(np.nan_to_num(h), 0.0)


def class_recursive_ratio(vc: ValueCounts, l: int) -> np.ndarray:  # noqa: E741 (l is the model's name for it)
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


def value_order(labels: tuple[str, ...]) -> np.ndarray:
    """rank[code] = position of the value in the order used by the ordered distance: numeric when every
    label is a number, else the labels' string order (codes are already sorted that way)."""
    if labels and all(is_number(v) for v in labels):
        order = np.argsort(np.array([float(v) for v in labels]), kind="stable")
    else:
        order = np.argsort(np.array(labels, dtype=object), kind="stable") if labels else np.zeros(0, np.int64)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    return rank


def reference_distribution(table: EncodedTable, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The value distribution of the whole table (t-closeness' reference q) and the value ranks of the
    ordered distance; derived once per table and kept by it (`EncodedTable.derived`)."""

    def build() -> tuple[np.ndarray, np.ndarray]:
        codes, labels = sensitive_column(table, column)
        q = np.bincount(codes, minlength=len(labels)).astype(np.float64) / max(table.n, 1)
        return q, value_order(labels)

    return table.derived(("t-closeness reference", column), build)


def restricted(table: EncodedTable, rows: np.ndarray) -> EncodedTable:
    """The rows `rows` of a table alone (`fitness.encoding.select_rows`), whose t-closeness still measures each
    class against the whole table's distribution: a class of these rows is released beside the rest of the
    table, and the release's reference is the whole table's (what local recoding needs)."""
    sub = select_rows(table, rows)
    for column in table.sensitive:
        reference = reference_distribution(table, column)
        sub.derived(("t-closeness reference", column), lambda reference=reference: reference)
    return sub


def equal_distance(vc: ValueCounts, q: np.ndarray) -> np.ndarray:
    """EMD with equal ground distance (= total variation): 1/2 sum_v |p_v - q_v| per class.

    Values absent from a class contribute q_v, so 1/2 (1 + sum over present v of (|p_v - q_v| - q_v))."""
    p = vc.count / vc.sizes[vc.cls]
    qv = q[vc.value]
    present = np.bincount(vc.cls, weights=np.abs(p - qv) - qv, minlength=vc.sizes.size)
    return np.clip(0.5 * (1.0 + present), 0.0, 1.0)


def class_beta(vc: ValueCounts, q: np.ndarray) -> np.ndarray:
    """Per class, the largest relative gain (p(s|E) - p(s)) / p(s) over the values s it holds: the least beta
    for which it meets basic beta-likeness (`fitness.privacy.likeness`)."""
    qv = q[vc.value]
    out = np.full(vc.sizes.size, -np.inf)
    np.maximum.at(out, vc.cls, (vc.count / vc.sizes[vc.cls] - qv) / qv)
    return out


def class_disclosure(vc: ValueCounts, q: np.ndarray) -> np.ndarray:
    """Per class, the largest |log2(p(s|E) / p(s))| over the values s it holds: it meets delta-disclosure
    privacy for every delta above it (`fitness.privacy.disclosure`)."""
    out = np.zeros(vc.sizes.size)
    np.maximum.at(out, vc.cls, np.abs(np.log2(vc.count / vc.sizes[vc.cls] / q[vc.value])))
    return out


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



# --- the models on a sensitive attribute ------------------------------------------------------------------

@dataclass(frozen=True)
class DistinctLDiversity:
    """Every released class holds at least l distinct values of the sensitive attribute.

    Parameters
    ----------
    column : str
        The sensitive column.
    l : int
        The least number of distinct values per class.
    """

    column: str
    l: int  # noqa: E741 (l is the model's name for it)
    name: ClassVar[str] = "distinct-l-diversity"
    needs_rows: ClassVar[bool] = True
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        require_whole("l", self.l, 1, " for distinct l-diversity")

    @property
    def min_class_size(self) -> int:
        return self.l  # fewer rows cannot hold l distinct values

    @property
    def count_rule(self) -> CountRule:
        return CountRule(self.l, self.column, self.l)

    @property
    def params(self) -> dict:
        return {"variant": "distinct", "l": self.l, "sensitive": self.column}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes with fewer than l distinct sensitive values."""
        return value_counts(partition, table, self.column).distinct < self.l

    def describe(self) -> dict:
        return {"model": "l-diversity", **self.params}


def _least_rows_for_entropy(l: float) -> int:  # noqa: E741 (l is the model's name for it)
    """The fewest rows whose entropy can reach ln l within TOLERANCE (s rows have entropy at most ln s)."""
    target = math.log(l) - TOLERANCE
    rows = max(1, math.ceil(l))
    while rows > 1 and math.log(rows - 1) >= target:
        rows -= 1
    return rows


@dataclass(frozen=True)
class EntropyLDiversity:
    """Every released class has sensitive-value entropy >= ln l: Shannon's -sum p ln p, or Grassberger's
    estimate H_G (`fitness.grassberger`, ARX's `EntropyEstimator.GRASSBERGER`), which also asks for at least
    ceil(l) distinct values per class, as ARX does.

    Parameters
    ----------
    column : str
        The sensitive column.
    l : float
        The entropy bound's l (may be fractional).
    estimator : str
        "shannon" (the plug-in estimate, Machanavajjhala et al.) or "grassberger".

    Shannon's is monotone under generalization without suppression (entropy is concave: a merged class is at
    least as diverse as its least diverse part). Grassberger's is not: two classes of five different values,
    one row each (H_G = 2.667 >= ln 5), merge into one of five values, two rows each (H_G = 1.575 < ln 5).
    ARX declares both monotone without suppression; kgen declares Grassberger's not monotone, so no search
    prunes on it and certify refuses it (tests/test_grassberger.py finds such nodes on random tables).
    """

    column: str
    l: float  # noqa: E741 (l is the model's name for it)
    estimator: str = "shannon"
    name: ClassVar[str] = "entropy-l-diversity"
    needs_rows: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[CountRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.l) or not math.isfinite(self.l) or self.l < 1:
            raise InputError(f"l must be a number >= 1, got {self.l}")
        if self.estimator not in ESTIMATORS:
            raise InputError(f"unknown entropy estimator {self.estimator!r}; choose shannon or grassberger")

    @property
    def grassberger(self) -> bool:
        return self.estimator == "grassberger"

    @property
    def monotone(self) -> bool:
        return not self.grassberger

    @property
    def min_class_size(self) -> int:
        return math.ceil(self.l) if self.grassberger else _least_rows_for_entropy(self.l)

    @property
    def measure_rule(self) -> MeasureRule | None:
        # Grassberger's G has no array-kernel form yet: the device evaluator falls back to the CPU for it
        return None if self.grassberger else MeasureRule("entropy", self.column, math.log(self.l) - TOLERANCE)

    @property
    def params(self) -> dict:
        extra = {"estimator": self.estimator} if self.grassberger else {}  # Shannon's reports stay as they were
        return {"variant": "entropy", "l": self.l, **extra, "sensitive": self.column}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes whose sensitive-value entropy is below ln l (TOLERANCE absorbs rounding); with Grassberger's
        estimator also those with fewer than ceil(l) distinct values."""
        vc = value_counts(partition, table, self.column)
        if not self.grassberger:
            return class_entropy(vc) < math.log(self.l) - TOLERANCE
        h = grassberger_entropy(vc.count, vc.cls, partition.count)
        return (h < math.log(self.l) - TOLERANCE) | (vc.distinct < math.ceil(self.l))

    def describe(self) -> dict:
        return {"model": "l-diversity", **self.params}


@dataclass(frozen=True)
class RecursiveCLDiversity:
    """Recursive (c, l)-diversity: with value counts r_1 >= r_2 >= ... >= r_m in a class,
    r_1 < c (r_l + r_{l+1} + ... + r_m). A class with fewer than l values breaks it.

    Parameters
    ----------
    column : str
        The sensitive column.
    c : float
        The bound on r_1 relative to the tail (c > 0).
    l : int
        Where the tail starts.
    """

    column: str
    c: float
    l: int  # noqa: E741 (l is the model's name for it)
    name: ClassVar[str] = "recursive-cl-diversity"
    needs_rows: ClassVar[bool] = True
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[CountRule | None] = None

    def __post_init__(self) -> None:
        require_whole("l", self.l, 1, " for recursive l-diversity")
        if not is_real(self.c) or not math.isfinite(self.c) or not self.c > 0:
            raise InputError(f"recursive (c, l)-diversity needs c > 0 (--c), got {self.c}")

    @property
    def min_class_size(self) -> int:
        return self.l  # fewer rows hold fewer than l values

    @property
    def measure_rule(self) -> MeasureRule:
        return MeasureRule("recursive", self.column, self.c, self.l)

    @property
    def params(self) -> dict:
        return {"variant": "recursive", "c": self.c, "l": self.l, "sensitive": self.column}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes where r_1 is not below c times the tail r_l + ... + r_m."""
        return ~(class_recursive_ratio(value_counts(partition, table, self.column), self.l) < self.c)

    def describe(self) -> dict:
        return {"model": "l-diversity", **self.params}


@dataclass(frozen=True)
class TCloseness:
    """The distribution of the sensitive values in every released class is within EMD t of their
    distribution in the whole table.

    Parameters
    ----------
    column : str
        The sensitive column.
    t : float
        The largest earth mover's distance allowed, in [0, 1].
    distance : str
        "equal" (categorical values, total variation) or "ordered" (ordered values, Li et al.).
    """

    column: str
    t: float
    distance: str = "equal"
    name: ClassVar[str] = "t-closeness"
    needs_rows: ClassVar[bool] = True
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[CountRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.t) or not 0.0 <= self.t <= 1.0:
            raise InputError(f"t of t-closeness must be in [0, 1], got {self.t}")
        if self.distance not in DISTANCES:
            raise InputError(f"unknown t-closeness distance {self.distance!r}; choose equal or ordered")

    @property
    def measure_rule(self) -> MeasureRule:
        return MeasureRule(f"t-{self.distance}", self.column, self.t + TOLERANCE)

    @property
    def params(self) -> dict:
        return {"t": self.t, "distance": self.distance, "sensitive": self.column}

    def distances(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Per class, its EMD to the whole table's distribution."""
        vc = value_counts(partition, table, self.column)
        q, rank = reference_distribution(table, self.column)
        return equal_distance(vc, q) if self.distance == "equal" else ordered_distance(vc, q, rank)

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes farther than t (TOLERANCE absorbs rounding)."""
        return self.distances(partition, table) > self.t + TOLERANCE

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


DISTANCES = ("equal", "ordered")
L_VARIANTS = ("distinct", "entropy", "recursive")
ESTIMATORS = ("shannon", "grassberger")


def l_diversity(column: str, l: float, variant: str = "distinct", c: float | None = None,  # noqa: E741 (l is the model's name for it)
                estimator: str = "shannon") -> PrivacyModel:
    """The l-diversity model of a variant; InputError for parameters that cannot work (an entropy estimator
    other than Shannon's is refused for the other variants: it estimates nothing there)."""
    if variant not in L_VARIANTS:
        raise InputError(f"unknown l-diversity variant {variant!r}; choose distinct, entropy or recursive")
    if not is_real(l) or l < 1:
        raise InputError(f"l must be a number >= 1, got {l}")
    if estimator != "shannon" and variant != "entropy":
        raise InputError(f"the entropy estimator {estimator!r} is for entropy l-diversity only "
                         f"(--l-variant entropy), not {variant} l-diversity")
    if variant == "entropy":
        return EntropyLDiversity(column, float(l) if not float(l).is_integer() else int(l), estimator)
    whole = int(l) if float(l).is_integer() else l  # a fractional l is refused by the model, with its name
    if variant == "distinct":
        return DistinctLDiversity(column, whole)  # type: ignore[arg-type]
    return RecursiveCLDiversity(column, float(c) if is_real(c) else c, whole)  # type: ignore[arg-type]


def t_closeness(column: str, t: float, distance: str = "equal") -> TCloseness:
    """The t-closeness model; InputError for t outside [0, 1] or an unknown distance."""
    return TCloseness(column, float(t) if is_real(t) else t, distance)


def privacy_figures(partition: Partition, released: np.ndarray, table: EncodedTable, column: str,
                    recursive_l: int | None = None, grassberger: bool = False) -> dict:
    """The privacy figures of the released classes for one sensitive attribute (the report's `privacy`).

    Parameters
    ----------
    partition : Partition
        The node's classes, with `rows`.
    released : np.ndarray
        Per class, whether it is released (not suppressed).
    table : EncodedTable
        The table holding the sensitive column.
    column : str
        The sensitive column.
    recursive_l : int, optional
        With recursive (c, l)-diversity, its l: the figures then include the largest r_1 / (r_l + ... + r_m)
        (the model holds for every c above it).
    grassberger : bool
        With entropy l-diversity under Grassberger's estimator on the column: the figures then include
        min_grassberger_l, exp of the least H_G (the model's l holds up to it, given ceil(l) distinct values).

    Returns
    -------
    dict
        sensitive, classes, min_distinct_l, min_entropy_l (exp of the least entropy), max_t_equal and
        max_t_ordered (the largest equal and ordered t-closeness distances), max_beta (the largest relative
        gain of a value: basic beta-likeness holds for every beta from it), max_delta_disclosure (the largest
        |log2(p(s|E) / p(s))|: delta-disclosure privacy holds for every delta above it), and with `recursive_l`
        recursive_l and max_recursive_ratio; the figures are None when nothing is released.
    """
    vc = value_counts(partition, table, column)
    if not released.any():
        return {"sensitive": column, "classes": 0, "min_distinct_l": None, "min_entropy_l": None,
                "max_t_equal": None, "max_t_ordered": None, "max_beta": None, "max_delta_disclosure": None}
    q, rank = reference_distribution(table, column)
    figures = {
        "sensitive": column,
        "classes": int(released.sum()),
        "min_distinct_l": int(vc.distinct[released].min()),
        "min_entropy_l": float(np.exp(class_entropy(vc)[released].min())),
        "max_t_equal": float(equal_distance(vc, q)[released].max()),
        "max_t_ordered": float(ordered_distance(vc, q, rank)[released].max()),
        "max_beta": float(class_beta(vc, q)[released].max()),
        "max_delta_disclosure": float(class_disclosure(vc, q)[released].max()),
    }
    if grassberger:
        h_g = grassberger_entropy(vc.count, vc.cls, partition.count)
        figures["min_grassberger_l"] = float(np.exp(h_g[released].min()))
    if recursive_l is not None:
        figures["recursive_l"] = int(recursive_l)
        figures["max_recursive_ratio"] = float(class_recursive_ratio(vc, recursive_l)[released].max())
    return figures
