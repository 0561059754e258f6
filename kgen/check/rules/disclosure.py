"""delta-disclosure privacy, checked from the file: for every released class E and value s in it,
|log2(p(s|E) / p(s))| < delta (strict), p(s) over all rows of the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from kgen.check.rules.shares import shares
from kgen.io.table import Table
from lattice.errors import InputError

TOLERANCE = 1e-9  # within it of delta counts as at delta, which breaks the strict bound


def disclosure(classes: np.ndarray, values: Sequence[str]) -> np.ndarray:
    """Per class, the largest |log2(p(s|E) / p(s))| over its values."""
    s = shares(classes, values)
    out = np.zeros(s.count)
    np.maximum.at(out, s.cls, np.abs(np.log2(s.in_class / s.overall)))
    return out


def breaking(classes: np.ndarray, values: Sequence[str], delta: float) -> np.ndarray:
    """Per class, whether some value is at or beyond delta."""
    return disclosure(classes, values) >= delta - TOLERANCE


@dataclass(frozen=True)
class DisclosureRule:
    """delta-disclosure privacy on `column` (p(s) over all rows of the file)."""

    column: str
    delta: float

    def validate(self) -> None:
        if not self.delta > 0:
            raise InputError(f"delta of delta-disclosure privacy must be > 0, got {self.delta}")

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        return breaking(classes, table.column(self.column), self.delta)


def read(d: Mapping, dropped: bool) -> DisclosureRule | None:
    """None when the suppressed rows were dropped: the file no longer holds the column's distribution."""
    return None if dropped else DisclosureRule(str(d["sensitive"]), float(d["delta"]))


RULE = CheckRule("delta-disclosure", read=read)
