"""`kgen apply`: apply a transformation found once (the node of a saved report) to new data.

The new table must have the report's quasi-identifier, identifier and sensitive columns. Each QI's hierarchy
is rebuilt from the report (`hierarchy_specs`: a builder spec, rebuilt on the new values, or the saved
paths), unless overridden. The node's classes that break the report's privacy models are suppressed; the
model holds iff that suppresses at most floor(t * n) rows (t the report's suppression limit, or an override).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fitness.evaluator import Evaluation
from fitness.models import PrivacyModel, model_from_description
from kgen import api
from kgen.config import Config
from kgen.table import DEFAULT_MISSING, Table, as_table
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


def load_report(path: str | os.PathLike) -> dict:
    """A report written by `kgen anonymize`; InputError if it cannot be read or lacks what apply needs."""
    name = str(path)
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("report not found", file=name) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"report cannot be read: {error}", file=name) from None
    except json.JSONDecodeError as error:
        raise InputError(f"is not a JSON report: {error.msg} (line {error.lineno})", file=name,
                         row=error.lineno) from None
    if not isinstance(report, dict):
        raise InputError("is not a kgen report (expected a JSON object)", file=name)
    missing = [key for key in ("node", "quasi_identifiers", "models", "suppression_limit") if key not in report]
    if missing:
        raise InputError(f"is not a kgen report: it lacks {', '.join(missing)}", file=name)
    return report


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


def config_from_report(report: Mapping, source: str, overrides: Mapping[str, object] | None = None,
                       hierarchy_dir: str | None = None, suppression: float | None = None,
                       drop_suppressed: bool = False) -> Config:
    """The Config of the run that wrote the report (same columns, models, metric), without pruning."""
    return Config(
        qi=list(report["quasi_identifiers"]), k=int(report.get("k", 1)),
        suppression=float(report["suppression_limit"] if suppression is None else suppression),
        identifiers=list(report.get("identifiers", [])), sensitive=list(report.get("sensitive", [])),
        hierarchies=hierarchy_specs(report, source, overrides or {}), hierarchy_dir=hierarchy_dir,
        missing=tuple(report.get("missing", DEFAULT_MISSING)), metric=str(report.get("metric", "log")),
        prune=False, drop_suppressed=drop_suppressed,
    )


def saved_node(report: Mapping, prepared: api.Prepared, source: str) -> Node:
    """The report's node in lattice order, checked against the hierarchies rebuilt on the new data."""
    node, heights = report["node"], report.get("heights", {})
    out = []
    for qi in prepared.encoded.qis:
        if qi.name not in node:
            raise InputError(f"the report has no level for quasi-identifier {qi.name!r}", file=source)
        level = int(node[qi.name])
        saved_height = heights.get(qi.name, qi.height)
        if saved_height != qi.height or level > qi.height:
            raise InputError(
                f"the hierarchy of {qi.name!r} has height {qi.height} on this data but {saved_height} in the "
                "report, so the saved node does not apply; give the original hierarchy (--hierarchy "
                f"{qi.name}=FILE)", file=source, column=qi.name)
        out.append(level)
    return tuple(out)


def apply(data: object, report: Mapping | str | os.PathLike, *, overrides: Mapping[str, object] | None = None,
          hierarchy_dir: str | None = None, suppression: float | None = None,
          drop_suppressed: bool = False) -> Applied:
    """Apply a report's node (and models) to a table (Table, CSV path, mapping or DataFrame)."""
    source = str(report) if isinstance(report, (str, os.PathLike)) else "report"
    saved = load_report(report) if isinstance(report, (str, os.PathLike)) else report
    table = as_table(data)
    config = config_from_report(saved, source, overrides, hierarchy_dir, suppression, drop_suppressed)
    models: list[PrivacyModel] = [model_from_description(m) for m in saved["models"]]
    prepared = api.prepare(table, config, models, require_feasible=False)
    node = saved_node(saved, prepared, source)
    evaluator = prepared.evaluator
    evaluation = evaluator.evaluate(node)
    suppressed = evaluator.suppressed_rows(node)
    released = api.release(prepared, node, suppressed, drop_suppressed)
    metrics, privacy = api.solution_figures(prepared, node)
    out = {
        "applied_report": source,
        "input": table.source,
        "holds": bool(evaluation.feasible),
        "node": {name: int(x) for name, x in zip(prepared.encoded.names, node)},
        "models": [m.describe() for m in models],
        "suppression_limit": config.suppression,
        "max_suppressed_rows": evaluator.max_suppressed,
        "rows": table.n,
        "rows_released": released.n,
        "suppressed": evaluation.suppressed,
        "classes": evaluation.classes,
        "smallest_class": evaluation.smallest_class,
        "metric": config.metric,
        "loss": evaluation.loss,
        "metrics": metrics,
        "privacy": privacy,
        "quasi_identifiers": list(config.qi),
        "identifiers": list(config.identifiers),
        "sensitive": list(config.sensitive),
        "suppressed_rows": [int(r) + 1 for r in np.flatnonzero(suppressed)],
    }
    return Applied(released, evaluation, out, suppressed)
