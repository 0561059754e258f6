"""Choosing, loading and building the hierarchy of each quasi-identifier.

A hierarchy spec is one of:
- a path to an ARX CSV file (one row per value, one column per level; `;` or `,`);
- `decimal` (decimal rounding, the default for numeric columns), `intervals:W1,W2,...[;bottom=B][;top=T]`
  (whole or fractional widths, bottom/top coding), `mask[:left|right]`, `date[:FORMAT]`, `decade-date[:FORMAT]`,
  `dates:week,month,quarter,year,decade[;format=FMT]`, `age:YYYY-MM-DD[;bands=5,10][;format=FMT]` (birth
  dates to ages at a reference date), `order:FILE|V1,V2,...;sizes=N,...` (ARX's order builder), `flat`
  (value -> `*`, the default for other columns); docs/usage.md has examples;
- a `lattice.Hierarchy` object, a pandas DataFrame laid out as an ARX file (Python API), or a list of
  {child: parent} mappings (categories).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kgen.io.csvio import IntegerLabels, code_dtype, decimal_order, read_rows
from kgen.io.table import CodedColumn
from lattice import builders
from lattice.errors import InputError, clip
from lattice.hierarchy import TOP, Hierarchy, Levels


def load_arx(path: str | os.PathLike, column: str) -> Hierarchy:
    """An ARX CSV hierarchy file. A separator at the end of every row (an empty last column) is ignored."""
    rows = read_rows(path)
    filled = [r for r in rows if r]
    if filled and all(len(r) > 1 and not r[-1].strip() for r in filled):
        rows = [r[:-1] if r else r for r in rows]
    return Hierarchy.from_rows(column, rows, str(path))


def find_in_dir(folder: str | os.PathLike, column: str) -> Path | None:
    """`*hierarchy_<column>.csv` in folder, if there is one. A folder that does not exist is an error (a
    typo must not silently fall back to the default hierarchies)."""
    if not Path(folder).is_dir():
        raise InputError("hierarchy folder does not exist or is not a folder", file=str(folder))
    matches = sorted(Path(folder).glob(f"*hierarchy_{column}.csv"))
    return matches[0] if matches else None


def build(column: str, spec: object, values: Sequence[str], numbers: np.ndarray | None = None) -> Hierarchy:
    """The hierarchy for `column` from a spec, given the column's distinct non-missing values (and, when the
    reader knows them, the values as integers: `decimal_levels`)."""
    if isinstance(spec, Hierarchy):
        return spec
    if is_frame(spec):
        return from_frame(column, spec)
    if isinstance(spec, (list, tuple)):
        return builders.mapping_hierarchy(column, values, spec)
    text = str(spec)
    kind, _, argument = text.partition(":")
    if kind == "decimal":
        if numbers is not None and len(values):
            return decimal_levels(column, values, numbers)
        fast = decimal_of_integers(column, values)
        return fast if fast is not None else builders.decimal_hierarchy(column, values)
    if kind in STEWARD_BUILDERS:
        return STEWARD_BUILDERS[kind](column, values, *settings(column, text, argument))
    if kind == "intervals":
        return intervals(column, values, argument)
    if kind == "mask":
        if argument not in ("", "right", "left"):
            raise InputError(f"bad mask direction {clip(argument)}: expected mask, mask:right or mask:left",
                             column=column)
        masked = builders.left_masking_hierarchy if argument == "left" else builders.masking_hierarchy
        return masked(column, values)
    if kind in ("date", "decade-date"):
        return builders.date_hierarchy(column, values, argument or "%Y-%m-%d", decade=kind == "decade-date")
    if kind == "flat":
        return Hierarchy.from_rows(column, [[v, TOP] for v in values] or [["", TOP]], f"flat hierarchy of {column!r}")
    path = Path(text)
    if not path.exists():
        raise InputError(f"hierarchy {clip(text)} is neither an existing file nor a builder "
                         f"({BUILDER_HELP})", column=column, value=text)
    return load_arx(path, column)


BUILDER_HELP = ("decimal, intervals:W,...[;bottom=B][;top=T], mask[:left|right], date[:FMT], "
                "dates:week,month,quarter,year[;format=FMT], age:YYYY-MM-DD[;bands=5,10][;format=FMT], "
                "order:FILE|V1,V2,...;sizes=N,..., flat")


def settings(column: str, spec: str, argument: str) -> tuple[str, dict[str, str]]:
    """A builder's argument `HEAD;key=value;...` as its head and its settings; InputError for a setting the
    builder does not know (`KNOWN_SETTINGS`)."""
    head, *rest = argument.split(";")
    found: dict[str, str] = {}
    kind = spec.partition(":")[0]
    for part in rest:
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in KNOWN_SETTINGS[kind]:
            raise InputError(f"bad setting {clip(part)} in {clip(spec)}: {kind} takes "
                             f"{', '.join(k + '=...' for k in KNOWN_SETTINGS[kind])}", column=column)
        found[key.strip()] = value.strip()
    return head.strip(), found


KNOWN_SETTINGS = {"intervals": ("bottom", "top"), "order": ("sizes",), "dates": ("format",),
                  "age": ("bands", "format")}


def intervals(column: str, values: Sequence[str], argument: str) -> Hierarchy:
    """`intervals:W1,W2[;bottom=B][;top=T]`: whole widths without coding keep the original builder (its
    labels unchanged); fractional widths or bottom/top coding go to `coded_interval_hierarchy`."""
    head, given = settings(column, f"intervals:{argument}", argument)
    widths = [w.strip() for w in head.split(",") if w.strip()]
    if not widths or not all(builders.is_number(w) for w in widths):
        raise InputError(f"bad interval widths {clip(head)}: expected e.g. intervals:5,10,20 or "
                         "intervals:0.5,1;bottom=0;top=10", column=column)
    if not given and all(w.isdigit() for w in widths):
        return builders.interval_hierarchy(column, values, [int(w) for w in widths])
    return builders.coded_interval_hierarchy(column, values, widths, given.get("bottom"), given.get("top"))


def whole_numbers(column: str, text: str, what: str) -> list[int]:
    """`2,4` as whole numbers; InputError naming the setting otherwise."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise InputError(f"{what} must be whole numbers separated by commas, got {clip(text)}", column=column)
    return [int(p) for p in parts]


def order_values(column: str, head: str) -> list[str]:
    """The value order of `order:`: a file with one value per line (the first field of a CSV row), or the
    values themselves, comma-separated."""
    if head and Path(head).is_file():
        return [row[0] for row in read_rows(head) if row and row[0].strip()]
    values = [v.strip() for v in head.split(",") if v.strip()]
    if not values:
        raise InputError("order: needs a value order: a file with one value per line, or V1,V2,...",
                         column=column)
    return values


def order_builder(column: str, values: Sequence[str], head: str, given: dict[str, str]) -> Hierarchy:
    return builders.order_hierarchy(column, values, order_values(column, head),
                                    whole_numbers(column, given.get("sizes", ""), "order sizes (sizes=2,4)"))


def dates_builder(column: str, values: Sequence[str], head: str, given: dict[str, str]) -> Hierarchy:
    return builders.calendar_hierarchy(column, values, head.split(","), given.get("format", "%Y-%m-%d"))


def age_builder(column: str, values: Sequence[str], head: str, given: dict[str, str]) -> Hierarchy:
    bands = whole_numbers(column, given["bands"], "age bands (bands=5,10)") if "bands" in given else []
    return builders.age_hierarchy(column, values, head, bands, given.get("format", "%Y-%m-%d"))


STEWARD_BUILDERS: dict[str, Callable[[str, Sequence[str], str, dict[str, str]], Hierarchy]] = {
    "order": order_builder, "dates": dates_builder, "age": age_builder,
}
# Every builder's name: what a report records as a spec to rebuild on new data (`kgen.report.build`).
BUILDER_NAMES = ("decimal", "intervals", "mask", "date", "decade-date", "flat", *STEWARD_BUILDERS)


INTEGER = re.compile(r"-?[0-9]{1,18}", re.ASCII)


def decimal_of_integers(column: str, values: Sequence[str]) -> Hierarchy | None:
    """`lattice.builders.decimal_hierarchy` for the common case of plain integers (`-?[0-9]{1,18}`, written
    any way: `007`, `-0`), built on arrays by `decimal_levels`: the same paths in the same order, the same
    `*` level, the same tree (not re-validated: decimal rounding nests by construction). None for anything
    else (fractions, exponents, signs, huge numbers, text: the builder decides and words the errors). On a
    column of 180,000 distinct incomes this is the difference between seconds and a fraction of a second."""
    values = sorted(set(values))
    if not values or not all(INTEGER.fullmatch(v) for v in values):
        return None
    return decimal_levels(column, tuple(values), np.array([int(v) for v in values], dtype=np.int64))


def decimal_levels(column: str, values: Sequence[str], numbers: np.ndarray) -> Hierarchy:
    """The decimal hierarchy of a column whose distinct values are known as integers (`numbers[i]` is the
    integer `values[i]` writes; `values` sorted and distinct, as the reader gives them): the hierarchy as
    arrays (`lattice.hierarchy.Levels`), with no Python object per value. The same paths, levels and label
    order as the builder (tests compare them): a level's labels `[low, high]` sort as their lows' strings
    do, since `,` sorts before `-` and the digits, and a low `q * 10^L` sorts as `q` does (appending zeros
    keeps the order: `0` is the least digit), which keeps the sort key within int64 when a value near
    -10^18 rounds down to -10^18."""
    if not len(values):
        raise ValueError("decimal_levels needs values")
    numbers = np.asarray(numbers, dtype=np.int64)
    numeric = np.argsort(numbers, kind="stable")  # the leaves in numeric order: a level's lows never decrease
    ordered = numbers[numeric]
    height = max(1, len(str(int(np.abs(ordered[[0, -1]]).max()))))
    maps: list[np.ndarray] = []
    labels: list[tuple[str, ...]] = []
    for level in range(1, height + 1):
        width = 10**level
        lows = ordered // width * width
        change = np.diff(lows, prepend=lows[0] - 1) != 0
        distinct = lows[change]
        order = decimal_order(distinct // width)  # `q` and `q` followed by zeros sort alike; no overflow
        rank = np.empty(distinct.size, dtype=code_dtype(distinct.size))
        rank[order] = np.arange(distinct.size)
        code = np.empty(len(values), dtype=rank.dtype)
        code[numeric] = rank[np.cumsum(change) - 1]
        maps.append(code)
        labels.append(tuple(f"[{low}, {low + width - 1}]" for low in distinct[order].tolist()))
    if len(labels[-1]) > 1:  # negative numbers: one class needs a `*` level on top
        maps.append(np.zeros(len(values), dtype=np.uint8))
        labels.append((TOP,))
    leaves = values if isinstance(values, (tuple, IntegerLabels)) else tuple(values)
    return Hierarchy.from_arrays(column, Levels(leaves, tuple(maps), tuple(labels)), f"decimal hierarchy of {column!r}")


def default_spec(column: str, values: Sequence[str], source: str | None = None,
                 numbers: np.ndarray | None = None) -> str:
    """Decimal rounding for numeric columns (the paper's default), a flat hierarchy for text columns.

    A column where more than half of the distinct values are numbers but some are text is an error naming
    the first text value: it is almost always an undeclared missing-value token or a data error, and
    guessing would be wrong. Values known as integers (`numbers`) are numbers: decimal.
    """
    if numbers is not None and len(values):
        return "decimal"
    numeric = [builders.is_number(v) for v in values]
    if values and all(numeric):
        return "decimal"
    if sum(numeric) > len(values) / 2:
        bad = values[numeric.index(False)]
        raise InputError(f"value {clip(bad)} is text in a numeric column; declare it missing (--missing) or give "
                         "a hierarchy (--hierarchy)", file=source, column=column, value=bad)
    return "flat"


def first_row(column_values: Sequence[str], value: str) -> int | None:
    """The index of the first row holding `value` (None if none): on the codes for a coded column."""
    if isinstance(column_values, CodedColumn):
        if value not in column_values.labels:
            return None
        hits = np.flatnonzero(column_values.codes == column_values.labels.index(value))
        return int(hits[0]) if hits.size else None
    for index, candidate in enumerate(column_values):
        if candidate == value:
            return index
    return None


def locate(error: InputError, column: str, source: str | None, column_values: Sequence[str] | None,
           row_number: Callable[[int], int] | None) -> InputError:
    """The error with the data row of its value: in the location when the error is about the data file,
    as a note when it names another file (the hierarchy)."""
    if error.value is None or column_values is None:
        return error.located(file=source, column=column)
    index = first_row(column_values, error.value)
    if index is None:
        return error.located(file=source, column=column)
    row = row_number(index) if row_number is not None else index + 1
    if error.file is None or error.file == source:
        return error.located(file=source, row=row, column=column)
    return error.located(column=column, note=f" (first in row {row} of {source or 'the data'})")


def resolve(column: str, values: Sequence[str], missing: str | None, spec: object | None,
            folder: str | os.PathLike | None, source: str | None = None, *,
            column_values: Sequence[str] | None = None,
            row_number: Callable[[int], int] | None = None,
            numbers: np.ndarray | None = None) -> tuple[Hierarchy, str]:
    """The validated hierarchy for one QI column and a short description of where it came from.

    `values` are the distinct non-missing values; `missing` the column's missing token, if any occurs.
    Given the whole column (`column_values`) and `row_number` (data index -> row in `source`), errors about
    a value also name the row where it first occurs. `numbers`, when given, are `values` as integers (each
    value written as `str(int)` writes it): the default and decimal hierarchies are then built on arrays.
    """
    try:
        return _resolve(column, values, missing, spec, folder, source, numbers)
    except InputError as error:
        raise locate(error, column, source, column_values, row_number) from None


def from_frame(column: str, frame: object) -> Hierarchy:
    """A hierarchy given as a pandas DataFrame (Python API): one row per value, one column per level, as in
    ARX's CSV files; every cell read as text (an empty or missing cell ends the row, as in the files)."""
    rows = []
    for row in frame.astype(object).to_numpy().tolist():  # type: ignore[attr-defined]
        cells = ["" if cell is None or cell != cell else str(cell) for cell in row]  # NaN != NaN
        while cells and not cells[-1].strip():
            cells.pop()
        rows.append(cells)
    return Hierarchy.from_rows(column, rows, f"DataFrame hierarchy of {column!r}")


def is_frame(spec: object) -> bool:
    """Whether a spec is a DataFrame (duck-typed: pandas is optional, and never imported here for this)."""
    return hasattr(spec, "to_numpy") and hasattr(spec, "columns") and hasattr(spec, "astype")


def _resolve(column: str, values: Sequence[str], missing: str | None, spec: object | None,
             folder: str | os.PathLike | None, source: str | None,
             numbers: np.ndarray | None = None) -> tuple[Hierarchy, str]:
    frame = is_frame(spec)
    if frame:
        spec = from_frame(column, spec)
    if spec is None and folder is not None:
        found = find_in_dir(folder, column)
        spec = str(found) if found else None
    described = ("DataFrame" if frame else spec if isinstance(spec, str)
                 else type(spec).__name__ if spec is not None else None)
    if spec is None:
        spec = described = default_spec(column, values, source, numbers)
    if not values and not isinstance(spec, Hierarchy) and not Path(str(spec)).exists():
        hierarchy = Hierarchy.from_rows(column, [[missing or "", TOP]], f"flat hierarchy of {column!r}")
    else:
        hierarchy = build(column, spec, values, numbers)
    if missing is not None:
        hierarchy = hierarchy.with_missing(missing)
    hierarchy.check_covers(values, column)
    return hierarchy, str(described)
