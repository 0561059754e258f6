"""Shared machinery of the paper experiments: datasets, run plans, one CSV row per run, optimum and accuracy.

Only the public API is used: `kgen.run.pipeline.prepare` builds the problem of the first q attributes,
`kgen.run.algorithms.make_search` the algorithm and `lattice.search` its limits and result; accuracy comes
from `lattice.accuracy` (SPEC section 6).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kgen import Config, read_csv
from kgen.datasets import IDENTIFIER as FRAUD_IDENTIFIER
from kgen.datasets import generate as generate_fraud
from kgen.io.files import write_atomic
from kgen.io.table import Table
from kgen.run.algorithms import make_search
from kgen.run.prepare import Prepared, prepare
from lattice.accuracy import overall_accuracy
from lattice.errors import InputError
from lattice.search.base import Limits, SearchResult
from lattice.search.certify import tightened_bound

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KGEN_SHARED", Path(__file__).resolve().parents[2] / "shared"))  # as tests/conftest.py
RESULTS = REPO / "results"

FIELDS = (
    "dataset", "q", "algorithm", "seed", "seconds", "evaluations", "log", "los", "accuracy", "gap", "node",
    "timed_out", "stopped", "optimum_log", "optimum_source", "minimal_found", "box_size", "heights_sum",
    "prepare_seconds", "time_limit", "max_evaluations", "options", "lower_bound", "bound_seconds",
)


class DataMissing(SystemExit):
    """The shared datasets are not where the experiments expect them."""


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data (next to the repository); a clear error if it is absent."""
    path = SHARED.joinpath("data", *parts)
    if not path.exists():
        raise DataMissing(f"experiments: {path} not found. The experiments read the public datasets from "
                          f"{SHARED / 'data'} (a folder named 'shared' next to the repository checkout); "
                          "put cargo2000/c2k_data_comma.csv and adult/ there, or run only --datasets fraud")
    return path


@dataclass(frozen=True, eq=False)
class Dataset:
    """A table with its QI candidates in lattice order (the paper takes the first q) and its settings."""

    name: str
    label: str
    table: Table
    candidates: tuple[str, ...]
    identifiers: tuple[str, ...] = ()
    hierarchies: Mapping[str, object] = field(default_factory=dict)
    hierarchy_dir: str | None = None
    k: int = 2
    suppression: float = 0.005

    def config(self, q: int) -> Config:
        """The configuration of the first q candidates as QIs (the others are neither QI nor identifier)."""
        if not 1 <= q <= len(self.candidates):
            raise ValueError(f"{self.name} has {len(self.candidates)} QI candidates, asked for q = {q}")
        qi = list(self.candidates[:q])
        return Config(qi=qi, k=self.k, suppression=self.suppression, identifiers=self.identifiers,
                      hierarchies={c: self.hierarchies[c] for c in qi if c in self.hierarchies},
                      hierarchy_dir=self.hierarchy_dir, keep_unnamed=True)  # the other candidates: as they are


def without_empty_records(table: Table) -> Table:
    """The table without records whose every field is empty.

    c2k_data_comma.csv ends with a line of 97 commas. kgen's reader keeps such a line as a record whose values
    are all missing; the dataset has 3,942 observations (the paper, SPEC section 7), so it is dropped here.
    """
    keep = [i for i in range(table.n) if any(table.values[c][i] != "" for c in table.columns)]
    if len(keep) == table.n:
        return table
    values = {c: [table.values[c][i] for i in keep] for c in table.columns}
    return Table(table.columns, values, table.source, table.separator)


def load_cargo() -> Dataset:
    """Cargo 2000 (3,942 rows): `nr` is the identifier, the 97 other columns are the QI candidates in file
    order, decimal hierarchies (kgen's default for numbers), `?` missing (a default missing token)."""
    table = without_empty_records(read_csv(shared_data("cargo2000", "c2k_data_comma.csv")))
    return Dataset("cargo2000", "Cargo 2000 (c2k)", table, tuple(c for c in table.columns if c != "nr"), ("nr",))


def load_fraud(seed: int = 0) -> Dataset:
    """The synthetic stand-in for the paper's fraud dataset F (kgen.datasets.fraud), its 47 attributes in order."""
    data = generate_fraud(seed)
    return Dataset("fraud", "Fraud F (synthetic)", data.table, data.attributes, (FRAUD_IDENTIFIER,),
                   data.hierarchies)


def load_adult() -> Dataset:
    """Adult: its nine columns in file order with the ARX hierarchies of the same folder."""
    folder = shared_data("adult")
    table = read_csv(folder / "adult.csv")
    return Dataset("adult", "Adult", table, tuple(table.columns), (), {}, str(folder))


LOADERS: dict[str, Callable[[], Dataset]] = {"cargo2000": load_cargo, "fraud": load_fraud, "adult": load_adult}


@dataclass(frozen=True)
class Method:
    """One line of a figure: a registry algorithm with its options, seeds, evaluation budget, and the q it runs
    at (None: every q of the plan). `exact` methods define the optimum when they complete; those that also
    return every k-minimal node (`all_minimal`: exhaustive, OLA) define the optimal set O of the accuracy."""

    label: str
    algorithm: str
    options: Mapping[str, object] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    max_evaluations: int | None = None
    exact: bool = False
    qs: tuple[int, ...] | None = None
    all_minimal: bool = False
    bound_seeds: int = 0  # the first seeds whose runs get the certified bound of their infeasible nodes
    keep_after_timeout: bool = False  # run it at larger q even after a time-out (certify: its interval counts)

    def runs_at(self, q: int) -> bool:
        return self.qs is None or q in self.qs


@dataclass(frozen=True)
class Plan:
    """What to run on one dataset. After an exact method times out (or refuses the lattice's size) at some q
    it is not started again at a larger q (its lattice only grows); those runs are written as
    `stopped = skipped`, `timed_out = True`."""

    dataset: str
    qs: tuple[int, ...]
    methods: tuple[Method, ...]
    time_limit: float
    skip_after_timeout: bool = True


def run_search(prepared: Prepared, method: Method, seed: int, time_limit: float | None) -> SearchResult:
    """One search from a cold evaluation cache (so every run pays for its own evaluations).

    A search that refuses the problem (an InputError, e.g. an exact search's size cap) comes back as a result
    with `stopped = "refused"` and no node: a missing point, like a time-out.
    """
    prepared.evaluator.clear_cache()
    search = make_search(method.algorithm, method.options)
    start = time.perf_counter()
    try:
        return search.run(prepared.problem(), Limits(method.max_evaluations, time_limit, seed))
    except InputError as error:
        return SearchResult(method.algorithm, None, [], 0, time.perf_counter() - start, "refused",
                            params={"error": str(error)})


@dataclass(frozen=True)
class Optimum:
    """The exact optimum at one q: its LOG, which method proved it, and every k-minimal node (the optimal
    set O) when an exact method that enumerates them completed (else None: accuracy is then unknown)."""

    log: float
    minimal: tuple[tuple[int, ...], ...] | None
    source: str


def bound_of(prepared: Prepared, method: Method, seed: int, result: SearchResult) -> tuple[float | None, float]:
    """The certified lower bound of a run (lattice.search.certify) and what it cost: certify's own interval,
    an exact search's completed optimum, or, for the first `bound_seeds` seeds, the bound its infeasible
    evaluations prove, tightened by a few seconds of the certified search's loop started from them
    (`tightened_bound`, issue 30). None where there is none to report."""
    if result.best is None or result.stopped == "refused":
        return None, 0.0
    if "certified" in result.params:
        return result.params.get("lower_bound"), 0.0
    if method.exact and result.stopped == "complete":
        return result.best.log, 0.0
    if seed not in method.seeds[: method.bound_seeds]:
        return None, 0.0
    record = tightened_bound(prepared.problem(), result.infeasible, result.best)
    return record["lower_bound"], record["seconds"]


def find_optimum(results: Sequence[tuple[Method, SearchResult]]) -> Optimum | None:
    """The optimum from the exact methods that completed; they must agree on the optimal LOG."""
    complete = [(m, r) for m, r in results if m.exact and r.stopped == "complete" and r.best is not None]
    if not complete:
        return None
    logs = {m.label: r.best.log for m, r in complete}
    if max(logs.values()) - min(logs.values()) > 1e-12:
        raise RuntimeError(f"exact methods disagree on the optimal LOG: {logs}")
    sets = [(m, r) for m, r in complete if m.all_minimal]
    method, result = (sets or complete)[0]
    minimal = tuple(tuple(n) for n in result.minimal) if sets else None
    return Optimum(result.best.log, minimal, method.label)


def fmt(value: float | None, digits: int = 6) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def row_for(dataset: str, q: int, method: Method, seed: int, result: SearchResult | None, prepared: Prepared,
            optimum: Optimum | None, time_limit: float, skipped_after: str = "time",
            bound: tuple[float | None, float] = (None, 0.0)) -> dict[str, str]:
    """The CSV row of one run (`result` None: skipped after an earlier time-out or refusal, `skipped_after`);
    `bound`: its certified lower bound and the seconds that cost (`bound_of`)."""
    best = None if result is None else result.best
    accuracy = gap = None
    if optimum is not None and result is not None and result.stopped != "refused":
        # an exact search that stops at the optimum (best-first) proves it but does not look for the rest
        # of the k-minimal set, so the set accuracy says nothing about it: left blank
        if optimum.minimal is not None and not (method.exact and not method.all_minimal):
            accuracy = overall_accuracy(result.minimal, optimum.minimal, prepared.heights) if best else 0.0
        gap = None if best is None else best.log - optimum.log
    return {
        "dataset": dataset, "q": str(q), "algorithm": method.label, "seed": str(seed),
        "seconds": "" if result is None else fmt(result.seconds, 5),
        "evaluations": "" if result is None else str(result.evaluations),
        "log": "" if best is None else fmt(best.log, 10),
        "los": "" if best is None else fmt(best.los, 10),
        "accuracy": fmt(accuracy, 10),
        "gap": fmt(gap, 10),
        "node": "" if best is None else " ".join(str(x) for x in best.node),
        "timed_out": str(skipped_after == "time" if result is None else result.stopped == "time"),
        "stopped": "skipped" if result is None else result.stopped,
        "optimum_log": "" if optimum is None else fmt(optimum.log, 10),
        "optimum_source": "" if optimum is None else optimum.source,
        "minimal_found": "" if result is None else str(len(result.minimal)),
        "box_size": str(prepared.box.size),
        "heights_sum": str(sum(prepared.heights)),
        "prepare_seconds": fmt(prepared.seconds, 4),
        "time_limit": fmt(float(time_limit)),
        "max_evaluations": "" if method.max_evaluations is None else str(method.max_evaluations),
        "options": json.dumps(dict(method.options), sort_keys=True),
        "lower_bound": fmt(bound[0], 10),
        "bound_seconds": fmt(bound[1], 4) if bound[0] is not None else "",
    }


def write_rows(path: Path, rows: Sequence[Mapping[str, str]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buffer.getvalue())


def run_plan(plan: Plan, dataset: Dataset, out: Path | None = None,
             log: Callable[[str], None] = print) -> list[dict[str, str]]:
    """Run every method at every q of the plan; rewrite `out` (a CSV) after each q so progress survives."""
    rows: list[dict[str, str]] = []
    given_up: dict[str, str] = {}  # exact methods that timed out or refused at a smaller q, and why
    for q in plan.qs:
        methods = [m for m in plan.methods if m.runs_at(q)]
        if not methods:
            continue
        prepared = prepare(dataset.table, dataset.config(q))
        done: list[tuple[Method, int, SearchResult | None]] = []
        bounds: dict[tuple[str, int], tuple[float | None, float]] = {}
        for method in methods:
            for seed in method.seeds:
                if method.label in given_up:
                    done.append((method, seed, None))
                    continue
                result = run_search(prepared, method, seed, plan.time_limit)
                done.append((method, seed, result))
                bounds[method.label, seed] = bound_of(prepared, method, seed, result)
                if (method.exact and result.stopped in ("time", "refused") and plan.skip_after_timeout
                        and not (method.keep_after_timeout and result.stopped == "time")):
                    given_up[method.label] = result.stopped
        optimum = find_optimum([(m, r) for m, _, r in done if r is not None])
        for method, seed, result in done:
            rows.append(row_for(dataset.name, q, method, seed, result, prepared, optimum, plan.time_limit,
                                given_up.get(method.label, "time"), bounds.get((method.label, seed), (None, 0.0))))
        log(summary_line(dataset.name, q, prepared, done, optimum))
        if out is not None:
            write_rows(out, rows)
    return rows


def summary_line(name: str, q: int, prepared: Prepared, done: Sequence[tuple[Method, int, SearchResult | None]],
                 optimum: Optimum | None) -> str:
    parts = []
    for label in dict.fromkeys(m.label for m, _, _ in done):
        results = [r for m, _, r in done if m.label == label and r is not None]
        if not results:
            parts.append(f"{label}: skipped")
            continue
        seconds = sum(r.seconds for r in results) / len(results)
        logs = [r.best.log for r in results if r.best is not None]
        best = f"{min(logs):.3f}" if logs else "none"
        parts.append(f"{label}: {seconds:.2f}s LOG {best} ({results[0].stopped})")
    opt = "unknown" if optimum is None else f"{optimum.log:.3f}"
    return f"{name} q={q} box={prepared.box.size:.3g} optimum={opt} | " + "; ".join(parts)


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (the machine is shared: timings depend on them)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and its finished worker processes so far: what the runs
    cost, whatever else the machine does."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def environment(mode: str, seconds: float | None = None) -> dict[str, object]:
    """The machine and software a run used (written next to the CSVs)."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "kgen", "lattice", "fitness", "experiments"],
                               cwd=REPO, capture_output=True, text=True, check=False).stdout.split("\n")
    except OSError:
        commit, dirty = "", []
    import numpy

    memory = ""
    try:
        kib = int(next(line for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal")).split()[1])
        memory = f"{kib / 2**20:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {
        "mode": mode, "cpu": cpu, "cores": os.cpu_count(), "memory": memory, "os": platform.platform(),
        "python": sys.version.split()[0], "numpy": numpy.__version__, "commit": commit,
        "uncommitted_code": [line[3:] for line in dirty if line.strip()],
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "wall_seconds": seconds,
        "cpu_seconds": round(cpu_seconds(), 1), "load_average_end": load_average(),
        "command": " ".join(["python", "-m", "experiments.paper", *sys.argv[1:]]),
    }
