"""The independent check of the models that compare a release with a population (delta-presence, k-map with
a population table): the population file is read again here, its SHA-256 compared with the one the run
recorded, each of its rows generalized to the report's node through the report's saved hierarchy rows, and
its rows counted per released class. Nothing of fitness/ is imported; no code is shared with the evaluator.

What the file alone cannot show: which population class had subset rows that were all suppressed. With
DMIN > 0 a population class absent from the release fails the check when it has no subset row at all: the
research subset is read too (the file the report names, its SHA-256 compared, or the input's 0/1 column) and
generalized at the node, so a class whose subset rows were all suppressed (written as * or left out) is told
from one that never had any (docs/privacy-models.md).

ARX's order of checks (a report's `variant: arx` with a `minimal_class_size` above 1): population classes
absent from the release are let pass, as the run let them; what that rests on, every released class of at least
the minimal class size, is checked instead. A `definition` check of such a release fails every released class
and names the population classes without a released row (`cache["notes"]`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgen.io import hierarchies as loading
from kgen.io.table import FLAG_TRUE, CodedColumn, Table, read_table
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to a bound meets it
PRESENCE_VARIANTS = ("definition", "arx")  # written again on purpose: the checker shares nothing with fitness/


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def normalized_values(values: Sequence[str], tokens: Sequence[str]) -> tuple[list[str], str | None]:
    """A QI column's distinct values as a run builds its hierarchy from them: stripped, sorted, without the
    missing tokens; and the one token that stands for missing (the configured token occurring most often,
    ties to the first configured). Written again on purpose (the checker shares nothing with the run);
    `kgen.check.claims` uses it too."""
    counts: dict[str, int] = {}
    for value in (values.tolist() if isinstance(values, CodedColumn) else values):
        text = str(value).strip()
        counts[text] = counts.get(text, 0) + 1
    present = [t for t in tokens if counts.get(t, 0) > 0]
    token = max(present, key=lambda t: (counts[t], -list(tokens).index(t))) if present else None
    return sorted(v for v in counts if v not in set(tokens)), token


def hierarchy_paths(report: Mapping, qi: str, values: Sequence[str]) -> Mapping[str, Sequence[str]]:
    """The generalization paths of `qi`'s hierarchy: the report's saved rows, else its builder rebuilt on the
    population's own values (a run with a population builds it on the released and the population rows, which
    for a population that holds the release, as delta-presence's input does, are the population's values)."""
    spec = (report.get("hierarchy_specs") or {}).get(qi) or {}
    if "rows" in spec:
        return {str(r[0]): [str(x) for x in r] for r in spec["rows"]}
    if "builder" not in spec:
        raise InputError(f"the report saves neither the rows nor the builder of the hierarchy of {qi!r}: the "
                         "population cannot be generalized here", column=qi)
    distinct, token = normalized_values(values, [str(t) for t in report.get("missing", [])])
    hierarchy = loading.build(qi, spec["builder"], distinct)
    return (hierarchy.with_missing(token) if token is not None else hierarchy).paths


def generalized_counts(population: Table, report: Mapping) -> Counter:
    """The population's rows per generalized QI tuple at the report's node, through its saved hierarchies."""
    return Counter(generalized_keys(population, report))


def generalized_keys(population: Table, report: Mapping) -> list[tuple]:
    """Each row's generalized QI tuple at the report's node, through its saved hierarchies."""
    qis, node = list(report["quasi_identifiers"]), report["node"]
    labels = []
    for qi in qis:
        values = [str(v).strip() for v in population.column(qi)]
        level = int(node[qi])
        to_label = {leaf: str(path[min(level, len(path) - 1)]) for leaf, path in hierarchy_paths(report, qi,
                                                                                                   values).items()}
        lacking = next((i for i, v in enumerate(values) if v not in to_label), None)
        if lacking is not None:
            raise InputError(f"population value {values[lacking][:40]!r} is not in the hierarchy",
                             file=population.source, row=population.row_number(lacking), column=qi)
        labels.append([to_label[v] for v in values])
    return list(zip(*labels))


def released_keys(table: Table, classes: np.ndarray, qis: Sequence[str]) -> list[tuple]:
    """Each class's generalized QI tuple, from its first row."""
    first = np.full(int(classes.max()) + 1 if classes.size else 0, -1, dtype=np.int64)
    first[classes[::-1]] = np.arange(classes.size)[::-1]
    columns = [table.column(q) for q in qis]
    return [tuple(str(c[int(i)]) for c in columns) for i in first]


@dataclass(frozen=True)
class PopulationRule:
    """delta-presence (`dmin`, `dmax`; the population is the report's input) or k-map with a population
    (`k`; `file`), each released class counted in the population at the report's node."""

    model: str
    file: str | None = None
    digest: str | None = None
    k: int = 0
    dmin: float = 0.0
    dmax: float = 1.0
    column: str | None = None  # no sensitive column: the QIs and the population file
    variant: str = "definition"  # delta-presence: "arx" lets empty population classes pass beside a class size
    least_class: int = 1  # delta-presence "arx": the minimal class size of the models beside it
    subset: str | None = None  # delta-presence: the research subset (a file, or a 0/1 column of the input)
    subset_digest: str | None = None  # its SHA-256 as the run recorded it (a file)

    def validate(self) -> None:
        if not 0.0 <= self.dmin <= self.dmax <= 1.0:
            raise InputError(f"delta-presence needs 0 <= DMIN <= DMAX <= 1, got {self.dmin}, {self.dmax}")
        if self.variant not in PRESENCE_VARIANTS:
            raise InputError(f"unknown delta-presence variant {self.variant!r}; the checker knows "
                             f"{', '.join(PRESENCE_VARIANTS)}")
        if isinstance(self.least_class, bool) or not isinstance(self.least_class, int) or self.least_class < 1:
            raise InputError(f"delta-presence: minimal_class_size must be a whole number >= 1, got "
                             f"{self.least_class!r}")

    @property
    def lets_empty_classes_pass(self) -> bool:
        return self.variant == "arx" and self.least_class > 1

    def population(self, report: Mapping) -> Table:
        source = (report.get("provenance") or {}).get("input") or {}
        path = self.file or source.get("path")
        digest = self.digest if self.file else source.get("sha256")
        if not path:
            raise InputError(f"{self.model}: the report names no population file to count")
        found = file_sha256(path)
        if digest is not None and found != digest:
            raise InputError(f"is not the population the release was made with (SHA-256 {found[:16]}..., the "
                             f"report records {str(digest)[:16]}...)", file=path)
        return read_table(path)

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        report = cache.get("report")
        if report is None:
            raise InputError(f"{self.model} is checked with the release's report (--report): the population is "
                             "counted at its node through its saved hierarchies")
        population = self.population(report)
        counts = generalized_counts(population, report)
        keys = released_keys(table, classes, list(report["quasi_identifiers"]))
        starred = cache["starred"]
        starred_class = np.zeros(sizes.size, dtype=bool)
        starred_class[classes[starred]] = True
        matched = np.array([counts.get(key, 0) for key in keys], dtype=np.float64)
        if self.model == "k-map-population":
            return (matched < self.k) & ~starred_class
        share = sizes / np.maximum(matched, 1)
        bad = ((matched == 0) | (share < self.dmin - TOLERANCE) | (share > self.dmax + TOLERANCE)) & ~starred_class
        absent = sorted(set(counts) - set(keys))
        if self.dmin == 0 or not absent:
            return bad
        if self.lets_empty_classes_pass:  # ARX's order: they fail as too small; the released classes meet its size
            return bad | ((sizes < self.least_class) & ~starred_class)
        held = self.subset_keys(report, population)  # an absent class may have had subset rows, all suppressed
        absent = [key for key in absent if key not in held]
        if absent:  # a population class with no subset row: no release of this node meets DMIN
            cache["notes"].append(empty_classes_note(absent, list(report["quasi_identifiers"]), self.dmin))
            bad |= ~starred_class
        return bad

    def subset_keys(self, report: Mapping, population: Table) -> set[tuple]:
        """The generalized QI tuples that hold a research-subset row at the report's node: the `population`'s
        rows flagged in its 0/1 column, or the subset file's rows (its SHA-256 compared with the report's)."""
        if self.subset is None:
            raise InputError("delta-presence: the report names no research subset to tell the population classes "
                             "without a subset row from those whose rows were suppressed")
        if self.subset in population.columns:
            flags = [str(v).strip().lower() in FLAG_TRUE for v in population.column(self.subset)]
            return {key for key, flag in zip(generalized_keys(population, report), flags) if flag}
        found = file_sha256(self.subset)
        if self.subset_digest is not None and found != self.subset_digest:
            raise InputError(f"is not the research subset the release was made with (SHA-256 {found[:16]}..., the "
                             f"report records {str(self.subset_digest)[:16]}...)", file=self.subset)
        return set(generalized_keys(read_table(self.subset), report))


def empty_classes_note(absent: Sequence[tuple], qis: Sequence[str], dmin: float) -> str:
    """The line that names the population classes without a released row (at most three, and a count)."""
    shown = "; ".join("(" + ", ".join(f"{q}={v}" for q, v in zip(qis, key)) + ")" for key in absent[:3])
    more = f" and {len(absent) - 3} more" if len(absent) > 3 else ""
    return (f"delta-presence: {len(absent)} population classes have no released row and no research-subset row "
            f"(share 0 < DMIN {dmin:g}): "
            f"{shown}{more}; a person of such a class is known not to be in the subset, so every released class "
            "fails (ARX's order of checks, --delta-presence-variant arx, lets them pass beside k or l)")
