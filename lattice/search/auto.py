"""`auto`: the best answer a user can get within a limit: the certified search with the GA as its primal side.

Why: the GA alone says nothing of how good its answer is, and at 25 QIs its default run returned LOG 0.6667
where the certified search proved 0.6513 in the same few seconds (issue 30). `auto` runs the GA first (its
best node is the first upper bound and the solver's cutoff; its infeasible evaluations the first cover cuts),
then the certified search's loop (`lattice.search.certify.CertifyLoop`) within the same budget. It returns the
proved optimum when the loop finishes, else the best node found with its proved interval
(`params["lower_bound"]`, `params["optimal"]`, `params["auto"]` says which). Where the certified search is not
sound (feasibility not monotone, a loss that is not a sum of per-attribute level costs, or a non-monotone
loss), it falls back and says so (`params["auto"]["answer"]`, `["why"]`): a box of at most FALLBACK_NODES
nodes is searched exhaustively (the optimum, proved by enumeration), a larger one by the GA alone (the best
node found, with no proved interval of the loop's kind).

The GA is the "memetic" preset (kgen+ with a swap local search and kicks on its best node: at Cargo 2000,
25 QIs, it reaches the proved optimum within 5,000 evaluations where kgen+ rarely does; docs/search.md), so
the loop starts from a near-optimal cutoff.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from lattice.errors import InputError
from lattice.search.base import DEFAULT_MAX_EVALUATIONS, Limits, Problem, SearchResult
from lattice.search.certify import Certify, require_certifiable
from lattice.search.exhaustive import Exhaustive
from lattice.search.kgen_ga import PRESETS, KGen

DEFAULT_SECONDS = 60.0
FALLBACK_NODES = 20_000  # an unsound problem's box searched exhaustively up to this size (about 10 s)


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
    preset : str
        The GA's preset ("memetic"; `--preset`).
    strategy : str
        CP-SAT's search in the loop (`lattice.hitting.STRATEGIES`).
    fallback_nodes : int
        Where the certified search is unsound: the largest box searched exhaustively (else the GA alone).
    name : str
        The algorithm's name in results.
    """

    time_limit: float = DEFAULT_SECONDS
    ga_evaluations: int | None = None
    preset: str = "memetic"
    strategy: str = "adaptive"
    fallback_nodes: int = FALLBACK_NODES
    name: str = "auto"
    exact: ClassVar[bool] = True  # the certified loop proves its answer when it completes
    all_minimal: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise InputError(f"unknown preset {self.preset!r}; choose one of: {', '.join(PRESETS)}")

    @property
    def params(self) -> dict:
        """Every parameter by name, for reports."""
        return {"time_limit": self.time_limit, "ga_evaluations": self.ga_evaluations, "preset": self.preset,
                "strategy": self.strategy}

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (the default time limit when they give none)."""
        if limits.time_limit is None and limits.max_evaluations is None:
            limits = replace(limits, time_limit=self.time_limit)
        try:
            require_certifiable(problem, "the certified search")
        except InputError as why:
            return self.fallback(problem, limits, str(why).split(";")[0])
        ga = self.seed_evaluations(problem, limits)
        result = Certify(seed_evaluations=ga, seed_preset=self.preset, strategy=self.strategy,
                         name=self.name).run(problem, limits)
        proved = bool(result.params.get("optimal"))
        result.params["auto"] = {"answer": "proved optimum" if proved else "best found, with its proved interval",
                                 "ga_evaluations": ga, "time_limit": limits.time_limit}
        return result

    def fallback(self, problem: Problem, limits: Limits, why: str) -> SearchResult:
        """Where the certified search is unsound: exhaustive on a small box (exact when it completes), else the
        GA alone; `params["auto"]` says which and why."""
        if problem.box.size <= self.fallback_nodes:
            result = Exhaustive(name=self.name).run(problem, limits)
            answer = "exhaustive" if result.complete else "exhaustive, stopped by a limit"
        else:
            result = KGen(preset=self.preset, name=self.name).run(problem, limits)
            answer = "ga"
        result.params["auto"] = {"answer": answer, "why": why, "time_limit": limits.time_limit}
        return result

    def seed_evaluations(self, problem: Problem, limits: Limits) -> int:
        """The GA's share of the budget (see `ga_evaluations`)."""
        ga = self.ga_evaluations
        if ga is None:
            ga = min(50 * problem.box.dims, DEFAULT_MAX_EVALUATIONS)
        if limits.max_evaluations is not None:
            ga = min(ga, limits.max_evaluations // 2)
        return max(ga, 0)
