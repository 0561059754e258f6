"""l-diversity on every sensitive column: distinct, entropy or recursive (c, l) (docs/privacy-models.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from fitness.models import ESTIMATORS, L_VARIANTS, PrivacyModel, l_diversity
from fitness.parameters import Constraint
from fitness.privacy import ModelFamily, Parameter
from lattice.errors import InputError


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[PrivacyModel]:
    estimator = str(values.get("l_estimator") or "shannon")
    return [l_diversity(column, values["l"], str(values["l_variant"]), values.get("c"), estimator)  # type: ignore[arg-type]
            for column in sensitive]


def read(d: Mapping[str, object]) -> PrivacyModel:
    column = d.get("sensitive")
    if not isinstance(column, str) or not column:
        raise InputError(f"an l-diversity model must name its sensitive column, got {column!r}")
    Constraint("l-diversity variant", "choice", choices=L_VARIANTS).check(d.get("variant", "distinct"))
    Constraint("entropy estimator", "choice", choices=ESTIMATORS).check(d.get("estimator", "shannon"))
    return l_diversity(column, d.get("l"), str(d.get("variant", "distinct")), d.get("c"),  # type: ignore[arg-type]
                       str(d.get("estimator", "shannon")))


def summary(d: Mapping[str, object]) -> str:
    variant = d.get("variant", "distinct")
    c = f", c = {d.get('c')}" if variant == "recursive" else ""
    estimator = " (Grassberger's estimator)" if d.get("estimator") == "grassberger" else ""
    return f"{variant} l-diversity{estimator} on {d.get('sensitive')}, l = {d.get('l')}{c}"


def impossible(values: Mapping[str, object], distinct: int) -> str | None:
    """No class can hold more distinct values than the whole column (entropy l is bounded by it too, but a
    fractional l near it stays possible, so only distinct and recursive are judged here; under Grassberger's
    estimator a class needs ceil(l) distinct values)."""
    l, variant = values["l"], values["l_variant"]  # noqa: E741 (the model's name for it)
    if variant in ("distinct", "recursive") and l > distinct:  # type: ignore[operator]
        return f"{variant} l-diversity with l = {l:g} is impossible: the column has only {distinct} distinct values"
    if variant == "entropy" and values.get("l_estimator") == "grassberger" and math.ceil(l) > distinct:  # type: ignore[arg-type]
        return (f"entropy l-diversity (Grassberger's estimator) with l = {l:g} is impossible: a class needs "
                f"{math.ceil(l)} distinct values and the column has only {distinct}")  # type: ignore[arg-type]
    return None


def refuse(values: Mapping[str, object]) -> str | None:
    """An entropy estimator asked for without entropy l-diversity (the variant's own refusal is the model's)."""
    if values.get("l_estimator", "shannon") not in (None, "shannon") and values.get("l") is None:
        return "--l-estimator is for entropy l-diversity: give --l L --l-variant entropy with it"
    return None


FAMILY = ModelFamily(
    name="l-diversity",
    parameters=(
        Parameter("l", Constraint("l", "real", optional=True), stricter="higher",
                  help="l of l-diversity on every sensitive column"),
        Parameter("l_variant", Constraint("l-diversity variant", "choice", choices=L_VARIANTS), default="distinct",
                  help="distinct, entropy or recursive (c, l)-diversity"),
        Parameter("c", Constraint("c", "real", optional=True), stricter="lower",
                  help="c of recursive (c, l)-diversity"),
        Parameter("l_estimator", Constraint("entropy estimator", "choice", choices=ESTIMATORS), default="shannon",
                  help="entropy l-diversity's estimator: shannon (plug-in) or grassberger (less biased on small "
                       "classes, as ARX offers)"),
    ),
    build=build, read=read, summary=summary, per_sensitive=True, order=10, impossible=impossible, refuse=refuse,
)
