"""Exhaustive search: evaluate every node of the box. Optimal when it completes.

Every evaluation is kept (by the budget and the evaluator's cache: about 1 KB per node measured at 20 to 60
QIs), so a box of more than `max_nodes` nodes is refused unless a time or evaluation limit bounds the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lattice.search.base import (
    EVALUATE_ALL_MAX_NODES,
    Budget,
    Limits,
    Problem,
    SearchResult,
    guarded,
    require_limit_beyond,
)


@dataclass(frozen=True)
class Exhaustive:
    """Evaluates every node of the box, in batches; exact when it completes.

    Parameters
    ----------
    batch : int
        Nodes per evaluation batch (so a parallel evaluator gets work to share).
    max_nodes : int
        The largest box it accepts without `max_evaluations` or `time_limit` (2^21 = 2,097,152 nodes: about
        2 GB of kept evaluations).
    name : str
        The algorithm's name in results and reports.
    """

    batch: int = 256
    max_nodes: int = EVALUATE_ALL_MAX_NODES
    name: str = "exhaustive"
    exact: ClassVar[bool] = True  # its best is the optimum of the objective when it stops `complete`
    all_minimal: ClassVar[bool] = True  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: `best`: the optimum and `minimal`: every
        k-minimal node, when `stopped` is `complete`.
        """
        require_limit_beyond(self.name, problem, limits, self.max_nodes,
                             "evaluates every node and keeps each evaluation (about 1 KB)")
        budget = Budget(problem, limits)

        def body(trace: list[dict]) -> None:
            for _ in budget.evaluate_in_batches(problem.box.nodes(), self.batch):
                pass

        return guarded(budget, self.name, body, {"batch": self.batch, "max_nodes": self.max_nodes})
