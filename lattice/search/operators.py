"""The genetic operators of KGen (SPEC section 4) as pure functions, registered on the GA's DEAP toolbox.

Crossover, mutations and descent work on lattice nodes (tuples of ints; `lower` and `upper` are the corners of
the pre-pruned box). The two selections take DEAP individuals and have the signatures of DEAP's
`tools.selTournament` and `tools.selRoulette`, but draw from an explicit stream: DEAP's own draw from the
global `random`, which a parallel backend in the same process (Dask's scheduler and client do) may draw from
between two generations, and which the caller owns. Every function that draws takes an explicit `rng`
(anything with `random.Random`'s `random`, `randint` and `choice`), so a run is reproducible from its seed
whatever evaluates the nodes, and no randomness is drawn in workers.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from operator import attrgetter
from typing import Protocol, TypeVar

from lattice.node import Node

MAX_PENALTY = 0.9
PARTNERS = 6  # swap partners tried per lowered gene, cheapest next step first (`swap_move`)
PARTNER_PROBES = 150  # `swap_partners`: about this many partner probes per lowered level, whatever q
MAX_DROP = 1  # levels a swap lowers a gene by: at Cargo q = 97, 1 found better nodes than 1-5 (mean LOG 0.872
# against 0.882 over seeds 1-10): the kicks come sooner when a pass proves no swap improves; q = 25 unchanged
T = TypeVar("T")


def swap_partners(q: int, probes: int = PARTNER_PROBES) -> int:
    """Swap partners per lowered gene at q genes: `probes // q`, between 2 and PARTNERS.

    Why: a swap-optimality scan asks up to q x partners nodes. Up to 25 QIs that is PARTNERS (6, measured
    best there); at Cargo 2000 with 97 QIs six partners spent most of the 5,000 evaluations proving nodes
    swap-optimal, and two left room for kicks: 7 of seeds 1-10 within 0.01 of certify's 0.84381 instead
    of 2, with `kick_range` (results/benchmarks/ga-optimum.md).
    """
    return max(2, min(PARTNERS, probes // max(q, 1)))


def kick_range(q: int) -> tuple[int, int]:
    """How many genes an iterated-local-search kick raises at q genes: from max(2, q^2 / 1000) to
    max(4, q^2 / 300), so 2-4 up to 31 genes, 2-8 at 50, 9-31 at 97.

    Why: 2-4 genes barely move a 97-gene node, whose kicks then fall back into the same swap-optimal node;
    a tenth to a third of the genes lets them leave it (Cargo 2000, 97 QIs). At 25 QIs 2-7 genes lost the
    proved optimum in 2 of seeds 1-10 that 2-4 found, hence growth with q squared, not with q
    (results/benchmarks/ga-optimum.md).
    """
    low = max(2, q * q // 1000)
    return low, max(4, low, q * q // 300)


class Rng(Protocol):
    def random(self) -> float: ...

    def randint(self, a: int, b: int) -> int: ...

    def choice(self, seq: Sequence): ...


# --- lattice helpers ---------------------------------------------------------------------------------------

def meet(p0: Sequence[int], p1: Sequence[int]) -> Node:
    """The greatest node below both: gene-wise minimum."""
    return tuple(min(a, b) for a, b in zip(p0, p1, strict=True))


def join(p0: Sequence[int], p1: Sequence[int]) -> Node:
    """The least node above both: gene-wise maximum."""
    return tuple(max(a, b) for a, b in zip(p0, p1, strict=True))


def rand_between(a: Sequence[int], b: Sequence[int], rng: Rng) -> Node:
    """A node drawn gene by gene uniformly in [a_i, b_i]. Requires a <= b."""
    return tuple(rng.randint(x, y) for x, y in zip(a, b, strict=True))


# --- crossover ---------------------------------------------------------------------------------------------

def crossover_probe(p0: Sequence[int], p1: Sequence[int], feasible0: bool, feasible1: bool) -> Node | None:
    """The node whose feasibility the crossover of these parents needs, or None.

    Both parents feasible: the meet; neither: the join; exactly one: nothing (the meet is below an
    infeasible parent and the join above a feasible one, so both are known by monotonicity).
    Separate from `crossover` so a generation's probes can be evaluated in one batch.
    """
    if feasible0 and feasible1:
        return meet(p0, p1)
    if not feasible0 and not feasible1:
        return join(p0, p1)
    return None


def crossover(p0: Sequence[int], p1: Sequence[int], feasible0: bool, feasible1: bool,
              probe_feasible: bool | None, rng: Rng) -> list[Node]:
    """KGen's lattice crossover; 1 to 3 children. `probe_feasible` answers `crossover_probe`.

    - both feasible: [meet] if the meet is feasible, else [rand(meet, p0), rand(meet, p1)];
    - neither feasible: [join], plus rand(p0, join) and rand(p1, join) if the join is infeasible;
    - only p_a feasible: [rand(meet, p_a)].
    """
    low, high = meet(p0, p1), join(p0, p1)
    if feasible0 and feasible1:
        if probe_feasible is None:
            raise ValueError("the crossover of two feasible parents needs the meet's feasibility")
        return [low] if probe_feasible else [rand_between(low, p0, rng), rand_between(low, p1, rng)]
    if not feasible0 and not feasible1:
        if probe_feasible is None:
            raise ValueError("the crossover of two infeasible parents needs the join's feasibility")
        if probe_feasible:
            return [high]
        return [high, rand_between(p0, high, rng), rand_between(p1, high, rng)]
    return [rand_between(low, p0 if feasible0 else p1, rng)]


# --- mutation ----------------------------------------------------------------------------------------------

def standard_mutation(node: Sequence[int], lower: Sequence[int], upper: Sequence[int], rng: Rng) -> Node:
    """The paper's mutation: one gene (among those with a choice) moves to another level of [lb_i, h_i].

    The node moves up or down a strategy path through it. A box of a single node returns the node.
    """
    movable = [i for i, (a, b) in enumerate(zip(lower, upper)) if a < b]
    if not movable:
        return tuple(node)
    i = rng.choice(movable)
    level = rng.randint(lower[i], upper[i] - 1)
    out = list(node)
    out[i] = level if level < node[i] else level + 1  # uniform over the other levels
    return tuple(out)


def reset_mutation(node: Sequence[int], lower: Sequence[int], upper: Sequence[int], rate: float,
                   rng: Rng) -> Node:
    """The prototype's mutation: each gene is redrawn uniformly in [lb_i, h_i] with probability `rate`."""
    return tuple(rng.randint(a, b) if rng.random() < rate else x for x, a, b in zip(node, lower, upper))


def horizontal_count(q: int, fraction: float = 0.2) -> int:
    """m = fraction * q rounded up to an even number, at least 2 and at most q."""
    m = 2 * math.ceil(fraction * q / 2)
    return min(max(m, 2), q)


def horizontal_mutation(node: Sequence[int], lower: Sequence[int], upper: Sequence[int], rng: Rng,
                        fraction: float = 0.2) -> Node:
    """Move sideways to another strategy path at about the same height.

    Picks m = `horizontal_count(q, fraction)` distinct genes one at a time, alternately one that can rise
    (raised to a uniform level in (x_i, h_i]) and one that can fall (lowered to a uniform level in
    [lb_i, x_i)). Exactly m genes change unless the box runs out of genes with room in the needed direction,
    in which case the alternation stops there.
    """
    out = list(node)
    chosen: set[int] = set()
    for j in range(horizontal_count(len(out), fraction)):
        up = j % 2 == 0
        room = [i for i in range(len(out)) if i not in chosen and (out[i] < upper[i] if up else out[i] > lower[i])]
        if not room:
            break
        i = rng.choice(room)
        chosen.add(i)
        out[i] = rng.randint(out[i] + 1, upper[i]) if up else rng.randint(lower[i], out[i] - 1)
    return tuple(out)


def horizontal_probability(age: int, base: float = 0.4, mode: str = "paper") -> float:
    """Probability of a horizontal mutation: min(1, base + age/10) ("paper"), or the prototype's age/10."""
    if mode == "paper":
        return min(1.0, base + age / 10)
    if mode == "prototype":
        return min(1.0, age / 10)
    raise ValueError(f"unknown horizontal mode {mode!r}")


# --- penalty and selection ---------------------------------------------------------------------------------

def penalty(age: int) -> float:
    """pn(s) = min(0.9, age / 10): 0 at birth, +0.1 for every generation survived."""
    return min(MAX_PENALTY, age / 10)


def rescaled_penalties(ages: Sequence[int]) -> list[float]:
    """The prototype's penalties: ages rescaled min-max onto [0, 0.9] within the population."""
    low, high = min(ages, default=0), max(ages, default=0)
    if high == low:
        return [0.0] * len(ages)
    return [MAX_PENALTY * (a - low) / (high - low) for a in ages]


def penalized_score(fitness: float, pn: float) -> float:
    """w(s) = (1 - pn(s)) * f(s)."""
    return (1.0 - pn) * fitness


def penalized_scores(fitnesses: Sequence[float], ages: Sequence[int], rescale: bool = False) -> list[float]:
    """w for a population, with the paper's penalty or (rescale) the prototype's min-max one."""
    pens = rescaled_penalties(ages) if rescale else [penalty(a) for a in ages]
    return [penalized_score(f, p) for f, p in zip(fitnesses, pens, strict=True)]


def sel_tournament(individuals: Sequence[T], k: int, tournsize: int, fit_attr: str = "fitness", *,
                   rng: Rng) -> list[T]:
    """DEAP's `tools.selTournament` drawing from an explicit `rng` instead of the global `random`.

    Parameters
    ----------
    individuals : sequence
        The candidates, each with a DEAP fitness under `fit_attr` (the GA passes the age-penalized one).
    k : int
        How many to select (with replacement).
    tournsize : int
        Candidates per tournament, drawn uniformly with replacement (`rng.choice`, as DEAP's `selRandom`).
    fit_attr : str
        The attribute compared; the first drawn wins a tie.
    rng : Rng
        The run's random stream.

    Returns
    -------
    list
        `k` references into `individuals`: for the same stream state, exactly DEAP's choice.
    """
    if not individuals:
        raise ValueError("cannot select from an empty population")
    key = attrgetter(fit_attr)
    return [max([rng.choice(individuals) for _ in range(tournsize)], key=key) for _ in range(k)]


def roulette_probabilities(scores: Sequence[float]) -> list[float]:
    """P(s) = w(s) / sum(w); uniform when every score is 0. Scores must be >= 0."""
    if any(s < 0 for s in scores):
        raise ValueError("roulette scores must be non-negative")
    total = sum(scores)
    if total == 0:
        return [1.0 / len(scores)] * len(scores)
    return [s / total for s in scores]


def sel_roulette(individuals: Sequence[T], k: int, fit_attr: str = "fitness", *, rng: Rng) -> list[T]:
    """DEAP's `tools.selRoulette` drawing from an explicit `rng`, and uniform when every score is 0.

    Parameters
    ----------
    individuals : sequence
        The candidates; the first value of the fitness under `fit_attr` is the (non-negative) score.
    k : int
        How many to select (with replacement).
    fit_attr : str
        The attribute whose first value weighs a candidate.
    rng : Rng
        The run's random stream.

    Returns
    -------
    list
        `k` references into `individuals`, each drawn with probability `roulette_probabilities`. For positive
        scores and the same stream state, DEAP's choice (candidates sorted by decreasing score, one
        `random()` per pick); DEAP's own function returns fewer than `k` when every score is 0 (a population
        with no feasible node scores 0 throughout), this one draws uniformly then.
    """
    if not individuals:
        raise ValueError("cannot select from an empty population")
    ranked = sorted(individuals, key=attrgetter(fit_attr), reverse=True)
    scores = [getattr(ind, fit_attr).values[0] for ind in ranked]
    roulette_probabilities(scores)  # refuses negative scores
    total = sum(scores)
    if total == 0:
        return [rng.choice(individuals) for _ in range(k)]
    chosen = []
    for _ in range(k):
        u, acc = rng.random() * total, 0.0
        pick = ranked[-1]  # rounding can leave u at the total
        for ind, score in zip(ranked, scores):
            acc += score
            if acc > u:
                pick = ind
                break
        chosen.append(pick)
    return chosen


# --- descent (the kgen+ preset) ----------------------------------------------------------------------------

def descend(node: Sequence[int], lower: Sequence[int], order: Sequence[int]) -> Generator[Node, bool, Node]:
    """Push a feasible node down to a minimal feasible one, asking feasibility question by question.

    A coroutine: it yields probe nodes, is sent each probe's feasibility, and returns the final node. For
    each gene in `order` it binary-searches the lowest level that keeps the node feasible. Requires monotone
    feasibility; then one pass suffices: lowering later genes never makes an earlier gene lowerable again,
    so the result is minimal (no feasible node directly below it).
    """
    x = list(node)
    for i in order:
        lo, hi = lower[i], x[i]
        while lo < hi:
            mid = (lo + hi) // 2
            x[i] = mid
            if (yield tuple(x)):
                hi = mid
            else:
                lo = mid + 1
        x[i] = lo
    return tuple(x)



# --- swap moves (the memetic preset) -----------------------------------------------------------------------

def raise_cap(steps: Sequence[int], level: int, top: int, gain: int) -> int:
    """The highest level of a gene, from `level` up to `top`, whose raise costs strictly less than `gain`
    (`steps[l-1]`: the cost of the step l-1 -> l)."""
    spent = 0
    while level < top and spent + steps[level] < gain:
        spent += steps[level]
        level += 1
    return level


def swap_move(node: Sequence[int], lower: Sequence[int], upper: Sequence[int], steps: Sequence[Sequence[int]],
              order: Sequence[int], max_drop: int = MAX_DROP,
              partners: int = PARTNERS) -> Generator[Node, bool, tuple[Node, int] | None]:
    """The first improving swap move from a minimal feasible node, asking feasibility question by question.

    A coroutine like `descend`. Why: a minimal feasible node cannot lose a level on one gene alone, but it
    may lose `drop` levels on gene i (saving their steps) if another gene j rises by less than that saving.
    For each drop (1 level first, at most `max_drop`), each gene i in `order` that can drop that far and
    each other gene j (the `partners` of cheapest next step), it asks the node with gene i `drop` levels down
    and gene j at the highest level whose raise still saves something (`raise_cap`): infeasible, no level of
    j repairs gene i's drop within the saving (monotone feasibility); feasible, it is cheaper than `node`.
    Returns (that node, j), the caller pushes it down to a minimal node (gene j first), or None when no
    such swap improves (`node` is swap-optimal in this neighbourhood).
    """
    x = list(node)
    for drop in range(1, min(max_drop, max((a - b for a, b in zip(x, lower)), default=0)) + 1):
        for i in order:
            if x[i] - drop < lower[i]:
                continue
            gain = sum(steps[i][x[i] - drop : x[i]])
            others = [j for j in range(len(x)) if j != i and x[j] < upper[j]]
            others.sort(key=lambda j: (steps[j][x[j]], j))
            for j in others[:partners]:
                cap = raise_cap(steps[j], x[j], upper[j], gain)
                if cap == x[j]:
                    break  # the cheapest remaining step already costs the whole saving
                y = list(x)
                y[i] -= drop
                y[j] = cap
                if (yield tuple(y)):
                    return tuple(y), j
    return None
