"""Pre-pruning with per-attribute minimum levels (SPEC section 2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lattice.node import Node


def minimum_levels(heights: Sequence[int], feasible: Callable[[Node], bool],
                   bottom: Sequence[int] | None = None) -> Node:
    """lb_i = the smallest level at which attribute i, with every other attribute at its top, is feasible.

    `heights` are the tops of the box searched (the hierarchy heights, or the per-QI maximum levels) and
    `bottom` its bottom (default 0): lb_i is then at least bottom_i, and the same projection argument holds
    inside that box, since every node of it lies below its top.

    `feasible(node)` decides the privacy model with the suppression limit. With the others at their top
    (a single value each), node feasibility is that of the projection onto attribute i, and projecting only
    merges classes, so lb is a sound lower bound on every feasible node, suppression included. Feasibility is
    monotone in the level, so each attribute's bound is found by binary search. If even the top node is
    infeasible, the tops are returned (and the caller reports that no node is feasible).
    """
    top = tuple(heights)
    lower = []
    for i, h in enumerate(heights):
        lo, hi = (0 if bottom is None else bottom[i]), h
        while lo < hi:
            mid = (lo + hi) // 2
            node = top[:i] + (mid,) + top[i + 1 :]
            if feasible(node):
                hi = mid
            else:
                lo = mid + 1
        lower.append(lo)
    return tuple(lower)

