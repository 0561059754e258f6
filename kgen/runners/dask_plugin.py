"""The Dask worker plugin of `kgen.runners.parallel` (a module of its own: importing `distributed` takes about a
second, which only the dask backend should pay).

The plugin is the worker-side home of the table: the scheduler keeps it and hands it to every worker once,
also to workers that join later; the worker's tasks find the table on the plugin (`kgen.runners.parallel.
compute_installed`), and unregistering the plugin drops it."""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from fitness.evaluator import NodeEvaluator
from kgen.runners.worker import WorkerTable


class TablePlugin(WorkerPlugin):
    """Installs an evaluator (the encoded table) in each worker once, as `table` (a `WorkerTable`: one
    evaluator per worker thread over the one copy of the table); removes it on teardown."""

    def __init__(self, evaluator: NodeEvaluator) -> None:
        self.evaluator = evaluator
        self.table: WorkerTable | None = None

    def setup(self, worker: Any) -> None:
        name = getattr(worker, "name", 0)  # a LocalCluster names its workers 0, 1, ...: one GPU each
        self.table = WorkerTable(self.evaluator, first_worker=name if isinstance(name, int) else 0)

    def teardown(self, worker: Any) -> None:
        self.table = None
