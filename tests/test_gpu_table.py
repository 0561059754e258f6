"""The GPU benchmarks' table (`benchmarks.gpu_table`): the same rows in any chunking, the distributions it
claims, and an encoding that gives the classes of the plain values."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from benchmarks import gpu_table
from fitness.kernel import class_sizes


def test_rows_do_not_depend_on_the_chunking_and_differ_by_seed() -> None:
    whole = gpu_table.generate(np, 5_000, chunk=5_000)
    pieces = gpu_table.generate(np, 5_000, chunk=777)
    assert all(np.array_equal(whole[name], pieces[name]) for name in whole)
    other = gpu_table.generate(np, 5_000, seed=gpu_table.SEED + 1, chunk=5_000)
    assert not np.array_equal(whole["income"], other["income"])


def test_columns_follow_their_distributions() -> None:
    columns = gpu_table.generate(np, 100_000)
    age = columns["age"]
    assert 38.5 < age.mean() < 41.5 and 13.5 < age.std() < 16  # normal(40, 15) clipped to 0..99
    assert 0.48 < columns["sex"].mean() < 0.52
    region = columns["region"]
    assert region.min() == 0 and region.max() <= 49 and (region == 0).mean() > 0.4  # zipf(1.6) - 1: mostly 0
    year, diagnosis = columns["year"], columns["diagnosis"]
    assert np.all((2020 - age - year >= 0) & (2020 - age - year <= 2))  # year = 2020 - age - {0, 1, 2}
    assert diagnosis.min() == 0 and diagnosis.max() == 11
    assert diagnosis[age >= 80].mean() > diagnosis[age < 40].mean()  # correlated with age
    zip_code = columns["zip"]
    assert np.all(zip_code - (10000 + (region * 1733) % 80000) >= 0)


@pytest.mark.parametrize("rows", [1, 3_000])
def test_the_encoded_table_has_the_classes_of_the_plain_values(rows: int) -> None:
    table, _ = gpu_table.encoded(np, rows)
    columns = gpu_table.generate(np, rows)
    for node in [(0,) * 10, tuple(min(1, h) for h in table.heights), table.heights]:
        plain = Counter(zip(*(columns[name] // 10 ** level if level else columns[name]
                              for name, level in zip(gpu_table.COLUMNS, node))))
        if node == table.heights:
            plain = Counter({(): rows})
        assert sorted(class_sizes(*table.columns(node), rows).tolist()) == sorted(plain.values())
    assert table.sensitive[gpu_table.SENSITIVE][0].tolist() == columns[gpu_table.SENSITIVE].tolist()
