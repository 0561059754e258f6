"""An independent check of a released table: k-anonymity with suppression, computed from the file itself.

It shares no code with the evaluator: it groups the rows by their QI strings with numpy and counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from kgen.io.table import CodedColumn, Table
from lattice.errors import InputError

SUPPRESSED = "*"


@dataclass
class CheckResult:
    """The verdict on a released table, counted the way `kgen anonymize` reports its release.

    A row with `*` in every QI is a suppressed row, as kgen writes them, or a row generalized to a `*` top in
    every QI: the file cannot tell which. While there are at most `allowed` = floor(t * rows) of them they are
    the suppressed rows (`suppressed_rows`): like the report's `suppressed`, they are not a class and need meet
    no requirement. Beyond the limit they cannot all be suppressed, so they are taken as one class of their own
    (`starred_class`), which must then meet k and every rule like any other class.

    `classes` and `smallest_class` describe the released classes (the `*` rows only when `starred_class`),
    which is the report's `classes` and `smallest_class` for kgen's releases. `violating_rows`: 1-based rows
    not `*` in every QI that are in a class breaking the model: any one of them fails the check, whatever the
    suppression limit (the limit allows suppressing rows, not publishing them unprotected).
    """

    rows: int
    k: int
    classes: int
    smallest_class: int
    suppressed_rows: int
    violating_rows: list[int]
    allowed: int
    details: dict = field(default_factory=dict)
    starred_rows: int = 0  # rows with `*` in every QI (suppressed, or one class when beyond the limit)
    starred_class: bool = False  # the `*` rows exceed the limit and form a class that meets the model
    notes: list[str] = field(default_factory=list)  # why a rule failed beyond the classes (a rule's own words)

    @property
    def passed(self) -> bool:
        return not self.violating_rows and self.suppressed_rows <= self.allowed

    def summary(self, source: str, rules: bool) -> str:
        """The one-line verdict of `kgen check`: PASS or FAIL with the counts behind it."""
        broken = "that break the model" if rules else "smaller than k"
        if self.starred_class:
            starred = (f"{self.starred_rows} rows with * in every QI, more than the {self.allowed} that may be "
                       "suppressed: counted as one class (it meets the model), none suppressed")
        elif self.starred_rows > self.allowed:
            starred = (f"{self.starred_rows} rows with * in every QI, more than the {self.allowed} that may be "
                       "suppressed, and as one class they break the model")
        else:
            starred = f"{self.suppressed_rows} suppressed rows (* in every QI), {self.allowed} allowed"
        return (f"{'PASS' if self.passed else 'FAIL'}: {source}: {self.rows} rows, {self.classes} classes, smallest "
                f"class {self.smallest_class}, k = {self.k}; {len(self.violating_rows)} released rows in classes "
                f"{broken}; {starred}")


def column_codes(values: Sequence[str]) -> tuple[np.ndarray, dict[str, int]]:
    """A code per row and the code of each distinct string. A column read from a file (a CodedColumn) has its
    codes already (no string per row); otherwise a dict lookup per row (first occurrence order), about twice
    as fast as converting to a unicode array and sorting it (np.unique) on Adult."""
    if isinstance(values, CodedColumn):
        return values.codes.astype(np.int64), {label: i for i, label in enumerate(values.labels)}
    index = {v: i for i, v in enumerate(dict.fromkeys(values))}
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
    return codes, index


def group_codes(table: Table, qis: Sequence[str]) -> np.ndarray:
    """Class id per row: rows get the same id iff they agree on every QI string."""
    key = np.zeros(table.n, dtype=np.int64)
    span = 1
    for column in qis:
        codes, index = column_codes(table.column(column))
        card = max(len(index), 1)
        if span * card >= 1 << 62:  # renumber before the mixed-radix key could overflow int64
            _, key = np.unique(key, return_inverse=True)
            key, span = key.reshape(-1), int(key.max()) + 1
        key = key * card + codes
        span *= card
    _, key = np.unique(key, return_inverse=True)
    return key.reshape(-1)


def suppressed_mask(table: Table, qis: Sequence[str]) -> np.ndarray:
    """Rows with `*` in every QI (kgen's suppressed records)."""
    starred = np.ones(table.n, dtype=bool)
    for column in qis:
        values = table.column(column)
        if isinstance(values, CodedColumn):
            starred &= (values.codes == values.labels.index(SUPPRESSED)) if SUPPRESSED in values.labels else False
        else:
            starred &= np.fromiter(map(SUPPRESSED.__eq__, values), dtype=bool, count=table.n)
    return starred


class ClassRule(Protocol):
    """What a check rule judges on the written file: per class, whether it breaks its model
    (`kgen.check.rules` gives one per saved model description).

    `column` is the sensitive column it reads (None: the class sizes alone, or columns of its own); `cache` is
    shared by the rules of one check, so that per-column measures are computed once (`sensitive_measures`)."""

    column: str | None

    def validate(self) -> None: ...

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray: ...


# Equal to a threshold counts as meeting it: rounding must not fail a class that meets it exactly.
TOLERANCE = 1e-9
L_VARIANTS = ("distinct", "entropy", "recursive")
DISTANCES = ("equal", "ordered")


@dataclass(frozen=True)
class SensitiveRule:
    """Requirements on the sensitive values of every released class: l-diversity (`l`, `variant` distinct |
    entropy | recursive with `c`) and/or t-closeness (`t`, `distance` equal | ordered) on `column`.

    t-closeness compares each class with the distribution of the column over all rows of the file (suppressed
    rows included: they keep their sensitive values). The ordered distance orders the values numerically
    when every value is a number, else as strings."""

    column: str
    l: float | None = None  # noqa: E741 (the model's name for it)
    variant: str = "distinct"
    c: float | None = None
    t: float | None = None
    distance: str = "equal"

    def validate(self) -> None:
        if self.l is None and self.t is None:
            raise InputError(f"--sensitive {self.column}: give --l and/or --t-closeness to check")
        if self.variant not in L_VARIANTS:
            raise InputError(f"unknown l-diversity variant {self.variant!r}; choose distinct, entropy or recursive")
        if self.distance not in DISTANCES:
            raise InputError(f"unknown t-closeness distance {self.distance!r}; choose equal or ordered")
        if self.l is not None and (self.l < 1 or (self.variant != "entropy" and not float(self.l).is_integer())):
            raise InputError(f"l must be a whole number >= 1 ({self.variant} l-diversity), got {self.l}")
        if self.l is not None and self.variant == "recursive" and (self.c is None or not self.c > 0):
            raise InputError(f"recursive (c, l)-diversity needs c > 0 (--c), got {self.c}")
        if self.t is not None and not 0.0 <= self.t <= 1.0:
            raise InputError(f"t of t-closeness must be in [0, 1], got {self.t}")

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        """Per class: does it break the rule? The column's measures are computed once per check (`cache`)."""
        measures = cache.setdefault("sensitive", {})
        if self.column not in measures:
            measures[self.column] = sensitive_measures(classes, table.column(self.column))
        return rule_violations(self, measures[self.column])


# Written again on purpose (the checker shares nothing with the evaluator): the same rule as
# lattice.builders.is_number, a plain ASCII decimal number; tests/test_verify.py checks the two agree.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text.strip()) is not None and math.isfinite(float(text))


def _ordered_emd(cls: np.ndarray, rank: np.ndarray, p: np.ndarray, cum_q: np.ndarray, count: int) -> np.ndarray:
    """Per class, (1/(m-1)) sum_i |P(i) - Q(i)| over value positions i (P, Q cumulative distributions).

    P is constant between the positions present in a class and Q is non-decreasing, so each run of positions
    is summed in closed form from prefix sums of Q: no class x value matrix."""
    m = cum_q.size
    out = np.zeros(count)
    if m <= 1:
        return out
    prefix = np.concatenate(([0.0], np.cumsum(cum_q)))

    def run_sum(level: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        split = np.clip(np.searchsorted(cum_q, level, side="left"), a, b)
        return (level * (split - a) - (prefix[split] - prefix[a])) + ((prefix[b] - prefix[split]) - level * (b - split))

    running = np.cumsum(p)
    first = np.concatenate(([True], cls[1:] != cls[:-1]))
    base = np.maximum.accumulate(np.where(first, np.arange(cls.size), 0))
    cum_p = running - np.concatenate(([0.0], running))[base]  # cumulative within each class
    last = np.concatenate((cls[1:] != cls[:-1], [True]))
    end = np.where(last, m, np.concatenate((rank[1:], [m])))
    total = run_sum(cum_p, rank, end)
    out += np.bincount(cls, weights=total, minlength=count)
    starts = np.flatnonzero(first)  # positions before a class's first value: P = 0
    out[cls[starts]] += run_sum(np.zeros(starts.size), np.zeros(starts.size, dtype=np.int64), rank[starts])
    return np.clip(out / (m - 1), 0.0, 1.0)


def sensitive_measures(classes: np.ndarray, values: Sequence[str]) -> dict[str, np.ndarray]:
    """Per class of `classes` (ids 0..count-1): distinct values, entropy (natural log), the sorted value
    counts' head r_1 with a function for recursive tails, and the equal and ordered EMD to the distribution of
    all rows."""
    if isinstance(values, CodedColumn):  # sorted labels and a code per row already: keep those occurring
        present = np.bincount(values.codes, minlength=len(values.labels)) > 0
        labels = np.array([v for v, here in zip(values.labels, present.tolist()) if here], dtype=str)
        codes = (np.cumsum(present) - 1)[values.codes]
    else:
        labels, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
        codes = codes.reshape(-1)
    count = int(classes.max()) + 1 if classes.size else 0
    m = labels.size
    pairs, counts = np.unique(classes.astype(np.int64) * m + codes, return_counts=True)
    cls, code = pairs // m, pairs % m
    sizes = np.bincount(classes, minlength=count).astype(np.float64)
    p = counts / sizes[cls]
    q = np.bincount(codes, minlength=m) / classes.size
    if all(_is_number(v) for v in labels):
        order = np.argsort(np.array([float(v) for v in labels]), kind="stable")
    else:
        order = np.arange(m)  # np.unique sorted the labels as strings
    rank_of = np.empty(m, dtype=np.int64)
    rank_of[order] = np.arange(m)
    by_rank = np.lexsort((rank_of[code], cls))
    ordered = _ordered_emd(cls[by_rank], rank_of[code][by_rank], p[by_rank], np.cumsum(q[order]), count)
    by_count = np.lexsort((-counts, cls))
    return {
        "distinct": np.bincount(cls, minlength=count),
        "entropy": np.maximum(-np.bincount(cls, weights=p * np.log(p), minlength=count), 0.0),
        # 1/2 sum_v |p_v - q_v|, where each value absent from a class contributes q_v
        "t_equal": np.clip(0.5 * (1.0 + np.bincount(cls, weights=np.abs(p - q[code]) - q[code], minlength=count)),
                           0.0, 1.0),
        "t_ordered": ordered,
        "_sorted_cls": cls[by_count],
        "_sorted_counts": counts[by_count],
    }


def recursive_ratio(measures: dict[str, np.ndarray], l: int) -> np.ndarray:  # noqa: E741
    """Per class r_1 / (r_l + ... + r_m) of its value counts sorted descending (inf with fewer than l values)."""
    cls, counts = measures["_sorted_cls"], measures["_sorted_counts"].astype(np.float64)
    count = measures["distinct"].size
    starts = np.concatenate(([0], np.cumsum(measures["distinct"])[:-1]))
    position = np.arange(cls.size) - starts[cls]
    tail = np.bincount(cls, weights=np.where(position >= l - 1, counts, 0.0), minlength=count)
    head = counts[starts] if cls.size else np.zeros(count)
    with np.errstate(divide="ignore"):
        return np.where(tail > 0, head / np.where(tail > 0, tail, 1.0), np.inf)


def rule_violations(rule: SensitiveRule, measures: dict[str, np.ndarray]) -> np.ndarray:
    """Per class: does it break the rule?"""
    bad = np.zeros(measures["distinct"].size, dtype=bool)
    if rule.l is not None:
        if rule.variant == "distinct":
            bad |= measures["distinct"] < rule.l
        elif rule.variant == "entropy":
            bad |= measures["entropy"] < math.log(rule.l) - TOLERANCE
        else:
            bad |= ~(recursive_ratio(measures, int(rule.l)) < rule.c)
    if rule.t is not None:
        bad |= measures["t_" + rule.distance] > rule.t + TOLERANCE
    return bad


def check_k_anonymity(table: Table, qis: Sequence[str], k: int, suppression: float = 0.0,
                      rules: Sequence[ClassRule] = (), context: Mapping | None = None) -> CheckResult:
    """Check a released table: k-anonymity with suppression, plus the `rules` on sensitive columns.

    A class breaking any requirement is treated like a class smaller than k. Rows with `*` in every QI are the
    suppressed rows while there are at most floor(suppression * rows) of them (see `CheckResult`).

    Parameters
    ----------
    table
        The released table, as read from the file (`kgen.read_csv`).
    qis
        The quasi-identifier columns.
    k
        k of k-anonymity (>= 1).
    suppression
        The fraction of rows that may be suppressed, in [0, 1].
    rules, context
        The rules of the other models (`SensitiveRule`, ...); what they may read beyond the file ({"report": ...}
        for those that count a population: `kgen.check.population`), put in their cache.

    Returns
    -------
    CheckResult
        `passed`, the counts behind it (`violating_rows` 1-based data rows), and in `details[column]` the
        sensitive figures of the released classes.

    Raises
    ------
    InputError
        k < 1, a suppression outside [0, 1], no QIs, a rule that cannot be checked, or a column the table lacks.
    """
    require_checkable(table, qis, k, suppression, rules)
    n = table.n
    allowed = math.floor(suppression * n + 1e-9)
    if n == 0:
        return CheckResult(0, k, 0, 0, 0, [], allowed)
    classes = group_codes(table, qis)
    sizes = np.bincount(classes)
    starred = suppressed_mask(table, qis)
    starred_rows = int(starred.sum())
    notes: list[str] = []  # a rule may say why it fails the release beyond its classes (`cache["notes"]`)
    bad_class, measures = breaking_classes(table, classes, sizes, k, rules, starred, {**(context or {}),
                                                                                      "notes": notes})
    small = bad_class[classes]
    violating = np.flatnonzero(small & ~starred) + 1
    # within the limit the `*` rows are suppressed (not a class); beyond it they must form a class of their own
    starred_class = starred_rows > allowed and not small[starred].any()
    released = ~starred | starred_class
    released_counts = np.bincount(classes[released], minlength=sizes.size)
    kept = released_counts > 0
    released_sizes = released_counts[kept]
    details = {column: sensitive_figures(m, kept) for column, m in measures.items()}
    return CheckResult(
        rows=n, k=k, classes=int(released_sizes.size),
        smallest_class=int(released_sizes.min()) if released_sizes.size else 0,
        suppressed_rows=0 if starred_class else starred_rows,
        violating_rows=violating.tolist(), allowed=allowed, details=details,
        starred_rows=starred_rows, starred_class=starred_class, notes=notes,
    )


def breaking_classes(table: Table, classes: np.ndarray, sizes: np.ndarray, k: int,
                     rules: Sequence[ClassRule], starred: np.ndarray | None = None,
                     context: Mapping | None = None) -> tuple[np.ndarray, dict]:
    """Per class, whether it breaks k or a rule; and each sensitive column's measures of the classes.

    `starred` (rows with `*` in every QI) is in the rules' cache as "starred": a rule on the released classes
    together (the average risk) leaves those rows out, as suppressed."""
    bad_class = sizes < k
    cache: dict = {**(context or {}), "starred": np.zeros(classes.size, dtype=bool) if starred is None else starred}
    for rule in rules:
        bad_class |= rule.breaking(table, classes, sizes, cache)
    return bad_class, cache.get("sensitive", {})


def require_checkable(table: Table, qis: Sequence[str], k: int, suppression: float,
                      rules: Sequence[ClassRule]) -> None:
    """Refuse (InputError) what cannot be checked: k < 1, a suppression outside [0, 1], no QIs, a rule that
    cannot be checked, a column the table lacks."""
    if k < 1:
        raise InputError(f"k must be a whole number >= 1, got {k}")
    if not 0.0 <= suppression <= 1.0:
        raise InputError(f"suppression must be a fraction in [0, 1], got {suppression}")
    if not qis:
        raise InputError("no quasi-identifiers given (--qi)")
    for column in qis:
        table.column(column)
    for rule in rules:
        rule.validate()
        if rule.column is not None:
            table.column(rule.column)


def sensitive_figures(measures: dict[str, np.ndarray], kept: np.ndarray) -> dict:
    """Least distinct and entropy l (exp of the least entropy) and largest t distances of the kept classes."""
    if not kept.any():
        return {"classes": 0}
    return {
        "classes": int(kept.sum()),
        "min_distinct_l": int(measures["distinct"][kept].min()),
        "min_entropy_l": float(np.exp(measures["entropy"][kept].min())),
        "max_t_equal": float(measures["t_equal"][kept].max()),
        "max_t_ordered": float(measures["t_ordered"][kept].max()),
    }
