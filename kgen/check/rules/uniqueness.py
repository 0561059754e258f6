"""A threshold on population uniqueness, checked from the file: the released classes' size histogram (rows not
`*` in every QI), the file's rows (suppressed ones included) and the sampling fraction F give the estimated
share of population records unique on the QIs, which must be at most U.

The estimators are written again here, apart from `fitness.uniqueness` (tests compare the two): Zayatz's from
the hypergeometric chance of one draw; Pitman's by a profile likelihood (for each alpha the theta that zeroes
the theta-score, by bisection; alpha by golden-section search), not the evaluator's Newton steps; SNB's
moment equations by Newton's method from ARX's start values; Dankar's rule choosing among them. A file whose
suppressed rows were left out no longer has the rows the population size is estimated from: the rule is
then left to the evaluator (None)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to U meets it
RELATIVE = 1e-6  # the estimators are fitted numerically: two fits of one histogram agree to this
MODELS = ("dankar", "pitman", "zayatz", "snb")
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
SNB_STARTS = [(1.0, 1.0)] + [(a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)]


def zayatz(histogram: Mapping[int, int], population: int, sample: int) -> float:
    """Estimated population uniques: sample uniques x P(a sample unique is a population unique) / (n / N)."""
    def one_drawn(size: int) -> float:  # hypergeometric P(exactly one of `size` records in the sample)
        if size > population:
            return 0.0
        rest, left = population - size, sample - 1
        if left < 0 or left > rest:
            return 0.0
        log = math.log(size) + math.lgamma(rest + 1) - math.lgamma(left + 1) - math.lgamma(rest - left + 1) - (
            math.lgamma(population + 1) - math.lgamma(sample + 1) - math.lgamma(population - sample + 1))
        return math.exp(log)

    weights = {size: count * one_drawn(size) for size, count in histogram.items()}
    total = sum(weights.values())
    if not histogram.get(1) or total == 0:
        return 0.0
    return histogram[1] * weights[1] / total * population / sample


def pitman(histogram: Mapping[int, int], population: int) -> float | None:
    """Pitman's estimate Gamma(theta + 1) / Gamma(theta + alpha) N^alpha at the maximum-likelihood (theta,
    alpha), found by the profile likelihood; None when the maximum is not inside 0 < alpha < 1."""
    u, n = sum(histogram.values()), sum(s * c for s, c in histogram.items())
    if u < 2 or n <= u:
        return None
    i_u, i_n = np.arange(1, u, dtype=float), np.arange(1, n, dtype=float)
    tail = np.array([sum(c for s, c in histogram.items() if s > j) for j in range(1, max(histogram))], dtype=float)
    j = np.arange(1, tail.size + 1, dtype=float)

    def theta_of(alpha: float) -> float:
        lo, hi = -alpha, max(1.0, float(n))
        while np.sum(1 / (hi + i_u * alpha)) - np.sum(1 / (hi + i_n)) > 0:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if np.sum(1 / (mid + i_u * alpha)) - np.sum(1 / (mid + i_n)) > 0 else (lo, mid)
        return (lo + hi) / 2

    def profile(alpha: float) -> float:
        theta = theta_of(alpha)
        return float(np.log(theta + i_u * alpha).sum() - np.log(theta + i_n).sum() + (tail * np.log(j - alpha)).sum())

    a, b = 1e-9, 1 - 1e-9
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = profile(c), profile(d)
    while b - a > 1e-11:
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = profile(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = profile(d)
    alpha = (a + b) / 2
    if not 1e-6 < alpha < 1 - 1e-6:
        return None
    theta = theta_of(alpha)
    uniques = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(population))
    return uniques if 0 <= uniques <= population else None


def snb(histogram: Mapping[int, int], population: int) -> float | None:
    """The shifted negative binomial estimate K beta^alpha (ARX's ModelSNB: its estimate of the non-empty
    population classes K and its two moment equations, solved by Newton's method from its start values)."""
    n = sum(s * c for s, c in histogram.items())
    f, c1, c2 = n / population, float(histogram.get(1, 0)), float(histogram.get(2, 0))
    with np.errstate(all="ignore"):
        s, c = np.array(list(histogram), dtype=float), np.array(list(histogram.values()), dtype=float)
        kept = (1 - f) ** s * c
        ratio = np.sum(s * f * f * (1 - f * f) ** (s - 1) * c) / np.sum(kept * (1 + f) ** s - 1)
        k = float(sum(histogram.values()) + c1 * ratio * (np.sum(kept) / np.sum(s * f * (1 - f) ** (s - 1) * c)) ** 2)
    if not math.isfinite(k):
        return None

    def equations(x: np.ndarray) -> np.ndarray:
        a, b = float(x[0]), float(x[1])
        d = (1 - f) * (1 - b)
        with np.errstate(all="ignore"):
            one = k * f * np.power(b / (1 - d), a) * (a * d / (1 - d) + 1) - c1
            two = k * a * np.power(b, a) * f * f * (1 - b) / 2 * np.power(1 - d, a + 2) * (2 - (1 - a) * d) - c2
        return np.array([one, two], dtype=float)

    for start in SNB_STARTS:
        x = np.array(start, dtype=float)
        for _ in range(1000):
            value = equations(x)
            if not np.isfinite(value).all():
                break
            if np.abs(value).max() <= 1e-6:
                if x[0] > 0 and 0 < x[1] < 1:
                    uniques = k * x[1] ** x[0]
                    return uniques if math.isfinite(uniques) and uniques > 0 else None
                break
            steps = [1e-7 * max(1.0, abs(x[i])) for i in range(2)]
            with np.errstate(all="ignore"):
                jacobian = np.column_stack([(equations(x + np.eye(2)[i] * h) - equations(x - np.eye(2)[i] * h))
                                            / (2 * h) for i, h in enumerate(steps)])
            try:
                x = x - np.linalg.solve(jacobian, value)
            except np.linalg.LinAlgError:
                break
            if not np.isfinite(x).all():
                break
    return None


def uniqueness_share(sizes: np.ndarray, rows: int, fraction: float, model: str) -> float | None:
    """The estimated share of population records unique on the QIs for released classes of `sizes` in a file
    of `rows` rows: N = round(rows / F) (at least the released rows); no released row or no sample unique: 0;
    F = 1: the sample uniques' share; else the model's estimate / N (Dankar: for n / N <= 0.1 Pitman, else the
    smaller of Zayatz and SNB; Zayatz when the chosen fit has none). None: no estimate."""
    histogram = dict(Counter(int(s) for s in sizes if s > 0))
    n = sum(s * c for s, c in histogram.items())
    if n == 0:
        return 0.0
    population = max(n, round(max(rows, n) / fraction))
    if fraction >= 1.0:
        return histogram.get(1, 0) / n
    if not histogram.get(1):
        return 0.0
    if model == "zayatz":
        uniques: float | None = zayatz(histogram, population, n)
    elif model == "pitman":
        uniques = pitman(histogram, population)
    elif model == "snb":
        uniques = snb(histogram, population)
    elif n / population <= 0.1:
        uniques = pitman(histogram, population)
        uniques = zayatz(histogram, population, n) if uniques is None else uniques
    else:
        z, b = zayatz(histogram, population, n), snb(histogram, population)
        uniques = b if b is not None and b <= z else z
    return None if uniques is None else uniques / population


@dataclass(frozen=True)
class UniquenessRule:
    """The release's estimated population uniqueness is at most u. When it is not, every released class is
    marked (the model judges the release as a whole, as the evaluator does)."""

    u: float
    fraction: float
    model: str
    column: None = None

    def validate(self) -> None:
        if not 0.0 < self.u <= 1.0 or not 0.0 < self.fraction <= 1.0 or self.model not in MODELS:
            raise InputError(f"population uniqueness needs U and F in (0, 1] and a model of {', '.join(MODELS)}, got "
                             f"{self.u}, {self.fraction}, {self.model!r}")

    def breaking(self, table: object, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        released = np.bincount(classes[~cache["starred"]], minlength=sizes.size)
        share = uniqueness_share(released, int(classes.size), self.fraction, self.model)
        holds = share is not None and share <= self.u * (1 + RELATIVE) + TOLERANCE
        return np.zeros(sizes.size, dtype=bool) if holds else released > 0


def read(d: Mapping, dropped: bool) -> UniquenessRule | None:
    """None when the suppressed rows were dropped: the file no longer has the rows N is estimated from."""
    if dropped:
        return None
    return UniquenessRule(float(d["max_population_uniqueness"]), float(d["sampling_fraction"]),
                          str(d.get("uniqueness_model", "dankar")))


RULE = CheckRule("population-uniqueness", read=read)
