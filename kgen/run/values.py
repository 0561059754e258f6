"""A QI column's values as the run uses them: stripped of surrounding blanks, every missing-value token
replaced by one canonical token, worked per distinct label on coded columns (never per row)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from fitness.encoding import code_dtype
from kgen.io.table import CodedColumn, column_codes
from kgen.report.build import lower_bound_record  # noqa: F401 (tests/test_certify.py imports it from here)

INTEGER_TEXT = re.compile(r"-?[0-9]+", re.ASCII)


def _most_frequent_token(counts: Mapping[str, int], tokens: tuple[str, ...]) -> str | None:
    """The canonical missing token of a column: the configured token that occurs most often in it (ties: the
    first configured), so that one stray empty field does not turn every `?` of the release into ``."""
    present = [t for t in tokens if counts.get(t, 0) > 0]
    return max(present, key=lambda t: (counts[t], -tokens.index(t))) if present else None


def normalize(values: list[str], tokens: tuple[str, ...]) -> tuple[list[str], str | None]:
    """QI values stripped of surrounding blanks, every missing token replaced by the canonical one."""
    codes, labels, token = normalize_codes(*column_codes(values), tokens)
    return CodedColumn(codes, labels).tolist(), token


def normalize_codes(codes: np.ndarray, labels: Sequence[str], tokens: tuple[str, ...]
                    ) -> tuple[np.ndarray, tuple[str, ...], str | None]:
    """`normalize` on a coded column: the work is per distinct label (strip, missing tokens, re-sort);
    the codes are remapped only when labels merge or move (else the same array comes back, no copy).
    Returns the new codes, the sorted distinct normalized labels (each occurring) and the missing token."""
    stripped = [label.strip() for label in labels]
    missing = set(tokens)
    counts = np.bincount(codes, minlength=len(labels)) if len(labels) else np.zeros(0, dtype=np.int64)
    token_counts: Counter[str] = Counter()
    for label, count in zip(stripped, counts.tolist()):
        if label in missing:
            token_counts[label] += count
    token = _most_frequent_token(token_counts, tokens)
    normalized = [token if token is not None and label in missing else label for label in stripped]
    occurring = [label for label, count in zip(normalized, counts.tolist()) if count > 0]
    new_labels = tuple(sorted(set(occurring)))
    if list(new_labels) == normalized:
        return codes, new_labels, token
    index = {label: i for i, label in enumerate(new_labels)}
    mapping = np.array([index.get(label, 0) for label in normalized], dtype=code_dtype(len(new_labels)))
    return mapping[codes], new_labels, token


def integer_labels(values: Sequence[str], tokens: tuple[str, ...]) -> np.ndarray | None:
    """The labels of a coded column as integers, when the reader found them all canonical integers (so
    stripping changes nothing) and none of them is a missing-value token (a token such as `-1` may be one);
    else None (`normalize_codes` then works on the strings)."""
    numbers = getattr(values, "numbers", None)
    if numbers is None:
        return None
    for token in tokens:
        if (len(token) <= 19 and INTEGER_TEXT.fullmatch(token) and str(int(token)) == token
                and bool((numbers == int(token)).any())):  # longer: no int64, so never among the numbers
            return None
    return numbers


def stripped_codes(codes: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """A sensitive column's codes over its sorted distinct values, stripped of surrounding blanks."""
    codes, labels, _ = normalize_codes(codes, labels, ())
    return codes, labels
