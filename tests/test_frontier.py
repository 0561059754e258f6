"""The risk-utility frontier (kgen/run/frontier.py, lattice/search/pareto.py), `kgen frontier`, `kgen explore`
(without a browser: tests/test_explorer_browser.py clicks it) and `kgen anonymize --node`."""

from __future__ import annotations

import csv
import dataclasses
import json
import shlex
from pathlib import Path

import pytest

from kgen import Config, anonymize, from_mapping, frontier, read_csv
from kgen.cli.main import main
from kgen.report.explorer import render
from kgen.run.prepare import prepare
from lattice.search.base import Limits
from lattice.search.pareto import ParetoGA, hypervolume, pareto_front, ratio

DATA = Path(__file__).resolve().parents[1] / "kgen" / "data"
ADULT = DATA / "adult.csv"
QIS = ["sex", "age", "race"]


def config(**fields: object) -> Config:
    return Config(qi=QIS, suppression=0.01, hierarchy_dir=str(DATA),
        keep_unnamed=True, **fields)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def adult():
    return read_csv(ADULT)


@pytest.fixture(scope="module")
def highest(adult) -> dict:
    return frontier(adult, config(), "highest", 2, 6, input_path=str(ADULT))


def test_pareto_front_keeps_only_points_no_other_beats_on_both() -> None:
    points = [(0.1, 0.5, (0,)), (0.2, 0.5, (1,)), (0.2, 0.3, (2,)), (0.3, 0.4, (3,)), (0.4, 0.1, (4,))]
    assert [p[2] for p in pareto_front(points)] == [(0,), (2,), (4,)]


def test_hypervolume_ratio_is_one_for_the_same_front_and_drops_when_a_point_is_missing() -> None:
    exact = [[0.1, 0.5], [0.2, 0.3], [0.4, 0.1]]
    assert ratio(exact, exact) == pytest.approx(1.0)
    assert ratio([exact[0], exact[2]], exact) < 0.95
    assert hypervolume([(0.5, 0.5)]) == pytest.approx(0.25)


def test_highest_risk_frontier_is_the_certified_optimum_at_every_k(adult, highest: dict) -> None:
    per_k = {row["k"]: row for row in highest["per_k"]}
    assert sorted(per_k) == list(range(2, 7))
    for k in range(2, 7):
        alone = anonymize(adult, dataclasses.replace(config(), k=k, algorithm="certify", bound=False))
        assert alone.search.optimal
        assert per_k[k]["log"] == pytest.approx(alone.evaluation.log, abs=1e-12), k


def test_highest_risk_points_are_pareto_optimal_checked_and_carry_what_the_page_shows(highest: dict) -> None:
    points = highest["points"]
    assert len(points) >= 2
    for a, b in zip(points, points[1:]):
        assert a["log"] < b["log"] and a["risk"] > b["risk"]
    for p in points:
        assert p["risk"] == pytest.approx(1 / p["smallest_class"])
        assert p["checked"]["passed"] and p["los"] <= 0.01
        assert set(p["node"]) == set(QIS) and len(p["sample"]) == 10
        assert all(len(row) == len(highest["columns"]) for row in p["sample"])
        assert f"--node {','.join(f'{q}={x}' for q, x in p['node'].items())}" in p["command"]


def test_average_risk_frontier_equals_the_exhaustive_one_and_the_seed_fixes_it(adult) -> None:
    small = config(seed=3)
    got = frontier(adult, small, "average", 2, 2)
    assert got["frontier"]["complete"]
    prepared = prepare(adult, dataclasses.replace(small, k=2))
    n = adult.n
    exact = ParetoGA(generations=0, local_search=False, exhaustive_max=10**6).run(
        prepared.problem(), Limits(), lambda e: e.classes / (n - e.suppressed)).params["front"]
    assert [p["levels"] for p in got["points"]] == [row[2] for row in exact]
    again = frontier(adult, small, "average", 2, 2)
    assert [p["levels"] for p in again["points"]] == [p["levels"] for p in got["points"]]


def test_the_ga_alone_finds_the_exact_frontier_of_a_small_lattice(adult) -> None:
    prepared = prepare(adult, config(k=2))
    n = adult.n

    def risk(e: object) -> float:
        return e.classes / (n - e.suppressed)  # type: ignore[attr-defined] (the definition, restated)

    exact = ParetoGA(generations=0, local_search=False, exhaustive_max=10**6).run(
        prepared.problem(), Limits(), risk).params["front"]
    alone = ParetoGA(exhaustive_max=0, generations=10).run(prepared.problem(), Limits(seed=1), risk)
    assert not alone.params["complete"]
    assert ratio(alone.params["front"], exact) >= 0.99


def test_frontier_refuses_a_bad_risk_or_k_range(adult) -> None:
    from lattice.errors import InputError

    with pytest.raises(InputError, match="unknown risk"):
        frontier(adult, config(), "worst")
    with pytest.raises(InputError, match="k-min <= k-max"):
        frontier(adult, config(), "highest", 5, 3)


def test_journalist_risk_against_a_population_twice_the_sample_is_half_the_prosecutor_risk(adult) -> None:
    doubled = from_mapping({c: list(adult.column(c)) * 2 for c in QIS})
    got = frontier(adult, config(), "journalist", 2, 2, population=doubled)
    assert got["frontier"]["complete"] and got["points"]
    for p in got["points"]:
        assert p["risk"] == p["risks"]["journalist_highest"] == pytest.approx(p["risks"]["highest_prosecutor"] / 2)


def test_journalist_risk_refuses_a_population_value_outside_the_hierarchy(adult) -> None:
    from lattice.errors import InputError

    with pytest.raises(InputError, match="not in the hierarchy"):
        frontier(adult, config(), "journalist", 2, 2,
                 population=from_mapping({"sex": ["Male", "Robot"], "age": ["30", "31"], "race": ["White"] * 2}))
    with pytest.raises(InputError, match="needs a population"):
        frontier(adult, config(), "journalist", 2, 2)


def test_records_at_risk_frontier_is_non_dominated_in_the_share_of_records_at_risk(adult) -> None:
    got = frontier(adult, config(), "records", 2, 2)
    assert got["frontier"]["complete"]
    risks = [p["risk"] for p in got["points"]]
    assert risks == sorted(risks, reverse=True) and len(set(risks)) == len(risks)
    assert all(p["risk"] == p["risks"]["records_at_risk"] for p in got["points"])


def kgen(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_kgen_frontier_publishes_json_and_csv_as_a_checked_pair_and_the_page(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "f.json"
    status, text, err = kgen(capsys, "frontier", str(ADULT), "--qi", ",".join(QIS),
                          "--hierarchy-dir", str(DATA), "--keep-unnamed",
                             "--suppression", "0.01", "--k-max", "4", "--output", str(out), "--html",
                             str(tmp_path / "f.html"), "--quiet")
    assert status == 0, err
    result = json.loads(out.read_text())
    assert result["verified"]["passed"] and result["verified"]["points_checked"] == len(result["points"])
    assert result["provenance"]["release"]["sha256"]
    with open(tmp_path / "f.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["node"] for r in rows] == [",".join(f"{q}={x}" for q, x in p["node"].items()) for p in result["points"]]
    status, text, err = kgen(capsys, "explore", str(out), "-o", str(tmp_path / "g.html"))
    assert status == 0, err
    assert (tmp_path / "g.html").read_text() == (tmp_path / "f.html").read_text()


def test_kgen_frontier_reads_its_options_from_run_toml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    toml = tmp_path / "frontier.toml"
    toml.write_text(f'qi = ["sex", "age", "race"]\nhierarchy-dir = "{DATA}"\nsuppression = 0.01\nrisk = "average"\n'
                    f'output = "{tmp_path / "f.json"}"\nquiet = true\nkeep-unnamed = true\n')
    status, _, err = kgen(capsys, "frontier", str(ADULT), "--config", str(toml))
    assert status == 0, err
    result = json.loads((tmp_path / "f.json").read_text())
    assert result["risk"] == "average" and result["quasi_identifiers"] == QIS and result["frontier"]["complete"]


def test_sigterm_during_a_frontier_exits_143_and_writes_nothing(tmp_path: Path, monkeypatch,
                                                                capsys: pytest.CaptureFixture) -> None:
    import os
    import signal

    from kgen.run import frontier as frontier_module

    calls = []
    real = frontier_module.Measure.of

    def terminating(self: object, e: object) -> float:
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # the real signal, through kgen's handler, mid-search
        return real(self, e)  # type: ignore[arg-type]

    monkeypatch.setattr(frontier_module.Measure, "of", terminating)
    status, _, err = kgen(capsys, "frontier", str(ADULT), "--qi", ",".join(QIS),
                          "--hierarchy-dir", str(DATA), "--keep-unnamed",
                          "--risk", "average", "--output", str(tmp_path / "f.json"))
    assert status == 143 and err.strip().splitlines()[-1] == "kgen: terminated (SIGTERM); no output was written"
    assert list(tmp_path.iterdir()) == []


def test_explorer_page_is_self_contained_and_a_static_table_without_javascript(highest: dict) -> None:
    page = render(highest)
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and " src=" not in page
    assert '<section id="details" hidden' in page  # without JavaScript only the chart and the table show
    for i, p in enumerate(highest["points"]):
        assert f'id="row-{i}"' in page and f'id="point-{i}"' in page and 'tabindex="0"' in page
        assert p["command"].replace('"', "&quot;").replace("'", "&#x27;") in page


def test_explore_refuses_a_file_that_is_not_a_frontier(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    other = tmp_path / "r.json"
    other.write_text('{"quasi_identifiers": []}')
    status, _, err = kgen(capsys, "explore", str(other))
    assert status == 2 and "is not a kgen frontier" in err and err.count("\n") == 1


def test_the_command_of_a_point_publishes_that_point(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                   highest: dict) -> None:
    chosen = highest["points"][1]
    words = shlex.split(chosen["command"])[1:] + ["--output", str(tmp_path / "r.csv"), "--quiet"]
    status, _, err = kgen(capsys, *words)
    assert status == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["node"] == chosen["node"] and report["verified"]["passed"]
    assert report["algorithm"] == "node" and report["log"] == pytest.approx(chosen["log"])
    status, _, err = kgen(capsys, "apply", str(ADULT), "--report", str(tmp_path / "r.json"), "--output",
                          str(tmp_path / "a.csv"), "--quiet")
    assert status == 0, err
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "r.csv").read_bytes()


def test_a_point_under_l_diversity_carries_the_model_into_its_command(adult, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    got = frontier(adult, config(sensitive=["salary-class"], l=2), "average", 2, 2, input_path=str(ADULT))
    assert {"model": "l-diversity"}.items() <= got["models"][1].items()
    chosen = got["points"][len(got["points"]) // 2]
    assert "--sensitive salary-class" in chosen["command"] and "--l 2" in chosen["command"]
    status, _, err = kgen(capsys, *shlex.split(chosen["command"])[1:], "--output", str(tmp_path / "l.csv"), "--quiet")
    assert status == 0, err
    assert json.loads((tmp_path / "l.json").read_text())["node"] == chosen["node"]


def test_anonymize_node_refuses_an_infeasible_node_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    status, _, err = kgen(capsys, "anonymize", str(ADULT), "--qi", ",".join(QIS),
                          "--hierarchy-dir", str(DATA), "--keep-unnamed",
                          "--k", "5", "--node", "sex=0,age=0,race=0", "--output", str(tmp_path / "x.csv"))
    assert status == 3 and "is not feasible" in err and err.count("\n") == 1
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(("node", "message"), [
    ("sex=0,age=9,race=0", "outside its hierarchy's levels"), ("sex=0,age=1", "no level for the quasi-identifier"),
    ("sex=0,age=1,race=0,zip=1", "not a quasi-identifier"), ("sex=a,age=1,race=0", "must be a whole number")])
def test_anonymize_node_refuses_a_malformed_node(tmp_path: Path, capsys: pytest.CaptureFixture, node: str,
                                                 message: str) -> None:
    status, _, err = kgen(capsys, "anonymize", str(ADULT), "--qi", ",".join(QIS),
                          "--hierarchy-dir", str(DATA), "--keep-unnamed",
                          "--k", "2", "--node", node, "--output", str(tmp_path / "x.csv"))
    assert status == 2 and message in err and err.count("\n") == 1


def test_node_from_run_toml_and_the_api_give_the_same_release(adult, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text(f'qi = ["sex", "age", "race"]\nk = 3\nhierarchy-dir = "{DATA}"\nnode = "sex=0,age=2,race=1"\n'
                    'keep-unnamed = true\n')
    status, _, err = kgen(capsys, "anonymize", str(ADULT), "--config", str(toml), "--output",
                          str(tmp_path / "t.csv"), "--quiet")
    assert status == 0, err
    api = anonymize(adult, Config(qi=QIS, k=3, hierarchy_dir=str(DATA), keep_unnamed=True,
                                  node={"sex": 0, "age": 2, "race": 1}))
    assert api.evaluation.node == (0, 2, 1)
    assert json.loads((tmp_path / "t.json").read_text())["node"] == {"sex": 0, "age": 2, "race": 1}


@pytest.mark.slow
def test_adult_highest_risk_frontier_equals_certify_from_k_2_to_50(adult_csv: Path) -> None:
    """The acceptance: Adult, the README's QIs, t = 1 %: the frontier's optimum LOG at every k is certify's."""
    table = read_csv(adult_csv)
    base = Config(qi=["sex", "age", "race", "marital-status"], suppression=0.01, hierarchy_dir=str(adult_csv.parent),
                  keep_unnamed=True)
    per_k = {row["k"]: row for row in frontier(table, base, "highest", 2, 50)["per_k"]}
    assert sorted(per_k) == list(range(2, 51))
    for k in range(2, 51):
        alone = anonymize(table, dataclasses.replace(base, k=k, algorithm="certify", bound=False))
        assert alone.search.optimal and per_k[k]["log"] == pytest.approx(alone.evaluation.log, abs=1e-12), k
        assert per_k[k]["optimal"]


@pytest.mark.slow
def test_cargo_25_qis_frontier_points_are_feasible_and_checked(cargo_csv: Path) -> None:
    from experiments.common import load_cargo

    dataset = load_cargo()
    result = frontier(dataset.table, dataset.config(25), "average", 2, 50)
    assert result["rows"] == 3942 and len(result["points"]) >= 5
    assert result["frontier"]["seconds"] <= 60
    for p in result["points"]:
        assert p["checked"]["passed"] and p["los"] <= 0.005


def test_a_node_that_fails_in_every_class_does_not_advise_raising_the_suppression_limit(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Every row unique at the node: raising --suppression would release nothing (and for δ-presence's
    population classes without a released row no suppression helps): the line says so, not "raise"."""
    data = tmp_path / "unique.csv"
    data.write_text("a,b\n" + "".join(f"{i},{i % 3}\n" for i in range(20)), encoding="utf-8")
    status, _, err = kgen(capsys, "anonymize", str(data), "--qi", "a", "--keep-unnamed", "--k", "2",
                          "--node", "a=0", "--output", str(tmp_path / "x.csv"))
    assert status == 3 and err.count("\n") == 1
    assert "fail in every class there" in err and "raise --suppression" not in err
    status, _, err = kgen(capsys, "anonymize", str(data), "--qi", "b", "--identifier", "a", "--k", "7",
                          "--node", "b=0", "--output", str(tmp_path / "y.csv"))  # classes of 7, 7 and 6
    assert status == 3 and err.count("\n") == 1
    assert "would suppress 30.00% of the rows" in err and "raise --suppression" in err
