"""A threshold on population uniqueness: the estimated share of the population's records that are unique on
the QIs, from the released classes' size histogram and the sampling fraction, is at most U.

ARX's `PopulationUniqueness` criterion (SPEC section 13) with its estimators: Pitman, Zayatz, SNB or Dankar et
al.'s rule choosing among them, the functions of `fitness.uniqueness` (the same figures `kgen risk
--sampling-fraction F --uniqueness-model M` reports). The population has round(rows / F) records, rows the
table's rows, suppressed ones included, as ARX counts them.

Like the average risk it judges the released classes together (`sample_based`), after the per-class models
have suppressed theirs, and it is enforced as ARX's `RiskBasedCriterion.enforce` does: when the estimate over
the remaining classes is above U, the smallest classes are suppressed (ties: ARX's order, `arx_order`), how many
found by ARX's binary search over that count, which stops once a failing count passes the suppression limit
(`arx_suppression_count`). The estimate is not monotone in that count, so the count found need not be the least
that meets U, but it always meets it (the released file is what `kgen check` verifies: the checker's rule
estimates again from the file's released classes); when it cannot be found within the limit every remaining
class is marked, so the node is infeasible unless the limit allows releasing nothing. Not monotone, with or
without suppression: merging classes changes the histogram the estimators fit, and an estimate may rise
(docs/privacy-models.md); the searches treat it as they treat entropy l-diversity, and certify refuses it.
Each estimate is cached with the table per class-size histogram (`estimated_share`): the binary search and
neighbouring nodes ask for the same histograms, and Pitman's fit (ARX's Newton-Raphson run) costs 2 to 20 ms
on Adult's. With Dankar's rule a failed Pitman fit fails the node (no fallback on Zayatz), as in ARX's criterion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from fitness.privacy.average_risk import arx_order
from fitness.privacy.common import SAMPLING_FRACTION
from fitness.uniqueness import DEFAULT_UNIQUENESS_MODEL, UNIQUENESS_MODELS, population_uniqueness
from lattice.errors import InputError


def estimated_share(sizes: np.ndarray, rows: int, sampling_fraction: float, model: str,
                    cache: dict | None = None) -> float | None:
    """The estimated population-uniqueness share of released classes of `sizes` in a table of `rows` rows
    (None: the estimator found no estimate; Dankar's rule does not fall back on Zayatz when Pitman's fit finds
    none, as ARX's criterion does not). `cache` keeps the estimates per class-size histogram (the binary search
    and neighbouring nodes ask for the same histograms)."""
    values, counts = np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)
    histogram = tuple((int(s), int(c)) for s, c in zip(values, counts) if s > 0)
    key = (histogram, rows, sampling_fraction, model)
    if cache is not None and key in cache:
        return cache[key]
    share = population_uniqueness(dict(histogram), sampling_fraction, rows, model, every=False, fallback=False)["share"]
    found = None if share is None else float(share)  # type: ignore[arg-type]
    if cache is not None:
        cache[key] = found
    return found


def arx_suppression_count(count: int, holds: Callable[[int], bool], over: Callable[[int], bool]) -> int | None:
    """How many of `count` ranked classes ARX's `suppressWhileNotFulfilledBinary` suppresses, or None when ARX
    aborts (the condition fails past the suppression limit).

    `holds(m)` says whether the condition holds once the first m classes are suppressed (`holds(count)`, an
    empty release, holds); `over(m)` whether suppressing the first m passes the suppression limit. Nothing is
    suppressed when it holds already; otherwise the binary search keeps the first mid + 1 classes suppressed,
    moves `high` below mid when the condition holds and `low` above it when it does not, and at the end
    suppresses one more class when the condition still fails. It stops (None: the node is infeasible) as soon as
    the condition fails at a count over the limit, as ARX's `RiskBasedCriterion` aborts: every later count is
    larger. For a condition monotone in m this is the least m that meets it; for the population-uniqueness
    estimates, which are not, it is ARX's answer. The count it ends on is the last one found to meet the
    condition (or the empty release), so it meets it; `holds` is asked once more to make sure (cached), as
    kgen releases no file that does not.
    """
    if holds(0):
        return 0
    low, high = 0, count - 1
    mid = max(low + high, 0) // 2  # low + high >= -1: Java's division truncates -1 / 2 to 0
    while low <= high:
        if holds(mid + 1):
            high = mid - 1
        elif over(mid + 1):
            return None
        else:
            low = mid + 1
        mid = max(low + high, 0) // 2
    m = mid + 1
    if m < count and not holds(m):
        if over(m):
            return None
        m += 1
    return m if holds(m) else None


def arx_suppress(partition: Partition, suppressed: np.ndarray, limit: int | None,
                 holds: Callable[[np.ndarray], bool]) -> np.ndarray:
    """The classes to suppress besides `suppressed` as ARX's `RiskBasedCriterion` does: the remaining classes in
    ARX's order (`arx_order`, smallest first), ARX's count of them (`arx_suppression_count`, which stops once
    more than `limit` rows, with those already suppressed, would go), or every remaining class when that count
    is not found. `holds(sizes)` says whether the criterion holds for the classes of these sizes released.
    One place for the two sample-based thresholds that enforce this way (population and sample uniqueness)."""
    kept = np.flatnonzero(~suppressed)
    order = arx_order(partition, kept)
    ranked = partition.sizes[kept][order]
    already = int(partition.sizes[suppressed].sum())
    prefix = np.concatenate(([0], np.cumsum(ranked)))

    def over(m: int) -> bool:
        return limit is not None and already + int(prefix[m]) > limit

    count = arx_suppression_count(ranked.size, lambda m: holds(ranked[m:]), over)
    out = np.zeros(partition.count, dtype=bool)
    out[kept[order] if count is None else kept[order[:count]]] = True
    return out


@dataclass(frozen=True)
class PopulationUniqueness:
    """The estimated population-uniqueness share of the release is at most `u`.

    Parameters
    ----------
    u : float
        The largest share allowed, in (0, 1].
    sampling_fraction : float
        F = sample rows / population rows, in (0, 1].
    model : str
        The estimator: dankar (the default, ARX's), pitman, zayatz or snb.
    """

    u: float
    sampling_fraction: float
    model: str = DEFAULT_UNIQUENESS_MODEL
    name: ClassVar[str] = "population-uniqueness"
    needs_rows: ClassVar[bool] = False
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = False
    monotone_with_suppression: ClassVar[bool] = False
    sample_based: ClassVar[bool] = True
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.u) or not 0.0 < self.u <= 1.0:
            raise InputError(f"--max-population-uniqueness must be a number in (0, 1], got {self.u!r}")
        if not is_real(self.sampling_fraction) or not 0.0 < self.sampling_fraction <= 1.0:
            raise InputError(f"--sampling-fraction must be a number in (0, 1], got {self.sampling_fraction!r}")
        if self.model not in UNIQUENESS_MODELS:
            raise InputError(f"unknown uniqueness model {self.model!r}; choose {', '.join(UNIQUENESS_MODELS)}")

    @property
    def params(self) -> dict:
        return {"max_population_uniqueness": self.u, "sampling_fraction": self.sampling_fraction,
                "uniqueness_model": self.model}

    def enforce(self, partition: Partition, table: EncodedTable, suppressed: np.ndarray,
                limit: int | None = None) -> np.ndarray:
        """The classes to suppress besides `suppressed` (those other models suppress): ARX's count of the
        smallest remaining ones (`arx_suppression_count`, stopping once `limit`, the most rows that may be
        suppressed, is passed), or every remaining class when the estimate does not hold at that count (or the
        estimator finds none)."""
        rows = max(table.n, int(partition.sizes.sum()))
        cache = table.derived(("population-uniqueness estimates",), dict)

        def holds(sizes: np.ndarray) -> bool:
            share = estimated_share(sizes, rows, float(self.sampling_fraction), self.model, cache)
            return share is not None and share <= self.u + TOLERANCE

        return arx_suppress(partition, suppressed, limit, holds)

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """The model alone (see `enforce`)."""
        return self.enforce(partition, table, np.zeros(partition.count, dtype=bool))

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[PopulationUniqueness]:
    if values.get("sampling_fraction") is None:
        raise InputError("--max-population-uniqueness needs --sampling-fraction F (sample rows / population rows): "
                         "population uniqueness is estimated from the sample")
    return [PopulationUniqueness(values["max_population_uniqueness"], values["sampling_fraction"],  # type: ignore[arg-type]
                                 str(values["uniqueness_model"]))]


def read(d: Mapping[str, object]) -> PopulationUniqueness:
    return PopulationUniqueness(d.get("max_population_uniqueness"), d.get("sampling_fraction"),  # type: ignore[arg-type]
                                str(d.get("uniqueness_model", DEFAULT_UNIQUENESS_MODEL)))


def summary(d: Mapping[str, object]) -> str:
    return (f"population uniqueness <= {d.get('max_population_uniqueness')} ({d.get('uniqueness_model')}, "
            f"sampling fraction {d.get('sampling_fraction')})")


FAMILY = ModelFamily(
    name="population-uniqueness",
    parameters=(
        Parameter("max_population_uniqueness", Constraint("max-population-uniqueness", "real", low=0.0, high=1.0,
                                                          above=True, optional=True), metavar="U",
                  stricter="lower",
                  help="a threshold on the estimated share of population records unique on the QIs (needs "
                       "--sampling-fraction; the estimate `kgen risk` reports): the smallest classes are "
                       "suppressed until it is met, as ARX does"),
        SAMPLING_FRACTION,
        Parameter("uniqueness_model", Constraint("uniqueness model", "choice", choices=UNIQUENESS_MODELS),
                  default=DEFAULT_UNIQUENESS_MODEL,
                  help="the population-uniqueness estimator of --max-population-uniqueness: dankar (ARX's default "
                       "rule), pitman, zayatz or snb"),
    ),
    build=build, read=read, summary=summary, order=65,
)
