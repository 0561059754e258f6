"""When a search stops: one enumeration of the reasons, and the stopping conditions as objects.

Every search evaluates through a `Budget` (lattice/search/base.py), which holds the run's conditions and
checks them in one place: the time limit before each batch, the distinct-evaluation budget on each batch (the
new nodes that fit are evaluated, then the search stops), the whole box evaluated after each batch, and a
generational search's own conditions (stall, patience) at the end of each iteration (`Budget(problem, limits,
conditions=[Stall(n), Patience(p)])`, then `budget.end_iteration()`). A condition that holds raises
`StopSearch` with its `Stopped` value; `base.stopped_by` turns that into the result's `stopped`. k-Optimize,
which searches cut-point sets without a Budget, checks the same `MaxEvaluations` and `TimeLimit` objects
itself. Conditions are small stateful objects in the manner of pymoo's terminations: a new search run builds
new ones.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from enum import Enum


class Stopped(str, Enum):
    """Why a search ended: every value a search can report (the report's `stopped`).

    A str, so it compares equal to its value and is written as that value in JSON and text.
    """

    COMPLETE = "complete"  # the search ran to its end (or evaluated every node of its box): exact for exact searches
    BUDGET = "budget"  # the distinct-evaluation budget (`max_evaluations`) was used up
    TIME = "time"  # the time limit passed
    STALLED = "stalled"  # a generational search: `max_stall` iterations evaluated nothing new, or `patience` no better
    INTERRUPTED = "interrupted"  # a KeyboardInterrupt (Ctrl-C) during the search

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class StopSearch(Exception):
    """Raised when a stopping condition holds; `reason` is its `Stopped` value."""

    def __init__(self, reason: Stopped | str) -> None:
        super().__init__(reason)
        self.reason = Stopped(reason)


@dataclass(frozen=True)
class Progress:
    """What the stopping conditions look at.

    evaluations: distinct nodes this search has evaluated; seconds: since the search started; iteration: ended
    iterations of a generational search (0 for the others); best: a key of the best feasible node so far (None
    before one is found); box_done: every node of the search box is evaluated.
    """

    evaluations: int
    seconds: float
    iteration: int = 0
    best: Hashable | None = None
    box_done: bool = False


class Condition:
    """A stopping condition: `reached(progress)` is true once the search must stop; `stopped` says why."""

    stopped: Stopped

    def reached(self, progress: Progress) -> bool:
        raise NotImplementedError

    def check(self, progress: Progress) -> None:
        """Raise StopSearch(self.stopped) when the condition holds."""
        if self.reached(progress):
            raise StopSearch(self.stopped)


@dataclass
class MaxEvaluations(Condition):
    """The distinct-evaluation budget is used up (`--max-evaluations`)."""

    limit: int
    stopped: Stopped = field(default=Stopped.BUDGET, init=False)

    def reached(self, progress: Progress) -> bool:
        return progress.evaluations >= self.limit

    def remaining(self, evaluations: int) -> int:
        return max(self.limit - evaluations, 0)


@dataclass
class TimeLimit(Condition):
    """The search has run longer than `seconds` (`--time-limit`)."""

    seconds: float
    stopped: Stopped = field(default=Stopped.TIME, init=False)

    def reached(self, progress: Progress) -> bool:
        return progress.seconds > self.seconds


@dataclass
class BoxDone(Condition):
    """Every node of the search box is evaluated: nothing is left to learn, the best node is the optimum."""

    stopped: Stopped = field(default=Stopped.COMPLETE, init=False)

    def reached(self, progress: Progress) -> bool:
        return progress.box_done


@dataclass
class Stall(Condition):
    """`iterations` iterations in a row evaluated no new node (a GA drawing cached nodes only)."""

    iterations: int
    stopped: Stopped = field(default=Stopped.STALLED, init=False)
    _seen: int = field(default=-1, init=False, repr=False)
    _since: int = field(default=0, init=False, repr=False)

    def reached(self, progress: Progress) -> bool:
        self._since = self._since + 1 if progress.evaluations == self._seen else 0
        self._seen = progress.evaluations
        return self._since >= self.iterations


@dataclass
class Patience(Condition):
    """`iterations` iterations found no better node than the best one (0: never stops on this)."""

    iterations: int
    stopped: Stopped = field(default=Stopped.STALLED, init=False)
    _best: Hashable | None = field(default=None, init=False, repr=False)
    _improved: int = field(default=0, init=False, repr=False)

    def reached(self, progress: Progress) -> bool:
        if progress.best != self._best:
            self._best, self._improved = progress.best, progress.iteration
            return False
        return bool(self.iterations) and progress.iteration - self._improved >= self.iterations


def first_reached(conditions: Iterable[Condition], progress: Progress) -> Stopped | None:
    """The `stopped` value of the first condition that holds (every condition is updated), else None."""
    reached = [c.stopped for c in conditions if c.reached(progress)]
    return reached[0] if reached else None
