"""Privacy models on a sensitive attribute (issue 7): l-diversity (distinct, entropy, recursive) and
t-closeness (equal and ordered EMD) in fitness.models, their use by the evaluator and the CLI, the
independent verifier kgen.check.kanonymity, and pycanon's agreement with kgen's figures on released files."""

from __future__ import annotations

import collections
import itertools
import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fitness.encoding import EncodedTable, dense_codes
from fitness.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    class_entropy,
    class_recursive_ratio,
    equal_distance,
    l_diversity,
    ordered_distance,
    t_closeness,
    value_counts,
    value_order,
)
from fitness.partition import Partition
from fitness.privacy import read_model
from kgen import Config, from_mapping, prepare
from kgen.check.kanonymity import SensitiveRule, check_k_anonymity
from kgen.cli.main import main
from kgen.io.table import read_csv
from kgen.run.pipeline import anonymize
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy

PYCANON_SCRIPT = Path(__file__).resolve().parent / "pycanon_check.py"

# --- the model arithmetic against a plain per-class recomputation -------------------------------------------


def naive(rows: list[int], values: list[str]) -> dict[int, collections.Counter]:
    per_class: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for c, v in zip(rows, values):
        per_class[c][v] += 1
    return per_class


def naive_emd(counter: collections.Counter, everything: collections.Counter, order: list[str], ordered: bool) -> float:
    size, n = sum(counter.values()), sum(everything.values())
    diff = [counter[v] / size - everything[v] / n for v in order]
    if not ordered:
        return 0.5 * sum(abs(d) for d in diff)
    return sum(abs(sum(diff[: i + 1])) for i in range(len(order))) / (len(order) - 1) if len(order) > 1 else 0.0


def table_with(values: list[str]) -> EncodedTable:
    return EncodedTable(len(values), (), {"s": dense_codes(values)})


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["3", "10", "27", "100", "x", "y"])), min_size=1,
                max_size=40), st.booleans())
def test_models_match_a_per_class_recomputation(pairs: list[tuple[int, str]], numeric_only: bool) -> None:
    if numeric_only:
        pairs = [(c, v if v not in ("x", "y") else "3") for c, v in pairs]
    classes, values = [c for c, _ in pairs], [v for _, v in pairs]
    rows = np.unique(classes, return_inverse=True)[1].reshape(-1)
    table = table_with(values)
    partition = Partition(np.bincount(rows), rows)
    vc = value_counts(partition, table, "s")
    codes, labels = table.sensitive["s"]
    q = np.bincount(codes, minlength=len(labels)) / len(values)
    every = collections.Counter(values)
    order = sorted(labels, key=float) if all(v not in ("x", "y") for v in labels) else sorted(labels)
    equal, ordered = equal_distance(vc, q), ordered_distance(vc, q, value_order(labels))
    for c, counter in naive(rows.tolist(), values).items():
        size = sum(counter.values())
        assert vc.distinct[c] == len(counter)
        assert class_entropy(vc)[c] == pytest.approx(-sum(k / size * math.log(k / size) for k in counter.values()),
                                                     abs=1e-12)
        ranked = sorted(counter.values(), reverse=True)
        for l in (1, 2, 3):  # noqa: E741
            tail = sum(ranked[l - 1:])
            assert class_recursive_ratio(vc, l)[c] == (pytest.approx(ranked[0] / tail) if tail else math.inf)
        assert equal[c] == pytest.approx(naive_emd(counter, every, order, False), abs=1e-12)
        assert ordered[c] == pytest.approx(naive_emd(counter, every, order, True), abs=1e-12)


def test_value_counts_sort_path_equals_bincount_path() -> None:
    """Many classes and values (count x card beyond the dense limit) take the sort path: same counts."""
    rng = np.random.default_rng(3)
    n = 3000
    rows = rng.integers(0, 2000, n)
    rows = np.unique(rows, return_inverse=True)[1].reshape(-1)
    values = [str(v) for v in rng.integers(0, 300, n)]
    table = table_with(values)
    vc = value_counts(Partition(np.bincount(rows), rows), table, "s")
    assert int(rows.max() + 1) * len(table.sensitive["s"][1]) > 4 * n  # the sort path
    expected = collections.Counter(zip(rows.tolist(), table.sensitive["s"][0].tolist()))
    got = dict(zip(zip(vc.cls.tolist(), vc.value.tolist()), vc.count.tolist()))
    assert got == dict(expected)


def test_ordered_distance_uses_numeric_order_only_when_every_value_is_a_number() -> None:
    assert value_order(("10", "9", "100")).tolist() == [1, 0, 2]
    assert value_order(("10", "9", "?")).tolist() == [0, 1, 2]  # label (string) order


def test_monotonicity_flags_follow_spec_section_3() -> None:
    assert KAnonymity(2).monotone_with_suppression
    assert DistinctLDiversity("s", 2).monotone_with_suppression
    assert not EntropyLDiversity("s", 2).monotone_with_suppression
    assert not RecursiveCLDiversity("s", 3, 2).monotone_with_suppression
    assert not TCloseness("s", 0.2).monotone_with_suppression
    assert all(m.monotone for m in SAMPLE_MODELS)  # without suppression every model here is monotone
    assert all(m.needs_rows for m in (DistinctLDiversity("s", 2), TCloseness("s", 0.2, "ordered")))
    assert [m.min_class_size for m in (KAnonymity(4), DistinctLDiversity("s", 3), RecursiveCLDiversity("s", 2, 3),
                                       TCloseness("s", 0.2))] == [4, 3, 3, 1]


SAMPLE_MODELS = [KAnonymity(3), DistinctLDiversity("s", 3), EntropyLDiversity("s", 2.5), EntropyLDiversity("s", 2),
          RecursiveCLDiversity("s", 2.0, 2), TCloseness("s", 0.2), TCloseness("s", 0.1, "ordered")]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from(["3", "10", "27", "x"])), min_size=1, max_size=40))
def test_every_model_answers_what_the_evaluator_asks_of_it(pairs: list[tuple[int, str]]) -> None:
    """A class smaller than `min_class_size` always breaks the model; a model that reads no rows gives the same
    answer from the sizes alone; a `count_rule` says exactly what `violating` does; `describe()` is the
    family plus `params` and reads back."""
    classes, values = [c for c, _ in pairs], [v for _, v in pairs]
    rows = np.unique(classes, return_inverse=True)[1].reshape(-1)
    table = table_with(values)
    partition = Partition(np.bincount(rows), rows)
    for model in SAMPLE_MODELS:
        bad = model.violating(partition, table)
        assert bad.dtype == bool and bad.shape == (partition.count,)
        assert bad[partition.sizes < model.min_class_size].all(), model
        if not model.needs_rows:
            assert np.array_equal(model.violating(Partition(partition.sizes), table), bad)
        rule = model.count_rule
        if rule is not None:
            expected = partition.sizes < rule.min_rows
            if rule.column is not None:
                expected |= value_counts(partition, table, rule.column).distinct < rule.min_distinct
            assert np.array_equal(bad, expected), model
        description = model.describe()
        assert description == {"model": description["model"], **model.params}
        assert read_model(description) == model


def test_entropy_min_class_size_is_the_fewest_rows_that_can_reach_ln_l() -> None:
    assert [EntropyLDiversity("s", x).min_class_size for x in (1, 2, 2.5, 3, 2 + 1e-12)] == [1, 2, 3, 3, 2]
    two = Partition(np.array([2]), np.array([0, 0]))  # two distinct values: entropy ln 2, within the tolerance
    assert not EntropyLDiversity("s", 2 + 1e-12).violating(two, table_with(["a", "b"]))[0]


@dataclass(frozen=True)
class NotThree:
    """A model on class sizes that is no threshold: classes of 1 or of exactly 3 rows break it. With `rows` it
    claims to read rows, so the evaluator takes its general path (the reference)."""

    rows: bool = False
    name: ClassVar[str] = "not-three"
    min_class_size: ClassVar[int] = 2
    monotone: ClassVar[bool] = False
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[None] = None
    params: ClassVar[dict] = {}

    @property
    def needs_rows(self) -> bool:
        return self.rows

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        return (partition.sizes < 2) | (partition.sizes == 3)

    def describe(self) -> dict:
        return {"model": self.name}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3)), min_size=1, max_size=60),
       st.sampled_from([0.0, 0.1, 0.3]))
def test_the_evaluators_fast_paths_ask_the_models_instead_of_assuming_k_anonymity(rows: list[tuple[int, int]],
                                                                                  t: float) -> None:
    """The roll-up, the bitset kernel and its early stop answer a sizes-only model that is not "smaller than
    k" exactly as the general path does."""
    from fitness.encoding import encode_column
    from fitness.evaluator import NodeEvaluator
    from lattice.box import Box

    columns = [[str(r[i]) for r in rows] for i in range(2)]
    qis = tuple(encode_column(f"q{i}", column, Hierarchy.from_rows(f"q{i}", [[str(v), str(v // 3), "*"]
                                                                             for v in range(9)]))
                for i, column in enumerate(columns))
    table = EncodedTable(len(rows), qis)
    reference = NodeEvaluator(table, [NotThree(rows=True)], t)
    rolled = NodeEvaluator(table, [NotThree()], t)
    rolled.state.class_tables.min_saving = 0  # roll up even on tiny tables
    rolled.state.class_tables.max_fraction = 1.0
    bitset = NodeEvaluator(table, [NotThree()], t, kernel="bitset")
    early = NodeEvaluator(table, [NotThree()], t, kernel="bitset")
    assert rolled.sizes_only and not reference.sizes_only
    for node in Box.full(table.heights).nodes():
        expected = reference.evaluate(node)
        assert rolled.evaluate(node) == expected == bitset.evaluate(node)
        assert early.feasible(node) == expected.feasible


def two_group_table() -> dict[str, list[str]]:
    """Group a is homogeneous (breaks entropy 2-diversity), b is balanced; merged, they break it too."""
    return {"x": ["a"] * 4 + ["b"] * 4, "s": ["s1"] * 4 + ["s1", "s2", "s1", "s2"]}


def test_entropy_l_diversity_is_not_monotone_with_suppression() -> None:
    """Why monotone_with_suppression is False: with t = 0.5, level 0 suppresses group a and is feasible, but
    the top merges a and b into one class that breaks the model, and is infeasible."""
    config = Config(qi=["x"], k=1, sensitive=["s"], l=2, l_variant="entropy", suppression=0.5, prune=False,
                    keep_unnamed=True, allow_k1=True)
    evaluator = prepare(from_mapping(two_group_table()), config, require_feasible=False).evaluator
    low, top = evaluator.evaluate((0,)), evaluator.evaluate((1,))
    assert low.feasible and low.suppressed == 4
    assert not top.feasible and top.suppressed == 8
    assert not evaluator.monotone_feasibility


def test_violating_classes_are_suppressed_within_the_limit() -> None:
    data = {"x": ["a", "a", "b", "b", "c", "c"], "s": ["p", "q", "p", "p", "p", "q"]}
    for limit, feasible in ((2 / 6, True), (1 / 6, False)):
        config = Config(qi=["x"], k=2, sensitive=["s"], l=2, suppression=limit, prune=False, keep_unnamed=True)
        evaluator = prepare(from_mapping(data), config, require_feasible=False).evaluator
        e = evaluator.evaluate((0,))
        assert (e.suppressed, e.classes, e.feasible) == (2, 2, feasible)
        assert evaluator.suppressed_rows((0,)).tolist() == [False, False, True, True, False, False]


def test_models_for_builds_every_model_and_rejects_bad_parameters() -> None:
    from kgen.run.prepare import models_for

    models = models_for(Config(qi=["x"], k=3, sensitive=["s"], l=3, l_variant="recursive", c=2.0, t_closeness=0.3,
                               t_distance="ordered", keep_unnamed=True))
    assert [m.describe() for m in models] == [
        {"model": "k-anonymity", "k": 3},
        {"model": "l-diversity", "variant": "recursive", "c": 2.0, "l": 3, "sensitive": "s"},
        {"model": "t-closeness", "t": 0.3, "distance": "ordered", "sensitive": "s"},
    ]
    assert [read_model(m.describe()) for m in models] == models
    for bad in (lambda: l_diversity("s", 2.5), lambda: l_diversity("s", 2, "recursive"),
                lambda: l_diversity("s", 0), lambda: t_closeness("s", 1.5), lambda: t_closeness("s", 0.1, "emd"),
                lambda: models_for(Config(qi=["x"], l=2, keep_unnamed=True))):
        with pytest.raises(InputError):
            bad()


# --- the independent check agrees with the models ---------------------------------------------------------------

def test_check_figures_equal_the_models_figures_on_random_classes() -> None:
    from kgen.check.kanonymity import recursive_ratio as check_ratio
    from kgen.check.kanonymity import sensitive_measures

    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(1, 120))
        rows = np.unique(rng.integers(0, int(rng.integers(1, n + 1)), n), return_inverse=True)[1].reshape(-1)
        pool = ["1", "5", "12", "100", "7"] if trial % 2 else ["u", "v", "w", "?"]
        values = [pool[i] for i in rng.integers(0, len(pool), n)]
        table = table_with(values)
        vc = value_counts(Partition(np.bincount(rows), rows), table, "s")
        codes, labels = table.sensitive["s"]
        q = np.bincount(codes, minlength=len(labels)) / n
        measures = sensitive_measures(rows, values)
        assert np.array_equal(measures["distinct"], vc.distinct)
        assert np.allclose(measures["entropy"], class_entropy(vc), atol=1e-12)
        assert np.allclose(measures["t_equal"], equal_distance(vc, q), atol=1e-12)
        assert np.allclose(measures["t_ordered"], ordered_distance(vc, q, value_order(labels)), atol=1e-12)
        assert np.array_equal(check_ratio(measures, 2), class_recursive_ratio(vc, 2))


def test_check_fails_a_released_class_that_breaks_l_diversity() -> None:
    table = from_mapping({"x": ["a", "a", "b", "b"], "s": ["p", "q", "p", "p"]})
    result = check_k_anonymity(table, ["x"], 2, 0.0, [SensitiveRule("s", l=2)])
    assert not result.passed and result.violating_rows == [3, 4]
    assert check_k_anonymity(table, ["x"], 2, 0.0, [SensitiveRule("s", t=0.5)]).passed
    assert not check_k_anonymity(table, ["x"], 2, 0.0, [SensitiveRule("s", t=0.2)]).passed
    with pytest.raises(InputError):
        check_k_anonymity(table, ["x"], 2, 0.0, [SensitiveRule("s", l=2, variant="recursive")])


# --- outputs under each model pass kgen check ------------------------------------------------------------------

MODELS = [
    ("distinct", dict(l=2), ["--l", "2"]),
    ("entropy", dict(l=1.5, l_variant="entropy"), ["--l", "1.5", "--l-variant", "entropy"]),
    ("recursive", dict(l=2, l_variant="recursive", c=3.0), ["--l", "2", "--l-variant", "recursive", "--c", "3"]),
    ("t-equal", dict(t_closeness=0.15), ["--t-closeness", "0.15"]),
    ("t-ordered", dict(t_closeness=0.15, t_distance="ordered"), ["--t-closeness", "0.15", "--t-distance", "ordered"]),
]
SMALL_QIS = ["sex", "race", "marital-status", "education"]


@pytest.mark.parametrize("suppression", [0.0, 0.02])
@pytest.mark.parametrize(("name", "options", "flags"), MODELS, ids=[m[0] for m in MODELS])
def test_outputs_under_each_model_pass_kgen_check(adult_sample: Path, adult_dir: Path, tmp_path: Path, name: str,
                                                  options: dict, flags: list[str], suppression: float) -> None:
    output = tmp_path / "out.csv"
    base = ["--qi", ",".join(SMALL_QIS), "--k", "5", "--sensitive", "salary-class", "--suppression", str(suppression)]
    code = main(["anonymize",
                 "--allow-k1",
                 "--keep-unnamed", str(adult_sample), *base, "--hierarchy-dir", str(adult_dir), "--output", str(output),
                 "--quiet", *flags])
    if code == 3:  # no node satisfies this model on the sample: say so rather than pass vacuously
        pytest.skip(f"{name} has no solution at suppression {suppression} on the sample")
    assert code == 0
    assert main(["check", str(output), *base, *flags]) == 0
    report = json.loads(output.with_suffix(".json").read_text())
    figures = report["privacy"][0]
    released = read_csv(output)
    verified = check_k_anonymity(released, SMALL_QIS, 5, suppression,
                                 [SensitiveRule("salary-class", options.get("l"), options.get("l_variant", "distinct"),
                                                options.get("c"), options.get("t_closeness"),
                                                options.get("t_distance", "equal"))])
    assert verified.passed
    if report["suppressed"] == 0:  # then the file's classes are exactly kgen's released classes
        mine = verified.details["salary-class"]
        assert mine["min_distinct_l"] == figures["min_distinct_l"]
        for key in ("min_entropy_l", "max_t_equal", "max_t_ordered"):
            assert mine[key] == pytest.approx(figures[key], abs=1e-9)


def test_a_stricter_check_than_the_run_fails_the_output(adult_sample: Path, adult_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    base = ["--qi", ",".join(SMALL_QIS), "--k", "5", "--sensitive", "salary-class"]
    assert main(["anonymize",
                 "--allow-k1",
                 "--keep-unnamed", str(adult_sample), *base, "--hierarchy-dir", str(adult_dir), "--output", str(output),
                 "--quiet"]) == 0
    report = json.loads(output.with_suffix(".json").read_text())
    t = report["privacy"][0]["max_t_equal"]
    assert main(["check", str(output), *base, "--t-closeness", f"{t:.6f}"]) == 0
    assert main(["check", str(output), *base, "--t-closeness", f"{t - 0.001:.6f}"]) == 1


# --- pycanon agrees with kgen's own figures ------------------------------------------------------------------

def pycanon(python: str, path: Path, qis: list[str], sensitive: str, numeric: bool = False) -> dict:
    command = [python, str(PYCANON_SCRIPT), str(path), "--qi", ",".join(qis), "--sensitive", sensitive]
    if numeric:
        command += ["--numeric", sensitive]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


PYCANON_CASES = [
    ("distinct", "salary-class", ["sex", "race", "marital-status", "education"], dict(l=2), False),
    ("entropy", "salary-class", ["sex", "race", "marital-status", "education"],
     dict(l=1.5, l_variant="entropy"), False),
    ("t-equal", "salary-class", ["sex", "race", "marital-status", "education"], dict(t_closeness=0.2), False),
    ("t-ordered-age", "age", ["sex", "race", "marital-status", "workclass"],
     dict(t_closeness=0.3, t_distance="ordered"), True),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "sensitive", "qis", "options", "numeric"), PYCANON_CASES,
                         ids=[c[0] for c in PYCANON_CASES])
def test_pycanon_agrees_with_kgen_figures(pycanon_python: str, adult_sample: Path, adult_dir: Path, tmp_path: Path,
                                          name: str, sensitive: str, qis: list[str], options: dict,
                                          numeric: bool) -> None:
    """Without suppression the released file's classes are kgen's classes, and pycanon measures the same
    distribution (t-closeness' reference is the whole table): k, distinct l, entropy l (pycanon floors it) and
    t (equal distance for text, ordered for numbers) must match kgen's report."""
    config = Config(qi=qis, k=5, sensitive=[sensitive], hierarchy_dir=str(adult_dir), **options, keep_unnamed=True)
    result = anonymize(read_csv(adult_sample), config)
    output = tmp_path / "out.csv"
    table = result.release
    from kgen.io.csvio import format_csv

    output.write_text(format_csv(table.columns, table.rows(), table.separator), encoding="utf-8")
    report = result.report
    assert report["suppressed"] == 0
    figures = report["privacy"][0]
    measured = pycanon(pycanon_python, output, qis, sensitive, numeric)
    assert measured["k"] == report["smallest_class"]
    assert measured["l_distinct"] == figures["min_distinct_l"]
    entropy_l = figures["min_entropy_l"]
    # pycanon truncates exp(H) with int(): an entropy l of exactly 8 computes as 7.999999999999998 there
    near_whole = abs(entropy_l - round(entropy_l)) < 1e-9
    assert measured["l_entropy"] == math.floor(entropy_l + 1e-9) or (
        near_whole and measured["l_entropy"] == round(entropy_l) - 1)
    expected_t = figures["max_t_ordered"] if numeric else figures["max_t_equal"]
    assert measured["t"] == pytest.approx(expected_t, abs=1e-9)
    if "t_closeness" in options:
        assert expected_t <= options["t_closeness"] + 1e-9


# --- monotonicity with t = 0 (the property exact searches rely on) ------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from("pqr")), min_size=4, max_size=30),
       st.sampled_from(["entropy", "recursive", "t"]))
def test_models_are_monotone_under_generalization_without_suppression(rows: list[tuple[int, int, str]],
                                                                      which: str) -> None:
    hx = Hierarchy.from_rows("x", [[str(v), "lo" if v < 2 else "hi", "*"] for v in range(4)])
    hy = Hierarchy.from_rows("y", [[str(v), "*"] for v in range(3)])
    data = {"x": [str(r[0]) for r in rows], "y": [str(r[1]) for r in rows], "s": [r[2] for r in rows]}
    assume(len(set(data["s"])) >= 2)  # else l = 2 is an input error up front
    options = {"entropy": dict(l=1.3, l_variant="entropy"), "recursive": dict(l=2, l_variant="recursive", c=2.0),
               "t": dict(t_closeness=0.25)}[which]
    config = Config(qi=["x", "y"], k=1, sensitive=["s"], hierarchies={"x": hx, "y": hy}, prune=False, **options,
                    keep_unnamed=True, allow_k1=True)
    evaluator = prepare(from_mapping(data), config, require_feasible=False).evaluator
    nodes = list(itertools.product(range(3), range(2)))
    feasible = {n: evaluator.feasible(n) for n in nodes}
    for a, b in itertools.product(nodes, nodes):
        if feasible[a] and all(x <= y for x, y in zip(a, b)):
            assert feasible[b], (a, b)


def test_l_above_the_number_of_sensitive_values_is_an_input_error() -> None:
    data = {"x": ["a", "b", "c", "d"], "s": ["p", "q", "p", "q"]}
    for variant, c in (("distinct", None), ("recursive", 2.0)):
        with pytest.raises(InputError, match="only 2 distinct values") as error:
            prepare(from_mapping(data), Config(qi=["x"], k=2, sensitive=["s"], l=3, l_variant=variant, c=c,
                                               keep_unnamed=True))
        assert error.value.column == "s"
