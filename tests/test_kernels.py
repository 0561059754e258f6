"""The fast kernel, the roll-up and the bitset support map give identical evaluations; the best-first exact
search agrees with exhaustive search (hypothesis, random tables and lattices)."""

from __future__ import annotations

import itertools
import pickle
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fitness import kernel, rollup
from fitness.encoding import EncodedTable, encode_column
from fitness.evaluator import NodeEvaluator
from fitness.models import KAnonymity
from fitness.objective import Discernibility, Precision
from lattice.box import Box
from lattice.hierarchy import Hierarchy
from lattice.search.base import Limits, Problem
from lattice.search.bestfirst import BestFirst
from lattice.search.exhaustive import Exhaustive

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 60, max_qis: int = 4) -> EncodedTable:
    """A random table of integer QIs with random tree hierarchies (base-b rounding, then `*`)."""
    n = draw(st.integers(1, max_rows))
    q = draw(st.integers(1, max_qis))
    qis = []
    for i in range(q):
        card = draw(st.integers(1, 12))
        values = [str(v) for v in draw(st.lists(st.integers(0, card - 1), min_size=n, max_size=n))]
        base = draw(st.integers(2, 4))
        depth = draw(st.integers(0, 2))
        rows = []
        for v in sorted(set(values)):
            path = [v] + [str(int(v) // base ** (level + 1)) for level in range(depth)]
            rows.append(path + ["*"])
        qis.append(encode_column(f"q{i}", values, Hierarchy.from_rows(f"q{i}", rows)))
    return EncodedTable(n, tuple(qis))


def reference_sizes(table: EncodedTable, node: tuple[int, ...]) -> list[int]:
    """Class sizes by counting generalized tuples in a dict: the obviously correct reference."""
    counts = Counter(zip(*(qi.codes[x].tolist() for qi, x in zip(table.qis, node))))
    return sorted(counts.values()) if table.n else []


def all_nodes(table: EncodedTable) -> list[tuple[int, ...]]:
    return list(Box.full(table.heights).nodes())


@SETTINGS
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.05, 0.2]))
def test_fast_and_bitset_evaluators_give_identical_evaluations(table: EncodedTable, k: int, t: float) -> None:
    fast = NodeEvaluator(table, [KAnonymity(k)], t, kernel="fast")
    bitset = NodeEvaluator(table, [KAnonymity(k)], t, kernel="bitset")
    feasible_only = NodeEvaluator(table, [KAnonymity(k)], t, kernel="bitset")
    for node in all_nodes(table):
        e = fast.evaluate(node)
        assert e == bitset.evaluate(node)
        assert feasible_only.feasible(node) == e.feasible  # the early-exit path
        assert sorted(fast.partition(node).sizes.tolist()) == reference_sizes(table, node)
        assert sorted(bitset.partition(node).sizes.tolist()) == reference_sizes(table, node)


@SETTINGS
@given(tables(), st.data())
def test_roll_up_from_any_more_specific_node_equals_the_direct_classes(table: EncodedTable,
                                                                       data: st.DataObject) -> None:
    nodes = all_nodes(table)
    target = data.draw(st.sampled_from(nodes))
    below = [x for x in nodes if all(a <= b for a, b in zip(x, target))]
    source = rollup.direct(table, data.draw(st.sampled_from(below)))
    rolled = rollup.roll_up(table, source, target)
    assert sorted(rolled.sizes.tolist()) == reference_sizes(table, target)
    # the class codes carried along are right: rolling up again from the result changes nothing
    again = rollup.roll_up(table, rolled, target)
    assert sorted(again.sizes.tolist()) == reference_sizes(table, target)


@SETTINGS
@given(tables(max_rows=80), st.integers(1, 3))
def test_the_rollup_cache_evaluator_matches_the_reference_on_every_node(table: EncodedTable, k: int) -> None:
    evaluator = NodeEvaluator(table, [KAnonymity(k)], 0.1)
    evaluator.state.class_tables.min_saving = 0  # roll up even on tiny tables, so the roll-up path is what is tested
    evaluator.state.class_tables.max_fraction = 1.0
    for node in reversed(all_nodes(table)):  # also from the top down, where no source is below
        sizes = np.array(reference_sizes(table, node), dtype=np.int64)
        e = evaluator.evaluate(node)
        assert e.suppressed == int(sizes[sizes < k].sum())
        assert e.classes == int((sizes >= k).sum())
    assert evaluator.state.class_tables.hits + evaluator.state.class_tables.misses == len(all_nodes(table))


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=200), min_size=1, max_size=5),
       st.booleans())
def test_kernel_group_counts_weights_and_ids_exactly(columns: list[list[int]], weighted: bool) -> None:
    n = min(len(c) for c in columns)
    arrays = [np.array(c[:n], dtype=np.int32) for c in columns]
    cards = [8] * len(arrays)
    weights = np.arange(1, n + 1, dtype=np.int64) if weighted else None
    sizes, reps, ids = kernel.group(arrays, cards, n, weights=weights, with_ids=True)
    expected: Counter = Counter()
    for r, row in enumerate(zip(*(a.tolist() for a in arrays))):
        expected[row] += r + 1 if weighted else 1
    assert sorted(sizes.tolist()) == sorted(expected.values())
    for c, rep in enumerate(reps.tolist()):
        assert sizes[c] == expected[tuple(int(a[rep]) for a in arrays)]
    assert all(ids[r] == ids[reps[ids[r]]] for r in range(n))
    assert sorted(kernel.class_sizes(arrays, cards, n).tolist()) == sorted(np.bincount(ids).tolist())


@SETTINGS
@given(st.lists(st.integers(0, 40), max_size=300), st.sampled_from([64, 1 << 31, 1 << 40]), st.booleans(),
       st.integers(0, 45))
def test_count_keys_counts_alike_on_the_counting_and_both_sorting_paths(values: list[int], span: int,
                                                                        weighted: bool, max_groups: int) -> None:
    """Span 64 is counted, 2^31 sorted as uint32, 2^40 sorted as int64; with and without a permutation."""
    key = np.array(values, dtype=np.int64)
    weights = np.arange(1, key.size + 1, dtype=np.int64) if weighted else None
    expected: Counter = Counter()
    for r, v in enumerate(values):
        expected[v] += r + 1 if weighted else 1
    distinct = sorted(expected)
    full = kernel.count_keys(key, span, weights, values=True, ids=True, representatives=True)
    assert full.values is not None and full.ids is not None and full.representatives is not None
    assert full.values.tolist() == distinct
    assert full.sizes.tolist() == [expected[v] for v in distinct]
    assert [distinct[i] for i in full.ids.tolist()] == values
    assert [values[r] for r in full.representatives.tolist()] == distinct
    plain = kernel.count_keys(key, span, representatives=True, max_groups=max_groups)
    assert plain.sizes.tolist() == [Counter(values)[v] for v in distinct]
    if len(distinct) <= max_groups:
        assert plain.representatives is not None
        assert [values[r] for r in plain.representatives.tolist()] == distinct
    else:
        assert plain.representatives is None


def test_clear_cache_forgets_every_evaluation_verdict_and_class_table() -> None:
    rng = np.random.default_rng(5)
    values = [str(v) for v in rng.integers(0, 9, 200)]
    table = EncodedTable(200, (encode_column("q", values, Hierarchy.from_rows("q", [[str(v), str(v // 3), "*"]
                                                                                    for v in range(9)])),))
    fast = NodeEvaluator(table, [KAnonymity(3)], 0.1)
    fast.state.class_tables.min_saving = 0
    fast.state.class_tables.max_fraction = 1.0
    bitset = NodeEvaluator(table, [KAnonymity(3)], 0.1, kernel="bitset")
    for node in ((0,), (1,), (2,)):
        fast.evaluate(node)
        bitset.feasible(node)
    assert fast.cached((1,)) is not None and fast.state.class_tables.hits + fast.state.class_tables.misses == 3
    assert len(fast.state.class_tables) == 3
    assert len(bitset.state.verdicts) == 3
    for evaluator in (fast, bitset):
        evaluator.clear_cache()
        assert evaluator.cached((1,)) is None
        assert not evaluator.state.evaluations and not evaluator.state.verdicts
        assert evaluator.state.class_tables.hits == evaluator.state.class_tables.misses == 0
        assert len(evaluator.state.class_tables) == 0
    assert fast.state.class_tables.min_saving == 0  # clearing keeps the settings


def test_figures_derived_from_a_table_are_built_once_kept_by_it_and_not_pickled() -> None:
    table = EncodedTable(3, (), {})
    builds: list[int] = []
    assert table.derived("x", lambda: builds.append(1) or 7) == 7
    assert table.derived("x", lambda: builds.append(1) or 8) == 7
    assert builds == [1]
    copy = pickle.loads(pickle.dumps(table))
    assert copy.derived("x", lambda: 9) == 9


def test_kernel_densifies_keys_that_would_overflow_int64() -> None:
    rng = np.random.default_rng(0)
    columns = [rng.integers(0, 1000, 500).astype(np.int32) for _ in range(12)]  # span 1000^12 > 2^62
    columns[5][:250] = columns[5][250:]
    for c in columns:
        c[:250] = c[250:]  # the first half repeats the second: 250 classes of 2
    assert sorted(kernel.class_sizes(columns, [1000] * 12, 500).tolist()) == [2] * 250


def run_both(problem: Problem) -> tuple:
    exact = Exhaustive().run(problem, Limits())
    best = BestFirst().run(problem, Limits())
    return exact, best


def key(result) -> tuple | None:  # noqa: ANN001
    return None if result.best is None else (result.best.node, result.best.loss, result.best.los)


@SETTINGS
@given(tables(max_rows=40, max_qis=4), st.integers(1, 4), st.sampled_from([0.0, 0.05, 0.3]))
def test_bestfirst_agrees_with_exhaustive_under_log(table: EncodedTable, k: int, t: float) -> None:
    evaluator = NodeEvaluator(table, [KAnonymity(k)], t)
    box = Box.full(table.heights)
    problem = Problem(evaluator, box, table.heights, True, True, loss_is_log=True)
    exact, best = run_both(problem)
    assert best.stopped == "complete"
    assert key(best) == key(exact)
    assert best.evaluations <= exact.evaluations


@SETTINGS
@given(tables(max_rows=40, max_qis=3), st.integers(1, 3), st.sampled_from([0.0, 0.1]),
       st.sampled_from(["flags-off", "not-log-monotone", "not-log-not-monotone", "log-not-monotone"]))
def test_bestfirst_stays_exact_when_it_may_not_prune(table: EncodedTable, k: int, t: float, case: str) -> None:
    """With the problem's flags off, the search must not rely on them (it is told, it does not check)."""
    # "not-log-monotone" tells the search that DM is monotone, which holds only without suppression (with
    # t > 0 a suppressed row costs n, and hypothesis found a table where that misleads the pruning)
    assume(case != "not-log-monotone" or t == 0.0)
    objective = Discernibility() if case.startswith("not-log") else Precision()
    evaluator = NodeEvaluator(table, [KAnonymity(k)], t, objective)
    box = Box.full(table.heights)
    flags = {"flags-off": (False, False, True), "not-log-monotone": (True, True, False),
             "not-log-not-monotone": (True, False, False), "log-not-monotone": (False, True, True)}[case]
    problem = Problem(evaluator, box, table.heights, flags[0], flags[1], loss_is_log=flags[2])
    exact, best = run_both(problem)
    assert best.stopped == "complete"
    assert key(best) == key(exact)


def test_bestfirst_matches_exhaustive_on_cargo_with_far_fewer_evaluations(shared_data) -> None:  # noqa: ANN001
    from kgen.io.table import read_csv
    from kgen.run.config import Config
    from kgen.run.prepare import prepare

    table = read_csv(shared_data / "cargo2000" / "c2k_data_comma.csv")
    prepared = prepare(table, Config(qi=table.columns[1:7], identifiers=("nr",), k=2, suppression=0.005,
                                     keep_unnamed=True))
    problem = prepared.problem()
    assert problem.loss_is_log
    best = BestFirst().run(problem, Limits())
    prepared.evaluator.clear_cache()
    exact = Exhaustive().run(problem, Limits())
    assert key(best) == key(exact)
    assert best.evaluations * 4 < exact.evaluations


def test_bestfirst_evaluates_fewer_nodes_than_ola_on_cargo_10_qis(shared_data) -> None:  # noqa: ANN001
    from kgen.io.table import read_csv
    from kgen.run.config import Config
    from kgen.run.prepare import prepare
    from lattice.search.ola import OLA

    table = read_csv(shared_data / "cargo2000" / "c2k_data_comma.csv")
    prepared = prepare(table, Config(qi=table.columns[1:11], identifiers=("nr",), k=2, suppression=0.005,
                                     keep_unnamed=True))
    problem = prepared.problem()
    best = BestFirst().run(problem, Limits())
    prepared.evaluator.clear_cache()
    ola = OLA().run(problem, Limits())
    assert best.stopped == ola.stopped == "complete"
    assert key(best) == key(ola)
    assert best.evaluations < ola.evaluations


def test_tie_groups_use_exact_log_keys() -> None:
    from lattice.search.bestfirst import log_keys

    heights = (3, 6, 2)
    box = Box.full(heights)
    keys = log_keys(box, heights)
    for (x, kx), (y, ky) in itertools.combinations(zip(box.nodes(), keys.tolist()), 2):
        lx = sum(a / h for a, h in zip(x, heights))
        ly = sum(a / h for a, h in zip(y, heights))
        assert (kx == ky) == (abs(lx - ly) < 1e-9)
        assert (kx < ky) == (lx < ly - 1e-9)
