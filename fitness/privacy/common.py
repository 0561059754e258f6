"""Parameters that more than one model family reads, declared once here and imported by each (the registry
refuses two separate declarations of one name, `fitness.privacy._discover`): the sampling fraction, which the
estimated k-map and the population-uniqueness threshold both need."""

from __future__ import annotations

from fitness.parameters import Constraint
from fitness.privacy import Parameter

SAMPLING_FRACTION = Parameter(
    "sampling_fraction", Constraint("sampling fraction", "real", low=0.0, high=1.0, above=True, optional=True),
    metavar="F", help="sample rows / population rows, for --k-map's and --max-population-uniqueness's estimates")
