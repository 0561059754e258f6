"""The `kgen` command line: anonymize, check, demo.

User errors end in one line on stderr and a non-zero exit (see the README's table); never a traceback.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from fitness.objective import OBJECTIVES
from kgen import api
from kgen import apply as applying
from kgen.check import SensitiveRule, check_k_anonymity
from kgen.config import Config
from kgen.csvio import check_target, format_csv, same_file, write_atomic_many
from kgen.hierarchies import find_in_dir
from kgen.mondrian import command as mondrian_command
from kgen.parallel import BACKENDS
from kgen.progress import ProgressBar
from kgen.table import DEFAULT_MISSING, Table, read_csv
from kgen.verify import rules_from_models, verify_file, verify_release_file
from lattice.errors import InputError
from lattice.search.base import SearchResult

EXIT_INTERRUPTED = 130
DATA = Path(__file__).parent / "data"
DEMO_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


class ArgumentError(InputError):
    exit_code = 2


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other user error
        raise ArgumentError(f"{message} (see 'kgen {self.prog.split()[-1]} --help')")


def columns(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def parse_hierarchies(items: Sequence[str]) -> dict[str, str]:
    specs = {}
    for item in items:
        column, sep, spec = item.partition("=")
        if not sep or not column.strip() or not spec.strip():
            raise ArgumentError(f"--hierarchy expects COLUMN=FILE or COLUMN=BUILDER, got {item!r}")
        specs[column.strip()] = spec.strip()
    return specs


def number(kind: type, name: str):
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            noun = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"{name} must be a {noun}, got {text!r}") from None
    return parse


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qi", required=True, type=columns, help="quasi-identifiers, comma-separated, in order")
    parser.add_argument("--k", required=True, type=number(int, "k"), help="k of k-anonymity")
    parser.add_argument("--suppression", type=number(float, "suppression"), default=0.0,
                        help="fraction of rows that may be suppressed (0.005 = 0.5%%)")


def add_sensitive_arguments(parser: argparse.ArgumentParser) -> None:
    """l-diversity and t-closeness on the --sensitive columns."""
    parser.add_argument("--l", type=number(float, "l"), help="l of l-diversity on every sensitive column")
    parser.add_argument("--l-variant", choices=["distinct", "entropy", "recursive"], default="distinct",
                        help="distinct (default), entropy, or recursive (c, l)-diversity (needs --c)")
    parser.add_argument("--c", type=number(float, "c"), help="c of recursive (c, l)-diversity")
    parser.add_argument("--t-closeness", type=number(float, "t-closeness"), metavar="T",
                        help="t of t-closeness on every sensitive column (EMD to the whole table)")
    parser.add_argument("--t-distance", choices=["equal", "ordered"], default="equal",
                        help="equal (categories, default) or ordered (numbers, else label order)")


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """The GA's own options (`kgen` only); given ones go to Config.options."""
    parser.add_argument("--population", type=number(int, "population"),
                        help="kgen: individuals per generation (paper preset 100, kgen+ 40)")
    parser.add_argument("--preset", choices=["paper", "kgen+"],
                        help="kgen: the paper's algorithm (default) or kgen+ (tagging, descent, seeding)")
    parser.add_argument("--selection", choices=["tournament", "roulette"],
                        help="kgen: tournament with the age penalty (default) or the paper's roulette")


def search_options(args: argparse.Namespace) -> dict[str, object]:
    return {key: value for key in ("population", "preset", "selection")
            if (value := getattr(args, key, None)) is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="kgen", description="k-anonymity by generalization and suppression (KGen).")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    anon = commands.add_parser("anonymize", help="anonymize a CSV file")
    anon.add_argument("input")
    add_model_arguments(anon)
    anon.add_argument("--identifier", type=columns, default=[], help="identifier columns (replaced by *)")
    anon.add_argument("--sensitive", type=columns, default=[], help="sensitive columns (kept)")
    add_sensitive_arguments(anon)
    anon.add_argument("--metric", choices=list(OBJECTIVES), default="log",
                      help="the information loss to minimize (default log; see docs/metrics.md)")
    anon.add_argument("--hierarchy", action="append", default=[], metavar="COL=SPEC",
                      help="ARX CSV file or builder: decimal, intervals:W1,W2, mask, date[:FMT], flat")
    anon.add_argument("--hierarchy-dir", help="folder with *hierarchy_<COL>.csv files")
    anon.add_argument("--missing", type=lambda s: s.split(","), default=list(DEFAULT_MISSING),
                      help="missing-value tokens, comma-separated (default: empty, ?, NA)")
    anon.add_argument("--algorithm", default=Config.algorithm,
                      help="kgen (default), ola, exhaustive, bestfirst or random")
    add_search_arguments(anon)
    anon.add_argument("--max-evaluations", type=number(int, "max-evaluations"))
    anon.add_argument("--time-limit", type=number(float, "time-limit"), help="seconds")
    anon.add_argument("--seed", type=number(int, "seed"), default=0)
    anon.add_argument("--kernel", choices=["fast", "bitset"], default="fast")
    anon.add_argument("--no-prune", action="store_true", help="search the whole lattice")
    anon.add_argument("--drop-suppressed", action="store_true", help="leave suppressed rows out")
    anon.add_argument("--jobs", type=number(int, "jobs"), default=1,
                      help="parallel workers evaluating nodes (default 1: serial; -1: every core)")
    anon.add_argument("--backend", choices=list(BACKENDS), default="loky",
                      help="loky (local processes), threading, or dask (a Dask cluster)")
    anon.add_argument("--scheduler", metavar="ADDRESS",
                      help="a running Dask scheduler, e.g. tcp://host:8786 (with --backend dask; without it, "
                           "dask starts a local cluster of --jobs workers)")
    anon.add_argument("--batch-size", type=number(int, "batch-size"),
                      help="nodes per parallel task (default: about two tasks per worker per population)")
    anon.add_argument("--output", help="anonymized CSV (default: INPUT_anonymized.csv)")
    anon.add_argument("--report", help="JSON report (default: OUTPUT with .json)")
    anon.add_argument("--quiet", action="store_true")

    check = commands.add_parser("check", help="verify that a released CSV satisfies the privacy model")
    check.add_argument("input")
    add_model_arguments(check)
    check.add_argument("--show", type=number(int, "show"), default=20, help="how many violating rows to list")
    check.add_argument("--sensitive", type=columns, default=[], help="sensitive columns to check l / t on")
    add_sensitive_arguments(check)

    apply = commands.add_parser("apply", help="apply the node of a saved report to new data")
    apply.add_argument("input")
    apply.add_argument("--report", required=True, help="the JSON report of an earlier kgen anonymize")
    apply.add_argument("--output", required=True, help="anonymized CSV")
    apply.add_argument("--apply-report", help="JSON report of this run (default: OUTPUT with .json)")
    apply.add_argument("--hierarchy", action="append", default=[], metavar="COL=SPEC",
                       help="override a QI's hierarchy saved in the report")
    apply.add_argument("--suppression", type=number(float, "suppression"),
                       help="suppression limit (default: the report's)")
    apply.add_argument("--drop-suppressed", action="store_true", help="leave suppressed rows out")
    apply.add_argument("--quiet", action="store_true")

    demo = commands.add_parser("demo", help="anonymize the embedded Adult dataset and summarize")
    demo.add_argument("--k", type=number(int, "k"), default=5)
    demo.add_argument("--suppression", type=number(float, "suppression"), default=0.01)
    demo.add_argument("--algorithm", default=Config.algorithm)
    demo.add_argument("--seed", type=number(int, "seed"), default=0)
    demo.add_argument("--output-dir", default="kgen-demo")
    mondrian_command.add_parsers(commands)  # kgen mondrian / mondrian-check (docs/mondrian.md)
    return parser


def default_output(input_path: str) -> Path:
    path = Path(input_path)
    if not path.name or path.is_dir():  # "." or a folder: there is no file name to derive from
        raise InputError("is a folder, not a file", file=input_path)
    return path.with_name(f"{path.stem}_anonymized.csv")


def write_outputs(result: api.Result, output: Path, report: Path, inputs: Sequence[str], config: Config) -> None:
    """Both files or neither: each is written to a temporary file first, the written release is checked by
    the independent checker (`kgen.verify`), and only then are both renamed into place."""
    table = result.release
    result.report["verified"] = {"checker": "kgen.check, on the written file", "passed": True}
    write_atomic_many([(output, format_csv(table.columns, table.rows(), table.separator)),
                       (report, json.dumps(result.report, indent=2) + "\n")], protected=inputs,
                      check=lambda paths: verify_release_file(paths[0], config))


def protected_inputs(args: argparse.Namespace) -> list[str]:
    """Files an output must never overwrite: the input and every hierarchy file the run reads."""
    files = [args.input] + [s for s in parse_hierarchies(args.hierarchy).values() if Path(s).is_file()]
    if args.hierarchy_dir:
        files += [str(p) for c in args.qi if (p := find_in_dir(args.hierarchy_dir, c)) is not None]
    return files


def run_anonymize(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else default_output(args.input)
    report = Path(args.report) if args.report else output.with_suffix(".json")
    protected = protected_inputs(args)
    if same_file(output, report):
        raise InputError("is given for both the output and the report: give different --output and --report",
                         file=str(output))
    for target in (output, report):  # refuse before the search, not after it
        check_target(target, protected)
    config = Config(
        qi=args.qi, k=args.k, suppression=args.suppression, identifiers=args.identifier,
        sensitive=args.sensitive, hierarchies=parse_hierarchies(args.hierarchy), hierarchy_dir=args.hierarchy_dir,
        missing=tuple(args.missing), algorithm=args.algorithm, options=search_options(args), seed=args.seed,
        max_evaluations=args.max_evaluations, time_limit=args.time_limit, kernel=args.kernel,
        prune=not args.no_prune, drop_suppressed=args.drop_suppressed,
        l=args.l, l_variant=args.l_variant, c=args.c, t_closeness=args.t_closeness, t_distance=args.t_distance,
        metric=args.metric,
        jobs=args.jobs, backend=args.backend, scheduler=args.scheduler, batch_size=args.batch_size,
    )
    result = anonymize_with_progress(read_csv(args.input), config, quiet=args.quiet)
    write_outputs(result, output, report, protected, config)
    if not args.quiet:
        print(summary(result, output, report))
    return 0


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a search: carries the search's best-so-far result; nothing is written."""

    def __init__(self, prepared: api.Prepared, result: SearchResult) -> None:
        super().__init__("interrupted")
        self.prepared, self.result = prepared, result


def anonymize_with_progress(table: Table, config: Config, quiet: bool = False) -> api.Result:
    """Prepare, search with a progress bar, and release. Raises Interrupted when Ctrl-C stopped the search."""
    prepared = api.prepare(table, config)
    total = config.max_evaluations or prepared.box.size
    bar = ProgressBar(total, enabled_stream(quiet))
    try:
        result = api.search(prepared, bar)
    finally:
        bar.close()
    if result.stopped == "interrupted":
        raise Interrupted(prepared, result)
    return api.finish(prepared, result)


def interrupted_summary(stop: Interrupted) -> str:
    """What an interrupted search found: the best node so far and its metrics, and that nothing was written."""
    result = stop.result
    head = (f"kgen: interrupted after {result.evaluations} evaluations ({result.seconds:.1f} s); "
            "no output was written")
    if result.best is None:
        return f"{head}; no node satisfying the model had been found yet"
    best = summary(api.finish(stop.prepared, result), None, None)
    return (f"{head}. Best so far (not released; rerun with --time-limit or --max-evaluations to release "
            f"the best found within a limit):\n{best}")


def enabled_stream(quiet: bool):
    # not a terminal, so the bar stays off; unlike open("/dev/null") it holds no file descriptor
    return io.StringIO() if quiet else sys.stderr


def summary(result: api.Result, output: Path | None, report: Path | None) -> str:
    r = result.report
    lines = [
        f"{r['algorithm']}: node {r['node']} ({r['stopped']}, {r['evaluations']} evaluations, "
        f"{r['seconds']:.2f} s)",
        f"  k = {r['k']}, suppression limit {r['suppression_limit']:.2%} ({r['max_suppressed_rows']} rows)",
        f"  LOG {r['log']:.4f}  LOS {r['los']:.4f} ({r['suppressed']} rows suppressed)  classes {r['classes']}"
        f"  smallest {r['smallest_class']}  AECS {r['aecs']:.1f}",
    ]
    lines += metric_lines(r)
    for name, a in r["attributes"].items():
        lines.append(f"  {name:>16}: level {a['level']}/{a['height']}  loss {a['loss']:.2f}  "
                     f"distinct {a['distinct_before']} -> {a['distinct_after']}")
    if result.search.stopped != "complete" and r["algorithm"] in ("exhaustive", "ola"):
        lines.append(f"  note: the search stopped early ({result.search.stopped}): the node may not be optimal")
    if output is not None:
        lines.append(f"  wrote {output} and {report}")
    return "\n".join(lines)


def metric_lines(r: dict) -> list[str]:
    """The objective, every metric and the privacy figures of a report (anonymize or apply)."""
    lines = []
    m = r.get("metrics")
    if m:
        lines.append(f"  objective {r.get('metric', 'log')} = {r['loss']:.4f}; NCP {m['ncp']:.4f}  Loss {m['loss']:.4f}"
                     f"  entropy {m['entropy']:.4f}  DM {m['dm']:.0f}  AECS {m['aecs']:.1f}")
    for f in r.get("privacy", []):
        if f.get("min_distinct_l") is None:
            continue
        extra = (f"  recursive r1/tail(l={f['recursive_l']}) {f['max_recursive_ratio']:.3f}"
                 if "recursive_l" in f else "")
        lines.append(f"  {f['sensitive']}: distinct l {f['min_distinct_l']}  entropy l {f['min_entropy_l']:.3f}  "
                     f"t equal {f['max_t_equal']:.4f}  t ordered {f['max_t_ordered']:.4f}{extra}")
    return lines


def sensitive_rules(args: argparse.Namespace) -> list[SensitiveRule]:
    if (args.l is not None or args.t_closeness is not None) and not args.sensitive:
        raise InputError("--l and --t-closeness need a sensitive column (--sensitive COLUMN)")
    if args.l is None and args.t_closeness is None:
        return []
    return [SensitiveRule(column, args.l, args.l_variant, args.c, args.t_closeness, args.t_distance)
            for column in args.sensitive]


def run_check(args: argparse.Namespace) -> int:
    table = read_csv(args.input)
    rules = sensitive_rules(args)
    result = check_k_anonymity(table, args.qi, args.k, args.suppression, rules)
    status = "PASS" if result.passed else "FAIL"
    broken = "that break the model" if rules else "smaller than k"
    print(f"{status}: {args.input}: {result.rows} rows, {result.classes} classes, smallest class "
          f"{result.smallest_class}, k = {result.k}; {len(result.violating_rows)} released rows in classes "
          f"{broken}; {result.suppressed_rows} suppressed rows, {result.allowed} allowed")
    if result.violating_rows:
        shown = result.violating_rows[: args.show]
        more = len(result.violating_rows) - len(shown)
        print(f"  violating rows: {', '.join(map(str, shown))}" + (f" and {more} more" if more > 0 else ""))
    for column, f in result.details.items():
        if f.get("classes"):
            print(f"  {column}: distinct l {f['min_distinct_l']}, entropy l {f['min_entropy_l']:.3f}, "
                  f"t equal {f['max_t_equal']:.4f}, t ordered {f['max_t_ordered']:.4f} (released classes)")
    own_class = result.suppressed_rows >= result.k if result.suppressed_class_ok is None else result.suppressed_class_ok
    if not own_class and result.suppressed_rows > result.allowed:
        print(f"  {result.suppressed_rows} suppressed rows exceed the limit of {result.allowed}")
    return 0 if result.passed else 1


def run_apply(args: argparse.Namespace) -> int:
    output = Path(args.output)
    report = Path(args.apply_report) if args.apply_report else output.with_suffix(".json")
    overrides = parse_hierarchies(args.hierarchy)
    protected = [args.input, args.report] + [s for s in overrides.values() if Path(s).is_file()]
    if same_file(output, report):
        raise InputError("is given for both the output and the apply report: give a different --apply-report",
                         file=str(output))
    for target in (output, report):
        check_target(target, protected)
    applied = applying.apply(read_csv(args.input), args.report, overrides=overrides,
                             suppression=args.suppression, drop_suppressed=args.drop_suppressed)
    table, r = applied.release, applied.report
    k, rules = rules_from_models(r["models"], args.drop_suppressed)
    # beyond the limit (exit 3 below) the output is still safe: every released class must hold the model
    limit = r["suppression_limit"] if applied.holds else 1.0
    r["verified"] = {"checker": "kgen.check, on the written file", "passed": True}
    write_atomic_many([(output, format_csv(table.columns, table.rows(), table.separator)),
                       (report, json.dumps(r, indent=2) + "\n")], protected=protected,
                      check=lambda paths: verify_file(paths[0], list(r["quasi_identifiers"]), k, limit, rules))
    if not args.quiet:
        print(f"applied node {r['node']} of {args.report} to {args.input}: {r['rows']} rows, "
              f"{r['suppressed']} suppressed (limit {r['max_suppressed_rows']}), {r['classes']} classes, "
              f"smallest {r['smallest_class']}")
        print("\n".join(metric_lines(r)))
        print(f"  wrote {output} and {report}")
    if not applied.holds:
        print(f"kgen: error: the privacy model does not hold within the suppression limit on {args.input}: "
              f"{r['suppressed']} rows break it, {r['max_suppressed_rows']} may be suppressed (the output "
              "suppresses all of them)", file=sys.stderr)
        return EXIT_NO_SOLUTION
    return 0


def run_demo(args: argparse.Namespace) -> int:
    folder = Path(args.output_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the output folder: {error.strerror or error}", file=str(folder)) from None
    source = DATA / "adult.csv"
    config = Config(qi=DEMO_QIS, k=args.k, suppression=args.suppression, hierarchy_dir=str(DATA),
                    algorithm=args.algorithm, seed=args.seed)
    print(f"kgen demo: Adult ({source.name}, 30,162 rows, UCI, CC BY 4.0), QIs {', '.join(DEMO_QIS)}")
    result = anonymize_with_progress(read_csv(source), config)
    output, report = folder / "adult_anonymized.csv", folder / "adult_anonymized.json"
    write_outputs(result, output, report, [str(source)], config)
    print(summary(result, output, report))
    verified = check_k_anonymity(read_csv(output), DEMO_QIS, args.k, args.suppression)
    print(f"  independent check of {output}: {'PASS' if verified.passed else 'FAIL'} "
          f"(smallest class {verified.smallest_class}, {verified.suppressed_rows} suppressed rows)")
    return 0 if verified.passed else 1


COMMANDS = {"anonymize": run_anonymize, "check": run_check, "demo": run_demo, "apply": run_apply,
            **mondrian_command.COMMANDS}
EXIT_NO_SOLUTION = 3


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except InputError as error:
        print(f"kgen: error: {error}", file=sys.stderr)
        return error.exit_code
    except Interrupted as stop:
        try:
            print(interrupted_summary(stop), file=sys.stderr)
        except KeyboardInterrupt:  # a second Ctrl-C while summarizing
            print("kgen: interrupted; no output was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("kgen: interrupted; no output was written", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
