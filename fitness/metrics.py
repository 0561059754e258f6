"""Information-loss metrics: pure functions of a node and the sizes of its released classes."""

from __future__ import annotations

import numpy as np

from lattice.node import height, precision_loss

__all__ = ["aecs", "discernibility", "height", "precision_loss", "suppressed_fraction"]


def suppressed_fraction(suppressed: int, n: int) -> float:
    """LOS, the paper's "suppression loss": the fraction of suppressed rows."""
    return suppressed / n if n else 0.0


def discernibility(released_sizes: np.ndarray, suppressed: int, n: int) -> float:
    """DM = sum over released classes of |E|^2, plus |S| * n for the suppressed rows."""
    return float(np.sum(released_sizes.astype(np.float64) ** 2) + suppressed * n)


def aecs(released_sizes: np.ndarray, suppressed: int, n: int) -> float:
    """Average equivalence class size: (n - |S|) / number of released classes (0 when none)."""
    return (n - suppressed) / released_sizes.size if released_sizes.size else 0.0
