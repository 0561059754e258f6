"""Local recoding and microaggregation against global recoding (issue 26, items 4 and 5).

Runs each problem twice, with global recoding (the node alone) and with `local_recoding=True`, and prints a
Markdown table: the node, suppressed rows, NCP and Loss of the release, the row groups, the CPU seconds of the
whole run (the search, the recoding rounds and the report), and whether the written release passed the
independent check. Then microaggregation of Adult's age (mean and median) with its SSE. Problems: Adult with
the README's QIs and with the 8 usual QIs, Cargo 2000 with its first 10 columns (decimal hierarchies), each at
k = 5 and a 1 % suppression limit, searched by the exact bestfirst under LOG and under NCP.

    python -m benchmarks.local_recoding > results/local-recoding.md   (about a minute of CPU)
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import kgen
from benchmarks.common import ADULT_QIS, DATA
from kgen.io.table import read_csv
from kgen.run.config import Config

README_QIS = ("sex", "age", "race", "marital-status")


def problems() -> list[tuple[str, object, dict]]:
    adult = read_csv(DATA / "adult" / "adult.csv")
    cargo = read_csv(DATA / "cargo2000" / "c2k_data_comma.csv")
    adult_base = {"k": 5, "suppression": 0.01, "hierarchy_dir": str(DATA / "adult"), "sensitive": ["salary-class"],
                  "algorithm": "bestfirst"}
    cargo_base = {"k": 5, "suppression": 0.01, "identifiers": ["nr"], "algorithm": "bestfirst"}
    out = []
    for metric in ("log", "ncp"):
        out.append((f"Adult, README QIs (4), {metric}", adult, adult_base | {"qi": README_QIS, "metric": metric}))
        out.append((f"Adult, 8 QIs, {metric}", adult, adult_base | {"qi": ADULT_QIS, "metric": metric}))
        out.append((f"Cargo 2000, 10 QIs, {metric}", cargo,
                    cargo_base | {"qi": tuple(cargo.columns[1:11]), "metric": metric}))
    return out


def run(table: object, fields: dict) -> tuple[dict, float, bool]:
    """The report, the CPU seconds of the run, and whether the written release passed its check."""
    start = time.process_time()
    result = kgen.anonymize(table, Config(**fields))
    seconds = time.process_time() - start
    with tempfile.TemporaryDirectory() as folder:
        kgen.write_release(result, Path(folder) / "release.csv")
    return result.report, seconds, bool(result.report["verified"]["passed"])


def levels(node: dict) -> str:
    return "(" + ",".join(str(x) for x in node.values()) + ")"


def recoding_table() -> list[str]:
    lines = ["| problem | recoding | node | suppressed rows | NCP | Loss | row groups (node: rows) | CPU s | check |",
             "|---|---|---|---:|---:|---:|---|---:|---|"]
    for name, table, fields in problems():
        run(table, fields)  # warm: the first run of a table codes its columns once (kept by the table)
        for local in (False, True):
            report, seconds, passed = run(table, fields | {"local_recoding": local})
            m = report["metrics"]
            groups = report["local_recoding"]["groups"] if local else []
            text = "; ".join(f"{levels(g['node'])}: {g['rows']}" for g in groups[1:]) or "-"
            lines.append(f"| {name} | {'local' if local else 'global'} | {levels(report['node'])} | "
                         f"{report['suppressed']} | {m['ncp']:.4f} | {m['loss']:.4f} | {text} | {seconds:.2f} | "
                         f"{'PASS' if passed else 'FAIL'} |")
    return lines


def microaggregation_table() -> list[str]:
    adult = read_csv(DATA / "adult" / "adult.csv")
    fields = {"qi": README_QIS, "k": 5, "suppression": 0.01, "hierarchy_dir": str(DATA / "adult"),
              "algorithm": "bestfirst"}
    lines = ["| release of age | local recoding | classes | SSE | SSE / SST | mean squared error | check |",
             "|---|---|---:|---:|---:|---:|---|"]
    for local in (False, True):
        for function in ("mean", "median"):
            report, _, passed = run(adult, fields | {"local_recoding": local, "microaggregate": {"age": function}})
            m = report["microaggregation"]["age"]
            lines.append(f"| class {function} | {'yes' if local else 'no'} | {m['classes']} | {m['sse']:.0f} | "
                         f"{m['relative_sse']:.4f} | {m['mean_squared_error']:.3f} | {'PASS' if passed else 'FAIL'} |")
    return lines


def main() -> None:
    print("\n".join(recoding_table()))
    print()
    print("\n".join(microaggregation_table()))


if __name__ == "__main__":
    main()
