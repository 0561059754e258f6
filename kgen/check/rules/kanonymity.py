"""The check of k-anonymity: every released class of the file has at least k rows (the verdict's k)."""

from __future__ import annotations

from collections.abc import Mapping

from kgen.check.rules import CheckRule


def least_size(d: Mapping) -> int:
    return int(d["k"])


RULE = CheckRule("k-anonymity", read=lambda d, dropped: None, least_size=least_size)
