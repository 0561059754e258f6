"""Support maps (Zhang et al., the paper's section 3.4): per QI and level, each generalized value maps to
the bitset of the rows that hold it. A node's classes are the non-empty intersections of one bitset per QI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from bitarray import bitarray
from bitarray.util import count_and

from fitness.encoding import EncodedTable
from fitness.partition import Partition


@dataclass(frozen=True, eq=False)
class SupportMap:
    """`bitsets[i][L][c]` = rows whose QI i has code c at level L (a bitarray of length n)."""

    n: int
    bitsets: tuple[tuple[tuple[bitarray, ...], ...], ...]

    @classmethod
    def build(cls, table: EncodedTable) -> SupportMap:
        per_qi = []
        for qi in table.qis:
            levels = []
            for codes, card in zip(qi.codes, qi.cards):
                sets = []
                for c in range(card):
                    b = bitarray(endian="big")
                    b.frombytes(np.packbits(codes == c).tobytes())
                    del b[table.n :]
                    sets.append(b)
                levels.append(tuple(sets))
            per_qi.append(tuple(levels))
        return cls(table.n, tuple(per_qi))

    def classes(self, node: Sequence[int], k_floor: int = 1,
                stop_above: int | None = None) -> tuple[list[bitarray], int]:
        """Partition refinement over whole bitsets.

        Returns the classes of size >= k_floor and the number of rows in smaller classes. Refinement only
        splits classes, so a class already smaller than `k_floor` is final for that purpose and is set
        aside at once without being materialized (`count_and` sizes an intersection without building it):
        the early exit that keeps this fast low in the lattice. With `stop_above`, refinement stops as soon
        as more than that many rows are set aside (the classes returned are then incomplete; only the
        count, already past the bound, is meaningful).
        """
        full = bitarray(self.n)
        full.setall(1)
        classes = [full] if self.n else []
        small = 0
        # refine by the attributes that split most first, so classes fall below k_floor early
        order = sorted(range(len(node)), key=lambda i: -len(self.bitsets[i][node[i]]))
        for i in order:
            values = self.bitsets[i][node[i]]
            if len(values) <= 1:
                continue
            refined: list[bitarray] = []
            for members in classes:
                total = remaining = members.count()
                for bits in values:
                    size = count_and(members, bits)
                    if size:
                        if size >= k_floor:
                            refined.append(members if size == total else members & bits)
                        else:
                            small += size
                        remaining -= size
                        if remaining == 0:
                            break
                if stop_above is not None and small > stop_above:
                    return refined, small
            classes = refined
        if classes and classes[0] is full and self.n < k_floor:  # never refined: the one class may be small
            return [], self.n
        return classes, small

    def partition(self, node: Sequence[int], with_rows: bool = False) -> Partition:
        """The full partition (no early exit), in the kernel's Partition form."""
        classes, _ = self.classes(node, 1)
        sizes = np.array([c.count() for c in classes], dtype=np.int64)
        rows = None
        if with_rows:
            rows = np.empty(self.n, dtype=np.int64)
            for number, members in enumerate(classes):
                rows[list(members.search(1))] = number
        return Partition(sizes, rows)
