"""k-map with a population table (ARX's `KMap(k, DataSubset)`, SPEC section 13): every released class matches
at least k rows of the population table generalized at the same node, counted exactly (beside the estimated
form of `fitness.privacy.kmap`, which needs only the sampling fraction).

The input is the sample that is released; `--population FILE` is the population (the same QI columns; in
ARX's cases the sample is a subset of it). The evaluator counts both per class (`EncodedTable.population`);
class sizes for k, suppression and the metrics count the released rows only. A class with fewer than k
population matches is suppressed. Monotone with and without suppression: a class's population count only
grows when it is generalized, and suppressing one class changes no other class's count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import CountRule, MeasureRule
from fitness.parameters import Constraint, require_whole
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from fitness.privacy.common import K_MAP, TableRef
from lattice.errors import InputError


@dataclass(frozen=True)
class KMapPopulation:
    """Every released class matches at least k rows of the population table at the same node.

    Parameters
    ----------
    k : int
        The least number of population rows a released class must match.
    population : TableRef
        The population table, as kgen read it (its rows are in `EncodedTable.population`).
    """

    k: int
    population: TableRef
    name: ClassVar[str] = "k-map-population"
    needs_rows: ClassVar[bool] = True
    needs_population: ClassVar[bool] = True
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    min_class_size: ClassVar[int] = 1
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        require_whole("k of k-map", self.k, 1)
        if not isinstance(self.population, TableRef):
            raise InputError(f"--population {self.population!r} was not read as a table")

    @property
    def params(self) -> dict:
        return {"k_map": self.k, "population": self.population.path, "population_digest": self.population.sha256}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes matching fewer than k population rows."""
        if partition.population is None:
            raise ValueError("k-map with a population needs its counts (EncodedTable.population)")
        return partition.population < self.k

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[KMapPopulation]:
    if values.get("k_map") is None:
        raise InputError("--population FILE is the population of --k-map K: give both")
    return [KMapPopulation(values["k_map"], values["population"])]  # type: ignore[arg-type]


def read(d: Mapping[str, object]) -> KMapPopulation:
    population = d.get("population")
    if not isinstance(population, TableRef):
        raise InputError(f"a k-map model must name its population table, got {population!r}")
    saved = d.get("population_digest")
    if saved is not None and saved != population.sha256:
        raise InputError(f"population {population.path} is not the population the run used: its SHA-256 is "
                         f"{population.sha256[:16]}..., the report records {str(saved)[:16]}...")
    return KMapPopulation(d.get("k_map"), population)  # type: ignore[arg-type]


def summary(d: Mapping[str, object]) -> str:
    k = d.get("k_map")
    return f"{k}-map (population {d.get('population')}): each class matches >= {k} of its rows"


FAMILY = ModelFamily(
    name="k-map-population",
    parameters=(
        Parameter("population", Constraint("population", "text", optional=True), metavar="FILE", resource="table",
                  help="the population table of --k-map (same QI columns): classes are counted in it exactly"),
        K_MAP,
    ),
    build=build, read=read, summary=summary, order=56,
)
