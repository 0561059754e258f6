"""Property (hypothesis): every table that `kgen anonymize` writes passes `kgen check` with the same k and t.

Random small tables go through the real command line and real files: numbers (decimal rounding or intervals),
codes (masking), categories (flat), missing tokens, stray blanks, separators and quotes inside values, either
separator, with and without --drop-suppressed.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgen.cli.main import main
from kgen.io.table import read_csv

MISSING = ["", "?", "NA"]
KINDS = {
    "number": (st.integers(min_value=0, max_value=250).map(str), None),
    "interval": (st.integers(min_value=0, max_value=99).map(str), "intervals:5,10"),
    "code": (st.sampled_from(["NL805", "NL806", "NL81", "BE1", "B*", "X"]), "mask"),
    "category": (st.sampled_from(["red", "blue", " blue", "green;dark", 'say "hi"', "a,b", "*"]), None),
}


@st.composite
def tables(draw: st.DrawFn) -> dict:
    n = draw(st.integers(min_value=1, max_value=30))
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4))
    columns: dict[str, list[str]] = {"id": [f"p{i}" for i in range(n)]}
    hierarchies = []
    for i, kind in enumerate(kinds):
        values, spec = KINDS[kind]
        with_missing = draw(st.booleans())
        cell = st.one_of(values, st.sampled_from(MISSING)) if with_missing else values
        columns[f"q{i}"] = draw(st.lists(cell, min_size=n, max_size=n))
        if spec:
            hierarchies.append(f"q{i}={spec}")
    columns["note"] = draw(st.lists(st.sampled_from(["x", "y, z", "", 'q"t']), min_size=n, max_size=n))
    return {
        "columns": columns,
        "qis": [f"q{i}" for i in range(len(kinds))],
        "hierarchies": hierarchies,
        "k": draw(st.integers(min_value=1, max_value=n)),
        "t": draw(st.sampled_from([0.0, 0.05, 0.2, 0.5, 1.0])),
        "separator": draw(st.sampled_from([",", ";"])),
        "drop": draw(st.booleans()),
    }


def write_csv(path: Path, columns: dict[str, list[str]], separator: str) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=separator, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*columns.values()))
    path.write_text(buffer.getvalue(), encoding="utf-8")


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_every_table_anonymize_writes_passes_check(case: dict) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, output = Path(folder) / "in.csv", Path(folder) / "out.csv"
        write_csv(source, case["columns"], case["separator"])
        qi, k, t = ",".join(case["qis"]), str(case["k"]), str(case["t"])
        arguments = ["anonymize",
                     "--keep-unnamed", str(source), "--qi", qi, "--identifier", "id", "--k", k,
                     "--allow-k1", "--suppression", t,
                     "--output", str(output), "--quiet"]
        for spec in case["hierarchies"]:
            arguments += ["--hierarchy", spec]
        if case["drop"]:
            arguments.append("--drop-suppressed")
        assert main(arguments) == 0
        assert main(["check", str(output), "--qi", qi, "--k", k, "--suppression", t]) == 0

        report = json.loads(output.with_suffix(".json").read_text())
        released = read_csv(output)
        n = len(case["columns"]["id"])
        assert released.columns == tuple(case["columns"])
        assert released.n == (n - report["suppressed"] if case["drop"] else n)
        assert released.values["id"] == ["*"] * released.n
        assert report["suppressed"] <= int(case["t"] * n + 1e-9)
