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

Before the rounds (issue 30): on many genes, groups of genes certified apart with the other genes at their top
level (the decomposition bound, `CertifyLoop.decompose`), and the short cuts of every pair of genes
(`CertifyLoop.pair_cuts`); between rounds, an optional primal side (`Certify.primal`, e.g. `descend`); once the
cutoff nears the groups' floors, the groups walked past their optimum (`CertifyLoop.deepen`) and conditional
floors across groups (`CertifyLoop.condition`).

Ties: the cutoff is inclusive and the exclusions remove only evaluated nodes' up-sets, so every node of the
optimal LOG that is not known infeasible is proposed and evaluated before the program runs dry; the Budget
keeps the least LOS, then the lexicographically smaller node (the SPEC's tie rule).

Sound only for monotone feasibility and an objective that is a sum of per-gene level costs known before the
evaluation (LOG); otherwise it refuses with an InputError. Limits stop it with the interval reached so far
(`params["lower_bound"]`, `params["optimal"]`).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import ClassVar

import numpy as np

from lattice.box import Box
from lattice.errors import InputError
from lattice.hitting import SOLVERS, STRATEGIES, CutModel, integer_step_costs, maximal_nodes
from lattice.node import Node
from lattice.search.base import (
    EVALUATE_ALL_MAX_NODES,
    Budget,
    Evaluated,
    Limits,
    Problem,
    SearchResult,
    guarded,
    stopped_by,
)
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


LAST_SOLVE_SECONDS = 10.0  # wall-clock safety net of `CertifyLoop.last_solve`
LAST_SOLVE_WORK = 5.0  # CP-SAT deterministic time of `CertifyLoop.last_solve`
# Without a limit, a box of more than EVALUATE_ALL_MAX_NODES nodes is searched this long, then the interval
# reached is reported (Cargo 2000's 25 QIs are proved in well under it; 50 and 97 QIs are not proved at all).
DEFAULT_SECONDS = 600.0
CLIMB_SECONDS = 30.0  # `tightened_bound`'s wall-clock safety net
CLIMB_ROUNDS = 10  # `tightened_bound`'s rounds (Cargo q = 25: about 3 CPU s)
CLIMB_WORK = 2.0  # `tightened_bound`'s CP-SAT deterministic time per solve
FIRST_WORK = 10.0  # ... and of its first solve, `certified_bound`'s work limit (at Cargo q = 50 two units proved
# 0.353 from a GA's cuts where `certified_bound`'s ten proved 0.426)
BOUND_GROUP = 10  # `tightened_bound`'s group size (Cargo q = 97, interleaved: 10 groups, 0.729 in 2.4 CPU s)
DEEPEN_GAP = 0.02  # `CertifyLoop.deepen` runs once the cutoff is within this much LOG of the floors' sum (Cargo
# q = 50: 0.012 from round 2 on, a 36-unit band a group, 52 CPU s; q = 97's 0.046 or more would take the budget)
GROUP_CUTS = 8  # cuts per round of a group's loop (`CertifyLoop.decompose`)
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
        raise InputError(f"{what} needs monotone feasibility (k-anonymity, distinct l-diversity, k-map, average "
                         "risk, sample uniqueness, or with suppression limit 0 any model but delta-disclosure "
                         "and Grassberger's entropy l-diversity); entropy/recursive "
                         "l-diversity, t-closeness, beta-likeness, delta-disclosure and delta-presence with "
                         "suppression, and population uniqueness, are not: use 'ola' or 'exhaustive'")
    if not problem.loss_is_log and problem.level_costs is None:
        raise InputError(f"{what} needs the LOG objective or a separable one (ncp, loss, entropy, arx-entropy, "
                         "arx-entropy-nm, arx-precision); dm, aecs, arx-dm and arx-loss are not sums of "
                         "per-attribute level costs: use 'ola' or 'bestfirst' for them")
    if loop and not problem.loss_is_log and not problem.monotone_loss:
        raise InputError(f"{what} needs a monotone loss: ncp, loss, entropy, arx-entropy-nm and arx-precision are "
                         "monotone only with suppression limit 0 (--suppression 0); use 'ola' or 'bestfirst', or "
                         "--metric log or arx-entropy")


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
    strategy : str
        CP-SAT's search (`lattice.hitting.STRATEGIES`): "adaptive" (default: "default" once the groups proved
        floors, else lp0 on small programs, core on large ones), "default", "core", "lp0" or "core-lp0".
    solve_seconds : float
        Time cap of one solve (doubled whenever a solve ends without a candidate); a capped solve still proves
        its bound, and its best candidate is evaluated like an optimal one.
    groups : int
        Before the loop (and the pairs), the genes in consecutive groups of at most this many, each group
        certified on its own with the other genes at their top level (`CertifyLoop.decompose`; 0: none; only
        for LOG and boxes of more than 1.5 groups' free genes). 25: Cargo q = 25 is proved in about 8 CPU s,
        so each group of Cargo q = 50 and 97 is proved on its own (q = 50: [0.747, 0.828] after 150 s).
    pairs : bool
        Before the loop, the short cuts of every pair of genes with the others at their top level
        (`CertifyLoop.pair_cuts`; skipped when they would take more than half of an evaluation limit).
    primal : callable, optional
        A primal side, called with the loop between rounds (`CertifyLoop.primal`): it may evaluate nodes through
        `loop.budget` (a better node lowers the cutoff, its infeasible nodes become cuts in the next round).
    descent : bool
        Where the groups proved floors (`decompose`) and no `primal` is given, `descend` is the primal side
        (Cargo q = 50: upper end 0.808 after 42 CPU s of rounds instead of 76; q = 97: 0.860 after 70 CPU s
        where the rounds alone kept the groups' 0.874). Not below: at q = 25 it cost more than it saved.
    round_work : float
        Where the groups proved floors (`decompose`): each round's solve is capped at this much CP-SAT
        deterministic time (doubled whenever a solve ends without a candidate, so the last solves still prove
        the program empty). Why: there the program's bound is the floors' (its LP relaxation), and a capped
        solve's near-least node is as good a proposal as an exact one: Cargo q = 50 went from 6 units of cost
        per 12-CPU-s exact round to about 12 per 2-CPU-s capped round (results/benchmarks/certify-scale.md).
    deepen : bool
        Where the groups proved floors (`decompose`), once the cutoff is within DEEPEN_GAP of their sum: each
        group walked on past its optimum up to the most its genes can cost below the cutoff
        (`CertifyLoop.deepen`), so that the program knows every infeasible part of each group in that band
        (Cargo q = 50: with `conditional`, 0.808 proved optimal in 179 CPU s, where the bound stayed at 0.796).
    conditional : bool
        Once the groups are deepened (`deepen`): for each infeasible solution of the program, each group's least
        cost with the other genes held at the solution's levels, a conditional floor (`CertifyLoop.condition`).
        Not before: at Cargo q = 50 they left the bound at 0.796 for 16 rounds (59 CPU s), and at q = 97
        (never deepened) their short cuts cost rounds.
    collect : int
        CP-SAT's other solutions of each solve (up to this many, `CutModel.solve(collect=)`) are proposals too,
        each raised in `cuts // 4` gene orders: more cuts and candidates from one solve (Cargo q = 25: proved in
        27 rounds and 6.0 CPU s instead of 62 and 9.5; q = 50: the upper end 0.808 where exact rounds kept 0.828).
    name : str
        The algorithm's name in results and reports.
    """

    seed_evaluations: int | None = None
    seed_preset: str = "kgen+"
    cuts: int = 32
    solver: str = "cpsat"
    solve_seconds: float = 20.0
    strategy: str = "adaptive"
    groups: int = 25
    pairs: bool = True
    primal: Callable[[CertifyLoop], None] | None = None
    descent: bool = True
    round_work: float = 1.0
    collect: int = 4
    deepen: bool = True
    conditional: bool = True
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
        if self.strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {self.strategy!r} for 'certify'; choose one of: "
                             f"{', '.join(STRATEGIES)}")
        if self.cuts < 1 or seed_evaluations < 0:
            raise InputError("certify needs cuts >= 1 and seed_evaluations >= 0")
        if limits.time_limit is None and limits.max_evaluations is None and problem.box.size > EVALUATE_ALL_MAX_NODES:
            limits = replace(limits, time_limit=DEFAULT_SECONDS)  # a box it may not finish: its interval by then
        loop = CertifyLoop(self, problem, limits, seed_evaluations)
        return guarded(loop.budget, self.name, loop.body, loop.params)

    def _seed(self, problem: Problem, limits: Limits, budget: Budget, evaluations: int) -> None:
        """A short GA whose evaluations go through our budget (its cover cuts and upper bound seed the loop)."""
        from lattice.search.kgen_ga import KGen

        seeded = Problem(BudgetEvaluator(budget), problem.box, problem.heights, problem.monotone_feasibility,
                         problem.monotone_loss, problem.loss_is_log)
        time_left = None if limits.time_limit is None else max(limits.time_limit - budget.seconds, 0.0)
        KGen(preset=self.seed_preset, max_evaluations=evaluations).run(
            seeded, Limits(evaluations, time_left, limits.seed))
        budget.check_time()


class CertifyLoop:
    """The state of one certified search, advanced in named steps (pymoo's initialize / advance / finalize).

    Why a class: the loop shares a budget, the cut model, the tags, the rng and its counters among its steps;
    kept on `self`, each step is a short method that says what it does, and a caller (the `auto` search) can
    drive the same steps with its own primal side between rounds.
    """

    def __init__(self, search: Certify, problem: Problem, limits: Limits, seed_evaluations: int) -> None:
        self.search, self.problem, self.limits = search, problem, limits
        self.seed_evaluations = seed_evaluations
        self.budget = Budget(problem, limits)
        self.box = problem.box
        self.costs = Costs.of_problem(problem)
        self.model = CutModel(self.box.lower, self.box.upper, self.costs.steps, search.solver, self.costs.offset,
                              search.strategy)
        self.tags = SparseTags(self.box.dims)
        self.rng = random.Random(limits.seed)
        self.lower: float | None = None
        self.bound_units: int | None = None  # the highest solver bound, in cost units (`prove`)
        self.rounds = self.covers = self.exclusions = 0
        self.seed_seconds = 0.0
        self.cap = search.solve_seconds
        self.round_work = search.round_work  # CP-SAT work of a round's solve on a large program (`advance`)
        self.incumbent: Node | None = None  # another search's best node (`preload`), evaluated first
        self.preloaded: list[Node] = []  # another search's infeasible nodes (`preload`), cut after the pairs
        self.closing_solve = True  # `last_solve` when a limit stops the loop before its first (not in a group)
        self.last_maximal: list[Node] = []  # the maximal infeasible nodes of the last round's climbs (`descend`)
        self.pair_table: np.ndarray | None = None  # `pair_cuts`: [i, j, a] the highest infeasible x_j at x_i = a
        self.pair_genes: np.ndarray | None = None  # ... the free genes it was walked on (its other rows are -1)
        self.max_rounds: int | None = None  # `tightened_bound`: a fixed number of rounds (same answer at any load)
        self.work_limit: float | None = None  # CP-SAT deterministic time per solve (`tightened_bound`)
        self.first_work: float | None = None  # ... and of its first solve (the search's own cuts: `certified_bound`'s)
        self.seen_infeasible = self.seen_feasible = 0  # how much of the budget's archive the model has absorbed
        self.floors: list[tuple[tuple[int, ...], int]] = []  # `decompose`: (genes, least cost on them), proved
        self.ceiling: int | None = None  # `deepen`: the cutoff in cost units, in place of the best node's
        self.conditionals: list[tuple[tuple[int, ...], int, Node]] = []  # `condition`: (genes, units, held node)
        self.proposed: set[Node] = set()  # the program's solutions so far: none may come twice (`answer`)
        genes = list(range(self.box.dims))
        self.genes = genes
        self.by_height = sorted(genes, key=lambda i: (self.box.upper[i] - self.box.lower[i], i))
        self.params: dict = {"solver": search.solver, "strategy": search.strategy, "cuts_per_round": search.cuts,
                             "seed_evaluations": seed_evaluations, "seed_preset": search.seed_preset,
                             "denominator": self.costs.denominator}

    # --- the steps ------------------------------------------------------------------------------------------

    def body(self, trace: list[dict]) -> None:
        """Seed, then rounds until the program runs dry (the best node is optimal) or a limit stops it."""
        try:
            self.initialize()
            while (self.max_rounds is None or self.rounds < self.max_rounds) and self.advance():
                if len(trace) < 10_000 and self.rounds % 25 == 0:
                    trace.append(self.point())
        finally:
            self.finalize()
            trace.append(self.point())

    def initialize(self) -> None:
        """The seeding GA (its best node: the first cutoff; its infeasible nodes: the first cover cuts), after
        a preloaded search's best node."""
        start = time.perf_counter()
        if self.incumbent is not None:
            self.budget.evaluate(self.incumbent)
        if self.seed_evaluations > 0:
            self.search._seed(self.problem, self.limits, self.budget, self.seed_evaluations)
        self.seed_seconds = time.perf_counter() - start
        if self.decomposes():
            self.decompose(self.search.groups)
        if self.search.pairs:
            self.pair_cuts()
        if self.max_rounds == 0 and self.lower is not None:
            return  # no round will read another search's cuts (`tightened_bound` after a decomposition)
        preloaded = maximal_nodes(self.preloaded) if len(self.preloaded) > 1 else self.preloaded
        for m in preloaded:
            self.tags.tag(m, False)
        for m in self.unimplied(preloaded):
            self.covers += self.model.add_cover(m)

    def advance(self) -> bool:
        """One round: absorb the new evaluations, solve, then evaluate or raise the solution. False when the
        program has no solution below the cutoff (the best node found is optimal)."""
        self.absorb()
        work = self.first_work if self.rounds == 0 and self.first_work is not None else self.work_limit
        if work is None and self.model.floors:
            work = self.round_work
        solution = self.model.solve(self.solve_limit(), work, self.search.collect)
        self.rounds += 1
        if solution.status == "infeasible":
            self.lower = None if self.budget.best is None else self.budget.best.loss
            return False
        self.prove(solution.bound)
        if solution.node is None:  # the solver's time or work cap, no candidate yet: give it longer
            self.budget.check_time()
            self.cap *= 2
            self.round_work *= 2
            return True
        if self.search.deepen and self.floors and "deepened" not in self.params and self.narrow():
            self.deepen()
        conditions = self.search.conditional and "deepened" in self.params  # alone they did not pay (docs/certify.md)
        held = solution.node if conditions and not self.feasible(solution.node) else None
        self.answer(solution.node)
        if held is not None:
            self.condition(held)
        for other in solution.others:
            if other not in self.proposed:
                self.answer(other, max(self.search.cuts // 4, 1))
        if self.search.primal is not None:
            self.search.primal(self)
        elif self.search.descent and self.model.floors:
            descend(self)
        return True

    def finalize(self) -> None:
        """The interval reached and the loop's counters, into `params` (also when a limit stopped it)."""
        budget = self.budget
        if self.lower is None and self.model.solves == 0 and self.closing_solve:
            self.last_solve()
        if budget.box_done and budget.best is not None:  # every node of the box evaluated: exact
            self.lower = budget.best.loss
        found = None if budget.best is None else budget.best.loss
        self.params.update({
            "lower_bound": self.lower, "certified": True, "cost_units": self.costs.denominator,
            "optimal": self.lower is not None and found is not None and self.lower >= found,
            "rounds": self.rounds, "cover_cuts": self.covers, "exclusions": self.exclusions,
            "solves": self.model.solves, "solver_seconds": round(self.model.solve_seconds, 4),
            "seed_seconds": round(self.seed_seconds, 4), "conditional_floors": len(self.conditionals),
        })

    def last_solve(self) -> None:
        """One solve of the cuts known when a limit stopped the loop before its first solve (the seeding GA
        spent the budget), so that the answer still comes with a proved bound: CP-SAT's deterministic work
        limit keeps it short (and the same whatever the machine's load)."""
        self.absorb()
        solution = self.model.solve(LAST_SOLVE_SECONDS, LAST_SOLVE_WORK)
        if solution.status == "infeasible":
            self.lower = None if self.budget.best is None else self.budget.best.loss
        else:
            self.prove(solution.bound)

    def preload(self, infeasible: Sequence[Node], found: Evaluated | None) -> None:
        """Start from another search's evaluations: its infeasible nodes tag their down-sets and become cuts
        (in `initialize`, after the pair cuts that may imply them) and its best node is evaluated through this
        loop's budget (the cutoff), so that the loop goes on where it stopped."""
        self.preloaded = list(infeasible)
        self.incumbent = None if found is None else found.node

    def decompose(self, size: int) -> None:
        """Certify each group of at most `size` free genes with the other genes at their top level, through
        this loop's budget (its evaluations count; their infeasible nodes become this loop's cuts).

        Why: a node feasible in the whole problem stays feasible with every gene outside a group G raised to
        its top (monotone feasibility), so its cost on G is at least opt_G, the least cost on G of the
        sub-problem; for disjoint groups, the sum of the opt_G (or of their proved bounds, when a limit stops a
        group) is a lower bound on the optimum (the decomposition bound, proved here at once), and the groups'
        cuts name only their own genes (short cuts the program keeps). Cargo 2000 q = 97, groups of 16: LOG
        0.697 in 5.7 CPU s, where the pair cuts alone prove 0.599 and a GA's cuts 0.33. Each group's time share
        is what the limit leaves, over the groups left.

        The groups interleave the genes (gene i in group i mod count), not consecutive runs: neighbouring
        columns of a table are often alike (Cargo 2000's planned and effective times of one leg), and alike
        genes in one group identify little together, so that group needs little generalization and its opt_G is
        low; spread over the groups, each group's genes are as unlike as the table allows and every opt_G is
        higher. Cargo q = 50, two groups, both solved: 0.796 against 0.747 for consecutive halves
        (results/benchmarks/certify-scale.md, fifth round).
        """
        free = [i for i in range(self.box.dims) if self.box.lower[i] < self.box.upper[i]]
        count = math.ceil(len(free) / size) if size > 0 else 0
        if count < 2:
            return
        groups = [free[g::count] for g in range(count)]  # interleaved: see the docstring
        lower = self.box.lower
        units = self.costs.offset + sum(self.gene_cost(i, lower[i]) for i in range(self.box.dims))
        solved = 0
        composed = list(lower)
        for g, genes in enumerate(groups):
            sub = self.group_loop(genes, self.time_share(count - g))
            stopped_by(sub.body, [])
            proved = self.group_units(sub, genes)
            solved += bool(sub.params.get("optimal"))
            if sub.budget.best is not None:
                for i in genes:
                    composed[i] = sub.budget.best.node[i]
            if proved is not None:
                units += proved - sum(self.gene_cost(i, lower[i]) for i in genes)
                self.floors.append((tuple(genes), proved))
                self.model.add_floor(genes, proved)
            # the groups done so far, the others at their lowest: a bound already if the time limit stops here
            self.params.update(decomposition_bound=self.costs.value(units), groups=len(groups), groups_solved=solved)
            self.prove(units)
            self.budget.check_time()
        self.repair(tuple(composed))

    def deepen(self) -> None:
        """Walk each proved group (`decompose`) on past its optimum, up to the most its genes can cost in a node
        below the cutoff (the cutoff less the other groups' floors): every part of the group in that band is then
        settled, feasible (with the other genes at their top) or below a short cut this loop's program keeps.

        Why: a group's own loop stops at its optimum, so the program knows nothing of the group's slightly
        dearer parts and keeps combining them, each group's cheapest unsettled part with the others' (Cargo
        q = 50: its bound stayed the groups' sum, 0.796); walked up to its band, only parts feasible on their own
        remain and the program's solutions fail only by the groups' interaction (`condition`). Each group's
        loop starts from the archive's infeasible nodes with the other genes at their top."""
        if self.budget.best is None or not self.floors:
            return
        upper, lower = self.box.upper, self.box.lower
        held = [i for i in range(self.box.dims) if lower[i] == upper[i]]
        fixed = self.costs.offset + sum(self.gene_cost(i, lower[i]) for i in held)
        total = sum(units for _, units in self.floors)
        for g, (genes, units) in enumerate(self.floors):
            others = [i for i in range(self.box.dims) if i not in genes]
            band = self.costs.cutoff(self.budget.best) - fixed - (total - units)
            sub = self.group_loop(genes, self.time_share(len(self.floors) - g))
            sub.ceiling = band + self.costs.offset + sum(self.gene_cost(i, upper[i]) for i in others)
            self.warm(sub, others, tuple(upper))
            stopped_by(sub.body, [])
            self.budget.check_time()
        self.params["deepened"] = len(self.floors)

    def narrow(self) -> bool:
        """Whether the cutoff lies within DEEPEN_GAP of the floors' sum (`deepen`'s bands are then narrow)."""
        if self.budget.best is None or self.bound_units is None:
            return False
        return self.costs.cutoff(self.budget.best) - self.bound_units <= DEEPEN_GAP * self.costs.denominator

    def warm(self, sub: CertifyLoop, others: Sequence[int], held: Node) -> None:
        """Start a group's loop (`deepen`, `condition`) from the archive's infeasible nodes at or above `held`
        on the genes outside the group: below such a node lie the held problem's nodes it rules out."""
        if not self.budget.infeasible:
            return
        infeasible = np.array(self.budget.infeasible, dtype=np.int64)
        above = (infeasible[:, others] >= np.array([held[i] for i in others])).all(axis=1)
        sub.preload([tuple(int(v) for v in row) for row in infeasible[above]], None)

    def condition(self, x: Node) -> int:
        """Conditional floors from the program's solution `x`: for each group G of the decomposition, the least
        cost of G with every other gene held at its level in `x` (a group's certified loop), written into the
        program as "every node at or below x outside G costs at least that on G" (`CutModel.add_conditional_floor`).
        Returns the floors added.

        Why: the floors of `decompose` hold the other genes at their top, so the program keeps pairing the
        groups' cheapest levels (Cargo q = 50: its bound stays the groups' sum); with the others held at x the
        group needs more, and by monotone feasibility that holds for every node whose other genes lie at or
        below x's (raise them to x's: still feasible, and G's levels then solve the held problem). Each group's
        loop starts from the archive's infeasible nodes that lie at or above x outside G (valid cuts of the
        held problem); its own evaluations become this loop's cuts.

        First, and alone when it finds any, the short cuts: where x's part on G is infeasible with the other
        genes at their top, it is raised on G's genes to a maximal infeasible node (a cut on G's genes only,
        a few evaluations instead of a group's proof)."""
        return 0 if self.project(x) else self.hold(x)

    def hold(self, x: Node) -> int:
        """The conditional floors of `condition` (its group proofs), without its short cuts first."""
        added = 0
        for genes, _ in list(self.floors):
            others = [i for i in range(self.box.dims) if i not in genes]
            sub = self.group_loop(genes, self.time_share(), fixed=x)
            self.warm(sub, others, x)
            stopped_by(sub.body, [])
            proved = self.group_units(sub, genes)
            free = {i: x[i] for i in others if self.box.lower[i] < self.box.upper[i]}
            if proved is not None and self.model.add_conditional_floor(genes, proved, free):
                self.conditionals.append((tuple(genes), proved, x))
                added += 1
            self.budget.check_time()
        return added

    def project(self, x: Node) -> bool:
        """The short cuts of `condition`: for each group whose part of `x` is infeasible with the other genes at
        their top, that node raised on the group's genes to a maximal infeasible node. Whether any was."""
        upper, found = self.box.upper, False
        for genes, _ in self.floors:
            y = tuple(x[i] if i in genes else upper[i] for i in range(self.box.dims))
            if self.feasible(y):
                continue
            order = [i for i in self.by_height if i in genes]
            self.tags.tag(self.maximal_above(y, order), False)
            found = True
        return found

    def repair(self, x: Node) -> None:
        """A primal step from the groups' own best levels put together (`decompose`): feasible, a candidate;
        infeasible (the groups interact), climbed to a maximal infeasible node and repaired by `descend`."""
        if self.feasible(x):
            self.budget.evaluate(x)
            return
        self.last_maximal = [self.maximal_above(x, self.by_height)]
        self.tags.tag(self.last_maximal[0], False)
        descend(self)

    def decomposes(self) -> bool:
        """Whether `initialize` runs `decompose`: LOG (integer costs) and over 1.5 groups' free genes."""
        free = sum(a < b for a, b in zip(self.box.lower, self.box.upper))
        return self.search.groups > 0 and self.costs.exact and free > 1.5 * self.search.groups

    def group_loop(self, genes: Sequence[int], seconds: float | None, fixed: Node | None = None) -> CertifyLoop:
        """The certified loop of one group (`decompose`): the box of this loop with every other gene fixed at
        its top (or at its level in `fixed`: `condition`), evaluated through this loop's budget.

        A group walks its own pairs (`pair_cuts`) whatever this loop does: among a group's genes they are a
        few hundred evaluations and spare it rounds (Cargo q = 97, `tightened_bound`'s 7 groups: 8,401
        evaluations and 3.6 CPU s instead of 10,524 and 4.7, the same bound 0.687)."""
        lower, upper = self.box.lower, self.box.upper
        held = upper if fixed is None else fixed
        box = Box(tuple(lower[i] if i in genes else held[i] for i in range(self.box.dims)),
                  tuple(upper[i] if i in genes else held[i] for i in range(self.box.dims)))
        problem = replace(self.problem, evaluator=BudgetEvaluator(self.budget), box=box)
        search = replace(self.search, groups=0, primal=None, seed_evaluations=0, name="group",
                         cuts=min(self.search.cuts, GROUP_CUTS), pairs=True)
        sub = CertifyLoop(search, problem, Limits(None, seconds, self.limits.seed), 0)
        sub.work_limit = self.work_limit  # `tightened_bound`'s solves: the same work whatever the load
        sub.closing_solve = False  # a group stopped by the time limit adds nothing: no 10-s solve past it
        return sub

    def group_units(self, sub: CertifyLoop, genes: Sequence[int]) -> int | None:
        """What a group's loop proved of its genes' cost (`decompose`, `condition`), in cost units: the cost of
        the sub-problem's least node, or of its bound, less the fixed levels of the other genes."""
        best = sub.budget.best
        if best is None:
            return None
        proved = self.costs.cost(best.node) if sub.params.get("optimal") else sub.bound_units
        if proved is None:
            return None
        proved = min(proved, self.costs.cost(best.node))
        outside = [i for i in range(self.box.dims) if i not in genes]
        return proved - self.costs.offset - sum(self.gene_cost(i, sub.box.upper[i]) for i in outside)

    def gene_cost(self, i: int, level: int) -> int:
        """Cost units of gene i at `level` (`Costs.cost` is the offset plus their sum)."""
        return sum(self.costs.steps[i][:level])

    def pair_cuts(self) -> None:
        """Short cover cuts from every pair of genes (i, j) with the other genes at their top level.

        Why: a cut from a node whose other genes are at the top names genes i and j only, so it covers far more
        of the lattice than the loop's own cuts (feasibility is monotone: if x is feasible, so is x with every
        other gene raised; hence (a, b, top...) infeasible rules out every node with x_i <= a and x_j <= b).
        All of them together make the program at least the decomposition bound of any pairing of the genes
        (the sum of each pair's own optimum), and they cost only evaluations: at Cargo 2000 q = 25, 1,493
        evaluations (0.06 CPU s) proved 0.653 before any round and halved the whole proof's CPU seconds
        (results/benchmarks/certify-scale.md). Each pair's staircase of maximal infeasible (a, b) is walked
        from (lower_i, upper_j): b falls while (a, b) is feasible, a rises otherwise (at most h_i + h_j + 1
        evaluations, one when (lower_i, lower_j) is already feasible). Skipped when the walk could take more
        than half of an evaluation limit.
        """
        lower, upper = self.box.lower, self.box.upper
        pairs = list(itertools.combinations([i for i in range(self.box.dims) if lower[i] < upper[i]], 2))
        most = sum(upper[i] - lower[i] + upper[j] - lower[j] + 2 for i, j in pairs)
        cap = self.limits.max_evaluations
        if not pairs or (cap is not None and self.budget.evaluations + most > cap // 2):
            self.params["pair_cuts"] = "skipped" if pairs else 0
            return
        self.absorb()  # what came before, so that the walks' own evaluations can be absorbed here
        before = self.budget.evaluations
        table = np.full((self.box.dims, self.box.dims, max(upper) + 1), -1, dtype=np.int16)
        added = 0
        for i, j in pairs:
            for a, b in self.staircase(i, j):
                table[i, j, : a + 1] = np.maximum(table[i, j, : a + 1], b)
                table[j, i, : b + 1] = np.maximum(table[j, i, : b + 1], a)
                node = list(upper)
                node[i], node[j] = a, b
                added += self.model.add_cover(tuple(node))
        self.pair_table = table
        self.pair_genes = np.array(sorted({g for pair in pairs for g in pair}), dtype=np.int64)
        self.covers += added
        self.absorb_walks()
        self.params.update(pair_cuts=added, pair_evaluations=self.budget.evaluations - before)

    def absorb_walks(self) -> None:
        """The pair walks' feasible nodes, as `absorb` would take them but untagged (tens of thousands at
        q = 97 would slow every look-up of the tags; a master solution meets every pair cut, so their tags
        would never decide one): only those within the cutoff need excluding. Their infeasible nodes are
        all below the pair cuts already added."""
        budget, costs = self.budget, self.costs
        cutoff = self.cutoff_units()
        for n in budget.feasible[self.seen_feasible :]:
            if n in self.box and (cutoff is None or costs.cost(n) <= cutoff):
                self.model.add_exclusion(n)
                self.exclusions += 1
        self.seen_feasible, self.seen_infeasible = len(budget.feasible), len(budget.infeasible)
        if cutoff is not None:
            self.model.set_cutoff(cutoff)

    def unimplied(self, nodes: Sequence[Node], block: int = 256) -> list[Node]:
        """The infeasible `nodes` whose cover cuts the pair cuts do not imply (all of them before `pair_cuts`).

        Why: the cut of m is implied by the cut of any infeasible node above m, and a pair cut's node lies above
        m when m_j <= table[i, j, m_i] for some genes i != j: a GA's infeasible nodes are mostly such low nodes
        (dropping them keeps the program small). Only the walked genes are read: a group's loop (`decompose`)
        walks 13-25 of Cargo's 97 genes, and its checks read 97 x 97 entries per node otherwise (0.3 of 3.6
        CPU s of `tightened_bound` at q = 97)."""
        table, genes = self.pair_table, self.pair_genes
        if table is None or genes is None or not nodes:
            return list(nodes)
        rows, cols = genes[:, None], genes[None, :]
        kept: list[Node] = []
        for first in range(0, len(nodes), block):
            chunk = list(nodes[first : first + block])
            m = np.clip(np.array(chunk, dtype=np.int64)[:, genes], 0, table.shape[2] - 1)
            highest = table[rows, cols, m[:, :, None]]  # [n, i, j]: highest infeasible x_j at x_i = m_i
            implied = (highest >= m[:, None, :]).any(axis=(1, 2))
            kept.extend(node for node, drop in zip(chunk, implied) if not drop)
        return kept

    def staircase(self, i: int, j: int) -> list[tuple[int, int]]:
        """The levels (a, b) of genes i and j of the maximal infeasible nodes with every other gene at its top
        level (see `pair_cuts`)."""
        lower, upper = self.box.lower, self.box.upper
        base = list(upper)

        def infeasible(a: int, b: int) -> bool:
            base[i], base[j] = a, b
            return not self.budget.evaluate(tuple(base)).feasible

        if not infeasible(lower[i], lower[j]):
            return []
        steps: list[tuple[int, int]] = []
        b = upper[j]
        for a in range(lower[i], upper[i] + 1):
            while b >= lower[j] and not infeasible(a, b):
                b -= 1
            if b < lower[j]:
                break
            if steps and steps[-1][1] == b:
                steps.pop()  # (a - 1, b) lies below (a, b)
            steps.append((a, b))
        return steps

    # --- parts of a round -----------------------------------------------------------------------------------

    def absorb(self) -> None:
        """Cuts from every evaluation the model has not seen yet (seeding, climbs, proposals, a primal side)."""
        budget, tags, model, costs = self.budget, self.tags, self.model, self.costs
        infeasible = budget.infeasible[self.seen_infeasible :]
        self.seen_infeasible = len(budget.infeasible)
        for m in maximal_nodes(self.unimplied(infeasible)) if len(infeasible) > 1 else infeasible:
            tags.tag(m, False)
            if model.add_cover(m):
                self.covers += 1
        cutoff = self.cutoff_units()
        for n in budget.feasible[self.seen_feasible :]:
            tags.tag(n, True)
            if n in self.box and (cutoff is None or costs.cost(n) <= cutoff):
                model.add_exclusion(n)
                self.exclusions += 1
        self.seen_feasible = len(budget.feasible)
        if cutoff is not None:
            model.set_cutoff(cutoff)

    def cutoff_units(self) -> int | None:
        """The program's cutoff: the best node's cost, or the `ceiling` a deepened group walks up to."""
        if self.ceiling is not None:
            return self.ceiling
        return None if self.budget.best is None else self.costs.cutoff(self.budget.best)

    def time_share(self, parts: int = 1) -> float | None:
        """One of `parts` equal shares of what the time limit leaves (None: no limit), for a group's loop."""
        if self.limits.time_limit is None:
            return None
        return max(self.limits.time_limit - self.budget.seconds, 0.0) / parts

    def solve_limit(self) -> float:
        """This solve's time cap: the search's cap, within what the time limit leaves."""
        share = self.time_share()
        return self.cap if share is None else min(self.cap, max(share, 0.01))

    def prove(self, bound: int | None) -> None:
        """Raise the proved lower bound to a solve's bound (never above the best node found)."""
        if bound is None:
            return
        self.bound_units = bound if self.bound_units is None else max(self.bound_units, bound)
        value = self.costs.value(bound)
        best = self.budget.best
        value = value if best is None else min(value, best.loss)
        self.lower = value if self.lower is None else max(self.lower, value)

    def answer(self, x: Node, cuts: int | None = None) -> None:
        """Evaluate the program's solution: feasible, it is a candidate (its LOS, the archive); infeasible,
        raise it to `cuts` maximal infeasible nodes (their cover cuts come with the next `absorb`).

        A solution that comes twice means a lost cut or a wrong cutoff (the infeasible node's cover cut, or the
        feasible node's cost, excludes it from every later program): an internal error, raised at once, where
        the loop would otherwise propose it for ever."""
        if x in self.proposed:
            raise RuntimeError(f"certify: the program proposed node {x} a second time: a cut or the cutoff was "
                               "lost (an internal error, not the data's)")
        self.proposed.add(x)
        if self.feasible(x):
            self.budget.evaluate(x)
            return
        orders = [self.by_height]
        for _ in range((self.search.cuts if cuts is None else cuts) - 1):
            order = self.genes[:]
            self.rng.shuffle(order)
            orders.append(order)
        self.last_maximal = [self.maximal_above(x, order) for order in orders]
        for m in self.last_maximal:
            self.tags.tag(m, False)

    def feasible(self, x: Node) -> bool:
        return classify(self.budget, self.tags, x)

    def maximal_above(self, x: Node, order: Sequence[int]) -> Node:
        """A maximal infeasible node above the infeasible `x`: each gene in `order` raised to the highest
        level that keeps it infeasible (a binary search per gene).

        Why not ask the tags probe by probe: on hundreds of stored tagging nodes each question is a scan
        (10 of 31 s at Cargo q = 25). The stored nodes are read once per climb: for gene i, the infeasible
        nodes that dominate y everywhere but at i say up to which level y stays infeasible, the feasible ones
        below y everywhere but at i from which level it is feasible; counts of the genes where each stored
        node fails to dominate are kept up to date as y rises. The probes are those of the plain binary
        search (same evaluations, same cuts); only the unknown ones are evaluated.
        """
        upper = self.box.upper
        y = np.array(x, dtype=np.int64)
        bad = self.tags.stored(False).copy()  # copies: the climb's own tags may compact the stores
        good = self.tags.stored(True).copy()
        bad_fails = (bad < y).sum(axis=1)  # genes where an infeasible tagging node is below y
        good_fails = (good > y).sum(axis=1)  # genes where a feasible tagging node is above y
        for i in order:
            if y[i] >= upper[i]:
                continue
            bad_col, good_col = bad[:, i], good[:, i]
            rows = bad_fails - (bad_col < y[i]) == 0
            infeasible_to = int(bad_col[rows].max()) if rows.any() else -1
            rows = good_fails - (good_col > y[i]) == 0
            feasible_from = int(good_col[rows].min()) if rows.any() else upper[i] + 1
            old = int(y[i])
            y[i] = self.climb(y, i, infeasible_to, feasible_from)
            bad_fails += (bad_col >= old) & (bad_col < y[i])
            good_fails -= (good_col > old) & (good_col <= y[i])
        return tuple(int(v) for v in y)

    def climb(self, y: np.ndarray, i: int, infeasible_to: int, feasible_from: int) -> int:
        """The binary search of gene i of the infeasible y (levels <= `infeasible_to` known infeasible, >=
        `feasible_from` known feasible): the highest level that keeps y infeasible."""
        lo, hi = int(y[i]), self.box.upper[i] + 1  # y[i] = lo infeasible; hi: lowest level known feasible
        base = [int(v) for v in y]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if mid <= infeasible_to:
                lo = mid
                continue
            if mid >= feasible_from:
                hi = mid
                continue
            base[i] = mid
            node = tuple(base)
            known = self.budget.known(node)
            feasible = bool((known or self.budget.evaluate(node)).feasible)
            if known is None:
                self.tags.tag(node, feasible, undecided=True)
            if feasible:
                hi = mid
            else:
                lo = mid
        return lo

    def point(self) -> dict:
        """One trace record: evaluations, seconds, rounds, cuts, solver seconds and the interval."""
        budget = self.budget
        return {"evaluations": budget.evaluations, "seconds": budget.seconds, "rounds": self.rounds,
                "cover_cuts": self.covers, "solver_seconds": self.model.solve_seconds,
                "lower_bound": self.lower, "best_loss": None if budget.best is None else budget.best.loss}


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


def tightened_bound(problem: Problem, infeasible: Sequence[Node], found: Evaluated | None,
                    seconds: float = CLIMB_SECONDS, strategy: str = "adaptive", seed: int = 0,
                    rounds: int | None = CLIMB_ROUNDS, work_limit: float | None = CLIMB_WORK,
                    groups: int | None = None, pairs: bool | None = None, group_rounds: int = 0) -> dict:
    """A tighter lower bound beside a heuristic answer: the certified search's loop, started from the search's
    own infeasible evaluations and best node, for `rounds` rounds (each solve within `work_limit` units of
    CP-SAT's deterministic time), `seconds` a wall-clock safety net.

    Why rounds and work, not seconds: the same search gives the same bound whatever the machine's load (on 2
    cores shared by 10 processes, 4 wall-clock seconds left time for one round).

    Why: the cover cuts of a GA's infeasible evaluations are weak (its infeasible nodes are random low nodes:
    at Cargo q = 25 they prove 0.50-0.60 beside 0.83), while a few rounds of the loop raise the solver's
    solutions to maximal infeasible nodes, whose cuts are the strongest. The bound holds for the same reason
    as the loop's (every cut comes from an evaluated infeasible node), so it needs what the loop needs
    (monotone feasibility and loss, LOG or a separable loss); elsewhere it is `certified_bound`'s.
    Before the rounds (issue 30): the short cuts of every pair of genes (`pairs`; by default where no
    decomposition runs) and, with groups of `groups` genes (default BOUND_GROUP where the box has more than
    three groups' worth of free genes, else none), the decomposition bound
    (`CertifyLoop.decompose`), after which `group_rounds` rounds replace `rounds` (at Cargo q = 97 one
    round's solve costs more than the whole decomposition). Cargo 2000, k = 2, 0.5 %, beside kgen+'s 5,000
    evaluations: q = 25 0.781 beside 0.8307 in 1.9 CPU s; q = 97 0.687 beside 0.858 in about 3.5 CPU s.
    Returns `certified_bound`'s record, with `found` (the best node the loop found: never worse than the
    search's, sometimes better), `evaluations` and `rounds`.
    """
    start = time.perf_counter()
    try:
        require_certifiable(problem, "a tightened bound", loop=True)
    except InputError:
        return certified_bound(problem, infeasible, found)
    if groups is None:  # groups of BOUND_GROUP genes where there are three groups' worth, else none
        free = sum(a < b for a, b in zip(problem.box.lower, problem.box.upper))
        groups = BOUND_GROUP if free > 3 * BOUND_GROUP else 0
    search = Certify(seed_evaluations=0, strategy=strategy, groups=groups, pairs=bool(pairs), name="bound",
                     deepen=False, conditional=False)  # group proofs: more than this bound's few seconds
    loop = CertifyLoop(search, problem, Limits(None, seconds, seed), 0)
    decomposes = loop.decomposes()
    if pairs is None:  # where the groups run, the pair walks cost more than they add (Cargo q = 97: 3 CPU s)
        loop.search = replace(search, pairs=not decomposes)
    loop.max_rounds = group_rounds if decomposes and rounds is not None else rounds
    loop.work_limit = work_limit
    loop.first_work = None if work_limit is None else max(work_limit, FIRST_WORK)
    loop.preload(infeasible, found)
    stopped_by(loop.body, [])  # not `guarded`: its result sorts out the minimal feasible nodes (0.3 CPU s at q = 97)
    best, lower = loop.budget.best, loop.lower
    if lower is not None and found is not None:
        lower = min(lower, float(found.loss))
    record = {"lower_bound": lower, "status": "optimal" if loop.params.get("optimal") else "limit",
              "optimal": lower is not None and found is not None and float(found.loss) - lower <= loop.costs.tolerance,
              "cuts": loop.covers, "rounds": loop.rounds, "evaluations": loop.budget.evaluations,
              "found": None if best is None else float(best.loss),
              "note": (f"{loop.covers} cover cuts: the search's infeasible evaluations, "
                       + (f"{loop.params.get('groups', 0)} groups of genes certified apart, " if decomposes else "")
                       + (f"{loop.params.get('pair_cuts', 0)} pair cuts, " if loop.search.pairs else "")
                       + f"then {loop.rounds} rounds of the certified search ({loop.budget.evaluations} "
                       "evaluations)"),
              "seconds": time.perf_counter() - start}
    if lower is None:
        record["note"] = "the bound's loop found no bound within its time limit"
    return record


def descend(loop: CertifyLoop) -> None:
    """A primal side for `Certify.primal`: from the first maximal infeasible node m of the round's climbs, the
    cheapest gene raised one level (feasible, m being maximal), then every gene lowered, costliest step first,
    to the lowest level that stays feasible (a binary search per gene): a minimal feasible node near the
    program's solution, whose cost may lower the cutoff. It only evaluates nodes, so the proof stays sound."""
    if not loop.last_maximal:
        return
    m, upper, steps = loop.last_maximal[0], loop.box.upper, loop.costs.steps
    open_genes = [g for g in loop.genes if m[g] < upper[g]]
    if not open_genes:
        return
    y = list(m)
    raised = min(open_genes, key=lambda g: (steps[g][m[g]], g))
    y[raised] += 1
    for g in sorted(loop.genes, key=lambda g: (-(steps[g][y[g] - 1] if y[g] > 0 else 0), g)):
        lo, hi = loop.box.lower[g] - 1, y[g]  # lo: known infeasible (or below the box), hi: feasible
        while hi - lo > 1:
            mid = (lo + hi) // 2
            y[g] = mid
            if loop.feasible(tuple(y)):
                hi = mid
            else:
                lo = mid
        y[g] = hi
    loop.budget.evaluate(tuple(y))
