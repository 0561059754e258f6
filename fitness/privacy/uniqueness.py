"""A threshold on population uniqueness: the estimated share of the population's records that are unique on
the QIs, from the released classes' size histogram and the sampling fraction, is at most U.

ARX's `PopulationUniqueness` criterion (SPEC section 13) with its estimators: Pitman, Zayatz, SNB or Dankar et
al.'s rule choosing among them, the functions of `fitness.uniqueness` (the same figures `kgen risk
--sampling-fraction F --uniqueness-model M` reports). The population has round(rows / F) records, rows the
table's rows, suppressed ones included, as ARX counts them.

Like the average risk it judges the released classes together (`sample_based`), after the per-class models
have suppressed theirs; it suppresses nothing of its own, as ARX's criterion is a test of the whole release:
when the estimate is above U (or the estimator finds none: Pitman's fit or SNB's root not found), every
remaining class is marked, so the node is infeasible unless the suppression limit allows releasing nothing.
Not monotone, with or without suppression: merging classes changes the histogram the estimators fit, and an
estimate may rise (docs/privacy-models.md); the searches treat it as they treat entropy l-diversity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from fitness.privacy.common import SAMPLING_FRACTION
from fitness.uniqueness import DEFAULT_UNIQUENESS_MODEL, UNIQUENESS_MODELS, population_uniqueness
from lattice.errors import InputError


def estimated_share(sizes: np.ndarray, rows: int, sampling_fraction: float, model: str) -> float | None:
    """The estimated population-uniqueness share of released classes of `sizes` in a table of `rows` rows
    (None: the estimator found no estimate)."""
    values, counts = np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)
    histogram = {int(s): int(c) for s, c in zip(values, counts) if s > 0}
    share = population_uniqueness(histogram, sampling_fraction, rows, model, every=False)["share"]
    return None if share is None else float(share)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PopulationUniqueness:
    """The estimated population-uniqueness share of the release is at most `u`.

    Parameters
    ----------
    u : float
        The largest share allowed, in (0, 1].
    sampling_fraction : float
        F = sample rows / population rows, in (0, 1].
    model : str
        The estimator: dankar (the default, ARX's), pitman, zayatz or snb.
    """

    u: float
    sampling_fraction: float
    model: str = DEFAULT_UNIQUENESS_MODEL
    name: ClassVar[str] = "population-uniqueness"
    needs_rows: ClassVar[bool] = False
    min_class_size: ClassVar[int] = 1
    monotone: ClassVar[bool] = False
    monotone_with_suppression: ClassVar[bool] = False
    sample_based: ClassVar[bool] = True
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        if not is_real(self.u) or not 0.0 < self.u <= 1.0:
            raise InputError(f"--max-population-uniqueness must be a number in (0, 1], got {self.u!r}")
        if not is_real(self.sampling_fraction) or not 0.0 < self.sampling_fraction <= 1.0:
            raise InputError(f"--sampling-fraction must be a number in (0, 1], got {self.sampling_fraction!r}")
        if self.model not in UNIQUENESS_MODELS:
            raise InputError(f"unknown uniqueness model {self.model!r}; choose {', '.join(UNIQUENESS_MODELS)}")

    @property
    def params(self) -> dict:
        return {"max_population_uniqueness": self.u, "sampling_fraction": self.sampling_fraction,
                "uniqueness_model": self.model}

    def enforce(self, partition: Partition, table: EncodedTable, suppressed: np.ndarray) -> np.ndarray:
        """Every class not in `suppressed` when the estimate over those classes is above u or missing;
        none when it holds."""
        kept = ~suppressed
        share = estimated_share(partition.sizes[kept], max(table.n, int(partition.sizes.sum())),
                                float(self.sampling_fraction), self.model)
        holds = share is not None and share <= self.u + TOLERANCE
        return np.zeros(partition.count, dtype=bool) if holds else kept.copy()

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """The model alone (see `enforce`)."""
        return self.enforce(partition, table, np.zeros(partition.count, dtype=bool))

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[PopulationUniqueness]:
    if values.get("sampling_fraction") is None:
        raise InputError("--max-population-uniqueness needs --sampling-fraction F (sample rows / population rows): "
                         "population uniqueness is estimated from the sample")
    return [PopulationUniqueness(values["max_population_uniqueness"], values["sampling_fraction"],  # type: ignore[arg-type]
                                 str(values["uniqueness_model"]))]


def read(d: Mapping[str, object]) -> PopulationUniqueness:
    return PopulationUniqueness(d.get("max_population_uniqueness"), d.get("sampling_fraction"),  # type: ignore[arg-type]
                                str(d.get("uniqueness_model", DEFAULT_UNIQUENESS_MODEL)))


def summary(d: Mapping[str, object]) -> str:
    return (f"population uniqueness <= {d.get('max_population_uniqueness')} ({d.get('uniqueness_model')}, "
            f"sampling fraction {d.get('sampling_fraction')})")


FAMILY = ModelFamily(
    name="population-uniqueness",
    parameters=(
        Parameter("max_population_uniqueness", Constraint("max-population-uniqueness", "real", low=0.0, high=1.0,
                                                          above=True, optional=True), metavar="U",
                  stricter="lower",
                  help="a threshold on the estimated share of population records unique on the QIs (needs "
                       "--sampling-fraction; the estimate `kgen risk` reports)"),
        SAMPLING_FRACTION,
        Parameter("uniqueness_model", Constraint("uniqueness model", "choice", choices=UNIQUENESS_MODELS),
                  default=DEFAULT_UNIQUENESS_MODEL,
                  help="the population-uniqueness estimator of --max-population-uniqueness: dankar (ARX's default "
                       "rule), pitman, zayatz or snb"),
    ),
    build=build, read=read, summary=summary, order=65,
)
