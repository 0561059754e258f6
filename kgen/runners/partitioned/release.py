"""The release: a map-only pass writing one output part per input partition.

Why map-only: once the client knows the released node and the keys of its classes smaller than k (at most
the suppressed rows, bounded by t * n), each partition decides each of its rows alone: generalize its QIs
to the node's labels, replace identifiers by `*`, and put `*` in every QI of a row whose class key is
suppressed (or drop the row). Each task reads its input partition again (all columns), writes its part under
a temporary name, and returns only counts; the client renames the parts into place after the independent
check passed (kgen.check.partitioned), so a failed run publishes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyarrow import csv

from kgen.io.table import SUPPRESSED
from kgen.runners.partitioned import keys as keying
from kgen.runners.partitioned.part import Plan
from kgen.runners.partitioned.source import read_part


@dataclass(frozen=True)
class Written:
    """What a release task reports: rows read and written, its suppressed rows (0-based, in the partition),
    and per QI which codes of the node's level its released rows hold."""

    index: int
    temp: str
    final: str
    rows: int
    written: int
    suppressed: np.ndarray
    present: list[np.ndarray]


def part_name(index: int) -> str:
    return f"part-{index:05d}.csv"


def suppressed_mask(keys: np.ndarray, small: Sequence[np.ndarray]) -> np.ndarray:
    """Rows whose class key is among the suppressed keys."""
    chosen = [s for s in small if s.shape[0]]
    if not chosen:
        return np.zeros(keys.shape[0], dtype=bool)
    wanted = np.concatenate(chosen)
    if keys.ndim == 1:
        return np.isin(keys, wanted)
    index = pd.MultiIndex.from_arrays([wanted[:, w] for w in range(wanted.shape[1])])
    return pd.MultiIndex.from_arrays([keys[:, w] for w in range(keys.shape[1])]).isin(index)


def write_part(part: Any, index: int, separator: str, folder: str, token: str, qis: Sequence[str],
               identifiers: Sequence[str], raw: list[tuple[pd.Index, np.ndarray]], lookups: list[np.ndarray],
               labels: list[tuple[str, ...]], plan: Plan, drop: bool, *small: np.ndarray) -> Written:
    """Task: generalize, suppress and write one partition (see the module docstring). `lookups[i]` is QI i's
    leaf -> code array at the node's level and `labels[i]` its labels there."""
    table = read_part(part, None, separator)
    n = table.num_rows
    codes = {}
    for i, column in enumerate(qis):
        encoded = table.column(column).dictionary_encode().combine_chunks()
        local = np.array(encoded.dictionary.to_pylist(), dtype=object)
        index_of, to_leaf = raw[i]
        local_to_level = lookups[i][to_leaf[index_of.get_indexer(local)]]
        codes[i] = local_to_level[encoded.indices.to_numpy(zero_copy_only=False)] if n else local_to_level[:0]
    suppressed = suppressed_mask(keying.fold(codes, plan.layout, n), small)
    keep = ~suppressed
    present = [np.bincount(codes[i][keep], minlength=len(labels[i])) > 0 for i in range(len(qis))]
    columns = []
    for name in table.column_names:
        if name in qis:
            i = list(qis).index(name)
            star = len(labels[i])
            level = codes[i].astype(np.int32)
            level[suppressed] = star
            columns.append(pa.DictionaryArray.from_arrays(pa.array(level), pa.array(list(labels[i]) + [SUPPRESSED]))
                           .cast(pa.string()))
        elif name in identifiers:
            columns.append(pa.array(np.full(n, SUPPRESSED, dtype=object), type=pa.string()))
        else:
            columns.append(table.column(name))
    out = pa.table(columns, names=table.column_names)
    if drop:
        out = out.filter(pa.array(keep))
    final = str(Path(folder) / part_name(index))
    temp = str(Path(folder) / f".{part_name(index)}.{token}.tmp")
    options = csv.WriteOptions(include_header=True, delimiter=separator, quoting_style="needed")
    csv.write_csv(out, temp, options)
    return Written(index, temp, final, n, out.num_rows, np.flatnonzero(suppressed), present)


@dataclass(frozen=True)
class PartsRelease:
    """A partitioned run's release: its parts written under temporary names in `folder` and checked
    independently (`verified`: kgen.check.partitioned on the written parts, merged), not yet published.
    `kgen.report.publish.write_release` publishes it with its report, under the output lock."""

    folder: str
    parts: tuple[Written, ...]
    verified: dict

    def publish(self) -> None:
        publish(self.parts)

    def discard(self) -> None:
        discard(self.parts)

    def unpublish(self) -> None:
        """Remove the published parts again (their report could not be written: never a release alone)."""
        for w in self.parts:
            Path(w.final).unlink(missing_ok=True)


def publish(written: Sequence[Written]) -> None:
    """Rename every temporary part to its final name (each rename is atomic)."""
    for w in written:
        os.replace(w.temp, w.final)


def discard(written: Sequence[Written]) -> None:
    for w in written:
        try:
            os.unlink(w.temp)
        except FileNotFoundError:
            pass
