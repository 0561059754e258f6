"""Flash (lattice/search/flash.py): exact like exhaustive search where it declares itself exact, fewer checks on
monotone problems, ARX's order of checks (Java's heap ties, ARX's strategy), and ARX's practical-monotonicity
heuristic reproducing ARX's answer to TestAnonymizationTCloseness case 10 through the command line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_searches import Oracle, outcome, small_tables, up_set_problem, up_sets

from kgen.cli.main import main as cli
from kgen.run import pipeline as api
from kgen.run.algorithms import make_search
from kgen.run.config import Config
from lattice.box import Box
from lattice.errors import InputError
from lattice.search.base import Limits, Problem, run_search
from lattice.search.exhaustive import Exhaustive
from lattice.search.flash import PRACTICAL, Flash, JavaHeap, PracticalFlash, strategy_keys


@settings(max_examples=150, deadline=None)
@given(up_sets())
def test_flash_finds_exhaustives_optimum_and_minimal_nodes_of_a_monotone_feasibility(case):
    heights, generators = case
    flash = Flash().run(up_set_problem(heights, generators), Limits())
    exhaustive = Exhaustive().run(up_set_problem(heights, generators), Limits())
    assert flash.stopped == "complete"
    assert outcome(flash) == outcome(exhaustive)
    assert flash.evaluations <= exhaustive.evaluations


@settings(max_examples=80, deadline=None)
@given(up_sets(), st.integers(0, 1000), st.booleans())
def test_flash_without_monotone_feasibility_equals_exhaustive(case, seed, monotone_loss):
    heights, _ = case
    rng = random.Random(seed)
    table = {node: rng.random() < 0.3 for node in Box.full(heights).nodes()}  # arbitrary, not monotone
    problem = Problem(Oracle(heights, table.__getitem__), Box.full(heights), heights, False, monotone_loss)
    assert outcome(Flash().run(problem, Limits())) == outcome(Exhaustive().run(problem, Limits()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables(), st.sampled_from(["log", "loss", "entropy", "arx-entropy-nm"]))
def test_flash_equals_exhaustive_on_random_tables_and_metrics(case, metric):
    columns, config = case
    prepared = api.prepare(columns, Config(**{**vars_of(config), "metric": metric}))
    flash = Flash().run(prepared.problem(), Limits())
    exhaustive = Exhaustive().run(prepared.problem(), Limits())
    assert flash.stopped == exhaustive.stopped == "complete"
    assert outcome(flash) == outcome(exhaustive)
    if prepared.problem().monotone_feasibility:
        assert flash.evaluations <= exhaustive.evaluations


def vars_of(config: Config) -> dict:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def test_java_heap_breaks_ties_as_javas_priority_queue():
    """Four equal keys offered a, b, c, d leave Java's PriorityQueue as a, d, c, b (not first in, first out):
    each poll moves the last item to the root, where it stays on a tie."""
    heap = JavaHeap(lambda node: (0,))
    for node in [(0,), (1,), (2,), (3,)]:
        heap.push(node)
    assert [heap.pop() for _ in range(4)] == [(0,), (3,), (2,), (1,)]


def test_java_heap_pops_in_key_order():
    rng = random.Random(7)
    heap = JavaHeap(lambda node: (node[0] % 5,))
    nodes = [(rng.randrange(100),) for _ in range(200)]
    for node in nodes:
        heap.push(node)
    keys = [heap.pop()[0] % 5 for _ in range(len(nodes))]
    assert keys == sorted(keys)


def test_strategy_orders_by_height_then_mean_level_then_distinct_values_kept():
    key = strategy_keys((2, 2), ((10, 2, 1), (4, 2, 1)))
    assert key((1, 0)) < key((0, 2))  # lower height first
    assert key((1, 0))[:2] == key((0, 1))[:2] == (0.25, 0.25)  # same height and mean relative level
    # then the most distinct values kept: (0, 1) keeps 10/10 and 2/4 (1 - 0.75), (1, 0) 2/10 and 4/4 (1 - 0.6)
    assert key((0, 1))[2] == 0.25 and key((1, 0))[2] == pytest.approx(0.4) and key((0, 1)) < key((1, 0))
    assert strategy_keys((0, 2), None)((0, 1))[1:] == (0.0, 0.0)  # NaN for every node in ARX (0 / 0): no order


def test_practical_monotonicity_is_not_exact_and_is_said_so():
    heights = (2, 2)
    table = {node: node in {(0, 2), (2, 0), (1, 1)} for node in Box.full(heights).nodes()}  # not monotone
    problem = Problem(Oracle(heights, table.__getitem__), Box.full(heights), heights, False, True)
    result = run_search(make_search("flash", {}, practical_monotonicity=True), problem, Limits())
    assert isinstance(make_search("flash", {}, True), PracticalFlash)
    assert result.exact is False and not result.optimal
    assert result.params["heuristic"] == PRACTICAL
    assert run_search(make_search("flash"), problem, Limits()).exact is True


@pytest.mark.parametrize("algorithm", ["ola", "bestfirst", "kgen"])
def test_practical_monotonicity_is_refused_with_a_search_that_cannot_use_it(algorithm):
    with pytest.raises(InputError, match="practical-monotonicity is ARX's heuristic for flash"):
        Config(qi=["a"], k=2, algorithm=algorithm, practical_monotonicity=True).check()


def test_cli_refuses_practical_monotonicity_without_flash_in_one_line(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text("a,b\n1,x\n2,y\n1,x\n2,y\n", encoding="utf-8")
    code = cli(["anonymize", str(data), "--qi", "a", "--k", "2", "--keep-unnamed", "--algorithm", "ola",
                "--practical-monotonicity", "--hierarchy", "a=flat", "--output", str(tmp_path / "out.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--algorithm flash" in err
    assert not (tmp_path / "out.csv").exists()


def test_run_toml_sets_practical_monotonicity(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text("a,b\n1,x\n2,y\n1,x\n2,y\n", encoding="utf-8")
    (tmp_path / "run.toml").write_text('algorithm = "flash"\npractical-monotonicity = true\n', encoding="utf-8")
    code = cli(["anonymize", str(data), "--qi", "a", "--k", "2", "--keep-unnamed", "--hierarchy", "a=flat",
                "--config", str(tmp_path / "run.toml"), "--output", str(tmp_path / "out.csv")])
    assert code == 0
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert report["algorithm"] == "flash" and report["exact"] is False
    assert report["parameters"]["heuristic"] == PRACTICAL
    assert f"heuristic: {PRACTICAL}" in capsys.readouterr().out


TCLOSENESS_10 = ((1, 4, 1, 0, 3, 1, 2, 1), 390765.61326019815)  # ARX's TestAnonymizationTCloseness case 10
TCLOSENESS_2 = ((1, 4, 0, 0, 3, 2, 2, 1), 377622.78458729305)  # case 2: the same problem, ARX's exact optimum
QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]


def tcloseness_args(adult_dir: Path, tmp_path: Path) -> list[str]:
    return ["anonymize", str(adult_dir / "adult.csv"), "--qi", ",".join(QIS), "--sensitive", "occupation",
            "--keep-unnamed", "--k", "5", "--suppression", "0.04", "--metric", "arx-entropy", "--t-closeness",
            "0.2", "--t-distance", "hierarchical", "--t-hierarchy", str(adult_dir / "adult_hierarchy_occupation.csv"),
            "--hierarchy-dir", str(adult_dir), "--algorithm", "flash", "--output", str(tmp_path / "out.csv"),
            "--no-bound", "--quiet"]


def test_flash_with_practical_monotonicity_gives_arxs_tcloseness_case_10(adult_dir: Path, tmp_path: Path):
    """ARX runs case 2 (k = 5, hierarchical t-closeness 0.2 on occupation, 4 % suppression, ARX's entropy) with
    practical monotonicity as its case 10: Flash assumes the non-monotone t-closeness monotone, and its order of
    checks leads it to (1, 4, 1, 0, 3, 1, 2, 1), 390765.61326019815, not the optimum of case 2."""
    assert cli(tcloseness_args(adult_dir, tmp_path) + ["--practical-monotonicity"]) == 0
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    node, score = TCLOSENESS_10
    assert tuple(report["node"][q] for q in QIS) == node
    assert report["metrics"]["arx_entropy_bits"] == pytest.approx(score, rel=1e-9)
    assert report["exact"] is False and report["parameters"]["heuristic"] == PRACTICAL
    assert report["verified"]["passed"]


@pytest.mark.slow
def test_exact_flash_finds_the_optimum_of_tcloseness_case_2(adult_dir: Path, tmp_path: Path):
    """Without practical monotonicity Flash walks the non-monotone model linearly and finds case 2's optimum."""
    assert cli(tcloseness_args(adult_dir, tmp_path)) == 0
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    node, score = TCLOSENESS_2
    assert tuple(report["node"][q] for q in QIS) == node
    assert report["metrics"]["arx_entropy_bits"] == pytest.approx(score, rel=1e-9)
    assert report["exact"] is True and report["stopped"] == "complete"


def test_apply_keeps_that_the_node_came_from_practical_monotonicity(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text("a,b\n1,x\n2,y\n1,x\n2,y\n", encoding="utf-8")
    base = ["--qi", "a", "--k", "2", "--keep-unnamed", "--hierarchy", "a=flat"]
    assert cli(["anonymize", str(data), *base, "--algorithm", "flash", "--practical-monotonicity", "--output",
                str(tmp_path / "out.csv")]) == 0
    assert cli(["apply", str(data), "--report", str(tmp_path / "out.json"), "--output",
                str(tmp_path / "again.csv")]) == 0
    applied = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert applied["applied_search"] == {"algorithm": "flash", "exact": False, "heuristic": PRACTICAL}
    assert f"heuristic: {PRACTICAL}" in capsys.readouterr().out


def test_apply_page_says_the_applied_node_came_from_a_heuristic(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("a,b\n1,x\n2,y\n1,x\n2,y\n", encoding="utf-8")
    base = ["--qi", "a", "--k", "2", "--keep-unnamed", "--hierarchy", "a=flat", "--quiet"]
    assert cli(["anonymize", str(data), *base, "--algorithm", "flash", "--practical-monotonicity", "--output",
                str(tmp_path / "out.csv"), "--html", str(tmp_path / "out.html")]) == 0
    assert f"heuristic: {PRACTICAL}" in (tmp_path / "out.html").read_text(encoding="utf-8")
    assert cli(["apply", str(data), "--report", str(tmp_path / "out.json"), "--output", str(tmp_path / "again.csv"),
                "--quiet"]) == 0
    assert cli(["report", str(tmp_path / "again.json"), "-o", str(tmp_path / "again.html")]) == 0
    assert f"heuristic: {PRACTICAL}" in (tmp_path / "again.html").read_text(encoding="utf-8")


def test_flash_refuses_a_box_it_cannot_tag_and_a_large_linear_walk_without_a_limit():
    huge = (1,) * 30  # 2^30 nodes: beyond its one-byte-per-node tags
    with pytest.raises(InputError, match="'flash' handles at most"):
        Flash().run(up_set_problem(huge, [huge]), Limits())
    large = (1,) * 22  # 2^22 nodes, feasibility not monotone: the linear phase would keep every evaluation
    problem = Problem(Oracle(large, lambda node: True), Box.full(large), large, False, True)
    with pytest.raises(InputError, match="give --max-evaluations or --time-limit"):
        Flash().run(problem, Limits())


def test_the_python_api_runs_flash_with_practical_monotonicity():
    import kgen

    config = kgen.Config(qi=["a"], k=2, hierarchies={"a": "flat"}, keep_unnamed=True, algorithm="flash",
                         practical_monotonicity=True)
    report = kgen.anonymize({"a": ["1", "2", "1", "2"], "b": ["x", "y", "x", "y"]}, config).report
    assert report["algorithm"] == "flash" and report["exact"] is False
    assert report["parameters"] == {"mode": "binary", "practical_monotonicity": True, "heuristic": PRACTICAL}
