"""A threshold on the average re-identification risk: mean prosecutor risk over the released records <= R.

ARX's `AverageReidentificationRisk` (SPEC section 13). A record's prosecutor risk is 1/|E| for its class E, so
the mean over the n_r released records is (number of released classes) / n_r (SPEC section 10): the figure
`kgen risk` reports as the mean prosecutor risk, computed by `average_prosecutor_risk` here for both.

The model judges the released classes together, not one class at a time (`sample_based`): the evaluator asks
it after the per-class models, with the classes they suppress, and it suppresses the smallest remaining
classes until the mean risk is at most R. Smallest first is optimal: suppressing m classes raises the risk
budget by m/R - (their rows), so for every m the m smallest classes are best, and the least m that meets R
suppresses the fewest rows (an empty release meets any R, as in ARX). Monotone with and without suppression:
merging two classes never adds a released class nor removes a released row (docs/privacy-models.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from lattice.errors import InputError


def average_prosecutor_risk(sizes: np.ndarray) -> float:
    """The mean prosecutor risk of released classes of `sizes`: (1/n_r) sum over records of 1/|E| =
    classes / n_r; 0 when nothing is released. The one definition `kgen risk` and this model share."""
    rows = int(np.asarray(sizes).sum())
    return np.asarray(sizes).size / rows if rows else 0.0


def smallest_to_suppress(sizes: np.ndarray, bound: float, first_rows: np.ndarray | None = None) -> np.ndarray:
    """The indices (into `sizes`) of the fewest smallest classes whose suppression brings the mean
    prosecutor risk of the rest to at most `bound` (TOLERANCE absorbs rounding); empty when it already is.
    Among classes of equal size the one whose first row comes first goes first (`first_rows`, as ARX orders
    them by their representative row): which of them is suppressed does not change the count of rows or
    classes, but it decides the released rows and every metric that reads them (ARX's non-monotonic entropy
    in ARX's RiskBased case 0); without rows, the classes' own order."""
    order = np.argsort(sizes, kind="stable") if first_rows is None else np.lexsort((first_rows, sizes))
    rows_left = int(sizes.sum()) - np.concatenate(([0], np.cumsum(sizes[order])))
    classes_left = sizes.size - np.arange(sizes.size + 1)
    meets = classes_left <= (bound + TOLERANCE) * rows_left  # m = sizes.size leaves nothing: always met
    return order[: int(np.argmax(meets))]


def first_rows(partition: Partition) -> np.ndarray:
    """Per class, the index of its first row (the partition must map rows to classes)."""
    assert partition.rows is not None
    first = np.full(partition.count, partition.rows.size, dtype=np.int64)
    np.minimum.at(first, partition.rows, np.arange(partition.rows.size, dtype=np.int64))
    return first


def arx_order(partition: Partition, kept: np.ndarray) -> np.ndarray:
    """The classes `kept` (indices) ranked as ARX ranks the classes its sample-based criteria may suppress,
    as positions into `kept`: by size, then by the class's own loss where the objective gives one
    (`Partition.ties`, ARX's Loss), then by first row (ARX's representative); the classes' own order without
    rows."""
    sizes = partition.sizes[kept]
    if partition.rows is None:
        return np.argsort(sizes, kind="stable")
    keys = [first_rows(partition)[kept]] + ([] if partition.ties is None else [partition.ties[kept]])
    return np.lexsort((*keys, sizes))


@dataclass(frozen=True)
class AverageRisk:
    """The mean prosecutor risk of the released records, classes / released rows, is at most `r`.

    Parameters
    ----------
    r : float
        The largest mean risk allowed, in (0, 1].
    """

    r: float
    name: ClassVar[str] = "average-risk"
    needs_rows: ClassVar[bool] = False
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    sample_based: ClassVar[bool] = True
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.r) or not 0.0 < self.r <= 1.0:
            raise InputError(f"--max-average-risk must be a number in (0, 1], got {self.r!r}")

    @property
    def params(self) -> dict:
        return {"max_average_risk": self.r}

    def enforce(self, partition: Partition, table: EncodedTable, suppressed: np.ndarray,
                limit: int | None = None) -> np.ndarray:
        """The classes to suppress besides `suppressed` (those other models suppress) so that the mean risk of
        the rest is at most r: the fewest smallest ones (`limit`, the suppression limit, is not needed: the
        count is found directly)."""
        kept = np.flatnonzero(~suppressed)
        out = np.zeros(partition.count, dtype=bool)
        ranked = arx_order(partition, kept)
        out[kept[ranked[smallest_to_suppress(partition.sizes[kept][ranked], self.r)]]] = True
        return out

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """The model alone: the smallest classes to suppress (see `enforce`)."""
        return self.enforce(partition, table, np.zeros(partition.count, dtype=bool))

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def summary(d: Mapping[str, object]) -> str:
    return f"average re-identification risk <= {d.get('max_average_risk')} (classes / released rows)"


FAMILY = ModelFamily(
    name="average-risk",
    parameters=(
        Parameter("max_average_risk", Constraint("max-average-risk", "real", low=0.0, high=1.0, above=True,
                                                 optional=True), metavar="R", stricter="lower",
                  help="a threshold on the mean prosecutor risk of the released records (classes / released "
                       "rows, `kgen risk`'s mean): the smallest classes are suppressed until it is met"),
    ),
    build=lambda values, sensitive: [AverageRisk(values["max_average_risk"])],  # type: ignore[arg-type]
    read=lambda d: AverageRisk(d.get("max_average_risk")),  # type: ignore[arg-type]
    summary=summary, order=60,
)
