"""The steward's per-QI controls (issue 26): level limits (`--min-level`, `--max-level`) and objective weights
(`--weight`). Every exact search must return the optimum that brute force finds over the nodes within the
limits, under the weighted objective; the certified bound must stay at or below it; defaults change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness.objective import make_objective, weighted_precision
from kgen.cli.main import main
from kgen.io.table import from_mapping
from kgen.run import pipeline as api
from kgen.run.algorithms import REGISTRY, make_search
from kgen.run.config import Config
from kgen.run.record import lower_bound_record
from lattice.box import Box
from lattice.errors import InputError, NoSolutionError
from lattice.search.base import Limits
from lattice.search.certify import Certify, certified_bound
from lattice.search.kgen_ga import KGen

EXACT = ["exhaustive", "bestfirst", "ola", "incognito", "certify", "flash"]
HEURISTIC = ["kgen", "random", "samarati", "datafly"]


QIS = ["a", "b", "c", "d"]


def table_of(rows: list[tuple[int, int, int, int]]) -> object:
    return from_mapping({"a": [str(r[0]) for r in rows], "b": [str(r[1]) for r in rows],
                         "c": ["xyzw"[r[2] % 4] for r in rows], "d": [str(r[3]) for r in rows]})


ROWS = st.lists(st.tuples(st.integers(0, 29), st.integers(0, 12), st.integers(0, 3), st.integers(0, 3)),
                min_size=10, max_size=60)


def brute_force(prepared: api.Prepared, lower: tuple, upper: tuple):
    """The optimum over every node of the full lattice that lies within the limits, by the SPEC's tie rule
    (least loss, then least LOS, then the lexicographically smaller node): independent of the search box."""
    best = None
    for node in Box.full(prepared.heights).nodes():
        if not all(lo <= x <= hi for lo, x, hi in zip(lower, node, upper)):
            continue
        e = prepared.evaluator.evaluate(node)
        if e.feasible and (best is None or (e.loss, e.los, e.node) < (best.loss, best.los, best.node)):
            best = e
    return best


@st.composite
def controlled_cases(draw):
    rows = draw(ROWS)
    k = draw(st.integers(2, 3))
    suppression = draw(st.sampled_from([0.0, 0.1, 0.25]))
    metric = draw(st.sampled_from(["log", "ncp", "loss", "entropy"]))
    free = api.prepare(table_of(rows), Config(qi=QIS, k=k, prune=False), require_feasible=False)
    low, high, weights = {}, {}, {}
    for name, h in zip(QIS, free.heights):
        lo = draw(st.integers(0, h))
        hi = draw(st.integers(lo, h))
        if draw(st.integers(0, 3)) == 0:  # most QIs free, so that the weights have room to choose
            low[name] = lo
        if draw(st.integers(0, 3)) == 0:
            high[name] = hi
        if draw(st.booleans()):
            weights[name] = draw(st.sampled_from([0.2, 3.0, 10.0]))
    config = Config(qi=QIS, k=k, suppression=suppression, metric=metric, min_levels=low,
                    max_levels=high, weights=weights, prune=draw(st.booleans()))
    return rows, config


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(controlled_cases())
def test_every_exact_search_returns_the_constrained_weighted_optimum_of_brute_force(case):
    rows, config = case
    prepared = api.prepare(table_of(rows), config, require_feasible=False)
    lower = tuple(config.min_levels.get(n, 0) for n in config.qi)
    upper = tuple(config.max_levels.get(n, h) for n, h in zip(config.qi, prepared.heights))
    assert all(lo <= a and b <= hi for lo, a, b, hi in zip(lower, prepared.box.lower, prepared.box.upper, upper))
    truth = brute_force(prepared, lower, upper)
    want = None if truth is None else (truth.loss, truth.los, truth.node)
    problem = prepared.problem()
    for name in EXACT:
        if name == "certify" and not (problem.monotone_loss and (problem.loss_is_log or problem.level_costs)):
            continue  # it refuses what it cannot certify (tested in test_certify.py)
        if name == "certify" and not problem.monotone_feasibility:
            continue
        result = make_search(name).run(problem, Limits())
        got = None if result.best is None else (result.best.loss, result.best.los, result.best.node)
        assert result.stopped == "complete", name
        assert got == want, name
    if truth is not None and problem.monotone_feasibility:  # Samarati: every feasible node of least height
        feasible = [n for n in Box(lower, upper).nodes() if prepared.evaluator.evaluate(n).feasible]
        least = min(sum(n) for n in feasible)
        samarati = make_search("samarati").run(problem, Limits())
        assert samarati.minimal == sorted(n for n in feasible if sum(n) == least)
    for name in HEURISTIC:  # not exact, but never outside the limits
        result = make_search(name).run(problem, Limits(max_evaluations=20, seed=1))
        assert result.best is None or all(lo <= x <= hi for lo, x, hi in zip(lower, result.best.node, upper)), name
        assert result.best is None or truth is None or result.best.loss >= truth.loss - 1e-12, name


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(controlled_cases())
def test_the_certified_bound_stays_at_or_below_the_constrained_weighted_optimum(case):
    rows, config = case
    prepared = api.prepare(table_of(rows), config, require_feasible=False)
    lower = tuple(config.min_levels.get(n, 0) for n in config.qi)
    upper = tuple(config.max_levels.get(n, h) for n, h in zip(config.qi, prepared.heights))
    truth = brute_force(prepared, lower, upper)
    problem = prepared.problem()
    if truth is None or not problem.monotone_feasibility:
        return
    ga = KGen(max_evaluations=6).run(problem, Limits(max_evaluations=6, seed=3))
    if ga.best is not None:  # the bound every report carries, from the GA's own infeasible evaluations
        bound = certified_bound(problem, ga.infeasible, ga.best)
        assert bound["lower_bound"] is not None and bound["lower_bound"] <= truth.loss + 1e-9
        record = lower_bound_record(prepared, ga)
        assert record["lower_bound"] <= truth.loss + 1e-9
    if problem.monotone_loss:  # the certified search's own interval, stopped early
        stopped = Certify(seed_evaluations=2).run(problem, Limits(max_evaluations=5))
        bound = stopped.params.get("lower_bound")
        assert bound is None or bound <= truth.loss + 1e-9


# --- weights: hand-checked values ------------------------------------------------------------------------------

def test_weighted_log_is_the_weighted_mean_of_the_levels_over_the_heights():
    # node (1, 2, 0) with heights (2, 4, 1), weights (3, 1, 1): (3 * 1/2 + 1 * 2/4 + 0) / 5 = 0.4
    assert weighted_precision((1, 2, 0), (2, 4, 1), (3.0, 1.0, 1.0)) == pytest.approx(0.4)
    # a QI of height 0 counts neither in the sum nor in the weights
    assert weighted_precision((1, 0), (2, 0), (1.0, 9.0)) == pytest.approx(0.5)


def test_weighted_ncp_scales_each_qis_share_and_its_normalization():
    # 4 rows, flat hierarchies: a at level 1 costs (4 - 1) / (4 - 1) = 1 per cell (4 cells), b at level 0 costs
    # nothing; each QI's norm is 4 (every cell suppressed). Unweighted 4 / 8; a weighing 3: 3 * 4 / (3 * 4 + 4).
    columns = {"a": list("wxyz"), "b": list("pqrs")}
    flat = {"a": "flat", "b": "flat"}
    plain = api.prepare(columns, Config(qi=["a", "b"], k=1, allow_k1=True, hierarchies=flat, metric="ncp"))
    weighted = api.prepare(columns, Config(qi=["a", "b"], k=1, allow_k1=True, hierarchies=flat, metric="ncp",
                                           weights={"a": 3}))
    assert plain.evaluator.evaluate((1, 0)).loss == pytest.approx(0.5)
    assert weighted.evaluator.evaluate((1, 0)).loss == pytest.approx(0.75)
    assert weighted.evaluator.evaluate((0, 1)).loss == pytest.approx(0.25)


def test_all_weights_one_is_the_unweighted_objective_itself():
    for name in ("log", "ncp", "loss", "entropy"):
        assert make_objective(name, (1.0, 1.0)) == make_objective(name)


def test_weights_steer_the_optimum_away_from_the_heavy_qi():
    columns = {"a": [str(i % 6) for i in range(24)], "b": [str(i % 4) for i in range(24)]}
    plain = api.anonymize(columns, Config(qi=["a", "b"], k=4, algorithm="exhaustive",
                                          hierarchies={"a": "intervals:2", "b": "intervals:2"}))
    heavy = api.anonymize(columns, Config(qi=["a", "b"], k=4, algorithm="exhaustive", weights={"b": 10},
                                          hierarchies={"a": "intervals:2", "b": "intervals:2"}))
    assert heavy.evaluation.node[1] <= plain.evaluation.node[1]
    assert heavy.report["weights"] == {"b": 10.0}
    assert heavy.report["loss"] != heavy.report["log"] or heavy.evaluation.node[1] == 0


# --- refusals: one line, exit 2 ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("config", "message"), [
    (dict(min_levels={"zip": 1}), "not a quasi-identifier"),
    (dict(max_levels={"a": -1}), "whole number >= 0"),
    (dict(min_levels={"a": 2}, max_levels={"a": 1}), "above --max-level"),
    (dict(weights={"a": -1.0}), "finite number > 0"),
    (dict(weights={"a": 0.0}), "finite number > 0"),
    (dict(weights={"a": 2.0}, metric="dm"), "takes no weights"),
])
def test_bad_limits_and_weights_are_refused_in_one_line(config, message):
    with pytest.raises(InputError, match=message):
        Config(qi=["a", "b"], **config).check()


def test_a_level_above_the_top_of_the_hierarchy_is_refused():
    with pytest.raises(InputError, match="above the top of its hierarchy"):
        api.prepare({"a": list("xy"), "b": list("pq")},
                    Config(qi=["a", "b"], k=1, allow_k1=True, hierarchies={"a": "flat", "b": "flat"},
                           max_levels={"a": 2}))


def test_limits_that_leave_no_feasible_node_get_the_computed_advice():
    columns = {"a": [str(i) for i in range(10)], "b": list("pqpqpqpqpq")}
    with pytest.raises(NoSolutionError) as error:
        api.prepare(columns, Config(qi=["a", "b"], k=5, hierarchies={"a": "flat", "b": "flat"},
                                    max_levels={"a": 0}))
    text = str(error.value)
    assert "within the level limits (a <= 0)" in text and "--suppression to at least 1.0000" in text
    assert "raise --max-level" in text


def test_k_optimize_refuses_level_limits():
    with pytest.raises(InputError, match="do not apply"):
        api.prepare({"a": list("xyxy")}, Config(qi=["a"], k=2, algorithm="k-optimize", max_levels={"a": 1}))


def test_every_registered_search_is_covered():
    assert sorted(EXACT + HEURISTIC + ["auto"]) == sorted(REGISTRY)


# --- the command line, run.toml, the report, the summary and kgen apply ---------------------------------------

def write_people(path: Path) -> Path:
    lines = ["age,zip,sex"] + [f"{20 + (i * 7) % 50},{10000 + (i * 37) % 900},{'mf'[i % 2]}" for i in range(80)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_and_toml_give_the_same_controls_and_apply_keeps_them(tmp_path: Path, capsys):
    data = write_people(tmp_path / "people.csv")
    argv = ["anonymize", str(data), "--qi", "age,zip,sex", "--k", "3", "--algorithm", "exhaustive",
            "--hierarchy", "age=intervals:5,10,20", "--hierarchy", "zip=mask"]
    out = tmp_path / "cli.csv"
    assert main(argv + ["--max-level", "age=2", "--min-level", "zip=1", "--weight", "age=3,sex=0.5",
                        "--output", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "level limits: age 0..2, zip 1..top" in summary
    assert "weights (log; others 1): age 3, sex 0.5" in summary
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["max_levels"] == {"age": 2} and report["min_levels"] == {"zip": 1}
    assert report["weights"] == {"age": 3.0, "sex": 0.5}
    assert report["node"]["age"] <= 2 and report["node"]["zip"] >= 1
    toml = tmp_path / "run.toml"
    toml.write_text(f'input = "{data}"\nqi = ["age", "zip", "sex"]\nk = 3\nalgorithm = "exhaustive"\n'
                    'hierarchy = ["age=intervals:5,10,20", "zip=mask"]\nmax-level = {age = 2}\n'
                    'min-level = ["zip=1"]\nweight = {age = 3, sex = 0.5}\n', encoding="utf-8")
    out2 = tmp_path / "toml.csv"
    assert main(["anonymize", "--config", str(toml), "--output", str(out2), "--quiet"]) == 0
    again = json.loads(out2.with_suffix(".json").read_text())
    assert again["node"] == report["node"] and again["loss"] == report["loss"]
    assert (again["min_levels"], again["max_levels"], again["weights"]) == (
        report["min_levels"], report["max_levels"], report["weights"])
    applied = tmp_path / "applied.csv"
    assert main(["apply", str(data), "--report", str(out.with_suffix(".json")), "--output", str(applied)]) == 0
    assert "weights (log; others 1): age 3, sex 0.5" in capsys.readouterr().out
    kept = json.loads(applied.with_suffix(".json").read_text())
    assert kept["weights"] == report["weights"] and kept["max_levels"] == report["max_levels"]
    assert kept["loss"] == pytest.approx(report["loss"])
    page = tmp_path / "page.html"
    assert main(["report", str(out.with_suffix(".json")), "-o", str(page)]) == 0
    assert "level limits: age 0..2, zip 1..top" in page.read_text()
    applied_page = tmp_path / "applied.html"
    assert main(["report", str(applied.with_suffix(".json")), "-o", str(applied_page)]) == 0
    assert "weights (log; others 1): age 3, sex 0.5" in applied_page.read_text()


def test_cli_refuses_a_malformed_control_in_one_line(tmp_path: Path, capsys):
    data = write_people(tmp_path / "people.csv")
    for bad, words in ((["--min-level", "age"], "expects QI=LEVEL"), (["--max-level", "age=x"], "whole number"),
                       (["--weight", "nope=2"], "not a quasi-identifier"), (["--weight", "age=2", "--metric",
                                                                             "aecs"], "takes no weights")):
        code = main(["anonymize", str(data), "--qi", "age,zip", "--k", "2", "--output", str(tmp_path / "o.csv"),
                     *bad])
        err = capsys.readouterr().err
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_apply_refuses_a_report_whose_node_breaks_its_own_limits(tmp_path: Path):
    data = write_people(tmp_path / "people.csv")
    out = tmp_path / "o.csv"
    assert main(["anonymize", str(data), "--qi", "age,zip", "--keep", "sex", "--k", "3", "--max-level", "age=2",
                 "--algorithm",
                 "exhaustive", "--hierarchy", "age=intervals:5,10,20", "--output", str(out), "--quiet"]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    report["max_levels"] = {"age": report["node"]["age"] - 1} if report["node"]["age"] else {"age": 0}
    if report["node"]["age"] == 0:
        report["min_levels"] = {"age": 1}
        report["max_levels"] = {}
    with pytest.raises(InputError, match="the report's m"):
        from kgen.run.apply import apply
        apply(str(data), report, source="edited.json")
