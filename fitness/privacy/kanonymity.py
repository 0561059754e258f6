"""k-anonymity: every released class has at least k rows (always asked for; k = 2 by default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fitness.models import KAnonymity, PrivacyModel
from fitness.parameters import Constraint
from fitness.privacy import ModelFamily, Parameter


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[PrivacyModel]:
    return [KAnonymity(values["k"])]  # type: ignore[arg-type]


def read(d: Mapping[str, object]) -> PrivacyModel:
    return KAnonymity(d.get("k"))  # type: ignore[arg-type]


def summary(d: Mapping[str, object]) -> str:
    return f"k-anonymity, k = {d.get('k')}"


FAMILY = ModelFamily(
    name="k-anonymity",
    parameters=(Parameter("k", Constraint("k", "whole", low=1), default=2, help="k of k-anonymity",
                          required=True),),
    build=build, read=read, summary=summary, order=0,
)
