"""Certified search: the optimum, or a proven interval [lower bound, found] around it (SPEC section 11).

Why: the exact lattice searches keep a tag per node, so they stop near 12-13 QIs; the GA goes on to 97 QIs but
cannot say how good its answer is. This search works on cuts instead of nodes. Every infeasible node m rules
out its down-set (monotone feasibility), every evaluated feasible node y its strict up-set (which costs
more), and minimizing LOG over what is left is a small integer program (`lattice.hitting.CutModel`) whose
optimum is a lower bound on the true optimum. The loop (an implicit hitting-set loop):

1. seed: a short GA run (configurable) gives the best feasible node found so far (the upper bound, used as the
   solver's objective cutoff) and every infeasible node it evaluated (cover cuts);
2. solve the program; no solution below the cutoff: the best node found is optimal, done;
3. evaluate the solution x; feasible: it is a new best (exclude its up-set); infeasible: raise it gene by gene
   (binary search per gene, `cuts` gene orders) to maximal infeasible nodes and add their cover cuts; repeat.

Ties: the cutoff is inclusive and the exclusions remove only evaluated nodes' up-sets, so every node of the
optimal LOG that is not known infeasible is proposed and evaluated before the program runs dry; the Budget
keeps the least LOS, then the lexicographically smaller node (the SPEC's tie rule).

Sound only for monotone feasibility and an objective that is a sum of per-gene level costs known before the
evaluation (LOG); otherwise it refuses with an InputError. Limits stop it with the interval reached so far
(`params["lower_bound"]`, `params["optimal"]`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from lattice.errors import InputError
from lattice.hitting import SOLVERS, CutModel, integer_step_costs, maximal_nodes
from lattice.node import Node
from lattice.search.base import Budget, Evaluated, Limits, Problem, SearchResult, guarded
from lattice.search.tags import SparseTags, classify


class BudgetEvaluator:
    """Routes a seeding search's evaluations through the certified search's Budget (one count, one archive)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def evaluate(self, node: Node) -> Evaluated:
        return self.budget.evaluate(node)

    def evaluate_many(self, nodes: Sequence[Node]) -> list[Evaluated]:
        return self.budget.evaluate_many(nodes)

    def cached(self, node: Node) -> Evaluated | None:
        return self.budget.known(node)


FLOAT_SCALE = 10**9  # integer units per unit of a non-LOG loss (losses lie in [0, 1])
FLOAT_SLACK = 1e-9  # relative float noise allowed for when a float loss is turned into an integer cutoff


@dataclass(frozen=True)
class Costs:
    """The cut model's integer step costs and their relation to the loss.

    LOG (`exact`): cost / denominator is the node's LOG exactly, so ties and the cutoff are exact. A separable
    float objective (`Problem.level_costs`): each step cost is rounded down after scaling by FLOAT_SCALE, so
    cost / denominator never exceeds the node's separable loss, which never exceeds its loss: the program's
    optimum stays a lower bound, and the cutoff keeps a FLOAT_SLACK margin so ties are never cut off.
    """

    steps: tuple[tuple[int, ...], ...]
    denominator: int
    exact: bool
    offset: int = 0  # a constant part of the loss, in cost units

    @classmethod
    def of_problem(cls, problem: Problem) -> Costs:
        if problem.loss_is_log:
            steps, denominator = integer_step_costs(problem.heights)
            return cls(tuple(tuple(s) for s in steps), denominator, True)
        assert problem.level_costs is not None
        steps = []
        for i, levels in enumerate(problem.level_costs):
            base = math.floor(levels[0] * FLOAT_SCALE) if i == 0 else 0
            # step l: floor of the scaled difference; gene 0's level 0 carries the constant part
            gene = [math.floor((levels[level] - levels[level - 1]) * FLOAT_SCALE) for level in range(1, len(levels))]
            steps.append((base, tuple(gene)))
        return cls(tuple(g for _, g in steps), FLOAT_SCALE, False, steps[0][0] if steps else 0)

    def cost(self, node: Node) -> int:
        return self.offset + sum(sum(self.steps[i][:x]) for i, x in enumerate(node))

    def cutoff(self, e: Evaluated) -> int:
        """The largest cost a node of loss <= e.loss can have (inclusive, so that ties stay candidates)."""
        if self.exact:
            return self.cost(e.node)
        return math.floor(e.loss * self.denominator * (1 + FLOAT_SLACK)) + 1

    def below(self, e: Evaluated) -> int:
        """A cost that every node of loss < e.loss has at most (for the bound's optimality test)."""
        return self.cost(e.node) - 1 if self.exact else self.cutoff(e)

    def value(self, cost: int) -> float:
        return float(Fraction(cost, self.denominator))

    @property
    def tolerance(self) -> float:
        """How far below the optimum a proved bound may sit only by rounding (0 for LOG)."""
        return 0.0 if self.exact else (sum(len(g) for g in self.steps) + 2) / self.denominator + FLOAT_SLACK


def require_certifiable(problem: Problem, what: str = "the certified search", loop: bool = True) -> None:
    """InputError unless the cuts and the cost model are sound: monotone feasibility, and the loss LOG or a
    separable cell-cost loss (`Problem.level_costs`); the search's loop also needs that loss to be monotone
    (with suppression limit 0 for NCP, Loss and entropy), since it excludes the up-sets of feasible nodes."""
    if not problem.monotone_feasibility:
        raise InputError(f"{what} needs monotone feasibility (k-anonymity, distinct l-diversity, or any model "
                         "with suppression limit 0); entropy/recursive l-diversity and t-closeness with "
                         "suppression are not monotone: use 'ola' or 'exhaustive'")
    if not problem.loss_is_log and problem.level_costs is None:
        raise InputError(f"{what} needs the LOG objective or a separable one (ncp, loss, entropy); dm and aecs "
                         "are not sums of per-attribute level costs: use 'ola' or 'bestfirst' for them")
    if loop and not problem.loss_is_log and not problem.monotone_loss:
        raise InputError(f"{what} needs a monotone loss: ncp, loss and entropy are monotone only with suppression "
                         "limit 0 (--suppression 0); use 'ola' or 'bestfirst', or --metric log")


@dataclass(frozen=True)
class Certify:
    """The certified search (see the module doc).

    Parameters
    ----------
    seed_evaluations : int, optional
        Evaluations of the seeding GA (`seed_preset`) before the loop (0: none; default 20 per QI: the loop's
        own proposals are mostly infeasible low nodes, so at many QIs the upper end of the interval comes from
        the seed: at Cargo q = 97, 200 seed evaluations left it at LOG 0.936 after 10 min).
    seed_preset : str
        The GA preset of the seeding run.
    cuts : int
        Maximal infeasible nodes raised from each infeasible solution (gene orders: the first by increasing
        height, then random; predictive tags make the later ones cheap).
    solver : str
        "cpsat" (default, the fastest measured), "highs" or "milp" (lattice.hitting;
        results/benchmarks/certify.md).
    solve_seconds : float
        Time cap of one solve (doubled whenever a solve ends without a candidate); a capped solve still proves
        its bound, and its best candidate is evaluated like an optimal one.
    name : str
        The algorithm's name in results and reports.
    """

    seed_evaluations: int | None = None
    seed_preset: str = "kgen+"
    cuts: int = 32
    solver: str = "cpsat"
    solve_seconds: float = 20.0
    name: str = "certify"
    exact: ClassVar[bool] = True  # its best is the optimum of the objective when it stops `complete`
    all_minimal: ClassVar[bool] = False  # it also returns every minimal feasible node

    def run(self, problem: Problem, limits: Limits) -> SearchResult:
        """Search `problem` within `limits` (`Search.run`). The result: `best`: the best node found;
        `params["lower_bound"]` the proven bound and `params["optimal"]` whether they meet (a limit stops it with
        the interval reached so far).
        """
        require_certifiable(problem)
        if self.solver not in SOLVERS:
            raise InputError(f"unknown solver {self.solver!r} for 'certify'; choose one of: {', '.join(SOLVERS)}")
        seed_evaluations = 20 * problem.box.dims if self.seed_evaluations is None else self.seed_evaluations
        if self.cuts < 1 or seed_evaluations < 0:
            raise InputError("certify needs cuts >= 1 and seed_evaluations >= 0")
        budget = Budget(problem, limits)
        box = problem.box
        costs = Costs.of_problem(problem)
        model = CutModel(box.lower, box.upper, costs.steps, self.solver, costs.offset)
        denominator = costs.denominator
        tags = SparseTags(box.dims)
        rng = random.Random(limits.seed)
        state = {"lower": None, "rounds": 0, "covers": 0, "exclusions": 0, "seed_seconds": 0.0}
        params: dict = {"solver": self.solver, "cuts_per_round": self.cuts, "seed_evaluations": seed_evaluations,
                        "seed_preset": self.seed_preset, "denominator": denominator}
        seen = {"infeasible": 0, "feasible": 0}  # how much of the budget's archive the model has absorbed

        def absorb() -> None:
            """Cuts from every evaluation the model has not seen yet (seeding, climbs, proposals)."""
            infeasible = budget.infeasible[seen["infeasible"] :]
            seen["infeasible"] = len(budget.infeasible)
            for m in maximal_nodes(infeasible) if len(infeasible) > 1 else infeasible:
                tags.tag(m, False)
                if model.add_cover(m):
                    state["covers"] += 1
            cutoff = None if budget.best is None else costs.cutoff(budget.best)
            for n in budget.feasible[seen["feasible"] :]:
                tags.tag(n, True)
                if n in box and (cutoff is None or costs.cost(n) <= cutoff):
                    model.add_exclusion(n)
                    state["exclusions"] += 1
            seen["feasible"] = len(budget.feasible)
            if cutoff is not None:
                model.set_cutoff(cutoff)

        def raise_gene(x: list[int], i: int) -> None:
            """Raise gene i of the infeasible x to the highest level that keeps it infeasible."""
            lo, hi = x[i], box.upper[i] + 1  # x[i] = lo infeasible; hi: lowest level known feasible
            while hi - lo > 1:
                mid = (lo + hi) // 2
                y = tuple(x[:i] + [mid] + x[i + 1 :])
                if classify(budget, tags, y):
                    hi = mid
                else:
                    lo = mid
            x[i] = lo

        def maximal_above(x: Node, order: list[int]) -> Node:
            y = list(x)
            for i in order:
                if y[i] < box.upper[i]:
                    raise_gene(y, i)
            return tuple(y)

        def body(trace: list[dict]) -> None:
            start = time.perf_counter()
            try:
                if seed_evaluations > 0:
                    self._seed(problem, limits, budget, seed_evaluations)
                state["seed_seconds"] = time.perf_counter() - start
                genes = list(range(box.dims))
                by_height = sorted(genes, key=lambda i: (box.upper[i] - box.lower[i], i))
                cap = self.solve_seconds
                while True:
                    absorb()
                    limit = cap
                    if limits.time_limit is not None:
                        limit = min(cap, max(limits.time_limit - budget.seconds, 0.01))
                    solution = model.solve(limit)
                    state["rounds"] += 1
                    best = budget.best
                    if solution.status == "infeasible":
                        state["lower"] = None if best is None else best.loss
                        return
                    if solution.bound is not None:
                        bound = costs.value(solution.bound)
                        bound = bound if best is None else min(bound, best.loss)
                        state["lower"] = bound if state["lower"] is None else max(state["lower"], bound)
                    if solution.node is None:  # the solver's time cap, no candidate yet: give it longer
                        budget.check_time()
                        cap *= 2
                        continue
                    x = solution.node
                    if classify(budget, tags, x):
                        budget.evaluate(x)  # its LOS (ties) and the archive
                        continue
                    cuts = [maximal_above(x, by_height)]
                    for _ in range(self.cuts - 1):
                        order = genes[:]
                        rng.shuffle(order)
                        cuts.append(maximal_above(x, order))
                    for m in cuts:
                        tags.tag(m, False)
                    if len(trace) < 10_000 and state["rounds"] % 25 == 0:
                        trace.append(self._point(budget, model, state, denominator))
            finally:
                if budget.box_done and budget.best is not None:  # every node of the box evaluated: exact
                    state["lower"] = budget.best.loss
                lower = state["lower"]
                found = None if budget.best is None else budget.best.loss
                params.update({
                    "lower_bound": lower, "certified": True, "cost_units": denominator,
                    "optimal": lower is not None and found is not None and lower >= found,
                    "rounds": state["rounds"], "cover_cuts": state["covers"], "exclusions": state["exclusions"],
                    "solves": model.solves, "solver_seconds": round(model.solve_seconds, 4),
                    "seed_seconds": round(state["seed_seconds"], 4),
                })
                trace.append(self._point(budget, model, state, denominator))

        return guarded(budget, self.name, body, params)

    def _seed(self, problem: Problem, limits: Limits, budget: Budget, evaluations: int) -> None:
        """A short GA whose evaluations go through our budget (its cover cuts and upper bound seed the loop)."""
        from lattice.search.kgen_ga import KGen

        seeded = Problem(BudgetEvaluator(budget), problem.box, problem.heights, problem.monotone_feasibility,
                         problem.monotone_loss, problem.loss_is_log)
        time_left = None if limits.time_limit is None else max(limits.time_limit - budget.seconds, 0.0)
        KGen(preset=self.seed_preset, max_evaluations=evaluations).run(
            seeded, Limits(evaluations, time_left, limits.seed))
        budget.check_time()

    @staticmethod
    def _point(budget: Budget, model: CutModel, state: dict, denominator: int) -> dict:
        lower = state["lower"]
        return {"evaluations": budget.evaluations, "seconds": budget.seconds, "rounds": state["rounds"],
                "cover_cuts": state["covers"], "solver_seconds": model.solve_seconds,
                "lower_bound": lower,
                "best_loss": None if budget.best is None else budget.best.loss}


def certified_bound(problem: Problem, infeasible: Sequence[Node], found: Evaluated | None,
                    time_limit: float | None = 120.0, work_limit: float | None = 10.0, solver: str = "cpsat") -> dict:
    """The lower bound on the optimal LOG that a search's own infeasible evaluations prove (SPEC section 11).

    One small integer program: least LOG over the box outside the down-sets of `infeasible` (its maximal
    nodes), with the objective cut off just below `found`'s loss, so an empty program proves `found` optimal.
    For a separable non-LOG loss (NCP, Loss, entropy; `Problem.level_costs`) the program minimizes the
    loss's suppression-free part, which never exceeds the loss: a valid bound with any suppression limit.
    Returns {"lower_bound", "optimal", "note", "seconds", "cuts", "status"}; `lower_bound` is None, with the
    reason in `note`, when the bound would be unsound (feasibility not monotone, objective dm or aecs). The
    solver's limits only weaken the bound (its proven dual bound is used), never make it wrong: `work_limit` is
    CP-SAT's deterministic time (the same bound whatever the machine's load; 10 units solved the 2,980-cut
    program of a 5,000-evaluation GA run at Cargo q = 25 to optimality in 2.3 CPU seconds), `time_limit` a
    wall-clock safety net.
    """
    start = time.perf_counter()
    record: dict = {"lower_bound": None, "optimal": None, "note": "", "seconds": 0.0, "cuts": 0, "status": None}
    try:
        require_certifiable(problem, "a certified lower bound", loop=False)
    except InputError as error:
        record["note"] = str(error).split(";")[0]
        return record
    box = problem.box
    costs = Costs.of_problem(problem)
    model = CutModel(box.lower, box.upper, costs.steps, solver, costs.offset)
    covers = maximal_nodes(list(infeasible)) if len(infeasible) > 1 else list(infeasible)
    record["cuts"] = sum(1 for m in covers if model.add_cover(m))
    if found is not None:
        model.set_cutoff(costs.below(found))
    solution = model.solve(time_limit, work_limit)
    record["status"] = solution.status
    lower = None
    if solution.status == "infeasible":
        lower = None if found is None else found.loss
    elif solution.bound is not None:
        lower = costs.value(solution.bound) if found is None else min(costs.value(solution.bound), found.loss)
    if lower is not None:
        record["lower_bound"] = lower
        record["optimal"] = found is not None and found.loss - lower <= costs.tolerance
        record["note"] = (f"{record['cuts']} cover cuts from the search's infeasible evaluations"
                          + (" (the solver stopped at its work limit: its proven bound)" if solution.status == "limit"
                             else "")
                          + ("" if costs.exact else "; the loss's suppression-free part, a sum of per-attribute "
                             "level costs, bounds it from below"))
    else:
        record["note"] = "the bound's integer program found no bound within its time limit"
    record["seconds"] = time.perf_counter() - start
    return record
