"""The models of issue 27 through every command: anonymize (CLI, run.toml, Config), the summary, the report,
`kgen check` (the independent rules, passing the release and failing a stricter model or a release off by
one row), `kgen apply` (the same release from the saved report) and `kgen risk` (the same mean risk)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kgen import Config, anonymize, check_k_anonymity, from_mapping
from kgen.check.rules import rules_from_models
from kgen.cli.main import main

QIS = ["sex", "race", "marital-status", "education"]
BASE = ["--qi", ",".join(QIS), "--k", "1", "--sensitive", "salary-class", "--suppression", "0.02"]

# (name, flags of the run, flags of a stricter check that the release fails, the description's model)
MODELS = [
    ("average-risk", ["--max-average-risk", "0.02"], ["--max-average-risk", "0.001"], "average-risk"),
    ("k-map", ["--k-map", "20", "--sampling-fraction", "0.2"], ["--k-map", "200", "--sampling-fraction", "0.5"],
     "k-map"),
    ("beta-basic", ["--beta-likeness", "0.6"], ["--beta-likeness", "0.01"], "beta-likeness"),
    ("beta-enhanced", ["--beta-likeness", "0.6", "--beta-variant", "enhanced"],
     ["--beta-likeness", "0.01", "--beta-variant", "enhanced"], "beta-likeness"),
    ("delta-disclosure", ["--delta-disclosure", "1.2"], ["--delta-disclosure", "0.01"], "delta-disclosure"),
    ("sample-uniqueness", ["--max-sample-uniqueness", "0.002"], ["--max-sample-uniqueness", "0.0001"],
     "sample-uniqueness"),
]


SUMMARY = {"average-risk": "average re-identification risk <=", "k-map": "-map (sampling fraction",
           "beta-likeness": "beta-likeness on salary-class", "delta-disclosure": "delta-disclosure privacy on",
           "sample-uniqueness": "sample uniqueness <= 0.002"}


@pytest.mark.parametrize(("name", "flags", "stricter", "model"), MODELS, ids=[m[0] for m in MODELS])
def test_each_model_runs_reports_checks_and_applies(adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture, name: str, flags: list[str],
                                                    stricter: list[str], model: str) -> None:
    output = tmp_path / "out.csv"
    code = main(["anonymize",
                 "--keep-unnamed", "--allow-k1",
                 str(adult_sample), *BASE, "--hierarchy-dir", str(adult_dir), "--algorithm",
                 "bestfirst", "--output", str(output), *flags])
    assert code == 0
    shown = capsys.readouterr().out
    report = json.loads(output.with_suffix(".json").read_text())
    described = [m for m in report["models"] if m["model"] == model]
    assert len(described) == 1 and report["verified"]["passed"] is True
    top = flags[0][2:].replace("-", "_")
    assert report[top] == pytest.approx(float(flags[1]))
    assert SUMMARY[model] in shown  # the summary line names the model
    assert main(["check", str(output), *BASE, *flags]) == 0
    assert main(["check", str(output), *BASE, *stricter]) == 1
    again = tmp_path / "again.csv"
    assert main(["apply",
                 "--keep-unnamed",
                 str(adult_sample), "--report", str(output.with_suffix(".json")), "--output", str(again),
                 "--allow-k1", "--quiet"]) == 0
    assert again.read_bytes() == output.read_bytes()
    assert json.loads(again.with_suffix(".json").read_text())["models"] == report["models"]


def test_the_average_risk_of_a_release_is_kgen_risks_mean(adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", "--allow-k1",
                 str(adult_sample), *BASE, "--hierarchy-dir", str(adult_dir), "--algorithm",
                 "bestfirst", "--output", str(output), "--max-average-risk", "0.02", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["risk", str(output), "--qi", ",".join(QIS), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    report = json.loads(output.with_suffix(".json").read_text())
    assert figures["prosecutor"]["mean"] == report["risk"]["prosecutor"]["mean"] <= 0.02
    assert figures["prosecutor"]["mean"] == figures["classes"] / figures["rows_released"]


@pytest.mark.parametrize(("field", "value"), [("max_average_risk", 0.02), ("k_map", 20), ("beta_likeness", 0.6),
                                              ("delta_disclosure", 1.2), ("max_sample_uniqueness", 0.002)])
def test_each_model_is_a_config_field_and_a_run_toml_key(adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                                         field: str, value: float) -> None:
    extra = {"sampling_fraction": 0.2} if field == "k_map" else {}
    config = Config(qi=QIS, k=1, sensitive=["salary-class"], suppression=0.02, algorithm="bestfirst",
                    hierarchy_dir=str(adult_dir), **{field: value}, **extra, keep_unnamed=True, allow_k1=True)
    result = anonymize(str(adult_sample), config)
    assert result.report[field] == value
    toml = tmp_path / "run.toml"
    lines = [f'qi = {json.dumps(QIS)}', "k = 1", "allow-k1 = true", 'sensitive = ["salary-class"]',
             "suppression = 0.02",
             'algorithm = "bestfirst"', f'hierarchy_dir = "{adult_dir}"', f"{field} = {value}"]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    toml.write_text("\n".join(lines) + "\n")
    output = tmp_path / "toml.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(adult_sample), "--config", str(toml), "--output", str(output), "--quiet"]) == 0
    assert json.loads(output.with_suffix(".json").read_text())["models"] == result.report["models"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--max-average-risk", "0"], "max-average-risk"),
    (["--max-average-risk", "1.5"], "max-average-risk"),
    (["--k-map", "5"], "--sampling-fraction"),
    (["--k-map", "0", "--sampling-fraction", "0.1"], "k of k-map"),
    (["--k-map", "5", "--sampling-fraction", "1.5"], "sampling fraction"),
    (["--beta-likeness", "0"], "beta"),
    (["--delta-disclosure", "-1"], "delta"),
])
def test_bad_parameters_are_one_line_input_errors(adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture, flags: list[str],
                                                  message: str) -> None:
    code = main(["anonymize", "--allow-k1",
                 "--keep-unnamed", str(adult_sample), *BASE, "--hierarchy-dir", str(adult_dir), "--output",
                 str(tmp_path / "o.csv"), *flags])
    error = capsys.readouterr().err
    assert code == 2 and message in error and "Traceback" not in error
    assert not (tmp_path / "o.csv").exists()


# --- the check rules against releases that meet the model exactly and miss it by one row ------------------------

def release(classes: list[tuple[str, list[str]]]) -> object:
    """A release with one QI `q` and a sensitive column `s`: each class's QI value and its rows' values."""
    return from_mapping({"q": [q for q, values in classes for _ in values],
                         "s": [v for _, values in classes for v in values]})


def verdict(table: object, description: dict) -> bool:
    k, rules = rules_from_models([{"model": "k-anonymity", "k": 1}, description], False)
    return check_k_anonymity(table, ["q"], k, 0.0, rules).passed


def test_the_average_risk_rule_fails_one_more_class() -> None:
    # four classes of 2: mean risk 4/8 = 0.5; one more row as its own class: 5/9 > 0.5
    exact = [(c, ["x", "y"]) for c in "abcd"]
    assert verdict(release(exact), {"model": "average-risk", "max_average_risk": 0.5})
    assert not verdict(release(exact + [("e", ["x"])]), {"model": "average-risk", "max_average_risk": 0.5})


def test_the_k_map_rule_fails_a_class_one_row_below_k_prime() -> None:
    # K = 10 at sampling fraction 0.1, Poisson, alpha 0.01: k' = 6 (docs/privacy-models.md)
    d = {"model": "k-map", "k_map": 10, "sampling_fraction": 0.1, "estimator": "poisson", "significance": 0.01}
    assert verdict(release([("a", ["x"] * 6), ("b", ["y"] * 7)]), d)
    assert not verdict(release([("a", ["x"] * 5), ("b", ["y"] * 7)]), d)


def test_the_beta_likeness_rule_fails_one_value_moved() -> None:
    # s: x 4, y 4 (p = .5 each); classes {x, y} x2 and {x, x, y, y}: gain 0. Moving one y of class a to x:
    # a = {x, x} gains (1 - .5) / .5 = 1 > beta = 0.9 ... with the table's shares unchanged overall
    meets = [("a", ["x", "y"]), ("b", ["x", "y"]), ("c", ["x", "x", "y", "y"])]
    broken = [("a", ["x", "x"]), ("b", ["y", "y"]), ("c", ["x", "x", "y", "y"])]
    d = {"model": "beta-likeness", "beta": 0.9, "variant": "basic", "sensitive": "s"}
    assert verdict(release(meets), d) and not verdict(release(broken), d)
    assert verdict(release(broken), d | {"beta": 1.0})  # a gain of exactly beta meets it


def test_the_delta_disclosure_rule_fails_one_value_moved() -> None:
    # x 4, y 4: a class {x, x, x, y} holds x at 3/4: log2(1.5) = 0.585 and y at 1/4: |log2(.5)| = 1
    meets = [("a", ["x", "y"]), ("b", ["x", "y"]), ("c", ["x", "x", "y", "y"])]
    broken = [("a", ["x", "x"]), ("b", ["x", "y"]), ("c", ["x", "y", "y", "y"])]
    d = {"model": "delta-disclosure", "delta": 1.0, "sensitive": "s"}
    assert verdict(release(meets), d) and not verdict(release(broken), d)
    assert verdict(release(broken), d | {"delta": 1.0 + 1e-6})  # strict: exactly 1 breaks, just above meets


@pytest.mark.slow  # a local Dask cluster
def test_a_partitioned_run_keeps_an_estimated_k_map_and_checks_k_prime(adult_sample: Path, adult_dir: Path,
                                                                       tmp_path: Path) -> None:
    """k-map estimated is a class-size rule, which the partitioned engine evaluates: it must be in the run's models
    (it was once dropped there, leaving k alone) and the check of the parts must use k' (here 10 > k = 2)."""
    pytest.importorskip("distributed")  # optional dependency: the partitioned engine runs on Dask
    base = ["--qi", ",".join(QIS), "--k", "2", "--k-map", "10", "--sampling-fraction", "0.3", "--hierarchy-dir",
            str(adult_dir), "--quiet"]
    assert main(["anonymize",
                 "--allow-k1",
                 "--keep-unnamed", str(adult_sample), *base, "--partitioned", "--output", str(tmp_path / "parts")]) == 0
    assert main(["anonymize", "--allow-k1", "--keep-unnamed", str(adult_sample), *base, "--output",
                 str(tmp_path / "whole.csv")]) == 0
    parts, whole = (json.loads((tmp_path / name).read_text()) for name in ("parts.json", "whole.json"))
    assert parts["models"] == whole["models"] and parts["models"][1]["derived_k"] == 10
    assert parts["node"] == whole["node"] and parts["smallest_class"] >= 10


def test_k_optimize_chooses_its_cut_points_for_k_prime(adult_sample: Path, tmp_path: Path) -> None:
    """k-Optimize searches cut points for one least class size: an estimated k-map's k' (10 here), not k = 2."""
    output = tmp_path / "ko.csv"
    assert main(["anonymize", "--keep-unnamed", str(adult_sample), "--qi", ",".join(QIS), "--k", "2", "--k-map", "10",
                 "--sampling-fraction", "0.3", "--algorithm", "k-optimize", "--output", str(output), "--quiet"]) == 0
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["suppressed"] == 0 and report["smallest_class"] >= 10 and report["verified"]["passed"]


def test_the_reports_beta_and_delta_figures_equal_the_checkers(adult_sample: Path, adult_dir: Path,
                                                               tmp_path: Path) -> None:
    """The privacy section's max_beta and max_delta_disclosure, from the run's classes, equal the independent
    rules' figures on the written file (no row suppressed, so the file's classes are the run's)."""
    from kgen.check.kanonymity import group_codes
    from kgen.check.rules import disclosure, likeness
    from kgen.io.table import read_csv

    output = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(adult_sample), "--qi", ",".join(QIS), "--k", "2", "--sensitive", "salary-class",
                 "--hierarchy-dir", str(adult_dir), "--algorithm", "bestfirst", "--output", str(output), "--quiet",
                 "--beta-likeness", "0.8"]) == 0
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["suppressed"] == 0
    figures = report["privacy"][0]
    released = read_csv(output)
    classes = group_codes(released, QIS)
    values = released.column("salary-class")
    kept = np.ones(int(classes.max()) + 1, dtype=bool)
    assert figures["max_beta"] == pytest.approx(likeness.largest_gain(classes, values, kept)) and \
        figures["max_beta"] <= 0.8
    assert figures["max_delta_disclosure"] == pytest.approx(float(disclosure.disclosure(classes, values).max()))
