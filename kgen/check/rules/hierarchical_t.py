"""t-closeness with the hierarchical ground distance, checked from the file: each released class's EMD to the
distribution of the column over all rows of the file, on the column's hierarchy (value -> its labels at every
level, level 0 the value), is at most t. Written again from Li et al.'s closed form, one class at a time: a
node is its labels from its level to the top, its parent that key without its first label, and the EMD is
the sum over nodes of level / H * min(positive, negative extra of its children), extra = q - p."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

TOLERANCE = 1e-9  # equal to t meets it


def class_distance(counts: Counter, overall: Mapping[str, float], paths: Mapping[str, Sequence[str]],
                   height: int) -> float:
    """The hierarchical EMD between one class's value counts and the overall shares."""
    size = sum(counts.values())
    extra = {tuple(paths[v]): share - counts.get(v, 0) / size for v, share in overall.items()}
    cost = 0.0
    for level in range(1, height + 1):
        pos: dict[tuple, float] = defaultdict(float)
        neg: dict[tuple, float] = defaultdict(float)
        for key, value in extra.items():
            (pos if value > 0 else neg)[key[1:]] += abs(value)
        parents = set(pos) | set(neg)
        cost += level / height * sum(min(pos[k], neg[k]) for k in parents)
        extra = {k: pos[k] - neg[k] for k in parents}
    return cost


def distances(classes: np.ndarray, values: Sequence[str], paths: Mapping[str, Sequence[str]]) -> np.ndarray:
    """Per class of `classes` (an id per row), its hierarchical EMD; a value missing from `paths` is a KeyError
    the caller turns into its message."""
    values = [str(v) for v in values]
    overall = {v: c / len(values) for v, c in Counter(values).items()}
    height = len(next(iter(paths.values()))) - 1
    per_class: dict[int, Counter] = defaultdict(Counter)
    for c, v in zip(classes.tolist(), values):
        per_class[c][v] += 1
    count = int(classes.max()) + 1 if classes.size else 0
    return np.array([class_distance(per_class[c], overall, paths, height) for c in range(count)])


def breaking(classes: np.ndarray, values: Sequence[str], paths: Mapping[str, Sequence[str]], t: float) -> np.ndarray:
    """Per class, whether its hierarchical EMD exceeds t."""
    return distances(classes, values, paths) > t + TOLERANCE
