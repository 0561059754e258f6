"""t-closeness with the hierarchical ground distance (Li et al. 2007; ARX's `HierarchicalDistanceTCloseness`).

The sensitive column's values are the leaves of a generalization hierarchy of height H; two values are at
distance level(lowest common ancestor) / H. The earth mover's distance between a class's distribution p and
the whole table's q then has a closed form: with extra(leaf) = q - p and, at every node N above the leaves,
pos(N) and neg(N) the sums of its children's positive and negative extras (extra(N) = pos(N) - neg(N)),

    EMD = sum over nodes N of level(N) / H * min(pos(N), neg(N)).

Nodes are told apart by their labels from their level up to the top, so the tree is a tree even when a label
repeats under two parents. A class meets the model iff its EMD is at most t. Like the other t-closeness
distances: monotone without suppression (EMD is convex in p), not with suppression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule, reference_distribution, sensitive_column, value_counts
from fitness.parameters import is_real
from fitness.partition import Partition
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy

_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True, eq=False)
class ValueTree:
    """The hierarchy over a column's value codes: `parents[L]` maps each node of level L to its node at level
    L + 1 (level 0 = the value codes), `height` H."""

    parents: tuple[np.ndarray, ...]
    height: int


def value_tree(labels: tuple[str, ...], hierarchy: Hierarchy, column: str) -> ValueTree:
    """The tree of `hierarchy` over the values `labels` (codes 0..m-1); InputError names a value it lacks."""
    missing = [v for v in labels if v not in hierarchy]
    if missing:
        raise InputError(f"the hierarchy of sensitive column {column!r} lacks the value {missing[0]!r}",
                         column=column)
    paths = [tuple(hierarchy.paths[v]) for v in labels]
    height = hierarchy.height
    ids = [np.arange(len(labels))]
    for level in range(1, height + 1):
        keys = [p[level:] for p in paths]  # a node is its labels from its level to the top
        index = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        ids.append(np.array([index[key] for key in keys], dtype=np.int64))
    parents = []
    for level in range(height):
        up = np.zeros(int(ids[level].max()) + 1 if len(labels) else 0, dtype=np.int64)
        up[ids[level]] = ids[level + 1]
        parents.append(up)
    return ValueTree(tuple(parents), height)


def hierarchical_emd(extra: np.ndarray, tree: ValueTree) -> np.ndarray:
    """Per row of `extra` (classes x values, q - p), the hierarchical EMD (module docstring)."""
    cost = np.zeros(extra.shape[0])
    for level, up in enumerate(tree.parents, start=1):
        onehot = np.zeros((up.size, int(up.max()) + 1 if up.size else 0))
        onehot[np.arange(up.size), up] = 1.0
        pos, neg = np.maximum(extra, 0.0) @ onehot, np.maximum(-extra, 0.0) @ onehot
        cost += level / tree.height * np.minimum(pos, neg).sum(axis=1)
        extra = pos - neg
    return cost


@dataclass(frozen=True)
class HierarchicalTCloseness:
    """Every released class is within hierarchical EMD t of the whole table's distribution of the column.

    Parameters
    ----------
    column : str
        The sensitive column.
    t : float
        The largest distance allowed, in [0, 1].
    hierarchy : Hierarchy
        The column's generalization hierarchy (its ground distance).
    """

    column: str
    t: float
    hierarchy: Hierarchy = field(compare=False, repr=False)
    # its own name, not "t-closeness": that family's reader and check rule know the equal and ordered distances
    # only, so a release under this model is refused for want of a check rule rather than checked wrongly
    name: ClassVar[str] = "hierarchical-t-closeness"
    needs_rows: ClassVar[bool] = True
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = False
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.t) or not 0.0 <= self.t <= 1.0:
            raise InputError(f"t of t-closeness must be in [0, 1], got {self.t!r}")
        if self.hierarchy.height < 1:
            raise InputError(f"the hierarchical t-closeness distance needs a hierarchy of {self.column!r} with at "
                             "least one level above the values")

    @property
    def params(self) -> dict:
        return {"t": self.t, "sensitive": self.column}

    def distances(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Per class, its hierarchical EMD to the whole table's distribution."""
        _, labels = sensitive_column(table, self.column)
        tree = table.derived(("hierarchical t-closeness tree", self.column, id(self.hierarchy)),
                             lambda: value_tree(labels, self.hierarchy, self.column))
        q = reference_distribution(table, self.column)[0]  # the whole table's, also for a row subset
        vc = value_counts(partition, table, self.column)
        out = np.zeros(partition.count)
        chunk = max(1, _CHUNK_CELLS // max(len(labels), 1))
        for start in range(0, partition.count, chunk):
            stop = min(start + chunk, partition.count)
            lo, hi = np.searchsorted(vc.cls, [start, stop])
            p = np.zeros((stop - start, len(labels)))
            p[vc.cls[lo:hi] - start, vc.value[lo:hi]] = vc.count[lo:hi] / vc.sizes[vc.cls[lo:hi]]
            out[start:stop] = hierarchical_emd(q - p, tree)
        return np.clip(out, 0.0, 1.0)

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes farther than t (TOLERANCE absorbs rounding)."""
        return self.distances(partition, table) > self.t + TOLERANCE

    def describe(self) -> dict:
        return {"model": self.name, **self.params}
