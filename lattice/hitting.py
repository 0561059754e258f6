"""The cut model of the certified search: a weighted hitting-set integer program over a box of the lattice.

Why it exists: with monotone feasibility, every infeasible node m rules out its whole down-set, so a feasible
node x must have x_i > m_i for some i (a "cover" cut). With unary variables z[i,l] = [x_i >= l] for
l = lower_i+1..upper_i (z[i,l+1] <= z[i,l]) and integer costs per level step, minimizing the cost under the
cuts known so far is a relaxation of the search problem: its optimum is a proven lower bound (SPEC section 11).
Each evaluated feasible node y may also exclude its up-set (every node strictly above it costs more when
every step costs > 0), so a re-solve only ever proposes nodes not yet settled.

Three interchangeable solvers (measured in results/benchmarks/certify.md):
- `highs`: one live HiGHS model (highspy); cuts are added rows, the objective cutoff is a row bound, and
  the integer objective lets the solver stop at an absolute gap below one (exact optimum);
- `cpsat`: OR-tools CP-SAT on a model that grows by constraints, with the last solution as a hint;
- `milp`: scipy.optimize.milp rebuilt from the constraint lists every solve (the slow baseline).

This module never imports fitness/: it sees nodes and integer costs only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from lattice.errors import InputError
from lattice.node import Node

SOLVERS = ("highs", "cpsat", "milp")
# CP-SAT's search on one worker (results/benchmarks/certify.md): "default" (its linear search with LP
# relaxation), "core" (core-based search: unsatisfiable cores of the cover cuts raise the bound from below, so a
# solve stopped by its time cap still proves a bound close to the program's optimum; at Cargo q = 50 it proved
# 1,051 of the best 1,078 cost units in 60 s where the default proved 704), "lp0" (no LP relaxation: faster
# solves of the small programs of q <= 25: 19.5 CPU s against 24.4 for the whole q = 25 search), "adaptive"
# (default where the program has floors, `add_floor`: their LP relaxation is the decomposition bound; else lp0 up
# to ADAPTIVE_COLUMNS binary columns, core above: Cargo q = 25 has 100, the q = 50 box 124, q = 97 241)
ADAPTIVE_COLUMNS = 150
STRATEGIES = {"adaptive": {}, "default": {}, "core": {"optimize_with_core": True},
              "lp0": {"linearization_level": 0}, "core-lp0": {"optimize_with_core": True, "linearization_level": 0}}


@dataclass(frozen=True)
class Solution:
    """One solve: `status` "optimal" (node is a least-cost node of the model), "infeasible" (no node of the
    model meets the cutoff) or "limit" (stopped by its time limit; `bound` is still a valid lower bound on
    the model's optimum, `node` the best model node found or None). Costs are integers, offset included."""

    status: str
    node: Node | None
    cost: int | None
    bound: int | None
    seconds: float
    others: tuple[Node, ...] = ()  # CP-SAT's earlier solutions of this solve (`solve(collect=...)`), best last


def integer_step_costs(heights: Sequence[int]) -> tuple[list[list[int]], int]:
    """LOG as integers: per gene i and level l >= 1, the cost of the step l-1 -> l is M / h_i, M the lcm of
    the positive heights, and LOG = cost / (M |Q+|). Returns (steps[i][l-1], denominator)."""
    import math

    positive = [int(h) for h in heights if h > 0]
    if not positive:
        return [[] for _ in heights], 1
    lcm = math.lcm(*positive)
    steps = [[lcm // int(h)] * int(h) if h > 0 else [] for h in heights]
    return steps, lcm * len(positive)


class CutModel:
    """The hitting-set program over the box [lower, upper] with per-step integer costs (see the module doc).

    `steps[i][l-1]` is the cost of raising gene i from level l-1 to l (integers), `base` a constant added to
    every cost. Cover cuts come from
    infeasible nodes, exclusions from feasible nodes; `cutoff` bounds the cost from above (inclusive).
    """

    def __init__(self, lower: Node, upper: Node, steps: Sequence[Sequence[int]], solver: str = "cpsat",
                 base: int = 0, strategy: str = "adaptive") -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown CP-SAT strategy {strategy!r}; choose one of {tuple(STRATEGIES)}")
        self.strategy = strategy
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; choose one of {SOLVERS}")
        if solver == "cpsat":
            try:
                import ortools.sat.python.cp_model  # noqa: F401
            except ImportError:  # OR-tools is a dependency; without it, scipy's HiGHS rebuilt every solve
                solver = "milp"
        self.lower, self.upper, self.solver = tuple(lower), tuple(upper), solver
        self.dims = len(self.lower)
        # column index of z[i, l] for l = lower_i+1 .. upper_i
        self.first: list[int] = []
        costs: list[int] = []
        for i, (a, b) in enumerate(zip(self.lower, self.upper)):
            self.first.append(len(costs))
            costs.extend(int(steps[i][level - 1]) for level in range(a + 1, b + 1))
        self.costs = np.array(costs, dtype=np.int64)
        self.steps_below = [[int(c) for c in steps[i][:a]] for i, a in enumerate(self.lower)]  # below the box
        self.offset = int(base) + int(sum(sum(below) for below in self.steps_below))
        self.columns = len(costs)
        self.rows: list[tuple[list[int], float, float]] = []  # (columns, lower, upper), all coefficients 1
        self.floors: list[tuple[list[int], int]] = []  # (columns, least cost on them): `add_floor`
        self.conditionals: list[tuple[list[int], list[int], int]] = []  # (columns, weights, need): conditional floors
        self.cutoff: int | None = None
        self.infeasible_forever = False  # an empty cover cut: nothing of the box can be feasible
        self.solves = 0
        self.solve_seconds = 0.0
        self._highs = None
        self._cpsat = None
        self._last: Node | None = None
        self._chain: list[tuple[int, int]] = [(self.first[i] + j, self.first[i] + j + 1)
                                              for i, (a, b) in enumerate(zip(self.lower, self.upper))
                                              for j in range(b - a - 1)]
        if solver == "highs":
            self._init_highs()
        elif solver == "cpsat":
            self._init_cpsat()

    # --- columns and nodes ---------------------------------------------------------------------------

    def column(self, gene: int, level: int) -> int:
        """The column of z[gene, level] (lower_gene < level <= upper_gene)."""
        return self.first[gene] + level - self.lower[gene] - 1

    def cost(self, node: Node) -> int:
        total = self.offset
        for i, (a, x) in enumerate(zip(self.lower, node)):
            total += int(self.costs[self.first[i] : self.first[i] + x - a].sum())
        return total

    def node_of(self, values: Sequence[float]) -> Node:
        out = []
        for i, (a, b) in enumerate(zip(self.lower, self.upper)):
            out.append(a + int(sum(1 for v in values[self.first[i] : self.first[i] + b - a] if v > 0.5)))
        return tuple(out)

    # --- constraints ---------------------------------------------------------------------------------

    def add_cover(self, node: Node) -> bool:
        """Cut off the down-set of the infeasible `node`: some gene must rise above it. False (nothing added)
        when the node lies outside the box in a way that leaves no box node below it."""
        if any(x < a for x, a in zip(node, self.lower)):
            return False
        cols = [self.column(i, x + 1) for i, (x, b) in enumerate(zip(node, self.upper)) if x < b]
        if not cols:
            self.infeasible_forever = True
            return True
        self._add_row(cols, 1.0, np.inf)
        return True

    def add_exclusion(self, node: Node) -> None:
        """Cut off the up-set of the feasible `node` (it is settled; every node above it costs more)."""
        cols = [self.column(i, x) for i, (x, a) in enumerate(zip(node, self.lower)) if x > a]
        if not cols:
            self.infeasible_forever = True  # the bottom is feasible: it is the only candidate
            return
        self._add_row(cols, -np.inf, float(len(cols) - 1))

    def add_floor(self, genes: Sequence[int], cost: int) -> bool:
        """Every candidate's cost on `genes` (levels counted from 0, as `steps` are) is at least `cost`.

        Why: the certified search proves such floors apart (a group of genes certified with the others at their
        top: `CertifyLoop.decompose`); they hold for every feasible node, so the program stays a relaxation,
        and written into it they lift its LP relaxation and CP-SAT's bound to at least their sum at once (Cargo
        q = 50: the whole program's 16-s solves proved 1,700 cost units where the groups prove 2,242). False
        (nothing added) when the floor is no more than the genes' least cost in the box."""
        cols = [c for i in genes for c in range(self.first[i], self.first[i] + self.upper[i] - self.lower[i])]
        least = sum(int(sum(self.steps_below[i])) for i in genes)
        need = int(cost) - least
        if need <= 0:
            return False
        if not cols:  # the genes are fixed below their floor: no node of the box is feasible
            self.infeasible_forever = True
            return True
        self.floors.append((cols, need))
        if self._highs is not None:
            self._highs.addRow(float(need), np.inf, len(cols), np.array(cols, dtype=np.int32),
                               self.costs[cols].astype(np.float64))
        elif self._cpsat is not None:
            model, z = self._cpsat
            model.Add(sum(int(self.costs[c]) * z[c] for c in cols) >= need)
        return True

    def add_conditional_floor(self, genes: Sequence[int], cost: int, condition: dict[int, int]) -> bool:
        """Every candidate whose genes in `condition` lie at or below the given levels costs at least `cost` on
        `genes` (levels counted from 0): a combinatorial Benders cut across groups of genes.

        Why: a group's floor (`add_floor`) is proved with the other genes at their top, so the program can pair
        each group's cheapest levels although they are never feasible together; the certified search proves
        how much a group needs when the other genes are held at a node's levels (`CertifyLoop.condition`), and
        monotone feasibility makes that a floor for every node below those levels. Written as one row:
        cost(genes) + D * (number of condition genes above their level) >= cost, D the floor's excess over the
        unconditional floor on the same genes (so the row is implied as soon as one condition gene rises).
        False (nothing added) when the condition cannot hold in the box or the floor adds nothing."""
        if any(level < self.lower[i] for i, level in condition.items()):
            return False
        cols = [c for i in genes for c in range(self.first[i], self.first[i] + self.upper[i] - self.lower[i])]
        least = sum(int(sum(self.steps_below[i])) for i in genes)
        need = int(cost) - least
        base = max((n for c, n in self.floors if c == cols), default=0)
        if need <= base:
            return False
        escape = [self.column(i, level + 1) for i, level in sorted(condition.items()) if level < self.upper[i]]
        if not cols and not escape:
            self.infeasible_forever = True
            return True
        weight = need - base
        coefficients = [int(self.costs[c]) for c in cols] + [weight] * len(escape)
        self.conditionals.append((cols + escape, coefficients, need))
        if self._highs is not None:
            self._highs.addRow(float(need), np.inf, len(cols) + len(escape),
                               np.array(cols + escape, dtype=np.int32), np.array(coefficients, dtype=np.float64))
        elif self._cpsat is not None:
            model, z = self._cpsat
            model.Add(sum(w * z[c] for c, w in zip(cols + escape, coefficients)) >= need)
        return True

    def set_cutoff(self, cost: int) -> None:
        """Only nodes of cost <= `cost` remain candidates (inclusive, integer)."""
        if self.cutoff is not None and cost >= self.cutoff:
            return
        self.cutoff = int(cost)
        if self._highs is not None:
            self._highs.changeRowBounds(0, -np.inf, float(self.cutoff - self.offset))
        elif self._cpsat is not None:
            model, z = self._cpsat
            model.Add(sum(int(c) * v for c, v in zip(self.costs, z)) <= self.cutoff - self.offset)

    def _add_row(self, cols: list[int], lo: float, hi: float) -> None:
        self.rows.append((cols, lo, hi))
        if self._highs is not None:
            self._highs.addRow(lo, hi, len(cols), np.array(cols, dtype=np.int32), np.ones(len(cols)))
        elif self._cpsat is not None:
            model, z = self._cpsat
            expr = sum(z[c] for c in cols)
            if lo > -np.inf:
                model.Add(expr >= int(lo))
            else:
                model.Add(expr <= int(hi))

    # --- solving -------------------------------------------------------------------------------------

    def solve(self, time_limit: float | None = None, work_limit: float | None = None, collect: int = 0) -> Solution:
        """Least-cost node of the model (see `Solution`). `work_limit`: CP-SAT's deterministic time limit (the
        same answer whatever the machine's load; other solvers ignore it). `collect`: CP-SAT also returns up
        to this many of the other solutions it found on the way (`Solution.others`: more proposals, hence more
        cuts, from one solve; other solvers return none)."""
        self._work_limit = work_limit
        self._collect = collect
        start = time.perf_counter()
        if self.infeasible_forever:
            out = Solution("infeasible", None, None, None, 0.0)
        elif self.columns == 0:
            ok = self.cutoff is None or self.offset <= self.cutoff
            ok = ok and all(lo <= 0 <= hi for _, lo, hi in self.rows)
            out = Solution("optimal", self.lower, self.offset, self.offset, 0.0) if ok else \
                Solution("infeasible", None, None, None, 0.0)
        elif self.solver == "highs":
            out = self._solve_highs(time_limit)
        elif self.solver == "cpsat":
            out = self._solve_cpsat(time_limit)
        else:
            out = self._solve_milp(time_limit)
        seconds = time.perf_counter() - start
        self.solves += 1
        self.solve_seconds += seconds
        if out.node is not None:
            self._last = out.node
        return Solution(out.status, out.node, out.cost, out.bound, seconds, out.others)

    # HiGHS through highspy: one live model
    def _init_highs(self) -> None:
        try:
            import highspy
        except ImportError as error:  # not installed, or OR-tools (which bundles its own HiGHS) already loaded
            raise InputError(f"the 'highs' solver needs highspy, importable only in a process that has not "
                             f"loaded OR-tools ({str(error)[:60]}); use solver 'cpsat'") from None

        h = highspy.Highs()
        for name, value in (("output_flag", False), ("threads", 1), ("mip_rel_gap", 0.0),
                            ("mip_abs_gap", 0.999), ("presolve", "on")):
            h.setOptionValue(name, value)
        n = self.columns
        if n:
            h.addVars(n, np.zeros(n), np.ones(n))
            h.changeColsCost(n, np.arange(n, dtype=np.int32), self.costs.astype(np.float64))
            h.changeColsIntegrality(n, np.arange(n, dtype=np.int32),
                                    np.full(n, highspy.HighsVarType.kInteger))
            # row 0: the cutoff (cost <= cutoff), free until set
            h.addRow(-np.inf, np.inf, n, np.arange(n, dtype=np.int32), self.costs.astype(np.float64))
            for a, b in self._chain:  # z[i,l+1] <= z[i,l]
                h.addRow(-np.inf, 0.0, 2, np.array([b, a], dtype=np.int32), np.array([1.0, -1.0]))
        self._highs = h

    def _solve_highs(self, time_limit: float | None) -> Solution:
        import highspy

        h = self._highs
        h.setOptionValue("time_limit", float(time_limit) if time_limit is not None else np.inf)
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        if status == highspy.HighsModelStatus.kInfeasible:
            return Solution("infeasible", None, None, None, 0.0)
        values = h.getSolution().col_value
        has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
        node = self.node_of(values) if has_solution else None
        cost = None if node is None else self.cost(node)
        bound = info.mip_dual_bound
        bound_int = None if not np.isfinite(bound) else int(np.ceil(bound - 1e-6)) + self.offset
        if status == highspy.HighsModelStatus.kOptimal and node is not None:
            return Solution("optimal", node, cost, cost, 0.0)
        return Solution("limit", node, cost, bound_int, 0.0)

    # OR-tools CP-SAT: a growing model, last solution as a hint
    def _init_cpsat(self) -> None:
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        z = [model.NewBoolVar(f"z{c}") for c in range(self.columns)]
        for a, b in self._chain:
            model.AddImplication(z[b], z[a])
        model.Minimize(sum(int(c) * v for c, v in zip(self.costs, z)))
        self._cpsat = (model, z)

    def _solve_cpsat(self, time_limit: float | None) -> Solution:
        from ortools.sat.python import cp_model

        model, z = self._cpsat
        if self._last is not None:
            model.ClearHints()
            for i, (a, b) in enumerate(zip(self.lower, self.upper)):
                for level in range(a + 1, b + 1):
                    model.AddHint(z[self.column(i, level)], self._last[i] >= level)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        strategy = self.strategy
        if strategy == "adaptive":  # with floors, their LP relaxation proves more than lp0 or core
            floored = self.floors or self.conditionals
            strategy = "default" if floored else "lp0" if self.columns <= ADAPTIVE_COLUMNS else "core"
        for name, value in STRATEGIES[strategy].items():
            setattr(solver.parameters, name, value)
        if time_limit is not None:
            solver.parameters.max_time_in_seconds = float(time_limit)
        if getattr(self, "_work_limit", None) is not None:
            solver.parameters.max_deterministic_time = float(self._work_limit)
        most = getattr(self, "_collect", 0)
        seen = collector(cp_model, z, self.node_of)
        status = solver.Solve(model, seen if most > 0 else None)
        if status == cp_model.INFEASIBLE:
            return Solution("infeasible", None, None, None, 0.0)
        bound = int(np.ceil(solver.BestObjectiveBound() - 1e-6)) + self.offset
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            node = self.node_of([solver.Value(v) for v in z])
            cost = self.cost(node)
            others = tuple(n for n in seen.nodes if n != node)[-most:] if most > 0 else ()
            return Solution("optimal" if status == cp_model.OPTIMAL else "limit", node, cost,
                            cost if status == cp_model.OPTIMAL else bound, 0.0, others)
        return Solution("limit", None, None, bound, 0.0)

    # scipy.optimize.milp rebuilt every solve (baseline)
    def _solve_milp(self, time_limit: float | None) -> Solution:
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix

        rows = [(cols, a, b, False) for cols, a, b in self.rows]
        rows.extend((cols, float(need), np.inf, True) for cols, need in self.floors)
        weights = {r: w for r, (_, w, _) in enumerate(self.conditionals, start=len(rows))}
        rows.extend((cols, float(need), np.inf, True) for cols, _, need in self.conditionals)
        if self.cutoff is not None:
            rows.append((list(range(self.columns)), -np.inf, float(self.cutoff - self.offset), True))
        data, ri, ci, lo, hi = [], [], [], [], []
        for r, (cols, a, b, weighted) in enumerate(rows):
            ri.extend([r] * len(cols))
            ci.extend(cols)
            data.extend(weights[r] if r in weights else self.costs[cols] if weighted else [1.0] * len(cols))
            lo.append(a)
            hi.append(b)
        base = len(rows)
        for r, (a, b) in enumerate(self._chain):
            ri.extend([base + r, base + r])
            ci.extend([b, a])
            data.extend([1.0, -1.0])
            lo.append(-np.inf)
            hi.append(0.0)
        constraints = []
        if lo:
            matrix = coo_matrix((np.array(data, dtype=float), (ri, ci)), shape=(len(lo), self.columns)).tocsr()
            constraints = [LinearConstraint(matrix, np.array(lo), np.array(hi))]
        options = {"mip_rel_gap": 0.0}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        res = milp(self.costs.astype(float), integrality=np.ones(self.columns), bounds=Bounds(0, 1),
                   constraints=constraints, options=options)
        if res.status == 2:
            return Solution("infeasible", None, None, None, 0.0)
        if res.x is None:
            return Solution("limit", None, None, None, 0.0)
        node = self.node_of(res.x)
        cost = self.cost(node)
        if res.status == 0:
            return Solution("optimal", node, cost, cost, 0.0)
        bound = getattr(res, "mip_dual_bound", None)
        return Solution("limit", node, cost, None if bound is None else int(np.ceil(bound - 1e-6)) + self.offset,
                        0.0)


def collector(cp_model: ModuleType, z: Sequence, node_of: Callable[[Sequence[float]], Node]) -> Any:
    """A CP-SAT solution callback that keeps the node of every improving solution (`CutModel.solve(collect=)`);
    `cp_model` is passed in because OR-tools is imported only where a CP-SAT solve runs."""

    class Collector(cp_model.CpSolverSolutionCallback):
        def __init__(self) -> None:
            super().__init__()
            self.nodes: list[Node] = []

        def on_solution_callback(self) -> None:
            self.nodes.append(node_of([self.Value(v) for v in z]))

    return Collector()


def maximal_nodes(nodes: Sequence[Node], block: int = 32) -> list[Node]:
    """The nodes with no other given node above them (the strongest cover cuts among `nodes`).

    Nodes are taken by decreasing height, so a node can only be dominated by one kept before it; each block
    is checked against the kept nodes in one vectorized comparison."""
    if not nodes:
        return []
    array = np.array(sorted(set(nodes), key=lambda n: -sum(n)), dtype=np.int16)
    kept = np.empty_like(array)
    count = 0
    for start in range(0, len(array), block):
        rows = array[start : start + block]
        if count:
            rows = rows[~(kept[None, :count, :] >= rows[:, None, :]).all(axis=2).any(axis=1)]
        first = count
        for row in rows:  # within the block: against the ones kept from it
            if count == first or not (kept[first:count] >= row).all(axis=1).any():
                kept[count] = row
                count += 1
    return [tuple(int(v) for v in row) for row in kept[:count]]
