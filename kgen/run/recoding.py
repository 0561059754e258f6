"""Local recoding (issue 26, item 4): rows the global node suppresses are generalized again at a node of their own.

After the search has chosen the global node, the rows it would suppress are searched again, alone, for a further
generalization: among the nodes at or above the global node (up to the box's upper levels), the one at which
those rows lose least (NCP, or Loss when the run minimizes Loss; a row still suppressed costs 1 per cell), its
classes judged by the run's privacy models against the whole table (t-closeness keeps the whole table's
reference: `fitness.models.restricted`). That search is exact (bestfirst) when those nodes are at most
`EXACT_NODES`, else a greedy climb from the global node (`climb`). The rows the node releases form a new group
at that node; the rows it still suppresses are searched again, and so on, as ARX's iterative local recoding
does, until a round releases nothing, fewer rows remain than the smallest class a model allows, or `MAX_GROUPS`
groups exist. Suppression only ever shrinks, so the release stays within the limit; `kgen apply` starts from the
same node and finds the same groups.

A release forms its classes from the QI strings as written: two groups' rows with identical generalized tuples
are one class. Merging classes keeps k, distinct and entropy l-diversity and t-closeness (each is kept by a
union of classes that meet it), but not every model (recursive (c, l)-diversity can break), so every round is
checked on the classes the whole release forms (`violating_rows`); a round whose merge breaks a model is
dropped and recoding stops there. The independent checker then proves the model on the written file, as for
any release. docs/local-recoding.md has the design and the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.models import restricted
from fitness.objective import make_objective
from fitness.partition import Partition
from kgen.io.table import SUPPRESSED, CodedColumn
from kgen.run.algorithms import make_search
from kgen.run.microaggregation import aggregate
from kgen.run.prepare import Prepared
from lattice.box import Box
from lattice.node import Node
from lattice.search.base import Limits, Problem, run_search

MAX_GROUPS = 16  # groups of rows (the global node's included): each is one more search
EXACT_NODES = 4096  # a box of at most this many nodes above the global node is searched exactly


@dataclass(frozen=True, eq=False)
class Recoding:
    """Which node generalizes each row: `nodes[g]` for the rows with `group == g`; `group < 0`: suppressed.
    Group 0 is the global node's; `suppressed_before` is how many rows the global node alone suppresses."""

    nodes: tuple[Node, ...]
    group: np.ndarray
    suppressed_before: int

    @property
    def suppressed(self) -> np.ndarray:
        return self.group < 0

    def describe(self, names: Sequence[str], metric: str) -> dict:
        """The report's `local_recoding`: each group's node and rows, and the suppressed rows before and after."""
        rows = np.bincount(self.group[self.group >= 0], minlength=len(self.nodes))
        return {"groups": [{"node": {name: int(x) for name, x in zip(names, node)}, "rows": int(count)}
                           for node, count in zip(self.nodes, rows)],
                "suppressed_before": self.suppressed_before, "suppressed_after": int(self.suppressed.sum()),
                "search": f"bestfirst on the rows still suppressed, metric {metric}"}


def global_recoding(node: Node, suppressed: np.ndarray) -> Recoding:
    """Every row at `node` (one group), the `suppressed` rows suppressed."""
    return Recoding((tuple(node),), np.where(suppressed, -1, 0).astype(np.int64), int(suppressed.sum()))


def local_recoding(prepared: Prepared, node: Node, suppressed: np.ndarray) -> Recoding:
    """Recode the rows `node` suppresses, round after round (see the module docstring)."""
    recoding = global_recoding(node, suppressed)
    floor = prepared.evaluator.floor
    while len(recoding.nodes) < MAX_GROUPS:
        rows = np.flatnonzero(recoding.suppressed)
        if rows.size < max(floor, 1):
            break
        found = recode_rows(prepared, rows, node)
        if found is None:
            break
        group = recoding.group.copy()
        group[rows[found[1]]] = len(recoding.nodes)
        candidate = Recoding(recoding.nodes + (found[0],), group, recoding.suppressed_before)
        if violating_rows(prepared, candidate).any():
            break  # the groups' classes merge into one that breaks a model: keep the rounds before
        recoding = candidate
    return recoding


def subset_metric(metric: str) -> str:
    """What the search over suppressed rows minimizes: Loss when the run does, else NCP (a cell cost that
    counts a suppressed cell as 1: LOG depends on the node alone and would always suppress everything)."""
    return "loss" if metric == "loss" else "ncp"


def recode_rows(prepared: Prepared, rows: np.ndarray, start: Node) -> tuple[Node, np.ndarray] | None:
    """The node, at `start` or above it, at which the rows `rows` alone lose least, and which of them it
    releases; None when it releases none, or only as `*` in every QI (the same as suppressing them).

    Exact (bestfirst) when the box from `start` to the upper levels has at most `EXACT_NODES` nodes, else a
    greedy climb from `start` (`climb`): the loss here is not monotone, so an exact search evaluates every node
    of its box."""
    config = prepared.config
    table = restricted(prepared.encoded, rows)
    evaluator = NodeEvaluator(table, prepared.evaluator.models, 1.0, make_objective(subset_metric(config.metric)),
                              config.kernel)
    box = Box(tuple(start), prepared.box.upper)
    if box.size <= EXACT_NODES:
        problem = Problem(evaluator, box, prepared.heights, evaluator.monotone_feasibility, evaluator.monotone_loss)
        best = run_search(make_search("bestfirst"), problem, Limits(seed=config.seed)).best
    else:
        best = climb(evaluator, box)
    if best is None:
        return None
    node = tuple(best.node)
    released = ~evaluator.suppressed_rows(node)
    starred = all(qi.labels[x] == (SUPPRESSED,) for qi, x in zip(prepared.encoded.qis, node))
    if not released.any() or starred:
        return None
    return node, released


def climb(evaluator: NodeEvaluator, box: Box) -> Evaluation:
    """From the box's lower corner to its top, one level at a time, each step to the successor of least loss
    (the first in QI order on ties); the least loss met on the way. At most q levels a step: q * (sum of the
    box's spans) evaluations, where an exact search could need every node."""
    node = tuple(box.lower)
    best = evaluator.evaluate(node)
    while True:
        successors = [node[:i] + (node[i] + 1,) + node[i + 1:] for i in range(len(node)) if node[i] < box.upper[i]]
        if not successors:
            return best
        step = min(evaluator.evaluate_many(successors), key=lambda e: e.loss)
        node = tuple(step.node)
        if step.loss < best.loss:
            best = step


def released_codes(prepared: Prepared, recoding: Recoding) -> list[tuple[np.ndarray, tuple[str, ...]]]:
    """Per QI, each row's released string as a code into that QI's released labels (the union of the labels
    of the levels its groups use, then `*` for the suppressed rows): equal strings, equal codes, whatever
    the level they come from."""
    out = []
    for i, qi in enumerate(prepared.encoded.qis):
        index: dict[str, int] = {}
        for level in sorted({node[i] for node in recoding.nodes}):
            for label in qi.labels[level]:
                index.setdefault(label, len(index))
        star = index.setdefault(SUPPRESSED, len(index))
        codes = np.full(recoding.group.size, star, dtype=np.int64)
        for g, node in enumerate(recoding.nodes):
            rows = recoding.group == g
            lookup = np.array([index[label] for label in qi.labels[node[i]]], dtype=np.int64)
            codes[rows] = lookup[qi.codes[node[i]][rows]]
        out.append((codes, tuple(index)))
    return out


def release_classes(columns: Sequence[tuple[np.ndarray, tuple[str, ...]]], suppressed: np.ndarray) -> Partition:
    """The classes a release forms from its QI strings (`released_codes`): rows with equal strings in every QI
    are one class. The suppressed rows are put together in the last class (the caller sets it aside)."""
    key = np.zeros(suppressed.size, dtype=np.int64)
    for codes, labels in columns:
        key = key * max(len(labels), 1) + codes
        _, key = np.unique(key, return_inverse=True)  # renumbered every column: no int64 overflow
        key = key.reshape(-1)
    _, classes = np.unique(key[~suppressed], return_inverse=True)
    rows = np.empty(suppressed.size, dtype=np.int64)
    rows[~suppressed] = classes.reshape(-1)
    count = int(classes.max()) + 1 if classes.size else 0
    rows[suppressed] = count
    return Partition(np.bincount(rows, minlength=count + int(suppressed.any())), rows)


def violating_rows(prepared: Prepared, recoding: Recoding) -> np.ndarray:
    """The released rows in a class (as the whole release forms them) that breaks one of the run's models."""
    partition = release_classes(released_codes(prepared, recoding), recoding.suppressed)
    set_aside = np.zeros(partition.count, dtype=bool)
    set_aside[-1] = bool(recoding.suppressed.any())  # the suppressed rows' class: never released
    bad = prepared.evaluator.violating(partition, set_aside)
    return bad[partition.rows] & ~recoding.suppressed


@dataclass(frozen=True, eq=False)
class Refined:
    """A release refined after its node was chosen: each row's node (`recoding`), the classes the release forms
    (`partition`, the suppressed rows in its last class), the QI columns as written (`columns`, microaggregated
    ones included) and each microaggregated QI's information loss (`microaggregation`)."""

    recoding: Recoding
    partition: Partition
    columns: dict[str, CodedColumn]
    microaggregation: dict[str, dict]

    def released(self) -> np.ndarray:
        """Per class of `partition`, whether it is released (not the suppressed rows' class)."""
        released = np.ones(self.partition.count, dtype=bool)
        if self.recoding.suppressed.any():
            released[-1] = False
        return released


def refine(prepared: Prepared, node: Node, suppressed: np.ndarray) -> Refined | None:
    """Local recoding (`config.local_recoding`) and microaggregation (`config.microaggregate`) of the release
    at `node`; None when the run asks for neither (the release is then the node's, as always)."""
    config = prepared.config
    if not config.local_recoding and not config.microaggregate:
        return None
    recoding = (local_recoding if config.local_recoding else global_recoding_of)(prepared, node, suppressed)
    codes = released_codes(prepared, recoding)
    partition = release_classes(codes, recoding.suppressed)
    columns = {qi.name: CodedColumn(c, labels) for qi, (c, labels) in zip(prepared.encoded.qis, codes)}
    figures = {}
    by_name = {qi.name: qi for qi in prepared.encoded.qis}
    for name, function in config.microaggregate.items():
        columns[name], figures[name] = aggregate(by_name[name], function, partition.rows, recoding.suppressed)
    return Refined(recoding, partition, columns, figures)


def global_recoding_of(prepared: Prepared, node: Node, suppressed: np.ndarray) -> Recoding:
    """`global_recoding` with `local_recoding`'s signature."""
    return global_recoding(node, suppressed)
