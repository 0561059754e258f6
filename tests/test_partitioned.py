"""Row-partitioned evaluation (kgen.runners.partitioned) against the in-memory path, on a real LocalCluster of two
worker processes on 127.0.0.1 (started once for the module, closed at the end)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.synthetic import generate
from fitness.objective import weighted_precision
from kgen.check.partitioned import check_parts
from kgen.run import pipeline as api
from kgen.run.config import Config
from kgen.run.partitioned import anonymize, anonymize_source, prepare
from kgen.runners.partitioned import keys as keying
from kgen.runners.partitioned.source import open_source
from lattice.box import Box
from lattice.errors import InputError

distributed = pytest.importorskip("distributed")

ROWS = 6000
QIS = ["age", "sex", "zip", "income", "children", "dept"]


def table(rows: int = ROWS) -> pd.DataFrame:
    data = generate(rows, seed=7)
    frame = pd.DataFrame({c: data[c] for c in QIS})
    frame.insert(0, "person_id", np.arange(rows))
    frame["note"] = np.where(np.arange(rows) % 7 == 0, "a, quoted", "x")
    frame.loc[frame.index % 97 == 0, "dept"] = -1  # becomes text below: a missing token among numbers
    frame["dept"] = frame["dept"].astype(str).replace("-1", "?")
    return frame


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=logging.ERROR)
    client = distributed.Client(cluster, set_as_default=False, timeout="30s")
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame]:
    """The same rows as 4 Parquet parts and as one CSV file."""
    folder = tmp_path_factory.mktemp("partitioned")
    frame = table()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 4)):
        frame.iloc[rows].to_parquet(folder / f"part{i}.parquet", index=False)
    frame.to_csv(folder / "all.csv", index=False)
    return folder, folder / "all.csv", frame


def config(**changes: object) -> Config:
    settings = {"qi": QIS, "identifiers": ["person_id"], "k": 3, "suppression": 0.01, "seed": 3,
                "max_evaluations": 120, "algorithm": "kgen", "options": {"population": 30}}
    settings.update(changes)
    return Config(**settings, keep_unnamed=True)  # type: ignore[arg-type]


def without_seconds(trace: list[dict]) -> list[dict]:
    return [{k: v for k, v in t.items() if k != "seconds"} for t in trace]


@pytest.mark.slow
def test_every_node_evaluates_as_in_memory(client, data) -> None:
    folder, csv, _ = data
    for metric in ("log", "dm", "aecs", "arx-precision"):
        cfg = config(metric=metric)
        parted = prepare(client, open_source(str(folder / "part*.parquet")), cfg)
        memory = api.prepare(str(csv), cfg)
        assert parted.box == memory.box
        nodes = list(Box.full(memory.heights).nodes())
        order = np.random.default_rng(0).permutation(len(nodes))  # low and high nodes mixed: roll-up both ways
        picked = [nodes[i] for i in order[:400]]
        assert parted.evaluator.evaluate_many(picked) == memory.evaluator.evaluate_many(picked)


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_small_batches_of_low_nodes_give_the_same_figures(client, data) -> None:
    folder, csv, _ = data
    parted = prepare(client, open_source(str(folder / "part*.parquet")), config(), batch_bytes=1)  # one node a group
    memory = api.prepare(str(csv), config())
    nodes = [(0,) * 6, (1, 0, 2, 3, 0, 1), (0, 1, 0, 0, 1, 0)]
    assert parted.evaluator.evaluate_many(nodes) == memory.evaluator.evaluate_many(nodes)


def test_level_limits_and_weights_shrink_and_weigh_as_in_memory(client, data) -> None:
    folder, csv, _ = data
    cfg = config(min_levels={QIS[0]: 1}, max_levels={QIS[1]: 1}, weights={QIS[2]: 3.0})
    parted = prepare(client, open_source(str(folder / "part*.parquet")), cfg)
    memory = api.prepare(str(csv), cfg)
    assert parted.box == memory.box and parted.box.lower[0] >= 1 and parted.box.upper[1] <= 1
    nodes = [memory.box.lower, memory.box.upper]
    assert parted.evaluator.evaluate_many(nodes) == memory.evaluator.evaluate_many(nodes)
    low = parted.evaluator.evaluate(memory.box.lower)
    assert low.loss == pytest.approx(weighted_precision(low.node, memory.heights, cfg.weight_vector()))


@pytest.mark.parametrize("algorithm", ["kgen", pytest.param("ola", marks=pytest.mark.slow)])
def test_search_release_and_report_match_in_memory(client, data, tmp_path: Path, algorithm: str) -> None:
    folder, csv, _ = data
    cfg = config(algorithm=algorithm, options={"population": 30} if algorithm == "kgen" else {})
    result = anonymize_source(str(folder / "part*.parquet"), cfg, str(tmp_path / "out"), client=client)
    report = result.report
    memory = api.anonymize(str(csv), cfg)
    for field in ("node", "loss", "log", "suppressed", "classes", "smallest_class", "dm", "aecs", "evaluations",
                  "suppressed_rows", "minimal_nodes_found", "box"):
        assert report[field] == memory.report[field], field
    assert without_seconds(report["trace"]) == without_seconds(memory.search.trace)
    assert report["check"]["passed"] and report["verified"]["passed"]
    published = json.loads((tmp_path / "out.json").read_text())  # the one publish wrote the pair
    assert published["verified"] == report["verified"]
    parts = sorted((tmp_path / "out").glob("part-*.csv"))
    assert [r["sha256"] for r in published["provenance"]["release"]["parts"]] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in parts]
    assert [p.name for p in parts] == [f"part-{i:05d}.csv" for i in range(4)]
    assert not list((tmp_path / "out").glob(".*"))  # no temporary file left
    written = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in parts], ignore_index=True)
    expected = pd.DataFrame({c: list(memory.release.column(c)) for c in memory.release.columns})
    pd.testing.assert_frame_equal(written, expected)
    for name, figures in memory.report["attributes"].items():
        assert report["attributes"][name]["distinct_after"] == figures["distinct_after"]
    # the same names as the in-memory report where the concept exists, and the same risk figures (one definition)
    shared = set(memory.report) - {"evaluator", "lower_bound", "gap", "optimal", "bound", "bound_seconds",
                                   "formula_cells", "unnamed_columns", "warnings", "seconds"}
    assert shared <= set(report), shared - set(report)
    assert report["risk"] == memory.report["risk"]
    assert report["hierarchy_specs"] == memory.report["hierarchy_specs"]
    assert {k: report[k] for k in ("k", "l", "t_closeness")} == {"k": 3, "l": None, "t_closeness": None}


@pytest.mark.slow
def test_a_dask_dataframe_gives_the_same_result_as_the_files(client, data) -> None:
    import dask.dataframe as dd

    folder, _, frame = data
    cfg = config()
    from_files = anonymize_source(str(folder / "part*.parquet"), cfg, None, client=client).report
    from_frame = anonymize_source(dd.from_pandas(frame, npartitions=3), cfg, None, client=client).report
    assert from_frame["node"] == from_files["node"] and from_frame["loss"] == from_files["loss"]
    assert from_frame["partitioned"]["partitions"] == 3


@pytest.mark.slow
def test_the_command_line_writes_a_checked_folder_of_parts_and_its_report(data, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    folder, _, _ = data
    out = tmp_path / "release"
    done = subprocess.run([sys.executable, "-m", "kgen", "anonymize",
                           "--keep-unnamed", str(folder / "part*.parquet"), "--qi",
                           ",".join(QIS), "--identifier", "person_id", "--k", "3", "--suppression", "0.01",
                           "--partitioned", "--jobs", "2", "--max-evaluations", "40", "--output", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "release.json").read_text())
    assert report["verified"]["passed"] and report["check"]["passed"]
    assert sorted(p.name for p in out.iterdir()) == [f"part-{i:05d}.csv" for i in range(4)]


def test_the_api_entry_point_takes_the_data_and_an_output_folder(data, tmp_path: Path) -> None:
    folder, _, _ = data
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "part-00000.csv").write_text("left from an earlier release\n")
    with pytest.raises(InputError, match="already exists and is not empty"):
        anonymize(str(folder / "part*.parquet"), config(jobs=1), str(taken))
    assert (taken / "part-00000.csv").read_text() == "left from an earlier release\n"


def test_the_command_line_refuses_a_partitioned_run_without_an_output_folder(data) -> None:
    import subprocess
    import sys

    folder, _, _ = data
    done = subprocess.run([sys.executable, "-m", "kgen", "anonymize",
                           "--keep-unnamed", str(folder / "part*.parquet"), "--qi", "age",
                           "--k", "2", "--partitioned", "--quiet"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--output FOLDER" in done.stderr


@pytest.mark.parametrize(("changes", "words"), [
    ({"l": 2, "sensitive": ["note"]}, "l-diversity is not supported with --partitioned"),
    ({"metric": "ncp"}, "metric 'ncp' is not supported with --partitioned"),
    ({"metric": "arx-entropy"}, "metric 'arx-entropy' is not supported with --partitioned"),
    ({"t_closeness": 0.2, "sensitive": ["note"]}, "t-closeness is not supported with --partitioned"),
])
def test_unsupported_models_and_metrics_are_refused_in_one_line(data, changes: dict, words: str) -> None:
    folder, _, _ = data
    with pytest.raises(InputError) as caught:
        anonymize_source(str(folder / "part*.parquet"), config(**changes), None, client=object())
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_glob_matching_nothing_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no input file matches"):
        open_source(str(tmp_path / "*.parquet"))


def test_the_check_merges_classes_across_parts_and_finds_a_planted_violation(client, tmp_path: Path) -> None:
    # class (a, x) has 2 rows in each part: 4 in all, k-anonymous only when the parts are merged
    (tmp_path / "p0.csv").write_text("q1,q2\na,x\na,x\nb,y\nb,y\nb,y\n")
    (tmp_path / "p1.csv").write_text("q1,q2\na,x\na,x\nc,z\n*,*\n")
    paths = [str(tmp_path / "p0.csv"), str(tmp_path / "p1.csv")]
    merged = check_parts(client, paths, ["q1", "q2"], 3, 0.2)
    assert (merged.rows, merged.classes, merged.smallest_class, merged.suppressed_rows) == (9, 3, 1, 1)
    assert merged.violating_rows == [8]  # c,z: the 3rd data row of the second part
    assert not merged.passed
    (tmp_path / "p1.csv").write_text("q1,q2\na,x\na,x\n*,*\n")
    assert check_parts(client, paths, ["q1", "q2"], 3, 0.2).passed


def test_keys_of_several_words_group_like_numpy() -> None:
    rng = np.random.default_rng(1)
    cards = [1 << 40, 1 << 30, 7, 1, 1 << 20]
    plan = keying.layout(cards)
    assert plan.width == 2 and 3 not in plan.qis  # 2**40 alone; 2**30 * 7 * 2**20 < 2**62
    columns = {i: rng.integers(0, min(c, 5), 5000) for i, c in enumerate(cards) if c > 1}
    keys = keying.fold(columns, plan, 5000)
    found, counts = keying.group(keys, plan)
    expected, expected_counts = np.unique(np.stack([columns[i] for i in plan.qis], axis=1), axis=0,
                                          return_counts=True)
    assert counts.sum() == 5000 and np.array_equal(np.sort(counts), np.sort(expected_counts))
    decoded = keying.unfold(found, plan)
    assert np.array_equal(np.stack([decoded[i] for i in plan.qis], axis=1), expected)


@pytest.mark.parametrize("span", [60, 5000, 10_000_000, 1 << 40])
def test_partitions_chunks_merge_to_the_classes_of_all_rows(span: int) -> None:
    """Dense, split (singleton keys alone) and sparse chunks, mixed over partitions, sum every class."""
    from kgen.runners.partitioned.merge import combine
    from kgen.runners.partitioned.part import Plan, split

    rng = np.random.default_rng(span % 1000)
    lay = keying.Layout((((0, span),),), (span,))
    plan = Plan((0,), lay, tuple(keying.bounds(span, 3)) if span <= 1 << 20 else None)
    rows, chunks = [], []
    for _ in range(5):
        own = np.concatenate([rng.integers(0, span, int(rng.integers(0, 3000))), rng.integers(0, 40, 60)])
        rows.append(own)
        chunks.append(split(*keying.group(own, lay), plan, 3))
    kinds = {c[0] for part in chunks for c in part}
    assert kinds <= {"dense", "split", "sparse"}
    merged = [combine([part[r] for part in chunks], plan, r) for r in range(3)]
    expected = np.unique(np.concatenate(rows), return_counts=True)
    assert np.array_equal(np.concatenate([m[0] for m in merged]), expected[0])
    assert np.array_equal(np.concatenate([m[1] for m in merged]), expected[1])


def test_kgen_starts_workers_without_the_nannys_malloc_trim_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from kgen.run.partitioned import local_cluster

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # what an earlier cluster's nanny leaves in this process
    cluster = local_cluster(1)
    try:
        with distributed.Client(cluster, set_as_default=False) as c:
            seen = c.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS")))
    finally:
        cluster.close()
    assert list(seen.values()) == [(None, "1")]
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"
