"""A whole partitioned run: open the cluster, pass 0, pre-prune, search, release, check, report.

Why a module of its own: it is the one place that sequences the passes and owns the Dask client (opened
here unless the caller lends one, closed here whatever happens), so `kgen.runners.partitioned.anonymize` (the CLI's
`--partitioned` route) and the Python-level `anonymize_source` (a glob or a dask.dataframe) are the same
run. The client process only ever holds distinct values, lookup arrays, per-node scalars, the suppressed
class keys of the released node and per-part counts.
"""

from __future__ import annotations

import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import dask
import distributed  # noqa: F401 (first: without Dask's extra the error names `distributed`, one line)
import numpy as np

from fitness import privacy
from fitness.models import KAnonymity
from fitness.objective import Precision
from kgen.check.partitioned import check_parts
from kgen.check.rules import rules_from_models
from kgen.check.verify import ReleaseCheckError
from kgen.io.roles import require_roles
from kgen.report import provenance
from kgen.report import risk as risking
from kgen.report.build import partitioned_report
from kgen.report.publish import write_release
from kgen.run.advice import limits_text
from kgen.run.algorithms import CUT_POINT, make_search
from kgen.run.config import Config
from kgen.run.prepare import config_objective, limits_box
from kgen.run.result import Result
from kgen.runners import parallel
from kgen.runners.parallel import ClusterError
from kgen.runners.partitioned.domain import Domain, build_domain, distinct_of, leaf_part, merge_distinct, read_local
from kgen.runners.partitioned.evaluator import PartitionedEvaluator, unsupported
from kgen.runners.partitioned.release import PartsRelease, Written, discard, write_part
from kgen.runners.partitioned.source import Source, open_source
from lattice.box import Box
from lattice.errors import InputError, NoSolutionError
from lattice.pruning import minimum_levels
from lattice.search.base import Limits, Problem, SearchResult, run_search

MERGE_FAN_IN = 4


# Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also freezes glibc's mmap threshold at
# 128 KiB: every large temporary array of a map or reduce task is then mapped fresh and page-faulted in
# (measured: about a third of the workers' CPU went to the kernel). The LocalCluster kgen starts leaves
# glibc's adaptive defaults, as in the in-memory process. (A nanny also copies the variable into its parent's
# environment, so after any earlier cluster of this process it is inherited: it is left out while spawning.)
TRIM_VARIABLE = "MALLOC_TRIM_THRESHOLD_"
WORKER_ENVIRON = {f"distributed.nanny.pre-spawn-environ.{TRIM_VARIABLE}": None}


def local_cluster(workers: int, memory_limit: str | None = None) -> Any:
    """A LocalCluster of `workers` single-threaded worker processes on 127.0.0.1 (see WORKER_ENVIRON)."""
    # optional dependency: Dask (extra `distributed`)
    from distributed import LocalCluster

    inherited = os.environ.pop(TRIM_VARIABLE, None)
    try:
        with dask.config.set(WORKER_ENVIRON):
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                dashboard_address=":0", silence_logs=logging.ERROR,
                                memory_limit=memory_limit or "auto")
    finally:
        if inherited is not None:
            os.environ[TRIM_VARIABLE] = inherited


def open_cluster(config: Config, memory_limit: str | None = None) -> tuple[Any, Any]:
    """A Dask client: to `config.scheduler`, or to a LocalCluster of `config.jobs` single-threaded worker
    processes on 127.0.0.1 (at least 1). Returns (client, cluster or None); ClusterError (exit 6) when the
    scheduler cannot be reached or has no worker."""
    # optional dependency: Dask (extra `distributed`)
    from distributed import Client

    if config.scheduler is None:
        cluster = local_cluster(max(1, config.jobs if config.jobs > 0 else 2), memory_limit)
        return Client(cluster, set_as_default=False), cluster
    return parallel.connect_scheduler(config.scheduler, config.connect_timeout), None


def validate(config: Config, source: Source) -> None:
    """Refuse (InputError, one line) what the partitioned path cannot do, before touching the rows."""
    if not config.qi:
        raise InputError("no quasi-identifiers given (--qi)")
    config.check()
    columns = set(source.columns)
    for group in (config.qi, config.identifiers, config.sensitive):
        for column in group:
            if column not in columns:
                raise InputError("no such column in the input", file=source.name, column=column)
    require_roles(list(source.columns), list(config.qi) + list(config.identifiers) + list(config.sensitive),
                  config.keep, config.keep_unnamed, source.name)
    beyond = privacy.beyond_sizes(privacy.build_models(config.resolved_values(), config.sensitive))
    if beyond:
        raise InputError(f"{', '.join(beyond)} is not supported with --partitioned (k-anonymity only)")
    if config.algorithm in CUT_POINT:
        raise InputError(f"algorithm {config.algorithm!r} is not supported with --partitioned (it reads every row)")
    if config.device != "cpu":
        raise InputError(f"--device {config.device} is not supported with --partitioned")
    # an unknown algorithm or bad options: before the cluster
    make_search(config.algorithm, config.options, config.practical_monotonicity)

    unsupported([KAnonymity(config.k)], config_objective(config))  # type: ignore[arg-type]


@dataclass(eq=False)
class Prepared:
    """Pass 0's outcome: the domain, the parts on the workers, the evaluator and the (pre-pruned) box."""

    source: Source
    domain: Domain
    parts: list[Any]
    workers: list[str]
    offsets: list[int]
    rows: list[int]
    evaluator: PartitionedEvaluator
    box: Box
    seconds: float


def tree_merge(client: Any, pieces: list[Any]) -> Any:
    while len(pieces) > 1:
        pieces = [client.submit(merge_distinct, *pieces[i:i + MERGE_FAN_IN], pure=False)
                  for i in range(0, len(pieces), MERGE_FAN_IN)]
    return pieces[0]


def prepare(client: Any, source: Source, config: Config, batch_bytes: int = 64 << 20) -> Prepared:
    """Pass 0 (distinct values, tree merge, hierarchies, lookup arrays, leaf codes on the workers), the
    evaluator, the no-solution check and the pre-pruned box."""
    started = time.perf_counter()
    qis = list(config.qi)
    local = client.compute([dask.delayed(read_local)(p, qis, source.separator) for p in source.parts()])
    rows = client.gather([client.submit(getattr, f, "n", pure=False) for f in local])
    n, distinct = client.gather(tree_merge(client, [client.submit(distinct_of, f, pure=False) for f in local]))
    if n == 0:
        raise InputError("has a header but no data rows: nothing to anonymize", file=source.name)
    if config.k > n and config.suppression < 1.0:
        raise InputError(f"k = {config.k} is larger than the number of rows ({n}): no release can be k-anonymous",
                         file=source.name)
    domain = build_domain(qis, n, distinct, config.missing, dict(config.hierarchies), config.hierarchy_dir,
                          source.name)
    del distinct
    [raw, lookups] = client.scatter([list(domain.raw), list(domain.lookups)], broadcast=True)
    who = client.who_has(local)
    workers = [next(iter(who[f.key])) for f in local]
    offsets = np.concatenate(([0], np.cumsum(rows)[:-1])).astype(int).tolist()
    parts = [client.submit(leaf_part, f, i, offsets[i], raw, lookups, workers=[w], allow_other_workers=False,
                           pure=False) for i, (f, w) in enumerate(zip(local, workers))]
    # every part built (on its worker: only its row count comes back) before the raw values go
    client.gather([client.submit(getattr, f, "n", workers=[w], pure=False) for f, w in zip(parts, workers)])
    del local, raw
    # every model asked for (a size rule beside k, e.g. estimated k-map, is evaluated too; `validate` refused
    # the models that need more than class sizes)
    models = privacy.build_models(config.resolved_values(), config.sensitive)
    evaluator = PartitionedEvaluator(client, parts, workers, domain, models, config.suppression,
                                     config_objective(config), batch_bytes=batch_bytes, part_rows=max(rows))
    limits = limits_box(config, domain.names, domain.heights)
    heights = limits.upper  # the top of the box the per-QI limits leave
    if not evaluator.feasible(heights):
        top = evaluator.evaluate(heights)
        need = math.ceil(top.suppressed / n * 10_000 - 1e-9) / 10_000
        raise NoSolutionError(f"no transformation satisfies k = {evaluator.k} with suppression limit "
                              f"{config.suppression:.2%} ({evaluator.max_suppressed} of {n} rows)"
                              f"{limits_text(config)}: the most general node suppresses {top.suppressed} rows; "
                              f"raise --suppression to at least {need:.4f}", file=source.name)
    box = Box(minimum_levels(heights, evaluator.feasible, limits.lower), heights) if config.prune else limits
    return Prepared(source, domain, parts, workers, offsets, rows, evaluator, box, time.perf_counter() - started)


def search(prepared: Prepared, config: Config, progress: Callable[[int, object], None] | None = None) -> SearchResult:
    evaluator = prepared.evaluator
    problem = Problem(evaluator, prepared.box, prepared.domain.heights, evaluator.monotone_feasibility,
                      evaluator.monotone_loss, loss_is_log=isinstance(evaluator.objective, Precision))
    return run_search(make_search(config.algorithm, config.options, config.practical_monotonicity),
        problem, Limits(config.max_evaluations, config.time_limit, config.seed, progress))


def check_output_folder(folder: str | os.PathLike) -> None:
    """Refuse (InputError) an output that is not a new or empty folder: parts of an earlier release (or the
    input's own parts) left beside the new ones would be read as one release."""
    path = Path(folder)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        what = "is not a folder" if not path.is_dir() else "already exists and is not empty"
        raise InputError(f"{what}: give a new folder for the release parts (--output)", file=str(path))


def release(client: Any, prepared: Prepared, config: Config, node: tuple[int, ...], folder: str) -> list[Written]:
    """The map-only release into `folder`, under temporary names (see kgen.runners.partitioned.release)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    domain = prepared.domain
    plan, small = prepared.evaluator.suppressed_keys(node)
    lookups = [domain.lookups[i][x] for i, x in enumerate(node)]
    labels = [domain.labels[i][x] for i, x in enumerate(node)]
    token = uuid.uuid4().hex[:12]
    [raw, lookups_f] = client.scatter([list(domain.raw), lookups], broadcast=True)
    tasks = [dask.delayed(write_part)(p, i, prepared.source.separator, folder, token, list(config.qi),
                                      list(config.identifiers), raw, lookups_f, labels, plan,
                                      config.drop_suppressed, *small)
             for i, p in enumerate(prepared.source.parts())]
    return list(client.gather(client.compute(tasks)))


def anonymize_source(data: object, config: Config, output: str | None = None, client: Any = None,
                     progress: Callable[[int, object], None] | None = None, memory_limit: str | None = None,
                     batch_bytes: int = 64 << 20, report: str | None = None, protected: Sequence[str] = (),
                     invocation: Mapping | None = None, public: str | None = None) -> Result:
    """Anonymize a Parquet/CSV glob (or folder, or file) or a dask.dataframe with partitioned evaluation.

    Parameters
    ----------
    data : str, os.PathLike or dask.dataframe.DataFrame
        The input; a glob's files are partitions in sorted order.
    config : kgen.Config
        qi, k, suppression, identifiers, metric (log, dm, aecs), algorithm, options, seed, limits, hierarchies,
        missing, drop_suppressed; scheduler (or jobs: local worker processes) for the cluster.
    output : str, optional
        A folder for the release, one `part-NNNNN.csv` per input partition; None searches only. The parts
        and the report are published through the one publish (`kgen.report.publish.write_release`: under
        the output lock, each part's SHA-256 in the report, `verified` from the check of the written parts).
    client : distributed.Client, optional
        A client to use (not closed here); else one is opened from `config` and closed at the end.
    report, protected, invocation, public
        Where the report goes (default: the folder's name + .json), the files never to overwrite, where the
        public report goes (None: not written), and how
        the run was started (for the provenance).

    Returns
    -------
    Result
        As `kgen.anonymize`: the release (`PartsRelease`, published; None when searching only), the node's
        evaluation, the search, and the report (the in-memory report's names for the fields it shares, the
        check's figures, and the partitioned run's figures under `partitioned`).

    Raises InputError (exit 2) for what is unsupported, NoSolutionError (3), ReleaseCheckError (4),
    ClusterError (6).
    """
    started = time.perf_counter()
    if output is not None:
        check_output_folder(output)
    source = open_source(data)
    validate(config, source)
    own = client is None
    cluster = None
    if own:
        client, cluster = open_cluster(config, memory_limit)
    try:
        result = _run_on(client, source, config, output, progress, batch_bytes, started, invocation)
    except InputError:
        raise
    except (OSError, TimeoutError) as error:
        if type(error).__module__.startswith(("distributed", "tornado", "asyncio")) or isinstance(error, TimeoutError):
            raise ClusterError(f"the Dask cluster was lost during the partitioned run: {error}") from None
        raise
    finally:
        if own:
            _close_quietly(client, cluster)
    if result.release is not None:
        write_release(result, output, report or str(Path(output).with_name(Path(output).name + ".json")),
                      protected, public=public)
    return result


def _run_on(client: Any, source: Source, config: Config, output: str | None,
            progress: Callable[[int, object], None] | None, batch_bytes: int, started: float,
            invocation: Mapping | None) -> Result:
    """The run on an open client: pass 0, search, the parts written and checked, the report. The report is
    built before anything is published, so that a failure there publishes nothing and leaves no part."""
    prepared = prepare(client, source, config, batch_bytes)
    result = search(prepared, config, progress)
    if result.best is None:
        raise NoSolutionError(f"the search ({result.algorithm}, stopped: {result.stopped}) found no feasible "
                              f"node in {result.evaluations} evaluations", file=source.name)
    released = time.perf_counter()
    written, check = _release_and_check(client, prepared, config, result.best.node, output)
    try:
        risk = risking.sizes_report(prepared.evaluator.class_sizes(result.best.node), prepared.domain.n,
                                    result.best.suppressed, config.qi)
        table = SimpleNamespace(source=None, n=prepared.domain.n, columns=list(source.columns))
        record = provenance.build(config, table, prepared.domain.sources, prepared.domain.hierarchies, invocation)
        record["input"] = partition_files(source)
        seconds = {"prepare": round(prepared.seconds, 3), "search": round(result.seconds, 3),
                   "release_and_check": round(time.perf_counter() - released, 3),
                   "total": round(time.perf_counter() - started, 3)}
        report = partitioned_report(prepared, config, result, written, check, output, risk=risk,
                                    provenance_record=record, seconds=seconds)
    except BaseException:
        discard(written)
        raise
    parts = PartsRelease(output, tuple(written), report.pop("verified")) if written else None
    report.pop("verified", None)
    return Result(parts, result.best, result, report, None)  # type: ignore[arg-type]


def partition_files(source: Source) -> dict:
    """The input's provenance: each partition file with its size and SHA-256 (a dask.dataframe has none)."""
    if not source.files:
        return {"path": None, "note": "a dask.dataframe (no files)", "partitions": source.count}
    return {"files": [provenance.file_record(f) for f in source.files]}


def _release_and_check(client: Any, prepared: Prepared, config: Config, node: tuple[int, ...],
                       output: str | None) -> tuple[list[Written], Any]:
    """The parts written under temporary names and their independent check (([], None) when searching only).
    A release that fails its check is discarded here: ReleaseCheckError, nothing published."""
    if output is None:
        return [], None
    written = release(client, prepared, config, node, output)
    # the least class size the checker derives on its own from the models (k, or an estimated k-map's k')
    least, _ = rules_from_models([m.describe() for m in prepared.evaluator.models], dropped=False)
    check = check_parts(client, [w.temp for w in written], config.qi, least,
                        0.0 if config.drop_suppressed else config.suppression, prepared.source.separator,
                        prepared.evaluator.reducers)
    if not check.passed:
        discard(written)
        raise ReleaseCheckError("the written release failed its independent check: "
                                + check.summary(output, False) + "; nothing was published")
    return written, check


def _close_quietly(client: Any, cluster: Any) -> None:
    """Close a client (and cluster) this run opened; a cleanup error must never mask the run's own error."""
    try:
        client.close()
        if cluster is not None:
            cluster.close()
    except Exception:  # noqa: BLE001 (a cleanup error must never mask the first error)
        pass




def anonymize(data: object, config: Config, output: str | None = None,
              progress: Callable[[int, object], None] | None = None, report: str | None = None,
              protected: Sequence[str] = (), invocation: Mapping | None = None, public: str | None = None) -> Result:
    """The `--partitioned` entry point (`kgen.run.pipeline.anonymize` with `config.partitioned`): `data` is a
    Parquet/CSV glob, folder or file, or a dask.dataframe; the release goes to the new folder `output` (None:
    search only), published with its `report`. Returns the Result (see `anonymize_source`)."""
    return anonymize_source(data, config, output, progress=progress, report=report, protected=protected,
                            public=public,
                            invocation=invocation)
