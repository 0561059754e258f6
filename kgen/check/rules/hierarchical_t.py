"""t-closeness with the hierarchical ground distance, checked from the file: each released class's EMD to the
distribution of the column over all rows of the file, on the column's hierarchy (value -> its labels at every
level, level 0 the value), is at most t. Written again from Li et al.'s closed form, one class at a time: a
node is its labels from its level to the top, its parent that key without its first label, and the EMD is
the sum over nodes of level / H * min(positive, negative extra of its children), extra = q - p. The hierarchy
is the file the description names (`t_hierarchy`), read here with kgen.io, its paths' digest compared with the
one the description records."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from kgen.io import hierarchies as loading
from kgen.io.table import Table
from lattice.errors import InputError

TOLERANCE = 1e-9  # equal to t meets it


def class_distance(counts: Counter, overall: Mapping[str, float], paths: Mapping[str, Sequence[str]],
                   height: int) -> float:
    """The hierarchical EMD between one class's value counts and the overall shares."""
    size = sum(counts.values())
    extra = {tuple(paths[v]): share - counts.get(v, 0) / size for v, share in overall.items()}
    cost = 0.0
    for level in range(1, height + 1):
        pos: dict[tuple, float] = defaultdict(float)
        neg: dict[tuple, float] = defaultdict(float)
        for key, value in extra.items():
            (pos if value > 0 else neg)[key[1:]] += abs(value)
        parents = set(pos) | set(neg)
        cost += level / height * sum(min(pos[k], neg[k]) for k in parents)
        extra = {k: pos[k] - neg[k] for k in parents}
    return cost


def distances(classes: np.ndarray, values: Sequence[str], paths: Mapping[str, Sequence[str]]) -> np.ndarray:
    """Per class of `classes` (an id per row), its hierarchical EMD; a value missing from `paths` is a KeyError
    the caller turns into its message."""
    values = [str(v) for v in values]
    overall = {v: c / len(values) for v, c in Counter(values).items()}
    height = len(next(iter(paths.values()))) - 1
    per_class: dict[int, Counter] = defaultdict(Counter)
    for c, v in zip(classes.tolist(), values):
        per_class[c][v] += 1
    count = int(classes.max()) + 1 if classes.size else 0
    return np.array([class_distance(per_class[c], overall, paths, height) for c in range(count)])


def breaking(classes: np.ndarray, values: Sequence[str], paths: Mapping[str, Sequence[str]], t: float) -> np.ndarray:
    """Per class, whether its hierarchical EMD exceeds t."""
    return distances(classes, values, paths) > t + TOLERANCE


def paths_digest(paths: Mapping[str, Sequence[str]]) -> str:
    """SHA-256 of the generalization paths as canonical JSON, written again here (the model's description
    records the same digest of the hierarchy it used; tests check the two agree)."""
    rows = sorted([str(k), [str(x) for x in v]] for k, v in paths.items())
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HierarchicalRule:
    """Hierarchical t-closeness on `column`, the ground distance read from the description's hierarchy file
    (`t_hierarchy`) by the checker itself; refused when the file's paths are not those the run used."""

    column: str
    t: float
    file: str
    digest: str | None = None

    def paths(self) -> Mapping[str, Sequence[str]]:
        return loading.load_arx(self.file, self.column).paths

    def validate(self) -> None:
        if not 0.0 <= self.t <= 1.0:
            raise InputError(f"t of t-closeness must be in [0, 1], got {self.t}")
        found = paths_digest(self.paths())
        if self.digest is not None and found != self.digest:
            raise InputError(f"is not the hierarchy the release was made with (digest {found[:16]}..., the report "
                             f"records {self.digest[:16]}...)", file=self.file)

    def breaking(self, table: Table, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        paths = self.paths()
        values = [str(v) for v in table.column(self.column)]
        lacking = next((v for v in values if v not in paths), None)
        if lacking is not None:
            raise InputError(f"the hierarchy {self.file} lacks the released value {lacking[:40]!r}",
                             column=self.column)
        return breaking(classes, values, paths, self.t)


def read(d: Mapping, dropped: bool) -> HierarchicalRule | None:
    """None when the suppressed rows were dropped: the file no longer holds the column's distribution."""
    if dropped:
        return None
    return HierarchicalRule(str(d["sensitive"]), float(d["t"]), str(d["t_hierarchy"]), d.get("hierarchy_digest"))


RULE = CheckRule("hierarchical-t-closeness", read=read)
