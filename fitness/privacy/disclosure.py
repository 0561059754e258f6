"""delta-disclosure privacy (Brickell & Shmatikov 2008), ARX's `DDisclosurePrivacy` (SPEC section 13).

A class E meets it iff for every sensitive value s present in E, |log2(p(s|E) / p(s))| < delta, with p(s)
the share of s over all input rows: no class makes any value much more or much less likely than the table
does. The logarithm is base 2, as ARX computes it (the paper leaves the base open; SPEC section 13 writes it
with ln: a delta for ln is delta / ln 2 here). The inequality is strict: a value at exactly delta breaks it.

Not monotone, even without suppression (ARX declares the same): values absent from a class are not
compared, so merging a class that holds s at the table's share with one that lacks s dilutes s and can
break the bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule, class_disclosure, reference_distribution, value_counts
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from lattice.errors import InputError


def largest_disclosure(partition: Partition, table: EncodedTable, column: str) -> np.ndarray:
    """Per class, the largest |log2(p(s|E) / p(s))| over the values s it holds (the class meets
    delta-disclosure privacy for every delta above it: `fitness.models.class_disclosure`, the report's figure)."""
    return class_disclosure(value_counts(partition, table, column), reference_distribution(table, column)[0])


@dataclass(frozen=True)
class DeltaDisclosure:
    """Every released class keeps |log2(p(s|E) / p(s))| below delta for each value s it holds.

    Parameters
    ----------
    column : str
        The sensitive column.
    delta : float
        The bound, > 0.
    """

    column: str
    delta: float
    name: ClassVar[str] = "delta-disclosure"
    needs_rows: ClassVar[bool] = True
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = False
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.delta) or not math.isfinite(self.delta) or not self.delta > 0:
            raise InputError(f"delta of delta-disclosure privacy must be a number > 0, got {self.delta!r}")

    @property
    def params(self) -> dict:
        return {"delta": self.delta, "sensitive": self.column}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes with a value at or beyond delta (within TOLERANCE counts as at: the bound is strict)."""
        return largest_disclosure(partition, table, self.column) >= self.delta - TOLERANCE

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def read(d: Mapping[str, object]) -> DeltaDisclosure:
    column = d.get("sensitive")
    if not isinstance(column, str) or not column:
        raise InputError(f"a delta-disclosure model must name its sensitive column, got {column!r}")
    return DeltaDisclosure(column, d.get("delta"))  # type: ignore[arg-type]


FAMILY = ModelFamily(
    name="delta-disclosure",
    parameters=(
        Parameter("delta_disclosure", Constraint("delta of delta-disclosure", "real", low=0.0, above=True,
                                                 optional=True), metavar="D",
                  help="delta-disclosure privacy on every sensitive column: |log2(p(s|class) / p(s))| < D for every "
                       "value in a class"),
    ),
    build=lambda values, sensitive: [DeltaDisclosure(c, values["delta_disclosure"]) for c in sensitive],  # type: ignore[arg-type]
    read=read,
    summary=lambda d: f"delta-disclosure privacy on {d.get('sensitive')}, delta = {d.get('delta')}",
    per_sensitive=True, order=35,
)
