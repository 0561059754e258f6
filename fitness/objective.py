"""Objectives: the information loss a search minimizes. LOG (precision) is the default."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fitness.encoding import EncodedTable
from lattice.node import precision_loss


class Objective(Protocol):
    """A loss in [0, 1] (lower is better) of a node given its released class sizes.

    `monotone`: the loss never decreases when a level rises, whatever is suppressed; exact searches may
    stop on it (OLA's optimality rests on it).
    """

    name: str
    monotone: bool

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable) -> float: ...


@dataclass(frozen=True)
class Precision:
    """Sweeney's precision, the paper's LOG: mean over QIs with h_i > 0 of x_i / h_i."""

    name: str = "log"
    monotone: bool = True

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable) -> float:
        return precision_loss(node, table.heights)
