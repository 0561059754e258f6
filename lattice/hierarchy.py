"""Generalization hierarchies: for each raw value, its generalized value at every level.

The representation is ARX's: one path per raw value, `path[0]` the value itself and `path[h]` its most
general form (usually `*`). The paths must form a tree: a value at level L has one parent at level L+1.

A hierarchy built by a vectorized builder (decimal rounding of a column of integers) is held as arrays
instead (`Levels`: per level, each leaf's code among that level's labels): a column of 200,000 distinct
incomes then costs a few arrays, not 200,000 tuples, and its paths are made only if someone asks for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from lattice.errors import InputError, clip

TOP = "*"


@dataclass(frozen=True, eq=False)
class Levels:
    """A hierarchy as arrays over its leaves: `leaves` (sorted, distinct), and for each level L = 1..h the
    sorted distinct labels `labels[L - 1]` and, per leaf, its label's position among them `maps[L - 1]`
    (so leaf i generalizes to `labels[L - 1][maps[L - 1][i]]` at level L). A tree by construction: each
    leaf has one label per level, and the builder makes labels nest."""

    leaves: Sequence[str]
    maps: tuple[np.ndarray, ...]
    labels: tuple[tuple[str, ...], ...]


class LevelPaths(Mapping[str, tuple[str, ...]]):
    """`Hierarchy.paths` of a hierarchy held as `Levels`: each path is made when it is asked for (and the
    index from leaf to position on the first lookup)."""

    def __init__(self, levels: Levels) -> None:
        self.levels = levels

    @cached_property
    def _index(self) -> dict[str, int]:
        return {leaf: i for i, leaf in enumerate(self.levels.leaves)}

    def __getitem__(self, value: str) -> tuple[str, ...]:
        i = self._index[value]
        return (value, *(labels[int(codes[i])] for labels, codes in zip(self.levels.labels, self.levels.maps)))

    def __contains__(self, value: object) -> bool:
        return value in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self.levels.leaves)

    def __len__(self) -> int:
        return len(self.levels.leaves)


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A validated tree of generalizations for one attribute.

    `paths[v]` is the tuple (v, g_1(v), ..., g_h(v)); every path has length `height + 1`.
    Invariant (checked by `from_rows`): a label at level L has exactly one parent at level L+1.
    """

    name: str
    paths: Mapping[str, tuple[str, ...]]
    height: int
    source: str | None = None
    levels: Levels | None = field(default=None, repr=False)  # the arrays, when a vectorized builder made it

    @classmethod
    def from_arrays(cls, name: str, levels: Levels, source: str | None = None) -> Hierarchy:
        """A hierarchy held as arrays (`Levels`), trusted to be a tree (the builder makes labels nest)."""
        return cls(name=name, paths=LevelPaths(levels), height=len(levels.maps), source=source, levels=levels)

    @classmethod
    def from_rows(cls, name: str, rows: Iterable[Sequence[str]], source: str | None = None) -> Hierarchy:
        """Build from ARX-style rows (raw value, level 1, ..., level h), validating the tree.

        Errors name the source, the row (1-based), the value and the level: rows of different lengths,
        an empty label above level 0, a raw value listed twice, a value with two parents. Blank rows are
        skipped but counted.
        """
        where = source or f"hierarchy of {name!r}"
        paths: dict[str, tuple[str, ...]] = {}
        parents: list[dict[str, str]] = []
        width = None
        for number, raw in enumerate(rows, start=1):
            row = tuple(str(v).strip() for v in raw)
            if not row or (len(row) == 1 and row[0] == ""):
                continue
            if width is None:
                width = len(row)
                parents = [{} for _ in range(width - 1)]
            elif len(row) != width:
                raise InputError(
                    f"has {len(row)} levels but the first row has {width}; every row needs the same number",
                    file=where, row=number, value=row[0],
                )
            blank = next((level for level in range(1, width) if not row[level]), None)
            if blank is not None:
                raise InputError(f"value {clip(row[0])} has an empty generalization at level {blank}; every level "
                                 "needs a label (use * for the most general)", file=where, row=number, value=row[0])
            if row[0] in paths:
                if paths[row[0]] == row:
                    continue
                raise InputError(f"value {clip(row[0])} is listed twice with different generalizations",
                                 file=where, row=number, value=row[0])
            for level in range(width - 1):
                child, parent = row[level], row[level + 1]
                known = parents[level].setdefault(child, parent)
                if known != parent:
                    raise InputError(
                        f"value {clip(child)} at level {level} has two parents at level {level + 1}: "
                        f"{clip(known)} and {clip(parent)}",
                        file=where, row=number, value=child,
                    )
            paths[row[0]] = row
        if width is None:
            raise InputError("hierarchy is empty", file=where)
        return cls(name=name, paths=paths, height=width - 1, source=source)

    @classmethod
    def from_levels(cls, name: str, values: Iterable[str], levels: Sequence[Mapping[str, str]],
                    source: str | None = None) -> Hierarchy:
        """Build from a chain of child -> parent mappings (e.g. city -> province, province -> country)."""
        rows = []
        for value in values:
            path = [value]
            for level, mapping in enumerate(levels):
                if path[-1] not in mapping:
                    raise InputError(f"value {clip(path[-1])} has no parent at level {level + 1}",
                                     file=source or f"mapping of {name!r}", value=path[-1])
                path.append(mapping[path[-1]])
            rows.append(path)
        return cls.from_rows(name, rows, source)

    def __contains__(self, value: object) -> bool:
        return value in self.paths

    def generalize(self, value: str, level: int) -> str:
        """The label of `value` at `level` (0 = the value itself)."""
        return self.paths[value][level]

    def top_labels(self) -> set[str]:
        if self.levels is not None:
            return set(self.levels.labels[-1] if self.levels.labels else self.levels.leaves)
        return {p[-1] for p in self.paths.values()}

    def with_missing(self, token: str) -> Hierarchy:
        """A copy that also generalizes the missing-value token (SPEC section 1).

        Missing stays its own value below the top and joins the top value at the top level; a hierarchy
        that already lists the token keeps its own mapping.
        """
        if token in self.paths:
            return self
        tops = sorted(self.top_labels())
        top = tops[0] if len(tops) == 1 else TOP
        path = (token,) * self.height + (top,) if self.height > 0 else (token,)
        paths = dict(self.paths)
        paths[token] = path
        return Hierarchy(self.name, paths, self.height, self.source)

    def check_covers(self, values: Iterable[str], column: str) -> None:
        """Raise an InputError naming the first value of the data that the hierarchy lacks."""
        if self.levels is not None and values is self.levels.leaves:
            return  # built from exactly these values
        for value in values:
            if value not in self.paths:
                raise InputError(
                    f"value {clip(value)} of column {column!r} is missing from the hierarchy (level 0)",
                    file=self.source or f"hierarchy of {column!r}", column=column, value=value,
                )
