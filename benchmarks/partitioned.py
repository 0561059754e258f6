"""Partitioned evaluation (kgen.runners.partitioned) against the in-memory evaluator, and a 20M-row run.

    python -m benchmarks.partitioned equal [--rows 1000000]   # (a) same node, metrics and trace as in memory
                                                              # (b) CPU of GA batches of 100 nodes, both ways
    python -m benchmarks.partitioned big [--rows 20000000]    # (c) 20M rows of Parquet, 2 workers of 3 GB

Tables are benchmarks/synthetic.py's columns. `equal` writes the table once as one Parquet file (the
in-memory path reads it) and as 8 Parquet parts (the partitioned path), and runs both on a 2-worker
LocalCluster of single-threaded processes on 127.0.0.1. CPU seconds of the partitioned path are the client
process's (it runs the scheduler too) plus every worker's (resource.getrusage in each worker, before and
after). `big` writes its parts in a child process, each part from its own seed (no process ever holds the
table), then measures the client's peak RSS (ru_maxrss of this process) and the workers' peaks.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import synthetic

PARTS = 8
QIS = list(synthetic.COLUMNS)


def usage() -> dict:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu": r.ru_utime + r.ru_stime, "sys": r.ru_stime, "maxrss_kb": r.ru_maxrss,
            "trim": os.environ.get("MALLOC_TRIM_THRESHOLD_")}


def write_parts(folder: Path, rows: int, parts: int, single: bool) -> None:
    """`parts` Parquet files of rows/parts rows each, part i from seed SEED + i (and the whole table as one
    file when `single`: the in-memory path's input)."""
    folder.mkdir(parents=True, exist_ok=True)
    if single:
        data = synthetic.generate(rows)
        frame = pd.DataFrame({c: data[c] for c in QIS})
        frame.to_parquet(folder / "all.parquet", index=False)
        for i, chunk in enumerate(np.array_split(np.arange(rows), parts)):
            frame.iloc[chunk].to_parquet(folder / f"part-{i:03d}.parquet", index=False)
        return
    for i in range(parts):
        data = synthetic.generate(rows // parts, seed=synthetic.SEED + i)
        pd.DataFrame({c: data[c] for c in QIS}).to_parquet(folder / f"part-{i:03d}.parquet", index=False)


def cluster(memory_limit: str | None = None):
    from distributed import Client

    from kgen.run.partitioned import local_cluster

    c = local_cluster(2, memory_limit)
    return Client(c, set_as_default=False), c


def worker_usage(client) -> dict:
    return client.run(usage)


def cpu_split(client, before: dict, client_before: dict) -> tuple[float, float]:
    """CPU seconds since `before` of the client process (scheduler included) and of all workers."""
    after = worker_usage(client)
    workers = sum(after[w]["cpu"] - before[w]["cpu"] for w in after if w in before)
    return usage()["cpu"] - client_before["cpu"], workers


def cpu_between(client, before: dict, client_before: dict) -> float:
    return sum(cpu_split(client, before, client_before))


def equal(rows: int, batches_only: bool = False) -> None:
    from kgen.run import pipeline as api
    from kgen.run.config import Config

    folder = synthetic.cache_dir() / f"partitioned_{rows}"
    if not (folder / "all.parquet").exists():
        write_parts(folder, rows, PARTS, single=True)
    config = Config(qi=QIS, k=2, suppression=0.005, seed=5, max_evaluations=200, options={"population": 100})
    client, c = cluster()
    try:
        t, cpu0 = time.perf_counter(), usage()
        memory = api.prepare(str(folder / "all.parquet"), config)
        if not batches_only:
            search_both(memory, (time.perf_counter() - t, usage()["cpu"] - cpu0["cpu"]), client, folder, config, rows)
        batches(memory, client, folder, config)
    finally:
        client.close()
        c.close()


def search_both(memory, prepared: tuple[float, float], client, folder: Path, config, rows: int) -> None:
    """(a) the GA end to end, both ways: the same node, metrics and trace."""
    from kgen.run import pipeline as api
    from kgen.runners.partitioned import anonymize_source

    t, cpu0 = time.perf_counter(), usage()
    found = api.search(memory)
    mem_wall, mem_cpu = time.perf_counter() - t + prepared[0], usage()["cpu"] - cpu0["cpu"] + prepared[1]
    before, cpu0, t = worker_usage(client), usage(), time.perf_counter()
    report = anonymize_source(str(folder / "part-*.parquet"), config, None, client=client)
    part_wall, part_cpu = time.perf_counter() - t, cpu_between(client, before, cpu0)
    strip = [{k: v for k, v in g.items() if k != "seconds"} for g in found.trace]
    same = {
        "node": tuple(report["node"].values()) == found.best.node,
        "metrics": all(report[f] == getattr(found.best, f) for f in
                       ("loss", "log", "los", "suppressed", "classes", "smallest_class", "dm", "aecs")),
        "trace": strip == [{k: v for k, v in g.items() if k != "seconds"} for g in report["trace"]],
        "evaluations": report["evaluations"] == found.evaluations,
    }
    print(json.dumps({"rows": rows, "parts": PARTS, "node": report["node"], "loss": report["loss"],
                      "evaluations": report["evaluations"], "same": same,
                      "in_memory": {"wall": round(mem_wall, 1), "cpu": round(mem_cpu, 1)},
                      "partitioned": {"wall": round(part_wall, 1), "cpu": round(part_cpu, 1),
                                      "seconds": report["partitioned"]["seconds"],
                                      "tasks": report["partitioned"]["tasks"]}}), flush=True)


def batches(memory, client, folder: Path, config) -> None:
    """(b) GA-like batches of 100 fresh nodes (uniform in the box), cold caches on both sides, then warm."""
    from kgen.run.partitioned import prepare
    from kgen.runners.partitioned.source import open_source

    parted = prepare(client, open_source(str(folder / "part-*.parquet")), config)
    memory.evaluator.clear_cache()
    rng = np.random.default_rng(11)
    box = memory.box
    for label in ("cold", "warm", "warm"):
        nodes = list(dict.fromkeys(tuple(int(rng.integers(lo, hi + 1)) for lo, hi in zip(box.lower, box.upper))
                                   for _ in range(100)))
        t, cpu0 = time.perf_counter(), usage()
        expected = memory.evaluator.evaluate_many(nodes)
        mem_wall, mem_cpu = time.perf_counter() - t, usage()["cpu"] - cpu0["cpu"]
        before, cpu0, t = worker_usage(client), usage(), time.perf_counter()
        got = parted.evaluator.evaluate_many(nodes)
        wall, (client_cpu, workers_cpu) = time.perf_counter() - t, cpu_split(client, before, cpu0)
        after = worker_usage(client)
        workers_sys = sum(after[w]["sys"] - before[w]["sys"] for w in after if w in before)
        cpu = client_cpu + workers_cpu
        print(json.dumps({"batch": label, "nodes": len(nodes), "identical": got == expected,
                          "in_memory": {"wall": round(mem_wall, 2), "cpu": round(mem_cpu, 2)},
                          "partitioned": {"wall": round(wall, 2), "cpu": round(cpu, 2),
                                          "client_cpu": round(client_cpu, 2), "workers_cpu": round(workers_cpu, 2),
                                          "workers_sys": round(workers_sys, 2),
                                          "workers_trim": sorted({str(w["trim"]) for w in after.values()})},
                          "cpu_ratio": round(cpu / mem_cpu, 2)}), flush=True)


def big(rows: int, evaluations: int) -> None:
    from kgen.run.config import Config
    from kgen.runners.partitioned import anonymize_source

    folder = synthetic.cache_dir() / f"partitioned_big_{rows}"
    if not (folder / f"part-{PARTS - 1:03d}.parquet").exists():  # in a child: its memory is not ours
        subprocess.run([sys.executable, "-m", "benchmarks.partitioned", "write", "--rows", str(rows),
                        "--out", str(folder)], check=True)
    config = Config(qi=QIS, k=2, suppression=0.005, seed=5, max_evaluations=evaluations,
                    options={"population": 50})
    client, c = cluster(memory_limit="3GB")
    out = Path(tempfile.mkdtemp(prefix=f"partitioned_big_{rows}_release_", dir=folder.parent)) / "release"
    try:
        before, cpu0, t = worker_usage(client), usage(), time.perf_counter()
        report = anonymize_source(str(folder / "part-*.parquet"), config, str(out), client=client)
        wall = time.perf_counter() - t
        cpu = cpu_between(client, before, cpu0)
        workers = worker_usage(client)
        print(json.dumps({"rows": report["rows"], "parts": PARTS, "node": report["node"], "loss": report["loss"],
                          "suppressed": report["suppressed"], "evaluations": report["evaluations"],
                          "check": report["check"]["summary"], "wall": round(wall, 1), "cpu": round(cpu, 1),
                          "seconds": report["partitioned"]["seconds"], "tasks": report["partitioned"]["tasks"],
                          "client_peak_rss_mb": round(usage()["maxrss_kb"] / 1024, 1),
                          "worker_peak_rss_mb": [round(w["maxrss_kb"] / 1024, 1) for w in workers.values()],
                          "released_bytes": sum(os.path.getsize(p) for p in report["partitioned"]["parts"])}),
              flush=True)
    finally:
        client.close()
        c.close()
        shutil.rmtree(out.parent, ignore_errors=True)  # 2 GB of CSV: measured, not kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("equal", "big", "write"))
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--evaluations", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--batches-only", action="store_true", help="equal: only the batches of 100 nodes (b)")
    args = parser.parse_args()
    if args.mode == "equal":
        equal(args.rows or 1_000_000, args.batches_only)
    elif args.mode == "big":
        big(args.rows or 20_000_000, args.evaluations)
    else:
        write_parts(args.out, args.rows, PARTS, single=False)


if __name__ == "__main__":
    main()
