"""An independent check of a Mondrian release against its original table (`kgen mondrian-check`).

It shares no code with the anonymizer (kgen/mondrian/): it reads both files itself with pandas, re-derives the
rows of each distributed part from the original by the part's condition, and checks, row by row:
- every class (rows agreeing on every released QI cell) has >= k rows and >= l distinct sensitive values;
- every released QI cell covers the original value under the QI's declared generalization: the value itself,
  an interval "[lo, hi]" with lo <= value <= hi, a set "{a|b|c}" holding it, a prefix pattern ("100**": the
  value starts with the stem and is no longer than the pattern), or an ancestor of it in its hierarchy (read
  from the ARX file here, with Python's csv module);
- every other column is unchanged (identifier columns may be `*`), and the rows are the original's, in order.

Checks are vectorized over the distinct released cells of a column (a release has few distinct cells); no
Python loop runs over rows.
"""

from __future__ import annotations

import csv
import glob
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kgen.io.files import not_found
from kgen.io.table import EXCEL_SUFFIXES, read_excel
from lattice.errors import InputError

KINDS = ("hierarchy", "prefix", "set", "interval")


@dataclass
class MondrianCheck:
    """The outcome: `problems` lists what failed (empty: passed), each with at most a few row numbers."""

    rows: int = 0
    classes: int = 0
    smallest_class: int = 0
    min_distinct_l: int | None = None
    dp: int = 0
    parts: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems and self.rows > 0


def _text_encoding(encoding: str) -> str:
    """Python's codec for an input's encoding: UTF-8 with or without its byte-order mark by default."""
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding


def _separator(path: Path, encoding: str = "utf-8") -> str:
    with open(path, encoding=_text_encoding(encoding), newline="") as handle:
        first = handle.readline()
    return ";" if first.count(";") > first.count(",") else ","


def original_files(path: str | os.PathLike) -> list[Path]:
    """The files of an original table given as a file, a glob or a folder, in sorted order (read here
    again, independently of the engine's storage code)."""
    text = str(path)
    if any(ch in text for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(text))
    elif Path(text).is_dir():
        files = sorted(p for p in Path(text).iterdir() if p.suffix.lower() in (".csv", ".parquet", ".pq"))
    else:
        files = [Path(text)]
    if not files:
        raise InputError("file not found", file=text)
    for file in files:
        if not file.is_file():
            raise not_found(file)  # missing, or a FIFO or device: said as it is
    return files


def read_text_table(path: str | os.PathLike, encoding: str = "utf-8") -> pd.DataFrame:
    """Every cell as text. `encoding` is the original's (`--encoding`); releases are always UTF-8."""
    files = original_files(path)
    if len(files) > 1:
        return pd.concat([read_text_table(f, encoding) for f in files], ignore_index=True)
    target = files[0]
    if target.suffix.lower() in EXCEL_SUFFIXES:  # the shared reader's text of each cell, as the engine read it
        sheet = read_excel(target)
        return pd.DataFrame({c: list(sheet.column(c)) for c in sheet.columns}, dtype=object)
    if target.suffix.lower() in (".parquet", ".pq"):
        frame = pd.read_parquet(target)
        return pd.DataFrame({c: frame[c].astype(str).astype(object) for c in frame.columns})
    return pd.read_csv(target, sep=_separator(target, encoding), dtype=str, keep_default_na=False,
                       encoding=_text_encoding(encoding))


def ancestors_of(path: str | os.PathLike) -> dict[str, set[str]]:
    """Leaf -> the labels of its row in an ARX hierarchy file (itself and every generalization of it)."""
    target = Path(path)
    with open(target, encoding="utf-8-sig", newline="") as handle:
        text = handle.read()
    separator = ";" if text.split("\n", 1)[0].count(";") >= text.split("\n", 1)[0].count(",") else ","
    out: dict[str, set[str]] = {}
    for row in csv.reader(text.splitlines(), delimiter=separator):
        cells = [c.strip() for c in row if c.strip()]
        if cells:
            out[cells[0]] = set(cells)
    return out


def _number(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)


def covers(kind: str, released: pd.Series, original: pd.Series, tree: Mapping[str, set[str]] | None) -> np.ndarray:
    """Per row: does the released cell cover the original value under generalization `kind`?"""
    released = released.reset_index(drop=True)
    original = original.reset_index(drop=True)
    ok = np.array((released == original).to_numpy(), dtype=bool)
    cells, inverse = np.unique(released.to_numpy(dtype=str), return_inverse=True)
    inverse = inverse.reshape(-1)
    if kind == "interval":
        value = _number(original)
        low = np.full(cells.size, np.nan)
        high = np.full(cells.size, np.nan)
        for i, cell in enumerate(cells):
            if cell.startswith("[") and cell.endswith("]") and cell.count(",") == 1:
                a, b = cell[1:-1].split(",")
                try:
                    low[i], high[i] = float(a), float(b)
                except ValueError:
                    pass
            else:
                try:
                    low[i] = high[i] = float(cell)
                except ValueError:
                    pass
        ok |= (low[inverse] <= value) & (value <= high[inverse])
    elif kind == "set":
        members = [set(c[1:-1].split("|")) if c.startswith("{") and c.endswith("}") else {c} for c in cells]
        pairs = pd.DataFrame({"cell": inverse, "value": original.to_numpy(dtype=str)}).drop_duplicates()
        good = {(c, v) for c, v in zip(pairs["cell"], pairs["value"]) if v in members[c]}
        ok |= np.fromiter(((c, v) in good for c, v in zip(inverse, original.to_numpy(dtype=str))), dtype=bool,
                          count=len(original)) if good else False
    elif kind == "prefix":
        stems = np.array([c.rstrip("*") for c in cells], dtype=object)
        lengths = np.array([len(c) for c in cells])
        text = original.to_numpy(dtype=str)
        starts = np.char.startswith(text.astype(str), stems[inverse].astype(str))
        ok |= starts & (np.char.str_len(text.astype(str)) <= lengths[inverse])
    elif kind == "hierarchy":
        if tree is None:
            raise InputError("the hierarchy generalization needs the hierarchy file to check against")
        pairs = pd.DataFrame({"cell": released.to_numpy(dtype=str), "value": original.to_numpy(dtype=str)})
        unique = pairs.drop_duplicates()
        good = {(c, v) for c, v in zip(unique["cell"], unique["value"]) if c in tree.get(v, ())}
        ok |= np.fromiter(((c, v) in good for c, v in zip(pairs["cell"], pairs["value"])), dtype=bool,
                          count=len(pairs))
    else:
        raise InputError(f"unknown generalization {kind!r}; choose {', '.join(KINDS)}")
    return ok


def _rows(mask: np.ndarray, numbers: np.ndarray, limit: int = 5) -> str:
    shown = numbers[np.flatnonzero(mask)[:limit]]
    more = int(mask.sum()) - shown.size
    return ", ".join(map(str, shown)) + (f" and {more} more" if more > 0 else "")


def select(original: pd.DataFrame, condition: Sequence[Mapping]) -> np.ndarray:
    """Rows of the original meeting a part's condition (numbers compared as numbers, text as text)."""
    mask = np.ones(len(original), dtype=bool)
    for clause in condition:
        column = original[clause["column"]]
        if clause["op"] == "in":
            mask &= column.isin(clause["values"]).to_numpy()
            continue
        if clause.get("order") == "number":
            values, bound = _number(column), float(clause["value"])
        else:
            values, bound = column.to_numpy(dtype=str), str(clause["value"])
        mask &= (values <= bound) if clause["op"] == "<=" else (values > bound)
    return mask


def check_part(original: pd.DataFrame, numbers: np.ndarray, release: pd.DataFrame, qis: Sequence[str], k: int,
               l: int, sensitive: str | None, kinds: Mapping[str, str],  # noqa: E741
               trees: Mapping[str, Mapping[str, set[str]]], identifiers: Sequence[str], name: str,
               result: MondrianCheck) -> None:
    """Check one release file (or part) against its original rows (row-aligned); add to `result`."""
    problems = result.problems
    if list(release.columns) != list(original.columns):
        problems.append(f"{name}: columns {list(release.columns)} differ from the original's")
        return
    if len(release) != len(original):
        problems.append(f"{name}: {len(release)} rows, but the original has {len(original)} for it")
        return
    if len(release) == 0:
        return
    for column in release.columns:
        if column in qis:
            bad = ~covers(kinds[column], release[column], original[column], trees.get(column))
            what = f"released {kinds[column]} cells that do not cover the original value"
        elif column in identifiers:
            bad = (release[column] != "*").to_numpy() & (release[column] != original[column]).to_numpy()
            what = "identifier cells that are neither * nor the original"
        else:
            bad = (release[column] != original[column]).to_numpy()
            what = "cells changed in a column that is not a quasi-identifier"
        if bad.any():
            problems.append(f"{name}, column {column!r}: {int(bad.sum())} {what} (rows {_rows(bad, numbers)})")
    classes = release.groupby(list(qis), sort=False, dropna=False).ngroup().to_numpy()
    sizes = np.bincount(classes)
    small = sizes[classes] < k
    if small.any():
        problems.append(f"{name}: {int(small.sum())} rows in classes smaller than k = {k} "
                        f"(rows {_rows(small, numbers)})")
    result.rows += len(release)
    result.classes += sizes.size
    result.dp += int(np.dot(sizes, sizes))
    smallest = int(sizes.min())
    result.smallest_class = smallest if result.parts == 0 else min(result.smallest_class, smallest)
    if sensitive is not None:
        _, codes = np.unique(release[sensitive].to_numpy(dtype=str), return_inverse=True)
        width = int(codes.max()) + 1
        distinct = np.bincount(np.unique(classes * width + codes.reshape(-1)) // width, minlength=sizes.size)
        few = distinct[classes] < l
        if few.any():
            problems.append(f"{name}: {int(few.sum())} rows in classes with fewer than l = {l} distinct values of "
                            f"{sensitive!r} (rows {_rows(few, numbers)})")
        least = int(distinct.min())
        result.min_distinct_l = least if result.min_distinct_l is None else min(result.min_distinct_l, least)
    result.parts += 1


def check_release(original: str | os.PathLike, release: str | os.PathLike, qis: Sequence[str], k: int, l: int = 1,  # noqa: E741
                  sensitive: str | None = None, kinds: Mapping[str, str] | None = None,
                  hierarchies: Mapping[str, str | os.PathLike] | None = None, identifiers: Sequence[str] = (),
                  report: str | os.PathLike | None = None, encoding: str = "utf-8") -> MondrianCheck:
    """Check a release file, or a folder of parts (with the run's `report` for each part's condition).

    Classes are checked within each part: a class split over two parts is checked on each side, which is
    stricter than checking their union (the union of classes with >= k rows and >= l values has as many).
    `encoding`: the original's text encoding (the release is UTF-8, as kgen writes it)."""
    table = read_text_table(original, encoding)
    for column in list(qis) + ([sensitive] if sensitive else []):
        if column not in table.columns:
            raise InputError(f"unknown column {column!r}", file=str(original), column=column)
    kinds = dict(kinds or {})
    for column in qis:  # the engine's own default: hierarchy where given, interval for numbers, set otherwise
        numeric = len(table) > 0 and bool(pd.to_numeric(table[column], errors="coerce").notna().all())
        kinds.setdefault(column, "hierarchy" if hierarchies and column in hierarchies else
                         "interval" if numeric else "set")
    trees = {c: ancestors_of(p) for c, p in (hierarchies or {}).items()}
    result = MondrianCheck()
    target = Path(release)
    if target.is_dir():
        if report is None:
            raise InputError("a folder of release parts needs the run's report (--report) for each part's "
                             "condition", file=str(release))
        fragments = json.loads(Path(report).read_text(encoding="utf-8"))["fragments"]
        seen = np.zeros(len(table), dtype=np.int64)
        for fragment in fragments:
            mask = select(table, fragment["condition"])
            seen += mask
            part = target / fragment["part"]
            if not part.is_file():
                result.problems.append(f"{part}: missing")
                continue
            numbers = np.flatnonzero(mask) + 1
            check_part(table[mask].reset_index(drop=True), numbers, read_text_table(part), qis, k, l, sensitive,
                       kinds, trees, identifiers, str(part), result)
        if (seen != 1).any():
            result.problems.append(f"the parts' conditions do not cover every original row exactly once "
                                   f"(rows {_rows(seen != 1, np.arange(1, len(table) + 1))})")
    else:
        check_part(table, np.arange(1, len(table) + 1), read_text_table(release), qis, k, l, sensitive, kinds,
                   trees, identifiers, str(release), result)
    return result
