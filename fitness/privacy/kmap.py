"""k-map estimated from the sample: every released class matches at least k records of the population.

Without the population table, the population size of a class of f sample records is unknown; ARX's `KMap`
(with a `CellSizeEstimator`, SPEC section 13) models the number of *sample* records of a population class of
k records as Poisson with mean lambda = pi k (pi the sampling fraction n / N), and derives the class size k'
below which a class is taken to match fewer than k population records, at significance level alpha:

- Poisson: the least c with P(X <= c - 1) >= 1 - alpha (X ~ Poisson(lambda)), returned as c + 1;
- zero-truncated Poisson (a class is in the sample, so X >= 1): the least c with
  sum_{x=1}^{c-1} P(X = x) / (1 - P(X = 0)) >= 1 - alpha, returned as c;

each search stopping once it reaches k (k' is never above k: a class of k sample records matches at least k
population records), and k' = min(k, that). The model is then k'-anonymity: nothing but counts, monotone with
and without suppression, evaluated by every kernel and the device (`count_rule`). The report records k' and
the type-1 error 1 - (the probability reached), which ARX reports as well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import CountRule, MeasureRule
from fitness.parameters import Constraint, is_real, require_whole
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from fitness.privacy.common import K_MAP, SAMPLING_FRACTION
from lattice.errors import InputError

ESTIMATORS = ("poisson", "zero-truncated-poisson")
DEFAULT_SIGNIFICANCE = 0.01


def poisson_pmf(x: int, lam: float) -> float:
    """P(X = x) for X ~ Poisson(lam), in log space (no overflow for large x)."""
    if lam <= 0.0:
        return 1.0 if x == 0 else 0.0
    return math.exp(-lam + x * math.log(lam) - math.lgamma(x + 1))


def derived_k(k: int, sampling_fraction: float, estimator: str, significance: float) -> tuple[int, float]:
    """(k', type-1 error) of ARX's estimated k-map (see the module docstring)."""
    lam = sampling_fraction * k
    threshold = 1.0 - significance
    if estimator == "poisson":
        counter, value, cdf = 0, 0.0, 0.0
        while value < threshold:
            cdf += poisson_pmf(counter, lam)
            value = cdf
            counter += 1
            if counter >= k:
                value = 1.0
                break
        return min(k, counter + 1), 1.0 - value
    zero = 1.0 - poisson_pmf(0, lam)
    counter, value = 1, 0.0
    while value < threshold:
        value += poisson_pmf(counter, lam) / zero if zero > 0 else 1.0
        counter += 1
        if counter >= k:
            value = 1.0
            break
    return min(k, counter), 1.0 - value


@dataclass(frozen=True)
class KMap:
    """Estimated k-map: every released class has at least k' rows, k' derived from k, the sampling fraction,
    the estimator and the significance level (module docstring).

    Parameters
    ----------
    k : int
        The least number of population records a released class must match.
    sampling_fraction : float
        pi = sample rows / population rows, in (0, 1].
    estimator : str
        "poisson" or "zero-truncated-poisson".
    significance : float
        alpha, the accepted chance that a class of k' sample records matches fewer than k population records.
    """

    k: int
    sampling_fraction: float
    estimator: str = "poisson"
    significance: float = DEFAULT_SIGNIFICANCE
    name: ClassVar[str] = "k-map"
    needs_rows: ClassVar[bool] = False
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    measure_rule: ClassVar[MeasureRule | None] = None
    derived: tuple[int, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require_whole("k of k-map", self.k, 1)
        if not is_real(self.sampling_fraction) or not 0.0 < self.sampling_fraction <= 1.0:
            raise InputError(f"--sampling-fraction must be a number in (0, 1], got {self.sampling_fraction!r}")
        if self.estimator not in ESTIMATORS:
            raise InputError(f"unknown k-map estimator {self.estimator!r}; choose {' or '.join(ESTIMATORS)}")
        if not is_real(self.significance) or not 0.0 <= self.significance <= 1.0:
            raise InputError(f"the k-map significance level must be in [0, 1], got {self.significance!r}")
        object.__setattr__(self, "derived", derived_k(self.k, float(self.sampling_fraction), self.estimator,
                                                      float(self.significance)))

    @property
    def derived_k(self) -> int:
        """k': the least class size taken to match k population records."""
        return self.derived[0]

    @property
    def min_class_size(self) -> int:
        return self.derived_k

    @property
    def count_rule(self) -> CountRule:
        return CountRule(self.derived_k)

    @property
    def params(self) -> dict:
        return {"k_map": self.k, "sampling_fraction": self.sampling_fraction, "estimator": self.estimator,
                "significance": self.significance, "derived_k": self.derived_k, "type1_error": self.derived[1]}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes smaller than k'."""
        return partition.sizes < self.derived_k

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[KMap]:
    if values.get("population") is not None:  # exact counts: the k-map-population family builds that model
        if values.get("sampling_fraction") is not None:
            raise InputError("--k-map takes --population FILE (exact counts) or --sampling-fraction F (estimated), "
                             "not both")
        return []
    if values.get("sampling_fraction") is None:
        raise InputError("--k-map needs --population FILE (the population table: exact counts) or "
                         "--sampling-fraction F (sample rows / population rows: estimated)")
    return [KMap(values["k_map"], values["sampling_fraction"], str(values["k_map_estimator"]),  # type: ignore[arg-type]
                 values["k_map_significance"])]  # type: ignore[arg-type]


def read(d: Mapping[str, object]) -> KMap:
    return KMap(d.get("k_map"), d.get("sampling_fraction"), str(d.get("estimator", "poisson")),  # type: ignore[arg-type]
                d.get("significance", DEFAULT_SIGNIFICANCE))  # type: ignore[arg-type]


def summary(d: Mapping[str, object]) -> str:
    return (f"{d.get('k_map')}-map (sampling fraction {d.get('sampling_fraction')}, {d.get('estimator')}): "
            f"classes >= {d.get('derived_k')} rows")


FAMILY = ModelFamily(
    name="k-map",
    parameters=(
        K_MAP,
        SAMPLING_FRACTION,
        Parameter("k_map_estimator", Constraint("k-map estimator", "choice", choices=ESTIMATORS), default="poisson",
                  help="how k-map estimates population class sizes (ARX's): poisson or zero-truncated-poisson"),
        Parameter("k_map_significance", Constraint("k-map significance", "real", low=0.0, high=1.0),
                  default=DEFAULT_SIGNIFICANCE, metavar="A", stricter="lower",
                  help="k-map's significance level: the accepted chance that a class matches fewer than K"),
    ),
    # k' and the type-1 error follow from the others (the checker derives k' again): not compared on their own
    build=build, read=read, summary=summary, order=55,
    stricter_keys=(("significance", "lower"), ("derived_k", "derived"), ("type1_error", "derived")),
)
