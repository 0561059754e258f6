"""Random search (SPEC section 5): uniform random nodes of the box until the budget is spent."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

from lattice.search.base import DEFAULT_MAX_EVALUATIONS, Budget, Limits, Problem, SearchResult, guarded


@dataclass(frozen=True)
class RandomSearch:
    """Uniform random nodes of the box, drawn with replacement; a node drawn again costs nothing.

    It stops when `max_evaluations` distinct nodes are evaluated, on the time limit, or when the whole box is
    evaluated (then `stopped` is `complete` and the best node is the optimum).

    Parameters
    ----------
    batch : int
        Nodes drawn per evaluation batch.
    max_evaluations : int
        The budget when the limits give none (`Limits.bounded`; the paper's 5000).
    name : str
        The algorithm's name in results and reports.
    """

    batch: int = 100
    max_evaluations: int = DEFAULT_MAX_EVALUATIONS
    name: str = "random"
    exact: ClassVar[bool] = False  # a heuristic: its best is not proved optimal
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits`.

        Parameters
        ----------
        problem : Problem
            The evaluator and the box.
        limits : Limits
            Evaluation budget (`max_evaluations` of this search when None), time limit, seed of the draws.

        Returns
        -------
        SearchResult
            The best feasible node drawn and the minimal ones among those drawn; one trace record per batch.
        """
        limits = limits.bounded(self.max_evaluations)
        budget = Budget(problem, limits)
        rng = random.Random(limits.seed)
        box = problem.box

        def body(trace: list[dict]) -> None:
            draws = 0
            while True:  # the budget stops it: evaluations, time, or the whole box evaluated
                nodes = [box.random_node(rng) for _ in range(self.batch)]
                draws += len(nodes)
                budget.evaluate_many(nodes)
                trace.append({"draws": draws, "evaluations": budget.evaluations,
                              "best_loss": None if budget.best is None else budget.best.loss,
                              "seconds": budget.seconds})

        return guarded(budget, self.name, body, {"batch": self.batch, "max_evaluations": limits.max_evaluations,
                                                 "seed": limits.seed})
