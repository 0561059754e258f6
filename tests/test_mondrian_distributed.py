"""Distributed Mondrian: fragment conditions from a sample, tasks that read their own fragment, a real Dask
LocalCluster on 127.0.0.1 (bounded in time and closed), the same results as running the tasks serially, and
metrics that add up to the table's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kgen.check.mondrian import check_release, select
from kgen.datasets import poker
from kgen.mondrian import build_spec, numeric_columns
from kgen.mondrian.core import QI, Spec, summary
from kgen.mondrian.distributed import fragment_conditions, run_distributed, run_serial
from kgen.mondrian.storage import Source

QI_ARG = ",".join(poker.QIS)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    return poker.write_csv(tmp_path_factory.mktemp("poker") / "poker.csv", rows=20_000, seed=7)


@pytest.fixture(scope="module")
def spec(table) -> Spec:
    return build_spec(Source(table), list(poker.QIS), 5, 2, "CLASS", keep_unnamed=True)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("partitioning", ["quantile", "multidim"])
def test_fragment_conditions_cover_every_row_exactly_once(table, spec, partitioning):
    original = pd.read_csv(table, dtype=str)
    sample = Source(table).sample(0.001, 10, seed=3, columns=list(poker.QIS), numeric=list(poker.QIS))
    conditions = fragment_conditions(sample, spec, 5, partitioning)
    expected = 5 if partitioning == "quantile" else 8  # multidim: 2 ** ceil(log2 5) fragments (paper 4.1)
    assert len(conditions) == expected
    hits = sum(select(original, c).astype(int) for c in conditions)
    assert (hits == 1).all()


def test_quantile_partitioning_cuts_the_qi_with_most_distinct_values(table, spec):
    sample = Source(table).sample(0.05, 10, seed=3, columns=list(poker.QIS), numeric=list(poker.QIS))
    conditions = fragment_conditions(sample, spec, 4, "quantile")
    assert {c["column"] for cond in conditions for c in cond} == {"C1"}  # 13 ranks beat 4 suits; C1 listed first


def test_hierarchy_ordered_fragments_use_complete_leaf_lists():
    tree_rows = [("Italy", "Europe", "*"), ("France", "Europe", "*"), ("USA", "America", "*"),
                 ("Canada", "America", "*")]
    from kgen.mondrian.core import Tree

    spec = Spec((QI("c", "hierarchy", "hierarchy", Tree.from_paths(tree_rows)),), 1)
    sample = pd.DataFrame({"c": ["Italy", "France", "USA", "Canada"]})
    conditions = fragment_conditions(sample, spec, 2, "multidim")
    assert [c[0]["values"] for c in conditions] == [["Italy", "France"], ["USA", "Canada"]]


@pytest.mark.parametrize("partitioning", ["quantile", "multidim"])
def test_dask_run_matches_the_serial_run_and_passes_the_verifier(tmp_path, table, spec, client, partitioning):
    numeric = numeric_columns(spec)
    (tmp_path / "dask").mkdir()
    (tmp_path / "serial").mkdir()
    run = run_distributed(str(table), spec, numeric, str(tmp_path / "dask"), 4, partitioning, 0.01, seed=1,
                          client=client)
    serial = run_serial(str(table), spec, numeric, str(tmp_path / "serial"), 4, partitioning, 0.01, seed=1)
    assert run.conditions == serial.conditions
    assert len({t.worker for t in run.tasks}) == 2  # both workers took tasks
    for a, b in zip(run.tasks, serial.tasks):
        assert Path(a.path).read_bytes() == Path(b.path).read_bytes()
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"fragments": [{"part": Path(t.path).name, "condition": c}
                                                for t, c in zip(run.tasks, run.conditions)]}))
    verdict = check_release(table, tmp_path / "dask", list(poker.QIS), 5, 2, "CLASS", report=report)
    assert verdict.passed, verdict.problems[:3]
    metrics = summary(spec, [t.result for t in run.tasks])
    assert metrics["rows"] == 20_000 and verdict.dp >= metrics["dp"]


def test_fragment_ncp_adds_up_to_the_ncp_of_the_whole_release(tmp_path, table, spec):
    (tmp_path / "parts").mkdir()
    run = run_serial(str(table), spec, numeric_columns(spec), str(tmp_path / "parts"), 5, "quantile", 0.01, seed=2)
    release = pd.concat([pd.read_csv(t.path, dtype=str) for t in run.tasks], ignore_index=True)
    original = pd.read_csv(table)
    expected = 0.0
    for column in poker.QIS:  # recomputed from the released text and the whole table's range
        cells = release[column]
        interval = cells.str.startswith("[")
        bounds = cells[interval].str.strip("[]").str.split(",", expand=True).astype(float)
        width = (bounds[1] - bounds[0]).sum()
        expected += width / (original[column].max() - original[column].min())
    assert summary(spec, [t.result for t in run.tasks])["ncp"] == pytest.approx(expected)


@pytest.mark.slow
def test_kgen_mondrian_workers_on_a_local_cluster_publishes_verified_parts(tmp_path, table):
    done = subprocess.run([sys.executable, "-m", "kgen", "mondrian",
                           "--keep-unnamed", str(table), "--qi", QI_ARG, "--k", "5",
                           "--sensitive", "CLASS", "--l", "2", "--workers", "2", "--partitioning", "quantile",
                           "--sample", "0.01", "--output", str(tmp_path / "out"), "--quiet"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["verified"]["passed"] and len(report["fragments"]) == 2
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["part-00000.csv", "part-00001.csv"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    checked = subprocess.run([sys.executable, "-m", "kgen", "mondrian-check", str(table), str(tmp_path / "out"),
                              "--report", str(tmp_path / "out.json"), "--qi", QI_ARG, "--k", "5",
                              "--sensitive", "CLASS", "--l", "2"], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and checked.stdout.startswith("PASS"), checked.stdout


@pytest.mark.slow
def test_an_unreachable_scheduler_exits_6(tmp_path, table):
    done = subprocess.run([sys.executable, "-m", "kgen", "mondrian",
                           "--keep-unnamed", str(table), "--qi", QI_ARG, "--k", "5",
                           "--workers", "2", "--scheduler", "tcp://127.0.0.1:9", "--output", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 6 and "cannot connect" in done.stderr and not (tmp_path / "o").exists()


def test_parquet_storage_gives_the_same_fragments_and_release_as_csv(tmp_path, table, spec):
    parquet = tmp_path / "poker.parquet"
    pd.read_csv(table).to_parquet(parquet, index=False, row_group_size=5000)
    runs = []
    for source, name in ((table, "csv"), (parquet, "parquet")):
        (tmp_path / name).mkdir()
        runs.append(run_serial(str(source), spec, numeric_columns(spec), str(tmp_path / name), 3, "multidim", 0.01,
                               seed=4))
    assert runs[0].conditions == runs[1].conditions
    for a, b in zip(runs[0].tasks, runs[1].tasks):
        assert pd.read_csv(a.path, dtype=str).equals(pd.read_csv(b.path, dtype=str))
