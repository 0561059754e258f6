"""Measure released CSV files with pycanon, in pycanon's own virtual environment (never kgen's).

    $KGEN_PYCANON_PYTHON tests/pycanon_check.py FILE [FILE ...] --qi a,b,c [--sensitive s] [--exclude-suppressed]

prints one JSON object per file, one per line (the files share one interpreter start): `rows` (after
exclusion), `k` (pycanon's k-anonymity), and with `--sensitive`: `l_distinct`, `l_entropy` (pycanon's
integer entropy l) and `t` (pycanon's t-closeness: equal distance for text columns, ordered distance for
the `--numeric` ones); `--measures` picks a subset. Values are read as strings exactly as written (no NaN
conversion), so pycanon groups the same strings kgen released. The risk measures `max_rir` (pycanon's highest
re-identification risk, 1/smallest class), `average_rir` (its mean of 1/|E| over classes, not records) and
`n_ec` (number of classes) are measured only when named in `--measures`. `--exclude-suppressed` drops the rows whose
every QI is `*` (kgen's suppressed records) before measuring. This file imports nothing from kgen: it runs
under a different Python.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys

SUPPRESSED = "*"
RISK_MEASURES = ("max_rir", "average_rir", "n_ec")


def sniff_separator(path: str) -> str:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        header = handle.readline()
    return max((",", ";"), key=lambda sep: (len(next(csv.reader([header], delimiter=sep), [])), sep == ","))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    parser.add_argument("--sensitive", default="", help="sensitive attributes, comma-separated")
    parser.add_argument("--separator", help="`,` or `;` (default: detected from the header)")
    parser.add_argument("--numeric", default="", help="sensitive attributes to read as numbers (ordered t)")
    parser.add_argument("--measures", default="",
                        help="comma-separated subset of k,l_distinct,l_entropy,t,max_rir,average_rir,n_ec "
                             "(default: k, and l_distinct,l_entropy,t when --sensitive is given)")
    parser.add_argument("--exclude-suppressed", action="store_true", help="drop rows with `*` in every QI")
    args = parser.parse_args(argv)
    qis = [c for c in args.qi.split(",") if c]
    sensitive = [c for c in args.sensitive.split(",") if c]
    measures = [m for m in args.measures.split(",") if m] or (
        ["k", "l_distinct", "l_entropy", "t"] if sensitive else ["k"])
    unknown = set(measures) - {"k", "l_distinct", "l_entropy", "t"} - set(RISK_MEASURES)
    if unknown or (sensitive == [] and set(measures) - {"k"} - set(RISK_MEASURES)):
        parser.error(f"bad --measures {args.measures!r} (l and t need --sensitive)")
    for path in args.files:
        json.dump(measure(path, args, qis, sensitive, measures), sys.stdout)
        sys.stdout.write("\n")
    return 0


def measure(path: str, args: argparse.Namespace, qis: list[str], sensitive: list[str],
            measures: list[str]) -> dict[str, object]:
    import pandas as pd
    from pycanon import anonymity

    separator = args.separator or sniff_separator(path)
    frame = pd.read_csv(path, sep=separator, dtype=str, keep_default_na=False, na_filter=False,
                        encoding="utf-8-sig")
    if args.exclude_suppressed:
        frame = frame[~(frame[qis] == SUPPRESSED).all(axis=1)].reset_index(drop=True)
    for column in (c for c in args.numeric.split(",") if c):
        frame[column] = pd.to_numeric(frame[column])
    out: dict[str, object] = {"file": path, "rows": int(len(frame)), "pycanon": _version()}
    if len(frame):
        if "k" in measures:
            out["k"] = int(anonymity.k_anonymity(frame, qis))
        if "l_distinct" in measures:
            out["l_distinct"] = int(anonymity.l_diversity(frame, qis, sensitive))
        if "l_entropy" in measures:
            out["l_entropy"] = int(anonymity.entropy_l_diversity(frame, qis, sensitive))
        if "t" in measures:
            out["t"] = float(anonymity.t_closeness(frame, qis, sensitive))
        if set(measures) & set(RISK_MEASURES):
            from pycanon import metrics

            if "max_rir" in measures:
                out["max_rir"] = float(metrics.max_rir(frame, qis))
            if "average_rir" in measures:
                out["average_rir"] = float(metrics.average_rir(frame, qis))
            if "n_ec" in measures:
                out["n_ec"] = int(metrics.sizes_ec(frame, qis)["n_ec"])
    return out


def _version() -> str:
    from importlib.metadata import version

    return version("pycanon")


if __name__ == "__main__":
    sys.exit(main())
