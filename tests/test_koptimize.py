"""k-Optimize: its optimum equals a brute-force enumeration of cut points, and its release goes the usual way."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgen.check.kanonymity import check_k_anonymity
from kgen.cli import main as cli
from kgen.io.table import as_table, read_csv
from kgen.run import pipeline as api
from kgen.run.config import Config
from kgen.run.koptimize import cut_point_table
from lattice.errors import InputError
from lattice.search.base import Limits
from lattice.search.koptimize import CutProblem, KOptimize


def order(values: list[str]) -> list[str]:
    """Missing first, then numbers ascending, else strings in order (written out again, independently)."""
    present = sorted(set(values) - {"?"})
    if all(v.lstrip("-").isdigit() for v in present):
        present.sort(key=int)
    return (["?"] if "?" in values else []) + present


def brute_force(columns: dict[str, list[str]], k: int, suppression: float) -> float:
    """The least discernibility cost (with suppression) over every choice of cut points of every QI."""
    n = len(next(iter(columns.values())))
    allowed = math.floor(suppression * n + 1e-9)
    per_qi = []
    for values in columns.values():
        ranked = order(values)
        rank = [ranked.index(v) for v in values]
        choices = [c for m in range(len(ranked)) for c in itertools.combinations(range(1, len(ranked)), m)]
        per_qi.append([[sum(r >= cut for cut in cuts) for r in rank] for cuts in choices])
    best = math.inf
    for combination in itertools.product(*per_qi):
        keys = list(zip(*combination))
        sizes = Counter(keys)
        suppressed = sum(s for s in sizes.values() if s < k)
        if suppressed <= allowed:
            best = min(best, sum(s * s for s in sizes.values() if s >= k) + suppressed * n)
    return best


@st.composite
def tables(draw):
    n = draw(st.integers(2, 14))
    q = draw(st.integers(1, 3))
    columns = {}
    for j in range(q):
        if draw(st.booleans()):
            values = [str(draw(st.integers(-3, 12))) for _ in range(n)]
        else:
            values = [draw(st.sampled_from("abcde")) for _ in range(n)]
        if draw(st.booleans()):
            values[draw(st.integers(0, n - 1))] = "?"
        columns[f"q{j}"] = values
    k = draw(st.integers(1, min(4, n)))
    suppression = draw(st.sampled_from([0.0, 0.15, 0.3, 1.0]))
    return columns, k, suppression


def small_enough(columns: dict[str, list[str]]) -> bool:
    return math.prod(2 ** (len(set(v)) - 1) for v in columns.values()) <= 4096


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tables())
def test_k_optimize_finds_the_least_cost_of_every_cut_point_choice(case):
    columns, k, suppression = case
    if not small_enough(columns):
        return
    expected = brute_force(columns, k, suppression)
    result = api.anonymize(columns, Config(qi=list(columns), k=k, suppression=suppression, algorithm="k-optimize",
                                           keep_unnamed=True, allow_k1=True))
    assert result.search.stopped == "complete"
    assert result.search.params["cost"] == expected
    assert result.report["dm"] == expected  # the released node costs what k-Optimize says
    released = result.release
    check = check_k_anonymity(released, list(columns), k, suppression)
    assert check.passed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.booleans())
def test_k_optimize_is_exact_with_or_without_its_greedy_seed(case, seed):
    columns, k, suppression = case
    if not small_enough(columns):
        return
    oracle = cut_point_table(as_table(columns), Config(qi=list(columns), k=k, suppression=suppression,
                                                       keep_unnamed=True, allow_k1=True)).oracle
    result = KOptimize(greedy_seed=seed).run(CutProblem(oracle), Limits())
    assert result.best.loss == brute_force(columns, k, suppression)


def test_k_optimize_stopped_by_its_budget_still_releases_a_k_anonymous_table() -> None:
    columns = {"age": [str(20 + (i * 7) % 23) for i in range(60)], "sex": ["M", "F", "F"] * 20}
    result = api.anonymize(columns, Config(qi=["age", "sex"], k=3, algorithm="k-optimize", max_evaluations=5,
                                           keep_unnamed=True))
    assert result.search.stopped == "budget" and result.report["stopped"] == "budget"
    assert check_k_anonymity(result.release, ["age", "sex"], 3).passed


def test_k_optimize_intervals_are_consecutive_values_of_the_order() -> None:
    columns = {"age": ["1", "2", "3", "10", "11", "12", "20", "21", "22"]}
    result = api.anonymize(columns, Config(qi=["age"], k=3, algorithm="k-optimize", keep_unnamed=True))
    assert result.release.values["age"] == ["[1..3]"] * 3 + ["[10..12]"] * 3 + ["[20..22]"] * 3
    assert result.search.params["cut_points"] == {"age": ["10", "20"]}
    assert result.report["dm"] == 27.0


def test_k_optimize_refuses_l_diversity() -> None:
    columns = {"age": ["1", "2", "3", "4"], "d": ["x", "y", "x", "y"]}
    with pytest.raises(InputError, match="k-anonymity"):
        api.prepare(columns, Config(qi=["age"], k=2, sensitive=["d"], l=2, algorithm="k-optimize", keep_unnamed=True))


@pytest.mark.slow  # over 5 s: runs in .ci/run's second step
def test_cli_k_optimize_release_passes_kgen_check_and_reports_the_cost(tmp_path: Path, capsys) -> None:
    source = tmp_path / "t.csv"
    source.write_text("age,sex,x\n" + "".join(f"{20 + (i * 11) % 37},{'MF'[i % 2]},{i}\n" for i in range(120)))
    output, report = tmp_path / "o.csv", tmp_path / "o.json"
    code = cli.main(["anonymize", "--keep-unnamed", str(source), "--qi", "age,sex", "--k", "4", "--suppression", "0.05",
                     "--algorithm", "k-optimize", "--output", str(output), "--report", str(report), "--quiet"])
    capsys.readouterr()
    assert code == 0
    assert check_k_anonymity(read_csv(output), ["age", "sex"], 4, 0.05).passed
    assert cli.main(["check", str(output), "--qi", "age,sex", "--k", "4", "--suppression", "0.05"]) == 0
    capsys.readouterr()
    import json

    data = json.loads(report.read_text())
    assert data["algorithm"] == "k-optimize" and data["dm"] == data["parameters"]["cost"]


def test_k_optimize_is_not_a_search_of_a_hierarchy_lattice() -> None:
    from kgen.run.algorithms import REGISTRY, make_search

    prepared = api.prepare({"a": list("xxyy")}, Config(qi=["a"], k=2, hierarchies={"a": "flat"}, keep_unnamed=True))
    assert "k-optimize" not in REGISTRY
    with pytest.raises(InputError, match="kgen.anonymize"):
        make_search("k-optimize").run(prepared.problem(), Limits())
