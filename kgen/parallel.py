"""Parallel node evaluation through joblib: local processes (loky), threads, or a Dask cluster.

`ParallelEvaluator` wraps a fitness `NodeEvaluator` behind the search's `Evaluator` protocol
(`evaluate`, `evaluate_many` in input order). Evaluation is a pure function of the node and the table, so
results are identical to the serial evaluator's on every backend; all randomness stays in the searches,
which run in the parent process.

How the work is shipped:
- the table reaches each worker once and stays in a worker-side cache keyed by a token: loky workers load
  it from a file written once with `joblib.dump` (memory-mapped, `mmap_mode="r"`, so the processes share
  the pages); on Dask a worker plugin installs it once in every worker, including workers that join later
  (not `scatter(broadcast=True)`: the scheduler's Active Memory Manager drops the extra replicas within
  seconds, and tasks depending on the scattered data then ship it again); threads share the parent's
  table (each with its own evaluator: the evaluators' caches are not thread-safe);
- a call's new nodes go out in a few chunks per worker (or `batch_size` nodes per task), so one task
  amortizes the round trip over many nodes; on loky and threading the parent is one of the `jobs`: it
  evaluates its share of the chunks while `jobs - 1` workers evaluate the rest;
- nodes evaluated before are answered from a local cache and never sent again; calls with fewer than
  `min_parallel` new nodes are evaluated in the parent (one node cannot be shared out, and shipping it
  only adds a round trip).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import joblib
from joblib.externals.loky import get_reusable_executor

from fitness.evaluator import Evaluation, NodeEvaluator
from kgen import config
from lattice.errors import InputError
from lattice.node import Node

BACKENDS = ("loky", "threading", "dask")
LOKY_IDLE_TIMEOUT = 300  # seconds before joblib's idle loky workers exit (joblib's own default)
TASKS_PER_WORKER = 2  # a little slack for uneven node costs without multiplying round trips
DISTRIBUTED_EXTRA = 'pip install "kgen[distributed]"'
CONNECT_TIMEOUT = config.CONNECT_TIMEOUT  # seconds to reach a Dask scheduler and hear its answer
WORKERS_TIMEOUT = 30.0  # seconds to wait for a reached scheduler to have a worker
SCHEMES = ("tcp", "tls", "ucx", "ws", "wss", "inproc")
_HOST = re.compile(r"[A-Za-z0-9._\-]+|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+")


class ClusterError(InputError):
    """The Dask scheduler could not be reached, did not answer, had no workers, or was lost (exit 6)."""

    exit_code = 6


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity and its cgroup's CPU quota (cpu.max, or v1's
    cfs_quota_us), as joblib's (loky's) `cpu_count` computes them; at least 1."""
    return max(1, int(joblib.cpu_count()))


def capped_jobs(jobs: int) -> tuple[int, str | None]:
    """`jobs` limited to the usable cores (-1: all of them), and the warning when it was lowered."""
    cores = usable_cores()
    if jobs == -1:
        return cores, None
    if jobs > cores:
        return cores, (f"--jobs {jobs} is more than the {cores} cores this process may use (CPU affinity and "
                       f"cgroup quota); using {cores}")
    return jobs, None


def check_address(address: object) -> str:
    """A Dask scheduler address as `[scheme://]host:port`; InputError (exit 2) for a malformed one."""
    if not isinstance(address, str) or not address.strip():
        raise InputError(f"the scheduler address must be text like tcp://host:8786, got {address!r}")
    scheme, sep, location = address.strip().partition("://")
    if not sep:
        scheme, location = "tcp", address.strip()
    if scheme not in SCHEMES:
        raise InputError(f"the scheduler address {address!r} has an unknown protocol {scheme!r}; use one of: "
                         f"{', '.join(s + '://' for s in SCHEMES)}")
    if scheme == "inproc":
        return address
    host, colon, port = location.rpartition(":")
    if not colon or not host or not _HOST.fullmatch(host) or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InputError(f"the scheduler address {address!r} is not of the form tcp://host:port (a host name or "
                         "IP address and a port from 1 to 65535)")
    return address


def probe_scheduler(address: str, timeout: float) -> None:
    """Connect to the scheduler and ask for its identity within `timeout` seconds; ClusterError if it cannot be
    reached or does not answer (a `distributed.Client` can wait forever on a socket that accepts and stays
    silent)."""
    from distributed.comm import connect

    async def identity() -> object:
        comm = await connect(address, timeout=0.9 * timeout)  # its own reason (refused ...) before ours
        try:
            await comm.write({"op": "identity"})
            return await comm.read()
        finally:
            comm.abort()

    try:  # in a thread of its own: asyncio.run cannot run inside a caller's event loop (e.g. Jupyter)
        with ThreadPoolExecutor(1, thread_name_prefix="kgen-probe") as probe:
            answer = probe.submit(asyncio.run, asyncio.wait_for(identity(), timeout)).result()
    except (OSError, TimeoutError, asyncio.TimeoutError) as error:
        reason = str(error).strip() or "no answer"
        raise ClusterError(f"cannot connect to the Dask scheduler at {address} within {timeout:g} s ({reason}); "
                           "check the address and that the scheduler runs, or raise --connect-timeout") from None
    except Exception as error:  # noqa: BLE001 - anything distributed raises for a bad peer
        raise ClusterError(f"the Dask scheduler at {address} did not answer as a scheduler: "
                           f"{type(error).__name__}: {error}"[:300]) from None
    if not isinstance(answer, dict) or answer.get("type") != "Scheduler":
        raise ClusterError(f"{address} answered, but not as a Dask scheduler")


def validate_options(jobs: int, backend: str, scheduler: str | None = None, batch_size: int | None = None,
                     connect_timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise an InputError for parallel options that cannot work."""
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or (jobs < 1 and jobs != -1):
        raise InputError(f"jobs must be a whole number >= 1 (or -1 for every core), got {jobs!r}")
    if scheduler is not None and backend != "dask":
        raise InputError(f"a scheduler address ({scheduler}) is only used with the dask backend "
                         "(--backend dask)")
    if scheduler is not None:
        check_address(scheduler)
    if (isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float))
            or not math.isfinite(connect_timeout) or connect_timeout <= 0):
        raise InputError(f"the connect timeout must be a finite number of seconds > 0, got {connect_timeout!r}")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise InputError(f"batch size must be a whole number >= 1, got {batch_size!r}")
    if backend == "dask":
        try:
            import dask  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise InputError(f"the dask backend needs Dask's optional extra: {DISTRIBUTED_EXTRA}") from None


def wants_parallel(jobs: int, backend: str) -> bool:
    """Whether these options ask for a ParallelEvaluator (else the serial evaluator is used as is)."""
    return backend == "dask" or jobs != 1


def resolve_jobs(jobs: int) -> int:
    """-1 means every usable core; other values are taken as given (`evaluator_for` caps them)."""
    return usable_cores() if jobs == -1 else jobs


def stop_local_workers() -> None:
    """Kill joblib's reusable loky workers now (after Ctrl-C or SIGTERM: they would otherwise outlive us
    until their idle timeout, holding a copy of the table)."""
    try:
        get_reusable_executor().shutdown(wait=False, kill_workers=True)
    except Exception:  # noqa: BLE001 - best effort while stopping
        pass


def fresh_copy(evaluator: NodeEvaluator) -> NodeEvaluator:
    """The same evaluator without its caches: what is shipped to workers (they build their own)."""
    return NodeEvaluator(evaluator.table, evaluator.models, evaluator.suppression_limit, evaluator.objective,
                         evaluator.kernel)


@dataclass(frozen=True)
class SharedTable:
    """A handle on an evaluator dumped to `path` (a few bytes per task instead of the table)."""

    token: str
    path: str

    def load(self) -> NodeEvaluator:
        return joblib.load(self.path, mmap_mode="r")


_WORKER_CACHE: OrderedDict[str, NodeEvaluator] = OrderedDict()
_WORKER_CACHE_SIZE = 2  # tokens are unique per ParallelEvaluator: keep the current one and its predecessor
_WORKER_LOCK = threading.Lock()
_LOAD_LOCK = threading.Lock()
_WORKER_LOADS: Counter[str] = Counter()  # token -> times this process loaded it (diagnostics: should be 1)


@dataclass(frozen=True)
class InstalledTable:
    """A handle on an evaluator that a `TablePlugin` installed in every Dask worker."""

    token: str

    def load(self) -> NodeEvaluator:
        raise RuntimeError("kgen: this Dask worker has no copy of the table (its plugin did not run)")


def install_table(token: str, evaluator: NodeEvaluator) -> None:
    """Put an evaluator in this worker process's cache (counted in the loads)."""
    with _WORKER_LOCK:
        _WORKER_CACHE[token] = evaluator
        _WORKER_LOADS[token] += 1
        while len(_WORKER_CACHE) > _WORKER_CACHE_SIZE:
            _WORKER_CACHE.popitem(last=False)


def _worker_evaluator(shared: SharedTable | InstalledTable) -> NodeEvaluator:
    """The evaluator of `shared` in this worker process, loaded on first use only."""
    evaluator = _WORKER_CACHE.get(shared.token)
    if evaluator is None:
        with _LOAD_LOCK:  # one thread loads, the others wait for it
            evaluator = _WORKER_CACHE.get(shared.token)
            if evaluator is None:
                evaluator = shared.load()
                install_table(shared.token, evaluator)
    return evaluator


def _loads_of(token: str) -> int:
    """Run on each Dask worker: how often it loaded the table of `token`."""
    return _WORKER_LOADS[token]


def forget_table(token: str) -> None:
    """Free this worker's copy of the table of `token`."""
    with _WORKER_LOCK:
        _WORKER_CACHE.pop(token, None)


def evaluate_shared(shared: SharedTable | InstalledTable, nodes: Sequence[Node]) -> list[Evaluation]:
    """Worker task (loky, Dask): evaluate a chunk of nodes on the worker's cached copy of the table."""
    return _worker_evaluator(shared).evaluate_many(nodes)


def loads_here(shared: SharedTable, pause: float) -> tuple[int, int]:
    """Worker probe (loky): this process's id and how often it loaded `shared` (0 if never)."""
    time.sleep(pause)  # long enough that every worker takes some of the probes
    return os.getpid(), _WORKER_LOADS[shared.token]


class ThreadEvaluators(threading.local):
    """One evaluator per thread over the shared table (the evaluator's caches are not thread-safe)."""

    def __init__(self, evaluator: NodeEvaluator) -> None:
        self.evaluator = fresh_copy(evaluator)  # runs once in each thread that touches this object


def evaluate_threaded(evaluators: ThreadEvaluators, nodes: Sequence[Node]) -> list[Evaluation]:
    """Task (threads): evaluate a chunk on this thread's evaluator."""
    return evaluators.evaluator.evaluate_many(nodes)


def chunked(nodes: Sequence[Node], workers: int, batch_size: int | None) -> list[list[Node]]:
    """Consecutive chunks of `batch_size` nodes, or by default about TASKS_PER_WORKER chunks per worker."""
    if not nodes:
        return []
    size = batch_size or math.ceil(len(nodes) / (max(workers, 1) * TASKS_PER_WORKER))
    return [list(nodes[i : i + size]) for i in range(0, len(nodes), size)]


class ParallelEvaluator:
    """Evaluates nodes of a NodeEvaluator's table with `jobs` parallel evaluators.

    `backend`: "loky" (the parent and `jobs - 1` processes of joblib's loky executor), "threading" (the
    parent and `jobs - 1` threads, each with its own evaluator over the shared table), or "dask" (joblib's
    dask backend on a `distributed.Client` connected to `scheduler`, or, without one, to a local cluster of
    `jobs` worker processes on 127.0.0.1; the parent only submits). With a scheduler, the cluster's worker
    threads set the parallelism and `jobs` is not used. `batch_size`: nodes per task (default: about two
    tasks per worker per call). Calls with fewer than `min_parallel` new nodes run in the parent.
    Results equal the wrapped evaluator's, in input order. Close it (or use it as a context manager) to stop
    the cluster, disconnect the client and delete the shared file.
    """

    def __init__(self, evaluator: NodeEvaluator, jobs: int = 2, backend: str = "loky",
                 scheduler: str | None = None, batch_size: int | None = None, min_parallel: int = 2,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        validate_options(jobs, backend, scheduler, batch_size, connect_timeout)
        self.connect_timeout = float(connect_timeout)
        self.evaluator = evaluator
        self.backend = backend
        self.scheduler = scheduler
        self.batch_size = batch_size
        self.min_parallel = max(1, min_parallel)
        self.jobs = resolve_jobs(jobs)
        self.workers = self.jobs
        self.stats = {"local_nodes": 0, "remote_nodes": 0, "tasks": 0, "calls": 0}
        self._cache: dict[Node, Evaluation] = {}
        self._folder: str | None = None
        self._cluster: Any = None
        self._client: Any = None
        self._parallel: joblib.Parallel | None = None
        self._threads: ThreadPoolExecutor | None = None
        self._task: Any = None
        self._payload: Any = None
        self._plugin: str | None = None
        self._closed = False
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------------

    def _start(self) -> None:
        # Local backends: the parent evaluates one share of each call itself while jobs - 1 workers evaluate
        # the rest (it would otherwise sit idle waiting, and every task shipped costs a round trip).
        if self.backend == "threading":
            self._payload = ThreadEvaluators(self.evaluator)
            self._task = evaluate_threaded
            self._threads = ThreadPoolExecutor(max_workers=max(self.jobs - 1, 1), thread_name_prefix="kgen")
        elif self.backend == "loky":
            self._folder = tempfile.mkdtemp(prefix="kgen-parallel-")
            # also removed if the evaluator is dropped unclosed, or at interpreter exit
            self._remove_folder = weakref.finalize(self, shutil.rmtree, self._folder, True)
            path = os.path.join(self._folder, "evaluator.joblib")
            joblib.dump(fresh_copy(self.evaluator), path)
            self._payload = SharedTable(uuid.uuid4().hex, path)
            self._task = evaluate_shared
        else:
            self._start_dask()
            self._parallel.__enter__()  # keep the backend (client, collector) across calls

    def _start_dask(self) -> None:
        from distributed import Client, LocalCluster

        if self.scheduler is None:
            self._cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                         host="127.0.0.1", dashboard_address=":0", silence_logs=logging.ERROR)
            self._client = Client(self._cluster, set_as_default=False)
        else:
            probe_scheduler(self.scheduler, self.connect_timeout)
            try:
                self._client = Client(self.scheduler, set_as_default=False, timeout=f"{self.connect_timeout}s")
            except (OSError, TimeoutError) as error:
                raise ClusterError(f"cannot connect to the Dask scheduler at {self.scheduler}: {error}") from None
            try:
                self._client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
            except (OSError, TimeoutError):
                raise ClusterError(f"the Dask scheduler at {self.scheduler} has no workers (waited "
                                   f"{WORKERS_TIMEOUT:g} s); start some with: dask worker {self.scheduler}") from None
        self.workers = max(1, sum(self._client.nthreads().values()))
        self._payload = InstalledTable(uuid.uuid4().hex)
        self._plugin = f"kgen-table-{self._payload.token}"
        from kgen.dask_plugin import TablePlugin

        plugin = TablePlugin(self._payload.token, fresh_copy(self.evaluator))
        self._client.register_plugin(plugin, name=self._plugin)
        self._task = evaluate_shared
        with joblib.parallel_config(backend="dask", client=self._client):
            self._parallel = joblib.Parallel(n_jobs=-1, batch_size=1, pre_dispatch="all")

    def close(self) -> None:
        """Release the pool, the Dask client and cluster, and the shared file. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
            self._threads = None
        # loky: joblib's reusable executor is shared by the process; its idle workers exit after
        # LOKY_IDLE_TIMEOUT seconds, their copy of the table with them (the file is deleted below).
        if self._parallel is not None:
            try:
                self._parallel.__exit__(None, None, None)
            finally:
                self._parallel = None
        if self._client is not None:
            try:
                if self._plugin is not None:  # long-lived workers and scheduler: free the table
                    self._client.unregister_worker_plugin(self._plugin)
            finally:
                self._client.close()
                self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        if self._folder is not None:
            self._remove_folder()
            self._folder = None

    def __enter__(self) -> ParallelEvaluator:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close()
        if kind is not None and issubclass(kind, KeyboardInterrupt) and self.backend == "loky":
            stop_local_workers()  # Ctrl-C / SIGTERM: the reusable workers must not outlive the run

    # -- the Evaluator protocol --------------------------------------------------------------------------

    def evaluate(self, node: Sequence[int]) -> Evaluation:
        return self.evaluate_many([node])[0]

    def known(self, node: Sequence[int]) -> bool:
        """Whether the node is in the local cache (evaluating it again costs nothing)."""
        return tuple(int(v) for v in node) in self._cache

    def cached(self, node: Sequence[int]) -> Evaluation | None:
        """The node's evaluation if it was evaluated before, else None (nothing is computed)."""
        return self._cache.get(tuple(int(v) for v in node))

    def evaluate_many(self, nodes: Sequence[Sequence[int]]) -> list[Evaluation]:
        """Evaluations of `nodes` in input order; each distinct new node is evaluated once."""
        keys = [tuple(int(v) for v in n) for n in nodes]
        new = list(dict.fromkeys(n for n in keys if n not in self._cache))
        if new:
            self.stats["calls"] += 1
            if len(new) < self.min_parallel:
                results = self.evaluator.evaluate_many(new)
                self.stats["local_nodes"] += len(new)
            else:
                results = self._remote(new)
            for node, evaluation in zip(new, results, strict=True):
                self._cache[node] = evaluation
        return [self._cache[n] for n in keys]

    def _remote(self, nodes: list[Node]) -> list[Evaluation]:
        if self._closed:
            raise RuntimeError("ParallelEvaluator used after close()")
        chunks = chunked(nodes, self.workers, self.batch_size)
        if self.backend == "dask":
            try:
                outputs = self._parallel(joblib.delayed(self._task)(self._payload, chunk) for chunk in chunks)
            except (OSError, TimeoutError) as error:  # CommClosedError is an OSError
                raise ClusterError(f"lost the Dask cluster{' at ' + self.scheduler if self.scheduler else ''}: "
                                   f"{type(error).__name__}: {error}"[:300]) from None
            self.stats["tasks"] += len(chunks)
            self.stats["remote_nodes"] += len(nodes)
            return [e for output in outputs for e in output]
        # Chunk i goes to the parent when i % jobs == 0, to the workers otherwise: submit theirs first, then
        # evaluate ours while they work, then collect in chunk order.
        pool = self._local_pool()
        futures = {i: pool.submit(self._task, self._payload, chunk)
                   for i, chunk in enumerate(chunks) if i % self.jobs and pool is not None}
        results: list[list[Evaluation]] = []
        for i, chunk in enumerate(chunks):
            if i in futures:
                continue
            results.append(self.evaluator.evaluate_many(chunk))
            self.stats["local_nodes"] += len(chunk)
        mine = iter(results)
        outputs = [futures[i].result() if i in futures else next(mine) for i in range(len(chunks))]
        self.stats["tasks"] += len(futures)
        self.stats["remote_nodes"] += sum(len(chunks[i]) for i in futures)
        return [e for output in outputs for e in output]

    def _local_pool(self) -> Any:
        """The executor of the local workers (None when jobs is 1: the parent does everything)."""
        if self.jobs == 1:
            return None
        if self.backend == "threading":
            return self._threads
        # Fetched per call: joblib's reusable executor may have been resized or restarted by another user.
        return get_reusable_executor(max_workers=self.jobs - 1, timeout=LOKY_IDLE_TIMEOUT)

    def copies_per_worker(self) -> dict[object, int]:
        """Diagnostics: per worker, how many copies of the table it received (1 once it has worked).

        loky: per worker process that answered a probe, its loads of this evaluator's file; dask: per worker,
        the installs of its plugin; threading: the one shared process.
        """
        if self._closed:
            raise RuntimeError("ParallelEvaluator used after close()")
        if self.backend == "threading" or self.jobs == 1 and self.backend == "loky":
            return {os.getpid(): 1}
        if self.backend == "dask":
            return dict(self._client.run(_loads_of, self._payload.token))
        pool = self._local_pool()
        probes = [pool.submit(loads_here, self._payload, 0.05) for _ in range(4 * self.jobs)]
        return dict(probe.result() for probe in probes)

    # -- the rest of the wrapped evaluator's interface, evaluated in the parent ---------------------------

    @property
    def table(self):
        return self.evaluator.table

    @property
    def max_suppressed(self) -> int:
        return self.evaluator.max_suppressed

    @property
    def monotone_feasibility(self) -> bool:
        return self.evaluator.monotone_feasibility

    def feasible(self, node: Sequence[int]) -> bool:
        return self.evaluate(node).feasible

    def distinct_counts(self, node: Sequence[int]) -> tuple[int, ...]:
        return self.evaluator.distinct_counts(node)

    def describe(self) -> dict:
        """The settings, for reports."""
        return {"backend": self.backend, "jobs": self.jobs, "workers": self.workers, "scheduler": self.scheduler,
                "batch_size": self.batch_size, "min_parallel": self.min_parallel}


@contextmanager
def evaluator_for(evaluator: NodeEvaluator, jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
                  batch_size: int | None = None, min_parallel: int = 2, connect_timeout: float = CONNECT_TIMEOUT,
                  ) -> Iterator[NodeEvaluator | ParallelEvaluator]:
    """The evaluator to search with: `evaluator` itself when serial (jobs 1 on a local backend), else a
    ParallelEvaluator around it, closed when the block ends. `jobs` is capped at the usable cores
    (`capped_jobs`; the CLI and the report say so)."""
    validate_options(jobs, backend, scheduler, batch_size, connect_timeout)
    jobs = capped_jobs(jobs)[0]
    if not wants_parallel(jobs, backend):
        yield evaluator
        return
    with ParallelEvaluator(evaluator, jobs, backend, scheduler, batch_size, min_parallel,
                           connect_timeout) as parallel:
        yield parallel
