"""Reading and writing CSV files: separator detection, BOM, CRLF, quoted fields, atomic writes.

Every problem with a file is an InputError naming the file, and the row or column where it can. Rows are
numbered as a spreadsheet numbers them (1 = the first record, normally the header; a quoted field with line
breaks stays in one row); when a row does not start on the same line number, messages give the line too.
Input files are only ever read.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lattice.errors import InputError

SEPARATORS = (",", ";")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_BREAK_BYTES = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class Record:
    """One CSV record: its row number (1-based, blank rows counted), first physical line, and fields."""

    row: int
    line: int
    fields: list[str]

    @property
    def where(self) -> str:
        """" (line L)" when the record does not start on line `row`, else ""."""
        return f" (line {self.line})" if self.line != self.row else ""


def read_text(path: str | os.PathLike) -> str:
    """The file's text, decoded as UTF-8 (a BOM is dropped). Errors: not found, a folder, unreadable,
    not UTF-8 (naming the line and showing it)."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", file=name) from None
    except OSError as error:
        raise InputError(f"cannot be read: {error.strerror or error}", file=name) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise not_utf8(name, data, error) from None


def not_utf8(name: str, data: bytes, error: UnicodeDecodeError) -> InputError:
    """The error for a file that is not UTF-8, naming the line and showing it with the bad bytes escaped."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return InputError("is UTF-16 (it starts with a UTF-16 byte-order mark); re-save it as UTF-8", file=name)
    breaks = list(_LINE_BREAK_BYTES.finditer(data, 0, error.start))
    line = len(breaks) + 1
    line_start = breaks[-1].end() if breaks else 0
    following = _LINE_BREAK_BYTES.search(data, error.start)
    text = data[line_start: following.start() if following else len(data)]
    shown = text[:80].decode("utf-8", errors="backslashreplace")
    return InputError(
        f"is not UTF-8: line {line} has byte 0x{data[error.start]:02x} (offset {error.start}) in: {shown}; "
        "re-save the file as UTF-8 (it is probably Latin-1 or Windows-1252)",
        file=name, value=shown,
    )


def detect_separator(text: str) -> str:
    """`;` or `,` for a file, judged on its first lines (outside quotes).

    The separator that gives every line the same number of fields wins, then the one giving more fields, then
    the one whose fields look whole (no leading blank, balanced brackets: `5;[0, 9]` is `;`), then `,`.
    """
    lines = [line for line in _LINE_BREAK.split(text, 50)[:50] if line.strip()][:50]

    def score(sep: str) -> tuple:
        counts, clean, total = [], 0, 0
        for line in lines:
            try:
                fields = next(csv.reader([line], delimiter=sep), [])
            except csv.Error:  # a quoted field spanning lines: judged on the other lines
                continue
            counts.append(len(fields))
            total += len(fields)
            clean += sum(not f.startswith(" ") and f.count("[") == f.count("]") and f.count("(") == f.count(")")
                         for f in fields)
        if not counts:
            return (False, 0, 0.0, sep == ",")
        return (len(set(counts)) == 1 and counts[0] > 1, counts[0], clean / max(total, 1), sep == ",")

    return max(SEPARATORS, key=score)


def parse_records(text: str, separator: str, name: str) -> list[Record]:
    """Every record of the text, blank ones included (as empty field lists) so that numbering is exact."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    records: list[Record] = []
    line = 1
    try:
        for fields in reader:
            records.append(Record(len(records) + 1, line, fields))
            line = reader.line_num + 1
    except csv.Error as error:
        hint = " (a quote that is never closed?)" if "end of data" in str(error) else ""
        raise InputError(f"is not valid CSV at line {line}: {error}{hint}", file=name,
                         row=len(records) + 1) from None
    return records


def is_blank(fields: Sequence[str], width: int) -> bool:
    """An empty line, or a line of blanks where more than one field is expected. A line of separators
    only (`,,,`) with the right number of fields is a record whose values are all missing, not a blank."""
    return not fields or (len(fields) == 1 and not fields[0].strip() and width != 1)


def read_table_rows(path: str | os.PathLike, separator: str | None = None
                    ) -> tuple[list[str], list[list[str]], str, list[int]]:
    """Header, data rows, separator and each data row's row number, for a CSV file with a header row.

    Errors: empty file, header with empty or duplicate column names, rows with the wrong number of fields
    (ragged), invalid CSV. Blank lines are skipped; the header is the first non-blank record.
    """
    name = str(path)
    text = read_text(path)
    if not text.strip():
        raise InputError("is empty: expected a header row and data rows", file=name)
    separator = separator or detect_separator(text)
    records = [r for r in parse_records(text, separator, name) if not is_blank(r.fields, 0)]
    if not records:
        raise InputError("has no header row: every line is blank", file=name)
    first, body = records[0], records[1:]
    header = [h.strip() for h in first.fields]
    if not any(header):
        raise InputError(f"the header row{first.where} has no column names", file=name, row=first.row)
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if not column:
            hint = " (a trailing separator?)" if position == len(header) else ""
            raise InputError(f"column {position} of the header has no name{hint}", file=name, row=first.row)
        if column in seen:
            raise InputError(f"duplicate column name {column!r} (columns {seen[column]} and {position})",
                             file=name, row=first.row, column=column, value=column)
        seen[column] = position
    data, numbers = [], []
    for record in body:
        if is_blank(record.fields, len(header)):
            continue
        if len(record.fields) != len(header):
            raise InputError(
                f"has {len(record.fields)} fields but the header has {len(header)}{record.where}; "
                "quote fields that contain the separator",
                file=name, row=record.row, value=separator.join(record.fields)[:80],
            )
        data.append(record.fields)
        numbers.append(record.row)
    return header, data, separator, numbers


def read_rows(path: str | os.PathLike, separator: str | None = None) -> list[list[str]]:
    """All rows of a CSV file without a header (e.g. an ARX hierarchy); blank rows come back as `[]` so
    that a row's position is its row number."""
    name = str(path)
    text = read_text(path)
    if not text.strip():
        raise InputError("is empty", file=name)
    return [[] if not any(f.strip() for f in r.fields) else r.fields
            for r in parse_records(text, separator or detect_separator(text), name)]


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same file (after symlinks; hard links included when both exist)."""
    try:
        pa, pb = Path(a), Path(b)
        return pa.resolve() == pb.resolve() or (pa.exists() and pb.exists() and pa.samefile(pb))
    except OSError:
        return False


def check_target(path: str | os.PathLike, protected: Iterable[str | os.PathLike] = ()) -> None:
    """Raise an InputError unless `path` can be written as an output: not one of the `protected` files
    (inputs, hierarchies), not a folder, in an existing folder where a file can be created.

    Called before a long search so that a bad output path fails in a second, not after an hour. Leaves
    nothing behind (the probe file is removed).
    """
    target = Path(path)
    for source in protected:
        if same_file(target, source):
            raise InputError(f"is an input of this run ({str(source)!r}): refusing to overwrite it; give another "
                             "--output or --report", file=str(target))
    if target.is_dir():
        raise InputError("is a folder: give a file name", file=str(target))
    folder = target.parent
    if folder.exists() and not folder.is_dir():
        raise InputError(f"cannot be written: {str(folder)!r} is a file, not a folder", file=str(target))
    if not folder.is_dir():
        raise InputError(f"cannot be written: the folder {str(folder)!r} does not exist (create it first)",
                         file=str(target))
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputError(f"cannot be written: the folder {str(folder)!r} is not writable "
                         f"({error.strerror or error})", file=str(target)) from None
    os.close(fd)
    os.unlink(probe)


def write_atomic_many(items: Sequence[tuple[str | os.PathLike, str]],
                      protected: Iterable[str | os.PathLike] = (),
                      check: Callable[[list[Path]], None] | None = None) -> None:
    """Write several files all-or-nothing as far as the file system allows: each text goes to a temporary
    file in its target's folder, and only when every one is complete are they renamed into place. On any
    failure (or Ctrl-C) before the renames, every temporary file is removed and no target is touched.
    `check(temporary_paths)`, when given, inspects the complete temporary files before the renames; if it
    raises, nothing is published. Refuses to write over the `protected` files (inputs)."""
    protected = list(protected)
    targets = [Path(path) for path, _ in items]
    for i, target in enumerate(targets):
        if any(same_file(target, other) for other in targets[:i]):
            raise InputError("is given for two outputs (e.g. --output and --report)", file=str(target))
        check_target(target, protected)
    temporaries: list[str] = []
    current = targets[0] if targets else Path(".")
    try:
        for target, (_, text) in zip(targets, items):
            current = target
            fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temporaries.append(temporary)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        if check is not None:
            check([Path(t) for t in temporaries])
        for target, temporary in zip(targets, temporaries):
            current = target
            os.replace(temporary, target)
    except BaseException as error:
        for temporary in temporaries:
            Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise InputError(f"cannot be written: {error.strerror or error}", file=str(current)) from None
        raise


def write_atomic(path: str | os.PathLike, text: str, protected: Iterable[str | os.PathLike] = ()) -> None:
    """Write text to path via a temporary file in the same folder and a rename: readers see the old file or
    the whole new one, never a partial one. Refuses to write over any of the `protected` files (inputs)."""
    write_atomic_many([(path, text)], protected)


def format_csv(header: Sequence[str], rows: Iterable[Sequence[str]], separator: str = ",") -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=separator, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()
