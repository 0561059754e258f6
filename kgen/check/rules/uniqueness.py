"""A threshold on population uniqueness, checked from the file: the released classes' size histogram (rows not
`*` in every QI), the file's rows (suppressed ones included) and the sampling fraction F give the estimated
share of population records unique on the QIs, which must be at most U.

The estimators are written again here, apart from `fitness.uniqueness` (tests compare the two): Zayatz's from
the hypergeometric chance of one draw; Pitman's by ARX's Newton-Raphson run on the likelihood equations (its
guess, start values, step budget and fallback: the estimate is the solution ARX's solver finds, so the
checker follows the same method, written again with scalar arithmetic); SNB's
moment equations by Newton's method from ARX's start values; Dankar's rule choosing among them. A file whose
suppressed rows were left out no longer has the rows the population size is estimated from: the rule is
then left to the evaluator (None)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to U meets it
RELATIVE = 1e-6  # the estimators are fitted numerically: two fits of one histogram agree to this
MODELS = ("dankar", "pitman", "zayatz", "snb")
STEPS = 15  # Newton steps per start (ARX's JUnit setting, as the evaluator)
ACCURACY = 1e-6
STARTS = [(0.33 * i, 0.33 * j) for i in range(4) for j in range(4)]
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


def psi(x: float) -> float:
    """Digamma as ARX's Gamma class evaluates it: recurrence up to 12, then the asymptotic series; the Taylor
    form at 0 for x <= 1e-6 (for negative x as well)."""
    if math.isnan(x) or math.isinf(x):
        return math.nan
    if x <= 1e-6:
        return -math.inf if x == 0 else -0.57721566490153286060651209008240243104215933593992 - 1 / x + (
            math.pi ** 2 / 6) * x
    total = 0.0
    while x < 12:
        total -= 1 / x
        x += 1
    r = 1 / x
    total += math.log(x) - r / 2
    r *= r
    return total - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r / 132))))


def psi1(x: float) -> float:
    """Trigamma as ARX's Gamma class evaluates it: recurrence up to 8, but the asymptotic series added only from
    12 on (so below 12 the series' share is missing, as in ARX); the Taylor form at 0 for x <= 1e-4."""
    if math.isnan(x) or math.isinf(x):
        return math.nan
    if x == 0:
        return -math.inf
    if x <= 1e-4:
        return 1 / (x * x) + math.pi ** 2 / 6 - 2 * 1.202056903159594285399738161511449990764986292 * x
    total = 0.0
    while x < 8:
        total += 1 / (x * x)
        x += 1
    if x >= 12:
        r = 1 / (x * x)
        total += r / 2 + (1 + r * (1 / 6 + r * (-1 / 30 + r * (1 / 42 + r * (-1 / 30 + r * 5 / 66))))) / x
    return total


def ieee(f: Callable[[], float]) -> float:
    """f() with IEEE results for what Python raises on (division by zero, overflow): nan."""
    try:
        return f()
    except (ZeroDivisionError, OverflowError, ValueError):
        return math.nan


def pitman_equations(t: np.float64, a: np.float64, u: float, n: float, big: list[tuple[float, float]],
                     closed: bool) -> tuple[float, float, float, float, float]:
    """The likelihood equations of Pitman's model (d/d theta, d/d alpha) and the Jacobian's entries (tt, ta,
    aa) at (t, a): `closed`, with digamma and ARX's trigamma, in ARX's expressions; else summed term by term.
    `big`: (size, classes) for the sizes above 1."""
    if closed:
        r = t / a
        hi, lo, hi1, lo1, a2 = psi((u - 1) + r + 1), psi(r + 1), psi1((a + t + a * (u - 1)) / a), psi1(r + 1), a * a
        g_t = (hi - lo) / a - (psi(n + t) - psi(t + 1))
        g_a = (-t * hi + a * (u - 1) + t * lo) / a2 - sum(c * (psi(s - a) - psi(1 - a)) for s, c in big)
        h_tt = (psi1(t + 1) - psi1(n + t)) - (lo1 - hi1) / a2
        h_ta = -((a * hi + t * hi1 - a * lo - t * lo1) / (a2 * a))
        h_aa = -((a2 * (u - 1) - t * t * hi1 + t * t * lo1 - 2 * a * t * hi + 2 * a * t * lo) / (a2 * a2)) - sum(
            c * (psi1(1 - a) - psi1(s - a)) for s, c in big)
        return g_t, g_a, h_tt, h_ta, h_aa
    i = np.arange(1.0, u)
    w = 1 / (t + i * a)
    v = 1 / (t + np.arange(1.0, n))
    g_a = float((i * w).sum())
    h_aa = -float((i * i * w * w).sum())
    for s, c in big:
        j = 1 / (np.arange(1.0, s) - a)
        g_a -= c * float(j.sum())
        h_aa -= c * float((j * j).sum())
    return (float(w.sum() - v.sum()), g_a, float((v * v).sum() - (w * w).sum()), -float((i * w * w).sum()), h_aa)


def newton_pitman(guess: tuple[float, float], u: float, n: float, big: list[tuple[float, float]],
                  closed: bool) -> tuple[float, float] | None:
    """ARX's Newton-Raphson run: the guess, then the 16 start values, STEPS + 1 steps each at most and
    (starts x STEPS) evaluations in all; a start is dropped when theta < 0 or nan; the last start gets one
    step. The first point where both equations are within ACCURACY."""
    starts, used = [guess, *STARTS], 0
    for number, start in enumerate(starts, 1):
        if used > len(starts) * STEPS:
            return None
        t, a = np.float64(start[0]), np.float64(start[1])
        for _ in range(STEPS + 1):
            used += 1
            g_t, g_a, h_tt, h_ta, h_aa = pitman_equations(t, a, u, n, big, closed)
            if abs(g_t) <= ACCURACY and abs(g_a) <= ACCURACY:
                return float(t), float(a)
            inverse = np.float64(1) / (h_tt * h_aa - h_ta * h_ta)
            step_t = h_aa * inverse * g_t + -h_ta * inverse * g_a
            t, a = t - step_t, a - (-h_ta * inverse * g_t + h_tt * inverse * g_a)
            if number == len(starts) or not t >= 0 or np.isnan(a):
                break
    return None


def pitman(histogram: Mapping[int, int], population: int) -> float | None:
    """Pitman's estimate Gamma(theta + 1) / Gamma(theta + alpha) N^alpha at the (theta, alpha) ARX's
    ModelPitman finds: Newton-Raphson on the closed-form equations from its moment guess, then on the summed
    ones when that finds none or its point misses the summed equations; the larger of the log-gamma and gamma
    forms kept inside [0, N]. None: no solution or no estimate in (0, N]."""
    u, n = float(sum(histogram.values())), float(sum(s * c for s, c in histogram.items()))
    big = [(float(s), float(c)) for s, c in sorted(histogram.items()) if s > 1 and c > 0]
    c1, c2 = np.float64(histogram.get(1, 0)), np.float64(histogram.get(2, 0) or 1)
    with np.errstate(all="ignore"):
        c = c1 * (c1 - 1) / c2
        t = (n * u * c - c1 * (n - 1) * (2 * u + c)) / (2 * c1 * u + c1 * c - n * c)
        guess = (float(t), float((t * (c1 - n) + (n - 1) * c1) / (n * u)))
        fit = newton_pitman(guess, u, n, big, True)
        if fit is None or not all(abs(g) <= ACCURACY for g in pitman_equations(*map(np.float64, fit), u, n, big,
                                                                                 False)[:2]):
            fit = newton_pitman(guess, u, n, big, False)
        if fit is None or fit[1] == 0:
            return None
        theta, alpha = fit
        scale = np.float64(population) ** alpha
        forms = [ieee(lambda: math.gamma(theta + 1) / math.gamma(theta + alpha)) * scale]
        if theta + 1 > 0 and theta + alpha > 0:
            forms.append(np.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha)) * scale)
    kept = [float(f) for f in forms if 0 <= f <= population]
    return max(kept) if kept and max(kept) > 0 else None



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
    smaller of Zayatz and SNB, Zayatz when SNB has none). None: no estimate."""
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
    elif n / population <= 0.1:  # Pitman, without falling back on Zayatz (ARX's criterion)
        uniques = pitman(histogram, population)
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
