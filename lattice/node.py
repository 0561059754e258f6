"""Lattice nodes: one generalization level per quasi-identifier.

A node is a plain tuple of ints; `x <= y` in the lattice order means every level of x is at most y's.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import lru_cache

Node = tuple[int, ...]


def height(node: Sequence[int]) -> int:
    """H(x) = sum of the levels."""
    return int(sum(node))


def leq(x: Sequence[int], y: Sequence[int]) -> bool:
    """Lattice order: x_i <= y_i for every i."""
    return all(a <= b for a, b in zip(x, y, strict=True))


@lru_cache(maxsize=256)
def _precision_weights(heights: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """Integer weights w_i = lcm / h_i (0 where h_i = 0) and the denominator lcm * |Q+|."""
    positive = [int(h) for h in heights if h > 0]
    if not positive:
        return tuple(0 for _ in heights), 0
    lcm = math.lcm(*positive)
    return tuple(lcm // int(h) if h > 0 else 0 for h in heights), lcm * len(positive)


def precision_loss(node: Sequence[int], heights: Sequence[int]) -> float:
    """Sweeney's precision, the paper's LOG: mean of x_i / h_i over the attributes with h_i > 0.

    Heights (3, 4, 1): LOG(1, 0, 0) = 1/9 = 0.11, LOG(0, 0, 1) = 1/3 = 0.33.
    Computed as one exact integer ratio, correctly rounded once, so nodes with the same LOG get the same
    float whatever their order of terms (a float sum of x_i / h_i does not: 0.29166666666666663 vs
    0.2916666666666667 on Adult), and the objective's tie-break on LOS and the node stays exact.
    """
    weights, denominator = _precision_weights(heights if type(heights) is tuple else tuple(heights))
    if len(node) != len(weights):
        raise ValueError(f"node {tuple(node)} and heights {tuple(heights)} have different lengths")
    if denominator == 0:
        return 0.0
    return int(sum(map(operator.mul, node, weights))) / denominator
