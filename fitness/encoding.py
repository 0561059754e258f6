"""Tables encoded for evaluation: per QI and level, a dense integer code per row.

A level's codes per row are what the kernel groups; they are made from the leaf codes and a small
leaf -> level map (`LevelCodes`) the first time a node at that level is evaluated, and kept: a level the
search never visits costs nothing, and a table sent to a worker carries the leaf codes and the maps only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, overload

import numpy as np

from lattice.hierarchy import Hierarchy

T = TypeVar("T")


class LevelCodes(Sequence[np.ndarray]):
    """The codes per row of one QI at every level: level 0 the leaf codes; level L >= 1 the leaf codes read
    through `maps[L - 1]` (each leaf's code at level L), made on first use and kept."""

    __slots__ = ("leaf", "maps", "_made")

    def __init__(self, leaf: np.ndarray, maps: Sequence[np.ndarray]) -> None:
        self.leaf = leaf
        self.maps = tuple(maps)
        self._made: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.maps) + 1

    @overload
    def __getitem__(self, level: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, level: slice) -> list[np.ndarray]: ...

    def __getitem__(self, level: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(level, slice):
            return [self[i] for i in range(len(self))[level]]
        if level < 0:
            level += len(self)
        if not 0 <= level < len(self):
            raise IndexError(level)
        if level == 0:
            return self.leaf
        made = self._made.get(level)
        if made is None:
            leaf_to_level = self.maps[level - 1]
            if not self.leaf.size or not leaf_to_level.any():  # one value at this level: a read-only view of 0s
                made = np.broadcast_to(np.zeros(1, dtype=leaf_to_level.dtype), self.leaf.shape)
            else:
                made = leaf_to_level[self.leaf]
            self._made[level] = made
        return made

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[level] for level in range(len(self)))

    def __getstate__(self) -> tuple:
        return self.leaf, self.maps  # the made levels are not shipped: a worker makes its own

    def __setstate__(self, state: tuple) -> None:
        self.leaf, self.maps = state
        self._made = {}


@dataclass(frozen=True, eq=False)
class EncodedQI:
    """One quasi-identifier. `codes[L][r]` is row r's value at level L as a dense code in
    [0, cards[L]); `labels[L][c]` is the generalized value that code c stands for. `codes` is a tuple of
    arrays or a `LevelCodes` (levels made on first use).

    `domain`, when the hierarchy has leaves that the data lacks (ARX's Adult age hierarchy lists 1..100, the
    data holds 72 ages): per level, per code, how many of the hierarchy's leaves its value covers, and as last
    item the hierarchy's leaf count. ARX's Loss measures a value's share of that domain (`fitness.objective`,
    `arx_domain_share`); None when the hierarchy's leaves are the data's (then the data's leaves are the
    domain)."""

    name: str
    codes: Sequence[np.ndarray]
    labels: tuple[tuple[str, ...], ...]
    domain: tuple[tuple[np.ndarray, ...], int] | None = field(default=None, compare=False)

    @property
    def height(self) -> int:
        return len(self.codes) - 1

    @cached_property
    def cards(self) -> tuple[int, ...]:  # cached: read on every node evaluation
        return tuple(len(lab) for lab in self.labels)

    def leaf_map(self, level: int) -> np.ndarray:
        """The level-`level` code of each leaf (level-0) code, as int64 (leaf codes are dense: every leaf
        occurs). Read from the maps when the levels are `LevelCodes`, else from the rows."""
        if isinstance(self.codes, LevelCodes):
            return np.arange(self.cards[0]) if level == 0 else self.codes.maps[level - 1].astype(np.int64)
        out = np.zeros(self.cards[0], dtype=np.int64)
        out[self.codes[0]] = self.codes[level]
        return out


@dataclass(frozen=True, eq=False)
class EncodedTable:
    """The rows as codes: one EncodedQI per quasi-identifier (in lattice order) and the sensitive
    attributes as dense codes with their labels.

    `population`, when a model compares the release with a population (delta-presence, k-map with a population
    table: `fitness.privacy.presence`), is the population's rows encoded with the same codes and labels (made
    by `select_rows` of one joint encoding): the evaluator counts both per class. None on the common path."""

    n: int
    qis: tuple[EncodedQI, ...]
    sensitive: dict[str, tuple[np.ndarray, tuple[str, ...]]] = field(default_factory=dict)
    population: EncodedTable | None = None
    _derived: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """`build()`, computed once per table and kept with it.

        Figures that depend on the table alone (the support map, t-closeness' reference distribution, the cell
        costs of NCP, Loss and entropy) live exactly as long as the table that owns them: no module-level
        cache. They are not pickled: a copy sent to a worker derives its own when it needs them.
        """
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_derived"] = {}
        return state

    @cached_property
    def heights(self) -> tuple[int, ...]:  # cached: read on every node evaluation
        return tuple(q.height for q in self.qis)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.qis)

    def columns(self, node: Sequence[int]) -> tuple[list[np.ndarray], list[int]]:
        """The code columns and their cardinalities at a node."""
        return ([q.codes[x] for q, x in zip(self.qis, node)], [q.cards[x] for q, x in zip(self.qis, node)])


def code_dtype(card: int) -> type[np.integer]:
    """The narrowest integer type that holds codes 0..card-1: uint8, uint16 or int32. Narrow codes are what
    keep a table of millions of rows small (a level of 10 labels costs 1 byte per row, not 4); every
    consumer widens them to int64 where it computes keys."""
    return np.uint8 if card <= 1 << 8 else np.uint16 if card <= 1 << 16 else np.int32


def narrow(codes: np.ndarray, card: int) -> np.ndarray:
    """`codes` in `code_dtype(card)` (the same array when it already is)."""
    return codes.astype(code_dtype(card), copy=False)


def dense_codes(values: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Dense integer codes for a column of strings, labels sorted."""
    labels = tuple(sorted(set(values)))
    index = {v: i for i, v in enumerate(labels)}
    # map over the bound lookup: about twice as fast as a generator on 1M-row columns (prepare's hot spot)
    return np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values)), labels


def encode_column(name: str, values: Sequence[str], hierarchy: Hierarchy) -> EncodedQI:
    """Encode one QI column through its hierarchy. Every value must be in the hierarchy
    (`Hierarchy.check_covers` gives the user error)."""
    leaf_codes, leaves = dense_codes(values)
    return encode_codes(name, leaf_codes, leaves, hierarchy)


def encode_codes(name: str, leaf_codes: np.ndarray, leaves: Sequence[str], hierarchy: Hierarchy) -> EncodedQI:
    """Encode one QI column given as codes into its distinct values (`leaves`, sorted and unique, every one
    occurring): the work is per distinct value, and per row only one array lookup per level. Codes are kept
    in the narrowest integer type (`code_dtype`); level 0 shares `leaf_codes` when it already is (no copy)."""
    leaf_codes = narrow(np.asarray(leaf_codes), len(leaves))
    codes, labels = [], []
    arrays = hierarchy.levels
    if arrays is not None and (arrays.leaves is leaves or tuple(leaves) == arrays.leaves):
        # a hierarchy held as arrays over these very leaves: its maps are the levels (made per row on first use)
        return EncodedQI(name, LevelCodes(leaf_codes, arrays.maps), (arrays.leaves, *arrays.labels))
    paths = [hierarchy.paths[v] for v in leaves]  # each leaf's labels at every level (`Hierarchy.generalize`)
    for level in range(hierarchy.height + 1):
        if level == 0:
            codes.append(leaf_codes)
            labels.append(tuple(leaves))
            continue
        leaf_labels = [path[level] for path in paths]
        level_labels = tuple(sorted(set(leaf_labels)))
        index = {v: i for i, v in enumerate(level_labels)}
        leaf_to_level = np.array([index[v] for v in leaf_labels], dtype=code_dtype(len(level_labels)))
        codes.append(leaf_to_level[leaf_codes] if len(leaves) else leaf_codes)
        labels.append(level_labels)
    return EncodedQI(name, tuple(codes), tuple(labels), hierarchy_domain(hierarchy, labels))


def hierarchy_domain(hierarchy: Hierarchy,
                     labels: Sequence[Sequence[str]]) -> tuple[tuple[np.ndarray, ...], int] | None:
    """`EncodedQI.domain`: per level, per label of `labels[level]`, how many of the hierarchy's leaves it covers,
    and the hierarchy's leaf count; None when the hierarchy has no leaf beyond the data's (`labels[0]`). Why:
    ARX's Loss charges a generalized value its share of the hierarchy's domain, not of the values that occur."""
    if len(hierarchy.paths) <= len(labels[0]):
        return None
    counts = []
    for level, level_labels in enumerate(labels):
        covered: dict[str, int] = {}
        for path in hierarchy.paths.values():
            covered[path[level]] = covered.get(path[level], 0) + 1
        counts.append(np.array([covered.get(v, 1) for v in level_labels], dtype=np.int64))
    return tuple(counts), len(hierarchy.paths)


def select_rows(table: EncodedTable, rows: np.ndarray) -> EncodedTable:
    """The rows `rows` (indices) of a table alone, every QI keeping its whole hierarchy: the labels of each
    level and the leaf -> level maps are the whole table's, so a cost read through them (NCP's share of the
    leaves a value covers, Loss's interval width) is the one the whole table gives. What local recoding searches
    on (`kgen.run.recoding`); the privacy models' references come with `fitness.models.restricted`."""
    qis = tuple(
        EncodedQI(q.name, LevelCodes(q.codes[0][rows], [narrow(q.leaf_map(level), q.cards[level])
                                                        for level in range(1, q.height + 1)]), q.labels,
                  q.domain)
        for q in table.qis)
    sensitive = {column: (codes[rows], labels) for column, (codes, labels) in table.sensitive.items()}
    return EncodedTable(int(rows.size), qis, sensitive)
