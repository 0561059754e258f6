"""Population uniqueness estimated from a sample's class-size histogram (Dankar et al. 2012, as ARX offers it):
Pitman's model, Zayatz's, the shifted negative binomial (SNB) and Dankar's rule choosing among them. The one
definition of these figures: `kgen risk` and the report's risk section (kgen/report/risk.py) and the
population-uniqueness privacy model (fitness/privacy/uniqueness.py) call these functions. Formulas and
sources: docs/risk.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from lattice.errors import InputError

# The population-uniqueness models (`population_uniqueness`); ARX's default is Dankar et al.'s rule.
UNIQUENESS_MODELS = ("dankar", "pitman", "zayatz", "snb")
DEFAULT_UNIQUENESS_MODEL = "dankar"
# SNB's moment equations are solved as ARX's solver does: |equation| <= 1e-6, 1000 steps per start value.
SNB_ACCURACY = 1e-6
SNB_STEPS = 1000
SNB_STARTS = ((1.0, 1.0), *((a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)))
# Pitman's model is fitted as ARX 3.9.2 fits it (`ModelPitman` with the newtonraphson 0.0.1 solver, configured
# as ARX's JUnit cases configure it), so that a threshold on its estimate gives ARX's nodes: Newton-Raphson on
# the two likelihood equations from a closed-form guess, then from ARX's 16 start values; a solution is a point
# where both equations are at most PITMAN_ACCURACY in size; only theta >= 0 is required (docs/risk.md).
PITMAN_ACCURACY = 1e-6
# Newton steps from one start before the next (ARX's iterationsPerTry): 15, as ARX's JUnit cases set it (ARX's
# default is 1000; from the closed-form guess the steps can drift towards theta -> inf, alpha -> -inf, where the
# equations vanish and the estimate is 0: a short run leaves that to the start values, docs/risk.md).
PITMAN_STEPS = 15
PITMAN_STARTS = tuple((0.33 * i, 0.33 * j) for i in range(4) for j in range(4))  # (theta, alpha), ARX's order
# ARX's Gamma.digamma and Gamma.trigamma, constants and all (`_arx_gammas`)
_EULER = -0.57721566490153286060651209008240243104215933593992
_ZETA2 = math.pi * math.pi / 6.0
_ZETA3 = -2.0 * 1.202056903159594285399738161511449990764986292
_DIGAMMA_SERIES = (1.0 / 12.0, 1.0 / 120.0, 1.0 / 252.0, 1.0 / 240.0, 1.0 / 132.0)
_TRIGAMMA_SERIES = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0)
_SHIFTS = np.arange(12.0)


def _arx_gammas(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The digamma and trigamma functions as ARX's `Gamma` class computes them, so that Newton's steps follow
    ARX's; one pass for both (most of a fit's time goes here).

    Digamma: x shifted up to 12 (psi(x) = psi(x + 1) - 1/x), then de Moivre's series; x <= 1e-6 by the Taylor
    form at 0, negative x too (ARX's reflection formula is commented out). Trigamma, ARX's slip included: x
    shifted up to 8 (psi'(x) = psi'(x + 1) + 1/x^2), but the asymptotic series added only from 12 on, so below
    12 the series' share is missing (psi'(1) comes out 1.512, not 1.645; from 8 to 12 it is 0); x <= 1e-4 by
    the Taylor form at 0. ARX's closed-form Jacobian of Pitman's equations uses this trigamma: Newton's path,
    not its solutions, depends on it (a solution is checked on the equations, which use digamma). 0 gives
    -inf, inf and nan give nan. The shifts are summed in one pass rather than ARX's loop: the same values to
    rounding. Callers set np.errstate."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    regular = np.isfinite(x) & (x > 1e-6)
    y = x if regular.all() else np.where(regular, x, 1.0)
    k12, k8 = np.ceil(12.0 - y).clip(0.0), np.ceil(8.0 - y).clip(0.0)  # the steps of ARX's `while (y < 12) y++`
    digamma_sum = trigamma_sum = np.zeros_like(y)
    if (width := int(k12.max())) > 0:
        shifts = _SHIFTS[:width]
        inverse = 1.0 / (y[:, None] + shifts)
        digamma_sum = np.where(shifts < k12[:, None], inverse, 0.0).sum(axis=1)
        trigamma_sum = np.where(shifts < k8[:, None], inverse * inverse, 0.0).sum(axis=1)
    z, w = y + k12, y + k8
    r = 1.0 / z
    r2 = r * r
    s3, s4, s5, s6, s7 = _DIGAMMA_SERIES
    digamma = -digamma_sum + (np.log(z) - 0.5 * r) - r2 * (s3 - r2 * (s4 - r2 * (s5 - r2 * (s6 - r2 * s7))))
    q = 1.0 / (w * w)
    b2, b4, b6, b8, b10 = _TRIGAMMA_SERIES
    series = 0.5 * q + (1.0 + q * (b2 + q * (b4 + q * (b6 + q * (b8 + q * b10))))) / w
    trigamma = trigamma_sum + np.where(w >= 12.0, series, 0.0)
    if not regular.all() or (x <= 1e-4).any():
        digamma = np.where(x <= 1e-6, _EULER - 1.0 / x + _ZETA2 * x, digamma)
        trigamma = np.where(x == 0.0, -np.inf, np.where(x <= 1e-4, 1.0 / (x * x) + _ZETA2 + _ZETA3 * x, trigamma))
        finite = np.isfinite(x)
        digamma, trigamma = np.where(finite, digamma, np.nan), np.where(finite, trigamma, np.nan)
    return digamma, trigamma


@dataclass(frozen=True)
class _Sample:
    """What Pitman's equations read of a class-size histogram: u classes, n records, the sizes above 1 and
    their class counts (ascending, as ARX's histogram lists them) and, for the summed form, the number of
    classes larger than j for j = 1 .. largest size - 1."""

    u: float
    n: float
    sizes: np.ndarray
    counts: np.ndarray
    larger: np.ndarray

    @classmethod
    def of(cls, histogram: Mapping[int, int]) -> _Sample:
        pairs = sorted((s, c) for s, c in histogram.items() if c > 0)
        sizes = np.array([s for s, _ in pairs if s != 1], dtype=float)
        counts = np.array([c for s, c in pairs if s != 1], dtype=float)
        top = pairs[-1][0] if pairs else 1
        per_size = np.zeros(top + 1)
        for size, count in pairs:
            per_size[size] = count
        larger = per_size[::-1].cumsum()[::-1][2:]  # classes larger than j = sum of counts of sizes >= j + 1
        return cls(float(sum(c for _, c in pairs)), float(sum(s * c for s, c in pairs)), sizes, counts, larger)


def _pitman_closed(sample: _Sample, theta: float, alpha: float) -> tuple[tuple[float, float], tuple[float, ...]]:
    """Pitman's two likelihood equations (d log L / d theta, d log L / d alpha) at (theta, alpha) and their
    Jacobian (row-major), in ARX's closed form: the sums over i < u and i < n as digamma differences,
    the Jacobian with ARX's trigamma (`_arx_gammas`); the same expressions, in the same order, as ARX's master
    function."""
    t, a, u, n = np.float64(theta), np.float64(alpha), sample.u, sample.n
    v0, ta = u - 1.0, t / a
    # digamma at 0, 2.., trigamma at 1.. (u + t/a written ARX's two ways), then t/a + 1, n + t, t + 1, 1 - a
    dig, tri = _arx_gammas(np.concatenate(([v0 + ta + 1.0, (a + t + a * v0) / a, ta + 1.0, n + t, t + 1.0,
                                            1.0 - a], sample.sizes - a)))
    v1, v4, v2, v3, v5 = dig[0], dig[2], tri[1], tri[2], a * a
    d1 = (v3 - v2) / v5
    d5 = (a * v1 + t * v2 - a * v4 - t * v3) / (v5 * a)
    d3 = (v5 * v0 - t * t * v2 + t * t * v3 - 2.0 * a * t * v1 + 2.0 * a * t * v4) / (v5 * v5)
    o1 = (v1 - v4) / a
    o3 = (-t * v1 + a * v0 + t * v4) / (a * a)
    o2 = dig[3] - dig[4]
    d2 = tri[4] - tri[3]
    d4 = float((sample.counts * (tri[5] - tri[6:])).sum())
    o4 = float((sample.counts * (dig[6:] - dig[5])).sum())
    return (o1 - o2, o3 - o4), (d2 - d1, -d5, -d5, -d3 - d4)


def _pitman_summed(sample: _Sample, theta: float, alpha: float) -> tuple[tuple[float, float], tuple[float, ...]]:
    """The same equations and Jacobian as `_pitman_closed`, as sums term by term (ARX's iterative form, its
    fallback and its check of a closed-form solution): sum over i < u of 1/(theta + i alpha) and i/(...), over
    i < n of 1/(theta + i), over each class of size s and j < s of 1/(j - alpha), and their derivatives."""
    t, a = np.float64(theta), np.float64(alpha)
    i_u = np.arange(1.0, sample.u)
    inv = 1.0 / (t + i_u * a)
    inv2 = inv * inv
    i_n = 1.0 / (t + np.arange(1.0, sample.n))
    j = 1.0 / (np.arange(1.0, sample.larger.size + 1.0) - a)
    o1, o3 = inv.sum(), (i_u * inv).sum()
    d1, d5, d3 = inv2.sum(), (i_u * inv2).sum(), (i_u * i_u * inv2).sum()
    o2, d2 = i_n.sum(), (i_n * i_n).sum()
    o4, d4 = (sample.larger * j).sum(), (sample.larger * j * j).sum()
    return (float(o1 - o2), float(o3 - o4)), (float(d2 - d1), float(-d5), float(-d5), float(-d3 - d4))


def _newton(equations: Callable[[float, float], tuple[tuple[float, float], tuple[float, ...]]],
            guess: tuple[float, float], steps: int) -> tuple[float, float] | None:
    """A solution (theta, alpha) of `equations` by ARX's Newton-Raphson solver (newtonraphson 0.0.1, configured
    as ARXSolverConfiguration does): from `guess`, then from each of PITMAN_STARTS, at most `steps` + 1 full
    Newton steps per start, (number of starts) x `steps` evaluations in all; a start ends when a step leaves
    theta >= 0 or gives nan; the first point where both equations are within PITMAN_ACCURACY is the solution.
    As ARX's solver does, the last start is only evaluated and stepped once (the solver stops once its start
    values are used up). None: no solution (ARX's NaN)."""
    starts = (guess, *PITMAN_STARTS)
    evaluations = 0
    for index, (theta, alpha) in enumerate(starts):
        if evaluations > len(starts) * steps:
            break
        t, a = np.float64(theta), np.float64(alpha)
        for _ in range(steps + 1):
            evaluations += 1
            (f1, f2), (j11, j12, j21, j22) = equations(t, a)
            if abs(f1) <= PITMAN_ACCURACY and abs(f2) <= PITMAN_ACCURACY:
                return float(t), float(a)
            scale = np.float64(1.0) / (j11 * j22 - j12 * j21)
            t = t - (j22 * scale * f1 + -j12 * scale * f2)
            a = a - (-j21 * scale * f1 + j11 * scale * f2)
            if index == len(starts) - 1 or not t >= 0 or math.isnan(a):
                break
    return None


def pitman_guess(histogram: Mapping[int, int]) -> tuple[float, float]:
    """ARX's closed-form start (theta, alpha) for Pitman's equations, from the u classes, n records and the
    c1, c2 classes of size 1 and 2 (c2 = 0 counts as 1): c = c1 (c1 - 1) / c2,
    theta = (n u c - c1 (n - 1)(2u + c)) / (2 c1 u + c1 c - n c), alpha = (theta (c1 - n) + (n - 1) c1) / (n u).
    IEEE arithmetic: 0 / 0 gives nan (no solution from there), as in ARX."""
    u = np.float64(sum(histogram.values()))
    n = np.float64(sum(s * c for s, c in histogram.items()))
    c1 = np.float64(histogram.get(1, 0))
    c2 = np.float64(histogram.get(2, 0) or 1)
    with np.errstate(all="ignore"):
        c = c1 * (c1 - 1.0) / c2
        t = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / (2.0 * c1 * u + c1 * c - n * c)
        a = (t * (c1 - n) + (n - 1.0) * c1) / (n * u)
    return float(t), float(a)


def pitman_fit(histogram: Mapping[int, int], steps: int = PITMAN_STEPS) -> tuple[float, float] | None:
    """(theta, alpha) of Pitman's model for a sample's class-size histogram {size: classes} (Hoshino 2001) as
    ARX's `ModelPitman` finds them: Newton-Raphson on the likelihood equations in closed form from ARX's
    closed-form guess (moments of the classes of size 1 and 2); when that finds none, or its solution does not
    meet the equations summed term by term to PITMAN_ACCURACY, Newton-Raphson on the summed form from the same
    guess. A stationary point of the likelihood with theta >= 0; alpha is not constrained (the estimate's
    range is checked by `pitman_uniques`). None: no solution (ARX's NaN). `steps`: Newton steps per start
    (ARX's iterationsPerTry); kgen and its checker use PITMAN_STEPS, tests also ARX's default 1000."""
    sample = _Sample.of(histogram)
    guess = pitman_guess(histogram)
    with np.errstate(all="ignore"):  # IEEE arithmetic as in ARX: a run that meets inf or nan is dropped
        fit = _newton(lambda x, y: _pitman_closed(sample, x, y), guess, steps)
        if fit is not None:
            check = _pitman_summed(sample, *fit)[0]
            if all(abs(v) <= PITMAN_ACCURACY for v in check):  # nan fails too
                return fit
        return _newton(lambda x, y: _pitman_summed(sample, x, y), guess, steps)


def _pitman_estimate(theta: float, alpha: float, population: float) -> float | None:
    """Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha as ARX computes it: once with log-gamma, once with
    gamma (each kept only inside [0, N]; log-gamma of a non-positive number is nan in ARX's library), the
    larger of the two; None when neither is, or alpha is 0."""
    if alpha == 0 or math.isnan(theta) or math.isnan(alpha):
        return None
    values = []
    with np.errstate(all="ignore"):
        power = np.float64(population) ** np.float64(alpha)
        if theta + 1.0 > 0 and theta + alpha > 0:
            values.append(np.exp(np.float64(math.lgamma(theta + 1.0) - math.lgamma(theta + alpha))) * power)
        values.append(_gamma(theta + 1.0) / _gamma(theta + alpha) * power)
    kept = [float(v) for v in values if 0.0 <= v <= population]
    return max(kept) if kept else None


def _gamma(x: float) -> np.float64:
    """Gamma(x) with IEEE overflow (inf) and nan at its poles, as Java's libraries return them."""
    try:
        return np.float64(math.gamma(x))
    except OverflowError:
        return np.float64(np.inf)
    except ValueError:
        return np.float64(np.nan)


def pitman_uniques(histogram: Mapping[int, int], population: float) -> dict:
    """Pitman's estimate of the number of population uniques, Gamma(theta+1)/Gamma(theta+alpha) * N^alpha at
    `pitman_fit`'s (theta, alpha); not `converged` when there is no fit or no estimate in (0, N] (ARX's NaN
    or 0, which its rule treats as no estimate)."""
    fit = pitman_fit(histogram)
    if fit is None:
        return {"model": "pitman", "converged": False}
    theta, alpha = fit
    uniques = _pitman_estimate(theta, alpha, population)
    if uniques is None or uniques == 0:
        return {"model": "pitman", "converged": False, "theta": theta, "alpha": alpha}
    return {"model": "pitman", "converged": True, "theta": theta, "alpha": alpha, "uniques": uniques,
            "share": uniques / population}


def _one_in_sample(size: int, population: int, sample: int, samples: float | None = None) -> float:
    """P(exactly one of a population class of `size` records is drawn in a sample of `sample` out of
    `population` without replacement): the hypergeometric probability of 1. `samples`: log C(population,
    sample), the same for every size (computed once per histogram by the caller)."""
    if size > population or sample < 1:
        return 0.0
    log = (math.log(size) + _log_choose(population - size, sample - 1)
           - (_log_choose(population, sample) if samples is None else samples))
    return math.exp(log) if math.isfinite(log) else 0.0


def _log_choose(a: int, b: int) -> float:
    if b < 0 or b > a:
        return -math.inf
    return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)


def zayatz_uniques(histogram: Mapping[int, int], population: int, sample: int) -> dict:
    """Zayatz's estimate (1991): the probability that a sample unique is a population unique, from the
    hypergeometric chance of drawing exactly one record of a class of each observed size; population uniques
    = sample uniques * that probability / sampling fraction."""
    uniques = histogram.get(1, 0)
    samples = _log_choose(population, sample)
    weights = {s: c * _one_in_sample(s, population, sample, samples) for s, c in histogram.items()}
    total = sum(weights.values())
    if uniques == 0 or total == 0:
        return {"model": "zayatz", "uniques": 0.0, "share": 0.0, "conditional": 0.0}
    conditional = weights[1] / total
    estimate = uniques * conditional * population / sample
    return {"model": "zayatz", "uniques": estimate, "share": estimate / population, "conditional": conditional}


def _snb_equations(a: float, b: float, k: float, f: float, c1: float, c2: float) -> np.ndarray:
    """The two moment equations of the SNB model in (alpha, beta), as ARX's ModelSNB writes them: expected
    minus observed classes of size 1 and of size 2. (ARX multiplies the second by (1 - d)^(alpha + 2), where its
    Jacobian differentiates a division by it; kgen keeps ARX's equation, so a root here is a root there.)"""
    d = (1.0 - f) * (1.0 - b)
    with np.errstate(all="ignore"):
        first = k * f * np.power(b / (1.0 - d), a) * ((a * d) / (1.0 - d) + 1.0) - c1
        second = k * a * np.power(b, a) * (f * f) * (1.0 - b) / 2.0 * np.power(1.0 - d, a + 2.0) * (
            2.0 - (1.0 - a) * d) - c2
    return np.array([first, second], dtype=float)


def _snb_classes(histogram: Mapping[int, int], f: float) -> float:
    """ARX's estimate of the number of non-empty population classes K for the SNB model (its
    `estimateNonEmptyEquivalenceClasses`, term by term, the `- 1` inside the sum included)."""
    sizes = np.array(list(histogram), dtype=float)
    counts = np.array(list(histogram.values()), dtype=float)
    with np.errstate(all="ignore"):
        decay = np.power(1.0 - f, sizes) * counts
        var1 = (sizes * f * f * np.power(1.0 - f * f, sizes - 1.0) * counts).sum()
        var2 = (decay * np.power(1.0 + f, sizes) - 1.0).sum()
        var3 = decay.sum()
        var4 = (sizes * f * np.power(1.0 - f, sizes - 1.0) * counts).sum()
        return float(sum(histogram.values()) + histogram.get(1, 0) * (var1 / var2) * (var3 / var4) ** 2)


def _snb_root(k: float, f: float, c1: float, c2: float) -> tuple[float, float] | None:
    """A root (alpha, beta) of `_snb_equations` by Newton's method (central-difference Jacobian) from ARX's
    start values ((1, 1), then the 4 x 4 grid of 0, 0.33, 0.66, 0.99), each tried for at most SNB_STEPS
    steps; None when none reaches |equation| <= SNB_ACCURACY (ARX's default accuracy) inside the model's
    domain alpha > 0, 0 < beta < 1 (ARX takes any root; one outside gives no population estimate)."""
    for start in SNB_STARTS:
        x = np.array(start, dtype=float)
        for _ in range(SNB_STEPS):
            value = _snb_equations(x[0], x[1], k, f, c1, c2)
            if not np.isfinite(value).all():
                break
            if np.abs(value).max() <= SNB_ACCURACY:
                if x[0] > 0 and 0 < x[1] < 1:  # a root outside the model's domain estimates nothing
                    return float(x[0]), float(x[1])
                break
            jacobian = _snb_jacobian(x, k, f, c1, c2)
            try:
                x = x - np.linalg.solve(jacobian, value)
            except np.linalg.LinAlgError:
                break
            if not np.isfinite(x).all():
                break
    return None


def _snb_jacobian(x: np.ndarray, k: float, f: float, c1: float, c2: float) -> np.ndarray:
    """The moment equations' Jacobian by central differences. Far from a root the equations overflow (a
    non-finite step, which ends that start): numpy's overflow warning is silenced, the check after the
    step decides."""
    jacobian = np.empty((2, 2))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for j in range(2):
            h = 1e-7 * max(1.0, abs(x[j]))
            e = np.zeros(2)
            e[j] = h
            jacobian[:, j] = (_snb_equations(*(x + e), k, f, c1, c2)
                              - _snb_equations(*(x - e), k, f, c1, c2)) / (2 * h)
    return jacobian


def snb_uniques(histogram: Mapping[int, int], population: float) -> dict:
    """The shifted negative binomial model's estimate of population uniques (Chen & Keller-McNulty 1998, as
    ARX implements it): K * beta^alpha, K the estimated non-empty population classes and (alpha, beta) a root
    of the moment equations for the classes of size 1 and 2. Not `converged` when no root is found (ARX's
    NaN, and Dankar's rule then falls back on Zayatz)."""
    n = sum(s * c for s, c in histogram.items())
    f = n / population
    k = _snb_classes(histogram, f)
    root = _snb_root(k, f, float(histogram.get(1, 0)), float(histogram.get(2, 0))) if math.isfinite(k) else None
    if root is None:
        return {"model": "snb", "converged": False}
    alpha, beta = root
    uniques = k * beta**alpha
    if not math.isfinite(uniques) or uniques <= 0:
        return {"model": "snb", "converged": False, "alpha": alpha, "beta": beta}
    return {"model": "snb", "converged": True, "alpha": alpha, "beta": beta, "classes": k, "uniques": uniques,
            "share": uniques / population}


def dankar_choice(fraction: float, pitman: Mapping, zayatz: Mapping, snb: Mapping,
                  fallback: bool = True) -> Mapping:
    """Dankar et al.'s (2012) rule, as ARX's `PopulationUniquenessModel.DANKAR` applies it with the model's
    sampling fraction `fraction` = sample rows / population rows: up to 0.1, Pitman when its fit converged,
    else Zayatz (only with `fallback`: ARX's risk analysis falls back, its PopulationUniqueness criterion does
    not, and a node whose Pitman fit fails there fails the criterion); above 0.1, the smaller of Zayatz and SNB
    when SNB has an estimate, else Zayatz."""
    if fraction <= 0.1:
        return pitman if pitman.get("converged") or not fallback else zayatz
    if snb.get("converged") and snb["uniques"] <= zayatz["uniques"]:
        return snb
    return zayatz


def population_uniqueness(histogram: Mapping[int, int], sampling_fraction: float, rows: int | None = None,
                          model: str = DEFAULT_UNIQUENESS_MODEL, every: bool = True, fallback: bool = True) -> dict:
    """The share of population records that are unique on the QIs, estimated from the sample's class-size
    histogram and the sampling fraction pi, as ARX computes it (docs/risk.md).

    The population has N = round(rows / pi) records, `rows` the table's rows, suppressed ones included (ARX:
    the data's rows / pi; default: the histogram's records); the models see the sampling fraction
    released records / N. `model` is dankar (Dankar et al.'s rule, the default), pitman, zayatz or snb; a
    model without an estimate (Pitman's fit or SNB's root not found) gives `uniques` null. With no sample
    unique every model gives 0 (none can be unique in the population); with pi = 1 the sample is taken to be
    the population and the share is counted. `every` fits every model (kgen risk reports them all); False fits
    only those the chosen one reads (the privacy model, once per node: Pitman's fit is the costly one).
    `fallback` False: Dankar's rule does not fall back on Zayatz when Pitman's fit fails (`dankar_choice`: the
    privacy model, as ARX's criterion)."""
    if model not in UNIQUENESS_MODELS:
        raise InputError(f"unknown population-uniqueness model {model!r}; choose {', '.join(UNIQUENESS_MODELS)}")
    n = sum(s * c for s, c in histogram.items())
    out: dict[str, object] = {"sampling_fraction": sampling_fraction, "sample_rows": n, "uniqueness_model": model}
    if n == 0:
        return out | {"model": "none", "population_rows": 0, "uniques": 0.0, "share": 0.0}
    population = max(n, round((n if rows is None else max(rows, n)) / sampling_fraction))
    out["population_rows"] = population
    if sampling_fraction >= 1.0:
        exact = histogram.get(1, 0)
        return out | {"model": "exact", "note": "sampling fraction 1: the sample is taken to be the population",
                      "uniques": float(exact), "share": exact / n}
    if histogram.get(1, 0) == 0:
        return out | {"model": model, "note": "no sample uniques: no record can be unique in the population",
                      "uniques": 0.0, "share": 0.0}
    wanted = set(UNIQUENESS_MODELS[1:]) if every else {model} if model != "dankar" else (
        ({"pitman", "zayatz"} if fallback else {"pitman"}) if n / population <= 0.1 else {"zayatz", "snb"})
    fits = {"pitman": lambda: pitman_uniques(histogram, population),
            "zayatz": lambda: zayatz_uniques(histogram, population, n),
            "snb": lambda: snb_uniques(histogram, population)}
    estimates = {name: fit() if name in wanted else {"model": name, "converged": False} for name, fit in fits.items()}
    chosen = (dankar_choice(n / population, estimates["pitman"], estimates["zayatz"], estimates["snb"], fallback)
              if model == "dankar" else estimates[model])
    found = chosen["model"] == "zayatz" or chosen.get("converged")
    return out | {"model": chosen["model"], "uniques": chosen["uniques"] if found else None,
                  "share": chosen["share"] if found else None} | estimates
