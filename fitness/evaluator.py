"""The node evaluator: classes from a kernel, privacy models, suppression and information loss.

`NodeEvaluator` is the one owner of evaluation state. What it remembers between calls lives in one
`EvaluationState` (`evaluator.state`): the node -> Evaluation cache, the feasibility verdicts of the bitset
kernel's early stop, and the roll-up's class tables; `clear_cache()` forgets all of it at once. Figures that
depend on the table alone (support map, t-closeness reference, cell costs) are the table's
(`EncodedTable.derived`). Parallel backends are `Runner`s that compute new nodes and hold no state.

The evaluator never tests a model's type: it asks the models (`fitness.models.PrivacyModel`) whether they
read only class sizes (`needs_rows`) and how small a class they allow (`min_class_size`), and the objective
(`fitness.objective.Objective`) whether it needs the suppressed rows and how it is monotone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fitness import kernel
from fitness.encoding import EncodedTable
from fitness.metrics import aecs, discernibility, suppressed_fraction
from fitness.models import PrivacyModel, in_company
from fitness.objective import Objective, Precision
from fitness.partition import Partition
from fitness.rollup import RollupCache
from fitness.supportmap import SupportMap
from lattice.node import Node, precision_loss

_NO_ROWS = np.zeros(0, dtype=np.int64)
KERNELS = ("fast", "bitset")  # the class-counting kernels: `fast` (numpy keys) or `bitset` (the paper's support maps)


@dataclass(frozen=True)
class Evaluation:
    """A node's evaluation. Classes, smallest class, DM and AECS count released (non-suppressed) classes.

    Parameters
    ----------
    node : tuple of int
        The node (one level per QI).
    feasible : bool
        Whether it suppresses at most the suppression budget (floor(t n) rows).
    loss : float
        The objective's value: what the search minimizes (LOG unless another `--metric` was chosen). This is
        the only meaning of `loss` on an evaluation; it equals `log` when the objective is LOG. The metric
        named "loss" (ARX's generalized-interval loss) is `loss` only when it is the objective.
    log : float
        LOG, the paper's precision figure (mean of x_i / h_i), whatever the objective.
    los : float
        LOS, the fraction of rows suppressed, whatever the objective.
    suppressed : int
        Rows suppressed (in classes that break a privacy model).
    classes : int
        Released classes.
    smallest_class : int
        Rows in the smallest released class (0 when nothing is released).
    dm : float
        Discernibility: sum of squared released class sizes plus suppressed * n.
    aecs : float
        Average released class size, (n - suppressed) / classes (0 when nothing is released).
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


@dataclass(eq=False)
class EvaluationState:
    """Everything a `NodeEvaluator` remembers between calls; `clear()` forgets all of it.

    Parameters
    ----------
    class_tables : RollupCache
        The fast kernel's class tables of recently computed nodes (bounded in bytes), from which more general
        nodes are rolled up.
    evaluations : dict
        The node cache: node -> Evaluation, filled by `evaluate_many` only (never by `compute_many`).
    verdicts : dict
        node -> feasible, for nodes whose feasibility the bitset kernel decided by stopping early
        (`NodeEvaluator.feasible`) without a full evaluation; an evaluation, once made, takes precedence.
    """

    class_tables: RollupCache
    evaluations: dict[Node, Evaluation] = field(default_factory=dict)
    verdicts: dict[Node, bool] = field(default_factory=dict)

    def clear(self) -> None:
        self.evaluations.clear()
        self.verdicts.clear()
        self.class_tables.clear()


class NodeEvaluator:
    """Evaluates nodes of an encoded table under privacy models, a suppression limit and an objective.

    Parameters
    ----------
    table : EncodedTable
        The rows as codes per QI and level (and the sensitive columns).
    models : sequence of PrivacyModel
        The privacy models; a class that breaks any of them is suppressed.
    suppression_limit : float
        t, the largest fraction of rows that may be suppressed (feasible iff suppressed <= floor(t n)).
    objective : Objective, optional
        The loss to minimize (default LOG, `Precision`).
    kernel : str
        "fast" (integer keys, with roll-up) or "bitset" (support maps); both give identical evaluations.
    runner : Runner, optional
        Where new nodes are computed (default: in this process).

    Attributes
    ----------
    state : EvaluationState
        The one home of what the evaluator remembers (cache, verdicts, class tables).
    max_suppressed : int
        floor(t n), the suppression budget in rows.
    floor : int
        The largest `min_class_size` of the models: smaller classes break some model.
    sizes_only : bool
        Every model and the objective read class sizes alone (no rows): sizes may come from the roll-up or
        the bitset kernel's early stop.
    needs_rows : bool
        The partition must map rows to classes (a model or the objective reads rows).
    """

    def __init__(self, table: EncodedTable, models: Sequence[PrivacyModel], suppression_limit: float = 0.0,
                 objective: Objective | None = None, kernel: str = "fast", runner: Runner | None = None) -> None:
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}")
        self.table = table
        self.models = tuple(in_company(models))  # a model that depends on the others is told them
        # the per-class models, then those that judge the released classes together (asked last: `violating`)
        self.per_class = tuple(m for m in self.models if not getattr(m, "sample_based", False))
        self.sample_based = tuple(m for m in self.models if getattr(m, "sample_based", False))
        self.suppression_limit = suppression_limit
        self.max_suppressed = math.floor(suppression_limit * table.n + 1e-9)
        self.objective: Objective = objective or Precision()
        self.kernel = kernel
        self.runner = runner
        self.needs_rows = any(m.needs_rows for m in self.models) or self.objective.needs_rows
        # a model that compares with a population (delta-presence, exact k-map) reads its counts per class
        self.needs_population = any(getattr(m, "needs_population", False) for m in self.models)
        if self.needs_population and table.population is None:
            raise ValueError("a population model needs the population's rows (EncodedTable.population)")
        self.sizes_only = not self.needs_rows
        self.floor = max((m.min_class_size for m in self.models), default=1)
        self.state = EvaluationState(RollupCache(table))

    @property
    def monotone_feasibility(self) -> bool:
        """A feasible node's generalizations are feasible: with suppression when every model says so, and
        without (limit 0) when every model is monotone."""
        if all(m.monotone_with_suppression for m in self.models):
            return True
        return self.max_suppressed == 0 and all(m.monotone for m in self.models)

    @property
    def monotone_loss(self) -> bool:
        """The loss never decreases when a level rises among feasible nodes: always for a monotone objective;
        with suppression limit 0 also for one that is monotone among nodes suppressing nothing."""
        return bool(self.objective.monotone or (self.max_suppressed == 0
                                                and self.objective.monotone_without_suppression))

    @property
    def support_map(self) -> SupportMap:
        """The bitset kernel's support map, built on first use and kept by the table."""
        return self.table.derived("support map", lambda: SupportMap.build(self.table))

    def partition(self, node: Sequence[int], with_rows: bool = False) -> Partition:
        """The node's classes from the evaluator's kernel (no model applied, nothing cached).

        Parameters
        ----------
        node : sequence of int
            The node.
        with_rows : bool
            Also map each row to its class (`Partition.rows`).

        Returns
        -------
        Partition
            Every class of the node, suppressed or not (with the population's counts per class when a model
            needs them: then always the fast kernel, which counts both memberships on one key).
        """
        if self.needs_population:
            population = self.table.population
            assert population is not None
            columns, cards = self.table.columns(node)
            found = kernel.partition_with_population(columns, population.columns(node)[0], cards, self.table.n,
                                                     population.n)
        elif self.kernel == "bitset":
            found = self.support_map.partition(node, with_rows)
        else:
            columns, cards = self.table.columns(node)
            found = kernel.partition(columns, cards, self.table.n, with_rows)
        ties = getattr(self.objective, "class_ties", None)
        if ties is None or not self.sample_based or found.rows is None:
            return found
        return dataclasses.replace(found, ties=ties(node, self.table, found))

    def class_sizes(self, node: Node) -> tuple[np.ndarray, int]:
        """For `sizes_only`: the sizes of the node's classes of at least `floor` rows, and the rows in smaller
        classes (the bitset kernel sets those aside as it goes; the fast kernel counts every class, rolled up
        from a cached more specific node when that pays)."""
        if self.kernel == "bitset":
            classes, small = self.support_map.classes(node, self.floor)
            return np.array([c.count() for c in classes], dtype=np.int64), small
        tables = self.state.class_tables
        if tables.active:
            return tables.classes(node).sizes, 0
        return kernel.class_sizes(*self.table.columns(node), self.table.n), 0

    def released_and_suppressed(self, node: Node) -> tuple[np.ndarray, int, Partition | None, np.ndarray | None]:
        """The released class sizes and the suppressed row count of a node, with its partition and the mask of
        violating classes when a partition with rows was built (`needs_rows`), else None for both."""
        if self.sizes_only:
            sizes, small = self.class_sizes(node)
            bad = self.violating(Partition(sizes))
            return sizes[~bad], small + int(sizes[bad].sum()), None, None
        partition = self.partition(node, True)
        bad = self.violating(partition)
        return partition.sizes[~bad], int(partition.sizes[bad].sum()), partition, bad

    def violating(self, partition: Partition, suppressed: np.ndarray | None = None) -> np.ndarray:
        """Per class, whether it breaks any of the models.

        Models that judge the released classes together (`sample_based`, e.g. an average-risk threshold) are
        asked last, with the classes the per-class models suppress: they decide what remains to suppress
        (`enforce`), as ARX applies its sample-based criteria after the class-based ones. `suppressed`: classes
        suppressed already, whatever the models say (a locally recoded release's suppressed rows), counted as
        breaking and never as released."""
        bad = np.zeros(partition.count, dtype=bool) if suppressed is None else suppressed.copy()
        for model in self.per_class:
            bad |= model.violating(partition, self.table)
        for model in self.sample_based:
            bad |= model.enforce(partition, self.table, bad, self.max_suppressed)  # type: ignore[attr-defined]
        return bad

    def blank_copy(self) -> NodeEvaluator:
        """A CPU evaluator of the same table, models, suppression limit, objective and kernel, with nothing
        computed and no runner: what a parallel runner ships to its workers (a DeviceEvaluator's copy is a CPU
        evaluator too)."""
        return NodeEvaluator(self.table, self.models, self.suppression_limit, self.objective, self.kernel)

    def describe(self) -> dict:
        """What evaluates the nodes, for the report's top-level `evaluator` key: here the CPU and its kernel
        (a `DeviceEvaluator` adds its backend, device index, fallback and counters). A model that counts a
        population runs the fast kernel's joint count whatever kernel was asked for, and says so."""
        if self.needs_population and self.kernel != "fast":
            return {"device": "cpu", "kernel": "fast", "asked_kernel": self.kernel, "on_device": False,
                    "note": "a population model (delta-presence, k-map with a population) counts on the fast "
                            "kernel's joint partition"}
        return {"device": "cpu", "kernel": self.kernel, "on_device": False}

    def worker_template(self) -> NodeEvaluator:
        """What a parallel runner ships to its workers: an evaluator of the same problem with nothing computed,
        from which each worker makes its own with `for_worker` (here a CPU evaluator; a `DeviceEvaluator`
        ships a device evaluator, so that workers evaluate on GPUs)."""
        return self.blank_copy()

    def for_worker(self, worker: int) -> NodeEvaluator:
        """The evaluator worker number `worker` (0, 1, ...) computes with, made from a `worker_template`
        (here a fresh CPU evaluator; a `DeviceEvaluator` picks the worker's GPU)."""
        return self.blank_copy()

    def cached(self, node: Sequence[int]) -> Evaluation | None:
        """The node's evaluation if it was evaluated before, else None (nothing is computed).

        Parameters
        ----------
        node : sequence of int
            The node.

        Returns
        -------
        Evaluation or None
            From the node cache (`state.evaluations`).
        """
        return self.state.evaluations.get(tuple(int(v) for v in node))

    def evaluate(self, node: Sequence[int]) -> Evaluation:
        """The node's evaluation (from the cache, else computed and cached)."""
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Evaluate nodes: cached ones from the cache, the new ones computed in one batch (by the runner when
        there is one) and cached.

        Parameters
        ----------
        nodes : sequence of sequences of int
            The nodes (repeats allowed; each distinct new node is computed once).

        Returns
        -------
        list of Evaluation
            One per node, in input order.
        """
        cache = self.state.evaluations
        keys = [tuple(int(v) for v in n) for n in nodes]
        new = list(dict.fromkeys(k for k in keys if k not in cache))
        if new:
            computed = self.runner.evaluate_batch(self, new) if self.runner is not None else self.compute_many(new)
            for key, e in zip(new, computed):
                cache[key] = e
        return [cache[k] for k in keys]

    def compute_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Compute evaluations without reading or writing the node cache (what a runner's worker runs)."""
        return [self.compute(n) for n in nodes]

    def compute(self, node: Sequence[int]) -> Evaluation:
        """Compute one node's evaluation (the node cache is neither read nor written)."""
        node = tuple(int(v) for v in node)
        released, suppressed, partition, bad = self.released_and_suppressed(node)
        n = self.table.n
        extra = {}
        if self.objective.needs_rows:
            assert partition is not None and partition.rows is not None and bad is not None
            extra["suppressed_rows"] = np.flatnonzero(bad[partition.rows]) if suppressed else _NO_ROWS
        return Evaluation(
            node=node,
            feasible=suppressed <= self.max_suppressed,
            loss=float(self.objective(node, released, suppressed, self.table, **extra)),
            log=precision_loss(node, self.table.heights),
            los=suppressed_fraction(suppressed, n),
            suppressed=suppressed,
            classes=int(released.size),
            smallest_class=int(released.min()) if released.size else 0,
            dm=discernibility(released, suppressed, n),
            aecs=aecs(released, suppressed, n),
        )

    def clear_cache(self) -> None:
        """Forget everything evaluated (`state`), so that a benchmark times each search from a cold cache."""
        self.state.clear()

    def feasible(self, node: Sequence[int]) -> bool:
        """Whether the node is feasible.

        With the bitset kernel and `sizes_only`, refinement stops as soon as the classes set aside (smaller than
        `floor`) exceed the suppression budget, and the verdict is kept in `state.verdicts` (no evaluation is
        cached); otherwise the node is evaluated.

        Parameters
        ----------
        node : sequence of int
            The node.

        Returns
        -------
        bool
            Whether it suppresses at most `max_suppressed` rows.
        """
        node = tuple(int(v) for v in node)
        cached = self.state.evaluations.get(node)
        if cached is not None:
            return cached.feasible
        if self.kernel == "bitset" and self.sizes_only:
            known = self.state.verdicts.get(node)
            if known is None:
                classes, small = self.support_map.classes(node, self.floor, stop_above=self.max_suppressed)
                if small <= self.max_suppressed:  # refinement ran to its end: the classes are complete
                    sizes = np.array([c.count() for c in classes], dtype=np.int64)
                    small += int(sizes[self.violating(Partition(sizes))].sum())
                known = self.state.verdicts[node] = small <= self.max_suppressed
            return known
        return self.evaluate(node).feasible

    def distinct_counts(self, node: Sequence[int]) -> tuple[int, ...]:
        """The number of distinct values of each QI at its level in `node`, over all rows (Datafly's rule).

        The codes of a level are dense over the values that occur, so this is each level's cardinality."""
        return tuple(int(q.cards[x]) for q, x in zip(self.table.qis, node))

    def suppressed_rows(self, node: Sequence[int]) -> np.ndarray:
        """The rows this node suppresses (in classes that break a model).

        Parameters
        ----------
        node : sequence of int
            The node.

        Returns
        -------
        np.ndarray
            Boolean mask over the n rows.
        """
        partition = self.partition(node, with_rows=True)
        return self.violating(partition)[partition.rows]
