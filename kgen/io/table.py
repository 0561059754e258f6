"""Tables of string values, from CSV files, column mappings or pandas DataFrames, stored by column.

A column is either a plain sequence of strings (small tables built in Python) or a `CodedColumn`: an integer
code per row (uint8, uint16 or int32: the narrowest that holds the column's distinct values) and the tuple of
distinct strings. CSV files are read straight into coded columns, so that a table of millions of rows costs 1
to 4 bytes per cell plus its distinct values, not a Python string per cell; `prepare` and `release` work on
the codes, and `Table.column(name)` still gives a sequence of strings to every other caller (materialized
lazily, row by row or in chunks).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TextIO, overload

import numpy as np

from kgen.io import csvio
from kgen.io.csvio import code_dtype, read_coded
from kgen.io.files import open_input
from lattice.errors import InputError, clip, names_shown

DEFAULT_MISSING = ("", "?", "NA")
SUPPRESSED = "*"  # how a release writes a suppressed row's QI cells (and the top of every hierarchy)
ITER_CHUNK = 65_536  # rows materialized at a time when a coded column is iterated
# the values of a 0/1 member column (a research subset named by column), lowercased and stripped: the run
# (`kgen.run.population`) and the independent checker (`kgen.check.population`) read it the same way
FLAG_TRUE = ("1", "true", "yes", "y")
FLAG_FALSE = ("0", "false", "no", "n", "")


class CodedColumn(Sequence[str]):
    """A column as codes: `labels[codes[r]]` is row r's value. Behaves as a read-only sequence of strings
    (indexing, iteration, `in`, equality with a list) without holding a string per row.

    `numbers`, when not None, are the labels as integers (`numbers[i] == int(labels[i])`, and `labels[i]` is
    exactly `str(numbers[i])`), every label occurring in `codes`: what the CSV reader found for an all-integer
    column, so that prepare can build its hierarchy and encoding on arrays instead of a string per distinct
    value. A slice of the column drops them (a label may no longer occur)."""

    __slots__ = ("codes", "labels", "numbers", "__dict__")

    def __init__(self, codes: np.ndarray, labels: Sequence[str], numbers: np.ndarray | None = None) -> None:
        self.codes = np.asarray(codes)  # any integer type: kgen keeps the narrowest (fitness.encoding.code_dtype)
        self.labels = labels if isinstance(labels, (tuple, csvio.IntegerLabels)) else tuple(labels)
        self.numbers = numbers

    @cached_property
    def _objects(self) -> np.ndarray:
        return np.array(self.labels + ("",), dtype=object)[:-1]  # never a 2-D array of characters

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> CodedColumn: ...

    def __getitem__(self, index: int | slice) -> str | CodedColumn:
        if isinstance(index, slice):  # some labels may no longer occur: `numbers` promises that every one does
            return CodedColumn(self.codes[index], self.labels)
        return self.labels[self.codes[index]]

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), ITER_CHUNK):
            yield from self.chunk(start, start + ITER_CHUNK)

    def chunk(self, start: int, stop: int) -> list[str]:
        """Rows start..stop-1 as a list of strings."""
        return self._objects[self.codes[start:stop]].tolist()

    def __setitem__(self, index: int, value: str) -> None:
        """Set one row's value (rare: for callers that edit a table in place). Labels stay sorted and unique."""
        labels = sorted(set(self.labels) | {value})
        rank = np.array([labels.index(label) for label in self.labels], dtype=code_dtype(len(labels)))
        codes = rank[self.codes] if len(self.labels) else self.codes.astype(code_dtype(len(labels)))
        codes[index] = labels.index(value)
        self.codes, self.labels, self.numbers = codes, tuple(labels), None
        self.__dict__.pop("_objects", None)

    def __contains__(self, value: object) -> bool:
        try:
            code = self.labels.index(value)  # type: ignore[arg-type]
        except ValueError:
            return False
        return bool((self.codes == code).any())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CodedColumn) and other.labels == self.labels:
            return bool(np.array_equal(other.codes, self.codes))
        if isinstance(other, (CodedColumn, list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def tolist(self) -> list[str]:
        return self._objects[self.codes].tolist()

    def __repr__(self) -> str:
        return f"CodedColumn({len(self)} rows, {len(self.labels)} distinct)"

    def __getstate__(self) -> tuple:
        return self.codes, self.labels, self.numbers

    def __setstate__(self, state: tuple) -> None:
        self.codes, self.labels, self.numbers = state if len(state) == 3 else (*state, None)


def column_codes(values: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Codes and sorted distinct labels of a column: free for a CodedColumn, encoded for a plain one."""
    if isinstance(values, CodedColumn):
        return values.codes, values.labels
    labels = tuple(sorted(set(values)))
    index = {v: i for i, v in enumerate(labels)}
    return np.fromiter(map(index.__getitem__, values), dtype=code_dtype(len(labels)), count=len(values)), labels


@dataclass(frozen=True, eq=False)
class Table:
    """Columns of string values, all of length n. `source` names the file (for messages and to protect it
    from being overwritten); `separator` is the one it was read with. Data row i (0-based) is "row i + 1" in
    every message and report. `row_numbers` is kept for callers that give their own numbering."""

    columns: tuple[str, ...]
    values: Mapping[str, Sequence[str]]
    source: str | None = None
    separator: str = ","
    row_numbers: Sequence[int] | None = None

    @property
    def n(self) -> int:
        return len(self.values[self.columns[0]]) if self.columns else 0

    def column(self, name: str) -> Sequence[str]:
        if name not in self.values:
            raise InputError(f"unknown column {clip(name)}; the table has: {names_shown(self.columns)}",
                             file=self.source, column=name)
        return self.values[name]

    def codes(self, name: str) -> tuple[np.ndarray, tuple[str, ...]]:
        """Column `name` as (integer code per row, sorted distinct labels): what prepare and release use."""
        return column_codes(self.column(name))

    def iter_rows(self) -> Iterator[list[str]]:
        """The rows, materialized a chunk at a time (for writing a large table without holding it)."""
        for start in range(0, self.n, ITER_CHUNK):
            stop = min(start + ITER_CHUNK, self.n)
            parts = [v.chunk(start, stop) if isinstance(v, CodedColumn) else list(v[start:stop])
                     for v in (self.values[c] for c in self.columns)]
            yield from (list(r) for r in zip(*parts))

    def to_pandas(self) -> object:
        """The table as a pandas DataFrame of strings, columns in order (`kgen.to_pandas`, which also
        takes any object with `columns` and `column(name)`)."""
        return to_pandas(self)

    def write_csv(self, handle: TextIO) -> None:
        """Write the table as CSV (its own separator) to an open text handle, a chunk of rows at a time: the
        release is never one giant string. Pass the bound method as the content of
        `kgen.io.files.write_atomic_many`."""
        csvio.write_csv(handle, self.columns, self.iter_rows(), self.separator)

    def rows(self) -> list[list[str]]:
        return list(self.iter_rows())

    def row_number(self, index: int) -> int:
        """The number of data row `index` (0-based) in messages: 1-based, as the report's suppressed_rows."""
        return self.row_numbers[index] if self.row_numbers is not None else index + 1


def to_pandas(table: object) -> object:
    """A table as a pandas DataFrame: same columns in the same order, values as strings (a released value is a
    label such as `20-29` or `*`, not a number). Works through `table.columns` and `table.column(name)` only.

    Needs pandas (the `pandas` extra)."""
    try:
        import pandas as pd  # optional: imported only here
    except ImportError:
        raise InputError("to_pandas needs pandas: pip install 'kgen[pandas]'") from None
    columns = list(table.columns)  # type: ignore[attr-defined]
    return pd.DataFrame({c: list(table.column(c)) for c in columns}, columns=columns,  # type: ignore[attr-defined]
                        dtype=object)


def read_csv(path: str | os.PathLike, separator: str | None = None, encoding: str = "utf-8") -> Table:
    """Read a CSV file with a header row (`,` `;` tab or `|`, detected unless given; UTF-8 with or without
    BOM unless `encoding` says otherwise: latin-1, cp1252, utf-16), streaming it into coded columns."""
    coded = read_coded(path, separator, encoding)
    numbers = coded.numbers or (None,) * len(coded.header)
    values = {c: CodedColumn(codes, labels, n) for c, codes, labels, n in zip(coded.header, coded.codes, coded.labels,
                                                                             numbers)}
    return Table(coded.header, values, str(path), coded.separator)


PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_MAGIC = b"PAR1"


def is_parquet(path: str | os.PathLike) -> bool:
    """Whether `path` is a Parquet file: by its suffix, or else by the PAR1 magic bytes it starts with."""
    if str(path).lower().endswith(PARQUET_SUFFIXES):
        return True
    try:
        with open_input(path) as handle:
            return handle.read(4) == PARQUET_MAGIC
    except InputError:
        return False  # the CSV reader gives the message (not found, a folder, ...)


def read_table(path: str | os.PathLike, separator: str | None = None, encoding: str = "utf-8") -> Table:
    """Read an input table: Parquet (by suffix or magic bytes), Excel (`.xlsx`, the first sheet) or else
    CSV/TSV in `encoding` (`read_csv`). The one place where the CLI, the API and `kgen risk` choose the
    reader."""
    if is_parquet(path):
        return read_parquet(path)
    if str(path).lower().endswith(EXCEL_SUFFIXES):
        return read_excel(path)
    return read_csv(path, separator, encoding)


def read_parquet(path: str | os.PathLike) -> Table:
    """Read a Parquet file into coded columns with pyarrow (the `parquet` extra): every column is cast to
    string and dictionary-encoded by pyarrow, so no Python string is made per row; nulls become the empty
    string (missing). The release of a Parquet input is written as CSV."""
    name = str(path)
    try:
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.compute as pc

        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install 'kgen[parquet]'", file=name) from None
    with open_input(path) as handle:  # regular files only, as for CSV
        try:
            # the schema first: a column that cannot be text is refused before any data is read (a failed
            # cast after a threaded read once left pyarrow's threads running into the exit: abort, 134)
            check_text_columns(pq.ParquetFile(handle).schema_arrow, name)
            handle.seek(0)
            data = pq.read_table(handle)
        except (pa.ArrowException, OSError, ValueError) as error:
            if isinstance(error, InputError):
                raise
            reason = (str(error).splitlines() or [type(error).__name__])[0]
            raise InputError(f"is not a readable Parquet file ({clip(reason, 80, quote=False)})", file=name) from None
    columns = tuple(str(c) for c in data.column_names)
    if len(set(columns)) != len(columns):
        twice = next(c for c in columns if columns.count(c) > 1)
        raise InputError(f"duplicate column name {clip(twice)}", file=name, column=twice)
    values: dict[str, Sequence[str]] = {}
    for column, chunked in zip(columns, data.columns):
        if pa.types.is_integer(chunked.type) and not chunked.null_count and len(chunked):
            numbers = chunked.to_numpy()
            if -csvio.MAX_MAGNITUDE < int(numbers.min()) and int(numbers.max()) < csvio.MAX_MAGNITUDE:
                codes, labels, integers = csvio.numbers_as_codes(numbers)  # type: ignore[misc]
                values[column] = CodedColumn(codes, labels, integers)  # an integer's text is `str(int)`'s
                continue
        try:
            text = pc.fill_null(pc.cast(chunked, pa.string()), "")
        except pa.ArrowException:
            raise InputError(f"column {clip(column)} of type {chunked.type} cannot be read as text",
                             file=name, column=column) from None
        encoded = pc.dictionary_encode(text).combine_chunks()
        labels = encoded.dictionary.to_pylist()
        raw = encoded.indices.to_numpy(zero_copy_only=False)
        order = sorted(range(len(labels)), key=labels.__getitem__)  # sorted labels, as every reader gives
        rank = np.empty(len(labels), dtype=code_dtype(len(labels)))
        rank[order] = np.arange(len(labels))
        values[column] = CodedColumn(rank[raw], tuple(labels[i] for i in order))
    return Table(columns, values, name, ",")


EXCEL_SUFFIXES = (".xlsx", ".xlsm")


def excel_text(value: object) -> str:
    """An Excel cell as the text a CSV export would hold: empty for none, a whole number without `.0`, a date
    as ISO 8601 (a date alone without its midnight)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime):
        return value.date().isoformat() if value.time() == datetime.time() else value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def read_excel(path: str | os.PathLike) -> Table:
    """Read the first sheet of an Excel workbook (`.xlsx`, with openpyxl: the `excel` extra): the first
    non-empty row is the header, empty rows are skipped, cells are read as the values Excel shows (formulas'
    cached results), as text (`excel_text`). Errors name the file, row and column as for CSV."""
    name = str(path)
    try:
        # optional dependency: openpyxl (extra `excel`)
        import openpyxl
    except ImportError:
        raise InputError("reading Excel files needs openpyxl: pip install 'kgen[excel]'", file=name) from None
    with open_input(path) as handle:
        try:
            book = openpyxl.load_workbook(handle, read_only=True, data_only=True)
        except Exception as error:  # openpyxl raises zipfile, KeyError and its own errors for a bad workbook
            reason = (str(error).splitlines() or [type(error).__name__])[0]
            raise InputError(f"is not a readable .xlsx workbook ({clip(reason, 80, quote=False)})", file=name) from None
        try:
            rows = [[excel_text(v) for v in row] for row in book.worksheets[0].iter_rows(values_only=True)]
        finally:
            book.close()
    return excel_table(rows, name)


def excel_table(rows: list[list[str]], name: str) -> Table:
    """A sheet's rows (text) as a table: the header is the first non-empty row; trailing empty cells are
    dropped; a data cell beyond the header's columns is an error naming its row."""
    filled = [(number, row) for number, row in enumerate(rows, start=1) if any(cell.strip() for cell in row)]
    if not filled:
        raise InputError("is empty: the first sheet has no rows", file=name)
    line, header_row = filled[0]
    while header_row and not header_row[-1].strip():
        header_row = header_row[:-1]
    header = csvio.check_header(header_row, line, name)
    values: dict[str, list[str]] = {c: [] for c in header}
    for data_row, (line, row) in enumerate(filled[1:], start=1):
        extra = [cell for cell in row[len(header):] if cell.strip()]
        if extra:
            raise InputError(f"has {len(header) + len(extra)} or more cells, the header {len(header)}", file=name,
                             row=data_row, line=line)
        for i, column in enumerate(header):
            values[column].append(row[i] if i < len(row) else "")
    return Table(header, values, name, ",")


def check_text_columns(schema: object, name: str) -> None:
    """Refuse a Parquet schema with a column kgen cannot read as text (a list, struct, map or union: nested
    values have no one text form), in one line naming the column, before its data is read."""
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    for field in schema:  # type: ignore[attr-defined]
        if pa.types.is_nested(field.type):
            raise InputError(f"column {clip(field.name)} of type {field.type} cannot be read as text (nested "
                             "values); drop the column or flatten it first", file=name, column=field.name)


def from_mapping(data: Mapping[str, Sequence[object]]) -> Table:
    """A table from {column: values}; values are turned into strings (None becomes empty = missing)."""
    columns = tuple(str(c) for c in data)
    if len(set(columns)) != len(columns):
        twice = next(c for c in columns if columns.count(c) > 1)
        raise InputError(f"duplicate column name {clip(twice)}", column=twice, value=twice)
    for c, v in data.items():
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
            raise InputError(f"column {clip(c)} must be a sequence of values, got {type(v).__name__}",
                             column=str(c))
    lengths = {c: len(v) for c, v in data.items()}
    if len(set(lengths.values())) > 1:
        raise InputError(f"columns have different lengths: {lengths}")
    values = {str(c): ["" if v is None else str(v) for v in vs] for c, vs in data.items()}
    return Table(columns, values)


def from_dataframe(frame: object) -> Table:
    """A table from a pandas DataFrame (NaN and None become missing)."""
    import pandas as pd  # optional dependency, only for this entry point

    if not isinstance(frame, pd.DataFrame):
        raise InputError("expected a pandas DataFrame")
    data = {str(c): [None if pd.isna(v) else v for v in frame[c].tolist()] for c in frame.columns}
    if len(data) != len(frame.columns):
        raise InputError("duplicate column names in the DataFrame")
    return from_mapping(data)


def as_table(data: object, encoding: str = "utf-8") -> Table:
    """Accept a Table, a CSV/TSV (in `encoding`), Parquet or Excel path, a column mapping or a pandas
    DataFrame."""
    if isinstance(data, Table):
        return data
    if isinstance(data, (str, os.PathLike)):
        return read_table(data, encoding=encoding)
    if isinstance(data, Mapping):
        return from_mapping(data)
    if type(data).__name__ == "DataFrame":
        return from_dataframe(data)
    raise InputError(f"cannot make a table from {type(data).__name__}")
