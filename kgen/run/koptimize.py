"""k-Optimize on a table: the data side of Bayardo and Agrawal's search (lattice.search.koptimize).

k-Optimize does not search a hierarchy lattice: it chooses, per QI, where to cut the ordered values into
intervals. It plugs into kgen this way: `kgen.run.pipeline.prepare` calls `with_cut_points`, which runs the search on
the table and turns the chosen cut points into one-level hierarchies (level 0 the value, level 1 its
interval); the lattice search registered as "k-optimize" (`ChosenNode`) then releases the top node of those
hierarchies. So the release, the report with every metric, the independent check and `kgen apply` (the
report stores the hierarchies' rows) all go through the usual path, and nothing else needs to know about cut
points. The cost k-Optimize minimizes is the discernibility metric with suppression; the report's `dm` is
that cost of the released node.

Value order: missing values first, then numbers ascending when every other value of the QI is a number,
else the values in string order (an ordinal order for categories; the result depends on it, as in the paper).
Costs are computed on the distinct QI tuples weighted by their row counts.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from fitness import privacy
from kgen.io.table import Table
from kgen.run.config import Config
from kgen.run.values import normalize
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy
from lattice.search.base import Limits
from lattice.search.koptimize import CutProblem, KOptimize, items_of


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def value_order(values: list[str], missing: str | None) -> list[str]:
    """The distinct values in k-Optimize's order (see the module doc)."""
    distinct = sorted(set(values) - {missing})
    numbers = [_number(v) for v in distinct]
    if distinct and all(n is not None for n in numbers):
        distinct = [v for _, v in sorted(zip(numbers, distinct))]
    return ([missing] if missing in set(values) else []) + distinct


@dataclass(frozen=True)
class Score:
    cost: float
    suppressed: int
    feasible: bool


class CutPointOracle:
    """Costs and lower bounds of cut-point sets on one table (the `CutOracle` of lattice.search.koptimize).

    `ranks[:, j]` is each distinct QI tuple's rank in QI j's order, `weights` its row count.
    """

    def __init__(self, ranks: np.ndarray, weights: np.ndarray, domains: list[int], k: int,
                 max_suppressed: int, memo_bytes: int = 64 << 20) -> None:
        self.ranks, self.weights, self.domains = ranks, weights.astype(np.int64), domains
        self.k, self.max_suppressed = k, max_suppressed
        self.n = int(self.weights.sum())
        self.item_list = items_of(domains)
        self.items = len(self.item_list)
        self._memo: OrderedDict[frozenset[int], np.ndarray] = OrderedDict()
        self._memo_size = max(16, memo_bytes // (8 * max(1, len(weights))))  # class sizes kept, bounded in bytes

    def cuts_by_qi(self, cuts: frozenset[int]) -> list[list[int]]:
        """The chosen ranks (each starts an interval) per QI, sorted."""
        out: list[list[int]] = [[] for _ in self.domains]
        for item in sorted(cuts):
            j, r = self.item_list[item]
            out[j].append(r)
        return out

    def class_sizes(self, cuts: frozenset[int]) -> np.ndarray:
        """Per distinct tuple, the row count of its class under `cuts`."""
        known = self._memo.get(cuts)
        if known is not None:
            self._memo.move_to_end(cuts)
            return known
        key = np.zeros(len(self.weights), dtype=np.int64)
        for j, chosen in enumerate(self.cuts_by_qi(cuts)):
            if chosen:
                interval = np.searchsorted(np.asarray(chosen), self.ranks[:, j], side="right")
                key = key * (len(chosen) + 1) + interval
        _, inverse = np.unique(key, return_inverse=True)
        sizes = np.bincount(inverse.reshape(-1), weights=self.weights).astype(np.int64)[inverse.reshape(-1)]
        self._memo[cuts] = sizes
        if len(self._memo) > self._memo_size:
            self._memo.popitem(last=False)
        return sizes

    def score(self, cuts: frozenset[int]) -> Score:
        sizes = self.class_sizes(cuts)
        small = sizes < self.k
        suppressed = int(self.weights[small].sum())
        # sum over released classes of |E|^2 = sum over released rows of |E|
        cost = float((self.weights[~small] * sizes[~small]).sum()) + suppressed * self.n
        return Score(cost, suppressed, suppressed <= self.max_suppressed)

    def lower_bound(self, head: frozenset[int], specific: frozenset[int]) -> float:
        head_sizes = self.class_sizes(head)
        gone = head_sizes < self.k  # suppressed under the head, so under every set below it
        suppressed = int(self.weights[gone].sum())
        if suppressed > self.max_suppressed:
            return math.inf
        per_row = np.maximum(self.class_sizes(specific), self.k)
        # A released class of the head with fewer than 2k rows cannot split into two classes of k: splitting it
        # suppresses s >= 1 of its rows, costing s * n + (|E| - s)^2 >= |E|^2 when n >= 2|E|. Its rows then
        # cost at least |E| each.
        whole = ~gone & (head_sizes < 2 * self.k) & (2 * head_sizes <= self.n)
        per_row[whole] = head_sizes[whole]
        return float((self.weights[~gone] * per_row[~gone]).sum()) + suppressed * self.n


@dataclass(frozen=True, eq=False)
class CutPointTable:
    """A table's QIs in k-Optimize's terms: value orders, the oracle, and how to label intervals."""

    names: list[str]
    orders: list[list[str]]
    oracle: CutPointOracle

    def intervals(self, cuts: frozenset[int]) -> dict[str, list[list[str]]]:
        """Per QI, its intervals of consecutive values under `cuts`."""
        out = {}
        for name, order, chosen in zip(self.names, self.orders, self.oracle.cuts_by_qi(cuts)):
            bounds = [0, *chosen, len(order)]
            out[name] = [order[a:b] for a, b in zip(bounds, bounds[1:])]
        return out

    def hierarchies(self, cuts: frozenset[int]) -> dict[str, Hierarchy]:
        """One-level hierarchies: each value, then its interval's label (the value itself when alone)."""
        out = {}
        for name, groups in self.intervals(cuts).items():
            rows = [[v, interval_label(group)] for group in groups for v in group]
            out[name] = Hierarchy.from_rows(name, rows, f"k-optimize intervals of {name!r}")
        return out


# Without a limit, k-Optimize's tree search on a table of many distinct values can run for hours (the demo's
# Adult: 11 minutes before); it stops here with its best cut points so far, and the report says so.
DEFAULT_SECONDS = 60.0
BLANK = "(blank)"  # the label of an interval holding only the empty value (a label may not be empty)


def interval_label(group: list[str]) -> str:
    """An interval's label: its one value when alone (`(blank)` for the empty value), else `[first..last]`."""
    if len(group) == 1:
        return group[0] if group[0] else BLANK
    return f"[{group[0]}..{group[-1]}]"


def cut_point_table(table: Table, config: Config) -> CutPointTable:
    """The QIs of a table (values normalized as `kgen.run.pipeline.prepare` does) in k-Optimize's terms."""
    models = privacy.build_models(config.model_values(), config.sensitive)
    beyond = privacy.beyond_sizes(models)
    if beyond:
        raise InputError(f"k-optimize supports k-anonymity (with a suppression limit) only, not "
                         f"{', '.join(beyond)}: use a lattice algorithm")
    orders, columns = [], []
    for column in config.qi:
        values, token = normalize(list(table.column(column)), tuple(config.missing))
        order = value_order(values, token)
        index = {v: i for i, v in enumerate(order)}
        orders.append(order)
        columns.append(np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values)))
    ranks, weights = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
    max_suppressed = math.floor(config.suppression * table.n + 1e-9)
    least = max(m.count_rule.min_rows for m in models)  # type: ignore[union-attr] (size rules: k, a k-map's k')
    oracle = CutPointOracle(ranks, weights, [len(o) for o in orders], least, max_suppressed)
    return CutPointTable(list(config.qi), orders, oracle)


def with_cut_points(table: Table, config: Config, progress: Callable[[int, object], None] | None = None) -> Config:
    """Run k-Optimize on the table; the configuration with its one-level interval hierarchies and its outcome
    (for the search "k-optimize", which releases that node). The limits of `config` bound the search (without
    one, DEFAULT_SECONDS); when one stops it, the best set found so far is released and the report says how it
    stopped. `progress` is told of each costing as a lattice search's progress is (`kgen.run.pipeline.search`:
    `begin` with the limits, then `progress(costings, best)`, then `close`), so the bar moves here too."""
    start = time.perf_counter()
    cut_table = cut_point_table(table, config)
    limit = config.time_limit if config.time_limit is not None or config.max_evaluations else DEFAULT_SECONDS
    begin, close = getattr(progress, "begin", None), getattr(progress, "close", None)
    if begin is not None:
        begin(config.max_evaluations, limit, None)
    try:
        result = KOptimize().run(CutProblem(cut_table.oracle), Limits(config.max_evaluations, limit,
                                                                      on_progress=progress))
    except ValueError as error:
        raise InputError(f"k-optimize: {error}; coarsen the QIs with many distinct values first") from None
    finally:
        if close is not None:
            close()
    best = result.best
    assert best is not None  # the empty set (one interval per QI) is feasible since k <= n
    cuts = frozenset(best.node)
    outcome = {
        "model": "ordered cut points (Bayardo & Agrawal 2005)",
        "cost": best.loss,
        "cut_points": {name: [group[0] for group in groups[1:]]
                       for name, groups in cut_table.intervals(cuts).items()},
        "intervals": {name: len(groups) for name, groups in cut_table.intervals(cuts).items()},
        "items": cut_table.oracle.items,
        "distinct_tuples": int(len(cut_table.oracle.weights)),
        "evaluations": result.evaluations,
        "stopped": result.stopped,
        "seconds": time.perf_counter() - start,
        **{key: value for key, value in (result.trace[-1] if result.trace else {}).items()
           if key in ("tree_nodes", "bounds", "pruned_subtrees", "pruned_items", "seed_cost")},
    }
    return replace(config, hierarchies=cut_table.hierarchies(cuts), options={"outcome": outcome})
