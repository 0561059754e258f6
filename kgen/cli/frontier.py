"""`kgen frontier`: the risk-utility frontier of a table (`kgen.run.frontier`), published as a JSON and CSV
pair (`kgen.report.publish.write_frontier`), with the explorer page on request (`--html`)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from kgen.cli.anonymize import protected_inputs
from kgen.cli.console import read_input
from kgen.cli.options import (
    add_config_argument,
    add_limit_arguments,
    add_model_arguments,
    add_problem_arguments,
    command_parser,
    config_from_args,
    device_option,
    finite_number,
    population_option,
    quiet_option,
)
from kgen.io.files import check_target
from kgen.report import explorer
from kgen.report.explorer import AXIS
from kgen.report.publish import write_frontier
from kgen.run.frontier import RISKS, frontier


def run_frontier(args: argparse.Namespace) -> int:
    output = Path(args.output)
    table = Path(args.csv) if args.csv else output.with_suffix(".csv")
    protected = protected_inputs(args) + ([args.population] if args.population else [])
    config = config_from_args(args, k=args.k_min)
    if args.k_map is None:  # --population is journalist risk's population here, not k-map's (one option, two uses)
        config = dataclasses.replace(config, population=None)
    config.check()  # option errors before touching any file
    for target in (output, table) + ((Path(args.html),) if args.html else ()):
        check_target(target, protected)
    data = read_input(args.input, args.separator, len(config.qi))
    population = None if args.population is None else read_input(args.population, args.separator, len(config.qi))
    result = frontier(data, config, args.risk, args.k_min, args.k_max, population=population,
                      invocation=args.invocation, input_path=args.input)
    write_frontier(result, output, table, protected)
    if args.html:
        explorer.write(result, args.html, protected + [str(output), str(table)])
    if not args.quiet:
        how = result["frontier"]
        count = len(result["points"])
        print(f"kgen: frontier of {count} point{'s' if count != 1 else ''} over (loss, {AXIS[args.risk]}) by "
              f"{how['algorithm']}"
              f" ({'exact' if how.get('complete') else 'not proved complete'}, {how['seconds']:.1f} s): {output}, "
              f"{table}" + (f", {args.html}" if args.html else ""))
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen frontier` and its options (the problem's as `kgen anonymize` has them)."""
    parser = command_parser(commands, "frontier", "the risk-utility frontier: the releases no other beats on both "
                                                  "information loss and re-identification risk")
    parser.add_argument("input", help="the CSV file")
    add_model_arguments(parser, k=False)
    add_problem_arguments(parser)
    parser.add_argument("--risk", choices=RISKS, default="highest",
                        help="highest prosecutor risk (1/smallest class; exact per k by the certified search), or "
                             "by NSGA-II (exact on a lattice of at most 20,000 nodes): average prosecutor risk, "
                             "records at risk (prosecutor risk above 0.2), journalist (highest; needs --population)")
    population_option(parser, "raw values, generalized like INPUT at each node; for --risk journalist")
    parser.add_argument("--k-min", type=finite_number(int, "k-min", 1), default=2,
                        help="the least k (the hard model; the first k of the range)")
    parser.add_argument("--k-max", type=finite_number(int, "k-max", 1), default=50,
                        help="the largest k of the range (highest risk)")
    add_limit_arguments(parser)
    device_option(parser)
    parser.add_argument("--output", required=True, help="the frontier's JSON (its points; docs/frontier.md)")
    parser.add_argument("--csv", help="the frontier's CSV, one row per point (default: OUTPUT with .csv)")
    parser.add_argument("--html", metavar="PATH", help="also write the explorer page (as kgen explore does)")
    quiet_option(parser)
    add_config_argument(parser)
    parser.set_defaults(run=run_frontier)
