"""Bugs that were planted in kgen and that the rest of the suite let through; each test here fails with its bug.

- Ties broken toward the larger node: every search changes with the shared objective order, so comparing the
  searches with exhaustive search cannot see it; a table with a known tie can.
- The budget counting cached nodes as new evaluations: a search then claims `complete` (or spends its budget)
  without having evaluated the nodes; a counting fake evaluator sees what really reached it.
- The fast kernel without its re-densify step: with 64 or more binary QIs the mixed-radix key overflows int64
  and rows that differ only in the first column are merged; a plain tuple count sees it.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from fitness import kernel
from fitness.evaluator import NodeEvaluator
from kgen import Config, anonymize, check_k_anonymity, from_mapping, prepare, read_csv
from kgen.run.algorithms import REGISTRY, make_search
from lattice.box import Box
from lattice.errors import InputError
from lattice.node import Node, precision_loss
from lattice.search.base import Budget, Limits, Problem, Stopped
from lattice.search.random_search import RandomSearch

# --- ties go to the smaller node -------------------------------------------------------------------------------

TIE_TABLE = {"a": ["x", "x", "y", "y"], "b": ["p", "q", "p", "q"]}


def tie_config(algorithm: str) -> Config:
    return Config(qi=["a", "b"], k=2, suppression=0.0, hierarchies={"a": "flat", "b": "flat"}, algorithm=algorithm)


def test_the_tie_table_has_two_optimal_nodes_equal_on_log_and_los() -> None:
    evaluator = prepare(from_mapping(TIE_TABLE), tie_config("exhaustive")).evaluator
    low, high = evaluator.evaluate((0, 1)), evaluator.evaluate((1, 0))
    assert low.feasible and high.feasible and not evaluator.evaluate((0, 0)).feasible
    assert (low.loss, low.los) == (high.loss, high.los) == (0.5, 0.0)


@pytest.mark.parametrize("algorithm", sorted(REGISTRY))
def test_every_algorithm_breaks_a_tie_toward_the_lexicographically_smaller_node(algorithm: str) -> None:
    result = anonymize(from_mapping(TIE_TABLE), tie_config(algorithm))
    assert result.evaluation.node == (0, 1), (algorithm, result.evaluation.node)
    assert result.report["node"] == {"a": 0, "b": 1}


# --- the budget counts distinct evaluations only ---------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    node: Node
    feasible: bool
    loss: float
    los: float


class CountingEvaluator:
    """A fake evaluator that records every node that reaches it (feasible: level sum >= 3; loss: LOG) and keeps
    what it evaluated (`cached`, which the budget reads for nodes it counted)."""

    def __init__(self, heights: Node) -> None:
        self.heights = heights
        self.seen: list[Node] = []
        self.store: dict[Node, Verdict] = {}

    def cached(self, node: Node) -> Verdict | None:
        return self.store.get(tuple(node))

    def evaluate(self, node: Node) -> Verdict:
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes) -> list[Verdict]:  # noqa: ANN001
        out = []
        for node in nodes:
            node = tuple(node)
            self.seen.append(node)
            out.append(Verdict(node, sum(node) >= 3, precision_loss(node, self.heights), 0.0))
            self.store[node] = out[-1]
        return out


HEIGHTS = (2, 2, 2)  # a 27-node box


def counting_problem(monotone: bool = True) -> tuple[Problem, CountingEvaluator]:
    evaluator = CountingEvaluator(HEIGHTS)
    return Problem(evaluator, Box.full(HEIGHTS), HEIGHTS, monotone, True, loss_is_log=True), evaluator


def test_nodes_asked_again_never_reach_the_evaluator_nor_change_the_count() -> None:
    problem, fake = counting_problem()
    budget = Budget(problem, Limits())
    a, b = (0, 0, 0), (1, 2, 0)
    budget.evaluate_many([a, a, b])
    assert fake.seen == [a, b] and budget.evaluations == 2
    budget.evaluate_many([b, a, b])
    budget.evaluate(a)
    assert fake.seen == [a, b] and budget.evaluations == 2


def test_a_random_search_of_single_draws_is_complete_only_after_evaluating_every_node() -> None:
    problem, fake = counting_problem()
    result = RandomSearch(batch=1).run(problem, Limits(seed=0))
    assert len(fake.seen) == len(set(fake.seen)) == result.evaluations
    assert result.stopped == Stopped.COMPLETE
    assert set(fake.seen) == set(Box.full(HEIGHTS).nodes())


def test_a_random_search_of_single_draws_spends_its_budget_on_distinct_nodes() -> None:
    problem, fake = counting_problem()
    result = RandomSearch(batch=1).run(problem, Limits(max_evaluations=18, seed=0))
    assert result.stopped == Stopped.BUDGET
    assert len(fake.seen) == len(set(fake.seen)) == result.evaluations == 18


@pytest.mark.parametrize("monotone", [True, False])
@pytest.mark.parametrize("algorithm", sorted(REGISTRY))
def test_every_algorithm_reports_exactly_the_distinct_nodes_that_reached_the_evaluator(algorithm: str,
                                                                                      monotone: bool) -> None:
    problem, fake = counting_problem(monotone)
    try:
        result = make_search(algorithm).run(problem, Limits(seed=3))
    except InputError:  # a search that is unsound on this problem (certify without monotone feasibility)
        assert not monotone and not fake.seen, "a search may refuse only a non-monotone problem, before evaluating"
        return
    assert len(fake.seen) == len(set(fake.seen)) == result.evaluations
    if algorithm in ("random", "kgen", "exhaustive") and result.stopped == Stopped.COMPLETE:
        assert set(fake.seen) == set(Box.full(HEIGHTS).nodes())  # complete = the whole box was evaluated


# --- the fast kernel on 64 and more binary QIs ---------------------------------------------------------------

def twin_rows(columns: int, pairs: int, seed: int) -> list[list[int]]:
    """`pairs` distinct random binary rows, each followed by its twin differing only in the first column."""
    rng = random.Random(seed)
    rows: set[tuple[int, ...]] = set()
    while len(rows) < pairs:
        rows.add((0,) + tuple(rng.randint(0, 1) for _ in range(columns - 1)))
    out = []
    for row in sorted(rows):
        out += [list(row), [1] + list(row[1:])]
    return out


@pytest.mark.parametrize("columns", [64, 70, 130])
def test_fast_kernel_class_sizes_equal_a_plain_tuple_count_on_many_binary_columns(columns: int) -> None:
    rows = twin_rows(columns, 40, seed=columns)
    rows += [rows[0]] * 3 + [rows[5]]  # some real classes larger than one
    arrays = [np.array([r[c] for r in rows], dtype=np.int32) for c in range(columns)]
    expected = sorted(Counter(map(tuple, rows)).values())
    n = len(rows)
    assert sorted(kernel.class_sizes(arrays, [2] * columns, n).tolist()) == expected
    assert sorted(kernel.partition(arrays, [2] * columns, n, with_rows=True).sizes.tolist()) == expected
    sizes, _, ids = kernel.group(arrays, [2] * columns, n, with_ids=True)
    assert sorted(sizes.tolist()) == expected
    assert all((ids[i] == ids[j]) == (rows[i] == rows[j]) for i in range(n) for j in range(i + 1, n))


def test_the_api_never_releases_merged_twins_of_70_binary_qis() -> None:
    rows = twin_rows(70, 30, seed=7)
    names = [f"c{i}" for i in range(70)]
    data = {name: [str(r[i]) for r in rows] for i, name in enumerate(names)}
    config = Config(qi=names, k=2, suppression=0.0, hierarchies=dict.fromkeys(names, "flat"),
                    algorithm="kgen", options={"preset": "kgen+"}, max_evaluations=400, seed=0)
    prepared = prepare(from_mapping(data), config)
    bottom = prepared.evaluator.evaluate((0,) * 70)
    assert not bottom.feasible and bottom.classes == 0 and bottom.suppressed == 60  # every row is alone
    result = anonymize(from_mapping(data), config)
    verdict = check_k_anonymity(result.release, names, 2)
    assert verdict.passed and verdict.smallest_class >= 2, result.evaluation.node


@pytest.mark.slow
def test_fast_and_bitset_kernels_agree_with_a_tuple_count_on_cargo_with_all_97_qis(cargo_csv: Path) -> None:
    """Low nodes (every leg unique) and nodes one or two levels below the top in every QI (small cards, whose
    product overflows int64 many times: without re-densifying, the fast kernel merges rows there)."""
    table = read_csv(cargo_csv)
    qis = list(table.columns[table.columns.index("nr") + 1:])
    assert len(qis) == 97
    prepared = prepare(table, Config(qi=qis, k=2, suppression=0.005, prune=False, keep_unnamed=True),
                       require_feasible=False)
    encoded, models = prepared.encoded, prepared.evaluator.models
    fast = NodeEvaluator(encoded, models, 0.005, kernel="fast")
    bitset = NodeEvaluator(encoded, models, 0.005, kernel="bitset")
    rng = random.Random(0)
    heights = encoded.heights
    nodes = [(0,) * 97, tuple(max(0, h - 1) for h in heights)]
    nodes += [tuple(rng.randint(0, min(1, h)) for h in heights) for _ in range(3)]
    nodes += [tuple(rng.randint(max(0, h - 2), h) for h in heights) for _ in range(4)]
    for node in nodes:
        a, b = fast.evaluate(node), bitset.evaluate(node)
        assert (a.suppressed, a.classes, a.smallest_class, a.feasible) == (
            b.suppressed, b.classes, b.smallest_class, b.feasible), node
        columns, cards = encoded.columns(node)
        plain = sorted(Counter(zip(*(c.tolist() for c in columns))).values())
        assert sorted(kernel.class_sizes(columns, cards, encoded.n).tolist()) == plain, node
    assert fast.evaluate((0,) * 97).classes == 0  # every Cargo leg is unique at the bottom
