"""Centralized vs distributed Mondrian wall time on Poker Hand, measured side by side (issues 16 and 31).

Every side does the same work end to end: read the table from storage, anonymize, write the release. The
distributed sides run on a Dask LocalCluster on 127.0.0.1 and (with `--engines dask,spark`) on Spark
`local[WORKERS]` on 127.0.0.1, each started before timing (start-up is printed apart: a long-lived cluster
pays it once). CPU seconds: `cpu` is the coordinator's plus every task's (as in issue 16); `tree_cpu` is
every process of the engine (this one plus Dask's scheduler and workers, or plus Spark's JVM and Python
workers; this one alone for centralized), so engine overhead counts too. The sides are interleaved (C, D,
S, C, D, S, ...) so load from other processes on the machine hits all alike; medians are reported. Dask
and Spark run i use sample seed i both, and their parts are compared byte for byte (`same_release`): the
engine must not change the release.

    python -m benchmarks.mondrian [--rows 1000000] [--workers 2] [--repeat 3] [--engines dask,spark]
        [--format csv|parquet] [--output results/mondrian]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import logging
import os
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


def tree_cpu(jvm: int | None = None) -> dict[str, float]:
    """CPU seconds (user + system) of this process ("self"), of Spark's JVM and its descendants (the Python
    workers: "spark") and of every other live descendant (Dask's LocalCluster: "dask"), read from /proc. A run
    is charged its own engine's processes only, so an idle cluster of the other engine costs it nothing."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"self": 0.0, "spark": 0.0, "dask": 0.0}
    todo, seen = [(os.getpid(), "self")], set()
    while todo:
        pid, group = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        group = "spark" if pid == jvm else group
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[group] += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{pid}/task").iterdir():
                below = group if group != "self" else "dask"
                todo.extend((int(c), below) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue  # a process that ended meanwhile
    return out


def charged(before: dict[str, float], after: dict[str, float], engine: str | None) -> float:
    """CPU seconds of this process plus `engine`'s processes (None: this process only) between two readings."""
    return sum(after[g] - before[g] for g in ("self",) + ((engine,) if engine else ()))


def same_parts(a: Path, b: Path) -> bool:
    """The two folders hold the same part files with the same bytes (`cmp` of the sorted parts)."""
    names = sorted(p.name for p in a.iterdir())
    return names == sorted(p.name for p in b.iterdir()) and all(
        filecmp.cmp(a / n, b / n, shallow=False) for n in names)


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
    parser.add_argument("--engines", default="dask", help="distributed engines, comma-separated: dask, spark")
    parser.add_argument("--output", default=None, help="folder for benchmark_FORMAT[_spark].json")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
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
    session, spark_start, jvm = None, None, None
    if "spark" in engines:
        from kgen.mondrian.spark import open_session

        started = time.perf_counter()
        session = open_session(None, args.workers)
        spark_start = time.perf_counter() - started
        jvm = session.sparkContext._gateway.proc.pid  # spark-submit execs the JVM: same process

    def distributed(engine: str, i: int) -> tuple[dict, Path]:
        folder = work / f"{engine}-{i}"
        folder.mkdir()
        wall, cpu, tree = time.perf_counter(), time.process_time(), tree_cpu(jvm)
        if engine == "dask":
            run = run_distributed(str(source), spec, numeric, str(folder), args.workers, args.partitioning,
                                  args.sample, seed=i, client=client)
        else:
            from kgen.mondrian.spark import run_spark

            run = run_spark(session, str(source), spec, numeric, str(folder), args.workers, args.partitioning,
                            args.sample, seed=i)
        elapsed, own, everything = time.perf_counter() - wall, time.process_time() - cpu, charged(tree, tree_cpu(jvm),
                                                                                                 engine)
        metrics = summary(spec, [t.result for t in run.tasks])
        return {"wall": elapsed, "cpu": own + sum(t.cpu_seconds for t in run.tasks), "tree_cpu": everything,
                "coordinator_cpu": own, "fragments": len(run.tasks), "dp": metrics["dp"], "ncp": metrics["ncp"],
                "tasks": [{"rows": t.result.rows, "read": t.read_seconds, "anonymize": t.anonymize_seconds,
                           "write": t.write_seconds, "cpu": t.cpu_seconds, "worker": t.worker}
                          for t in run.tasks]}, folder

    central, dist, spark = [], [], []
    try:
        for i in range(args.repeat):
            wall, cpu, tree = time.perf_counter(), time.process_time(), tree_cpu(jvm)
            result, seconds = anonymize_file(source, spec, work / "central.csv")
            central.append({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                            "tree_cpu": charged(tree, tree_cpu(jvm), None), **seconds, "dp": result.dp,
                            "classes": result.classes})
            line = f"run {i}: centralized {central[-1]['wall']:.2f} s wall / {central[-1]['cpu']:.2f} s CPU"
            folders = {}
            for engine in engines:
                row, folders[engine] = distributed(engine, i)
                (dist if engine == "dask" else spark).append(row)
                line += (f"; {engine} ({args.workers} workers, {row['fragments']} fragments) {row['wall']:.2f} s "
                         f"wall / {row['cpu']:.2f} s CPU ({row['tree_cpu']:.2f} s all processes)")
            if len(folders) == 2:
                spark[-1]["same_release"] = same_parts(folders["dask"], folders["spark"])
                line += f"; same release: {'yes' if spark[-1]['same_release'] else 'NO'}"
            for folder in folders.values():
                shutil.rmtree(folder)
            print(line, flush=True)
    finally:
        client.close()
        cluster.close()
        if session is not None:
            session.stop()
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "rows": args.rows, "format": args.format, "load_average": list(__import__("os").getloadavg()),
        "workers": args.workers, "partitioning": args.partitioning, "sample": args.sample,
        "k": args.k, "l": args.l, "repeat": args.repeat, "cluster_start_seconds": cluster_start,
        "centralized": central, "distributed": dist,
        "median": {"centralized_wall": statistics.median(c["wall"] for c in central),
                   "centralized_cpu": statistics.median(c["cpu"] for c in central),
                   "centralized_tree_cpu": statistics.median(c["tree_cpu"] for c in central)},
    }
    for name, rows in (("distributed", dist), ("spark", spark)):
        if rows:
            out["median"].update({f"{name}_{key}": statistics.median(r[key] for r in rows)
                                  for key in ("wall", "cpu", "tree_cpu")})
    if spark:
        out.update(spark=spark, spark_start_seconds=spark_start,
                   spark_same_release=all(r.get("same_release", False) for r in spark) if dist else None)
    m = out["median"]
    text = (f"median of {args.repeat}: centralized {m['centralized_wall']:.2f} s wall ({m['centralized_cpu']:.2f} s "
            f"CPU, {m['centralized_tree_cpu']:.2f} all processes)")
    for name, label in (("distributed", "dask"), ("spark", "spark")):
        if f"{name}_wall" in m:
            text += (f"; {label} {m[f'{name}_wall']:.2f} s wall ({m[f'{name}_cpu']:.2f} s CPU, "
                     f"{m[f'{name}_tree_cpu']:.2f} all processes): {m['centralized_wall'] / m[f'{name}_wall']:.2f}x")
    text += f"; cluster start {cluster_start:.2f} s" + (f", Spark start {spark_start:.2f} s" if spark else "")
    text += " (apart)" + (f"; Spark release identical to Dask's in every run: {out['spark_same_release']}"
                          if spark and dist else "")
    print(text)
    if args.output:
        Path(args.output).mkdir(parents=True, exist_ok=True)
        name = f"benchmark_{args.format}" + ("_spark" if spark else "") + ".json"
        (Path(args.output) / name).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
