"""`PartitionedEvaluator`: the node evaluator protocol over row partitions held by Dask workers.

Why: a table larger than one machine's memory can still be searched if no process needs all of its rows.
Per batch of nodes (a GA population, an OLA level), one task per partition maps its rows (or a cached class
table, by roll-up) to the batch's class counts; a few reducers, each owning a share of the class keys,
return scalars per node; the client merges scalars. It answers exactly what `fitness.evaluator.
NodeEvaluator` answers (the same `Evaluation`, field for field, for k-anonymity with the LOG, DM or AECS
objective), owns its node cache, and exposes the same `monotone_*` properties, so every search runs on it
unchanged and, for a seed, takes the same steps.

Batches are cut into groups whose map output is bounded (`batch_bytes` per partition, estimated from each
node's key span), so low nodes, whose classes are almost as many as the rows, are shipped a few at a time.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from fitness.evaluator import Evaluation
from fitness.metrics import suppressed_fraction
from fitness.models import PrivacyModel
from fitness.objective import Objective, Precision
from kgen.runners import parallel
from kgen.runners.partitioned import keys as keying
from kgen.runners.partitioned.domain import Domain
from kgen.runners.partitioned.merge import Figures, reduce_batch, size_counts, small_keys
from kgen.runners.partitioned.part import Plan, map_batch
from kgen.status import ClusterError
from lattice.errors import InputError
from lattice.node import Node, precision_loss

DENSE_SPAN = 1 << 20  # key spans up to this are cut over reducers by range and may be counted densely
PAIR_BYTES = 12


def unsupported(models: Sequence[PrivacyModel], objective: Objective) -> None:
    """InputError (one line) for a privacy model or metric the partitioned evaluator cannot compute from its
    per-node scalars."""
    for model in models:  # the reducers count rows per class: a model must be a class-size rule, nothing more
        rule = model.count_rule
        if rule is None or rule.column is not None:
            raise InputError(f"{model.name} is not supported with --partitioned (k-anonymity only)")
    if not objective.from_summary:
        raise InputError(f"metric {objective.name!r} is not supported with --partitioned; choose log, dm or aecs")


class PartitionedEvaluator:
    """Evaluates nodes over partitions on a Dask cluster (see the module docstring).

    `parts`: futures of `kgen.runners.partitioned.part.Part`, one per partition, and `workers[p]` the address of the
    worker holding part p (its tasks are pinned there, so its roll-up cache persists). `reducers`: how many
    reduce tasks share a batch's keys (default: one per worker).
    """

    def __init__(self, client: object, parts: Sequence[object], workers: Sequence[str], domain: Domain,
                 models: Sequence[PrivacyModel], suppression_limit: float = 0.0, objective: Objective | None = None,
                 reducers: int | None = None, batch_bytes: int = 64 << 20, part_rows: int | None = None) -> None:
        self.objective = objective or Precision()
        unsupported(models, self.objective)
        if not models:
            raise InputError("no privacy model given")
        self.client = client
        self.parts = list(parts)
        self.workers = list(workers)
        self.domain = domain
        self.models = tuple(models)
        self.k = max(m.count_rule.min_rows for m in models)  # type: ignore[union-attr] (checked above)
        self.suppression_limit = suppression_limit
        self.n = domain.n
        self.max_suppressed = math.floor(suppression_limit * self.n + 1e-9)
        self.heights = domain.heights
        # what an objective's `summary_loss` reads of a table: its row count and hierarchy heights
        self.shape = SimpleNamespace(n=self.n, heights=self.heights)
        self.reducers = reducers or max(1, len(set(self.workers)))
        self.batch_bytes = batch_bytes
        self.part_rows = part_rows or self.n
        self.runner = None
        self._cache: dict[Node, Evaluation] = {}
        self.batches = 0
        self.tasks = 0

    # --- the protocol of fitness.evaluator.NodeEvaluator -----------------------------------------------
    @property
    def monotone_feasibility(self) -> bool:
        return self.max_suppressed == 0 or all(m.monotone_with_suppression for m in self.models)

    @property
    def monotone_loss(self) -> bool:
        return bool(self.objective.monotone or (
            self.max_suppressed == 0 and getattr(self.objective, "monotone_without_suppression", False)))

    def cached(self, node: Sequence[int]) -> Evaluation | None:
        return self._cache.get(tuple(int(v) for v in node))

    def evaluate(self, node: Sequence[int]) -> Evaluation:
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        keys = [tuple(int(v) for v in n) for n in nodes]
        new = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if new:
            for key, e in zip(new, self.compute_many(new)):
                self._cache[key] = e
        return [self._cache[k] for k in keys]

    def feasible(self, node: Sequence[int]) -> bool:
        return self.evaluate(node).feasible

    def distinct_counts(self, node: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.domain.cards(node))

    def clear_cache(self) -> None:
        self._cache.clear()

    # --- the batch ----------------------------------------------------------------------------------
    def plan(self, node: Node) -> Plan:
        lay = keying.layout(self.domain.cards(node))
        span = lay.span
        ranges = tuple(keying.bounds(span, self.reducers)) if lay.width == 1 and span <= DENSE_SPAN else None
        return Plan(node, lay, ranges)

    def groups(self, plans: list[Plan]) -> list[list[Plan]]:
        """Consecutive nodes whose map output per partition stays within `batch_bytes` (bounded by each
        node's key span and the partition's rows)."""
        out: list[list[Plan]] = []
        used = 0
        for plan in plans:
            size = min(plan.layout.span, self.part_rows) * PAIR_BYTES * max(plan.layout.width, 1)
            if out and used + size <= self.batch_bytes:
                out[-1].append(plan)
                used += size
            else:
                out.append([plan])
                used = size
        return out

    def _submit_map(self, plans: list[Plan]) -> list[list[object]]:
        """Map tasks (pinned to each part's worker) and their per-reducer pieces: pieces[p][r]."""
        pieces = []
        for part, worker in zip(self.parts, self.workers):
            mapped = self.client.submit(map_batch, part, plans, self.reducers, workers=[worker],  # type: ignore[attr-defined]
                                        allow_other_workers=False, pure=False)
            pieces.append([self.client.submit(operator.getitem, mapped, r, workers=[worker],  # type: ignore[attr-defined]
                                              allow_other_workers=False, pure=False) for r in range(self.reducers)])
        self.tasks += len(self.parts) * (1 + self.reducers)
        return pieces

    def _gather(self, futures: list[object]) -> list:
        try:
            return parallel.gather_watched(self.client, futures, parallel.default_workers_timeout(),
                                           self._no_workers, lambda: self._lost("the connection closed"))
        except (InputError, ClusterError):
            raise
        except (OSError, TimeoutError) as error:
            raise self._lost(str(error)) from None
        except Exception as error:  # noqa: BLE001 (a worker killed or a task cancelled: one line, exit 6)
            if type(error).__name__ in ("KilledWorker", "CancelledError", "FutureCancelledError", "CommClosedError"):
                raise self._lost(type(error).__name__) from None
            raise

    @staticmethod
    def _no_workers() -> ClusterError:
        return ClusterError("the Dask cluster lost all its workers during partitioned evaluation and had none for "
                            f"{parallel.default_workers_timeout():g} s; start workers and run again")

    @staticmethod
    def _lost(why: str) -> ClusterError:
        return ClusterError(f"the Dask cluster was lost during partitioned evaluation: {why}")

    def figures(self, nodes: Sequence[Node]) -> list[Figures]:
        plans = [self.plan(tuple(node)) for node in nodes]
        out: list[Figures] = []
        for group in self.groups(plans):
            pieces = self._submit_map(group)
            reduced = [self.client.submit(reduce_batch, group, r, self.k, *[p[r] for p in pieces],  # type: ignore[attr-defined]
                                          pure=False) for r in range(self.reducers)]
            self.tasks += self.reducers
            merged = [Figures()] * len(group)
            for per_node in self._gather(reduced):
                merged = [a.merge(b) for a, b in zip(merged, per_node)]
            out.extend(merged)
            del pieces, reduced
        self.batches += 1
        return out

    def compute_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Compute evaluations without touching the node cache: one map/reduce round per group of nodes."""
        nodes = [tuple(int(v) for v in n) for n in nodes]
        return [self.evaluation(node, f) for node, f in zip(nodes, self.figures(nodes))]

    def compute(self, node: Sequence[int]) -> Evaluation:
        return self.compute_many([node])[0]

    def evaluation(self, node: Node, f: Figures) -> Evaluation:
        """The Evaluation NodeEvaluator would give, from the merged scalars (same float operations)."""
        n, suppressed = self.n, f.suppressed
        dm = float(f.squares) + suppressed * n
        log = precision_loss(node, self.heights)
        loss = self.objective.summary_loss(node, f.classes, suppressed, dm, self.shape)  # type: ignore[arg-type]
        return Evaluation(node=node, feasible=suppressed <= self.max_suppressed, loss=float(loss), log=log,
                          los=suppressed_fraction(suppressed, n), suppressed=suppressed, classes=f.classes,
                          smallest_class=f.smallest, dm=dm, aecs=(n - suppressed) / f.classes if f.classes else 0.0)

    def class_sizes(self, node: Sequence[int]) -> np.ndarray:
        """The sizes of the node's released classes (one map/reduce round; each reducer sends its histogram,
        so what crosses the network is bounded by the distinct sizes, not the classes)."""
        plan = self.plan(tuple(int(v) for v in node))
        pieces = self._submit_map([plan])
        counted = self._gather([self.client.submit(size_counts, plan, r, self.k, *[p[r] for p in pieces],  # type: ignore[attr-defined]
                                                   pure=False) for r in range(self.reducers)])
        total: dict[int, int] = {}
        for histogram in counted:
            for size, classes in histogram.items():
                total[size] = total.get(size, 0) + classes
        sizes = sorted(total)
        return np.repeat(np.array(sizes, dtype=np.int64), [total[s] for s in sizes])

    def suppressed_keys(self, node: Sequence[int]) -> tuple[Plan, object]:
        """The keys of the node's classes smaller than k, as one future per reducer (they stay on the
        cluster: the release tasks fetch them). Bounded by the suppressed rows (at most t * n)."""
        plan = self.plan(tuple(int(v) for v in node))
        pieces = self._submit_map([plan])
        keys = [self.client.submit(small_keys, plan, r, self.k, *[p[r] for p in pieces], pure=False)  # type: ignore[attr-defined]
                for r in range(self.reducers)]
        return plan, keys
