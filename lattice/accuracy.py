"""Accuracy of a search's result set against the exact optimal set (SPEC section 6, the paper's RQ2).

Pure functions of nodes and hierarchy heights. The optimal set O is every k-minimal node (from OLA or
exhaustive search); a result set R is what a heuristic found (e.g. its minimal feasible nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lattice.node import height, leq, precision_loss


def node_accuracy(r: Sequence[int], o: Sequence[int], heights: Sequence[int]) -> float:
    """acc(r, o) = 1 - (H(r) - H(o)) / (H(top) - H(o)) for r >= o; 0 when r is not above o.

    r >= o means r lies on a strategy path through o; r = o scores 1, the top scores 0. When o is the top
    itself, only r = o is above it and scores 1.
    """
    if not leq(o, r):
        return 0.0
    span = height(heights) - height(o)
    if span == 0:
        return 1.0
    return 1.0 - (height(r) - height(o)) / span


def set_accuracy(found: Iterable[Sequence[int]], o: Sequence[int], heights: Sequence[int]) -> float:
    """acc(R, o): the best acc(r, o) over r in R with r >= o; 0 when no r is above o."""
    return max((node_accuracy(r, o, heights) for r in found), default=0.0)


def overall_accuracy(found: Iterable[Sequence[int]], optimal: Iterable[Sequence[int]],
                     heights: Sequence[int]) -> float:
    """Mean of acc(R, o) over the optimal set O, weighted by 1 - LOG(o).

    Raises ValueError for an empty optimal set (accuracy is undefined without an optimum). When every
    weight is 0 (only the top is optimal) the plain mean is returned.
    """
    found = [tuple(r) for r in found]
    optimal = [tuple(o) for o in optimal]
    if not optimal:
        raise ValueError("accuracy needs a non-empty optimal set")
    scores = [set_accuracy(found, o, heights) for o in optimal]
    weights = [1.0 - precision_loss(o, heights) for o in optimal]
    total = sum(weights)
    if total == 0:
        return sum(scores) / len(scores)
    return sum(w * s for w, s in zip(weights, scores)) / total


def log_gap(found_loss: float | None, optimum_loss: float) -> float:
    """LOG(best found) - LOG(optimum); infinity when nothing feasible was found."""
    return float("inf") if found_loss is None else found_loss - optimum_loss
