"""A box of the lattice: the nodes between a lower and an upper corner (the pre-pruned search space)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from lattice.node import Node


@dataclass(frozen=True)
class Box:
    """Nodes x with lower_i <= x_i <= upper_i. Invariant: lower <= upper."""

    lower: Node
    upper: Node

    def __post_init__(self) -> None:
        if len(self.lower) != len(self.upper) or any(a > b for a, b in zip(self.lower, self.upper)):
            raise ValueError(f"not a box: lower {self.lower} upper {self.upper}")

    @classmethod
    def full(cls, heights: tuple[int, ...]) -> Box:
        return cls(tuple(0 for _ in heights), tuple(heights))

    @property
    def dims(self) -> int:
        return len(self.lower)

    @cached_property
    def size(self) -> int:  # cached: the budget asks it at every evaluation (a product of 97 numbers at q = 97)
        return math.prod(b - a + 1 for a, b in zip(self.lower, self.upper))

    def __contains__(self, node: object) -> bool:
        return (
            isinstance(node, tuple)
            and len(node) == self.dims
            and all(a <= x <= b for a, x, b in zip(self.lower, node, self.upper))
        )

    def nodes(self) -> Iterator[Node]:
        """All nodes, in lexicographic order."""
        return itertools.product(*(range(a, b + 1) for a, b in zip(self.lower, self.upper)))

    def random_node(self, rng: random.Random) -> Node:
        return tuple(rng.randint(a, b) for a, b in zip(self.lower, self.upper))
