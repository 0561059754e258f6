"""`kgen hierarchy`: see a QI's hierarchy before a run. It builds the hierarchy of one column by the run's own
path (`kgen.run.prepare.preview_levels`), prints each level with its number of groups and the rows in them (a
preview), and writes it as an ARX CSV file (one row per value: the value, then its label at each level)."""

from __future__ import annotations

import argparse
import csv
import io

from kgen.cli.console import read_input
from kgen.cli.options import add_hierarchy_preview_arguments, command_parser
from kgen.io.files import check_target, write_atomic
from kgen.report.summary import WIDTH, fit
from kgen.run.prepare import LevelPreview, preview_levels
from lattice.hierarchy import Hierarchy


def level_lines(levels: list[LevelPreview]) -> list[str]:
    """Each level: how many groups, the smallest group's rows, and its largest groups by rows (as many as fit
    in a line, then how many more)."""
    lines = []
    for entry in levels:
        counts = {label: n for label, n in entry.counts.items() if n}
        biggest = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        head = (f"  level {entry.level}: {len(counts)} group{'s' if len(counts) != 1 else ''}, smallest "
                f"{min(counts.values(), default=0)} rows: ")
        lines.append(fit(head, [f"{label} ({n})" for label, n in biggest], WIDTH))
    return lines


def arx_csv(hierarchy: Hierarchy) -> str:
    """The hierarchy as an ARX CSV file (`;`-separated, one row per value), as `--hierarchy COL=FILE` reads it."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";", lineterminator="\n")
    for path in hierarchy.paths.values():
        writer.writerow(path)
    return out.getvalue()


def run_hierarchy(args: argparse.Namespace) -> int:
    if args.output:
        check_target(args.output, [args.data])
    table = read_input(args.data, args.separator, 1)
    prepared, levels = preview_levels(table, args.column, args.builder, args.missing, args.hierarchy_dir)
    print(f"{args.column}: {prepared.source}, height {prepared.hierarchy.height}, {table.n} rows")
    print("\n".join(level_lines(levels)))
    if args.output:
        write_atomic(args.output, arx_csv(prepared.hierarchy), [args.data])
        print(f"  wrote {args.output} (ARX format: --hierarchy {args.column}={args.output})")
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen hierarchy` and its options."""
    parser = command_parser(commands, "hierarchy", "preview a column's hierarchy and write it as an ARX CSV")
    add_hierarchy_preview_arguments(parser)
    parser.set_defaults(run=run_hierarchy)
