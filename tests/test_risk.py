"""Re-identification risk (SPEC section 10, docs/risk.md): hand computations on the paper's tables and small
tables built for it, the population-uniqueness models, `kgen risk`, `--max-risk`, and pycanon's figures."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fitness.uniqueness import _arx_gammas, pitman_guess
from kgen import Config, anonymize, from_mapping
from kgen.io.csvio import format_csv
from kgen.io.table import read_table
from kgen.report.risk import (
    _snb_equations,
    config_with_max_risk,
    k_for_max_risk,
    pitman_fit,
    population_uniqueness,
    risk_report,
    size_histogram,
    snb_uniques,
    zayatz_uniques,
)
from lattice.errors import InputError

QIS = ["Age", "Gender", "Postcode"]
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
# The KGen paper's Table 1 (raw) and Table 2 (its 2-anonymous release).
TABLE_1 = {"Age": ["24", "28", "42", "49"], "Gender": ["F", "M", "F", "M"],
           "Postcode": ["80015", "80019", "85073", "85071"], "Crime": ["Assault", "Kidnapping", "Homicide", "Rape"]}
TABLE_2 = {"Age": ["20 - 30", "20 - 30", "40 - 50", "40 - 50"], "Gender": ["P"] * 4,
           "Postcode": ["8001*", "8001*", "8507*", "8507*"], "Crime": ["Assault", "Kidnapping", "Homicide", "Rape"]}


def mixed_table() -> dict[str, list[str]]:
    """Classes of sizes 1, 2, 3 and 5 on (a, b), and 2 suppressed rows: n = 13, n_r = 11."""
    a, b = [], []
    for label, size in (("u", 1), ("p", 2), ("t", 3), ("f", 5)):
        a += [label] * size
        b += ["x"] * size
    a += ["*", "*"]
    b += ["*", "*"]
    return {"a": a, "b": b, "s": [str(i) for i in range(len(a))]}


def test_raw_paper_table_every_record_is_unique() -> None:
    r = risk_report(from_mapping(TABLE_1), QIS)
    assert (r["rows"], r["rows_released"], r["classes"], r["smallest_class"]) == (4, 4, 4, 1)
    assert r["prosecutor"] == {"max": 1.0, "mean": 1.0, "records_above_threshold": 1.0, "rows_above_threshold": 4}
    assert r["marketer"] == 1.0
    assert (r["sample_uniques"], r["sample_uniques_share"]) == (4, 1.0)


def test_paper_release_has_risk_one_half() -> None:
    r = risk_report(from_mapping(TABLE_2), QIS)
    assert r["classes"] == 2 and r["smallest_class"] == 2
    assert r["prosecutor"]["max"] == 0.5 and r["prosecutor"]["mean"] == 0.5 and r["marketer"] == 0.5
    assert r["prosecutor"]["rows_above_threshold"] == 4  # 1/2 > 0.2
    assert r["sample_uniques"] == 0
    assert risk_report(from_mapping(TABLE_2), QIS, threshold=0.5)["prosecutor"]["rows_above_threshold"] == 0


def test_mixed_classes_by_hand() -> None:
    r = risk_report(from_mapping(mixed_table()), ["a", "b"], threshold=0.2)
    assert (r["rows"], r["rows_released"], r["suppressed"], r["classes"]) == (13, 11, 2, 4)
    p = r["prosecutor"]
    assert p["max"] == 1.0
    assert p["mean"] == pytest.approx(4 / 11)  # (1 + 2*1/2 + 3*1/3 + 5*1/5) / 11
    # 1/|E| > 0.2 for sizes 1, 2, 3 (1/5 = 0.2 is not above): 6 rows
    assert p["rows_above_threshold"] == 6 and p["records_above_threshold"] == pytest.approx(6 / 11)
    assert r["marketer"] == pytest.approx(4 / 11)
    assert r["sample_uniques"] == 1
    assert r["class_sizes"] == [[1, 1], [2, 1], [3, 1], [5, 1]]
    # with tau = 0.25: sizes 1 and 2 and 3 (1/3 > 0.25): still 6; with 0.4: sizes 1, 2: 3 rows
    assert risk_report(from_mapping(mixed_table()), ["a", "b"], threshold=0.4)["prosecutor"][
        "rows_above_threshold"] == 3


def test_mean_prosecutor_risk_is_the_average_over_records() -> None:
    table = mixed_table()
    r = risk_report(from_mapping(table), ["a", "b"])
    keys = [(x, y) for x, y in zip(table["a"], table["b"]) if (x, y) != ("*", "*")]
    per_record = [Fraction(1, keys.count(key)) for key in keys]
    assert r["prosecutor"]["mean"] == pytest.approx(float(sum(per_record) / len(per_record)))


def test_suppressed_mask_overrides_the_star_convention() -> None:
    """A node that generalizes every QI to `*` is a class, not suppression, when the anonymizer says so."""
    table = from_mapping({"a": ["*"] * 4, "b": ["*"] * 4})
    assert risk_report(table, ["a", "b"])["rows_released"] == 0
    r = risk_report(table, ["a", "b"], suppressed_rows=np.zeros(4, dtype=bool))
    assert (r["rows_released"], r["classes"], r["prosecutor"]["max"]) == (4, 1, 0.25)


def test_journalist_risk_uses_population_class_sizes() -> None:
    population = {"Age": ["20 - 30"] * 5 + ["40 - 50"] * 10, "Gender": ["P"] * 15,
                  "Postcode": ["8001*"] * 5 + ["8507*"] * 10}
    r = risk_report(from_mapping(TABLE_2), QIS, population=from_mapping(population))
    j = r["journalist"]
    assert j["max"] == pytest.approx(1 / 5)
    assert j["mean"] == pytest.approx((2 / 5 + 2 / 10) / 4)
    assert j["rows_above_threshold"] == 0  # 1/5 is not above 0.2
    assert j["classes_not_in_population"] == 0
    assert j["max"] <= r["prosecutor"]["max"]
    # the sampling fraction defaults to n / |P|; the population's uniques are counted, not estimated
    u = r["population_uniqueness"]
    assert u["sampling_fraction"] == pytest.approx(4 / 15) and u["model"] == "population table"
    assert u["uniques"] == 0 and u["population_rows"] == 15
    assert u["estimated_from_sample"]["population_rows"] == 15


def test_journalist_risk_counts_classes_missing_from_the_population() -> None:
    population = {"Age": ["20 - 30"] * 5, "Gender": ["P"] * 5, "Postcode": ["8001*"] * 5}
    j = risk_report(from_mapping(TABLE_2), QIS, population=from_mapping(population))["journalist"]
    assert j["classes_not_in_population"] == 1
    assert j["max"] == 0.5  # the missing class counts with its own size, 2


def test_zayatz_by_hand() -> None:
    """histogram {1: 2, 2: 1}, n = 4, N = 8: P1 = 4/8, P2 = 2*C(6,3)/C(8,4) = 4/7; conditional 7/11;
    population uniques = 2 * 7/11 / (1/2) = 28/11."""
    z = zayatz_uniques({1: 2, 2: 1}, 8, 4)
    assert z["conditional"] == pytest.approx(7 / 11)
    assert z["uniques"] == pytest.approx(28 / 11)
    assert z["share"] == pytest.approx(28 / 11 / 8)


def test_sampling_fraction_one_is_exact() -> None:
    u = population_uniqueness({1: 3, 4: 2}, 1.0)
    assert u["model"] == "exact" and u["uniques"] == 3 and u["share"] == pytest.approx(3 / 11)


def _pitman_loglik(theta: float, alpha: float, histogram: dict[int, int]) -> float:
    """Pitman's sampling formula written out term by term (independent of kgen.report.risk's vectorized sums)."""
    u = sum(histogram.values())
    n = sum(s * c for s, c in histogram.items())
    value = sum(math.log(theta + i * alpha) for i in range(1, u))
    value -= sum(math.log(theta + i) for i in range(1, n))
    for size, count in histogram.items():
        value += count * sum(math.log(i - alpha) for i in range(1, size))
    return value


def zipf_sample(fraction: float, seed: int = 1) -> tuple[dict[int, int], int, int]:
    """A sample of a Zipf-distributed population of 50,000: its histogram, N and the true population uniques."""
    rng = np.random.default_rng(seed)
    labels = rng.zipf(1.6, 50_000)
    _, counts = np.unique(labels, return_counts=True)
    sample = rng.choice(labels, int(labels.size * fraction), replace=False)
    _, sample_counts = np.unique(sample, return_counts=True)
    return size_histogram(sample_counts), labels.size, int((counts == 1).sum())


def test_pitman_fit_is_a_maximum_of_the_likelihood() -> None:
    histogram, _, _ = zipf_sample(0.1)
    theta, alpha = pitman_fit(histogram)
    best = _pitman_loglik(theta, alpha, histogram)
    for dt, da in ((1e-3, 0), (-1e-3, 0), (0, 1e-4), (0, -1e-4), (1e-3, 1e-4), (-1e-3, -1e-4)):
        assert _pitman_loglik(theta * (1 + dt), alpha + da, histogram) <= best + 1e-9


def test_pitman_fit_agrees_with_scipy() -> None:
    optimize = pytest.importorskip("scipy.optimize")
    histogram, _, _ = zipf_sample(0.1, seed=3)
    theta, alpha = pitman_fit(histogram)
    found = optimize.minimize(lambda x: -_pitman_loglik(math.exp(x[0]), x[1], histogram),
                              [math.log(10.0), 0.5], bounds=[(-5, 15), (1e-3, 0.999)], method="L-BFGS-B")
    assert _pitman_loglik(theta, alpha, histogram) >= -found.fun - 1e-6
    assert alpha == pytest.approx(found.x[1], abs=1e-3)


def _pitman_equations(theta: float, alpha: float, histogram: dict[int, int]) -> list[float]:
    """The derivatives of `_pitman_loglik` in theta and alpha, term by term: the likelihood equations."""
    u = sum(histogram.values())
    n = sum(s * c for s, c in histogram.items())
    d_theta = sum(1 / (theta + i * alpha) for i in range(1, u)) - sum(1 / (theta + i) for i in range(1, n))
    d_alpha = sum(i / (theta + i * alpha) for i in range(1, u))
    d_alpha -= sum(count * sum(1 / (i - alpha) for i in range(1, size)) for size, count in histogram.items())
    return [d_theta, d_alpha]


def test_arxs_digamma_is_digamma_and_its_trigamma_lacks_the_series_below_12() -> None:
    """ARX's Gamma class, which Pitman's Newton steps use: digamma is accurate; trigamma shifts x below 8 up to
    8 but adds the asymptotic series only from 12 on: psi'(1) comes out 1 + 1/4 + ... + 1/49 = 1.5118 (the true
    value is pi^2 / 6 = 1.6449), and from 8 to 12 it is 0."""
    special = pytest.importorskip("scipy.special")
    x = np.array([0.5, 1.0, 3.7, 11.9, 12.0, 250.0])
    assert _arx_gammas(x)[0] == pytest.approx(special.digamma(x), rel=1e-12)
    assert _arx_gammas([12.0, 40.0])[1] == pytest.approx(special.polygamma(1, [12.0, 40.0]), rel=1e-12)
    assert _arx_gammas([1.0])[1][0] == pytest.approx(sum(1 / k**2 for k in range(1, 8)), rel=1e-15)
    assert _arx_gammas([9.5])[1][0] == 0.0
    # ARX's ends: the Taylor forms at 0 (for negative x too), -inf at 0, nan for inf and nan
    with np.errstate(all="ignore"):
        digamma, trigamma = _arx_gammas([-0.5, 5e-5, 0.0, np.inf, np.nan])
    euler, zeta2 = -0.5772156649015329, math.pi**2 / 6
    assert digamma[:2] == pytest.approx([euler + 2 - zeta2 / 2, special.digamma(5e-5)], rel=1e-9)
    assert trigamma[:2] == pytest.approx([4 + zeta2 + 2 * 1.2020569031595942 * 0.5, 4e8 + zeta2 - 2.4e-4 * 0.5],
                                         rel=1e-12)
    assert digamma[2] == trigamma[2] == -np.inf and np.isnan(digamma[3:]).all() and np.isnan(trigamma[3:]).all()


def test_pitmans_start_is_arxs_closed_form_by_hand() -> None:
    """{1: 4, 2: 1, 3: 1}: u = 6, n = 9, c1 = 4, c2 = 1, c = 4 x 3 / 1 = 12; theta = (9 x 6 x 12 - 4 x 8 x (12 +
    12)) / (2 x 4 x 6 + 4 x 12 - 9 x 12) = -120 / -12 = 10; alpha = (10 x (4 - 9) + 8 x 4) / (9 x 6) = -1/3.
    {1: 3, 3: 1} has no class of size 2 (counted as 1): c = 6, theta = (144 - 210) / 6 = -11, alpha = 48 / 24."""
    assert pitman_guess({1: 4, 2: 1, 3: 1}) == pytest.approx((10.0, -1 / 3), rel=1e-15)
    assert pitman_guess({1: 3, 3: 1}) == pytest.approx((-11.0, 2.0), rel=1e-15)
    assert all(math.isnan(v) for v in pitman_guess({2: 3}))  # no unique: 0 / 0, no start (ARX's nan)


def test_pitman_fit_solves_the_likelihood_equations_at_scipys_root() -> None:
    """Newton-Raphson's answer meets both equations (written term by term here) within ARX's 1e-6, and
    scipy's root finder on the same equations lands on the same point from ARX's start value (0.33, 0.33). (The
    closed-form start, (-17.3, 0.66), lies by a root at theta = -17.26 outside the model's theta > -alpha:
    ARX's run from there steps to theta < 0 and is dropped; scipy, unconstrained, finds that root.)"""
    optimize = pytest.importorskip("scipy.optimize")
    histogram, _, _ = zipf_sample(0.1, seed=3)
    theta, alpha = pitman_fit(histogram)
    assert max(abs(v) for v in _pitman_equations(theta, alpha, histogram)) <= 1e-6
    assert pitman_guess(histogram)[0] < 0
    root = optimize.root(lambda x: _pitman_equations(x[0], x[1], histogram), [0.33, 0.33], tol=1e-12)
    assert root.success
    assert (theta, alpha) == pytest.approx(tuple(root.x), rel=1e-6)


def test_population_uniqueness_estimates_are_near_the_truth_and_below_sample_uniqueness() -> None:
    for fraction in (0.05, 0.2):
        histogram, population, true_uniques = zipf_sample(fraction)
        u = population_uniqueness(histogram, fraction, model="pitman")
        assert u["model"] == "pitman" and u["pitman"]["converged"]
        n = sum(s * c for s, c in histogram.items())
        assert u["population_rows"] == population
        assert 0.6 * true_uniques < u["uniques"] < 1.6 * true_uniques
        assert 0.6 * true_uniques < u["zayatz"]["uniques"] < 1.6 * true_uniques
        assert u["share"] < histogram[1] / n  # the sample's unique share overstates population uniqueness


def test_no_sample_uniques_means_zayatz_finds_none() -> None:
    assert zayatz_uniques({2: 10, 5: 3}, 1000, 35)["uniques"] == 0.0


# No class of size 1, yet Pitman's likelihood has an interior maximum here (theta 33.4, alpha 0.19): the fit alone
# would claim 115 population uniques at pi = 0.1, as kgen did on FARS (243 where ARX reports 0; issue 24).
NO_UNIQUES = {2: 141, 3: 14, 4: 12, 5: 5, 6: 6, 7: 5, 8: 1, 9: 3, 10: 4, 11: 2, 12: 3, 13: 1, 14: 1, 15: 1, 18: 1,
              19: 1, 21: 1, 23: 1, 25: 1, 26: 1, 29: 1, 31: 2, 32: 1, 34: 1, 45: 1, 50: 1, 84: 1, 1037: 1}


@pytest.mark.parametrize("model", ["dankar", "pitman", "zayatz", "snb"])
def test_no_sample_uniques_means_no_population_uniques_whatever_the_model(model: str) -> None:
    assert pitman_fit(NO_UNIQUES) is not None  # the fit converges: only the rule keeps it out
    u = population_uniqueness(NO_UNIQUES, 0.1, model=model)
    assert u["uniques"] == 0.0 and u["share"] == 0.0 and "no sample uniques" in u["note"]


def test_kgen_risk_reports_no_population_uniques_without_sample_uniques(tmp_path: Path) -> None:
    """ARX on FARS at pi = 0.1: 0 population uniques when no record is unique in the sample."""
    values = [str(i) for i, (size, count) in enumerate((s, c) for s, c in NO_UNIQUES.items() for _ in range(c))
              for _ in range(size)]
    (tmp_path / "t.csv").write_text(format_csv(["q"], [[v] for v in values], ","))
    out = subprocess.run([sys.executable, "-m", "kgen", "risk", str(tmp_path / "t.csv"), "--qi", "q",
                          "--sampling-fraction", "0.1", "--json"], capture_output=True, text=True, check=True)
    u = json.loads(out.stdout)["population_uniqueness"]
    assert (u["uniques"], u["population_rows"]) == (0.0, 10 * len(values))


def test_dankar_rule_picks_pitman_up_to_a_tenth_and_zayatz_or_snb_above() -> None:
    histogram, _, _ = zipf_sample(0.05)
    assert population_uniqueness(histogram, 0.05)["model"] == "pitman"
    above = population_uniqueness(histogram, 0.2)  # the models see n / N = 0.05 ... as given: 0.2 only by pi
    assert above["model"] in ("zayatz", "snb")
    chosen = min([above["zayatz"]["uniques"]] + ([above["snb"]["uniques"]] if above["snb"]["converged"] else []))
    assert above["uniques"] == chosen


SNB_CASE = {1: 1108, 2: 163, 3: 66, 4: 36, 5: 14, 6: 8, 7: 8, 8: 1, 9: 2, 10: 1, 11: 2, 12: 4, 13: 3, 18: 1, 19: 1,
            20: 1, 21: 1, 22: 1, 23: 1, 25: 1, 27: 1, 37: 1, 50: 1, 79: 1, 294: 1}  # n = 2730, N = 3033 (pi 0.9)


def test_snb_estimate_is_a_root_of_its_moment_equations_inside_its_domain() -> None:
    n = sum(s * c for s, c in SNB_CASE.items())
    snb = snb_uniques(SNB_CASE, 3033)
    assert snb["converged"] and snb["alpha"] > 0 and 0 < snb["beta"] < 1
    value = _snb_equations(snb["alpha"], snb["beta"], snb["classes"], n / 3033, SNB_CASE[1], SNB_CASE[2])
    assert np.abs(value).max() <= 1e-6
    assert snb["uniques"] == pytest.approx(snb["classes"] * snb["beta"] ** snb["alpha"])
    assert 0 < snb["uniques"] < 3033
    u = population_uniqueness(SNB_CASE, n / 3033)  # Dankar above 0.1: the smaller of SNB and Zayatz
    assert u["uniques"] == min(u["snb"]["uniques"], u["zayatz"]["uniques"])


# Raw Adult's class-size histogram on its 8 QIs (30,162 rows, 18,109 classes): the slow test below reads it
# from the file and checks the same figures end to end.
ADULT_HISTOGRAM = {1: 14021, 2: 2026, 3: 796, 4: 379, 5: 209, 6: 153, 7: 114, 8: 67, 9: 55, 10: 54, 11: 47, 12: 32,
                   13: 28, 14: 13, 15: 16, 16: 16, 17: 10, 18: 9, 19: 12, 20: 9, 21: 4, 22: 4, 23: 5, 24: 2, 25: 3,
                   26: 4, 27: 7, 29: 2, 30: 3, 32: 2, 34: 3, 35: 1, 36: 1, 37: 1, 45: 1}


def test_raw_adult_histogram_at_a_fifth_gives_arx_figure() -> None:
    """ARX 3.9.2, raw Adult at pi = 0.2: 31.1 % population uniques (Dankar's rule); kgen's Pitman-first choice
    gave 29.4 %."""
    u = population_uniqueness(ADULT_HISTOGRAM, 0.2)
    assert (u["model"], u["population_rows"]) == ("zayatz", 150810)
    assert round(100 * u["share"], 1) == 31.1 and round(100 * u["pitman"]["share"], 1) == 29.4


@pytest.mark.slow
def test_raw_adult_at_a_fifth_gives_arx_figure_by_dankar_rule(adult_csv: Path) -> None:
    """ARX 3.9.2 on raw Adult (8 QIs) at pi = 0.2: 31.1 % population uniques (Dankar); Pitman alone gives 29.4 %
    (kgen's figure before issue 24). SNB's equations have no root here, so the rule falls back on Zayatz."""
    table = read_table(str(adult_csv))
    r = risk_report(table, ADULT_QIS, sampling_fraction=0.2)
    u = r["population_uniqueness"]
    assert u["uniqueness_model"] == "dankar" and u["model"] == "zayatz" and not u["snb"]["converged"]
    assert u["population_rows"] == round(30162 / 0.2)
    assert round(100 * u["share"], 1) == 31.1
    assert round(100 * u["pitman"]["share"], 1) == 29.4
    assert round(100 * risk_report(table, ADULT_QIS, sampling_fraction=0.2, uniqueness_model="pitman")
                 ["population_uniqueness"]["share"], 1) == 29.4


def test_population_size_is_all_rows_over_the_sampling_fraction() -> None:
    """ARX: N = the data's rows / pi, suppressed rows included; the models see released rows / N."""
    r = risk_report(from_mapping(mixed_table()), ["a", "b"], sampling_fraction=0.5)
    u = r["population_uniqueness"]
    assert (u["sample_rows"], u["population_rows"]) == (11, 26)


def test_unknown_uniqueness_model_is_refused() -> None:
    with pytest.raises(InputError, match="population-uniqueness model"):
        risk_report(from_mapping(mixed_table()), ["a", "b"], uniqueness_model="poisson")


@pytest.mark.parametrize("risk, k", [(0.2, 5), (0.1, 10), (0.3, 4), (1.0, 1), (0.5, 2), (1 / 3, 3), (0.34, 3)])
def test_max_risk_maps_to_the_smallest_sufficient_k(risk: float, k: int) -> None:
    assert k_for_max_risk(risk) == k
    assert 1 / k <= risk + 1e-12 and (k == 1 or 1 / (k - 1) > risk)


def test_max_risk_raises_k_and_never_lowers_it() -> None:
    assert config_with_max_risk(Config(qi=["a"], k=2, keep_unnamed=True), 0.2).k == 5
    assert config_with_max_risk(Config(qi=["a"], k=8, keep_unnamed=True), 0.2).k == 8
    assert config_with_max_risk(Config(qi=["a"], k=3, keep_unnamed=True), None).k == 3
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(InputError, match="max-risk"):
            k_for_max_risk(bad)


def test_anonymize_report_has_a_risk_section_consistent_with_k() -> None:
    table = from_mapping({"a": [str(i % 7) for i in range(60)], "b": [str(i % 3) for i in range(60)]})
    config = config_with_max_risk(Config(qi=["a", "b"], k=2, suppression=0.1, hierarchies={"a": "decimal",
                                                                                         "b": "flat"},
                                                                                         keep_unnamed=True), 0.25)
    result = anonymize(table, config)
    r = result.report["risk"]
    assert r["prosecutor"]["max"] <= 0.25
    assert r["classes"] == result.report["classes"] and r["smallest_class"] == result.report["smallest_class"]
    assert r["suppressed"] == result.report["suppressed"]
    assert r["sample_uniques"] == 0


def run_kgen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen", *args], capture_output=True, text=True, timeout=120)


def write(path: Path, table: dict[str, list[str]]) -> Path:
    columns = list(table)
    path.write_text(format_csv(columns, [list(r) for r in zip(*table.values())]), encoding="utf-8")
    return path


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_kgen_risk_command_prints_the_figures(tmp_path: Path) -> None:
    source = write(tmp_path / "mixed.csv", mixed_table())
    done = run_kgen("risk", str(source), "--qi", "a,b", "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["prosecutor"]["rows_above_threshold"] == 6 and figures["sample_uniques"] == 1
    text = run_kgen("risk", str(source), "--qi", "a,b", "--risk-threshold", "0.4")
    assert text.returncode == 0
    assert "3 rows (27.27%) above 0.4" in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 100


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_kgen_risk_generalizes_a_raw_population_with_the_report(tmp_path: Path) -> None:
    raw = {"a": [str(i % 10) for i in range(40)], "b": ["x"] * 40}
    source = write(tmp_path / "raw.csv", raw)
    out, report = tmp_path / "rel.csv", tmp_path / "rel.json"
    done = run_kgen("anonymize",
                    "--keep-unnamed", str(source), "--qi", "a,b", "--k", "8", "--hierarchy", "a=intervals:5",
                    "--output", str(out), "--report", str(report), "--quiet")
    assert done.returncode == 0, done.stderr
    population = write(tmp_path / "pop.csv", {"a": [str(i % 10) for i in range(400)], "b": ["x"] * 400})
    done = run_kgen("risk", str(out), "--report", str(report), "--population", str(population), "--json")
    assert done.returncode == 0, done.stderr
    j = json.loads(done.stdout)["journalist"]
    assert j["classes_not_in_population"] == 0
    assert j["population_rows"] == 400 and j["max"] == pytest.approx(1 / 200)  # two classes of 200 in P


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_kgen_risk_errors_are_one_line(tmp_path: Path) -> None:
    source = write(tmp_path / "mixed.csv", mixed_table())
    for args in (["--qi", "a,zz"], ["--qi", "a", "--risk-threshold", "2"], [],
                 ["--qi", "a", "--sampling-fraction", "0"]):
        done = run_kgen("risk", str(source), *args)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.slow
def test_risk_figures_match_pycanon(tmp_path: Path, pycanon) -> None:
    """pycanon's max_rir (1/min class) and number of classes (marketer risk = classes / rows)."""
    files = [write(tmp_path / "t1.csv", TABLE_1), write(tmp_path / "t2.csv", TABLE_2),
             write(tmp_path / "mixed.csv", mixed_table())]
    table = from_mapping({"a": [str(i % 7) for i in range(60)], "b": [str(i % 3) for i in range(60)],
                          "c": [str(i % 11) for i in range(60)]})
    result = anonymize(table, Config(qi=["a", "b", "c"], k=3, suppression=0.05,
                                     hierarchies={"a": "decimal", "b": "flat", "c": "decimal"}, keep_unnamed=True))
    released = tmp_path / "released.csv"
    released.write_text(format_csv(result.release.columns, result.release.rows()), encoding="utf-8")
    checks = [(files[0], QIS), (files[1], QIS), (files[2], ["a", "b"]), (released, ["a", "b", "c"])]
    for path, qis in checks:
        ours = risk_report(__import__("kgen").read_csv(path), qis)
        theirs = pycanon([path], qis, measures=["max_rir", "n_ec"], exclude_suppressed=True)[0]
        assert ours["prosecutor"]["max"] == pytest.approx(theirs["max_rir"])
        assert ours["marketer"] == pytest.approx(theirs["n_ec"] / theirs["rows"])
        assert ours["rows_released"] == theirs["rows"]
