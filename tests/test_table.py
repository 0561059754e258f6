"""The columnar table (issue 11, item 4): CSV files are read into dictionary-encoded columns, and prepare
and release work on the codes, never on a Python string per row."""

from __future__ import annotations

import numpy as np
import pytest

from kgen.io.table import CodedColumn, column_codes, from_mapping, read_csv
from kgen.run.config import Config
from kgen.run.pipeline import release
from kgen.run.prepare import prepare
from kgen.run.values import normalize, normalize_codes


@pytest.fixture
def people(tmp_path):
    path = tmp_path / "people.csv"
    rows = [(20 + i % 7, 13000 + i % 3, "MF"[i % 2], f"n{i}") for i in range(40)]
    path.write_text("age,zip,sex,name\n" + "".join(f"{a},{z},{s},{n}\n" for a, z, s, n in rows), encoding="utf-8")
    return path, rows


def test_read_csv_gives_coded_columns_with_sorted_labels_and_narrow_codes(people):
    path, rows = people
    table = read_csv(path)
    age = table.values["age"]
    assert isinstance(age, CodedColumn)
    assert age.labels == tuple(sorted({str(r[0]) for r in rows}))
    assert age.codes.dtype == np.uint8  # 7 distinct values: one byte a row
    assert list(age) == [str(r[0]) for r in rows]
    assert table.rows() == [[str(v) for v in r] for r in rows]


def test_a_coded_column_behaves_as_a_sequence_of_strings():
    column = CodedColumn(np.array([1, 0, 1], dtype=np.uint8), ("a", "b"))
    assert len(column) == 3 and column[0] == "b" and list(column[1:]) == ["a", "b"]
    assert column == ["b", "a", "b"] and ["b", "a", "b"] == column and column != ["b", "a"]
    assert "a" in column and "c" not in column
    assert CodedColumn(np.array([0]), ("a", "b")).__contains__("b") is False  # a label no row holds
    column[1] = "c"
    assert list(column) == ["b", "c", "b"] and column.labels == ("a", "b", "c")


def test_prepare_encodes_from_the_codes_and_shares_level_0(people):
    path, _ = people
    table = read_csv(path)
    prepared = prepare(table, Config(qi=("age", "zip"), k=2, keep_unnamed=True))
    for qi in prepared.encoded.qis:
        assert np.shares_memory(qi.codes[0], table.values[qi.name].codes)  # no per-row work at level 0
        assert isinstance(prepared.qi_values[qi.name], CodedColumn)


def test_normalize_on_codes_merges_blanks_and_missing_tokens_like_normalize_on_strings():
    values = [" 5", "5", "?", "", "NA", "?", "7 ", "x"]
    codes, labels = column_codes(values)
    new_codes, new_labels, token = normalize_codes(codes, labels, ("", "?", "NA"))
    expected, expected_token = normalize(values, ("", "?", "NA"))
    assert token == expected_token == "?"
    assert [new_labels[c] for c in new_codes] == expected == ["5", "5", "?", "?", "?", "?", "7", "x"]
    assert list(new_labels) == sorted(set(new_labels))


def test_release_of_a_csv_table_is_coded_and_equals_the_release_of_the_same_table_as_lists(people):
    path, _ = people
    config = Config(qi=("age", "zip"), identifiers=("name",), k=3, suppression=0.1, keep_unnamed=True)
    coded = prepare(read_csv(path), config)
    plain = prepare(from_mapping({c: list(read_csv(path).values[c]) for c in ("age", "zip", "sex", "name")}), config)
    node = coded.heights
    suppressed = np.zeros(40, dtype=bool)
    suppressed[[3, 9]] = True
    for drop in (False, True):
        a, b = release(coded, node, suppressed, drop), release(plain, node, suppressed, drop)
        assert all(isinstance(v, CodedColumn) for c, v in a.values.items() if c != "sex" or not drop)
        assert a.rows() == b.rows()
        assert a.n == (38 if drop else 40)


def test_writing_a_table_in_chunks_gives_the_same_bytes_as_one_string(tmp_path, monkeypatch):
    import io

    from kgen.io import table as table_module
    from kgen.io.csvio import format_csv

    monkeypatch.setattr(table_module, "ITER_CHUNK", 3)  # several chunks on a small table
    path = tmp_path / "q.csv"
    path.write_text('a;b\n1;"x;y"\n2;"two\nlines"\n3;\n4; pad \n5;"q""uote"\n6;z\n7;z\n', encoding="utf-8")
    table = read_csv(path)
    buffer = io.StringIO()
    table.write_csv(buffer)
    assert buffer.getvalue() == format_csv(table.columns, [list(r) for r in zip(*table.values.values())], ";")
    assert buffer.getvalue() == path.read_text(encoding="utf-8")


def _both_readers(path, monkeypatch, separator=None):
    """read_coded with pyarrow's reader (when it takes the file) and with the csv module only: (fast, slow),
    each a CodedCSV or the InputError message."""
    from kgen.io import csvio
    from lattice.errors import InputError

    def read():
        try:
            return csvio.read_coded(path, separator)
        except InputError as error:
            return str(error)

    fast = read()
    with monkeypatch.context() as patch:
        patch.setattr(csvio, "_read_coded_arrow", lambda *args: None)
        slow = read()
    return fast, slow


def _same(fast, slow):
    if isinstance(slow, str) or isinstance(fast, str):
        return fast == slow
    return (fast.header, fast.labels, fast.rows, fast.separator) == (slow.header, slow.labels, slow.rows,
                                                                     slow.separator) and all(
        a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(fast.codes, slow.codes))


FILES = {
    "plain": b"a,b\n1,x\n2,y\n1,x\n",
    "crlf and cr": b"a,b\r\n1,x\r\n2,y\r3,z",
    "bom": b"\xef\xbb\xbfa;b\n1;2\n",
    "blank lines": b"\n\na,b\n\n1,2\n\n3,4\n\n",
    "line of blanks": b"a,b\n1,2\n   \n3,4\n",
    "blank before header": b"  \na,b\n1,2\n",
    "one column": b"a\n1\n\n \n2\n",
    "separators only": b"a,b,c\n,,\n1,,3\n",
    "leading zeros and spaces": b"zip, age \n007, 1\n7,01\n 7,1 \n",
    "header only": b"a,b\n",
    "header without newline": b"a,b",
    "empty": b"",
    "only blanks": b"\n \n\n",
    "ragged": b"a,b\n1,2\n3\n",
    "too many": b"a,b\n1,2,3\n",
    "duplicate header": b"a,a\n1,2\n",
    "trailing separator": b"a,b,\n1,2,\n",
    "nameless column": b"a,,b\n1,2,3\n",
    "quoted": b'a,b\n"1,5",x\n2,"y ""z"""\n',
    "quote inside a field": b'a,b\n1,x"y\n',
    "bad quoting": b'a,b\n"1"x,2\n',
    "unclosed quote": b'a,b\n"1,2\n3,4\n',
    "latin-1": b"a,b\n1,caf\xe9\n",
    "latin-1 header": b"caf\xe9,b\n1,2\n",
    "surrogate in utf-8": b"a,b\n1,\xed\xa0\x80\n",
    "overlong utf-8": b"a,b\n1,\xc0\x80\n",
    "nul byte": b"a,b\n1,\x00\n",
    "utf-8": "a,b\n1,café\n2,日本\n3,café\n".encode(),
    "bom in the middle": "a,b\n1,\ufeffx\n".encode(),
    "semicolon": b"a;b\n1,5;2\n3,5;4\n",
    "tab": b"a\tb\n1\t2\n",
    "pipe": b"a|b\n1|2\n",
    "unicode order": "a\nb\nB\n\u00e9\n\U0001f600\nz\n".encode(),
    "doubled quotes": b'a,b\n"x""y",""\n"""",2\n"a""",3\n',
    "quoted header": b'"a,1","b"\n1,2\n',
    "quoted separator then text": b'a,b\n"1,"x,2\n',
    "quote then blank": b'a,b\n"1" ,2\n',
    "quoted line break": b'a,b\n"1\n2",3\n4,5\n',
    "quoted crlf release": b'a,b\r\n"[0, 9]",1\r\n"[0, 9]",2\r\n',
    "unclosed doubled": b'a,b\n1,"2""\n',
    "bom then quote": b'\xef\xbb\xbf"a",b\n"1",2\n',
    "many distinct": ("a,b\n" + "".join(f"{i},{i % 300}\n" for i in range(70_000))).encode(),
}


@pytest.mark.parametrize("case", sorted(FILES))
def test_pyarrow_reader_gives_the_same_columns_or_message_as_the_csv_module(tmp_path, monkeypatch, case):
    path = tmp_path / "data.csv"
    path.write_bytes(FILES[case])
    fast, slow = _both_readers(path, monkeypatch)
    assert _same(fast, slow), (fast, slow)


def test_pyarrow_reader_takes_plain_files_and_leaves_the_others_to_the_csv_module(tmp_path):
    from kgen.io import csvio

    def taken(data: bytes) -> bool:
        path = tmp_path / "data.csv"
        path.write_bytes(data)
        with open(path, "rb") as raw:
            head = csvio._head_text(raw, str(path))
            return csvio._read_coded_arrow(raw, head, ",", str(path)) is not None

    assert taken(FILES["plain"]) and taken(FILES["blank lines"]) and taken(FILES["bom"])
    assert taken(FILES["quoted"]) and taken(FILES["doubled quotes"]) and taken(FILES["quoted crlf release"])
    assert not taken(FILES["ragged"]) and not taken(FILES["latin-1"]) and not taken(FILES["line of blanks"])
    assert not taken(FILES["nul byte"]) and not taken(FILES["quote inside a field"])
    assert not taken(FILES["bad quoting"]) and not taken(FILES["quoted separator then text"])
    assert not taken(FILES["unclosed quote"]) and not taken(FILES["quoted line break"])


def test_a_field_beyond_the_csv_modules_limit_is_refused_by_both_readers(tmp_path, monkeypatch):
    import csv

    path = tmp_path / "long.csv"
    path.write_bytes(b"a,b\n1," + b"x" * (csv.field_size_limit() + 1) + b"\n")
    fast, slow = _both_readers(path, monkeypatch)
    assert isinstance(slow, str) and fast == slow


@pytest.mark.parametrize("block", [1, 2, 3, 5])
def test_the_quote_check_gives_the_same_verdict_whatever_the_block_size(tmp_path, monkeypatch, block):
    from kgen.io import csvio

    def verdicts():
        out = {}
        for case, data in FILES.items():
            path = tmp_path / "data.csv"
            path.write_bytes(data[:2000])
            with open(path, "rb") as raw:
                out[case] = csvio._well_quoted(raw, ",")
        return out

    whole = verdicts()
    monkeypatch.setattr(csvio, "QUOTE_BLOCK", block)
    assert verdicts() == whole
    assert whole["quoted"] and whole["doubled quotes"] and whole["plain"]


def test_pyarrow_reader_in_many_small_blocks_gives_the_same_columns(tmp_path, monkeypatch):
    from kgen.io import csvio

    monkeypatch.setattr(csvio, "ARROW_BLOCK", 64)  # every block its own dictionary: they must be unified
    for case in ("plain", "quoted", "doubled quotes", "unicode order", "crlf and cr", "blank lines", "many distinct"):
        path = tmp_path / "data.csv"
        path.write_bytes(FILES[case])
        fast, slow = _both_readers(path, monkeypatch)
        assert not isinstance(fast, str) and _same(fast, slow), case


@pytest.mark.parametrize("seed", range(6))
def test_decimal_hierarchy_of_integers_equals_the_builders(seed):
    from kgen.io.hierarchies import decimal_of_integers
    from lattice.builders import decimal_hierarchy

    rng = np.random.default_rng(seed)
    span = [10, 1000, 10**6, 10**17][seed % 4]
    values = [str(v) for v in rng.integers(-span if seed % 2 else 0, span, 300)] + ["0", "007", "-0"][: seed % 4]
    fast, slow = decimal_of_integers("c", values), decimal_hierarchy("c", values)
    assert fast is not None
    assert (fast.name, fast.height, fast.source) == (slow.name, slow.height, slow.source)
    assert list(fast.paths.items()) == list(slow.paths.items())  # the same tree: a path per value, in order


def test_decimal_hierarchy_leaves_everything_but_plain_integers_to_the_builder():
    from kgen.io.hierarchies import decimal_of_integers

    for values in (["1.5", "2"], ["+3"], ["1e3"], [" 4"], ["x"], ["1" * 19], []):
        assert decimal_of_integers("c", values) is None
