"""Privacy models that read a file (`fitness.privacy.Parameter.resource`): t-closeness with the hierarchical
ground distance, `--t-closeness T --t-distance hierarchical --t-hierarchy FILE`, through every command
(anonymize from the CLI, run.toml and Config; the report's provenance; apply, which re-reads the file and
refuses a changed one; check and check --report, which read it themselves), and the stricter direction of
every family's parameters that `kgen check --report` accepts in a restatement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness import privacy
from fitness.privacy.hierarchical_t import HierarchicalTCloseness
from kgen import Config, anonymize, check_k_anonymity, from_mapping
from kgen.check import claims
from kgen.check.rules import hierarchical_t as hierarchical_rule
from kgen.check.rules import rules_from_models
from kgen.cli.main import main
from kgen.io.hierarchies import load_arx
from kgen.run.config import resolve_resources
from lattice.errors import InputError, NoSolutionError
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.exhaustive import Exhaustive
from lattice.search.ola import OLA

# s: x and y under G, z under H (height 2); q: a1, a2 under A, b1, b2 under B
S_HIERARCHY = "x;G;*\ny;G;*\nz;H;*\n"
Q_HIERARCHY = "a1;A;*\na2;A;*\nb1;B;*\nb2;B;*\n"
ROWS = [("a1", "x"), ("a1", "y"), ("a2", "x"), ("a2", "z"), ("b1", "y"), ("b1", "z"), ("b2", "x"), ("b2", "y"),
        ("a1", "x"), ("a2", "y"), ("b1", "x"), ("b2", "z")]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "data.csv").write_text("q;s\n" + "".join(f"{q};{s}\n" for q, s in ROWS))
    (tmp_path / "s.csv").write_text(S_HIERARCHY)
    (tmp_path / "q.csv").write_text(Q_HIERARCHY)
    return {name: tmp_path / f"{name}.csv" for name in ("data", "s", "q")}


def run_flags(files: dict[str, Path], t: str = "0.2") -> list[str]:
    return ["--qi", "q", "--hierarchy", f"q={files['q']}", "--k", "2", "--sensitive", "s", "--t-closeness", t,
            "--t-distance", "hierarchical", "--t-hierarchy", str(files["s"])]


def test_the_option_runs_reports_the_file_and_the_release_passes_check(files: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    assert main(["anonymize", str(files["data"]), *run_flags(files), "--output", str(output), "--quiet"]) == 0
    report = json.loads(output.with_suffix(".json").read_text())
    (model,) = [m for m in report["models"] if m["model"] == "hierarchical-t-closeness"]
    assert model["t"] == 0.2 and model["t_hierarchy"] == str(files["s"])
    assert model["hierarchy_digest"] == hierarchical_rule.paths_digest(load_arx(files["s"], "s").paths)
    assert report["t_hierarchy"] == str(files["s"]) and report["t_distance"] == "hierarchical"
    recorded = report["provenance"]["model_files"]["t_hierarchy"]
    assert recorded["path"] == str(files["s"]) and len(recorded["sha256"]) == 64
    assert not [m for m in report["models"] if m["model"] == "t-closeness"]  # not also the equal distance
    assert report["verified"]["passed"] is True
    assert main(["check", str(output), *run_flags(files)[4:], "--qi", "q"]) == 0
    assert main(["check", str(output), "--report", str(output.with_suffix(".json"))]) == 0


def test_apply_re_reads_the_file_and_refuses_a_changed_one(files: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    output, again = tmp_path / "out.csv", tmp_path / "again.csv"
    assert main(["anonymize", str(files["data"]), *run_flags(files), "--output", str(output), "--quiet"]) == 0
    report = str(output.with_suffix(".json"))
    assert main(["apply", str(files["data"]), "--report", report, "--output", str(again), "--quiet"]) == 0
    assert again.read_bytes() == output.read_bytes()
    files["s"].write_text("x;G;*\nz;G;*\ny;H;*\n")  # y and z change places: another distance
    capsys.readouterr()
    assert main(["apply", str(files["data"]), "--report", report, "--output", str(tmp_path / "b.csv")]) == 2
    error = capsys.readouterr().err
    assert "t_hierarchy" in error and "not the hierarchy the run used" in error and "Traceback" not in error
    assert main(["check", str(output), "--report", report]) == 2
    assert "is not the hierarchy the release was made with" in capsys.readouterr().err


def test_config_and_run_toml_reach_the_same_model(files: dict[str, Path], tmp_path: Path) -> None:
    config = Config(qi=["q"], k=2, hierarchies={"q": str(files["q"])}, sensitive=["s"], t_closeness=0.2,
                    t_distance="hierarchical", t_hierarchy=str(files["s"]))
    result = anonymize(str(files["data"]), config)
    toml = tmp_path / "run.toml"
    toml.write_text(f'qi = ["q"]\nk = 2\nsensitive = ["s"]\nt_closeness = 0.2\nt_distance = "hierarchical"\n'
                    f't_hierarchy = "{files["s"]}"\nhierarchy = ["q={files["q"]}"]\n')
    output = tmp_path / "toml.csv"
    assert main(["anonymize", str(files["data"]), "--config", str(toml), "--output", str(output), "--quiet"]) == 0
    assert json.loads(output.with_suffix(".json").read_text())["models"] == result.report["models"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--t-closeness", "0.2", "--t-distance", "hierarchical"], "--t-hierarchy FILE"),
    (["--t-hierarchy", "S"], "--t-distance hierarchical"),
    (["--t-closeness", "0.2", "--t-hierarchy", "S"], "--t-distance hierarchical"),
    (["--t-closeness", "0.2", "--t-distance", "hierarchical", "--t-hierarchy", "missing.csv"], "missing.csv"),
])
def test_an_incomplete_or_missing_hierarchy_is_a_one_line_input_error(files: dict[str, Path], tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture,
                                                                      flags: list[str], message: str) -> None:
    flags = [str(files["s"]) if f == "S" else f for f in flags]
    code = main(["anonymize", str(files["data"]), "--qi", "q", "--k", "2", "--sensitive", "s", "--output",
                 str(tmp_path / "o.csv"), *flags])
    error = capsys.readouterr().err
    assert code == 2 and message in error and "Traceback" not in error


def test_a_hierarchy_lacking_a_sensitive_value_names_it(files: dict[str, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    files["s"].write_text("x;G;*\ny;G;*\n")
    code = main(["anonymize", str(files["data"]), *run_flags(files), "--output", str(tmp_path / "o.csv")])
    error = capsys.readouterr().err
    assert code == 2 and "'z'" in error and "Traceback" not in error


# --- the check rule on the written file: meeting t exactly, and one value moved ------------------------------

def verdict(rows: list[tuple[str, str]], hierarchy: Path, t: float) -> bool:
    table = from_mapping({"q": [q for q, _ in rows], "s": [s for _, s in rows]})
    description = HierarchicalTCloseness("s", t, load_arx(hierarchy, "s")).describe()
    k, rules = rules_from_models([{"model": "k-anonymity", "k": 1}, description], False)
    return check_k_anonymity(table, ["q"], k, 0.0, rules).passed


def test_the_rule_passes_a_class_at_t_and_fails_it_one_value_off(files: dict[str, Path]) -> None:
    # overall q = (x .5, y .25, z .25). Class A = {x, y}: p = (.5, .5, 0): .25 moves y -> z across (1): EMD .25.
    # Class B = {x, x, y, z, z, ...} chosen equal to the whole: 0. Moving B's y into A's place of x gives
    # A = {y, y}: .5 y -> x within G (1/2) and .25 y -> z across: .25 + .25 = .5 (by hand).
    a, b = [("A", "x"), ("A", "y")], [("B", "x"), ("B", "x"), ("B", "x"), ("B", "y"), ("B", "z"), ("B", "z")]
    assert hierarchical_rule.distances(
        __import__("numpy").array([0, 0, 1, 1, 1, 1, 1, 1]), [s for _, s in a + b],
        load_arx(files["s"], "s").paths).tolist() == pytest.approx([0.25, 0.0833333333])
    assert verdict(a + b, files["s"], 0.25)
    assert not verdict(a + b, files["s"], 0.24)
    moved = [("A", "y"), ("A", "y"), ("B", "x"), ("B", "x"), ("B", "x"), ("B", "x"), ("B", "z"), ("B", "z")]
    assert not verdict(moved, files["s"], 0.25)


# --- exact searches against exhaustive, the model built from Config's file ---------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["a1", "a2", "b1", "b2"]), st.sampled_from("xyz")), min_size=4,
                max_size=24), st.sampled_from([0.1, 0.2, 0.3, 0.5]))
def test_exact_searches_find_exhaustives_optimum_with_the_file(files: dict[str, Path], rows: list, t: float) -> None:
    from kgen import prepare

    config = Config(qi=["q"], k=1, hierarchies={"q": str(files["q"])}, sensitive=["s"], t_closeness=t,
                    t_distance="hierarchical", t_hierarchy=str(files["s"]), suppression=0.0, allow_k1=True)
    try:
        prepared = prepare({"q": [q for q, _ in rows], "s": [s for _, s in rows]}, config)
    except NoSolutionError:
        return
    expected = Exhaustive().run(prepared.problem(), Limits())
    for search in (BestFirst(), OLA()):
        found = search.run(prepared.problem(), Limits())
        assert (None if found.best is None else found.best.loss) == (
            None if expected.best is None else expected.best.loss)


def test_resources_are_read_only_for_their_parameters(files: dict[str, Path]) -> None:
    resolved = resolve_resources({"t_hierarchy": str(files["s"]), "t_distance": "hierarchical"})
    assert resolved["t_hierarchy"].paths["z"] == ("z", "H", "*") and resolved["t_distance"] == "hierarchical"
    with pytest.raises(InputError):
        resolve_resources({"t_hierarchy": str(files["s"]) + ".absent"})


# --- which way each parameter is stricter (kgen check --report's restatements) ------------------------------

DIRECTIONS = {name: privacy.stricter_direction(name) for name in privacy.FAMILIES}


@pytest.mark.parametrize(("claimed", "stricter", "weaker"), [
    ({"model": "k-anonymity", "k": 5}, {"k": 6}, {"k": 4}),
    ({"model": "t-closeness", "t": 0.2, "distance": "equal", "sensitive": "s"}, {"t": 0.1}, {"t": 0.3}),
    ({"model": "hierarchical-t-closeness", "t": 0.2, "sensitive": "s", "t_hierarchy": "h", "hierarchy_digest": "d"},
     {"t": 0.1}, {"t": 0.3}),
    ({"model": "average-risk", "max_average_risk": 0.1}, {"max_average_risk": 0.05}, {"max_average_risk": 0.2}),
    ({"model": "beta-likeness", "beta": 1.0, "variant": "basic", "sensitive": "s"}, {"beta": 0.5}, {"beta": 2.0}),
    ({"model": "delta-disclosure", "delta": 1.0, "sensitive": "s"}, {"delta": 0.5}, {"delta": 1.5}),
    ({"model": "k-map", "k_map": 10, "sampling_fraction": 0.1, "estimator": "poisson", "significance": 0.01,
      "derived_k": 6, "type1_error": 0.001}, {"k_map": 20, "derived_k": 8, "type1_error": 0.003},
     {"k_map": 5, "derived_k": 4}),
    ({"model": "k-map", "k_map": 10, "sampling_fraction": 0.1, "estimator": "poisson", "significance": 0.01},
     {"significance": 0.001}, {"significance": 0.05}),
])
def test_a_stricter_restatement_is_accepted_and_a_weaker_refused(claimed: dict, stricter: dict,
                                                                  weaker: dict) -> None:
    assert claims.weaker_model(claimed, [{**claimed, **stricter}], DIRECTIONS) is None
    why = claims.weaker_model(claimed, [{**claimed, **weaker}], DIRECTIONS)
    assert why is not None and next(iter(weaker)) in why


def test_a_parameter_without_a_direction_must_be_restated_as_is() -> None:
    claimed = {"model": "k-map", "k_map": 10, "sampling_fraction": 0.1, "estimator": "poisson", "significance": 0.01}
    assert claims.weaker_model(claimed, [{**claimed, "sampling_fraction": 0.2}], DIRECTIONS) is not None
    assert claims.weaker_model(claimed, [{**claimed, "estimator": "zero-truncated-poisson"}], DIRECTIONS) is not None


def test_check_report_accepts_a_stricter_restatement_of_a_new_model(files: dict[str, Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "out.csv"
    assert main(["anonymize", str(files["data"]), "--qi", "q", "--hierarchy", f"q={files['q']}", "--k", "2",
                 "--sensitive", "s", "--delta-disclosure", "3", "--output", str(output), "--quiet"]) == 0
    report = str(output.with_suffix(".json"))
    assert main(["check", str(output), "--report", report, "--sensitive", "s", "--delta-disclosure", "2.9"]) in (0, 1)
    assert "weaker than the report" not in capsys.readouterr().err
    assert main(["check", str(output), "--report", report, "--sensitive", "s", "--delta-disclosure", "3.5"]) == 2
    assert "weaker than the report" in capsys.readouterr().err
