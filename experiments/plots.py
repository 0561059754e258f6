"""The paper's figures 7-10 (time, accuracy, LOG, LOS against q) and the GA convergence plot, from the CSVs.

`python -m experiments.plots [--results DIR] [--out DIR]` redraws every PNG from the committed CSVs without
running anything (into --out, by default the CSVs' folder). Stochastic methods are drawn as the mean over
seeds with a band from the minimum to the maximum; exact methods as single runs. Runs that timed out are missing
points; the time panel marks the time limit, the LOS panel the suppression limit. Legends sit below the axes.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from experiments.common import RESULTS, Dataset, read_rows  # noqa: E402

DATASETS = (("cargo2000", "Cargo 2000 (c2k)"), ("fraud", "Fraud F (synthetic)"), ("adult", "Adult"))
STYLE = {  # label -> (colour, marker)
    "kgen": ("tab:blue", "o"), "kgen+": ("tab:purple", "D"), "memetic": ("tab:pink", "X"), "ola": ("tab:orange", "s"),
    "exhaustive": ("tab:green", "^"), "bestfirst": ("tab:brown", "P"), "random": ("tab:red", "v"),
    "certify": ("black", "*"),
}
FIGURES = {
    "time": ("fig7_time.png", "seconds", "execution time (s, log scale)", "Figure 7: execution time"),
    "accuracy": ("fig8_accuracy.png", "accuracy", "accuracy (1 = optimal nodes found)",
                 "Figure 8: accuracy against the optimum"),
    "log": ("fig9_log.png", "log", "LOG (precision loss)", "Figure 9: level of generalization (LOG)"),
    "los": ("fig10_los.png", "los", "LOS (fraction of rows suppressed)", "Figure 10: level of suppression (LOS)"),
    "gap": ("fig8b_gap.png", "gap", "LOG(best found) − LOG(optimum)", "LOG gap to the exact optimum"),
}


SUPPRESSION_LIMIT = Dataset.suppression  # t of every paper run (experiments.common.Dataset), drawn on the LOS figure
LEGEND = {"fontsize": 7, "loc": "upper center", "ncol": 2, "frameon": False}  # below each panel, never on data


def legend_below(ax: plt.Axes, offset: float = -0.2) -> None:
    """The panel's legend under its x-axis label (figures are saved with bbox_inches="tight" to keep it)."""
    ax.legend(bbox_to_anchor=(0.5, offset), **LEGEND)


def q_axis(ax: plt.Axes, qs: Sequence[float]) -> None:
    """An x-axis of q spanning the q values drawn: linear, or linear to 30 then logarithmic when q runs to
    Cargo's 50 and 97."""
    if not qs:
        return
    low, high = min(qs), max(qs)
    if high > 30:
        ax.set_xscale("symlog", linthresh=30)
        ax.set_xlim(low - 0.5, high * 1.12)
        ax.set_xticks([t for t in (2, 5, 10, 15, 20, 25, 50, 97) if low <= t <= high])
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    else:
        ax.set_xlim(low - 0.5, high + 0.5)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))


def number(text: str) -> float | None:
    if text in ("", None):
        return None
    value = float(text)
    return None if math.isnan(value) or math.isinf(value) else value


def series(rows: Sequence[dict[str, str]], column: str) -> dict[str, dict[int, list[float]]]:
    """label -> q -> the values of `column` over the seeds that produced one (timed-out runs excluded)."""
    out: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["timed_out"] == "True" or row["stopped"] in ("refused", "skipped"):
            continue
        value = number(row[column])
        if value is not None:
            out[row["algorithm"]][int(row["q"])].append(value)
    return out


def order(labels: Sequence[str]) -> list[str]:
    known = [label for label in STYLE if label in labels]
    return known + sorted(set(labels) - set(known))


def seeds_of(rows: Sequence[dict[str, str]], label: str) -> int:
    return len({r["seed"] for r in rows if r["algorithm"] == label})


def draw_panel(ax: plt.Axes, rows: Sequence[dict[str, str]], metric: str, title: str) -> None:
    _, column, ylabel, _ = FIGURES[metric]
    data = series(rows, column)
    labels = order(sorted({r["algorithm"] for r in rows}))
    drawn_q: list[float] = [q for points in data.values() for q in points]
    for label in labels:
        points = data.get(label, {})
        colour, marker = STYLE.get(label, ("tab:gray", "x"))
        if not points:
            ax.plot([], [], color=colour, marker=marker, label=f"{label} (no point)")
            continue
        qs = sorted(points)
        means = [sum(points[q]) / len(points[q]) for q in qs]
        n = seeds_of(rows, label)
        name = f"{label} (mean, min–max of {n} seeds)" if n > 1 else label
        ax.plot(qs, means, color=colour, marker=marker, markersize=4, linewidth=1.4, label=name)
        if n > 1:
            ax.fill_between(qs, [min(points[q]) for q in qs], [max(points[q]) for q in qs], color=colour,
                            alpha=0.18, linewidth=0)
    if metric == "time":
        ax.set_yscale("log")
        limits = {number(r["time_limit"]) for r in rows} - {None}
        if limits:
            limit = max(limits)
            ax.axhline(limit, color="black", linestyle="--", linewidth=0.8, label=f"time limit ({limit:g} s)")
        first: dict[str, tuple[int, str]] = {}
        for row in sorted(rows, key=lambda r: int(r["q"])):
            if row["timed_out"] == "True" or row["stopped"] == "refused":
                first.setdefault(row["algorithm"], (int(row["q"]), row["stopped"]))
        for label, (q, stopped) in first.items():
            colour, _ = STYLE.get(label, ("tab:gray", "x"))
            why = "refused the lattice size from" if stopped == "refused" else "first time-out at"
            ax.plot([q], [max(limits)], marker="x", color=colour, markersize=9, linestyle="none",
                    label=f"{label}: {why} q = {q}")
            drawn_q.append(q)
        if limits:  # room above the time limit for its line and the time-out marks
            ax.set_ylim(top=max(limits) * 2.5)
    if metric == "accuracy":
        ax.set_ylim(-0.02, 1.05)
    if metric == "los":
        ax.axhline(SUPPRESSION_LIMIT, color="black", linestyle="--", linewidth=0.9,
                   label=f"suppression limit t = {SUPPRESSION_LIMIT:g}")
        ax.set_ylim(bottom=-0.02 * SUPPRESSION_LIMIT, top=1.08 * SUPPRESSION_LIMIT)
    q_axis(ax, drawn_q or [int(r["q"]) for r in rows])
    ax.set_xlabel("number of quasi-identifiers q")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax)


def load(results: Path) -> dict[str, list[dict[str, str]]]:
    return {name: read_rows(results / f"{name}.csv") for name, _ in DATASETS if (results / f"{name}.csv").exists()}


def save(fig: plt.Figure, path: Path) -> Path:
    """Write the PNG with every legend kept (legends sit outside the axes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def figure(metric: str, tables: dict[str, list[dict[str, str]]], out: Path) -> Path:
    """One PNG per figure (into `out`), one panel per dataset; each x-axis spans the q values it draws."""
    filename, _, _, suptitle = FIGURES[metric]
    names = [(n, label) for n, label in DATASETS if n in tables]
    fig, axes = plt.subplots(1, len(names), figsize=(5.6 * len(names), 4.4), squeeze=False)
    for index, (ax, (name, label)) in enumerate(zip(axes[0], names)):
        draw_panel(ax, tables[name], metric, f"({'abc'[index]}) {label}")
    fig.suptitle(suptitle)
    fig.tight_layout()
    return save(fig, out / filename)


def convergence_figure(results: Path, out: Path | None = None) -> Path | None:
    """Best LOG and feasible fraction of the GA runs in convergence.csv against the distinct evaluations spent
    (not generations: the presets' populations differ), written into `out` (default: `results`)."""
    source = results / "convergence.csv"
    if not source.exists():
        return None
    rows = read_rows(source)
    runs: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        runs[row["run"]].append(row)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 6.4), sharex=True)
    for index, (run, points) in enumerate(runs.items()):
        colour = STYLE.get(points[0]["algorithm"], (f"C{index}", "o"))[0]
        spent = [int(p["evaluations"]) for p in points]
        best = [number(p["best_log"]) for p in points]
        top.plot([e for e, b in zip(spent, best) if b is not None], [b for b in best if b is not None],
                 color=colour, label=run, drawstyle="steps-post")
        bottom.plot(spent, [float(p["feasible_fraction"]) for p in points], color=colour, label=run)
        optimum = number(points[0].get("optimum_log", ""))
        if optimum is not None and index == 0:
            top.axhline(optimum, color="black", linestyle="--", linewidth=0.8, label="exact optimum")
    meta = json.loads(rows[0]["meta"]) if rows and rows[0].get("meta") else {}
    top.set_ylabel("best LOG so far")
    top.set_title(f"GA convergence: {meta.get('dataset', '')}, q = {meta.get('q', '')}, "
                  f"budget {meta.get('max_evaluations', '')} evaluations, seed {meta.get('seed', '')}", fontsize=10)
    bottom.set_ylabel("feasible share of the generation")
    bottom.set_xlabel("distinct evaluations spent")
    bottom.set_ylim(-0.02, 1.02)
    bottom.set_xlim(left=0)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    handles, names = top.get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8, frameon=False)
    return save(fig, (out or results) / "convergence.png")


INTERVAL_LABELS = ("kgen", "kgen+", "memetic", "certify")  # the runs whose certified interval figure 11 draws


def intervals(rows: Sequence[dict[str, str]], label: str) -> dict[int, tuple[float, float]]:
    """q -> (proved lower bound, LOG found) of the first seed's run of `label` (time-outs included: a
    certified search that ran out of time still proves its interval)."""
    out: dict[int, tuple[float, float]] = {}
    for row in rows:
        if row["algorithm"] != label or row["seed"] != "0" or row["stopped"] in ("refused", "skipped"):
            continue
        low, high = number(row.get("lower_bound", "")), number(row["log"])
        if low is not None and high is not None:
            out[int(row["q"])] = (low, high)
    return out


def certified_figure(tables: dict[str, list[dict[str, str]]], out: Path) -> Path | None:
    """Figure 11: per q, the interval [proved lower bound, LOG found] of KGen (both presets, seed 0) and of
    the certified search within the same time limit, with the exact optimum where one is known."""
    names = [(n, label) for n, label in DATASETS if n in tables
             and any(r.get("lower_bound") for r in tables[n])]
    if not names:
        return None
    fig, axes = plt.subplots(1, len(names), figsize=(5.6 * len(names), 4.4), squeeze=False)
    for index, (ax, (name, title)) in enumerate(zip(axes[0], names)):
        rows = tables[name]
        qs = sorted({int(r["q"]) for r in rows})
        width = 0.09 * (len(INTERVAL_LABELS) - 1)  # the labels' intervals side by side around each q
        spread = {label: -width + 2 * width * i / max(len(INTERVAL_LABELS) - 1, 1)
                  for i, label in enumerate(INTERVAL_LABELS)}
        for label in INTERVAL_LABELS:
            points = intervals(rows, label)
            if not points:
                continue
            colour, marker = STYLE.get(label, ("tab:gray", "x"))
            xs = sorted(points)
            shift = [q * (1 + spread[label] / 10) if q > 30 else q + spread[label] for q in xs]
            ax.vlines(shift, [points[q][0] for q in xs], [points[q][1] for q in xs], color=colour, linewidth=2.2,
                      alpha=0.8)
            ax.plot(shift, [points[q][1] for q in xs], linestyle="none", marker=marker, color=colour, markersize=5,
                    label=f"{label}: LOG found (seed 0)")
            ax.plot(shift, [points[q][0] for q in xs], linestyle="none", marker="_", color=colour, markersize=10,
                    label=f"{label}: proved lower bound")
        optimum = {int(r["q"]): number(r["optimum_log"]) for r in rows if number(r["optimum_log"]) is not None}
        if optimum:
            xs = sorted(optimum)
            ax.plot(xs, [optimum[q] for q in xs], linestyle="none", marker="o", markerfacecolor="none",
                    color="tab:green", markersize=8, label="exact optimum (an exact search completed)")
        q_axis(ax, qs)
        ax.set_xlabel("number of quasi-identifiers q")
        ax.set_ylabel("LOG (precision loss)")
        ax.set_title(f"({'abc'[index]}) {title}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        legend_below(ax)
    limit = {number(r["time_limit"]) for rows in tables.values() for r in rows} - {None}
    fig.suptitle("Figure 11: certified interval [lower bound, found] per q"
                 + (f" (time limit {max(limit):g} s per run)" if limit else ""))
    fig.tight_layout()
    return save(fig, out / "fig11_certified.png")


def draw_all(results: Path = RESULTS, out: Path | None = None) -> list[Path]:
    """Every figure from the CSVs in `results`, written into `out` (default: `results`)."""
    out = results if out is None else out
    tables = load(results)
    paths = [figure(metric, tables, out) for metric in FIGURES] if tables else []
    certified = certified_figure(tables, out) if tables else None
    paths += [certified] if certified else []
    convergence = convergence_figure(results, out)
    return paths + ([convergence] if convergence else [])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.plots", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder with the CSVs (default: results/)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder the PNGs are written to (default: the --results folder)")
    args = parser.parse_args(argv)
    for path in draw_all(args.results, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
