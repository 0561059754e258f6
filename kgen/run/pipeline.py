"""The public Python API: prepare a problem, search it, release the anonymized table with its report.

`anonymize` is the one run path: the command line (`kgen anonymize`, `kgen demo`) builds a `Config` and calls
it with a progress bar and a warning printer, so a run from Python and one from the shell validate, search,
release and report the same way. The reports are built in `kgen.report.build`; files are written by
`kgen.write_release` (Python) or the command line, both through `kgen.report.build.publish`."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from fitness.encoding import code_dtype
from fitness.evaluator import Evaluation
from fitness.models import PrivacyModel
from kgen.io.table import SUPPRESSED, CodedColumn, Table
from kgen.report import build as reporting
from kgen.run import dp
from kgen.run.advice import LeastSuppressed, no_solution_advice
from kgen.run.algorithms import search_for
from kgen.run.config import Config
from kgen.run.prepare import Prepared, prepare
from kgen.run.recoding import Refined, refine
from kgen.run.record import record
from kgen.run.result import Result
from kgen.run.roles import identifier_warnings, run_warnings, unnamed_columns
from kgen.runners import parallel
from kgen.status import IdentifierWarning, KgenWarning
from lattice.errors import InputError, NoSolutionError
from lattice.hierarchy import TOP
from lattice.node import Node
from lattice.search.base import Limits, SearchResult, Stopped, run_search


def search(prepared: Prepared, progress: Callable[[int, Evaluation | None], None] | None = None) -> SearchResult:
    """Run the configured search on a prepared problem, serially or on the configured workers.

    Parameters
    ----------
    prepared
        The problem (`prepare`); its `config` names the algorithm, its options, limits, seed and workers.
    progress
        Called as `progress(evaluations, best_so_far)` while the search runs (see `anonymize`); an object with
        a `begin(budget, time_limit, space)` method is told first the evaluation budget that ends the search
        (the limit given, else the algorithm's own, e.g. the GA's; None if neither), the time limit and the
        number of nodes in the box, and one with a `close()` method is closed when the search ends.

    Returns
    -------
    SearchResult
        The best node found (or None), the evaluations, and why the search stopped (`stopped`: "interrupted"
        after Ctrl-C, with the best found so far).
    """
    config = prepared.config
    algorithm = dp.search_for(prepared.evaluator.models, prepared.heights) or search_for(config)
    limits = Limits(config.max_evaluations, config.time_limit, config.seed, progress)
    begin = getattr(progress, "begin", None)
    if begin is not None:
        begin(config.max_evaluations or getattr(algorithm, "max_evaluations", None), search_seconds(config, algorithm),
              prepared.box.size)
    try:
        # Serial unless config asks for workers; the pool / Dask client and cluster are closed when it ends.
        with parallel.evaluator_for(prepared.evaluator, config.jobs, config.backend, config.scheduler,
                                    config.batch_size, connect_timeout=config.connect_timeout) as evaluator:
            return run_search(algorithm, prepared.problem(evaluator), limits)
    finally:
        close = getattr(progress, "close", None)
        if close is not None:
            close()


def search_seconds(config: Config, algorithm: object) -> float | None:
    """The time limit that will end the search, for the progress bar: the user's, else, when neither a time
    nor an evaluation limit is given, the algorithm's own default (auto's 60 s), else None."""
    if config.time_limit is not None or config.max_evaluations is not None:
        return config.time_limit
    return getattr(algorithm, "time_limit", None)


def release(prepared: Prepared, node: Node, suppressed: np.ndarray, drop_suppressed: bool,
            columns: Mapping[str, CodedColumn] | None = None) -> Table:
    """The anonymized table: QIs generalized to `node`, identifiers replaced by `*`, suppressed rows with
    `*` in every QI (or dropped). Same columns and row order as the input. Built from codes: every column is
    a CodedColumn (no string per row), which `Table.iter_rows` writes out a chunk at a time. `columns`, when
    given, are the QI columns as written instead (`kgen.run.recoding.refine`: local recoding, microaggregation),
    `*` already on the suppressed rows."""
    table, config = prepared.table, prepared.config
    keep = None if not drop_suppressed else ~suppressed
    values: dict[str, Sequence[str]] = {}
    for name, column in (columns or {}).items():
        values[name] = column if keep is None else CodedColumn(column.codes[keep], column.labels)
    for qi, level in zip(prepared.encoded.qis, node):
        if qi.name in values:
            continue
        labels = qi.labels[level]
        star = labels.index(SUPPRESSED) if SUPPRESSED in labels else len(labels)
        codes = qi.codes[level].astype(code_dtype(len(labels) + 1))  # a copy, with room for `*`
        codes[suppressed] = star
        values[qi.name] = CodedColumn(codes if keep is None else codes[keep],
                                      labels if star < len(labels) else labels + (SUPPRESSED,))
    rows = table.n if keep is None else int(keep.sum())
    out: dict[str, Sequence[str]] = {}
    for column in table.columns:
        if column in values:
            out[column] = values[column]
        elif column in config.identifiers:
            out[column] = CodedColumn(np.zeros(rows, dtype=np.uint8), (SUPPRESSED,))
        else:
            data = table.values[column]
            if keep is None:
                out[column] = data
            elif isinstance(data, CodedColumn):
                out[column] = CodedColumn(data.codes[keep], data.labels)
            else:
                out[column] = [v for v, k in zip(data, keep) if k]
    return Table(table.columns, out, None, table.separator)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM on the command line) stopped the search: nothing was released.

    A KeyboardInterrupt, as Python code expects of Ctrl-C, that carries what the search had found:
    `prepared` and `result` (a SearchResult with `stopped` "interrupted"); `best()` releases that best node
    so far in memory (a Result), or returns None when no feasible node had been found yet.
    """

    def __init__(self, prepared: Prepared, result: SearchResult) -> None:
        super().__init__("interrupted")
        self.prepared, self.result = prepared, result

    def best(self) -> Result | None:
        return None if self.result.best is None else finish(self.prepared, self.result)


def anonymize(data: object, config: Config, progress: Callable[[int, Evaluation | None], None] | None = None,
              models: list[PrivacyModel] | None = None, objective: object | None = None, *,
              warn: Callable[[str], None] | None = None, invocation: Mapping | None = None) -> Result:
    """Anonymize a table under `config`: prepare, search, release the best node with its report.

    This is the one run path: `kgen anonymize` and `kgen demo` call it with their progress bar and warnings.

    Parameters
    ----------
    data
        The table: a `kgen.Table`, a CSV path, a mapping of column name to values, or a pandas DataFrame
        (with `config.partitioned`: what `kgen.runners.partitioned` reads, e.g. a Parquet/CSV glob).
    config
        What to anonymize and how (`kgen.Config`).
    progress
        Called as `progress(evaluations, best_so_far)` during the search (`best_so_far` an Evaluation, or None
        before a feasible node is found); see `search` for its optional `begin` and `close` methods
        (`kgen.cli.progress.ProgressBar` has both).
    models
        The privacy models; default: those of `config` (`models_for`).
    objective
        The objective to minimize; default: `config.metric`.
    invocation
        How the run was started, for the report's provenance (the command line passes its argv); default: the
        Python API.
    warn
        Called with each warning of the run (`run_warnings`: a kept column that looks like an identifier, more
        jobs than cores) before the search; without it they are Python warnings (`kgen.IdentifierWarning`,
        `kgen.KgenWarning`). They are in the report's `warnings` either way.

    Returns
    -------
    Result
        The released table, the chosen node's evaluation, the search result, the report (`kgen.report.build`) and
        the suppressed rows. Nothing is written: `kgen.write_release` writes and checks the files.

    Raises
    ------
    InputError
        Bad input or configuration (one line naming file, row and column); a column without a role (give
        `config.keep` or `config.keep_unnamed`); with `config.strict`, a warning.
    NoSolutionError
        No node satisfies the privacy models within the suppression limit (with what would help).
    Interrupted
        Ctrl-C during the search (a KeyboardInterrupt carrying the best found so far).
    """
    config.check()  # settings wrong on any table (an algorithm's refused options too): before reading data
    if config.partitioned:
        return anonymize_partitioned(data, config, progress, invocation=invocation)
    prepared = prepare(data, config, models, objective, progress=progress)
    emit_warnings(prepared.table, config, warn)
    result = search(prepared, progress)
    if result.stopped == Stopped.INTERRUPTED:
        raise Interrupted(prepared, result)
    return finish(prepared, result, invocation)


def emit_warnings(table: Table, config: Config, warn: Callable[[str], None] | None) -> None:
    """The run's warnings before the search: to `warn` (the command line prints them on stderr), else as
    Python warnings (`kgen.IdentifierWarning` for a kept column that looks like an identifier, else
    `kgen.KgenWarning`), so that a notebook shows them. They are in the report's `warnings` either way."""
    unnamed = unnamed_columns(table, config)
    identifiers = set(identifier_warnings(table, config, unnamed))
    for message in run_warnings(table, config, unnamed):
        if warn is not None:
            warn(message)
        else:
            category = IdentifierWarning if message in identifiers else KgenWarning
            warnings.warn(message, category, stacklevel=3)


def anonymize_partitioned(data: object, config: Config, progress: Callable[[int, Evaluation | None], None] | None,
                          output: str | None = None, report: str | None = None, protected: Sequence[str] = (),
                          invocation: Mapping | None = None, public: str | None = None) -> Result:
    """`config.partitioned`: row-partitioned evaluation on Dask (`kgen.run.partitioned`, docs/partitioned.md),
    the same run path with rows on the workers. With `output` (a new folder) the parts and the report are
    published through the one publish; returns the Result."""
    try:  # optional dependency: Dask (extra `distributed`), which only tables beyond one worker need
        partitioned = importlib.import_module("kgen.run.partitioned")
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if error.name == "kgen.run.partitioned":
            raise InputError("--partitioned (Config.partitioned) needs the kgen.run.partitioned module, which "
                             "this installation of kgen does not have") from None
        if missing in ("dask", "distributed", "pandas", "pyarrow"):
            raise InputError(f"--partitioned needs {missing}: pip install \"kgen[distributed,pandas,parquet]\""
                             ) from None
        raise
    return partitioned.anonymize(data, config, output, progress=progress, report=report, protected=protected,
                                 invocation=invocation, public=public)


def finish(prepared: Prepared, result: SearchResult, invocation: Mapping | None = None) -> Result:
    """Release the best node of a search with its report.

    Parameters
    ----------
    prepared, result
        The prepared problem and the result of a search on it (`search`).
    invocation
        How the run was started (`kgen.report.provenance.command_invocation`); default: the Python API.

    Returns
    -------
    Result
        The release of `result.best`, with its report (`kgen.report.build.anonymize_report`).

    Raises
    ------
    NoSolutionError
        The search found no feasible node. "No solution" is stated only when the search proves it (it
        completed: with feasibility not monotone, `prepare` leaves the decision to the search), with the
        suppression limit that the closest node needs; otherwise the message says the search did not complete.
    """
    config = prepared.config
    if result.best is None:
        if result.stopped == Stopped.COMPLETE and result.closest is not None:
            least = LeastSuppressed(result.closest, True, result.evaluations)
            raise NoSolutionError(no_solution_advice(config, prepared.evaluator, least), file=prepared.table.source)
        raise NoSolutionError(f"the search ({result.algorithm}, stopped: {result.stopped}) found no feasible "
                              f"node in {result.evaluations} evaluations; raise --max-evaluations or "
                              "--time-limit, or use another algorithm (bestfirst is exact and evaluates the fewest "
                              "nodes): a search that did not complete does not prove that no node is feasible")
    evaluation = result.best
    released, suppressed, refined = refined_release(prepared, evaluation.node)
    recorded = record(prepared, evaluation, suppressed, result, invocation, refined)
    report = reporting.anonymize_report(prepared, result, evaluation, suppressed, released, recorded)
    return Result(released, evaluation, result, report, suppressed)


def refined_release(prepared: Prepared, node: Node) -> tuple[Table, np.ndarray, Refined | None]:
    """The release at `node` with the run's local recoding and microaggregation (`kgen.run.recoding.refine`),
    the rows it suppresses, and the refinement (None when neither is asked): what `finish` and `kgen apply`
    release."""
    suppressed = prepared.evaluator.suppressed_rows(node)
    refined = refine(prepared, node, suppressed)
    if refined is not None:
        suppressed = refined.recoding.suppressed
    columns = None if refined is None else refined.columns
    return release(prepared, node, suppressed, prepared.config.drop_suppressed, columns), suppressed, refined


__all__ = ["Config", "Interrupted", "Prepared", "Result", "TOP", "anonymize", "finish", "prepare", "release",
           "search"]
