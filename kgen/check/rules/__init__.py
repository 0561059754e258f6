"""The independent check rules, one module per privacy model family: what `kgen check`, `kgen check --report`
and the check before every publish apply to a written release.

Each module defines `RULE`, a `CheckRule` for the family of the same name in `fitness.privacy` (the `model` of
its descriptions in reports). A rule reads a saved description and gives the object that judges each class of
the file (`kgen.check.kanonymity.ClassRule`); it shares no code with the evaluator and imports nothing of
fitness/. The modules are found by scanning this package's folder, so a new model brings its rule as one new
file (tests/test_model_registry.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kgen.check.kanonymity import ClassRule
from lattice.errors import InputError


@dataclass(frozen=True)
class CheckRule:
    """The check of one model family.

    Attributes
    ----------
    model : str
        The family's name (a description's `model`).
    read : callable
        `read(description, dropped)`: the ClassRule for a saved description, or None when the file cannot
        show it (t-closeness when the suppressed rows were left out: the column's distribution is gone).
    least_size : callable or None
        `least_size(description)`: the smallest class size the description asks for (k), for the verdict's
        k; None: the rule does not set one. `read` is asked too (None when the size is all there is to check).
    """

    model: str
    read: Callable[[Mapping, bool], ClassRule | None]
    least_size: Callable[[Mapping], int] | None = None


def _discover() -> dict[str, CheckRule]:
    found: dict[str, CheckRule] = {}
    for module in pkgutil.iter_modules(__path__):
        rule = getattr(importlib.import_module(f"{__name__}.{module.name}"), "RULE", None)
        if isinstance(rule, CheckRule):
            found[rule.model] = rule
    return found


RULES: dict[str, CheckRule] = _discover()


def rules_from_models(descriptions: Sequence[Mapping], dropped: bool) -> tuple[int, list[ClassRule]]:
    """k and the class rules of a report's `models` (or of the models a command line asked for, described).

    Raises
    ------
    InputError
        A model with no check rule here: what cannot be checked is never passed.
    """
    k, rules = 1, []
    for d in descriptions:
        rule = RULES.get(str(d.get("model")))
        if rule is None:
            raise InputError(f"no independent check rule for the privacy model {d.get('model')!r}; the checker "
                             f"knows {', '.join(sorted(RULES))}")
        if rule.least_size is not None:
            k = max(k, rule.least_size(d))
        judged = rule.read(d, dropped)
        if judged is not None:
            rules.append(judged)
    return k, rules
