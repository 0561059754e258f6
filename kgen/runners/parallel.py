"""Parallel node evaluation: a `ParallelRunner` computes the evaluator's new nodes on local processes (loky),
threads, or a Dask cluster.

The one `NodeEvaluator` stays the evaluator of the search and keeps the only node cache; a runner attached
to it (`evaluator.runner`, see `evaluator_for`) only decides *where* a batch of new nodes is computed.
Evaluation is a pure function of the node and the table, so results are identical to serial evaluation on
every backend; all randomness stays in the searches, which run in the parent process.

How the work is shipped:
- the table reaches each worker once: loky workers load it from a file written once with `joblib.dump`
  (memory-mapped, `mmap_mode="r"`, so the processes share the pages) and keep it in one slot per process
  (`_LOKY_TABLE`); on Dask a worker plugin (kgen/runners/dask_plugin.py) installs it once in every worker, including
  workers that join later, and holds it itself (not `scatter(broadcast=True)`: the scheduler's Active
  Memory Manager drops the extra replicas within seconds, and tasks depending on the scattered data then
  ship it again); threads share the parent's table. Each thread that computes gets its own evaluator over
  the shared table (`WorkerTable`: an evaluator's roll-up state is not thread-safe);
- a batch goes out in a few chunks per worker (or `batch_size` nodes per task), so one task amortizes the
  round trip over many nodes; on loky and threading the parent is one of the `jobs`: it computes its share
  of the chunks while `jobs - 1` workers compute the rest; batches of fewer than `min_parallel` nodes are
  computed in the parent (one node cannot be shared out, and shipping it only adds a round trip);
- on Dask every chunk is a task submitted to the cluster (the futures API), whatever its number of worker
  threads, and the parent watches the batch: a lost scheduler, a cluster without workers for
  `workers_timeout` seconds, or workers dying again and again on a task end the run with one `ClusterError`
  (exit 6). Closing a runner never raises: a cleanup error never hides the error that ended the run.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import joblib
from joblib.externals.loky import get_reusable_executor

from fitness.evaluator import Evaluation, NodeEvaluator
from kgen.runners.settings import BACKENDS, CONNECT_TIMEOUT
from kgen.runners.worker import WorkerTable
from kgen.status import ClusterError
from lattice.errors import InputError
from lattice.node import Node

LOKY_IDLE_TIMEOUT = 300  # seconds before joblib's idle loky workers exit (joblib's own default)
TASKS_PER_WORKER = 2  # a little slack for uneven node costs without multiplying round trips
DISTRIBUTED_EXTRA = 'pip install "kgen[distributed]"'
WORKERS_TIMEOUT = 30.0  # default seconds a Dask cluster may be without workers (KGEN_WORKERS_TIMEOUT)
SCHEMES = ("tcp", "tls", "ucx", "ws", "wss", "inproc")
_HOST = re.compile(r"[A-Za-z0-9._\-]+|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+")


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
    # optional dependency: Dask (extra `distributed`)
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
            # optional dependency: Dask (extra `distributed`)
            import dask  # noqa: F401

            # optional dependency: Dask (extra `distributed`)
            import distributed  # noqa: F401
        except ImportError:
            raise InputError(f"the dask backend needs Dask's optional extra: {DISTRIBUTED_EXTRA}") from None


def wants_parallel(jobs: int, backend: str) -> bool:
    """Whether these options ask for a ParallelRunner (else the evaluator computes every batch itself)."""
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
    close_local_clusters()


def silence_dask() -> None:
    """From now on in this process, no log of `distributed`, `tornado` or `asyncio`: a run stopped by a signal
    is ending, and the futures its client cancels would each log a traceback as they go."""
    for name in ("asyncio", "distributed", "tornado"):
        logging.getLogger(name).disabled = True


def close_local_clusters() -> None:
    """Close, quietly, every Dask cluster this process started and a signal interrupted (even one still
    starting): left open, `distributed`'s exit hook closes it and prints its tracebacks."""
    spec = sys.modules.get("distributed.deploy.spec")  # loaded only if a cluster was ever started
    if spec is None:
        return
    silence_dask()
    for cluster in list(spec.SpecCluster._instances):
        try:
            cluster.close(timeout=CLOSE_TIMEOUT)
        except BaseException:  # noqa: BLE001 - best effort while stopping
            pass
        cluster.shutdown_on_close = False  # nothing left for the exit hook


WORKERS_TIMEOUT_VARIABLE = "KGEN_WORKERS_TIMEOUT"
POLL_SECONDS = 1.0  # how often a Dask batch that has not finished checks that the cluster still has workers
CLOSE_TIMEOUT = 10.0  # seconds each step of closing a Dask client or local cluster may take
_log = logging.getLogger(__name__)


def default_workers_timeout() -> float:
    """Seconds a Dask cluster may be without workers (at start, or after losing all of them mid-run) before
    kgen gives up: the environment variable KGEN_WORKERS_TIMEOUT, else WORKERS_TIMEOUT (30)."""
    text = os.environ.get(WORKERS_TIMEOUT_VARIABLE)
    if text is None or not text.strip():
        return WORKERS_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{WORKERS_TIMEOUT_VARIABLE} must be a finite number of seconds > 0, got {text[:40]!r}")
    return value


def connect_scheduler(address: str, timeout: float) -> Any:
    """A client of a running Dask scheduler, for every runner that takes `--scheduler`: the address checked,
    the scheduler probed within `timeout` seconds, then connected, with at least one worker within 30 s;
    every failure one ClusterError (exit 6) or InputError (exit 2, a malformed address)."""
    # optional dependency: Dask (extra `distributed`)
    from distributed import Client

    check_address(address)
    probe_scheduler(address, timeout)
    try:
        client = Client(address, set_as_default=False, timeout=f"{timeout}s")
    except (OSError, TimeoutError) as error:
        raise ClusterError(f"cannot connect to the Dask scheduler at {address}: {error}") from None
    try:
        client.wait_for_workers(1, timeout=30)
    except (OSError, TimeoutError):
        client.close()
        raise ClusterError(f"the Dask scheduler at {address} has no workers (waited 30 s)") from None
    return client


def close_dask(client: Any, cluster: Any) -> None:
    """Close a Dask client and (when we started it) its local cluster, each step bounded by CLOSE_TIMEOUT and
    never raising: after Ctrl-C or SIGTERM a half-closed cluster would otherwise print tracebacks from
    `distributed`'s exit hook. Every runner that opens a cluster (evaluation, partitioned, Mondrian) closes
    it here."""
    for step in (lambda: client.close(timeout=CLOSE_TIMEOUT),
                 lambda: cluster is not None and cluster.close(timeout=CLOSE_TIMEOUT)):
        try:
            step()
        except BaseException:  # noqa: BLE001 - cleanup must not hide the run's own outcome (or a second signal)
            pass


class DaskLogsMuted:
    """While installed, the log records of `distributed` in this process (its client's, and a local cluster's
    scheduler's) are dropped: a lost scheduler makes the client log tracebacks from its own threads (the
    reconnection it tries, cancelled when kgen closes it), and the runner reports every cluster failure
    itself, as one ClusterError. Installed as a filter on the handlers that `distributed` configured."""

    def __init__(self) -> None:
        names = [name for name in logging.Logger.manager.loggerDict if name.split(".")[0] in ("distributed",
                                                                                              "tornado")]
        self.handlers = {handler for name in names for handler in logging.getLogger(name).handlers}
        for handler in self.handlers:
            handler.addFilter(self.keep)

    @staticmethod
    def keep(record: logging.LogRecord) -> bool:
        return record.name.split(".")[0] not in ("distributed", "tornado")

    def remove(self) -> None:
        for handler in self.handlers:
            handler.removeFilter(self.keep)
        self.handlers = set()




def compute_here(table: WorkerTable, nodes: Sequence[Node]) -> list[Evaluation]:
    """Task (threads): compute a chunk on this thread's evaluator."""
    return table.evaluator().compute_many(nodes)


@dataclass(frozen=True)
class SharedTable:
    """A handle on an evaluator dumped to `path` (a few bytes per task instead of the table)."""

    token: str
    path: str

    def load(self) -> NodeEvaluator:
        return joblib.load(self.path, mmap_mode="r")


# The one piece of module state: in a loky worker process, the table of the runner that used it last (a
# worker serves one run at a time; a new runner's first task there replaces it). Unused in other processes.
_LOKY_TABLE: WorkerTable | None = None


def compute_shared(shared: SharedTable, nodes: Sequence[Node]) -> list[Evaluation]:
    """Task (loky): compute a chunk on this worker process's copy of the table, loaded on its first task."""
    global _LOKY_TABLE
    table = _LOKY_TABLE
    if table is None or table.token != shared.token:
        table = _LOKY_TABLE = WorkerTable(shared.load(), shared.token)
    return table.evaluator().compute_many(nodes)


def compute_installed(plugin: str, nodes: Sequence[Node]) -> list[Evaluation]:
    """Task (Dask): compute a chunk on the table that the worker plugin named `plugin` installed here."""
    # optional dependency: Dask (extra `distributed`)
    from distributed import get_worker

    installed = get_worker().plugins.get(plugin)
    table = getattr(installed, "table", None)
    if table is None:  # the scheduler installs the plugin before a worker gets any task: never expected
        raise RuntimeError(f"kgen: this Dask worker has no copy of the table (plugin {plugin} did not run)")
    return table.evaluator().compute_many(nodes)


def chunked(nodes: Sequence[Node], workers: int, batch_size: int | None) -> list[list[Node]]:
    """Consecutive chunks of `batch_size` nodes, or by default about TASKS_PER_WORKER chunks per worker."""
    if not nodes:
        return []
    size = batch_size or math.ceil(len(nodes) / (max(workers, 1) * TASKS_PER_WORKER))
    return [list(nodes[i : i + size]) for i in range(0, len(nodes), size)]


def _reason(error: BaseException) -> str:
    """An exception as one short line: its type and the first line of its text."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class ParallelRunner:
    """Computes batches of new nodes for one `NodeEvaluator` with `jobs` parallel evaluators (a `Runner`).

    Parameters
    ----------
    evaluator
        The evaluator whose table is shipped; the runner computes batches for this evaluator only.
    jobs
        Parallel evaluators. loky: the parent and `jobs - 1` processes of joblib's reusable loky executor;
        threading: the parent and `jobs - 1` threads; dask without `scheduler`: a local cluster of `jobs`
        single-threaded worker processes on 127.0.0.1 (with a scheduler, its worker threads set the
        parallelism and `jobs` is not used).
    backend
        "loky", "threading" or "dask".
    scheduler
        A running Dask scheduler's address (dask only).
    batch_size
        Nodes per task (default: about two tasks per worker per batch).
    min_parallel
        Batches of fewer new nodes are computed in the parent.
    connect_timeout
        Seconds to reach the scheduler.
    workers_timeout
        Seconds a Dask cluster may be without workers, at start or mid-run (default: `default_workers_timeout()`).

    Attributes
    ----------
    stats : dict
        calls, tasks, remote_nodes, local_nodes so far.

    Raises
    ------
    InputError
        For options that cannot work (exit 2).
    ClusterError
        When the scheduler cannot be reached, has no workers, or is lost (exit 6).

    Notes
    -----
    Close it (or use it as a context manager) to stop the cluster, disconnect the client and delete the
    shared file; closing never raises.
    """

    def __init__(self, evaluator: NodeEvaluator, jobs: int = 2, backend: str = "loky",
                 scheduler: str | None = None, batch_size: int | None = None, min_parallel: int = 2,
                 connect_timeout: float = CONNECT_TIMEOUT, workers_timeout: float | None = None) -> None:
        validate_options(jobs, backend, scheduler, batch_size, connect_timeout)
        self.connect_timeout = float(connect_timeout)
        if workers_timeout is None:
            workers_timeout = default_workers_timeout() if backend == "dask" else WORKERS_TIMEOUT
        self.workers_timeout = float(workers_timeout)
        self.evaluator = evaluator
        self.backend = backend
        self.scheduler = scheduler
        self.batch_size = batch_size
        self.min_parallel = max(1, min_parallel)
        self.jobs = resolve_jobs(jobs)
        self.workers = self.jobs
        self.stats = {"local_nodes": 0, "remote_nodes": 0, "tasks": 0, "calls": 0}
        self._folder: str | None = None
        self._cluster: Any = None
        self._client: Any = None
        self._threads: ThreadPoolExecutor | None = None
        self._payload: Any = None
        self._plugin: str | None = None
        self._muted: DaskLogsMuted | None = None
        self._closed = False
        try:
            self._start()
        except BaseException:
            self._close(quiet=True)
            raise

    # -- lifecycle ---------------------------------------------------------------------------------------

    def _start(self) -> None:
        if self.backend == "threading":
            self._payload = WorkerTable(self.evaluator)
            self._threads = ThreadPoolExecutor(max_workers=max(self.jobs - 1, 1), thread_name_prefix="kgen")
        elif self.backend == "loky":
            self._folder = tempfile.mkdtemp(prefix="kgen-parallel-")
            # also removed if the runner is dropped unclosed, or at interpreter exit
            self._remove_folder = weakref.finalize(self, shutil.rmtree, self._folder, True)
            path = os.path.join(self._folder, "evaluator.joblib")
            joblib.dump(self.evaluator.worker_template(), path)
            self._payload = SharedTable(uuid.uuid4().hex, path)
        else:
            self._start_dask()

    def _start_dask(self) -> None:
        # optional dependency: Dask (extra `distributed`)
        from distributed import Client, LocalCluster

        # optional dependency: Dask (extra `distributed`)
        from kgen.runners.dask_plugin import TablePlugin

        self._muted = DaskLogsMuted()
        if self.scheduler is None:
            self._cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                         host="127.0.0.1", dashboard_address=":0", silence_logs=logging.ERROR)
            self._client = Client(self._cluster, set_as_default=False)
        else:
            probe_scheduler(self.scheduler, self.connect_timeout)
            try:
                self._client = Client(self.scheduler, set_as_default=False, timeout=f"{self.connect_timeout}s")
            except (OSError, TimeoutError) as error:
                raise ClusterError(f"cannot connect to the Dask scheduler at {self.scheduler}: "
                                   f"{_reason(error)}"[:300]) from None
            try:
                self._client.wait_for_workers(1, timeout=self.workers_timeout)
            except (OSError, TimeoutError):
                raise ClusterError(f"the Dask scheduler at {self.scheduler} has no workers (waited "
                                   f"{self.workers_timeout:g} s); start some with: dask worker {self.scheduler}"
                                   ) from None
        self.workers = max(1, sum(self._client.nthreads().values()))
        self._plugin = f"kgen-table-{uuid.uuid4().hex}"
        try:
            self._client.register_plugin(TablePlugin(self.evaluator.worker_template()), name=self._plugin)
        except (OSError, CancelledError) as error:
            raise self._lost(error) from None
        except Exception as error:  # noqa: BLE001 - raised by a worker: its kgen cannot load our table
            raise ClusterError(f"the Dask workers{self._where()} could not install the table ({_reason(error)}); "
                               "do they run the same kgen version as this process?"[:400]) from None

    def close(self) -> None:
        """Release the thread pool, the Dask client and local cluster, and the shared file. Idempotent; never
        raises (a failing step is logged as a warning and the next step still runs)."""
        self._close(quiet=False)

    def _close(self, quiet: bool) -> None:
        if self._closed:
            return
        self._closed = True
        for step in (self._close_threads, self._unregister, self._close_client, self._close_cluster,
                     self._remove_file, self._unmute):
            try:
                step()
            except Exception as error:  # noqa: BLE001 - cleanup must not hide the run's own outcome
                _log.log(logging.DEBUG if quiet else logging.WARNING,
                         "kgen: warning: while closing the %s workers: %s", self.backend, _reason(error)[:200])

    def _close_threads(self) -> None:
        if self._threads is not None:
            threads, self._threads = self._threads, None
            threads.shutdown(wait=True, cancel_futures=True)
        # loky: joblib's reusable executor is shared by the process; its idle workers exit after
        # LOKY_IDLE_TIMEOUT seconds, their copy of the table with them (the file is deleted below).

    def _unregister(self) -> None:
        # long-lived workers and scheduler: free the table (nothing to do when the scheduler is gone)
        if self._client is not None and self._plugin is not None and self._client.status == "running":
            self._client.unregister_worker_plugin(self._plugin)

    def _close_client(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close(timeout=CLOSE_TIMEOUT)

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            cluster, self._cluster = self._cluster, None
            cluster.close(timeout=CLOSE_TIMEOUT)

    def _remove_file(self) -> None:
        if self._folder is not None:
            self._folder = None
            self._remove_folder()

    def _unmute(self) -> None:
        if self._muted is not None:
            self._muted, muted = None, self._muted
            muted.remove()

    def __enter__(self) -> ParallelRunner:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self._close(quiet=kind is not None)
        if kind is not None and issubclass(kind, KeyboardInterrupt) and self.backend == "loky":
            stop_local_workers()  # Ctrl-C / SIGTERM: the reusable workers must not outlive the run

    # -- the Runner protocol -----------------------------------------------------------------------------

    def evaluate_batch(self, evaluator: NodeEvaluator, nodes: Sequence[Node]) -> list[Evaluation]:
        """`evaluator.compute_many(nodes)`, computed by the workers (and the parent's share), in input order."""
        if self._closed:
            raise RuntimeError("ParallelRunner used after close()")
        if evaluator is not self.evaluator:
            raise ValueError("this ParallelRunner computes for the evaluator whose table it shipped, not another")
        nodes = list(nodes)
        self.stats["calls"] += 1
        if len(nodes) < self.min_parallel:
            self.stats["local_nodes"] += len(nodes)
            return evaluator.compute_many(nodes)
        chunks = chunked(nodes, self.workers, self.batch_size)
        outputs = self._on_dask(chunks) if self.backend == "dask" else self._on_local(evaluator, chunks)
        return [e for output in outputs for e in output]

    def _on_local(self, evaluator: NodeEvaluator, chunks: list[list[Node]]) -> list[list[Evaluation]]:
        # Chunk i goes to the parent when i % jobs == 0, to the workers otherwise: submit theirs first, then
        # compute ours while they work, then collect in chunk order.
        pool = self._local_pool()
        task = compute_here if self.backend == "threading" else compute_shared
        futures = {i: pool.submit(task, self._payload, chunk)
                   for i, chunk in enumerate(chunks) if i % self.jobs and pool is not None}
        mine = {i: evaluator.compute_many(chunk) for i, chunk in enumerate(chunks) if i not in futures}
        self.stats["local_nodes"] += sum(len(chunks[i]) for i in mine)
        self.stats["tasks"] += len(futures)
        self.stats["remote_nodes"] += sum(len(chunks[i]) for i in futures)
        return [futures[i].result() if i in futures else mine[i] for i in range(len(chunks))]

    def _local_pool(self) -> Any:
        """The executor of the local workers (None when jobs is 1: the parent does everything)."""
        if self.jobs == 1:
            return None
        if self.backend == "threading":
            return self._threads
        # Fetched per call: joblib's reusable executor may have been resized or restarted by another user.
        return get_reusable_executor(max_workers=self.jobs - 1, timeout=LOKY_IDLE_TIMEOUT)

    def _on_dask(self, chunks: list[list[Node]]) -> list[list[Evaluation]]:
        """Every chunk a task on the cluster (never in this process: it would need a copy of its own of the
        table's worker evaluator), watched until all are done."""
        # optional dependency: Dask (extra `distributed`)
        from distributed import KilledWorker

        client = self._client
        if client.status != "running":
            raise self._lost(None)
        try:
            futures = client.map(compute_installed, [self._plugin] * len(chunks), chunks, pure=False)
            outputs = self._collect(futures)
        except KilledWorker:  # the scheduler's allowed-failures: the task's workers died that many times
            raise ClusterError(f"Dask workers{self._where()} died again and again while evaluating one task of "
                               "nodes (KilledWorker); out of memory? each worker holds a copy of the table: give "
                               "them more memory or use fewer workers per machine") from None
        except (OSError, CancelledError, TimeoutError, asyncio.TimeoutError) as error:
            raise self._lost(error) from None
        self.stats["tasks"] += len(chunks)
        self.stats["remote_nodes"] += sum(len(chunk) for chunk in chunks)
        return outputs

    def _collect(self, futures: list[Any]) -> list[Any]:
        return gather_watched(self._client, futures, self.workers_timeout, self._no_workers,
                              lambda: self._lost(None))

    def _where(self) -> str:
        return f" at {self.scheduler}" if self.scheduler else " (local)"

    def _no_workers(self) -> ClusterError:
        head = f"lost all its workers during the search and had none for {self.workers_timeout:g} s"
        if self.scheduler:
            return ClusterError(f"the Dask cluster at {self.scheduler} {head}; start workers (dask worker "
                                f"{self.scheduler}) and run again")
        return ClusterError(f"the local Dask cluster {head} (killed for lack of memory?); run again with fewer "
                            "--jobs, or --backend loky")

    def _lost(self, error: BaseException | None) -> ClusterError:
        what = f"the Dask scheduler at {self.scheduler}" if self.scheduler else "the local Dask cluster"
        if error is None or isinstance(error, CancelledError):  # the client cancels its futures when it loses it
            why = " (the connection closed)"
        else:
            why = f" ({_reason(error)})"
        return ClusterError(f"lost {what} during the search{why}; check that it runs and run again"[:300])


def gather_watched(client: Any, futures: list[Any], workers_timeout: float,
                   no_workers: Callable[[], ClusterError], lost: Callable[[], ClusterError]) -> list[Any]:
    """The results of `futures`, in order, for every Dask runner (evaluation, partitioned, Mondrian): waited
    for in POLL_SECONDS steps and each fetch bounded, so that the run ends with `lost()` once the client lost
    its scheduler and with `no_workers()` once the cluster has had no worker for `workers_timeout` seconds.

    Why not `client.gather`: the scheduler keeps a task waiting for a worker forever, and a worker killed
    after its task finished takes the result with it (the scheduler then recomputes the task): with no
    worker left an unbounded gather waited forever (CI: a run hung after all its workers were killed between
    the batch's end and the gather). A fetch that times out goes back to the watch.
    """
    while True:
        _watch(client, futures, workers_timeout, no_workers, lost)
        try:
            return [future.result(timeout=workers_timeout) for future in futures]
        except (TimeoutError, asyncio.TimeoutError):
            continue  # a result lost with its worker: watched again while it is recomputed


def _watch(client: Any, futures: list[Any], workers_timeout: float, no_workers: Callable[[], ClusterError],
           lost: Callable[[], ClusterError]) -> None:
    """Return once every future is done; `lost()` or `no_workers()` as `gather_watched` says."""
    # optional dependency: Dask (extra `distributed`)
    from distributed import wait

    without_workers: float | None = None
    while True:
        try:
            with client.as_current():  # `wait` asks for the current client (the runners' is not the default)
                wait(futures, timeout=POLL_SECONDS)
            return
        except (TimeoutError, asyncio.TimeoutError):
            pass
        if client.status != "running":
            raise lost()
        if client.nthreads():
            without_workers = None
            continue
        without_workers = without_workers or time.monotonic()
        if time.monotonic() - without_workers >= workers_timeout:
            raise no_workers()


@contextmanager
def evaluator_for(evaluator: NodeEvaluator, jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
                  batch_size: int | None = None, min_parallel: int = 2, connect_timeout: float = CONNECT_TIMEOUT,
                  workers_timeout: float | None = None) -> Iterator[NodeEvaluator]:
    """The evaluator to search with: `evaluator` itself, with a `ParallelRunner` attached for the block when
    the options ask for workers (jobs > 1, or the dask backend); the runner is detached and closed when the
    block ends, whatever ends it. `jobs` is capped at the usable cores (`capped_jobs`; the CLI and the report
    say so).

    Raises
    ------
    ValueError
        If `evaluator` already has a runner.
    """
    validate_options(jobs, backend, scheduler, batch_size, connect_timeout)
    jobs = capped_jobs(jobs)[0]
    if not wants_parallel(jobs, backend):
        yield evaluator
        return
    if evaluator.runner is not None:
        raise ValueError("this evaluator already has a runner attached")
    with ParallelRunner(evaluator, jobs, backend, scheduler, batch_size, min_parallel, connect_timeout,
                        workers_timeout) as runner:
        evaluator.runner = runner
        try:
            yield evaluator
        finally:
            evaluator.runner = None
