"""Markdown tables of the committed CSVs, for results/README.md: every number there comes from here.

    python -m experiments.summary [--results DIR]     # writes DIR/summary.md and prints it
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from experiments.common import RESULTS, read_rows
from experiments.plots import DATASETS, number, order
from kgen.io.csvio import write_atomic

Rows = list[dict[str, str]]


def by(rows: Rows, *keys: str) -> dict[tuple, Rows]:
    groups: dict[tuple, Rows] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    return groups


def completed(row: dict[str, str]) -> bool:
    return row["stopped"] not in ("time", "skipped", "refused")


def exact_labels(rows: Rows) -> list[str]:
    return order(sorted({r["algorithm"] for r in rows if r["max_evaluations"] == "" and r["seed"] == "0"
                         and len({x["seed"] for x in rows if x["algorithm"] == r["algorithm"]}) == 1}))


def stochastic_labels(rows: Rows) -> list[str]:
    exact = set(exact_labels(rows))
    return order(sorted({r["algorithm"] for r in rows} - exact))


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def exact_table(name: str, rows: Rows) -> list[str]:
    """Largest q each exact method finished within the limit, and how its first failure ended."""
    lines = [f"| {name} exact method | largest q finished | its time (s) | first q not finished | how |",
             "|---|---|---|---|---|"]
    for label in exact_labels(rows):
        mine = sorted((r for r in rows if r["algorithm"] == label), key=lambda r: int(r["q"]))
        done = [r for r in mine if completed(r)]
        failed = [r for r in mine if not completed(r)]
        last = done[-1] if done else None
        first = failed[0] if failed else None
        limit = mine[0]["time_limit"] if mine else ""
        how = "" if first is None else (f"time limit {limit} s" if first["stopped"] == "time" else first["stopped"])
        lines.append(f"| {label} | {last['q'] if last else '–'} | {last['seconds'] if last else '–'} | "
                     f"{first['q'] if first else '– (all finished)'} | {how} |")
    return lines


def accuracy_table(name: str, rows: Rows) -> list[str]:
    """Per q with a known optimum: the optimum and, per stochastic method, mean accuracy (min–max), mean LOG
    gap and how many seeds reached the optimal LOG."""
    labels = stochastic_labels(rows)
    head = "| q | optimum LOG (source) | " + " | ".join(
        f"{label}: accuracy mean (min–max) / mean gap / seeds at optimum" for label in labels) + " |"
    lines = [f"**{name}**", "", head, "|---|---|" + "---|" * len(labels)]
    for (q,), group in sorted(by(rows, "q").items(), key=lambda kv: int(kv[0][0])):
        optimum = next((r for r in group if r["optimum_log"]), None)
        if optimum is None:
            continue
        cells = []
        for label in labels:
            mine = [r for r in group if r["algorithm"] == label and r["stopped"] != "skipped"]
            acc = [number(r["accuracy"]) for r in mine if number(r["accuracy"]) is not None]
            gaps = [number(r["gap"]) for r in mine if number(r["gap"]) is not None]
            hits = sum(1 for g in gaps if abs(g) < 1e-12)
            a = f"{mean(acc):.3f} ({min(acc):.3f}–{max(acc):.3f})" if acc else "n/a"
            g = f"{mean(gaps):.4f}" if gaps else "none found"
            cells.append(f"{a} / {g} / {hits}/{len(mine)}" if mine else "–")
        lines.append(f"| {q} | {float(optimum['optimum_log']):.4f} ({optimum['optimum_source']}) | "
                     + " | ".join(cells) + " |")
    return lines


def time_table(name: str, rows: Rows) -> list[str]:
    """Mean (max) seconds per method and q; `t/o` where every run timed out, `–` where it did not run."""
    labels = order(sorted({r["algorithm"] for r in rows}))
    lines = [f"**{name}** (seconds: mean (max) over seeds; t/o = timed out, or skipped after a time-out at a "
             "smaller q; ref = refused the lattice size; – = not run)", "",
             "| q | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for (q,), group in sorted(by(rows, "q").items(), key=lambda kv: int(kv[0][0])):
        cells = []
        for label in labels:
            mine = [r for r in group if r["algorithm"] == label]
            ok = [number(r["seconds"]) for r in mine if completed(r) and number(r["seconds"]) is not None]
            out = sum(1 for r in mine if r["timed_out"] == "True")
            if not mine:
                cells.append("–")
            elif not ok:
                cells.append("ref" if any(r["stopped"] == "refused" for r in mine) else "t/o")
            else:
                text = f"{mean(ok):.3g}" + (f" ({max(ok):.3g})" if len(ok) > 1 else "")
                cells.append(text + (f", {out} t/o" if out else ""))
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    return lines


def found_table(tables: dict[str, Rows]) -> list[str]:
    """Per dataset and stochastic method: largest q where every seed found a feasible node, worst run time,
    and the number of runs that timed out."""
    lines = ["| dataset | method | largest q where all seeds found a solution | seeds finding one at the largest "
             "q run | slowest run (s, at q) | timed-out runs |", "|---|---|---|---|---|---|"]
    for name, rows in tables.items():
        for label in stochastic_labels(rows):
            mine = [r for r in rows if r["algorithm"] == label]
            per_q = by(mine, "q")
            full = [int(q) for (q,), g in per_q.items() if all(r["log"] for r in g)]
            top_q = max(int(q) for (q,) in per_q)
            top = per_q[(str(top_q),)]
            timed = [r for r in mine if number(r["seconds"]) is not None]
            slow = max(timed, key=lambda r: float(r["seconds"])) if timed else None
            lines.append(f"| {name} | {label} | {max(full) if full else '–'} | "
                         f"{sum(1 for r in top if r['log'])}/{len(top)} at q = {top_q} | "
                         f"{slow['seconds'] if slow else '–'} (q = {slow['q'] if slow else '–'}) | "
                         f"{sum(1 for r in mine if r['timed_out'] == 'True')} |")
    return lines


def quality_table(name: str, rows: Rows) -> list[str]:
    """Mean LOG and LOS of the solutions per method and q (RQ3)."""
    labels = order(sorted({r["algorithm"] for r in rows}))
    lines = [f"**{name}** (LOG / LOS of the best node; mean over seeds that found one)", "",
             "| q | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for (q,), group in sorted(by(rows, "q").items(), key=lambda kv: int(kv[0][0])):
        cells = []
        for label in labels:
            mine = [r for r in group if r["algorithm"] == label and completed(r) and r["log"]]
            cells.append(f"{mean([float(r['log']) for r in mine]):.3f} / {mean([float(r['los']) for r in mine]):.4f}"
                         if mine else "–")
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    return lines


def summary(results: Path = RESULTS) -> str:
    tables = {label: read_rows(results / f"{name}.csv") for name, label in DATASETS
              if (results / f"{name}.csv").exists()}
    out = ["# Summary of the result CSVs", "",
           "Generated by `python -m experiments.summary` from the CSVs in this folder; do not edit.", "",
           "## Exact methods: how far they get within the time limit", ""]
    for name, rows in tables.items():
        out += exact_table(name, rows) + [""]
    out += ["## Heuristics: solutions found, worst time, time-outs", ""] + found_table(tables) + [""]
    out += ["## Accuracy and LOG gap where the optimum is known (RQ2)", ""]
    for name, rows in tables.items():
        out += accuracy_table(name, rows) + [""]
    out += ["## Execution time (RQ1)", ""]
    for name, rows in tables.items():
        out += time_table(name, rows) + [""]
    out += ["## Solution quality (RQ3)", ""]
    for name, rows in tables.items():
        out += quality_table(name, rows) + [""]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.summary", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder with the CSVs (default: results/)")
    args = parser.parse_args(argv)
    text = summary(args.results)
    write_atomic(args.results / "summary.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
