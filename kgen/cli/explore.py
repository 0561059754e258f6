"""`kgen explore`: the explorer page (`kgen.report.explorer`) of a saved frontier (`kgen frontier --output`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgen.cli.options import command_parser
from kgen.report import explorer, provenance
from lattice.errors import InputError


def run_explore(args: argparse.Namespace) -> int:
    result = provenance.read_report(args.input)
    if result.get("kind") != "kgen frontier" or not isinstance(result.get("points"), list):
        raise InputError("is not a kgen frontier (kgen frontier --output writes one)", file=args.input)
    target = Path(args.output) if args.output else Path(args.input).with_suffix(".html")
    explorer.write(result, target, protected=[args.input])
    print(f"wrote {target}")
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen explore` and its options."""
    page = command_parser(commands, "explore", "the interactive page of a frontier: choose a release by its "
                                               "risk and loss")
    page.add_argument("input", metavar="FRONTIER.json", help="the JSON of kgen frontier")
    page.add_argument("-o", "--output", help="HTML file (default: FRONTIER.html)")
    page.set_defaults(run=run_explore)
