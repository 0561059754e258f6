"""Node evaluation on an array device (issue 18): the namespace evaluator beside kgen's CPU evaluator.

Per table size, side by side in one run on the same machine and the same nodes:
- `cpu`: kgen's `NodeEvaluator` (fast kernel + roll-up), what `--device cpu` runs;
- `array`: `DeviceEvaluator` on numpy (`--device array`): the GPU code path executed by the CPU;
- `gpu`: `DeviceEvaluator` on CuPy (`--device gpu`), only with `--device gpu` on a machine with a GPU.

Per-node: distinct random nodes of the full lattice, one `evaluate` each, the methods interleaved node by node
(each evaluator fresh, so only what it evaluated itself can help it). Per-batch: one `evaluate_many` of a batch
of distinct random nodes (a GA population), fresh evaluators. Wall and CPU seconds (this process) are both
reported: on a GPU the CPU seconds show how little the host works. Memory: the device copy of the table and
the peak working memory of one node's evaluation (numpy: tracemalloc; CuPy: its memory pool), per row.
`--ga N` also times the paper-preset KGen GA for N evaluations on each method (search seconds).

The table is the synthetic benchmark table (`benchmarks.synthetic.generate`: 10 skewed, correlated integer
QIs) encoded directly in numpy with decimal-rounding hierarchies (level L = value // 10**L, up to one value),
so that 20M and 100M rows can be built in seconds without the CSV reader. Evaluations of all methods are
checked equal before timing.

    python -m benchmarks.gpu [--rows 1000000,4000000] [--device array|gpu] [--nodes 8] [--batch 100]
                             [--cpu-nodes N] [--methods array,gpu] [--ga N] [--ga-methods cpu,array,gpu]
                             [--l-diversity L] [--out PATH]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks import common, synthetic
from fitness import xp_kernel
from fitness.device_evaluator import DeviceEvaluator
from fitness.encoding import EncodedQI, EncodedTable
from fitness.evaluator import NodeEvaluator
from fitness.models import DistinctLDiversity, KAnonymity, PrivacyModel
from lattice.box import Box
from lattice.node import Node
from lattice.search.base import Limits, Problem

K = 5
SUPPRESSION = 0.005


def dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of non-negative integers (by counting: values are bounded) and the sorted distinct values."""
    present = np.bincount(values) > 0
    remap = np.cumsum(present) - 1
    return remap[values].astype(np.int32), np.flatnonzero(present)


def encode_decimal(name: str, values: np.ndarray) -> EncodedQI:
    """A QI with decimal-rounding levels: level L holds value // 10**L, up to the first level with one value."""
    leaf_codes, leaves = dense(values)
    codes, labels = [leaf_codes], [tuple(str(v) for v in leaves.tolist())]
    level = 1
    while len(labels[-1]) > 1:
        rounded = leaves // 10**level
        lookup, distinct = dense(rounded)
        if distinct.size == len(labels[-1]):  # rounding merged nothing: skip the level
            level += 1
            continue
        codes.append(lookup[leaf_codes])
        labels.append(tuple(f"{v}e{level}" for v in distinct.tolist()) if distinct.size > 1 else ("*",))
        level += 1
    return EncodedQI(name, tuple(codes), tuple(labels))


def synthetic_encoded(rows: int) -> EncodedTable:
    """The synthetic table encoded, with a sensitive column `diagnosis` (8 skewed values, seeded) for the
    distinct l-diversity runs."""
    data = synthetic.generate(rows)
    diagnosis = np.minimum(np.random.default_rng(rows).zipf(1.5, rows) - 1, 7)
    labels = tuple(f"d{v}" for v in range(8))
    return EncodedTable(rows, tuple(encode_decimal(c, data[c]) for c in synthetic.COLUMNS),
                        {"diagnosis": (diagnosis.astype(np.int32), labels)})


MODELS: list[PrivacyModel] = [KAnonymity(K)]


def random_nodes(table: EncodedTable, count: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    box = Box.full(table.heights)
    nodes: dict[Node, None] = {}
    while len(nodes) < min(count, box.size):
        nodes[box.random_node(rng)] = None
    return list(nodes)


def clock(body: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    body()
    return time.perf_counter() - wall, time.process_time() - cpu


def make(method: str, table: EncodedTable) -> NodeEvaluator:
    models = MODELS
    if method == "cpu":
        return NodeEvaluator(table, models, SUPPRESSION)
    return DeviceEvaluator(table, models, SUPPRESSION, device="gpu" if method == "gpu" else "array")


def peak_bytes(method: str, table: EncodedTable, nodes: list[Node], backend: xp_kernel.Backend | None = None,
               ) -> float:
    """The largest peak of bytes allocated while a fresh evaluator evaluates one of `nodes` (table upload
    excluded). numpy: tracemalloc; CuPy: the bytes its memory pool had to hold."""
    worst = 0.0
    for node in nodes:
        if method == "cpu":
            evaluator: NodeEvaluator = make("cpu", table)
        else:
            evaluator = DeviceEvaluator(table, MODELS, SUPPRESSION,
                                        device="gpu" if method == "gpu" else "array", backend=backend)
            evaluator.device_table  # noqa: B018 (uploaded before measuring)
        if method == "gpu":
            pool = evaluator.backend.xp.get_default_memory_pool()  # type: ignore[attr-defined]
            pool.free_all_blocks()
            held = pool.total_bytes()
            evaluator.evaluate(node)
            worst = max(worst, float(pool.total_bytes() - held))
            continue
        tracemalloc.start()
        evaluator.evaluate(node)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        worst = max(worst, float(peak))
    return worst


def run_ga(method: str, table: EncodedTable, evaluations: int) -> tuple[float, float, object]:
    from lattice.search.kgen_ga import KGen

    evaluator = make(method, table)
    box = Box.full(table.heights)
    problem = Problem(evaluator, box, table.heights, evaluator.monotone_feasibility, evaluator.monotone_loss, True)
    result: list[object] = []
    wall, cpu = clock(lambda: result.append(KGen().run(problem, Limits(max_evaluations=evaluations, seed=1))))
    best = result[0].best  # type: ignore[attr-defined]
    return wall, cpu, (None if best is None else (best.node, best.loss, best.los))


def measure(rows: int, methods: list[str], nodes: int, cpu_nodes: int, batch: int, ga: int,
            ga_methods: list[str]) -> list[list[object]]:
    start = time.perf_counter()
    table = synthetic_encoded(rows)
    build = time.perf_counter() - start
    print(f"{rows} rows: encoded in {build:.1f} s, heights {table.heights}", flush=True)
    timed_nodes = random_nodes(table, nodes, seed=rows)
    batch_nodes = random_nodes(table, batch, seed=rows + 1)
    # exactness first: every method's evaluations equal the CPU evaluator's on the timed nodes
    reference = make("cpu", table)
    checked = timed_nodes[: min(3, cpu_nodes)]
    for method in methods:
        if method != "cpu":
            check = make(method, table)
            assert check.evaluate_many(checked) == reference.evaluate_many(checked), method
    evaluators = {m: make(m, table) for m in methods}
    # the roll-up's one-off bottom table: built before timing, not in a node
    evaluators["cpu"].state.class_tables.anchor()
    upload = {}
    for m, e in evaluators.items():
        if isinstance(e, DeviceEvaluator):
            upload[m] = clock(lambda e=e: e.device_table)[0]
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}  # per timed node: (wall, CPU)
    for i, node in enumerate(timed_nodes):
        for m in methods:
            if m == "cpu" and i >= cpu_nodes:
                continue
            times[m].append(clock(lambda m=m, node=node: evaluators[m].evaluate(node)))
    per_batch = {}
    for m in methods:
        if m == "cpu" and cpu_nodes < nodes:
            continue  # the CPU evaluator is too slow at this size for a whole batch (see --cpu-nodes)
        fresh = make(m, table)
        if isinstance(fresh, DeviceEvaluator):
            fresh.device_table  # noqa: B018 (upload timed separately)
        per_batch[m] = clock(lambda fresh=fresh: fresh.evaluate_many(batch_nodes))
    out = []
    probes = [(0,) * len(table.heights)] + timed_nodes[:3]  # the bottom node: the most classes, a re-densify
    common_count = len(times["cpu"])  # the ratio compares the same nodes: those the CPU evaluator was timed on
    cpu_wall = sum(w for w, _ in times["cpu"])
    for m in methods:
        count = len(times[m])
        wall = sum(w for w, _ in times[m])
        cpu = sum(c for _, c in times[m])
        device_bytes = evaluators[m].device_table.nbytes if isinstance(evaluators[m], DeviceEvaluator) else None
        peak = f"{peak_bytes(m, table, probes if m != 'cpu' or cpu_nodes == nodes else probes[1:2]) / rows:.1f}"
        if m == "array":  # numpy taking the GPU's path choices (count while span <= n): its memory, minus CuPy's
            peak += f" ({peak_bytes(m, table, probes, xp_kernel.Backend(np, 'numpy', 1)) / rows:.1f})"
        ga_cells: list[object] = ["-", "-"]
        if ga and m in ga_methods:
            ga_wall, ga_cpu, best = run_ga(m, table, ga)
            ga_cells = [f"{ga_wall:.1f} / {ga_cpu:.1f}", str(best[0]) if best else "none"]
        batch_cells = (f"{per_batch[m][0]:.2f} / {per_batch[m][1]:.2f}" if m in per_batch else "not run")
        same_nodes = sum(w for w, _ in times[m][:common_count])
        out.append([rows, m, count, f"{1000 * wall / count:.1f}", f"{1000 * cpu / count:.1f}", batch, batch_cells,
                    f"{cpu_wall / same_nodes:.2f}x",
                    f"{upload[m]:.2f}" if m in upload else "-",
                    f"{device_bytes / rows:.1f}" if device_bytes is not None else "-",
                    peak, *ga_cells])
        print(out[-1], flush=True)
    return out


def gpu_name() -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"{name}, {props['totalGlobalMem'] / 2**30:.0f} GiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,4000000", help="table sizes, comma-separated")
    parser.add_argument("--device", choices=["array", "gpu"], default="array",
                        help="array: numpy only (no GPU); gpu: also CuPy (needs kgen[gpu] and a GPU)")
    parser.add_argument("--nodes", type=int, default=8, help="random nodes timed one by one")
    parser.add_argument("--cpu-nodes", type=int, default=None,
                        help="time the CPU evaluator on only this many of them (20M/100M rows: it is slow)")
    parser.add_argument("--batch", type=int, default=100, help="nodes per evaluate_many call (a GA population)")
    parser.add_argument("--ga", type=int, default=0, help="also run the KGen GA for this many evaluations")
    parser.add_argument("--methods", default=None,
                        help="the methods beside cpu (always timed): e.g. gpu to skip numpy at 20M/100M rows")
    parser.add_argument("--ga-methods", default="all",
                        help="which methods run the GA: all, or a comma-separated subset of cpu,array,gpu")
    parser.add_argument("--l-diversity", type=int, default=None, metavar="L",
                        help="also distinct L-diversity on the sensitive column (8 skewed values)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the table (default results/benchmarks/gpu-DEVICE.md)")
    args = parser.parse_args()
    methods = ["cpu", "array"] + (["gpu"] if args.device == "gpu" else [])
    if args.methods:
        methods = ["cpu"] + [m for m in args.methods.split(",") if m in methods and m != "cpu"]
    if args.l_diversity:
        MODELS.append(DistinctLDiversity("diagnosis", args.l_diversity))
    if args.device == "gpu":
        xp_kernel.cupy_backend()  # fail early, with CuPy's own message
    rows = []
    for size in (int(s) for s in args.rows.split(",")):
        ga_methods = methods if args.ga_methods == "all" else args.ga_methods.split(",")
        rows += measure(size, methods, args.nodes, args.cpu_nodes or args.nodes, args.batch, args.ga, ga_methods)
    headers = ["rows", "method", "nodes", "per node ms (wall)", "per node ms (CPU)", "batch",
               "batch s (wall / CPU)", "vs cpu per node", "upload s", "device bytes/row", "peak work bytes/row",
               "GA s (wall / CPU)", "GA best node"]
    l_note = f", distinct {args.l_diversity}-diversity on `diagnosis`" if args.l_diversity else ""
    notes = " ".join([
        f"k = {K}{l_note}, suppression {SUPPRESSION}; synthetic table (10 QIs), decimal-rounding hierarchies.",
        "`cpu` = NodeEvaluator (fast kernel + roll-up); `array` = DeviceEvaluator on numpy (the GPU code on the",
        "CPU); `gpu` = DeviceEvaluator on CuPy. Per node: mean over distinct random nodes, methods interleaved.",
        "`vs cpu` = the CPU evaluator's wall time / this method's on the same nodes. CPU seconds are this",
        "process's (user + system, all threads). Peak work bytes/row: the most allocated while evaluating one of",
        "4 nodes (the bottom node and 3 timed ones), over n; for `array` in brackets with the GPU's path choice",
        "(count while span <= n). Device bytes/row: leaf codes + lookups + sensitive codes, over n.",
    ])
    text = common.markdown(headers, rows)
    out = args.out or common.RESULTS / f"gpu-{args.device}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    device = f"; GPU: {gpu_name()}" if args.device == "gpu" else "; no GPU"
    out.write_text(f"# Node evaluation on an array device (issue 18)\n\n{notes}\n\nMachine: {common.machine()}"
                   f"{device}; {stamp}\n\nCommand: `python -m benchmarks.gpu {' '.join(sys.argv[1:])}`\n\n{text}\n",
                   encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
