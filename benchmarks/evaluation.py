"""Node evaluations per second, side by side in one run: the bitset support-map evaluator, the fast evaluator
(kernel + roll-up), the fast kernel alone, and two naive numpy references.

Two scenarios per dataset:
- `cold`: distinct random nodes of the pruned box, each evaluated once (no node cache hit; the fast
  evaluator may only roll up from nodes it evaluated before in the same list);
- `search`: the nodes in the order a real search visits them (the KGen GA's, recorded first), so the
  roll-up finds more specific nodes already evaluated, as it does in use.
Every method sees the same nodes in the same order, interleaved node by node so machine noise hits them
alike; the ratio columns are what to compare across machines.

References (exact, what a plain numpy implementation would do):
- `naive`: pack the generalized code columns into one int64 key, then `np.unique(key, return_counts=True)`;
- `naive_rows`: `np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)` on the code columns.

    python -m benchmarks.evaluation [--quick] [--datasets adult,cargo25,cargo97,synthetic]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

import numpy as np

from benchmarks import common
from fitness import kernel
from fitness.evaluator import NodeEvaluator
from kgen.run.prepare import Prepared
from lattice.node import Node
from lattice.search.base import Limits, Problem

# the support map holds one n-bit set per value per level; past this it is not built (it would not fit)
BITSET_MEMORY_LIMIT = 2 << 30


def naive(prepared: Prepared, node: Node) -> np.ndarray:
    columns, cards = prepared.encoded.columns(node)
    key = np.zeros(prepared.encoded.n, dtype=np.int64)
    span = 1
    for column, card in zip(columns, cards):
        if span * card >= 1 << 62:  # re-densify so the packed key cannot overflow
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            span = int(key.max()) + 1
        key = key * card + column
        span *= card
    return np.unique(key, return_counts=True)[1]


def naive_rows(prepared: Prepared, node: Node) -> np.ndarray:
    columns, _ = prepared.encoded.columns(node)
    return np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)[1]


def support_map_bytes(prepared: Prepared) -> int:
    return sum(sum(qi.cards) for qi in prepared.encoded.qis) * ((prepared.encoded.n + 7) // 8)


class Recorder:
    """An evaluator wrapper that records the distinct nodes in the order a search asks for them."""

    def __init__(self, inner: NodeEvaluator) -> None:
        self.inner, self.nodes, self.seen = inner, [], set()

    def evaluate(self, node: Node):  # noqa: ANN201
        return self.evaluate_many([node])[0]

    def cached(self, node: Node):  # noqa: ANN201
        return self.inner.cached(node)

    def evaluate_many(self, nodes: Sequence[Node]) -> list:
        for n in nodes:
            if n not in self.seen:
                self.seen.add(n)
                self.nodes.append(tuple(n))
        return self.inner.evaluate_many(nodes)


def search_nodes(prepared: Prepared, evaluations: int, seed: int = 1) -> list[Node]:
    """The distinct nodes the KGen GA (paper parameters) evaluates, in order."""
    from kgen.run.algorithms import REGISTRY
    if "kgen" in REGISTRY:
        ga = REGISTRY["kgen"]()
    else:  # registered by the search layer; import it directly until then
        from lattice.search.kgen_ga import KGen
        ga = KGen()
    problem = prepared.problem()
    recorder = Recorder(prepared.evaluator)
    ga.run(Problem(recorder, problem.box, problem.heights, problem.monotone_feasibility,  # type: ignore[arg-type]
                   problem.monotone_loss, problem.loss_is_log), Limits(max_evaluations=evaluations, seed=seed))
    prepared.evaluator.clear_cache()
    return recorder.nodes


def random_nodes(prepared: Prepared, count: int, seed: int = 1) -> list[Node]:
    rng = random.Random(seed)
    nodes: dict[Node, None] = {}
    for _ in range(count * 20):
        nodes[prepared.box.random_node(rng)] = None
        if len(nodes) == count:
            break
    return list(nodes)


def measure(prepared: Prepared, nodes: list[Node], methods: dict[str, Callable[[Node], object]]) -> dict[str, float]:
    """Total seconds per method over `nodes`, interleaved node by node."""
    totals = dict.fromkeys(methods, 0.0)
    for node in nodes:
        for name, method in methods.items():
            start = time.perf_counter()
            method(node)
            totals[name] += time.perf_counter() - start
    return totals


def methods_for(prepared: Prepared, with_bitset: bool, with_rows: bool) -> dict[str, Callable[[Node], object]]:
    table = prepared.encoded
    config = prepared.config
    models = list(prepared.evaluator.models)
    fast = NodeEvaluator(table, models, config.suppression, kernel="fast")
    methods: dict[str, Callable[[Node], object]] = {}
    if with_bitset:
        bitset = NodeEvaluator(table, models, config.suppression, kernel="bitset")
        bitset.support_map  # noqa: B018  (built before timing: a one-off cost, reported separately)
        methods["bitset"] = bitset.evaluate
    methods["fast"] = fast.evaluate
    methods["kernel"] = lambda node: kernel.class_sizes(*table.columns(node), table.n)
    methods["naive"] = lambda node: naive(prepared, node)
    if with_rows:
        methods["naive_rows"] = lambda node: naive_rows(prepared, node)
    return methods


def check_identical(prepared: Prepared, nodes: list[Node], with_bitset: bool) -> None:
    """The methods agree on every benchmark node (exactness before speed)."""
    table, config, models = prepared.encoded, prepared.config, list(prepared.evaluator.models)
    fast = NodeEvaluator(table, models, config.suppression, kernel="fast")
    bitset = NodeEvaluator(table, models, config.suppression, kernel="bitset") if with_bitset else None
    for node in nodes[:20]:
        sizes = np.sort(naive(prepared, node))
        assert np.array_equal(np.sort(kernel.class_sizes(*table.columns(node), table.n)), sizes)
        e = fast.evaluate(node)
        assert e.suppressed == int(sizes[sizes < config.k].sum()) and e.classes == int((sizes >= config.k).sum())
        if bitset is not None:
            assert bitset.evaluate(node) == e


DATASETS: dict[str, Callable[[], Prepared]] = {
    "adult": common.adult,
    "cargo25": lambda: common.cargo(25),
    "cargo97": lambda: common.cargo(97),
    "synthetic": common.synthetic_table,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--quick", action="store_true", help="fewer nodes (a smoke run)")
    args = parser.parse_args()
    rows = []
    for name in args.datasets.split(","):
        prepared = DATASETS[name]()
        big = prepared.encoded.n > 100_000
        cold_count = (6 if args.quick else 12) if big else (20 if args.quick else 100)
        search_count = (60 if args.quick else 400) if big else (300 if args.quick else 2000)
        with_bitset = support_map_bytes(prepared) <= BITSET_MEMORY_LIMIT and not big
        start = time.perf_counter()
        if with_bitset:
            NodeEvaluator(prepared.encoded, list(prepared.evaluator.models), kernel="bitset").support_map  # noqa: B018
        build = time.perf_counter() - start
        scenarios = {"cold": random_nodes(prepared, cold_count),
                     "search": search_nodes(prepared, search_count)}
        for scenario, nodes in scenarios.items():
            check_identical(prepared, nodes, with_bitset)
            # the bitset and row-wise references are slow: time them on the cold nodes only
            bitset_here = with_bitset and scenario == "cold"
            totals = measure(prepared, nodes, methods_for(prepared, bitset_here, scenario == "cold"))
            rate = {m: len(nodes) / s for m, s in totals.items()}
            row = [name, prepared.encoded.n, len(prepared.encoded.qis), scenario, len(nodes),
                   f"{rate['bitset']:.0f}" if "bitset" in rate else "n/a",
                   f"{rate['fast']:.0f}", f"{rate['kernel']:.0f}", f"{rate['naive']:.0f}",
                   f"{rate['naive_rows']:.1f}" if "naive_rows" in rate else "-",
                   f"{totals['naive'] / totals['fast']:.1f}x",
                   f"{totals['naive_rows'] / totals['fast']:.0f}x" if "naive_rows" in totals else "-",
                   f"{totals['bitset'] / totals['fast']:.0f}x" if "bitset" in totals else "-",
                   f"{build:.2f}" if with_bitset else f"{support_map_bytes(prepared) / 2**30:.0f} GiB: not built"]
            rows.append(row)
            print(row, flush=True)
    headers = ["dataset", "rows", "QIs", "nodes", "count", "bitset eval/s", "fast eval/s", "kernel only /s",
               "naive np.unique /s", "naive rows /s", "fast vs naive", "fast vs naive rows", "fast vs bitset",
               "support map build s"]
    notes = ("Evaluations per second (higher is better), all methods on the same nodes, interleaved. `fast` = "
             "`NodeEvaluator(kernel='fast')` (full Evaluation: class sizes by the kernel or by roll-up, metrics); "
             "`kernel only` = `fitness.kernel.class_sizes` alone; `bitset` = `NodeEvaluator(kernel='bitset')`. "
             "`cold` = distinct random nodes of the pruned box; `search` = the distinct nodes of a KGen GA run "
             "(paper parameters) in visiting order. Ratios = naive time / fast time on the same nodes.")
    common.write("evaluation", "Node evaluation throughput (issue 5)", headers, rows, notes)


if __name__ == "__main__":
    main()
