"""Centralized vs distributed Mondrian wall time on Poker Hand, measured side by side (issue 16).

Both sides do the same work end to end: read the table from the CSV file, anonymize, write the release. The
distributed side runs on a Dask LocalCluster on 127.0.0.1 started before timing (its start-up is printed
apart: a long-lived cluster pays it once); its CPU seconds are the coordinator's plus every task's. The two
are interleaved (C, D, C, D, ...) so load from other processes on the machine hits both alike; medians are
reported.

    python -m benchmarks.mondrian [--rows 1000000] [--workers 2] [--repeat 3] [--output results/mondrian]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from kgen.datasets import poker
from kgen.mondrian import anonymize_file, build_spec, numeric_columns
from kgen.mondrian.core import summary
from kgen.mondrian.distributed import run_distributed
from kgen.mondrian.storage import Source


def poker_table(folder: Path, rows: int, fmt: str, seed: int = 0) -> Path:
    path = folder / f"poker-{rows}-{seed}.{fmt}"
    if not path.exists():
        (poker.write_csv if fmt == "csv" else poker.write_parquet)(path, rows=rows, seed=seed)
    return path


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitioning", default="multidim")
    parser.add_argument("--sample", type=float, default=0.001)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--l", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format", choices=["csv", "parquet"], default="csv", help="how the table is stored")
    parser.add_argument("--data", default=None, help="folder to keep the generated table in (default: temp)")
    parser.add_argument("--output", default=None, help="folder for mondrian_benchmark.json")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    work = Path(tempfile.mkdtemp(prefix="kgen-mondrian-bench-"))
    data = Path(args.data) if args.data else work
    data.mkdir(parents=True, exist_ok=True)
    source = poker_table(data, args.rows, args.format)
    spec = build_spec(Source(source), list(poker.QIS), args.k, args.l, "CLASS")
    numeric = numeric_columns(spec)
    started = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster, set_as_default=False)
    cluster_start = time.perf_counter() - started
    central, dist = [], []
    try:
        for i in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            result, seconds = anonymize_file(source, spec, work / "central.csv")
            central.append({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, **seconds,
                            "dp": result.dp, "classes": result.classes})
            folder = work / f"parts-{i}"
            folder.mkdir()
            wall, cpu = time.perf_counter(), time.process_time()
            run = run_distributed(str(source), spec, numeric, str(folder), args.workers, args.partitioning,
                                  args.sample, seed=i, client=client)
            elapsed, own = time.perf_counter() - wall, time.process_time() - cpu
            metrics = summary(spec, [t.result for t in run.tasks])
            dist.append({"wall": elapsed, "cpu": own + sum(t.cpu_seconds for t in run.tasks),
                         "coordinator_cpu": own, "fragments": len(run.tasks), "dp": metrics["dp"],
                         "tasks": [{"rows": t.result.rows, "read": t.read_seconds, "anonymize": t.anonymize_seconds,
                                    "write": t.write_seconds, "cpu": t.cpu_seconds, "worker": t.worker}
                                   for t in run.tasks]})
            shutil.rmtree(folder)
            print(f"run {i}: centralized {central[-1]['wall']:.2f} s wall / {central[-1]['cpu']:.2f} s CPU; "
                  f"distributed ({args.workers} workers, {len(run.tasks)} fragments) {elapsed:.2f} s wall / "
                  f"{dist[-1]['cpu']:.2f} s CPU", flush=True)
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "rows": args.rows, "format": args.format, "load_average": list(__import__("os").getloadavg()),
        "workers": args.workers, "partitioning": args.partitioning, "sample": args.sample,
        "k": args.k, "l": args.l, "repeat": args.repeat, "cluster_start_seconds": cluster_start,
        "centralized": central, "distributed": dist,
        "median": {"centralized_wall": statistics.median(c["wall"] for c in central),
                   "centralized_cpu": statistics.median(c["cpu"] for c in central),
                   "distributed_wall": statistics.median(d["wall"] for d in dist),
                   "distributed_cpu": statistics.median(d["cpu"] for d in dist)},
    }
    m = out["median"]
    print(f"median of {args.repeat}: centralized {m['centralized_wall']:.2f} s wall ({m['centralized_cpu']:.2f} s "
          f"CPU), distributed {m['distributed_wall']:.2f} s wall ({m['distributed_cpu']:.2f} s CPU): "
          f"{m['centralized_wall'] / m['distributed_wall']:.2f}x; cluster start {cluster_start:.2f} s (apart)")
    if args.output:
        Path(args.output).mkdir(parents=True, exist_ok=True)
        (Path(args.output) / f"benchmark_{args.format}.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
