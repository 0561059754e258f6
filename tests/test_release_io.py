"""pandas out and `kgen.write_release` (kgen/report/publish.py): the release as a DataFrame, and the API's way to
write a release with its report as `kgen anonymize` does (atomic, checked on the written file, checksummed)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import kgen
from kgen import Config, anonymize, from_mapping, read_csv, to_pandas, write_release
from kgen.status import ReleaseCheckError

pd = pytest.importorskip("pandas")


def result() -> kgen.Result:
    table = from_mapping({"age": [str(20 + i % 30) for i in range(60)], "sex": ["F", "M", "M"] * 20,
                          "disease": [f"d{i % 4}" for i in range(60)]})
    return anonymize(table, Config(qi=["age", "sex"], k=4, suppression=0.05,
                                   hierarchies={"age": "intervals:5,10", "sex": "flat"}, keep_unnamed=True))


def test_release_as_a_dataframe_keeps_columns_order_and_labels() -> None:
    r = result()
    frame = to_pandas(r.release)
    assert list(frame.columns) == ["age", "sex", "disease"] and len(frame) == 60
    assert frame["age"].tolist() == list(r.release.column("age"))
    assert all(isinstance(v, str) for v in frame["age"])
    # and back: a DataFrame is accepted as input
    assert kgen.from_dataframe(frame).column("disease") == r.release.column("disease")


def test_the_release_table_gives_itself_as_a_dataframe() -> None:
    r = result()
    frame = r.release.to_pandas()
    assert frame.equals(to_pandas(r.release)) and frame["sex"].tolist() == list(r.release.column("sex"))


def test_write_release_writes_both_files_checked_and_checksummed(tmp_path: Path) -> None:
    r = result()
    report_path = write_release(r, tmp_path / "out.csv")
    assert report_path == tmp_path / "out.json"
    written = read_csv(tmp_path / "out.csv")
    assert written.columns == r.release.columns and list(written.column("age")) == list(r.release.column("age"))
    report = json.loads(report_path.read_text())
    digest = hashlib.sha256((tmp_path / "out.csv").read_bytes()).hexdigest()
    assert report["provenance"]["release"]["sha256"] == digest and report["verified"]["passed"]
    assert kgen.check_k_anonymity(written, ["age", "sex"], 4, 0.05).passed


def test_write_release_refuses_a_release_that_breaks_its_model(tmp_path: Path) -> None:
    r = result()
    r.report["models"] = [{"model": "k-anonymity", "k": 1000}]  # a release that cannot hold this
    with pytest.raises(ReleaseCheckError):
        write_release(r, tmp_path / "bad.csv")
    assert list(tmp_path.iterdir()) == []  # nothing published, no temporary file left


def test_write_release_never_overwrites_the_input(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("a,b\n" + "".join(f"{i % 5},{i % 2}\n" for i in range(40)), encoding="utf-8")
    r = anonymize(str(source), Config(qi=["a", "b"], k=2, hierarchies={"a": "decimal", "b": "flat"}, keep_unnamed=True))
    before = source.read_bytes()
    with pytest.raises(kgen.InputError, match="refusing to overwrite"):
        write_release(r, source, tmp_path / "r.json")
    assert source.read_bytes() == before
