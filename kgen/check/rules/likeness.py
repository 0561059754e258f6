"""beta-likeness, checked from the file: for every released class E and value s in it,
(p(s|E) - p(s)) / p(s) <= beta (basic) or <= min(beta, -ln p(s)) (enhanced); p(s) over all rows of the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from kgen.check.rules.shares import shares
from kgen.io.table import Table
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to the bound meets it
VARIANTS = ("basic", "enhanced")


def breaking(classes: np.ndarray, values: Sequence[str], beta: float, variant: str) -> np.ndarray:
    """Per class of `classes`, whether a value's relative gain exceeds its bound."""
    s = shares(classes, values)
    gain = (s.in_class - s.overall) / s.overall
    bound = np.full(gain.size, float(beta)) if variant == "basic" else np.minimum(beta, -np.log(s.overall))
    return np.bincount(s.cls[gain > bound + TOLERANCE], minlength=s.count) > 0


def largest_gain(classes: np.ndarray, values: Sequence[str], kept: np.ndarray) -> float | None:
    """The largest relative gain over the kept classes (None when none is kept)."""
    s = shares(classes, values)
    gain = (s.in_class - s.overall) / s.overall
    chosen = kept[s.cls]
    return float(gain[chosen].max()) if chosen.any() else None


@dataclass(frozen=True)
class LikenessRule:
    """beta-likeness on `column` (p(s) over all rows of the file)."""

    column: str
    beta: float
    variant: str = "basic"

    def validate(self) -> None:
        if not self.beta > 0 or self.variant not in VARIANTS:
            raise InputError(f"beta-likeness needs beta > 0 and a variant basic or enhanced, got {self.beta}, "
                             f"{self.variant!r}")

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        return breaking(classes, table.column(self.column), self.beta, self.variant)


def read(d: Mapping, dropped: bool) -> LikenessRule | None:
    """None when the suppressed rows were dropped: the file no longer holds the column's distribution."""
    return None if dropped else LikenessRule(str(d["sensitive"]), float(d["beta"]), str(d.get("variant", "basic")))


RULE = CheckRule("beta-likeness", read=read)
