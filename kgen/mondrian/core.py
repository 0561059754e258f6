"""Mondrian on one fragment: strict multidimensional median partitioning, generalization, DP and NCP.

This is the per-fragment function of the distributed-Mondrian paper (its Fig. 7) and, applied to the whole
table, centralized Mondrian (LeFevre et al. 2006). It is engine-agnostic: pandas in, pandas plus metrics out,
so the centralized command, the Dask runner and the Spark runner all call the same `anonymize_fragment`.

Why level-synchronous: a recursive split per partition costs a handful of numpy calls per partition, and a
million rows at k = 5 end in ~140,000 partitions. Instead every open partition of one recursion depth is
split at once: the rows of each partition are contiguous in one permutation, per-partition minima and maxima
come from `reduceat`, medians from one sort of (partition, code) keys, distinct sensitive values per half from
one `np.unique`, and the split itself is a stable argsort of (partition, side). Each depth is O(n log n) and
there are O(log n) depths; no Python loop runs over rows or over partitions while splitting.

Split rule (SPEC section 12, paper section 5): choose the QI with the widest normalized range in the partition
(numeric: (max - min) / the fragment's range; categorical: distinct values / the fragment's distinct values,
the paper's Eq. 1), split at the median code: left = codes <= median. When every row is <= the median (the
median is the partition's maximum) the split point moves one code down (left = codes < median), the only
other cut near the median. A split is allowed only when both halves keep >= k rows and >= l distinct
sensitive values; otherwise the next QI in score order is tried; a partition no QI can split is final.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lattice.errors import InputError, NoSolutionError, names_shown

STRATEGIES = ("hierarchy", "prefix", "set", "interval")
WILDCARD = "*"
SET_SEPARATOR = "|"


@dataclass(frozen=True)
class Tree:
    """A categorical generalization hierarchy for Mondrian: leaves in depth-first order (siblings adjacent,
    so every subtree is a contiguous run of leaves) and, per level, each leaf's ancestor id and label."""

    leaves: tuple[str, ...]
    ancestors: np.ndarray  # (levels, leaves): ancestor id of each leaf at each level (level 0: the leaf)
    labels: tuple[tuple[str, ...], ...]  # labels[level][ancestor id]
    leaf_count: tuple[np.ndarray, ...]  # leaf_count[level][ancestor id]: leaves under that ancestor

    @classmethod
    def from_paths(cls, paths: Sequence[Sequence[str]]) -> Tree:
        """From ARX rows (leaf, level 1, ..., top) in file order; leaves are ordered top-down by the first
        appearance of each ancestor, so Italy, France (Europe) stay next to each other."""
        paths = [tuple(p) for p in paths]
        height = len(paths[0]) - 1
        first: list[dict[str, int]] = [{} for _ in range(height + 1)]
        for p in paths:
            for level, label in enumerate(p):
                first[level].setdefault(label, len(first[level]))
        order = sorted(range(len(paths)),
                       key=lambda i: tuple(first[level][paths[i][level]] for level in range(height, -1, -1)))
        ordered = [paths[i] for i in order]
        ancestors = np.empty((height + 1, len(ordered)), dtype=np.int64)
        labels, counts = [], []
        for level in range(height + 1):
            names = list(dict.fromkeys(p[level] for p in ordered))
            index = {name: i for i, name in enumerate(names)}
            ancestors[level] = [index[p[level]] for p in ordered]
            labels.append(tuple(names))
            counts.append(np.bincount(ancestors[level], minlength=len(names)))
        return cls(tuple(p[0] for p in ordered), ancestors, tuple(labels), tuple(counts))

    def lca(self, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair of leaf positions (low <= high): the lowest common ancestor's label and leaf count. Leaves
        are in depth-first order, so the LCA of a partition is the LCA of its first and last leaf."""
        level = np.argmax(self.ancestors[:, low] == self.ancestors[:, high], axis=0)
        node = self.ancestors[level, low]
        out_labels = np.empty(low.size, dtype=object)
        out_counts = np.empty(low.size, dtype=np.int64)
        for lv in np.unique(level):
            at = level == lv
            out_labels[at] = np.asarray(self.labels[lv], dtype=object)[node[at]]
            out_counts[at] = self.leaf_count[lv][node[at]]
        return out_labels, out_counts


@dataclass(frozen=True)
class QI:
    """One quasi-identifier: its generalization `strategy` and how its values are ordered (`order`: number,
    hierarchy or string; categorical QIs follow their hierarchy's leaves, else string order)."""

    name: str
    strategy: str
    order: str
    tree: Tree | None = None

    @property
    def numeric(self) -> bool:
        return self.order == "number"


@dataclass(frozen=True)
class Spec:
    """Everything a worker needs to anonymize its fragment (picklable: it travels with each task)."""

    qis: tuple[QI, ...]
    k: int
    l: int = 1  # noqa: E741 (the model's name for it)
    sensitive: str | None = None
    identifiers: tuple[str, ...] = ()


@dataclass
class FragmentResult:
    """A fragment's release (same rows, same order, QI cells generalized) and its metrics.

    `ncp_raw[qi]` is the fragment's share of NCP before dividing by the QI's table-wide range or domain
    size (`ncp_unit`), so the coordinator can normalize every fragment with the whole table's figures;
    `domain[qi]` is what the fragment saw of the QI's domain: (min, max) for numbers, the distinct values
    for set and prefix; `patterns[qi]` counts the rows per released prefix pattern."""

    release: pd.DataFrame
    rows: int
    classes: int
    dp: int
    smallest_class: int
    largest_class: int
    min_distinct_l: int | None
    ncp_raw: dict[str, float]
    domain: dict[str, object]
    patterns: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0
    class_sizes: dict[int, int] = field(default_factory=dict)  # {class size: classes}, for the risk figures

    def ncp(self, units: Mapping[str, float] | None = None) -> dict[str, float]:
        """NCP per QI, normalized by `units` (the table's range / domain size) or by this fragment's own."""
        units = units or local_units(self)
        return {q: (v / units[q] if units[q] > 0 else 0.0) for q, v in self.ncp_raw.items()}


# ---------------------------------------------------------------------------------------------- memory

_TUNED = False


def tune_malloc() -> None:
    """Let glibc keep freed memory for reuse: each recursion depth allocates and frees arrays of n elements,
    and with glibc's 128 KiB mmap threshold (pinned there by Dask's MALLOC_TRIM_THRESHOLD_ in its workers)
    every one is a fresh mmap whose pages fault in again: measured on a 540,000-row Poker fragment, 1.3 s of
    system time in a Dask worker against 0.2 s with these settings. No-op off glibc."""
    global _TUNED
    if _TUNED:
        return
    _TUNED = True
    try:

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD: arrays below 32 MiB come from the heap
        libc.mallopt(-1, 256 * 1024 * 1024)  # M_TRIM_THRESHOLD: keep up to 256 MiB of freed heap
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------------------------------------- encoding

def number_label(value: float) -> str:
    """A number as it is released: integers without a decimal point."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass
class Encoded:
    """One QI of a fragment as integer codes in its global order, with what is needed to label them."""

    codes: np.ndarray
    size: int  # codes are in range(size)
    values: np.ndarray | None  # numbers: the sorted distinct values (code -> value)
    labels: np.ndarray  # code -> released text of that single value


def encode(qi: QI, column: pd.Series, where: str | None = None) -> Encoded:
    if qi.order == "number":
        raw = column.to_numpy()
        if raw.dtype.kind not in "iuf":
            numbers = pd.to_numeric(column, errors="coerce")
            bad = numbers.isna() & column.notna()
            if bad.any() or numbers.isna().any():
                first = int(np.flatnonzero(bad.to_numpy() | numbers.isna().to_numpy())[0])
                value = str(column.iloc[first])[:40]
                raise InputError(f"value {value!r} is not a number; the {qi.strategy} generalization needs numbers "
                                 "(use --generalization set or prefix)", file=where, column=qi.name, value=value)
            raw = numbers.to_numpy()
        raw = raw.astype(np.float64)
        if np.isnan(raw).any():
            raise InputError("has an empty value; a numeric QI needs a number in every row", file=where,
                             column=qi.name)
        values, codes = np.unique(raw, return_inverse=True)
        labels = np.array([number_label(v) for v in values], dtype=object)
        return Encoded(codes.reshape(-1).astype(np.int64), values.size, values, labels)
    text = column.astype(str).to_numpy(dtype=object)
    if qi.order == "hierarchy":
        tree = qi.tree
        distinct, inverse = np.unique(text.astype(str), return_inverse=True)
        position = {leaf: i for i, leaf in enumerate(tree.leaves)}
        missing = [v for v in distinct if v not in position]
        if missing:
            raise InputError(f"value {missing[0][:40]!r} is not in the hierarchy", file=where, column=qi.name,
                             value=missing[0])
        codes = np.array([position[v] for v in distinct], dtype=np.int64)[inverse.reshape(-1)]
        return Encoded(codes, len(tree.leaves), None, np.asarray(tree.leaves, dtype=object))
    distinct, inverse = np.unique(text.astype(str), return_inverse=True)
    if qi.strategy == "set":
        clash = next((v for v in distinct if SET_SEPARATOR in v or v.startswith("{")), None)
        if clash is not None:
            raise InputError(f"value {clash[:40]!r} contains '{SET_SEPARATOR}' or starts with '{{', which the set "
                             "generalization uses; choose another generalization", file=where, column=qi.name,
                             value=clash)
    return Encoded(inverse.reshape(-1).astype(np.int64), distinct.size, None, distinct.astype(object))


# ---------------------------------------------------------------------------------------------- partitioning

def _dense(groups: int, width: int, rows: int) -> bool:
    """Whether a (groups x width) count table is small enough (next to the rows) to beat sorting."""
    return groups * width <= 4 * rows + 4096


def _distinct(group: np.ndarray, code: np.ndarray, groups: int, width: int) -> np.ndarray:
    """Per group (0..groups-1): how many distinct codes (0..width-1) its rows hold."""
    if _dense(groups, width, group.size):
        table = np.bincount(group * width + code, minlength=groups * width).reshape(groups, width)
        return (table > 0).sum(axis=1)
    pairs = np.unique(group * np.int64(width) + code)
    return np.bincount(pairs // width, minlength=groups)


def _medians(group: np.ndarray, code: np.ndarray, sizes: np.ndarray, width: int, rows: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group: the median code (the ((size - 1) // 2)-th smallest), the rows <= it and the rows < it.
    A count table and its running sums when small, else one sort of (group, code) keys."""
    groups = sizes.size
    if _dense(groups, width, rows):
        table = np.bincount(group * width + code, minlength=groups * width).reshape(groups, width)
        running = np.cumsum(table, axis=1)
        median = (running <= ((sizes - 1) // 2)[:, None]).sum(axis=1)
        at = np.arange(groups)
        return median, running[at, median], running[at, median] - table[at, median]
    key = np.sort(group * np.int64(width) + code)
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    base = np.arange(groups, dtype=np.int64) * width
    median = key[start + (sizes - 1) // 2] - base
    return (median, np.searchsorted(key, base + median, side="right") - start,
            np.searchsorted(key, base + median, side="left") - start)


def partition(codes: np.ndarray, numeric_values: Sequence[np.ndarray | None], sizes_of: Sequence[int],
              sensitive: np.ndarray | None, k: int, l: int) -> np.ndarray:  # noqa: E741
    """Mondrian's partitions of the rows: an id per row (0..P-1).

    `codes` (n, q): each QI's value codes in its order; `numeric_values[j]`: the code -> number map of a
    numeric QI (None: categorical, scored by distinct values); `sizes_of[j]`: the number of codes of QI j;
    `sensitive`: codes of the sensitive value per row (None or l <= 1: no l-diversity).

    One round per recursion depth (see the module's docstring), run by `_Rounds` until no row is left open.
    """
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    rounds = _Rounds(codes, numeric_values, sizes_of, sensitive, k, l)
    while rounds.active.size:
        rounds.advance()
    return rounds.part


def _full_ranges(codes: np.ndarray, numeric_values: Sequence[np.ndarray | None]) -> np.ndarray:
    """Per QI, the whole fragment's spread that a partition's score is divided by: the range of a numeric
    QI, the number of distinct codes of a categorical one (the paper's Eq. 1)."""
    lo0, hi0 = codes.min(axis=0), codes.max(axis=0)
    full = np.zeros(codes.shape[1])
    for j, values in enumerate(numeric_values):
        if values is not None:
            full[j] = values[hi0[j]] - values[lo0[j]]
        else:
            full[j] = np.unique(codes[:, j]).size
    return full


class _Rounds:
    """The state of `partition` between two rounds, one round a recursion depth.

    Why a class: every step of a round reads the same constants (codes, ranges, k, l, code widths) and the
    round moves three things, the rows still open (`active`, grouped by segment, in order), the size of each
    open segment (`sizes`) and the number of partitions already final (`done`); on `self` they are named once
    instead of being threaded through each step. `part` fills in as segments become final.
    """

    def __init__(self, codes: np.ndarray, numeric_values: Sequence[np.ndarray | None], sizes_of: Sequence[int],
                 sensitive: np.ndarray | None, k: int, l: int) -> None:  # noqa: E741
        n = codes.shape[0]
        self.codes, self.numeric_values, self.sensitive, self.k, self.l = codes, numeric_values, sensitive, k, l
        self.width = int(max(max(sizes_of), 1))
        self.use_l = sensitive is not None and l > 1
        self.s_size = int(sensitive.max()) + 1 if sensitive is not None and l > 1 else 1
        self.full = _full_ranges(codes, numeric_values)
        self.part = np.zeros(n, dtype=np.int64)
        self.active = np.arange(n)
        self.sizes = np.array([n], dtype=np.int64)
        self.done = 0

    def advance(self) -> None:
        """One round: score every open segment's QIs, find each segment's cut, settle the segments with none
        and split the others in two."""
        count = self.sizes.size
        starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1]))
        seg = np.repeat(np.arange(count), self.sizes)
        block = self.codes[self.active]
        lo = np.minimum.reduceat(block, starts, axis=0)
        hi = np.maximum.reduceat(block, starts, axis=0)
        can = hi > lo
        score = np.where(can, self._scores(seg, block, lo, hi), -1.0)
        chosen, threshold = self._cuts(seg, block, can, score)
        self._split(seg, block, chosen, threshold)

    def _scores(self, seg: np.ndarray, block: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """(segments, q): each QI's spread in each segment over its spread in the fragment (0 where the
        fragment has none)."""
        count = lo.shape[0]
        score = np.zeros((count, lo.shape[1]))
        for j, values in enumerate(self.numeric_values):
            if self.full[j] <= 0:
                continue
            if values is not None:
                score[:, j] = (values[hi[:, j]] - values[lo[:, j]]) / self.full[j]
            else:
                score[:, j] = _distinct(seg, block[:, j].astype(np.int64), count, self.width) / self.full[j]
        return score

    def _cuts(self, seg: np.ndarray, block: np.ndarray, can: np.ndarray, score: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """Per segment, the QI it is cut on (-1: final) and the cut (left = codes <= cut). A segment of at
        least 2k rows tries its QIs in score order; the first whose median cut is allowed wins."""
        count = self.sizes.size
        ranking = np.argsort(-score, axis=1, kind="stable")  # ties: the QI listed first
        chosen = np.full(count, -1, dtype=np.int64)
        threshold = np.zeros(count, dtype=np.int64)
        open_ = self.sizes >= 2 * self.k
        for r in range(score.shape[1]):
            j = ranking[:, r]
            candidate = open_ & (chosen < 0) & can[np.arange(count), j]
            if not candidate.any():
                break
            cseg = np.flatnonzero(candidate)
            ok, cut = self._median_cuts(seg, block, candidate, cseg, j)
            chosen[cseg[ok]] = j[cseg[ok]]
            threshold[cseg[ok]] = cut[ok]
        return chosen, threshold

    def _median_cuts(self, seg: np.ndarray, block: np.ndarray, candidate: np.ndarray, cseg: np.ndarray,
                     j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For the candidate segments `cseg`, each cut on its QI `j[s]` at the median: the cut, and whether
        both halves keep k rows (and l distinct sensitive values)."""
        rows = candidate[seg]
        rseg = seg[rows]
        rcode = block[rows, j[rseg]].astype(np.int64)
        csize = self.sizes[cseg]
        position = np.full(candidate.size, -1, dtype=np.int64)
        position[cseg] = np.arange(cseg.size)
        rpos = position[rseg]
        median, left, below = _medians(rpos, rcode, csize, self.width, self.active.size)
        whole = left == csize  # the median is the maximum: cut just below it
        left = np.where(whole, below, left)
        cut = np.where(whole, median - 1, median)
        ok = (left >= self.k) & (csize - left >= self.k)
        if self.use_l and ok.any():
            assert self.sensitive is not None
            side = rcode > cut[rpos]
            groups = rpos * 2 + side
            distinct = _distinct(groups, self.sensitive[self.active[rows]], 2 * cseg.size, self.s_size)
            ok &= (distinct.reshape(-1, 2) >= self.l).all(axis=1)
        return ok, cut

    def _split(self, seg: np.ndarray, block: np.ndarray, chosen: np.ndarray, threshold: np.ndarray) -> None:
        """Number the segments with no cut (final, ids in segment order after those already final) and put
        each other segment's rows in two new segments, left half first, rows in their order."""
        count = self.sizes.size
        final = chosen < 0
        final_rows = final[seg]
        ids = np.cumsum(final) - 1 + self.done
        self.part[self.active[final_rows]] = ids[seg[final_rows]]
        self.done += int(final.sum())
        keep = ~final_rows
        active, seg, block = self.active[keep], seg[keep], block[keep]
        side = block[np.arange(active.size), chosen[seg]] > threshold[seg]
        halves = seg * 2 + side
        sizes = np.bincount(halves, minlength=2 * count)
        self.active = active[_stable_order(halves, side, sizes)]
        self.sizes = sizes[sizes > 0]


def _stable_order(halves: np.ndarray, side: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """`np.argsort(halves, kind="stable")` in O(n), for rows grouped by segment (halves = 2 * segment + side,
    `sizes` the count of every half): a row goes to its half's start plus the number of earlier rows of the
    same side in its segment."""
    if halves.size == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    right = side.astype(np.int64)
    seen_right = np.cumsum(right) - right  # rows of each side before this row, over all segments
    seen_left = np.arange(halves.size) - seen_right
    first = np.flatnonzero(np.concatenate(([True], (halves[1:] >> 1) != (halves[:-1] >> 1))))
    segment = np.repeat(np.arange(first.size), np.diff(np.append(first, halves.size)))
    before = np.where(side, seen_right - seen_right[first][segment], seen_left - seen_left[first][segment])
    order = np.empty(halves.size, dtype=np.int64)
    order[start[halves] + before] = np.arange(halves.size)
    return order


# ---------------------------------------------------------------------------------------------- generalization

def common_prefix(texts: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Length of the common prefix of texts[low] and texts[high] (texts sorted: their prefix is every one's)."""
    out = np.empty(low.size, dtype=np.int64)
    for i, (a, b) in enumerate(zip(texts[low], texts[high])):
        m = min(len(a), len(b))
        p = 0
        while p < m and a[p] == b[p]:
            p += 1
        out[i] = p
    return out


def generalize(qi: QI, enc: Encoded, part: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray,
                                                                           dict[str, int] | None]:
    """Per partition: its released label and its NCP numerator (0 for a single value); prefix patterns."""
    lo = np.full(parts, np.iinfo(np.int64).max)
    hi = np.full(parts, -1)
    np.minimum.at(lo, part, enc.codes)
    np.maximum.at(hi, part, enc.codes)
    single = lo == hi
    labels = enc.labels[lo].copy()
    raw = np.zeros(parts)
    patterns = None
    wide = np.flatnonzero(~single)
    if qi.strategy == "interval":
        pairs, inverse = np.unique(lo[wide] * np.int64(enc.size) + hi[wide], return_inverse=True)
        low, high = enc.values[pairs // enc.size], enc.values[pairs % enc.size]
        texts = np.array([f"[{number_label(a)}, {number_label(b)}]" for a, b in zip(low, high)], dtype=object)
        labels[wide] = texts[inverse.reshape(-1)]
        raw[wide] = (high - low)[inverse.reshape(-1)]
    elif qi.strategy == "hierarchy":
        names, leaves = qi.tree.lca(lo[wide], hi[wide])
        labels[wide] = names
        raw[wide] = np.where(leaves > 1, leaves, 0)
    elif qi.strategy == "set":
        pairs = np.unique(part * np.int64(enc.size) + enc.codes)
        owner, code = pairs // enc.size, pairs % enc.size
        counts = np.bincount(owner, minlength=parts)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        members = enc.labels[code]
        labels[wide] = [SET_SEPARATOR.join(members[starts[p]:starts[p] + counts[p]]) for p in wide]
        labels[wide] = ["{" + text + "}" for text in labels[wide]]
        raw[wide] = counts[wide]
    else:  # prefix: common prefix of the values as text, a wildcard for every other character
        texts = enc.labels.astype(str)
        by_text = np.argsort(texts, kind="stable")
        rank = np.empty_like(by_text)
        rank[by_text] = np.arange(by_text.size)
        first = np.full(parts, np.iinfo(np.int64).max)
        last = np.full(parts, -1)
        np.minimum.at(first, part, rank[enc.codes])
        np.maximum.at(last, part, rank[enc.codes])
        length = np.zeros(parts, dtype=np.int64)
        np.maximum.at(length, part, np.char.str_len(texts)[enc.codes])
        sorted_texts = texts[by_text]
        keep = common_prefix(sorted_texts, first[wide], last[wide])
        labels[wide] = [t[:p] + WILDCARD * (m - p) for t, p, m in zip(sorted_texts[first[wide]], keep, length[wide])]
        patterns = {}
        sizes = np.bincount(part, minlength=parts)
        for label, size in zip(labels[wide], sizes[wide]):
            patterns[label] = patterns.get(label, 0) + int(size)
        dom = np.unique(texts)
        raw[wide] = [covered(label, dom) for label in labels[wide]]
        raw[wide] = np.where(raw[wide] > 1, raw[wide], 0)
    return labels, raw, patterns


def covered(pattern: str, domain: Sequence[str]) -> int:
    """How many values of `domain` a prefix pattern (prefix + wildcards) stands for."""
    stem = pattern.rstrip(WILDCARD)
    return sum(1 for v in domain if v.startswith(stem) and len(v) <= len(pattern))


def local_units(result: FragmentResult) -> dict[str, float]:
    """The NCP denominators from the fragment alone (centralized: the whole table)."""
    return {q: unit_of(d) for q, d in result.domain.items()}


def unit_of(domain: Mapping[str, object]) -> float:
    """A fragment's own NCP denominator for one QI: its range, its hierarchy's leaves, or its distinct values."""
    if "range" in domain:
        low, high = domain["range"]
        return float(high - low)
    if "size" in domain:
        return float(domain["size"])
    return float(len(domain["values"]))


# ---------------------------------------------------------------------------------------------- the fragment

def anonymize_fragment(frame: pd.DataFrame, spec: Spec, where: str | None = None) -> FragmentResult:
    """Mondrian on one fragment: `frame` in (any row order), its release (same rows and order) and metrics out.

    Raises NoSolutionError when the fragment itself has fewer than k rows or fewer than l distinct sensitive
    values (no partition of it can satisfy the model)."""

    tune_malloc()
    started = time.perf_counter()
    n = len(frame)
    for column in [q.name for q in spec.qis] + ([spec.sensitive] if spec.sensitive else []):
        if column not in frame.columns:
            raise InputError(f"unknown column {column!r}; the table has: {names_shown(frame.columns)}",
                             file=where, column=column)
    sensitive = None
    if spec.sensitive is not None:
        _, sensitive = np.unique(frame[spec.sensitive].astype(str).to_numpy(), return_inverse=True)
        sensitive = sensitive.reshape(-1)
    distinct_s = int(sensitive.max()) + 1 if sensitive is not None and n else 0
    if n and (n < spec.k or (spec.l > 1 and distinct_s < spec.l)):
        raise NoSolutionError(f"{n} rows with {distinct_s} distinct sensitive values cannot be {spec.k}-anonymous "
                              f"and {spec.l}-diverse", file=where)
    encoded = [encode(q, frame[q.name], where) for q in spec.qis]
    small = np.min_scalar_type(-max([e.size for e in encoded] + [1]))  # int8 for Poker: less memory traffic
    codes = np.stack([e.codes.astype(small) for e in encoded], axis=1) if n else np.zeros((0, len(spec.qis)),
                                                                                          dtype=small)
    part = partition(codes, [e.values for e in encoded], [e.size for e in encoded], sensitive, spec.k, spec.l)
    parts = int(part.max()) + 1 if n else 0
    sizes = np.bincount(part, minlength=parts)
    release = frame.copy()
    ncp_raw, domain, patterns = {}, {}, {}
    for q, enc in zip(spec.qis, encoded):
        if n == 0:
            ncp_raw[q.name], domain[q.name] = 0.0, {"size": 0}
            continue
        labels, raw, pattern = generalize(q, enc, part, parts)
        release[q.name] = pd.Series(labels[part], index=frame.index, dtype=object)
        ncp_raw[q.name] = float(np.dot(raw, sizes))
        if q.strategy == "interval":
            domain[q.name] = {"range": (float(enc.values[enc.codes.min()]), float(enc.values[enc.codes.max()]))}
        elif q.strategy == "hierarchy":
            domain[q.name] = {"size": len(q.tree.leaves)}
        else:
            domain[q.name] = {"values": sorted(set(enc.labels[np.unique(enc.codes)].astype(str)))}
        if pattern is not None:
            patterns[q.name] = pattern
    for column in spec.identifiers:
        release[column] = WILDCARD
    distinct_l = None
    if sensitive is not None and n:
        pairs = np.unique(part * np.int64(distinct_s) + sensitive)
        distinct_l = int(np.bincount(pairs // distinct_s, minlength=parts).min())
    return FragmentResult(
        release=release, rows=n, classes=parts, dp=int(np.dot(sizes, sizes)),
        smallest_class=int(sizes.min()) if parts else 0, largest_class=int(sizes.max()) if parts else 0,
        min_distinct_l=distinct_l, ncp_raw=ncp_raw, domain=domain, patterns=patterns,
        seconds=time.perf_counter() - started, class_sizes=size_histogram(sizes),
    )


def size_histogram(sizes: np.ndarray) -> dict[int, int]:
    """{class size: classes} of a fragment's partitions: each partition is one released class (strict
    Mondrian's partitions are disjoint boxes, so their generalized tuples differ)."""
    values, counts = np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)
    return {int(v): int(c) for v, c in zip(values.tolist(), counts.tolist())}


def class_sizes(results: Sequence[FragmentResult]) -> np.ndarray:
    """The sizes of every released class of the fragments, from their histograms (no grouping of rows)."""
    total: dict[int, int] = {}
    for r in results:
        for size, classes in r.class_sizes.items():
            total[size] = total.get(size, 0) + classes
    ordered = sorted(total)
    return np.repeat(np.array(ordered, dtype=np.int64), [total[s] for s in ordered])


# ---------------------------------------------------------------------------------------------- wrap-up

def table_units(spec: Spec, results: Sequence[FragmentResult]) -> dict[str, float]:
    """Each QI's NCP denominator over the whole table, from the fragments' partial views: the range of a
    numeric QI, the hierarchy's leaves, or the distinct values (set, prefix)."""
    units = {}
    for q in spec.qis:
        views = [r.domain[q.name] for r in results if r.rows]
        if not views:
            units[q.name] = 0.0
        elif q.strategy == "interval":
            units[q.name] = max(v["range"][1] for v in views) - min(v["range"][0] for v in views)
        elif q.strategy == "hierarchy":
            units[q.name] = float(views[0]["size"])
        else:
            units[q.name] = float(len(set().union(*(v["values"] for v in views))))
    return units


def table_ncp(spec: Spec, results: Sequence[FragmentResult]) -> dict[str, float]:
    """NCP per QI of the union of the fragments' releases, normalized by the whole table's range/domain (so
    the fragments' shares add up to the table's NCP). Prefix patterns are recounted on the table's domain."""
    units = table_units(spec, results)
    out = {}
    for q in spec.qis:
        if q.strategy == "prefix":
            domain = sorted(set().union(*(r.domain[q.name]["values"] for r in results if r.rows)))
            raw = 0.0
            for r in results:
                for pattern, rows in r.patterns.get(q.name, {}).items():
                    c = covered(pattern, domain)
                    raw += c * rows if c > 1 else 0
        else:
            raw = sum(r.ncp_raw[q.name] for r in results)
        out[q.name] = raw / units[q.name] if units[q.name] > 0 else 0.0
    return out


def summary(spec: Spec, results: Sequence[FragmentResult]) -> dict:
    """The report's metrics of a whole release from its fragments' results (one result when centralized)."""
    rows = sum(r.rows for r in results)
    classes = sum(r.classes for r in results)
    dp = sum(r.dp for r in results)
    ncp = table_ncp(spec, results)
    total = float(sum(ncp.values()))
    nonempty = [r for r in results if r.rows]
    ls = [r.min_distinct_l for r in nonempty if r.min_distinct_l is not None]
    return {
        "rows": rows, "classes": classes,
        "dp": dp, "dm": dp, "dp_per_row": dp / rows if rows else 0.0,
        "aecs": rows / classes if classes else 0.0,
        "smallest_class": min((r.smallest_class for r in nonempty), default=0),
        "largest_class": max((r.largest_class for r in nonempty), default=0),
        "min_distinct_l": min(ls) if ls else None,
        "ncp": total, "ncp_per_qi": ncp,
        "ncp_normalized": total / (rows * len(spec.qis)) if rows and spec.qis else 0.0,
        "suppressed": 0, "los": 0.0,
    }


def validate(spec: Spec) -> None:
    if not isinstance(spec.k, int) or spec.k < 1:
        raise InputError(f"k must be a whole number >= 1, got {spec.k}")
    if not isinstance(spec.l, int) or spec.l < 1:
        raise InputError(f"l must be a whole number >= 1, got {spec.l}")
    if spec.l > 1 and spec.sensitive is None:
        raise InputError("--l needs a sensitive column (--sensitive COLUMN)")
    if not spec.qis:
        raise InputError("no quasi-identifiers given (--qi)")
    names = [q.name for q in spec.qis]
    if len(set(names)) != len(names):
        raise InputError("a quasi-identifier is listed twice (--qi)")
    if spec.sensitive in names:
        raise InputError(f"column {spec.sensitive!r} cannot be both a quasi-identifier and sensitive")
    for q in spec.qis:
        if q.strategy not in STRATEGIES:
            raise InputError(f"unknown generalization {q.strategy!r}; choose {', '.join(STRATEGIES)}", column=q.name)
        if q.strategy == "hierarchy" and q.tree is None:
            raise InputError("the hierarchy generalization needs a hierarchy (--hierarchy COL=FILE)", column=q.name)
        if q.strategy == "interval" and q.order != "number":
            raise InputError("the interval generalization needs a numeric column", column=q.name)
