"""Information-loss metrics: pure functions of a node and the sizes of its released classes."""

from __future__ import annotations

import numpy as np

from lattice.node import height, precision_loss

__all__ = ["aecs", "block_entropy", "discernibility", "dm_star", "geometric_aggregate", "height", "precision_loss",
           "suppressed_fraction"]


def suppressed_fraction(suppressed: int, n: int) -> float:
    """LOS, the paper's "suppression loss": the fraction of suppressed rows."""
    return suppressed / n if n else 0.0


def discernibility(released_sizes: np.ndarray, suppressed: int, n: int) -> float:
    """DM = sum over released classes of |E|^2, plus |S| * n for the suppressed rows."""
    return float(np.sum(released_sizes.astype(np.float64) ** 2) + suppressed * n)


def aecs(released_sizes: np.ndarray, suppressed: int, n: int) -> float:
    """Average equivalence class size: (n - |S|) / number of released classes (0 when none)."""
    return (n - suppressed) / released_sizes.size if released_sizes.size else 0.0


def dm_star(class_sizes: np.ndarray) -> float:
    """ARX's monotonic discernibility DM*: sum over every class of the node of |E|^2, suppressed classes
    included as the classes they are (ARX's `MetricSDDiscernability`). Suppression does not change it, so it
    never falls when a level rises (classes only merge), unlike DM, which charges a suppressed row n."""
    return float(np.sum(class_sizes.astype(np.float64) ** 2))


def block_entropy(counts: np.ndarray) -> float:
    """sum_v c_v log2(S / c_v), S = sum_v c_v: what ARX's non-monotonic non-uniform entropy adds for one QI
    when the S suppressed rows hold c_v of each value v (at the node's level): the uncertainty of a value read
    from the suppressed block as its own class (`MetricMDNUNMEntropyPrecomputed`). 0 when nothing is
    suppressed."""
    counts = counts[counts > 0].astype(np.float64)
    total = counts.sum()
    return float(np.sum(counts * np.log2(total / counts))) if total else 0.0


def geometric_aggregate(values: np.ndarray) -> float:
    """prod_i (1 + v_i)^(1/q) - 1 over the q per-QI losses v_i in [0, 1]: ARX's default aggregate of its
    multi-dimensional metrics (`ILMultiDimensionalGeometricMean`), in [0, 1] again (0 for no QI; clipped there,
    since a product of q-th roots of 2 may round to 1 + 4e-16)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return 0.0
    return min(max(float(np.prod((1.0 + values) ** (1.0 / values.size)) - 1.0), 0.0), 1.0)
