"""The check of l-diversity (distinct, entropy, recursive (c, l)) on the file's sensitive column; entropy
l-diversity under Grassberger's estimator by its own rule (`kgen.check.rules.grassberger`)."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.kanonymity import ClassRule, SensitiveRule
from kgen.check.rules import CheckRule
from kgen.check.rules.grassberger import GrassbergerRule
from lattice.errors import InputError

ESTIMATORS = ("shannon", "grassberger")


def read(d: Mapping, dropped: bool) -> ClassRule:
    estimator = d.get("estimator", "shannon")
    if estimator not in ESTIMATORS:
        raise InputError(f"unknown entropy estimator {estimator!r}; the checker knows {', '.join(ESTIMATORS)}")
    if estimator == "grassberger":
        if d.get("variant") != "entropy":
            raise InputError(f"the entropy estimator grassberger is for entropy l-diversity, not {d.get('variant')}")
        return GrassbergerRule(str(d["sensitive"]), float(d["l"]))
    return SensitiveRule(d["sensitive"], d["l"], d.get("variant", "distinct"), d.get("c"))


RULE = CheckRule("l-diversity", read=read)
