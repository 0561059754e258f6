"""The searches behind one interface: OLA is exact, the GA finds optima and is deterministic, random search
keeps its budget, and the accuracy metric of SPEC section 6."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgen.cli import main as cli
from kgen.io.table import read_csv
from kgen.run import pipeline as api
from kgen.run.algorithms import make_search
from kgen.run.config import Config
from lattice.accuracy import log_gap, node_accuracy, overall_accuracy, set_accuracy
from lattice.box import Box
from lattice.node import leq, precision_loss
from lattice.search.base import (
    DEFAULT_MAX_EVALUATIONS,
    Budget,
    Limits,
    Problem,
    SearchResult,
    Stopped,
    StopSearch,
    minimal_nodes,
)
from lattice.search.exhaustive import Exhaustive
from lattice.search.flash import Flash
from lattice.search.kgen_ga import KGen
from lattice.search.ola import OLA, level_nodes
from lattice.search.random_search import RandomSearch
from lattice.search.stopping import Patience, Stall
from lattice.search.tags import DenseTags, SparseTags

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def outcome(result: SearchResult) -> tuple:
    best = result.best
    return (None if best is None else (best.loss, best.los, tuple(best.node)), sorted(result.minimal))


# --- lattice-only problems ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    node: tuple
    feasible: bool
    loss: float
    los: float


class Oracle:
    """An evaluator from a feasibility predicate; loss = LOG. Counts calls, keeps what it evaluated (`cached`)
    and can answer in shuffled order internally (to prove searches do not depend on evaluation order)."""

    def __init__(self, heights, feasible, shuffle_seed: int | None = None) -> None:
        self.heights, self.predicate, self.calls, self.store = heights, feasible, 0, {}
        self.shuffle = None if shuffle_seed is None else random.Random(shuffle_seed)

    def cached(self, node):
        return self.store.get(tuple(node))

    def evaluate(self, node):
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes):
        order = list(range(len(nodes)))
        if self.shuffle is not None:
            self.shuffle.shuffle(order)
        out = [None] * len(nodes)
        for i in order:
            self.calls += 1
            node = tuple(nodes[i])
            out[i] = self.store[node] = Verdict(node, self.predicate(node), precision_loss(node, self.heights), 0.0)
        return out


def up_set_problem(heights, minimal, shuffle_seed=None, box=None, monotone=True) -> Problem:
    def feasible(node):
        return any(leq(m, node) for m in minimal)

    return Problem(Oracle(heights, feasible, shuffle_seed), box or Box.full(tuple(heights)), tuple(heights),
                   monotone, True, loss_is_log=True)


@st.composite
def up_sets(draw):
    dims = draw(st.integers(1, 5))
    heights = tuple(draw(st.integers(0, 4)) for _ in range(dims))
    minimal = [tuple(draw(st.integers(0, h)) for h in heights) for _ in range(draw(st.integers(1, 4)))]
    return heights, minimal


@settings(max_examples=150, deadline=None)
@given(up_sets())
def test_ola_finds_exactly_the_minimal_nodes_of_a_monotone_feasibility(case):
    heights, generators = case
    problem = up_set_problem(heights, generators)
    result = OLA().run(problem, Limits())
    expected = Exhaustive().run(up_set_problem(heights, generators), Limits())
    assert result.stopped == "complete"
    assert outcome(result) == outcome(expected)
    assert set(result.minimal) <= set(generators)


@settings(max_examples=60, deadline=None)
@given(up_sets(), st.integers(0, 1000))
def test_ola_without_monotone_feasibility_still_equals_exhaustive(case, seed):
    heights, _ = case
    rng = random.Random(seed)
    table = {node: rng.random() < 0.3 for node in Box.full(heights).nodes()}  # arbitrary, not monotone
    problem = Problem(Oracle(heights, table.__getitem__), Box.full(heights), heights, False, True)
    assert outcome(OLA().run(problem, Limits())) == outcome(Exhaustive().run(problem, Limits()))


@pytest.mark.parametrize("search", [OLA, Flash], ids=["ola", "flash"])
def test_pruning_searches_save_evaluations_against_exhaustive_on_a_monotone_lattice(search: type) -> None:
    """OLA's tags and Flash's binary phase each check under a quarter of the lattice and find its minimal set."""
    heights = (4, 4, 3, 3, 2)
    problem = up_set_problem(heights, [(2, 3, 1, 2, 1), (3, 1, 2, 1, 2), (1, 4, 3, 0, 1)])
    result = search().run(problem, Limits())
    assert result.evaluations < Box.full(heights).size / 4
    assert sorted(result.minimal) == sorted([(2, 3, 1, 2, 1), (3, 1, 2, 1, 2), (1, 4, 3, 0, 1)])


def test_ola_with_nothing_feasible_returns_no_best():
    result = OLA().run(up_set_problem((2, 2), [(3, 3)]), Limits())
    assert result.best is None and result.minimal == [] and result.evaluations == 1


def test_level_nodes_are_every_node_of_that_height_once():
    nodes = list(level_nodes((1, 0, 2), (2, 1, 3), 3))
    box = Box((1, 0, 2), (3, 1, 5))
    assert sorted(nodes) == sorted(n for n in box.nodes() if sum(n) - 3 == 3)
    assert len(nodes) == len(set(nodes))


@settings(max_examples=80, deadline=None)
@given(up_sets(), st.data())
def test_dense_and_sparse_tags_agree(case, data):
    heights, _ = case
    box = Box.full(heights)
    dense, sparse = DenseTags(box), SparseTags(box.dims)
    nodes = list(box.nodes())
    for _ in range(data.draw(st.integers(1, 6))):
        node = data.draw(st.sampled_from(nodes))
        feasible = data.draw(st.booleans())
        # keep the tags consistent, as monotone feasibility does
        if dense.get(node) == 0:
            dense.tag(node, feasible)
            sparse.tag(node, feasible)
    assert [dense.get(n) for n in nodes] == [sparse.get(n) for n in nodes]


# --- OLA against exhaustive on random tables through the public API ---------------------------------------

@st.composite
def small_tables(draw):
    n = draw(st.integers(4, 30))
    q = draw(st.integers(1, 4))
    columns = {}
    for j in range(q):
        if draw(st.booleans()):
            spread = draw(st.sampled_from([9, 99, 999]))
            values = [str(draw(st.integers(0, spread))) for _ in range(n)]
            if draw(st.booleans()):
                values[draw(st.integers(0, n - 1))] = "?"
        else:
            values = [draw(st.sampled_from("abcd")) for _ in range(n)]
        columns[f"q{j}"] = values
    k = draw(st.integers(1, min(4, n)))
    suppression = draw(st.sampled_from([0.0, 0.1, 0.3]))
    prune = draw(st.booleans())
    return columns, Config(qi=list(columns), k=k, suppression=suppression, prune=prune, keep_unnamed=True,
                           allow_k1=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables())
def test_ola_equals_exhaustive_on_random_tables_and_hierarchies(case):
    columns, config = case
    prepared = api.prepare(columns, config)
    ola = OLA().run(prepared.problem(), Limits())
    exhaustive = Exhaustive().run(prepared.problem(), Limits())
    assert ola.stopped == exhaustive.stopped == "complete"
    assert outcome(ola) == outcome(exhaustive)
    assert ola.evaluations <= exhaustive.evaluations


# --- the GA ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def adult_k5(adult_csv: Path, adult_dir: Path):
    return api.prepare(read_csv(adult_csv), Config(qi=ADULT_QIS, k=5, suppression=0.01, hierarchy_dir=str(adult_dir),
                                                   keep_unnamed=True))


@pytest.fixture(scope="module")
def cargo5(cargo_csv: Path):
    table = read_csv(cargo_csv)
    return api.prepare(table, Config(qi=list(table.columns[1:6]), identifiers=["nr"], k=2, suppression=0.005,
                                     keep_unnamed=True))


@pytest.fixture(scope="module")
def adult_k5_optimum(adult_k5):
    return OLA().run(adult_k5.problem(), Limits())


@settings(max_examples=25, deadline=None)
@given(up_sets(), st.integers(0, 10**6))
def test_kgen_plus_finds_the_optimum_of_small_lattices(case, seed):
    heights, generators = case
    problem = up_set_problem(heights, generators)
    expected = Exhaustive().run(problem, Limits())
    result = KGen(preset="kgen+", population=10).run(up_set_problem(heights, generators),
                                                    Limits(max_evaluations=400, seed=seed))
    assert result.best.loss == expected.best.loss
    assert result.evaluations <= 400


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["paper", "kgen+"])
def test_ga_reaches_the_cargo_5_qi_optimum_log_0_78(cargo5, preset):
    exact = OLA().run(cargo5.problem(), Limits())
    assert exact.best.loss == pytest.approx(0.78)
    for seed in range(3):
        result = KGen(preset=preset).run(cargo5.problem(), Limits(seed=seed))
        assert result.best.loss == exact.best.loss


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kgen_plus_reaches_the_adult_optimum_within_500_evaluations(adult_k5, adult_k5_optimum, seed):
    result = KGen(preset="kgen+").run(adult_k5.problem(), Limits(max_evaluations=500, seed=seed))
    assert result.best.loss == adult_k5_optimum.best.loss
    assert result.evaluations <= 500
    assert all(any(leq(o, m) for o in adult_k5_optimum.minimal) for m in result.minimal)


@pytest.mark.parametrize("preset", ["paper", "kgen+"])
@pytest.mark.parametrize("selection", ["tournament", "roulette"])
def test_same_seed_same_result_and_trace(adult_k5, preset, selection):
    ga = KGen(preset=preset, selection=selection, population=20)
    runs = [ga.run(adult_k5.problem(), Limits(max_evaluations=150, seed=42)) for _ in range(2)]
    assert outcome(runs[0]) == outcome(runs[1])
    assert [{k: v for k, v in t.items() if k != "seconds"} for t in runs[0].trace] == \
           [{k: v for k, v in t.items() if k != "seconds"} for t in runs[1].trace]
    assert runs[0].evaluations == runs[1].evaluations == 150


@pytest.mark.parametrize("preset", ["paper", "kgen+"])
def test_result_does_not_depend_on_the_order_the_evaluator_works_in(preset):
    heights, generators = (3, 4, 2, 3, 2, 4), [(1, 2, 2, 1, 0, 3), (2, 4, 0, 1, 1, 1), (3, 0, 1, 3, 2, 0)]
    results = [KGen(preset=preset, population=12).run(up_set_problem(heights, generators, shuffle_seed=s),
                                                        Limits(max_evaluations=120, seed=5))
               for s in (None, 1, 2)]
    assert outcome(results[0]) == outcome(results[1]) == outcome(results[2])
    assert results[0].trace[-1]["evaluations"] == results[2].trace[-1]["evaluations"]


def test_ga_trace_has_one_record_per_generation_with_the_documented_fields(adult_k5):
    result = KGen(population=20).run(adult_k5.problem(), Limits(max_evaluations=200, seed=3))
    assert result.stopped == "budget" and result.evaluations == 200
    generations = [t["generation"] for t in result.trace]
    assert generations == sorted(generations) and generations[0] == 0
    for record in result.trace:
        assert set(record) == {"generation", "evaluations", "best_loss", "best_node", "feasible_fraction", "seconds"}
        assert 0.0 <= record["feasible_fraction"] <= 1.0
    assert result.trace[-1]["best_loss"] == result.best.loss
    assert result.params["population"] == 20 and result.params["seed"] == 3
    assert result.params["max_evaluations"] == 200 and result.params["crossover"] == 0.9


@pytest.mark.slow  # over 5 s: runs in .ci/run's second step
def test_ga_defaults_to_the_paper_parameters_and_budget():
    ga = KGen()
    assert (ga.population, ga.crossover, ga.mutation, ga.tournsize, ga.selection) == (100, 0.9, 0.2, 2, "tournament")
    problem = up_set_problem((5,) * 8, [(3, 2, 4, 1, 3, 2, 4, 1)])
    result = KGen(patience=0).run(problem, Limits(seed=0))
    assert result.evaluations == 5000 and result.stopped == "budget"


def test_ga_stops_after_patience_generations_without_a_better_node():
    problem = up_set_problem((5,) * 8, [(3, 2, 4, 1, 3, 2, 4, 1)])
    result = KGen(patience=30).run(problem, Limits(seed=0))
    assert result.stopped == "stalled" and result.evaluations < 5000
    losses = [t["best_loss"] for t in result.trace]
    assert len(set(losses[-31:])) == 1 and losses[-32] != losses[-1]


def test_ga_on_a_box_it_can_exhaust_completes_exactly():
    problem = up_set_problem((2, 2, 1), [(1, 1, 0), (0, 2, 1)])
    result = KGen(population=10, max_stall=5000, patience=0).run(problem, Limits(seed=1))
    assert result.stopped == "complete" and result.evaluations == 18
    assert sorted(result.minimal) == [(0, 2, 1), (1, 1, 0)]


def test_ga_stops_after_max_stall_generations_without_a_new_evaluation():
    problem = up_set_problem((2, 4), [(2, 4)])  # only the top is feasible: the paper's fitness sinks below it
    result = KGen(population=10, max_stall=20, patience=0).run(problem, Limits(seed=0))
    assert result.stopped in ("stalled", "complete")
    if result.stopped == "stalled":
        last = [t["evaluations"] for t in result.trace[-21:]]
        assert len(set(last)) == 1


def test_ga_stops_on_the_time_limit():
    problem = up_set_problem((5,) * 10, [(2,) * 10])
    result = KGen().run(problem, Limits(time_limit=0.0, seed=0))
    assert result.stopped == "time"


def test_ga_stays_inside_the_pruned_box():
    heights, box = (4, 4, 4), Box((2, 1, 3), (4, 4, 4))
    seen = []

    def feasible(node):
        seen.append(node)
        return node[0] + node[1] >= 5

    problem = Problem(Oracle(heights, feasible), box, heights, True, True, loss_is_log=True)
    for preset in ("paper", "kgen+"):
        KGen(preset=preset, population=8).run(problem, Limits(max_evaluations=40, seed=2))
    assert seen and all(n in box for n in seen)


def test_bad_ga_options_are_input_errors():
    from lattice.errors import InputError

    for options in ({"population": 1}, {"preset": "fast"}, {"selection": "best"}, {"crossover": 1.5},
                    {"unknown": 1}):
        with pytest.raises(InputError):
            make_search("kgen", options)


# --- random search -----------------------------------------------------------------------------------------

def test_random_search_spends_exactly_its_budget_and_keeps_the_best_feasible():
    problem = up_set_problem((5,) * 6, [(2, 3, 1, 4, 2, 3)])
    result = RandomSearch().run(problem, Limits(max_evaluations=300, seed=9))
    assert result.evaluations == 300 and result.stopped == "budget"
    assert result.best is None or leq((2, 3, 1, 4, 2, 3), result.best.node)
    again = RandomSearch().run(up_set_problem((5,) * 6, [(2, 3, 1, 4, 2, 3)]), Limits(max_evaluations=300, seed=9))
    assert outcome(result) == outcome(again)


def test_random_search_on_a_small_box_evaluates_it_all_and_completes():
    problem = up_set_problem((1, 2, 1), [(1, 0, 1), (0, 2, 0)])
    result = RandomSearch().run(problem, Limits(seed=0))
    assert result.stopped == "complete" and result.evaluations == 12
    assert result.best.node == (0, 2, 0)


def test_searches_without_an_end_of_their_own_default_to_one_budget():
    assert Limits().bounded().max_evaluations == DEFAULT_MAX_EVALUATIONS == 5000
    assert Limits(max_evaluations=7).bounded(99).max_evaluations == 7
    problem = up_set_problem((9,) * 5, [(9,) * 5])
    assert RandomSearch().run(problem, Limits()).params["max_evaluations"] == DEFAULT_MAX_EVALUATIONS
    assert KGen().run(problem, Limits(time_limit=0.5)).params["max_evaluations"] == DEFAULT_MAX_EVALUATIONS


# --- the budget: one search's view of the evaluator ---------------------------------------------------------

@pytest.fixture(scope="module")
def tiny() -> api.Prepared:
    return api.prepare({"a": list("xxyyzz"), "b": list("pqpqpq")},
                       Config(qi=["a", "b"], k=2, hierarchies={"a": "flat", "b": "flat"}, prune=False,
                              keep_unnamed=True))


def test_a_budget_counts_its_own_evaluations_and_reads_them_from_the_evaluators_cache(tiny):
    tiny.evaluator.clear_cache()
    first, second = Budget(tiny.problem(), Limits()), Budget(tiny.problem(), Limits())
    e = first.evaluate((0, 1))
    assert first.known((0, 1)) is e is tiny.evaluator.cached((0, 1))  # the evaluator's, not a copy
    assert first.known((1, 1)) is None
    # cached by the evaluator for another search: unknown to this one until it asks, then counted once
    assert second.known((0, 1)) is None and second.evaluations == 0
    assert second.evaluate_many([(0, 1), (0, 1)]) == [e, e] and second.evaluations == 1
    assert second.known((0, 1)) is e and second.feasible == [(0, 1)]
    second.evaluate((0, 1))
    assert second.evaluations == 1 and first.evaluations == 1


def test_a_budget_stops_a_batch_at_the_limit_and_at_the_whole_box():
    problem = up_set_problem((1, 1), [(1, 1)])
    budget = Budget(problem, Limits(max_evaluations=2))
    with pytest.raises(StopSearch) as stop:
        budget.evaluate_many([(0, 0), (0, 1), (1, 0)])
    assert stop.value.reason is Stopped.BUDGET and budget.evaluations == 2 and budget.known((1, 0)) is None
    budget.evaluate_many([(0, 1), (0, 0)])  # nothing new: free, even with the budget spent
    whole = Budget(problem, Limits())
    with pytest.raises(StopSearch) as stop:
        whole.evaluate_many(list(problem.box.nodes()))
    assert stop.value.reason is Stopped.COMPLETE and whole.box_done
    walking = Budget(problem, Limits(), stop_when_box_done=False)  # a search whose answer is not the best node
    assert len(walking.evaluate_many(list(problem.box.nodes()))) == 4 and walking.box_done


def test_a_budget_ends_iterations_on_its_searchs_own_conditions():
    problem = up_set_problem((3, 3), [(1, 1)])
    budget = Budget(problem, Limits(), conditions=[Stall(2)])
    budget.evaluate((0, 0))
    budget.end_iteration()  # something new since the start
    budget.end_iteration()  # one iteration without a new node
    with pytest.raises(StopSearch) as stop:
        budget.end_iteration()  # the second
    assert stop.value.reason is Stopped.STALLED and budget.iteration == 3
    patient = Budget(problem, Limits(), conditions=[Patience(2)])
    patient.evaluate((3, 3))
    patient.end_iteration()
    patient.evaluate((2, 2))  # a better node: the count starts again
    patient.end_iteration()
    patient.evaluate((3, 2))  # new, but no better
    patient.end_iteration()
    with pytest.raises(StopSearch) as stop:
        patient.end_iteration()
    assert stop.value.reason is Stopped.STALLED and patient.iteration == 4


def test_batches_go_to_the_evaluator_in_order_and_of_the_given_size():
    problem = up_set_problem((9,), [(5,)])
    sizes = []
    evaluate_many = problem.evaluator.evaluate_many
    problem.evaluator.evaluate_many = lambda nodes: sizes.append(len(nodes)) or evaluate_many(nodes)
    budget = Budget(problem, Limits())
    results = [e.node for batch in budget.evaluate_in_batches(((i,) for i in range(9)), 4) for e in batch]
    assert sizes == [4, 4, 1] and results == [(i,) for i in range(9)]


# --- accuracy (SPEC section 6) -----------------------------------------------------------------------------

def test_node_accuracy_is_one_at_the_optimum_zero_at_the_top_linear_in_height_between():
    heights, o = (3, 4, 1), (1, 2, 0)
    assert node_accuracy(o, o, heights) == 1.0
    assert node_accuracy(heights, o, heights) == 0.0
    assert node_accuracy((2, 2, 0), o, heights) == pytest.approx(1 - 1 / 5)
    assert node_accuracy((0, 4, 1), o, heights) == 0.0  # not above o: not on a strategy path through it
    assert node_accuracy((3, 4, 1), (3, 4, 1), heights) == 1.0


def test_set_accuracy_takes_the_best_node_above_the_optimum():
    heights, o = (3, 4, 1), (1, 2, 0)
    assert set_accuracy([(3, 4, 1), (1, 3, 0), (0, 0, 0)], o, heights) == pytest.approx(0.8)
    assert set_accuracy([(0, 4, 1)], o, heights) == 0.0
    assert set_accuracy([], o, heights) == 0.0


def test_overall_accuracy_weights_each_optimum_by_one_minus_its_log():
    heights = (3, 4, 1)
    optimal = [(1, 0, 0), (0, 0, 1)]  # LOG 1/9 and 1/3: weights 8/9 and 2/3
    found = [(1, 0, 0)]  # finds the first exactly, misses the second
    w1, w2 = 1 - precision_loss((1, 0, 0), heights), 1 - precision_loss((0, 0, 1), heights)
    assert overall_accuracy(found, optimal, heights) == pytest.approx(w1 / (w1 + w2))
    assert overall_accuracy(optimal, optimal, heights) == 1.0
    with pytest.raises(ValueError):
        overall_accuracy(found, [], heights)


def test_log_gap():
    assert log_gap(0.8, 0.78) == pytest.approx(0.02)
    assert log_gap(None, 0.5) == float("inf")


# --- CLI -----------------------------------------------------------------------------------------------

def test_cli_passes_ga_options_and_the_report_records_them(tmp_path, adult_csv, adult_dir):
    out = tmp_path / "out.csv"
    code = cli.main(["anonymize",
                     "--keep-unnamed", str(adult_csv), "--qi", "sex,age,race", "--hierarchy-dir", str(adult_dir),
                     "--k", "5", "--algorithm", "kgen", "--preset", "kgen+", "--ga-population", "12",
                     "--selection", "roulette", "--max-evaluations", "30", "--seed", "4", "--output", str(out),
                     "--quiet"])
    assert code == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["algorithm"] == "kgen"
    params = report["parameters"]
    assert (params["preset"], params["population"], params["selection"], params["seed"]) == ("kgen+", 12, "roulette", 4)
    assert params["max_evaluations"] == 30 and report["evaluations"] <= 30


def test_cli_refuses_ga_options_for_other_algorithms(tmp_path, capsys, adult_csv, adult_dir):
    code = cli.main(["anonymize",
                     "--keep-unnamed", str(adult_csv), "--qi", "sex,age", "--hierarchy-dir", str(adult_dir),
                     "--k", "5", "--algorithm", "ola", "--ga-population", "12", "--output", str(tmp_path / "o.csv")])
    assert code == 2
    assert "population" in capsys.readouterr().err


# --- how a search ends, and boxes it cannot finish ----------------------------------------------------------

def test_every_stop_value_is_documented_in_docs_search_md():
    from lattice.search.base import Stopped

    text = (Path(__file__).resolve().parents[1] / "docs" / "search.md").read_text()
    section = text[text.index("## How a search ends"):]
    for value in Stopped:
        assert f"`{value.value}`" in section, value


def test_stop_values_are_strings_in_reports_and_text():
    from lattice.search.base import Stopped

    result = Exhaustive().run(up_set_problem((1, 1), [(1, 0)]), Limits())
    assert result.stopped is Stopped.COMPLETE and result.stopped == "complete"
    assert json.dumps({"stopped": result.stopped}) == '{"stopped": "complete"}'
    assert f"{result.stopped}" == str(result.stopped) == "complete"


@pytest.mark.parametrize("limits", [Limits(max_evaluations=40), Limits(time_limit=0.3)])
def test_exhaustive_runs_a_huge_box_only_under_a_limit(limits):
    from lattice.errors import InputError

    problem = up_set_problem((1,) * 60, [(1,) * 30 + (0,) * 30])  # 2^60 nodes
    with pytest.raises(InputError, match="--max-evaluations or --time-limit"):
        Exhaustive().run(problem, Limits())
    result = Exhaustive().run(problem, limits)
    assert result.stopped == ("budget" if limits.max_evaluations else "time")
    assert limits.max_evaluations is None or result.evaluations == 40


def test_ola_runs_a_huge_box_only_under_a_time_limit():
    """An evaluation budget does not bound OLA: on this box it made 21 evaluations and 90,112 tag look-ups in
    10 s without reaching a budget of 40."""
    from lattice.errors import InputError

    problem = up_set_problem((1,) * 60, [(1,) * 30 + (0,) * 30])
    for limits in (Limits(), Limits(max_evaluations=40)):
        with pytest.raises(InputError, match="give --time-limit"):
            OLA().run(problem, limits)
    assert OLA().run(problem, Limits(time_limit=0.3)).stopped == "time"


def test_exhaustive_refuses_beyond_its_cap_and_ola_without_monotone_feasibility_too():
    from lattice.errors import InputError

    heights = (1,) * 22  # 4,194,304 nodes: above exhaustive's 2^21
    monotone = up_set_problem(heights, [(1,) * 22])
    with pytest.raises(InputError, match="at most 2,097,152: .* use --algorithm bestfirst"):
        Exhaustive().run(monotone, Limits())
    flat = Problem(Oracle(heights, lambda node: True), Box.full(heights), heights, False, True)
    with pytest.raises(InputError, match="at most 2,097,152"):
        OLA().run(flat, Limits())
    assert OLA(max_nodes=1 << 22).run(up_set_problem((1,) * 12, [(1,) * 12]), Limits()).stopped == "complete"


def test_the_cli_refuses_exhaustive_on_60_qis_in_one_line_with_exit_2(tmp_path, capsys):
    rng = random.Random(1)
    names = [f"c{i}" for i in range(60)]
    rows = [",".join(rng.choice("01") for _ in names) for _ in range(30)]
    source = tmp_path / "wide.csv"
    source.write_text(",".join(names) + "\n" + "\n".join(rows) + "\n")
    for algorithm in ("exhaustive", "ola"):
        code = cli.main(["anonymize",
                         "--keep-unnamed", str(source), "--qi", ",".join(names), "--k", "2", "--algorithm", algorithm,
                         "--output", str(tmp_path / "out.csv"), "--quiet"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and "--time-limit" in err and "kgen" in err, err
        assert "bestfirst" not in err  # 2^60 nodes: too many for best-first search too
    assert not (tmp_path / "out.csv").exists()


def test_sparse_tags_keep_their_memo_bounded():
    tags = SparseTags(4)
    tags.memo_limit = 50
    tags.tag((1, 1, 1, 1), True)
    for node in Box.full((3, 3, 3, 3)).nodes():
        tags.get(node)
        assert len(tags.decided) <= 50
    assert tags.get((2, 2, 2, 2)) == 1 and tags.get((0, 0, 0, 0)) == 0  # answers unchanged by clearing


def test_the_ga_leaves_the_callers_global_random_state_as_it_was() -> None:
    heights, generators = (3, 2, 4), [(1, 1, 2), (2, 0, 3)]
    random.seed(12345)
    before = random.getstate()
    first = KGen(population=10).run(up_set_problem(heights, generators), Limits(max_evaluations=30, seed=7))
    assert random.getstate() == before  # the caller's stream is untouched
    second = KGen(population=10).run(up_set_problem(heights, generators), Limits(max_evaluations=30, seed=7))
    untimed = [[{k: v for k, v in g.items() if k != "seconds"} for g in r.trace] for r in (first, second)]
    assert first.best.node == second.best.node and untimed[0] == untimed[1]  # and the run is reproducible


def dominance_minimal(nodes: list) -> list:
    """The definition, pair by pair: the nodes with no other node of the set at or below them in every gene."""
    distinct = set(nodes)
    return sorted(n for n in distinct if not any(m != n and all(a <= b for a, b in zip(m, n)) for m in distinct))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda q: st.lists(st.tuples(*[st.integers(0, 4)] * q), min_size=1, max_size=90)))
def test_minimal_nodes_are_the_nodes_with_nothing_below_them(nodes: list) -> None:
    assert minimal_nodes(nodes) == dominance_minimal(nodes)


def test_minimal_nodes_keep_an_antichain_wider_than_one_bitset_word_and_drop_what_lies_above_it() -> None:
    """231 incomparable nodes (more than 64: the kept set spans several words) and each one raised by a level."""
    antichain = [(a, b, 20 - a - b) for a in range(21) for b in range(21 - a)]
    raised = [(a + 1, b, c) for a, b, c in antichain]
    assert minimal_nodes(raised + antichain) == sorted(antichain)
