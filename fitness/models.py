"""Privacy models: constraints on the classes of a node. A class that breaks one is suppressed.

A model answers, for each class of a partition, whether the class violates it. The evaluator suppresses
violating classes within the suppression limit; models never see rows they do not need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fitness.encoding import EncodedTable
from fitness.partition import Partition


class PrivacyModel(Protocol):
    """`needs_rows`: the model reads `partition.rows` (row -> class).
    `monotone_with_suppression`: feasibility stays monotone under generalization when t > 0 (SPEC section 3);
    with t = 0 every model here is monotone."""

    name: str
    needs_rows: bool
    monotone_with_suppression: bool

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray: ...

    def describe(self) -> dict: ...


@dataclass(frozen=True)
class KAnonymity:
    """Every released class has at least k rows."""

    k: int
    name: str = "k-anonymity"
    needs_rows: bool = False
    monotone_with_suppression: bool = True

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        return partition.sizes < self.k

    def describe(self) -> dict:
        return {"model": self.name, "k": self.k}
