"""A generator faithful to UCI's Poker Hand data set, the distributed-Mondrian paper's large test table.

UCI's Poker Hand (Cattral & Oppacher, 2007; https://doi.org/10.24432/C5KW38) holds 1,025,010 hands of five
cards drawn from one standard 52-card deck: ten attributes S1, C1, ..., S5, C5 (suit 1-4, rank 1-13, ace = 1)
and the class 0-9 (nothing, one pair, two pairs, three of a kind, straight, flush, full house, four of a
kind, straight flush, royal flush). The real file is not shipped (it would be 24 MB); this module draws hands
the same way (uniform 5-card subsets of one deck), classifies them by poker's rules, and writes the same
columns. Draws are vectorized: each hand is the first five positions of a random permutation of the deck,
taken with numpy's `Generator.permuted` on a (rows, 52) array processed in blocks so memory stays small.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 1_000_000
QIS = ("S1", "C1", "S2", "C2", "S3", "C3", "S4", "C4", "S5", "C5")
SENSITIVE = "CLASS"
COLUMNS = QIS + (SENSITIVE,)
NAMES = ("nothing", "one pair", "two pairs", "three of a kind", "straight", "flush", "full house",
         "four of a kind", "straight flush", "royal flush")
# Exact probabilities of a uniform 5-card hand (counts out of C(52, 5) = 2,598,960).
COUNTS = (1_302_540, 1_098_240, 123_552, 54_912, 10_200, 5_108, 3_744, 624, 36, 4)
PROBABILITIES = tuple(c / 2_598_960 for c in COUNTS)
_BLOCK = 200_000


def classify(suits: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Poker hand class (0-9) of each row of `suits` and `ranks` (shape (n, 5); ranks 1-13, ace = 1)."""
    n = ranks.shape[0]
    keys = (np.arange(n, dtype=np.int64)[:, None] * 14 + ranks).reshape(-1)
    counts = np.bincount(keys, minlength=n * 14).reshape(n, 14).astype(np.int8)
    multiplicity = np.sort(counts, axis=1)[:, ::-1]  # largest rank multiplicities first
    top, second = multiplicity[:, 0], multiplicity[:, 1]
    flush = (suits == suits[:, :1]).all(axis=1)
    distinct = top == 1
    low, high = ranks.min(axis=1), ranks.max(axis=1)
    ace = (ranks == 1).any(axis=1)
    royal_ranks = ace & (counts[:, 10:14] == 1).all(axis=1)  # A, 10, J, Q, K
    straight = distinct & ((high - low == 4) | royal_ranks)
    out = np.zeros(n, dtype=np.int8)
    out[top == 2] = 1
    out[(top == 2) & (second == 2)] = 2
    out[top == 3] = 3
    out[straight] = 4
    out[flush & distinct & ~straight] = 5
    out[(top == 3) & (second == 2)] = 6
    out[top == 4] = 7
    out[straight & flush] = 8
    out[straight & flush & royal_ranks] = 9
    return out


def _draw(rng: np.random.Generator, size: int) -> np.ndarray:
    """`size` uniform 5-card subsets of range(52): card j is uniform over the 52 - j cards not drawn yet
    (drawn as an index among the remaining ones, then shifted past the cards already taken, smallest first)."""
    hands = np.empty((size, 5), dtype=np.int64)
    for j in range(5):
        card = rng.integers(0, 52 - j, size=size)
        for taken in np.sort(hands[:, :j], axis=1).T:  # ascending: each shift can only pass later cards
            card += card >= taken
        hands[:, j] = card
    return hands


def generate(rows: int = ROWS, seed: int = 0) -> pd.DataFrame:
    """`rows` uniform random hands (one deck each) with their classes, as a DataFrame of small ints."""
    if rows < 0:
        raise ValueError(f"rows must be >= 0, got {rows}")
    rng = np.random.default_rng(seed)
    parts = []
    for start in range(0, rows, _BLOCK):
        size = min(_BLOCK, rows - start)
        hands = _draw(rng, size)
        suits, ranks = hands // 13 + 1, hands % 13 + 1
        block = np.empty((size, 11), dtype=np.int8)
        block[:, 0:10:2], block[:, 1:10:2] = suits, ranks
        block[:, 10] = classify(suits, ranks)
        parts.append(block)
    data = np.concatenate(parts) if parts else np.zeros((0, 11), dtype=np.int8)
    return pd.DataFrame(data, columns=list(COLUMNS))


def write_parquet(path: str | os.PathLike, rows: int = ROWS, seed: int = 0) -> Path:
    """Write `generate(rows, seed)` as a Parquet file (row groups of 100,000 hands)."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.tmp")
    generate(rows, seed).to_parquet(temporary, index=False, row_group_size=100_000)
    os.replace(temporary, target)
    return target


def write_csv(path: str | os.PathLike, rows: int = ROWS, seed: int = 0) -> Path:
    """Write `generate(rows, seed)` as a comma-separated file with a header (UCI's column names)."""
    target = Path(path)
    frame = generate(rows, seed)
    temporary = target.with_name(f".{target.name}.tmp")
    frame.to_csv(temporary, index=False)
    os.replace(temporary, target)
    return target
