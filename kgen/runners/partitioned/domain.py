"""Pass 0: the distinct values of every QI (a tree merge over the partitions), the hierarchies built from
them by the in-memory path's rules, and the lookup arrays every partition turns into leaf codes.

Why: hierarchies and codes depend only on the distinct values, never on rows, so the client needs the
distinct values (a few MB) and not the table. The same normalization (surrounding blanks stripped, the
configured missing tokens merged into the most frequent one), the same `kgen.io.hierarchies.resolve` and the
same `fitness.encoding.encode_codes` as `kgen.run.pipeline.prepare` give the same levels, labels and codes, so the
searches see the same lattice and the release the same labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fitness.encoding import code_dtype, encode_codes
from kgen.io import hierarchies as hierarchy_specs
from kgen.runners.partitioned.part import Part
from kgen.runners.partitioned.source import dictionary, read_part
from lattice.hierarchy import Hierarchy


@dataclass(eq=False)
class Local:
    """A partition right after reading: per QI its distinct raw values and one code per row into them."""

    n: int
    labels: list[np.ndarray]
    codes: list[np.ndarray]


def read_local(part: Any, qis: Sequence[str], separator: str) -> Local:
    """Task: read one partition's QI columns and dictionary-encode them."""
    table = read_part(part, qis, separator)
    labels, codes = [], []
    for column in qis:
        lab, code = dictionary(table.column(column))
        labels.append(lab)
        codes.append(code)
    return Local(table.num_rows, labels, codes)


Distinct = list[tuple[np.ndarray, np.ndarray]]  # per QI: sorted distinct raw values, and their row counts


def distinct_of(local: Local) -> tuple[int, Distinct]:
    """Task: a partition's row count and, per QI, its distinct raw values (sorted) with counts."""
    out = []
    for labels, codes in zip(local.labels, local.codes):
        counts = np.bincount(codes, minlength=labels.size)
        order = np.argsort(labels, kind="stable")
        out.append((labels[order], counts[order]))
    return local.n, out


def merge_distinct(*pieces: tuple[int, Distinct]) -> tuple[int, Distinct]:
    """Task: one step of the tree merge: summed row counts and merged distinct values with summed counts."""
    n = sum(p[0] for p in pieces)
    out = []
    for i in range(len(pieces[0][1])):
        series = pd.concat([pd.Series(p[1][i][1], index=p[1][i][0]) for p in pieces])
        summed = series.groupby(level=0, sort=True).sum()
        out.append((summed.index.to_numpy(dtype=object), summed.to_numpy(dtype=np.int64)))
    return n, out


def leaf_part(local: Local, index: int, offset: int, raw: list[tuple[pd.Index, np.ndarray]],
              lookups: list[tuple[np.ndarray, ...]]) -> Part:
    """Task: a partition's leaf codes (its raw values through the broadcast raw value -> leaf arrays)."""
    leaves = []
    for (labels, codes), (index_of, to_leaf) in zip(zip(local.labels, local.codes), raw):
        local_to_leaf = to_leaf[index_of.get_indexer(labels)]
        leaves.append(local_to_leaf[codes] if codes.size else local_to_leaf[:0])
    return Part(index, offset, local.n, leaves, lookups)


@dataclass(frozen=True, eq=False)
class Domain:
    """The QIs as the searches see them: hierarchies, labels per level, lookup arrays leaf -> code per level
    (`lookups[i][L]`), and for pass 0's last step each QI's raw value -> leaf code arrays."""

    names: tuple[str, ...]
    n: int
    hierarchies: dict[str, Hierarchy]
    sources: dict[str, str]
    labels: tuple[tuple[tuple[str, ...], ...], ...]
    lookups: tuple[tuple[np.ndarray, ...], ...]
    raw: tuple[tuple[pd.Index, np.ndarray], ...]
    leaf_counts: tuple[np.ndarray, ...]
    tokens: dict[str, str | None]

    @property
    def heights(self) -> tuple[int, ...]:
        return tuple(len(levels) - 1 for levels in self.labels)

    def cards(self, node: Sequence[int]) -> list[int]:
        return [len(levels[x]) for levels, x in zip(self.labels, node)]


def most_frequent_token(counts: dict[str, int], tokens: Sequence[str]) -> str | None:
    """The configured missing token occurring most often (ties: the first configured), as kgen.run.pipeline does."""
    present = [t for t in tokens if counts.get(t, 0) > 0]
    return max(present, key=lambda t: (counts[t], -list(tokens).index(t))) if present else None


def build_domain(names: Sequence[str], n: int, distinct: Distinct, missing: Sequence[str],
                 specs: dict[str, object], folder: str | None, source: str) -> Domain:
    """Normalize each QI's distinct values, resolve its hierarchy, and make its lookup arrays."""
    tokens = tuple(missing)
    hierarchies, sources, labels, lookups, raw, leaf_counts, canonical = {}, {}, [], [], [], [], {}
    for name, (values, counts) in zip(names, distinct):
        stripped = [str(v).strip() for v in values]
        missing_counts: dict[str, int] = {}
        for label, count in zip(stripped, counts.tolist()):
            if label in tokens:
                missing_counts[label] = missing_counts.get(label, 0) + count
        token = most_frequent_token(missing_counts, tokens)
        normalized = [token if token is not None and s in tokens else s for s in stripped]
        leaves = tuple(sorted(set(normalized)))
        index = {v: i for i, v in enumerate(leaves)}
        to_leaf = np.array([index[v] for v in normalized], dtype=code_dtype(len(leaves)))
        hierarchy, described = hierarchy_specs.resolve(name, [v for v in leaves if v != token], token,
                                                       specs.get(name), folder, source)
        encoded = encode_codes(name, np.arange(len(leaves)), leaves, hierarchy)
        hierarchies[name], sources[name], canonical[name] = hierarchy, described, token
        labels.append(encoded.labels)
        lookups.append(encoded.codes)
        raw.append((pd.Index(values), to_leaf))
        leaf_counts.append(np.bincount(to_leaf, weights=counts, minlength=len(leaves)).astype(np.int64))
    return Domain(tuple(names), n, hierarchies, sources, tuple(labels), tuple(lookups), tuple(raw),
                  tuple(leaf_counts), canonical)
