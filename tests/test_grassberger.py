"""Entropy l-diversity with Grassberger's estimator (issue 27; ARX's `EntropyEstimator.GRASSBERGER`): G and
H_G against hand computation, the evaluator's and the checker's G (two derivations) against each other, the
monotonicity kgen declares (decided by brute force over every node and successor of random tables), every exact
search against exhaustive search, the checker rule against a release off by one row, and the option through
every command (anonymize, run.toml, Config, summary, report, check, apply)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_office_models_commands import release, verdict

from fitness import xp_kernel
from fitness.device_evaluator import DeviceEvaluator
from fitness.evaluator import NodeEvaluator
from fitness.grassberger import grassberger_entropy, grassberger_g
from fitness.models import EntropyLDiversity, KAnonymity, l_diversity
from fitness.partition import Partition
from fitness.privacy import read_model
from kgen import Config, anonymize, prepare
from kgen.check.rules import grassberger as grassberger_rule
from kgen.check.rules import rules_from_models
from kgen.check.rules.grassberger import grassberger_function
from kgen.cli.main import main
from lattice.errors import InputError, NoSolutionError
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.certify import Certify
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.ola import OLA

C = -0.5772156649015329 - math.log(2.0)  # G(1) = -gamma - ln 2


def h_g(*counts: int) -> float:
    """H_G of one class with these value counts (the evaluator's code)."""
    return float(grassberger_entropy(np.array(counts), np.zeros(len(counts), dtype=np.int64), 1)[0])


# --- G and H_G by hand -----------------------------------------------------------------------------------------

def test_g_is_grassbergers_sum_at_small_counts() -> None:
    # G(2m) = G(2m + 1) = -gamma - ln 2 + sum_{k<=m} 2 / (2k - 1)
    expected = [C, C + 2, C + 2, C + 2 + 2 / 3, C + 2 + 2 / 3, C + 2 + 2 / 3 + 2 / 5]
    assert grassberger_g(np.arange(1, 7)).tolist() == pytest.approx(expected, abs=1e-14)


def test_g_equals_arxs_tabulated_values_and_the_logarithm_far_out() -> None:
    # ARX's table (EntropyLDiversity.java, facts): G_1, G_2, G_10, G_100
    arx = {1: -1.2703628454614782, 2: 0.7296371545385218, 10: 2.3042403291416966, 100: 4.605186851488337}
    assert grassberger_g(np.array(list(arx))).tolist() == pytest.approx(list(arx.values()), abs=1e-13)
    # far out G(2m) = ln(2m) + 1/(24 m^2) - ... (the digamma expansion ARX uses beyond 100)
    assert float(grassberger_g(np.array([20000]))[0]) == pytest.approx(math.log(20000) + 1 / (24 * 1e8), abs=1e-13)


def test_the_checkers_g_from_digamma_equals_the_evaluators_closed_form() -> None:
    n = np.arange(1, 5001)
    assert np.allclose(grassberger_function(n), grassberger_g(n), rtol=0, atol=1e-11)


def test_h_g_of_hand_computed_classes() -> None:
    assert h_g(7) == pytest.approx(0.0, abs=1e-14)  # one value: G(N) - G(N)
    assert h_g(1, 1, 1, 1, 1) == pytest.approx(8 / 3)  # G(5) - G(1) = 2 + 2/3
    assert h_g(2, 2, 2, 2, 2) == pytest.approx(2 / 3 + 2 / 5 + 2 / 7 + 2 / 9)  # G(10) - G(2)
    assert h_g(3, 1) == pytest.approx(8 / 3 - 6 / 4)  # G(4) - (3 G(3) + G(1)) / 4
    assert h_g(2, 1, 1, 1, 1) == pytest.approx(2 + 2 / 3 + 2 / 5 - 4 / 6)  # G(6) - 2 G(2) / 6 - 4 G(1) / 6


def classes(*groups: tuple[int, ...]) -> tuple[Partition, object]:
    """A partition of one class per group and a sensitive column `s` holding each group's value counts."""
    rows, values = [], []
    for c, counts in enumerate(groups):
        for v, n in enumerate(counts):
            rows += [c] * n
            values += [f"v{v}"] * n
    table = prepare({"q": [str(r) for r in rows], "s": values},
                    Config(qi=["q"], k=1, sensitive=["s"], allow_k1=True)).encoded
    row_class = np.array(rows, dtype=np.int64)
    return Partition(np.bincount(row_class), row_class), table


def test_grassberger_accepts_a_small_class_that_shannon_rejects() -> None:
    # {2, 1, 1, 1, 1}: Shannon ln 6 - (2 ln 2) / 6 = 1.561 < ln 5; H_G = 2.4 >= ln 5
    partition, table = classes((2, 1, 1, 1, 1))
    assert EntropyLDiversity("s", 5).violating(partition, table).tolist() == [True]
    assert EntropyLDiversity("s", 5, "grassberger").violating(partition, table).tolist() == [False]


def test_a_class_with_fewer_than_ceil_l_values_breaks_it_whatever_its_estimate() -> None:
    # two single rows: H_G = G(2) - G(1) = 2 >= ln 7 = 1.946, but 2 values < 7 (ARX's minimal class size)
    partition, table = classes((1, 1), (1, 1, 1, 1, 1, 1, 1))
    model = EntropyLDiversity("s", 7, "grassberger")
    assert h_g(1, 1) == pytest.approx(2.0) and h_g(1, 1) > math.log(7)
    assert model.violating(partition, table).tolist() == [True, False]
    assert model.min_class_size == 7 and EntropyLDiversity("s", 2.5, "grassberger").min_class_size == 3


def test_merging_two_diverse_classes_can_break_it_so_it_is_declared_not_monotone() -> None:
    # {1,1,1,1,1} twice: H_G = 2.667 >= ln 5 each; merged {2,2,2,2,2}: 1.575 < ln 5. Shannon: ln 5 throughout
    apart, table = classes((1, 1, 1, 1, 1), (1, 1, 1, 1, 1))
    rows = np.zeros(10, dtype=np.int64)
    merged = Partition(np.bincount(rows), rows)
    model = EntropyLDiversity("s", 5, "grassberger")
    assert not model.violating(apart, table).any() and model.violating(merged, table).all()
    assert (model.monotone, model.monotone_with_suppression) == (False, False)
    assert (EntropyLDiversity("s", 5).monotone, EntropyLDiversity("s", 5).monotone_with_suppression) == (True, False)


def random_table(rng: np.random.Generator, n: int, values: int) -> tuple[dict[str, list[str]], Config]:
    """Two QIs of whole numbers 0..31 (interval hierarchies of 2, 4, 8, 16: 6 levels each) and a sensitive
    column of `values` values."""
    columns = {f"q{j}": [str(v) for v in rng.integers(0, 32, n)] for j in range(2)}
    columns["s"] = [f"s{v}" for v in rng.integers(0, values, n)]
    return columns, Config(qi=["q0", "q1"], k=1, sensitive=["s"], keep_unnamed=True, allow_k1=True,
                           hierarchies={"q0": "intervals:2,4,8,16", "q1": "intervals:2,4,8,16"})


def non_monotone_steps(model: EntropyLDiversity, seeds: range) -> tuple[int, int]:
    """Over every node and each of its direct successors of random tables (suppression 0): the feasible nodes,
    and how often a feasible node has an infeasible successor."""
    feasible = broken = 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        columns, config = random_table(rng, int(rng.integers(40, 120)), int(rng.integers(4, 6)))
        evaluator = prepare(columns, config, [KAnonymity(1), model], require_feasible=False).evaluator
        heights = evaluator.table.heights
        for node in itertools.product(*(range(h + 1) for h in heights)):
            if not evaluator.evaluate(node).feasible:
                continue
            feasible += 1
            for q in range(len(node)):
                if node[q] < heights[q]:
                    broken += not evaluator.evaluate(node[:q] + (node[q] + 1,) + node[q + 1:]).feasible
    return feasible, broken


def test_brute_force_over_every_node_and_successor_decides_the_declared_monotonicity() -> None:
    """Shannon's never breaks going up; Grassberger's does on random tables (so kgen declares it not
    monotone, where ARX declares it monotone without suppression)."""
    feasible, broken = non_monotone_steps(EntropyLDiversity("s", 4, "grassberger"), range(60))
    assert feasible > 100 and broken > 0
    feasible, broken = non_monotone_steps(EntropyLDiversity("s", 4), range(60))
    assert feasible > 100 and broken == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from("abcdef")), min_size=1, max_size=40),
       st.sampled_from([1, 1.5, 2, 2.5, 3, 4]))
def test_the_model_answers_what_the_evaluator_asks_of_it(pairs: list[tuple[int, str]], l: float) -> None:  # noqa: E741
    """A class smaller than `min_class_size` breaks it; `violating` is the distinct-values condition and the
    bound on H_G, class by class as the independent checker finds; its description reads back; the device
    evaluator runs it on the CPU, with the CPU's answers."""
    rows = np.unique([c for c, _ in pairs], return_inverse=True)[1].reshape(-1)
    values = [v for _, v in pairs]
    table = prepare({"q": [str(r) for r in rows], "s": values},
                    Config(qi=["q"], k=1, sensitive=["s"], allow_k1=True)).encoded
    partition = Partition(np.bincount(rows), rows)
    model = EntropyLDiversity("s", l, "grassberger")
    bad = model.violating(partition, table)
    assert bad[partition.sizes < model.min_class_size].all()
    codes = table.sensitive["s"][0]
    for c in range(partition.count):
        counts = np.bincount(codes[rows == c])
        counts = counts[counts > 0]
        assert bad[c] == (counts.size < math.ceil(l) or h_g(*counts.tolist()) < math.log(l) - 1e-9)
    assert np.array_equal(grassberger_rule.breaking(rows, values, l), bad)  # the independent checker agrees
    assert read_model(model.describe()) == model and model.describe()["estimator"] == "grassberger"
    assert "estimator" not in EntropyLDiversity("s", l).describe()  # Shannon's reports are as they were
    device = DeviceEvaluator(table, [KAnonymity(1), model], 0.0, backend=xp_kernel.NUMPY)
    assert not device.on_device
    assert device.evaluate((0,)).feasible == NodeEvaluator(table, [KAnonymity(1), model], 0.0).evaluate((0,)).feasible


# --- the searches -----------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.1, 0.3]), st.sampled_from([1.5, 2, 2.5, 3]))
def test_every_exact_search_finds_exhaustives_optimum_and_certify_refuses(seed: int, suppression: float,
                                                                          l: float) -> None:  # noqa: E741
    rng = np.random.default_rng(seed)
    columns, config = random_table(rng, int(rng.integers(20, 80)), int(rng.integers(3, 6)))
    config = dataclasses.replace(config, suppression=suppression)
    try:
        prepared = prepare(columns, config, [KAnonymity(1), EntropyLDiversity("s", l, "grassberger")])
    except NoSolutionError:
        return
    truth = Exhaustive().run(prepared.problem(), Limits())
    expected = None if truth.best is None else truth.best.loss
    assert not prepared.problem().monotone_feasibility
    with pytest.raises(InputError, match="monotone feasibility"):
        Certify().run(prepared.problem(), Limits())
    for search in (BestFirst(), OLA(), Incognito()):
        prepared.evaluator.clear_cache()
        found = search.run(prepared.problem(), Limits())
        assert found.stopped == "complete" and (None if found.best is None else found.best.loss) == expected, search


# --- the independent check rule ---------------------------------------------------------------------------------

def test_the_check_rule_fails_a_release_one_value_off() -> None:
    # l = 5: {a, b, c, d, e, a} has H_G = 2.4 >= ln 5 = 1.609 (Shannon 1.561: a Shannon check fails it);
    # with one value changed, {a, b, c, d, a, a}, only 4 values remain: broken
    d = {"model": "l-diversity", "variant": "entropy", "l": 5, "estimator": "grassberger", "sensitive": "s"}
    meets = [("x", list("abcdea")), ("y", list("abcde"))]
    broken = [("x", list("abcdaa")), ("y", list("abcde"))]
    assert verdict(release(meets), d) and not verdict(release(broken), d)
    assert not verdict(release(meets), {k: v for k, v in d.items() if k != "estimator"})  # Shannon's rule
    # the estimate alone, 5 values each: {a x7, b, c, d, e} has H_G = G(11) - 7 G(7) / 11 - 4 G(1) / 11 = 1.623
    # >= ln 5 = 1.609; one more a, {a x8, b, c, d, e}: G(12) - 8 G(8) / 12 - 4 G(1) / 12 = 1.522 < ln 5
    assert verdict(release([("x", list("aaaaaaabcde"))]), d)
    assert not verdict(release([("x", list("aaaaaaaabcde"))]), d)


def test_the_check_rule_refuses_an_unknown_estimator() -> None:
    d = {"model": "l-diversity", "variant": "entropy", "l": 2, "estimator": "miller", "sensitive": "s"}
    with pytest.raises(InputError, match="estimator"):
        rules_from_models([d], False)


# --- every command ------------------------------------------------------------------------------------------------

QIS = ["sex", "race", "marital-status", "education"]
BASE = ["--qi", ",".join(QIS), "--k", "1", "--sensitive", "occupation", "--suppression", "0.05",
        "--l", "4", "--l-variant", "entropy"]


def test_the_estimator_runs_reports_checks_and_applies(adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "out.csv"
    assert main(["anonymize", "--keep-unnamed", "--allow-k1", str(adult_sample), *BASE, "--l-estimator", "grassberger",
                 "--hierarchy-dir", str(adult_dir), "--algorithm", "bestfirst", "--output", str(output)]) == 0
    shown = capsys.readouterr().out
    assert "entropy l-diversity (Grassberger's estimator) on occupation, l = 4" in shown and "(grassberger " in shown
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["l_estimator"] == "grassberger" and report["verified"]["passed"] is True
    assert report["privacy"][0]["min_grassberger_l"] >= 4 - 1e-9
    assert {"model": "l-diversity", "variant": "entropy", "l": 4, "estimator": "grassberger",
            "sensitive": "occupation"} in report["models"]
    assert main(["check", str(output), *BASE, "--l-estimator", "grassberger"]) == 0
    assert main(["check", str(output), "--report", str(output.with_suffix(".json"))]) == 0
    # a restatement with Shannon's estimator is not the report's model: refused, not passed
    assert main(["check", str(output), "--report", str(output.with_suffix(".json")), *BASE]) == 2
    again = tmp_path / "again.csv"
    assert main(["apply", "--keep-unnamed", str(adult_sample), "--report", str(output.with_suffix(".json")),
                 "--output", str(again), "--allow-k1", "--quiet"]) == 0
    assert again.read_bytes() == output.read_bytes()
    assert json.loads(again.with_suffix(".json").read_text())["models"] == report["models"]


def test_the_estimator_is_a_config_field_and_a_run_toml_key(adult_sample: Path, adult_dir: Path,
                                                            tmp_path: Path) -> None:
    config = Config(qi=QIS, k=1, allow_k1=True, sensitive=["occupation"], suppression=0.05, l=4, l_variant="entropy",
                    l_estimator="grassberger", algorithm="bestfirst", hierarchy_dir=str(adult_dir), keep_unnamed=True)
    result = anonymize(str(adult_sample), config)
    toml = tmp_path / "run.toml"
    toml.write_text("\n".join([f"qi = {json.dumps(QIS)}", "k = 1", "allow-k1 = true", 'sensitive = ["occupation"]',
                               "suppression = 0.05", "l = 4", 'l-variant = "entropy"', 'l-estimator = "grassberger"',
                               'algorithm = "bestfirst"', f'hierarchy_dir = "{adult_dir}"']) + "\n")
    output = tmp_path / "toml.csv"
    assert main(["anonymize", "--keep-unnamed", str(adult_sample), "--config", str(toml), "--output", str(output),
                 "--quiet"]) == 0
    assert json.loads(output.with_suffix(".json").read_text())["models"] == result.report["models"]
    assert any(m.get("estimator") == "grassberger" for m in result.report["models"])


@pytest.mark.parametrize(("flags", "message"), [
    (["--l", "3", "--l-estimator", "grassberger"], "entropy l-diversity only"),
    (["--l", "3", "--l-variant", "recursive", "--c", "2", "--l-estimator", "grassberger"], "entropy l-diversity only"),
    (["--l-estimator", "grassberger"], "--l-estimator is for entropy l-diversity"),
    (["--l", "3", "--l-variant", "entropy", "--l-estimator", "miller"], "l-estimator"),
    (["--l", "15", "--l-variant", "entropy", "--l-estimator", "grassberger"], "needs 15 distinct values and the "
                                                                              "column has only 14"),
])
def test_the_estimator_without_entropy_l_diversity_is_one_line_refused(adult_sample: Path, adult_dir: Path,
                                                                       tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                       flags: list[str], message: str) -> None:
    code = main(["anonymize", "--keep-unnamed", "--allow-k1", str(adult_sample), "--qi", ",".join(QIS), "--k", "2",
                 "--sensitive", "occupation", "--hierarchy-dir", str(adult_dir), "--output", str(tmp_path / "o.csv"),
                 *flags])
    error = capsys.readouterr().err
    assert code == 2 and message in error and "Traceback" not in error and error.count("\n") == 1
    assert not (tmp_path / "o.csv").exists()


def test_no_solution_advice_names_the_estimator(adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    code = main(["anonymize", "--keep-unnamed", "--allow-k1", str(adult_sample), "--qi", "sex,race", "--k", "1",
                 "--sensitive", "occupation", "--hierarchy-dir", str(adult_dir), "--output", str(tmp_path / "o.csv"),
                 "--l", "13", "--l-variant", "entropy", "--l-estimator", "grassberger"])
    error = capsys.readouterr().err
    assert code == 3 and "(l = 13, Grassberger's estimator)" in error and error.count("\n") == 1, error


def test_the_model_refuses_the_estimator_for_other_variants_and_unknown_ones() -> None:
    with pytest.raises(InputError, match="entropy l-diversity only"):
        l_diversity("s", 3, "distinct", None, "grassberger")
    with pytest.raises(InputError, match="estimator"):
        EntropyLDiversity("s", 3, "miller")
