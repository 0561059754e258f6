"""(epsilon, delta)-differential privacy by SafePub (Bild, Kuhn & Prasser, PoPETs 2018; ARX's
`EDDifferentialPrivacy` with its data-dependent search `DataDependentEDDPAlgorithm`).

SafePub releases a random sample of the rows, generalized to one node of the lattice, with every class of
fewer than k sampled rows suppressed. The three steps split the budget epsilon = epsilon_anon + epsilon_search:

- sampling: each row is kept with probability beta = 1 - exp(-epsilon_anon), independently;
- the node is chosen by a walk down the lattice from the top, `steps` draws of the exponential mechanism with
  epsilon_search / steps each, over a score function of sensitivity 1 (`score`);
- suppression of the classes below k, the least k for which the sampled, generalized, suppressed release is
  (epsilon_anon, delta)-DP: `derived_k` (the paper's Theorem on (k, beta)-SDGS, computed as ARX's
  `ParameterCalculation`).

Why here and not as a search of its own: the model is what every run, report and check must know (beta, k,
the budget split); the walk is `lattice.search.safepub.SafePub`, which gets `score` from kgen. The model itself
is k-anonymity with the derived k: what a class must have to be released.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import CountRule, MeasureRule
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from lattice.errors import InputError

SCORES = ("precision", "discernibility", "aecs")  # ARX's score functions computable from class sizes and levels
DEFAULT_SHARE = 0.1  # ARX's default share of epsilon for the search (its GUI's "epsilon generalization fraction")
ARX_CHECKS = 1000  # ARX's default search step limit, in checks; its search takes checks / QIs expansions
NOT_VERIFIABLE = ("the random sample (which rows were kept) and the exponential mechanism's draws: the file "
                  "shows the classes, not the randomness that chose them; the guarantee also assumes the seed "
                  "was drawn at random and kept secret (it reproduces both; the public report leaves it out)")


def parse_pair(value: object) -> tuple[float, float]:
    """(epsilon, delta) from "EPS,DELTA" (the option, run.toml) or a pair of numbers (Python, a report)."""
    parts = value.split(",") if isinstance(value, str) else value
    try:
        eps, delta = (float(p) for p in parts)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise InputError(f"--differential-privacy expects EPS,DELTA (two numbers), got {value!r}") from None
    if not (math.isfinite(eps) and eps > 0):
        raise InputError(f"--differential-privacy: epsilon must be a finite number > 0, got {eps!r}")
    if not 0.0 < delta < 1.0:
        raise InputError(f"--differential-privacy: delta must be in (0, 1), got {delta!r}")
    return eps, delta


def sampling_probability(epsilon_anon: float) -> float:
    """beta = 1 - exp(-epsilon_anon): the largest sampling probability for which (k, beta)-SDGS can be
    (epsilon_anon, delta)-DP (the paper's beta_max; ARX takes the interval's lower bound)."""
    return -math.expm1(-epsilon_anon)


def _binomial_tail(n: int, start: int, beta: float) -> float:
    """P(X >= start) for X ~ Binomial(n, beta): the first term from log-gamma, the rest by the terms' ratio
    (n - j) / (j + 1) * beta / (1 - beta), in log space (no overflow or underflow for large n)."""
    if start <= 0:
        return 1.0
    if start > n:
        return 0.0
    first = (math.lgamma(n + 1) - math.lgamma(start + 1) - math.lgamma(n - start + 1)
             + start * math.log(beta) + (n - start) * math.log1p(-beta))
    j = np.arange(start, n, dtype=float)
    steps = np.log(n - j) - np.log(j + 1) + (math.log(beta) - math.log1p(-beta))
    logs = first + np.concatenate(([0.0], np.cumsum(steps)))
    top = float(logs.max())
    return float(math.exp(top) * np.exp(logs - top).sum())


def delta_for(k: int, epsilon_anon: float, beta: float, cache: dict[int, tuple[float, float]] | None = None) -> float:
    """delta(k): the delta that (k, beta)-SDGS reaches at epsilon_anon (the paper's bound, ARX's
    `calculateDelta`): with gamma = (e^eps - 1 + beta) / e^eps, the largest over n >= ceil(k / gamma - 1) of
    a_n = P(Binomial(n, beta) > floor(n gamma)), taken until a_n's running maximum reaches the bound
    c_n = exp(-n (gamma ln(gamma / beta) - (gamma - beta))), which every later a_n stays below. `cache` keeps
    (a_n, c_n) by n across the k tried (ARX caches them too)."""
    cache = {} if cache is None else cache
    power = math.exp(epsilon_anon)
    gamma = (power - 1.0 + beta) / power
    rate = gamma * math.log(gamma / beta) - (gamma - beta)
    n = max(0, math.ceil(k / gamma - 1.0))
    worst, bound = -math.inf, math.inf
    while worst < bound:
        if n not in cache:
            cache[n] = (_binomial_tail(n, math.floor(n * gamma) + 1, beta), math.exp(-n * rate))
        worst, bound = max(worst, cache[n][0]), cache[n][1]
        n += 1
    return worst


def derived_k(epsilon_anon: float, delta: float, beta: float) -> int:
    """The k of (k, beta)-SDGS that gives (epsilon_anon, delta)-DP: one more than the least k with
    delta(k) < delta, as ARX's `calculateK` returns it (its loop counts one past the k it tested; a larger k
    only adds protection, and kgen follows ARX so that both derive the same k)."""
    k, cache = 1, {}  # type: ignore[var-annotated]
    while True:
        reached = delta_for(k, epsilon_anon, beta, cache)
        k += 1
        if reached < delta:
            return k


@dataclass(frozen=True)
class DifferentialPrivacy:
    """(epsilon, delta)-differential privacy by SafePub: classes of fewer than the derived k rows of the sample
    are suppressed (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        The guarantee: epsilon > 0, delta in (0, 1).
    search_share : float
        The share of epsilon spent by the search (ARX's default 0.1), in (0, 1).
    steps : int
        The exponential mechanism's draws (the walk's expansions); each spends epsilon_search / steps.
    score : str
        The score function the mechanism draws by (`SCORES`).
    input_rows, sampled_rows : int or None
        The rows before and after sampling, set by kgen once it has sampled (reported and checked).
    """

    epsilon: float
    delta: float
    search_share: float = DEFAULT_SHARE
    steps: int = 100
    score: str = "precision"
    input_rows: int | None = None
    sampled_rows: int | None = None
    name: ClassVar[str] = "differential-privacy"
    needs_rows: ClassVar[bool] = False
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    # No count rule: the row-partitioned engines and k-Optimize count sizes of all rows, not of a sample, so
    # they must refuse it (`fitness.privacy.beyond_sizes`); the array kernels then run it on the CPU.
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        parse_pair((self.epsilon, self.delta))
        if not is_real(self.search_share) or not 0.0 < self.search_share < 1.0:
            raise InputError(f"--dp-search-share must be a fraction in (0, 1), got {self.search_share!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise InputError(f"--dp-steps must be a whole number >= 1, got {self.steps!r}")
        if self.score not in SCORES:
            raise InputError(f"unknown --dp-score {self.score!r}; choose {', '.join(SCORES)}")
        object.__setattr__(self, "_k", derived_k(self.epsilon_anon, self.delta, self.beta))

    @property
    def epsilon_search(self) -> float:
        return self.epsilon * self.search_share

    @property
    def epsilon_anon(self) -> float:
        return self.epsilon - self.epsilon_search

    @property
    def beta(self) -> float:
        return sampling_probability(self.epsilon_anon)

    @property
    def derived_k(self) -> int:
        return int(self._k)  # type: ignore[attr-defined]

    @property
    def min_class_size(self) -> int:
        return self.derived_k

    @property
    def params(self) -> dict:
        return {"differential_privacy": f"{self.epsilon:g},{self.delta:g}", "epsilon": self.epsilon,
                "delta": self.delta, "dp_search_share": self.search_share, "epsilon_search": self.epsilon_search,
                "epsilon_anon": self.epsilon_anon, "beta": self.beta, "derived_k": self.derived_k,
                "dp_steps": self.steps, "dp_score": self.score, "input_rows": self.input_rows,
                "sampled_rows": self.sampled_rows, "not_verifiable": NOT_VERIFIABLE}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes smaller than the derived k."""
        return partition.sizes < self.derived_k

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def steps_for(steps: object, qis: int) -> int:
    """The walk's steps: as given, or ARX's default of 1000 checks in expansions (1000 // QIs, at least 1)."""
    return int(steps) if steps is not None else max(1, ARX_CHECKS // max(1, qis))  # type: ignore[call-overload]


def score_function(kind: str, k: int, input_rows: int, sample_rows: int, heights: Sequence[int]
                   ) -> Callable[[object], float]:
    """The score the exponential mechanism draws by, higher is better, scaled to sensitivity 1 (ARX's
    `getScore` of Precision, Discernibility and AECS): rows not sampled count as suppressed, as ARX counts
    `pcount - count`. An evaluation needs `node`, `suppressed`, `classes` and `dm` (`fitness.evaluator`)."""
    unsampled, n, d = input_rows - sample_rows, input_rows, len(heights)

    def precision(e: object) -> float:
        released = sample_rows - e.suppressed  # type: ignore[attr-defined]
        lost = e.suppressed + unsampled  # type: ignore[attr-defined]
        total = sum(released * (x / h if h else 0.0) + lost for x, h in zip(e.node, heights))  # type: ignore[attr-defined]
        return -total / d / (k - 1 if k > 1 else 1)

    def discernibility(e: object) -> float:
        squares = e.dm - e.suppressed * sample_rows  # type: ignore[attr-defined]
        lost = e.suppressed + unsampled  # type: ignore[attr-defined]
        scale = 5.0 if k == 1 else k * k / (k - 1) + 1.0
        return -(n * lost + squares) / (n * scale)

    def aecs(e: object) -> float:
        return float(e.classes + (1 if e.suppressed + unsampled > 0 else 0))  # type: ignore[attr-defined]

    return {"precision": precision, "discernibility": discernibility, "aecs": aecs}[kind]


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[DifferentialPrivacy]:
    eps, delta = parse_pair(values["differential_privacy"])
    steps = values.get("dp_steps")  # None: kgen sets ARX's default from the number of QIs (`steps_for`)
    return [DifferentialPrivacy(eps, delta, float(values["dp_search_share"]),  # type: ignore[arg-type]
                                100 if steps is None else int(steps), str(values["dp_score"]))]  # type: ignore[call-overload]


def read(d: Mapping[str, object]) -> DifferentialPrivacy:
    eps, delta = parse_pair((d.get("epsilon"), d.get("delta")))
    return DifferentialPrivacy(eps, delta, float(d.get("dp_search_share", DEFAULT_SHARE)),  # type: ignore[arg-type]
                               int(d.get("dp_steps", 100)), str(d.get("dp_score", "precision")),  # type: ignore[call-overload]
                               d.get("input_rows"), d.get("sampled_rows"))  # type: ignore[arg-type]


def summary(d: Mapping[str, object]) -> str:
    def num(key: str) -> float:  # a report changed by hand may lack a figure: nan, not a TypeError
        value = d.get(key)
        return float(value) if is_real(value) else math.nan  # type: ignore[arg-type]

    return (f"({num('epsilon'):g}, {num('delta'):g})-DP: classes >= {d.get('derived_k')} rows of a sample of "
            f"{d.get('sampled_rows')} / {d.get('input_rows')} rows (beta {num('beta'):.3f}); SafePub search epsilon "
            f"{num('epsilon_search'):.3g}, {d.get('dp_steps')} steps by {d.get('dp_score')}")


FAMILY = ModelFamily(
    name="differential-privacy",
    parameters=(
        Parameter("differential_privacy", Constraint("--differential-privacy", "text", optional=True),
                  metavar="EPS,DELTA",
                  help="(epsilon, delta)-differential privacy by SafePub: a random sample of the rows, a node chosen "
                       "by the exponential mechanism, classes below a derived k suppressed (docs/privacy-models.md)"),
        Parameter("dp_search_share", Constraint("--dp-search-share", "real", low=0.0, high=1.0, above=True),
                  default=DEFAULT_SHARE, metavar="F",
                  help="the share of epsilon spent choosing the node (ARX default 0.1); the rest protects the sample"),
        Parameter("dp_steps", Constraint("--dp-steps", "whole", low=1, optional=True), metavar="N",
                  help="the exponential mechanism's steps down the lattice (default: ARX's 1000 checks, i.e. "
                       "1000 // QIs steps)"),
        Parameter("dp_score", Constraint("--dp-score", "choice", choices=SCORES), default="precision",
                  help="the score function the search draws by: precision, discernibility or aecs (ARX's)"),
    ),
    build=build, read=read, summary=summary, order=90,
    # epsilon, delta and the share are restated as the report has them: a lower epsilon is not "more" for the
    # file (it derives a smaller k); what follows from them is checked through them, and the walk's steps and
    # score do not show in the file.
    stricter_keys=(("dp_steps", "derived"), ("dp_score", "derived"), ("epsilon_search", "derived"),
                   ("epsilon_anon", "derived"), ("beta", "derived"), ("derived_k", "derived"),
                   ("input_rows", "derived"), ("sampled_rows", "derived"), ("not_verifiable", "derived")),
)
