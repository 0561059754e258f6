"""The independent check of a partitioned release, on the written files.

Why: every privacy claim is verified on what was written, by code that shares nothing with the evaluator
(no fitness/, no codes, no keys): each task reads one written part itself (pyarrow's CSV reader, every field
as text), counts its classes by their QI strings, and cuts them over reducers by a hash of the strings; each
reducer sums a class's counts over all parts, so a class spread over several parts is judged by its full
size. The verdict is a `kgen.check.kanonymity.CheckResult`, counted as `kgen check` counts a single file: rows with `*`
in every QI are the suppressed rows while they are within floor(t * rows), else one class of their own.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from pyarrow import csv

from kgen.check.kanonymity import SUPPRESSED, CheckResult

COUNT = "__rows__"


def read_written(path: str, qis: Sequence[str], separator: str) -> pd.DataFrame:
    convert = csv.ConvertOptions(column_types={c: pa.string() for c in qis}, strings_can_be_null=False,
                                 include_columns=list(qis))
    return csv.read_csv(path, parse_options=csv.ParseOptions(delimiter=separator),
                        convert_options=convert).to_pandas()


def count_part(path: str, qis: Sequence[str], separator: str, reducers: int) -> list[pd.DataFrame]:
    """Task: one written part's classes (QI strings and row counts), cut over the reducers by hash."""
    frame = read_written(path, qis, separator)
    counts = frame.groupby(list(qis), sort=False, dropna=False).size().rename(COUNT).reset_index()
    owner = pd.util.hash_pandas_object(counts[list(qis)], index=False).to_numpy() % np.uint64(reducers)
    return [counts[owner == r] for r in range(reducers)]


def part_rows(path: str, qis: Sequence[str], separator: str) -> int:
    return len(read_written(path, qis, separator))


def reduce_counts(qis: Sequence[str], k: int, *pieces: pd.DataFrame) -> dict:
    """Task: one reducer's classes summed over every part: starred rows, released classes and sizes, and
    the QI strings of classes smaller than k (none in a correct release)."""
    frame = pd.concat(pieces, ignore_index=True)
    sizes = frame.groupby(list(qis), sort=False, dropna=False)[COUNT].sum().reset_index()
    starred = np.ones(len(sizes), dtype=bool)
    for column in qis:
        starred &= (sizes[column] == SUPPRESSED).to_numpy()
    rows = sizes[COUNT].to_numpy()
    released = rows[~starred]
    small = sizes[~starred & (rows < k)]
    return {"starred": int(rows[starred].sum()), "classes": int(released.size),
            "smallest": int(released.min()) if released.size else 0, "rows": int(rows.sum()),
            "small": small[list(qis)].to_numpy().tolist()}


def locate(path: str, qis: Sequence[str], separator: str, offset: int, classes: list[list[str]]) -> list[int]:
    """Task: the 1-based rows (offset by the rows of earlier parts) of one part in the given classes."""
    frame = read_written(path, qis, separator)
    wanted = pd.MultiIndex.from_tuples([tuple(c) for c in classes], names=list(qis))
    hit = pd.MultiIndex.from_frame(frame[list(qis)]).isin(wanted)
    return (np.flatnonzero(hit) + offset + 1).tolist()


def check_parts(client: object, paths: Sequence[str], qis: Sequence[str], k: int, suppression: float,
                separator: str = ",", reducers: int = 2) -> CheckResult:
    """k-anonymity with suppression of the parts read together as one table (see the module docstring)."""
    submit = client.submit  # type: ignore[attr-defined]
    counted = [submit(count_part, p, list(qis), separator, reducers, pure=False) for p in paths]
    pieces = [[submit(operator.getitem, c, r, pure=False) for c in counted] for r in range(reducers)]
    figures = client.gather([submit(reduce_counts, list(qis), k, *pieces[r], pure=False)  # type: ignore[attr-defined]
                             for r in range(reducers)])
    rows = sum(f["rows"] for f in figures)
    starred_rows = sum(f["starred"] for f in figures)
    classes = sum(f["classes"] for f in figures)
    smallest = min((f["smallest"] for f in figures if f["smallest"]), default=0)
    small = [c for f in figures for c in f["small"]]
    allowed = math.floor(suppression * rows + 1e-9)
    starred_class = starred_rows > allowed and starred_rows >= k
    if starred_class:
        classes += 1
        smallest = min(smallest, starred_rows) if smallest else starred_rows
    violating: list[int] = []
    if small:
        lengths = client.gather([submit(part_rows, p, list(qis), separator, pure=False) for p in paths])  # type: ignore[attr-defined]
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).tolist()
        found = client.gather([submit(locate, p, list(qis), separator, int(o), small, pure=False)  # type: ignore[attr-defined]
                               for p, o in zip(paths, offsets)])
        violating = sorted(r for part in found for r in part)
    return CheckResult(rows=rows, k=k, classes=classes, smallest_class=smallest,
                       suppressed_rows=0 if starred_class else starred_rows, violating_rows=violating,
                       allowed=allowed, starred_rows=starred_rows, starred_class=starred_class)
