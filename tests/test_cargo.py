"""Cargo 2000 (SPEC section 7): decimal-rounding heights and per-attribute minimum levels.

The expected figures are the SPEC's; each is also recomputed here from the raw file with plain Python
(`csv`, `collections.Counter`, the rounding formula), independently of kgen's hierarchies and evaluator.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path

import pytest

from kgen import Config, prepare, read_csv

FIRST_TEN_HEIGHTS = (5, 5, 5, 4, 4, 3, 4, 5, 3, 5)
HEIGHT_SUMS = {5: 23, 10: 43, 25: 99, 50: 197, 97: 376}
MINIMUM_LEVELS_K2_T0005 = (2, 3, 3, 2, 2, 1, 2, 2, 1, 2)
K, T = 2, 0.005


@pytest.fixture(scope="module")
def cargo(cargo_csv: Path):
    return read_csv(cargo_csv)


@pytest.fixture(scope="module")
def raw_columns(cargo_csv: Path) -> dict[str, list[str]]:
    with open(cargo_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    # The file ends with a line of 97 commas and nothing else: not one of the SPEC's 3,942 records.
    header, body = rows[0], [r for r in rows[1:] if any(r)]
    return {name: [r[i] for r in body] for i, name in enumerate(header)}


def quasi_identifiers(columns: list[str]) -> list[str]:
    """The paper's QIs: the columns after the identifier `nr`, in file order."""
    return columns[columns.index("nr") + 1:]


def digits_of_max(values: list[str]) -> int:
    return len(str(max(int(v) for v in values if v != "?")))


def suppressed_alone(values: list[str], level: int, height: int) -> int:
    """Rows in classes smaller than k when only this attribute is generalized to `level` (decimal rounding;
    `?` its own value below the top, everything one value at the top)."""
    if level == height:
        return 0 if len(values) >= K else len(values)
    width = 10 ** level
    counts = Counter(v if v == "?" else int(v) // width for v in values)
    return sum(c for c in counts.values() if c < K)


def test_cargo_shape_and_identifier(cargo, raw_columns) -> None:
    assert len(raw_columns) == 98 and len(raw_columns["nr"]) == 3942
    assert list(cargo.columns) == list(raw_columns) and cargo.columns[0] == "nr"
    assert len(set(raw_columns["i1_legid"])) == 3942  # every row unique at the bottom


def test_heights_of_the_first_ten_quasi_identifiers(cargo, raw_columns) -> None:
    qis = quasi_identifiers(list(cargo.columns))[:10]
    prepared = prepare(cargo, Config(qi=qis, k=K, suppression=T, identifiers=["nr"], prune=False, keep_unnamed=True))
    assert prepared.heights == FIRST_TEN_HEIGHTS
    assert tuple(digits_of_max(raw_columns[q]) for q in qis) == FIRST_TEN_HEIGHTS


@pytest.mark.parametrize("q", sorted(HEIGHT_SUMS))
def test_height_sums_for_the_papers_numbers_of_quasi_identifiers(cargo, raw_columns, q: int) -> None:
    qis = quasi_identifiers(list(cargo.columns))[:q]
    assert len(qis) == q
    prepared = prepare(cargo, Config(qi=qis, k=K, suppression=T, identifiers=["nr"], prune=False, keep_unnamed=True))
    assert sum(prepared.heights) == HEIGHT_SUMS[q]
    assert sum(digits_of_max(raw_columns[c]) for c in qis) == HEIGHT_SUMS[q]


def test_minimum_levels_at_k2_t0005_with_missing_as_its_own_value(cargo, raw_columns) -> None:
    qis = quasi_identifiers(list(cargo.columns))[:10]
    prepared = prepare(cargo, Config(qi=qis, k=K, suppression=T, identifiers=["nr"], keep_unnamed=True))
    assert prepared.box.lower == MINIMUM_LEVELS_K2_T0005
    assert prepared.box.upper == FIRST_TEN_HEIGHTS
    budget = math.floor(T * cargo.n)  # 19 rows
    independent = []
    for column, h in zip(qis, FIRST_TEN_HEIGHTS):
        values = raw_columns[column]
        independent.append(next(level for level in range(h + 1) if suppressed_alone(values, level, h) <= budget))
    assert tuple(independent) == MINIMUM_LEVELS_K2_T0005


def test_minimum_levels_are_tight_lower_bounds(cargo) -> None:
    """Each lb_i is feasible with the others at their top, and lb_i - 1 is not."""
    qis = quasi_identifiers(list(cargo.columns))[:10]
    prepared = prepare(cargo, Config(qi=qis, k=K, suppression=T, identifiers=["nr"], keep_unnamed=True))
    top = prepared.heights
    for i, lb in enumerate(prepared.box.lower):
        assert prepared.evaluator.feasible(top[:i] + (lb,) + top[i + 1:])
        if lb > 0:
            assert not prepared.evaluator.feasible(top[:i] + (lb - 1,) + top[i + 1:])


def test_missing_values_stay_missing_below_the_top(cargo) -> None:
    qis = quasi_identifiers(list(cargo.columns))[:10]
    prepared = prepare(cargo, Config(qi=qis, k=K, suppression=T, identifiers=["nr"], prune=False, keep_unnamed=True))
    with_missing = [q for q in qis if "?" in prepared.qi_values[q]]
    assert with_missing, "the first ten Cargo QIs should include missing values"
    for name in with_missing:
        hierarchy = prepared.hierarchies[name]
        path = hierarchy.paths["?"]
        assert path[:-1] == ("?",) * hierarchy.height
        assert len(hierarchy.top_labels()) == 1 and path[-1] in hierarchy.top_labels()
