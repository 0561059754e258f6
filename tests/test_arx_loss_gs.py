"""ARX's Loss with its generalization/suppression factor (`--metric arx-loss:G`, ARX's `createLossMetric(G)`):
hand-computed values, the default G = 0.5 equal to `arx-loss`, the one parser of metric names, and the command
line (one-line refusals, the score line, `kgen apply` keeping the metric)."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from test_arx_metrics import prepared

from fitness.objective import ArxLoss, gs_factors, parse_metric, weighted_loss_per_qi
from kgen import Config, from_mapping, prepare
from kgen.cli.main import main
from lattice.errors import InputError

# Node (1, 0), k = 2 (test_arx_metrics' table): rows 10/a and 20/b are suppressed, 30/c and 70/c released.
# Domain shares m/D: age at level 1 covers 2 of 4 leaves (1/2 each row), c at level 0 1 of 3 (1/3).
# G = 0.1: g = 1, s = 0.2; a suppressed cell costs m/D + s (1 - m/D). age: (4 * 1/2 + 2 * 0.2 * 1/2 - 1) / (4 - 1)
# = 2/5; c: (4/3 + 2 * 0.2 * 2/3 - 4/3) / (4 - 4/3) = 1/10. G = 0.9: g = 0.2, s = 1. age: (0.2 * 2 + 2 * 0.9 -
# 0.2) / (4 - 0.2) = 10/19; c: (0.2 * 4/3 + 2 * (1 - 0.2/3) - 0.2 * 4/3) / (4 - 0.2 * 4/3) = 1/2. G = 0.5 is ARX's
# default (age 2/3, c 1/2). Each score is ARX's geometric mean sqrt((a + 1)(c + 1)) - 1.
EXPECTED = {"arx-loss:0.1": (Fraction(2, 5), Fraction(1, 10)), "arx-loss:0.9": (Fraction(10, 19), Fraction(1, 2)),
            "arx-loss:0.5": (Fraction(2, 3), Fraction(1, 2)), "arx-loss": (Fraction(2, 3), Fraction(1, 2))}


@pytest.mark.parametrize("metric", list(EXPECTED))
def test_arx_loss_with_a_gs_factor_matches_the_hand_computed_value(metric: str) -> None:
    age, c = EXPECTED[metric]
    got = prepared(metric, 2).evaluator.evaluate((1, 0)).loss
    assert got == pytest.approx(math.sqrt((age + 1) * (c + 1)) - 1, abs=1e-12)


def test_the_gs_factor_sets_arxs_two_weights() -> None:
    assert gs_factors(0.5) == (1.0, 1.0) and gs_factors(0.1) == (1.0, pytest.approx(0.2))
    assert gs_factors(0.9) == (pytest.approx(0.2), 1.0) and gs_factors(0.0) == (1.0, 0.0)
    assert gs_factors(1.0) == (0.0, 1.0)


def test_the_weighted_formula_at_arxs_default_is_arx_loss_on_random_tables() -> None:
    """The general formula (g = s = 1) against the cell-cost path `arx-loss` takes, with rows suppressed."""
    rng = random.Random(7)
    for _ in range(20):
        data = {"a": [str(rng.randrange(6)) for _ in range(40)], "b": [str(rng.randrange(4)) for _ in range(40)]}
        p = prepare(from_mapping(data), Config(qi=["a", "b"], k=3, suppression=1.0, metric="arx-loss",
                                               keep_unnamed=True), require_feasible=False)
        node = p.box.random_node(rng)
        partition = p.evaluator.partition(node, True)
        rows = np.flatnonzero(p.evaluator.violating(partition)[partition.rows])
        default = ArxLoss().per_qi(node, p.encoded, rows)
        assert weighted_loss_per_qi(node, p.encoded, rows, 1.0, 1.0) == pytest.approx(default, abs=1e-12)


def test_a_lower_gs_factor_makes_suppression_cheaper_not_generalization() -> None:
    """G = 0.1 charges a suppressed cell less than G = 0.5 and a generalized one the same."""
    nothing_suppressed = prepared("arx-loss:0.1", 1).evaluator.evaluate((1, 1)).loss
    assert nothing_suppressed == pytest.approx(prepared("arx-loss", 1).evaluator.evaluate((1, 1)).loss, abs=1e-12)
    assert prepared("arx-loss:0.1", 2).evaluator.evaluate((1, 0)).loss < \
        prepared("arx-loss", 2).evaluator.evaluate((1, 0)).loss


@pytest.mark.parametrize("text", ["arx-loss:2", "arx-loss:-0.1", "arx-loss:x", "arx-loss:", "loss:0.1", "nope",
                                  "arx-loss:nan"])
def test_a_metric_name_kgen_does_not_know_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError, match="metric"):
        parse_metric(text)
    with pytest.raises(InputError, match="metric"):
        Config(qi=["a"], k=2, metric=text).check()


def test_the_parser_gives_the_objective_and_its_gs_factor() -> None:
    assert parse_metric("arx-loss:0.1") == ("arx-loss", 0.1) and parse_metric("log") == ("log", None)
    assert parse_metric("arx-loss") == ("arx-loss", None)


def test_the_command_line_runs_it_reports_arxs_score_and_apply_keeps_it(tmp_path: Path, capsys) -> None:
    data = tmp_path / "t.csv"
    data.write_text("age,zip\n" + "".join(f"{20 + i % 7},{100 + i % 5}\n" for i in range(60)), encoding="utf-8")
    base = ["anonymize", str(data), "--qi", "age,zip", "--k", "4", "--suppression", "0.2", "--algorithm", "bestfirst"]
    assert main([*base, "--metric", "arx-loss:0.1", "--output", str(tmp_path / "o.csv")]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert report["metric"] == "arx-loss:0.1"
    assert f"ARX's score: {report['loss']!r}" in out and report["metrics"]["arx-loss:0.1"] == report["loss"]
    assert main(["apply", str(data), "--report", str(tmp_path / "o.json"), "--output", str(tmp_path / "a.csv")]) == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "o.csv").read_bytes()
    assert json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["metric"] == "arx-loss:0.1"
    capsys.readouterr()
    assert main([*base, "--metric", "arx-loss:1.5", "--output", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gs-factor after 'arx-loss:' must be a number in [0, 1]" in err
