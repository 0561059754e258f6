"""The public Python API: prepare a problem, search it, release the anonymized table with its report."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fitness.encoding import EncodedTable, dense_codes, encode_column
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.models import KAnonymity, PrivacyModel, RecursiveCLDiversity, l_diversity, sensitive_figures, t_closeness
from fitness.objective import Precision, make_objective, solution_metrics
from kgen import hierarchies as hierarchy_specs
from kgen import parallel
from kgen.algorithms import CUT_POINT, make_search
from kgen.config import Config
from kgen.table import Table, as_table
from lattice.box import Box
from lattice.errors import InputError, NoSolutionError
from lattice.hierarchy import TOP, Hierarchy
from lattice.node import Node
from lattice.pruning import minimum_levels
from lattice.search.base import Evaluator, Limits, Problem, SearchResult

SUPPRESSED = "*"


@dataclass(frozen=True, eq=False)
class Prepared:
    """A table ready to search: its hierarchies, encoding, evaluator and (pre-pruned) box."""

    table: Table
    config: Config
    hierarchies: dict[str, Hierarchy]
    hierarchy_sources: dict[str, str]
    qi_values: dict[str, list[str]]
    encoded: EncodedTable
    evaluator: NodeEvaluator
    box: Box
    seconds: float

    @property
    def heights(self) -> Node:
        return self.encoded.heights

    def problem(self, evaluator: Evaluator | None = None) -> Problem:
        """The search problem; `evaluator` (e.g. a ParallelEvaluator around ours) replaces our evaluator."""
        return Problem(self.evaluator if evaluator is None else evaluator, self.box, self.heights,
                       self.evaluator.monotone_feasibility, self.evaluator.monotone_loss,
                       loss_is_log=isinstance(self.evaluator.objective, Precision))


@dataclass(frozen=True, eq=False)
class Result:
    """An anonymization: the released table, the chosen node's evaluation, the search and the report."""

    release: Table
    evaluation: Evaluation
    search: SearchResult
    report: dict
    suppressed_rows: np.ndarray


def validate(table: Table, config: Config) -> None:
    """Raise an InputError for a configuration that cannot work on this table."""
    if not config.qi:
        raise InputError("no quasi-identifiers given (--qi)")
    if table.n == 0:
        raise InputError("has a header but no data rows: nothing to anonymize", file=table.source)
    roles: dict[str, str] = {}
    for role, columns in (("quasi-identifier", config.qi), ("identifier", config.identifiers),
                          ("sensitive", config.sensitive)):
        for column in columns:
            table.column(column)
            if column in roles:
                raise InputError(f"column {column!r} is given two roles: {roles[column]} and {role}",
                                 column=column)
            roles[column] = role
    for column in config.hierarchies:
        if column not in config.qi:
            raise InputError(f"a hierarchy is given for {column!r}, which is not a quasi-identifier",
                             column=column)
    if not isinstance(config.k, int) or config.k < 1:
        raise InputError(f"k must be a whole number >= 1, got {config.k}")
    if config.k > table.n:
        raise InputError(f"k = {config.k} is larger than the number of rows ({table.n}): no release can "
                         "be k-anonymous", file=table.source)
    parallel.validate_options(config.jobs, config.backend, config.scheduler, config.batch_size)
    if not 0.0 <= config.suppression <= 1.0:
        raise InputError(f"suppression must be a fraction in [0, 1], got {config.suppression}")
    if config.l is not None and config.l_variant in ("distinct", "recursive"):
        for column in config.sensitive:  # no class can hold more distinct values than the whole column
            distinct = len({v.strip() for v in table.column(column)})
            if config.l > distinct:
                raise InputError(f"{config.l_variant} l-diversity with l = {config.l:g} is impossible: the column "
                                 f"has only {distinct} distinct values", file=table.source, column=column)


def missing_token(values: list[str], tokens: tuple[str, ...]) -> str | None:
    """The canonical missing token of a column: the configured token that occurs most often in it (ties: the
    first configured), so that one stray empty field does not turn every `?` of the release into ``."""
    missing = set(tokens)
    counts = Counter(v for v in values if v in missing)
    return max(counts, key=lambda t: (counts[t], -tokens.index(t))) if counts else None


def normalize(values: list[str], tokens: tuple[str, ...]) -> tuple[list[str], str | None]:
    """QI values stripped of surrounding blanks, every missing token replaced by the canonical one."""
    stripped = [v.strip() for v in values]
    token = missing_token(stripped, tokens)
    if token is None:
        return stripped, None
    missing = set(tokens)
    return [token if v in missing else v for v in stripped], token


def models_for(config: Config) -> list[PrivacyModel]:
    """k-anonymity, plus l-diversity and t-closeness on every sensitive column when `l` / `t_closeness` is set."""
    models: list[PrivacyModel] = [KAnonymity(config.k)]
    if (config.l is not None or config.t_closeness is not None) and not config.sensitive:
        raise InputError("l-diversity and t-closeness need a sensitive attribute (--sensitive COLUMN)")
    for column in config.sensitive:
        if config.l is not None:
            models.append(l_diversity(column, config.l, config.l_variant, config.c))
        if config.t_closeness is not None:
            models.append(t_closeness(column, config.t_closeness, config.t_distance))
    return models


def prepare(data: object, config: Config, models: list[PrivacyModel] | None = None,
            objective: object | None = None, *, require_feasible: bool = True) -> Prepared:
    """Validate, build the hierarchies, encode the table, and pre-prune the lattice (SPEC section 2).

    NoSolutionError when even the top node is infeasible, unless `require_feasible` is False (`kgen apply`
    evaluates one given node and reports whether it holds)."""
    start = time.perf_counter()
    table = as_table(data)
    validate(table, config)
    if config.algorithm in CUT_POINT:  # it chooses its own intervals: run it, then release its node
        from kgen.koptimize import with_cut_points  # noqa: PLC0415 (kgen.koptimize imports this module)

        config = with_cut_points(table, config)
    tokens = tuple(config.missing)
    hierarchies, sources, qi_values, encoded_qis = {}, {}, {}, []
    for column in config.qi:
        values, token = normalize(list(table.column(column)), tokens)
        distinct = sorted({v for v in values if v != token})
        hierarchy, source = hierarchy_specs.resolve(column, distinct, token, config.hierarchies.get(column),
                                                    config.hierarchy_dir, table.source,
                                                    column_values=values, row_number=table.row_number)
        hierarchies[column], sources[column], qi_values[column] = hierarchy, source, values
        encoded_qis.append(encode_column(column, values, hierarchy))
    sensitive = {c: dense_codes([v.strip() for v in table.column(c)]) for c in config.sensitive}
    encoded = EncodedTable(table.n, tuple(encoded_qis), sensitive)
    evaluator = NodeEvaluator(encoded, models if models is not None else models_for(config),
                              config.suppression, objective if objective is not None else make_objective(config.metric),
                              config.kernel)  # type: ignore[arg-type]
    heights = encoded.heights
    if require_feasible and not evaluator.feasible(heights):
        raise NoSolutionError(no_solution_advice(config, evaluator.evaluate(heights), table.n), file=table.source)
    box = Box(minimum_levels(heights, evaluator.feasible), heights) if (
        config.prune and evaluator.monotone_feasibility) else Box.full(heights)
    return Prepared(table, config, hierarchies, sources, qi_values, encoded, evaluator, box,
                    time.perf_counter() - start)


def no_solution_advice(config: Config, top: Evaluation, n: int) -> str:
    need = top.suppressed / n if n else 0.0
    enough = math.ceil(need * 10_000 - 1e-9) / 10_000  # rounded up: floor(enough * n) must reach top.suppressed
    return (f"no transformation satisfies the privacy model: even the most general node suppresses "
            f"{top.suppressed} of {n} rows ({need:.2%}) with suppression limit {config.suppression:.2%}. "
            f"Raise --suppression to at least {enough:.4f}, lower k (or l, or raise t), or use hierarchies "
            f"that generalize to a single value at the top")


def search(prepared: Prepared, progress: Callable[[int, object], None] | None = None) -> SearchResult:
    config = prepared.config
    algorithm = make_search(config.algorithm, config.options)
    limits = Limits(config.max_evaluations, config.time_limit, config.seed, progress)
    # Serial unless config asks for workers; the pool / Dask client and cluster are closed when the search ends.
    with parallel.evaluator_for(prepared.evaluator, config.jobs, config.backend, config.scheduler,
                                config.batch_size) as evaluator:
        return algorithm.run(prepared.problem(evaluator), limits)


def release(prepared: Prepared, node: Node, suppressed: np.ndarray, drop_suppressed: bool) -> Table:
    """The anonymized table: QIs generalized to `node`, identifiers replaced by `*`, suppressed rows with
    `*` in every QI (or dropped). Same columns and row order as the input."""
    table, config = prepared.table, prepared.config
    values: dict[str, list[str]] = {}
    for qi, level in zip(prepared.encoded.qis, node):
        labels = np.array(qi.labels[level], dtype=object)
        column = labels[qi.codes[level]]
        column[suppressed] = SUPPRESSED
        values[qi.name] = column.tolist()
    keep = ~suppressed if drop_suppressed else np.ones(table.n, dtype=bool)
    out = {}
    for column in table.columns:
        if column in values:
            data = values[column]
        elif column in config.identifiers:
            data = [SUPPRESSED] * table.n
        else:
            data = list(table.values[column])
        out[column] = [v for v, k in zip(data, keep) if k]
    return Table(table.columns, out, None, table.separator)


BUILDER_SPECS = ("decimal", "intervals", "mask", "date", "decade-date", "flat")


def hierarchy_record(source: str, hierarchy: Hierarchy) -> dict:
    """How `kgen apply` rebuilds a QI's hierarchy: a builder spec (rebuilt on the new data), else its paths."""
    if source.partition(":")[0] in BUILDER_SPECS and not Path(source).exists():
        return {"builder": source}
    return {"rows": [list(path) for path in hierarchy.paths.values()]}


def solution_figures(prepared: Prepared, node: Node) -> tuple[dict, list[dict]]:
    """Every information-loss metric of a node (fitness.objective.solution_metrics) and, per sensitive
    column, the privacy figures of its released classes (fitness.models.sensitive_figures)."""
    evaluator = prepared.evaluator
    partition = evaluator.partition(node, with_rows=True)
    bad = evaluator.violating(partition)
    metrics = solution_metrics(prepared.encoded, node, partition.sizes[~bad], np.flatnonzero(bad[partition.rows]))
    recursive = {m.column: m.l for m in evaluator.models if isinstance(m, RecursiveCLDiversity)}
    privacy = [sensitive_figures(partition, ~bad, prepared.encoded, column, recursive.get(column))
               for column in prepared.config.sensitive]
    return metrics, privacy


def build_report(prepared: Prepared, result: SearchResult, evaluation: Evaluation, suppressed: np.ndarray,
                 released: Table) -> dict:
    """The machine-readable report of SPEC/issue 2 (node, metrics, per-attribute loss, classes, rows)."""
    config = prepared.config
    node = evaluation.node
    keep = ~suppressed
    metrics, privacy = solution_figures(prepared, node)
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
    return {
        "algorithm": result.algorithm,
        "parameters": result.params,
        "seed": config.seed,
        "max_evaluations": config.max_evaluations,
        "time_limit": config.time_limit,
        "stopped": result.stopped,
        "models": [m.describe() for m in prepared.evaluator.models],
        "k": config.k,
        "suppression_limit": config.suppression,
        "max_suppressed_rows": prepared.evaluator.max_suppressed,
        "rows": prepared.table.n,
        "rows_released": released.n,
        "quasi_identifiers": list(config.qi),
        "identifiers": list(config.identifiers),
        "sensitive": list(config.sensitive),
        "node": {name: int(x) for name, x in zip(prepared.encoded.names, node)},
        "heights": {name: int(h) for name, h in zip(prepared.encoded.names, prepared.heights)},
        "box": {"lower": list(prepared.box.lower), "upper": list(prepared.box.upper), "size": prepared.box.size},
        "objective": prepared.evaluator.objective.name,
        "loss": evaluation.loss,
        "log": evaluation.log,
        "los": evaluation.los,
        "suppressed": evaluation.suppressed,
        "classes": evaluation.classes,
        "smallest_class": evaluation.smallest_class,
        "dm": evaluation.dm,
        "aecs": evaluation.aecs,
        "height": int(sum(node)),
        "evaluations": result.evaluations,
        "seconds": result.seconds,
        "prepare_seconds": prepared.seconds,
        "minimal_nodes_found": [list(m) for m in result.minimal],
        "metric": prepared.config.metric,
        "metrics": metrics,
        "privacy": privacy,
        "missing": list(config.missing),
        "hierarchy_specs": {name: hierarchy_record(prepared.hierarchy_sources[name], prepared.hierarchies[name])
                            for name in prepared.encoded.names},
        "attributes": attributes,
        "suppressed_rows": [int(r) + 1 for r in np.flatnonzero(suppressed)],
    }


def anonymize(data: object, config: Config, progress: Callable[[int, object], None] | None = None,
              models: list[PrivacyModel] | None = None, objective: object | None = None) -> Result:
    """Anonymize a table (Table, CSV path, column mapping or DataFrame) under `config`.

    Raises InputError for bad input and NoSolutionError when no node is feasible.
    """
    prepared = prepare(data, config, models, objective)
    return finish(prepared, search(prepared, progress))


def finish(prepared: Prepared, result: SearchResult) -> Result:
    """Release the best node of a search with its report; NoSolutionError if it found none."""
    config = prepared.config
    if result.best is None:
        raise NoSolutionError(f"the search ({result.algorithm}, stopped: {result.stopped}) found no feasible "
                              f"node in {result.evaluations} evaluations; raise --max-evaluations or "
                              "--time-limit, or use an exact algorithm")
    evaluation = result.best
    suppressed = prepared.evaluator.suppressed_rows(evaluation.node)
    released = release(prepared, evaluation.node, suppressed, config.drop_suppressed)
    report = build_report(prepared, result, evaluation, suppressed, released)
    return Result(released, evaluation, result, report, suppressed)


__all__ = ["Config", "Prepared", "Result", "TOP", "anonymize", "prepare", "release", "search"]
