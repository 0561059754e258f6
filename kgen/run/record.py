"""What the run records at the released node, computed once, for the report to state.

The report builder (`kgen.report.build`) only arranges what is here: the node is partitioned once (metrics,
privacy figures and the released classes' risk all come from that one partition, never from grouping the
release again), and the certified lower bound's integer program is solved here, in the run, not in the
builder. The invocation (the command line, or the API call) comes in as an argument, never from a module
global.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from fitness.evaluator import Evaluation
from fitness.models import EntropyLDiversity, RecursiveCLDiversity, privacy_figures
from fitness.objective import cell_costs, mixed_cost, mixed_metrics, solution_metrics
from kgen.report import provenance
from kgen.report.risk import DEFAULT_THRESHOLD, sizes_report
from kgen.run.prepare import Prepared
from kgen.run.recoding import Refined, subset_metric
from kgen.run.roles import run_warnings, unnamed_columns
from lattice.node import Node
from lattice.search.base import SearchResult
from lattice.search.certify import tightened_bound


@dataclass(frozen=True)
class Recorded:
    """The figures of a released node (`record`): what the report states about the release."""

    metrics: dict
    privacy: list[dict]
    risk: dict
    unnamed: list[dict]
    warnings: list[str]
    invocation: dict
    bound: dict = field(default_factory=dict)
    release: dict = field(default_factory=dict)  # a refined release's suppressed, classes, smallest_class, ...
    controls: dict = field(default_factory=lambda: {"local_recoding": None, "microaggregation": None})


def record(prepared: Prepared, evaluation: Evaluation, suppressed: np.ndarray, result: SearchResult | None = None,
           invocation: Mapping | None = None, refined: Refined | None = None) -> Recorded:
    """Partition the released node once and record its metrics, privacy figures and risk; with the search's
    `result`, also the certified lower bound (`lower_bound_record`). A `refined` release (local recoding,
    microaggregation) is recorded on the classes it forms (`refined_record`)."""
    config, evaluator = prepared.config, prepared.evaluator
    if refined is not None:
        return refined_record(prepared, refined, result, invocation)
    partition = evaluator.partition(evaluation.node, with_rows=True)
    bad = evaluator.violating(partition)
    metrics, privacy = solution_figures(prepared, evaluation.node, partition, bad)
    dropped = config.drop_suppressed
    kept = int(partition.sizes[~bad].sum())
    risk = sizes_report(partition.sizes[~bad], kept if dropped else prepared.table.n,
                        0 if dropped else prepared.table.n - kept, list(config.qi), DEFAULT_THRESHOLD)
    table = prepared.table
    unnamed = unnamed_columns(table, config)
    return Recorded(metrics, privacy, risk, unnamed, run_warnings(table, config, unnamed),
                    dict(invocation) if invocation is not None else provenance.api_invocation(),
                    lower_bound_record(prepared, result) if result is not None else {})


def refined_record(prepared: Prepared, refined: Refined, result: SearchResult | None,
                   invocation: Mapping | None) -> Recorded:
    """`record` of a refined release: metrics, privacy figures and risk of the classes the release forms (rows
    at their own group's node, `fitness.objective.mixed_metrics`), its suppressed rows and classes, and what
    the steward asked for (`controls`: each group's node and rows, each microaggregated QI's loss)."""
    config, table = prepared.config, prepared.table
    partition, released = refined.partition, refined.released()
    recoding = refined.recoding
    sizes = partition.sizes[released]
    metrics = mixed_metrics(prepared.encoded, recoding.nodes, recoding.group, sizes)
    recursive = {m.column: m.l for m in prepared.evaluator.models if isinstance(m, RecursiveCLDiversity)}
    grassberger = grassberger_columns(prepared.evaluator.models)
    privacy = [privacy_figures(partition, released, prepared.encoded, column, recursive.get(column),
                               column in grassberger) for column in config.sensitive]
    kept, dropped = int(sizes.sum()), config.drop_suppressed
    risk = sizes_report(sizes, kept if dropped else table.n, 0 if dropped else table.n - kept, list(config.qi),
                        DEFAULT_THRESHOLD)
    names = prepared.encoded.names
    controls = {"local_recoding": recoding.describe(names, subset_metric(config.metric))
                if config.local_recoding else None,
                "microaggregation": dict(refined.microaggregation) or None}
    if controls["local_recoding"] is not None:  # the global node alone: its rows, the rest suppressed
        alone = np.where(recoding.group == 0, 0, -1)
        controls["local_recoding"] |= {"ncp_before": mixed_cost(cell_costs(prepared.encoded, "ncp"),
                                                                recoding.nodes[:1], alone),
                                       "ncp_after": metrics["ncp"]}
    unnamed = unnamed_columns(table, config)
    return Recorded(metrics, privacy, risk, unnamed, run_warnings(table, config, unnamed),
                    dict(invocation) if invocation is not None else provenance.api_invocation(),
                    lower_bound_record(prepared, result) if result is not None else {},
                    {"suppressed": table.n - kept, "classes": int(sizes.size),
                     "smallest_class": int(sizes.min()) if sizes.size else 0, "los": metrics["los"],
                     "dm": metrics["dm"], "aecs": metrics["aecs"]}, controls)


def grassberger_columns(models: object) -> set[str]:
    """The sensitive columns under entropy l-diversity with Grassberger's estimator (their figures add it)."""
    return {m.column for m in models if isinstance(m, EntropyLDiversity) and m.grassberger}  # type: ignore[attr-defined]


def solution_figures(prepared: Prepared, node: Node, partition: object, bad: np.ndarray) -> tuple[dict, list[dict]]:
    """Every information-loss metric of a node (fitness.objective.solution_metrics) and, per sensitive
    column, the privacy figures of its released classes (fitness.models.privacy_figures)."""
    evaluator = prepared.evaluator
    rows = np.flatnonzero(bad[partition.rows])
    metrics = solution_metrics(prepared.encoded, node, partition.sizes[~bad], rows)
    if prepared.config.metric not in metrics:  # a metric with a parameter (arx-loss:G): its value, ARX's score
        metrics[prepared.config.metric] = float(evaluator.objective(node, partition.sizes[~bad], int(rows.size),
                                                                    prepared.encoded, rows))
    recursive = {m.column: m.l for m in evaluator.models if isinstance(m, RecursiveCLDiversity)}
    grassberger = grassberger_columns(evaluator.models)
    privacy = [privacy_figures(partition, ~bad, prepared.encoded, column, recursive.get(column),
                               column in grassberger) for column in prepared.config.sensitive]
    return metrics, privacy


def lower_bound_record(prepared: Prepared, result: SearchResult) -> dict:
    """The report's `lower_bound`, `gap` (found - bound, in the objective's units), `optimal`, `bound` (how it
    was proved, or why there is none) and `bound_seconds`: SPEC section 11, issue 12.

    An exact search that completed proves its answer; `certify` reports its own interval; any other search
    gets the bound its own infeasible evaluations prove, tightened by a few rounds of the certified loop
    (lattice.search.certify.tightened_bound: pair cuts, or the decomposition bound at many QIs).
    """
    found = None if result.best is None else float(result.best.loss)
    record: dict = {"lower_bound": None, "gap": None, "optimal": None}
    params = result.params
    if not prepared.config.bound:
        note, seconds = "not computed (--no-bound)", 0.0
    elif "certified" in params:  # certify: the interval of its own loop
        record["lower_bound"], seconds = params.get("lower_bound"), 0.0
        note = (f"certified search: {params.get('cover_cuts')} cover cuts, {params.get('rounds')} rounds, "
                f"{params.get('solver_seconds')} s in the {params.get('solver')} solver")
    elif result.optimal:
        record["lower_bound"], note, seconds = found, "the exact search completed", 0.0
    else:
        bound = tightened_bound(prepared.problem(), result.infeasible, result.best)
        record["lower_bound"], note, seconds = bound["lower_bound"], bound["note"], bound["seconds"]
    if record["lower_bound"] is not None and found is not None:
        record["gap"] = max(found - record["lower_bound"], 0.0)
        record["optimal"] = record["gap"] <= 1e-12
    record["bound"] = {"note": note}
    record["bound_seconds"] = round(seconds, 4)
    return record
