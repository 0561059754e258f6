"""A threshold on sample uniqueness: the share of released records that are unique in the sample (in a class of
one on the QIs) is at most U.

ARX's `SampleUniqueness` criterion (SPEC section 13): `getFractionOfRecordsInClassesOfSize(1) <= U` over the
released classes, suppressed rows left out of the count. The share is `sample_uniques_share`, the one
definition `kgen risk` reports as `sample_uniques_share`.

Like the average risk it judges the released classes together (`sample_based`), after the per-class models
have suppressed theirs, and it is enforced as ARX's `RiskBasedCriterion.enforce` does: the smallest classes
suppressed (ties: ARX's order, `arx_order`), how many found by ARX's binary search (`arx_suppression_count`, the
helper population uniqueness uses), which stops once a failing count passes the suppression limit. Here the
condition is monotone in that count: the smallest classes are the uniques, and suppressing m of u uniques out
of n rows leaves (u - m) / (n - m), which falls as m grows (u <= n), so the search finds the least count.
Monotone with and without suppression, as ARX declares it: generalization merges classes, so it never adds a
unique and never changes the rows, and the least count to suppress, ceil((u - U n) / (1 - U)) (all u when U =
0), never grows (docs/privacy-models.md); certify accepts it.
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
from fitness.privacy.uniqueness import arx_suppress
from lattice.errors import InputError


def sample_uniques_share(sizes: np.ndarray) -> float:
    """The share of the released records of classes of `sizes` that are alone in their class (0 when nothing
    is released): ARX's fraction of records in classes of size 1, and `kgen risk`'s sample-uniques share."""
    sizes = np.asarray(sizes)
    rows = int(sizes.sum())
    return int((sizes == 1).sum()) / rows if rows else 0.0


@dataclass(frozen=True)
class SampleUniqueness:
    """The share of released records unique in the sample is at most `u`.

    Parameters
    ----------
    u : float
        The largest share allowed, in [0, 1] (0: no released record may be unique).
    """

    u: float
    name: ClassVar[str] = "sample-uniqueness"
    needs_rows: ClassVar[bool] = False
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    sample_based: ClassVar[bool] = True
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.u) or not 0.0 <= self.u <= 1.0:
            raise InputError(f"--max-sample-uniqueness must be a number in [0, 1], got {self.u!r}")

    @property
    def params(self) -> dict:
        return {"max_sample_uniqueness": self.u}

    def enforce(self, partition: Partition, table: EncodedTable, suppressed: np.ndarray,
                limit: int | None = None) -> np.ndarray:
        """The classes to suppress besides `suppressed` (those other models suppress): ARX's count of the
        smallest remaining ones (`arx_suppression_count`, stopping once `limit`, the most rows that may be
        suppressed, is passed), or every remaining class when the limit is passed first."""
        return arx_suppress(partition, suppressed, limit, lambda sizes: sample_uniques_share(sizes) <= self.u
                            + TOLERANCE)

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """The model alone (see `enforce`)."""
        return self.enforce(partition, table, np.zeros(partition.count, dtype=bool))

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def summary(d: Mapping[str, object]) -> str:
    return f"sample uniqueness <= {d.get('max_sample_uniqueness')} (share of released records in classes of one)"


FAMILY = ModelFamily(
    name="sample-uniqueness",
    parameters=(
        Parameter("max_sample_uniqueness", Constraint("max-sample-uniqueness", "real", low=0.0, high=1.0,
                                                      optional=True), metavar="U", stricter="lower",
                  help="a threshold on the share of released records unique in the sample (classes of one, "
                       "`kgen risk`'s sample-uniques share): the smallest classes are suppressed until it is "
                       "met, as ARX does"),
    ),
    build=lambda values, sensitive: [SampleUniqueness(values["max_sample_uniqueness"])],  # type: ignore[arg-type]
    read=lambda d: SampleUniqueness(d.get("max_sample_uniqueness")),  # type: ignore[arg-type]
    summary=summary, order=62,
)
