"""The Dask worker plugin of `kgen.parallel` (a module of its own: importing `distributed` takes about a
second, which only the dask backend should pay)."""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from fitness.evaluator import NodeEvaluator
from kgen.parallel import forget_table, install_table


class TablePlugin(WorkerPlugin):
    """Installs an evaluator (the encoded table) in each worker's cache once, also in workers that join
    later; removes it when the plugin is unregistered."""

    def __init__(self, token: str, evaluator: NodeEvaluator) -> None:
        self.token, self.evaluator = token, evaluator

    def setup(self, worker: Any) -> None:
        install_table(self.token, self.evaluator)

    def teardown(self, worker: Any) -> None:
        forget_table(self.token)
