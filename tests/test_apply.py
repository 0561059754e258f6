"""`kgen apply` (issue 7): a node found once, applied to new data with the same columns and hierarchies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kgen.apply import apply, load_report
from kgen.check import SensitiveRule, check_k_anonymity
from kgen.cli import main
from kgen.table import read_csv
from lattice.errors import InputError

QIS = "sex,age,race,marital-status"


def write_rows(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def adult_parts(adult_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two disjoint parts of Adult: rows 1-3000 (to search) and 3001-4500 (new data)."""
    lines = adult_csv.read_text(encoding="utf-8").splitlines()
    folder = tmp_path_factory.mktemp("parts")
    return (write_rows(folder / "old.csv", lines[0], lines[1:3001]),
            write_rows(folder / "new.csv", lines[0], lines[3001:4501]))


@pytest.fixture(scope="module")
def found(adult_parts: tuple[Path, Path], adult_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report from anonymizing the first part with k = 5, distinct 2-diversity and 2 % suppression, with the
    hierarchy files copied to a folder that the test then deletes (apply must not need them)."""
    folder = tmp_path_factory.mktemp("found")
    hierarchies = folder / "hierarchies"
    hierarchies.mkdir()
    for name in ("sex", "age", "race", "marital-status"):
        shutil.copy(adult_dir / f"adult_hierarchy_{name}.csv", hierarchies)
    output = folder / "old_anonymized.csv"
    assert main(["anonymize", str(adult_parts[0]), "--qi", QIS, "--k", "5", "--sensitive", "salary-class", "--l", "2",
                 "--suppression", "0.02", "--hierarchy-dir", str(hierarchies), "--output", str(output),
                 "--quiet"]) == 0
    shutil.rmtree(hierarchies)
    return output.with_suffix(".json")


def test_apply_to_the_same_data_reproduces_the_release(adult_parts: tuple[Path, Path], found: Path,
                                                       tmp_path: Path) -> None:
    output = tmp_path / "again.csv"
    assert main(["apply", str(adult_parts[0]), "--report", str(found), "--output", str(output), "--quiet"]) == 0
    assert output.read_text() == found.with_suffix(".csv").read_text()
    applied = json.loads(output.with_suffix(".json").read_text())
    saved = json.loads(found.read_text())
    assert applied["holds"] and applied["node"] == saved["node"]
    assert applied["suppressed_rows"] == saved["suppressed_rows"]
    assert applied["metrics"] == pytest.approx(saved["metrics"])


def test_apply_to_new_data_suppresses_what_the_model_requires(adult_parts: tuple[Path, Path], found: Path,
                                                              tmp_path: Path) -> None:
    """The new part's output (with a limit that lets every breaking class be suppressed): every released class
    meets k = 5 and distinct 2-diversity, and the report says what was suppressed."""
    output = tmp_path / "new_anonymized.csv"
    code = main(["apply", str(adult_parts[1]), "--report", str(found), "--output", str(output), "--quiet",
                 "--suppression", "1"])
    report = json.loads(output.with_suffix(".json").read_text())
    assert code == 0 and report["holds"] and report["verified"]["passed"]
    assert report["suppressed"] <= report["max_suppressed_rows"]
    released = read_csv(output)
    rule = SensitiveRule("salary-class", l=2)
    assert check_k_anonymity(released, QIS.split(","), 5, 1.0, [rule]).passed
    verdict = check_k_anonymity(released, QIS.split(","), 5, 0.02, [rule])
    assert verdict.passed or not report["holds"]
    assert report["privacy"][0]["min_distinct_l"] >= 2 and report["smallest_class"] >= 5


def test_apply_exits_3_and_writes_nothing_when_the_limit_cannot_hold(
        adult_parts: tuple[Path, Path], found: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "strict.csv"
    code = main(["apply", str(adult_parts[1]), "--report", str(found), "--output", str(output), "--suppression", "0",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 3 and "does not hold within the suppression limit" in err and "nothing was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the CSV, the report, nor a temporary file


def test_builder_hierarchies_are_rebuilt_on_the_new_values(tmp_path: Path) -> None:
    """A decimal hierarchy is saved as its spec: new values of the same magnitude apply; a larger magnitude
    changes the height and is an input error naming the column."""
    old = write_rows(tmp_path / "old.csv", "age,s", [f"{20 + i % 40},{'ab'[i % 2]}" for i in range(60)])
    output = tmp_path / "old_out.csv"
    assert main(["anonymize", str(old), "--qi", "age", "--k", "3", "--output", str(output), "--quiet"]) == 0
    report = output.with_suffix(".json")
    assert json.loads(report.read_text())["hierarchy_specs"] == {"age": {"builder": "decimal"}}
    new = write_rows(tmp_path / "new.csv", "age,s", [f"{61 + i % 29},x" for i in range(30)])
    applied = apply(read_csv(new), str(report))
    assert applied.holds and applied.report["rows"] == 30
    wider = write_rows(tmp_path / "wider.csv", "age,s", ["5,x", "150,x", "20,x"])
    with pytest.raises(InputError, match="height") as error:
        apply(read_csv(wider), str(report))
    assert error.value.column == "age"


def test_hierarchy_override_and_values_missing_from_a_saved_hierarchy(adult_parts: tuple[Path, Path], found: Path,
                                                                      adult_dir: Path, tmp_path: Path) -> None:
    lines = adult_parts[1].read_text().splitlines()
    odd = write_rows(tmp_path / "odd.csv", lines[0], [lines[1].replace("Male", "Mole", 1), *lines[2:50]])
    with pytest.raises(InputError, match="Mole"):
        apply(read_csv(odd), str(found))
    applied = apply(read_csv(adult_parts[1]), str(found),
                    overrides={"sex": str(adult_dir / "adult_hierarchy_sex.csv")})
    assert applied.report["node"] == json.loads(found.read_text())["node"]


def test_bad_reports_and_inputs_are_one_line_errors(adult_parts: tuple[Path, Path], found: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"node": {}}), encoding="utf-8")
    lacking = write_rows(tmp_path / "lacking.csv", "sex,age", ["Male,39"])
    cases = [
        (str(adult_parts[1]), str(broken), str(tmp_path / "a.csv")),
        (str(adult_parts[1]), str(partial), str(tmp_path / "b.csv")),
        (str(adult_parts[1]), str(tmp_path / "absent.json"), str(tmp_path / "c.csv")),
        (str(lacking), str(found), str(tmp_path / "d.csv")),
        (str(adult_parts[1]), str(found), str(found)),  # would overwrite the report it reads
    ]
    for data, report, output in cases:
        capsys.readouterr()
        assert main(["apply", data, "--report", report, "--output", output, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("kgen: error: ") and err.count("\n") == 1, err
    with pytest.raises(InputError, match="lacks"):
        load_report(partial)
