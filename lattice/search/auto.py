"""`auto`: the best answer a user can get within a limit: the certified search with the GA as its primal side.

Why: the GA alone says nothing of how good its answer is, and at 25 QIs its default run returned LOG 0.6667
where the certified search proved 0.6513 in the same few seconds (issue 30). `auto` runs the GA first (its
best node is the first upper bound and the solver's cutoff; its infeasible evaluations the first cover cuts),
then the certified search's loop (`lattice.search.certify.CertifyLoop`) within the same budget. It returns the
proved optimum when the loop finishes, else the best node found with its proved interval
(`params["lower_bound"]`, `params["optimal"]`, `params["auto"]` says which). Where the certified search is not
sound (feasibility not monotone, a loss that is not a sum of per-attribute level costs, or a non-monotone
loss), it runs the GA alone and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from lattice.errors import InputError
from lattice.search.base import DEFAULT_MAX_EVALUATIONS, Limits, Problem, SearchResult
from lattice.search.certify import Certify, require_certifiable
from lattice.search.kgen_ga import KGen

DEFAULT_SECONDS = 60.0


@dataclass(frozen=True)
class Auto:
    """The certified search with the GA as its primal side (see the module doc).

    Parameters
    ----------
    time_limit : float
        Seconds when the user gives neither a time nor an evaluation limit (60: Cargo 2000 at 25 QIs is
        proved in about 20 CPU seconds; at 50 and 97 QIs the answer comes with its interval).
    ga_evaluations : int, optional
        Evaluations of the GA before the loop; default 50 per QI, at most 5,000, and at most half of the
        user's evaluation limit (the loop needs its share to prove anything).
    ga_preset : str
        The GA's preset ("kgen+").
    strategy : str
        CP-SAT's search in the loop (`lattice.hitting.STRATEGIES`).
    name : str
        The algorithm's name in results.
    """

    time_limit: float = DEFAULT_SECONDS
    ga_evaluations: int | None = None
    ga_preset: str = "kgen+"
    strategy: str = "adaptive"
    name: str = "auto"
    exact: ClassVar[bool] = True  # the certified loop proves its answer when it completes
    all_minimal: ClassVar[bool] = False

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (the default time limit when they give none)."""
        if limits.time_limit is None and limits.max_evaluations is None:
            limits = replace(limits, time_limit=self.time_limit)
        try:
            require_certifiable(problem, "the certified search")
        except InputError as why:
            result = KGen(preset=self.ga_preset, name=self.name).run(problem, limits)
            result.params["auto"] = {"answer": "ga", "why": str(why).split(";")[0]}
            return result
        ga = self.seed_evaluations(problem, limits)
        result = Certify(seed_evaluations=ga, seed_preset=self.ga_preset, strategy=self.strategy,
                         name=self.name).run(problem, limits)
        proved = bool(result.params.get("optimal"))
        result.params["auto"] = {"answer": "proved optimum" if proved else "best found, with its proved interval",
                                 "ga_evaluations": ga, "time_limit": limits.time_limit}
        return result

    def seed_evaluations(self, problem: Problem, limits: Limits) -> int:
        """The GA's share of the budget (see `ga_evaluations`)."""
        ga = self.ga_evaluations
        if ga is None:
            ga = min(50 * problem.box.dims, DEFAULT_MAX_EVALUATIONS)
        if limits.max_evaluations is not None:
            ga = min(ga, limits.max_evaluations // 2)
        return max(ga, 0)
