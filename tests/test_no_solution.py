"""No false "no solution": with a suppression limit above 0, entropy and recursive l-diversity and t-closeness
are not monotone, so an infeasible top node does not prove that no node is feasible; only a search that
completes does. The advice on what would help is computed (the fewest rows any node must suppress), and it
is true: the suggested limit makes a node feasible, anything below it none.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgen import Config, from_mapping, prepare, read_csv
from kgen.check.kanonymity import SensitiveRule, check_k_anonymity
from kgen.cli import main as cli
from kgen.run.advice import least_suppressed, no_solution_advice
from kgen.run.algorithms import REGISTRY

# The three rows: node [0] is feasible (class a has entropy exactly ln 2, class b's one row is
# suppressed within 0.34 * 3 = 1 row), the top node [1] is not (one class {1, 2, 1}: entropy 0.64 < ln 2).
ROWS = "x;s\na;1\na;2\nb;1\n"
HIERARCHY = "a;*\nb;*\n"
# t-closeness: the top's two classes {1, 2, 1} and {2, 1, 2} are each 1/6 from the table's (1/2, 1/2), more
# than t = 0.1; at the bottom only the single rows b and c break it (2 rows, within 0.34 * 6).
T_ROWS = "x;s\na;1\na;2\nb;1\nc;2\nd;1\nd;2\n"
T_HIERARCHY = "a;AB\nb;AB\nc;CD\nd;CD\n"

# Searches sound only with monotone feasibility: on these problems they refuse (exit 2, one line) instead.
MONOTONE_ONLY = {"certify"}

MODELS = {
    "entropy": (ROWS, HIERARCHY, ["--l", "2", "--l-variant", "entropy"]),
    "recursive": (ROWS, HIERARCHY, ["--l", "2", "--l-variant", "recursive", "--c", "2"]),
    "t-closeness": (T_ROWS, T_HIERARCHY, ["--t-closeness", "0.1"]),
}


def anonymize(tmp_path: Path, capsys, rows: str, hierarchy: str, *extra: str) -> tuple[int, str, Path]:
    source, tree, output = tmp_path / "data.csv", tmp_path / "x.csv", tmp_path / "out.csv"
    source.write_text(rows)
    tree.write_text(hierarchy)
    capsys.readouterr()
    code = cli.main(["anonymize",
                     "--allow-k1",
                     "--keep-unnamed", str(source), "--qi", "x", "--sensitive", "s", "--hierarchy", f"x={tree}",
                     "--output", str(output), "--quiet", *extra])
    return code, capsys.readouterr().err.strip(), output


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("algorithm", sorted(REGISTRY))
def test_a_lower_node_is_released_when_the_top_fails_a_non_monotone_model(tmp_path: Path, capsys, algorithm: str,
                                                                          model: str) -> None:
    rows, hierarchy, options = MODELS[model]
    code, err, output = anonymize(tmp_path, capsys, rows, hierarchy, "--k", "1", "--suppression", "0.34",
                                  "--algorithm", algorithm, *options)
    if algorithm in MONOTONE_ONLY:
        assert code == 2 and "needs monotone feasibility" in err and not output.exists(), err
        return
    assert code == 0, err
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["node"] == {"x": 0} and report["log"] == 0.0 and report["stopped"] == "complete"
    assert report["verified"]["passed"] is True


def test_nothing_feasible_after_a_complete_search_is_no_solution_with_true_advice(tmp_path: Path, capsys) -> None:
    same = "x;s\na;1\na;1\nb;1\n"  # one sensitive value: no class is 2-diverse, whatever the node
    for algorithm in sorted(REGISTRY):
        code, err, output = anonymize(tmp_path, capsys, same, HIERARCHY, "--k", "1", "--l", "2", "--l-variant",
                                      "entropy", "--suppression", "0.34", "--algorithm", algorithm)
        if algorithm in MONOTONE_ONLY:
            assert code == 2 and "needs monotone feasibility" in err, err
            continue
        assert code == 3 and len(err.splitlines()) == 1, (algorithm, err)
        assert "no node suppresses fewer rows than node [0], which suppresses 3 of 3 rows" in err, err
        assert "at least 1.0000" in err, err
        assert not output.exists()


def test_a_search_stopped_by_its_budget_does_not_claim_no_solution(tmp_path: Path, capsys) -> None:
    same = "x;s\na;1\na;1\nb;1\n"
    code, err, _ = anonymize(tmp_path, capsys, same, HIERARCHY, "--k", "1", "--l", "2", "--l-variant", "entropy",
                             "--suppression", "0.34", "--algorithm", "kgen", "--max-evaluations", "1")
    assert code == 3 and "found no feasible node in 1 evaluations" in err and "no transformation" not in err


@pytest.mark.parametrize("case", ["entropy at t = 0", "k-anonymity"])
def test_the_advised_suppression_limit_is_exactly_the_one_that_helps(tmp_path: Path, capsys, case: str) -> None:
    if case == "k-anonymity":  # monotone: the top suppresses fewest (the value b is alone at the top too)
        rows, hierarchy, options = "x;s\na;1\na;2\nb;1\nc;1\nc;2\n", "a;*\nb;+\nc;*\n", ["--k", "2"]
    else:  # the top suppresses all 3 rows, node [0] only 1: the old advice said 1.0000
        rows, hierarchy, options = ROWS, HIERARCHY, ["--k", "1", "--l", "2", "--l-variant", "entropy"]
    code, err, _ = anonymize(tmp_path, capsys, rows, hierarchy, *options, "--suppression", "0")
    assert code == 3, err
    advised = err.split("Raise --suppression to at least ")[1][:6]
    expected = {"entropy at t = 0": "0.3334", "k-anonymity": "0.2000"}[case]
    assert advised == expected, err
    code, err, output = anonymize(tmp_path, capsys, rows, hierarchy, *options, "--suppression", advised)
    assert code == 0, err
    below = f"{float(advised) - 0.0001:.4f}"
    assert anonymize(tmp_path, capsys, rows, hierarchy, *options, "--suppression", below)[0] == 3


def test_advice_on_a_lattice_too_large_to_scan_says_the_limit_is_sufficient_not_least(tmp_path: Path) -> None:
    source = tmp_path / "d.csv"
    source.write_text(ROWS)
    (tmp_path / "x.csv").write_text(HIERARCHY)
    config = Config(qi=["x"], k=1, suppression=0.0, sensitive=["s"], l=2, l_variant="entropy",
                    hierarchies={"x": str(tmp_path / "x.csv")}, keep_unnamed=True, allow_k1=True)
    prepared = prepare(read_csv(source), config, require_feasible=False)
    least = least_suppressed(prepared.evaluator, prepared.heights, scan=1)
    assert not least.proved and least.evaluation.suppressed == 3
    text = no_solution_advice(config, prepared.evaluator, least)
    assert "--suppression 1.0000 makes it feasible (a lower node may need less" in text and "at least" not in text


def test_k_above_the_row_count_with_t_1_is_decided_like_k_equal_to_it(tmp_path: Path, capsys) -> None:
    rows = "a,b\n1,x\n2,y\n3,x\n"
    source = tmp_path / "d.csv"
    source.write_text(rows)
    outputs = {}
    for k in (3, 4, 10):
        output = tmp_path / f"out{k}.csv"
        code = cli.main(["anonymize", "--keep-unnamed", str(source), "--qi", "a,b", "--k", str(k), "--suppression", "1",
                         "--algorithm", "exhaustive", "--output", str(output), "--quiet"])
        assert code == 0, capsys.readouterr().err
        outputs[k] = output.read_text()
        report = json.loads(output.with_suffix(".json").read_text())
        assert report["suppressed"] == 3 and report["classes"] == 0
        assert check_k_anonymity(read_csv(output), ["a", "b"], k, 1.0).passed
    assert outputs[3] == outputs[4] == outputs[10] == "a,b\n*,*\n*,*\n*,*\n"
    capsys.readouterr()
    assert cli.main(["anonymize",
                     "--keep-unnamed", str(source), "--qi", "a,b", "--k", "4", "--suppression", "0.99", "--output",
                     str(tmp_path / "no.csv"), "--quiet"]) == 2
    assert "larger than the number of rows" in capsys.readouterr().err


def test_the_api_prepares_a_non_monotone_problem_whose_top_fails() -> None:
    data = from_mapping({"x": ["a", "a", "b"], "s": ["1", "2", "1"]})
    config = Config(qi=["x"], k=1, suppression=0.34, sensitive=["s"], l=2, l_variant="entropy",
                    hierarchies={"x": "flat"}, keep_unnamed=True, allow_k1=True)
    prepared = prepare(data, config)
    assert not prepared.evaluator.monotone_feasibility and not prepared.evaluator.feasible((1,))
    assert prepared.evaluator.feasible((0,))
    rule = SensitiveRule("s", l=2, variant="entropy")
    from kgen import anonymize as run

    assert check_k_anonymity(run(data, config).release, ["x"], 1, 0.34, [rule]).passed
