"""`kgen report`: the self-contained HTML page of a saved report."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgen.cli.options import (
    command_parser,
)
from kgen.report import provenance
from kgen.report.html import write
from lattice.errors import InputError


def run_command(report_path: str, release: str | None, output: str | None) -> Path:
    """`kgen report`: the page for a saved report; the release defaults to the one its provenance names,
    when that file exists."""

    report = provenance.read_report(report_path)
    if not isinstance(report.get("quasi_identifiers"), list) or "models" not in report:
        raise InputError("is not a kgen report (anonymize, apply or mondrian: no quasi_identifiers / models)",
                         file=report_path)
    if release is None:
        named = (report.get("provenance") or {}).get("release", {}).get("path")
        candidates = [Path(named), Path(report_path).parent / Path(named).name] if named else []
        release = next((str(c) for c in candidates if c.is_file()), None)  # a folder of parts is not measured
    target = Path(output) if output else Path(report_path).with_suffix(".html")
    prov = report.get("provenance") or {}
    inputs = [(prov.get("input") or {}).get("path")] + [(h.get("file") or {}).get("path")
                                                        for h in (prov.get("hierarchies") or {}).values()]
    protected = [report_path] + ([release] if release else []) + [p for p in inputs if p]
    write(report, target, release, protected=protected)
    return target


def run_report(args: argparse.Namespace) -> int:
    """`kgen report`: the HTML page of a saved report (kgen.report.html)."""
    print(f"wrote {run_command(args.input, args.release, args.output)}")
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen report` and its options."""
    page = command_parser(commands, "report", "a self-contained HTML page for a kgen anonymize, apply or "
                          "mondrian report")
    page.add_argument("input", metavar="RESULT.json", help="the JSON report of kgen anonymize, apply or mondrian")
    page.add_argument("--release", help="the release CSV: checked against the report's SHA-256 and measured "
                                        "(default: the file the report names, if present)")
    page.add_argument("-o", "--output", help="HTML file (default: RESULT.html)")
    page.set_defaults(run=run_report)
