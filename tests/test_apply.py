"""`kgen apply` (issue 7): a node found once, applied to new data with the same columns and hierarchies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kgen.check.kanonymity import SensitiveRule, check_k_anonymity
from kgen.cli.main import main
from kgen.io.table import read_csv
from kgen.run.apply import apply, load_report
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
    assert main(["anonymize",
                 "--keep-unnamed",
                 str(adult_parts[0]), "--qi", QIS, "--k", "5", "--sensitive", "salary-class", "--l", "2",
                 "--suppression", "0.02", "--hierarchy-dir", str(hierarchies), "--output", str(output),
                 "--quiet"]) == 0
    shutil.rmtree(hierarchies)
    return output.with_suffix(".json")


def test_apply_to_the_same_data_reproduces_the_release(adult_parts: tuple[Path, Path], found: Path,
                                                       tmp_path: Path) -> None:
    output = tmp_path / "again.csv"
    assert main(["apply",
                 "--keep-unnamed",
                 str(adult_parts[0]), "--report", str(found), "--output", str(output), "--quiet"]) == 0
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
    code = main(["apply",
                 "--keep-unnamed", str(adult_parts[1]), "--report", str(found), "--output", str(output), "--quiet",
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
    code = main(["apply",
                 "--keep-unnamed",
                 str(adult_parts[1]), "--report", str(found), "--output", str(output), "--suppression", "0",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 3 and "does not hold within the suppression limit" in err and "nothing was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the CSV, the report, nor a temporary file


def test_builder_hierarchies_are_rebuilt_on_the_new_values(tmp_path: Path) -> None:
    """A decimal hierarchy is saved as its spec: new values of the same magnitude apply; a larger magnitude
    changes the height and is an input error naming the column."""
    old = write_rows(tmp_path / "old.csv", "age,s", [f"{20 + i % 40},{'ab'[i % 2]}" for i in range(60)])
    output = tmp_path / "old_out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(old), "--qi", "age", "--k", "3", "--output", str(output), "--quiet"]) == 0
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
        assert main(["apply", "--keep-unnamed", data, "--report", report, "--output", output, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("kgen: error: ") and err.count("\n") == 1, err
    with pytest.raises(InputError, match="lacks"):
        load_report(partial)


# --- a report is input: checked as strictly as the command line (issue 11, item 2) ------------------------------

SMALL = "name,sex,age,disease\nAnn,M,30,flu\nBob,M,31,cold\nCid,F,40,flu\nDan,F,41,cold\nEve,F,47,flu\nFay,M,35,cold\n"


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, dict]:
    """A small table and the report of anonymizing it (k = 2, sex and age, name an identifier)."""
    source = tmp_path / "small.csv"
    source.write_text(SMALL)
    output = tmp_path / "small_anonymized.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(source), "--qi", "sex,age", "--identifier", "name", "--sensitive", "disease",
                 "--k", "2", "--algorithm", "exhaustive", "--output", str(output), "--quiet"]) == 0
    return source, json.loads(output.with_suffix(".json").read_text())


def tamper(report: dict, change: str) -> dict:
    r = json.loads(json.dumps(report))
    if change == "no models":
        r["models"] = []
    elif change == "models not a list":
        r["models"] = {"model": "k-anonymity", "k": 2}
    elif change == "k 1":
        r["k"] = 1
        r["models"][0]["k"] = 1
    elif change == "k 0":
        r["k"] = 0
        r["models"][0]["k"] = 0
    elif change == "top k disagrees":
        r["k"] = 20
    elif change == "model k disagrees":
        r["models"][0]["k"] = 1
    elif change in ("level -1", "level 1.7", "level text", "level true", "level 9", "level null"):
        r["node"]["age"] = {"level -1": -1, "level 1.7": 1.7, "level text": "x", "level true": True, "level 9": 9,
                            "level null": None}[change]
    elif change == "level missing":
        del r["node"]["age"]
    elif change == "l added":
        r["models"].append({"model": "l-diversity", "variant": "distinct", "l": 2, "sensitive": "disease"})
    elif change == "model on an unknown column":
        r["l"] = 2
        r["models"].append({"model": "l-diversity", "variant": "distinct", "l": 2, "sensitive": "name"})
    elif change == "unknown model":
        r["models"].append({"model": "no-such-model", "d": 1})  # delta-presence is a model since issue 27
    elif change == "suppression limit text":
        r["suppression_limit"] = "0.1"
    elif change == "quasi-identifiers empty":
        r["quasi_identifiers"] = []
    return r


TAMPERED = {
    "no models": "key 'models'", "models not a list": "key 'models'", "k 1": "--allow-k1", "k 0": "key 'models[0].k'",
    "top k disagrees": "key 'k'", "model k disagrees": "key 'k'", "level -1": "key 'node.age'",
    "level 1.7": "key 'node.age'", "level text": "key 'node.age'", "level true": "key 'node.age'",
    "level 9": "key 'node.age'", "level null": "key 'node.age'", "level missing": "key 'node.age'",
    "l added": "key 'l'", "model on an unknown column": "key 'models[1].sensitive'",
    "unknown model": "key 'models[1].model'", "suppression limit text": "key 'suppression_limit'",
    "quasi-identifiers empty": "key 'quasi_identifiers'",
}


@pytest.mark.parametrize("change", sorted(TAMPERED))
def test_a_tampered_report_is_refused_with_one_line_naming_the_key(small, tmp_path: Path, capsys,
                                                                   change: str) -> None:
    source, report = small
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(tamper(report, change)))
    out = tmp_path / "out"
    out.mkdir()
    code = main(["apply",
                 "--keep-unnamed", str(source), "--report", str(path), "--output", str(out / "new.csv"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"kgen: error: {path}") and TAMPERED[change] in err and len(err.strip().splitlines()) == 1
    assert list(out.iterdir()) == []
    with pytest.raises(InputError, match=TAMPERED[change].replace("[", r"\[").replace("]", r"\]")):
        apply(read_csv(source), tamper(report, change))  # the Python API refuses it too


def test_allow_k1_applies_a_k1_report(small, tmp_path: Path, capsys) -> None:
    source, report = small
    r = tamper(report, "k 1")
    r["node"] = {"sex": 0, "age": 0}
    path = tmp_path / "k1.json"
    path.write_text(json.dumps(r))
    output = tmp_path / "released.csv"
    assert main(["apply",
                 "--keep-unnamed", str(source), "--report", str(path), "--output", str(output), "--quiet"]) == 2
    assert not output.exists()
    assert main(["apply",
                 "--keep-unnamed",
                 str(source), "--report", str(path), "--output", str(output), "--quiet", "--allow-k1"]) == 0
    assert read_csv(output).values["age"] == ["30", "31", "40", "41", "47", "35"]


def test_a_level_above_the_new_datas_height_is_refused(small, tmp_path: Path, capsys) -> None:
    source, report = small
    r = json.loads(json.dumps(report))
    r["node"]["sex"] = 2  # sex's flat hierarchy has height 1
    path = tmp_path / "high.json"
    path.write_text(json.dumps(r))
    assert main(["apply",
                 "--keep-unnamed", str(source), "--report", str(path), "--output", str(tmp_path / "o.csv")]) == 2
    assert "key 'node.sex' is level 2, above the top (1)" in capsys.readouterr().err


def test_exit_3_on_small_data_writes_nothing(small, tmp_path: Path, capsys) -> None:
    source, report = small
    r = json.loads(json.dumps(report))
    r["node"] = {"sex": 0, "age": 0}  # every class has one row; k = 2 and no suppression allowed
    path = tmp_path / "low.json"
    path.write_text(json.dumps(r))
    out = tmp_path / "out"
    out.mkdir()
    code = main(["apply",
                 "--keep-unnamed",
                 str(source), "--report", str(path), "--output", str(out / "new.csv"), "--suppression", "0"])
    assert code == 3 and "nothing was written" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_apply_warns_about_new_unnamed_identifier_columns(small, tmp_path: Path, capsys) -> None:
    source, report = small
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(report))
    newer = tmp_path / "newer.csv"
    lines = SMALL.splitlines()
    newer.write_text("\n".join([lines[0] + ",email"] + [f"{line},p{i}@x.org" for i, line in enumerate(lines[1:])])
                     + "\n")
    output = tmp_path / "o.csv"
    assert main(["apply", "--keep-unnamed", str(newer), "--report", str(path), "--output", str(output), "--quiet"]) == 0
    assert "kgen: warning: column 'email' is kept" in capsys.readouterr().err
    assert [u["column"] for u in json.loads(output.with_suffix(".json").read_text())["unnamed_columns"]] == ["email"]
    assert main(["apply",
                 "--keep-unnamed",
                 str(newer), "--report", str(path), "--output", str(tmp_path / "p.csv"), "--strict"]) == 2
