"""The GPU benchmarks' synthetic table, generated in seconds by an array namespace (numpy or CuPy).

Why not `benchmarks.synthetic.generate`: at 100M rows it spent 93-96 s in numpy's samplers and decimal
encoding (issue 29) before the GPU saw a row. This generator draws the same ten columns (age, sex, zip,
income, children, dept, hours, year, score, region: skewed, correlated integers, the same families of
distributions and correlations as `benchmarks.synthetic`) plus a sensitive column `diagnosis`
(12 skewed values, correlated with age), with two changes that make it fast on any namespace:

- random numbers come from a counter-based hash (SplitMix64's finalizer of seed, column and row number),
  so the table is the same bit for bit on numpy and on CuPy for a seed, in any chunking, and a GPU draws it
  in milliseconds;
- every distribution is drawn by one lookup in a table of 2^16 quantiles (`quantiles`), built on the host
  from the distribution once: a gather per column instead of a sampler.

It is therefore not the table of `benchmarks.synthetic` (nor of the earlier GPU figures): same shape and
hardness (almost every row unique at the bottom node), other rows. Columns come back as leaf codes in the
narrowest type with decimal-rounding levels (level L = value // 10**L, levels that merge nothing skipped)
as per-leaf maps: the host never materializes a level per row.

    python -m benchmarks.gpu_table --rows 1000000 --parquet out.parquet   # the end-to-end input file
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fitness.encoding import EncodedQI, EncodedTable, LevelCodes, code_dtype

SEED = 20261126
COLUMNS = ("age", "sex", "zip", "income", "children", "dept", "hours", "year", "score", "region")
SENSITIVE = "diagnosis"
QUANTILES = 1 << 16
CHUNK = 1 << 23
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


def hash_bits(xp: Any, seed: int, stream: int, start: int, count: int) -> Any:
    """64 random bits per row `start .. start+count-1` of one stream: SplitMix64's finalizer of
    (seed, stream, row). Same bits on every namespace and in any chunking."""
    u64 = xp.uint64
    x = xp.arange(start, start + count, dtype=u64)
    x *= u64(_GOLDEN)
    x += u64((seed * 0x632BE59BD9B4E019 + stream * 0x8CB92BA72F3D8DD7) % (1 << 64))
    x ^= x >> u64(30)
    x *= u64(_MIX1)
    x ^= x >> u64(27)
    x *= u64(_MIX2)
    x ^= x >> u64(31)
    return x


def quantiles(inverse_cdf: Callable[[float], float]) -> np.ndarray:
    """The 2^16 mid-point quantiles of a distribution: drawing one uniformly draws the distribution
    (quantized to 1/65536 of probability)."""
    return np.array([inverse_cdf((i + 0.5) / QUANTILES) for i in range(QUANTILES)])


def zipf_quantiles(a: float, cap: int) -> np.ndarray:
    """Quantiles of min(zipf(a) - 1, cap) (numpy's zipf is 1, 2, ...; the tail beyond cap piles onto cap)."""
    support = np.arange(1, cap + 1, dtype=np.float64)
    pmf = support**-a / _zeta(a)
    cdf = np.cumsum(pmf)
    cdf[-1] = 1.0
    return np.minimum(np.searchsorted(cdf, (np.arange(QUANTILES) + 0.5) / QUANTILES), cap).astype(np.float64)


def _zeta(a: float, terms: int = 200_000) -> float:
    k = np.arange(1, terms + 1, dtype=np.float64)
    return float(np.sum(k**-a) + terms ** (1 - a) / (a - 1))


def poisson_quantiles(mean: float, cap: int) -> np.ndarray:
    """Quantiles of min(poisson(mean), cap)."""
    pmf = np.array([math.exp(-mean) * mean**k / math.factorial(k) for k in range(cap + 1)])
    cdf = np.cumsum(pmf)
    cdf[-1] = 1.0
    return np.searchsorted(cdf, (np.arange(QUANTILES) + 0.5) / QUANTILES).astype(np.float64)


@dataclass(frozen=True)
class Tables:
    """The quantile tables of the columns (host arrays; `device` puts them on a namespace)."""

    normal: np.ndarray
    region: np.ndarray
    local: np.ndarray
    dept: np.ndarray
    young: np.ndarray
    old: np.ndarray
    diagnosis: np.ndarray

    @staticmethod
    def build() -> Tables:
        normal = quantiles(statistics.NormalDist().inv_cdf)
        return Tables(normal, zipf_quantiles(1.6, 49), zipf_quantiles(1.3, 9999), zipf_quantiles(1.4, 999),
                      poisson_quantiles(0.2, 9), poisson_quantiles(1.6, 9), zipf_quantiles(1.5, 11))

    def device(self, xp: Any) -> Tables:
        return Tables(*(xp.asarray(getattr(self, f)) for f in self.__dataclass_fields__))


def draw(xp: Any, tables: Tables, seed: int, start: int, count: int) -> dict[str, Any]:
    """Rows `start .. start+count-1` of every column as int64 values on the namespace."""
    streams = iter(range(1, 64))

    def pick(table: Any) -> Any:  # one quantile per row: the top 16 bits of the row's hash index the table
        bits = hash_bits(xp, seed, next(streams), start, count) >> xp.uint64(48)
        return table[bits.astype(xp.int64)]

    def clipped(values: Any, low: int, high: int) -> Any:
        return xp.clip(values, low, high).astype(xp.int64)

    region = pick(tables.region).astype(xp.int64)
    age = clipped(40 + 15 * pick(tables.normal), 0, 99)
    sex = (hash_bits(xp, seed, next(streams), start, count) >> xp.uint64(63)).astype(xp.int64)
    zip_code = 10000 + (region * 1733) % 80000 + pick(tables.local).astype(xp.int64)
    income = clipped(xp.exp(10.3 + 0.8 * pick(tables.normal)) * (1 + 0.01 * xp.minimum(age, 65)), 0, 999_999)
    children = xp.where(age > 25, pick(tables.old), pick(tables.young)).astype(xp.int64)
    dept = pick(tables.dept).astype(xp.int64)
    hours = clipped(38 + 10 * pick(tables.normal), 0, 99)
    spread = (hash_bits(xp, seed, next(streams), start, count) % xp.uint64(3)).astype(xp.int64)
    year = xp.clip(2020 - age - spread, 1900, 2020)
    score = clipped(5000 + 20 * (income // 10000) + 1500 * pick(tables.normal), 0, 9999)
    diagnosis = xp.minimum(pick(tables.diagnosis).astype(xp.int64) + (age // 40), 11)
    return {"age": age, "sex": sex, "zip": zip_code, "income": income, "children": children, "dept": dept,
            "hours": hours, "year": year, "score": score, "region": region, SENSITIVE: diagnosis}


def generate(xp: Any, rows: int, seed: int = SEED, chunk: int = CHUNK) -> dict[str, Any]:
    """Every column as int32 values on the namespace, drawn `chunk` rows at a time."""
    tables = Tables.build().device(xp)
    out = {name: xp.empty(rows, dtype=xp.int32) for name in (*COLUMNS, SENSITIVE)}
    for start in range(0, rows, chunk):
        count = min(chunk, rows - start)
        for name, values in draw(xp, tables, seed, start, count).items():
            out[name][start : start + count] = values
    return out


def to_host(array: Any) -> np.ndarray:
    get = getattr(array, "get", None)  # CuPy's device-to-host copy
    return get() if get is not None else np.asarray(array)


def decimal_qi(xp: Any, name: str, values: Any) -> EncodedQI:
    """A QI of non-negative integers as leaf codes (on the host, narrowest type) and decimal-rounding maps:
    the per-row work is one bincount and one gather on the namespace."""
    present = to_host(xp.bincount(values) > 0)
    leaves = np.flatnonzero(present)
    remap = np.cumsum(present) - 1
    leaf_codes = to_host(xp.asarray(remap.astype(code_dtype(leaves.size)))[values])
    maps, labels = [], [tuple(str(v) for v in leaves.tolist())]
    level = 1
    while len(labels[-1]) > 1:
        rounded = leaves // 10**level
        distinct, leaf_to_level = np.unique(rounded, return_inverse=True)
        level += 1
        if distinct.size == len(labels[-1]):  # rounding merged nothing: skip the level
            continue
        maps.append(leaf_to_level.astype(code_dtype(distinct.size)))
        labels.append(tuple(f"{v}e{level - 1}" for v in distinct.tolist()) if distinct.size > 1 else ("*",))
    return EncodedQI(name, LevelCodes(leaf_codes, maps), tuple(labels))


def encoded(xp: Any, rows: int, seed: int = SEED) -> tuple[EncodedTable, float]:
    """The table encoded on the host (leaf codes + maps, the sensitive column as codes) and the seconds
    spent; drawn and coded on the namespace, copied to the host once."""
    start = time.perf_counter()
    columns = generate(xp, rows, seed)
    qis = tuple(decimal_qi(xp, name, columns[name]) for name in COLUMNS)
    diagnosis = to_host(columns[SENSITIVE]).astype(np.uint8)
    labels = tuple(f"d{v:02d}" for v in range(12))
    table = EncodedTable(rows, qis, {SENSITIVE: (diagnosis, labels)})
    return table, time.perf_counter() - start


def write_parquet(path: Path, rows: int, seed: int = SEED, xp: Any = np, chunk: int = CHUNK) -> float:
    """The table as a Parquet file (one row group per chunk, int32 columns, no compression: fast to write
    and read); returns the seconds spent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = time.perf_counter()
    tables = Tables.build().device(xp)
    names = (*COLUMNS, SENSITIVE)
    schema = pa.schema([(name, pa.int32()) for name in names])
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for first in range(0, rows, chunk):
            count = min(chunk, rows - first)
            drawn = draw(xp, tables, seed, first, count)
            arrays = [pa.array(to_host(drawn[name]).astype(np.int32)) for name in names]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--parquet", type=Path, required=True, help="write the table here")
    parser.add_argument("--xp", choices=["numpy", "cupy"], default="numpy", help="namespace that draws it")
    args = parser.parse_args()
    xp = np if args.xp == "numpy" else __import__("cupy")
    seconds = write_parquet(args.parquet, args.rows, args.seed, xp)
    print(f"{args.parquet}: {args.rows} rows in {seconds:.1f} s")


if __name__ == "__main__":
    main()
