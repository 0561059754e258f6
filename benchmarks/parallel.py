"""Speed-up of parallel evaluation against serial: 2 local processes (loky) and a 2-worker local Dask cluster.

Measured side by side in one run (the machine is shared, so compare ratios, not seconds across runs):

1. The GA ('kgen') with the paper's population 100, same seed, serial / loky 2 / dask 2, on Cargo 2000 at
   97 QIs (5000 evaluations) and on the 1,000,000-row 10-QI synthetic table (a smaller budget: a node costs
   ~0.2 s there). Each parallel run must give the serial run's best node, evaluations and trace.
   "start" is pool/cluster start-up and shipping the table; "search" the GA itself.
2. Break-even: one population-sized batch of fresh random nodes, evaluated serially and on warm pools, on
   synthetic tables of growing size and on Cargo 2000 at 97 QIs: where does parallel evaluation start to pay?

    python -m benchmarks.parallel [--rows 1000000] [--synthetic-evaluations 300] [--repeats 3]

Writes results/benchmarks/parallel.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import psutil

from benchmarks import synthetic
from kgen.io.table import Table, from_mapping, read_csv
from kgen.run.algorithms import make_search
from kgen.run.config import Config
from kgen.run.prepare import Prepared, prepare
from kgen.runners.parallel import evaluator_for
from lattice.search.base import Limits, SearchResult

DATA = Path(os.environ.get("KGEN_DATA", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent.parent / "results" / "benchmarks"
MODES = {"serial": (1, "loky"), "loky 2": (2, "loky"), "dask 2": (2, "dask")}
SEED = 1


def cargo(q: int = 97) -> Prepared:
    """Cargo 2000, the first q columns after `nr` as QIs, decimal hierarchies, '?' missing, k = 2, t = 0.005."""
    table = read_csv(DATA / "cargo2000" / "c2k_data_comma.csv")
    return prepare(table, Config(qi=table.columns[1 : 1 + q], identifiers=("nr",), k=2, suppression=0.005,
                                 keep_unnamed=True))


def synthetic_table(rows: int) -> Prepared:
    """The deterministic synthetic table of `benchmarks.synthetic` (10 QIs), k = 2, t = 0.005."""
    data = synthetic.generate(rows)
    table: Table = from_mapping({c: data[c].astype(str).tolist() for c in synthetic.COLUMNS})
    return prepare(table, Config(qi=synthetic.COLUMNS, k=2, suppression=0.005))


def tree_cpu() -> float:
    """CPU seconds used so far by this process and its live descendants (loky workers, a local Dask
    cluster's nanny and worker processes)."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def outcome(result: SearchResult) -> tuple:
    """What a run decides (no wall-clock times): equal across backends for the same seed."""
    trace = [{k: v for k, v in r.items() if k != "seconds"} for r in result.trace]
    return result.best, result.evaluations, result.stopped, trace


def fresh(prepared: Prepared):
    e = prepared.evaluator
    return type(e)(e.table, e.models, e.suppression_limit, e.objective, e.kernel)


def ga_runs(name: str, prepared: Prepared, evaluations: int, rounds: int) -> list[list[object]]:
    """The GA serial / loky 2 / dask 2 on one table, `rounds` times (alternating the order of the modes, so
    a change in the machine's load hits them alike); one row per mode with median times."""
    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    cpus: dict[str, list[float]] = {mode: [] for mode in MODES}
    info: dict[str, tuple] = {}
    reference = None
    for round_ in range(rounds):
        order = list(MODES) if round_ % 2 == 0 else list(reversed(MODES))
        for mode in order:
            jobs, backend = MODES[mode]
            search = make_search("kgen", {"population": 100, "max_evaluations": evaluations})
            begin = time.perf_counter()
            with evaluator_for(fresh(prepared), jobs, backend) as evaluator:
                started, cpu = time.perf_counter(), tree_cpu()
                result = search.run(prepared.problem(evaluator), Limits(seed=SEED))
                searched, cpu = time.perf_counter(), tree_cpu() - cpu
                tasks = evaluator.runner.stats["tasks"] if evaluator.runner is not None else "-"
            total = time.perf_counter() - begin
            reference = reference or outcome(result)
            same = info.get(mode, (True,))[0] and outcome(result) == reference
            best = "none feasible" if result.best is None else f"{result.best.loss:.4f}"
            info[mode] = (same, result.evaluations, best, tasks)
            times[mode].append((started - begin, searched - started))
            cpus[mode].append(cpu)
            print(name, mode, round(searched - started, 2), flush=True)
    rows = []
    serial_search = statistics.median(t[1] for t in times["serial"])
    serial_total = statistics.median(sum(t) for t in times["serial"])
    serial_cpu = statistics.median(cpus["serial"])
    for mode in MODES:
        same, evaluations_done, best, tasks = info[mode]
        start = statistics.median(t[0] for t in times[mode])
        search_s = statistics.median(t[1] for t in times[mode])
        total = statistics.median(sum(t) for t in times[mode])
        rows.append([name, mode, evaluations_done, best, "yes" if same else "NO", round(start, 2),
                     round(search_s, 2), round(total, 2), round(serial_search / search_s, 2),
                     round(serial_total / total, 2), round(statistics.median(cpus[mode]) / serial_cpu, 2), tasks,
                     round(os.getloadavg()[0], 1)])
    return rows


def batch_times(prepared: Prepared, batch: int, repeats: int) -> list[object]:
    """Median seconds to evaluate `batch` fresh random nodes: serial, and on warm loky 2 / dask 2 pools.

    The three evaluators stay open side by side and each repeat runs the same fresh batch on each of them,
    in rotating order, so a change in the machine's load hits all modes alike."""
    rng = random.Random(SEED)
    batches = [list({prepared.box.random_node(rng) for _ in range(batch)}) for _ in range(repeats + 1)]
    with ExitStack() as stack:
        evaluators = [stack.enter_context(evaluator_for(fresh(prepared), jobs, backend))
                      for jobs, backend in MODES.values()]
        for evaluator in evaluators:
            evaluator.evaluate_many(batches[0])  # warm: workers started, table shipped
        times: list[list[float]] = [[] for _ in evaluators]
        cpus: list[list[float]] = [[] for _ in evaluators]
        for r, nodes in enumerate(batches[1:]):
            for k in range(len(evaluators)):
                m = (k + r) % len(evaluators)
                begin, cpu = time.perf_counter(), tree_cpu()
                evaluators[m].evaluate_many(nodes)
                times[m].append(time.perf_counter() - begin)
                cpus[m].append(tree_cpu() - cpu)
    medians = [statistics.median(t) for t in times]
    cpu = [statistics.median(c) for c in cpus]
    per_node_ms = 1000 * medians[0] / len(batches[1])
    return [round(per_node_ms, 3), *(round(1000 * m, 1) for m in medians),
            round(medians[0] / medians[1], 2), round(medians[0] / medians[2], 2),
            round(cpu[1] / cpu[0], 2), round(cpu[2] / cpu[0], 2), round(os.getloadavg()[0], 1)]


def timed(label: str, body: Callable[[], Prepared]) -> Prepared:
    begin = time.perf_counter()
    value = body()
    print(f"prepared {label} in {time.perf_counter() - begin:.1f} s", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=synthetic.ROWS, help="rows of the large synthetic table")
    parser.add_argument("--synthetic-evaluations", type=int, default=300)
    parser.add_argument("--cargo-evaluations", type=int, default=5000)
    parser.add_argument("--sweep-rows", default="1000,10000,100000", help="synthetic sizes of the break-even sweep")
    parser.add_argument("--batch", type=int, default=100, help="nodes per batch in the sweep (a population)")
    parser.add_argument("--repeats", type=int, default=5, help="batches per table in the break-even sweep")
    parser.add_argument("--cargo-rounds", type=int, default=3, help="GA runs per mode on Cargo 2000")
    parser.add_argument("--synthetic-rounds", type=int, default=1, help="GA runs per mode on the large table")
    args = parser.parse_args()

    cargo97 = timed("Cargo 2000, 97 QIs", cargo)
    sweep = []
    for rows in [int(r) for r in args.sweep_rows.split(",") if r]:
        sweep.append([f"synthetic {rows:,} rows", *batch_times(timed(f"{rows} rows", lambda r=rows: synthetic_table(r)),
                                                              args.batch, args.repeats)])
        print(sweep[-1], flush=True)
    sweep.append(["Cargo 2000, 97 QIs (3,942 rows)", *batch_times(cargo97, args.batch, args.repeats)])
    print(sweep[-1], flush=True)

    runs = ga_runs("Cargo 2000, 97 QIs", cargo97, args.cargo_evaluations, args.cargo_rounds)
    big = timed(f"synthetic {args.rows} rows", lambda: synthetic_table(args.rows))
    runs += ga_runs(f"synthetic {args.rows:,} rows, 10 QIs", big, args.synthetic_evaluations, args.synthetic_rounds)
    write(runs, sweep, args)


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(str(v) for v in row) + " |" for row in rows])


def write(runs: list[list[object]], sweep: list[list[object]], args: argparse.Namespace) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores"
    text = "\n\n".join([
        "# Parallel evaluation: speed-up against serial",
        f"`python -m benchmarks.parallel --rows {args.rows} --synthetic-evaluations {args.synthetic_evaluations} "
        f"--cargo-evaluations {args.cargo_evaluations} --repeats {args.repeats} --cargo-rounds {args.cargo_rounds} "
        f"--synthetic-rounds {args.synthetic_rounds}`; {machine}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The machine's 2 cores are shared with other "
        "jobs (the 1-minute load average, in the last column, counts runnable processes: above 2 the cores "
        "were already busy, and extra workers only win a larger share of them): compare the ratios of one run, "
        "not seconds across runs. Workers: loky 2 = the parent and 1 loky process; dask 2 = a Dask "
        "LocalCluster of 2 single-threaded worker processes on 127.0.0.1 (started by kgen).",
        "## The GA, population 100, seed 1",
        f"Median of {args.cargo_rounds} rounds on Cargo 2000 and {args.synthetic_rounds} on the synthetic table "
        "(the order of the modes alternates between rounds). speed-up = serial seconds / parallel seconds "
        "(search only, and total with start-up). 'same' = best node, evaluations and per-generation trace "
        "equal to the serial run's, in every round.",
        table(["table", "mode", "evaluations", "best LOG", "same", "start s", "search s", "total s",
               "speed-up search", "speed-up total", "CPU vs serial", "tasks", "load avg"], runs),
        f"## Break-even: one batch of {args.batch} fresh random nodes on warm workers (median of "
        f"{args.repeats} batches; the three modes run each batch in rotating order)",
        table(["table", "serial ms/node", "serial ms", "loky 2 ms", "dask 2 ms", "loky speed-up",
               "dask speed-up", "loky CPU vs serial", "dask CPU vs serial", "load avg"], sweep),
        "CPU vs serial = CPU seconds of all processes (parent, loky workers, Dask scheduler, nannies and "
        "workers) over the serial run's: the work parallel evaluation adds. It does not depend on the "
        "machine's load the way wall time does: with free cores, wall time approaches serial time x "
        "(CPU vs serial) / 2 on 2 workers, as far as the batch splits evenly.",
    ]) + "\n"
    (RESULTS / "parallel.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
