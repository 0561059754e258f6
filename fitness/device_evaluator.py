"""A node evaluator that keeps the table on an array device (a GPU through CuPy, or numpy for tests).

Why: a node's evaluation is gather, fold, sort, count, sum: what a GPU does best, and a search (the KGen GA
first) asks for a whole population at once. `DeviceEvaluator` answers `evaluate_many` with one pass of the
namespace kernel (`fitness.xp_kernel`) per new node and a single device-to-host copy of a small
(nodes x 4) array per batch, then builds the same `Evaluation`s as `NodeEvaluator`, field for field.

It is a `NodeEvaluator` (same constructor arguments plus `device` and `device_index`), so every search,
`kgen.run` and the report code use it unchanged; what it does not evaluate on the device it inherits:

- on the device: the privacy models that are nothing but counts (their `count_rule`: k-anonymity and
  distinct l-diversity) or a per-class measure and a bound (their `measure_rule`: entropy and recursive
  l-diversity, equal and ordered t-closeness); the objectives that follow from a summary of the classes
  (`from_summary`: LOG, DM and AECS, from the per-node figures through `Objective.summary_loss`) and those
  that sum a cost per cell (an objective with `costs(table)`: NCP, Loss, non-uniform entropy, from one
  float per node, the suppressed cells' extra cost);
- on the CPU (the inherited fast kernel, per batch): a model with neither rule, or an objective with
  neither. Their cost is exactly the CPU evaluator's; the device copy of the table is then not even made.
  `on_device` and `fallback_reason` say which path runs. Nothing here tests a model's or an objective's
  type: it asks them.

`device`: "cpu" is the plain `NodeEvaluator` (see `make_evaluator`); "gpu" runs the kernel on CuPy; "array"
runs the very same kernel on numpy, so CI exercises the GPU code path without a GPU. `device_index` picks
the GPU (`pick_device`: round-robin over the visible devices, one per worker, `worker_copy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fitness import xp_kernel
from fitness.encoding import EncodedTable
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.metrics import suppressed_fraction
from fitness.models import PrivacyModel
from fitness.objective import CellCosts, Objective
from lattice.errors import InputError
from lattice.node import Node, precision_loss

DEVICES = ("cpu", "gpu", "array")
GPU_EXTRA = 'pip install "kgen[gpu]"'


def backend_for(device: str, device_index: int = 0) -> xp_kernel.Backend:
    """The array backend of a device name on device `device_index`; InputError (one line, exit 2) for an
    unknown name, a missing CuPy, or no usable GPU."""
    if device == "array":
        return xp_kernel.NUMPY.on_device(device_index) if device_index else xp_kernel.NUMPY
    if device != "gpu":
        raise InputError(f"unknown device {device!r}; choose cpu or gpu")
    try:
        return xp_kernel.cupy_backend(device_index)
    except ImportError:
        raise InputError(f"--device gpu needs CuPy, which is not installed: {GPU_EXTRA} (CUDA 12)") from None
    except RuntimeError as error:
        raise InputError(f"--device gpu: no usable GPU: {error}") from None


def visible_devices(device: str) -> int:
    """How many devices of a kind this process sees: CuPy's CUDA device count for "gpu" (0 without CuPy or a
    driver), 1 for "array" (numpy: one host)."""
    if device != "gpu":
        return 1
    try:
        return xp_kernel.cupy_device_count()
    except (ImportError, RuntimeError):
        return 0


def pick_device(worker: int, device_count: int) -> int:
    """The device of worker number `worker` (0, 1, ...): round-robin over `device_count` visible devices,
    so that `--jobs` workers or Dask workers on a machine with several GPUs each use their own (and share
    them evenly when there are more workers than GPUs)."""
    if device_count < 1:
        raise InputError("--device gpu: no GPU is visible to this worker")
    if worker < 0:
        raise ValueError(f"worker numbers start at 0, got {worker}")
    return worker % device_count


def device_spec(models: Sequence[PrivacyModel]) -> xp_kernel.ModelSpec | None:
    """The kernel's view of the models, or None when one of them has neither a `count_rule` nor a
    `measure_rule` (the device cannot know what it checks).

    The kernel's k is the largest `min_class_size` (a class below it breaks some model; for distinct
    l-diversity that is l, which its distinct count would reject anyway); each count rule on a column adds
    its (column, least distinct values) pair, each measure rule itself.
    """
    distinct, measures = [], []
    for model in models:
        rule = getattr(model, "count_rule", None)
        measure = getattr(model, "measure_rule", None)
        if rule is None and measure is None:
            return None
        if rule is not None and rule.column is not None:
            distinct.append((rule.column, rule.min_distinct))
        elif measure is not None and rule is None:
            measures.append(measure)
    k = max((m.min_class_size for m in models), default=1)
    return xp_kernel.ModelSpec(k, tuple(distinct), tuple(measures))


class DeviceEvaluator(NodeEvaluator):
    """`NodeEvaluator` whose `evaluate_many` runs on an array device, one host copy per batch.

    Parameters
    ----------
    table, models, suppression_limit, objective, kernel
        As `NodeEvaluator` (`kernel` is the CPU kernel used for the fallback and the release's checks).
    device
        "gpu" (CuPy) or "array" (numpy: the same code, for tests and CI).
    chunk_rows
        Rows per column copied to the device at a time.
    backend
        An explicit `xp_kernel.Backend` (tests: numpy forced onto the sort path); default from `device`.
    device_index
        Which device of the kind evaluates (CuPy's device id; `pick_device` chooses it per worker).

    Attributes
    ----------
    on_device : bool
        Whether node evaluations run on the device (else every evaluation is the CPU evaluator's).
    fallback_reason : str or None
        Why they do not.
    stats : dict
        batches, device_nodes, host_nodes, host_copies (device-to-host copies of batch results).
    """

    def __init__(self, table: EncodedTable, models: Sequence[PrivacyModel], suppression_limit: float = 0.0,
                 objective: Objective | None = None, kernel: str = "fast", device: str = "array",
                 chunk_rows: int = 1 << 22, backend: xp_kernel.Backend | None = None,
                 device_index: int = 0) -> None:
        super().__init__(table, models, suppression_limit, objective, kernel)
        self.device = device
        self.device_index = device_index
        self.chunk_rows = chunk_rows
        self.backend = backend if backend is not None else backend_for(device, device_index)
        self.spec = device_spec(self.models)
        costs = getattr(self.objective, "costs", None)
        self.costs: CellCosts | None = costs(table) if costs is not None and not self.objective.from_summary else None
        self.fallback_reason: str | None = None
        if self.spec is None:
            names = sorted({m.name for m in self.models if device_spec([m]) is None})
            self.fallback_reason = f"privacy model(s) {', '.join(names)} evaluated on the CPU"
        elif not self.objective.from_summary and self.costs is None:
            self.fallback_reason = f"metric {self.objective.name} evaluated on the CPU"
        self.on_device = self.fallback_reason is None
        self._device_table: xp_kernel.DeviceTable | None = None
        self.stats = {"batches": 0, "device_nodes": 0, "host_nodes": 0, "host_copies": 0}

    @property
    def device_table(self) -> xp_kernel.DeviceTable:
        """The table on the device, uploaded on first use."""
        if self._device_table is None:
            assert self.spec is not None
            with self.backend.activate():
                self._device_table = xp_kernel.DeviceTable.from_encoded(self.table, self.backend, self.chunk_rows,
                                                                        self.spec.columns, self.costs)
        return self._device_table

    def adopt(self, table: xp_kernel.DeviceTable) -> None:
        """Evaluate on a table already on the device (uploaded by another evaluator of the same encoded table)
        instead of uploading one: what a benchmark or a runner does to avoid one upload per evaluator. The
        table must hold every sensitive column the models read and, with a cell-cost metric, cost tables
        built for this very metric (`DeviceTable.from_encoded(..., costs=evaluator.costs)`); ValueError when it
        visibly cannot serve (other n, other backend, a column or the cost tables missing)."""
        assert self.spec is not None, "a CPU fallback evaluator has no device table"
        missing = [c for c in self.spec.columns if c not in table.sensitive]
        if table.n != self.table.n or table.backend.name != self.backend.name or missing:
            raise ValueError(f"this device table cannot serve the evaluator (n {table.n}, backend "
                             f"{table.backend.name}, missing columns {missing})")
        if (table.costs is None) != (self.costs is None):
            raise ValueError("the device table's cost tables do not match the evaluator's metric")
        self._device_table = table

    def __getstate__(self) -> dict[str, Any]:  # device arrays stay behind: a copy uploads its own
        state = self.__dict__.copy()
        state["_device_table"] = None
        state["backend"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.backend = backend_for(self.device, self.device_index)

    def worker_copy(self, worker: int, device_count: int | None = None) -> DeviceEvaluator:
        """A device evaluator of the same table, models, limit, objective and kernel, with nothing computed,
        on the device of worker number `worker` (`pick_device` over `device_count` devices, by default those
        this process sees): what a parallel runner gives each of its workers so that each uses its own GPU."""
        count = visible_devices(self.device) if device_count is None else device_count
        index = pick_device(worker, count)
        backend = self.backend.on_device(index) if self.backend is not None else None
        return DeviceEvaluator(self.table, self.models, self.suppression_limit, self.objective, self.kernel,
                               self.device, self.chunk_rows, backend, index)

    def worker_template(self) -> DeviceEvaluator:
        """A device evaluator of the same problem with nothing computed and no device table (cheap to pickle:
        workers upload their own copy), for a runner to ship; each worker calls `for_worker`."""
        return DeviceEvaluator(self.table, self.models, self.suppression_limit, self.objective, self.kernel,
                               self.device, self.chunk_rows, self.backend, self.device_index)

    def for_worker(self, worker: int) -> DeviceEvaluator:
        """`worker_copy(worker)` over the devices this process sees."""
        return self.worker_copy(worker)

    def compute_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Evaluations in input order, the nodes sent to the device as one batch (the evaluator's cache keeps
        them)."""
        keys = [tuple(int(v) for v in node) for node in nodes]
        self.stats["batches"] += 1
        if self.on_device:
            return self._evaluate_on_device(keys)
        self.stats["host_nodes"] += len(keys)
        return super().compute_many(keys)

    def _evaluate_on_device(self, nodes: list[Node]) -> list[Evaluation]:
        assert self.spec is not None
        table = self.device_table
        with self.backend.activate():
            figures = xp_kernel.batch_stats(table, nodes, self.spec)
        self.stats["host_copies"] += 1
        self.stats["device_nodes"] += len(nodes)
        extra = xp_kernel.corrections(figures).tolist()
        return [self._evaluation(node, *row[:4], correction)
                for node, row, correction in zip(nodes, figures.tolist(), extra, strict=True)]

    def _evaluation(self, node: Node, classes: int, suppressed: int, smallest: int, squares: int,
                    correction: float) -> Evaluation:
        """The `Evaluation` of a node from its device figures, field for field as `NodeEvaluator.compute`."""
        n = self.table.n
        # as fitness.metrics.discernibility: the float64 sum of the squares plus |S| n (equal whenever the
        # squares sum below 2**53, i.e. n < 9.4e7; past that this one is the exactly rounded value)
        dm = float(np.float64(squares) + suppressed * n)
        if self.costs is not None:
            loss = self.costs.with_correction(node, correction)
        else:
            loss = float(self.objective.summary_loss(node, classes, suppressed, dm, self.table))
        return Evaluation(
            node=node,
            feasible=suppressed <= self.max_suppressed,
            loss=loss,
            log=precision_loss(node, self.table.heights),
            los=suppressed_fraction(suppressed, n),
            suppressed=int(suppressed),
            classes=int(classes),
            smallest_class=int(smallest) if classes else 0,
            dm=dm,
            aecs=(n - suppressed) / classes if classes else 0.0,
        )

    def feasible(self, node: Sequence[int]) -> bool:
        return self.evaluate(node).feasible

    def suppressed_rows(self, node: Sequence[int]) -> np.ndarray:
        """Boolean mask of the rows this node suppresses (from the device when the models run there)."""
        if not self.on_device:
            return super().suppressed_rows(node)
        assert self.spec is not None
        table = self.device_table
        with self.backend.activate():
            return xp_kernel.suppressed_mask(table, node, self.spec)

    def describe(self) -> dict:
        """What evaluated the nodes, for the report: device kind, backend, device index, whether on the device
        (and why not), and the counters of `stats`."""
        return {"device": self.device, "kernel": self.kernel, "backend": self.backend.name,
                "device_index": self.device_index, "on_device": self.on_device, "fallback": self.fallback_reason,
                **self.stats}


def make_evaluator(table: EncodedTable, models: Sequence[PrivacyModel], suppression_limit: float = 0.0,
                   objective: Objective | None = None, kernel: str = "fast", device: str = "cpu") -> NodeEvaluator:
    """The evaluator of a device: "cpu" the plain `NodeEvaluator`, "gpu" / "array" a `DeviceEvaluator`.

    Parameters
    ----------
    table, models, suppression_limit, objective, kernel
        As `NodeEvaluator`.
    device : str
        "cpu", "gpu" (CuPy) or "array" (the device code on numpy).

    Returns
    -------
    NodeEvaluator
        The evaluator; InputError for an unknown device, or for "gpu" without CuPy or without a GPU.
    """
    if device == "cpu":
        return NodeEvaluator(table, models, suppression_limit, objective, kernel)
    if device not in DEVICES:
        raise InputError(f"unknown device {device!r}; choose cpu or gpu")
    return DeviceEvaluator(table, models, suppression_limit, objective, kernel, device)
