"""The distributed-Mondrian paper's experiments on KGen's Mondrian (issue 16): Figure 11, Figure 10's shape,
and a comparison with KGen's global recoding.

1. Figure 11: DP and NCP (mean and population variance over `runs` runs; runs differ in the coordinator's
   sample) of distributed Mondrian on Poker Hand for k in {5, 10, 20}, l = 2, 5 and 10 workers, samples of
   0.1 %, 0.01 % and 0.001 %, quantile and multidimensional partitioning, beside centralized Mondrian
   (deterministic: one run). The fragments are run one after another in this process with the same
   per-fragment function the Dask tasks run (identical releases: tests/test_mondrian_distributed.py), so
   the figures do not depend on the machine's load; the first run of each setting is written and checked
   by the independent verifier.
2. Time against workers: centralized beside distributed on a Dask LocalCluster of 1..W workers on this
   machine (wall and CPU seconds, side by side), and the per-fragment times of serial runs, which predict the
   wall time of larger clusters (each worker's fragments, longest-first onto the least loaded worker).
3. KGen's global recoding (kgen.run.pipeline.anonymize, exact OLA, no suppression, same k and l) against Mondrian on
   Adult with QI {native-country, occupation, age} and sensitive salary-class (the stand-in for the paper's
   ACS PUMS {ST, OCCP, AGEP} / WAGP), with the same hierarchies and the same DP and NCP computed on both
   releases by one function.

    python -m experiments.mondrian            # quick: 100,000 hands, 2 runs
    python -m experiments.mondrian --full     # the paper's size: 1,000,000 hands, 5 runs
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from kgen.check.mondrian import check_release
from kgen.datasets import poker
from kgen.mondrian import anonymize_file, build_spec, load_tree, numeric_columns
from kgen.mondrian.core import summary
from kgen.mondrian.distributed import run_distributed, run_serial
from kgen.mondrian.storage import Source

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "kgen" / "data"
DEFAULT_OUTPUT = REPO / "results" / "mondrian"
SAMPLES = (0.001, 0.0001, 0.00001)
WORKERS = (5, 10)
PARTITIONINGS = ("quantile", "multidim")
# Figure 11 of the paper (1,000,000 hands, l = 2): (k, sample, partitioning, workers) -> (DP, NCP) means
PAPER = {
    5: {"centralized": (7.23e06, 1.50e06),
        (0.001, "quantile"): ((7.14e06, 7.10e06), (1.83e06, 1.97e06)),
        (0.001, "multidim"): ((7.22e06, 7.22e06), (1.80e06, 1.80e06)),
        (0.0001, "quantile"): ((7.14e06, 7.10e06), (1.83e06, 1.96e06)),
        (0.0001, "multidim"): ((7.17e06, 7.15e06), (1.79e06, 1.80e06)),
        (0.00001, "quantile"): ((7.14e06, 7.13e06), (1.83e06, 1.91e06)),
        (0.00001, "multidim"): ((7.20e06, 7.20e06), (1.80e06, 1.80e06))},
    10: {"centralized": (1.43e07, 1.82e06),
         (0.001, "quantile"): ((1.42e07, 1.41e07), (2.20e06, 2.34e06)),
         (0.001, "multidim"): ((1.42e07, 1.43e07), (2.17e06, 2.17e06)),
         (0.0001, "quantile"): ((1.42e07, 1.41e07), (2.20e06, 2.34e06)),
         (0.0001, "multidim"): ((1.42e07, 1.42e07), (2.17e06, 2.17e06)),
         (0.00001, "quantile"): ((1.42e07, 1.41e07), (2.20e06, 2.24e06)),
         (0.00001, "multidim"): ((1.43e07, 1.47e07), (2.17e06, 2.17e06))},
    20: {"centralized": (2.88e07, 2.07e06),
         (0.001, "quantile"): ((2.88e07, 2.86e07), (2.50e06, 2.66e06)),
         (0.001, "multidim"): ((2.88e07, 2.88e07), (2.47e06, 2.46e06)),
         (0.0001, "quantile"): ((2.88e07, 2.85e07), (2.50e06, 2.65e06)),
         (0.0001, "multidim"): ((2.88e07, 2.88e07), (2.47e06, 2.46e06)),
         (0.00001, "quantile"): ((2.88e07, 2.86e07), (2.50e06, 2.63e06)),
         (0.00001, "multidim"): ((2.88e07, 2.88e07), (2.47e06, 2.46e06))},
}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def fmt(value: float) -> str:
    return f"{value:.3e}".replace("e+0", "e0").replace("e-0", "e-0")


# ---------------------------------------------------------------------------------------------- Figure 11

def figure11(source: Path, ks: Sequence[int], runs: int, work: Path, rows: int) -> list[dict]:
    records = []
    for k in ks:
        spec = build_spec(Source(source), list(poker.QIS), k, 2, "CLASS")
        started = time.perf_counter()
        result, _ = anonymize_file(source, spec, work / "central.csv")
        verdict = check_release(source, work / "central.csv", list(poker.QIS), k, 2, "CLASS")
        m = summary(spec, [result])
        records.append({"k": k, "setting": "centralized", "sample": "", "partitioning": "", "workers": "",
                        "run": 0, "fragments": 1, "dp": m["dp"], "ncp": m["ncp"], "classes": m["classes"],
                        "seconds": time.perf_counter() - started, "verified": verdict.passed})
        log(f"k={k} centralized: DP {fmt(m['dp'])} NCP {fmt(m['ncp'])} verified {verdict.passed}")
        for sample in SAMPLES:
            for partitioning in PARTITIONINGS:
                for workers in WORKERS:
                    for run in range(runs):
                        folder = work / "parts" if run == 0 else None
                        if folder is not None:
                            shutil.rmtree(folder, ignore_errors=True)
                            folder.mkdir()
                        started = time.perf_counter()
                        done = run_serial(str(source), spec, numeric_columns(spec), str(folder) if folder else None,
                                          workers, partitioning, sample, seed=run)
                        m = summary(spec, [t.result for t in done.tasks])
                        verified = ""
                        if folder is not None:
                            report = work / "parts.json"
                            report.write_text(json.dumps({"fragments": [
                                {"part": Path(t.path).name, "condition": c}
                                for t, c in zip(done.tasks, done.conditions)]}))
                            verified = check_release(source, folder, list(poker.QIS), k, 2, "CLASS",
                                                     report=report).passed
                        records.append({"k": k, "setting": "distributed", "sample": sample,
                                        "partitioning": partitioning, "workers": workers, "run": run,
                                        "fragments": len(done.tasks), "dp": m["dp"], "ncp": m["ncp"],
                                        "classes": m["classes"], "seconds": time.perf_counter() - started,
                                        "verified": verified, "sample_rows": done.sample_rows})
                    last = records[-runs:]
                    log(f"k={k} sample={sample:g} {partitioning} W={workers} ({last[0]['fragments']} fragments): "
                        f"DP {fmt(np.mean([r['dp'] for r in last]))} NCP {fmt(np.mean([r['ncp'] for r in last]))}"
                        f" verified {last[0]['verified']}")
    return records


def figure11_table(records: list[dict], rows: int) -> str:
    """Figure 11 as markdown: mean ± standard deviation (the variance is its square; the paper's ± values have
    the magnitude of a standard deviation: a variance of DP across runs is of order 1e8)."""
    scale = 1_000_000 / rows
    lines = []
    for k in sorted({r["k"] for r in records}):
        central = next(r for r in records if r["k"] == k and r["setting"] == "centralized")
        paper = PAPER.get(k, {})
        runs = max(r["run"] for r in records if r["k"] == k) + 1
        lines += [f"### k = {k}, l = 2 ({rows:,} hands{'' if scale == 1 else f'; paper figures x {1 / scale:g}'}; "
                  f"mean ± standard deviation over {runs} run(s); fr. = fragments of the first run)",
                  "",
                  "| sample | partitioning | DP, 5 workers | DP, 10 workers | NCP, 5 workers | NCP, 10 workers | "
                  "paper DP 5 / 10 | paper NCP 5 / 10 |",
                  "|---|---|---|---|---|---|---|---|"]
        for sample in SAMPLES:
            for partitioning in PARTITIONINGS:
                cells = {}
                for workers in WORKERS:
                    rs = [r for r in records if r["k"] == k and r["setting"] == "distributed"
                          and r["sample"] == sample and r["partitioning"] == partitioning and r["workers"] == workers]
                    if not rs:
                        continue
                    for metric in ("dp", "ncp"):
                        values = np.array([r[metric] for r in rs], dtype=float)
                        cells[(metric, workers)] = (f"{fmt(values.mean())} ± {fmt(values.std())} "
                                                    f"({rs[0]['fragments']} fr.)")
                if not cells:
                    continue
                p = paper.get((sample, partitioning))
                pdp = " / ".join(fmt(v / scale) for v in p[0]) if p else ""
                pncp = " / ".join(fmt(v / scale) for v in p[1]) if p else ""
                lines.append(f"| {sample * 100:g} % | {partitioning} | {cells.get(('dp', 5), '')} | "
                             f"{cells.get(('dp', 10), '')} | {cells.get(('ncp', 5), '')} | "
                             f"{cells.get(('ncp', 10), '')} | {pdp} | {pncp} |")
        pc = paper.get("centralized")
        lines.append(f"| centralized | | {fmt(central['dp'])} | | {fmt(central['ncp'])} | | "
                     f"{fmt(pc[0] / scale) if pc else ''} | {fmt(pc[1] / scale) if pc else ''} |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- Figure 10

def lpt(times: Sequence[float], workers: int) -> float:
    """Longest-processing-time-first assignment of task times to workers: the busiest worker's load."""
    loads = [0.0] * workers
    for t in sorted(times, reverse=True):
        loads[loads.index(min(loads))] += t
    return max(loads)


def timing(source: Path, cluster_workers: Sequence[int], predict_workers: Sequence[int], k: int, work: Path
           ) -> dict:
    from distributed import Client, LocalCluster

    spec = build_spec(Source(source), list(poker.QIS), k, 2, "CLASS")
    numeric = numeric_columns(spec)
    measured = []
    for workers in cluster_workers:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
                Client(cluster, set_as_default=False) as client:
            wall, cpu = time.perf_counter(), time.process_time()
            anonymize_file(source, spec, work / "central.csv")
            central = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
            row = {"workers": workers, "centralized_wall": central["wall"], "centralized_cpu": central["cpu"]}
            for partitioning in PARTITIONINGS:
                folder = work / f"time-{partitioning}-{workers}"
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                wall, cpu = time.perf_counter(), time.process_time()
                run = run_distributed(str(source), spec, numeric, str(folder), workers, partitioning, 0.001, seed=0,
                                      client=client)
                row[f"{partitioning}_wall"] = time.perf_counter() - wall
                row[f"{partitioning}_cpu"] = time.process_time() - cpu + sum(t.cpu_seconds for t in run.tasks)
                row[f"{partitioning}_fragments"] = len(run.tasks)
                shutil.rmtree(folder)
            measured.append(row)
            log(f"LocalCluster W={workers}: centralized {row['centralized_wall']:.1f} s; quantile "
                f"{row['quantile_wall']:.1f} s; multidim {row['multidim_wall']:.1f} s")
    predicted = []
    for workers in predict_workers:
        row = {"workers": workers}
        for partitioning in PARTITIONINGS:
            run = run_serial(str(source), spec, numeric, None, workers, partitioning, 0.001, seed=0)
            tasks = [t.read_seconds + t.anonymize_seconds + t.write_seconds for t in run.tasks]
            row[f"{partitioning}_fragments"] = len(tasks)
            row[f"{partitioning}_max_fragment"] = max(tasks)
            row[f"{partitioning}_predicted"] = run.seconds["plan"] + lpt(tasks, workers)
            row[f"{partitioning}_serial_sum"] = sum(tasks)
        predicted.append(row)
        log(f"predicted W={workers}: quantile {row['quantile_predicted']:.1f} s, multidim "
            f"{row['multidim_predicted']:.1f} s")
    return {"measured": measured, "predicted": predicted}


def timing_table(t: dict) -> str:
    lines = ["| workers | centralized wall (CPU) | quantile wall (CPU) | multidim wall (CPU) |", "|---|---|---|---|"]
    for r in t["measured"]:
        lines.append(f"| {r['workers']} | {r['centralized_wall']:.1f} s ({r['centralized_cpu']:.1f}) | "
                     f"{r['quantile_wall']:.1f} s ({r['quantile_cpu']:.1f}) | "
                     f"{r['multidim_wall']:.1f} s ({r['multidim_cpu']:.1f}) |")
    lines += ["", "| workers | quantile: fragments, longest, predicted wall | multidim: fragments, longest, predicted "
                  "wall |", "|---|---|---|"]
    for r in t["predicted"]:
        lines.append(f"| {r['workers']} | {r['quantile_fragments']}, {r['quantile_max_fragment']:.2f} s, "
                     f"{r['quantile_predicted']:.2f} s | {r['multidim_fragments']}, "
                     f"{r['multidim_max_fragment']:.2f} s, {r['multidim_predicted']:.2f} s |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- KGen comparison

def loss(release: pd.DataFrame, qis: Sequence[str], trees: dict, numeric: dict) -> dict:
    """DP (released classes; suppressed rows, all `*`, count as one class) and NCP of a release, by one
    function for both algorithms: hierarchy labels by their leaves (0 for a single leaf), intervals by width."""
    sizes = release.groupby(list(qis), sort=False).size().to_numpy()
    ncp = 0.0
    for q in qis:
        cells = release[q].astype(str)
        counts = cells.value_counts()
        if q in trees:
            tree = trees[q]
            leaves = {}
            for level, labels in enumerate(tree.labels):
                for i, label in enumerate(labels):
                    leaves.setdefault(label, int(tree.leaf_count[level][i]))
            total = len(tree.leaves)
            ncp += sum(n * (leaves.get(c, total) / total if leaves.get(c, total) > 1 else 0.0)
                       for c, n in counts.items())
        else:
            low, high = numeric[q]
            for c, n in counts.items():
                if c.startswith("["):
                    a, b = map(float, c[1:-1].split(","))
                    ncp += n * (b - a) / (high - low)
                elif c == "*":
                    ncp += n
    return {"dp": int(np.dot(sizes, sizes)), "classes": int(sizes.size), "ncp": ncp,
            "ncp_per_cell": ncp / (len(release) * len(qis))}


def kgen_comparison(ks: Sequence[int]) -> list[dict]:
    from kgen.run.config import Config
    from kgen.run.pipeline import anonymize

    qis = ["native-country", "occupation", "age"]
    source = DATA / "adult.csv"
    hierarchies = {q: str(DATA / f"adult_hierarchy_{q}.csv") for q in qis}
    trees = {q: load_tree(hierarchies[q], q) for q in qis}
    out = []
    for k in ks:
        config = Config(qi=qis, k=k, suppression=0.0, sensitive=["salary-class"], l=2, hierarchies=hierarchies,
                        algorithm="ola", keep_unnamed=True)
        started = time.perf_counter()
        result = anonymize(str(source), config)
        frame = pd.DataFrame({c: list(result.release.values[c]) for c in result.release.columns})
        row = {"k": k, "algorithm": f"KGen global recoding (OLA, node {list(result.evaluation.node)})",
               **loss(frame, qis, trees, {}), "seconds": time.perf_counter() - started}
        out.append(row)
        for label, strategies in (("Mondrian, hierarchies for all three", {q: "hierarchy" for q in qis}),):
            spec = build_spec(Source(source), qis, k, 2, "salary-class", strategies, hierarchies,
                              keep_unnamed=True)
            started = time.perf_counter()
            mondrian, _ = anonymize_file(source, spec, None)
            out.append({"k": k, "algorithm": label, **loss(mondrian.release, qis, trees, {}),
                        "seconds": time.perf_counter() - started})
        log(f"Adult k={k}: " + "; ".join(f"{r['algorithm']}: DP {fmt(r['dp'])} NCP {fmt(r['ncp'])}"
                                          for r in out[-2:]))
    return out


def kgen_table(rows: list[dict]) -> str:
    lines = ["| k | algorithm | classes | DP | DP/N | NCP | NCP per cell | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['k']} | {r['algorithm']} | {r['classes']} | {fmt(r['dp'])} | {r['dp'] / 30162:.1f} | "
                     f"{fmt(r['ncp'])} | {r['ncp_per_cell']:.4f} | {r['seconds']:.1f} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,000,000 hands and 5 runs (the paper's setting)")
    parser.add_argument("--rows", type=int, help="hands (default: 100,000 quick, 1,000,000 full)")
    parser.add_argument("--runs", type=int, help="runs per distributed setting (default: 2 quick, 5 full)")
    parser.add_argument("--k", default="5,10,20", help="k values, comma-separated")
    parser.add_argument("--parts", default="fig11,time,kgen", help="which experiments: fig11, time, kgen")
    parser.add_argument("--cluster-workers", default="1,2,3", help="LocalCluster sizes to time")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="output folder (default results/mondrian)")
    args = parser.parse_args(argv)
    rows = args.rows or (1_000_000 if args.full else 100_000)
    runs = args.runs or (5 if args.full else 2)
    ks = [int(k) for k in args.k.split(",")]
    parts = set(args.parts.split(","))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kgen-mondrian-exp-"))
    mode = "full" if args.full else "quick"
    meta = {"mode": mode, "rows": rows, "runs": runs, "k": ks, "python": platform.python_version(),
            "machine": platform.machine(), "cpus": __import__("os").cpu_count(), "started": time.ctime()}
    try:
        source = work / "poker.parquet"  # tasks read their fragments by condition: a columnar file scans fast
        poker.write_parquet(source, rows=rows, seed=0)
        log(f"Poker Hand: {rows:,} hands written")
        if "fig11" in parts:
            records = figure11(source, ks, runs, work, rows)
            tag = f"{mode}_k{'-'.join(map(str, ks))}"
            pd.DataFrame(records).to_csv(out / f"fig11_{tag}.csv", index=False)
            (out / f"fig11_{tag}.md").write_text(figure11_table(records, rows) + "\n")
        if "time" in parts:
            cluster = [int(w) for w in args.cluster_workers.split(",")]
            t = timing(source, cluster, [2, 4, 5, 8, 10, 12, 16], ks[0], work)
            (out / f"time_{mode}.json").write_text(json.dumps(t, indent=2) + "\n")
            (out / f"time_{mode}.md").write_text(timing_table(t) + "\n")
        if "kgen" in parts:
            rows_k = kgen_comparison(ks)
            pd.DataFrame(rows_k).to_csv(out / "kgen_comparison.csv", index=False)
            (out / "kgen_comparison.md").write_text(kgen_table(rows_k) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta["finished"] = time.ctime()
    (out / f"environment_{mode}_{'-'.join(sorted(parts))}.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

