"""Estimated k-map, checked from the file: every released class has at least k' rows, with k' derived again
here from k, the sampling fraction, the estimator and the significance level (ARX's KMap estimators,
docs/privacy-models.md), independently of the model's own derivation."""

from __future__ import annotations

import math
from collections.abc import Mapping

from kgen.check.rules import CheckRule


def _pmf(x: int, lam: float) -> float:
    return math.exp(-lam + x * math.log(lam) - math.lgamma(x + 1)) if lam > 0 else float(x == 0)


def derived_k(k: int, sampling_fraction: float, estimator: str, significance: float) -> int:
    """k': for the Poisson estimator the least c with P(X <= c - 1) >= 1 - alpha, plus one; for the
    zero-truncated one the least c with P(1 <= X <= c - 1 | X >= 1) >= 1 - alpha; never above k."""
    lam, goal = sampling_fraction * k, 1.0 - significance
    if estimator == "poisson":
        c, cdf = 0, 0.0
        while c < k:
            cdf += _pmf(c, lam)
            c += 1
            if cdf >= goal:
                break
        return min(k, c + 1)
    c, mass, positive = 1, 0.0, 1.0 - _pmf(0, lam)
    while c < k:
        mass += _pmf(c, lam) / positive
        c += 1
        if mass >= goal:
            break
    return min(k, c)


def least_size(d: Mapping) -> int:
    """k' for a saved k-map description, derived again here (the description's own `derived_k` is not read)."""
    return derived_k(int(d["k_map"]), float(d["sampling_fraction"]), str(d.get("estimator", "poisson")),
                     float(d.get("significance", 0.01)))


RULE = CheckRule("k-map", read=lambda d, dropped: None, least_size=least_size)
