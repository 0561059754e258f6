"""Lattice nodes: one generalization level per quasi-identifier.

A node is a plain tuple of ints; `x <= y` in the lattice order means every level of x is at most y's.
"""

from __future__ import annotations

from collections.abc import Sequence

Node = tuple[int, ...]


def height(node: Sequence[int]) -> int:
    """H(x) = sum of the levels."""
    return int(sum(node))


def leq(x: Sequence[int], y: Sequence[int]) -> bool:
    """Lattice order: x_i <= y_i for every i."""
    return all(a <= b for a, b in zip(x, y, strict=True))


def precision_loss(node: Sequence[int], heights: Sequence[int]) -> float:
    """Sweeney's precision, the paper's LOG: mean of x_i / h_i over the attributes with h_i > 0.

    Heights (3, 4, 1): LOG(1, 0, 0) = 1/9 = 0.11, LOG(0, 0, 1) = 1/3 = 0.33.
    """
    terms = [x / h for x, h in zip(node, heights, strict=True) if h > 0]
    return sum(terms) / len(terms) if terms else 0.0
