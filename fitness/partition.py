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
    `population[c]`, when the table carries a population (`EncodedTable.population`), is the number of
    population rows that generalize to class c's tuple; `sizes` counts the released rows only.
    `ties[c]`, when the objective orders classes as ARX does (`ArxLoss.class_ties`), is class c's own loss: among
    classes of equal size the one of least loss is suppressed first by the models that suppress the smallest
    classes (average risk, population uniqueness), as ARX's `HashGroupifyDistribution` orders them.
    """

    sizes: np.ndarray
    rows: np.ndarray | None = None
    population: np.ndarray | None = None
    population_only: int = 0  # classes of the population with no released row (not classes of the release)
    ties: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.sizes.size)
