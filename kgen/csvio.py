"""Reading and writing CSV files: separator detection, BOM, CRLF, quoted fields, atomic writes.

Every problem with the file is an InputError naming the file, and the row or column where it can.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from lattice.errors import InputError

SEPARATORS = (",", ";")


def read_text(path: str | os.PathLike) -> str:
    """The file's text, decoded as UTF-8 (a BOM is dropped)."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", file=name, exit_code=2) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", file=name) from None
    except OSError as error:
        raise InputError(f"cannot be read: {error.strerror}", file=name) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(
            f"is not UTF-8: byte 0x{data[error.start]:02x} at offset {error.start} (line {line}); "
            "re-save the file as UTF-8",
            file=name, row=line,
        ) from None


def detect_separator(text: str) -> str:
    """`;` or `,`: whichever splits the header line (outside quotes) into more fields."""
    header = text.split("\n", 1)[0]
    counts = {sep: len(next(csv.reader([header], delimiter=sep), [])) for sep in SEPARATORS}
    return max(SEPARATORS, key=lambda sep: (counts[sep], sep == ","))


def parse_rows(text: str, separator: str, name: str) -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True))
    except csv.Error as error:
        raise InputError(f"is not valid CSV: {error}", file=name) from None


def read_table_rows(path: str | os.PathLike, separator: str | None = None) -> tuple[list[str], list[list[str]], str]:
    """Header, data rows and separator of a CSV file with a header row.

    Errors: empty file, duplicate or empty column names, rows with the wrong number of fields (ragged).
    Blank lines are skipped.
    """
    name = str(path)
    text = read_text(path)
    if not text.strip():
        raise InputError("is empty: expected a header row and data rows", file=name)
    separator = separator or detect_separator(text)
    rows = parse_rows(text, separator, name)
    numbered = [(i, r) for i, r in enumerate(rows, start=1) if r and any(field.strip() for field in r)]
    (_, header), body = numbered[0], numbered[1:]
    header = [h.strip() for h in header]
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if not column:
            raise InputError(f"column {position} of the header has no name", file=name, row=1)
        if column in seen:
            raise InputError(f"duplicate column name {column!r} (columns {seen[column]} and {position})",
                             file=name, row=1, column=column)
        seen[column] = position
    data = []
    for line, row in body:
        if len(row) != len(header):
            raise InputError(f"has {len(row)} fields but the header has {len(header)}", file=name, row=line)
        data.append(row)
    return header, data, separator


def read_rows(path: str | os.PathLike, separator: str | None = None) -> list[list[str]]:
    """All non-blank rows of a CSV file without a header (e.g. an ARX hierarchy)."""
    name = str(path)
    text = read_text(path)
    if not text.strip():
        raise InputError("is empty", file=name)
    return [r for r in parse_rows(text, separator or detect_separator(text), name) if r and any(r)]


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve() or (Path(b).exists() and Path(a).samefile(b))
    except OSError:
        return False


def write_atomic(path: str | os.PathLike, text: str, protected: Iterable[str | os.PathLike] = ()) -> None:
    """Write text to path via a temporary file in the same folder and a rename: readers see the old file or
    the whole new one, never a partial one. Refuses to write over any of the `protected` files (inputs)."""
    target = Path(path)
    for source in protected:
        if same_file(target, source):
            raise InputError(f"output path is the input file {str(source)!r}: refusing to overwrite it",
                             file=str(target))
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("output folder does not exist", file=str(folder))
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputError(f"output folder cannot be written: {error.strerror}", file=str(folder)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise InputError(f"cannot be written: {error.strerror}", file=str(target)) from None
        raise


def format_csv(header: Sequence[str], rows: Iterable[Sequence[str]], separator: str = ",") -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=separator, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()
