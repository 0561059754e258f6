"""The deterministic synthetic benchmark table: 1,000,000 rows, 10 numeric quasi-identifiers.

Every column is a non-negative integer, so kgen's default decimal hierarchies apply. Columns are skewed and
correlated (as real microdata are) so that k-anonymity needs real generalization: the bottom node has
almost only unique rows, the top one class. Same seed, same file, byte for byte.

    python -m benchmarks.synthetic [--rows N] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

ROWS = 1_000_000
SEED = 20260521
COLUMNS = ("age", "sex", "zip", "income", "children", "dept", "hours", "year", "score", "region")


def cache_dir() -> Path:
    """Where generated tables live (not committed: the 1M-row CSV is ~45 MB). `KGEN_BENCH_CACHE` overrides."""
    return Path(os.environ.get("KGEN_BENCH_CACHE", "/tmp/kgen-bench"))


def generate(rows: int = ROWS, seed: int = SEED) -> dict[str, np.ndarray]:
    """The table as integer columns (deterministic in `rows` and `seed`)."""
    rng = np.random.default_rng(seed)
    region = np.minimum(rng.zipf(1.6, rows) - 1, 49)
    age = np.clip(rng.normal(40, 15, rows), 0, 99).astype(np.int64)
    sex = rng.integers(0, 2, rows)
    # zip codes cluster by region: a region prefix plus a skewed local part
    zip_code = 10000 + (region * 1733) % 80000 + np.minimum(rng.zipf(1.3, rows) - 1, 9999)
    income = np.clip(rng.lognormal(10.3, 0.8, rows) * (1 + 0.01 * np.minimum(age, 65)), 0, 999_999).astype(np.int64)
    children = np.minimum(rng.poisson(np.where(age > 25, 1.6, 0.2)), 9)
    dept = np.minimum(rng.zipf(1.4, rows) - 1, 999)
    hours = np.clip(rng.normal(38, 10, rows), 0, 99).astype(np.int64)
    year = np.clip(2020 - age - rng.integers(0, 3, rows), 1900, 2020)
    score = np.clip(rng.normal(5000 + 20 * (income // 10000), 1500, rows), 0, 9999).astype(np.int64)
    return {"age": age, "sex": sex, "zip": zip_code, "income": income, "children": children, "dept": dept,
            "hours": hours, "year": year, "score": score, "region": region}


def write_csv(path: Path, rows: int = ROWS, seed: int = SEED) -> Path:
    """Write the table as CSV (header + rows); returns the path."""
    data = generate(rows, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    matrix = np.column_stack([data[c] for c in COLUMNS])
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(",".join(COLUMNS) + "\n")
        np.savetxt(out, matrix, fmt="%d", delimiter=",")
    tmp.replace(path)
    return path


def path(rows: int = ROWS) -> Path:
    """The CSV of the synthetic table with `rows` rows, generated on first use."""
    target = cache_dir() / f"synthetic_{rows}.csv"
    if not target.exists():
        write_csv(target, rows)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = write_csv(args.out, args.rows) if args.out else path(args.rows)
    print(out)


if __name__ == "__main__":
    main()
