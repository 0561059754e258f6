"""The experiment framework: one CSV row per run with the documented columns, time-outs as missing points,
accuracy against the exact optimum, figures drawn from the CSVs, a clear error without the shared data."""

from __future__ import annotations

import csv
import json

import pytest

from experiments import common, paper, plots
from experiments.common import FIELDS, Method, Plan, load_fraud, read_rows, run_plan
from kgen.run.algorithms import REGISTRY
from lattice.errors import InputError

EXHAUSTIVE = Method("exhaustive", "exhaustive", exact=True, all_minimal=True)


@pytest.fixture(scope="module")
def fraud():
    return load_fraud()


def test_a_run_writes_one_row_per_run_with_every_column(fraud, tmp_path):
    out = tmp_path / "fraud.csv"
    rows = run_plan(Plan("fraud", (2, 3), (EXHAUSTIVE,), time_limit=60), fraud, out, log=lambda _: None)
    with open(out, newline="") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == FIELDS
        written = list(reader)
    assert written == rows and [r["q"] for r in written] == ["2", "3"]
    for row in written:
        assert row["stopped"] == "complete" and row["timed_out"] == "False"
        assert float(row["accuracy"]) == 1.0 and float(row["gap"]) == 0.0
        assert float(row["log"]) == float(row["optimum_log"]) and row["optimum_source"] == "exhaustive"
        assert len(row["node"].split()) == int(row["q"]) and int(row["evaluations"]) == int(row["box_size"])


def test_a_timed_out_exact_method_is_a_missing_point_and_is_not_restarted(fraud):
    rows = run_plan(Plan("fraud", (2, 3), (EXHAUSTIVE,), time_limit=0.0), fraud, None, log=lambda _: None)
    assert [(r["stopped"], r["timed_out"]) for r in rows] == [("time", "True"), ("skipped", "True")]
    assert all(r["accuracy"] == "" and r["optimum_log"] == "" for r in rows)


@pytest.mark.skipif("random" not in REGISTRY, reason="random search not registered")
def test_stochastic_runs_get_a_row_per_seed_scored_against_the_optimum(fraud):
    random = Method("random", "random", {}, (0, 1, 2), max_evaluations=5)
    rows = run_plan(Plan("fraud", (4,), (EXHAUSTIVE, random), time_limit=60), fraud, None, log=lambda _: None)
    stochastic = [r for r in rows if r["algorithm"] == "random"]
    assert [r["seed"] for r in stochastic] == ["0", "1", "2"]
    for row in stochastic:
        assert int(row["evaluations"]) <= 5
        assert 0.0 <= float(row["accuracy"]) <= 1.0
        if row["log"]:
            assert float(row["gap"]) >= 0.0


def test_a_search_that_refuses_the_lattice_is_a_missing_point_and_is_not_restarted(fraud, monkeypatch):
    class Refuses:
        name = "refuses"

        def run(self, problem, limits):
            raise InputError("the search box is too large")

    monkeypatch.setitem(REGISTRY, "refuses", Refuses)
    method = Method("refuses", "refuses", exact=True)
    rows = run_plan(Plan("fraud", (2, 3), (EXHAUSTIVE, method), time_limit=60), fraud, None, log=lambda _: None)
    refused = [(r["q"], r["stopped"], r["timed_out"], r["log"]) for r in rows if r["algorithm"] == "refuses"]
    assert refused == [("2", "refused", "False", ""), ("3", "skipped", "False", "")]
    assert all(r["optimum_source"] == "exhaustive" for r in rows)


def test_best_first_gives_the_optimal_log_but_not_the_optimal_set(fraud):
    bestfirst = Method("bestfirst", "bestfirst", exact=True)
    if "bestfirst" not in REGISTRY:
        pytest.skip("best-first search not registered")
    rows = run_plan(Plan("fraud", (4,), (bestfirst,), time_limit=60), fraud, None, log=lambda _: None)
    assert rows[0]["gap"] == "0" and rows[0]["accuracy"] == "" and rows[0]["optimum_source"] == "bestfirst"
    rows = run_plan(Plan("fraud", (4,), (EXHAUSTIVE, bestfirst), time_limit=60), fraud, None, log=lambda _: None)
    assert [(r["algorithm"], r["accuracy"], r["gap"]) for r in rows] == [("exhaustive", "1", "0"),
                                                                        ("bestfirst", "", "0")]


def test_exact_methods_that_disagree_on_the_optimum_are_an_error():
    class Fake:
        def __init__(self, log):
            self.stopped, self.minimal = "complete", [(0,)]
            self.best = type("E", (), {"log": log})()

    a, b = Method("a", "a", exact=True, all_minimal=True), Method("b", "b", exact=True)
    assert common.find_optimum([(a, Fake(0.5)), (b, Fake(0.5))]).log == 0.5
    with pytest.raises(RuntimeError, match="disagree"):
        common.find_optimum([(a, Fake(0.5)), (b, Fake(0.6))])


def test_the_command_line_writes_csvs_figures_and_the_environment(tmp_path):
    code = paper.main(["--quick", "--datasets", "fraud", "--methods", "exhaustive", "--qs", "2,3",
                       "--out", str(tmp_path), "--no-convergence"])
    assert code == 0
    assert [r["q"] for r in read_rows(tmp_path / "fraud.csv")] == ["2", "3"]
    for name in ("fig7_time.png", "fig8_accuracy.png", "fig9_log.png", "fig10_los.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    info = json.loads((tmp_path / "environment.json").read_text())
    assert info["mode"] == "quick" and info["datasets"] == ["fraud"]


def test_the_convergence_plot_is_drawn_from_its_csv(tmp_path):
    meta = json.dumps({"dataset": "cargo2000", "q": 25, "seed": 0, "max_evaluations": 10})
    with open(tmp_path / "convergence.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["run", "algorithm", "generation", "evaluations", "best_log", "feasible_fraction",
                         "seconds", "optimum_log", "meta"])
        writer.writerows([["kgen", "kgen", 0, 5, "", 0.0, 0.1, "", meta],
                          ["kgen", "kgen", 1, 10, 0.9, 0.2, 0.2, "", meta]])
    assert plots.convergence_figure(tmp_path) == tmp_path / "convergence.png"


def test_missing_shared_data_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "SHARED", tmp_path / "shared")
    with pytest.raises(common.DataMissing, match="not found"):
        common.load_cargo()


def test_cargo_has_the_papers_3942_rows_without_the_trailing_line_of_commas():
    if not (common.SHARED / "data" / "cargo2000" / "c2k_data_comma.csv").exists():
        pytest.skip("shared Cargo 2000 data absent")
    cargo = common.load_cargo()
    assert cargo.table.n == 3942 and len(cargo.candidates) == 97
    assert all(v != "" for v in cargo.table.column("nr"))


@pytest.mark.slow  # over 5 s: runs in .ci/run's second step
def test_plots_redraw_into_the_out_folder_and_leave_the_results_folder_untouched(tmp_path):
    results = common.RESULTS
    before = {p.name: p.stat().st_mtime_ns for p in results.glob("*.png")}
    out = tmp_path / "figures"
    assert plots.main(["--out", str(out)]) == 0
    written = sorted(p.name for p in out.glob("*.png"))
    assert {"fig7_time.png", "fig10_los.png", "convergence.png"} <= set(written)
    assert all((out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in written)
    assert {p.name: p.stat().st_mtime_ns for p in results.glob("*.png")} == before


def test_los_figure_draws_the_suppression_limit_and_no_label_points_to_the_spec(tmp_path):
    import matplotlib.pyplot as plt

    rows = read_rows(common.RESULTS / "fraud.csv")
    fig, ax = plt.subplots()
    plots.draw_panel(ax, rows, "los", "fraud")
    limit = [line for line in ax.get_lines() if line.get_label().startswith("suppression limit")]
    assert limit and set(limit[0].get_ydata()) == {plots.SUPPRESSION_LIMIT}
    assert ax.get_legend() is not None and ax.get_legend().get_bbox_to_anchor().y0 < ax.bbox.y0  # below the axes
    plt.close(fig)
    for _, _, ylabel, title in plots.FIGURES.values():
        assert "SPEC" not in ylabel + title and "§" not in ylabel + title


def test_the_convergence_plot_is_drawn_against_evaluations(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    captured = {}
    original = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        captured["x"] = [list(line.get_xdata()) for line in fig.axes[0].get_lines()]
        captured["label"] = fig.axes[1].get_xlabel()
        return original(fig, *args, **kwargs)

    meta = json.dumps({"dataset": "cargo2000", "q": 25, "seed": 0, "max_evaluations": 300})
    with open(tmp_path / "convergence.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["run", "algorithm", "generation", "evaluations", "best_log", "feasible_fraction",
                         "seconds", "optimum_log", "meta"])
        writer.writerows([["kgen", "kgen", 0, 100, 0.9, 0.1, 0.1, "", meta],
                          ["kgen", "kgen", 1, 200, 0.8, 0.5, 0.2, "", meta],
                          ["kgen+", "kgen+", 0, 40, 0.95, 0.2, 0.1, "", meta]])
    monkeypatch.setattr(plt.Figure, "savefig", keep)
    plots.convergence_figure(tmp_path, tmp_path / "out")
    assert captured["x"] == [[100, 200], [40]] and "evaluations" in captured["label"]
    assert (tmp_path / "out" / "convergence.png").exists()
