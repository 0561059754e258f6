"""Datafly (Sweeney 2002): the greedy heuristic that generalizes the QI with the most distinct values.

Start at the bottom of the box; while more rows than the suppression limit allows sit in classes that
violate the model, raise by one level the QI that has the most distinct values at its current level
(Sweeney's rule: it is the attribute that splits the table most), and release the first node within the
limit, suppressing the rows of its small classes. It visits at most sum(upper - lower) + 1 nodes and gives
no optimality guarantee; with monotone feasibility it always ends with a feasible node when the top is one.

Distinct counts are data: the search asks the evaluator (`distinct_counts(node)`, the number of distinct
values of each QI at its level in the node) and does not compute them. When several QIs tie on the most
distinct values, each raise is evaluated (in one batch) and the first feasible one, then the one preferred by
the objective (`base.objective_key`), is taken. If the evaluator cannot count distinct values, the QI with
the most levels left is raised instead, and the parameters say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lattice.node import Node
from lattice.search.base import Budget, Evaluated, Limits, Problem, SearchResult, Stopped, guarded, objective_key


@dataclass(frozen=True)
class Datafly:
    """Sweeney's Datafly on the problem's box (see the module doc).

    Parameters
    ----------
    name : str
        The algorithm's name in results and reports.
    """

    name: str = "datafly"
    exact: ClassVar[bool] = False  # a heuristic: its best is not proved optimal
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: `best` and `minimal`: the node the walk ended
        on (no optimality guarantee); `params["path"]`, the nodes walked, and `params["rule"]`, how the QI to raise
        was chosen.
        """
        budget = Budget(problem, limits, stop_when_box_done=False)  # the walk's node is the answer, not the best
        box = problem.box
        counter = getattr(problem.evaluator, "distinct_counts", None)
        rule = "most distinct values" if counter is not None else "most levels left (no distinct counts)"
        path: list[Node] = []
        params = {"rule": rule, "path": path}
        chosen: list[Evaluated] = []

        def counts(node: Node) -> tuple[int, ...]:
            if counter is not None:
                return tuple(int(c) for c in counter(node))
            return tuple(b - x for x, b in zip(node, box.upper))

        def body(trace: list[dict]) -> None:
            current = budget.evaluate(box.lower)
            path.append(current.node)
            while not current.feasible:
                node = current.node
                open_ = [i for i in range(len(node)) if node[i] < box.upper[i]]
                if not open_:
                    return  # the top is infeasible
                distinct = counts(node)
                most = max(distinct[i] for i in open_)
                raises = [node[:i] + (node[i] + 1,) + node[i + 1 :] for i in open_ if distinct[i] == most]
                current = min(budget.evaluate_many(raises), key=lambda e: (not e.feasible, objective_key(e)))
                path.append(current.node)
                trace.append({"node": list(current.node), "evaluations": budget.evaluations})
            chosen.append(current)

        result = guarded(budget, self.name, body, params)
        params["path"] = [list(n) for n in path]
        if chosen:
            result.best, result.minimal = chosen[0], [chosen[0].node]
        elif result.stopped == Stopped.COMPLETE:
            result.best, result.minimal = None, []
        return result
