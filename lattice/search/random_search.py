"""Random search (SPEC section 5): uniform random nodes of the box until the budget is spent."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from lattice.search.base import Budget, Limits, Problem, SearchResult, guarded


@dataclass(frozen=True)
class RandomSearch:
    """Draws nodes uniformly (with replacement) in batches of `batch`; a node drawn again costs nothing.

    Stops when `max_evaluations` distinct nodes are evaluated (`limits.max_evaluations`, else this field's
    default, the paper's 5000), on the time limit, or when the whole box is evaluated (then it is exact).
    """

    batch: int = 100
    max_evaluations: int = 5000
    name: str = "random"

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        if limits.max_evaluations is None:
            limits = replace(limits, max_evaluations=self.max_evaluations)
        budget = Budget(problem, limits)
        rng = random.Random(limits.seed)
        box = problem.box

        def body(trace: list[dict]) -> None:
            draws = 0
            while budget.evaluations < box.size:
                nodes = [box.random_node(rng) for _ in range(self.batch)]
                draws += len(nodes)
                budget.evaluate_many(nodes)
                trace.append({"draws": draws, "evaluations": budget.evaluations,
                              "best_loss": None if budget.best is None else budget.best.loss,
                              "seconds": budget.seconds})

        return guarded(budget, self.name, body, {"batch": self.batch, "max_evaluations": limits.max_evaluations,
                                                 "seed": limits.seed})
