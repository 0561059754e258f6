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
from pathlib import Path

from benchmarks import synthetic
from kgen.algorithms import make_search
from kgen.api import Prepared, prepare
from kgen.config import Config
from kgen.parallel import evaluator_for
from kgen.table import Table, from_mapping, read_csv
from lattice.search.base import Limits, SearchResult

DATA = Path(os.environ.get("KGEN_DATA", "/work/shared/data"))
RESULTS = Path(__file__).resolve().parent.parent / "results" / "benchmarks"
MODES = {"serial": (1, "loky"), "loky 2": (2, "loky"), "dask 2": (2, "dask")}
SEED = 1


def cargo(q: int = 97) -> Prepared:
    """Cargo 2000, the first q columns after `nr` as QIs, decimal hierarchies, '?' missing, k = 2, t = 0.005."""
    table = read_csv(DATA / "cargo2000" / "c2k_data_comma.csv")
    return prepare(table, Config(qi=table.columns[1 : 1 + q], identifiers=("nr",), k=2, suppression=0.005))


def synthetic_table(rows: int) -> Prepared:
    """The deterministic synthetic table of `benchmarks.synthetic` (10 QIs), k = 2, t = 0.005."""
    data = synthetic.generate(rows)
    table: Table = from_mapping({c: data[c].astype(str).tolist() for c in synthetic.COLUMNS})
    return prepare(table, Config(qi=synthetic.COLUMNS, k=2, suppression=0.005))


def outcome(result: SearchResult) -> tuple:
    """What a run decides (no wall-clock times): equal across backends for the same seed."""
    trace = [{k: v for k, v in r.items() if k != "seconds"} for r in result.trace]
    return result.best, result.evaluations, result.stopped, trace


def fresh(prepared: Prepared):
    e = prepared.evaluator
    return type(e)(e.table, e.models, e.suppression_limit, e.objective, e.kernel)


def ga_runs(name: str, prepared: Prepared, evaluations: int) -> list[list[object]]:
    """The GA serial / loky 2 / dask 2 on one table; one row per mode."""
    rows, reference, serial_search, serial_total = [], None, 0.0, 0.0
    for mode, (jobs, backend) in MODES.items():
        search = make_search("kgen", {"population": 100, "max_evaluations": evaluations})
        begin = time.perf_counter()
        with evaluator_for(fresh(prepared), jobs, backend) as evaluator:
            started = time.perf_counter()
            result = search.run(prepared.problem(evaluator), Limits(seed=SEED))
            searched = time.perf_counter()
            stats = getattr(evaluator, "stats", {})
        total = time.perf_counter() - begin
        start, seconds = started - begin, searched - started
        same = "reference" if reference is None else ("yes" if outcome(result) == reference else "NO")
        if reference is None:
            reference, serial_search, serial_total = outcome(result), seconds, total
        best = "none feasible" if result.best is None else f"{result.best.loss:.4f}"
        rows.append([name, mode, result.evaluations, best, same, round(start, 2), round(seconds, 2),
                     round(total, 2), round(serial_search / seconds, 2), round(serial_total / total, 2),
                     stats.get("tasks", "-"), round(os.getloadavg()[0], 1)])
        print(rows[-1], flush=True)
    return rows


def batch_times(prepared: Prepared, batch: int, repeats: int) -> list[object]:
    """Median seconds to evaluate `batch` fresh random nodes: serial, and on warm loky 2 / dask 2 pools."""
    rng = random.Random(SEED)
    batches = [list({prepared.box.random_node(rng) for _ in range(batch)}) for _ in range(repeats + 1)]
    medians = []
    for jobs, backend in MODES.values():
        with evaluator_for(fresh(prepared), jobs, backend) as evaluator:
            evaluator.evaluate_many(batches[0])  # warm: workers started, table shipped
            times = []
            for nodes in batches[1:]:
                begin = time.perf_counter()
                evaluator.evaluate_many(nodes)
                times.append(time.perf_counter() - begin)
        medians.append(statistics.median(times))
    per_node_ms = 1000 * medians[0] / len(batches[1])
    return [round(per_node_ms, 3), *(round(1000 * m, 1) for m in medians),
            round(medians[0] / medians[1], 2), round(medians[0] / medians[2], 2), round(os.getloadavg()[0], 1)]


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
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    cargo97 = timed("Cargo 2000, 97 QIs", cargo)
    sweep = []
    for rows in [int(r) for r in args.sweep_rows.split(",") if r]:
        sweep.append([f"synthetic {rows:,} rows", *batch_times(timed(f"{rows} rows", lambda r=rows: synthetic_table(r)),
                                                              args.batch, args.repeats)])
        print(sweep[-1], flush=True)
    sweep.append(["Cargo 2000, 97 QIs (3,942 rows)", *batch_times(cargo97, args.batch, args.repeats)])
    print(sweep[-1], flush=True)

    runs = ga_runs("Cargo 2000, 97 QIs", cargo97, args.cargo_evaluations)
    big = timed(f"synthetic {args.rows} rows", lambda: synthetic_table(args.rows))
    runs += ga_runs(f"synthetic {args.rows:,} rows, 10 QIs", big, args.synthetic_evaluations)
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
        f"--cargo-evaluations {args.cargo_evaluations} --repeats {args.repeats}`; {machine}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The machine's 2 cores are shared with other "
        "jobs (the 1-minute load average, in the last column, counts runnable processes: above 2 the cores "
        "were already busy, and extra workers only win a larger share of them): compare the ratios of one run, "
        "not seconds across runs. Workers: loky 2 = the parent and 1 loky process; dask 2 = a Dask "
        "LocalCluster of 2 single-threaded worker processes on 127.0.0.1 (started by kgen).",
        "## The GA, population 100, seed 1",
        "speed-up = serial seconds / parallel seconds (search only, and total with start-up). 'same' = best "
        "node, evaluations and per-generation trace equal to the serial run's.",
        table(["table", "mode", "evaluations", "best LOG", "same", "start s", "search s", "total s",
               "speed-up search", "speed-up total", "tasks", "load avg"], runs),
        f"## Break-even: one batch of {args.batch} fresh random nodes on warm workers (median of "
        f"{args.repeats})",
        table(["table", "serial ms/node", "serial ms", "loky 2 ms", "dask 2 ms", "loky speed-up",
               "dask speed-up", "load avg"], sweep),
    ]) + "\n"
    (RESULTS / "parallel.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
