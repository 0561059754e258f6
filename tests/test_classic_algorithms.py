"""The classic algorithms as searches: Samarati (the slides' worked example), Incognito (exact like exhaustive),
Datafly (Sweeney's rule, released tables that pass the independent check)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgen.check.kanonymity import check_k_anonymity
from kgen.cli import main as cli
from kgen.io.table import read_csv
from kgen.run import pipeline as api
from kgen.run.algorithms import REGISTRY, make_search
from kgen.run.config import Config
from lattice.box import Box
from lattice.hierarchy import Hierarchy
from lattice.node import height, leq
from lattice.search.base import Limits, Problem, SearchResult
from lattice.search.datafly import Datafly
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.ola import OLA
from lattice.search.samarati import Samarati


def outcome(result: SearchResult) -> tuple:
    best = result.best
    return (None if best is None else (best.loss, best.los, tuple(best.node)), sorted(result.minimal))


# --- Samarati's slides: the Race/ZIP table, k = 2, MaxSup = 2 ------------------------------------------------

RACE = ["asian"] * 5 + ["black"] * 2 + ["white"] * 2
ZIP = ["94142", "94141", "94139", "94139", "94139", "94138", "94139", "94139", "94141"]
RACE_H = Hierarchy.from_rows("race", [[r, "person"] for r in ("asian", "black", "white")])
ZIP_H = Hierarchy.from_rows("zip", [[z, z[:4] + "*", "941**"] for z in ("94138", "94139", "94141", "94142")])


@pytest.fixture(scope="module")
def slides() -> api.Prepared:
    config = Config(qi=["race", "zip"], k=2, suppression=2 / 9, hierarchies={"race": RACE_H, "zip": ZIP_H},
                    prune=False, keep_unnamed=True)
    return api.prepare({"race": RACE, "zip": ZIP}, config)


def test_samarati_reproduces_the_slides_worked_example(slides: api.Prepared) -> None:
    assert slides.evaluator.max_suppressed == 2  # MaxSup = 2
    result = Samarati().run(slides.problem(), Limits())
    # Example (1): height 1 = floor(3/2) first, both GT[1,0] and GT[0,1] are 2-anonymous; Example (2): height 0
    # is not; so the 2-minimal generalizations are the two nodes of height 1.
    heights = [p["height"] for p in result.params["probes"]]
    assert heights[1:3] == [1, 0]
    assert [p["feasible"] for p in result.params["probes"][1:3]] == [True, False]
    assert result.stopped == "complete"
    assert result.minimal == [(0, 1), (1, 0)]
    assert result.params["height"] == 1
    # [1,0] suppresses t1 (asian 94142) and t6 (black 94138); [0,1] suppresses t8 and t9 (the whites)
    assert list(slides.evaluator.suppressed_rows((1, 0)).nonzero()[0]) == [0, 5]
    assert list(slides.evaluator.suppressed_rows((0, 1)).nonzero()[0]) == [7, 8]
    assert slides.evaluator.evaluate((0, 0)).suppressed == 6 > 2
    # the preferred one by the objective: equal LOG and suppression, so the tie rule's smaller node
    assert result.best.node == (0, 1)


def distance_vector(a: Sequence[str], b: Sequence[str], hierarchies: Sequence[Hierarchy]) -> tuple[int, ...]:
    """Samarati's distance vector of two tuples: per attribute, the lowest level at which they coincide."""
    return tuple(next(level for level in range(h.height + 1) if h.generalize(x, level) == h.generalize(y, level))
                 for x, y, h in zip(a, b, hierarchies, strict=True))


def outliers(rows: Sequence[Sequence[str]], hierarchies: Sequence[Hierarchy], node: Sequence[int], k: int) -> list[int]:
    """The rows (0-based) in classes of fewer than k rows at `node`, counted from distance vectors only: row i's
    class at `node` is every row j whose distance vector to i is at most `node` (Samarati's outlier count)."""
    n = len(rows)
    matrix = {(i, j): distance_vector(rows[i], rows[j], hierarchies) for i in range(n) for j in range(n)}
    return [i for i in range(n) if sum(all(d <= x for d, x in zip(matrix[i, j], node)) for j in range(n)) < k]


def test_distance_vector_matrix_is_the_slides_example_3_and_counts_the_outliers(slides: api.Prepared) -> None:
    rows = list(zip(RACE, ZIP))
    hierarchies = [RACE_H, ZIP_H]
    shown = {0: "t1", 1: "t2", 5: "t6", 6: "t7", 7: "t8", 8: "t9"}
    columns = [0, 1, 2, 5, 6, 7, 8]  # t1 t2 t3/t4/t5 t6 t7 t8 t9
    slide_matrix = {
        "t1": [(0, 0), (0, 1), (0, 2), (1, 2), (1, 2), (1, 2), (1, 1)],
        "t2": [(0, 1), (0, 0), (0, 2), (1, 2), (1, 2), (1, 2), (1, 0)],
        "t6": [(1, 2), (1, 2), (1, 1), (0, 0), (0, 1), (1, 1), (1, 2)],
        "t7": [(1, 2), (1, 2), (1, 0), (0, 1), (0, 0), (1, 0), (1, 2)],
        "t8": [(1, 2), (1, 2), (1, 0), (1, 1), (1, 0), (0, 0), (0, 2)],
        "t9": [(1, 1), (1, 0), (1, 2), (1, 2), (1, 2), (0, 2), (0, 0)],
    }
    for i, name in shown.items():
        assert [distance_vector(rows[i], rows[j], hierarchies) for j in columns] == slide_matrix[name]
    for node in Box.full((1, 2)).nodes():  # the matrix alone decides which rows are suppressed
        assert outliers(rows, hierarchies, node, 2) == list(slides.evaluator.suppressed_rows(node).nonzero()[0])


# --- the survey's medical table (Figures 2(a), 3, 4) ---------------------------------------------------------

MEDICAL = [  # DoB, Sex, ZIP, Disease of Figure 2(a); the last row is Luke Lane's
    ("1940/08/10", "F", "98512", "Heart attack"), ("1950/02/12", "M", "99413", "COVID-19"),
    ("1940/08/04", "F", "98578", "Cardiomyopathy"), ("1950/02/13", "M", "99356", "COVID-19"),
    ("1950/07/12", "M", "99423", "Dermatitis"), ("1940/08/11", "F", "98545", "Pericarditis"),
    ("1950/07/25", "M", "99334", "Short breath"), ("1950/07/30", "M", "99490", "Cough"),
    ("1950/02/20", "M", "99301", "COVID-19"), ("1945/12/01", "M", "98321", "Astrocytoma"),
]


def medical(l_diverse: bool = False) -> api.Prepared:
    """Figure 5's hierarchies: DoB day -> month -> year -> decade, Sex -> not released, ZIP one digit at a time."""
    dob = Hierarchy.from_rows("DoB", [[d, d[:8] + "**", d[:5] + "**/**", d[:3] + "*"] for d, *_ in MEDICAL])
    sex = Hierarchy.from_rows("Sex", [["M", "not_released"], ["F", "not_released"]])
    zips = Hierarchy.from_rows("ZIP", [[z] + [z[: 5 - i] + "*" * i for i in range(1, 5)] for _, _, z, _ in MEDICAL])
    columns = dict(zip(("DoB", "Sex", "ZIP", "Disease"), map(list, zip(*MEDICAL))))
    config = Config(qi=["DoB", "Sex", "ZIP"], k=3, suppression=0.1, sensitive=["Disease"] if l_diverse else [],
                    l=2 if l_diverse else None, hierarchies={"DoB": dob, "Sex": sex, "ZIP": zips}, prune=False,
                    keep_unnamed=True)
    return api.prepare(columns, config)


def test_survey_figure_3_is_a_3_minimal_generalization_of_minimal_height_suppressing_luke_lane() -> None:
    prepared = medical()
    assert prepared.evaluator.max_suppressed == 1
    result = Samarati().run(prepared.problem(), Limits())
    figure_3 = (1, 0, 3)  # DoB year/month, Sex, ZIP first two digits
    assert figure_3 in result.minimal and all(height(n) == 4 for n in result.minimal)
    assert list(prepared.evaluator.suppressed_rows(figure_3).nonzero()[0]) == [9]  # Luke Lane only
    released = api.release(prepared, figure_3, prepared.evaluator.suppressed_rows(figure_3), True)
    assert released.values["DoB"][:3] == ["1940/08/**", "1950/02/**", "1940/08/**"]
    assert set(released.values["ZIP"]) == {"98***", "99***"}
    exhaustive = Exhaustive().run(prepared.problem(), Limits())
    assert min(height(n) for n in exhaustive.minimal) == 4
    assert sorted(Incognito().run(prepared.problem(), Limits()).minimal) == sorted(exhaustive.minimal)


def test_survey_figure_4_is_the_only_3_anonymous_2_diverse_generalization_of_minimal_height() -> None:
    prepared = medical(l_diverse=True)
    result = Samarati().run(prepared.problem(), Limits())
    assert result.minimal == [(2, 0, 2)]  # DoB year, Sex, ZIP first three digits: Figure 4
    released = api.release(prepared, (2, 0, 2), prepared.evaluator.suppressed_rows((2, 0, 2)), True)
    assert released.values["ZIP"] == ["985**", "994**", "985**", "993**", "994**", "985**", "993**", "994**",
                                      "993**"]
    assert sorted(Incognito().run(prepared.problem(), Limits()).minimal) == sorted(
        Exhaustive().run(prepared.problem(), Limits()).minimal)


# --- the tie table every registered search must get right ----------------------------------------------------

@pytest.mark.parametrize("name", ["samarati", "incognito", "datafly"])
def test_classic_searches_break_the_tie_of_equal_nodes_like_the_objective(name: str) -> None:
    prepared = api.prepare({"a": list("xxyy"), "b": list("pqpq")},
                           Config(qi=["a", "b"], k=2, hierarchies={"a": "flat", "b": "flat"}, keep_unnamed=True))
    assert name in REGISTRY
    result = make_search(name).run(prepared.problem(), Limits())
    assert result.best.node == (0, 1)


# --- against exhaustive search on random tables ---------------------------------------------------------------

@st.composite
def small_tables(draw):
    n = draw(st.integers(4, 30))
    q = draw(st.integers(1, 4))
    columns = {}
    for j in range(q):
        if draw(st.booleans()):
            spread = draw(st.sampled_from([9, 99, 999]))
            values = [str(draw(st.integers(0, spread))) for _ in range(n)]
        else:
            values = [draw(st.sampled_from("abcd")) for _ in range(n)]
        columns[f"q{j}"] = values
    k = draw(st.integers(1, min(4, n)))
    suppression = draw(st.sampled_from([0.0, 0.1, 0.3]))
    metric = draw(st.sampled_from(["log", "dm", "aecs"]))
    return columns, Config(qi=list(columns), k=k, suppression=suppression, prune=draw(st.booleans()),
                           metric=metric, keep_unnamed=True, allow_k1=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables())
def test_incognito_finds_exactly_exhaustives_minimal_nodes_and_optimum(case):
    columns, config = case
    prepared = api.prepare(columns, config)
    incognito = Incognito().run(prepared.problem(), Limits())
    exhaustive = Exhaustive().run(prepared.problem(), Limits())
    assert incognito.stopped == "complete"
    assert outcome(incognito) == outcome(exhaustive)
    assert sorted(OLA().run(prepared.problem(), Limits()).minimal) == sorted(incognito.minimal)
    assert incognito.evaluations <= exhaustive.evaluations


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables(), st.sampled_from([1, 2, 256]), st.booleans())
def test_samarati_returns_every_k_minimal_node_of_the_lowest_feasible_height(case, batch, climb):
    columns, config = case
    prepared = api.prepare(columns, config)
    samarati = Samarati(batch=batch, climb=climb).run(prepared.problem(), Limits())
    exhaustive = Exhaustive().run(prepared.problem(), Limits())
    lowest = min(height(n) for n in exhaustive.minimal)
    assert samarati.stopped == "complete"
    assert samarati.minimal == sorted(n for n in exhaustive.minimal if height(n) == lowest)
    evaluations = [prepared.evaluator.evaluate(n) for n in samarati.minimal]
    assert samarati.best == min(evaluations, key=lambda e: (e.loss, e.los, e.node))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables())
def test_datafly_ends_at_a_feasible_node_reached_by_single_raises_of_the_most_distinct_qi(case):
    columns, config = case
    prepared = api.prepare(columns, config)
    result = Datafly().run(prepared.problem(), Limits())
    path = [tuple(n) for n in result.params["path"]]
    assert result.best is not None and result.best.feasible and result.best.node == path[-1]
    assert path[0] == prepared.box.lower
    evaluator = prepared.evaluator
    for before, after in zip(path, path[1:]):
        assert not evaluator.evaluate(before).feasible
        (raised,) = [i for i in range(len(before)) if after[i] != before[i]]
        assert after[raised] == before[raised] + 1
        counts = evaluator.distinct_counts(before)
        assert counts[raised] == max(counts[i] for i in range(len(before)) if before[i] < prepared.box.upper[i])
    assert result.evaluations <= 1 + len(columns) * sum(b - a for a, b in zip(prepared.box.lower, prepared.box.upper))


def test_datafly_raises_the_qi_with_most_distinct_values_first() -> None:
    # `many` has 8 distinct values (two per interval of 4 at level 1), `few` 2: Datafly raises `many`
    rows = 16
    columns = {"many": [str(i % 8) for i in range(rows)], "few": ["a", "b"] * 8}
    config = Config(qi=["many", "few"], k=4, hierarchies={"many": "intervals:4", "few": "flat"}, prune=False,
                    keep_unnamed=True)
    prepared = api.prepare(columns, config)
    assert prepared.evaluator.distinct_counts((0, 0)) == (8, 2)
    result = Datafly().run(prepared.problem(), Limits())
    assert result.params["path"][:2] == [[0, 0], [1, 0]]


def test_datafly_without_distinct_counts_says_it_raises_the_qi_with_most_levels_left() -> None:
    class Plain:  # an evaluator that only evaluates
        def __init__(self, inner):
            self.inner = inner

        def evaluate_many(self, nodes):
            return self.inner.evaluate_many(nodes)

        def evaluate(self, node):
            return self.inner.evaluate(node)

        def cached(self, node):
            return self.inner.cached(node)

    prepared = api.prepare({"a": list("xxyy"), "b": list("pqpq")},
                           Config(qi=["a", "b"], k=2, hierarchies={"a": "flat", "b": "flat"}, keep_unnamed=True))
    problem = prepared.problem(Plain(prepared.evaluator))
    result = Datafly().run(problem, Limits())
    assert result.params["rule"].startswith("most levels left") and result.best.node == (0, 1)


# --- without monotone feasibility: exact fallbacks ------------------------------------------------------------

class Table:
    """An evaluator from a table of verdicts (not monotone); loss = the node's height."""

    def __init__(self, verdicts: dict) -> None:
        self.verdicts, self.store = verdicts, {}

    def evaluate(self, node):
        return self.evaluate_many([node])[0]

    def cached(self, node):
        return self.store.get(tuple(node))

    def evaluate_many(self, nodes):
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class Verdict:
            node: tuple
            feasible: bool
            loss: float
            los: float

        out = [Verdict(tuple(n), self.verdicts[tuple(n)], float(sum(n)), 0.0) for n in nodes]
        self.store.update((v.node, v) for v in out)
        return out


@pytest.mark.parametrize("seed", range(20))
def test_without_monotone_feasibility_incognito_and_samarati_stay_exact(seed: int) -> None:
    rng = random.Random(seed)
    heights = tuple(rng.randint(0, 3) for _ in range(rng.randint(1, 4)))
    verdicts = {node: rng.random() < 0.3 for node in Box.full(heights).nodes()}
    problem = Problem(Table(verdicts), Box.full(heights), heights, False, False)
    exhaustive = Exhaustive().run(problem, Limits())
    incognito = Incognito().run(problem, Limits())
    assert "not monotone" in incognito.params["mode"]
    assert outcome(incognito) == outcome(exhaustive)
    samarati = Samarati().run(problem, Limits())
    feasible = [n for n, ok in verdicts.items() if ok]
    if feasible:
        lowest = min(map(height, feasible))
        assert samarati.minimal == sorted(n for n in feasible if height(n) == lowest)
        assert all(not leq(m, n) or m == n for m in feasible for n in samarati.minimal)
    else:
        assert samarati.best is None


# --- through the CLI: the release passes the independent check ------------------------------------------------

@pytest.mark.parametrize("name", ["samarati", "incognito", "datafly"])
def test_cli_release_of_each_classic_algorithm_passes_kgen_check(name: str, tmp_path: Path, capsys) -> None:
    rng = random.Random(7)
    source = tmp_path / "t.csv"
    lines = ["age,zip,sex,x"] + [f"{rng.randint(20, 70)},{rng.randint(10000, 10099)},{rng.choice('MF')},{i}"
                                 for i in range(200)]
    source.write_text("\n".join(lines) + "\n")
    output = tmp_path / "o.csv"
    code = cli.main(["anonymize",
                     "--keep-unnamed", str(source), "--qi", "age,zip,sex", "--k", "3", "--suppression", "0.02",
                     "--algorithm", name, "--output", str(output), "--quiet"])
    capsys.readouterr()
    assert code == 0
    check = check_k_anonymity(read_csv(output), ["age", "zip", "sex"], 3, 0.02)
    assert check.passed and check.smallest_class >= 3


@pytest.mark.parametrize("name", ["samarati", "incognito", "datafly"])
def test_classic_searches_give_the_same_result_with_parallel_workers(name: str) -> None:
    rng = random.Random(3)
    columns = {"age": [str(rng.randint(20, 60)) for _ in range(150)],
               "zip": [str(rng.randint(10000, 10030)) for _ in range(150)],
               "sex": [rng.choice("MF") for _ in range(150)]}
    serial = api.anonymize(columns, Config(qi=list(columns), k=3, suppression=0.02, algorithm=name, keep_unnamed=True))
    threaded = api.anonymize(columns, Config(qi=list(columns), k=3, suppression=0.02, algorithm=name, jobs=2,
                                             backend="threading", keep_unnamed=True))
    assert threaded.evaluation.node == serial.evaluation.node
    assert threaded.search.minimal == serial.search.minimal
    assert threaded.search.evaluations == serial.search.evaluations
