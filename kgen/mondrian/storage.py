"""Reading a table (or one fragment of it) straight from storage, and writing release partitions.

Why pyarrow datasets: a worker must read only its own fragment, by the condition the coordinator sent,
without the table passing through the coordinator (paper section 4.2). `pyarrow.dataset` scans a CSV file, a
glob of CSV files or Parquet files/folders with the condition pushed into the scan (Parquet row groups whose
statistics exclude it are skipped), in file order, and parses CSV in C: numeric QIs come back as float64,
every other column as text, exactly as written.

A condition is a list of clauses, all of which a row must meet (JSON-friendly, saved in the report so the
independent checker can re-derive each fragment from the original file):
  {"column": c, "op": "<=" | ">", "value": v, "order": "number" | "string"}   (numbers or text order)
  {"column": c, "op": "in", "values": [...]}                                   (hierarchy leaves)
"""

from __future__ import annotations

import csv
import glob
import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from kgen.io.csvio import UTF8, check_encoding, detect_separator
from kgen.io.files import not_found, open_input
from kgen.io.table import EXCEL_SUFFIXES, read_excel, read_table
from lattice.errors import InputError

Clause = dict
Condition = list


def _kind(path: str) -> str:
    lower = path.lower()
    return "parquet" if lower.endswith((".parquet", ".pq")) else "excel" if lower.endswith(EXCEL_SUFFIXES) else "csv"


def files_of(source: str | os.PathLike) -> tuple[list[str], str]:
    """The files of a source (a file, a glob, or a folder of .csv or .parquet files, or one Excel workbook)
    and their format."""
    text = str(source)
    if any(ch in text for ch in "*?["):
        files = sorted(glob.glob(text))
    elif Path(text).is_dir():
        files = sorted(str(p) for p in Path(text).iterdir() if p.suffix.lower() in (".csv", ".parquet", ".pq"))
    elif Path(text).is_file():
        files = [text]
    else:
        raise not_found(text)  # missing, or a FIFO or device: said as it is
    if not files:
        raise InputError("matches no .csv or .parquet file", file=text)
    kinds = {_kind(f) for f in files}
    if len(kinds) > 1:
        raise InputError("mixes CSV, Parquet or Excel files; give one kind", file=text)
    if kinds == {"excel"} and len(files) > 1:
        raise InputError("names more than one Excel workbook; give one (or CSV/Parquet files)", file=text)
    return files, kinds.pop()


def csv_header(path: str, encoding: str = UTF8) -> tuple[list[str], str]:
    """The header's column names and the separator (`,` or `;`, as kgen detects it), the file read in
    `encoding` (UTF-8 with or without its byte-order mark unless given, as `kgen anonymize --encoding`)."""
    try:
        with open_input(path) as raw:
            data = raw.read(1 << 16)
        if encoding == UTF8 and data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 read as UTF-8
            raise UnicodeDecodeError(UTF8, data[:2], 0, 2, "a UTF-16 byte-order mark")
        end = data.rfind(b"\n") if len(data) == 1 << 16 else -1  # never cut a character in two
        head = (data[:end] if end > 0 else data).decode("utf-8-sig" if encoding == UTF8 else encoding,
                                                        errors="strict" if encoding == UTF8 else "replace")
    except UnicodeDecodeError:
        read_table(path, encoding=encoding)  # the shared reader's one line (UTF-16, Latin-1 read as UTF-8...)
        raise InputError(f"is not {'UTF-8' if encoding == UTF8 else encoding} text", file=path) from None
    first = head.splitlines()[0] if head else ""
    if not first:
        raise InputError("is empty: expected a header row", file=path)
    separator = detect_separator(head)

    return next(csv.reader([first], delimiter=separator)), separator


class Source:
    """A table in storage: its files, format, columns, (CSV) separator and text encoding.

    A Source is what travels to a distributed task (it pickles as these few fields), so a worker reads its
    fragment with the same separator and encoding the coordinator found."""

    def __init__(self, source: str | os.PathLike, encoding: str = UTF8) -> None:
        self.source = str(source)
        self.encoding = check_encoding(encoding)
        self.files, self.format = files_of(source)
        self.sheet: dict[str, list[str]] | None = None
        if self.format == "csv":
            self.columns, self.separator = csv_header(self.files[0], self.encoding)
        elif self.format == "excel":
            # An Excel sheet (at most 1,048,576 rows) is read whole, as text, by the shared reader; it then
            # travels with the Source to each task, which scans it like a file.
            table = read_excel(self.files[0])
            self.columns, self.separator = list(table.columns), ","
            self.sheet = {c: list(table.column(c)) for c in table.columns}
        else:
            # optional dependency: pyarrow (extra `parquet`)
            import pyarrow.parquet as pq

            self.columns, self.separator = list(pq.read_schema(self.files[0]).names), ","

    @classmethod
    def of(cls, source: Source | str | os.PathLike) -> Source:
        """`source` itself when it is a Source already (the CLI's, with its encoding), else the table at that
        path read as UTF-8."""
        return source if isinstance(source, Source) else cls(source)

    def __str__(self) -> str:
        return self.source

    def dataset(self, numeric: Iterable[str] = ()):
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.csv as pacsv

        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.dataset as ds

        numeric = set(numeric)
        if self.format == "parquet":
            return ds.dataset(self.files, format="parquet")
        if self.sheet is not None:
            return ds.dataset(pa.table({c: pa.array(v, pa.string()).cast(pa.float64()) if c in numeric else
                                        pa.array(v, pa.string()) for c, v in self.sheet.items()}))
        types = {c: pa.float64() if c in numeric else pa.string() for c in self.columns}
        fmt = ds.CsvFileFormat(
            parse_options=pacsv.ParseOptions(delimiter=self.separator, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
            read_options=pacsv.ReadOptions(block_size=1 << 24,
                                           **({} if self.encoding == UTF8 else {"encoding": self.encoding})))
        return ds.dataset(self.files, format=fmt)

    def read(self, numeric: Iterable[str] = (), condition: Condition | None = None,
             columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The rows meeting `condition` (all rows when None), in file order, as a DataFrame: numeric QIs as
        float64, other columns as text."""
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        numeric = set(numeric)
        try:
            table = self.dataset(numeric).to_table(columns=list(columns) if columns else None,
                                                   filter=expression(condition) if condition else None)
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError):
            raise self.read_error() from None
        frame = table.to_pandas()
        for column in frame.columns:
            if column not in numeric and frame[column].dtype != object:
                frame[column] = frame[column].astype(str).astype(object)
        return frame

    def read_error(self) -> InputError:
        """What is wrong with a file pyarrow could not read, in kgen's words: the shared reader
        (`kgen.io.table.read_table`) names the file, row and column (never a data row: pyarrow's own message
        quotes the row). A file the shared reader accepts gets a message without any of its content."""
        for path in self.files:
            if self.format != "csv":
                break
            try:
                read_table(path, self.separator, encoding=self.encoding)
            except InputError as error:
                return error
        return InputError("cannot be read as a table (a malformed Parquet or CSV file, or a text value in a column "
                          "read as numeric)", file=self.source)

    def count_rows(self) -> int:
        return int(self.dataset().count_rows())

    def sample(self, fraction: float, minimum: int, seed: int, columns: Sequence[str],
               numeric: Iterable[str] = ()) -> pd.DataFrame:
        """A uniform random sample of max(ceil(fraction * rows), minimum) rows (at most all), read batch by batch
        so the coordinator never holds more than one batch of the table."""
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        try:
            rows = self.count_rows()
            size = min(rows, max(math.ceil(fraction * rows), minimum))
            chosen = np.sort(np.random.default_rng(seed).choice(rows, size=size, replace=False))
            parts, offset = [], 0
            for batch in self.dataset(numeric).to_batches(columns=list(columns)):
                end = offset + batch.num_rows
                lo, hi = np.searchsorted(chosen, [offset, end])
                if hi > lo:
                    parts.append(batch.take(chosen[lo:hi] - offset).to_pandas())
                offset = end
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError):
            raise self.read_error() from None
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(columns))
        for column in frame.columns:
            if column not in set(numeric) and frame[column].dtype != object:
                frame[column] = frame[column].astype(str).astype(object)
        return frame


def expression(condition: Condition):
    """The pyarrow filter expression of a condition (a conjunction of clauses)."""
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow.dataset as ds

    out = None
    for clause in condition:
        field = ds.field(clause["column"])
        if clause["op"] == "in":
            term = field.isin(pa.array(clause["values"], type=pa.string()))
        else:
            value = float(clause["value"]) if clause["order"] == "number" else str(clause["value"])
            if clause["order"] == "number":
                field = field.cast(pa.float64())
            term = field <= value if clause["op"] == "<=" else field > value
        out = term if out is None else out & term
    return out


def describe(condition: Condition) -> str:
    """A condition as text, as the paper writes it: (Age <= 38) AND (Country IN {Italy, France})."""
    if not condition:
        return "(all rows)"
    terms = []
    for c in condition:
        if c["op"] == "in":
            shown = ", ".join(c["values"][:6]) + (", ..." if len(c["values"]) > 6 else "")
            terms.append(f"({c['column']} IN {{{shown}}})")
        else:
            terms.append(f"({c['column']} {c['op']} {c['value']})")
    return " AND ".join(terms)


def csv_writer(frame: pd.DataFrame, separator: str = ",") -> Callable[[TextIO], None]:
    """A release written to an open text handle (`kgen.report.publish` writes it under a temporary name and a
    lock), byte for byte as `write_csv` writes it to a path."""
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow.csv as pacsv

    def write(handle: TextIO) -> None:
        handle.flush()
        table = pa.Table.from_pandas(frame.astype(str), preserve_index=False)
        pacsv.write_csv(table, handle.buffer, pacsv.WriteOptions(delimiter=separator, quoting_style="needed"))
        handle.buffer.flush()

    return write


def write_csv(frame: pd.DataFrame, path: str | os.PathLike, separator: str = ",") -> None:
    """Write a release partition through a temporary file and a rename (never a partial file)."""
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow.csv as pacsv

    target = Path(path)
    temporary = target.with_name(f".{target.name}.tmp")
    table = pa.Table.from_pandas(frame.astype(str), preserve_index=False)
    try:
        pacsv.write_csv(table, temporary, pacsv.WriteOptions(delimiter=separator, quoting_style="needed"))
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
