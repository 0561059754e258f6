"""Population uniqueness estimated from a sample's class-size histogram (Dankar et al. 2012, as ARX offers it):
Pitman's model, Zayatz's, the shifted negative binomial (SNB) and Dankar's rule choosing among them. The one
definition of these figures: `kgen risk` and the report's risk section (kgen/report/risk.py) and the
population-uniqueness privacy model (fitness/privacy/uniqueness.py) call these functions. Formulas and
sources: docs/risk.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from lattice.errors import InputError

# Newton's method on Pitman's likelihood: stop when the gradient is this small (relative to n).
PITMAN_TOLERANCE = 1e-10
PITMAN_MAX_STEPS = 200
# The population-uniqueness models (`population_uniqueness`); ARX's default is Dankar et al.'s rule.
UNIQUENESS_MODELS = ("dankar", "pitman", "zayatz", "snb")
DEFAULT_UNIQUENESS_MODEL = "dankar"
# SNB's moment equations are solved as ARX's solver does: |equation| <= 1e-6, 1000 steps per start value.
SNB_ACCURACY = 1e-6
SNB_STEPS = 1000
SNB_STARTS = ((1.0, 1.0), *((a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)))



def _pitman_terms(theta: float, alpha: float, u: int, n: int, larger: np.ndarray) -> tuple[float, np.ndarray,
                                                                                         np.ndarray]:
    """Log-likelihood of Pitman's sampling formula (up to a constant), its gradient and Hessian in
    (theta, alpha). `larger[i-1]` = number of sample classes larger than i, for i = 1..max size - 1."""
    i_u = np.arange(1, u, dtype=float)
    i_n = np.arange(1, n, dtype=float)
    i_c = np.arange(1, larger.size + 1, dtype=float)
    a = theta + i_u * alpha
    b = theta + i_n
    c = i_c - alpha
    value = np.log(a).sum() - np.log(b).sum() + (larger * np.log(c)).sum()
    g_theta = (1 / a).sum() - (1 / b).sum()
    g_alpha = (i_u / a).sum() - (larger / c).sum()
    h_tt = -(1 / a**2).sum() + (1 / b**2).sum()
    h_ta = -(i_u / a**2).sum()
    h_aa = -(i_u**2 / a**2).sum() - (larger / c**2).sum()
    return float(value), np.array([g_theta, g_alpha]), np.array([[h_tt, h_ta], [h_ta, h_aa]])


def _pitman_value(theta: float, alpha: float, u: int, n: int) -> float:
    """The first two sums of `_pitman_terms`' log-likelihood in closed form, for the start grid: sum over
    i < u of log(theta + i alpha) = (u - 1) log alpha + lgamma(theta / alpha + u) - lgamma(theta / alpha + 1),
    and sum over i < n of log(theta + i) = lgamma(theta + n) - lgamma(theta + 1): O(1) instead of O(n), which
    made the grid of 1,000 points most of a fit's time (the model fits once per histogram its search asks)."""
    ratio = theta / alpha
    return ((u - 1) * math.log(alpha) + math.lgamma(ratio + u) - math.lgamma(ratio + 1)
            - math.lgamma(theta + n) + math.lgamma(theta + 1))


def _inside(theta: float, alpha: float) -> bool:
    return 0.0 < alpha < 1.0 and theta > -alpha


def pitman_fit(histogram: Mapping[int, int]) -> tuple[float, float] | None:
    """Maximum-likelihood (theta, alpha) of Pitman's model for a sample's class-size histogram
    {size: classes} (Hoshino 2001), by damped Newton steps from the best point of a coarse grid; None when
    the maximum is not inside 0 < alpha < 1, theta > -alpha (e.g. no class of size 1 or every class unique)."""
    u = sum(histogram.values())
    n = sum(s * c for s, c in histogram.items())
    if u < 2 or n <= u:
        return None
    top = max(histogram)
    larger = np.array([sum(c for s, c in histogram.items() if s > i) for i in range(1, top)], dtype=float)
    best: tuple[float, float, float] | None = None
    i_c = np.arange(1, larger.size + 1, dtype=float)
    for alpha in np.linspace(0.02, 0.98, 25):
        tail = float((larger * np.log(i_c - alpha)).sum())
        for theta in np.geomspace(0.05, 10.0 * n, 40):
            value = _pitman_value(float(theta), float(alpha), u, n) + tail
            if best is None or value > best[0]:
                best = (value, float(theta), float(alpha))
    assert best is not None
    _, theta, alpha = best
    value = _pitman_terms(theta, alpha, u, n, larger)[0]
    for _ in range(PITMAN_MAX_STEPS):
        value, gradient, hessian = _pitman_terms(theta, alpha, u, n, larger)
        if np.abs(gradient).max() < PITMAN_TOLERANCE * n:
            return theta, alpha
        try:
            step = -np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        if float(gradient @ step) <= 0:  # not an ascent direction (Hessian not negative definite): go uphill
            step = gradient / max(np.abs(gradient).max(), 1.0) * max(abs(theta), 1.0) * 1e-2
        scale = 1.0
        while scale > 1e-12:
            t, a = theta + scale * step[0], alpha + scale * step[1]
            if _inside(t, a) and _pitman_terms(t, a, u, n, larger)[0] >= value - 1e-12 * abs(value):
                break
            scale /= 2
        else:
            return None
        theta, alpha = t, a
    gradient = _pitman_terms(theta, alpha, u, n, larger)[1]
    return (theta, alpha) if np.abs(gradient).max() < 1e-6 * n else None


def pitman_uniques(histogram: Mapping[int, int], population: float) -> dict:
    """Pitman's estimate of the number of population uniques: Gamma(theta+1)/Gamma(theta+alpha) * N^alpha."""
    fit = pitman_fit(histogram)
    if fit is None:
        return {"model": "pitman", "converged": False}
    theta, alpha = fit
    uniques = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(population))
    if not 0.0 <= uniques <= population:
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


def dankar_choice(fraction: float, pitman: Mapping, zayatz: Mapping, snb: Mapping) -> Mapping:
    """Dankar et al.'s (2012) rule, as ARX's `PopulationUniquenessModel.DANKAR` applies it with the model's
    sampling fraction `fraction` = sample rows / population rows: up to 0.1, Pitman when its fit converged,
    else Zayatz; above 0.1, the smaller of Zayatz and SNB when SNB has an estimate, else Zayatz."""
    if fraction <= 0.1:
        return pitman if pitman.get("converged") else zayatz
    if snb.get("converged") and snb["uniques"] <= zayatz["uniques"]:
        return snb
    return zayatz


def population_uniqueness(histogram: Mapping[int, int], sampling_fraction: float, rows: int | None = None,
                          model: str = DEFAULT_UNIQUENESS_MODEL, every: bool = True) -> dict:
    """The share of population records that are unique on the QIs, estimated from the sample's class-size
    histogram and the sampling fraction pi, as ARX computes it (docs/risk.md).

    The population has N = round(rows / pi) records, `rows` the table's rows, suppressed ones included (ARX:
    the data's rows / pi; default: the histogram's records); the models see the sampling fraction
    released records / N. `model` is dankar (Dankar et al.'s rule, the default), pitman, zayatz or snb; a
    model without an estimate (Pitman's fit or SNB's root not found) gives `uniques` null. With no sample
    unique every model gives 0 (none can be unique in the population); with pi = 1 the sample is taken to be
    the population and the share is counted. `every` fits every model (kgen risk reports them all); False fits
    only those the chosen one reads (the privacy model, once per node: Pitman's fit is the costly one)."""
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
        {"pitman", "zayatz"} if n / population <= 0.1 else {"zayatz", "snb"})  # what dankar_choice reads
    fits = {"pitman": lambda: pitman_uniques(histogram, population),
            "zayatz": lambda: zayatz_uniques(histogram, population, n),
            "snb": lambda: snb_uniques(histogram, population)}
    estimates = {name: fit() if name in wanted else {"model": name, "converged": False} for name, fit in fits.items()}
    chosen = (dankar_choice(n / population, estimates["pitman"], estimates["zayatz"], estimates["snb"])
              if model == "dankar" else estimates[model])
    found = chosen["model"] == "zayatz" or chosen.get("converged")
    return out | {"model": chosen["model"], "uniques": chosen["uniques"] if found else None,
                  "share": chosen["share"] if found else None} | estimates
