"""The array-namespace evaluator (the GPU code path) gives exactly the CPU evaluator's evaluations.

Run on numpy everywhere (both the counting and the sort path), and on CuPy where a GPU is present. Compared
field by field with `NodeEvaluator` on random tables (hypothesis), on tables whose keys must be re-densified
(>= 64 binary QIs: issue 11 item 7), on the real datasets, and through the public API with the GA and an
exact search.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness import kernel, xp_kernel
from fitness.device_evaluator import DeviceEvaluator, backend_for, make_evaluator, pick_device, visible_devices
from fitness.encoding import EncodedTable, dense_codes, encode_column
from fitness.evaluator import NodeEvaluator
from fitness.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
)
from fitness.objective import (
    AverageClassSize,
    Discernibility,
    GeneralizedLoss,
    NonUniformEntropy,
    NormalizedCertaintyPenalty,
    Precision,
)
from lattice.box import Box
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy

# A GPU session scales the examples down (KGEN_DEVICE_TEST_SCALE=0.25): each CuPy example launches hundreds of
# small kernels, and a lease is minutes long (benchmarks/gpu_lease.sh).
SCALE = float(os.environ.get("KGEN_DEVICE_TEST_SCALE", "1"))


def examples(count: int) -> int:
    return max(3, round(count * SCALE))


SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
OBJECTIVES = {"log": Precision, "dm": Discernibility, "aecs": AverageClassSize}
# every metric the device evaluates: the summary ones exactly, the cell-cost ones to float rounding
ALL_OBJECTIVES = {**OBJECTIVES, "ncp": NormalizedCertaintyPenalty, "loss": GeneralizedLoss,
                  "entropy": NonUniformEntropy}
# every privacy model on the sensitive column `s` beside k-anonymity (None: k-anonymity alone)
SENSITIVE_MODELS = {
    "none": lambda: [],
    "distinct": lambda: [DistinctLDiversity("s", 2)],
    "entropy": lambda: [EntropyLDiversity("s", 1.8)],
    "recursive": lambda: [RecursiveCLDiversity("s", 2.0, 2)],
    "t-equal": lambda: [TCloseness("s", 0.4, "equal")],
    "t-ordered": lambda: [TCloseness("s", 0.3, "ordered")],
    "all": lambda: [EntropyLDiversity("s", 1.5), RecursiveCLDiversity("s", 3.0, 2), TCloseness("s", 0.5, "equal"),
                    TCloseness("s", 0.45, "ordered")],
}


def cupy_backends() -> list[xp_kernel.Backend]:
    try:
        backend = xp_kernel.cupy_backend()
    except (ImportError, RuntimeError):
        return []
    return [backend, xp_kernel.Backend(backend.xp, "cupy", 0, 0, backend._scatter_add)]


CUPY = cupy_backends()
BACKENDS = [
    pytest.param(xp_kernel.NUMPY, id="numpy-count"),
    pytest.param(xp_kernel.Backend(np, "numpy", 0, 0), id="numpy-sort"),  # every span sorted
    # CuPy's counting (an atomic scatter-add into uint64), played by numpy's add.at
    pytest.param(xp_kernel.Backend(np, "numpy", 1, 0, np.add.at), id="numpy-scatter"),
    *(pytest.param(b, id=f"cupy-{'count' if b.count_factor else 'sort'}") for b in CUPY),
]
if not CUPY:
    BACKENDS.append(pytest.param(None, id="cupy", marks=pytest.mark.skip(
        reason="CuPy with a CUDA GPU is not available here: the CuPy namespace is not exercised")))


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 60, max_qis: int = 4) -> EncodedTable:
    """A random table of integer QIs with random tree hierarchies (as tests/test_kernels.py) and one
    sensitive column `s`."""
    n = draw(st.integers(1, max_rows))
    q = draw(st.integers(1, max_qis))
    qis = []
    for i in range(q):
        card = draw(st.integers(1, 12))
        values = [str(v) for v in draw(st.lists(st.integers(0, card - 1), min_size=n, max_size=n))]
        base = draw(st.integers(2, 4))
        depth = draw(st.integers(0, 2))
        rows = [[v] + [str(int(v) // base ** (level + 1)) for level in range(depth)] + ["*"]
                for v in sorted(set(values))]
        qis.append(encode_column(f"q{i}", values, Hierarchy.from_rows(f"q{i}", rows)))
    # up to 12 values, so that numeric order ("2" < "10") differs from the codes' string order
    domain = draw(st.integers(1, 12))
    sensitive = [str(v) for v in draw(st.lists(st.integers(0, domain - 1), min_size=n, max_size=n))]
    return EncodedTable(n, tuple(qis), {"s": dense_codes(sensitive)})


def binary_table(columns: np.ndarray) -> EncodedTable:
    """A table of 0/1 QIs (one column per QI) with the hierarchy value -> *."""
    qis = []
    for i in range(columns.shape[1]):
        values = [str(v) for v in columns[:, i].tolist()]
        rows = [[v, "*"] for v in sorted(set(values))]
        qis.append(encode_column(f"b{i}", values, Hierarchy.from_rows(f"b{i}", rows)))
    return EncodedTable(columns.shape[0], tuple(qis))


def reference_sizes(table: EncodedTable, node: tuple[int, ...]) -> list[int]:
    """Class sizes by counting generalized tuples in a dict: the obviously correct reference."""
    counts = Counter(zip(*(qi.codes[x].tolist() for qi, x in zip(table.qis, node))))
    return sorted(counts.values())


def assert_same(cpu: NodeEvaluator, device: DeviceEvaluator, nodes: list[tuple[int, ...]]) -> None:
    """Every Evaluation field, the class sizes and the suppressed rows are equal on every node: exactly, but
    for the loss of a cell-cost metric (a float sum over the suppressed cells, added in another order), which
    is equal to relative 1e-12."""
    evaluations = device.evaluate_many(nodes)  # one batch
    for node, got in zip(nodes, evaluations, strict=True):
        want = cpu.evaluate(node)
        if device.costs is not None:
            assert got.loss == pytest.approx(want.loss, rel=1e-12, abs=1e-14), (node, got, want)
            got = dataclasses.replace(got, loss=want.loss)
        assert got == want, (node, got, want)
        assert np.array_equal(device.suppressed_rows(node), cpu.suppressed_rows(node)), node
        if device.on_device:
            want_sizes = np.sort(cpu.partition(node).sizes)
            assert np.array_equal(xp_kernel.class_sizes(device.device_table, node), want_sizes), node


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(table=tables(), k=st.integers(1, 4), t=st.sampled_from([0.0, 0.05, 0.3]),
       objective=st.sampled_from(sorted(OBJECTIVES)), l=st.sampled_from([None, 2, 3]))
def test_device_evaluations_equal_the_cpu_evaluator_on_random_tables(
        backend: xp_kernel.Backend, table: EncodedTable, k: int, t: float, objective: str, l: int | None) -> None:  # noqa: E741
    models = [KAnonymity(k)] + ([DistinctLDiversity("s", l)] if l is not None else [])
    cpu = NodeEvaluator(table, models, t, OBJECTIVES[objective]())
    device = DeviceEvaluator(table, models, t, OBJECTIVES[objective](), backend=backend)
    assert device.on_device
    assert_same(cpu, device, list(Box.full(table.heights).nodes()))
    assert device.stats["host_copies"] == 1 and device.stats["host_nodes"] == 0


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.parametrize("backend", BACKENDS)
@settings(SETTINGS, max_examples=examples(15))
@given(data=st.data(), n=st.integers(2, 80), q=st.integers(64, 80))
def test_class_sizes_on_64_or_more_binary_qis_equal_a_plain_tuple_count(
        backend: xp_kernel.Backend, data: st.DataObject, n: int, q: int) -> None:
    bits = np.array(data.draw(st.lists(st.lists(st.integers(0, 1), min_size=q, max_size=q), min_size=n,
                                       max_size=n)), dtype=np.int64)
    if data.draw(st.booleans()):  # pairs of rows that differ only in the first QI: must stay apart
        half = n // 2
        bits[half : 2 * half] = bits[:half]
        bits[half : 2 * half, 0] = 1 - bits[:half, 0]
    table = binary_table(bits)
    device = xp_kernel.DeviceTable.from_encoded(table, backend, chunk_rows=7)
    rng = np.random.default_rng(n * 100 + q)
    for node in [(0,) * q, *(tuple(rng.integers(0, 2, q).tolist()) for _ in range(3))]:
        assert xp_kernel.class_sizes(device, node).tolist() == reference_sizes(table, node)


@pytest.mark.parametrize("backend", BACKENDS)
def test_seventy_binary_qis_keep_rows_that_differ_only_in_the_first_column_apart(
        backend: xp_kernel.Backend) -> None:
    """Issue 11 item 7: without the re-densify step the 63-bit key wraps and such rows merge."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2, (200, 70))
    bits[100:] = bits[:100]
    bits[100:, 0] = 1 - bits[:100, 0]
    table = binary_table(bits)
    cpu = NodeEvaluator(table, [KAnonymity(2)], 0.0)
    device = DeviceEvaluator(table, [KAnonymity(2)], 0.0, backend=backend)
    bottom = (0,) * 70
    assert xp_kernel.class_sizes(device.device_table, bottom).tolist() == reference_sizes(table, bottom)
    assert device.evaluate(bottom) == cpu.evaluate(bottom)
    sizes = reference_sizes(table, bottom)
    assert int(device.suppressed_rows(bottom).sum()) == sum(s for s in sizes if s < 2)
    assert np.array_equal(device.suppressed_rows(bottom), cpu.suppressed_rows(bottom))


@pytest.mark.parametrize("backend", BACKENDS)
def test_keys_that_would_overflow_int64_are_densified(backend: xp_kernel.Backend) -> None:
    """The kernel tests' table: 12 columns of 1,000 values (span 1000**12 > 2**62), 250 classes of 2."""
    rng = np.random.default_rng(0)
    columns = [rng.integers(0, 1000, 500) for _ in range(12)]
    for c in columns:
        c[:250] = c[250:]
    qis = []
    for i, c in enumerate(columns):
        values = [str(v) for v in c.tolist()]
        qis.append(encode_column(f"c{i}", values, Hierarchy.from_rows(f"c{i}", [[v, "*"] for v in set(values)])))
    table = EncodedTable(500, tuple(qis))
    device = xp_kernel.DeviceTable.from_encoded(table, backend)
    assert xp_kernel.class_sizes(device, (0,) * 12).tolist() == [2] * 250


def test_leaf_codes_are_kept_in_the_narrowest_integer_type() -> None:
    assert [xp_kernel.narrow_dtype(c) for c in (1, 256, 257, 65536, 65537)] == [
        np.uint8, np.uint8, np.uint16, np.uint16, np.uint32]
    values = [str(v) for v in range(300)]
    table = EncodedTable(300, (encode_column("v", values, Hierarchy.from_rows("v", [[v, "*"] for v in values])),))
    device = xp_kernel.DeviceTable.from_encoded(table, xp_kernel.NUMPY, chunk_rows=64)
    assert device.leaves[0].dtype == np.uint16
    assert np.array_equal(device.leaves[0], table.qis[0].codes[0])  # chunked copy: every row in place
    assert device.lookups[0][1].dtype == np.uint8  # level 1: one value
    assert device.nbytes == 300 * 2 + 300 * 1


def test_leaf_codes_and_lookups_alone_give_the_same_classes_as_the_encoded_table() -> None:
    """The columnar entry point: leaf codes and per-level lookups, no per-level code columns."""
    rng = np.random.default_rng(9)
    values = rng.integers(0, 40, (500, 3))
    qis = []
    for i in range(3):
        column = [str(v) for v in values[:, i].tolist()]
        rows = [[v, str(int(v) // 10), "*"] for v in sorted(set(column))]
        qis.append(encode_column(f"q{i}", column, Hierarchy.from_rows(f"q{i}", rows)))
    table = EncodedTable(500, tuple(qis))
    lookups = [[xp_kernel.level_lookup(qi.codes[0], qi.codes[L], qi.cards[0], np.dtype(np.int64))
                for L in range(1, qi.height + 1)] for qi in table.qis]
    direct = xp_kernel.DeviceTable.from_codes(xp_kernel.NUMPY, 500, [qi.codes[0] for qi in table.qis], lookups,
                                              [qi.cards for qi in table.qis], chunk_rows=33)
    encoded = xp_kernel.DeviceTable.from_encoded(table, xp_kernel.NUMPY)
    for node in Box.full(table.heights).nodes():
        assert np.array_equal(xp_kernel.class_sizes(direct, node), xp_kernel.class_sizes(encoded, node))
        assert xp_kernel.class_sizes(direct, node).tolist() == reference_sizes(table, node)
    with pytest.raises(ValueError, match="one lookup per level"):
        xp_kernel.DeviceTable.from_codes(xp_kernel.NUMPY, 500, [table.qis[0].codes[0]], [lookups[0][:1]],
                                         [table.qis[0].cards])


def test_a_batch_is_one_host_copy_and_cached_nodes_are_not_evaluated_again() -> None:
    rng = np.random.default_rng(3)
    table = binary_table(rng.integers(0, 2, (100, 5)))
    device = DeviceEvaluator(table, [KAnonymity(2)], 0.1, device="array")
    nodes = list(Box.full(table.heights).nodes())
    device.evaluate_many(nodes + nodes[:5])
    assert device.stats == {"batches": 1, "device_nodes": len(nodes), "host_nodes": 0, "host_copies": 1}
    device.evaluate_many(nodes[:7])
    assert device.stats["batches"] == 1 and device.stats["device_nodes"] == len(nodes)


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.parametrize("backend", BACKENDS)
@settings(SETTINGS, max_examples=examples(30))
@given(table=tables(), k=st.integers(1, 3), t=st.sampled_from([0.0, 0.1, 0.4]),
       models=st.sampled_from(sorted(SENSITIVE_MODELS)), objective=st.sampled_from(sorted(ALL_OBJECTIVES)))
def test_every_model_and_metric_on_the_device_equals_the_cpu_evaluator_on_random_tables(
        backend: xp_kernel.Backend, table: EncodedTable, k: int, t: float, models: str, objective: str) -> None:
    chosen: list[PrivacyModel] = [KAnonymity(k), *SENSITIVE_MODELS[models]()]
    cpu = NodeEvaluator(table, chosen, t, ALL_OBJECTIVES[objective]())
    device = DeviceEvaluator(table, chosen, t, ALL_OBJECTIVES[objective](), backend=backend)
    assert device.on_device and device.fallback_reason is None
    assert_same(cpu, device, list(Box.full(table.heights).nodes()))
    assert device.stats["host_copies"] == 1 and device.stats["host_nodes"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("measure", ["entropy", "recursive", "t-equal", "t-ordered"])
def test_per_class_measures_equal_the_cpu_formulas(backend: xp_kernel.Backend, measure: str) -> None:
    """The measures themselves (not only the verdicts) per class, on a table where classes of every shape
    occur: one value, all values, skewed, and numeric labels whose order differs from their codes'."""
    from fitness import models as cpu_models
    from fitness import xp_measures

    rng = np.random.default_rng(17)
    n = 3000
    qi = rng.integers(0, 40, n)
    s = np.where(qi % 7 == 0, 3, rng.zipf(1.7, n) % 15)  # some classes hold a single value
    table = EncodedTable(n, (encode_column("q", [str(v) for v in qi],
                                           Hierarchy.from_rows("q", [[str(v), "*"] for v in range(40)])),),
                         {"s": dense_codes([str(v) for v in s])})
    evaluator = NodeEvaluator(table, [KAnonymity(1)], 0.0)
    partition = evaluator.partition((0,), with_rows=True)
    vc = cpu_models.value_counts(partition, table, "s")
    q, rank = cpu_models.reference_distribution(table, "s")
    want = {"entropy": lambda: cpu_models.class_entropy(vc),
            "recursive": lambda: cpu_models.class_recursive_ratio(vc, 3),
            "t-equal": lambda: cpu_models.equal_distance(vc, q),
            "t-ordered": lambda: cpu_models.ordered_distance(vc, q, rank)}[measure]()
    device = xp_kernel.DeviceTable.from_encoded(table, backend, sensitive=("s",))
    found = xp_kernel.classes(device, (0,), with_ids=True)
    codes, m = device.sensitive["s"]
    runs = xp_measures.value_runs(backend, found.ids, int(found.sizes.size), codes, m)
    q_ranked, cum_q = device.references["s"]
    got = {"entropy": lambda: xp_measures.entropy(backend, runs, found.sizes),
           "recursive": lambda: xp_measures.recursive_ratio(backend, runs, found.sizes, n, 3),
           "t-equal": lambda: xp_measures.equal_distance(backend, runs, found.sizes, q_ranked),
           "t-ordered": lambda: xp_measures.ordered_distance(backend, runs, found.sizes, cum_q)}[measure]()
    sizes = backend.to_host(found.sizes)
    got_present = backend.to_host(got)[sizes > 0]
    # classes are numbered in key order on both sides: the present ids in order are the CPU's classes
    assert got_present.shape == want.shape
    assert np.allclose(got_present, want, rtol=1e-12, atol=1e-14), np.abs(got_present - want).max()
    if measure == "recursive":  # integer counts: the ratio is exactly the CPU's
        assert np.array_equal(got_present, want)


def test_a_model_or_metric_the_device_cannot_evaluate_falls_back_to_the_cpu_evaluator() -> None:
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 3, (120, 3))
    qis = tuple(encode_column(f"q{i}", [str(v) for v in bits[:, i]],
                              Hierarchy.from_rows(f"q{i}", [[str(v), "*"] for v in range(3)])) for i in range(3))
    table = EncodedTable(120, qis, {"s": dense_codes([str(v) for v in rng.integers(0, 3, 120)])})
    nodes = list(Box.full(table.heights).nodes())
    for models, objective, reason in [
            ([AtLeastWithoutRule(2)], Precision(), "privacy model(s) at-least evaluated on the CPU"),
            ([KAnonymity(2)], OpaqueMetric(), "metric opaque evaluated on the CPU")]:
        cpu = NodeEvaluator(table, [KAnonymity(2)], 0.2, objective)
        device = DeviceEvaluator(table, models, 0.2, objective, device="array")
        assert not device.on_device and device.fallback_reason == reason
        assert_same(cpu, device, nodes)
        assert device.stats["device_nodes"] == 0 and device._device_table is None


@dataclass(frozen=True)
class AtLeast:
    """k-anonymity under another name and type: the device must take it by its count rule, not its class."""

    k: int
    name: ClassVar[str] = "at-least"

    def __getattr__(self, member: str) -> object:  # everything else as KAnonymity(k) answers it
        return getattr(KAnonymity(self.k), member)


@dataclass(frozen=True)
class AtLeastWithoutRule(AtLeast):
    """The same model without a count rule: the device cannot know what it checks."""

    count_rule: ClassVar[None] = None  # type: ignore[assignment]
    measure_rule: ClassVar[None] = None


@dataclass(frozen=True)
class OpaqueMetric(NormalizedCertaintyPenalty):
    """NCP under another name, without the cell costs the device needs: it must fall back to the CPU."""

    name: ClassVar[str] = "opaque"

    def __call__(self, *args: object, **kwargs: object) -> float:
        return NormalizedCertaintyPenalty()(*args, **kwargs)  # type: ignore[arg-type]

    costs = None  # type: ignore[assignment]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(SETTINGS, max_examples=examples(15))
@given(table=tables(), k=st.integers(1, 4), t=st.sampled_from([0.0, 0.3]))
def test_the_device_asks_the_models_for_their_count_rule_not_their_type(backend: xp_kernel.Backend,
                                                                        table: EncodedTable, k: int, t: float) -> None:
    nodes = list(Box.full(table.heights).nodes())
    cpu = NodeEvaluator(table, [KAnonymity(k)], t)
    device = DeviceEvaluator(table, [AtLeast(k), DistinctLDiversity("s", 2)], t, backend=backend)
    assert device.on_device and device.spec == xp_kernel.ModelSpec(max(k, 2), (("s", 2),))
    assert_same(NodeEvaluator(table, [KAnonymity(k), DistinctLDiversity("s", 2)], t), device, nodes)
    fallback = DeviceEvaluator(table, [AtLeastWithoutRule(k)], t, backend=backend)
    assert not fallback.on_device and fallback.fallback_reason == "privacy model(s) at-least evaluated on the CPU"
    assert_same(cpu, fallback, nodes)


def test_the_evaluator_pickles_without_its_device_arrays() -> None:
    table = binary_table(np.random.default_rng(1).integers(0, 2, (50, 4)))
    device = DeviceEvaluator(table, [KAnonymity(2)], 0.0, device="array")
    device.evaluate((0, 0, 0, 0))
    copy = pickle.loads(pickle.dumps(device))
    assert copy._device_table is None
    assert copy.evaluate((0, 1, 0, 1)) == device.evaluate((0, 1, 0, 1))


def test_unknown_device_and_missing_gpu_are_input_errors() -> None:
    table = binary_table(np.zeros((3, 1), dtype=np.int64))
    with pytest.raises(InputError, match="unknown device"):
        make_evaluator(table, [KAnonymity(1)], device="tpu")
    assert type(make_evaluator(table, [KAnonymity(1)], device="cpu")) is NodeEvaluator
    if CUPY:
        pytest.skip("a GPU is present: the no-GPU message cannot be seen here")
    with pytest.raises(InputError, match="--device gpu"):
        backend_for("gpu")


def test_cli_device_gpu_without_a_gpu_is_one_line_and_exit_2(tmp_path: Path) -> None:
    if CUPY:
        pytest.skip("a GPU is present: the no-GPU message cannot be seen here")
    data = tmp_path / "t.csv"
    data.write_text("a,b\n1,2\n1,2\n3,4\n3,4\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "kgen", "anonymize",
                          "--keep-unnamed", str(data), "--qi", "a,b", "--k", "2",
                          "--device", "gpu", "--quiet"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "--device gpu" in run.stderr
    assert not (tmp_path / "t_anonymized.csv").exists()


# --- the real datasets and the public API -------------------------------------------------------------------

def test_cargo_with_all_97_qis_at_low_nodes_equals_the_cpu_evaluator(cargo_csv: Path) -> None:
    from kgen.io.table import read_csv
    from kgen.run.config import Config
    from kgen.run.prepare import prepare

    table = read_csv(cargo_csv)
    config = Config(qi=table.columns[1:98], identifiers=("nr",), k=2, suppression=0.005, prune=False, keep_unnamed=True)
    cpu = prepare(table, config, require_feasible=False).evaluator
    device = DeviceEvaluator(cpu.table, cpu.models, cpu.suppression_limit, cpu.objective, device="array")
    rng = np.random.default_rng(11)
    nodes = [(0,) * 97] + [tuple(int(v) for v in rng.integers(0, 2, 97) * (np.array(cpu.table.heights) > 0))
                           for _ in range(8)]
    assert_same(cpu, device, nodes)
    assert device.evaluate((0,) * 97).classes == int(
        (kernel.class_sizes(*cpu.table.columns((0,) * 97), cpu.table.n) >= 2).sum())


@pytest.mark.parametrize("algorithm,options", [("kgen", {"population": 20}), ("bestfirst", {}), ("ola", {})])
def test_searches_through_the_api_give_the_cpu_result_on_adult(adult_csv: Path, algorithm: str,
                                                              options: dict) -> None:
    from kgen.io.table import read_csv
    from kgen.run.config import Config
    from kgen.run.pipeline import anonymize

    table = read_csv(adult_csv)
    common = {"qi": ("sex", "age", "race", "marital-status", "education"), "k": 5, "suppression": 0.01,
              "hierarchy_dir": str(adult_csv.parent), "algorithm": algorithm, "options": options, "seed": 3,
              "max_evaluations": 200 if algorithm == "kgen" else None}
    cpu = anonymize(table, Config(**common, keep_unnamed=True))  # type: ignore[arg-type]
    array = anonymize(table, Config(**common, device="array", keep_unnamed=True))  # type: ignore[arg-type]
    assert array.evaluation == cpu.evaluation
    assert array.search.evaluations == cpu.search.evaluations and array.search.minimal == cpu.search.minimal
    assert np.array_equal(array.suppressed_rows, cpu.suppressed_rows)
    assert array.release.values == cpu.release.values
    timing = ("seconds", "prepare_seconds", "bound_seconds", "provenance", "evaluator")  # evaluator: who evaluated
    report_cpu = {k: v for k, v in cpu.report.items() if k not in timing}
    report_array = {k: v for k, v in array.report.items() if k not in timing}
    assert report_array == report_cpu


def test_distinct_l_diversity_through_the_api_runs_on_the_device(adult_csv: Path) -> None:
    from kgen.io.table import read_csv
    from kgen.run.config import Config
    from kgen.run.pipeline import anonymize
    from kgen.run.prepare import prepare

    table = read_csv(adult_csv)
    common = {"qi": ("sex", "age", "race", "marital-status"), "k": 3, "suppression": 0.02, "sensitive": ("occupation",),
              "l": 3, "hierarchy_dir": str(adult_csv.parent), "algorithm": "bestfirst", "metric": "dm"}
    prepared = prepare(table, Config(**common, device="array", keep_unnamed=True))  # type: ignore[arg-type]
    assert isinstance(prepared.evaluator, DeviceEvaluator) and prepared.evaluator.on_device
    cpu = anonymize(table, Config(**common, keep_unnamed=True))  # type: ignore[arg-type]
    array = anonymize(table, Config(**common, device="array", keep_unnamed=True))  # type: ignore[arg-type]
    assert array.evaluation == cpu.evaluation
    assert np.array_equal(array.suppressed_rows, cpu.suppressed_rows)


# --- one device per worker ----------------------------------------------------------------------------------

def test_workers_are_given_the_visible_devices_round_robin() -> None:
    assert [pick_device(worker, 3) for worker in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert [pick_device(worker, 1) for worker in range(3)] == [0, 0, 0]
    with pytest.raises(InputError, match="no GPU"):
        pick_device(0, 0)
    with pytest.raises(ValueError, match="start at 0"):
        pick_device(-1, 2)
    assert visible_devices("array") == 1
    if not CUPY:
        assert visible_devices("gpu") == 0


def test_each_worker_copy_evaluates_on_its_own_device_and_agrees_with_the_cpu() -> None:
    """With a fake count of 3 devices (numpy stands for each), worker copies take devices 0, 1, 2, 0 and every
    copy gives the CPU evaluator's evaluations; the copy starts with nothing computed."""
    rng = np.random.default_rng(8)
    table = binary_table(rng.integers(0, 2, (200, 4)))
    models = [KAnonymity(3)]
    parent = DeviceEvaluator(table, models, 0.05, device="array")
    parent.evaluate((0, 0, 0, 0))
    cpu = NodeEvaluator(table, models, 0.05)
    nodes = list(Box.full(table.heights).nodes())
    copies = [parent.worker_copy(worker, device_count=3) for worker in range(4)]
    assert [c.device_index for c in copies] == [0, 1, 2, 0]
    assert [c.backend.device_id for c in copies] == [0, 1, 2, 0]
    assert [c.describe()["device_index"] for c in copies] == [0, 1, 2, 0]
    assert NodeEvaluator(table, models, 0.05).describe() == {"device": "cpu", "kernel": "fast", "on_device": False}
    assert {"device": "array", "backend": "numpy", "on_device": True}.items() <= copies[1].describe().items()
    for copy in copies:
        assert copy.state.evaluations == {} and copy._device_table is None
        assert copy.compute_many(nodes) == [cpu.evaluate(node) for node in nodes]
    revived = pickle.loads(pickle.dumps(copies[2]))
    assert revived.device_index == 2 and revived.backend.device_id == 2


def test_a_runner_ships_a_device_template_and_each_worker_makes_its_own_device_evaluator() -> None:
    """The hooks a parallel runner calls: the CPU evaluator ships and makes CPU evaluators, the device
    evaluator a pickled device template (no device arrays, nothing computed) and device evaluators."""
    rng = np.random.default_rng(4)
    table = binary_table(rng.integers(0, 2, (120, 3)))
    cpu = NodeEvaluator(table, [KAnonymity(2)], 0.0)
    assert type(cpu.worker_template()) is NodeEvaluator and type(cpu.for_worker(3)) is NodeEvaluator
    device = DeviceEvaluator(table, [KAnonymity(2)], 0.0, device="array")
    device.evaluate((0, 0, 0))
    shipped = pickle.loads(pickle.dumps(device.worker_template()))
    assert isinstance(shipped, DeviceEvaluator) and shipped._device_table is None
    assert shipped.state.evaluations == {}
    mine = shipped.for_worker(5)  # numpy: one device, so every worker gets device 0
    assert isinstance(mine, DeviceEvaluator) and mine.device_index == 0
    assert mine.evaluate((0, 1, 0)) == cpu.evaluate((0, 1, 0)) and mine.stats["device_nodes"] == 1


def test_an_evaluator_adopts_a_device_table_that_serves_it_and_refuses_one_that_cannot() -> None:
    rng = np.random.default_rng(12)
    qis = tuple(encode_column(f"q{i}", [str(v) for v in rng.integers(0, 4, 150)],
                              Hierarchy.from_rows(f"q{i}", [[str(v), "*"] for v in range(4)])) for i in range(2))
    table = EncodedTable(150, qis, {"s": dense_codes([str(v) for v in rng.integers(0, 5, 150)])})
    models = [KAnonymity(2), EntropyLDiversity("s", 1.5)]
    first = DeviceEvaluator(table, models, 0.1, device="array")
    shared = first.device_table
    second = DeviceEvaluator(table, models, 0.1, device="array")
    second.adopt(shared)
    nodes = list(Box.full(table.heights).nodes())
    assert second.evaluate_many(nodes) == NodeEvaluator(table, models, 0.1).evaluate_many(nodes)
    assert second.device_table is shared
    with pytest.raises(ValueError, match="missing columns"):
        second.adopt(xp_kernel.DeviceTable.from_encoded(table, xp_kernel.NUMPY))  # without `s`
    with pytest.raises(ValueError, match="cost tables"):
        DeviceEvaluator(table, [KAnonymity(2)], 0.1, NormalizedCertaintyPenalty(), device="array").adopt(shared)
