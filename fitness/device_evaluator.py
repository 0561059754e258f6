"""A node evaluator that keeps the table on an array device (a GPU through CuPy, or numpy for tests).

Why: a node's evaluation is gather, fold, sort, count, sum: what a GPU does best, and a search (the KGen GA
first) asks for a whole population at once. `DeviceEvaluator` answers `evaluate_many` with one pass of the
namespace kernel (`fitness.xp_kernel`) per new node and a single device-to-host copy of a small
(nodes x 4) array per batch, then builds the same `Evaluation`s as `NodeEvaluator`, field for field.

It is a `NodeEvaluator` (same constructor arguments plus `device`), so every search, `kgen.api` and the
report code use it unchanged; what it does not evaluate on the device it inherits:

- on the device: k-anonymity and distinct l-diversity; the LOG, DM and AECS objectives (all computed from
  the four per-node figures);
- on the CPU (the inherited fast kernel, per batch): entropy and recursive l-diversity, t-closeness, and the
  cell-cost objectives (NCP, Loss, non-uniform entropy). Their cost is exactly the CPU evaluator's; the
  device copy of the table is then not even made. `on_device` and `fallback_reason` say which path runs.

`device`: "cpu" is the plain `NodeEvaluator` (see `make_evaluator`); "gpu" runs the kernel on CuPy; "array"
runs the very same kernel on numpy, so CI exercises the GPU code path without a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitness import xp_kernel
from fitness.encoding import EncodedTable
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.metrics import suppression_loss
from fitness.models import DistinctLDiversity, KAnonymity, PrivacyModel
from fitness.objective import AverageClassSize, Discernibility, Objective, Precision
from lattice.errors import InputError
from lattice.node import Node, precision_loss

DEVICES = ("cpu", "gpu", "array")
GPU_EXTRA = 'pip install "kgen[gpu]"'
DEVICE_OBJECTIVES = (Precision, Discernibility, AverageClassSize)


def backend_for(device: str) -> xp_kernel.Backend:
    """The array backend of a device name; InputError (one line, exit 2) for an unknown name, a missing
    CuPy, or no usable GPU."""
    if device == "array":
        return xp_kernel.NUMPY
    if device != "gpu":
        raise InputError(f"unknown device {device!r}; choose cpu or gpu")
    try:
        return xp_kernel.cupy_backend()
    except ImportError:
        raise InputError(f"--device gpu needs CuPy, which is not installed: {GPU_EXTRA} (CUDA 12)") from None
    except RuntimeError as error:
        raise InputError(f"--device gpu: no usable GPU: {error}") from None


def device_spec(models: Sequence[PrivacyModel]) -> xp_kernel.ModelSpec | None:
    """The kernel's view of the models, or None when one of them must run on the CPU."""
    k = 1
    distinct: list[tuple[str, int]] = []
    for model in models:
        if type(model) is KAnonymity:
            k = max(k, int(model.k))
        elif type(model) is DistinctLDiversity:
            distinct.append((model.column, int(model.l)))
        else:
            return None
    return xp_kernel.ModelSpec(k, tuple(distinct))


def objective_loss(objective: Objective, node: Node, heights: Sequence[int], n: int, classes: int,
                   suppressed: int, dm: float) -> float:
    """The loss of the device objectives from the node's figures, exactly as each objective computes it from
    the released class sizes (tests compare the two field by field)."""
    if type(objective) is Precision:
        return precision_loss(node, heights)
    if type(objective) is Discernibility:
        return dm / (n * n) if n else 0.0
    if type(objective) is AverageClassSize:
        groups = classes + (1 if suppressed else 0)
        if n <= 1 or groups == 0:
            return 0.0
        return (n / groups - 1.0) / (n - 1.0)
    raise TypeError(f"not a device objective: {objective!r}")


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
                 chunk_rows: int = 1 << 22, backend: xp_kernel.Backend | None = None) -> None:
        super().__init__(table, models, suppression_limit, objective, kernel)
        self.device = device
        self.chunk_rows = chunk_rows
        self.backend = backend if backend is not None else backend_for(device)
        self.spec = device_spec(self.models)
        self.fallback_reason: str | None = None
        if self.spec is None:
            names = sorted({m.name for m in self.models if type(m) not in (KAnonymity, DistinctLDiversity)})
            self.fallback_reason = f"privacy model(s) {', '.join(names)} evaluated on the CPU"
        elif type(self.objective) not in DEVICE_OBJECTIVES:
            self.fallback_reason = f"metric {self.objective.name} evaluated on the CPU"
        self.on_device = self.fallback_reason is None
        self._device_table: xp_kernel.DeviceTable | None = None
        self.stats = {"batches": 0, "device_nodes": 0, "host_nodes": 0, "host_copies": 0}

    @property
    def device_table(self) -> xp_kernel.DeviceTable:
        """The table on the device, uploaded on first use."""
        if self._device_table is None:
            assert self.spec is not None
            columns = [column for column, _ in self.spec.distinct]
            self._device_table = xp_kernel.DeviceTable.from_encoded(self.table, self.backend, self.chunk_rows,
                                                                    columns)
        return self._device_table

    def __getstate__(self) -> dict[str, Any]:  # device arrays stay behind: a copy uploads its own
        state = self.__dict__.copy()
        state["_device_table"] = None
        state["backend"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.backend = backend_for(self.device)

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
        figures = xp_kernel.batch_stats(self.device_table, nodes, self.spec)
        self.stats["host_copies"] += 1
        self.stats["device_nodes"] += len(nodes)
        n = self.table.n
        heights = self.table.heights
        out = []
        for node, (classes, suppressed, smallest, squares) in zip(nodes, figures.tolist()):
            # as fitness.metrics.discernibility: the float64 sum of the squares plus |S| n (equal whenever the
            # squares sum below 2**53, i.e. n < 9.4e7; past that this one is the exactly rounded value)
            dm = float(np.float64(squares) + suppressed * n)
            out.append(Evaluation(
                node=node,
                feasible=suppressed <= self.max_suppressed,
                loss=float(objective_loss(self.objective, node, heights, n, classes, suppressed, dm)),
                log=precision_loss(node, heights),
                los=suppression_loss(suppressed, n),
                suppressed=int(suppressed),
                classes=int(classes),
                smallest_class=int(smallest) if classes else 0,
                dm=dm,
                aecs=(n - suppressed) / classes if classes else 0.0,
            ))
        return out

    def feasible(self, node: Sequence[int]) -> bool:
        return self.evaluate(node).feasible

    def suppressed_rows(self, node: Sequence[int]) -> np.ndarray:
        """Boolean mask of the rows this node suppresses (from the device when the models run there)."""
        if not self.on_device:
            return super().suppressed_rows(node)
        assert self.spec is not None
        return xp_kernel.suppressed_mask(self.device_table, node, self.spec)

    def release_device(self) -> None:
        """Drop the device copy of the table (re-uploaded on the next device evaluation)."""
        self._device_table = None
        self.backend.free()

    def describe(self) -> dict:
        return {"device": self.device, "backend": self.backend.name, "on_device": self.on_device,
                "fallback": self.fallback_reason, **self.stats}


def make_evaluator(table: EncodedTable, models: Sequence[PrivacyModel], suppression_limit: float = 0.0,
                   objective: Objective | None = None, kernel: str = "fast", device: str = "cpu") -> NodeEvaluator:
    """The evaluator of a device: "cpu" the plain `NodeEvaluator`, "gpu" / "array" a `DeviceEvaluator`.
    InputError for an unknown device, or for "gpu" without CuPy or without a GPU."""
    if device == "cpu":
        return NodeEvaluator(table, models, suppression_limit, objective, kernel)
    if device not in DEVICES:
        raise InputError(f"unknown device {device!r}; choose cpu or gpu")
    return DeviceEvaluator(table, models, suppression_limit, objective, kernel, device)


def rows_per_gib(bytes_per_row: float) -> int:
    """How many rows fit in one GiB at a given device footprint per row."""
    return math.floor((1 << 30) / bytes_per_row) if bytes_per_row > 0 else 0
