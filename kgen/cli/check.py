"""`kgen check`: verify any released table against a privacy model with the independent checker."""

from __future__ import annotations

import argparse

from fitness import privacy
from kgen.check.kanonymity import ClassRule, check_k_anonymity
from kgen.check.rules import rules_from_models
from kgen.cli.console import read_input
from kgen.cli.options import (
    add_model_arguments,
    columns,
    command_parser,
    number,
)
from kgen.report import provenance


def asked_rules(args: argparse.Namespace) -> tuple[int, list[ClassRule]]:
    """k and the check rules of the models the options ask for: the models are built and validated as
    `kgen anonymize` builds them (`fitness.privacy`), then described, and the checker reads the descriptions
    as it reads a report's (`kgen.check.rules`), with its own code."""
    values = {p.name: getattr(args, p.name) for p in privacy.parameters()}
    for p in privacy.parameters():
        p.constraint.check(values[p.name])
    models = privacy.build_models(values, args.sensitive)
    return rules_from_models([m.describe() for m in models], dropped=False)


def run_check(args: argparse.Namespace) -> int:
    if args.report:
        print("\n".join(provenance.verify_against_report(provenance.read_report(args.report), args.input)))
    table = read_input(args.input, args.separator, len(args.qi))
    k, rules = asked_rules(args)
    result = check_k_anonymity(table, args.qi, k, args.suppression, rules)
    print(result.summary(args.input, bool(rules)))
    if result.violating_rows:
        shown = result.violating_rows[: args.show]
        more = len(result.violating_rows) - len(shown)
        print(f"  violating rows: {', '.join(map(str, shown))}" + (f" and {more} more" if more > 0 else ""))
    for column, f in result.details.items():
        if f.get("classes"):
            print(f"  {column}: distinct l {f['min_distinct_l']}, entropy l {f['min_entropy_l']:.3f}, "
                  f"t equal {f['max_t_equal']:.4f}, t ordered {f['max_t_ordered']:.4f} (released classes)")
    if result.suppressed_rows > result.allowed:
        print(f"  {result.suppressed_rows} suppressed rows exceed the limit of {result.allowed}")
    return 0 if result.passed else 1


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen check` and its options."""
    check = command_parser(commands, "check", "verify that a released CSV satisfies the privacy model")
    check.add_argument("input", help="the released CSV file")
    add_model_arguments(check)
    check.add_argument("--show", type=number(int, "show"), default=20, help="how many violating rows to list")
    check.add_argument("--sensitive", type=columns, action="extend", default=[],
                       help="sensitive columns to check l / t on: comma-separated and/or repeated")
    check.add_argument("--report", help="the release's kgen report: INPUT must match its SHA-256 (exit 1 if not)")
    check.set_defaults(run=run_check)
