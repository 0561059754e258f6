"""Parallel evaluation (issue 6): every backend gives the serial results, the table reaches each worker once,
and searches (GA, OLA, exhaustive) give the same best node and trace whatever the backend or job count.

Data: Cargo 2000, first 6 QIs (3,942 rows), k = 2, t = 0.005. One 2-process loky pool and one 2-worker
Dask LocalCluster on 127.0.0.1 are shared by the module's tests.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from kgen import api
from kgen.algorithms import REGISTRY, make_search
from kgen.cli import main
from kgen.config import Config
from kgen.parallel import ParallelEvaluator, chunked, evaluator_for
from kgen.table import from_mapping, read_csv
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
    config = Config(qi=cargo.columns[1 : 1 + QIS], identifiers=("nr",), k=2, suppression=0.005)
    return api.prepare(cargo, config)


@pytest.fixture(scope="module")
def loky(prepared):
    with ParallelEvaluator(fresh(prepared), jobs=2, backend="loky", min_parallel=1) as evaluator:
        yield evaluator


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0") as local:
        yield local


@pytest.fixture(scope="module")
def dask(prepared, cluster):
    with ParallelEvaluator(fresh(prepared), jobs=2, backend="dask", scheduler=cluster.scheduler_address,
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
        pytest.fail(f"algorithm {name!r} is not registered in kgen.algorithms.REGISTRY")
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


@pytest.mark.parametrize("backend", ["threading", "loky", "dask"])
def test_every_backend_evaluates_like_the_serial_evaluator(prepared, loky, dask, backend):
    nodes = random_nodes(prepared, 60, seed=1)
    nodes += nodes[:10]  # repeats are answered once
    serial = fresh(prepared).evaluate_many(nodes)
    if backend == "threading":
        with ParallelEvaluator(fresh(prepared), jobs=2, backend="threading") as threads:
            assert threads.evaluate_many(nodes) == serial
        return
    evaluator = {"loky": loky, "dask": dask}[backend]
    before = dict(evaluator.stats)
    distinct_new = sum(1 for n in set(nodes) if not evaluator.known(n))
    assert evaluator.evaluate_many(nodes) == serial
    evaluated = {k: evaluator.stats[k] - before[k] for k in ("remote_nodes", "local_nodes", "tasks")}
    assert evaluated["remote_nodes"] + evaluated["local_nodes"] == distinct_new
    assert evaluated["remote_nodes"] > 0 and evaluated["tasks"] >= 2  # shared out in several chunks
    tasks = evaluator.stats["tasks"]
    assert evaluator.evaluate_many(list(reversed(nodes))) == list(reversed(serial))
    assert evaluator.stats["tasks"] == tasks  # known nodes are never sent again


def test_threads_give_serial_results_on_a_table_large_enough_for_roll_ups():
    # 70,000 rows: the evaluator's roll-up cache is active, and it is not thread-safe (each thread has its own)
    rng = np.random.default_rng(5)
    columns = {f"q{i}": rng.integers(0, 10 ** (i + 2), 70_000).astype(str).tolist() for i in range(4)}
    big = api.prepare(from_mapping(columns), Config(qi=list(columns), k=3, suppression=0.01))
    nodes = random_nodes(big, 80, seed=4)
    serial = fresh(big).evaluate_many(nodes)
    with ParallelEvaluator(fresh(big), jobs=4, backend="threading", batch_size=5) as threads:
        assert threads.evaluate_many(nodes) == serial


def test_the_table_reaches_each_loky_worker_once(prepared, loky):
    for seed in range(2, 6):
        loky.evaluate_many(random_nodes(prepared, 40, seed))
    loads = loky.copies_per_worker()
    assert len(loads) == loky.jobs - 1  # the parent is the other job
    assert os.getpid() not in loads and set(loads.values()) == {1}


def test_the_table_reaches_each_dask_worker_once(prepared, dask):
    for seed in range(2, 6):
        dask.evaluate_many(random_nodes(prepared, 40, seed))
    assert sorted(dask.copies_per_worker().values()) == [1, 1]


@pytest.mark.parametrize("name", ["kgen", "ola", "exhaustive"])
def test_serial_loky_and_dask_searches_agree(prepared, loky, dask, name):
    serial = outcome(run(name, prepared, fresh(prepared)))
    assert serial["best"] is not None
    for evaluator in (loky, dask):
        assert outcome(run(name, prepared, evaluator)) == serial, evaluator.backend


def test_the_ga_sends_whole_populations_to_the_workers(prepared, cluster):
    with ParallelEvaluator(fresh(prepared), jobs=2, backend="dask", scheduler=cluster.scheduler_address) as dask:
        result = run("kgen", prepared, dask, seed=3)
        assert dask.stats["remote_nodes"] > dask.stats["local_nodes"]
        assert dask.stats["remote_nodes"] + dask.stats["local_nodes"] == result.evaluations


def test_jobs_1_and_2_give_the_same_anonymization(cargo):
    reports = []
    for jobs in (1, 2):
        config = Config(qi=cargo.columns[1 : 1 + QIS], identifiers=("nr",), k=2, suppression=0.005,
                        algorithm="kgen", options=SEARCHES["kgen"], seed=11, jobs=jobs)
        result = api.anonymize(cargo, config)
        report = {k: v for k, v in result.report.items() if "seconds" not in k and k != "provenance"}  # time, jobs
        reports.append((report, result.release.rows(), [r["best_node"] for r in result.search.trace]))
    assert reports[0] == reports[1]


def test_serial_options_give_the_plain_evaluator(prepared):
    with evaluator_for(prepared.evaluator, jobs=1, backend="loky") as evaluator:
        assert evaluator is prepared.evaluator


def test_close_releases_the_shared_file_and_is_idempotent(prepared):
    evaluator = ParallelEvaluator(fresh(prepared), jobs=2, backend="loky")
    folder = evaluator._folder
    assert folder is not None and os.path.isdir(folder)
    evaluator.close()
    evaluator.close()
    assert not os.path.exists(folder)
    with pytest.raises(RuntimeError):
        evaluator.evaluate_many(random_nodes(prepared, 5, seed=9))


@pytest.mark.parametrize(("jobs", "backend", "scheduler", "message"), [
    (0, "loky", None, "jobs must be"),
    (2, "spark", None, "unknown backend"),
    (2, "loky", "tcp://127.0.0.1:8786", "only used with the dask backend"),
    (2, "dask", "tcp://127.0.0.1:port", "is not of the form"),
    (2, "dask", "http://127.0.0.1:8786", "unknown protocol"),
])
def test_bad_parallel_options_are_input_errors(prepared, jobs, backend, scheduler, message):
    with pytest.raises(InputError, match=message):
        ParallelEvaluator(fresh(prepared), jobs=jobs, backend=backend, scheduler=scheduler)


def test_an_unreachable_scheduler_is_one_line_on_stderr(cargo_csv, tmp_path, capsys):
    qis = ",".join(read_csv(cargo_csv).columns[1:4])
    code = main(["anonymize", str(cargo_csv), "--qi", qis, "--identifier", "nr", "--k", "2", "--quiet",
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
        args = ["anonymize", str(cargo_csv), "--qi", qis, "--identifier", "nr", "--k", "2", "--suppression",
                "0.005", "--algorithm", "ola", "--quiet", "--output", str(out), *extra]
        assert main(args) == 0
        report = json.loads(out.with_suffix(".json").read_text())
        outputs.append((out.read_text(), report["node"], report["evaluations"]))
    assert outputs[0] == outputs[1]
