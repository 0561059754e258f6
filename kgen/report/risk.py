"""Re-identification risk of a table on its quasi-identifiers (SPEC section 10), for any table, anonymized or not.

A data steward signs off a release on the risk that remains, not on k alone: k bounds the highest prosecutor
risk (1/k), but says nothing about how many records sit at that bound, how many are unique, or how many are
unique in the population the sample was drawn from. This module measures those figures on the released table
itself (its QI strings, grouped here, sharing nothing with the search's evaluator), so the same code serves
`kgen risk FILE` on any CSV and the `risk` section of every anonymize report.

Rows with `*` in every QI are kgen's suppressed records: they carry no QI information and are left out of the
released classes, as SPEC section 10 defines. Formulas, models and their sources: docs/risk.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fitness.privacy.average_risk import average_prosecutor_risk
from kgen.io.table import SUPPRESSED
from lattice.errors import InputError

DEFAULT_THRESHOLD = 0.2
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


@dataclass(frozen=True)
class Classes:
    """The released classes of a table: `keys[i]` is the QI tuple of class i and `sizes[i]` its row count;
    `row_class[r]` is the class of row r (-1 for a suppressed row)."""

    keys: list[tuple[str, ...]]
    sizes: np.ndarray
    row_class: np.ndarray
    rows: int
    suppressed: int

    @property
    def released(self) -> int:
        return int(self.sizes.sum())


def released_classes(table: object, qis: Sequence[str], suppressed_rows: np.ndarray | None = None) -> Classes:
    """Group the rows of `table` (anything with `n` and `column(name)`) by their QI strings, leaving out
    the suppressed rows: those of the boolean mask `suppressed_rows` when given (the anonymizer knows them),
    else the rows with `*` in every QI."""
    if not qis:
        raise InputError("no quasi-identifiers given (--qi)")
    columns = [table.column(c) for c in qis]  # type: ignore[attr-defined]
    n = int(table.n)  # type: ignore[attr-defined]
    if all(hasattr(c, "codes") and hasattr(c, "labels") for c in columns):  # coded columns: no string per row
        return _coded_classes(columns, n, suppressed_rows)
    index: dict[tuple[str, ...], int] = {}
    row_class = np.full(n, -1, dtype=np.int64)
    suppressed_key = (SUPPRESSED,) * len(qis)
    suppressed = 0
    for r, key in enumerate(zip(*columns)):
        key = tuple(str(v) for v in key)
        if key == suppressed_key if suppressed_rows is None else suppressed_rows[r]:
            suppressed += 1
            continue
        row_class[r] = index.setdefault(key, len(index))
    sizes = np.bincount(row_class[row_class >= 0], minlength=len(index)).astype(np.int64)
    return Classes(list(index), sizes, row_class, n, suppressed)


def _coded_classes(columns: Sequence[object], n: int, suppressed_rows: np.ndarray | None) -> Classes:
    """`released_classes` on columns given as codes and labels (kgen.io.table.CodedColumn): one mixed-radix key
    per row, grouped by np.unique; classes numbered in order of first occurrence, as the loop numbers them."""
    key = np.zeros(n, dtype=np.int64)
    starred = np.ones(n, dtype=bool)
    span = 1
    for column in columns:
        codes, labels = column.codes, column.labels  # type: ignore[attr-defined]
        card = max(len(labels), 1)
        if span * card >= 1 << 62:  # renumber before the key could overflow int64
            _, key = np.unique(key, return_inverse=True)
            key, span = key.reshape(-1), int(key.max()) + 1
        key = key * card + codes
        span *= card
        starred &= (codes == labels.index(SUPPRESSED)) if SUPPRESSED in labels else False
    suppressed = starred if suppressed_rows is None else np.asarray(suppressed_rows, dtype=bool)
    kept = np.flatnonzero(~suppressed)
    _, first, inverse = np.unique(key[kept], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    row_class = np.full(n, -1, dtype=np.int64)
    row_class[kept] = rank[inverse.reshape(-1)]
    firsts = kept[first[order]]
    keys = list(zip(*(np.asarray(c.labels + ("",), dtype=object)[c.codes[firsts]].tolist()  # type: ignore[attr-defined]
                      for c in columns))) if firsts.size else []
    sizes = np.bincount(row_class[kept], minlength=order.size).astype(np.int64)
    return Classes([tuple(k) for k in keys], sizes, row_class, n, int(suppressed.sum()))


def size_histogram(sizes: np.ndarray) -> dict[int, int]:
    """{class size: number of classes of that size}, sizes ascending."""
    counts = Counter(int(s) for s in sizes)
    return dict(sorted(counts.items()))


def record_risks(sizes: np.ndarray, threshold: float) -> dict:
    """Prosecutor and marketer risk and sample uniques of the released classes of `sizes` (SPEC section 10)."""
    n_r = int(sizes.sum())
    if n_r == 0:
        return {"prosecutor": {"max": 0.0, "mean": 0.0, "records_above_threshold": 0.0,
                               "rows_above_threshold": 0},
                "marketer": 0.0, "sample_uniques": 0, "sample_uniques_share": 0.0}
    above = sizes[1.0 / sizes > threshold].sum()  # 1/|E| > tau, per record
    uniques = int((sizes == 1).sum())
    return {
        "prosecutor": {
            "max": 1.0 / float(sizes.min()),
            "mean": average_prosecutor_risk(sizes),  # the --max-average-risk model's own definition
            "records_above_threshold": float(above) / n_r,
            "rows_above_threshold": int(above),
        },
        "marketer": average_prosecutor_risk(sizes),  # classes / n_r (SPEC section 10)
        "sample_uniques": uniques,
        "sample_uniques_share": uniques / n_r,
    }


def journalist_risks(classes: Classes, population: object, qis: Sequence[str], threshold: float) -> dict:
    """Journalist risk: each released record's risk is 1/|P_E|, P_E its class in the population table
    (generalized the same way). A class missing from the population is counted with |P_E| = |E|
    (the population must contain the sample) and reported in `classes_not_in_population`."""
    pop = released_classes(population, qis)
    pop_size = dict(zip(pop.keys, (int(s) for s in pop.sizes)))
    sizes = classes.sizes
    missing = 0
    matched = np.empty(sizes.size, dtype=np.int64)
    for i, key in enumerate(classes.keys):
        found = pop_size.get(key, 0)
        if found < sizes[i]:
            missing += found == 0
            found = int(sizes[i])  # |P_E| >= |E|: a population that lacks sample records is incomplete
        matched[i] = found
    n_r = classes.released
    population_uniques = int((pop.sizes == 1).sum())
    out = {
        "population_rows": pop.rows,
        "population_released_rows": pop.released,
        "population_classes": int(pop.sizes.size),
        "classes_not_in_population": int(missing),
        "population_uniques": population_uniques,
        "population_uniques_share": population_uniques / pop.released if pop.released else 0.0,
    }
    if n_r == 0:
        return out | {"max": 0.0, "mean": 0.0, "records_above_threshold": 0.0, "rows_above_threshold": 0}
    return out | journalist_figures(sizes, matched, threshold)


def journalist_figures(sizes: np.ndarray, matched: np.ndarray, threshold: float) -> dict:
    """Journalist risk of released classes of `sizes` rows whose classes in the population have `matched`
    rows (at least their own size): each record's risk is 1/|P_E| (the one definition: the report's
    `journalist` and the frontier's journalist risk both read it)."""
    n_r = int(sizes.sum())
    if n_r == 0:
        return {"max": 0.0, "mean": 0.0, "records_above_threshold": 0.0, "rows_above_threshold": 0}
    risk = 1.0 / np.asarray(matched, dtype=np.float64)
    above = sizes[risk > threshold].sum()
    return {
        "max": float(risk.max()),
        "mean": float((sizes * risk).sum() / n_r),
        "records_above_threshold": float(above) / n_r,
        "rows_above_threshold": int(above),
    }


# ---------------------------------------------------------------------------------------------------------------
# Population uniqueness from the sample alone (Dankar et al. 2012, as ARX offers it)


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
    for alpha in np.linspace(0.02, 0.98, 25):
        for theta in np.geomspace(0.05, 10.0 * n, 40):
            value = _pitman_terms(float(theta), float(alpha), u, n, larger)[0]
            if best is None or value > best[0]:
                best = (value, float(theta), float(alpha))
    assert best is not None
    value, theta, alpha = best
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


def _one_in_sample(size: int, population: int, sample: int) -> float:
    """P(exactly one of a population class of `size` records is drawn in a sample of `sample` out of
    `population` without replacement): the hypergeometric probability of 1."""
    if size > population or sample < 1:
        return 0.0
    log = (math.log(size) + _log_choose(population - size, sample - 1) - _log_choose(population, sample))
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
    weights = {s: c * _one_in_sample(s, population, sample) for s, c in histogram.items()}
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
            jacobian = np.empty((2, 2))
            for j in range(2):
                h = 1e-7 * max(1.0, abs(x[j]))
                e = np.zeros(2)
                e[j] = h
                jacobian[:, j] = (_snb_equations(*(x + e), k, f, c1, c2)
                                  - _snb_equations(*(x - e), k, f, c1, c2)) / (2 * h)
            try:
                x = x - np.linalg.solve(jacobian, value)
            except np.linalg.LinAlgError:
                break
            if not np.isfinite(x).all():
                break
    return None


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
                          model: str = DEFAULT_UNIQUENESS_MODEL) -> dict:
    """The share of population records that are unique on the QIs, estimated from the sample's class-size
    histogram and the sampling fraction pi, as ARX computes it (docs/risk.md).

    The population has N = round(rows / pi) records, `rows` the table's rows, suppressed ones included (ARX:
    the data's rows / pi; default: the histogram's records); the models see the sampling fraction
    released records / N. `model` is dankar (Dankar et al.'s rule, the default), pitman, zayatz or snb; a
    model without an estimate (Pitman's fit or SNB's root not found) gives `uniques` null. With no sample
    unique every model gives 0 (none can be unique in the population); with pi = 1 the sample is taken to be
    the population and the share is counted."""
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
    estimates = {"pitman": pitman_uniques(histogram, population), "zayatz": zayatz_uniques(histogram, population, n),
                 "snb": snb_uniques(histogram, population)}
    chosen = (dankar_choice(n / population, estimates["pitman"], estimates["zayatz"], estimates["snb"])
              if model == "dankar" else estimates[model])
    found = chosen["model"] == "zayatz" or chosen.get("converged")
    return out | {"model": chosen["model"], "uniques": chosen["uniques"] if found else None,
                  "share": chosen["share"] if found else None} | estimates


# ---------------------------------------------------------------------------------------------------------------


def sample_figures(sizes: np.ndarray, rows: int, suppressed: int, qis: Sequence[str], threshold: float) -> dict:
    """The risk figures of released classes of `sizes` (of a table of `rows` rows, `suppressed` of them
    suppressed): what needs no population. The report records them from the run's own partition."""
    histogram = size_histogram(sizes)
    out: dict[str, object] = {
        "quasi_identifiers": list(qis),
        "rows": int(rows),
        "rows_released": int(sizes.sum()),
        "suppressed": int(suppressed),
        "classes": int(sizes.size),
        "smallest_class": int(sizes.min()) if sizes.size else 0,
        "threshold": threshold,
    }
    out |= record_risks(sizes, threshold)
    out["class_sizes"] = [[s, c] for s, c in histogram.items()]
    return out


def sizes_report(sizes: np.ndarray, rows: int, suppressed: int, qis: Sequence[str],
                 threshold: float = DEFAULT_THRESHOLD) -> dict:
    """`risk_report` of a release from its class sizes alone (no population: sampling fraction 1), the
    same figures as grouping the released table; the anonymize and apply reports use it."""
    validate_threshold(threshold)
    out = sample_figures(np.asarray(sizes, dtype=np.int64), rows, suppressed, qis, threshold)
    out["population_uniqueness"] = population_uniqueness(histogram_of(out), 1.0)
    return out


def histogram_of(figures: Mapping) -> dict[int, int]:
    """The class-size histogram `sample_figures` recorded, as {size: classes} (computed once, read back)."""
    return {int(s): int(c) for s, c in figures["class_sizes"]}


def risk_report(table: object, qis: Sequence[str], threshold: float = DEFAULT_THRESHOLD,
                population: object | None = None, sampling_fraction: float | None = None,
                suppressed_rows: np.ndarray | None = None, uniqueness_model: str = DEFAULT_UNIQUENESS_MODEL) -> dict:
    """Every risk figure of `table` on `qis` as a JSON-ready dict (docs/risk.md).

    Parameters
    ----------
    table
        The released (or any) table: a `kgen.Table` or anything with `n` and `column(name)`.
    qis
        The quasi-identifier columns.
    threshold
        tau: a record is "at risk" when its prosecutor (or journalist) risk 1/|E| exceeds it.
    population
        Optional population table with the same QI columns, generalized the same way: gives journalist risk
        and the exact population uniqueness, and the sampling fraction n / |population| when none is given.
    sampling_fraction
        n / N for the population-uniqueness estimate; default 1 (the release is taken to be the whole
        population: the most cautious assumption, as population uniqueness then equals sample uniqueness).
    suppressed_rows
        Boolean mask of the suppressed rows of `table`; default: the rows with `*` in every QI.
    uniqueness_model
        The population-uniqueness estimate: dankar (Dankar et al.'s rule, ARX's default), pitman, zayatz or snb.
    """
    validate_threshold(threshold)
    if uniqueness_model not in UNIQUENESS_MODELS:
        raise InputError(f"unknown population-uniqueness model {uniqueness_model!r}; choose "
                         f"{', '.join(UNIQUENESS_MODELS)}")
    classes = released_classes(table, qis, suppressed_rows)
    out = sample_figures(classes.sizes, classes.rows, classes.suppressed, qis, threshold)
    histogram = histogram_of(out)
    if population is not None:
        out["journalist"] = journalist_risks(classes, population, qis, threshold)
        if sampling_fraction is None and out["journalist"]["population_released_rows"]:
            sampling_fraction = min(1.0, classes.released / out["journalist"]["population_released_rows"])
    fraction = 1.0 if sampling_fraction is None else validate_fraction(sampling_fraction)
    estimated = population_uniqueness(histogram, fraction, classes.rows, uniqueness_model)
    if population is not None:  # the population is at hand: its share of uniques is counted, not estimated
        j = out["journalist"]
        estimated = {"sampling_fraction": fraction, "sample_rows": classes.released, "model": "population table",
                     "population_rows": j["population_released_rows"], "uniques": float(j["population_uniques"]),
                     "share": j["population_uniques_share"], "estimated_from_sample": estimated}
    out["population_uniqueness"] = estimated
    return out


def validate_threshold(threshold: float) -> float:
    if not 0.0 <= threshold <= 1.0:
        raise InputError(f"the risk threshold must be in [0, 1], got {threshold}")
    return threshold


def validate_fraction(fraction: float) -> float:
    if not 0.0 < fraction <= 1.0:
        raise InputError(f"the sampling fraction must be in (0, 1], got {fraction}")
    return fraction


def k_for_max_risk(max_risk: float) -> int:
    """The k that bounds the highest prosecutor risk by `max_risk`: 1/|E| <= R  <=>  |E| >= ceil(1/R)."""
    if not 0.0 < max_risk <= 1.0:
        raise InputError(f"--max-risk must be in (0, 1], got {max_risk}")
    return max(1, math.ceil(1.0 / max_risk - 1e-9))


def config_with_max_risk(config: object, max_risk: float | None) -> object:
    """`config` (a kgen.Config) with k raised to k_for_max_risk(max_risk); unchanged when max_risk is None."""
    if max_risk is None:
        return config

    return dataclasses.replace(config, k=max(int(config.k), k_for_max_risk(max_risk)))  # type: ignore[attr-defined]








def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters, keeping its end (a file's name) behind an ellipsis."""
    return text if len(text) <= width else "..." + text[-(width - 3):]


def describe(risk: Mapping) -> str:
    """The risk figures as lines of at most 100 columns, for the console."""
    p = risk["prosecutor"]
    tau = risk["threshold"]
    lines = [
        f"{shorten(str(risk.get('input', 'table')), 36)}: {risk['rows']} rows, {risk['rows_released']} released "
        f"({risk['suppressed']} suppressed), {risk['classes']} classes, smallest {risk['smallest_class']}",
        f"  prosecutor risk: highest {p['max']:.2%}, mean {p['mean']:.2%}; "
        f"{p['rows_above_threshold']} rows ({p['records_above_threshold']:.2%}) above {tau:g}",
        f"  marketer risk {risk['marketer']:.2%}; sample uniques {risk['sample_uniques']} "
        f"({risk['sample_uniques_share']:.2%})",
    ]
    small = [(s, c) for s, c in risk["class_sizes"] if s < 10]
    if small:
        rows = sum(s * c for s, c in small)
        lines.append(f"  {rows} rows in classes smaller than 10")
    j = risk.get("journalist")
    if j:
        lines.append(f"  journalist risk: highest {j['max']:.2%}, mean {j['mean']:.2%}; {j['rows_above_threshold']} "
                     f"rows above {tau:g}")
        lines.append(f"    population {shorten(str(j.get('population', '')), 40)}: {j['population_released_rows']} "
                     f"rows, {j['classes_not_in_population']} released classes not in it")
    u = risk["population_uniqueness"]
    share = "no estimate (the model found none)" if u["share"] is None else f"{u['share']:.4%}"
    lines.append(f"  population uniqueness ({u['model']}, sampling fraction {u['sampling_fraction']:.4g}): "
                 f"{share} of {u.get('population_rows', 0)} rows")
    if u.get("note"):
        lines.append(f"    {u['note']}")
    return "\n".join(lines)


def summary_line(risk: Mapping) -> str:
    """One line (under 100 columns) with the headline risk figures."""
    p = risk["prosecutor"]
    text = (f"risk: prosecutor max {p['max']:.1%}, mean {p['mean']:.2%}; {p['rows_above_threshold']} rows above "
            f"{risk['threshold']:.0%}; {risk['sample_uniques']} sample uniques")
    return text


__all__ = ["DEFAULT_THRESHOLD", "DEFAULT_UNIQUENESS_MODEL", "UNIQUENESS_MODELS", "config_with_max_risk",
           "k_for_max_risk", "population_uniqueness", "risk_report",
           "sizes_report", "summary_line"]
