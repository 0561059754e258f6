"""Parameters that more than one model family reads, declared once here and imported by each (the registry
refuses two separate declarations of one name, `fitness.privacy._discover`): the sampling fraction, which the
estimated k-map and the population-uniqueness threshold both need; k of k-map, which the estimated and the
exact (population table) k-map both read; and `TableRef`, what a "table" resource parameter is read into."""

from __future__ import annotations

from dataclasses import dataclass

from fitness.parameters import Constraint
from fitness.privacy import Parameter


@dataclass(frozen=True)
class TableRef:
    """A table file a model names (`Parameter.resource == "table"`: a population, a research subset), as kgen
    read it: its path and SHA-256. fitness reads no files: kgen encodes the rows into
    `EncodedTable.population`; the model keeps the reference so that its description records the path and
    digest, and `kgen apply` (which reads the file again) refuses a different one."""

    path: str
    sha256: str


K_MAP = Parameter("k_map", Constraint("k of k-map", "whole", low=1, optional=True), metavar="K", stricter="higher",
                  help="k-map: every released class matches >= K population records: counted in --population "
                       "FILE, or estimated from the sample with --sampling-fraction")

SAMPLING_FRACTION = Parameter(
    "sampling_fraction", Constraint("sampling fraction", "real", low=0.0, high=1.0, above=True, optional=True),
    metavar="F", help="sample rows / population rows, for --k-map's and --max-population-uniqueness's estimates")
