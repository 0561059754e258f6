"""A threshold on the average re-identification risk, checked from the file: the released classes (rows not
`*` in every QI, or the `*` class when it is released) number at most R times the released rows."""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-9  # equal to the threshold meets it


def mean_risk(released_sizes: np.ndarray) -> float:
    """Mean prosecutor risk over the released records: classes / released rows (0 when none)."""
    rows = int(released_sizes.sum())
    return released_sizes.size / rows if rows else 0.0


def breaks(released_sizes: np.ndarray, r: float) -> bool:
    """Whether the released classes' mean prosecutor risk is above r."""
    return bool(released_sizes.size > (r + TOLERANCE) * int(np.asarray(released_sizes).sum()))
