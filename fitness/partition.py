"""The equivalence classes of a node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Partition:
    """Classes of rows with equal generalized QI tuples.

    `sizes[c]` is the size of class c (every class non-empty). `rows`, when present, gives each row's class
    (so `np.bincount(rows) == sizes`); kernels fill it only when a privacy model needs it.
    Class numbering is kernel-specific: compare partitions by their sorted sizes or by the grouping of rows.
    """

    sizes: np.ndarray
    rows: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.sizes.size)
