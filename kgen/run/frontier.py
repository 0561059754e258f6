"""The risk-utility frontier (SPEC section 14): the nodes no other feasible node beats on both information
loss and re-identification risk, each with what a steward weighs before choosing it.

Why: kgen returns one node, but a steward chooses a release by what each step of risk costs in utility (an
R-U confidentiality map, Duncan et al. 2001). Two ways to the set, by the risk measure:

- highest prosecutor risk (1 / smallest class): the frontier is the optimum loss for each k, which the
  certified search finds exactly (lattice/search/certify.py). Warm-started across k: the infeasible nodes of
  k stay infeasible at k + 1 (their cover cuts are preloaded), and the optimum of k, whose smallest class has
  s rows, is the optimum of every k up to s (it is feasible there and no cheaper node is), so k jumps to s + 1;
- average prosecutor risk (released classes / released rows, `average_prosecutor_risk`), or journalist
  risk (with a population table): NSGA-II over the lattice (lattice/search/pareto.py), checked complete by
  evaluating every node on a small box.

Everything goes through the one run path's `prepare` (validation, hierarchies, encoding, models, evaluator);
the evaluator of another k shares the encoded table. Each point carries its per-QI levels and loss, its metrics
and risk figures (`kgen.run.record`, the report's own), its class-size histogram, ten released rows and the
command that publishes it (`kgen anonymize ... --node`). Files are written by `kgen.report.publish`.
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from fitness import privacy
from fitness.device_evaluator import make_evaluator
from fitness.evaluator import Evaluation
from fitness.objective import make_objective
from fitness.privacy.average_risk import average_prosecutor_risk
from kgen.check.kanonymity import check_k_anonymity
from kgen.check.rules import rules_from_models
from kgen.io.table import DEFAULT_MISSING, as_table
from kgen.report.provenance import file_record
from kgen.report.risk import DEFAULT_THRESHOLD, histogram_of, journalist_figures, record_risks
from kgen.run import dp
from kgen.run.config import Config
from kgen.run.pipeline import release
from kgen.run.prepare import Prepared, models_for, prepare, search_box
from kgen.run.record import record
from lattice.errors import InputError, NoSolutionError
from lattice.node import Node
from lattice.search.base import EVALUATE_ALL_MAX_NODES, Limits, SearchResult, Stopped, guarded
from lattice.search.certify import DEFAULT_SECONDS, Certify, CertifyLoop, require_certifiable
from lattice.search.pareto import ParetoGA, pareto_front

RISKS = ("highest", "average", "records", "journalist")
# the point's `risks` field each measure is
RISK_FIELD = {"highest": "highest_prosecutor", "average": "average_prosecutor", "records": "records_at_risk",
              "journalist": "journalist_highest"}
SAMPLE_ROWS = 10  # released rows shown per point


def frontier(data: object, config: Config, risk: str = "highest", k_min: int = 2, k_max: int = 50, *,
             population: object | None = None, invocation: Mapping | None = None,
             input_path: str | None = None) -> dict:
    """The risk-utility frontier of a table as a JSON-ready dict (docs/frontier.md).

    Parameters
    ----------
    data
        The table (as `kgen.anonymize` takes it).
    config
        The hard models, suppression limit, hierarchies, metric, seed and limits (`config.k` is replaced by
        `k_min`; `config.algorithm` is not used: the risk measure chooses the search).
    risk
        "highest" (prosecutor: 1 / smallest class; exact per k), or by NSGA-II (exact on a box of at most
        20,000 nodes): "average" (prosecutor: classes / released rows), "records" (the share of records whose
        prosecutor risk exceeds 0.2) or "journalist" (the highest 1 / |population class|, with `population`).
    k_min, k_max
        The range of k: the hard model is k-anonymity with `k_min`; with "highest" every k up to `k_max`.
    population
        The population table (same QI columns, raw values) for journalist risk: a path or a table.
    invocation
        How the run was started (the command line's record); None: the Python API.
    input_path
        The input file, for the commands that publish a point (default: `data` when it is a path).

    Returns
    -------
    dict
        {"frontier": how it was found, "points": the frontier sorted by loss, "per_k" (highest risk), the
        QIs, identifiers, kept columns, models, ...}.
    """
    if risk not in RISKS:
        raise InputError(f"unknown risk {risk!r}; choose one of {', '.join(RISKS)}")
    if (risk == "journalist") != (population is not None):
        raise InputError("journalist risk needs a population table (--population FILE), and only it reads one")
    if not isinstance(k_min, int) or not isinstance(k_max, int) or not 1 <= k_min <= k_max:
        raise InputError(f"the k range needs 1 <= k-min <= k-max, got {k_min} and {k_max}")
    if dp.asked(config):  # its exact optima per k are computed on the data: not differentially private
        raise InputError("kgen frontier does not take --differential-privacy: the frontier's optima are exact, "
                         "chosen without spending a privacy budget; run kgen anonymize --differential-privacy")
    start = time.perf_counter()
    prepared = prepare(data, dataclasses.replace(config, k=k_min))
    by_k = PerK(prepared)
    measure = Measure(prepared, risk, None if population is None else PopulationCodes(prepared, population))
    if risk == "highest":
        found, per_k, how = highest_frontier(by_k, k_min, k_max)
    else:
        found, per_k, how = ga_frontier(prepared, measure)
    source = input_path or (data if isinstance(data, str) else None)
    points = [point(by_k.at(k), node, measure, source or "INPUT") for k, node in found]
    how |= {"points": len(points), "seconds": time.perf_counter() - start}
    return record_of(prepared, risk, (k_min, k_max), how, points, per_k, source) | {
        "invocation": dict(invocation) if invocation is not None else {"api": "kgen.frontier"}}


def record_of(prepared: Prepared, risk: str, ks: tuple[int, int], how: dict, points: list[dict], per_k: list[dict],
              source: str | None) -> dict:
    """The frontier's JSON: what every point shares (roles of the columns, models, limits, input), how it was
    found, the points and the per-k optima."""
    table, cfg = prepared.table, prepared.config
    roles = set(cfg.qi) | set(cfg.identifiers)
    return {
        "kind": "kgen frontier", "risk": risk, "k_min": ks[0], "k_max": ks[1],
        "quasi_identifiers": list(cfg.qi), "identifiers": list(cfg.identifiers), "sensitive": list(cfg.sensitive),
        "kept_columns": [c for c in table.columns if c not in roles], "columns": list(table.columns),
        "heights": list(prepared.heights), "rows": table.n, "suppression_limit": cfg.suppression,
        "metric": cfg.metric, "seed": cfg.seed, "models": [m.describe() for m in prepared.evaluator.models],
        "input": source, "frontier": how, "points": points, "per_k": per_k,
        "provenance": {"input": file_record(source) if source and Path(source).is_file() else
                       {"path": source, "rows": table.n}},
    }


class PerK:
    """The prepared problem at each k: the evaluator and box of `k`, over the one encoded table."""

    def __init__(self, prepared: Prepared) -> None:
        self.base = prepared
        self.prepared: dict[int, Prepared] = {prepared.config.k: prepared}

    def at(self, k: int) -> Prepared:
        """The problem with k-anonymity `k` (and every other model of the config), built once."""
        if k not in self.prepared:
            base = self.base
            config = dataclasses.replace(base.config, k=k)
            evaluator = make_evaluator(base.encoded, models_for(config), config.suppression,
                                       make_objective(config.metric), config.kernel, config.device)
            box = search_box(config, evaluator, base.heights, True, base.table.source)
            self.prepared[k] = dataclasses.replace(base, config=config, evaluator=evaluator, box=box)
        return self.prepared[k]


def highest_frontier(by_k: PerK, k_min: int, k_max: int) -> tuple[list[tuple[int, Node]], list[dict], dict]:
    """The certified optimum for each k (see the module doc): the frontier's (k, node) pairs, the per-k records
    ({k, node, loss, optimal, lower_bound}) and how it was found."""
    per_k: list[dict] = []
    infeasible: list[Node] = []
    k, runs = k_min, 0
    while k <= k_max:
        try:
            prepared = by_k.at(k)
        except NoSolutionError:  # from here on even the top node is infeasible
            break
        result = certified(prepared, infeasible)
        runs += 1
        if result.stopped == Stopped.INTERRUPTED:  # Ctrl-C: nothing is written (the CLI exits 130)
            raise KeyboardInterrupt
        if result.best is None:
            break
        best = result.best
        infeasible = list(result.infeasible)
        upto = min(k_max, max(k, int(best.smallest_class)))
        for kk in range(k, upto + 1):
            per_k.append({"k": kk, "node": list(best.node), "loss": float(best.loss), "log": float(best.log),
                          "optimal": bool(result.optimal), "lower_bound": result.params.get("lower_bound"),
                          "smallest_class": int(best.smallest_class), "solved_at_k": k})
        k = upto + 1
    chosen: dict[Node, int] = {}
    for row in per_k:  # a node's point is at the largest k it is the optimum of (the same release)
        chosen[tuple(row["node"])] = row["k"]
    losses = {tuple(r["node"]): r["loss"] for r in per_k}
    front = pareto_front([(losses[n], 1.0 / k, n) for n, k in chosen.items()])
    how = {"algorithm": "certify per k", "certify_runs": runs, "complete": all(r["optimal"] for r in per_k),
           "k_reached": per_k[-1]["k"] if per_k else None}
    return [(chosen[n], n) for _, _, n in front], per_k, how


def certified(prepared: Prepared, infeasible: Sequence[Node]) -> SearchResult:
    """The certified search at one k, its loop preloaded with the infeasible nodes of a smaller k (as
    `Certify.run` would start it: its checks, and its default time limit on a box it may not finish)."""
    config = prepared.config
    search = Certify()
    problem = prepared.problem()
    require_certifiable(problem)
    limits = Limits(config.max_evaluations, config.time_limit, config.seed)
    if limits.time_limit is None and limits.max_evaluations is None and problem.box.size > EVALUATE_ALL_MAX_NODES:
        limits = dataclasses.replace(limits, time_limit=DEFAULT_SECONDS)
    loop = CertifyLoop(search, problem, limits, 20 * prepared.box.dims)
    loop.preload([n for n in infeasible if n in prepared.box], None)
    result = guarded(loop.budget, search.name, loop.body, loop.params)
    return dataclasses.replace(result, exact=True)


def ga_frontier(prepared: Prepared, measure: Measure) -> tuple[list[tuple[int, Node]], list[dict], dict]:
    """NSGA-II over (loss, the measure's risk) at k = config.k (exact on a small box)."""
    config = prepared.config
    search = ParetoGA()
    limits = Limits(config.max_evaluations, config.time_limit, config.seed)
    result = search.run(prepared.problem(), limits, measure.of)  # type: ignore[arg-type]
    if result.stopped == Stopped.INTERRUPTED:  # Ctrl-C: nothing is written (the CLI exits 130)
        raise KeyboardInterrupt
    front = result.params["front"]
    how = {"algorithm": "nsga2", "complete": bool(result.params.get("complete")),
           "evaluations": result.evaluations, "stopped": str(result.stopped), "box_size": prepared.box.size,
           "ga_points": len(result.params.get("ga_front", [])),
           "parameters": {k: v for k, v in result.params.items() if not k.endswith("front")}}
    return [(config.k, tuple(row[2])) for row in front], [], how


class Measure:
    """The frontier's risk of a node, from the definitions of `kgen.report.risk` (one definition each)."""

    def __init__(self, prepared: Prepared, risk: str, population: PopulationCodes | None) -> None:
        self.prepared, self.risk, self.population = prepared, risk, population

    def of(self, e: Evaluation) -> float:
        """The risk of an evaluated feasible node (the GA's second objective)."""
        if self.risk == "journalist":
            return self.journalist(e.node, self.prepared.evaluator.suppressed_rows(e.node))["max"]
        sizes = self.prepared.evaluator.released_and_suppressed(e.node)[0]
        if self.risk == "average":
            return average_prosecutor_risk(sizes)
        figures = record_risks(sizes, DEFAULT_THRESHOLD)["prosecutor"]
        return figures["max"] if self.risk == "highest" else figures["records_above_threshold"]

    def journalist(self, node: Node, suppressed: np.ndarray) -> dict:
        assert self.population is not None
        return self.population.figures(self.prepared, node, suppressed)


class PopulationCodes:
    """A population table's QI values as codes of the sample's generalized labels, level by level, so that a
    node's journalist risk is a grouping of codes (no string per row). A population label the sample lacks
    gets a code of its own; a value the QI's hierarchy does not cover is an InputError naming it."""

    def __init__(self, prepared: Prepared, population: object) -> None:
        table = as_table(population)
        self.rows = table.n
        self.codes: list[list[np.ndarray]] = []
        self.cards: list[list[int]] = []
        for q, encoded in zip(prepared.config.qi, prepared.encoded.qis):
            paths = prepared.hierarchies[q].paths
            values, inverse = np.unique(np.asarray([str(v).strip() for v in table.column(q)], dtype=object),
                                        return_inverse=True)
            for v in values:
                if v not in paths:
                    raise InputError(f"the population's value {v!r} is not in the hierarchy of the quasi-identifier",
                                     file=table.source, column=q)
            levels, cards = [], []
            for level, labels in enumerate(encoded.labels):
                index = {label: c for c, label in enumerate(labels)}
                mapped = np.array([index.setdefault(paths[v][level], len(index)) for v in values], dtype=np.int64)
                levels.append(mapped[inverse.reshape(-1)])
                cards.append(len(index))
            self.codes.append(levels)
            self.cards.append(cards)

    def figures(self, prepared: Prepared, node: Node, suppressed: np.ndarray) -> dict:
        """Journalist figures (`kgen.report.risk.journalist_figures`) of the node's released classes."""
        kept = ~np.asarray(suppressed, dtype=bool)
        n = int(kept.sum())
        key = np.zeros(n + self.rows, dtype=np.int64)
        span = 1
        for i, (encoded, level) in enumerate(zip(prepared.encoded.qis, node)):
            card = self.cards[i][level]
            if span * card >= 1 << 62:  # renumber before the key could overflow
                _, key = np.unique(key, return_inverse=True)
                key, span = key.reshape(-1).astype(np.int64), int(key.max()) + 1
            codes = np.concatenate([np.asarray(encoded.codes[level], dtype=np.int64)[kept], self.codes[i][level]])
            key = key * card + codes
            span *= card
        classes, sizes = np.unique(key[:n], return_counts=True)
        known, counts = np.unique(key[n:], return_counts=True)
        found = np.zeros_like(sizes)
        if known.size:
            at = np.minimum(np.searchsorted(known, classes), known.size - 1)
            found = np.where(known[at] == classes, counts[at], 0)
        return journalist_figures(sizes, np.maximum(found, sizes), DEFAULT_THRESHOLD)


def point(prepared: Prepared, node: Node, measure: Measure, input_path: str) -> dict:
    """One frontier point: node, k, metrics, risk figures, class sizes, ten released rows, the command."""
    evaluation = prepared.evaluator.evaluate(node)
    suppressed = prepared.evaluator.suppressed_rows(node)
    recorded = record(prepared, evaluation, suppressed)
    figures = recorded.risk
    heights = prepared.heights
    qis = list(prepared.config.qi)
    risks = {"highest_prosecutor": figures["prosecutor"]["max"], "average_prosecutor": figures["prosecutor"]["mean"],
             "records_at_risk": figures["prosecutor"]["records_above_threshold"], "threshold": DEFAULT_THRESHOLD,
             "marketer": figures["marketer"], "sample_uniques": figures["sample_uniques"]}
    if measure.population is not None:
        journalist = measure.journalist(node, suppressed)
        risks |= {"journalist_highest": journalist["max"], "journalist_average": journalist["mean"]}
    value = risks[RISK_FIELD[measure.risk]]
    sample, checked = released_sample(prepared, node, suppressed)
    return {
        "node": {q: int(x) for q, x in zip(qis, node)}, "levels": [int(x) for x in node], "k": prepared.config.k,
        "log": float(evaluation.log), "loss": float(evaluation.loss), "los": float(evaluation.los),
        "risk": float(value), "classes": int(evaluation.classes), "suppressed": int(evaluation.suppressed),
        "smallest_class": int(evaluation.smallest_class),
        "metrics": {k: v for k, v in recorded.metrics.items() if isinstance(v, (int, float))},
        "loss_per_qi": {q: (x / h if h else 0.0) for q, x, h in zip(qis, node, heights)},
        "risks": risks,
        "class_sizes": [[s, c] for s, c in histogram_of(figures).items()],
        "sample": sample, "checked": checked,
        "command": publish_command(prepared.config, node, input_path),
    }


def released_sample(prepared: Prepared, node: Node, suppressed: np.ndarray) -> tuple[list[list[str]], dict]:
    """The first rows of the point's release as they would be written (QIs generalized, identifiers and
    suppressed rows' QIs as `*`), and the independent check of that whole release (kgen.check: every model,
    the suppression limit), as the publish of `kgen anonymize --node` will run it."""
    released = release(prepared, node, suppressed, False)
    count = min(SAMPLE_ROWS, released.n)
    rows = [[str(v) for v in row] for row in zip(*(released.column(c)[:count] for c in released.columns))]
    k, rules = rules_from_models([m.describe() for m in prepared.evaluator.models], False)
    result = check_k_anonymity(released, list(prepared.config.qi), k, prepared.config.suppression, rules)
    return rows, {"checker": "kgen.check", "passed": bool(result.passed), "classes": result.classes,
                  "smallest_class": result.smallest_class, "suppressed_rows": result.suppressed_rows}


def publish_command(config: Config, node: Node, input_path: str) -> str:
    """The `kgen anonymize` command that publishes this node (the same models, suppression and hierarchies)."""
    words = ["kgen", "anonymize", input_path, "--qi", ",".join(config.qi), "--suppression", f"{config.suppression:g}"]
    if config.identifiers:
        words += ["--identifier", ",".join(config.identifiers)]
    if config.sensitive:
        words += ["--sensitive", ",".join(config.sensitive)]
    if config.keep:
        words += ["--keep", ",".join(config.keep)]
    if config.keep_unnamed:
        words += ["--keep-unnamed"]
    if config.allow_k1:
        words += ["--allow-k1"]
    for p in privacy.parameters():  # every model's parameters from the registry: k always, the others when set
        value = getattr(config, p.name)
        if p.name == "k" or value != p.default:
            words += [p.option, f"{value:g}" if isinstance(value, float) else str(value)]
    if config.metric != "log":
        words += ["--metric", config.metric]
    for column, spec in config.hierarchies.items():
        if isinstance(spec, str):
            words += ["--hierarchy", f"{column}={spec}"]
    if config.hierarchy_dir:
        words += ["--hierarchy-dir", config.hierarchy_dir]
    if tuple(config.missing) != tuple(DEFAULT_MISSING):
        words += ["--missing", ",".join(config.missing)]
    words += ["--node", ",".join(f"{q}={x}" for q, x in zip(config.qi, node))]
    return shlex.join(words)


__all__ = ["RISKS", "frontier"]
