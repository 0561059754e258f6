"""Parquet inputs: read with pyarrow straight into coded columns, giving the same release as the same data in
CSV; nulls are missing; a broken file is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import kgen  # noqa: E402
from kgen.cli.main import main  # noqa: E402
from kgen.io.table import CodedColumn, read_csv, read_table  # noqa: E402
from kgen.run.config import Config  # noqa: E402
from lattice.errors import InputError  # noqa: E402

CSV = "age,sex,zip,disease\n30,M,13053,flu\n31,M,13068,cold\n40,F,14853,flu\n41,F,14850,none\n47,F,14853,cold\n" \
      "33,M,13053,flu\n"


def write_both(tmp_path: Path) -> tuple[Path, Path]:
    csv = tmp_path / "people.csv"
    csv.write_text(CSV)
    rows = [line.split(",") for line in CSV.splitlines()]
    header, body = rows[0], rows[1:]
    arrays = {"age": pa.array([int(r[0]) for r in body], pa.int64())}
    arrays.update({name: pa.array([r[i] for r in body]) for i, name in enumerate(header) if i})
    parquet = tmp_path / "people.parquet"
    pq.write_table(pa.table(arrays), parquet)
    return csv, parquet


def test_parquet_round_trip_gives_coded_columns_equal_to_the_data(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": [30, 31, 30], "city": ["Oslo", "Bergen", "Oslo"]})
    path = tmp_path / "small.pq"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    table = read_table(path)
    assert table.columns == ("age", "city")
    assert all(isinstance(table.values[c], CodedColumn) for c in table.columns)
    assert list(table.column("age")) == ["30", "31", "30"]
    assert list(table.column("city")) == ["Oslo", "Bergen", "Oslo"]
    assert table.values["city"].labels == ("Bergen", "Oslo")  # sorted, as the CSV reader gives them
    assert table.to_pandas().astype(str).equals(frame.astype(str))


def test_parquet_detected_by_magic_bytes_without_the_suffix(tmp_path: Path) -> None:
    _, parquet = write_both(tmp_path)
    renamed = parquet.rename(tmp_path / "people.data")
    assert list(read_table(renamed).column("zip")) == list(read_csv(tmp_path / "people.csv").column("zip"))


def test_parquet_input_gives_the_same_release_as_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv, parquet = write_both(tmp_path)
    releases = []
    for source in (csv, parquet):
        out = tmp_path / f"{source.suffix[1:]}_release.csv"
        code = main(["anonymize",
                     "--keep-unnamed", str(source), "--qi", "age,sex,zip", "--k", "2", "--output", str(out), "--quiet"])
        assert code == 0, capsys.readouterr().err
        releases.append(out.read_text())
        assert json.loads(out.with_suffix(".json").read_text())["suppressed_rows"] is not None
    assert releases[0] == releases[1]
    assert main(["check", str(tmp_path / "parquet_release.csv"), "--qi", "age,sex,zip", "--k", "2"]) == 0


def test_api_accepts_a_parquet_path(tmp_path: Path) -> None:
    csv, parquet = write_both(tmp_path)
    config = Config(qi=["age", "sex", "zip"], k=2, keep_unnamed=True)
    from_parquet, from_csv = kgen.anonymize(str(parquet), config), kgen.anonymize(str(csv), config)
    assert from_parquet.release.rows() == from_csv.release.rows()
    assert from_parquet.report["node"] == from_csv.report["node"]


def test_parquet_nulls_are_missing(tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"zip": pa.array(["13053", None, "14853"]), "age": pa.array([1.5, None, 3.0])}), path)
    table = read_table(path)
    assert list(table.column("zip")) == ["13053", "", "14853"]
    assert list(table.column("age")) == ["1.5", "", "3"]


@pytest.mark.parametrize("content", [b"PAR1 this is not parquet", b"", b"age,zip\n1,2\n"])
def test_corrupt_parquet_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            content: bytes) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(content)
    with pytest.raises(InputError):
        read_table(path)
    assert main(["anonymize", "--keep-unnamed", str(path), "--qi", "zip", "--k", "2", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "broken.parquet" in err and "Parquet" in err


def test_parquet_folder_is_refused_like_a_csv_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "data.parquet"
    folder.mkdir()
    assert main(["anonymize", "--keep-unnamed", str(folder), "--qi", "zip", "--k", "2", "--quiet"]) == 2
    assert "folder" in capsys.readouterr().err


def test_missing_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _, parquet = write_both(tmp_path)
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(["anonymize", "--keep-unnamed", str(parquet), "--qi", "zip", "--k", "2", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "kgen[parquet]" in err


def test_risk_and_apply_read_parquet_like_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv, parquet = write_both(tmp_path)
    first = tmp_path / "first.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(csv), "--qi", "age,sex,zip", "--k", "2", "--output", str(first), "--quiet"]) == 0
    outputs = []
    for source in (csv, parquet):
        out = tmp_path / f"applied_{source.suffix[1:]}.csv"
        assert main(["apply",
                     "--keep-unnamed", str(source), "--report", str(first.with_suffix(".json")), "--output", str(out),
                     "--quiet"]) == 0, capsys.readouterr().err
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] == first.read_text()
    capsys.readouterr()
    risks = []
    for source in (csv, parquet):
        assert main(["risk", str(source), "--qi", "age,sex,zip"]) == 0
        risks.append(capsys.readouterr().out.split(source.name, 1)[-1])  # the figures after the file name
    assert risks[0] == risks[1] and "6 rows" in risks[0]


@pytest.mark.parametrize("kind", [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.uint64()])
def test_an_integer_parquet_column_reads_as_its_numbers_with_the_labels_of_their_text(tmp_path: Path, kind) -> None:
    import numpy as np

    values = [0, 7, 10, 9, 100, 19, 1, 7, 120] + ([-3, -10, -2] if not pa.types.is_unsigned_integer(kind) else [])
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"x": pa.array(values, kind), "t": pa.array([str(v) for v in values])}), path)
    table = read_table(path)
    column, text = table.column("x"), table.column("t")
    assert isinstance(column, CodedColumn) and column.numbers is not None
    assert column.labels == text.labels == tuple(sorted(str(v) for v in set(values)))  # string order, as text
    assert np.array_equal(column.codes, text.codes) and list(column) == [str(v) for v in values]
    assert [str(n) for n in column.numbers.tolist()] == list(column.labels)


def test_an_integer_parquet_column_with_nulls_or_huge_values_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"x": pa.array([1, None, 3], pa.int64()), "y": pa.array([1, 10**18, 2], pa.int64())}),
                   path)
    table = read_table(path)
    assert table.column("x").numbers is None and list(table.column("x")) == ["1", "", "3"]
    assert table.column("y").numbers is None and list(table.column("y")) == ["1", str(10**18), "2"]
