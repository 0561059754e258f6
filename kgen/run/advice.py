"""Why no node is feasible and what would make one feasible: the suppression limit the node suppressing the
fewest rows needs (computed, not guessed), and which privacy models break there."""

from __future__ import annotations

import math
from dataclasses import dataclass

from fitness.evaluator import Evaluation, NodeEvaluator
from kgen.run.config import Config
from lattice.box import Box
from lattice.errors import MAX_NAMES
from lattice.node import Node

# The largest lattice scanned to find the fewest rows any node must suppress when the privacy models are not
# monotone under suppression (their top node need not be the one suppressing least).
ADVICE_SCAN_NODES = 4096


@dataclass(frozen=True)
class LeastSuppressed:
    """The node found to suppress the fewest rows, and whether that is proved the least of the lattice."""

    evaluation: Evaluation
    proved: bool
    nodes: int  # how many nodes were looked at


def least_suppressed(evaluator: NodeEvaluator, heights: Node, scan: int = ADVICE_SCAN_NODES,
                     box: Box | None = None) -> LeastSuppressed:
    """The node of the lattice [0, heights] (or of `box`, whose top is `heights`: the per-QI limits) that
    suppresses the fewest rows.

    Under models that stay monotone with suppression (k-anonymity, distinct l-diversity) generalizing never
    adds a violating row, so the top node is the answer. Otherwise every node of a lattice of at most `scan`
    nodes is evaluated; a larger lattice gives the top node, not proved least."""
    top = evaluator.evaluate(heights)
    if all(m.monotone_with_suppression for m in evaluator.models):
        return LeastSuppressed(top, True, 1)
    lattice = Box.full(heights) if box is None else box
    if lattice.size > scan:
        return LeastSuppressed(top, False, 1)
    best = top
    for node in lattice.nodes():
        e = evaluator.evaluate(node)
        if (e.suppressed, e.loss, e.node) < (best.suppressed, best.loss, best.node):
            best = e
    return LeastSuppressed(best, True, lattice.size)


def model_text(description: dict) -> str:
    """A privacy model's description (`describe()`) in words: "entropy l-diversity of 's' (l = 2)"."""
    d = description
    if d.get("model") == "l-diversity":
        name = f"{d['variant']} l-diversity"
        settings = [f"l = {d['l']:g}"] + ([f"c = {d['c']:g}"] if d.get("c") is not None else [])
        settings += ["Grassberger's estimator"] if d.get("estimator") == "grassberger" else []
    else:
        name = str(d.get("model"))
        settings = [f"{key} = {value}" for key, value in d.items() if key not in ("model", "sensitive")
                    and not key.endswith("_digest")]  # a file's SHA-256 is the report's, not advice
    on = f" of {d['sensitive']!r}" if "sensitive" in d else ""
    return f"{name}{on} ({', '.join(settings)})"


def breaking_models(evaluator: NodeEvaluator, node: Node) -> str:
    """The privacy models that break at a node, each with the rows it alone would suppress there."""
    partition = evaluator.partition(node, with_rows=True)
    parts = []
    for model in evaluator.models:
        rows = int(partition.sizes[model.violating(partition, evaluator.table)].sum())
        if rows:
            words = getattr(model, "empty_classes_words", None)  # delta-presence: what no suppression mends
            said = words(partition) if words is not None else ""
            why = f"; {said}" if said else ""
            parts.append(f"{model_text(model.describe())}: {rows} row{'s' if rows != 1 else ''}{why}")
    more = len(parts) - MAX_NAMES  # one model per sensitive column: a message names at most MAX_NAMES of them
    return ", ".join(parts[:MAX_NAMES]) + (f" and {more} more" if more > 0 else "")


def no_solution_advice(config: Config, evaluator: NodeEvaluator, least: LeastSuppressed) -> str:
    """Why no node is feasible and what would make one feasible: the suppression limit that the node suppressing
    fewest rows needs (computed, not guessed), and which models break there."""
    n = evaluator.table.n
    e = least.evaluation
    need = e.suppressed / n if n else 0.0
    enough = math.ceil(need * 10_000 - 1e-9) / 10_000  # rounded up: floor(enough * n) must reach e.suppressed
    node = list(e.node)
    head = (f"no transformation satisfies the privacy model with suppression limit {config.suppression:.2%} "
            f"({evaluator.max_suppressed} of {n} rows)")
    if least.proved:
        where = "the most general node" if e.node == tuple(evaluator.table.heights) else f"node {node}"
        what = (f"; no node suppresses fewer rows than {where}, which suppresses {e.suppressed} of {n} rows "
                f"({need:.2%}). Raise --suppression to at least {enough:.4f}")
    else:
        what = (f"; the most general node suppresses {e.suppressed} of {n} rows ({need:.2%}): --suppression "
                f"{enough:.4f} makes it feasible (a lower node may need less: the lattice is too large to scan "
                "for the advice)")
    limits = limits_text(config)
    return (f"{head}{limits}{what}, or relax what breaks there ({breaking_models(evaluator, e.node)}), or use "
            f"hierarchies that generalize further{', or raise --max-level' if config.max_levels else ''}")


def limits_text(config: Config) -> str:
    """The per-QI limits the advice holds to, in words ("" without limits)."""
    parts = [f"{name} <= {level}" for name, level in config.max_levels.items()]
    parts += [f"{name} >= {level}" for name, level in config.min_levels.items()]
    return f" within the level limits ({', '.join(parts)})" if parts else ""
