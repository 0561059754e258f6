"""Every report kgen writes about a release (`kgen anonymize`, `kgen demo`, `kgen apply`, `kgen.anonymize`,
`kgen.run.apply`), built in one place, and the one way a report is published beside its release.

The anonymize and apply reports share most of their figures (node, models, rows, classes, metrics, suppressed
rows, warnings, formula cells); built twice, the two drifted. Here the shared figures are computed once
(`release_values`) and each report's keys, in their order, are one tuple (`ANONYMIZE_KEYS`, `APPLY_KEYS`): the
schema that docs/report.md describes has one source. (`kgen mondrian` keeps its own report: its output model
has no lattice node, suppression or search, so it shares none of these fields.)

A report never claims a check that did not run: `publish` adds `verified` only once the independent check of
the written release has returned, with the check's own figures, or, when it failed, with its error (and then
nothing is published).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from fitness import privacy
from fitness.encoding import EncodedTable
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.metrics import suppressed_fraction
from fitness.objective import aecs_normalized
from kgen.io.formulas import formula_columns, is_formula
from kgen.io.hierarchies import BUILDER_NAMES
from kgen.io.table import CodedColumn, Table
from kgen.report import provenance
from lattice.box import Box
from lattice.hierarchy import Hierarchy
from lattice.node import Node
from lattice.search.base import SearchResult

if TYPE_CHECKING:  # the partitioned domain module imports pandas (extra `pandas`)
    from kgen.runners.partitioned.domain import Domain

# What the builder reads, by the run wing's names. The report wing sits below the run wing and imports nothing
# of it (not even for type checking: tests/test_architecture.py), so each is a Protocol of what it reads.
class RunConfig(Protocol):
    """What the builder reads of a run's `kgen.run.config.Config`."""

    qi: Sequence[str]
    identifiers: Sequence[str]
    sensitive: Sequence[str]
    suppression: float
    seed: int
    max_evaluations: int | None
    time_limit: float | None
    metric: str
    missing: Sequence[str]
    min_levels: Mapping[str, int]
    max_levels: Mapping[str, int]
    weights: Mapping[str, float]

    def model_values(self) -> dict[str, object]: ...


class Prepared(Protocol):
    """What the builder reads of `kgen.run.prepare.Prepared`: the prepared table of an in-memory run."""

    table: Table
    config: RunConfig
    hierarchies: Mapping[str, Hierarchy]
    hierarchy_sources: Mapping[str, str]
    encoded: EncodedTable
    evaluator: NodeEvaluator
    box: Box
    seconds: float

    @property
    def heights(self) -> Node: ...


class PartitionedPrepared(Protocol):
    """What the builder reads of `kgen.run.partitioned.Prepared`: the domain, parts and evaluator on Dask."""

    domain: Domain
    evaluator: Any  # kgen.runners.partitioned.evaluator.PartitionedEvaluator (imports Dask)
    box: Box
    offsets: Sequence[int]
    parts: Sequence[object]
    workers: Sequence[str]
    seconds: float


class Recorded(Protocol):
    """What the builder reads of `kgen.run.record.Recorded`: the run's figures at the released node."""

    metrics: dict
    privacy: list
    risk: dict | None
    bound: dict
    unnamed: list
    warnings: list
    invocation: Mapping
    release: dict  # a refined release's own suppressed rows, classes, LOS, DM and AECS (local recoding)
    controls: dict  # local_recoding and microaggregation (docs/local-recoding.md)


class Written(Protocol):
    """What the builder reads of a written part (`kgen.runners.partitioned.release.Written`)."""

    index: int
    final: str
    written: int
    present: Sequence[np.ndarray]
    suppressed: np.ndarray


# The keys of each report, in the order they are written; the models' parameters (k, l, ...) as their families
# declare them (`fitness.privacy`).
ANONYMIZE_KEYS = (
    "algorithm", "exact", "parameters", "seed", "max_evaluations", "time_limit", "stopped", "models",
    *(p.name for p in privacy.parameters()), "suppression_limit", "max_suppressed_rows", "rows", "rows_released",
    "rows_written", "quasi_identifiers", "identifiers", "sensitive", "keep", "keep_unnamed", "node", "heights", "box",
    "objective", "loss", "log", "los",
    "suppressed", "classes", "smallest_class", "dm", "aecs", "height", "evaluations", "seconds", "prepare_seconds",
    "minimal_nodes_found", "metric", "metrics", "privacy", "missing", "hierarchy_specs", "attributes",
    "suppressed_rows", "unnamed_columns", "warnings", "formula_cells", "evaluator", "provenance", "risk",
    "lower_bound", "gap", "optimal", "bound", "bound_seconds", "local_recoding", "microaggregation", "min_levels",
    "max_levels", "weights", "population_counts",
)
APPLY_KEYS = (
    "applied_report", "applied_search", "input", "holds", "node", "heights", "hierarchy_specs", "models",
    "suppression_limit",
    "max_suppressed_rows", "rows", "rows_released", "rows_written", "suppressed", "classes", "smallest_class",
    "metric", "loss", "metrics", "privacy", "quasi_identifiers", "identifiers", "sensitive", "keep", "keep_unnamed",
    "suppressed_rows", "unnamed_columns", "warnings", "formula_cells", "risk", "provenance", "local_recoding",
    "microaggregation", "min_levels", "max_levels", "weights", "population_counts",
)
CHECKER = "kgen.check, on the written file"
BUILDER_SPECS = BUILDER_NAMES


def input_rows(prepared: Prepared) -> int | None:
    """The input file's rows where they are not the released table's: δ-presence's input is the population,
    of which only the research subset is anonymized and released."""
    population = prepared.encoded.population
    if population is not None and any(getattr(m, "input_is_population", False) for m in prepared.evaluator.models):
        return int(population.n)
    return None


def anonymize_report(prepared: Prepared, result: SearchResult, evaluation: Evaluation, suppressed: np.ndarray,
                     released: Table, recorded: Recorded) -> dict:
    """The report of an anonymization (SPEC/issue 2): the search, the node, its figures, provenance, risk and
    the certified lower bound.

    Parameters
    ----------
    prepared
        The prepared problem the search ran on.
    result
        The search's result.
    evaluation
        The evaluation of the released node (`result.best`).
    suppressed
        Per row, whether it is suppressed at that node.
    released
        The released table.
    recorded
        What the run recorded at the node (`kgen.run.record`): metrics, privacy figures, risk, the certified
        bound, warnings and the invocation. Nothing here partitions, groups or solves again.

    Returns
    -------
    dict
        The keys of `ANONYMIZE_KEYS` in that order; every figure finite or null (`finite`).
    """
    config = prepared.config
    node = evaluation.node
    names = prepared.encoded.names
    values = release_values(prepared, evaluation, suppressed, released, recorded) | search_values(result) | {
        "seed": config.seed,
        "max_evaluations": config.max_evaluations,
        "time_limit": config.time_limit,
        **privacy.report_values(config.model_values()),
        "heights": {name: int(h) for name, h in zip(names, prepared.heights)},
        "box": {"lower": list(prepared.box.lower), "upper": list(prepared.box.upper), "size": prepared.box.size},
        "objective": prepared.evaluator.objective.name,
        "log": evaluation.log,
        "los": evaluation.los,
        "dm": evaluation.dm,
        "aecs": evaluation.aecs,
        "height": int(sum(node)),
        "prepare_seconds": prepared.seconds,
        "missing": list(config.missing),
        "hierarchy_specs": {name: hierarchy_record(prepared.hierarchy_sources[name], prepared.hierarchies[name])
                            for name in names},
        "attributes": attribute_values(prepared, node, suppressed),
        "evaluator": prepared.evaluator.describe(),
        "provenance": provenance.build(config, prepared.table, prepared.hierarchy_sources, prepared.hierarchies,
                                       recorded.invocation, input_rows(prepared)),
        "risk": recorded.risk,
        **recorded.bound,
        **recorded.release,
    }
    return finite({key: values[key] for key in ANONYMIZE_KEYS})  # type: ignore[return-value]


def search_values(result: SearchResult) -> dict:
    """What the report states of the search: which, whether exact, how it ran and why it stopped."""
    return {"algorithm": result.algorithm, "exact": result.exact, "parameters": result.params,
            "stopped": result.stopped, "evaluations": result.evaluations, "seconds": result.seconds,
            "minimal_nodes_found": [list(m) for m in result.minimal]}


def attribute_values(prepared: Prepared, node: Node, suppressed: np.ndarray) -> dict:
    """Per QI: its level, height, loss, distinct values before and after, hierarchy and least level."""
    keep = ~suppressed
    attributes = {}
    for qi, level in zip(prepared.encoded.qis, node):
        h = qi.height
        attributes[qi.name] = {
            "level": int(level),
            "height": h,
            "loss": level / h if h else 0.0,
            "distinct_before": int(np.unique(qi.codes[0]).size),
            "distinct_after": int(np.unique(qi.codes[level][keep]).size),
            "hierarchy": prepared.hierarchy_sources[qi.name],
            "minimum_level": int(prepared.box.lower[prepared.encoded.names.index(qi.name)]),
        }
    return attributes


def partitioned_report(prepared: PartitionedPrepared, config: RunConfig, result: SearchResult,
                       written: Sequence[Written], check: Any, output: str | None, *, risk: dict | None,
                       provenance_record: dict, seconds: dict) -> dict:
    """The report of a partitioned run, with the in-memory report's names for the fields it shares (the
    search's fields from `search_values`, the models' from `privacy.report_values`, as `anonymize_report` has
    them), the merged check's figures, the risk of the released classes (`risk`, from the run's class-size
    histogram), the provenance and the run's own figures (`partitioned`, with its `seconds`). Built once:
    nothing edits it afterwards but `publish`, which sets `verified`."""
    e = result.best
    domain, evaluator, n = prepared.domain, prepared.evaluator, prepared.domain.n
    node = e.node
    attributes = partitioned_attributes(prepared, node, written)
    suppressed_rows = sorted(int(r) + prepared.offsets[w.index] + 1 for w in written for r in w.suppressed)
    return {
        **search_values(result), "stopped": str(result.stopped), "seed": config.seed,
        "max_evaluations": config.max_evaluations, "time_limit": config.time_limit,
        "models": [m.describe() for m in evaluator.models], **privacy.report_values(config.model_values()),
        "suppression_limit": config.suppression, "max_suppressed_rows": evaluator.max_suppressed,
        "rows": n, "rows_released": n - e.suppressed,
        "rows_written": sum(w.written for w in written) if written else None,
        "quasi_identifiers": list(config.qi), "identifiers": list(config.identifiers),
        "sensitive": list(config.sensitive), "keep": list(config.keep), "keep_unnamed": bool(config.keep_unnamed),
        "node": {name: int(x) for name, x in zip(domain.names, node)},
        "heights": {name: int(h) for name, h in zip(domain.names, domain.heights)},
        "box": {"lower": list(prepared.box.lower), "upper": list(prepared.box.upper), "size": prepared.box.size},
        "objective": evaluator.objective.name, "loss": e.loss, "log": e.log, "los": e.los,
        "suppressed": e.suppressed, "classes": e.classes, "smallest_class": e.smallest_class, "dm": e.dm,
        "aecs": e.aecs, "height": int(sum(node)), "prepare_seconds": prepared.seconds,
        "metric": config.metric,
        "metrics": {"log": e.log, "los": suppressed_fraction(e.suppressed, n), "dm": e.dm,
                    "dm_normalized": e.dm / (n * n), "aecs": e.aecs,
                    "aecs_normalized": aecs_normalized(e.classes, e.suppressed, n),
                    "height": int(sum(node))},
        "missing": list(config.missing),
        "hierarchy_specs": {name: hierarchy_record(domain.sources[name], domain.hierarchies[name])
                            for name in domain.names},
        "attributes": attributes,
        **control_values(config),
        "suppressed_rows": suppressed_rows,
        "privacy": [],  # the partitioned runner evaluates class sizes alone: no model on sensitive values
        "population_counts": None,  # it refuses the models that count a population
        "provenance": provenance_record,
        "risk": risk,
        "trace": result.trace,
        "verified": None if check is None else {"checker": "kgen.check.partitioned, on the written parts, merged",
                                                "passed": bool(check.passed)},
        "check": None if check is None else {"passed": check.passed, "summary": check.summary(output or "", False),
                                             "rows": check.rows, "classes": check.classes,
                                             "smallest_class": check.smallest_class,
                                             "suppressed_rows": check.suppressed_rows},
        "partitioned": {"partitions": len(prepared.parts), "workers": len(set(prepared.workers)),
                        "reducers": evaluator.reducers, "batches": evaluator.batches, "tasks": evaluator.tasks,
                        "output": output, "parts": [w.final for w in written], "seconds": seconds},
        "local_recoding": None, "microaggregation": None,  # not on row partitions (Config.check refuses them)
    }


def partitioned_attributes(prepared: PartitionedPrepared, node: Node, written: Sequence[Written]) -> dict:
    """Per QI: its level, height, loss, distinct values before and (from the written parts) after."""
    domain = prepared.domain
    present = None
    if written:
        present = [np.logical_or.reduce([w.present[i] for w in written]) for i in range(len(node))]
    attributes = {}
    for i, (name, level) in enumerate(zip(domain.names, node)):
        h = domain.heights[i]
        attributes[name] = {
            "level": int(level), "height": h, "loss": level / h if h else 0.0,
            "distinct_before": len(domain.labels[i][0]),
            "distinct_after": int(present[i].sum()) if present is not None else None,
            "hierarchy": domain.sources[name], "minimum_level": int(prepared.box.lower[i]),
        }
    return attributes


def apply_report(prepared: Prepared, evaluation: Evaluation, suppressed: np.ndarray, released: Table,
                 source: str, recorded: Recorded, provenance_record: dict, search: Mapping | None = None) -> dict:
    """The report of `kgen apply`: a saved report's node applied to new data.

    Parameters
    ----------
    prepared
        The new data prepared with the saved report's configuration and models.
    evaluation
        The evaluation of the saved node on the new data.
    suppressed, released
        The rows suppressed at that node, and the released table.
    source
        The applied report, as named in messages (its path).
    recorded, provenance_record
        What the run recorded at the node (`kgen.run.record`) and the apply's provenance
        (`kgen.report.provenance.for_apply`).
    search
        How the saved node was found (`applied_search`: the saved report's algorithm, whether it was exact, and
        its heuristic, e.g. ARX's practical monotonicity), so that the apply report keeps it.

    Returns
    -------
    dict
        The keys of `APPLY_KEYS` in that order (`holds`: the models hold within the suppression limit); every
        figure finite or null. `publish` adds `verified` after the check of the written file.
    """
    values = release_values(prepared, evaluation, suppressed, released, recorded) | {
        "applied_report": source,
        "applied_search": dict(search) if search is not None else None,
        "input": prepared.table.source,
        "heights": {name: int(h) for name, h in zip(prepared.encoded.names, prepared.heights)},
        "hierarchy_specs": {name: hierarchy_record(prepared.hierarchy_sources[name], prepared.hierarchies[name])
                            for name in prepared.encoded.names},
        "holds": bool(evaluation.feasible),
        "risk": recorded.risk,
        "provenance": provenance_record,
    }
    return finite({key: values[key] for key in APPLY_KEYS})  # type: ignore[return-value]


def population_counts(prepared: Prepared, node: tuple[int, ...]) -> dict | None:
    """The population section (delta-presence, k-map with a population; null otherwise): the population's rows
    and, over the released classes, the least population rows a class matches and the range of the shares of
    the population classes that are released (|E n S| / |E|)."""
    population = prepared.encoded.population
    if population is None:
        return None
    partition = prepared.evaluator.partition(node, with_rows=True)
    kept = ~prepared.evaluator.violating(partition)
    matched, shares = partition.population[kept], partition.sizes[kept] / np.maximum(partition.population[kept], 1)
    return {"population_rows": int(population.n), "released_classes": int(kept.sum()),
            "least_population_match": int(matched.min()) if matched.size else None,
            "share_min": float(shares.min()) if shares.size else None,
            "share_max": float(shares.max()) if shares.size else None,
            "population_classes_without_released_rows": int(partition.population_only)}


def release_values(prepared: Prepared, evaluation: Evaluation, suppressed: np.ndarray, released: Table,
                   recorded: Recorded) -> dict:
    """The figures every report of a release has: the node, the models, rows and classes, the metrics and
    privacy figures, the suppressed rows (data rows, 1-based), warnings and formula cells."""
    config, evaluator = prepared.config, prepared.evaluator
    metrics, privacy = recorded.metrics, recorded.privacy
    return {
        "node": {name: int(x) for name, x in zip(prepared.encoded.names, evaluation.node)},
        "models": [m.describe() for m in evaluator.models],
        "suppression_limit": config.suppression,
        "max_suppressed_rows": evaluator.max_suppressed,
        "rows": prepared.table.n,
        "rows_released": prepared.table.n - evaluation.suppressed,  # rows not suppressed, as the risk section
        "rows_written": released.n,  # lines of the release: suppressed rows too (with * in every QI) unless dropped
        "quasi_identifiers": list(config.qi),
        "identifiers": list(config.identifiers),
        "sensitive": list(config.sensitive),
        "keep": list(config.keep),
        "keep_unnamed": bool(config.keep_unnamed),
        "suppressed": evaluation.suppressed,
        "classes": evaluation.classes,
        "smallest_class": evaluation.smallest_class,
        "metric": config.metric,
        "loss": evaluation.loss,
        "metrics": metrics,
        "privacy": privacy,
        "population_counts": population_counts(prepared, evaluation.node),
        "suppressed_rows": [int(r) + 1 for r in np.flatnonzero(suppressed)],
        "unnamed_columns": recorded.unnamed,
        "warnings": list(recorded.warnings),
        "formula_cells": formula_record(released),
        **recorded.release,
        **recorded.controls,
        **control_values(config),
    }


def control_values(config: RunConfig) -> dict:
    """The steward's per-QI controls as the report keeps them (`kgen apply` reads them back): the level
    limits and the objective's weights, each {QI: value} (empty when none was given)."""
    return {"min_levels": {name: int(v) for name, v in config.min_levels.items()},
            "max_levels": {name: int(v) for name, v in config.max_levels.items()},
            "weights": {name: float(v) for name, v in config.weights.items()}}


def hierarchy_record(source: str, hierarchy: Hierarchy) -> dict:
    """How `kgen apply` rebuilds a QI's hierarchy: a builder spec (rebuilt on the new data), else its paths."""
    if source.partition(":")[0] in BUILDER_SPECS and not Path(source).exists():
        return {"builder": source}
    return {"rows": [list(path) for path in hierarchy.paths.values()]}


def formula_record(released: Table, escaped: bool = False) -> dict:
    """The report's `formula_cells`: cells (header included) a spreadsheet could run as formulas
    (`kgen.io.formulas`), the columns holding them, and whether the written file escapes them."""
    count, columns = formula_columns(released.columns, ())  # the header's cells
    found = set(columns)
    for name in released.columns:
        values = released.values[name]
        if isinstance(values, CodedColumn):  # count per distinct label: no string per row
            hits = [i for i, label in enumerate(values.labels) if is_formula(label)]
            cells = int(np.isin(values.codes, hits).sum()) if hits else 0
        else:
            cells = sum(1 for v in values if is_formula(v))
        if cells:
            count += cells
            found.add(name)
    return {"cells": count, "columns": [c for c in released.columns if c in found], "escaped": escaped}


def finite(value: object) -> object:
    """A report value made JSON-safe: numpy scalars become Python numbers, and a float that is NaN or
    infinite becomes None (`null`), recursively; `json.dumps(..., allow_nan=False)` then never fails."""
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json(report: dict) -> str:
    """The report as JSON: every non-finite figure is null (`finite`), and NaN / Infinity can never be
    written (allow_nan=False raises instead of writing invalid JSON)."""
    return json.dumps(finite(report), indent=2, allow_nan=False) + "\n"


