"""Shared helpers of the benchmark scripts: the benchmark datasets, timing, and writing result tables."""

from __future__ import annotations

import csv
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import synthetic
from kgen.io.table import read_csv
from kgen.run.config import Config
from kgen.run.prepare import Prepared, prepare

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("KGEN_SHARED", REPO.parent / "shared")) / "data"  # as tests/conftest.py
RESULTS = REPO / "results" / "benchmarks"
ADULT_QIS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation")


@dataclass(frozen=True)
class Dataset:
    """A benchmark problem: a name and how to prepare it (config included)."""

    name: str
    load: Callable[..., Prepared]


def adult(kernel: str = "fast", **config: object) -> Prepared:
    """Adult (30,162 rows), the 8 usual QIs with the ARX hierarchies, k = 2, t = 0.005."""
    table = read_csv(DATA / "adult" / "adult.csv")
    options = {"qi": ADULT_QIS, "k": 2, "suppression": 0.005, "hierarchy_dir": str(DATA / "adult"),
               "kernel": kernel, **config}
    return prepare(table, Config(**options))  # type: ignore[arg-type]


def cargo(q: int, kernel: str = "fast", **config: object) -> Prepared:
    """Cargo 2000: the first q columns after `nr` as QIs, decimal hierarchies, k = 2, t = 0.005 (SPEC 7)."""
    table = read_csv(DATA / "cargo2000" / "c2k_data_comma.csv")
    qis = table.columns[1 : 1 + q]
    options = {"qi": qis, "identifiers": ("nr",), "k": 2, "suppression": 0.005, "kernel": kernel, **config}
    return prepare(table, Config(**options))  # type: ignore[arg-type]


def synthetic_table(kernel: str = "fast", rows: int = synthetic.ROWS, **config: object) -> Prepared:
    """The deterministic synthetic table (10 QIs), k = 2, t = 0.005."""
    table = read_csv(synthetic.path(rows))
    options = {"qi": synthetic.COLUMNS, "k": 2, "suppression": 0.005, "kernel": kernel, **config}
    return prepare(table, Config(**options))  # type: ignore[arg-type]


def timed(body: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = body()
    return time.perf_counter() - start, value


def machine() -> str:
    return (f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
            f"{platform.machine()}")


def markdown(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table."""
    def cell(v: object) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write(name: str, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], notes: str = "") -> str:
    """Print a table and write it to results/benchmarks/<name>.md and .csv; returns the markdown."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = f"# {title}\n\n{notes}\n\nMachine: {machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
    text += markdown(headers, rows) + "\n"
    (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")
    with open(RESULTS / f"{name}.csv", "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(headers)
        writer.writerows(rows)
    print(text)
    return text
