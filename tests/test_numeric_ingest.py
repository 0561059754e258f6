"""Ingest of all-integer columns on arrays (issue 15): pyarrow's reader keeps a column of canonical integers
as numbers and codes it in string order, prepare builds its decimal hierarchy and level codes from arrays, and
pre-pruning counts single-QI nodes from a leaf histogram. Every shortcut is checked against the slow path it
replaces: the csv-module reader, `lattice.builders.decimal_hierarchy`, a paths-only hierarchy, a table without
numbers, and the direct kernel. Slices are made tiny (`csvio.ARROW_SLICE`) so that a small file crosses many."""

from __future__ import annotations

import io
import itertools
import pickle
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitness import kernel
from fitness.encoding import EncodedQI, EncodedTable, LevelCodes, encode_codes
from fitness.rollup import RollupCache, direct
from kgen.io import csvio, hierarchies
from kgen.io.table import CodedColumn, Table, read_csv
from kgen.run.config import Config
from kgen.run.pipeline import anonymize
from kgen.run.prepare import prepare
from kgen.run.values import integer_labels
from lattice import builders
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy

CANONICAL = re.compile(r"-?[0-9]+", re.ASCII)
SPECIAL = [0, 1, 9, 10, 19, 100, 109, 190, 1000, -1, -9, -10, -19, -100, -190, 10**17, 10**17 + 1, 10**18 - 1,
           -(10**17), -(10**18 - 1), 2**31 - 1, 2**31, -(2**31), -(2**31) - 1]
integers_below_1e18 = st.one_of(st.integers(-(10**18 - 1), 10**18 - 1), st.integers(-300, 300),
                                st.sampled_from(SPECIAL))
decimal_values = integers_below_1e18  # values near -10^18 round down to -10^18 (19 digits) at some levels


# --- helpers ---------------------------------------------------------------------------------------------------


def _read(path: Path, separator: str | None) -> csvio.CodedCSV | str:
    try:
        return csvio.read_coded(path, separator)
    except InputError as error:
        return str(error)


def _both_readers(path: Path, separator: str | None = ",") -> tuple[csvio.CodedCSV | str, csvio.CodedCSV | str]:
    """(read_coded as it is, read_coded by the csv module only); each a CodedCSV or the InputError's message."""
    fast = _read(path, separator)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvio, "_read_coded_arrow", lambda *args: None)
        slow = _read(path, separator)
    return fast, slow


def _same(fast: csvio.CodedCSV | str, slow: csvio.CodedCSV | str) -> bool:
    if isinstance(slow, str) or isinstance(fast, str):
        return fast == slow
    return (fast.header, fast.labels, fast.rows, fast.separator) == (slow.header, slow.labels, slow.rows,
                                                                     slow.separator) and all(
        a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(fast.codes, slow.codes, strict=True))


def _arrow(path: Path, separator: str = ",") -> csvio.CodedCSV | None:
    """What pyarrow's path alone gives (None: it left the file to the csv module)."""
    with open(path, "rb") as raw:
        head = csvio._head_text(raw, str(path))
        return csvio._read_coded_arrow(raw, head, separator, str(path))


def _canonical(labels: tuple[str, ...]) -> bool:
    return all(CANONICAL.fullmatch(v) and str(int(v)) == v and abs(int(v)) < 10**18 for v in labels)


def _check_numbers(coded: csvio.CodedCSV) -> None:
    """`numbers` is given exactly for the columns whose every value is a canonical integer below 10^18, and
    then writes the labels."""
    assert len(coded.numbers) == len(coded.header)
    for column, labels, numbers in zip(coded.header, coded.labels, coded.numbers, strict=True):
        if not labels:
            continue  # an empty column: every value is (vacuously) an integer, either answer is right
        assert (numbers is not None) == _canonical(labels), (column, labels, numbers)
        if numbers is not None:
            assert [str(v) for v in numbers.tolist()] == list(labels), column


def _check_file(path: Path, slices: int, taken: bool = True) -> csvio.CodedCSV | str:
    """Both readers give the same columns at this slice size; pyarrow's takes the file (when `taken`) and
    carries numbers for exactly the integer columns."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvio, "ARROW_SLICE", slices)
        fast, slow = _both_readers(path)
        assert _same(fast, slow), (fast, slow)
        arrow = _arrow(path)
    if taken:
        assert arrow is not None, "pyarrow's reader left a plain file to the csv module"
        assert _same(arrow, slow)
        _check_numbers(arrow)
    return slow


def _rows(lines: list[str], end: str = "\n") -> bytes:
    return "".join(line + end for line in lines).encode()


# --- decimal_order and numbers_as_codes ------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.sets(integers_below_1e18, min_size=1, max_size=60), st.booleans())
def test_decimal_order_sorts_integers_as_their_decimal_strings_sort(values, narrow):
    numbers = np.array(sorted(values), dtype=np.int64)
    np.random.default_rng(len(values)).shuffle(numbers)
    if narrow and -(2**31) <= numbers.min() and numbers.max() < 2**31:
        numbers = numbers.astype(np.int32)  # the reader keeps small columns as int32
    order = csvio.decimal_order(numbers)
    assert [str(v) for v in numbers[order].tolist()] == sorted(map(str, values))


def test_decimal_order_puts_a_prefix_before_its_extensions_and_negatives_first():
    numbers = np.array([19, 100, 10, 1, 2, 0, -1, -10, -2, -19, 10**17, 9], dtype=np.int64)
    ordered = numbers[csvio.decimal_order(numbers)].tolist()
    assert ordered == [-1, -10, -19, -2, 0, 1, 10, 100, 100000000000000000, 19, 2, 9]


@settings(max_examples=100, deadline=None)
@given(st.lists(integers_below_1e18, min_size=1, max_size=80), st.booleans(), st.data())
def test_numbers_are_coded_in_string_order_and_refused_when_one_is_written_longer(values, wide, data):
    if wide:
        values = values + [10**17, -(10**17)]  # a range too wide for the table of presence: the sort path
    numbers = np.array(values, dtype=np.int64)
    length = sum(len(str(v)) for v in values)
    coded = csvio.numbers_as_codes(numbers, length)
    assert coded is not None
    codes, labels, distinct = coded
    assert labels == tuple(sorted(set(map(str, values))))
    assert [str(v) for v in distinct.tolist()] == list(labels)
    assert [labels[c] for c in codes.tolist()] == [str(v) for v in values]
    assert codes.dtype == csvio.code_dtype(len(labels))
    extra = data.draw(st.integers(1, 3))  # `007` for 7, `-0` for 0: only ever longer than canonical
    assert csvio.numbers_as_codes(numbers, length + extra) is None


# --- the two readers agree -------------------------------------------------------------------------------------


def _integer_table(rows: int = 300, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    age, zipcode, balance = rng.integers(0, 100, rows), rng.integers(10000, 100000, rows), rng.integers(-5000, 5001,
                                                                                                          rows)
    return [f"{a},{z},{b}" for a, z, b in zip(age.tolist(), zipcode.tolist(), balance.tolist())]


def _late(value: str, at: int = 250, rows: int = 300) -> list[str]:
    """An integer table whose column `a` holds `value` at row `at` only (many slices after the first)."""
    lines = [f"{i % 97},{i % 13}" for i in range(rows)]
    lines[at] = f"{value},{at % 13}"
    return lines


FILES = {
    "integers": b"age,zip,balance\n" + _rows(_integer_table()),
    "leading zero in a late slice": b"a,b\n" + _rows(_late("007")),
    "question mark in a late slice": b"a,b\n" + _rows(_late("?")),
    "empty field in a late slice": b"a,b\n" + _rows(_late("")),
    "text in a late slice": b"a,b\n" + _rows(_late("x")),
    "minus zero": b"a,b\n" + _rows(_late("-0")),
    "minus zero first": b"a,b\n-0,1\n0,2\n5,3\n",
    "plus sign": b"a,b\n" + _rows(_late("+5")),
    "hexadecimal": b"a,b\n" + _rows(_late("0x1F")),
    "a fraction": b"a,b\n" + _rows(_late("1.5")),
    "a lone minus": b"a,b\n" + _rows(_late("-")),
    "a slash": b"a,b\n" + _rows(_late("1/2")),
    "ten to the 18th": b"a,b\n" + _rows(_late(str(10**18))),
    "minus ten to the 18th": b"a,b\n" + _rows(_late(str(-(10**18)))),
    "just below ten to the 18th": b"a,b\n" + _rows(_late(str(10**18 - 1))) + _rows([f"{-(10**18 - 1)},1"]),
    "beyond int64": b"a,b\n" + _rows(_late("99999999999999999999999")),
    "int64 minimum": b"a,b\n" + _rows(_late(str(-(2**63)))),
    "past int32 in a late slice": b"a,b\n" + _rows(_late(str(5 * 10**9))),
    "a wide range": b"a,b\n" + _rows(_late(str(10**17))) + _rows([f"{-(10**17)},2"]),
    "space before a number": b"a,b\n" + _rows(_late(" 5")),
    "space after a number": b"a,b\n" + _rows(_late("5 ")),
    "quoted numbers": b"a,b\n" + _rows([f'"{i}",{i}' for i in range(150)]),
    "one quoted number late": b"a,b\n" + _rows(_late('"12"')),
    "crlf": b"a,b\r\n" + _rows(_late("3"), "\r\n"),
    "cr only": b"a,b\r" + _rows(_late("3"), "\r"),
    "crlf with a leading zero late": b"a,b\r\n" + _rows(_late("08"), "\r\n"),
    "bom": b"\xef\xbb\xbfa,b\n" + _rows(_late("4")),
    "blank lines": b"\n\na,b\n\n" + _rows(_late("4")[:100]) + b"\n" * 150 + _rows(_late("4")[100:]) + b"\n\n",
    "no line end at the end": b"a,b\n" + _rows(_late("4")).rstrip(b"\n"),
    "text and integer columns": b"name,age,zip\n" + _rows([f"n{i % 17},{i % 90},{8000 + i % 31}" for i in range(200)]),
    "text first, integers later": b"a,b\n" + _rows(["x,1"] + _late("4")[1:]),
    "negative numbers": b"a,b\n" + _rows([f"{-i},{i - 150}" for i in range(300)]),
    "header only": b"a,b\n",
    "header only, crlf": b"a,b\r\n",
    "header without a line end": b"a,b",
}


@pytest.mark.parametrize("slices", [64, 100, 1 << 24])
@pytest.mark.parametrize("name", list(FILES))
def test_pyarrow_and_csv_module_readers_give_the_same_columns_at_any_slice_size(tmp_path, name, slices):
    path = tmp_path / "data.csv"
    path.write_bytes(FILES[name])
    _check_file(path, slices)


@pytest.mark.parametrize("separator", [";", "\t", "|"])
def test_integer_columns_under_other_separators_read_the_same(tmp_path, separator):
    lines = [line.replace(",", separator) for line in _late("012", at=200)]
    path = tmp_path / "data.csv"
    path.write_bytes(_rows([separator.join(["a", "b"])] + lines + [f"{i}{separator}{-i}" for i in range(50)]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvio, "ARROW_SLICE", 64)
        fast, slow = _both_readers(path, None)  # the separator detected
        assert isinstance(slow, csvio.CodedCSV) and slow.separator == separator and _same(fast, slow)
        arrow = _arrow(path, separator)
    assert arrow is not None and _same(arrow, slow)
    _check_numbers(arrow)


def test_a_late_non_canonical_integer_makes_its_column_text_and_leaves_the_others_numbers(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(FILES["leading zero in a late slice"])
    slow = _check_file(path, 64)
    assert isinstance(slow, csvio.CodedCSV) and "007" in slow.labels[0] and "7" in slow.labels[0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvio, "ARROW_SLICE", 64)
        arrow = _arrow(path)
    assert arrow is not None and arrow.numbers[0] is None and arrow.numbers[1] is not None


def test_a_column_that_turns_to_text_after_many_integer_slices_keeps_every_row(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(FILES["question mark in a late slice"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvio, "ARROW_SLICE", 64)
        arrow = _arrow(path)
    assert arrow is not None and arrow.rows == 300 and arrow.numbers[0] is None
    a = [arrow.labels[0][c] for c in arrow.codes[0].tolist()]
    assert a == [line.split(",")[0] for line in _late("?")]


def test_integer_columns_read_by_the_arrow_path_carry_their_numbers(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(FILES["integers"])
    table = read_csv(path)
    for column in ("age", "zip", "balance"):
        values = table.values[column]
        assert isinstance(values, CodedColumn) and values.numbers is not None
        assert [int(v) for v in values.labels] == values.numbers.tolist()
        assert list(values) == [line.split(",")[("age", "zip", "balance").index(column)]
                                for line in _integer_table()]


def test_blank_lines_before_the_header_longer_than_a_slice_do_not_make_the_header_a_row(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"\n" * 100 + b"a,b\n1,2\n3,4\n")
    _check_file(path, 64)


@pytest.mark.parametrize("slices", range(30, 42))
def test_crlf_and_cr_line_ends_cut_anywhere_by_a_slice_read_the_same(tmp_path, slices):
    for end in ("\r\n", "\r"):
        data = f"a,b{end}".encode() + _rows(_late("12", at=40, rows=60), end)
        path = tmp_path / "data.csv"
        path.write_bytes(data)
        _check_file(path, slices)


@pytest.mark.parametrize("slices", range(4, 10))
def test_a_slice_cut_inside_the_headers_crlf_reads_the_same(tmp_path, slices):
    path = tmp_path / "data.csv"
    path.write_bytes(b"a,b\r\n" + _rows([f"{i % 10},{i % 7}" for i in range(40)], "\r\n"))
    _check_file(path, slices)


def test_slices_end_at_line_ends_and_some_cut_between_cr_and_lf(monkeypatch):
    data = b"a,b\r\n" + _rows(_late("12", at=40, rows=60), "\r\n")
    cut_inside_crlf = False
    for slices in range(30, 42):
        monkeypatch.setattr(csvio, "ARROW_SLICE", slices)
        pieces = [bytes(p) for p in csvio._slices(io.BytesIO(data), csvio.QuoteCheck(","))]
        assert b"".join(pieces) == data
        assert all(p.endswith((b"\n", b"\r")) for p in pieces[:-1])
        cut_inside_crlf |= any(a.endswith(b"\r") and b.startswith(b"\n") for a, b in itertools.pairwise(pieces))
    assert cut_inside_crlf  # the reader test above does see a CR LF split over two slices


def test_a_line_longer_than_a_slice_leaves_the_file_to_the_csv_module(tmp_path, monkeypatch):
    path = tmp_path / "data.csv"
    path.write_bytes(b"a,b\n" + _rows(_late("1" * 17, at=200)))
    monkeypatch.setattr(csvio, "ARROW_SLICE", 16)
    with pytest.raises(ValueError):
        list(csvio._slices(io.BytesIO(path.read_bytes()), csvio.QuoteCheck(",")))
    assert _arrow(path) is None
    fast, slow = _both_readers(path)
    assert _same(fast, slow)


# --- a property: random small integer tables -------------------------------------------------------------------

ODD = ["?", "", "007", "00", "-0", "x", "+5", " 5", "-", "1.0", str(10**18), "-05"]


@st.composite
def integer_tables(draw: st.DrawFn) -> tuple[bytes, int]:
    width = draw(st.integers(1, 3))
    rows = draw(st.integers(0, 60))
    columns = []
    for _ in range(width):
        values = draw(st.lists(st.integers(-40, 400).map(str), min_size=rows, max_size=rows))
        for _ in range(draw(st.integers(0, 2)) if rows else 0):  # a few odd fields, anywhere (late included)
            at = draw(st.integers(0, rows - 1))
            values[at] = draw(st.one_of(st.sampled_from(ODD), st.integers(0, 99).map(lambda v: f"0{v}")))
        if rows and draw(st.booleans()):  # a quoted field: the same value to both readers
            at = draw(st.integers(0, rows - 1))
            values[at] = f'"{values[at]}"'
        columns.append(values)
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    header = ",".join("abc"[:width])
    lines = [header] + [",".join(row) for row in zip(*columns)]
    slices = draw(st.sampled_from([32, 48, 64, 1 << 24]))
    return end.join(lines).encode() + end.encode() * draw(st.integers(0, 2)), slices


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=80, deadline=None)
@given(integer_tables(), st.sampled_from([5, 16, 1 << 22]))
def test_random_integer_tables_read_the_same_by_both_readers_at_several_slice_sizes(case, quote_block):
    data, slices = case
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvio, "QUOTE_BLOCK", quote_block)  # the quote check looks at blocks of this size
        path = Path(folder) / "data.csv"
        path.write_bytes(data)
        _check_file(path, slices)


# --- decimal_levels: the decimal hierarchy as arrays -----------------------------------------------------------


def _levels_and_builder(values: set[int]) -> tuple[Hierarchy, Hierarchy, tuple[str, ...]]:
    labels = tuple(sorted(map(str, values)))  # as the reader gives them: sorted strings, numbers aligned
    numbers = np.array([int(v) for v in labels], dtype=np.int64)
    return hierarchies.decimal_levels("c", labels, numbers), builders.decimal_hierarchy("c", labels), labels


@settings(max_examples=120, deadline=None)
@given(st.sets(decimal_values, min_size=1, max_size=30))
def test_decimal_levels_equal_the_decimal_builder_path_for_path(values):
    arrays, builder, labels = _levels_and_builder(values)
    assert arrays.levels is not None
    assert (arrays.height, arrays.source, arrays.name) == (builder.height, builder.source, builder.name)
    assert list(arrays.paths) == list(builder.paths) == list(labels)
    assert len(arrays.paths) == len(builder.paths)
    for value in labels:
        assert arrays.paths[value] == builder.paths[value]
        assert value in arrays and arrays.generalize(value, arrays.height) == builder.generalize(value, builder.height)
    assert arrays.top_labels() == builder.top_labels()
    for level in range(1, arrays.height + 1):  # level labels sorted as strings: the order every encoder uses
        assert arrays.levels.labels[level - 1] == tuple(sorted({p[level] for p in builder.paths.values()}))
        assert arrays.levels.maps[level - 1].dtype == csvio.code_dtype(len(arrays.levels.labels[level - 1]))
    fast = hierarchies.decimal_of_integers("c", list(labels))
    assert fast is not None and all(fast.paths[v] == arrays.paths[v] for v in labels)


def test_decimal_levels_sort_labels_as_strings_when_a_value_rounds_down_to_minus_ten_to_the_18th():
    for values in ({-999999999999999901, -9201}, {-990000000000000001, -920000000000000001}):
        arrays, builder, _ = _levels_and_builder(values)
        assert arrays.levels is not None
        for level in range(1, arrays.height + 1):
            assert arrays.levels.labels[level - 1] == tuple(sorted({p[level] for p in builder.paths.values()}))


def test_decimal_levels_of_one_value_and_of_negative_values():
    for values in ({5}, {-5}, {0}, {-(10**18 - 1)}, {-3, 4}, {-1, -10, -100}):
        arrays, builder, labels = _levels_and_builder(values)
        assert arrays.height == builder.height
        assert {v: arrays.paths[v] for v in labels} == dict(builder.paths)


def test_a_decimal_hierarchy_as_arrays_still_names_a_value_it_lacks():
    arrays, _, labels = _levels_and_builder({1, 22, 333})
    arrays.check_covers(list(labels), "c")
    with pytest.raises(InputError, match="'4'"):
        arrays.check_covers([*labels, "4"], "c")


def test_prepare_builds_the_decimal_hierarchy_of_an_integer_column_as_arrays(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(FILES["integers"])
    hierarchy, source = hierarchies.resolve("zip", read_csv(path).values["zip"].labels, None, None, None,
                                            numbers=read_csv(path).values["zip"].numbers)
    assert hierarchy.levels is not None and source == "decimal"


@settings(max_examples=60, deadline=None)
@given(st.sets(decimal_values, min_size=1, max_size=25), st.integers(0, 2**32 - 1))
def test_encoding_through_arrays_equals_encoding_through_paths(values, seed):
    arrays, _, labels = _levels_and_builder(values)
    paths = Hierarchy.from_rows("c", [arrays.paths[v] for v in labels], arrays.source)
    rng = np.random.default_rng(seed)
    leaf = np.concatenate([np.arange(len(labels)), rng.integers(0, len(labels), 50)])  # every leaf occurs
    rng.shuffle(leaf)
    lazy = encode_codes("c", leaf, labels, arrays)
    eager = encode_codes("c", leaf, labels, paths)
    assert isinstance(lazy.codes, LevelCodes) and not isinstance(eager.codes, LevelCodes)
    assert lazy.labels == eager.labels and lazy.cards == eager.cards and lazy.height == eager.height
    for level in range(eager.height + 1):
        assert lazy.codes[level].dtype == eager.codes[level].dtype
        assert np.array_equal(lazy.codes[level], eager.codes[level]), level
        assert np.array_equal(lazy.leaf_map(level), eager.leaf_map(level)), level


# --- prepare and anonymize: with numbers and without -----------------------------------------------------------


def _people(tmp_path: Path, rows: int = 400, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 90, rows)
    zipcode = rng.choice([13053, 13068, 13250, 14850, 14853, 15000, 148], rows)
    debt = rng.choice([-1, -1, -40, -7, 0, 3, 25, 130], rows)  # -1 is the missing token in one config
    sex = rng.choice(["M", "F"], rows)
    disease = rng.choice(["flu", "cancer", "cold", "ulcer"], rows)
    path = tmp_path / "people.csv"
    path.write_text("age,zip,debt,sex,disease\n" + "".join(
        f"{a},{z},{d},{s},{x}\n" for a, z, d, s, x in zip(age.tolist(), zipcode.tolist(), debt.tolist(), sex, disease)),
        encoding="utf-8")
    return path


def _without_numbers(table: Table) -> Table:
    values = {c: CodedColumn(v.codes, v.labels) for c, v in table.values.items()}
    return Table(table.columns, values, table.source, table.separator)


CONFIGS = {
    "k": dict(qi=["age", "zip", "debt", "sex"], k=5, suppression=0.02, algorithm="exhaustive"),
    "missing -1": dict(qi=["age", "zip", "debt", "sex"], k=4, suppression=0.05, missing=("-1", "?"),
                       algorithm="exhaustive"),
    "l-diversity, loss": dict(qi=["age", "zip", "debt"], k=3, suppression=0.05, sensitive=["disease"], l=2,
                              metric="loss", algorithm="exhaustive"),
    "ga": dict(qi=["age", "zip", "debt", "sex"], k=6, suppression=0.04, seed=7, max_evaluations=60),
    "bitset kernel": dict(qi=["age", "zip", "debt"], k=4, suppression=0.03, kernel="bitset", algorithm="exhaustive"),
    "array device": dict(qi=["age", "zip", "debt", "sex"], k=4, suppression=0.03, device="array",
                         algorithm="exhaustive"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_prepare_and_anonymize_give_the_same_with_and_without_the_readers_numbers(tmp_path, name):
    table = read_csv(_people(tmp_path))
    assert all(table.values[c].numbers is not None for c in ("age", "zip", "debt"))  # the fast path is taken
    plain = _without_numbers(table)
    config = Config(**CONFIGS[name], keep_unnamed=True)
    fast, slow = prepare(table, config), prepare(plain, config)
    assert fast.box == slow.box and fast.heights == slow.heights
    for column in config.qi:
        assert list(fast.hierarchies[column].paths) == list(slow.hierarchies[column].paths)
        assert all(fast.hierarchies[column].paths[v] == slow.hierarchies[column].paths[v]
                   for v in slow.hierarchies[column].paths)
        assert fast.hierarchy_sources[column] == slow.hierarchy_sources[column]
        assert list(fast.qi_values[column]) == list(slow.qi_values[column])
    for a, b in zip(fast.encoded.qis, slow.encoded.qis, strict=True):
        assert a.name == b.name and a.labels == b.labels
        for level in range(b.height + 1):
            assert a.codes[level].dtype == b.codes[level].dtype and np.array_equal(a.codes[level], b.codes[level])
    released, reference = anonymize(table, config), anonymize(plain, config)
    assert released.evaluation.node == reference.evaluation.node
    assert released.release.rows() == reference.release.rows()
    assert np.array_equal(released.suppressed_rows, reference.suppressed_rows)


def test_a_table_of_row_slices_of_integer_columns_prepares_as_without_numbers(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("age,zip\n" + "".join(f"{20 + i % 30},{13000 + i % 7}\n" for i in range(200)) + "123456,99999\n",
                    encoding="utf-8")
    table = read_csv(path)
    head = Table(table.columns, {c: v[:200] for c, v in table.values.items()}, table.source)  # the last row left out
    config = Config(qi=["age", "zip"], k=5, algorithm="exhaustive", keep_unnamed=True)
    fast, slow = prepare(head, config), prepare(_without_numbers(head), config)
    assert fast.heights == slow.heights
    assert [q.labels for q in fast.encoded.qis] == [q.labels for q in slow.encoded.qis]
    assert anonymize(head, config).release.rows() == anonymize(_without_numbers(head), config).release.rows()


def test_a_coded_columns_numbers_survive_pickling_and_go_when_a_value_is_set():
    column = CodedColumn(np.array([0, 1, 1], dtype=np.uint8), ("10", "9"), np.array([10, 9]))
    copy = pickle.loads(pickle.dumps(column))
    assert copy.labels == column.labels and copy.numbers is not None and copy.numbers.tolist() == [10, 9]
    old = CodedColumn.__new__(CodedColumn)
    old.__setstate__((column.codes, column.labels))  # pickled before numbers existed
    assert old.numbers is None and list(old) == ["10", "9", "9"]
    column[0] = "x"
    assert column.numbers is None and list(column) == ["x", "9", "9"]


def test_a_missing_token_among_the_numbers_takes_the_general_path(tmp_path):
    table = read_csv(_people(tmp_path))
    debt = table.values["debt"]
    assert integer_labels(debt, ("?",)) is debt.numbers
    assert integer_labels(debt, ("-1",)) is None  # -1 occurs: it must become the missing value
    assert integer_labels(debt, ("-2", "007", "+3")) is debt.numbers  # absent, or never a canonical label
    prepared = prepare(table, Config(qi=["debt", "age"], k=2, suppression=0.5, missing=("-1",), keep_unnamed=True))
    hierarchy = prepared.hierarchies["debt"]
    assert hierarchy.paths["-1"][1:-1] == ("-1",) * (hierarchy.height - 1)  # missing stays itself below the top
    assert hierarchy.levels is None and prepared.hierarchies["age"].levels is not None


# --- LevelCodes, projections and laziness ----------------------------------------------------------------------


def _encoded(seed: int, n: int = 3000) -> EncodedTable:
    """Three integer QIs encoded through array hierarchies (LevelCodes) and one text QI through paths."""
    rng = np.random.default_rng(seed)
    qis = []
    for name, low, high in (("age", 0, 100), ("zip", 10000, 10400), ("debt", -900, 900)):
        column = rng.integers(low, high, n)
        labels = tuple(sorted(set(map(str, column.tolist()))))
        numbers = np.array([int(v) for v in labels], dtype=np.int64)
        index = {v: i for i, v in enumerate(labels)}
        leaf = np.array([index[str(v)] for v in column.tolist()])
        qis.append(encode_codes(name, leaf, labels, hierarchies.decimal_levels(name, labels, numbers)))
    sex = rng.integers(0, 2, n)
    qis.append(encode_codes("sex", sex, ("F", "M"), Hierarchy.from_rows("sex", [["F", "*"], ["M", "*"]])))
    return EncodedTable(n, tuple(qis))


def _same_classes(a, b) -> bool:
    return (np.array_equal(a.sizes, b.sizes) and a.sizes.dtype == b.sizes.dtype
            and all((x is None and y is None) or (x is not None and y is not None and x.dtype == y.dtype
                                                  and np.array_equal(x, y)) for x, y in zip(a.codes, b.codes)))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_projection_counted_from_leaves_equals_the_direct_kernel_and_other_nodes_are_not_projected(seed):
    table = _encoded(seed)
    cache = RollupCache(table, min_saving=100)
    assert cache.active
    heights = table.heights
    checked = 0
    for node in itertools.product(*(range(h + 1) for h in heights)):
        varying = [i for i, (qi, level) in enumerate(zip(table.qis, node)) if qi.cards[level] > 1]
        reference = direct(table, node)
        if len(varying) > 1:  # not a projection: rolled up or counted, the same classes in some order
            assert np.array_equal(np.sort(cache.classes(node).sizes), np.sort(reference.sizes)), node
            continue
        assert _same_classes(cache.projection(node, varying[0] if varying else None), reference), node
        assert _same_classes(cache.classes(node), reference), node
        checked += 1
    assert checked > sum(heights)  # every QI's levels with the others at a single value, and more


def test_counting_a_countable_node_does_not_build_the_bottom_anchor_but_a_wide_one_does():
    table = _encoded(2)
    cache = RollupCache(table, min_saving=100)
    heights = table.heights
    countable = (1, 2, 2, 0)  # two or more QIs vary, and the key spans few values
    assert not kernel.count_limit(table.n) < np.prod([q.cards[x] for q, x in zip(table.qis, countable)])
    sizes = np.sort(cache.classes(countable).sizes)
    assert np.array_equal(sizes, np.sort(direct(table, countable).sizes))
    assert not cache._anchored and cache._anchor is None
    wide = (0, 0, 1, heights[3])  # a key span past the counting limit
    assert np.prod([q.cards[x] for q, x in zip(table.qis, wide)], dtype=float) > kernel.count_limit(table.n)
    assert np.array_equal(np.sort(cache.classes(wide).sizes), np.sort(direct(table, wide).sizes))
    assert cache._anchored


def test_level_codes_are_made_on_first_use_and_pickled_without_them():
    leaf = np.array([0, 2, 1, 2, 0, 3], dtype=np.uint8)
    maps = (np.array([0, 0, 1, 1], dtype=np.uint8), np.array([0, 0, 0, 0], dtype=np.uint8))
    codes = LevelCodes(leaf, maps)
    assert len(codes) == 3 and codes[0] is leaf and not codes._made
    assert np.array_equal(codes[1], [0, 1, 0, 1, 0, 1]) and list(codes._made) == [1]
    assert codes[1] is codes[1]  # kept, not remade
    before = len(pickle.dumps(LevelCodes(leaf, maps)))
    top = codes[-1]
    assert codes._made.keys() == {1, 2}
    assert np.array_equal(top, np.zeros(6)) and top.shape == leaf.shape and top.dtype == maps[1].dtype
    assert not top.flags.writeable  # one value at this level: a broadcast view of zeros, read-only
    with pytest.raises(ValueError):
        top[0] = 1
    data = pickle.dumps(codes)
    assert len(data) == before  # the made levels are not shipped
    copy = pickle.loads(data)
    assert copy._made == {}
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(copy, codes, strict=True))
    assert [c.tolist() for c in codes[1:]] == [c.tolist() for c in copy[1:]]
    with pytest.raises(IndexError):
        codes[3]


def test_an_encoded_table_with_level_codes_pickles_small_and_evaluates_the_same():
    table = _encoded(4)
    for qi in table.qis:
        list(qi.codes)  # make every level
    copy = pickle.loads(pickle.dumps(table))
    for a, b in zip(table.qis, copy.qis, strict=True):
        if isinstance(a.codes, LevelCodes):
            assert a.codes._made and not b.codes._made
        assert all(np.array_equal(x, y) for x, y in zip(a.codes, b.codes, strict=True))
    for node in [(0, 0, 0, 0), (1, 2, 1, 1), tuple(table.heights)]:
        assert _same_classes(direct(table, node), direct(copy, node))


def _made(prepared) -> set[tuple[int, int]]:
    return {(i, level) for i, qi in enumerate(prepared.encoded.qis) if isinstance(qi.codes, LevelCodes)
            for level in qi.codes._made}


def test_prepare_makes_only_the_levels_that_pre_pruning_evaluated(tmp_path):
    table = read_csv(_people(tmp_path, rows=2000))
    prepared = prepare(table, Config(qi=["age", "zip", "debt"], k=5, suppression=0.01, keep_unnamed=True))
    assert all(isinstance(qi.codes, LevelCodes) for qi in prepared.encoded.qis)
    evaluated = prepared.evaluator.state.evaluations
    touched = {(i, node[i]) for node in evaluated for i in range(len(node))}
    made = _made(prepared)
    assert made <= touched
    every = {(i, level) for i, h in enumerate(prepared.heights) for level in range(1, h + 1)}
    assert every - made  # some level was never asked for, and is not there


def test_prepare_of_a_large_table_counts_pre_pruning_from_leaves_and_makes_no_level(tmp_path):
    rows = 70_000  # past the roll-up cache's min_saving: single-QI nodes are projections
    rng = np.random.default_rng(5)
    path = tmp_path / "big.csv"
    lines = np.char.add(np.char.add(rng.integers(0, 100, rows).astype(str), ","),
                        rng.integers(10000, 10500, rows).astype(str))
    path.write_text("age,zip\n" + "\n".join(lines.tolist()) + "\n", encoding="utf-8")
    table = read_csv(path)
    prepared = prepare(table, Config(qi=["age", "zip"], k=3, suppression=0.0, keep_unnamed=True))
    assert prepared.encoded.n >= prepared.evaluator.state.class_tables.min_saving
    assert all(isinstance(qi.codes, LevelCodes) for qi in prepared.encoded.qis)
    assert _made(prepared) == set()
    plain = prepare(_without_numbers(table), Config(qi=["age", "zip"], k=3, suppression=0.0, keep_unnamed=True))
    assert plain.box == prepared.box


def test_the_encoded_qi_maps_leaves_to_levels_from_its_maps_without_the_rows():
    table = _encoded(6)
    for qi in table.qis:
        if isinstance(qi.codes, LevelCodes):
            plain = EncodedQI(qi.name, tuple(qi.codes), qi.labels)
            fresh = EncodedQI(qi.name, LevelCodes(qi.codes.leaf, qi.codes.maps), qi.labels)
            for level in range(qi.height + 1):
                assert np.array_equal(fresh.leaf_map(level), plain.leaf_map(level))
            assert not fresh.codes._made


def test_integer_labels_behave_as_the_tuple_of_their_strings():
    import pickle

    numbers = np.array([-10, -2, 0, 10, 7, 9], dtype=np.int64)  # string order
    labels = csvio.IntegerLabels(numbers)
    strings = ("-10", "-2", "0", "10", "7", "9")
    assert labels == strings and strings == labels and hash(labels) == hash(strings) and len(labels) == 6
    assert [labels[i] for i in range(-6, 6)] == list(strings + strings) and labels[1:3] == strings[1:3]
    for value in ("7", "-10", "0", "007", "-0", "+7", " 7", "x", "", "9" * 19, "9" * 25):
        assert (value in labels) == (value in strings), value
        if value in strings:
            assert labels.index(value) == strings.index(value)
        else:
            with pytest.raises(ValueError):
                labels.index(value)
    assert labels + ("*",) == strings + ("*",) and ("*",) + labels == ("*",) + strings
    assert np.asarray(labels, dtype=object).tolist() == list(strings) and list(labels) == list(strings)
    copy = pickle.loads(pickle.dumps(labels))
    assert copy == labels and isinstance(copy, csvio.IntegerLabels)
