"""The shares a sensitive-value rule compares: p(s|E) of each (class, value) pair and p(s) over all rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Shares:
    """Per (class, value) pair present in the file: its class `cls`, the value's share in the class `in_class`
    and its share over all rows of the file `overall` (suppressed rows keep their sensitive values)."""

    cls: np.ndarray
    in_class: np.ndarray
    overall: np.ndarray
    count: int


def shares(classes: np.ndarray, values: Sequence[str]) -> Shares:
    """The shares of the sensitive `values` (one per row) in the classes `classes` (an id 0..count-1 per row)."""
    labels, codes = np.unique(np.asarray(list(values), dtype=object).astype(str), return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    m = max(labels.size, 1)
    count = int(classes.max()) + 1 if classes.size else 0
    pairs, counts = np.unique(classes.astype(np.int64) * m + codes, return_counts=True)
    cls, code = pairs // m, pairs % m
    sizes = np.bincount(classes, minlength=count)
    overall = np.bincount(codes, minlength=m) / max(classes.size, 1)
    return Shares(cls, counts / sizes[cls], overall[code], count)
