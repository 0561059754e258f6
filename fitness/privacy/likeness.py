"""beta-likeness (Cao & Karras 2012), ARX's `BasicBLikeness` and `EnhancedBLikeness` (SPEC section 13).

With p(s) the share of sensitive value s over all input rows and p(s|E) its share in class E, a class meets
basic beta-likeness iff for every s present in E with p(s|E) > p(s), (p(s|E) - p(s)) / p(s) <= beta; the
enhanced variant bounds the relative gain by min(beta, -ln p(s)), which is tighter for frequent values. It
bounds what an attacker learns about a sensitive value relative to what the whole table tells, which
t-closeness' average distance does not do for rare values.

Monotone under generalization without suppression (a merged class's share of s is a weighted mean of the
parts' shares, so its gain is at most their largest), not with suppression (ARX declares the same): a class
suppressed at one node can merge above it into a released class that breaks the bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule, class_beta, reference_distribution, value_counts
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from lattice.errors import InputError

VARIANTS = ("basic", "enhanced")


def largest_gains(partition: Partition, table: EncodedTable, column: str) -> np.ndarray:
    """Per class, the largest relative gain (p(s|E) - p(s)) / p(s) over the values s it holds: the least
    beta for which the class meets basic beta-likeness (`fitness.models.class_beta`, the report's figure)."""
    return class_beta(value_counts(partition, table, column), reference_distribution(table, column)[0])


@dataclass(frozen=True)
class BetaLikeness:
    """Every released class gains at most beta (relative) on every sensitive value (module docstring).

    Parameters
    ----------
    column : str
        The sensitive column.
    beta : float
        The largest relative gain, > 0.
    variant : str
        "basic" (bound beta) or "enhanced" (bound min(beta, -ln p(s))).
    """

    column: str
    beta: float
    variant: str = "basic"
    name: ClassVar[str] = "beta-likeness"
    needs_rows: ClassVar[bool] = True
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.beta) or not math.isfinite(self.beta) or not self.beta > 0:
            raise InputError(f"beta of beta-likeness must be a number > 0, got {self.beta!r}")
        if self.variant not in VARIANTS:
            raise InputError(f"unknown beta-likeness variant {self.variant!r}; choose basic or enhanced")

    @property
    def params(self) -> dict:
        return {"beta": self.beta, "variant": self.variant, "sensitive": self.column}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes holding a value whose relative gain exceeds its bound (TOLERANCE absorbs rounding)."""
        vc = value_counts(partition, table, self.column)
        qv = reference_distribution(table, self.column)[0][vc.value]
        gain = (vc.count / vc.sizes[vc.cls] - qv) / qv
        bound = np.full(qv.size, float(self.beta))
        if self.variant == "enhanced":
            bound = np.minimum(bound, -np.log(qv))
        broken = gain > bound + TOLERANCE
        return np.bincount(vc.cls[broken], minlength=partition.count) > 0

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def read(d: Mapping[str, object]) -> BetaLikeness:
    column = d.get("sensitive")
    if not isinstance(column, str) or not column:
        raise InputError(f"a beta-likeness model must name its sensitive column, got {column!r}")
    return BetaLikeness(column, d.get("beta"), str(d.get("variant", "basic")))  # type: ignore[arg-type]


FAMILY = ModelFamily(
    name="beta-likeness",
    parameters=(
        Parameter("beta_likeness", Constraint("beta of beta-likeness", "real", low=0.0, above=True, optional=True),
                  metavar="B", help="beta-likeness on every sensitive column: no value's share in a class exceeds "
                                    "its share in the table by more than B relative"),
        Parameter("beta_variant", Constraint("beta-likeness variant", "choice", choices=VARIANTS), default="basic",
                  help="basic (bound B) or enhanced (bound min(B, -ln p(s)))"),
    ),
    build=lambda values, sensitive: [BetaLikeness(c, values["beta_likeness"], str(values["beta_variant"]))  # type: ignore[arg-type]
                                     for c in sensitive],
    read=read,
    summary=lambda d: f"{d.get('variant', 'basic')} beta-likeness on {d.get('sensitive')}, beta = {d.get('beta')}",
    per_sensitive=True, order=30,
)
