"""The check of t-closeness: each class's distance to the column's distribution over all rows of the file.

A file without its suppressed rows no longer holds that distribution, so t is then left to the evaluator
(None): the report says so in its `verified` record."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.kanonymity import SensitiveRule
from kgen.check.rules import CheckRule


def read(d: Mapping, dropped: bool) -> SensitiveRule | None:
    return None if dropped else SensitiveRule(d["sensitive"], t=d["t"], distance=d.get("distance", "equal"))


RULE = CheckRule("t-closeness", read=read)
