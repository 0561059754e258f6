"""Parallel evaluation (issues 6 and 14): every backend gives the serial results, the table reaches each worker
once, the evaluator keeps the only node cache (a runner computes, it does not remember), and searches (GA, OLA,
exhaustive) give the same best node and trace whatever the backend or job count.

Data: Cargo 2000, first 6 QIs (3,942 rows), k = 2, t = 0.005. One 2-process loky pool and one 2-worker
Dask LocalCluster on 127.0.0.1 are shared by the module's tests. The failures of a Dask cluster are in
tests/test_dask_failures.py.
"""

from __future__ import annotations

import json
import os
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np
import pytest
from joblib.externals.loky import get_reusable_executor

from kgen.cli.main import main
from kgen.io.table import from_mapping, read_csv
from kgen.run import pipeline as api
from kgen.run.algorithms import REGISTRY, make_search
from kgen.run.config import Config
from kgen.runners import parallel
from kgen.runners.parallel import ParallelRunner, chunked, evaluator_for
from lattice.errors import InputError
from lattice.search.base import Limits, SearchResult

QIS = 6
SEARCHES = {  # small budgets: the point is equality, not quality
    "kgen": {"population": 20, "max_evaluations": 250},
    "ola": {},
    "exhaustive": {},
}


@pytest.fixture(scope="module")
def cargo(cargo_csv: Path):
    return read_csv(cargo_csv)


@pytest.fixture(scope="module")
def prepared(cargo) -> api.Prepared:
    config = Config(qi=cargo.columns[1 : 1 + QIS], identifiers=("nr",), k=2, suppression=0.005, keep_unnamed=True)
    return api.prepare(cargo, config)


@pytest.fixture(scope="module")
def loky(prepared):
    with evaluator_for(fresh(prepared), jobs=2, backend="loky", min_parallel=1) as evaluator:
        yield evaluator


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0") as local:
        yield local


@pytest.fixture(scope="module")
def dask(prepared, cluster):
    with evaluator_for(fresh(prepared), jobs=2, backend="dask", scheduler=cluster.scheduler_address,
                       min_parallel=1) as evaluator:
        yield evaluator


def fresh(prepared: api.Prepared):
    """A new serial evaluator of the prepared table (no cache shared between runs)."""
    e = prepared.evaluator
    return type(e)(e.table, e.models, e.suppression_limit, e.objective, e.kernel)


def random_nodes(prepared: api.Prepared, count: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [prepared.box.random_node(rng) for _ in range(count)]


def run(name: str, prepared: api.Prepared, evaluator, seed: int = 7) -> SearchResult:
    if name not in REGISTRY:
        pytest.fail(f"algorithm {name!r} is not registered in kgen.run.algorithms.REGISTRY")
    search = make_search(name, SEARCHES[name])
    return search.run(prepared.problem(evaluator), Limits(seed=seed))


def outcome(result: SearchResult) -> dict:
    """Everything a run decides, without wall-clock times."""
    return {
        "best": result.best,
        "minimal": result.minimal,
        "evaluations": result.evaluations,
        "stopped": result.stopped,
        "trace": [{k: v for k, v in record.items() if k != "seconds"} for record in result.trace],
    }


def test_chunks_cover_the_nodes_in_order():
    nodes = [(i,) for i in range(103)]
    for workers, size in ((2, None), (3, None), (2, 10), (1, 500)):
        chunks = chunked(nodes, workers, size)
        assert [n for c in chunks for n in c] == nodes
        if size is None:
            assert len(chunks) == min(len(nodes), workers * 2)
        else:
            assert all(len(c) == size for c in chunks[:-1])
    assert chunked([], 2, None) == []


def mark_table(plugin: str | None, mark: str, dask_worker: Any = None) -> tuple[int, str]:
    """Worker probe (a loky process, or a Dask worker through `Client.run`): this process's id and the mark on
    its installed table, after marking it with `mark` if it had none. A table loaded again (a new object) has
    lost the first mark."""
    table = parallel._LOKY_TABLE if plugin is None else dask_worker.plugins[plugin].table
    assert table is not None, "the worker has no table installed"
    if not hasattr(table, "probe_mark"):
        table.probe_mark = mark
    return os.getpid(), table.probe_mark


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # loky workers cannot import this test module


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.parametrize("backend", ["threading", "loky", "dask"])
def test_every_backend_evaluates_like_the_serial_evaluator(prepared, loky, dask, backend):
    nodes = random_nodes(prepared, 60, seed=1)
    nodes += nodes[:10]  # repeats are answered once
    serial = fresh(prepared).evaluate_many(nodes)
    if backend == "threading":
        with evaluator_for(fresh(prepared), jobs=2, backend="threading") as threads:
            assert threads.evaluate_many(nodes) == serial
        return
    evaluator = {"loky": loky, "dask": dask}[backend]
    stats = evaluator.runner.stats
    before = dict(stats)
    distinct_new = sum(1 for n in set(nodes) if evaluator.cached(n) is None)
    assert evaluator.evaluate_many(nodes) == serial
    evaluated = {k: stats[k] - before[k] for k in ("remote_nodes", "local_nodes", "tasks")}
    assert evaluated["remote_nodes"] + evaluated["local_nodes"] == distinct_new
    assert evaluated["remote_nodes"] > 0 and evaluated["tasks"] >= 2  # shared out in several chunks
    tasks = stats["tasks"]
    assert evaluator.evaluate_many(list(reversed(nodes))) == list(reversed(serial))
    assert stats["tasks"] == tasks  # known nodes are never sent again: the evaluator's cache answers


def test_a_runner_computes_every_batch_it_is_given_and_remembers_nothing(prepared):
    evaluator = fresh(prepared)
    nodes = random_nodes(prepared, 20, seed=8)
    with ParallelRunner(evaluator, jobs=2, backend="threading", min_parallel=1) as runner:
        first = runner.evaluate_batch(evaluator, nodes)
        tasks = runner.stats["tasks"]
        assert runner.evaluate_batch(evaluator, nodes) == first == fresh(prepared).compute_many(nodes)
        assert runner.stats["tasks"] == 2 * tasks > 0
        assert all(evaluator.cached(n) is None for n in nodes)  # computing never fills the evaluator's cache
        with pytest.raises(ValueError, match="another"):
            runner.evaluate_batch(fresh(prepared), nodes)


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_threads_give_serial_results_on_a_table_large_enough_for_roll_ups():
    # 70,000 rows: the evaluator's roll-up cache is active, and it is not thread-safe (each thread has its own)
    rng = np.random.default_rng(5)
    columns = {f"q{i}": rng.integers(0, 10 ** (i + 2), 70_000).astype(str).tolist() for i in range(4)}
    big = api.prepare(from_mapping(columns), Config(qi=list(columns), k=3, suppression=0.01, keep_unnamed=True))
    nodes = random_nodes(big, 80, seed=4)
    serial = fresh(big).evaluate_many(nodes)
    with evaluator_for(fresh(big), jobs=4, backend="threading", batch_size=5) as threads:
        assert threads.evaluate_many(nodes) == serial


def test_the_table_reaches_each_loky_worker_once(prepared, loky):
    pool = get_reusable_executor(max_workers=loky.runner.jobs - 1, timeout=parallel.LOKY_IDLE_TIMEOUT)
    loky.evaluate_many(random_nodes(prepared, 40, seed=2))
    first = uuid.uuid4().hex
    marks = dict(pool.submit(mark_table, None, first).result() for _ in range(4))
    for seed in range(3, 6):
        loky.evaluate_many(random_nodes(prepared, 40, seed))
    again = dict(pool.submit(mark_table, None, "reloaded").result() for _ in range(4))
    assert os.getpid() not in marks and len(marks) == loky.runner.jobs - 1  # the parent is the other job
    assert again == marks and set(marks.values()) == {first}


def test_the_table_reaches_each_dask_worker_once(prepared, dask, cluster):
    distributed = pytest.importorskip("distributed")
    plugin = dask.runner._plugin
    dask.evaluate_many(random_nodes(prepared, 40, seed=2))
    with distributed.Client(cluster, set_as_default=False) as client:
        first = uuid.uuid4().hex
        marks = client.run(mark_table, plugin, first)
        for seed in range(3, 6):
            dask.evaluate_many(random_nodes(prepared, 40, seed))
        again = client.run(mark_table, plugin, "reinstalled")
    assert len(marks) == 2 and again == marks and {mark for _, mark in marks.values()} == {first}


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.parametrize("name", ["kgen", "ola", "exhaustive"])
def test_serial_loky_and_dask_searches_agree(prepared, loky, dask, name):
    serial = outcome(run(name, prepared, fresh(prepared)))
    assert serial["best"] is not None
    for evaluator in (loky, dask):
        assert outcome(run(name, prepared, evaluator)) == serial, evaluator.runner.backend


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_the_ga_sends_whole_populations_to_the_workers(prepared, cluster):
    with evaluator_for(fresh(prepared), jobs=2, backend="dask", scheduler=cluster.scheduler_address) as dask:
        result = run("kgen", prepared, dask, seed=3)
        stats = dask.runner.stats
        assert stats["remote_nodes"] > stats["local_nodes"]
        assert stats["remote_nodes"] + stats["local_nodes"] == result.evaluations


def test_jobs_1_and_2_give_the_same_anonymization(cargo):
    reports = []
    for jobs in (1, 2):
        config = Config(qi=cargo.columns[1 : 1 + QIS], identifiers=("nr",), k=2, suppression=0.005,
                        algorithm="kgen", options=SEARCHES["kgen"], seed=11, jobs=jobs, keep_unnamed=True)
        result = api.anonymize(cargo, config)
        report = {k: v for k, v in result.report.items() if "seconds" not in k and k != "provenance"}  # time, jobs
        reports.append((report, result.release.rows(), [r["best_node"] for r in result.search.trace]))
    assert reports[0] == reports[1]


def test_serial_options_give_the_plain_evaluator(prepared):
    with evaluator_for(prepared.evaluator, jobs=1, backend="loky") as evaluator:
        assert evaluator is prepared.evaluator and evaluator.runner is None


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_the_runner_is_attached_to_the_same_evaluator_for_the_block_only(prepared, backend):
    evaluator = fresh(prepared)
    with evaluator_for(evaluator, jobs=2, backend=backend) as searched:
        assert searched is evaluator and isinstance(evaluator.runner, ParallelRunner)
        runner = evaluator.runner
    assert evaluator.runner is None and runner._closed
    with pytest.raises(KeyError), evaluator_for(evaluator, jobs=2, backend=backend):
        runner = evaluator.runner
        raise KeyError("the search failed")
    assert evaluator.runner is None and runner._closed  # detached and closed whatever ends the block


def test_close_releases_the_shared_file_and_is_idempotent(prepared):
    evaluator = fresh(prepared)
    runner = ParallelRunner(evaluator, jobs=2, backend="loky")
    folder = runner._folder
    assert folder is not None and os.path.isdir(folder)
    runner.close()
    runner.close()
    assert not os.path.exists(folder)
    with pytest.raises(RuntimeError):
        runner.evaluate_batch(evaluator, random_nodes(prepared, 5, seed=9))


@pytest.mark.parametrize(("jobs", "backend", "scheduler", "message"), [
    (0, "loky", None, "jobs must be"),
    (2, "spark", None, "unknown backend"),
    (2, "loky", "tcp://127.0.0.1:8786", "only used with the dask backend"),
    (2, "dask", "tcp://127.0.0.1:port", "is not of the form"),
    (2, "dask", "http://127.0.0.1:8786", "unknown protocol"),
])
def test_bad_parallel_options_are_input_errors(prepared, jobs, backend, scheduler, message):
    with pytest.raises(InputError, match=message):
        ParallelRunner(fresh(prepared), jobs=jobs, backend=backend, scheduler=scheduler)


def test_an_unreachable_scheduler_is_one_line_on_stderr(cargo_csv, tmp_path, capsys):
    qis = ",".join(read_csv(cargo_csv).columns[1:4])
    code = main(["anonymize",
                 "--keep-unnamed", str(cargo_csv), "--qi", qis, "--identifier", "nr", "--k", "2", "--quiet",
                 "--output", str(tmp_path / "out.csv"), "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1",
                 "--connect-timeout", "1"])
    err = capsys.readouterr().err
    assert code == 6 and "cannot connect to the Dask scheduler at tcp://127.0.0.1:1 within 1 s" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out.csv").exists()


def test_cli_jobs_and_backend_give_the_serial_release(cargo_csv, tmp_path):
    qis = ",".join(read_csv(cargo_csv).columns[1 : 1 + QIS])
    outputs = []
    for extra in ([], ["--jobs", "2", "--backend", "threading"]):
        out = tmp_path / f"out{len(outputs)}.csv"
        args = ["anonymize",
                "--allow-k1",
                "--keep-unnamed", str(cargo_csv), "--qi", qis, "--identifier", "nr", "--k", "2", "--suppression",
                "0.005", "--algorithm", "ola", "--quiet", "--output", str(out), *extra]
        assert main(args) == 0
        report = json.loads(out.with_suffix(".json").read_text())
        outputs.append((out.read_text(), report["node"], report["evaluations"]))
    assert outputs[0] == outputs[1]
