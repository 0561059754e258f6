"""Grassberger's entropy estimator for entropy l-diversity (ARX's `EntropyEstimator.GRASSBERGER`).

Shannon's plug-in estimate of a class's sensitive-value entropy, H = ln N - (1/N) sum n_i ln n_i, is biased low
for small classes: a class of 5 rows with 5 different values has H = ln 5 exactly, and any repeated value pulls
it under. Grassberger (2003, "Entropy estimates from insufficient samplings", arXiv physics/0307138) replaces
the logarithm by a function G with less bias,

    H_G = G(N) - (1/N) sum_i n_i G(n_i),
    G(n) = psi(n) + (1/2) (-1)^n (psi((n + 1) / 2) - psi(n / 2))     (psi the digamma function),

which for whole n is G(2m) = G(2m + 1) = -gamma - ln 2 + sum_{k=1..m} 2 / (2k - 1) (natural logarithm;
G(1) = G(0) = -gamma - ln 2). Stammler, Katzenbeisser and Hamacher (PSD 2016) proposed it for entropy
l-diversity, and ARX offers it: a class is l-diverse when H_G >= ln l and it holds at least ceil(l) distinct
values (ARX's minimal class size for every l-diversity; without it a class of two single rows, H_G = 2, would
pass l = 7). See docs/privacy-models.md, "Entropy l-diversity".

G is computed here from the sum above (a cumulative sum, exact to rounding); ARX tabulates it up to 100 and
uses the digamma function's asymptotic expansion beyond, which agrees to about 1e-15.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

EULER_GAMMA = 0.57721566490153286060651209


@lru_cache(maxsize=8)
def _g_table(half: int) -> np.ndarray:
    """G(2m) for m = 0 .. half (G(2m + 1) is the same value); cached by size, rounded up to a power of two."""
    terms = 2.0 / (2.0 * np.arange(1, half + 1, dtype=np.float64) - 1.0)
    return -EULER_GAMMA - math.log(2.0) + np.concatenate(([0.0], np.cumsum(terms)))


def grassberger_g(n: np.ndarray) -> np.ndarray:
    """Grassberger's G(n) for whole counts n >= 1 (an array of any shape)."""
    n = np.asarray(n, dtype=np.int64)
    if n.size == 0:
        return np.zeros(n.shape)
    half = int(n.max()) // 2
    size = 1 << max(half, 1).bit_length()  # a few table sizes serve every node of a search
    return _g_table(size)[n // 2]


def grassberger_entropy(counts: np.ndarray, cls: np.ndarray, count: int) -> np.ndarray:
    """Per class, Grassberger's entropy estimate H_G of its values.

    Parameters
    ----------
    counts : np.ndarray
        The non-zero (class, value) counts.
    cls : np.ndarray
        The class of each count.
    count : int
        The number of classes.

    Returns
    -------
    np.ndarray
        H_G per class (0 for a class of one value: G(N) - G(N)); never negative, as G does not decrease.
    """
    sizes = np.bincount(cls, weights=counts, minlength=count)
    weighted = np.bincount(cls, weights=counts * grassberger_g(counts), minlength=count)
    whole = np.maximum(sizes, 1).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = grassberger_g(whole) - weighted / np.maximum(sizes, 1)
    return np.where(sizes > 0, np.maximum(h, 0.0), 0.0)
