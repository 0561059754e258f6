"""Sign-off (issue 24, item 2): `kgen check --report` checks every claim of the report read from the report,
refuses a weaker restatement, and `kgen apply` refuses a hierarchy that is not the one its report records.

Each test breaks one claim by one edit and re-signs the release (its SHA-256 written into the report), so only
the claim under test can catch it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kgen.check.claims import paths_digest
from kgen.cli.main import main
from kgen.report.provenance import hierarchy_digest
from lattice.hierarchy import Hierarchy

DISEASES = ["flu", "cold", "asthma", "ulcer"]


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A release of 120 rows (QIs age, sex, zip; identifier name; sensitive disease) with k = 3, l = 2 and a
    5 % suppression limit, and its report; age and sex from ARX files, zip from the mask builder."""
    monkeypatch.chdir(tmp_path)
    rows = ["age;sex;zip;name;disease"]
    for i in range(120):
        rows.append(f"{20 + (i * 7) % 50};{'MF'[i % 2]};{13050 + (i % 6) * 7};p{i};{DISEASES[(i * 5) % 4]}")
    rows.append("99;M;99999;outlier;flu")  # one row only suppression can protect
    Path("data.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    Path("age.csv").write_text("".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(0, 100)),
                               encoding="utf-8")
    Path("sex.csv").write_text("M;*\nF;*\n", encoding="utf-8")
    assert main(["anonymize",
                 "--keep-unnamed", "data.csv", "--qi", "age,sex,zip", "--identifier", "name", "--sensitive", "disease",
                 "--k", "3", "--l", "2", "--suppression", "0.05", "--hierarchy", "age=age.csv,sex=sex.csv,zip=mask",
                 "--algorithm", "ola", "--output", "rel.csv", "--report", "rel.json", "--quiet"]) == 0
    return tmp_path


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """Run `kgen` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def report() -> dict:
    return json.loads(Path("rel.json").read_text(encoding="utf-8"))


def rewrite(release_text: str | None = None, **changes: object) -> None:
    """Write a changed release and/or report, the report re-signed with the release's new SHA-256."""
    r = report()
    if release_text is not None:
        Path("rel.csv").write_text(release_text, encoding="utf-8")
    r.update(changes)
    r["provenance"]["release"]["sha256"] = hashlib.sha256(Path("rel.csv").read_bytes()).hexdigest()
    Path("rel.json").write_text(json.dumps(r), encoding="utf-8")


def test_an_untouched_release_passes_every_claim_of_its_report(signed: Path, capsys) -> None:
    code, out, err = run(capsys, "check", "rel.csv", "--report", "rel.json", "--original", "data.csv")
    assert code == 0, out + err
    assert out.startswith("PASS") and "FAIL" not in out
    for claim in ("identifier 'name': every cell is *", "'age': every released cell is one of the generalizations",
                  "'zip': every released cell is one of the generalizations", "input data.csv: SHA-256 matches",
                  "hierarchy file of 'age'", "l-diversity", "suppressed rows within the limit"):
        assert claim in out, claim
    assert report()["suppressed"] >= 1  # the outlier: the limit is exercised


def test_k_is_read_from_the_report_without_restating_it(signed: Path, capsys) -> None:
    """The report claims k = 20 for a 3-anonymous release: nothing on the command line says 20."""
    r = report()
    models = [dict(m, k=20) if m["model"] == "k-anonymity" else m for m in r["models"]]
    rewrite(models=models, k=20)
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "FAIL: " in out and "k=20" in out


def test_l_diversity_is_read_from_the_report(signed: Path, capsys) -> None:
    r = report()
    models = [dict(m, l=5) if m["model"] == "l-diversity" else m for m in r["models"]]
    rewrite(models=models)
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "break" in out and "l=5" in out


def test_an_identifier_in_clear_fails(signed: Path, capsys) -> None:
    lines = Path("rel.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(";") if ";" in lines[0] else lines[0].split(",")
    sep = ";" if ";" in lines[0] else ","
    cells = lines[5].split(sep)
    cells[header.index("name")] = "p4"
    lines[5] = sep.join(cells)
    rewrite("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "identifier 'name' is not * in 1 rows (first: row 5)" in out


def test_a_cell_that_is_no_label_of_the_node_level_fails(signed: Path, capsys) -> None:
    """Every `20-29` renamed `20-30`: the classes (and k, l) are unchanged, only the node check sees it."""
    r = report()
    assert r["node"]["age"] == 1
    rewrite(Path("rel.csv").read_text(encoding="utf-8").replace("20-29", "20-30"))
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "cells of 'age' are not labels of its hierarchy at level 1" in out
    assert "'20-30'" in out


def test_a_label_that_generalizes_no_input_value_fails_with_the_original(signed: Path, capsys) -> None:
    """`60-69` renamed `80-89`: a level-1 label of age.csv, but no age of the input is in the eighties."""
    rewrite(Path("rel.csv").read_text(encoding="utf-8").replace("60-69", "80-89"))
    assert run(capsys, "check", "rel.csv", "--report", "rel.json")[0] == 0  # a label of the hierarchy
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json", "--original", "data.csv")
    assert code == 1 and "cells of 'age' are not generalizations of an input value at level 1" in out


def test_a_raw_value_below_the_node_level_fails(signed: Path, capsys) -> None:
    text = Path("rel.csv").read_text(encoding="utf-8")
    sep = ";" if ";" in text.splitlines()[0] else ","
    rewrite(text.replace(f"20-29{sep}", f"23{sep}"))
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "cells of 'age' are not labels of its hierarchy at level 1" in out


def test_the_suppression_limit_is_read_from_the_report(signed: Path, capsys) -> None:
    rewrite(suppression_limit=0.0, max_suppressed_rows=0)
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "more than the limit of 0" in out


def test_a_hierarchy_file_changed_since_the_run_fails(signed: Path, capsys) -> None:
    Path("sex.csv").write_text("M;*\nF;*\nX;*\n", encoding="utf-8")
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json")
    assert code == 1 and "FAIL: the hierarchy file of 'sex' sex.csv has SHA-256" in out


def test_a_changed_input_does_not_match_its_report(signed: Path, capsys) -> None:
    Path("data.csv").write_text(Path("data.csv").read_text(encoding="utf-8") + "30;F;13050;q;flu\n",
                                encoding="utf-8")
    code, _, err = run(capsys, "check", "rel.csv", "--report", "rel.json", "--original", "data.csv")
    assert code == 1 and "does not match its report" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("weaker", [["--qi", "sex,age", "--k", "2"], ["--k", "2"], ["--suppression", "0.5"],
                                    ["--sensitive", "disease", "--l", "1"]])
def test_a_restatement_weaker_than_the_report_is_refused(signed: Path, capsys, weaker: list[str]) -> None:
    code, out, err = run(capsys, "check", "rel.csv", "--report", "rel.json", *weaker)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "weaker than the report" in err


def test_a_stronger_restatement_is_checked_too(signed: Path, capsys) -> None:
    assert run(capsys, "check", "rel.csv", "--report", "rel.json", "--k", "3")[0] == 0  # equal
    code, out, _ = run(capsys, "check", "rel.csv", "--report", "rel.json", "--k", "200")
    assert code == 1 and "PASS: rel.csv against its report" in out and "FAIL: rel.csv (as restated)" in out


def test_an_apply_report_is_checked_with_its_node(signed: Path, capsys) -> None:
    assert run(capsys, "apply",
               "--keep-unnamed", "data.csv", "--report", "rel.json", "--output", "app.csv", "--quiet")[0] == 0
    applied = json.loads(Path("app.json").read_text(encoding="utf-8"))
    assert applied["hierarchy_specs"] and applied["risk"]["population_uniqueness"]
    code, out, _ = run(capsys, "check", "app.csv", "--report", "app.json")
    assert code == 0 and "'age': every released cell is one of the labels of its hierarchy at level 1" in out, out


def test_apply_refuses_a_hierarchy_file_changed_since_the_run(signed: Path, capsys) -> None:
    """A level-1 label changed: the saved node still applies, so without the comparison this would publish."""
    Path("age.csv").write_text(Path("age.csv").read_text(encoding="utf-8").replace("20-29", "20-29y"),
                               encoding="utf-8")
    code, out, err = run(capsys, "apply",
                         "--keep-unnamed", "data.csv", "--report", "rel.json", "--hierarchy", "age=age.csv",
                         "--output", "app.csv", "--quiet")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not Path("app.csv").exists()
    assert "hierarchy file age.csv of 'age' has SHA-256" in err and "--allow-changed-hierarchies" in err
    code, _, err = run(capsys, "apply",
                       "--keep-unnamed", "data.csv", "--report", "rel.json", "--hierarchy", "age=age.csv",
                       "--output", "app.csv", "--quiet", "--allow-changed-hierarchies")
    assert code == 0, err
    warnings = json.loads(Path("app.json").read_text(encoding="utf-8"))["warnings"]
    assert any("age.csv" in w and "--allow-changed-hierarchies" in w for w in warnings)


def test_apply_refuses_the_changed_file_an_older_report_names(signed: Path, capsys) -> None:
    """An older report saves no hierarchy rows, only the file's name: the file is what apply reads."""
    r = report()
    del r["hierarchy_specs"]
    Path("old.json").write_text(json.dumps(r), encoding="utf-8")
    assert run(capsys, "apply",
               "--keep-unnamed", "data.csv", "--report", "old.json", "--output", "a1.csv", "--quiet")[0] == 0
    Path("age.csv").write_text(Path("age.csv").read_text(encoding="utf-8").replace("20-29", "20-29y"),
                               encoding="utf-8")
    code, _, err = run(capsys, "apply",
                       "--keep-unnamed", "data.csv", "--report", "old.json", "--output", "a2.csv", "--quiet")
    assert code == 2 and "'age'" in err and "age.csv" in err and not Path("a2.csv").exists()


def test_apply_refuses_hierarchy_rows_changed_in_the_report(signed: Path, capsys) -> None:
    r = report()
    rows = r["hierarchy_specs"]["age"]["rows"]
    r["hierarchy_specs"]["age"]["rows"] = [[row[0], row[1].replace("20-29", "20-29y"), row[2]] for row in rows]
    Path("edited.json").write_text(json.dumps(r), encoding="utf-8")
    code, _, err = run(capsys, "apply",
                       "--keep-unnamed", "data.csv", "--report", "edited.json", "--output", "a.csv", "--quiet")
    assert code == 2 and "hierarchy of 'age' saved in the report" in err


def test_the_checker_digest_of_a_hierarchy_is_the_report_builder_digest() -> None:
    h = Hierarchy.from_rows("a", [["1", "1-5", "*"], ["7", "6-9", "*"]])
    assert paths_digest(h) == hierarchy_digest(h)


def test_kgen_report_renders_an_apply_report_with_its_risk_section(signed: Path, capsys) -> None:
    assert run(capsys, "apply",
               "--keep-unnamed", "data.csv", "--report", "rel.json", "--output", "app.csv", "--quiet")[0] == 0
    code, out, err = run(capsys, "report", "app.json", "-o", "app.html")
    assert code == 0, err
    page = Path("app.html").read_text(encoding="utf-8")
    assert "Re-identification risk" in page and "prosecutor risk" in page and "population uniqueness" in page


def test_kgen_report_renders_a_mondrian_report(signed: Path, capsys) -> None:
    assert run(capsys, "mondrian",
               "--keep-unnamed", "data.csv", "--qi", "age,sex,zip", "--identifier", "name", "--sensitive", "disease",
               "--l", "2", "--k", "3", "--output", "m.csv", "--report", "m.json", "--quiet")[0] == 0
    code, _, err = run(capsys, "report", "m.json", "-o", "m.html")
    assert code == 0, err
    assert "Re-identification risk" in Path("m.html").read_text(encoding="utf-8")
    code, _, err = run(capsys, "check", "m.csv", "--report", "m.json")
    assert code == 2 and "mondrian-check" in err


def test_builder_hierarchies_are_rebuilt_on_the_original_with_its_missing_values(tmp_path: Path, monkeypatch,
                                                                                  capsys) -> None:
    """decimal on a column with two missing tokens (the run keeps the commoner one): the rebuilt hierarchy's
    digest is the recorded one, and every node level is checked."""
    monkeypatch.chdir(tmp_path)
    rows = ["age;zip"] + [f"{'?' if i % 17 == 0 else '' if i % 29 == 0 else 18 + (i * 13) % 70};"
                          f"{['13050', '13051', '14850'][i % 3]}" for i in range(200)]
    Path("d.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["anonymize",
                 "--keep-unnamed", "d.csv", "--qi", "age,zip", "--k", "4", "--suppression", "0.05", "--hierarchy",
                 "age=decimal,zip=mask", "--algorithm", "ola", "--output", "r.csv", "--quiet"]) == 0
    code, out, _ = run(capsys, "check", "r.csv", "--report", "r.json", "--original", "d.csv")
    assert code == 0 and "not checked" not in out and "'age': every released cell" in out, out
    code, out, _ = run(capsys, "check", "r.csv", "--report", "r.json")
    assert code == 0 and "not checked: node level of 'age': its hierarchy is a builder" in out


def test_t_closeness_of_a_release_without_its_suppressed_rows_is_named_not_checked(signed: Path, capsys) -> None:
    assert main(["anonymize",
                 "--keep-unnamed", "data.csv", "--qi", "age,sex,zip", "--identifier", "name", "--sensitive", "disease",
                 "--k", "3", "--t-closeness", "0.6", "--suppression", "0.05", "--hierarchy",
                 "age=age.csv,sex=sex.csv,zip=mask", "--algorithm", "ola", "--drop-suppressed", "--output", "d.csv",
                 "--report", "d.json", "--quiet"]) == 0
    code, out, _ = run(capsys, "check", "d.csv", "--report", "d.json")
    assert code == 0 and "not checked: t-closeness on 'disease': the file cannot show it" in out
    assert "1 suppressed rows within the limit" in out  # the rows left out are counted against the limit
