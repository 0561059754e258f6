"""ARX's metric variants under suppression (issue 27 item 5; docs/metrics.md "ARX's metrics"): hand-computed
values on a four-row table, each next to the figure a plausible wrong reading of ARX's code would give (so
the test fails on that bug), the declared monotonicity, and the array device giving the CPU's evaluations."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitness import xp_kernel
from fitness.device_evaluator import DeviceEvaluator
from fitness.evaluator import NodeEvaluator
from fitness.metrics import block_entropy, dm_star, geometric_aggregate
from fitness.models import KAnonymity
from fitness.objective import OBJECTIVES, ArxLoss, make_objective
from kgen import Config, from_mapping, prepare
from kgen.cli.main import main
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy

AGE = Hierarchy.from_rows("age", [["10", "lo", "*"], ["20", "lo", "*"], ["30", "hi", "*"], ["70", "hi", "*"]])
# the same with a leaf the data lacks (as ARX's Adult age hierarchy lists ages 1..100, the data 72 of them)
AGE_WIDE = Hierarchy.from_rows("age", [["10", "lo", "*"], ["20", "lo", "*"], ["30", "hi", "*"], ["70", "hi", "*"],
                                       ["90", "hi", "*"]])
CAT = Hierarchy.from_rows("c", [["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]])
DATA = {"age": ["10", "20", "30", "70"], "c": ["a", "b", "c", "c"]}
ARX = ["arx-entropy", "arx-entropy-nm", "arx-dm", "arx-loss", "arx-precision"]


def prepared(metric: str, k: int, age: Hierarchy = AGE, suppression: float = 1.0):
    config = Config(qi=["age", "c"], k=k, suppression=suppression, hierarchies={"age": age, "c": CAT},
                    metric=metric, prune=False, keep_unnamed=True, allow_k1=True)
    return prepare(from_mapping(DATA), config, require_feasible=False)


# Node (1, 0) with k = 2: classes (lo, a), (lo, b) of one row each are suppressed; (hi, c) of two is released.
# Entropy in bits: age at level 1 costs -log2(1/2) = 1 per row (4), c at level 0 costs 0; the normalizer of the
# monotonic variant is the fully generalized table's 4 * 2 + (2 + 2 + 1 + 1) = 14. The non-monotonic variant
# adds the suppressed block per QI at the node's level: age {lo: 2} -> 0, c {a: 1, b: 1} -> 2; divided by
# 2 q n log2 n = 32. DM* = 1 + 1 + 4 (each suppressed class the class it is). ARX's Loss: age (1/3 + 1/3 + 2) / 4
# = 2/3, c 2/4 = 1/2 (a suppressed cell costs 1), geometric mean sqrt(5/3 * 3/2) - 1. ARX's precision: age
# (2 * 1/2 + 2) / 4 = 3/4, c (2 * 0 + 2) / 4 = 1/2, arithmetic mean 5/8.
EXPECTED = {
    "arx-entropy": Fraction(4, 14),
    "arx-entropy-nm": Fraction(6, 32),
    "arx-dm": Fraction(6, 16),
    "arx-loss": math.sqrt(2.5) - 1,
    "arx-precision": Fraction(5, 8),
}
# What a wrong reading would give at the same node: entropy charging suppressed cells fully generalized (kgen's
# `entropy`: 2 + 8 = 10 bits), the block read at leaf level (age {10: 1, 20: 1} -> 2 more bits), DM charging n
# per suppressed row (4 + 2 * 4 = 12), Loss averaged arithmetically ((2/3 + 1/2) / 2), precision that ignores
# suppression (LOG: (1/2 + 0) / 2).
WRONG = {
    "arx-entropy": Fraction(10, 14),
    "arx-entropy-nm": Fraction(8, 32),
    "arx-dm": Fraction(12, 16),
    "arx-loss": Fraction(7, 12),
    "arx-precision": Fraction(1, 4),
}


@pytest.mark.parametrize("metric", ARX)
def test_arx_metric_matches_hand_computation_with_suppressed_rows(metric: str) -> None:
    e = prepared(metric, 2).evaluator.evaluate((1, 0))
    assert e.suppressed == 2
    assert e.loss == pytest.approx(float(EXPECTED[metric]), abs=1e-12)
    assert e.loss != pytest.approx(float(WRONG[metric]), abs=1e-6)


def test_arx_loss_measures_shares_of_the_hierarchys_domain_not_of_the_datas_values() -> None:
    """With leaf 90 in the hierarchy only, `hi` covers 3 of 5 leaves: (3 - 1) / (5 - 1) = 1/2 per row, `lo` 1/4;
    age's loss at node (1, 1) is (1/4 + 1/4 + 1/2 + 1/2) / 4 = 3/8, c's (1/2 + 1/2) / 4 = 1/4. Counting the data's
    four leaves instead gives 1/3 for both ages (Fraction(1, 3) per row)."""
    wide = prepared("arx-loss", 1, AGE_WIDE).evaluator.evaluate((1, 1)).loss
    assert wide == pytest.approx(math.sqrt(Fraction(11, 8) * Fraction(5, 4)) - 1, abs=1e-12)
    narrow = prepared("arx-loss", 1, AGE).evaluator.evaluate((1, 1)).loss
    assert narrow == pytest.approx(math.sqrt(Fraction(4, 3) * Fraction(5, 4)) - 1, abs=1e-12)
    assert wide != pytest.approx(narrow, abs=1e-6)


def test_the_formulas_on_their_own() -> None:
    assert block_entropy(np.array([2, 1, 1, 0])) == pytest.approx(2 * 1 + 1 * 2 + 1 * 2)
    assert block_entropy(np.array([3])) == 0.0 and block_entropy(np.zeros(2, dtype=int)) == 0.0
    assert dm_star(np.array([1, 1, 2])) == 6.0
    assert geometric_aggregate(np.array([1.0, 1.0, 1.0])) == 1.0  # clipped: the product of cube roots of 2
    assert geometric_aggregate(np.array([0.0, 0.0])) == 0.0 and geometric_aggregate(np.zeros(0)) == 0.0


def test_each_arx_metric_declares_its_monotonicity() -> None:
    """ARX's monotonic entropy and DM* ignore suppression (monotone whatever is suppressed); the non-monotonic
    entropy and ARX's Loss are monotone only among nodes that suppress nothing."""
    flags = {m: (make_objective(m).monotone, make_objective(m).monotone_without_suppression) for m in ARX}
    assert flags == {"arx-entropy": (True, True), "arx-entropy-nm": (False, True), "arx-dm": (True, True),
                     "arx-loss": (False, True), "arx-precision": (False, True)}


@pytest.mark.parametrize("metric", ["arx-entropy-nm", "arx-loss"])
def test_non_monotone_arx_metrics_fall_when_a_level_releases_suppressed_rows(metric: str) -> None:
    """Rows a, b, c, d alone at level 0 are suppressed with k = 2 (a block of four distinct values: 8 bits; four
    suppressed cells for Loss); at level 1 they form the classes ac and bd and the loss drops."""
    h = Hierarchy.from_rows("x", [["a", "ac", "*"], ["c", "ac", "*"], ["b", "bd", "*"], ["d", "bd", "*"],
                                  ["z", "z", "*"]])
    config = Config(qi=["x"], k=2, suppression=0.4, hierarchies={"x": h}, metric=metric, prune=False,
                    keep_unnamed=True)
    evaluator = prepare(from_mapping({"x": ["a", "b", "c", "d"] + ["z"] * 6}), config).evaluator
    assert evaluator.evaluate((1,)).loss < evaluator.evaluate((0,)).loss
    assert not evaluator.monotone_loss


def test_arx_precision_falls_when_a_level_releases_suppressed_rows() -> None:
    """Rows a, b, c, d alone at level 0 are suppressed with k = 2: (2 * 0 + 4) / 6 = 2/3; at level 1 every row
    is released at x / h = 1/2."""
    h = Hierarchy.from_rows("x", [["a", "ac", "*"], ["c", "ac", "*"], ["b", "bd", "*"], ["d", "bd", "*"],
                                  ["z", "z", "*"]])
    config = Config(qi=["x"], k=2, suppression=0.7, hierarchies={"x": h}, metric="arx-precision", prune=False,
                    keep_unnamed=True)
    evaluator = prepare(from_mapping({"x": ["a", "b", "c", "d", "z", "z"]}), config).evaluator
    assert evaluator.evaluate((0,)).loss == pytest.approx(2 / 3) and evaluator.evaluate((1,)).loss == 0.5
    assert not evaluator.monotone_loss


ROWS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=4, max_size=25)


@settings(max_examples=25, deadline=None)
@given(ROWS, st.integers(1, 4), st.sampled_from([0.0, 0.2, 1.0]))
def test_monotone_arx_metrics_never_fall_whatever_is_suppressed(rows: list, k: int, suppression: float) -> None:
    hx = Hierarchy.from_rows("x", [[str(v), "lo" if v < 2 else "hi", "*"] for v in range(4)])
    hy = Hierarchy.from_rows("y", [[str(v), "*"] for v in range(3)])
    data = {"x": [str(r[0]) for r in rows], "y": [str(r[1]) for r in rows]}
    nodes = list(itertools.product(range(3), range(2)))
    for metric in ("arx-entropy", "arx-dm"):
        config = Config(qi=["x", "y"], k=k, suppression=suppression, hierarchies={"x": hx, "y": hy}, metric=metric,
                        prune=False, keep_unnamed=True, allow_k1=True)
        evaluator = prepare(from_mapping(data), config, require_feasible=False).evaluator
        assert evaluator.monotone_loss
        loss = {n: evaluator.evaluate(n).loss for n in nodes}
        for a, b in itertools.product(nodes, nodes):
            if all(x <= y for x, y in zip(a, b)):
                assert loss[a] <= loss[b] + 1e-12, (metric, a, b)


@pytest.mark.parametrize("metric", ARX)
def test_array_device_gives_the_cpu_evaluations_for_arx_metrics(metric: str) -> None:
    """`arx-precision` follows from the node and the suppressed count and runs on the device; the others read
    more than the device sends back (the table's value counts, the suppressed rows), so the evaluator falls
    back to the CPU and says so. Either way every evaluation is the CPU evaluator's."""
    rng = np.random.default_rng(3)
    data = {"age": [str(v) for v in rng.choice([10, 20, 30, 70], 40)], "c": list(rng.choice(["a", "b", "c"], 40))}
    config = Config(qi=["age", "c"], k=4, suppression=0.3, hierarchies={"age": AGE_WIDE, "c": CAT}, metric=metric,
                    prune=False, keep_unnamed=True)
    table = prepare(from_mapping(data), config, require_feasible=False).encoded
    objective = make_objective(metric)
    cpu = NodeEvaluator(table, [KAnonymity(4)], 0.3, objective)
    device = DeviceEvaluator(table, [KAnonymity(4)], 0.3, objective, backend=xp_kernel.NUMPY)
    if metric == "arx-precision":
        assert device.on_device and device.fallback_reason is None
    else:
        assert not device.on_device and device.fallback_reason == f"metric {metric} evaluated on the CPU"
    nodes = list(itertools.product(range(3), range(3)))
    assert device.evaluate_many(nodes) == [cpu.evaluate(n) for n in nodes]


def test_arx_metrics_refuse_weights_and_are_offered_by_the_cli() -> None:
    for metric in ARX:
        assert metric in OBJECTIVES
        with pytest.raises(InputError, match="takes no weights"):
            make_objective(metric, [2.0, 1.0])
    assert isinstance(make_objective("arx-loss"), ArxLoss)


def test_anonymize_with_an_arx_metric_reports_arxs_score_and_apply_keeps_it(tmp_path, capsys) -> None:
    source = tmp_path / "in.csv"
    source.write_text("age,c\n" + "".join(f"{a},{c}\n" for a, c in zip(DATA["age"] * 3, DATA["c"] * 3)))
    ages, cats = tmp_path / "age.csv", tmp_path / "c.csv"
    ages.write_text("".join(";".join(r) + "\n" for r in [["10", "lo", "*"], ["20", "lo", "*"], ["30", "hi", "*"],
                                                         ["70", "hi", "*"], ["90", "hi", "*"]]))
    cats.write_text("a;ab;*\nb;ab;*\nc;c;*\n")
    out = tmp_path / "out.csv"
    args = ["anonymize", str(source), "--qi", "age,c", "--k", "4", "--suppression", "0.5", "--metric", "arx-dm",
            "--hierarchy", f"age={ages}", "--hierarchy", f"c={cats}", "--output", str(out)]
    assert main(args) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["metric"] == "arx-dm" and report["loss"] == pytest.approx(report["metrics"]["arx-dm"])
    assert report["metrics"]["dm_star"] == pytest.approx(report["loss"] * 12 * 12)
    assert "ARX's score: " in capsys.readouterr().out
    again = tmp_path / "again.csv"
    assert main(["apply", str(source), "--report", str(out.with_suffix(".json")), "--output", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
    applied = json.loads(again.with_suffix(".json").read_text())
    assert applied["metric"] == "arx-dm" and applied["loss"] == pytest.approx(report["loss"])


def test_average_risk_suppresses_the_equal_sized_class_whose_first_row_comes_first() -> None:
    """ARX orders classes of equal size by their representative (first) row when it suppresses the smallest
    for a risk threshold; which one goes decides the released rows (and ARX's RiskBased case 0 score). Classes
    q (row 0), p (row 1), r (rows 2-4): risk 3/5 > 0.5; suppressing one singleton gives 2/4. `q` comes first
    although `p` sorts first by value."""
    from fitness.privacy.average_risk import AverageRisk

    h = Hierarchy.from_rows("x", [["p", "*"], ["q", "*"], ["r", "*"]])
    config = Config(qi=["x"], k=1, suppression=0.5, hierarchies={"x": h}, prune=False, keep_unnamed=True,
                    allow_k1=True)
    table = prepare(from_mapping({"x": ["q", "p", "r", "r", "r"]}), config, require_feasible=False).encoded
    evaluator = NodeEvaluator(table, [KAnonymity(1), AverageRisk(0.5)], 0.5)
    assert evaluator.suppressed_rows((0,)).tolist() == [True, False, False, False, False]


def test_arx_metrics_of_a_locally_recoded_release_charge_suppressed_rows_at_the_global_node() -> None:
    """Rows at nodes[group]: row 0 at (1, 0), row 1 at (0, 1), row 2 suppressed, row 3 at (1, 0). ARX's Loss:
    age (1/3 + 0 + 1 + 1/3) / 4 = 5/12, c (0 + 1/2 + 1 + 0) / 4 = 3/8. Entropy: age 1 + 0 + 1 + 1 bits (row 2
    at the global node's level 1), c 0 + 1 + 0 + 0; a block of one row adds nothing. DM*: three released
    singletons and the suppressed row's class at the global node. Precision: age (2 * 1/2 + 0 + 1) / 4, c
    (0 + 1/2 + 1) / 4: mean 7/16."""
    from fitness.objective import mixed_metrics

    table = prepared("arx-loss", 1).encoded
    m = mixed_metrics(table, [(1, 0), (0, 1)], np.array([0, 1, -1, 0]), np.array([1, 1, 1]))
    assert m["arx-loss"] == pytest.approx(math.sqrt(Fraction(17, 12) * Fraction(11, 8)) - 1, abs=1e-12)
    assert m["arx_entropy_bits"] == pytest.approx(4.0) and m["arx_entropy_nm_bits"] == pytest.approx(4.0)
    assert m["dm_star"] == 4.0 and m["arx-entropy"] == pytest.approx(4 / 14)
    assert m["arx-precision"] == pytest.approx(7 / 16)
