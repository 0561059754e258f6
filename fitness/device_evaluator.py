"""A node evaluator that keeps the table on an array device (a GPU through CuPy, or numpy for tests).

Why: a node's evaluation is gather, fold, sort, count, sum: what a GPU does best, and a search (the KGen GA
first) asks for a whole population at once. `DeviceEvaluator` answers `evaluate_many` with one pass of the
namespace kernel (`fitness.xp_kernel`) per new node and a single device-to-host copy of a small
(nodes x 4) array per batch, then builds the same `Evaluation`s as `NodeEvaluator`, field for field.

It is a `NodeEvaluator` (same constructor arguments plus `device`), so every search, `kgen.api` and the
report code use it unchanged; what it does not evaluate on the device it inherits:

- on the device: the privacy models that are nothing but counts (their `count_rule`: k-anonymity and
  distinct l-diversity) and the objectives that follow from a summary of the classes (`from_summary`: LOG,
  DM and AECS, from the four per-node figures through `Objective.summary_loss`);
- on the CPU (the inherited fast kernel, per batch): every other model (entropy and recursive
  l-diversity, t-closeness) or objective (NCP, Loss, non-uniform entropy). Their cost is exactly the CPU
  evaluator's; the device copy of the table is then not even made. `on_device` and `fallback_reason` say
  which path runs. Nothing here tests a model's or an objective's type: it asks them.

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
from fitness.metrics import suppressed_fraction
from fitness.models import PrivacyModel
from fitness.objective import Objective
from lattice.errors import InputError
from lattice.node import Node, precision_loss

DEVICES = ("cpu", "gpu", "array")
GPU_EXTRA = 'pip install "kgen[gpu]"'


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
    """The kernel's view of the models, or None when one of them is more than counts (no `count_rule`).

    The kernel's k is the largest `min_class_size` (a class below it breaks some model; for distinct
    l-diversity that is l, which its distinct count would reject anyway), and each rule on a column adds its
    (column, least distinct values) pair.
    """
    rules = [m.count_rule for m in models]
    if any(rule is None for rule in rules):
        return None
    k = max((m.min_class_size for m in models), default=1)
    distinct = tuple((rule.column, rule.min_distinct) for rule in rules if rule is not None and rule.column is not None)
    return xp_kernel.ModelSpec(k, distinct)


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
            names = sorted({m.name for m in self.models if m.count_rule is None})
            self.fallback_reason = f"privacy model(s) {', '.join(names)} evaluated on the CPU"
        elif not self.objective.from_summary:
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
                loss=float(self.objective.summary_loss(node, classes, suppressed, dm, self.table)),
                log=precision_loss(node, heights),
                los=suppressed_fraction(suppressed, n),
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


def rows_per_gib(bytes_per_row: float) -> int:
    """How many rows fit in one GiB at a given device footprint per row."""
    return math.floor((1 << 30) / bytes_per_row) if bytes_per_row > 0 else 0
