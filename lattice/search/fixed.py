"""The fixed-node search: evaluates the one node the user chose (`kgen anonymize --node QI=L,...`).

Why a search: a chosen node (from the frontier explorer, docs/frontier.md) is published through the same path
as a searched one (the same release, independent check, report and locked pair), so it is one more entry of
the algorithms registry rather than a second run path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lattice.errors import InputError, NoSolutionError
from lattice.node import Node
from lattice.search.base import Budget, Limits, Problem, SearchResult, guarded


@dataclass(frozen=True)
class FixedNode:
    """Evaluates `node` and returns it as the best when it is feasible.

    Parameters
    ----------
    node : tuple of int
        One level per QI, in QI order.
    labels : tuple of str
        The QIs' names, for the messages.
    name : str
        The algorithm's name in results and reports.

    Raises
    ------
    InputError
        A node of the wrong length or with a level outside 0 .. the QI's height.
    NoSolutionError
        The node breaks the privacy models within the suppression limit (one line: what it suppresses).
    """

    node: Node = ()
    labels: tuple[str, ...] = ()
    name: str = "node"
    exact: ClassVar[bool] = False  # chosen, not searched: its loss is no optimum
    all_minimal: ClassVar[bool] = False

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Evaluate the node (`Search.run`); `best` is it, or NoSolutionError when it is infeasible."""
        node = tuple(int(x) for x in self.node)
        labels = self.labels or tuple(f"QI {i + 1}" for i in range(len(node)))
        if len(node) != len(problem.heights):
            raise InputError(f"--node gives {len(node)} levels for {len(problem.heights)} quasi-identifiers")
        for label, level, height in zip(labels, node, problem.heights):
            if not 0 <= level <= height:
                raise InputError(f"--node: level {level} of {label!r} is outside its hierarchy's levels 0 .. {height}")
        budget = Budget(problem, limits, stop_when_box_done=False)
        result = guarded(budget, self.name, lambda trace: budget.evaluate(node), {"node": list(node)})
        if result.best is None and result.closest is not None:
            e = result.closest
            text = ",".join(f"{q}={x}" for q, x in zip(labels, node))
            if e.los >= 1.0:  # raising the limit would release nothing (or, as delta-presence's classes
                # without a released row, no suppression can fix the node)
                raise NoSolutionError(f"the node {text} is not feasible: the privacy models fail in every class "
                                      "there (nothing would be left to release); choose a more general node or a "
                                      "point of the frontier (kgen frontier)")
            raise NoSolutionError(f"the node {text} is not feasible: it would suppress {e.los:.2%} of the rows to "
                                  "satisfy the privacy models, beyond the suppression limit; choose a point of the "
                                  "frontier (kgen frontier) or raise --suppression")
        return result
