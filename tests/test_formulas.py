"""Formula cells (issue 11, item 6) and the report's `verified` (item 5): a release keeps its data exact and
warns about cells a spreadsheet would run; --escape-formulas prefixes them with ' (a bijection, so the
independent check of the escaped file agrees); `verified` is written only after the check of the written
file ran, with that check's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgen.check.kanonymity import CheckResult
from kgen.cli.main import main
from kgen.io.formulas import escape, formula_columns, is_formula, unescape
from kgen.io.table import read_csv
from kgen.report import publish as publishing
from kgen.status import ReleaseCheckError

DATA = ("name,sex,age,note\n"
        "Ann,M,30,=HYPERLINK(\"http://x\")\nBob,M,31,+flu\nCid,F,40,@SUM(A1)\nDan,F,41,-cold\n"
        "Eve,F,47,'=quoted\nFay,M,35,-3\n")


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "notes.csv"
    path.write_text(DATA)
    return path


@pytest.mark.parametrize(("value", "expected"), [
    ("=1+1", True), ("+flu", True), ("-cold", True), ("@SUM(A1)", True), ("\tx", True), ("\rx", True),
    ("-3", False), ("+1.5", False), ("-2e3", False), ("flu", False), ("*", False), ("[-10, -1]", False),
    ("", False), ("'=x", False),
])
def test_formula_cells_are_those_a_spreadsheet_would_run(value: str, expected: bool) -> None:
    assert is_formula(value) is expected


@given(st.lists(st.text(alphabet="=+-@\t\r'ab1. ", max_size=4), max_size=12))
def test_escaping_is_a_bijection_on_values(values: list[str]) -> None:
    escaped = [escape(v) for v in values]
    assert [unescape(e) for e in escaped] == values
    assert len(set(escaped)) == len(set(values))  # distinct values stay distinct: classes are unchanged
    assert not any(is_formula(e) for e in escaped)


def test_a_release_with_formula_cells_is_exact_by_default_and_warned_about(capsys, table: Path,
                                                                          tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    code = main(["anonymize",
                 "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--sensitive", "note",
                 "--k", "2", "--output", str(output), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0
    assert "kgen: warning: the release holds 4 cells that a spreadsheet would run as formulas" in err
    assert read_csv(output).values["note"] == read_csv(table).values["note"]  # exact
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["formula_cells"] == {"cells": 4, "columns": ["note"], "escaped": False}
    assert any("formulas" in w for w in report["warnings"])


def test_strict_refuses_a_release_with_formula_cells(capsys, table: Path, tmp_path: Path) -> None:
    code = main(["anonymize",
                 "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--sensitive", "note",
                 "--k", "2", "--output", str(tmp_path / "out.csv"), "--strict"])
    assert code == 2 and "formulas" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_escape_formulas_prefixes_them_and_the_release_still_passes_its_check(capsys, table: Path,
                                                                              tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    code = main(["anonymize",
                 "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--sensitive", "note",
                 "--l", "2", "--k", "2", "--output", str(output), "--quiet", "--escape-formulas"])
    err = capsys.readouterr().err
    assert code == 0 and "formulas" not in err
    notes = read_csv(output).values["note"]
    assert notes == ["'=HYPERLINK(\"http://x\")", "'+flu", "'@SUM(A1)", "'-cold", "''=quoted", "-3"]
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["formula_cells"]["escaped"] is True and report["verified"]["passed"] is True


def test_escaped_values_that_would_collide_under_a_naive_escape_stay_distinct(capsys, tmp_path: Path) -> None:
    """`=a` and `'=a` are two values; a naive escape turns both into `'=a`, so the written file would hold
    one sensitive value where the release has two and distinct 2-diversity would fail on it (exit 4)."""
    source = tmp_path / "pairs.csv"
    source.write_text("g,s\nx,=a\nx,'=a\ny,=a\ny,'=a\n")
    output = tmp_path / "out.csv"
    code = main(["anonymize", "--keep-unnamed", str(source), "--qi", "g", "--sensitive", "s", "--l", "2", "--k", "2",
                 "--output", str(output), "--quiet", "--escape-formulas"])
    assert code == 0, capsys.readouterr().err
    assert read_csv(output).values["s"] == ["'=a", "''=a", "'=a", "''=a"]


def test_apply_escapes_formulas_too(capsys, table: Path, tmp_path: Path) -> None:
    saved = tmp_path / "first.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--sensitive", "note",
                 "--k", "2", "--output", str(saved), "--quiet"]) == 0
    output = tmp_path / "again.csv"
    assert main(["apply",
                 "--keep-unnamed", str(table), "--report", str(saved.with_suffix(".json")), "--output", str(output),
                 "--quiet", "--escape-formulas"]) == 0
    assert read_csv(output).values["note"][0] == "'=HYPERLINK(\"http://x\")"
    assert formula_columns(*(lambda t: (t.columns, t.rows()))(read_csv(output)))[0] == 0


def test_verified_is_written_after_the_check_with_its_figures(capsys, table: Path, tmp_path: Path,
                                                              monkeypatch) -> None:
    calls = []

    def check(path: Path, *_: object, **__: object) -> CheckResult:
        calls.append(Path(path).read_text())  # the temporary release exists when the check runs
        return CheckResult(rows=6, k=2, classes=12345, smallest_class=2, suppressed_rows=0, violating_rows=[],
                           allowed=0)

    monkeypatch.setattr(publishing, "verify_file", check)
    output = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--sensitive", "note",
                 "--k", "2", "--output", str(output), "--quiet"]) == 0
    assert len(calls) == 1 and calls[0] == output.read_text()
    verified = json.loads(output.with_suffix(".json").read_text())["verified"]
    assert verified["passed"] is True and verified["classes"] == 12345  # the figures of the check that ran


def test_a_failing_check_publishes_nothing(capsys, table: Path, tmp_path: Path, monkeypatch) -> None:
    def check(*_: object, **__: object) -> CheckResult:
        raise ReleaseCheckError("the release failed its independent check")

    monkeypatch.setattr(publishing, "verify_file", check)
    code = main(["anonymize", "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--k", "2",
                 "--output", str(tmp_path / "out.csv"), "--quiet"])
    assert code == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.csv"]


def test_the_real_check_fills_verified_with_the_written_files_figures(capsys, table: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--sensitive", "note",
                 "--k", "2", "--output", str(output), "--quiet", "--escape-formulas"]) == 0
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["verified"]["rows"] == 6 and report["verified"]["classes"] == report["classes"]
    assert report["verified"]["smallest_class"] == report["smallest_class"]
    assert report["verified"]["escaped_formulas_undone"] is True


def test_an_escaped_header_is_undone_before_the_check(capsys, tmp_path: Path) -> None:
    """A QI named `@site` is written as `'@site`; the check of the written file must read it back as `@site`."""
    source = tmp_path / "sites.csv"
    source.write_text("@site,age\na,30\na,31\nb,40\nb,41\n")
    output = tmp_path / "out.csv"
    code = main(["anonymize",
                 "--keep-unnamed", str(source), "--qi", "@site,age", "--k", "2", "--output", str(output), "--quiet",
                 "--escape-formulas"])
    assert code == 0, capsys.readouterr().err
    assert output.read_text().splitlines()[0] == "'@site,age"
