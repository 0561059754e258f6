"""`kgen apply`: apply a transformation found once (the node of a saved report) to new data.

The new table must have the report's quasi-identifier, identifier and sensitive columns. Each QI's hierarchy
is rebuilt from the report (`hierarchy_specs`: a builder spec, rebuilt on the new values, or the saved
paths), unless overridden. The node's classes that break the report's privacy models are suppressed; the
model holds iff that suppresses at most floor(t * n) rows (t the report's suppression limit, or an override).

A report is input like any other and is checked as strictly as the command line (`validate_report`): levels
are whole numbers (not 1.7, not true, not -1) within the new data's heights, the privacy models are present
and agree with the report's top-level k / l / t, and k is at least 2 unless the caller allows k = 1. Anything
else is one InputError naming the report file and the key.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fitness import privacy
from fitness.evaluator import Evaluation
from fitness.models import PrivacyModel, in_company
from fitness.objective import OBJECTIVES, parse_metric
from fitness.parameters import is_real as is_number
from fitness.parameters import is_whole
from kgen.io.files import read_json
from kgen.io.hierarchies import find_in_dir
from kgen.io.table import DEFAULT_MISSING, Table, as_table
from kgen.report import build as reporting
from kgen.report import provenance
from kgen.report.public import public_report
from kgen.run import dp
from kgen.run import pipeline as api
from kgen.run.config import MICROAGGREGATION, Config, resolve_resources
from kgen.run.record import record
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy
from lattice.node import Node


@dataclass(frozen=True, eq=False)
class Applied:
    """The released table, the node's evaluation on the new data, and the apply report."""

    release: Table
    evaluation: Evaluation
    report: dict
    suppressed_rows: np.ndarray

    @property
    def holds(self) -> bool:
        """The privacy models hold with at most the allowed number of suppressed rows."""
        return bool(self.evaluation.feasible)

    def public_report(self) -> dict:
        """What may be published beside the release (`kgen.report.public`)."""
        return public_report(self.report)



def is_metric(value: object) -> bool:
    """Whether a report's metric is one kgen knows (`fitness.objective.parse_metric`)."""
    try:
        parse_metric(value)
    except InputError:
        return False
    return isinstance(value, str)

def load_report(path: str | os.PathLike) -> dict:
    """A report written by `kgen anonymize`; InputError if it cannot be read or lacks what apply needs."""
    name = str(path)
    report = read_json(path)
    if not isinstance(report, dict):
        raise InputError("is not a kgen report (expected a JSON object)", file=name)
    missing = [key for key in ("node", "quasi_identifiers", "models", "suppression_limit") if key not in report]
    if missing:
        raise InputError(f"is not a kgen report: it lacks {', '.join(missing)}", file=name)
    return report


def names_list(report: Mapping, key: str, name: str, required: bool = False) -> list[str]:
    """A report key holding a list of distinct non-empty column names."""
    value = report.get(key, [])
    if not isinstance(value, list) or (required and not value):
        raise bad(name, key, "must be a non-empty list of column names" if required else "must be a list of "
                  f"column names, got {json.dumps(value)[:40]}")
    for i, column in enumerate(value):
        if not isinstance(column, str) or not column.strip():
            raise bad(name, f"{key}[{i}]", f"must be a column name, got {json.dumps(column)[:40]}")
    if len(set(value)) != len(value):
        raise bad(name, key, "names a column twice")
    return value


def bad(name: str, key: str, what: str) -> InputError:
    return InputError(f"key {key!r} {what}", file=name)


def check_model(m: object, i: int, sensitive: list[str], name: str) -> PrivacyModel:
    """One saved model description, read back by its family (`fitness.privacy`), which validates its
    parameters; InputError naming the file and the key."""
    key = f"models[{i}]"
    if not isinstance(m, dict):
        raise bad(name, key, "must be a privacy model (a JSON object)")
    if privacy.family_of(str(m.get("model"))) is None:
        raise bad(name, f"{key}.model", f"must be one of {', '.join(privacy.FAMILIES)}, got "
                  f"{json.dumps(m.get('model'))[:40]}")
    if "sensitive" in m and m["sensitive"] not in sensitive:
        raise bad(name, f"{key}.sensitive", f"must be one of the report's sensitive columns {sensitive}, got "
                  f"{json.dumps(m['sensitive'])[:40]}")
    try:
        return privacy.read_model(resolve_resources(m))
    except InputError as error:  # the model's own words; name the key when they begin with it ("k must be")
        named = next((p for p in m if p != "model" and error.message.startswith(f"{p} ")), None)
        if named is None:
            raise bad(name, key, f"is not a valid {m['model']} model: {error.message}") from None
        raise bad(name, f"{key}.{named}", error.message[len(named) + 1:]) from None


def validate_report(report: Mapping, name: str, allow_k1: bool = False) -> list[PrivacyModel]:
    """Check a saved report as strictly as command-line input; InputError (exit 2) naming the file and key.
    Returns its models, read back (`validate_models`).

    Levels in `node` (and `heights`) are whole numbers >= 0 (a bool, a fraction, text or a negative level is
    refused, never rounded or read as "the top"); `models` holds exactly one k-anonymity model and only models
    on the report's sensitive columns; the top-level `k` (and `l`, `t_closeness` when present) agree with the
    models; k >= 2 unless `allow_k1` (k = 1 releases every row as it is generalized, unprotected). A
    differential-privacy report is refused (`kgen.run.dp.refuse_apply`)."""
    dp.refuse_apply(report, name)
    qis = names_list(report, "quasi_identifiers", name, required=True)
    identifiers = names_list(report, "identifiers", name)
    sensitive = names_list(report, "sensitive", name)
    kept = names_list(report, "keep", name)
    roles = [c for c in qis + identifiers + sensitive + kept]
    if len(set(roles)) != len(roles):
        raise bad(name, "quasi_identifiers", "shares a column with 'identifiers', 'sensitive' or 'keep'")
    validate_levels(report, qis, name)
    validate_settings(report, name)
    validate_controls(report, name)
    validate_refinements(report, qis, name)
    return validate_models(report, sensitive, name, allow_k1)


def validate_levels(report: Mapping, qis: list[str], name: str) -> None:
    """Levels in `node` (and `heights`) are whole numbers >= 0, one per QI."""
    for key in ("node", "heights"):
        levels = report.get(key, {})
        if not isinstance(levels, dict):
            raise bad(name, key, "must map each quasi-identifier to a level")
        for column in qis if key == "node" else levels:
            if column not in levels:
                raise bad(name, f"{key}.{column}", "is missing: the report has no level for this quasi-identifier")
            level = levels[column]
            if not is_whole(level) or level < 0:
                raise bad(name, f"{key}.{column}", f"must be a whole number >= 0, got {json.dumps(level)[:40]}")


def validate_settings(report: Mapping, name: str) -> None:
    """The suppression limit, the missing-value tokens and the metric."""
    limit = report.get("suppression_limit")
    if not is_number(limit) or not math.isfinite(limit) or not 0 <= limit <= 1:
        raise bad(name, "suppression_limit", f"must be a fraction in [0, 1], got {json.dumps(limit)[:40]}")
    missing = report.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(t, str) for t in missing):
        raise bad(name, "missing", "must be a list of missing-value tokens (text)")
    if "metric" in report and not is_metric(report["metric"]):
        raise bad(name, "metric", f"must be one of {', '.join(OBJECTIVES)} or arx-loss:G, got "
                                  f"{json.dumps(report['metric'])[:40]}")


def validate_refinements(report: Mapping, qis: list[str], name: str) -> None:
    """`local_recoding` (null or a record) and `microaggregation` (null or, per QI, a record whose function is
    mean or median): what `kgen apply` repeats on the new data."""
    if not isinstance(report.get("local_recoding") or {}, dict):
        raise bad(name, "local_recoding", "must be null or the record of a local recoding")
    micro = report.get("microaggregation") or {}
    if not isinstance(micro, dict):
        raise bad(name, "microaggregation", "must be null or map quasi-identifiers to their microaggregation")
    for column, figures in micro.items():
        if column not in qis:
            raise bad(name, f"microaggregation.{column}", "is not one of the report's quasi-identifiers")
        if not isinstance(figures, dict) or figures.get("function") not in MICROAGGREGATION:
            raise bad(name, f"microaggregation.{column}.function", "must be mean or median")


def validate_models(report: Mapping, sensitive: list[str], name: str, allow_k1: bool) -> list[PrivacyModel]:
    """The report's models, read back: exactly one k-anonymity model, models only on the sensitive columns,
    and the top-level parameters (k, l, t_closeness, ...) asking for the same models (a report changed by
    hand is refused). Each family's top-level keys are compared when the report has them all (older reports
    lack some)."""
    saved = report.get("models")
    if not isinstance(saved, list) or not saved:
        raise bad(name, "models", "must list the privacy models (it is empty or not a list): without them nothing "
                  "would be protected")
    models = [check_model(m, i, sensitive, name) for i, m in enumerate(saved)]
    ks = [m.min_class_size for m in models if m.name == "k-anonymity"]
    if len(ks) != 1:
        raise bad(name, "models", f"must hold exactly one k-anonymity model, found {len(ks)}")
    for family in privacy.FAMILIES.values():
        if all(p.name in report for p in family.parameters):
            require_agreement(report, family, models, sensitive, name)
    if ks[0] < 2 and not allow_k1:
        raise bad(name, "models", f"asks for k = {ks[0]}: k = 1 protects no one (every row may be unique); give "
                  "--allow-k1 (allow_k1=True) to apply it anyway")
    return models


def require_agreement(report: Mapping, family: privacy.ModelFamily, models: list[PrivacyModel],
                      sensitive: list[str], name: str) -> None:
    """The models that the report's top-level values of `family` ask for, beside the report's other models
    (`in_company`), are the ones its `models` list."""
    values = {p.name: report.get(p.name, p.default) for p in privacy.parameters()}  # a family may read another's
    top = family.parameters[0].name
    described = [m.describe() for m in models]
    try:
        wanted = family.build(resolve_resources(values), sensitive) if family.asked(values) else []
    except InputError as error:
        raise bad(name, top, f"is not valid: {error.message}") from None
    others = [m for m, d in zip(models, described) if d.get("model") != family.name]
    wanted = in_company([*wanted, *others])[:len(wanted)]
    listed = [d for d in described if d.get("model") == family.name]
    if sorted(map(repr, (m.describe() for m in wanted))) != sorted(map(repr, listed)):
        raise bad(name, top, f"is {json.dumps(report[top])[:40]} but the models say {json.dumps(listed)[:80]}: "
                  "the report was changed")


def hierarchy_specs(report: Mapping, source: str, overrides: Mapping[str, object]) -> dict[str, object]:
    """Per QI: the override if given, else the report's builder spec or saved paths, else (older reports)
    the hierarchy source it names."""
    specs: dict[str, object] = {}
    saved = report.get("hierarchy_specs", {})
    attributes = report.get("attributes", {})
    for column in report["quasi_identifiers"]:
        if column in overrides:
            specs[column] = overrides[column]
        elif "rows" in saved.get(column, {}):
            specs[column] = Hierarchy.from_rows(column, saved[column]["rows"], f"{source} (hierarchy of {column!r})")
        elif "builder" in saved.get(column, {}):
            specs[column] = saved[column]["builder"]
        elif column in attributes and "hierarchy" in attributes[column]:
            specs[column] = attributes[column]["hierarchy"]
    return specs


def hierarchy_changes(report: Mapping, source: str, overrides: Mapping[str, object],
                      hierarchy_dir: str | None = None) -> list[str]:
    """Each QI whose hierarchy, as this apply would read it, is not the one the report records: a hierarchy
    file (given with --hierarchy, found in `hierarchy_dir`, or named by an older report) whose SHA-256 differs
    from the report's record of that QI's file, or hierarchy rows saved in the report whose digest differs from
    the one its provenance records (the report was changed). Builders are rebuilt on the new data by design
    and not compared. One line per QI, naming it and the file."""
    recorded = (report.get("provenance") or {}).get("hierarchies") or {}
    saved = report.get("hierarchy_specs") or {}
    changes = []
    for qi in report["quasi_identifiers"]:
        record = recorded.get(qi) or {}
        spec = overrides.get(qi)
        if spec is None and "rows" in (saved.get(qi) or {}):
            used = Hierarchy.from_rows(qi, saved[qi]["rows"], f"{source} (hierarchy of {qi!r})")
            if record.get("sha256") and provenance.hierarchy_digest(used) != record["sha256"]:
                changes.append(f"the hierarchy of {qi!r} saved in the report is not the one its provenance records "
                               f"(digest {provenance.hierarchy_digest(used)[:12]}..., recorded "
                               f"{str(record['sha256'])[:12]}...): the report was changed")
            continue
        if spec is None and "builder" not in (saved.get(qi) or {}):
            named = (report.get("attributes") or {}).get(qi, {}).get("hierarchy")
            found = find_in_dir(hierarchy_dir, qi) if hierarchy_dir else None
            spec = str(found) if found else named
        file_sha = (record.get("file") or {}).get("sha256")
        if isinstance(spec, (str, os.PathLike)) and Path(spec).is_file() and file_sha:
            found_sha = provenance.sha256_file(spec)
            if found_sha != file_sha:
                changes.append(f"hierarchy file {spec} of {qi!r} has SHA-256 {found_sha[:12]}..., the report records "
                               f"{str(file_sha)[:12]}... (it changed since the run)")
    return changes


def config_from_report(report: Mapping, source: str, overrides: Mapping[str, object] | None = None,
                       hierarchy_dir: str | None = None, suppression: float | None = None,
                       drop_suppressed: bool = False, strict: bool = False, *, keep: Sequence[str] = (),
                       keep_unnamed: bool = False, allow_k1: bool = False, columns: Sequence[str] | None = None
                       ) -> Config:
    """The Config of the run that wrote the report (same columns, models, metric, kept columns), without
    pruning. The report's kept columns that the new table (`columns`) lacks are left out; `keep` and
    `keep_unnamed` add to the report's."""
    ks = [m["k"] for m in report["models"] if m.get("model") == "k-anonymity"]
    saved_keep = [c for c in names_list(report, "keep", source) if columns is None or c in columns]
    return Config(
        qi=list(report["quasi_identifiers"]), k=ks[0] if ks else 2,
        suppression=float(report["suppression_limit"] if suppression is None else suppression),
        identifiers=list(report.get("identifiers", [])), sensitive=list(report.get("sensitive", [])),
        hierarchies=hierarchy_specs(report, source, overrides or {}), hierarchy_dir=hierarchy_dir,
        missing=tuple(report.get("missing", DEFAULT_MISSING)), metric=str(report.get("metric", "log")),
        prune=False, drop_suppressed=drop_suppressed, strict=strict, allow_k1=allow_k1,
        min_levels=dict(report.get("min_levels") or {}), max_levels=dict(report.get("max_levels") or {}),
        weights=dict(report.get("weights") or {}),
        keep=saved_keep + [c for c in keep if c not in saved_keep],
        keep_unnamed=bool(report.get("keep_unnamed", False)) or keep_unnamed,
        local_recoding=bool(report.get("local_recoding")),
        microaggregate={column: figures["function"]
                        for column, figures in (report.get("microaggregation") or {}).items()},
    )


def validate_controls(report: Mapping, name: str) -> None:
    """The per-QI level limits and weights a report keeps (`min_levels`, `max_levels`, `weights`): each a
    mapping checked as the options are (`Config.check_per_qi`), the error naming the report file; and the
    saved node within the limits (a report changed by hand is refused)."""
    for key in ("min_levels", "max_levels", "weights"):
        if not isinstance(report.get(key, {}), dict):
            raise bad(name, key, "must map quasi-identifiers to values")
    probe = Config(qi=list(report["quasi_identifiers"]), metric=str(report.get("metric", "log")),
                   min_levels=report.get("min_levels", {}), max_levels=report.get("max_levels", {}),
                   weights=report.get("weights", {}))
    try:
        probe.check_per_qi()
    except InputError as error:
        raise error.located(file=name) from None
    node = report["node"]
    for column, low in probe.min_levels.items():
        if node[column] < low:
            raise bad(name, f"node.{column}", f"is level {node[column]}, below the report's min_levels ({low})")
    for column, high in probe.max_levels.items():
        if node[column] > high:
            raise bad(name, f"node.{column}", f"is level {node[column]}, above the report's max_levels ({high})")


def saved_node(report: Mapping, prepared: api.Prepared, source: str) -> Node:
    """The report's node in lattice order, checked against the hierarchies rebuilt on the new data."""
    node, heights = report["node"], report.get("heights", {})
    out = []
    for qi in prepared.encoded.qis:
        if qi.name not in node:
            raise InputError(f"the report has no level for quasi-identifier {qi.name!r}", file=source)
        level = node[qi.name]
        if not is_whole(level) or level < 0:  # validate_report refuses these; a caller may have skipped it
            raise InputError(f"key 'node.{qi.name}' must be a whole number >= 0, got {level!r}", file=source)
        saved_height = heights.get(qi.name, qi.height)
        if saved_height != qi.height:
            raise InputError(
                f"the hierarchy of {qi.name!r} has height {qi.height} on this data but {saved_height} in the "
                "report, so the saved node does not apply; give the original hierarchy (--hierarchy "
                f"{qi.name}=FILE)", file=source, column=qi.name)
        if level > qi.height:
            raise InputError(f"key 'node.{qi.name}' is level {level}, above the top ({qi.height}) of the hierarchy "
                             "of this quasi-identifier", file=source, column=qi.name)
        out.append(level)
    return tuple(out)


def apply(data: object, report: Mapping | str | os.PathLike, *, overrides: Mapping[str, object] | None = None,
          hierarchy_dir: str | None = None, suppression: float | None = None,
          drop_suppressed: bool = False, allow_k1: bool = False, strict: bool = False,
          keep: Sequence[str] = (), keep_unnamed: bool = False, source: str | None = None,
          invocation: Mapping | None = None, warn: Callable[[str], None] | None = None,
          allow_changed_hierarchies: bool = False) -> Applied:
    """Apply a saved report's node (and privacy models) to new data: `kgen apply` without the files.

    Parameters
    ----------
    data
        The new table: a `kgen.Table`, a CSV path, a mapping of column name to values, or a pandas DataFrame.
        It must have the report's quasi-identifier, identifier and sensitive columns.
    report
        A report of `kgen anonymize` (`kgen.anonymize(...).report`), or the path of its JSON file.
    overrides
        Per QI, a hierarchy replacing the one the report saved (a spec or a `Hierarchy`).
    hierarchy_dir
        A folder of `*hierarchy_<QI>.csv` files, for older reports that name their hierarchy files.
    suppression
        The suppression limit (a fraction of rows); default: the report's.
    drop_suppressed, allow_k1, strict, allow_changed_hierarchies
        Leave suppressed rows out; apply a report whose k is 1, or a hierarchy that is not the one the report
        records (`hierarchy_changes`; a warning then); make warnings errors.
    keep, keep_unnamed, warn
        Columns released as they are besides the report's (a column with no role is refused); called with
        each warning, else they are Python warnings (`kgen.IdentifierWarning`).
    source, invocation
        How messages name a report given as a mapping (default: its path, or "report"); how the run was
        started, for the provenance (the command line passes its argv).

    Returns
    -------
    Applied
        The release, the node's evaluation on the new data, the report (`kgen.report.build.apply_report`) and the
        suppressed rows. `holds` is False when the models need more suppression than the limit allows:
        such a release does not satisfy the report's models and `kgen apply` writes nothing.

    Raises
    ------
    InputError
        A report that `validate_report` refuses, a missing column, a node beyond the new data's hierarchies, or
        a hierarchy that is not the one the report records (unless `allow_changed_hierarchies`).
    """
    source = source or (str(report) if isinstance(report, (str, os.PathLike)) else "report")
    saved = load_report(report) if isinstance(report, (str, os.PathLike)) else report
    models = validate_report(saved, source, allow_k1)
    changes = hierarchy_changes(saved, source, overrides or {}, hierarchy_dir)
    if changes and not allow_changed_hierarchies:
        raise InputError(f"{changes[0]}; give --allow-changed-hierarchies (allow_changed_hierarchies=True) to "
                         "apply it anyway", file=source)
    table = as_table(data)
    config = config_from_report(saved, source, overrides, hierarchy_dir, suppression, drop_suppressed, strict,
                                keep=keep, keep_unnamed=keep_unnamed, allow_k1=allow_k1, columns=table.columns)
    prepared = api.prepare(table, config, models, require_feasible=False)
    api.emit_warnings(prepared.table, config, warn)
    applied = apply_node(prepared, saved, source, drop_suppressed, invocation)
    applied.report["warnings"] += [f"{change}: applied anyway (--allow-changed-hierarchies)" for change in changes]
    return applied


def apply_node(prepared: api.Prepared, saved: Mapping, source: str, drop_suppressed: bool,
               invocation: Mapping | None) -> Applied:
    """The saved node evaluated and released on the prepared new data, with its apply report."""
    node = saved_node(saved, prepared, source)
    evaluator = prepared.evaluator
    evaluation = evaluator.evaluate(node)
    released, suppressed, refined = api.refined_release(prepared, node)
    recorded = record(prepared, evaluation, suppressed, invocation=invocation, refined=refined)
    history = provenance.for_apply(prepared.table.source, source, saved, recorded.invocation,
                                   prepared.hierarchy_sources, prepared.hierarchies)
    report = reporting.apply_report(prepared, evaluation, suppressed, released, source, recorded, history,
                                    search=found_by(saved))
    return Applied(released, evaluation, report, suppressed)


def found_by(saved: Mapping) -> dict:
    """How the saved report's node was found: its search, whether exact, and the heuristic it assumed (ARX's
    practical monotonicity, `lattice/search/flash.py`; None for an exact search)."""
    parameters = saved.get("parameters")
    heuristic = parameters.get("heuristic") if isinstance(parameters, Mapping) else None
    return {"algorithm": saved.get("algorithm"), "exact": saved.get("exact"), "heuristic": heuristic}
