"""A threshold on sample uniqueness, checked from the file: the released records (rows not `*` in every QI)
that are alone in their class are at most U times the released rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to the threshold meets it


@dataclass(frozen=True)
class SampleUniquenessRule:
    """The released records in classes of one are at most u of the released rows. When they are not, the
    classes of one are marked: suppressing them is what the evaluator does first."""

    u: float
    column: None = None

    def validate(self) -> None:
        if not 0.0 <= self.u <= 1.0:
            raise InputError(f"--max-sample-uniqueness must be in [0, 1], got {self.u}")

    def breaking(self, table: object, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        released = np.bincount(classes[~cache["starred"]], minlength=sizes.size)
        uniques = released == 1
        holds = int(uniques.sum()) <= (self.u + TOLERANCE) * int(released.sum())
        return np.zeros(sizes.size, dtype=bool) if holds else uniques


RULE = CheckRule("sample-uniqueness", read=lambda d, dropped: SampleUniquenessRule(float(d["max_sample_uniqueness"])))
