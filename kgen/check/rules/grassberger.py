"""Entropy l-diversity with Grassberger's estimator, checked from the file: every released class E holds at
least ceil(l) distinct sensitive values and H_G(E) = G(N) - (1/N) sum_s n_s G(n_s) >= ln l, with N the class's
rows, n_s the rows of value s and G Grassberger's function (docs/privacy-models.md, "Entropy l-diversity").

Written apart from the evaluator (`fitness.grassberger` sums G's closed form); here G is computed from its
definition through the digamma function, G(n) = psi(n) + (1/2) (-1)^n (psi((n + 1) / 2) - psi(n / 2)), with
psi at whole and half-whole points from its sums: psi(k) = -gamma + sum_{j<k} 1/j and
psi(k + 1/2) = -gamma - 2 ln 2 + sum_{j<=k} 2 / (2j - 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgen.io.table import Table
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to ln l counts as meeting it
_GAMMA = 0.5772156649015329


def _psi_tables(top: int) -> tuple[np.ndarray, np.ndarray]:
    """psi(k) for k = 0..top (k = 0 unused) and psi(k + 1/2) for k = 0..top."""
    whole = -_GAMMA + np.concatenate(([0.0, 0.0], np.cumsum(1.0 / np.arange(1, top, dtype=np.float64))))
    half = -_GAMMA - 2.0 * math.log(2.0) + np.concatenate(
        ([0.0], np.cumsum(2.0 / (2.0 * np.arange(1, top + 1, dtype=np.float64) - 1.0))))
    return whole[: top + 1], half


def grassberger_function(n: np.ndarray) -> np.ndarray:
    """G(n) for whole n >= 1, from the digamma function."""
    n = np.asarray(n, dtype=np.int64)
    if n.size == 0:
        return np.zeros(0)
    whole, half = _psi_tables(int(n.max()) + 1)
    even = n % 2 == 0
    # even n = 2m: psi(m + 1/2) - psi(m); odd n = 2m + 1: psi(m + 1) - psi(m + 1/2)
    m = n // 2
    gap = np.where(even, half[m] - whole[np.maximum(m, 1)], whole[m + 1] - half[m])
    return whole[n] + np.where(even, 0.5, -0.5) * gap


@dataclass(frozen=True)
class GrassbergerRule:
    """Entropy l-diversity under Grassberger's estimator on `column`."""

    column: str
    l: float  # noqa: E741 (the model's name for it)

    def validate(self) -> None:
        if not self.l >= 1:
            raise InputError(f"l must be a number >= 1 (entropy l-diversity), got {self.l}")

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        return breaking(classes, table.column(self.column), self.l)


def estimates(classes: np.ndarray, values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per class (ids 0..count-1): its distinct values and Grassberger's entropy estimate of them."""
    _, codes = np.unique(np.asarray(list(values), dtype=object).astype(str), return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    m = int(codes.max()) + 1 if codes.size else 1
    count = int(classes.max()) + 1 if classes.size else 0
    pairs, counts = np.unique(classes.astype(np.int64) * m + codes, return_counts=True)
    cls = pairs // m
    rows = np.bincount(classes, minlength=count)
    spread = np.bincount(cls, weights=counts * grassberger_function(counts), minlength=count)
    h = grassberger_function(np.maximum(rows, 1)) - spread / np.maximum(rows, 1)
    return np.bincount(cls, minlength=count), h


def breaking(classes: np.ndarray, values: Sequence[str], l: float) -> np.ndarray:  # noqa: E741
    """Per class, whether it has fewer than ceil(l) values or an estimate below ln l."""
    distinct, h = estimates(classes, values)
    return (distinct < math.ceil(l)) | (h < math.log(l) - TOLERANCE)
