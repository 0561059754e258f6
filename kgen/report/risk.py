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
from fitness.privacy.sample_uniqueness import sample_uniques_share
from fitness.uniqueness import (  # noqa: F401 (the estimators live in fitness/: kgen risk and the model share them)
    DEFAULT_UNIQUENESS_MODEL,
    PITMAN_ACCURACY,
    PITMAN_STEPS,
    SNB_ACCURACY,
    SNB_STARTS,
    SNB_STEPS,
    UNIQUENESS_MODELS,
    _snb_equations,
    dankar_choice,
    pitman_fit,
    pitman_uniques,
    population_uniqueness,
    snb_uniques,
    zayatz_uniques,
)
from kgen.io.table import SUPPRESSED
from lattice.errors import InputError

DEFAULT_THRESHOLD = 0.2


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
        "sample_uniques_share": sample_uniques_share(sizes),  # the --max-sample-uniqueness model's definition
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
