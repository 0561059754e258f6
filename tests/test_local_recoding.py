"""Local recoding and microaggregation (issue 26, items 4 and 5).

A fuzz run (hypothesis) over random tables, models (k-anonymity, the three l-diversity variants, t-closeness,
beta-likeness, delta-disclosure, an average-risk threshold) and both options: every release passes the independent
check on the written file, suppresses no more rows than the global node alone, and writes every QI cell as a
generalization of the original at its row group's node (or, microaggregated, as its class's mean or median).
Planted bugs (a group's class of k - 1 rows; one row's microaggregated value changed) are caught by the checker.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgen
from fitness.encoding import select_rows
from fitness.objective import cell_costs, mixed_metrics, solution_metrics
from kgen.check.kanonymity import SensitiveRule, check_k_anonymity
from kgen.io.table import Table, read_csv
from kgen.run import apply as applying
from kgen.run import pipeline, recoding
from kgen.run.config import Config
from kgen.run.microaggregation import class_values, text
from kgen.status import ReleaseCheckError
from lattice.errors import InputError, NoSolutionError

HIERARCHIES = {"age": "intervals:5,10,20", "zip": "mask", "income": "intervals:10,50"}


def table(rng: np.random.Generator, n: int) -> dict[str, list[str]]:
    """A small table: age and income numeric, zip codes, a sensitive disease."""
    return {
        "age": [str(v) for v in rng.integers(18, 70, n)],
        "zip": [f"13{v:02d}" for v in rng.integers(0, 40, n)],
        "income": [str(v) for v in rng.integers(0, 90, n)],
        "disease": [str(v) for v in rng.choice(["flu", "cold", "ulcer", "gastritis"], n)],
    }


def config(**fields: object) -> Config:
    base: dict = {"qi": ["age", "zip", "income"], "sensitive": ["disease"], "k": 3, "suppression": 0.1,
                  "hierarchies": HIERARCHIES, "algorithm": "bestfirst", "metric": "ncp"}
    return Config(**(base | fields))


def rules(cfg: Config) -> list[SensitiveRule]:
    out = []
    if cfg.l is not None:
        out.append(SensitiveRule("disease", cfg.l, cfg.l_variant, cfg.c))
    if cfg.t_closeness is not None:
        out.append(SensitiveRule("disease", t=cfg.t_closeness, distance=cfg.t_distance))
    return out


def generalizations(prepared: pipeline.Prepared, name: str) -> list[set[str]]:
    """Per row, every label its value takes at some level of its QI's hierarchy."""
    qi = next(q for q in prepared.encoded.qis if q.name == name)
    return [{qi.labels[level][int(qi.codes[level][r])] for level in range(qi.height + 1)}
            for r in range(prepared.table.n)]


@st.composite
def runs(draw: st.DrawFn) -> tuple[dict, Config]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    data = table(rng, draw(st.integers(40, 200)))
    model = draw(st.sampled_from(["k", "distinct", "entropy", "recursive", "t", "beta", "delta", "average-risk"]))
    fields: dict = {"k": draw(st.integers(2, 5)), "suppression": draw(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3])),
                    "local_recoding": draw(st.sampled_from([True, True, True, False])),
                    "metric": draw(st.sampled_from(["ncp", "log", "loss"])),
                    "drop_suppressed": draw(st.booleans())}
    if model in ("distinct", "entropy", "recursive"):
        fields |= {"l": 2, "l_variant": model, "c": 3.0 if model == "recursive" else None}
    elif model == "t":
        fields |= {"t_closeness": draw(st.sampled_from([0.3, 0.5])), "t_distance": "equal"}
    elif model == "beta":
        fields |= {"beta_likeness": draw(st.sampled_from([1.0, 2.0]))}
    elif model == "delta":
        fields |= {"delta_disclosure": draw(st.sampled_from([1.0, 1.5]))}
    elif model == "average-risk":
        fields |= {"max_average_risk": draw(st.sampled_from([0.1, 0.2]))}
    micro = draw(st.sampled_from([{}, {"age": "mean"}, {"income": "median"}, {"age": "median", "income": "mean"}]))
    return data, config(**fields, microaggregate=micro)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_local_recoding_and_microaggregation_releases_pass_the_independent_check(run: tuple) -> None:
    check_run(run)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_every_local_recoding_and_microaggregation_release_of_a_long_fuzz_run_passes_the_check(run: tuple) -> None:
    check_run(run)


def check_run(run: tuple) -> None:
    """Anonymize, publish (checked on the written file), check again here, and compare every cell."""
    data, cfg = run
    try:
        result = kgen.anonymize(data, cfg)
    except NoSolutionError:
        return
    report = result.report
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "out.csv"
        kgen.write_release(result, path)  # the independent check of the written file: raises when it fails
        written = read_csv(path)
    if not cfg.drop_suppressed:
        check = check_k_anonymity(written, cfg.qi, cfg.k, cfg.suppression, rules(cfg))
        assert check.passed, check.summary(str(path), True)
    local = report["local_recoding"]
    if local is not None:
        assert local["suppressed_after"] <= local["suppressed_before"]
        assert local["ncp_after"] <= local["ncp_before"] + 1e-12
        assert sum(g["rows"] for g in local["groups"]) + local["suppressed_after"] == len(data["age"])
    assert_cells_are_generalizations(data, cfg, result)


def assert_cells_are_generalizations(data: dict, cfg: Config, result: pipeline.Result) -> None:
    """Every released QI cell is `*` on a suppressed row, else a generalization of the original at some level
    (a microaggregated cell: its class's mean or median of the original values)."""
    prepared = pipeline.prepare(data, cfg)
    kept = np.flatnonzero(~result.suppressed_rows) if cfg.drop_suppressed else np.arange(len(data["age"]))
    released = result.release
    for name in cfg.qi:
        cells = list(released.column(name))
        if name in cfg.microaggregate:
            continue
        allowed = generalizations(prepared, name)
        for cell, row in zip(cells, kept):
            assert cell == "*" if result.suppressed_rows[row] else cell in allowed[row]
    classes = {}
    for position, row in enumerate(kept):
        if not result.suppressed_rows[row]:
            key = tuple(released.column(q)[position] for q in cfg.qi if q not in cfg.microaggregate)
            classes.setdefault(key, []).append((position, row))
    for name in cfg.microaggregate:
        column = released.column(name)
        for members in classes.values():
            values = {column[p] for p, _ in members}
            originals = sorted(float(data[name][r]) for _, r in members)
            # every class as the release forms it: its rows may be one class of the search or several merged
            assert all(min(originals) - 1e-6 <= float(v) <= max(originals) + 1e-6 for v in values)


def test_local_recoding_recodes_the_suppressed_rows_at_coarser_nodes_and_suppresses_fewer() -> None:
    data = table(np.random.default_rng(3), 300)
    before = kgen.anonymize(data, config(k=5, suppression=0.1))
    after = kgen.anonymize(data, config(k=5, suppression=0.1, local_recoding=True))
    local = after.report["local_recoding"]
    assert before.report["local_recoding"] is None
    assert local["suppressed_before"] == before.report["suppressed"] > 0
    assert after.report["suppressed"] == local["suppressed_after"] < local["suppressed_before"]
    assert after.report["metrics"]["ncp"] < before.report["metrics"]["ncp"]
    assert local["groups"][0]["node"] == before.report["node"] == after.report["node"]
    assert len(local["groups"]) >= 2
    assert after.report["suppressed_rows"] == [int(r) + 1 for r in np.flatnonzero(after.suppressed_rows)]


def test_planted_bug_a_group_class_of_k_minus_1_rows_is_caught_by_the_checker(monkeypatch) -> None:
    """A recoding round that releases a class of k - 1 rows (the pipeline's own guard switched off) must not
    be published: the independent check of the written file refuses it."""
    data = table(np.random.default_rng(3), 300)
    cfg = config(k=5, suppression=0.1, local_recoding=True)
    real = recoding.recode_rows

    def planted(prepared, rows, start):  # release every row the round suppresses too, in its own small classes
        found = real(prepared, rows, start)
        if found is None:
            return None
        node, released = found
        small = np.flatnonzero(~released)[: cfg.k - 1]
        released = released.copy()
        released[small] = True
        return node, released

    monkeypatch.setattr(recoding, "recode_rows", planted)
    monkeypatch.setattr(recoding, "violating_rows", lambda prepared, rec: np.zeros(rec.group.size, dtype=bool))
    result = kgen.anonymize(data, cfg)
    with tempfile.TemporaryDirectory() as folder, pytest.raises(ReleaseCheckError):
        kgen.write_release(result, Path(folder) / "out.csv")


def test_a_recoding_round_whose_merged_classes_break_a_model_is_dropped(monkeypatch) -> None:
    """The pipeline's own guard: with every round's classes judged on the whole release, a round that breaks
    a model is dropped (here the guard reports every row of the round as breaking one)."""
    data = table(np.random.default_rng(3), 300)
    monkeypatch.setattr(recoding, "violating_rows", lambda prepared, rec: rec.group >= 1)
    result = kgen.anonymize(data, config(k=5, suppression=0.1, local_recoding=True))
    local = result.report["local_recoding"]
    assert len(local["groups"]) == 1 and local["suppressed_after"] == local["suppressed_before"]


def test_planted_bug_one_microaggregated_value_changed_splits_its_class_and_fails_the_check() -> None:
    data = table(np.random.default_rng(5), 200)
    cfg = config(k=4, suppression=0.1, microaggregate={"age": "mean"})
    result = kgen.anonymize(data, cfg)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "out.csv"
        kgen.write_release(result, path)
        written = read_csv(path)
    columns = {c: list(written.column(c)) for c in written.columns}
    assert check_k_anonymity(Table(written.columns, columns), cfg.qi, cfg.k, cfg.suppression).passed
    row = next(i for i, v in enumerate(columns["age"]) if v != "*")
    columns["age"][row] = text(float(columns["age"][row]) + 0.5)
    broken = check_k_anonymity(Table(written.columns, columns), cfg.qi, cfg.k, cfg.suppression)
    assert not broken.passed and row + 1 in broken.violating_rows


def test_class_mean_and_median_by_hand() -> None:
    values = np.array([1.0, 9.0, 2.0, 4.0, 10.0, 7.0])
    classes = np.array([0, 1, 0, 0, 1, 2])
    assert class_values(values, classes, 3, "mean").tolist() == [7 / 3, 9.5, 7.0]
    assert class_values(values, classes, 3, "median").tolist() == [2.0, 9.5, 7.0]
    assert text(7 / 3) == "2.3333" and text(40.0) == "40"


def test_microaggregation_releases_each_class_mean_and_reports_its_loss() -> None:
    data = table(np.random.default_rng(7), 150)
    result = kgen.anonymize(data, config(k=4, microaggregate={"income": "mean"}))
    figures = result.report["microaggregation"]["income"]
    released, ages = result.release.column("income"), result.release.column("age")
    groups: dict = {}
    for r in range(len(ages)):
        if not result.suppressed_rows[r]:
            key = (ages[r], result.release.column("zip")[r])
            groups.setdefault(key, []).append(r)
    sse = 0.0
    for rows in groups.values():
        original = np.array([float(data["income"][r]) for r in rows])
        assert {released[r] for r in rows} == {text(original.mean())}
        sse += float(((original - original.mean()) ** 2).sum())
    assert figures["function"] == "mean" and figures["sse"] == pytest.approx(sse)
    assert 0.0 < figures["relative_sse"] < 1.0


def test_microaggregation_refuses_a_column_that_is_not_numeric() -> None:
    data = table(np.random.default_rng(1), 40)
    data["zip"] = ["Z" + v for v in data["zip"]]
    with pytest.raises(InputError, match="needs numbers"):
        kgen.anonymize(data, config(microaggregate={"zip": "mean"}))
    with pytest.raises(InputError, match="mean or median"):
        config(microaggregate={"age": "mode"}).check()
    with pytest.raises(InputError, match="not a quasi-identifier"):
        config(microaggregate={"disease": "mean"}).check()


def test_mixed_metrics_of_one_group_are_the_node_metrics() -> None:
    data = table(np.random.default_rng(2), 120)
    prepared = pipeline.prepare(data, config())
    node = (1, 2, 1)
    suppressed = prepared.evaluator.suppressed_rows(node)
    partition = prepared.evaluator.partition(node, with_rows=True)
    bad = prepared.evaluator.violating(partition)
    expected = solution_metrics(prepared.encoded, node, partition.sizes[~bad], np.flatnonzero(suppressed))
    mixed = mixed_metrics(prepared.encoded, [node], np.where(suppressed, -1, 0), partition.sizes[~bad])
    assert mixed == pytest.approx(expected)


def test_selected_rows_cost_what_they_cost_in_the_whole_table() -> None:
    prepared = pipeline.prepare(table(np.random.default_rng(4), 100), config())
    rows = np.arange(0, 100, 7)
    sub = select_rows(prepared.encoded, rows)
    whole, part = cell_costs(prepared.encoded, "ncp"), cell_costs(sub, "ncp")
    for i in range(3):
        for level in range(prepared.encoded.qis[i].height + 1):
            assert np.array_equal(whole.leaf_cost[i][level], part.leaf_cost[i][level])


def test_apply_repeats_local_recoding_and_microaggregation_from_the_saved_report() -> None:
    data = table(np.random.default_rng(3), 300)
    result = kgen.anonymize(data, config(k=5, local_recoding=True, microaggregate={"age": "median"}))
    applied = applying.apply(data, result.report)
    assert applied.report["local_recoding"]["groups"] == result.report["local_recoding"]["groups"]
    assert applied.report["microaggregation"] == result.report["microaggregation"]
    assert list(applied.release.column("age")) == list(result.release.column("age"))
    with pytest.raises(InputError, match="microaggregation"):
        applying.validate_report(result.report | {"microaggregation": {"age": {"function": "mode"}}}, "r.json")


def test_local_recoding_and_microaggregation_are_refused_with_partitioned_runs() -> None:
    with pytest.raises(InputError, match="partitioned"):
        config(local_recoding=True, partitioned=True).check()


def write_table(path: Path, data: dict[str, list[str]]) -> None:
    lines = [",".join(data)] + [",".join(row) for row in zip(*data.values())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_command_line_run_toml_apply_and_html_carry_both_controls(tmp_path: Path, capsys) -> None:
    from kgen.cli.main import main
    from kgen.report import html

    write_table(tmp_path / "in.csv", table(np.random.default_rng(3), 300))
    hierarchy = [f"--hierarchy={name}={spec}" for name, spec in HIERARCHIES.items()]
    code = main(["anonymize", str(tmp_path / "in.csv"), "--qi", "age,zip,income", "--k", "5", "--suppression",
                 "0.1", *hierarchy, "--algorithm", "bestfirst", "--metric", "ncp", "--local-recoding",
                 "--microaggregate", "income=mean", "--keep", "disease", "--output", str(tmp_path / "out.csv")])
    printed = capsys.readouterr().out
    assert code == 0 and "local recoding:" in printed and "microaggregated income: class mean" in printed
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["verified"]["passed"] and len(report["local_recoding"]["groups"]) >= 2
    page = html.render(report)
    assert "<h2>Local recoding</h2>" in page and "<h2>Microaggregation</h2>" in page
    (tmp_path / "run.toml").write_text(
        f'input = "{tmp_path / "in.csv"}"\nqi = ["age", "zip", "income"]\nk = 5\nsuppression = 0.1\n'
        f'hierarchy = {json.dumps([h.split("=", 1)[1] for h in hierarchy])}\nalgorithm = "bestfirst"\n'
        f'metric = "ncp"\nlocal-recoding = true\nmicroaggregate = ["income=mean"]\nkeep = ["disease"]\n'
        f'output = "{tmp_path / "toml.csv"}"\nquiet = true\n', encoding="utf-8")
    assert main(["anonymize", "--config", str(tmp_path / "run.toml")]) == 0
    assert (tmp_path / "toml.csv").read_bytes() == (tmp_path / "out.csv").read_bytes()
    assert main(["apply", str(tmp_path / "in.csv"), "--report", str(tmp_path / "out.json"), "--output",
                 str(tmp_path / "applied.csv")]) == 0
    assert "local recoding:" in capsys.readouterr().out
    assert (tmp_path / "applied.csv").read_bytes() == (tmp_path / "out.csv").read_bytes()


def test_the_greedy_climb_for_large_boxes_recodes_rows_into_a_release_that_passes_the_check(monkeypatch) -> None:
    data = table(np.random.default_rng(3), 300)
    monkeypatch.setattr(recoding, "EXACT_NODES", 0)  # every round climbs
    climbed = kgen.anonymize(data, config(k=5, suppression=0.1, local_recoding=True))
    local = climbed.report["local_recoding"]
    assert local["suppressed_after"] < local["suppressed_before"] and local["ncp_after"] < local["ncp_before"]
    with tempfile.TemporaryDirectory() as folder:
        kgen.write_release(climbed, Path(folder) / "out.csv")
    assert climbed.report["verified"]["passed"]
