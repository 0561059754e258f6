"""Exhaustive search: evaluate every node of the box. Optimal when it completes."""

from __future__ import annotations

from dataclasses import dataclass

from lattice.search.base import Budget, Limits, Problem, SearchResult, guarded


@dataclass(frozen=True)
class Exhaustive:
    """Evaluates the box in batches of `batch` nodes (so a parallel evaluator gets work to share)."""

    batch: int = 256
    name: str = "exhaustive"

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        budget = Budget(problem, limits)

        def body(trace: list[dict]) -> None:
            chunk = []
            for node in problem.box.nodes():
                chunk.append(node)
                if len(chunk) == self.batch:
                    budget.evaluate_many(chunk)
                    chunk = []
            budget.evaluate_many(chunk)

        return guarded(budget, self.name, body, {"batch": self.batch})
