"""delta-disclosure privacy, checked from the file: for every released class E and value s in it,
|log2(p(s|E) / p(s))| < delta (strict), p(s) over all rows of the file."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgen.check.rules.shares import shares

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
