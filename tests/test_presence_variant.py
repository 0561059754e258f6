"""delta-presence in ARX's order of checks (`--delta-presence-variant arx`, issue 27): a hand example from the
two definitions, its monotonicity, the independent check of the variant a report claims (and a definition
check of an arx release failing with a line naming the empty population classes), apply's identical bytes, the
public report, run.toml, the Python API and the one-line refusals.

The example: twelve people, eight aged 20-29 (21, 21, 22, 22, 23, 23, 24, 24) and four 30-39 (31, 31, 32, 32);
the research subset holds the first 21 and the first 23. With DMIN, DMAX = 0.2, 0.3, at level 1 the class 20-29
holds 2 of 8 (0.25, within the bounds) and 30-39 none of 4: a population class without a subset row (share
0 < 0.2). The definition fails the node (a person aged 30-39 is known not to be in the subset); ARX, beside
k = 2, fails that class as "too small" (0 < 2 rows, suppressed at no cost) and releases the node. At level 2
the one class holds 2 of 12 (0.167 < 0.2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fitness.models import KAnonymity, in_company
from fitness.privacy.presence import DeltaPresence
from kgen import Config, anonymize, prepare
from kgen.check.kanonymity import check_k_anonymity
from kgen.check.rules import rules_from_models
from kgen.cli.main import main
from kgen.io.table import read_csv
from kgen.report.public import public_report
from lattice.errors import InputError

POPULATION = [21, 21, 22, 22, 23, 23, 24, 24, 31, 31, 32, 32]
HIERARCHY = "21;20-29;*\n22;20-29;*\n23;20-29;*\n24;20-29;*\n31;30-39;*\n32;30-39;*\n"
MEMBERS = (0, 4)  # the first 21 and the first 23


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "age.csv").write_text(HIERARCHY)
    (tmp_path / "population.csv").write_text("id,age\n" + "".join(f"{i},{a}\n" for i, a in enumerate(POPULATION)))
    (tmp_path / "subset.csv").write_text("id,age\n" + "".join(f"{i},{POPULATION[i]}\n" for i in MEMBERS))
    return {"dir": str(tmp_path), "population": str(tmp_path / "population.csv"),
            "subset": str(tmp_path / "subset.csv"), "hierarchy": str(tmp_path / "age.csv"),
            "release": str(tmp_path / "release.csv"), "report": str(tmp_path / "release.json")}


def people() -> dict[str, list[str]]:
    return {"age": [str(a) for a in POPULATION], "m": ["1" if i in MEMBERS else "0" for i in range(12)]}


def config(files: dict[str, str], variant: str, k: int, **more: object) -> Config:
    return Config(qi=["age"], k=k, allow_k1=True, hierarchies={"age": files["hierarchy"]},
                  delta_presence="0.2,0.3", research_subset="m", delta_presence_variant=variant, **more)


def feasible(files: dict[str, str], variant: str, k: int) -> list[bool]:
    evaluator = prepare(people(), config(files, variant, k), require_feasible=False).evaluator
    return [evaluator.evaluate(node).feasible for node in ((0,), (1,), (2,))]


def test_beside_k_the_arx_variant_lets_an_empty_population_class_pass_and_the_definition_does_not(files) -> None:
    assert feasible(files, "arx", 2) == [False, True, False]
    assert feasible(files, "definition", 2) == [False, False, False]


def test_without_a_minimal_class_size_both_variants_fail_the_empty_population_class(files) -> None:
    # k = 1 is no class size: ARX (DPresence alone) fails the node too
    assert feasible(files, "arx", 1) == feasible(files, "definition", 1) == [False, False, False]


def test_the_arx_variant_with_a_class_size_is_declared_not_monotone_as_the_example_shows(files) -> None:
    # level 1 is feasible and its generalization, level 2, is not (the empty class merges into 20-29's: 2/12)
    arx = in_company([KAnonymity(2), DeltaPresence(0.2, 0.3, "m", "arx")])[1]
    assert arx.beside_class_size == 2 and not arx.monotone and not arx.monotone_with_suppression
    alone = in_company([KAnonymity(1), DeltaPresence(0.2, 0.3, "m", "arx")])[1]
    assert alone.monotone and DeltaPresence(0.2, 0.3, "m").beside([KAnonymity(5)]).monotone
    problem = prepare(people(), config(files, "arx", 2), require_feasible=False).problem()
    assert not problem.monotone_feasibility


def test_the_model_refuses_an_unknown_variant() -> None:
    with pytest.raises(InputError, match="variant"):
        DeltaPresence(0.2, 0.3, "m", "arxish")


def anonymize_cli(files: dict[str, str], *extra: str) -> int:
    return main(["anonymize", files["population"], "--qi", "age", "--identifier", "id", "--hierarchy",
                 f"age={files['hierarchy']}", "--k", "2", "--output", files["release"], "--delta-presence",
                 "0.2,0.3", "--research-subset", files["subset"], *extra])


def test_an_arx_release_records_its_variant_is_checked_as_claimed_and_applied_to_the_same_bytes(files, capsys) -> None:
    assert anonymize_cli(files, "--delta-presence-variant", "arx") == 0
    out = capsys.readouterr().out
    assert "ARX's order of checks" in out and "weaker than the definition" in out
    assert "1 population classes without a subset row let pass beside class size 2" in out
    report = json.loads(Path(files["report"]).read_text())
    model = next(m for m in report["models"] if m["model"] == "delta-presence")
    assert (model["variant"], model["minimal_class_size"]) == ("arx", 2)
    assert report["delta_presence_variant"] == "arx" and report["node"] == {"age": 1}
    assert report["population_counts"]["population_classes_without_released_rows"] == 1
    assert report["verified"]["passed"] is True
    assert main(["check", files["release"], "--report", files["report"]]) == 0
    applied = str(Path(files["dir"]) / "applied.csv")
    assert main(["apply", files["population"], "--report", files["report"], "--output", applied]) == 0
    assert Path(applied).read_bytes() == Path(files["release"]).read_bytes()
    public = public_report(report)
    assert next(m for m in public["models"] if m["model"] == "delta-presence")["variant"] == "arx"


def test_a_definition_check_of_an_arx_release_fails_naming_the_empty_population_classes(files, capsys) -> None:
    assert anonymize_cli(files, "--delta-presence-variant", "arx") == 0
    capsys.readouterr()
    restated = ["--delta-presence", "0.2,0.3", "--research-subset", files["subset"]]
    assert main(["check", files["release"], "--report", files["report"], *restated,
                 "--delta-presence-variant", "definition"]) == 1
    out = capsys.readouterr().out
    assert "1 population classes have no released row and no research-subset row" in out and "(age=30-39)" in out
    # restating arx asks no more than the report: it passes
    assert main(["check", files["release"], "--report", files["report"], *restated,
                 "--delta-presence-variant", "arx"]) == 0


def test_the_default_refuses_the_example_and_its_advice_names_the_variant(files, capsys) -> None:
    assert anonymize_cli(files) == 3
    err = capsys.readouterr().err
    assert "no research-subset row" in err and "--delta-presence-variant arx" in err
    assert len(err.strip().splitlines()) == 1


def release_rules(files: dict[str, str], only_presence: bool) -> tuple[int, list, dict]:
    report = json.loads(Path(files["report"]).read_text())
    models = [m for m in report["models"] if m["model"] == "delta-presence" or not only_presence]
    k, rules = rules_from_models(models, dropped=False)
    return k, rules, report


def moved(files: dict[str, str], old: str, new: str, count: int = 1) -> Path:
    lines = Path(files["release"]).read_text().splitlines()
    at = [i for i, line in enumerate(lines) if line.endswith(old)][:count]
    broken = Path(files["dir"]) / "broken.csv"
    broken.write_text("\n".join(line.replace(old, new) if i in at else line for i, line in enumerate(lines)) + "\n")
    return broken


def test_the_arx_rule_passes_the_release_and_fails_it_moved_by_one_row(files) -> None:
    assert anonymize_cli(files, "--delta-presence-variant", "arx") == 0
    k, rules, report = release_rules(files, only_presence=True)
    assert k == 1 and check_k_anonymity(read_csv(files["release"]), ["age"], k, 0.0, rules, {"report": report}).passed
    # one row moved to 30-39: 20-29 holds 1 of 8 (0.125 < 0.2); 30-39 1 of 4 (0.25, within the bounds: its one
    # row is k's to fail, checked with the report's k-anonymity)
    broken = read_csv(moved(files, "20-29", "30-39"))
    assert check_k_anonymity(broken, ["age"], k, 0.0, rules, {"report": report}).violating_rows == [2]
    k, every, _ = release_rules(files, only_presence=False)
    assert k == 2 and check_k_anonymity(broken, ["age"], k, 0.0, every, {"report": report}).violating_rows == [1, 2]


def test_the_arx_rule_checks_the_class_size_its_pass_rests_on(files) -> None:
    assert anonymize_cli(files, "--delta-presence-variant", "arx") == 0
    k, rules, report = release_rules(files, only_presence=True)
    model = next(m for m in report["models"] if m["model"] == "delta-presence")
    _, claimed_more = rules_from_models([{**model, "minimal_class_size": 3}], dropped=False)
    release = read_csv(files["release"])
    assert check_k_anonymity(release, ["age"], 1, 0.0, rules, {"report": report}).passed
    assert not check_k_anonymity(release, ["age"], 1, 0.0, claimed_more, {"report": report}).passed
    _, definition = rules_from_models([{**model, "variant": "definition"}], dropped=False)
    result = check_k_anonymity(release, ["age"], 1, 0.0, definition, {"report": report})
    assert not result.passed and "(age=30-39)" in result.notes[0]


def test_run_toml_and_the_python_api_take_the_variant(files, capsys) -> None:
    toml = Path(files["dir"]) / "run.toml"
    toml.write_text(f'qi = ["age"]\nidentifier = ["id"]\nk = 2\ndelta-presence = "0.2,0.3"\n'
                    f'research-subset = "{files["subset"]}"\ndelta-presence-variant = "arx"\n'
                    f'hierarchy = ["age={files["hierarchy"]}"]\n')
    assert main(["anonymize", files["population"], "--config", str(toml), "--output", files["release"]]) == 0
    assert json.loads(Path(files["report"]).read_text())["node"] == {"age": 1}
    result = anonymize(people(), config(files, "arx", 2))
    assert result.report["node"] == {"age": 1}
    assert next(m for m in result.report["models"] if m["model"] == "delta-presence")["variant"] == "arx"
    toml.write_text(toml.read_text().replace('"arx"', '"arxish"'))
    assert main(["anonymize", files["population"], "--config", str(toml), "--output", files["release"]]) == 2
    assert "key 'delta-presence-variant': must be one of definition, arx" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--delta-presence-variant", "arx"], "--delta-presence-variant is for delta-presence"),
])
def test_the_variant_without_delta_presence_is_one_line_with_exit_2(files, capsys, argv, message) -> None:
    code = main(["anonymize", files["population"], "--qi", "age", "--identifier", "id", "--hierarchy",
                 f"age={files['hierarchy']}", "--k", "2", "--output", files["release"], *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(InputError, match="--delta-presence-variant is for delta-presence"):
        prepare(people(), Config(qi=["age"], k=2, hierarchies={"age": files["hierarchy"]},
                                 delta_presence_variant="arx"))


@pytest.mark.parametrize("drop", [False, True])
def test_a_class_whose_subset_rows_were_all_suppressed_is_not_an_empty_population_class(files, drop) -> None:
    """The subset holds 21, 23 and 31: at level 1 30-39's one subset row is below k = 2 and suppressed (written
    as * or left out). The checker reads the subset and tells that class from one that never had a subset row:
    the definition's release passes (it used to fail when the suppressed row was left out)."""
    Path(files["subset"]).write_text("id,age\n0,21\n4,23\n8,31\n")
    assert anonymize_cli(files, "--suppression", "0.34", *(["--drop-suppressed"] if drop else [])) == 0
    assert json.loads(Path(files["report"]).read_text())["verified"]["passed"] is True
    assert main(["check", files["release"], "--report", files["report"]]) == 0


def test_the_checker_refuses_a_research_subset_that_is_not_the_runs(files, capsys) -> None:
    Path(files["subset"]).write_text("id,age\n0,21\n4,23\n8,31\n")
    assert anonymize_cli(files, "--suppression", "0.34") == 0
    capsys.readouterr()
    Path(files["subset"]).write_text("id,age\n0,21\n4,23\n")
    assert main(["check", files["release"], "--report", files["report"]]) == 2
    err = capsys.readouterr().err
    assert "is not the research subset the release was made with" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_arxs_combinations_case_50_on_adult_through_the_command_line(adult_dir: Path, tmp_path: Path,
                                                                    capsys) -> None:
    """ARX's Combinations 50 (k = 5, 5 % suppression, ARX's monotonic entropy): the arx variant releases ARX's
    optimum, its check passes, a definition check fails naming the 43 empty population classes although 104
    rows were suppressed, and apply writes the same bytes."""
    from test_arx_cases_office import adult_subset, qis_without

    release, report = tmp_path / "release.csv", tmp_path / "release.json"
    subset = str(adult_subset(adult_dir, tmp_path))
    model = ["--delta-presence", "0.05,0.15", "--research-subset", subset]
    assert main(["anonymize", str(adult_dir / "adult.csv"), "--qi", ",".join(qis_without("occupation")), "--k", "5",
                 "--suppression", "0.05", "--metric", "arx-entropy", "--hierarchy-dir", str(adult_dir),
                 "--keep-unnamed", "--sensitive", "occupation", *model, "--delta-presence-variant", "arx",
                 "--output", str(release)]) == 0
    saved = json.loads(report.read_text())
    assert list(saved["node"].values()) == [1, 0, 1, 2, 2, 2, 2, 1] and saved["suppressed"] == 104
    assert main(["check", str(release), "--report", str(report)]) == 0
    capsys.readouterr()
    assert main(["check", str(release), "--report", str(report), *model, "--delta-presence-variant",
                 "definition"]) == 1
    assert "43 population classes have no released row and no research-subset row" in capsys.readouterr().out
    applied = tmp_path / "applied.csv"
    assert main(["apply", str(adult_dir / "adult.csv"), "--report", str(report), "--output", str(applied)]) == 0
    assert applied.read_bytes() == release.read_bytes()


def test_a_report_from_before_the_variant_is_read_as_the_definition(files, capsys) -> None:
    """A report without `variant` (and without the top-level key) is checked, restated and applied as the
    definition; restating arx against it asks less and is refused (exit 2)."""
    Path(files["subset"]).write_text("id,age\n0,21\n4,23\n8,31\n")
    assert anonymize_cli(files, "--suppression", "0.34") == 0
    report = json.loads(Path(files["report"]).read_text())
    for model in report["models"]:
        model.pop("variant", None)
    report.pop("delta_presence_variant")
    old = Path(files["dir"]) / "old.json"
    old.write_text(json.dumps(report))
    restated = ["--delta-presence", "0.2,0.3", "--research-subset", files["subset"]]
    assert main(["check", files["release"], "--report", str(old)]) == 0
    assert main(["check", files["release"], "--report", str(old), *restated]) == 0
    capsys.readouterr()
    assert main(["check", files["release"], "--report", str(old), *restated, "--delta-presence-variant", "arx"]) == 2
    assert "variant = arx" in capsys.readouterr().err
    applied = Path(files["dir"]) / "applied.csv"
    assert main(["apply", files["population"], "--report", str(old), "--output", str(applied)]) == 0
    assert applied.read_bytes() == Path(files["release"]).read_bytes()
