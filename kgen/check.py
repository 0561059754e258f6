"""An independent check of a released table: k-anonymity with suppression, computed from the file itself.

It shares no code with the evaluator: it groups the rows by their QI strings with numpy and counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kgen.table import Table
from lattice.errors import InputError

SUPPRESSED = "*"


@dataclass
class CheckResult:
    """`classes` and `smallest_class` describe the released rows (suppressed ones only when they are at least k
    and so form a class of their own); on failure the smallest class is below k.
    `violating_rows`: 1-based rows that are released (not `*` in every QI) in a class smaller than k: any
    one of them fails the check, whatever the suppression limit (the limit allows suppressing rows, not
    publishing them unprotected). `suppressed_rows`: rows with `*` in every QI; when they are fewer than k
    they are not a class of their own and must be at most `allowed` = floor(t * rows)."""

    rows: int
    k: int
    classes: int
    smallest_class: int
    suppressed_rows: int
    violating_rows: list[int]
    allowed: int
    details: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.violating_rows and (self.suppressed_rows >= self.k or self.suppressed_rows <= self.allowed)


def group_codes(table: Table, qis: Sequence[str]) -> np.ndarray:
    """Class id per row: rows get the same id iff they agree on every QI string."""
    key = np.zeros(table.n, dtype=np.int64)
    for column in qis:
        _, codes = np.unique(np.asarray(table.column(column), dtype=object).astype(str), return_inverse=True)
        key = key * (int(codes.max()) + 1 if codes.size else 1) + codes
        _, key = np.unique(key, return_inverse=True)
    return key.reshape(-1)


def check_k_anonymity(table: Table, qis: Sequence[str], k: int, suppression: float = 0.0) -> CheckResult:
    if k < 1:
        raise InputError(f"k must be a whole number >= 1, got {k}")
    if not 0.0 <= suppression <= 1.0:
        raise InputError(f"suppression must be a fraction in [0, 1], got {suppression}")
    if not qis:
        raise InputError("no quasi-identifiers given (--qi)")
    for column in qis:
        table.column(column)
    n = table.n
    allowed = math.floor(suppression * n + 1e-9)
    if n == 0:
        return CheckResult(0, k, 0, 0, 0, [], allowed)
    classes = group_codes(table, qis)
    sizes = np.bincount(classes)
    starred = np.all(np.stack([np.asarray(table.column(c), dtype=object) == SUPPRESSED for c in qis]), axis=0)
    small = sizes[classes] < k
    violating = np.flatnonzero(small & ~starred) + 1
    released = ~(small & starred)  # a group of suppressed rows smaller than k is not a class
    released_sizes = np.bincount(classes[released]) if released.any() else np.zeros(0, dtype=np.int64)
    released_sizes = released_sizes[released_sizes > 0]
    return CheckResult(
        rows=n, k=k, classes=int(released_sizes.size),
        smallest_class=int(released_sizes.min()) if released_sizes.size else 0,
        suppressed_rows=int(starred.sum()),
        violating_rows=violating.tolist(), allowed=allowed,
    )
