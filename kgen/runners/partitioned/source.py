"""Where the rows come from: a Parquet/CSV glob or a `dask.dataframe`, read one partition at a time.

Why a module of its own: every pass over the rows (pass 0 collecting distinct values, the release, the
independent check) runs on the workers and must read its partition itself, so that no process, the client
least of all, ever holds the table. A partition is one input file, or one partition of a `dask.dataframe`
(then a delayed pandas frame). Values are read as text exactly as the in-memory path reads them (Parquet:
pyarrow's cast to string, nulls as the empty string; CSV: the field text), so hierarchies and codes match.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kgen.io.csvio import detect_separator
from kgen.io.table import check_text_columns
from lattice.errors import InputError, clip

PARQUET = (".parquet", ".pq")


@dataclass(frozen=True)
class Source:
    """The partitions of an input: `files` (one partition per file, in sorted order) or `frame` (a
    dask.dataframe, one partition per dask partition). `name` is what messages call it."""

    name: str
    files: tuple[str, ...] = ()
    frame: Any = None
    separator: str = ","

    @property
    def count(self) -> int:
        return len(self.files) if self.frame is None else int(self.frame.npartitions)

    @property
    def columns(self) -> tuple[str, ...]:
        if self.frame is not None:
            return tuple(str(c) for c in self.frame.columns)
        return read_header(self.files[0], self.separator)

    def parts(self) -> list[Any]:
        """What a task needs to read each partition: a path, or a delayed pandas frame."""
        return list(self.files) if self.frame is None else list(self.frame.to_delayed())


def is_dask_frame(data: object) -> bool:
    return type(data).__module__.startswith("dask") and hasattr(data, "npartitions") and hasattr(data, "to_delayed")


def open_source(data: object) -> Source:
    """A Source from a glob, a folder, a file, or a dask.dataframe; InputError (one line) when no file matches,
    or the files mix Parquet and CSV."""
    if is_dask_frame(data):
        columns = [str(c) for c in data.columns]  # type: ignore[attr-defined]
        if len(set(columns)) != len(columns):
            raise InputError("duplicate column names in the dask dataframe")
        return Source("the dask dataframe", frame=data)
    if not isinstance(data, (str, os.PathLike)):
        raise InputError(f"partitioned input must be a glob of Parquet/CSV files or a dask.dataframe, "
                         f"got {type(data).__name__}")
    text = str(data)
    if any(ch in text for ch in "*?["):
        files = sorted(glob.glob(text))
    elif Path(text).is_dir():
        files = sorted(str(p) for p in Path(text).iterdir() if p.suffix.lower() in (*PARQUET, ".csv", ".tsv"))
    elif Path(text).is_file():
        files = [text]
    else:
        raise InputError("no such file, folder or matching files", file=text)
    files = [f for f in files if Path(f).is_file()]
    if not files:
        raise InputError("no input file matches", file=text)
    parquet = [f.lower().endswith(PARQUET) for f in files]
    if any(parquet) and not all(parquet):
        raise InputError("the input mixes Parquet and CSV files; give one format", file=text)
    separator = ","
    if not all(parquet):
        with open(files[0], encoding="utf-8-sig", newline="") as handle:
            separator = detect_separator(handle.read(1 << 16))
    source = Source(text, tuple(files), None, separator)
    header = read_header(files[0], separator)
    for other in files[1:]:
        if read_header(other, separator) != header:
            raise InputError(f"has other columns than {clip(files[0], 60, quote=False)}", file=other)
    return source


def read_header(path: str, separator: str = ",") -> tuple[str, ...]:
    if path.lower().endswith(PARQUET):
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as error:
            raise InputError(f"is not a readable Parquet file ({clip(str(error), 80, quote=False)})",
                             file=path) from None
        check_text_columns(schema, path)  # before the search, not when a worker writes its part
        return tuple(str(c) for c in schema.names)
    with open(path, encoding="utf-8-sig", newline="") as handle:
        first = handle.readline().rstrip("\r\n")
    return tuple(c.strip('"') for c in first.split(separator))


def as_text(table: pa.Table, name: str) -> pa.Table:
    """Every column cast to string, nulls as the empty string (as kgen's Parquet reader does)."""
    columns = []
    for column, chunked in zip(table.column_names, table.columns):
        try:
            columns.append(pc.fill_null(pc.cast(chunked, pa.string()), ""))
        except pa.ArrowException:
            raise InputError(f"column {clip(column)} of type {chunked.type} cannot be read as text",
                             file=name, column=column) from None
    return pa.table(columns, names=table.column_names)


def read_part(part: Any, columns: Sequence[str] | None, separator: str = ",") -> pa.Table:
    """One partition as a pyarrow table of text columns (`columns`, or all)."""
    if isinstance(part, str):
        if part.lower().endswith(PARQUET):
            # optional dependency: pyarrow (extra `parquet`)
            import pyarrow.parquet as pq

            table = pq.read_table(part, columns=list(columns) if columns is not None else None)
        else:
            # optional dependency: pyarrow (extra `parquet`)
            from pyarrow import csv

            header = read_header(part, separator)
            convert = csv.ConvertOptions(column_types={c: pa.string() for c in header}, strings_can_be_null=False,
                                         include_columns=list(columns) if columns is not None else None)
            table = csv.read_csv(part, parse_options=csv.ParseOptions(delimiter=separator),
                                 convert_options=convert)
        return as_text(table, part)
    frame = part  # a pandas partition (a delayed argument arrives computed)
    if columns is not None:
        frame = frame[list(columns)]
    return as_text(pa.Table.from_pandas(frame, preserve_index=False), "the dask dataframe")


def dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A text column as (distinct labels as an object array, one code per row)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    labels = np.array(encoded.dictionary.to_pylist(), dtype=object)
    return labels, encoded.indices.to_numpy(zero_copy_only=False)
