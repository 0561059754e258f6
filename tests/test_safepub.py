"""(epsilon, delta)-differential privacy by SafePub (issue 27, item 3): the derivations of beta and k against
an independent computation and pinned figures, the exponential mechanism's distribution (a chi-square test
with fixed seeds that rejects a mechanism off by the factor 1/2), the score functions by hand, the same
release from the same seed (serial and threaded, global random state untouched), the independent check
(passing the release, failing it one row off), and what the run refuses."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from fitness.privacy.dp import DifferentialPrivacy, delta_for, derived_k, sampling_probability, score_function
from kgen import Config, InputError, anonymize, check_k_anonymity, read_csv
from kgen.check.rules import rules_from_models
from kgen.check.rules.dp import least_k
from kgen.cli.main import main
from lattice.search.safepub import exponential_mechanism, rng_for, specializations

QIS = ["sex", "age", "race", "marital-status", "education"]

# (epsilon_anon, delta) -> k, computed once by fitness.privacy.dp.derived_k and checked below against scipy's
# binomial tail; ARX's ParameterCalculation returns one more than the least k with delta(k) < delta.
PINNED_K = [
    (1.0, 1e-5, 62), (2.0, 1e-5, 114), (0.9, 1e-5, 59), (1.8, 1e-6, 118), (math.log(2), 1e-7, 81),
    (math.log(3), 1e-8, 109), (1.5, 1e-6, 100), (0.5, 1e-3, 28),
]


def reference_delta(k: int, eps: float, beta: float) -> float:
    """delta(k) of the paper written again with scipy's binomial survival function."""
    gamma = (math.exp(eps) - 1 + beta) / math.exp(eps)
    rate = gamma * math.log(gamma / beta) - (gamma - beta)
    n, worst = max(0, math.ceil(k / gamma - 1)), -1.0
    while True:
        worst = max(worst, float(stats.binom.sf(math.floor(n * gamma), n, beta)))
        if worst >= math.exp(-n * rate):
            return worst
        n += 1


@pytest.mark.parametrize(("eps", "delta", "k"), PINNED_K)
def test_derived_k_matches_the_pinned_table_and_an_independent_computation(eps: float, delta: float, k: int) -> None:
    beta = sampling_probability(eps)
    assert beta == pytest.approx(1 - math.exp(-eps), rel=1e-15)
    assert derived_k(eps, delta, beta) == k
    # the least k with delta(k) < delta is k - 1, by scipy: delta(k - 2) is not below delta
    assert reference_delta(k - 1, eps, beta) < delta <= reference_delta(k - 2, eps, beta)
    assert delta_for(k - 1, eps, beta) == pytest.approx(reference_delta(k - 1, eps, beta), rel=1e-9)


@pytest.mark.parametrize(("eps", "delta", "share"), [(2.0, 1e-5, 0.5), (2.0, 1e-5, 0.1), (1.0, 1e-6, 0.25)])
def test_the_checker_derives_the_same_k_on_its_own(eps: float, delta: float, share: float) -> None:
    model = DifferentialPrivacy(eps, delta, share, 10)
    assert least_k(eps, delta, share) == model.derived_k
    assert model.epsilon_anon + model.epsilon_search == pytest.approx(eps)


def test_arx_junit_budget_split_gives_beta_and_k() -> None:
    """ARX's TestAnonymizationDifferentialPrivacy (data-dependent cases): epsilon 2, search budget 1 (share
    0.5), delta 1e-5: epsilon_anon 1, beta = 1 - 1/e; the node is random there (Java's Random(0xDEADBEEF))."""
    model = DifferentialPrivacy(2.0, 1e-5, 0.5, 10)
    assert model.epsilon_anon == 1.0 and model.beta == pytest.approx(0.6321205588285577)
    assert model.derived_k == 62


def test_exponential_mechanism_draws_proportionally_to_exp_half_epsilon_score() -> None:
    scores, eps, draws = np.array([0.0, -1.0, -2.0, -4.0, -0.5]), 1.5, 20000
    rng = rng_for(7, 2)
    counts = np.bincount([exponential_mechanism(scores, eps, rng) for _ in range(draws)], minlength=scores.size)
    right = np.exp(0.5 * eps * scores) / np.exp(0.5 * eps * scores).sum()
    wrong = np.exp(eps * scores) / np.exp(eps * scores).sum()  # a planted bug: the factor 1/2 left out
    assert stats.chisquare(counts, right * draws).pvalue > 1e-3
    assert stats.chisquare(counts, wrong * draws).pvalue < 1e-6


def test_exponential_mechanism_survives_huge_scores_and_is_seeded() -> None:
    scores = np.array([-1e6, -1e6 + 1.0, -2e6])
    first = [exponential_mechanism(scores, 2.0, rng_for(3, 2)) for _ in range(3)]
    assert first == [exponential_mechanism(scores, 2.0, rng_for(3, 2)) for _ in range(3)]
    assert exponential_mechanism(scores, 1e6, rng_for(0, 2)) == 1  # all but certain: no overflow, no nan


class Figures:
    """What a score function reads of an evaluation."""

    def __init__(self, node: tuple, suppressed: int, classes: int, dm: float) -> None:
        self.node, self.suppressed, self.classes, self.dm = node, suppressed, classes, dm
        self.feasible, self.loss, self.los = True, float(sum(node)), 0.0


def test_score_functions_by_hand() -> None:
    # 10 input rows, 8 sampled; classes of 3 and 3 released, 2 rows suppressed; heights (2, 1), node (1, 0); k 3
    e = Figures((1, 0), suppressed=2, classes=2, dm=3 * 3 + 3 * 3 + 2 * 8)
    # precision: -(sum over QIs of released * level/height + (suppressed + unsampled)) / QIs / (k - 1)
    assert score_function("precision", 3, 10, 8, (2, 1))(e) == pytest.approx(-((6 * 0.5 + 4) + (0 + 4)) / 2 / 2)
    # discernibility: -(n * (suppressed + unsampled) + sum of squares) / (n * (k^2 / (k - 1) + 1))
    assert score_function("discernibility", 3, 10, 8, (2, 1))(e) == pytest.approx(-(10 * 4 + 18) / (10 * 5.5))
    # aecs (group size): released classes, plus one for the suppressed and unsampled rows
    assert score_function("aecs", 3, 10, 8, (2, 1))(e) == 3.0
    assert score_function("aecs", 3, 8, 8, (2, 1))(Figures((1, 0), 0, 2, 18)) == 2.0


def test_specializations_stay_inside_the_box() -> None:
    assert specializations((2, 0, 1), (0, 0, 1)) == [(1, 0, 1)]
    assert specializations((1, 1), (0, 0)) == [(0, 1), (1, 0)]


@pytest.fixture(scope="module")
def adult_small(adult_head: Callable[[int], Path]) -> Path:
    """The first 3,000 rows of Adult."""
    return adult_head(3000)


def config(adult_dir: Path, **given: object) -> Config:
    return Config(qi=QIS, k=2, hierarchy_dir=str(adult_dir), keep_unnamed=True, **{
        "differential_privacy": "2,1e-5", "dp_steps": 15, "dp_search_share": 0.5, **given})


def released_bytes(result: object) -> str:
    return "\n".join(";".join(r) for r in result.release.iter_rows())  # type: ignore[attr-defined]


def test_same_seed_same_release_serial_or_threaded_and_global_state_untouched(adult_small: Path,
                                                                               adult_dir: Path) -> None:
    random.seed(5)
    np.random.seed(5)
    python_state, numpy_state = random.getstate(), np.random.get_state()[1].copy()
    first = anonymize(str(adult_small), config(adult_dir, seed=11))
    again = anonymize(str(adult_small), config(adult_dir, seed=11, jobs=2, backend="threading"))
    other = anonymize(str(adult_small), config(adult_dir, seed=12))
    assert random.getstate() == python_state and np.array_equal(np.random.get_state()[1], numpy_state)
    assert released_bytes(first) == released_bytes(again)
    assert first.search.params["best_score"] == again.search.params["best_score"]
    described = next(m for m in first.report["models"] if m["model"] == "differential-privacy")
    assert described["input_rows"] == 3000 and described["sampled_rows"] == first.release.n
    assert released_bytes(first) != released_bytes(other)  # another seed, another sample


def test_sample_is_binomial_with_beta(adult_small: Path, adult_dir: Path) -> None:
    result = anonymize(str(adult_small), config(adult_dir, seed=3))
    d = next(m for m in result.report["models"] if m["model"] == "differential-privacy")
    assert d["beta"] == pytest.approx(1 - math.exp(-1))
    assert stats.binomtest(d["sampled_rows"], 3000, d["beta"]).pvalue > 1e-3
    assert result.evaluation.smallest_class >= d["derived_k"] == 62
    assert result.report["suppression_limit"] == 1.0


def test_checker_passes_the_release_and_fails_it_one_row_off(adult_small: Path, adult_dir: Path) -> None:
    result = anonymize(str(adult_small), config(adult_dir, seed=4))
    models = result.report["models"]
    k, rules = rules_from_models(models, False)
    assert k == 62
    table = result.release
    assert check_k_anonymity(table, QIS, k, 1.0, rules).passed
    # one released row moved to a QI value no other row has: a class of one row
    rows = table.rows()
    index = next(i for i, r in enumerate(rows) if r[0] != "*")
    rows[index][table.columns.index("age")] = "planted"
    broken = type(table)(table.columns, {c: [r[j] for r in rows] for j, c in enumerate(table.columns)})
    assert not check_k_anonymity(broken, QIS, k, 1.0, rules).passed
    # one row more than the report says were sampled: not this run's release
    extra = {c: [*[r[j] for r in table.rows()], "*"] for j, c in enumerate(table.columns)}
    k2, rules2 = rules_from_models(models, False)
    assert not check_k_anonymity(type(table)(table.columns, extra), QIS, k2, 1.0, rules2).passed


@pytest.mark.parametrize(("given", "words"), [
    ({"algorithm": "bestfirst"}, "its own randomized search"),
    ({"l": 2, "sensitive": ["salary-class"]}, "cannot be combined with l-diversity"),
    ({"k_map": 5, "sampling_fraction": 0.1}, "cannot be combined with k-map"),
    ({"max_average_risk": 0.1}, "cannot be combined with average-risk"),
    ({"node": {"sex": 0, "age": 1, "race": 0, "marital-status": 0, "education": 0}}, "--node"),
    ({"time_limit": 5.0}, "--time-limit"),
    ({"suppression": 0.5}, "--suppression"),
    ({"local_recoding": True}, "--local-recoding"),
    ({"partitioned": True}, "--partitioned"),
    ({"differential_privacy": "2"}, "EPS,DELTA"),
    ({"differential_privacy": "2,1.5"}, "delta must be in (0, 1)"),
    ({"differential_privacy": "0,1e-5"}, "epsilon must be"),
    ({"dp_search_share": 1.0}, "--dp-search-share"),
])
def test_what_differential_privacy_refuses(adult_small: Path, adult_dir: Path, given: dict, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        anonymize(str(adult_small), config(adult_dir, **given))


def test_safepub_without_differential_privacy_is_refused(adult_small: Path, adult_dir: Path) -> None:
    with pytest.raises(InputError, match="give --differential-privacy"):
        anonymize(str(adult_small), Config(qi=QIS, k=2, hierarchy_dir=str(adult_dir), keep_unnamed=True,
                                           algorithm="safepub"))


def test_command_line_run_check_report_and_apply(adult_small: Path, adult_dir: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    out, toml = tmp_path / "out.csv", tmp_path / "run.toml"
    flags = ["--qi", ",".join(QIS), "--k", "2", "--keep-unnamed", "--hierarchy-dir", str(adult_dir),
             "--differential-privacy", "2,1e-5", "--dp-search-share", "0.5", "--dp-steps", "15", "--seed", "9"]
    assert main(["anonymize", str(adult_small), *flags, "--output", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "(2, 1e-05)-DP: classes >= 62 rows of a sample" in shown
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["algorithm"] == "safepub" and report["verified"]["passed"] is True
    d = next(m for m in report["models"] if m["model"] == "differential-privacy")
    assert {"epsilon_anon", "epsilon_search", "beta", "derived_k", "dp_steps", "dp_score", "not_verifiable"} <= set(d)
    assert main(["check", str(out), "--report", str(out.with_suffix(".json"))]) == 0
    assert main(["check", str(out), "--report", str(out.with_suffix(".json")), "--differential-privacy", "2,1e-5",
                 "--dp-search-share", "0.5"]) == 0  # a restatement as the report has it
    assert main(["check", str(out), "--qi", ",".join(QIS), "--k", "2", "--suppression", "1",
                 "--differential-privacy", "2,1e-5", "--dp-search-share", "0.5"]) == 0
    # a share that derives a larger k than the release's smallest class fails
    assert main(["check", str(out), "--qi", ",".join(QIS), "--k", "2", "--suppression", "1",
                 "--differential-privacy", "2,1e-5", "--dp-search-share", "0.01"]) == 1
    capsys.readouterr()
    assert main(["apply", str(adult_small), "--report", str(out.with_suffix(".json")),
                 "--output", str(tmp_path / "applied.csv")]) == 2
    assert "does not apply a differential-privacy report" in capsys.readouterr().err
    # run.toml with the same names gives the same release
    toml.write_text(f'qi = "{",".join(QIS)}"\nk = 2\nkeep_unnamed = true\nhierarchy_dir = "{adult_dir}"\n'
                    'differential_privacy = "2,1e-5"\ndp_search_share = 0.5\ndp_steps = 15\nseed = 9\n')
    again = tmp_path / "again.csv"
    assert main(["anonymize", str(adult_small), "--config", str(toml), "--output", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
    assert read_csv(str(out)).n == d["sampled_rows"] < 3000


class Fake:
    """Evaluates nodes without a table (every node feasible); remembers what it evaluated."""

    def __init__(self) -> None:
        self.store: dict = {}

    def evaluate_many(self, nodes):  # noqa: ANN001, ANN201
        for node in nodes:
            self.store[tuple(node)] = Figures(tuple(node), 0, 1, 0.0)
        return [self.store[tuple(n)] for n in nodes]

    def evaluate(self, node):  # noqa: ANN001, ANN201
        return self.evaluate_many([node])[0]

    def cached(self, node):  # noqa: ANN001, ANN201
        return self.store.get(tuple(node))


def test_the_walk_goes_down_and_returns_the_best_scoring_pivot_not_the_last() -> None:
    from lattice.box import Box
    from lattice.search.base import Limits, Problem
    from lattice.search.safepub import SafePub

    def score(e: Figures) -> float:  # best at the middle of the lattice, so the walk passes it
        return -abs(sum(e.node) - 4)

    problem = Problem(Fake(), Box((0, 0, 0), (3, 3, 3)), (3, 3, 3))
    result = SafePub(8, 50.0, score).run(problem, Limits(seed=1))
    pivots = [(3, 3, 3)] + [tuple(t["pivot"]) for t in result.trace]
    for i, pivot in enumerate(pivots[1:], 1):  # each draw is a specialization of an earlier pivot
        assert any(pivot in specializations(p, (0, 0, 0)) for p in pivots[:i])
    scores = [-5.0] + [t["score"] for t in result.trace]  # the top (9 levels) scores -5
    assert result.params["best_score"] == max(scores) == 0.0
    assert result.best.node == pivots[scores.index(max(scores))] != pivots[-1]
    assert result.params["steps_taken"] == 8


def test_frontier_refuses_differential_privacy(adult_small: Path, adult_dir: Path) -> None:
    from kgen import frontier

    with pytest.raises(InputError, match="frontier does not take --differential-privacy"):
        frontier(str(adult_small), config(adult_dir), k_min=2, k_max=5)


def test_a_model_object_meets_the_same_refusals_and_keeps_its_steps(adult_small: Path, adult_dir: Path) -> None:
    from fitness.models import DistinctLDiversity, KAnonymity

    plain = Config(qi=QIS, k=2, hierarchy_dir=str(adult_dir), keep_unnamed=True, seed=2)
    model = DifferentialPrivacy(2.0, 1e-5, 0.5, 7)
    done = anonymize(str(adult_small), plain, models=[KAnonymity(2), model])
    assert done.search.params["steps"] == 7 and done.report["suppression_limit"] == 1.0
    with pytest.raises(InputError, match="its own randomized search"):
        anonymize(str(adult_small), Config(qi=QIS, k=2, hierarchy_dir=str(adult_dir), keep_unnamed=True,
                                           algorithm="ola"), models=[KAnonymity(2), model])
    with pytest.raises(InputError, match="cannot be combined with distinct-l-diversity"):
        anonymize(str(adult_small), Config(qi=QIS, k=2, hierarchy_dir=str(adult_dir), keep_unnamed=True,
                                           sensitive=["salary-class"]),
                  models=[KAnonymity(2), model, DistinctLDiversity("salary-class", 2)])


def test_the_public_report_of_a_dp_release_leaves_the_seed_out(adult_small: Path, adult_dir: Path) -> None:
    from kgen.report.public import public_report

    done = anonymize(str(adult_small), config(adult_dir, seed=123456))
    assert done.report["seed"] == 123456
    text = json.dumps(public_report(done.report))
    assert "123456" not in text and "differential-privacy" in text


def test_a_report_whose_sample_exceeds_its_input_is_refused_by_the_checker(adult_small: Path,
                                                                           adult_dir: Path) -> None:
    done = anonymize(str(adult_small), config(adult_dir, seed=5))
    changed = [dict(m, sampled_rows=3001) if m["model"] == "differential-privacy" else m
               for m in done.report["models"]]
    k, rules = rules_from_models(changed, False)
    with pytest.raises(InputError, match="a sample cannot be larger than its input"):
        check_k_anonymity(done.release, QIS, k, 1.0, rules)
