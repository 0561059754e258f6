"""`kgen check`: verify any released table against a privacy model with the independent checker; with
`--report`, against every claim of the release's report (`kgen.check.claims`)."""

from __future__ import annotations

import argparse

from fitness import privacy
from kgen.check.claims import claims_of, verify_report, weaker_restatement
from kgen.check.kanonymity import CheckResult, ClassRule, check_k_anonymity
from kgen.check.rules import rules_from_models
from kgen.cli.console import read_input
from kgen.cli.options import (
    add_model_arguments,
    command_parser,
    hierarchy_options,
    number,
    parse_hierarchies,
    sensitive_option,
)
from kgen.report import provenance
from kgen.run.config import resolve_resources
from lattice.errors import InputError


def asked_models(args: argparse.Namespace, k: int | None = None) -> list[dict]:
    """The descriptions of the models the options ask for: built and validated as `kgen anonymize` builds them
    (`fitness.privacy`), then described; `k` stands in for a --k not given (the report's, with --report)."""
    values = {p.name: getattr(args, p.name) for p in privacy.parameters()}
    if values.get("k") is None:
        values["k"] = k
    for p in privacy.parameters():
        p.constraint.check(values[p.name])
    return [m.describe() for m in privacy.build_models(resolve_resources(values), args.sensitive)]


def asked_rules(args: argparse.Namespace) -> tuple[int, list[ClassRule]]:
    """k and the check rules of the models the options ask for: the checker reads their descriptions as it
    reads a report's (`kgen.check.rules`), with its own code."""
    return rules_from_models(asked_models(args), dropped=False)


def print_result(result: CheckResult, source: str, rules: bool, show: int) -> None:
    """The verdict of one model check, with the violating rows and the sensitive figures."""
    print(result.summary(source, rules))
    if result.violating_rows:
        shown = result.violating_rows[:show]
        more = len(result.violating_rows) - len(shown)
        print(f"  violating rows: {', '.join(map(str, shown))}" + (f" and {more} more" if more > 0 else ""))
    for note in result.notes:
        print(f"  {note}")
    for column, f in result.details.items():
        if f.get("classes"):
            print(f"  {column}: distinct l {f['min_distinct_l']}, entropy l {f['min_entropy_l']:.3f}, "
                  f"t equal {f['max_t_equal']:.4f}, t ordered {f['max_t_ordered']:.4f} (released classes)")
    if result.suppressed_rows > result.allowed:
        print(f"  {result.suppressed_rows} suppressed rows exceed the limit of {result.allowed}")


def restated(args: argparse.Namespace) -> bool:
    """Whether the command line states a model of its own beside --report."""
    defaults = {p.name: (None if p.required else p.default) for p in privacy.parameters()}
    return bool(args.qi or args.suppression is not None or args.sensitive
                or any(getattr(args, name) != value for name, value in defaults.items()))


def check_report(args: argparse.Namespace) -> int:
    """`kgen check --report R RELEASE`: every claim of the report, then any restatement no weaker than it."""
    report = provenance.read_report(args.report)
    claims = claims_of(report, args.report)
    asked = asked_models(args, claims.k) if restated(args) else []
    directions = {name: privacy.stricter_direction(name) for name in privacy.FAMILIES}
    weaker = weaker_restatement(claims, args.qi, args.suppression, asked, directions)
    if weaker:
        raise InputError(f"{weaker}: a restatement weaker than the report proves nothing about it (leave it out "
                         "to check the report's own claims)", file=args.report)
    table = read_input(args.input, args.separator, len(claims.qis), args.encoding)
    original = (read_input(args.original, args.separator, len(claims.qis), args.encoding), args.original) \
        if args.original else None
    verdict = verify_report(report, args.report, table, args.input, original, parse_hierarchies(args.hierarchy))
    passed = verdict.passed
    print(f"{'PASS' if passed else 'FAIL'}: {args.input} against its report {args.report}: "
          f"{verdict.checked} claims checked, {len(verdict.failures)} failed")
    print("\n".join(verdict.lines))
    if asked or args.qi or args.suppression is not None:
        k, rules = rules_from_models(claims.models + asked, claims.dropped)
        result = check_k_anonymity(table, list(dict.fromkeys(claims.qis + list(args.qi))), k,
                                   claims.suppression if args.suppression is None else args.suppression, rules,
                                   {"report": report})
        print_result(result, f"{args.input} (as restated)", bool(rules), args.show)
        passed = passed and result.passed
    return 0 if passed else 1


def run_check(args: argparse.Namespace) -> int:
    if args.report:
        return check_report(args)
    if args.original or args.hierarchy:
        raise InputError("--original and --hierarchy need --report (the claims they are checked against)")
    if not args.qi or args.k is None:
        raise InputError("give the model to check (--qi and --k), or the release's report (--report)")
    table = read_input(args.input, args.separator, len(args.qi), args.encoding)
    k, rules = asked_rules(args)
    result = check_k_anonymity(table, args.qi, k, args.suppression or 0.0, rules)
    print_result(result, args.input, bool(rules), args.show)
    return 0 if result.passed else 1


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen check` and its options."""
    check = command_parser(commands, "check", "verify that a released CSV satisfies the privacy model")
    check.add_argument("input", help="the released CSV file")
    add_model_arguments(check, required=False)
    check.add_argument("--show", type=number(int, "show"), default=20, help="how many violating rows to list")
    sensitive_option(check, "sensitive columns to check l / t on")
    check.add_argument("--report", help="the release's kgen report: every claim it makes is checked (QIs, "
                       "identifiers, models, suppression limit, node, checksums); --qi/--k/... may only add to it")
    check.add_argument("--original", metavar="FILE", help="with --report: the input the release was made from "
                       "(its SHA-256 checked; builder hierarchies rebuilt on it for the node check)")
    hierarchy_options(check, folder=False)
    check.set_defaults(run=run_check)
