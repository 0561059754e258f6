"""The registry of privacy model families: the one list that the command line, Config, run.toml, the report,
`kgen apply` and `kgen check` read.

Each module of this package defines one family (`FAMILY`, a `ModelFamily`): its parameters (each with its
Config field / run.toml key, command-line flag, range and help), how to build its models from their values and
the sensitive columns, how to read one back from a report's description, and its summary line. Its
independent check rule lives in `kgen.check.rules` under the same name. Adding a model is therefore two new
files and no edit elsewhere: the modules are found by scanning this package's folder
(tests/test_model_registry.py adds a model to a copy of the source that way and runs every command on it).

Why a registry and not a list in each consumer: before it, the l-diversity and t-closeness parameters were
written in nine modules (options, Config, its constraints, prepare, apply's report reader, the report keys, the
summary, the check command and the checker), and a new model had to find them all.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fitness.models import PrivacyModel, in_company
from fitness.parameters import Constraint
from lattice.errors import InputError

# The kinds of file a parameter may name (`Parameter.resource`), each read by kgen into the object `build` gets.
RESOURCES = ("hierarchy", "table")
STRICTER = ("higher", "lower")  # and, in `ModelFamily.stricter_keys` only, "derived" (a figure not compared)
# or "order:A,B" (a choice's values from the least to the most asked: `kgen.check.claims.asks_less`)


@dataclass(frozen=True)
class Parameter:
    """One parameter of a model family.

    Attributes
    ----------
    name : str
        The Config field and run.toml key ("t_closeness"); the report's top-level key of the same name.
    constraint : Constraint
        What it accepts (checked once, by `Config.check`, and again by the model when it is built).
    default : object
        Its value when not given (None: the family is not asked for, when this is its first parameter).
    help : str
        The command-line help.
    flag : str
        The command-line option (default: `--` and the name with `-` for `_`).
    metavar : str or None
        The command-line value's name in the help.
    required : bool
        The command line must give it (k: a release's k is never a silent default there).
    resource : str or None
        A kind of `RESOURCES` ("hierarchy", "table"): the value given (command line, run.toml, Config, the report)
        is a file's path, which kgen reads into an object (a `lattice.hierarchy.Hierarchy`; for a table its
        `fitness.privacy.common.TableRef`, the rows going to `EncodedTable.population`) before `build` and before
        `read` (fitness reads no files); the report records the file's SHA-256, `kgen apply` re-reads it.
    stricter : {"higher", "lower"} or None
        Which way the parameter asks more of a release (k: higher; t: lower): `kgen check --report` accepts a
        restatement that moves it that way. None: a restatement must give the report's value.
    """

    name: str
    constraint: Constraint
    default: object = None
    help: str = ""
    flag: str = ""
    metavar: str | None = None
    required: bool = False
    resource: str | None = None
    stricter: str | None = None

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class ModelFamily:
    """A family of privacy models and everything the run needs to know of it.

    Attributes
    ----------
    name : str
        The `model` of its descriptions in reports ("l-diversity"); the key of its check rule.
    parameters : tuple of Parameter
        Its parameters; the first one says whether the family is asked for (not None).
    build : callable
        `build(values, sensitive)`: the models for the parameter values (a mapping by name) and the
        sensitive columns; called only when the family is asked for.
    read : callable
        `read(description)`: the model a report's description saved (`PrivacyModel.describe()`); an
        InputError names the key that is wrong.
    summary : callable
        `summary(description)`: the words for one of its models in the console summary and the HTML page.
    per_sensitive : bool
        Its models constrain sensitive columns (it needs `--sensitive`).
    impossible : callable or None
        `impossible(values, distinct)`: why no release can meet the family on a sensitive column with
        `distinct` distinct values (None: it can); checked against the table before the search.
    order : int
        Where it comes in options, reports and summaries (k-anonymity first).
    refuse : callable or None
        `refuse(values)`: why the parameter values are wrong together even when the family is not asked for
        (a parameter given without the one it qualifies), or None; asked by `build_models` of every family.
    stricter_keys : tuple of (str, str)
        For the description keys that are not named as a parameter (t-closeness saves `t` for `t_closeness`),
        the way that asks more ("higher" | "lower"), as `Parameter.stricter`.
    """

    name: str
    parameters: tuple[Parameter, ...]
    build: Callable[[Mapping[str, object], Sequence[str]], list[PrivacyModel]]
    read: Callable[[Mapping[str, object]], PrivacyModel]
    summary: Callable[[Mapping[str, object]], str]
    per_sensitive: bool = False
    order: int = 50
    impossible: Callable[[Mapping[str, object], int], str | None] | None = None
    stricter_keys: tuple[tuple[str, str], ...] = ()
    refuse: Callable[[Mapping[str, object]], str | None] | None = None

    def asked(self, values: Mapping[str, object]) -> bool:
        """Whether `values` (by parameter name) ask for this family: its first parameter is set."""
        return values.get(self.parameters[0].name) is not None


def _discover() -> dict[str, ModelFamily]:
    found: list[ModelFamily] = []
    for module in pkgutil.iter_modules(__path__):
        family = getattr(importlib.import_module(f"{__name__}.{module.name}"), "FAMILY", None)
        if isinstance(family, ModelFamily):
            found.append(family)
    found.sort(key=lambda f: (f.order, f.name))
    declared: dict[str, Parameter] = {}
    for p in (p for f in found for p in f.parameters):
        if declared.setdefault(p.name, p) is not p:  # one declaration, shared by reference (`common`), is fine
            raise RuntimeError(f"two privacy model families declare the parameter {p.name!r} apart; declare it once "
                               "(fitness.privacy.common) and share it")
        if p.resource not in (None, *RESOURCES) or p.stricter not in (None, *STRICTER):
            raise RuntimeError(f"parameter {p.name!r}: unknown resource {p.resource!r} or stricter {p.stricter!r}")
    return {f.name: f for f in found}


FAMILIES: dict[str, ModelFamily] = _discover()


def parameters() -> list[Parameter]:
    """Every family's parameters, in registry order, each once (a shared one at its first family): Config's
    model fields and the report's model keys."""
    return list({p.name: p for family in FAMILIES.values() for p in family.parameters}.values())


def resource_parameters() -> list[Parameter]:
    """The parameters whose value names a file kgen reads for the model (`Parameter.resource`)."""
    return [p for p in parameters() if p.resource is not None]


def stricter_direction(model: str) -> dict[str, str]:
    """Per description key of `model`'s family, the way that asks more ("higher" | "lower"), from its
    parameters' `stricter` and the family's `stricter_keys` (a description key that is not a parameter's
    name, as t-closeness's `t`)."""
    family = FAMILIES.get(model)
    if family is None:
        return {}
    return {**{p.name: p.stricter for p in family.parameters if p.stricter}, **dict(family.stricter_keys)}


def family_of(name: str) -> ModelFamily | None:
    """The family whose descriptions say `model: name`."""
    return FAMILIES.get(name)


def build_models(values: Mapping[str, object], sensitive: Sequence[str]) -> list[PrivacyModel]:
    """The models the parameter `values` ask for, family by family (k-anonymity first).

    Raises
    ------
    InputError
        A family on sensitive columns asked for with none given, or a parameter its model refuses.
    """
    for family in FAMILIES.values():
        why = family.refuse(values) if family.refuse is not None else None
        if why:
            raise InputError(why)
    models: list[PrivacyModel] = []
    needing = [f.name for f in FAMILIES.values() if f.per_sensitive and f.asked(values)]
    if needing and not sensitive:
        raise InputError(f"{' and '.join(needing)} need{'s' if len(needing) == 1 else ''} a sensitive attribute "
                         "(--sensitive COLUMN)")
    for family in FAMILIES.values():
        if family.asked(values):
            models.extend(family.build(values, sensitive))
    return in_company(models)


def read_model(description: Mapping[str, object]) -> PrivacyModel:
    """The model a report's description saved; InputError for a family this kgen does not know."""
    family = FAMILIES.get(str(description.get("model")))
    if family is None:
        raise InputError(f"unknown privacy model {description.get('model')!r}; this kgen knows "
                         f"{', '.join(FAMILIES)}")
    return family.read(description)


def report_values(values: Mapping[str, object]) -> dict[str, object]:
    """The report's top-level model keys: each parameter's value, null for a family not asked for."""
    out: dict[str, object] = {}
    for family in FAMILIES.values():
        asked = family.asked(values)
        for p in family.parameters:  # a shared parameter keeps its value when any family that reads it is asked
            out[p.name] = values.get(p.name) if asked else out.get(p.name)
    return out


def summary_words(descriptions: Sequence[Mapping[str, object]]) -> list[str]:
    """The summary's words for each saved model description (its family's, or the description itself)."""
    words = []
    for d in descriptions:
        family = FAMILIES.get(str(d.get("model")))
        words.append(family.summary(d) if family else ", ".join(f"{k} = {v}" for k, v in d.items()))
    return words


def beyond_sizes(models: Sequence[PrivacyModel]) -> list[str]:
    """The names of the models that need more than each class's row count (a sensitive column, a population):
    what the engines that count class sizes alone (partitioned, k-Optimize) cannot evaluate. A model says it
    by its `count_rule` (`fitness.models.CountRule`), never by its type."""
    return list(dict.fromkeys(m.name for m in models if m.count_rule is None or m.count_rule.column is not None))
