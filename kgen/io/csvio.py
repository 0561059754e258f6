"""Reading and writing CSV: separator detection, BOM, CRLF, quoted fields, streamed into columns.

A data file is read straight into columns, so that a table of millions of rows never exists as Python
strings per row: pyarrow's multithreaded reader takes the common, well-formed file a slice at a time
(`_read_coded_arrow`; a column of integers is coded from its numbers, any other is dictionary-encoded), and
the csv module reads every other file, a chunk of rows at a time (`_read_coded`), with the same result on
the files both accept. Every problem with a file is an InputError, worded by the csv-module reader, naming
the file and, where it can, the data row ("row N": the first row after the header is row 1, as the report's
`suppressed_rows`), the physical line ("line L") and the column; a message shows at most the offending
field, cut to 40 characters, never a whole row. Input files are only ever read (see kgen.io.files, which also
owns atomic writing; its names are re-exported here for older callers).
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TextIO, overload

import numpy as np

from kgen.io.files import open_input
from lattice.errors import InputError, clip

SEPARATORS = (",", ";", "\t", "|")
SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
HEAD_BYTES = 1 << 16  # separator detection looks at the first lines within this many bytes
MAX_LINE = 1 << 25  # characters of one physical line: beyond, the file is refused (a file of zeros, no line ends)
CHUNK_ROWS = 16_384  # rows parsed before they are encoded into the columns (bounds the per-row strings held)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_UNDECODED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, as surrogateescape keeps them


def code_dtype(card: int) -> type[np.integer]:
    """The narrowest integer type for codes 0..card-1 (uint8, uint16 or int32), the rule of
    `fitness.encoding.code_dtype`, repeated here so that reading a file (and the independent checker, which
    reads through this module) imports nothing of fitness/."""
    return np.uint8 if card <= 1 << 8 else np.uint16 if card <= 1 << 16 else np.int32


def check_separator(separator: str) -> str:
    """The separator itself if kgen accepts it (`,` `;` tab `|`); the word `tab` is accepted for tab."""
    if separator == "tab":
        return "\t"
    if separator not in SEPARATORS:
        raise InputError(f"unsupported separator {separator!r}: choose one of , ; tab |")
    return separator


def detect_separator(text: str) -> str:
    """`,` `;` tab or `|` for a file, judged on its first lines (outside quotes).

    The separator that gives every line the same number of fields (more than one) wins, then the one giving
    more fields, then the one whose fields look whole (no leading blank, balanced brackets: `5;[0, 9]` is
    `;`), then `,`. A one-column file has no separator to find: `,`.
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


def is_blank(fields: Sequence[str], width: int) -> bool:
    """An empty line, or a line of blanks where more than one field is expected. A line of separators
    only (`,,,`) with the right number of fields is a record whose values are all missing, not a blank."""
    return not fields or (len(fields) == 1 and not fields[0].strip() and width != 1)


UTF8 = "utf-8"
ENCODINGS = ("utf-8", "latin-1", "cp1252", "utf-16")  # the documented ones; any codec Python knows is accepted


def check_encoding(encoding: str) -> str:
    """A text encoding by name, normalized (`latin1`, `ISO-8859-1` -> `latin-1`); an unknown one is an
    InputError. UTF-8 files may start with a byte-order mark; UTF-16 ones must (it says the byte order)."""
    try:
        name = codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise InputError(f"unknown encoding {clip(str(encoding))}; use one of {', '.join(ENCODINGS)}") from None
    return {"iso8859-1": "latin-1", "utf-16-le": "utf-16", "utf-16-be": "utf-16"}.get(name, name)


def _head_text(raw: io.BufferedReader, name: str, encoding: str = UTF8) -> str:
    """The first lines of the file, decoded leniently, for separator detection; the stream is rewound.
    A UTF-16 file (byte-order mark) read as UTF-8 is refused here, naming `--encoding utf-16`."""
    head = raw.read(HEAD_BYTES)
    raw.seek(0)
    if encoding == UTF8 and head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("is UTF-16 (it starts with a UTF-16 byte-order mark); give --encoding utf-16 or re-save "
                         "it as UTF-8", file=name)
    if encoding != UTF8:
        return head.decode(encoding, errors="replace")
    if len(head) == HEAD_BYTES:  # drop the last line: it may be cut in the middle
        cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
        head = head[:cut] if cut > 0 else head
    return head.decode("utf-8-sig", errors="replace")


def _text(raw: io.BufferedReader, errors: str = "strict", encoding: str = UTF8) -> TextIO:
    # newline="": the csv module sees \r\n, \r and \n line ends untranslated and counts lines itself
    return io.TextIOWrapper(raw, encoding="utf-8-sig" if encoding == UTF8 else encoding, errors=errors, newline="")


@dataclass(frozen=True)
class CodedCSV:
    """A CSV file read into columns: per column, an integer code per data row and the distinct strings
    (`labels`, sorted), so that `labels[codes[r]]` is data row r's field. `numbers`, per column, holds the
    labels as integers (`numbers[i] == int(labels[i])`) when pyarrow's reader found every value of the column
    to be a canonical integer, else None (or is empty: the csv-module reader does not look)."""

    header: tuple[str, ...]
    codes: tuple[np.ndarray, ...]
    labels: tuple[tuple[str, ...], ...]
    separator: str
    rows: int
    numbers: tuple[np.ndarray | None, ...] = ()


class _ColumnEncoder:
    """Dictionary-encodes one column chunk by chunk: a dict from string to code, and the codes in one
    growing C array (`array('i')`: 4 bytes a row, no Python object per row, one block to free)."""

    __slots__ = ("index", "codes")

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.codes = array("i")

    def add(self, values: Sequence[str]) -> None:
        index = self.index
        setdefault = index.setdefault
        # the default is evaluated before the call: a new string gets the next code
        self.codes.extend([setdefault(v, len(index)) for v in values])

    def finish(self) -> tuple[np.ndarray, tuple[str, ...]]:
        """Codes renumbered so that the labels are sorted (the order every encoder downstream uses), in the
        narrowest integer type that holds them (`fitness.encoding.code_dtype`)."""
        codes = np.frombuffer(self.codes, dtype=np.int32) if len(self.codes) else np.zeros(0, dtype=np.int32)
        labels = list(self.index)
        self.index, self.codes = {}, array("i")
        order = sorted(range(len(labels)), key=labels.__getitem__)
        rank = np.empty(len(labels), dtype=code_dtype(len(labels)))
        rank[order] = np.arange(len(labels))
        return rank[codes], tuple(labels[i] for i in order)


def check_header(fields: Sequence[str], line: int, name: str) -> tuple[str, ...]:
    """The column names (blanks around them dropped); errors: no names, a nameless column, duplicates."""
    header = tuple(h.strip() for h in fields)
    if not any(header):
        raise InputError("the header row has no column names", file=name, line=line)
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if not column:
            hint = " (a trailing separator?)" if position == len(header) else ""
            raise InputError(f"column {position} of the header has no name{hint}", file=name, line=line)
        if column in seen:
            raise InputError(f"duplicate column name {clip(column)} (columns {seen[column]} and {position})",
                             file=name, line=line, column=column, value=column)
        seen[column] = position
    return header


def read_coded(path: str | os.PathLike, separator: str | None = None, encoding: str = UTF8) -> CodedCSV:
    """Read a CSV file with a header row into dictionary-encoded columns, streaming.

    Errors: not a regular file, empty file, header with empty or duplicate column names, rows with the wrong
    number of fields (ragged), invalid CSV (an unclosed quote), bytes that `encoding` cannot decode (UTF-8 by
    default; a UTF-16 file read as UTF-8). Blank lines are skipped and not counted as rows; the header is the
    first non-blank record. Files in another encoding (`latin-1`, `cp1252`, `utf-16`) are read by the csv
    module (pyarrow's fast reader reads UTF-8 only).
    """
    name = str(path)
    encoding = check_encoding(encoding)
    with open_input(path) as raw:
        head = _head_text(raw, name, encoding)  # type: ignore[arg-type]
        separator = check_separator(separator) if separator is not None else detect_separator(head)
        if encoding == UTF8:
            fast = _read_coded_arrow(raw, head, separator, name)  # type: ignore[arg-type]
            if fast is not None:
                return fast
        raw.seek(0)
        try:
            return _read_coded(_text(raw, encoding=encoding), separator, name)  # type: ignore[arg-type]
        except UnicodeError:
            pass
    raise _not_utf8(path, separator, encoding)


ARROW_BLOCK = 1 << 22  # bytes pyarrow parses per block: the threads of its reader share a slice's blocks
ARROW_SLICE = 1 << 24  # bytes of the file handed to pyarrow's reader at once: bounds the strings held
_QUOTE, _CR, _LF = 34, 13, 10
QUOTE_BLOCK = 1 << 22  # bytes looked at a time for quotes (its masks are transient memory: keep it small)
MAX_MAGNITUDE = 10**18  # a column is read as numbers only below this in absolute value (sort keys fit int64)
_POWERS = 10 ** np.arange(1, 19, dtype=np.int64)  # 10 .. 10^18: a number's digit count by binary search
_MINUS, _NINE = ord("-"), ord("9")


def digit_count(magnitude: np.ndarray) -> np.ndarray:
    """The number of decimal digits of each non-negative integer below 10^18 (1 for 0)."""
    return np.searchsorted(_POWERS, magnitude, side="right") + 1


def decimal_order(numbers: np.ndarray) -> np.ndarray:
    """The permutation that sorts distinct integers (|v| < 10^18) as their decimal strings sort, i.e. as
    `sorted(map(str, numbers))` does (`-10` < `-2` < `0` < `10` < `9`), computed on the numbers.

    A `-` sorts before every digit, so the negative numbers come first; within a sign the strings compare
    digit by digit and a prefix comes first: the order of (the magnitude padded with zeros to the longest
    length, the length)."""
    magnitude = np.abs(numbers.astype(np.int64, copy=False))
    digits = digit_count(magnitude)
    longest = int(digits.max()) if digits.size else 1
    padded = magnitude * (10 ** (longest - digits)).astype(np.int64)
    return np.lexsort((digits, padded, numbers >= 0))


def integers(chunked: object) -> tuple[np.ndarray, int] | None:
    """A pyarrow string column as integers, with the total length of its values, when every value is an
    integer below 10^18 in absolute value written with digits and `-` only; else None. Whether each is
    written as `str(int)` writes it is decided on the distinct values (`numbers_as_codes`).

    The bytes may only be `-` to `9` (digits, `-`, and `.` `/`, which the cast refuses); pyarrow's cast then
    accepts exactly `-?[0-9]+` (an overflow fails it)."""
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow.compute as pc

    length = 0
    for chunk in chunked.chunks:  # type: ignore[attr-defined]
        if not len(chunk):
            continue
        buffers = chunk.buffers()
        offsets = np.frombuffer(buffers[1], dtype=np.int32)[chunk.offset:chunk.offset + len(chunk) + 1]
        if chunk.null_count or offsets[-1] == offsets[0] or buffers[2] is None:
            return None  # only empty fields
        data = np.frombuffer(buffers[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
        if data.min() < _MINUS or data.max() > _NINE:
            return None
        length += int(offsets[-1] - offsets[0])
    try:
        numbers = pc.cast(chunked, pa.int64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if numbers.size:
        low, high = int(numbers.min()), int(numbers.max())
        if low <= -MAX_MAGNITUDE or high >= MAX_MAGNITUDE:
            return None
        if -(1 << 31) <= low and high < 1 << 31:
            numbers = numbers.astype(np.int32)
    return numbers, length


def numbers_as_codes(numbers: np.ndarray, length: int | None = None
                     ) -> tuple[np.ndarray, tuple[str, ...], np.ndarray] | None:
    """Codes, sorted labels and the labels as integers of a column of integers whose values have `length`
    characters in all; None unless every value is written the one way `str(int)` writes it (`length` None:
    the values are numbers, not text, e.g. a Parquet integer column: their strings are `str(int)`'s).

    The labels are the distinct numbers' strings in string order (the order of every other column), found
    on the numbers (a table of presence when their range is small, else a sort). A leading zero or `-0`
    only lengthens a value, so the values are canonical exactly when `length` is the sum over the rows of
    their canonical lengths (digits, plus one for a sign), which is counted per distinct value."""
    if not numbers.size:
        return np.zeros(0, dtype=np.uint8), (), np.zeros(0, dtype=np.int64)
    low, high = int(numbers.min()), int(numbers.max())
    shifted = numbers.astype(np.intp)  # the index type: bincount and the lookup below convert no further
    if low:
        shifted -= low
    if high - low < max(4 * numbers.size, 1 << 20):
        counts = np.bincount(shifted, minlength=high - low + 1)
        distinct = np.flatnonzero(counts)
        counts = counts[distinct]
        distinct += low
        order = decimal_order(distinct)
        rank = np.zeros(high - low + 1, dtype=code_dtype(distinct.size))
        rank[distinct[order] - low] = np.arange(distinct.size)
        codes = rank[shifted]
    else:
        distinct, inverse, counts = np.unique(shifted.astype(np.int64), return_inverse=True, return_counts=True)
        distinct += low
        order = decimal_order(distinct)
        rank = np.empty(distinct.size, dtype=code_dtype(distinct.size))
        rank[order] = np.arange(distinct.size)
        codes = rank[inverse.reshape(-1)]
    if length is not None and int(np.dot(digit_count(np.abs(distinct)) + (distinct < 0), counts)) != length:
        return None
    distinct = distinct[order]
    return codes, IntegerLabels(distinct), distinct  # type: ignore[return-value]


class IntegerLabels(Sequence[str]):
    """The labels of a column of integers, `str(n)` for each of `numbers` (in the labels' string order),
    made only when asked for: one label by index, or all of them (kept) for iteration, comparison and
    concatenation. A read-only sequence of strings, equal to the tuple of the same strings; what the reader
    gives for an integer column, so that a table of 200,000 distinct incomes holds no Python string per value
    until a release or a report writes them."""

    __slots__ = ("numbers", "_strings")

    def __init__(self, numbers: np.ndarray) -> None:
        self.numbers = numbers
        self._strings: tuple[str, ...] | None = None

    def strings(self) -> tuple[str, ...]:
        """All labels as a tuple (made once)."""
        if self._strings is None:
            self._strings = tuple(map(str, self.numbers.tolist()))
        return self._strings

    def __len__(self) -> int:
        return int(self.numbers.size)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return self.strings()[index]
        if self._strings is not None:
            return self._strings[index]
        return str(int(self.numbers[index]))

    def __iter__(self) -> Iterator[str]:
        return iter(self.strings())

    def _position(self, value: object) -> int:
        """The position of `value`, or -1 (only a canonical integer's string can be a label)."""
        if not isinstance(value, str) or len(value) > 19 or not _CANONICAL.fullmatch(value):
            return -1
        number = int(value)
        if str(number) != value:  # `007` or `-0` is no label even though 7 or 0 may be one
            return -1
        hits = np.flatnonzero(self.numbers == number)
        return int(hits[0]) if hits.size else -1

    def __contains__(self, value: object) -> bool:
        return self._position(value) >= 0

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        if start or stop is not None:
            return self.strings().index(value, start, len(self) if stop is None else stop)  # type: ignore[arg-type]
        position = self._position(value)
        if position < 0:
            raise ValueError(f"{value!r} is not a label")
        return position

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IntegerLabels):
            return bool(np.array_equal(self.numbers, other.numbers))
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and self.strings() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.strings())

    def __add__(self, other: object) -> tuple[str, ...]:
        if isinstance(other, (tuple, IntegerLabels)):
            return self.strings() + tuple(other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[str, ...]:
        if isinstance(other, tuple):
            return other + self.strings()
        return NotImplemented

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        return np.asarray(self.strings(), dtype=dtype)

    def __repr__(self) -> str:
        return f"IntegerLabels({len(self)} labels)"

    def __reduce__(self) -> tuple:
        return IntegerLabels, (self.numbers,)


_CANONICAL = re.compile(r"-?[0-9]+", re.ASCII)


class _ArrowColumn:
    """One column as pyarrow reads it, slice by slice: integers while every value is one (`integers`), else
    dictionary-encoded strings. A column that turns to text after integers were kept (a `?` in a later slice)
    is `lost`: whether the integers were written canonically is only known at the end, so it is read again
    as text (`_read_coded_arrow`)."""

    __slots__ = ("numbers", "length", "chunks", "lost")

    def __init__(self, text: bool = False) -> None:
        self.numbers: list[np.ndarray] | None = None if text else []
        self.length = 0
        self.chunks: list[object] = []
        self.lost = False

    def add(self, column: object) -> None:
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.compute as pc

        if self.lost:
            return
        if self.numbers is not None:
            read = integers(column)
            if read is not None:
                self.numbers.append(read[0])
                self.length += read[1]
                return
            self.lost, self.numbers = bool(self.numbers), None
            if self.lost:
                return
        column.validate(full=True)  # UTF-8, which the reader left unchecked (`integers` takes ASCII bytes only)
        encoded = pc.dictionary_encode(column)
        self.chunks.extend(encoded.chunks if isinstance(encoded, pa.ChunkedArray) else [encoded])

    def finish(self) -> tuple[np.ndarray, tuple[str, ...], np.ndarray | None] | None:
        """(codes, sorted labels, the labels as integers or None); None when the column must be read again as
        text (lost, or integers not all canonical: `007`)."""
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        if self.lost:
            return None
        if self.numbers is not None:
            numbers = (np.concatenate(self.numbers) if len(self.numbers) > 1 else self.numbers[0] if self.numbers
                       else np.zeros(0, dtype=np.int64))
            self.numbers = None
            return numbers_as_codes(numbers, self.length)
        dictionary = pa.dictionary(pa.int32(), pa.string())
        encoded = pa.chunked_array(self.chunks, type=dictionary).combine_chunks()  # the slices' dictionaries unified
        self.chunks = []
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        distinct = encoded.dictionary.to_pylist()
        del encoded
        if distinct and max(map(len, distinct)) > csv.field_size_limit():
            raise ValueError("a field longer than the csv module accepts")  # it reads the file and says so
        present = (np.bincount(indices, minlength=len(distinct)) > 0).tolist()  # labels that occur, sorted as the
        order = sorted((i for i in range(len(distinct)) if present[i]), key=distinct.__getitem__)  # csv reader's
        rank = np.zeros(len(distinct), dtype=code_dtype(len(order)))
        rank[order] = np.arange(len(order))
        return rank[indices], tuple(distinct[i] for i in order), None


class QuoteCheck:
    """Whether pyarrow and the csv module read a file alike, checked on its bytes as they are read, block after
    block: True for a file without quotes, or whose every quote is where strict CSV puts one; False for a
    NUL byte, a quote elsewhere (`x"y`, `"a"b`, an unclosed quote) or a line break inside quotes (the csv
    module then reads the file).

    Counting quotes from the start, the 1st, 3rd, ... quote opens a field and must follow a separator, a line
    end, the start of the file or the quote before it (a doubled quote `""`); the 2nd, 4th, ... closes it and
    must precede a separator, a line end, the end of the file or the next quote. Such a file is valid CSV for
    the csv module in strict mode, and pyarrow parses it the same way (double quotes as escapes)."""

    def __init__(self, separator: str) -> None:
        self.opens_after = np.zeros(256, dtype=bool)
        self.opens_after[[ord(separator), _CR, _LF, _QUOTE]] = True
        self.closes_before = self.opens_after
        self.count = 0  # quotes seen so far
        self.previous = _LF  # the byte before the next block (the file's start counts as a line end)
        self.pending_close = False  # the last block ended on a closing quote: the next byte must follow one
        self.started = False

    def feed(self, block: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
        """Check `block[start:end]`, the next bytes of the file (a byte-order mark at the file's start is
        skipped); False as soon as the file cannot be well quoted."""
        end = len(block) if end is None else end
        if not self.started:
            self.started = True
            if block[start:start + 3] == b"\xef\xbb\xbf":  # after a byte-order mark, the file starts after it
                start += 3
        if start >= end:
            return True
        if self.pending_close and not self.closes_before[block[start]]:
            return False
        if block.find(b"\0", start, end) >= 0:
            return False
        if self.count % 2 == 0 and block.find(b'"', start, end) < 0:  # no quote, and the block starts outside quotes
            self.pending_close, self.previous = False, block[end - 1]
            return True
        data = np.frombuffer(block, dtype=np.uint8, count=end - start, offset=start)
        quotes = np.flatnonzero(data == _QUOTE)
        opening = (np.arange(quotes.size) + self.count) % 2 == 0
        before = np.where(quotes > 0, data[np.maximum(quotes - 1, 0)], self.previous)
        if not self.opens_after[before[opening]].all():
            return False
        closing = quotes[~opening]
        after_inside = closing[closing + 1 < data.size]
        if not self.closes_before[data[after_inside + 1]].all():
            return False
        self.pending_close = bool(closing.size) and int(closing[-1]) == data.size - 1
        breaks = np.flatnonzero((data == _LF) | (data == _CR))
        if ((np.searchsorted(quotes, breaks) + self.count) % 2 == 1).any():
            return False  # a line break inside quotes: the csv module reads it (pyarrow would need to know)
        self.count += int(quotes.size)
        self.previous = int(data[-1])
        return True

    def done(self) -> bool:
        """After the last block: whether the whole file is well quoted (every opened quote closed)."""
        return self.count % 2 == 0


def _well_quoted(raw: io.BufferedReader, separator: str) -> bool | None:
    """`QuoteCheck` over a whole stream, QUOTE_BLOCK bytes at a time: True, or None (use the csv module).
    The stream is rewound."""
    check = QuoteCheck(separator)
    raw.seek(0)
    if raw.read(3) == b"\xef\xbb\xbf":  # the byte-order mark, whatever the block size
        check.started = True
    else:
        raw.seek(0)
    try:
        while block := raw.read(QUOTE_BLOCK):
            if not check.feed(block):
                return None
        return True if check.done() else None
    finally:
        raw.seek(0)


def _slices(raw: io.BufferedReader, check: QuoteCheck) -> Iterator[memoryview]:
    """The file in pieces of about ARROW_SLICE bytes, each ending at a line end (the rest of a cut line
    starts the next piece), every byte passed through `check` before its piece is handed out. The file is
    read straight into each piece's buffer (no copy). A line longer than a slice, or a file that is not well
    quoted, stops the generator with a `ValueError` (the csv module then reads the file)."""
    rest = b""
    while True:
        buffer = bytearray(len(rest) + _slice_size(raw))
        buffer[:len(rest)] = rest
        got = raw.readinto(memoryview(buffer)[len(rest):])
        if not got:
            break
        end = len(rest) + got
        if not check.feed(buffer, len(rest), end):
            raise ValueError("not well quoted")
        cut = max(buffer.rfind(b"\n", 0, end), buffer.rfind(b"\r", 0, end)) + 1
        if cut == 0:
            if end >= ARROW_SLICE:
                raise ValueError("a line longer than a slice")
            rest = bytes(buffer[:end])
            continue
        rest = bytes(buffer[cut:end])
        yield memoryview(buffer)[:cut]
    if not check.done():
        raise ValueError("not well quoted")
    if rest:
        yield memoryview(rest)


def _slice_size(raw: io.BufferedReader) -> int:
    """ARROW_SLICE, or less when the rest of the file is smaller (a small file gets a small buffer)."""
    try:
        remaining = os.fstat(raw.fileno()).st_size - raw.tell()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return ARROW_SLICE
    return min(ARROW_SLICE, max(remaining, 1 << 16))


def _read_coded_arrow(raw: io.BufferedReader, head: str, separator: str, name: str) -> CodedCSV | None:
    """`read_coded` by pyarrow's multithreaded CSV reader, for the common case only: a well-quoted file
    (`QuoteCheck`: no NUL byte, every quote where strict CSV puts one, no line break inside quotes), UTF-8,
    rectangular, with a header whose names pass `check_header`.

    The file goes to pyarrow a slice at a time (ARROW_SLICE bytes, parsed by its threads, each checked by
    `QuoteCheck` first), so that only one slice's strings are ever held. Every value is read as a string
    (never as a number: `007` stays `007`);
    a column whose every value is an integer (`integers`) is kept as integers and coded from its distinct
    numbers when they are all written canonically (`numbers_as_codes`; else the file is read a second time
    with that column as text), any other is dictionary-encoded by pyarrow; no Python object is made per row.
    None when pyarrow is missing or anything is unusual (a stray quote, a blank line of spaces, a ragged row,
    bytes that are not UTF-8, a line longer than a slice): the csv-module reader then reads the file, and
    gives its errors, with the same messages as ever. On the files both accept, both
    give the same columns (tests/test_table.py compares them)."""
    try:
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow as pa

        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.csv  # noqa: F401 (the reader is there)
    except ImportError:
        return None
    lines = [line for line in _LINE_BREAK.split(head, 1000)[:1000] if line]
    if not lines or not lines[0].strip():
        return None  # an empty file, or a blank line before the header
    raw_header = next(csv.reader([lines[0]], delimiter=separator), [])
    try:
        header = check_header(raw_header, 1, name)
    except InputError:
        return None  # the csv-module reader gives the message
    if len(set(raw_header)) != len(raw_header):
        return None
    text: set[int] = set()  # columns to read as text from the start
    try:
        for _ in range(2):  # a second pass only for columns that looked like integers but were not all canonical
            columns = _arrow_pass(raw, raw_header, separator, text)
            again = {position for position, column in enumerate(columns) if column[0] is None}
            if not again:
                break
            text |= again
        else:
            return None
    except (pa.ArrowException, OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    finally:
        raw.seek(0)
    rows = columns[0][0].size if columns else 0  # type: ignore[union-attr]
    return CodedCSV(header, tuple(c for c, _, _ in columns), tuple(lab for _, lab, _ in columns), separator,  # type: ignore[misc]
                    rows, tuple(n for _, _, n in columns))


def _arrow_pass(raw: io.BufferedReader, header: list[str], separator: str, text: set[int]
                ) -> list[tuple[np.ndarray | None, tuple[str, ...], np.ndarray | None]]:
    """One read of the file by pyarrow, a slice at a time: per column (codes, labels, numbers), or
    (None, (), None) for a column that must be read again as text. Raises pyarrow's errors."""
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow.csv as pacsv

    raw.seek(0)
    pool = pa.default_memory_pool()
    columns = [_ArrowColumn(position in text) for position in range(len(header))]
    parse = pacsv.ParseOptions(delimiter=separator, quote_char='"', double_quote=True, escape_char=False,
                               newlines_in_values=False, ignore_empty_lines=True)
    # UTF-8 is checked per column, and only where it is text (`_ArrowColumn.add`): a fifth of the parse saved
    convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in header}, strings_can_be_null=False,
                                   quoted_strings_can_be_null=False, check_utf8=False)
    options = pacsv.ReadOptions(column_names=header, block_size=ARROW_BLOCK)
    with ThreadPoolExecutor(_threads()) as threads, ThreadPoolExecutor(1) as parser:
        parsed = None  # pyarrow parses the next slice while the threads work on the columns of this one
        for piece in _data_pieces(raw, separator):
            following = parser.submit(pacsv.read_csv, pa.py_buffer(piece), read_options=options, parse_options=parse,
                                      convert_options=convert)
            del piece
            if parsed is not None:
                _add_slice(threads, columns, parsed.result())
            parsed = following
        if parsed is not None:
            _add_slice(threads, columns, parsed.result())
        del parsed
        pool.release_unused()
        out = [finished or (None, (), None) for finished in threads.map(_ArrowColumn.finish, columns)]
    pool.release_unused()  # hand the freed blocks back to the system: the allocator would keep them resident
    return out


def _add_slice(threads: ThreadPoolExecutor, columns: list[_ArrowColumn], data: object) -> None:
    """A parsed slice's columns added to the columns, side by side (casts and numpy release the GIL)."""
    list(threads.map(_ArrowColumn.add, columns, data.columns))  # type: ignore[attr-defined]
    del data
    # optional dependency: pyarrow (extra `parquet`)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()  # the slice's strings: the allocator would keep them resident


def _data_pieces(raw: io.BufferedReader, separator: str) -> Iterator[memoryview]:
    """The file's slices (`_slices`) without the header line and what precedes it: the data rows only."""
    header_seen = False
    for number, piece in enumerate(_slices(raw, QuoteCheck(separator))):
        if not header_seen:  # the header is the first line that is not empty (`_read_coded_arrow`): skip past it
            head = bytes(piece[:HEAD_BYTES])
            start = 3 if not number and head.startswith(b"\xef\xbb\xbf") else 0
            while start < len(head) and head[start] in b"\r\n":
                start += 1
            if start == len(piece):
                continue  # a slice of blank lines before the header
            header_seen = True
            ends = [at for at in (head.find(b"\n", start), head.find(b"\r", start)) if at >= 0]
            if not ends:
                if len(piece) > len(head):
                    raise ValueError("a header longer than the head")  # the csv module reads such a file
                ends = [len(piece)]
            end = min(ends)
            bytes(piece[start:end]).decode("utf-8")  # a header that is not UTF-8: the csv module says where
            piece = piece[end + 1:]
        if len(piece):
            yield piece


def _threads() -> int:
    """Threads for per-column work while reading: the usable cores, at most 4."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _lines(text: TextIO, name: str) -> Iterator[str]:
    """The physical lines of a text stream, as the csv module reads them, each at most MAX_LINE characters:
    a huge file without line ends is an error, not a MemoryError."""
    readline = text.readline
    number = 0
    while line := readline(MAX_LINE):
        number += 1
        if len(line) == MAX_LINE and line[-1] not in "\r\n":
            raise InputError(f"line {number} is longer than {MAX_LINE:,} characters: this is not a CSV table",
                             file=name)
        yield line


def _read_coded(text: TextIO, separator: str, name: str) -> CodedCSV:
    reader = csv.reader(_lines(text, name), delimiter=separator, strict=True)
    header: tuple[str, ...] | None = None
    encoders: list[_ColumnEncoder] = []
    width = rows = 0
    line = 1  # the physical line where the next record starts
    chunk: list[list[str]] = []
    try:
        for fields in reader:
            start, line = line, reader.line_num + 1
            if header is None:
                if not is_blank(fields, 0):
                    header = check_header(fields, start, name)
                    width = len(header)
                    encoders = [_ColumnEncoder() for _ in header]
                continue
            if len(fields) != width:
                if is_blank(fields, width):
                    continue
                raise InputError(f"has {len(fields)} fields but the header has {width}; quote fields that "
                                 "contain the separator", file=name, row=rows + 1, line=start)
            rows += 1
            chunk.append(fields)
            if len(chunk) == CHUNK_ROWS:
                _encode(chunk, encoders)
                chunk = []
    except csv.Error as error:
        hint = " (a quote that is never closed?)" if "end of data" in str(error) else ""
        raise InputError(f"is not valid CSV: {error}{hint}", file=name,
                         row=rows + 1 if header is not None else None, line=line) from None
    if header is None:
        text.seek(0)
        if not any(piece.strip() for piece in iter(lambda: text.read(1 << 16), "")):
            raise InputError("is empty: expected a header row and data rows", file=name)
        raise InputError("has no header row: every line is blank", file=name)
    _encode(chunk, encoders)
    columns = [encoder.finish() for encoder in encoders]
    return CodedCSV(header, tuple(c for c, _ in columns), tuple(labels for _, labels in columns), separator, rows)


def _encode(chunk: list[list[str]], encoders: list[_ColumnEncoder]) -> None:
    if chunk:
        for encoder, values in zip(encoders, zip(*chunk)):
            encoder.add(values)


def _not_utf8(path: str | os.PathLike, separator: str, encoding: str = UTF8) -> InputError:
    """The error for a file that is not in its encoding (UTF-8 unless given): a second pass (bytes that do
    not decode kept as surrogates) finds the row, line and column of the first bad byte and shows that field
    only, escaped and cut."""
    name = str(path)
    what = "UTF-8" if encoding == UTF8 else encoding
    advice = ("give --encoding latin-1 or cp1252, or re-save the file as UTF-8 (it is probably Latin-1 or "
              "Windows-1252)" if encoding == UTF8 else "give the file's encoding with --encoding, or re-save it "
              "as UTF-8")
    with open_input(path) as raw:
        text = _text(raw, "surrogateescape", encoding)  # type: ignore[arg-type]
        reader = csv.reader(text, delimiter=separator)
        header_seen, rows, line = False, 0, 1
        header: list[str] = []
        try:
            for fields in reader:
                start, line = line, reader.line_num + 1
                if not header_seen and is_blank(fields, 0):
                    continue
                if header_seen and is_blank(fields, len(header)):
                    continue
                rows += header_seen
                for position, field in enumerate(fields):
                    bad = _UNDECODED.search(field)
                    if bad is None:
                        continue
                    before = "".join(f + "," for f in fields[:position]) + field[:bad.start()]
                    at = start + len(_LINE_BREAK.findall(before))
                    byte = ord(bad.group()) - 0xDC00
                    shown = field.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                    if header_seen and position < len(header):
                        column, where = header[position], ""
                    else:
                        column, where = None, f" in {'the header, ' if not header_seen else ''}field {position + 1}"
                    return InputError(
                        f"is not {what}: line {at} has byte 0x{byte:02x}{where}: {clip(shown)}; {advice}",
                        file=name, row=rows if header_seen else None, column=column, value=clip(shown, quote=False))
                if not header_seen:
                    header, header_seen = [h.strip() for h in fields], True
        except (csv.Error, UnicodeError):
            pass
    return InputError(f"is not {what}; {advice}", file=name)


def read_rows(path: str | os.PathLike, separator: str | None = None) -> list[list[str]]:
    """All rows of a small CSV file without a header (e.g. an ARX hierarchy); blank rows come back as `[]`
    so that a row's position is its row number (row 1 = the first line)."""
    name = str(path)
    with open_input(path) as raw:
        head = _head_text(raw, name)  # type: ignore[arg-type]
        if not head.strip() and not raw.read(HEAD_BYTES).strip():
            raise InputError("is empty", file=name)
        raw.seek(0)
        separator = check_separator(separator) if separator is not None else detect_separator(head)
        rows: list[list[str]] = []
        line = 1
        reader = csv.reader(_lines(_text(raw), name), delimiter=separator, strict=True)  # type: ignore[arg-type]
        try:
            for fields in reader:
                rows.append([] if not any(f.strip() for f in fields) else fields)
                line = reader.line_num + 1
        except csv.Error as error:
            hint = " (a quote that is never closed?)" if "end of data" in str(error) else ""
            raise InputError(f"is not valid CSV: {error}{hint}", file=name, row=len(rows) + 1, line=line) from None
        except UnicodeDecodeError:
            pass
        else:
            return rows
    raise _not_utf8(path, separator)




def format_csv(header: Sequence[str], rows: Iterable[Sequence[str]], separator: str = ",") -> str:
    """A whole CSV text (small tables; `write_csv` streams large ones to a handle)."""
    buffer = io.StringIO()
    write_csv(buffer, header, rows, separator)
    return buffer.getvalue()


def write_csv(handle: TextIO, header: Sequence[str], rows: Iterable[Sequence[str]], separator: str = ",") -> None:
    """Write a header and rows to an open text handle (rows may be a lazy iterable: nothing is gathered)."""
    writer = csv.writer(handle, delimiter=separator, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
