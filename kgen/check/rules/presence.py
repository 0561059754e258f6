"""delta-presence, checked from the file and the report: each released class's share of the population class
it stands for (the report's input, generalized at its node with its saved hierarchies) lies in [DMIN, DMAX]
(`kgen.check.population`), in the variant the description claims (the definition, or ARX's order of checks)."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.population import PopulationRule
from kgen.check.rules import CheckRule


def read(d: Mapping, dropped: bool) -> PopulationRule:
    """The rule of the variant the description claims (none saved: the definition, as reports before it)."""
    return PopulationRule("delta-presence", dmin=float(d["dmin"]), dmax=float(d["dmax"]),
                          variant=str(d.get("variant", "definition")), least_class=d.get("minimal_class_size", 1),
                          subset=d.get("research_subset"), subset_digest=d.get("subset_digest"))


RULE = CheckRule("delta-presence", read=read)
