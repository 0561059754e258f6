"""t-closeness on every sensitive column, with the equal or ordered ground distance (docs/privacy-models.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fitness.models import DISTANCES, PrivacyModel, t_closeness
from fitness.parameters import Constraint
from fitness.privacy import ModelFamily, Parameter
from lattice.errors import InputError


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[PrivacyModel]:
    return [t_closeness(column, values["t_closeness"], str(values["t_distance"]))  # type: ignore[arg-type]
            for column in sensitive]


def read(d: Mapping[str, object]) -> PrivacyModel:
    column = d.get("sensitive")
    if not isinstance(column, str) or not column:
        raise InputError(f"a t-closeness model must name its sensitive column, got {column!r}")
    Constraint("t-closeness distance", "choice", choices=DISTANCES).check(d.get("distance", "equal"))
    return t_closeness(column, d.get("t"), str(d.get("distance", "equal")))  # type: ignore[arg-type]


def summary(d: Mapping[str, object]) -> str:
    return f"t-closeness ({d.get('distance', 'equal')} distance) on {d.get('sensitive')}, t = {d.get('t')}"


FAMILY = ModelFamily(
    name="t-closeness",
    parameters=(
        Parameter("t_closeness", Constraint("t-closeness", "real", optional=True), metavar="T",
                  help="t of t-closeness on every sensitive column (EMD to the whole table's distribution)"),
        Parameter("t_distance", Constraint("t-closeness distance", "choice", choices=DISTANCES), default="equal",
                  help="ground distance of t-closeness: equal (categories) or ordered (numbers, else label order)"),
    ),
    build=build, read=read, summary=summary, per_sensitive=True, order=20,
)
