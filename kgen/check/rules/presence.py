"""delta-presence, checked from the file and the report: each released class's share of the population class
it stands for (the report's input, generalized at its node with its saved hierarchies) lies in [DMIN, DMAX]
(`kgen.check.population`)."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.population import PopulationRule
from kgen.check.rules import CheckRule


def read(d: Mapping, dropped: bool) -> PopulationRule:
    return PopulationRule("delta-presence", dmin=float(d["dmin"]), dmax=float(d["dmax"]))


RULE = CheckRule("delta-presence", read=read)
