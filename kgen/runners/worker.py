"""The table a parallel worker holds, shared by its threads (a module of its own: the Dask worker plugin and
the runners both use it, and neither may import the other at module level)."""

from __future__ import annotations

import itertools
import threading

from fitness.evaluator import NodeEvaluator


class WorkerTable:
    """The evaluator a worker received (its table shared by the worker's threads) and, per thread that
    computes, an evaluator of its own over that table (an evaluator's roll-up state is not thread-safe)."""

    def __init__(self, evaluator: NodeEvaluator, token: str = "", first_worker: int = 0) -> None:
        self.shipped, self.token = evaluator, token
        self._here = threading.local()
        self._numbers = itertools.count(first_worker)  # next() is atomic in CPython: one number per thread
        self._lock = threading.Lock()

    def evaluator(self) -> NodeEvaluator:
        """This thread's evaluator, made on the thread's first task from the shipped template
        (`for_worker`: on a machine with several GPUs, worker n evaluates on GPU n mod their count)."""
        mine = getattr(self._here, "evaluator", None)
        if mine is None:
            with self._lock:
                number = next(self._numbers)
            mine = self._here.evaluator = self.shipped.for_worker(number)
        return mine
