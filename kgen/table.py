"""In-memory tables of strings, from CSV files, column mappings or pandas DataFrames."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgen.csvio import read_table_rows
from lattice.errors import InputError

DEFAULT_MISSING = ("", "?", "NA")


@dataclass(frozen=True, eq=False)
class Table:
    """Columns of string values, all of length n. `source` names the file (for messages and to protect it
    from being overwritten); `separator` is the one it was read with; `row_numbers[i]` is data row i's row
    number in the source file (None: rows are numbered from 1)."""

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
            raise InputError(f"unknown column {name!r}; the table has: {', '.join(self.columns)}",
                             file=self.source, column=name)
        return self.values[name]

    def rows(self) -> list[list[str]]:
        return [list(r) for r in zip(*(self.values[c] for c in self.columns))]

    def row_number(self, index: int) -> int:
        """The row number, in the source, of data row `index` (0-based): what a user sees in a spreadsheet."""
        return self.row_numbers[index] if self.row_numbers is not None else index + 1


def read_csv(path: str | os.PathLike, separator: str | None = None) -> Table:
    """Read a CSV file with a header row (`,` or `;` detected, UTF-8 with or without BOM)."""
    header, rows, separator, numbers = read_table_rows(path, separator)
    values = {c: [r[i] for r in rows] for i, c in enumerate(header)}
    return Table(tuple(header), values, str(path), separator, tuple(numbers))


def from_mapping(data: Mapping[str, Sequence[object]]) -> Table:
    """A table from {column: values}; values are turned into strings (None becomes empty = missing)."""
    columns = tuple(str(c) for c in data)
    if len(set(columns)) != len(columns):
        twice = next(c for c in columns if columns.count(c) > 1)
        raise InputError(f"duplicate column name {twice!r}", column=twice, value=twice)
    for c, v in data.items():
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
            raise InputError(f"column {str(c)!r} must be a sequence of values, got {type(v).__name__}",
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


def as_table(data: object) -> Table:
    """Accept a Table, a CSV path, a column mapping or a pandas DataFrame."""
    if isinstance(data, Table):
        return data
    if isinstance(data, (str, os.PathLike)):
        return read_csv(data)
    if isinstance(data, Mapping):
        return from_mapping(data)
    if type(data).__name__ == "DataFrame":
        return from_dataframe(data)
    raise InputError(f"cannot make a table from {type(data).__name__}")
