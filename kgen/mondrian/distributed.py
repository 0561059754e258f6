"""Distributed Mondrian (the paper's sections 3-6) on Dask: coordinator, fragment conditions, worker tasks.

The coordinator reads only a sample of the table (`--sample`), partitions the sample into fragment
conditions (quantile partitioning on the QI with most distinct values, Fig. 4, or multidimensional median
partitioning over ceil(log2 |W|) levels, Fig. 5), and sends each task its condition and the `Spec`. Each
task reads its own fragment from storage (`Source.read` with the condition pushed into the scan), runs the
same per-fragment function as centralized Mondrian (`core.anonymize_fragment`), writes its release
partition, and returns only its metrics; the coordinator sums DP and normalizes NCP by the whole table's
ranges and domains (the fragments' shares add up: SPEC section 12). Nothing of the table passes through the
coordinator except the sample.

Fragment boundaries are values, not ranks, so a row outside the sample's range still lands in exactly one
fragment: the first fragment is open below and the last open above, and hierarchy-ordered QIs use the full
leaf list of their hierarchy.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kgen.mondrian.core import QI, FragmentResult, Spec, anonymize_fragment, encode
from kgen.mondrian.storage import Condition, Source, write_csv
from kgen.runners import parallel
from kgen.runners.parallel import CONNECT_TIMEOUT
from kgen.status import ClusterError
from lattice.errors import InputError, NoSolutionError

PARTITIONINGS = ("quantile", "multidim")


# ---------------------------------------------------------------------------------------------- conditions

def _clause(qi: QI, encoded, cut: int, op: str) -> dict:
    """The clause `QI op value-at-code-cut` in the QI's own order."""
    if qi.order == "hierarchy":
        leaves = list(qi.tree.leaves)
        return {"column": qi.name, "op": "in", "values": leaves[:cut + 1] if op == "<=" else leaves[cut + 1:]}
    if qi.order == "number":
        return {"column": qi.name, "op": op, "value": float(encoded.values[cut]), "order": "number"}
    return {"column": qi.name, "op": op, "value": str(encoded.labels[cut]), "order": "string"}


def _between(qi: QI, encoded, low: int | None, high: int | None) -> Condition:
    clauses = []
    if low is not None:
        clauses.append(_clause(qi, encoded, low, ">"))
    if high is not None:
        clauses.append(_clause(qi, encoded, high, "<="))
    if qi.order == "hierarchy" and len(clauses) == 2:  # one IN list for the range of leaves
        keep = set(clauses[1]["values"]) & set(clauses[0]["values"])
        clauses = [{"column": qi.name, "op": "in", "values": [v for v in qi.tree.leaves if v in keep]}]
    return clauses


def quantile_conditions(sample: pd.DataFrame, spec: Spec, fragments: int) -> list[Condition]:
    """Fig. 4: |W|-quantiles of the sample on the QI with most distinct values (ties: the first listed).
    Equal quantiles collapse, so a QI with fewer values than workers gives fewer fragments."""
    if len(sample) == 0 or fragments <= 1:
        return [[]]
    encoded = [encode(q, sample[q.name]) for q in spec.qis]
    distinct = [np.unique(e.codes).size for e in encoded]
    j = int(np.argmax(distinct))
    qi, enc = spec.qis[j], encoded[j]
    ranks = np.sort(enc.codes)
    m = ranks.size
    cuts = sorted({int(ranks[math.ceil(i * m / fragments) - 1]) for i in range(1, fragments)})
    cuts = [c for c in cuts if c < ranks[-1]]
    bounds = [None] + cuts + [None]
    return [_between(qi, enc, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def multidim_conditions(sample: pd.DataFrame, spec: Spec, fragments: int) -> list[Condition]:
    """Fig. 5: median splits of the sample for ceil(log2 |W|) levels, on the QI of highest representativity
    (Eq. 1: span or distinct values in the fragment over those in the sample; at the first level, where all
    are 1, the QI with most distinct values). A fragment no QI can split stays whole."""
    if len(sample) == 0 or fragments <= 1:
        return [[]]
    levels = math.ceil(math.log2(fragments))
    encoded = [encode(q, sample[q.name]) for q in spec.qis]
    codes = np.stack([e.codes for e in encoded], axis=1)
    span = []
    for q, e in zip(spec.qis, encoded):
        span.append(e.values[e.codes.max()] - e.values[e.codes.min()] if q.numeric else np.unique(e.codes).size)
    distinct = np.array([np.unique(e.codes).size for e in encoded])

    def split(rows: np.ndarray, condition: Condition, level: int) -> list[Condition]:
        if level >= levels or rows.size < 2:
            return [condition]
        block = codes[rows]
        rep = []
        for j, (q, e) in enumerate(zip(spec.qis, encoded)):
            lo, hi = block[:, j].min(), block[:, j].max()
            if hi == lo or span[j] == 0:
                rep.append(-1.0)
            elif q.numeric:
                rep.append((e.values[hi] - e.values[lo]) / span[j])
            else:
                rep.append(np.unique(block[:, j]).size / span[j])
        rep = np.array(rep)
        if rep.max() < 0:
            return [condition]
        best = np.flatnonzero(rep == rep.max())
        j = int(best[np.argmax(distinct[best])])  # ties (all 1 at the first level): most distinct values
        column = np.sort(block[:, j])
        median = int(column[(column.size - 1) // 2])
        cut = median if median < column[-1] else int(column[column < median].max())
        left = rows[block[:, j] <= cut]
        right = rows[block[:, j] > cut]
        q, e = spec.qis[j], encoded[j]
        return (split(left, condition + [_clause(q, e, cut, "<=")], level + 1)
                + split(right, condition + [_clause(q, e, cut, ">")], level + 1))

    return split(np.arange(len(sample)), [], 0)


def fragment_conditions(sample: pd.DataFrame, spec: Spec, fragments: int, partitioning: str) -> list[Condition]:
    if partitioning not in PARTITIONINGS:
        raise InputError(f"unknown partitioning {partitioning!r}; choose quantile or multidim")
    if partitioning == "quantile":
        return quantile_conditions(sample, spec, fragments)
    return multidim_conditions(sample, spec, fragments)


# ---------------------------------------------------------------------------------------------- tasks

@dataclass
class TaskResult:
    """What a task sends back: its fragment's metrics (the release stays in storage) and its timings."""

    index: int
    result: FragmentResult
    path: str
    read_seconds: float
    anonymize_seconds: float
    write_seconds: float
    worker: str = ""
    cpu_seconds: float = 0.0


def run_fragment(index: int, source: str | Source, numeric: Sequence[str], condition: Condition, spec: Spec,
                 folder: str | None, separator: str | None = None) -> TaskResult:
    """One task: read the fragment by its condition, anonymize it, write `part-NNNNN.csv` into `folder` (None:
    write nothing, for experiments that only need the metrics), return metrics."""
    started, cpu = time.perf_counter(), time.process_time()
    table = Source.of(source)
    frame = table.read(numeric, condition)
    read = time.perf_counter() - started
    try:
        result = anonymize_fragment(frame, spec, where=f"fragment {index}")
    except NoSolutionError as error:
        raise NoSolutionError(f"{error.message} (the fragment is too small: use fewer workers or a larger "
                              "sample)", file=f"fragment {index} of {source}") from None
    anonymized = time.perf_counter() - started - read
    path = str(Path(folder) / f"part-{index:05d}.csv") if folder is not None else ""
    if folder is not None:
        write_csv(result.release, path, separator or table.separator)
    result.release = None  # the release stays in storage; only metrics travel
    written = time.perf_counter() - started - read - anonymized
    return TaskResult(index, result, path, read, anonymized, written, worker=str(os.getpid()),
                      cpu_seconds=time.process_time() - cpu)


@dataclass
class Run:
    """A distributed run: the fragments' conditions and task results, and the coordinator's timings."""

    conditions: list[Condition]
    tasks: list[TaskResult]
    sample_rows: int
    seconds: dict[str, float] = field(default_factory=dict)


def open_client(workers: int, scheduler: str | None, connect_timeout: float = CONNECT_TIMEOUT):
    """A Dask client: to `scheduler`, or to a LocalCluster on 127.0.0.1 of single-threaded processes, as many
    as `workers` but no more than the usable cores (`kgen.runners.parallel.capped_jobs`: the fragments stay
    `workers`, queued on the processes). A scheduler address is checked and probed first, as for
    `kgen anonymize --backend dask` (one line, exit 2 or 6, within `connect_timeout` seconds). Returns
    (client, cluster or None)."""
    try:  # optional dependency: Dask's extra
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError('distributed Mondrian needs Dask: pip install "kgen[distributed]"') from None
    if scheduler is None:
        processes = parallel.capped_jobs(workers)[0]
        cluster = LocalCluster(n_workers=processes, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
        return Client(cluster, set_as_default=False), cluster
    return parallel.connect_scheduler(scheduler, connect_timeout), None


def _no_workers() -> ClusterError:
    return ClusterError("the Dask cluster lost all its workers during the run and had none for "
                        f"{parallel.default_workers_timeout():g} s; start workers and run again")


def run_distributed(source: str | Source, spec: Spec, numeric: Sequence[str], folder: str, workers: int,
                    partitioning: str = "multidim", sample: float = 0.001, seed: int = 0,
                    scheduler: str | None = None, client=None, separator: str | None = None,
                    connect_timeout: float = CONNECT_TIMEOUT) -> Run:
    """Partition a sample into fragment conditions, run one task per fragment on Dask, collect metrics.

    `client`: an open Dask client to reuse (tests, experiments); else one is opened (see `open_client`) and
    closed at the end. Parts are written into `folder` (which must exist)."""
    started = time.perf_counter()
    table = Source.of(source)
    qis = [q.name for q in spec.qis]
    frame = table.sample(sample, minimum=workers, seed=seed, columns=qis, numeric=numeric)
    conditions = fragment_conditions(frame, spec, workers, partitioning)
    planned = time.perf_counter()
    own = client is None
    cluster = None
    if own:
        client, cluster = open_client(workers, scheduler, connect_timeout)
    opened = time.perf_counter()
    muted = parallel.DaskLogsMuted()  # failures are reported as one ClusterError, not distributed's logs
    try:
        futures = [client.submit(run_fragment, i, source, list(numeric), c, spec, folder, separator,
                                 pure=False, key=f"mondrian-fragment-{i}-{os.getpid()}-{time.time_ns()}")
                   for i, c in enumerate(conditions)]
        try:
            tasks = parallel.gather_watched(client, futures, parallel.default_workers_timeout(), _no_workers,
                                            lambda: ClusterError("the Dask cluster was lost during the run"))
        except (OSError, TimeoutError) as error:
            raise ClusterError(f"the Dask cluster was lost during the run: {error}") from None
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the run ends; closing the client must not print tracebacks
        parallel.silence_dask()
        raise
    finally:
        if own:
            parallel.close_dask(client, cluster)
        muted.remove()
    done = time.perf_counter()
    return Run(conditions, list(tasks), len(frame), {
        "plan": planned - started, "cluster_start": opened - planned, "tasks": done - opened,
        "total": done - started, "total_without_cluster_start": done - started - (opened - planned)})


def run_serial(source: str | Source, spec: Spec, numeric: Sequence[str], folder: str | None, fragments: int,
               partitioning: str = "multidim", sample: float = 0.001, seed: int = 0) -> Run:
    """The same fragments and tasks, one after another in this process: identical releases and metrics to
    `run_distributed` (the experiments use it for information loss; per-task times predict a cluster)."""
    started = time.perf_counter()
    table = Source.of(source)
    frame = table.sample(sample, minimum=fragments, seed=seed, columns=[q.name for q in spec.qis],
                         numeric=numeric)
    conditions = fragment_conditions(frame, spec, fragments, partitioning)
    planned = time.perf_counter()
    tasks = [run_fragment(i, source, list(numeric), c, spec, folder) for i, c in enumerate(conditions)]
    done = time.perf_counter()
    return Run(conditions, tasks, len(frame), {"plan": planned - started, "tasks": done - planned,
                                               "total": done - started})
