"""The node evaluator: classes from a kernel, privacy models, suppression and information loss."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fitness import kernel
from fitness.encoding import EncodedTable
from fitness.metrics import aecs, discernibility, suppression_loss
from fitness.models import KAnonymity, PrivacyModel
from fitness.objective import Objective, Precision
from fitness.partition import Partition
from fitness.rollup import RollupCache
from fitness.supportmap import SupportMap
from lattice.node import Node, precision_loss

_NO_ROWS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Evaluation:
    """A node's evaluation. Classes, smallest class, DM and AECS count released (non-suppressed) classes.

    `loss` is the objective's value; `feasible` iff suppressed <= the suppression budget.
    """

    node: Node
    feasible: bool
    loss: float
    log: float
    los: float
    suppressed: int
    classes: int
    smallest_class: int
    dm: float
    aecs: float


class Runner(Protocol):
    """Where a batch of new nodes is computed: in this process (no runner), on local worker processes or
    threads, or on a Dask cluster (kgen/parallel.py). A runner holds no node cache: the evaluator owns it."""

    def evaluate_batch(self, evaluator: NodeEvaluator, nodes: list[Node]) -> list[Evaluation]:
        """`evaluator.compute_many(nodes)`, computed wherever the runner runs, in input order."""
        ...

    def close(self) -> None: ...


class NodeEvaluator:
    """Evaluates nodes of an encoded table under privacy models and a suppression limit t (a fraction).

    `kernel` is "fast" (integer keys) or "bitset" (support maps); both give identical evaluations.
    Evaluations are cached per node.
    """

    def __init__(self, table: EncodedTable, models: Sequence[PrivacyModel], suppression_limit: float = 0.0,
                 objective: Objective | None = None, kernel: str = "fast", runner: Runner | None = None) -> None:
        if kernel not in ("fast", "bitset"):
            raise ValueError(f"unknown kernel {kernel!r}")
        self.table = table
        self.models = tuple(models)
        self.suppression_limit = suppression_limit
        self.max_suppressed = math.floor(suppression_limit * table.n + 1e-9)
        self.objective = objective or Precision()
        self.kernel = kernel
        self.runner = runner
        # objectives that cost cells (NCP, Loss, entropy) must know which rows are suppressed
        self.objective_rows = bool(getattr(self.objective, "needs_rows", False))
        self.needs_rows = any(m.needs_rows for m in self.models) or self.objective_rows
        self._support: SupportMap | None = None
        self._cache: dict[Node, Evaluation] = {}
        # Plain k-anonymity needs class sizes only: the fast kernel then rolls class tables up from cached
        # more specific nodes, and the bitset kernel sets classes smaller than k aside as soon as they are.
        self.k_only = bool(self.models) and all(type(m) is KAnonymity for m in self.models)
        self.k_floor = max((m.k for m in self.models), default=1) if self.k_only else 1  # type: ignore[attr-defined]
        self._rollup = RollupCache(table)
        self._feasible: dict[Node, bool] = {}

    @property
    def monotone_feasibility(self) -> bool:
        return self.max_suppressed == 0 or all(m.monotone_with_suppression for m in self.models)

    @property
    def monotone_loss(self) -> bool:
        """The loss never decreases when a level rises among feasible nodes: always for a monotone objective;
        with suppression limit 0 also for one that is monotone among nodes suppressing nothing."""
        return bool(self.objective.monotone or (
            self.max_suppressed == 0 and getattr(self.objective, "monotone_without_suppression", False)))

    @property
    def support_map(self) -> SupportMap:
        if self._support is None:
            self._support = SupportMap.build(self.table)
        return self._support

    def partition(self, node: Sequence[int], with_rows: bool = False) -> Partition:
        if self.kernel == "bitset":
            return self.support_map.partition(node, with_rows)
        columns, cards = self.table.columns(node)
        return kernel.partition(columns, cards, self.table.n, with_rows)

    def released_and_suppressed(self, node: Node) -> tuple[np.ndarray, int, Partition | None, np.ndarray | None]:
        """The released class sizes and the suppressed row count of a node, with its partition and the mask of
        violating classes when a partition was built (with `needs_rows`, or for models other than plain
        k-anonymity), else None for both."""
        if self.k_only and not self.needs_rows:
            if self.kernel == "bitset":
                classes, small = self.support_map.classes(node, self.k_floor)
                return np.array([c.count() for c in classes], dtype=np.int64), small, None, None
            if self._rollup.active:
                sizes = self._rollup.classes(node).sizes
            else:
                sizes = kernel.class_sizes(*self.table.columns(node), self.table.n)
            small = sizes < self.k_floor
            return sizes[~small], int(sizes[small].sum()), None, None
        partition = self.partition(node, self.needs_rows)
        bad = self.violating(partition)
        return partition.sizes[~bad], int(partition.sizes[bad].sum()), partition, bad

    def violating(self, partition: Partition) -> np.ndarray:
        bad = np.zeros(partition.count, dtype=bool)
        for model in self.models:
            bad |= model.violating(partition, self.table)
        return bad

    def cached(self, node: Sequence[int]) -> Evaluation | None:
        """The node's evaluation if it was evaluated before, else None (nothing is computed)."""
        return self._cache.get(tuple(int(v) for v in node))

    def evaluate(self, node: Sequence[int]) -> Evaluation:
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Evaluations in input order: cached ones from the cache, the new ones computed in one batch (by the
        runner when there is one) and cached."""
        keys = [tuple(int(v) for v in n) for n in nodes]
        new = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if new:
            computed = self.runner.evaluate_batch(self, new) if self.runner is not None else self.compute_many(new)
            for key, e in zip(new, computed):
                self._cache[key] = e
        return [self._cache[k] for k in keys]

    def compute_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Compute evaluations without reading or writing the node cache (what a runner's worker runs)."""
        return [self.compute(n) for n in nodes]

    def compute(self, node: Sequence[int]) -> Evaluation:
        """Compute one node's evaluation (the node cache is neither read nor written)."""
        node = tuple(int(v) for v in node)
        released, suppressed, partition, bad = self.released_and_suppressed(node)
        n = self.table.n
        extra = {}
        if self.objective_rows:
            assert partition is not None and partition.rows is not None and bad is not None
            extra["suppressed_rows"] = np.flatnonzero(bad[partition.rows]) if suppressed else _NO_ROWS
        return Evaluation(
            node=node,
            feasible=suppressed <= self.max_suppressed,
            loss=float(self.objective(node, released, suppressed, self.table, **extra)),
            log=precision_loss(node, self.table.heights),
            los=suppression_loss(suppressed, n),
            suppressed=suppressed,
            classes=int(released.size),
            smallest_class=int(released.min()) if released.size else 0,
            dm=discernibility(released, suppressed, n),
            aecs=aecs(released, suppressed, n),
        )

    def clear_cache(self) -> None:
        """Forget every cached evaluation, so that a benchmark times each search from a cold cache."""
        self._cache.clear()
        self._feasible.clear()
        self._rollup = RollupCache(self.table)

    def feasible(self, node: Sequence[int]) -> bool:
        """Whether the node is feasible. With the bitset kernel and plain k-anonymity this stops refining as
        soon as the suppression budget is exceeded (no full evaluation)."""
        node = tuple(int(v) for v in node)
        cached = self._cache.get(node)
        if cached is not None:
            return cached.feasible
        if self.kernel == "bitset" and self.k_only and not self.needs_rows:
            known = self._feasible.get(node)
            if known is None:
                _, small = self.support_map.classes(node, self.k_floor, stop_above=self.max_suppressed)
                known = self._feasible[node] = small <= self.max_suppressed
            return known
        return self.evaluate(node).feasible

    def distinct_counts(self, node: Sequence[int]) -> tuple[int, ...]:
        """The number of distinct values of each QI at its level in `node`, over all rows (Datafly's rule).

        The codes of a level are dense over the values that occur, so this is each level's cardinality."""
        return tuple(int(q.cards[x]) for q, x in zip(self.table.qis, node))

    def suppressed_rows(self, node: Sequence[int]) -> np.ndarray:
        """Boolean mask of the rows this node suppresses."""
        partition = self.partition(node, with_rows=True)
        return self.violating(partition)[partition.rows]
