"""Mondrian (centralized): the Poker Hand generator, partitioning, generalization, metrics, the independent
verifier (kgen.check.mondrian) and the `kgen mondrian` / `mondrian-check` commands."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgen.check.kanonymity import check_k_anonymity
from kgen.check.mondrian import check_release
from kgen.datasets import poker
from kgen.io.table import read_csv
from kgen.mondrian import build_spec, load_tree
from kgen.mondrian.core import QI, Spec, Tree, anonymize_fragment, summary
from kgen.mondrian.storage import Source, write_csv
from lattice.errors import InputError, NoSolutionError

DATA = Path(__file__).resolve().parents[1] / "kgen" / "data"
REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------- Poker Hand

@pytest.mark.slow
def test_poker_classifier_counts_every_five_card_hand_exactly():
    hands = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(52), 5)),
                        dtype=np.int8).reshape(-1, 5)
    counts = np.bincount(poker.classify(hands // 13 + 1, hands % 13 + 1), minlength=10)
    assert counts.tolist() == list(poker.COUNTS)


def test_poker_classifier_names_textbook_hands():
    hands = {  # (suit, rank) x 5 -> class
        ((1, 1), (1, 10), (1, 11), (1, 12), (1, 13)): 9,  # royal flush
        ((2, 9), (2, 10), (2, 11), (2, 12), (2, 13)): 8,  # straight flush
        ((1, 5), (2, 5), (3, 5), (4, 5), (1, 9)): 7,
        ((1, 5), (2, 5), (3, 5), (4, 9), (1, 9)): 6,
        ((3, 2), (3, 7), (3, 9), (3, 11), (3, 13)): 5,
        ((1, 1), (2, 2), (3, 3), (4, 4), (1, 5)): 4,  # ace-low straight
        ((1, 10), (2, 11), (3, 12), (4, 13), (1, 1)): 4,  # ace-high straight
        ((1, 5), (2, 5), (3, 5), (4, 8), (1, 9)): 3,
        ((1, 5), (2, 5), (3, 8), (4, 8), (1, 9)): 2,
        ((1, 5), (2, 5), (3, 7), (4, 8), (1, 9)): 1,
        ((1, 12), (2, 13), (3, 1), (4, 2), (1, 3)): 0,  # no wrap-around straight
    }
    cards = np.array(list(hands), dtype=np.int64)
    assert poker.classify(cards[:, :, 0], cards[:, :, 1]).tolist() == list(hands.values())


def test_poker_generator_draws_one_deck_per_hand_with_the_known_class_frequencies():
    frame = poker.generate(200_000, seed=5)
    assert list(frame.columns) == list(poker.COLUMNS)
    suits, ranks = frame[list(poker.QIS[0::2])].to_numpy(), frame[list(poker.QIS[1::2])].to_numpy()
    assert suits.min() == 1 and suits.max() == 4 and ranks.min() == 1 and ranks.max() == 13
    cards = (suits - 1) * 13 + ranks - 1
    assert (np.sort(cards, axis=1)[:, 1:] != np.sort(cards, axis=1)[:, :-1]).all()  # five different cards
    assert (poker.classify(suits, ranks) == frame["CLASS"].to_numpy()).all()
    # chi-square over classes 0, 1, 2, 3 and the rest pooled (expected counts all > 800): df = 4
    p = np.array(poker.PROBABILITIES)
    expected = np.append(p[:4], p[4:].sum()) * len(frame)
    seen = np.bincount(frame["CLASS"], minlength=10)
    observed = np.append(seen[:4], seen[4:].sum())
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < 18.47  # the 0.999 quantile of chi-square with 4 degrees of freedom
    assert poker.generate(1000, seed=5).equals(poker.generate(1000, seed=5))
    assert not poker.generate(1000, seed=5).equals(poker.generate(1000, seed=6))


# ---------------------------------------------------------------------------------------------- hierarchy order

def test_hierarchy_leaves_are_ordered_so_every_subtree_is_contiguous():
    tree = load_tree(DATA / "adult_hierarchy_native-country.csv", "native-country")
    parents = tree.ancestors[1]
    runs = np.flatnonzero(parents[1:] != parents[:-1]).size + 1
    assert runs == len(set(parents.tolist()))  # each continent's countries sit together
    labels, counts = tree.lca(np.array([0]), np.array([len(tree.leaves) - 1]))
    assert labels[0] == "*" and counts[0] == len(tree.leaves)


def test_lowest_common_ancestor_of_siblings_is_their_parent():
    tree = Tree.from_paths([("Italy", "Europe", "*"), ("USA", "America", "*"), ("France", "Europe", "*"),
                            ("Canada", "America", "*")])
    assert tree.leaves == ("Italy", "France", "USA", "Canada")
    labels, counts = tree.lca(np.array([0, 2, 0, 1]), np.array([1, 3, 2, 1]))
    assert labels.tolist() == ["Europe", "America", "*", "France"]
    assert counts.tolist() == [2, 2, 4, 1]


# ---------------------------------------------------------------------------------------------- the algorithm

def numeric_spec(columns, k, l=1, sensitive=None, strategy="interval"):  # noqa: E741
    return Spec(tuple(QI(c, strategy, "number") for c in columns), k, l, sensitive)


def test_two_clusters_are_split_apart_without_generalizing():
    frame = pd.DataFrame({"age": [25, 25, 25, 60, 60, 60], "zip": [1, 1, 1, 9, 9, 9], "s": list("abcabc")})
    result = anonymize_fragment(frame, numeric_spec(["age", "zip"], 3, 2, "s"))
    assert result.classes == 2 and result.dp == 18
    assert result.release["age"].tolist() == ["25", "25", "25", "60", "60", "60"]
    assert summary(numeric_spec(["age", "zip"], 3, 2, "s"), [result])["ncp"] == 0.0


def test_a_split_that_breaks_l_diversity_is_refused():
    frame = pd.DataFrame({"age": [20, 21, 22, 70, 71, 72], "s": list("aaabbb")})
    assert anonymize_fragment(frame, numeric_spec(["age"], 3, 1, "s")).classes == 2
    result = anonymize_fragment(frame, numeric_spec(["age"], 3, 2, "s"))
    assert result.classes == 1
    assert set(result.release["age"]) == {"[20, 72]"}
    spec = numeric_spec(["age"], 3, 2, "s")
    assert summary(spec, [result])["ncp"] == pytest.approx(6.0)  # 6 rows x (72 - 20) / (72 - 20)


def test_the_widest_normalized_range_is_split_first():
    # x spans its whole range in both clusters of y; y only has two values: x (wider, normalized) goes first
    frame = pd.DataFrame({"x": np.tile(np.arange(8), 2), "y": np.repeat([0, 1], 8)})
    result = anonymize_fragment(frame, numeric_spec(["x", "y"], 4))
    assert result.classes == 4
    assert set(result.release["x"]) == {"[0, 3]", "[4, 7]"}
    assert set(result.release["y"]) == {"0", "1"}


def test_median_at_the_maximum_cuts_just_below_it():
    frame = pd.DataFrame({"x": [1, 1, 2, 2, 2, 2]})  # median 2 = max: left would hold every row
    result = anonymize_fragment(frame, numeric_spec(["x"], 2))
    assert sorted(result.release["x"]) == ["1", "1", "2", "2", "2", "2"]


def test_no_solution_when_the_table_has_fewer_than_k_rows_or_l_values():
    frame = pd.DataFrame({"x": [1, 2, 3], "s": ["a", "a", "b"]})
    with pytest.raises(NoSolutionError):
        anonymize_fragment(frame, numeric_spec(["x"], 4))
    with pytest.raises(NoSolutionError):
        anonymize_fragment(frame, numeric_spec(["x"], 1, 3, "s"))


def test_set_and_prefix_generalizations():
    frame = pd.DataFrame({"zip": ["10010", "10020", "10030", "20010", "20020", "20030"], "s": list("ababab")})
    spec = Spec((QI("zip", "prefix", "string"),), 3, 2, "s")
    assert sorted(set(anonymize_fragment(frame, spec).release["zip"])) == ["100**", "200**"]
    spec = Spec((QI("zip", "set", "string"),), 3, 2, "s")
    assert sorted(set(anonymize_fragment(frame, spec).release["zip"])) == ["{10010|10020|10030}",
                                                                            "{20010|20020|20030}"]


def test_centralized_poker_dp_is_near_the_papers_mean_class_size():
    # the paper's 7.23e06 on 1,000,000 hands is a mean class size (DP/N) of 7.23 at k = 5, l = 2
    frame = poker.generate(50_000, seed=2)
    spec = numeric_spec(poker.QIS, 5, 2, "CLASS")
    result = anonymize_fragment(frame, spec)
    assert result.smallest_class >= 5 and result.min_distinct_l >= 2
    assert 6.0 < result.dp / result.rows < 8.0


# ---------------------------------------------------------------------------------------------- property test

@st.composite
def tables(draw):
    n = draw(st.integers(1, 60))
    columns = {}
    kinds = {}
    qis = draw(st.integers(1, 3))
    for j in range(qis):
        kind = draw(st.sampled_from(["interval", "set", "prefix", "hierarchy"]))
        if kind == "interval" or (kind in ("set", "prefix") and draw(st.booleans())):
            columns[f"q{j}"] = [str(v) for v in draw(st.lists(st.integers(-50, 120), min_size=n, max_size=n))]
        else:
            columns[f"q{j}"] = draw(st.lists(st.sampled_from(["a1", "a2", "b1", "b2", "b3", "c1"]),
                                             min_size=n, max_size=n))
        kinds[f"q{j}"] = kind
    columns["s"] = draw(st.lists(st.sampled_from("xyzw"), min_size=n, max_size=n))
    columns["other"] = [str(i) for i in range(n)]
    k = draw(st.integers(1, 6))
    l = draw(st.integers(1, 3))  # noqa: E741
    return pd.DataFrame(columns), kinds, k, l


HIERARCHY = "a1;a;*\na2;a;*\nb1;b;*\nb2;b;*\nb3;b;*\nc1;c;*\n"


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables())
def test_every_release_of_a_random_table_passes_the_independent_verifier(tmp_path, case):
    frame, kinds, k, l = case  # noqa: E741
    (tmp_path / "h.csv").write_text(HIERARCHY)
    original = tmp_path / "original.csv"
    frame.to_csv(original, index=False, sep=";")
    hierarchies = {c: str(tmp_path / "h.csv") for c, kind in kinds.items() if kind == "hierarchy"}
    spec = build_spec(Source(original), list(kinds), k, l, "s", kinds, hierarchies, keep_unnamed=True)
    feasible = len(frame) >= k and frame["s"].nunique() >= l
    table = Source(original).read([q.name for q in spec.qis if q.numeric])
    if not feasible:
        with pytest.raises(NoSolutionError):
            anonymize_fragment(table, spec)
        return
    result = anonymize_fragment(table, spec)
    release = tmp_path / "release.csv"
    write_csv(result.release, release, ";")
    verdict = check_release(original, release, list(kinds), k, l, "s", kinds, hierarchies)
    assert verdict.passed, verdict.problems
    assert verdict.dp >= result.dp  # equal generalizations of two boxes only merge classes
    assert check_k_anonymity(read_csv(release), list(kinds), k).passed


# ---------------------------------------------------------------------------------------------- the verifier

@pytest.fixture
def poker_release(tmp_path):
    original = poker.write_csv(tmp_path / "poker.csv", rows=3000, seed=4)
    spec = build_spec(Source(original), list(poker.QIS), 5, 2, "CLASS", keep_unnamed=True)
    result = anonymize_fragment(Source(original).read(list(poker.QIS)), spec)
    release = tmp_path / "release.csv"
    write_csv(result.release, release)
    return original, release


def verify(original, release):
    return check_release(original, release, list(poker.QIS), 5, 2, "CLASS")


def test_verifier_passes_a_release_and_fails_a_cell_that_does_not_cover_its_value(poker_release):
    original, release = poker_release
    assert verify(original, release).passed
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    source = pd.read_csv(original, dtype=str)
    row = int(np.flatnonzero(source["C1"].to_numpy() != "13")[0])
    frame.loc[row, "C1"] = "[13, 13]"
    frame.to_csv(release, index=False)
    verdict = verify(original, release)
    assert not verdict.passed and "C1" in verdict.problems[0] and f"rows {row + 1}" in verdict.problems[0]


def test_verifier_fails_a_class_below_k_and_a_class_below_l(poker_release):
    original, release = poker_release
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    frame.loc[0, list(poker.QIS)] = pd.read_csv(original, dtype=str).loc[0, list(poker.QIS)]  # its own class
    frame.to_csv(release, index=False)
    assert any("smaller than k" in p for p in verify(original, release).problems)
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    check = check_release(original, release, list(poker.QIS), 1, 11, "CLASS")
    assert any("fewer than l" in p for p in check.problems)


def test_verifier_fails_a_changed_sensitive_value_or_reordered_rows(poker_release):
    original, release = poker_release
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    frame.iloc[::-1].to_csv(release, index=False)
    assert not verify(original, release).passed
    frame.loc[3, "CLASS"] = "9" if frame.loc[3, "CLASS"] != "9" else "8"
    frame.to_csv(release, index=False)
    assert any("not a quasi-identifier" in p for p in verify(original, release).problems)


def test_verifier_checks_hierarchy_cells_against_the_hierarchy_file(tmp_path):
    hierarchy = DATA / "adult_hierarchy_native-country.csv"
    original = tmp_path / "o.csv"
    pd.DataFrame({"c": ["Italy", "France", "Germany", "Canada"]}).to_csv(original, index=False)
    release = tmp_path / "r.csv"
    pd.DataFrame({"c": ["Europe", "Europe", "Europe", "Europe"]}).to_csv(release, index=False)
    verdict = check_release(original, release, ["c"], 1, kinds={"c": "hierarchy"}, hierarchies={"c": hierarchy})
    assert not verdict.passed and "rows 4" in verdict.problems[0]
    pd.DataFrame({"c": ["Europe", "Europe", "*", "North America"]}).to_csv(release, index=False)
    assert check_release(original, release, ["c"], 1, kinds={"c": "hierarchy"}, hierarchies={"c": hierarchy}).passed


# ---------------------------------------------------------------------------------------------- Adult (PUMS stand-in)

def test_adult_with_hierarchies_for_country_and_occupation_and_intervals_for_age(tmp_path):
    source = Source(DATA / "adult.csv")
    hierarchies = {c: DATA / f"adult_hierarchy_{c}.csv" for c in ("native-country", "occupation")}
    spec = build_spec(source, ["native-country", "occupation", "age"], 10, 2, "salary-class", None, hierarchies,
                      keep_unnamed=True)
    assert [q.strategy for q in spec.qis] == ["hierarchy", "hierarchy", "interval"]
    result = anonymize_fragment(source.read(["age"]), spec)
    release = tmp_path / "adult.csv"
    write_csv(result.release, release, ";")
    verdict = check_release(DATA / "adult.csv", release, ["native-country", "occupation", "age"], 10, 2,
                            "salary-class", {"native-country": "hierarchy", "occupation": "hierarchy",
                                             "age": "interval"}, hierarchies)
    assert verdict.passed, verdict.problems[:3]
    metrics = summary(spec, [result])
    assert metrics["smallest_class"] >= 10 and metrics["min_distinct_l"] >= 2
    assert 0.0 < metrics["ncp_normalized"] < 1.0


# ---------------------------------------------------------------------------------------------- the commands

def kgen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


QI_ARG = ",".join(poker.QIS)


@pytest.mark.slow  # over 4 s: runs in .ci/run's second step
def test_kgen_mondrian_writes_a_verified_release_and_report_that_kgen_check_accepts(tmp_path):
    poker.write_csv(tmp_path / "poker.csv", rows=4000, seed=1)
    done = kgen("mondrian",
                "--keep-unnamed", "poker.csv", "--qi", QI_ARG, "--k", "5", "--sensitive", "CLASS", "--l", "2",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "poker_mondrian.json").read_text())
    assert report["verified"]["passed"] and report["metrics"]["smallest_class"] >= 5
    assert report["metrics"]["dp"] == report["metrics"]["dm"] and report["metrics"]["suppressed"] == 0
    checked = kgen("mondrian-check", "poker.csv", "poker_mondrian.csv", "--qi", QI_ARG, "--k", "5",
                   "--sensitive", "CLASS", "--l", "2", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("PASS"), checked.stdout
    strict = kgen("mondrian-check", "poker.csv", "poker_mondrian.csv", "--qi", QI_ARG, "--k", "50", cwd=tmp_path)
    assert strict.returncode == 1 and strict.stdout.startswith("FAIL")
    plain = kgen("check", "poker_mondrian.csv", "--qi", QI_ARG, "--k", "5", "--sensitive", "CLASS", "--l", "2",
                 cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout


@pytest.mark.parametrize(("args", "code", "text"), [
    (["--generalization", "bogus"], 2, "unknown generalization"),
    (["--generalization", "S1=hierarchy"], 2, "needs a hierarchy"),
    (["--l", "11", "--sensitive", "CLASS"], 3, "cannot be"),
    (["--qi", "S1,nope"], 2, "unknown column 'nope'"),
])
def test_kgen_mondrian_user_errors_are_one_line_with_their_exit_code(tmp_path, args, code, text):
    poker.write_csv(tmp_path / "poker.csv", rows=300, seed=1)
    base = ["mondrian", "--keep-unnamed", "poker.csv", "--k", "5"] + ([] if "--qi" in args else ["--qi", QI_ARG])
    done = kgen(*base, *args, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert text in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "poker_mondrian.csv").exists()


def test_interval_on_a_text_column_names_the_value(tmp_path):
    source = tmp_path / "t.csv"
    source.write_text("a,s\n1,x\nfoo,y\n")
    with pytest.raises(InputError, match="'foo' is not a number"):
        build_spec(Source(source), ["a"], 1, 1, "s", "interval", keep_unnamed=True)


def test_linear_split_placement_equals_a_stable_sort():
    from kgen.mondrian.core import _stable_order

    rng = np.random.default_rng(0)
    for _ in range(200):
        segments = int(rng.integers(1, 6))
        seg = np.sort(rng.integers(0, segments, size=int(rng.integers(1, 40))))
        side = rng.random(seg.size) < 0.5
        halves = seg * 2 + side
        order = _stable_order(halves, side, np.bincount(halves, minlength=2 * segments))
        assert (order == np.argsort(halves, kind="stable")).all()


def test_registering_the_commands_needs_neither_pandas_nor_pyarrow():
    code = ("import sys, kgen.cli.main; "
            "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
    from kgen.cli import mondrian as command
    from kgen.mondrian import api, core, distributed

    assert command.STRATEGIES == core.STRATEGIES and command.PARTITIONINGS == distributed.PARTITIONINGS
    assert command.ENGINES == api.ENGINES
