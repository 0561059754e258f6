"""Node evaluation on an array device (issues 18, 29): the device evaluator beside kgen's CPU evaluator,
sized to fit a short GPU lease.

Per table size (`--rows`, e.g. 1M,4M,20M,100M), in one process:
- the table (`benchmarks.gpu_table`: ten skewed, correlated integer QIs with decimal hierarchies and a
  12-value sensitive column) drawn by the device's namespace (CuPy with `--device gpu`: seconds at 100M
  rows) and copied to the host once;
- `k` (k-anonymity, LOG): per node (distinct random nodes, one `evaluate` each, methods interleaved, fresh
  evaluators), per batch (one `evaluate_many` of a GA population) and the paper-preset KGen GA for `--ga`
  evaluations on the device (on the CPU too for `--ga-cpu` evaluations);
- every other privacy model and metric the device evaluates (`CASES`: distinct, entropy and recursive
  l-diversity, equal and ordered t-closeness, NCP, Loss, non-uniform entropy): per node.

`cpu` is kgen's `NodeEvaluator` (fast kernel + roll-up, what `--device cpu` runs); `array` the device
evaluator on numpy; `gpu` on CuPy. The CPU evaluator runs on fewer nodes where it takes seconds per node
(`--cpu-nodes`, one figure per size), and its evaluations are compared with the device's on those nodes
(integers exactly, cell-cost losses to 1e-12). Memory is measured only where it is cheap: the process's peak
resident set (getrusage) and, on CuPy, the memory pool's bytes while a node is evaluated; no tracemalloc.
Per size the cases' per-node figures come first, then the batch and the GA (the longest step); results are
rewritten after every step, so a run cut short keeps what it measured; `--deadline` (seconds) skips the
other cases' CPU references (with `--deadline-skips-cases`, the cases) once it has passed.

    python -m benchmarks.gpu --device gpu --rows 1000000,4000000,20000000,100000000 --nodes 8 \\
        --cpu-nodes 4,4,2,1 --batch 100 --cpu-batch 1000000,4000000 --ga 5000 --ga-cpu 1000 --deadline 420
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common, gpu_table
from fitness import xp_kernel
from fitness.device_evaluator import DeviceEvaluator
from fitness.encoding import EncodedTable
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
)
from fitness.objective import make_objective
from lattice.box import Box
from lattice.node import Node
from lattice.search.base import Limits, Problem

K = 5
SUPPRESSION = 0.005
S = gpu_table.SENSITIVE
CASES: dict[str, tuple[Callable[[], list[PrivacyModel]], str]] = {
    "k": (lambda: [KAnonymity(K)], "log"),
    "distinct-l": (lambda: [KAnonymity(K), DistinctLDiversity(S, 2)], "log"),
    "entropy-l": (lambda: [KAnonymity(K), EntropyLDiversity(S, 2)], "log"),
    "recursive-cl": (lambda: [KAnonymity(K), RecursiveCLDiversity(S, 3.0, 2)], "log"),
    "t-equal": (lambda: [KAnonymity(K), TCloseness(S, 0.3, "equal")], "log"),
    "t-ordered": (lambda: [KAnonymity(K), TCloseness(S, 0.2, "ordered")], "log"),
    "ncp": (lambda: [KAnonymity(K)], "ncp"),
    "loss": (lambda: [KAnonymity(K)], "loss"),
    "entropy": (lambda: [KAnonymity(K)], "entropy"),
}
HEADERS = ["rows", "case", "method", "nodes", "per node ms (wall)", "per node ms (CPU)", "vs cpu per node",
           "batch s (wall / CPU)", "GA evals", "GA s (wall / CPU)", "GA best", "upload s", "device MiB (table)",
           "device peak work B/row", "host peak RSS GiB"]


def clock(body: Callable[[], object]) -> tuple[float, float, object]:
    """(wall, CPU, value) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = body()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def rss_gib() -> float:
    """The process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def random_nodes(table: EncodedTable, count: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    box = Box.full(table.heights)
    nodes: dict[Node, None] = {}
    while len(nodes) < min(count, box.size):
        nodes[box.random_node(rng)] = None
    return list(nodes)


SHARED: dict[tuple[int, str, str], xp_kernel.DeviceTable] = {}  # (table id, method, kind): one upload each


def make(method: str, table: EncodedTable, case: str, share: bool = True) -> NodeEvaluator:
    """A fresh evaluator of a case. Device evaluators of one table share its upload (`DeviceEvaluator.adopt`):
    one with the sensitive column for the models, one per cell-cost metric (their cost tables differ), instead
    of one upload per evaluator (12 per size: at 100M rows 1.7 GiB each)."""
    models, metric = CASES[case]
    objective = make_objective(metric)
    if method == "cpu":
        return NodeEvaluator(table, models(), SUPPRESSION, objective)
    evaluator = DeviceEvaluator(table, models(), SUPPRESSION, objective, device=method_device(method))
    assert evaluator.on_device, evaluator.fallback_reason
    if not share:
        return evaluator
    key = (id(table), method, metric if evaluator.costs is not None else "models")
    if key not in SHARED:
        if any(k[0] != id(table) for k in SHARED):  # another size: free the old size's tables first
            SHARED.clear()
        with evaluator.backend.activate():
            SHARED[key] = xp_kernel.DeviceTable.from_encoded(table, evaluator.backend, evaluator.chunk_rows, (S,),
                                                             evaluator.costs)
    evaluator.adopt(SHARED[key])
    return evaluator


def method_device(method: str) -> str:
    return "gpu" if method == "gpu" else "array"


def same(a: Evaluation, b: Evaluation) -> bool:
    """Equal evaluations: every field exactly, the loss to 1e-12 (cell-cost metrics sum floats)."""
    return abs(a.loss - b.loss) <= 1e-12 * max(1.0, abs(b.loss)) and replace(a, loss=b.loss) == b


class Pool:
    """The CuPy memory pool's bytes while a call runs (None on numpy)."""

    def __init__(self, evaluator: NodeEvaluator) -> None:
        backend = getattr(evaluator, "backend", None)
        self.pool = backend.xp.get_default_memory_pool() if backend is not None and backend.name == "cupy" else None

    def measure(self, body: Callable[[], object]) -> tuple[tuple[float, float, object], int | None]:
        if self.pool is None:
            return clock(body), None
        held = self.pool.used_bytes()
        self.pool.free_all_blocks()
        timed = clock(body)
        return timed, int(self.pool.total_bytes() - held)


def per_node(table: EncodedTable, case: str, methods: list[str], nodes: list[Node], cpu_nodes: int,
             ) -> dict[str, dict[str, Any]]:
    """Per method: per-node wall/CPU seconds, upload seconds, device bytes, peak work bytes; evaluations
    checked equal to the CPU evaluator's on the nodes both evaluated."""
    out: dict[str, dict[str, Any]] = {}
    evaluators = {m: make(m, table, case, share=False) if case == "k" else make(m, table, case) for m in methods}
    for m, e in evaluators.items():
        out[m] = {"times": [], "evaluations": {}, "peak": 0}
        if isinstance(e, DeviceEvaluator):
            if case == "k":  # its own upload, timed: the others share theirs (`make`)
                out[m]["upload"] = clock(lambda e=e: e.device_table)[0]
            out[m]["device_bytes"] = e.device_table.nbytes
        elif cpu_nodes:
            out[m]["setup"] = clock(e.state.class_tables.anchor)[0]  # the roll-up's one-off table, untimed
    for i, node in enumerate(nodes):
        for m, e in evaluators.items():
            if m == "cpu" and i >= cpu_nodes:
                continue
            (wall, cpu, evaluation), peak = Pool(e).measure(lambda e=e, node=node: e.evaluate(node))
            out[m]["times"].append((wall, cpu))
            out[m]["evaluations"][node] = evaluation
            out[m]["peak"] = max(out[m]["peak"], peak or 0)
    reference = out.get("cpu", {}).get("evaluations", {})
    for m in methods:
        if m != "cpu":
            wrong = [n for n, e in reference.items() if not same(out[m]["evaluations"][n], e)]
            assert not wrong, f"{case}: {m} differs from the CPU evaluator on {wrong[:3]}"
    return out


def run_ga(method: str, table: EncodedTable, evaluations: int) -> tuple[float, float, str]:
    from lattice.search.kgen_ga import KGen

    evaluator = make(method, table, "k")
    if isinstance(evaluator, DeviceEvaluator):
        evaluator.device_table  # noqa: B018 (upload timed apart)
    box = Box.full(table.heights)
    problem = Problem(evaluator, box, table.heights, evaluator.monotone_feasibility, evaluator.monotone_loss, True)
    wall, cpu, result = clock(lambda: KGen().run(problem, Limits(max_evaluations=evaluations, seed=1)))
    best = result.best  # type: ignore[attr-defined]
    return wall, cpu, "none" if best is None else str(best.node)


def batch(method: str, table: EncodedTable, nodes: list[Node]) -> tuple[float, float]:
    fresh = make(method, table, "k")
    if isinstance(fresh, DeviceEvaluator):
        fresh.device_table  # noqa: B018 (upload timed apart)
    wall, cpu, _ = clock(lambda: fresh.evaluate_many(nodes))
    return wall, cpu


def rows_of(rows: int, case: str, measured: dict[str, dict[str, Any]], extra: dict[str, dict[str, str]],
            ) -> list[list[object]]:
    """The result table's rows of one case at one size."""
    out = []
    cpu_times = measured.get("cpu", {}).get("times", [])
    for m, figures in measured.items():
        times = figures["times"]
        if not times:
            continue
        wall = sum(w for w, _ in times)
        cpu = sum(c for _, c in times)
        same_nodes = sum(w for w, _ in times[: len(cpu_times)])
        ratio = f"{sum(w for w, _ in cpu_times) / same_nodes:.1f}x" if cpu_times and m != "cpu" else "-"
        cells = extra.get(m, {})
        out.append([rows, case, m, len(times), f"{1000 * wall / len(times):.2f}", f"{1000 * cpu / len(times):.2f}",
                    ratio, cells.get("batch", "-"), cells.get("ga_evals", "-"), cells.get("ga", "-"),
                    cells.get("ga_best", "-"), f"{figures['upload']:.2f}" if "upload" in figures else "-",
                    f"{figures['device_bytes'] / 2**20:.0f}" if "device_bytes" in figures else "-",
                    f"{figures['peak'] / rows:.1f}" if figures.get("peak") else "-", f"{rss_gib():.1f}"])
    return out


def measure(rows: int, args: argparse.Namespace, cpu_nodes: int, started: float,
            flush: Callable[[list[list[object]]], None]) -> list[list[object]]:
    """Every case at one size, `flush`ed after each step (a run cut short keeps them): per node for every case
    first, then the batch and the GA (the longest step); the other cases' CPU references skipped once
    `args.deadline` seconds have passed."""
    xp = xp_kernel.cupy_backend().xp if args.device == "gpu" else np
    table, seconds = gpu_table.encoded(xp, rows)
    print(f"{rows} rows: drawn and coded in {seconds:.1f} s, heights {table.heights}", flush=True)
    device = args.device if args.device == "gpu" else "array"
    methods = ["cpu", device] if cpu_nodes else [device]
    nodes = random_nodes(table, args.nodes, seed=rows)
    base = per_node(table, "k", methods, nodes, cpu_nodes)
    cases: list[list[object]] = []
    flush(rows_of(rows, "k", base, {}))
    for case in [c for c in args.cases if c != "k"]:
        late = time.perf_counter() - started > args.deadline
        if late and args.deadline_skips_cases:
            print(f"{case}: skipped (past --deadline)", flush=True)
            continue
        case_methods = [device] if late else methods
        measured = per_node(table, case, case_methods, nodes[: args.case_nodes], 0 if late else min(cpu_nodes, 2))
        cases += rows_of(rows, case, measured, {})
        flush(rows_of(rows, "k", base, {}) + cases)
    extra: dict[str, dict[str, str]] = {m: {} for m in methods}
    population = random_nodes(table, args.batch, seed=rows + 1)
    for m in methods:
        if m != "cpu" or rows in args.cpu_batch:
            wall, cpu = batch(m, table, population)
            extra[m]["batch"] = f"{wall:.2f} / {cpu:.2f} ({len(population)})"
            flush(rows_of(rows, "k", base, extra) + cases)
        evaluations = args.ga if m != "cpu" else (args.ga_cpu if rows == min(args.rows) else 0)
        if evaluations:
            wall, cpu, best = run_ga(m, table, evaluations)
            extra[m].update(ga_evals=str(evaluations), ga=f"{wall:.1f} / {cpu:.1f}", ga_best=best)
            flush(rows_of(rows, "k", base, extra) + cases)
    return rows_of(rows, "k", base, extra) + cases


def gpu_name() -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"{name}, {props['totalGlobalMem'] / 2**30:.0f} GiB, CuPy {cupy.__version__}"


def warm_up(device: str) -> float:
    """Evaluate every case once on a small table, so that CuPy compiles its kernels before timing."""
    start = time.perf_counter()
    table, _ = gpu_table.encoded(np, 20_000)
    for case in CASES:
        make(device, table, case).evaluate_many(random_nodes(table, 4, seed=0) + [(0,) * len(table.heights)])
    return time.perf_counter() - start


def write(out: Path, args: argparse.Namespace, rows: list[list[object]], notes: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    device = f"; GPU: {gpu_name()}" if args.device == "gpu" else "; no GPU (device = numpy)"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# Node evaluation on an array device (issues 18, 29)\n\n{notes}\n\nMachine: {common.machine()}"
                   f"{device}; {stamp}\n\nCommand: `python -m benchmarks.gpu {' '.join(sys.argv[1:])}`\n\n"
                   f"{common.markdown(HEADERS, rows)}\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps({"headers": HEADERS, "rows": rows}, default=str), encoding="utf-8")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,4000000", help="table sizes, comma-separated")
    parser.add_argument("--device", choices=["array", "gpu"], default="array",
                        help="array: the device code on numpy (no GPU); gpu: CuPy (needs a GPU)")
    parser.add_argument("--nodes", type=int, default=8, help="random nodes timed one by one (case k)")
    parser.add_argument("--case-nodes", type=int, default=4, help="of those, timed for every other case")
    parser.add_argument("--cpu-nodes", default="4", help="nodes the CPU evaluator times, one figure or one per size")
    parser.add_argument("--batch", type=int, default=100, help="nodes per evaluate_many call (a GA population)")
    parser.add_argument("--cpu-batch", default="", help="sizes at which the CPU evaluator times the batch too")
    parser.add_argument("--ga", type=int, default=0, help="KGen GA evaluations on the device, every size")
    parser.add_argument("--ga-cpu", type=int, default=0, help="KGen GA evaluations on the CPU, smallest size only")
    parser.add_argument("--deadline", type=float, default=float("inf"),
                        help="seconds after which the CPU references of the other cases are skipped")
    parser.add_argument("--deadline-skips-cases", action="store_true",
                        help="past --deadline, skip the other cases altogether (not only their CPU references)")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"cases beside k (always measured), comma-separated: {', '.join(CASES)}")
    parser.add_argument("--out", type=Path, default=None, help="default results/benchmarks/gpu-DEVICE.md")
    args = parser.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    args.rows = [int(s) for s in args.rows.split(",")]
    cpu_nodes = [int(s) for s in args.cpu_nodes.split(",")]
    args.cpu_nodes = cpu_nodes if len(cpu_nodes) == len(args.rows) else cpu_nodes[:1] * len(args.rows)
    args.cpu_batch = {int(s) for s in args.cpu_batch.split(",") if s}
    return args


def main() -> None:
    args = parse()
    started = time.perf_counter()
    device = "gpu" if args.device == "gpu" else "array"
    print(f"warm-up (kernel compilation) {warm_up(device):.1f} s", flush=True)
    notes = " ".join([
        f"k = {K}, suppression {SUPPRESSION}; table `benchmarks.gpu_table` (10 QIs, decimal hierarchies, sensitive",
        "`diagnosis` of 12 values). Cases: `k` = k-anonymity + LOG; the others add the named model on `diagnosis`",
        "(distinct l = 2, entropy l = 2, recursive c = 3 l = 2, t = 0.3 equal, t = 0.2 ordered) or use the named",
        "metric. `cpu` = NodeEvaluator (fast kernel + roll-up); `array` = DeviceEvaluator on numpy; `gpu` = on",
        "CuPy. Per node: mean over distinct random nodes, methods interleaved; `vs cpu` = the CPU evaluator's wall",
        "time over this method's on the nodes both timed (their evaluations checked equal). CPU seconds: this",
        "process's. Device peak work: the CuPy pool's most bytes while one node is evaluated, over n.",
        "Host peak RSS: the process's peak so far.",
    ])
    out = args.out or common.RESULTS / f"gpu-{args.device}.md"
    rows: list[list[object]] = []
    for size, cpu_nodes in zip(args.rows, args.cpu_nodes):

        def flush(partial: list[list[object]], done: list[list[object]] = rows) -> None:
            print(partial[-1], flush=True)
            write(out, args, done + partial, notes)

        rows += measure(size, args, cpu_nodes, started, flush)
        write(out, args, rows, notes)
    print(common.markdown(HEADERS, rows))
    print(f"total {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
