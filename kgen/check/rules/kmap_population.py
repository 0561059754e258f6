"""k-map with a population table, checked from the file and the report: each released class matches at
least k rows of the population file (its SHA-256 compared with the description's), generalized at the
report's node with its saved hierarchies (`kgen.check.population`)."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.population import PopulationRule
from kgen.check.rules import CheckRule


def read(d: Mapping, dropped: bool) -> PopulationRule:
    return PopulationRule("k-map-population", file=str(d["population"]), digest=d.get("population_digest"),
                          k=int(d["k_map"]))


RULE = CheckRule("k-map-population", read=read)
