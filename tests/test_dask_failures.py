"""A Dask cluster that fails (issue 15, item 3): every failure ends in one line with exit code 6, never a
traceback, and the first error is never hidden by an error of the cleanup; a cluster with one worker thread,
or one that loses some of its workers, just works (the same results as serial).

Two kinds of clusters, all on 127.0.0.1: a `distributed.LocalCluster` of worker processes in this process
(the runner's own behaviour, quick), and real `dask scheduler` and `dask worker` processes with kgen's CLI as
a subprocess (what a user sees). A failure is made to land mid-run by watching the scheduler until the run's
tasks have reached it, on a search that would run for an hour. Every process a test starts is killed at its
end, and each wait is bounded.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from fitness.objective import Precision
from kgen.datasets import poker
from kgen.io.table import from_mapping
from kgen.mondrian import build_spec, numeric_columns
from kgen.mondrian.distributed import run_distributed
from kgen.mondrian.storage import Source
from kgen.run import pipeline as api
from kgen.run.config import Config
from kgen.runners import parallel
from kgen.runners.parallel import ParallelRunner, evaluator_for
from kgen.status import ClusterError
from lattice.errors import InputError

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).with_name("dask")  # the `dask` command of this Python's environment
TASK_PREFIX = "compute_installed"  # kgen.runners.parallel's Dask task: the scheduler names its tasks after it
SETTLE = 60.0  # seconds any process here may take to start or to end (the test machine may be busy)


def environment(**extra: str) -> dict[str, str]:
    """This process's environment with the repository first on the path (workers import kgen from it)."""
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def table_file(folder: Path, rows: int = 3000, qis: int = 10, seed: int = 1) -> tuple[Path, str]:
    """Numbers 0..999 in `qis` columns (decimal hierarchies of height 3): 4^10 nodes, an hour of exhaustive
    search, so that a run is still going when a test breaks its cluster."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(qis)]
    records = [",".join(str(rng.randrange(0, 1000)) for _ in names) for _ in range(40)]
    path = folder / "long.csv"
    path.write_text("\n".join([",".join(names)] + [rng.choice(records) for _ in range(rows)]) + "\n")
    return path, ",".join(names)


def anonymize(source: Path, qis: str, output: Path, *extra: str, env: dict[str, str] | None = None,
              evaluations: int | None = None) -> subprocess.Popen:
    """`python -m kgen anonymize` on `source` as a subprocess: exhaustive search, with an evaluation budget
    or else an hour's time limit."""
    limit = ["--max-evaluations", str(evaluations)] if evaluations else ["--time-limit", "3600"]
    return subprocess.Popen(
        [sys.executable, "-m", "kgen", "anonymize",
         "--allow-k1",
         "--keep-unnamed", str(source), "--qi", qis, "--k", "2", "--suppression", "0.01",
         "--algorithm", "exhaustive", "--no-prune", *limit, "--quiet", "--output", str(output), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or environment())


def stop(process: subprocess.Popen) -> None:
    """Kill a process this module started, and its children (it leads its own process group)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=SETTLE)
    except subprocess.TimeoutExpired:
        process.kill()


def seen_tasks(dask_scheduler: Any) -> bool:
    """Run on the scheduler: whether kgen's evaluation tasks have reached it."""
    return TASK_PREFIX in dask_scheduler.task_prefixes


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the scheduler cannot import this test module


class RealCluster:
    """A `dask scheduler` and `dask worker` processes on 127.0.0.1 (workers without a nanny: a killed worker
    stays dead), importing kgen from this repository."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    def _start(self, *args: str, log: str) -> subprocess.Popen:
        with open(self.folder / log, "ab") as sink:
            return subprocess.Popen([str(DASK), *args], stdout=sink, stderr=subprocess.STDOUT, env=environment(),
                                    start_new_session=True)

    def start(self, workers: int, threads: int = 1) -> RealCluster:
        port = self.address.rsplit(":", 1)[1]
        self.scheduler = self._start("scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard",
                                     log="scheduler.log")
        for i in range(workers):
            self.workers.append(self._start("worker", self.address, "--nthreads", str(threads), "--no-nanny",
                                            "--no-dashboard", "--host", "127.0.0.1", log=f"worker{i}.log"))
        with self.client() as client:
            client.wait_for_workers(workers, timeout=SETTLE)
        return self

    def client(self) -> Any:
        return distributed.Client(self.address, set_as_default=False, timeout=f"{SETTLE}s")

    def wait_for_tasks(self, run: subprocess.Popen) -> None:
        """Return once the kgen run's tasks reached the scheduler (the search is under way)."""
        deadline = time.monotonic() + 2 * SETTLE
        with self.client() as client:  # closed before the test breaks the cluster
            while time.monotonic() < deadline and run.poll() is None:
                if client.run_on_scheduler(seen_tasks):
                    return
                time.sleep(0.1)
        _, err = run.communicate(timeout=SETTLE) if run.poll() is not None else ("", "")
        pytest.fail(f"the run's tasks never reached the scheduler (exit {run.poll()}): {err[-2000:]}")

    def kill_workers(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.kill(worker.pid, signal.SIGKILL)
                worker.wait(timeout=SETTLE)

    def stop(self) -> None:
        for process in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            stop(process)


@pytest.fixture
def real_cluster(tmp_path: Path) -> Iterator[RealCluster]:
    if not DASK.exists():
        pytest.skip(f"no `dask` command beside {sys.executable}")
    cluster = RealCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.stop()


def finished(run: subprocess.Popen) -> tuple[int, str]:
    """Wait (bounded) for a kgen run; its exit code and stderr."""
    try:
        _, err = run.communicate(timeout=3 * SETTLE)
    finally:
        stop(run)
    return run.returncode, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


# -- the runner on a LocalCluster ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prepared() -> api.Prepared:
    rng = random.Random(3)
    columns = {f"q{i}": [str(rng.randrange(0, 10 ** (i % 3 + 2))) for _ in range(2000)] for i in range(6)}
    return api.prepare(from_mapping(columns), Config(qi=list(columns), k=2, suppression=0.01, keep_unnamed=True))


def fresh(prepared: api.Prepared):
    e = prepared.evaluator
    return type(e)(e.table, e.models, e.suppression_limit, e.objective, e.kernel)


def random_nodes(prepared: api.Prepared, count: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return list(dict.fromkeys(prepared.box.random_node(rng) for _ in range(count)))


def local_cluster(workers: int, threads: int = 1) -> Any:
    """The user's own cluster, as if started elsewhere: its workers' logs (a heartbeat traceback once the
    scheduler is gone, under load) are theirs, not kgen's, so they are kept out of the stderr the tests read."""
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                                    host="127.0.0.1", dashboard_address=":0", silence_logs=logging.CRITICAL)


def test_a_cluster_with_one_worker_thread_evaluates_like_serial(prepared):
    nodes = random_nodes(prepared, 60, seed=1)
    with local_cluster(1) as cluster, evaluator_for(fresh(prepared), scheduler=cluster.scheduler_address,
                                                    backend="dask") as evaluator:
        assert evaluator.evaluate_many(nodes) == fresh(prepared).evaluate_many(nodes)
        assert evaluator.runner.stats["remote_nodes"] == len(nodes)  # on the worker, not in this process


@pytest.mark.slow
def test_losing_workers_down_to_one_thread_changes_nothing(prepared):
    with local_cluster(2) as cluster, evaluator_for(fresh(prepared), scheduler=cluster.scheduler_address,
                                                    backend="dask") as evaluator:
        first = random_nodes(prepared, 40, seed=2)
        assert evaluator.evaluate_many(first) == fresh(prepared).evaluate_many(first)
        cluster.scale(1)
        with distributed.Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=SETTLE)
            deadline = time.monotonic() + SETTLE
            while len(client.nthreads()) > 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(client.nthreads()) == 1
        nodes = random_nodes(prepared, 60, seed=3)
        assert evaluator.evaluate_many(nodes) == fresh(prepared).evaluate_many(nodes)


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_a_lost_scheduler_is_a_cluster_error_and_closing_raises_nothing(prepared, capfd):
    cluster = local_cluster(1)
    try:
        runner_seen = None
        with pytest.raises(ClusterError) as lost, evaluator_for(
                fresh(prepared), scheduler=cluster.scheduler_address, backend="dask") as evaluator:
            runner_seen = evaluator.runner
            evaluator.evaluate_many(random_nodes(prepared, 20, seed=4))
            cluster.close()
            evaluator.evaluate_many(random_nodes(prepared, 20, seed=5))
    finally:
        cluster.close()
    assert lost.value.exit_code == 6 and "\n" not in str(lost.value)
    assert str(lost.value).startswith(f"lost the Dask scheduler at {cluster.scheduler_address} during the search")
    assert runner_seen is not None and runner_seen._closed and evaluator.runner is None
    assert "Traceback" not in capfd.readouterr().err


def bounded(evaluator: Any, nodes: list[tuple[int, ...]], outcome: list[BaseException]) -> None:
    """Thread body: evaluate, and put what ended it in `outcome`."""
    try:
        evaluator.evaluate_many(nodes)
        outcome.append(AssertionError("the batch was evaluated"))
    except BaseException as error:  # noqa: BLE001 - handed to the test
        outcome.append(error)


@pytest.mark.slow
def test_a_cluster_without_workers_for_the_timeout_is_a_cluster_error(prepared):
    with local_cluster(1) as cluster:
        evaluator = fresh(prepared)
        with ParallelRunner(evaluator, backend="dask", scheduler=cluster.scheduler_address,
                            workers_timeout=2) as runner:
            evaluator.runner = runner
            evaluator.evaluate_many(random_nodes(prepared, 20, seed=6))
            cluster.scale(0)
            outcome: list[BaseException] = []
            batch = threading.Thread(target=bounded, args=(evaluator, random_nodes(prepared, 20, seed=7), outcome),
                                     daemon=True)  # a batch that waited forever would end when the cluster closes
            batch.start()
            batch.join(timeout=SETTLE)
            assert outcome, "the batch still waits for workers"
            assert isinstance(outcome[0], ClusterError), outcome
            assert str(outcome[0]).startswith(f"the Dask cluster at {cluster.scheduler_address} lost all its "
                                              "workers during the search and had none for 2 s; start workers")


@pytest.mark.slow
def test_workers_back_within_the_timeout_finish_the_batch(prepared):
    with local_cluster(1) as cluster:
        with evaluator_for(fresh(prepared), scheduler=cluster.scheduler_address, backend="dask",
                           workers_timeout=SETTLE) as evaluator:
            evaluator.evaluate_many(random_nodes(prepared, 20, seed=8))
            cluster.scale(0)
            back = threading.Timer(2.0, cluster.scale, (1,))  # a new worker joins while the batch waits
            back.start()
            try:
                nodes = random_nodes(prepared, 40, seed=9)
                assert evaluator.evaluate_many(nodes) == fresh(prepared).evaluate_many(nodes)
            finally:
                back.join()


class DiesOnWorkers(Precision):
    """LOG, except that evaluating it anywhere but in the process that made it kills that process (a worker
    that the system kills on every task, as for lack of memory)."""

    def __init__(self) -> None:
        self.parent = os.getpid()  # pickled with the object (workers may import this module themselves)

    def __call__(self, *args: Any, **kwargs: Any) -> float:
        if os.getpid() != self.parent:
            os._exit(3)
        return super().__call__(*args, **kwargs)


class CannotLoad(Precision):
    """LOG, except that it cannot be unpickled anywhere but in this test process (workers with another kgen)."""

    def __reduce__(self) -> tuple:
        return (refuse_outside, (os.getpid(),))


def refuse_outside(parent: int) -> Precision:
    if os.getpid() != parent:
        raise ImportError("no module named 'kgen.something_new'")
    return CannotLoad()


def with_objective(prepared: api.Prepared, objective: Precision):
    e = prepared.evaluator
    return type(e)(e.table, e.models, e.suppression_limit, objective, e.kernel)


@pytest.mark.slow
def test_workers_dying_on_every_task_are_a_cluster_error(prepared):
    dask_config = pytest.importorskip("dask.config")
    with dask_config.set({"distributed.scheduler.allowed-failures": 0}), local_cluster(1) as cluster:
        with pytest.raises(ClusterError, match=r"died again and again while evaluating one task of nodes "
                                               r"\(KilledWorker\); out of memory\?"), evaluator_for(
                with_objective(prepared, DiesOnWorkers()), backend="dask", scheduler=cluster.scheduler_address,
                workers_timeout=SETTLE) as evaluator:
            evaluator.evaluate_many(random_nodes(prepared, 20, seed=10))


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_workers_that_cannot_load_the_table_are_a_cluster_error(prepared):
    with local_cluster(1) as cluster:
        with pytest.raises(ClusterError, match=r"could not install the table \(.*no module named "
                                               r".kgen.something_new.*\); do they run the same kgen version"):
            with evaluator_for(with_objective(prepared, CannotLoad()), backend="dask",
                               scheduler=cluster.scheduler_address):
                pass


# -- kgen's CLI on real `dask scheduler` / `dask worker` processes ------------------------------------------


@pytest.mark.slow
def test_the_cli_on_a_one_thread_cluster_gives_the_serial_release(real_cluster, tmp_path):
    source, qis = table_file(tmp_path)
    real_cluster.start(workers=1, threads=1)
    serial = anonymize(source, qis, tmp_path / "serial.csv", evaluations=600)
    assert finished(serial) == (0, "")
    run = anonymize(source, qis, tmp_path / "dask.csv", "--backend", "dask", "--scheduler", real_cluster.address,
                    evaluations=600)
    assert finished(run) == (0, "")
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "serial.csv").read_bytes()


@pytest.mark.slow
def test_a_scheduler_killed_mid_run_is_one_line_and_exit_6(real_cluster, tmp_path):
    source, qis = table_file(tmp_path)
    real_cluster.start(workers=2)
    run = anonymize(source, qis, tmp_path / "out.csv", "--backend", "dask", "--scheduler", real_cluster.address)
    real_cluster.wait_for_tasks(run)
    assert run.poll() is None
    os.kill(real_cluster.scheduler.pid, signal.SIGKILL)
    code, err = finished(run)
    assert code == 6
    assert one_line(err).startswith(f"kgen: error: lost the Dask scheduler at {real_cluster.address} during the "
                                    "search")
    assert not list(tmp_path.glob("out*"))


@pytest.mark.slow
def test_all_workers_killed_mid_run_is_one_line_and_exit_6(real_cluster, tmp_path):
    source, qis = table_file(tmp_path)
    real_cluster.start(workers=2)
    run = anonymize(source, qis, tmp_path / "out.csv", "--backend", "dask", "--scheduler", real_cluster.address,
                    env=environment(KGEN_WORKERS_TIMEOUT="3"))
    real_cluster.wait_for_tasks(run)
    assert run.poll() is None
    for worker in real_cluster.workers:
        os.kill(worker.pid, signal.SIGKILL)
    code, err = finished(run)
    assert code == 6
    assert one_line(err) == (f"kgen: error: the Dask cluster at {real_cluster.address} lost all its workers during "
                             f"the search and had none for 3 s; start workers (dask worker {real_cluster.address}) "
                             "and run again")
    assert not list(tmp_path.glob("out*"))


@pytest.mark.slow
def test_workers_killed_after_a_batch_finished_but_before_its_results_came_back_is_a_cluster_error(
        real_cluster, prepared, monkeypatch):
    """The window CI hit: every task done, then all workers killed before the results were fetched. The
    results went with the workers, the scheduler waits for a worker to recompute them, and an unbounded
    gather waited forever; now the fetch is bounded and the run ends as a ClusterError."""
    real_cluster.start(workers=2)
    nodes = random_nodes(prepared, 40, seed=5)
    watch = parallel._watch

    def watch_then_kill_the_workers(*args):
        watch(*args)  # every task of the batch has finished on a worker
        real_cluster.kill_workers()

    evaluator = fresh(prepared)
    with ParallelRunner(evaluator, backend="dask", scheduler=real_cluster.address, workers_timeout=3) as runner:
        monkeypatch.setattr(parallel, "_watch", watch_then_kill_the_workers)
        started = time.monotonic()
        with pytest.raises(ClusterError, match="lost all its workers during the search and had none for 3 s"):
            runner.evaluate_batch(evaluator, nodes)
        assert time.monotonic() - started < SETTLE


@pytest.mark.slow
def test_a_distributed_mondrian_run_whose_workers_all_died_is_a_cluster_error_not_a_hang(real_cluster, tmp_path,
                                                                                         monkeypatch):
    real_cluster.start(workers=1)
    source = poker.write_csv(tmp_path / "poker.csv", rows=2000, seed=7)
    spec = build_spec(Source(source), list(poker.QIS), 5, 2, "CLASS", keep_unnamed=True)
    monkeypatch.setenv("KGEN_WORKERS_TIMEOUT", "3")
    watch = parallel._watch

    def kill_the_workers_then_watch(*args):
        real_cluster.kill_workers()  # the fragments' results (if done) go with them
        watch(*args)

    monkeypatch.setattr(parallel, "_watch", kill_the_workers_then_watch)
    (tmp_path / "parts").mkdir()
    started = time.monotonic()
    with pytest.raises(ClusterError, match="lost all its workers during the run and had none for 3 s"):
        run_distributed(str(source), spec, numeric_columns(spec), str(tmp_path / "parts"), 2,
                        scheduler=real_cluster.address)
    assert time.monotonic() - started < SETTLE


@pytest.mark.slow
def test_a_worker_killed_mid_run_with_another_alive_gives_the_serial_release(real_cluster, tmp_path):
    source, qis = table_file(tmp_path)
    real_cluster.start(workers=2)
    serial = anonymize(source, qis, tmp_path / "serial.csv", evaluations=4000)
    assert finished(serial) == (0, "")
    run = anonymize(source, qis, tmp_path / "dask.csv", "--backend", "dask", "--scheduler", real_cluster.address,
                    evaluations=4000)
    real_cluster.wait_for_tasks(run)
    assert run.poll() is None
    os.kill(real_cluster.workers[0].pid, signal.SIGKILL)
    assert finished(run) == (0, "")
    assert real_cluster.workers[0].wait(timeout=SETTLE) == -signal.SIGKILL and real_cluster.workers[1].poll() is None
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "serial.csv").read_bytes()


@pytest.mark.parametrize("value", ["x", "0", "-3", "nan", "inf"])
def test_a_workers_timeout_that_is_not_a_number_of_seconds_is_an_input_error(prepared, monkeypatch, value):
    monkeypatch.setenv("KGEN_WORKERS_TIMEOUT", value)
    with pytest.raises(InputError, match=f"KGEN_WORKERS_TIMEOUT must be a finite number of seconds > 0, got "
                                         f"'{value}'") as refused:
        ParallelRunner(fresh(prepared), backend="dask")  # refused before any cluster starts
    assert refused.value.exit_code == 2
