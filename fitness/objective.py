"""Objectives: the information loss a search minimizes, each a loss in [0, 1] (lower is better).

LOG (precision) is the default. The formulas, their normalizations and what each search guarantees per
metric are in docs/metrics.md. Summary (n rows, q QIs, S the suppressed rows, E the released classes):

- `log`: mean over QIs with h_i > 0 of x_i / h_i (depends on the node only).
- `dm`: discernibility / n^2 = (sum_E |E|^2 + |S| n) / n^2.
- `aecs`: ARX's average class size, suppressed rows counting as one class G = |E| + [|S| > 0]:
  (n / G - 1) / (n - 1).
- `ncp`: normalized certainty penalty in the generalization-hierarchy form: a value covering m of the M
  leaf values of its QI costs (m - 1) / (M - 1); mean over rows and QIs; a suppressed cell costs 1.
- `loss`: ARX-style generalized-interval loss: as `ncp`, but on numeric QIs a value costs
  (max - min of the original values it covers) / (max - min of the column).
- `entropy`: non-uniform entropy: a row's cell costs -log2(#rows with its original value / #rows with its
  generalized value); a suppressed cell costs as if fully generalized, -log2(#original / n); the sum is
  divided by that of the fully generalized table.
- `arx-entropy`, `arx-entropy-nm`, `arx-dm`, `arx-loss`, `arx-precision`: ARX's own metric variants, which charge
  suppressed rows as ARX does (at the node's level, as a block of their own, as the classes they are, as cells
  costing 1 with ARX's domain shares and geometric mean, or with ARX's arithmetic mean of precision); each has
  `score`, ARX's raw figure (docs/metrics.md, "ARX's metrics").

Every objective implements `Objective` and declares what the evaluator and the searches may rely on:
`monotone` (the loss never decreases when a level rises, whatever is suppressed: only LOG),
`monotone_without_suppression` (the same among nodes that suppress nothing: every objective here, because
only releasing a suppressed row can lower them; the evaluator turns it into `monotone_loss` when the limit
is 0), `needs_rows` (the loss reads which rows are suppressed), `from_summary` (the loss follows from the
released class count, the suppressed row count and DM alone: what the array device computes), and
`lower_bound` (a loss the node cannot go below, from the node alone, where the objective has one).

The word "loss" here always means an objective's value in [0, 1]; the metric named `loss` is ARX's
generalized-interval loss (`GeneralizedLoss`), and LOG / LOS are the precision and suppression figures every
evaluation carries whatever the objective.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from fitness.encoding import EncodedQI, EncodedTable
from fitness.kernel import class_sizes
from fitness.labels import is_number
from fitness.metrics import aecs, block_entropy, discernibility, dm_star, geometric_aggregate, suppressed_fraction
from fitness.partition import Partition
from lattice.errors import InputError
from lattice.node import height, precision_loss

# ARX's default gs-factor of its Loss metric; `arx-loss:G` names Loss with another G in [0, 1].
ARX_GS_FACTOR = 0.5


class Objective(Protocol):
    """A loss in [0, 1] (lower is better) of a node given its released class sizes.

    Attributes
    ----------
    name : str
        The `--metric` name.
    monotone : bool
        The loss never decreases when a level rises, whatever is suppressed; exact searches may stop on it
        (OLA's optimality rests on it).
    monotone_without_suppression : bool
        The same among nodes that suppress no row.
    needs_rows : bool
        The call needs `suppressed_rows` (indices of the suppressed rows); the evaluator then builds them.
    from_summary : bool
        `summary_loss` gives the loss from the released class count, the suppressed count and DM alone.
    node_only : bool
        The loss depends on the node alone (LOG), so searches know it before evaluating the node.
    separable : bool
        With nothing suppressed the loss is a sum over QIs of a cost per level, and a suppressed cell costs the
        most (NCP, Loss, entropy): the certified search and every report's lower bound use those costs.
    """

    name: str
    monotone: bool
    monotone_without_suppression: bool
    needs_rows: bool
    from_summary: bool
    node_only: bool
    separable: bool

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int, table: EncodedTable,
                 suppressed_rows: np.ndarray | None = None) -> float:
        """The loss of a node.

        Parameters
        ----------
        node : sequence of int
            The node (one level per QI).
        released_sizes : np.ndarray
            The sizes of its released (not suppressed) classes.
        suppressed : int
            How many rows it suppresses.
        table : EncodedTable
            The table (its heights, its rows' codes).
        suppressed_rows : np.ndarray, optional
            Indices of the suppressed rows; required when `needs_rows` and rows are suppressed.

        Returns
        -------
        float
            The loss in [0, 1].
        """
        ...

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        """The same loss from a summary of the node's classes (only when `from_summary`, else TypeError).

        Parameters
        ----------
        node : sequence of int
            The node.
        classes : int
            How many classes it releases.
        suppressed : int
            How many rows it suppresses.
        dm : float
            Its discernibility (sum of squared released sizes plus suppressed * n).
        table : EncodedTable
            The table.

        Returns
        -------
        float
            The loss, equal to the call's for the same node.
        """
        ...

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float | None:
        """A loss that no evaluation of `node` goes below, whatever it suppresses.

        Parameters
        ----------
        node : sequence of int
            The node.
        table : EncodedTable
            The table.

        Returns
        -------
        float or None
            The bound (LOG: the loss itself; cell costs: the loss with nothing suppressed), or None when the
            objective knows none cheaper than evaluating the node (DM, AECS).
        """
        ...


@dataclass(frozen=True)
class Precision:
    """Sweeney's precision, the paper's LOG: mean over QIs with h_i > 0 of x_i / h_i.

    It depends on the node alone, so it is monotone whatever is suppressed and is its own lower bound.
    """

    name: ClassVar[str] = "log"
    monotone: ClassVar[bool] = True
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = False
    from_summary: ClassVar[bool] = True
    node_only: ClassVar[bool] = True
    separable: ClassVar[bool] = False

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        return precision_loss(node, table.heights)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        return precision_loss(node, table.heights)

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        return precision_loss(node, table.heights)


@dataclass(frozen=True)
class WeightedPrecision:
    """LOG with a weight per QI: sum over QIs with h_i > 0 of w_i x_i / h_i, divided by the sum of those w_i
    (0 when that sum is 0). Equal to `Precision` when every weight is 1, but made only for other weights
    (`make_objective`).

    It still depends on the node alone and is monotone, but the searches' exact integer LOG keys and step
    costs assume equal weights, so it declares itself separable (a sum of per-level costs: the certified
    search and bound use them with float costs) instead of `node_only`.
    """

    weights: tuple[float, ...]
    name: ClassVar[str] = "log"
    monotone: ClassVar[bool] = True
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = False
    from_summary: ClassVar[bool] = True
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = True

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        return weighted_precision(node, table.heights, self.weights)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        return weighted_precision(node, table.heights, self.weights)

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        return weighted_precision(node, table.heights, self.weights)


def weighted_precision(node: Sequence[int], heights: Sequence[int], weights: Sequence[float]) -> float:
    """sum_i w_i x_i / h_i over QIs with h_i > 0, over the sum of those w_i (0 when it is 0)."""
    total = sum(w for w, h in zip(weights, heights) if h > 0)
    if total <= 0:
        return 0.0
    return sum(w * x / h for x, h, w in zip(node, heights, weights) if h > 0) / total


@dataclass(frozen=True)
class Discernibility:
    """DM / n^2 (DM <= n^2, since every row costs at most n). No lower bound from the node alone."""

    name: ClassVar[str] = "dm"
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = False
    from_summary: ClassVar[bool] = True
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = False

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        return self.summary_loss(node, int(released_sizes.size), suppressed,
                                 discernibility(released_sizes, suppressed, table.n), table)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        n = table.n
        return dm / (n * n) if n else 0.0

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> None:
        return None


@dataclass(frozen=True)
class AverageClassSize:
    """ARX's AECS n / G (G = released classes, plus one if any row is suppressed), mapped onto [0, 1] by
    (AECS - 1) / (n - 1): 0 when every row is its own class, 1 for one class (or everything suppressed).
    No lower bound from the node alone."""

    name: ClassVar[str] = "aecs"
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = False
    from_summary: ClassVar[bool] = True
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = False

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        return aecs_normalized(int(released_sizes.size), suppressed, table.n)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        return aecs_normalized(classes, suppressed, table.n)

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> None:
        return None


def aecs_normalized(classes: int, suppressed: int, n: int) -> float:
    """(n / G - 1) / (n - 1) with G = `classes` released classes plus one when rows are suppressed."""
    groups = classes + (1 if suppressed else 0)
    if n <= 1 or groups == 0:
        return 0.0
    return (n / groups - 1.0) / (n - 1.0)


# --- cell-cost metrics: NCP, Loss, non-uniform entropy ------------------------------------------------------

@dataclass(frozen=True, eq=False)
class CellCosts:
    """Per QI i and level L, `leaf_cost[i][L][v]` = the cost of a cell whose original value is leaf v,
    `total[i][L]` = that cost summed over all rows, `suppressed_cost[i][v]` = the cost of a suppressed cell,
    and `norm` = the sum that maps the summed cost onto [0, 1]. Derived once per table (`cell_costs`)."""

    leaf_cost: tuple[tuple[np.ndarray, ...], ...]
    total: tuple[tuple[float, ...], ...]
    suppressed_cost: tuple[np.ndarray, ...]
    leaf_codes: tuple[np.ndarray, ...]
    norm: float

    def normalized(self, node: Sequence[int], suppressed_rows: np.ndarray | None) -> float:
        """The summed cost of every cell at `node`, the `suppressed_rows` (indices) costing their suppressed
        cost, divided by `norm` (clipped to [0, 1]): the cell-cost objectives' loss."""
        if self.norm <= 0:
            return 0.0
        value = sum(self.total[i][x] for i, x in enumerate(node))
        if suppressed_rows is not None and suppressed_rows.size:
            for i, x in enumerate(node):
                leaves = self.leaf_codes[i][suppressed_rows]
                value += float(np.sum(self.suppressed_cost[i][leaves] - self.leaf_cost[i][x][leaves]))
        return min(max(value / self.norm, 0.0), 1.0)

    def with_correction(self, node: Sequence[int], correction: float) -> float:
        """The loss when the suppressed cells add `correction` (the sum over suppressed rows and QIs of the
        suppressed cost minus the generalized cost) to the unsuppressed total: what an array device sends back
        instead of the suppressed rows. Equal to `normalized` up to float summation order."""
        if self.norm <= 0:
            return 0.0
        value = sum(self.total[i][x] for i, x in enumerate(node)) + correction
        return min(max(value / self.norm, 0.0), 1.0)

    def extra_cost(self, qi: int, level: int) -> np.ndarray:
        """Per leaf of QI `qi`, what a suppressed cell costs more than the cell generalized to `level` (the
        per-leaf table an array device gathers from)."""
        return self.suppressed_cost[qi] - self.leaf_cost[qi][level]


def leaf_map(qi: EncodedQI, level: int) -> np.ndarray:
    """The level-`level` code of each leaf (level-0) code (`EncodedQI.leaf_map`)."""
    return qi.leaf_map(level)


def hierarchy_share(qi: EncodedQI, level: int) -> np.ndarray:
    """Per leaf, (m - 1) / (M - 1) for the value covering it at `level` (m of the M leaves)."""
    leaves = qi.cards[0]
    if leaves <= 1:
        return np.zeros(leaves)
    mapping = leaf_map(qi, level)
    covered = np.bincount(mapping, minlength=qi.cards[level])
    return (covered[mapping] - 1.0) / (leaves - 1.0)


def leaf_numbers(qi: EncodedQI) -> np.ndarray | None:
    """Per leaf, its label as a float (NaN for a non-numeric leaf), for a numeric QI: at least two numbers, at
    most one other leaf (the missing token), a positive range. None for any other QI. Parsed once per QI: the
    interval loss reads it at every level (issue 29: parsing the leaves again per level was most of the
    cost of the report's metrics at 1M rows, 3.0 of 3.8 s)."""
    labels = qi.labels[0]
    numeric = np.array([is_number(v) for v in labels], dtype=bool)
    if numeric.sum() < 2 or (~numeric).sum() > 1:
        return None
    numbers = np.array([float(v) if ok else np.nan for v, ok in zip(labels, numeric)])
    if np.nanmax(numbers) - np.nanmin(numbers) <= 0:
        return None
    return numbers


def interval_share(qi: EncodedQI, level: int, numbers: np.ndarray | None = None) -> np.ndarray | None:
    """Per leaf, (max - min of the numeric leaves its value covers) / (max - min of the column), for a numeric
    QI (`leaf_numbers`, parsed here unless given). Values that also cover the non-numeric leaf fall back to the
    hierarchy share. None for a non-numeric QI."""
    if numbers is None:
        numbers = leaf_numbers(qi)
        if numbers is None:
            return None
    numeric = ~np.isnan(numbers)
    span = np.nanmax(numbers) - np.nanmin(numbers)
    mapping = leaf_map(qi, level)
    card = qi.cards[level]
    high = np.full(card, -np.inf)
    low = np.full(card, np.inf)
    np.maximum.at(high, mapping[numeric], numbers[numeric])
    np.minimum.at(low, mapping[numeric], numbers[numeric])
    mixed = np.zeros(card, dtype=bool)
    mixed[mapping[~numeric]] = True
    width = np.where(np.isfinite(high) & np.isfinite(low), high - low, 0.0) / span
    share = np.where(mixed & (np.bincount(mapping, minlength=card) > 1), np.nan, width)[mapping]
    fallback = hierarchy_share(qi, level)
    return np.where(np.isnan(share), fallback, share)


def cell_costs(table: EncodedTable, kind: str, weights: Sequence[float] | None = None) -> CellCosts:
    """The cell costs of `kind` ("ncp", "loss" or "entropy") for a table, derived once and kept by the table
    (`EncodedTable.derived`). With `weights` (one per QI), QI i's costs are multiplied by w_i and so is its
    share of the normalization, so the loss is sum_i w_i cost_i / sum_i w_i norm_i (ARX's weighted loss, on
    [0, 1]); all weights 1 give the unweighted costs themselves."""
    if weights is None or all(w == 1 for w in weights):
        return table.derived(("cell costs", kind), lambda: _build_costs(table, kind))
    key = ("cell costs", kind, tuple(float(w) for w in weights))
    return table.derived(key, lambda: weighted_costs(cell_costs(table, kind), weights, table))


def weighted_costs(costs: CellCosts, weights: Sequence[float], table: EncodedTable) -> CellCosts:
    """`costs` with QI i's cell costs scaled by `weights[i]` and the normalization sum_i w_i norm_i (a QI's
    own norm is its cost with every cell suppressed: n for NCP and Loss, its entropy for entropy)."""
    if len(weights) != len(costs.total):
        raise ValueError(f"{len(weights)} weights for {len(costs.total)} quasi-identifiers")
    norm = 0.0
    for i, w in enumerate(weights):
        counts = np.bincount(costs.leaf_codes[i], minlength=costs.suppressed_cost[i].size).astype(np.float64)
        norm += w * float(counts @ costs.suppressed_cost[i])
    return CellCosts(tuple(tuple(c * w for c in levels) for levels, w in zip(costs.leaf_cost, weights)),
                     tuple(tuple(t * w for t in totals) for totals, w in zip(costs.total, weights)),
                     tuple(c * w for c, w in zip(costs.suppressed_cost, weights)), costs.leaf_codes, norm)


def _build_costs(table: EncodedTable, kind: str) -> CellCosts:
    n = table.n
    leaf_cost, totals, suppressed_cost, leaf_codes = [], [], [], []
    norm = 0.0
    for qi in table.qis:
        counts = np.bincount(qi.codes[0], minlength=qi.cards[0]).astype(np.float64)
        numbers = leaf_numbers(qi) if kind == "loss" else None
        levels = []
        for level in range(qi.height + 1):
            if kind == "ncp" or (kind == "loss" and numbers is None):
                cost = hierarchy_share(qi, level)
            elif kind == "loss":
                cost = interval_share(qi, level, numbers)
            else:  # non-uniform entropy
                mapping = leaf_map(qi, level)
                generalized = np.bincount(mapping, weights=counts, minlength=qi.cards[level])[mapping]
                with np.errstate(divide="ignore", invalid="ignore"):
                    cost = np.where(counts > 0, -np.log2(counts / np.where(generalized > 0, generalized, 1)), 0.0)
            levels.append(np.asarray(cost, dtype=np.float64))
        if kind == "entropy":
            with np.errstate(divide="ignore"):
                worst = np.where(counts > 0, -np.log2(counts / max(n, 1)), 0.0)
            norm += float(counts @ worst)
        else:
            worst = np.ones(qi.cards[0])
            norm += n
        leaf_cost.append(tuple(levels))
        totals.append(tuple(float(counts @ c) for c in levels))
        suppressed_cost.append(worst)
        leaf_codes.append(qi.codes[0])
    return CellCosts(tuple(leaf_cost), tuple(totals), tuple(suppressed_cost), tuple(leaf_codes), norm)


@dataclass(frozen=True)
class CellCostObjective:
    """A loss that sums a cost per cell (row x QI), see the module docstring; the base of `ncp`, `loss` and
    `entropy`, which differ only in the per-cell cost (`cell_costs`). Not monotone (releasing a suppressed row
    can lower it), monotone among nodes that suppress nothing; its lower bound is the loss with nothing
    suppressed (a suppressed cell costs at least what any generalization of it costs)."""

    name: ClassVar[str]
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = True
    from_summary: ClassVar[bool] = False
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = True
    weights: tuple[float, ...] | None = None  # per QI (ARX's attribute weights); None: all 1

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        if suppressed and suppressed_rows is None:
            raise ValueError(f"the {self.name} objective needs suppressed_rows when rows are suppressed")
        return self.costs(table).normalized(node, suppressed_rows)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        raise TypeError(f"the {self.name} objective needs the suppressed rows, not a summary of the classes")

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        return self.costs(table).normalized(node, None)

    def costs(self, table: EncodedTable) -> CellCosts:
        """The table's cell costs of this objective (weighted when it has weights): what an array device needs
        to evaluate it (summary objectives have no `costs`)."""
        return cell_costs(table, self.name, self.weights)


@dataclass(frozen=True)
class NormalizedCertaintyPenalty(CellCostObjective):
    """NCP in the hierarchy form: a value covering m of the M leaves of its QI costs (m - 1) / (M - 1)."""

    name: ClassVar[str] = "ncp"


@dataclass(frozen=True)
class GeneralizedLoss(CellCostObjective):
    """The metric `loss`, ARX's generalized-interval loss: as NCP, but on numeric QIs a value costs the width
    of the original values it covers over the column's range."""

    name: ClassVar[str] = "loss"


@dataclass(frozen=True)
class NonUniformEntropy(CellCostObjective):
    """Non-uniform entropy: a cell costs -log2(#rows with its original value / #rows with its generalized
    value), normalized by the fully generalized table's cost."""

    name: ClassVar[str] = "entropy"


# --- ARX's metric variants under suppression (issue 27 item 5; docs/metrics.md "ARX's metrics") ------------------
# Each reproduces the score ARX's own implementation gives, so that an ARX result can be reproduced; the losses
# below map those scores onto [0, 1] without changing their order (`arx_score` gives the raw score).

def entropy_score(node: Sequence[int], table: EncodedTable) -> float:
    """ARX's non-uniform entropy of every row at `node`, suppressed or not, in bits: sum over QIs and rows of
    -log2(#rows with the original value / #rows with the generalized value) (`MetricMDNUEntropyPrecomputed`)."""
    costs = cell_costs(table, "entropy")
    return float(sum(costs.total[i][x] for i, x in enumerate(node)))


def suppressed_block_entropy(node: Sequence[int], table: EncodedTable, suppressed_rows: np.ndarray | None) -> float:
    """The suppressed rows' entropy as their own block (`fitness.metrics.block_entropy`), summed over QIs, each
    QI's values read at the node's level."""
    if suppressed_rows is None or not suppressed_rows.size:
        return 0.0
    return sum(block_entropy(np.bincount(q.codes[x][suppressed_rows], minlength=q.cards[x]))
               for q, x in zip(table.qis, node))


def entropy_bound(table: EncodedTable) -> float:
    """2 q n log2 n: no cell costs more than log2 n at its level nor again as a suppressed block's member, so the
    non-monotonic entropy divided by it lies in [0, 1] (ARX's own maximum per QI is 2 n log2 n too)."""
    n = table.n
    return 2.0 * len(table.qis) * n * math.log2(n) if n > 1 else 0.0


@dataclass(frozen=True)
class ArxEntropy:
    """ARX's monotonic non-uniform entropy (`Metric.createPrecomputedEntropyMetric(threshold, true)`): every
    row is charged at the node's level whether it is suppressed or not, so the loss depends on the node alone
    and never falls when a level rises, suppression or not. Normalized as `entropy` (by the fully generalized
    table's entropy): with nothing suppressed the two are equal."""

    name: ClassVar[str] = "arx-entropy"
    monotone: ClassVar[bool] = True
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = False
    # it reads the table's value counts, which a partitioned run's coordinator does not hold: not a summary
    from_summary: ClassVar[bool] = False
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = True

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        return self.lower_bound(node, table)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        raise TypeError(f"the {self.name} objective reads the table's value counts, not a summary of the classes")

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        norm = cell_costs(table, "entropy").norm
        return min(max(entropy_score(node, table) / norm, 0.0), 1.0) if norm > 0 else 0.0

    def score(self, node: Sequence[int], table: EncodedTable, class_sizes: np.ndarray,
              suppressed_rows: np.ndarray) -> float:
        """ARX's score: the entropy in bits."""
        return entropy_score(node, table)


@dataclass(frozen=True)
class ArxEntropyNonMonotone:
    """ARX's non-monotonic non-uniform entropy (`Metric.createPrecomputedEntropyMetric(threshold)` and
    `(threshold, false)`): `arx-entropy` plus, per QI, the suppressed rows' entropy as a block of their own
    (`fitness.metrics.block_entropy`). Releasing suppressed rows can lower it, so it is monotone only among
    nodes that suppress nothing; `arx-entropy`'s score is its lower bound. Divided by `entropy_bound`."""

    name: ClassVar[str] = "arx-entropy-nm"
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = True
    from_summary: ClassVar[bool] = False
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = True

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        if suppressed and suppressed_rows is None:
            raise ValueError(f"the {self.name} objective needs suppressed_rows when rows are suppressed")
        return self.normalized(self.score(node, table, released_sizes, suppressed_rows), table)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        raise TypeError(f"the {self.name} objective needs the suppressed rows, not a summary of the classes")

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        return self.normalized(entropy_score(node, table), table)

    def normalized(self, score: float, table: EncodedTable) -> float:
        """`score` (bits) over `entropy_bound`, in [0, 1]."""
        bound = entropy_bound(table)
        return min(max(score / bound, 0.0), 1.0) if bound > 0 else 0.0

    def score(self, node: Sequence[int], table: EncodedTable, class_sizes: np.ndarray,
              suppressed_rows: np.ndarray | None) -> float:
        """ARX's score in bits."""
        return entropy_score(node, table) + suppressed_block_entropy(node, table, suppressed_rows)


def every_class_size(node: Sequence[int], table: EncodedTable, released_sizes: np.ndarray,
                     suppressed_rows: np.ndarray | None) -> np.ndarray:
    """The sizes of all classes of the node: the released ones and those its suppressed rows form."""
    if suppressed_rows is None or not suppressed_rows.size:
        return released_sizes
    columns, cards = table.columns(node)
    grouped = class_sizes([c[suppressed_rows] for c in columns], cards, int(suppressed_rows.size))
    return np.concatenate([released_sizes, grouped])


@dataclass(frozen=True)
class ArxDiscernibility:
    """ARX's monotonic discernibility DM* (`Metric.createDiscernabilityMetric(true)`): sum of |E|^2 over every
    class of the node, a suppressed class counting as the class it is (`fitness.metrics.dm_star`). Suppression
    does not change it and classes only merge when a level rises, so it is monotone whatever is suppressed.
    Divided by n^2. It reads the suppressed rows (to group them), so an array device falls back to the CPU."""

    name: ClassVar[str] = "arx-dm"
    monotone: ClassVar[bool] = True
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = True
    from_summary: ClassVar[bool] = False
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = False

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        if suppressed and suppressed_rows is None:
            raise ValueError(f"the {self.name} objective needs suppressed_rows when rows are suppressed")
        n = table.n
        return self.score(node, table, released_sizes, suppressed_rows) / (n * n) if n else 0.0

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        raise TypeError(f"the {self.name} objective needs the suppressed rows, not a summary of the classes")

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> None:
        return None

    def score(self, node: Sequence[int], table: EncodedTable, class_sizes: np.ndarray,
              suppressed_rows: np.ndarray | None) -> float:
        """ARX's score: DM*."""
        return dm_star(every_class_size(node, table, class_sizes, suppressed_rows))


def arx_domain_share(qi: EncodedQI, level: int) -> np.ndarray:
    """Per leaf, (m - 1) / (D - 1) for the value covering it at `level`, m of the D leaves of the hierarchy
    (`EncodedQI.domain`; the data's leaves when the hierarchy has no others): ARX's domain share, normalized as
    ARX normalizes its Loss per QI ((share - 1/D) / (1 - 1/D), `MetricMDNMLoss`)."""
    if qi.domain is None:
        return hierarchy_share(qi, level)
    counts, size = qi.domain
    if size <= 1:
        return np.zeros(qi.cards[0])
    return (counts[level][leaf_map(qi, level)] - 1.0) / (size - 1.0)


def _raw_domain_share(qi: EncodedQI, level: int) -> np.ndarray:
    """Per leaf, m / D for the value covering it at `level` (ARX's `DomainShare.getShare`, not normalized)."""
    if qi.domain is None:
        counts = np.bincount(leaf_map(qi, level), minlength=qi.cards[level]).astype(np.float64)
        return counts[leaf_map(qi, level)] / max(qi.cards[0], 1)
    domain, size = qi.domain
    return domain[level][leaf_map(qi, level)] / size


def _build_arx_loss_costs(table: EncodedTable) -> CellCosts:
    leaf_cost, totals, suppressed_cost, leaf_codes = [], [], [], []
    for qi in table.qis:
        counts = np.bincount(qi.codes[0], minlength=qi.cards[0]).astype(np.float64)
        levels = tuple(arx_domain_share(qi, level) for level in range(qi.height + 1))
        leaf_cost.append(levels)
        totals.append(tuple(float(counts @ c) for c in levels))
        suppressed_cost.append(np.ones(qi.cards[0]))
        leaf_codes.append(qi.codes[0])
    return CellCosts(tuple(leaf_cost), tuple(totals), tuple(suppressed_cost), tuple(leaf_codes), float(table.n))


@dataclass(frozen=True)
class ArxLoss:
    """ARX's Loss (`Metric.createLossMetric()`, `createPrecomputedLossMetric(threshold)`): per QI, the mean over
    rows of the domain share its value covers (`arx_domain_share`, of the hierarchy's leaves), a suppressed cell
    costing 1; the QIs' losses aggregated by ARX's geometric mean (`fitness.metrics.geometric_aggregate`). The
    loss is ARX's score itself. Releasing suppressed rows can lower it: monotone only among nodes that suppress
    nothing; its lower bound is the loss with nothing suppressed."""

    name: ClassVar[str] = "arx-loss"
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = True
    from_summary: ClassVar[bool] = False
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = False
    gs_factor: float = ARX_GS_FACTOR  # ARX's generalization/suppression factor (`arx-loss:G`, `gs_factors`)

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        if suppressed and suppressed_rows is None:
            raise ValueError(f"the {self.name} objective needs suppressed_rows when rows are suppressed")
        return self.score(node, table, released_sizes, suppressed_rows)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        raise TypeError(f"the {self.name} objective needs the suppressed rows, not a summary of the classes")

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        return self.score(node, table, np.zeros(0, dtype=np.int64), None)

    def score(self, node: Sequence[int], table: EncodedTable, class_sizes: np.ndarray,
              suppressed_rows: np.ndarray | None) -> float:
        """ARX's score, in [0, 1]."""
        return geometric_aggregate(self.per_qi(node, table, suppressed_rows))

    def class_ties(self, node: Sequence[int], table: EncodedTable, partition: Partition) -> np.ndarray:
        """Per class, ARX's Loss of the class alone (`MetricMDNMLoss`'s loss of one class: per QI the class's
        size times the raw domain share m / D of its value, aggregated as ARX's geometric mean
        prod (v_i + 1)^(1/q) - 1, in ARX's order of operations): the order in which ARX's sample-based
        criteria suppress classes of equal size under this metric (least loss first)."""
        assert partition.rows is not None
        first = np.full(partition.count, partition.rows.size, dtype=np.int64)
        np.minimum.at(first, partition.rows, np.arange(partition.rows.size, dtype=np.int64))
        sizes = partition.sizes.astype(np.float64)
        result = np.ones(partition.count, dtype=np.float64)
        for i, (qi, level) in enumerate(zip(table.qis, node)):
            share = table.derived(("arx raw domain share", i, level), lambda q=qi, x=level: _raw_domain_share(q, x))
            result *= np.power(sizes * share[qi.codes[0][first]] + 1.0, 1.0 / len(node))
        return result - 1.0

    def per_qi(self, node: Sequence[int], table: EncodedTable, suppressed_rows: np.ndarray | None) -> np.ndarray:
        """Each QI's loss in [0, 1] (ARX's per-attribute Loss)."""
        if self.gs_factor != ARX_GS_FACTOR:
            return weighted_loss_per_qi(node, table, suppressed_rows, *gs_factors(self.gs_factor))
        costs = table.derived(("cell costs", ArxLoss.name), lambda: _build_arx_loss_costs(table))
        n = max(table.n, 1)
        values = np.array([costs.total[i][x] for i, x in enumerate(node)], dtype=np.float64)
        if suppressed_rows is not None and suppressed_rows.size:
            for i, x in enumerate(node):
                values[i] += float(np.sum(1.0 - costs.leaf_cost[i][x][costs.leaf_codes[i][suppressed_rows]]))
        return np.clip(values / n, 0.0, 1.0)


def gs_factors(gs_factor: float) -> tuple[float, float]:
    """ARX's (generalization, suppression) weights of its Loss from the gs-factor G in [0, 1]
    (`MetricMDNMLoss`): G <= 0.5 keeps generalization at full weight and a suppressed cell's extra cost at 2G;
    G > 0.5 keeps suppression at full weight and generalization at 1 - 2(G - 0.5). At ARX's default 0.5 both
    are 1 (a generalized cell costs its domain share, a suppressed one 1)."""
    suppression = 2.0 * gs_factor if gs_factor < 0.5 else 1.0
    generalization = 1.0 if gs_factor <= 0.5 else 1.0 - 2.0 * (gs_factor - 0.5)
    return generalization, suppression


def weighted_loss_per_qi(node: Sequence[int], table: EncodedTable, suppressed_rows: np.ndarray | None,
                         g: float, s: float) -> np.ndarray:
    """ARX's per-QI Loss with generalization weight g and suppression weight s, written as ARX writes it: a
    released cell costs g * m/D (m/D the domain share of its value at the node's level), a suppressed cell
    m/D + s (1 - m/D); per QI the sum is normalized by ARX's (sum - g n/D) / (n - g n/D), clipped to [0, 1].
    With g = s = 1 it is `ArxLoss.per_qi`'s default (tested)."""
    n = float(table.n)
    out = np.zeros(len(node), dtype=np.float64)
    for i, (qi, level) in enumerate(zip(table.qis, node)):
        # per leaf, and the sum over all rows, once per table (node evaluation reads them; only the suppressed
        # rows are gathered per node, as the default path does)
        share = table.derived(("arx raw domain share", i, level), lambda q=qi, x=level: _raw_domain_share(q, x))
        total = g * table.derived(("arx raw domain share total", i, level), lambda q=qi, v=share: float(
            np.bincount(q.codes[0], minlength=q.cards[0]).astype(np.float64) @ v))
        if suppressed_rows is not None and suppressed_rows.size:
            cut = share[qi.codes[0][suppressed_rows]]
            total += float(np.sum(cut + s * (1.0 - cut) - g * cut))
        size = float(qi.domain[1]) if qi.domain is not None else float(max(qi.cards[0], 1))
        low = g * n / size
        out[i] = (total - low) / (n - low) if n - low > 0 else 0.0
    return np.clip(out, 0.0, 1.0)


def precision_per_qi(node: Sequence[int], heights: Sequence[int], released_rows: float, suppressed: float,
                     n: int) -> np.ndarray:
    """ARX's per-QI non-monotonic precision: (released rows * x_i / h_i + suppressed rows) / n (x_i / h_i = 0 for
    a QI of height 0), a suppressed cell costing 1 (`MetricMDNMPrecision`)."""
    shares = np.array([x / h if h else 0.0 for x, h in zip(node, heights)], dtype=np.float64)
    return (released_rows * shares + suppressed) / max(n, 1)


@dataclass(frozen=True)
class ArxPrecision:
    """ARX's default precision (`Metric.createPrecisionMetric()`, non-monotonic): per QI, the mean over rows of
    x_i / h_i for released rows and 1 for suppressed ones, averaged over all q QIs (ARX's arithmetic mean counts
    a QI of height 0 as 0, where `log` leaves it out). It follows from the node and the suppressed count, so it
    is a summary metric (the array device and `--partitioned` compute it); releasing suppressed rows lowers it,
    so it is monotone only among nodes that suppress nothing, where it is a sum of per-level costs."""

    name: ClassVar[str] = "arx-precision"
    monotone: ClassVar[bool] = False
    monotone_without_suppression: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = False
    from_summary: ClassVar[bool] = True
    node_only: ClassVar[bool] = False
    separable: ClassVar[bool] = True

    def __call__(self, node: Sequence[int], released_sizes: np.ndarray, suppressed: int,
                 table: EncodedTable, suppressed_rows: np.ndarray | None = None) -> float:
        return self.summary_loss(node, int(released_sizes.size), suppressed, 0.0, table)

    def summary_loss(self, node: Sequence[int], classes: int, suppressed: int, dm: float,
                     table: EncodedTable) -> float:
        if not len(node):
            return 0.0
        per_qi = precision_per_qi(node, table.heights, table.n - suppressed, suppressed, table.n)
        return min(max(float(per_qi.mean()), 0.0), 1.0)

    def lower_bound(self, node: Sequence[int], table: EncodedTable) -> float:
        return self.summary_loss(node, 0, 0, 0.0, table)

    def score(self, node: Sequence[int], table: EncodedTable, class_sizes: np.ndarray,
              suppressed_rows: np.ndarray | None) -> float:
        """ARX's score, in [0, 1]."""
        return self.summary_loss(node, 0, 0 if suppressed_rows is None else int(suppressed_rows.size), 0.0, table)


OBJECTIVES: dict[str, type[Objective]] = {
    "log": Precision,
    "dm": Discernibility,
    "aecs": AverageClassSize,
    "ncp": NormalizedCertaintyPenalty,
    "loss": GeneralizedLoss,
    "entropy": NonUniformEntropy,
    "arx-entropy": ArxEntropy,
    "arx-entropy-nm": ArxEntropyNonMonotone,
    "arx-dm": ArxDiscernibility,
    "arx-loss": ArxLoss,
    "arx-precision": ArxPrecision,
}


def parse_metric(name: object) -> tuple[str, float | None]:
    """A `--metric` value as (objective name, ARX gs-factor or None): `arx-loss:G` is ARX's Loss with the
    gs-factor G in [0, 1] (ARX's `createLossMetric(G)`); every other metric is a name of OBJECTIVES.
    InputError for anything else. The one parser of metric names (options, Config, apply)."""
    text = str(name)
    base, colon, factor = text.partition(":")
    if base not in OBJECTIVES or (colon and base != ArxLoss.name):
        raise InputError(f"unknown metric {text!r}; choose one of: {', '.join(OBJECTIVES)}, or arx-loss:G (ARX's "
                         "Loss with the gs-factor G in [0, 1])")
    if not colon:
        return base, None
    try:
        value = float(factor)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise InputError(f"the metric {text!r}: the gs-factor after 'arx-loss:' must be a number in [0, 1]")
    return base, value


# The objectives that take a weight per QI (`--weight QI=W`): a sum over QIs, so a weight scales one QI's share.
WEIGHTED = ("log", "loss", "ncp", "entropy")


def make_objective(name: str, weights: Sequence[float] | None = None) -> Objective:
    """The objective selected by `--metric NAME`, with one weight per QI (`--weight`) where it has them;
    InputError for an unknown name or weights on an objective without them. Weights that are all 1 give the
    unweighted objective itself, so a run with default weights is the run without them."""
    name, gs_factor = parse_metric(name)
    if weights is None or all(w == 1 for w in weights):
        return ArxLoss(gs_factor) if gs_factor is not None else OBJECTIVES[name]()
    if name not in WEIGHTED:
        raise InputError(f"the metric {name!r} takes no weights (--weight); weighted metrics: {', '.join(WEIGHTED)}")
    weights = tuple(float(w) for w in weights)
    if name == "log":
        return WeightedPrecision(weights)
    return OBJECTIVES[name](weights=weights)  # type: ignore[call-arg]


def solution_metrics(table: EncodedTable, node: Sequence[int], released_sizes: np.ndarray,
                     suppressed_rows: np.ndarray) -> dict:
    """Every metric of a node, for the report.

    Parameters
    ----------
    table : EncodedTable
        The table.
    node : sequence of int
        The node.
    released_sizes : np.ndarray
        The sizes of its released classes.
    suppressed_rows : np.ndarray
        Indices of its suppressed rows.

    Returns
    -------
    dict
        Raw figures (log, los, dm, aecs as in SPEC section 3, height), every objective's loss in [0, 1]
        (dm_normalized, aecs_normalized, ncp, loss, entropy, and ARX's variants `arx_metrics`) and ARX's raw
        scores (arx_entropy_bits, arx_entropy_nm_bits, dm_star; ARX's Loss score is `arx-loss` itself).
    """
    n = table.n
    suppressed = int(suppressed_rows.size)
    return {
        "log": precision_loss(node, table.heights),
        "los": suppressed_fraction(suppressed, n),
        "dm": discernibility(released_sizes, suppressed, n),
        "dm_normalized": Discernibility()(node, released_sizes, suppressed, table),
        "aecs": aecs(released_sizes, suppressed, n),
        "aecs_normalized": aecs_normalized(int(released_sizes.size), suppressed, n),
        "ncp": cell_costs(table, "ncp").normalized(node, suppressed_rows),
        "loss": cell_costs(table, "loss").normalized(node, suppressed_rows),
        "entropy": cell_costs(table, "entropy").normalized(node, suppressed_rows),
        "height": height(node),
        **arx_metrics(table, node, released_sizes, suppressed_rows),
    }


def arx_metrics(table: EncodedTable, node: Sequence[int], released_sizes: np.ndarray,
                suppressed_rows: np.ndarray) -> dict:
    """ARX's metric variants of a node for the report: each one's loss in [0, 1] under its `--metric` name and
    ARX's raw scores, so a release can be compared with an ARX result figure for figure."""
    suppressed = int(suppressed_rows.size)
    entropy_nm, dm = ArxEntropyNonMonotone(), ArxDiscernibility()
    return {
        "arx-entropy": ArxEntropy()(node, released_sizes, suppressed, table),
        "arx-entropy-nm": entropy_nm(node, released_sizes, suppressed, table, suppressed_rows),
        "arx-dm": dm(node, released_sizes, suppressed, table, suppressed_rows),
        "arx-loss": ArxLoss()(node, released_sizes, suppressed, table, suppressed_rows),
        "arx-precision": ArxPrecision()(node, released_sizes, suppressed, table),
        "arx_entropy_bits": entropy_score(node, table),
        "arx_entropy_nm_bits": entropy_nm.score(node, table, released_sizes, suppressed_rows),
        "dm_star": dm.score(node, table, released_sizes, suppressed_rows),
    }


def mixed_cost(costs: CellCosts, nodes: Sequence[Sequence[int]], group: np.ndarray) -> float:
    """The cell-cost loss of a release whose rows are generalized at different nodes: row r at
    `nodes[group[r]]`, suppressed where `group[r] < 0` (local recoding), normalized as `CellCosts.normalized`."""
    if costs.norm <= 0:
        return 0.0
    value = 0.0
    for i, leaves in enumerate(costs.leaf_codes):
        cell = costs.suppressed_cost[i][leaves]
        for g, node in enumerate(nodes):
            rows = group == g
            cell[rows] = costs.leaf_cost[i][node[i]][leaves[rows]]
        value += float(cell.sum())
    return min(max(value / costs.norm, 0.0), 1.0)


def mixed_metrics(table: EncodedTable, nodes: Sequence[Sequence[int]], group: np.ndarray,
                  released_sizes: np.ndarray) -> dict:
    """Every metric of `solution_metrics` for a release whose rows are generalized at different nodes (row r at
    `nodes[group[r]]`, suppressed where `group[r] < 0`; local recoding, docs/local-recoding.md).

    The cell-cost losses (ncp, loss, entropy) are summed cell by cell at each row's own node; LOG is the mean of
    the groups' LOG weighted by their rows (a LOG of one node is otherwise undefined); DM and AECS count the
    released classes `released_sizes` as the release forms them; `height` is the first (global) node's."""
    n = table.n
    suppressed = int((group < 0).sum())
    rows = np.bincount(group[group >= 0], minlength=len(nodes)).astype(np.float64)
    logs = np.array([precision_loss(node, table.heights) for node in nodes])
    dm = discernibility(released_sizes, suppressed, n)
    return {
        "log": float(rows @ logs / rows.sum()) if rows.sum() else 1.0,
        "los": suppressed_fraction(suppressed, n),
        "dm": dm,
        "dm_normalized": dm / (n * n) if n else 0.0,
        "aecs": aecs(released_sizes, suppressed, n),
        "aecs_normalized": aecs_normalized(int(released_sizes.size), suppressed, n),
        "ncp": mixed_cost(cell_costs(table, "ncp"), nodes, group),
        "loss": mixed_cost(cell_costs(table, "loss"), nodes, group),
        "entropy": mixed_cost(cell_costs(table, "entropy"), nodes, group),
        "height": height(nodes[0]),
        **mixed_arx_metrics(table, nodes, group, released_sizes),
    }


def mixed_per_qi(costs: CellCosts, nodes: Sequence[Sequence[int]], group: np.ndarray) -> np.ndarray:
    """Per QI, the summed cell cost of a release whose row r is at `nodes[group[r]]`, a row with `group[r] < 0`
    costing its suppressed cost (the raw sums `mixed_cost` normalizes)."""
    sums = np.zeros(len(costs.leaf_codes))
    for i, leaves in enumerate(costs.leaf_codes):
        cell = costs.suppressed_cost[i][leaves]
        for g, node in enumerate(nodes):
            rows = group == g
            cell[rows] = costs.leaf_cost[i][node[i]][leaves[rows]]
        sums[i] = float(cell.sum())
    return sums


def mixed_arx_metrics(table: EncodedTable, nodes: Sequence[Sequence[int]], group: np.ndarray,
                      released_sizes: np.ndarray) -> dict:
    """`arx_metrics` of a release whose rows are generalized at different nodes (local recoding): released rows
    at their own group's node; ARX charges suppressed rows at "the node", here the global one (`nodes[0]`, where
    they were suppressed): at its level for the entropies and grouped at it for DM*; a suppressed cell costs 1 in
    ARX's Loss. Equal to `arx_metrics` for one group."""
    rows = np.flatnonzero(group < 0)
    global_node = nodes[0]
    entropy = cell_costs(table, "entropy")
    bits = float(mixed_per_qi(entropy, nodes, np.where(group < 0, 0, group)).sum())
    bits_nm = bits + suppressed_block_entropy(global_node, table, rows)
    dm = dm_star(every_class_size(global_node, table, released_sizes, rows))
    loss_costs = table.derived(("cell costs", ArxLoss.name), lambda: _build_arx_loss_costs(table))
    loss = geometric_aggregate(np.clip(mixed_per_qi(loss_costs, nodes, group) / max(table.n, 1), 0.0, 1.0))
    n = table.n
    released_rows = np.bincount(group[group >= 0], minlength=len(nodes)).astype(np.float64)
    precision = sum(precision_per_qi(node, table.heights, rows_g, 0.0, n) for node, rows_g in zip(nodes, released_rows))
    precision = np.asarray(precision, dtype=np.float64) + rows.size / max(n, 1)
    return {
        "arx-entropy": min(max(bits / entropy.norm, 0.0), 1.0) if entropy.norm > 0 else 0.0,
        "arx-entropy-nm": ArxEntropyNonMonotone().normalized(bits_nm, table),
        "arx-dm": dm / (n * n) if n else 0.0,
        "arx-loss": loss,
        "arx-precision": min(max(float(precision.mean()), 0.0), 1.0) if precision.size else 0.0,
        "arx_entropy_bits": bits,
        "arx_entropy_nm_bits": bits_nm,
        "dm_star": dm,
    }
