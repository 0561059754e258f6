"""(epsilon, delta)-differential privacy by SafePub, checked from the file as far as a file can show it.

What the file shows: every released class (rows not `*` in every QI) has at least k rows, with k derived again
here from epsilon, delta and the search's share (the paper's bound on (k, beta)-SDGS, written again on its
own, nothing of fitness/ imported); the file holds no more rows than the report says were sampled, and the
sample no more than the input. What it cannot show: which rows the random sample kept and what the
exponential mechanism drew (the report's `not_verifiable` says so): a release made without sampling or with a
node chosen by hand would pass this check as long as its classes are large enough.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kgen.check.rules import CheckRule
from lattice.errors import InputError


def _tail(n: int, start: int, beta: float) -> float:
    """P(Binomial(n, beta) >= start), term by term from the first (a running log of each term)."""
    if start > n:
        return 0.0
    log_term = (math.lgamma(n + 1) - math.lgamma(start + 1) - math.lgamma(n - start + 1)
                + start * math.log(beta) + (n - start) * math.log1p(-beta))
    logs = [log_term]
    for j in range(start, n):
        log_term += math.log((n - j) / (j + 1)) + math.log(beta / (1.0 - beta))
        logs.append(log_term)
    top = max(logs)
    return math.exp(top) * math.fsum(math.exp(x - top) for x in logs)


def least_k(epsilon: float, delta: float, share: float) -> int:
    """SafePub's k for (epsilon, delta) with `share` of epsilon spent on the search: beta = 1 - e^-e_a with
    e_a = epsilon (1 - share); delta(k) = max over n >= ceil(k / gamma - 1) of P(Bin(n, beta) > floor(n gamma))
    until that maximum reaches exp(-n (gamma ln(gamma / beta) - gamma + beta)); k = 1 + the least k with
    delta(k) < delta (ARX's count)."""
    e_a = epsilon - epsilon * share
    beta = 1.0 - math.exp(-e_a)
    gamma = (math.exp(e_a) - 1.0 + beta) / math.exp(e_a)
    rate = gamma * math.log(gamma / beta) - gamma + beta
    known: dict[int, float] = {}
    k = 1
    while True:
        n, worst = max(0, math.ceil(k / gamma - 1.0)), -1.0
        while True:
            if n not in known:
                known[n] = _tail(n, math.floor(n * gamma) + 1, beta)
            worst = max(worst, known[n])
            if worst >= math.exp(-n * rate):
                break
            n += 1
        if worst < delta:
            return k + 1
        k += 1


@dataclass(frozen=True)
class SampleRule:
    """The file's rows within the sample's and the sample within the input: a file with more rows cannot be
    this run's release, so every class is then marked. (The class sizes are the verdict's k: `least_size`.)"""

    sampled_rows: int | None
    input_rows: int | None
    column: None = None

    def validate(self) -> None:
        if self.sampled_rows is not None and self.input_rows is not None and self.sampled_rows > self.input_rows:
            raise InputError(f"the report says {self.sampled_rows} rows were sampled from {self.input_rows}: a "
                             "sample cannot be larger than its input")

    def breaking(self, table: object, classes: np.ndarray, sizes: np.ndarray, cache: dict) -> np.ndarray:
        rows = int(classes.size)
        limit = min(x for x in (self.sampled_rows, self.input_rows, rows) if x is not None)
        return np.full(sizes.size, rows > limit, dtype=bool)


def least_size(d: Mapping) -> int:
    """The derived k of a saved description, derived again here (its `derived_k` is not read)."""
    return least_k(float(d["epsilon"]), float(d["delta"]), float(d.get("dp_search_share", 0.1)))


def read(d: Mapping, dropped: bool) -> SampleRule | None:
    """The rows rule when the description names the rows (a report's; a command line's has none)."""
    sampled, given = d.get("sampled_rows"), d.get("input_rows")
    if sampled is None and given is None:
        return None
    return SampleRule(None if sampled is None else int(sampled), None if given is None else int(given))


RULE = CheckRule("differential-privacy", read=read, least_size=least_size)
