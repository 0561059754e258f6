"""The check of l-diversity (distinct, entropy, recursive (c, l)) on the file's sensitive column."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.kanonymity import SensitiveRule
from kgen.check.rules import CheckRule


def read(d: Mapping, dropped: bool) -> SensitiveRule:
    return SensitiveRule(d["sensitive"], d["l"], d.get("variant", "distinct"), d.get("c"))


RULE = CheckRule("l-diversity", read=read)
