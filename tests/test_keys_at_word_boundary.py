"""Class keys at the int64 word boundary: every grouping of rows by QI codes keeps apart rows that differ (issue 25).

Why: kgen groups rows by folding per-QI codes into one int64 key (`key = key * card + code`) and must renumber
(re-densify) or start a new word before the product of the cardinalities reaches 2**63. Tables of a few
binary QIs never get there, so the suite passed when the renumbering was planted at 2**72 (risk), tested on
the span alone (the device kernel: a non-binary QI then overflows) or when a partitioned key word was allowed
up to 2**64. The tables here are built so that an overflow merges rows:

- `TWINS`: a binary column, then seven columns of 1024 distinct values each (2 * 2**70 keys). Each row has a
  twin differing only in the binary column; folded without renumbering, the twins differ by 2**70, which is 0
  modulo 2**64: they merge into classes of 2, and k = 2 looks met although every row is alone.
- `TRIPLETS`: a column of three values, six columns of 1024 values and one of 4 (3 * 2**62 keys, between
  2**63 and 2**64): one word only while the word limit is wrong, and then the keys of the third value wrap to
  negative numbers and decode as the second.

Each consumer (the evaluator's kernels, the device kernel on the array backend, `kgen check`'s grouping, the
risk report, the partitioned evaluator) must see every row alone at the bottom node.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kgen import Config, check_k_anonymity, from_mapping, prepare, read_csv
from kgen.report.risk import risk_report

GROUPS = 1024


def wide_columns(groups: int, cards: list[int], seed: int) -> list[list[int]]:
    """Per column, the value of each group: a permutation of range(card) repeated (every value occurs)."""
    rng = random.Random(seed)
    out = []
    for card in cards:
        values = list(range(card)) * (groups // card)
        rng.shuffle(values)
        out.append(values)
    return out


def table_of(first: list[str], cards: list[int], seed: int) -> dict[str, list[str]]:
    """`len(first)` rows per group, differing only in column c0 (the values `first`); columns c1.. per group."""
    columns = wide_columns(GROUPS, cards, seed)
    data: dict[str, list[str]] = {"c0": []}
    data.update({f"c{i + 1}": [] for i in range(len(cards))})
    for g in range(GROUPS):
        for value in first:
            data["c0"].append(value)
            for i, column in enumerate(columns):
                data[f"c{i + 1}"].append(f"v{column[g]}")
    return data


TWINS = table_of(["a", "b"], [GROUPS] * 7, seed=1)
TRIPLETS = table_of(["a", "b", "c"], [GROUPS] * 6 + [4], seed=2)


def config(data: dict, **changes: object) -> Config:
    names = list(data)
    settings = {"qi": names, "k": 2, "suppression": 0.0, "hierarchies": dict.fromkeys(names, "flat")}
    settings.update(changes)
    return Config(**settings)  # type: ignore[arg-type]


def write_csv(path: Path, data: dict[str, list[str]]) -> Path:
    names = list(data)
    rows = zip(*(data[n] for n in names))
    path.write_text(",".join(names) + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_tables_reach_the_word_boundary_and_every_row_is_alone() -> None:
    for data, span in ((TWINS, 2 * 2**70), (TRIPLETS, 3 * 2**62)):
        cards = [len(set(v)) for v in data.values()]
        assert int(np.prod([float(c) for c in cards])) == span and span >= 2**63
        rows = list(zip(*data.values()))
        assert len(set(rows)) == len(rows)


@pytest.mark.parametrize("kernel", ["fast", "bitset"])
def test_the_evaluator_keeps_twins_apart(kernel: str) -> None:
    prepared = prepare(from_mapping(TWINS), config(TWINS, kernel=kernel), require_feasible=False)
    bottom = prepared.evaluator.evaluate((0,) * len(TWINS))
    assert not bottom.feasible and bottom.classes == 0 and bottom.suppressed == 2 * GROUPS


def test_the_device_kernel_on_the_array_backend_keeps_twins_apart() -> None:
    """A non-binary QI: the span test must look at span * card, not at the span alone."""
    prepared = prepare(from_mapping(TWINS), config(TWINS, device="array"), require_feasible=False)
    cpu = prepare(from_mapping(TWINS), config(TWINS), require_feasible=False)
    bottom = (0,) * len(TWINS)
    device = prepared.evaluator.evaluate(bottom)
    assert not device.feasible and device.suppressed == 2 * GROUPS
    assert device == cpu.evaluator.evaluate(bottom)


def test_kgen_check_on_a_file_keeps_twins_apart(tmp_path: Path) -> None:
    released = read_csv(write_csv(tmp_path / "twins.csv", TWINS))
    verdict = check_k_anonymity(released, list(TWINS), 2)
    assert not verdict.passed and verdict.smallest_class == 1 and len(verdict.violating_rows) == 2 * GROUPS


def test_the_risk_report_on_a_file_keeps_twins_apart(tmp_path: Path) -> None:
    released = read_csv(write_csv(tmp_path / "twins.csv", TWINS))
    risk = risk_report(released, list(TWINS))
    assert risk["sample_uniques"] == 2 * GROUPS and risk["prosecutor"]["max"] == 1.0
    plain = risk_report(from_mapping(TWINS), list(TWINS))  # strings per row: the loop, no keys
    assert plain["sample_uniques"] == 2 * GROUPS


distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    client = distributed.Client(cluster, set_as_default=False, timeout="30s")
    yield client
    client.close()
    cluster.close()


def test_the_partitioned_evaluator_keeps_triplets_apart_when_a_key_word_nears_2_to_the_64(client,
                                                                                           tmp_path: Path) -> None:
    from kgen.run.partitioned import prepare as prepare_partitioned
    from kgen.runners.partitioned.source import open_source

    folder = tmp_path / "parts"
    folder.mkdir()
    names = list(TRIPLETS)
    half = len(TRIPLETS["c0"]) // 2
    write_csv(folder / "part0.csv", {n: v[:half] for n, v in TRIPLETS.items()})
    write_csv(folder / "part1.csv", {n: v[half:] for n, v in TRIPLETS.items()})
    cfg = config(TRIPLETS, suppression=0.5)
    parted = prepare_partitioned(client, open_source(str(folder / "part*.csv")), cfg)
    memory = prepare(from_mapping(TRIPLETS), cfg, require_feasible=False)
    nodes = [(0,) * len(names), (1,) + (0,) * (len(names) - 1)]
    found = parted.evaluator.evaluate_many(nodes)
    assert found == memory.evaluator.evaluate_many(nodes)
    assert found[0].classes == 0 and found[0].suppressed == 3 * GROUPS  # every row alone
    assert Counter(zip(*(TRIPLETS[n] for n in names[1:]))).most_common(1)[0][1] == 3  # c0 raised: triplets
    assert found[1].classes == GROUPS and found[1].smallest_class == 3
