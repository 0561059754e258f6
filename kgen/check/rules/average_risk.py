"""A threshold on the average re-identification risk, checked from the file: the released classes (rows not
`*` in every QI, or the `*` class when it is released) number at most R times the released rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to the threshold meets it


def mean_risk(released_sizes: np.ndarray) -> float:
    """Mean prosecutor risk over the released records: classes / released rows (0 when none)."""
    rows = int(released_sizes.sum())
    return released_sizes.size / rows if rows else 0.0


def breaks(released_sizes: np.ndarray, r: float) -> bool:
    """Whether the released classes' mean prosecutor risk is above r."""
    return bool(released_sizes.size > (r + TOLERANCE) * int(np.asarray(released_sizes).sum()))


@dataclass(frozen=True)
class MeanRiskRule:
    """The released classes' mean prosecutor risk is at most r. The classes it marks as breaking are the fewest
    smallest ones whose suppression would bring it to r (none when it holds), the `*` rows left out."""

    r: float
    column: None = None

    def validate(self) -> None:
        if not 0.0 < self.r <= 1.0:
            raise InputError(f"--max-average-risk must be in (0, 1], got {self.r}")

    def breaking(self, table: object, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        released = np.bincount(classes[~cache["starred"]], minlength=sizes.size)
        present = np.flatnonzero(released)
        out = np.zeros(sizes.size, dtype=bool)
        order = present[np.argsort(released[present], kind="stable")]
        # after removing the `count` smallest classes: order.size - count classes over the rows left
        rows_left = released[order].sum() - np.concatenate(([0], np.cumsum(released[order])))
        meets = order.size - np.arange(order.size + 1) <= (self.r + TOLERANCE) * rows_left
        out[order[: int(np.argmax(meets))]] = True  # the last entry (nothing left) always meets r
        return out


RULE = CheckRule("average-risk", read=lambda d, dropped: MeanRiskRule(float(d["max_average_risk"])))
