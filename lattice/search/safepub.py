"""SafePub's search (Bild, Kuhn & Prasser 2018; ARX's `DataDependentEDDPAlgorithm`): a random walk down the
lattice whose every step is one draw of the exponential mechanism.

From the top node (the pivot), each step adds the pivot's direct specializations (one QI one level lower,
inside the box) to the candidates, removes the pivot, and draws the next pivot among all candidates with
probability proportional to exp(epsilon_step * score / 2), epsilon_step = epsilon_search / steps; the score
has sensitivity 1 (kgen supplies it: `fitness.privacy.dp.score_function`). The answer is the pivot with the
best score, as ARX tracks its optimum over the pivots. Every node is feasible (the model suppresses the
classes below its k, with no limit on suppression), so the walk never asks for feasibility.

Reproducible: the draws come from a numpy generator seeded from `Limits.seed` only (never global random
state); the candidates are kept in node order (ARX's hash map order is arbitrary), and the evaluations do not
depend on where they run, so serial and parallel runs draw the same walk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from lattice.node import Node
from lattice.search.base import Budget, Evaluated, Limits, Problem, SearchResult, guarded

SEARCH_STREAM = 2  # the walk's numpy stream: SeedSequence([seed, 2]); kgen samples rows from [seed, 1]


def rng_for(seed: int, stream: int) -> np.random.Generator:
    """A generator for one use of the run's seed (`stream` tells the uses apart; a negative seed is taken
    modulo 2^64, as numpy's seeds must be >= 0)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) % 2**64, stream]))


def exponential_mechanism(scores: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """Index drawn with probability proportional to exp(epsilon * score / 2) (scores of sensitivity 1),
    shifted by the largest exponent so that nothing overflows (ARX's `ExponentialMechanism`)."""
    exponents = 0.5 * epsilon * np.asarray(scores, dtype=float)
    weights = np.exp(exponents - exponents.max())
    cumulative = np.cumsum(weights)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(weights) - 1))


@dataclass(frozen=True)
class SafePub:
    """The SafePub walk (module docstring).

    Parameters
    ----------
    steps : int
        The exponential mechanism's draws.
    epsilon_search : float
        The budget of the whole walk; each draw spends epsilon_search / steps.
    score : callable
        Evaluation -> score, higher is better, of sensitivity 1.
    name : str
        The algorithm's name in results and reports.
    """

    steps: int
    epsilon_search: float
    score: Callable[[Evaluated], float] = field(repr=False)
    name: str = "safepub"
    exact: ClassVar[bool] = False  # a randomized search: its answer is not the optimum, by design
    all_minimal: ClassVar[bool] = False

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Walk `steps` draws down from the top of the box; the result's best is the best-scoring pivot.

        Parameters
        ----------
        problem : Problem
            The evaluator and the box.
        limits : Limits
            The seed of the draws; `max_evaluations` may stop the walk early (the best pivot so far is
            returned). A time limit would make the release depend on the machine's speed: kgen refuses one.

        Returns
        -------
        SearchResult
            The best-scoring pivot as `best`, one trace record per step (the pivot and its score).
        """
        budget = Budget(problem, limits, stop_when_box_done=False)
        rng = rng_for(limits.seed, SEARCH_STREAM)
        per_step = self.epsilon_search / self.steps
        chosen: list[tuple[float, Evaluated]] = []

        def body(trace: list[dict]) -> None:
            pivot = problem.box.upper
            candidates: dict[Node, float] = {}
            top = budget.evaluate(pivot)
            chosen.append((self.score(top), top))
            for step in range(1, self.steps + 1):
                lower = [n for n in specializations(pivot, problem.box.lower) if n not in candidates]
                for node, e in zip(lower, budget.evaluate_many(lower)):
                    candidates[node] = self.score(e)
                candidates.pop(pivot, None)
                if not candidates:
                    break
                nodes = sorted(candidates)
                pivot = nodes[exponential_mechanism(np.array([candidates[n] for n in nodes]), per_step, rng)]
                e = budget.known(pivot)
                chosen.append((candidates[pivot], e))  # type: ignore[arg-type]
                trace.append({"step": step, "pivot": list(pivot), "score": candidates[pivot],
                              "evaluations": budget.evaluations})

        result = guarded(budget, self.name, body, {
            "steps": self.steps, "epsilon_search": self.epsilon_search, "epsilon_per_step": per_step,
            "seed": limits.seed})
        if not chosen:
            return result
        first = max(range(len(chosen)), key=lambda i: (chosen[i][0], -i))  # the first of the best, as ARX keeps it
        score, best = chosen[first]
        params = {**result.params, "steps_taken": len(chosen) - 1, "best_score": score}
        return replace(result, best=best, minimal=[best.node], params=params)


def specializations(node: Node, lower: Node) -> list[Node]:
    """The node's direct specializations inside the box: one QI one level lower (ARX's predecessors)."""
    return [node[:i] + (x - 1,) + node[i + 1 :] for i, x in enumerate(node) if x > lower[i]]


__all__ = ["SafePub", "exponential_mechanism", "rng_for", "specializations"]
