"""`kgen apply`: a saved report's node applied to new data, published as `kgen anonymize` publishes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kgen.cli.console import read_input, warn
from kgen.cli.options import (
    add_config_argument,
    add_output_arguments,
    allow_k1_option,
    command_parser,
    encoding_option,
    hierarchy_items,
    keep_options,
    number,
    parse_hierarchies,
    public_report_option,
    quiet_option,
    separator_option,
)
from kgen.io.files import check_target, same_file
from kgen.report import provenance
from kgen.report import summary as summarizing
from kgen.report.publish import write_release
from kgen.report.summary import refinement_lines
from kgen.run import apply as applying
from kgen.status import ExitCode
from lattice.errors import InputError


def metric_lines(r: dict) -> list[str]:
    """The objective, every metric and the privacy figures of a report (anonymize or apply)."""
    lines = []
    m = r.get("metrics")
    if m:
        lines.append(f"  objective {r.get('metric', 'log')} = {r['loss']:.4f}; NCP {m['ncp']:.4f}  Loss {m['loss']:.4f}"
                     f"  entropy {m['entropy']:.4f}  DM {m['dm']:.0f}  AECS {m['aecs']:.1f}")
        lines += summarizing.arx_score_lines(r.get("metric", "log"), m)
    for f in r.get("privacy", []):
        if f.get("min_distinct_l") is None:
            continue
        extra = (f"  recursive r1/tail(l={f['recursive_l']}) {f['max_recursive_ratio']:.3f}"
                 if "recursive_l" in f else "")
        lines.append(f"  {f['sensitive']}: distinct l {f['min_distinct_l']}  entropy l {f['min_entropy_l']:.3f}"
                     f"{summarizing.grassberger_words(f)}  "
                     f"t equal {f['max_t_equal']:.4f}  t ordered {f['max_t_ordered']:.4f}{extra}")
    return lines

def report_inputs(saved: dict) -> list[str]:
    """The files a saved report names as the inputs of its run (data and hierarchy files): an apply must
    never write over them."""
    prov = saved.get("provenance") or {}
    named = [(prov.get("input") or {}).get("path")]
    named += [((h or {}).get("file") or {}).get("path") for h in (prov.get("hierarchies") or {}).values()]
    return [str(p) for p in named if isinstance(p, str) and Path(p).is_file()]


def run_apply(args: argparse.Namespace) -> int:
    output = Path(args.output)
    report = Path(args.apply_report) if args.apply_report else output.with_suffix(".json")
    overrides = parse_hierarchies(args.hierarchy)
    protected = [args.input, args.report] + [s for s in overrides.values() if Path(s).is_file()]
    if same_file(output, report):
        raise InputError("is given for both the output and the apply report: give a different --apply-report",
                         file=str(output))
    saved = applying.load_report(args.report)
    applying.validate_report(saved, args.report, args.allow_k1)  # before reading the data or touching outputs
    protected += report_inputs(saved) + ([args.verify_release] if args.verify_release else [])
    protected += [args.config] if getattr(args, "config", None) else []  # the --config file is an input too
    for target in (output, report) + ((Path(args.public_report),) if args.public_report else ()):
        check_target(target, protected)
    if args.verify_release:
        verified = provenance.verify_against_report(provenance.read_report(args.report), args.verify_release,
                                                    exit_code=2)
        if not args.quiet:
            print("\n".join(verified))
    table = read_input(args.input, args.separator, len(saved["quasi_identifiers"]), args.encoding)
    told: list[str] = []
    applied = applying.apply(table, saved, overrides=overrides, suppression=args.suppression,
                             drop_suppressed=args.drop_suppressed, allow_k1=args.allow_k1, strict=args.strict,
                             keep=args.keep, keep_unnamed=args.keep_unnamed, source=args.report,
                             invocation=args.invocation, warn=told.append,
                             allow_changed_hierarchies=args.allow_changed_hierarchies)
    table, r = applied.release, applied.report
    for message in told + [m for m in r.get("warnings", []) if m not in told]:  # the run's, then the apply's
        warn(message)
    if not applied.holds:  # nothing is written: a release beyond the limit is not a release of this model
        print(f"kgen: error: {args.input}: the privacy model of {args.report} does not hold within the suppression "
              f"limit: {r['suppressed']} rows are in classes that break it, {r['max_suppressed_rows']} may be "
              "suppressed; nothing was written (raise --suppression, or anonymize this data anew)", file=sys.stderr)
        return ExitCode.NO_SOLUTION
    write_release(applied, output, report, protected, escape_formulas=args.escape_formulas, strict=args.strict,
                  warn=warn, public=args.public_report)
    if not args.quiet:
        print(f"applied node {r['node']} of {args.report} to {args.input}: {r['rows']} rows, "
              f"{r['suppressed']} suppressed (limit {r['max_suppressed_rows']}), {r['classes']} classes, "
              f"smallest {r['smallest_class']}")
        print("\n".join(metric_lines(r) + summarizing.control_lines(r) + refinement_lines(r)))
        heuristic = (r.get("applied_search") or {}).get("heuristic")
        if heuristic:  # the saved node came from a heuristic (ARX's practical monotonicity): not proved optimal
            print(f"  heuristic: {heuristic} (the search of {args.report})")
        print(f"  wrote {output} and {report}" + (f" and {args.public_report} (public report)"
                                                    if args.public_report else ""))
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen apply` and its options."""
    apply = command_parser(commands, "apply", "apply the node of a saved report to new data")
    apply.add_argument("input", help="the new CSV file")
    apply.add_argument("--report", required=True, help="the JSON report of an earlier kgen anonymize")
    apply.add_argument("--output", required=True, help="anonymized CSV")
    apply.add_argument("--apply-report", help="JSON report of this run (default: OUTPUT with .json)")
    public_report_option(apply)
    apply.add_argument("--hierarchy", type=hierarchy_items, action="extend", default=[], metavar="COL=SPEC",
                       help="override a QI's hierarchy saved in the report (repeated and/or comma-separated)")
    apply.add_argument("--suppression", type=number(float, "suppression"),
                       help="suppression limit (default: the report's)")
    separator_option(apply)
    encoding_option(apply)
    allow_k1_option(apply, "apply a report whose k is 1 (it protects no one; refused without this)")
    keep_options(apply)
    apply.add_argument("--allow-changed-hierarchies", action="store_true",
                       help="apply even when a hierarchy file's SHA-256 differs from the report's record "
                            "(refused without this; named in the warnings)")
    apply.add_argument("--drop-suppressed", action="store_true", help="leave suppressed rows out")
    apply.add_argument("--verify-release", metavar="FILE",
                       help="refuse to apply --report unless FILE (its release) matches the report's SHA-256")
    add_output_arguments(apply)
    quiet_option(apply)
    add_config_argument(apply)
    apply.set_defaults(run=run_apply)
