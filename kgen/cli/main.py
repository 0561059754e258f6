"""The `kgen` command line: anonymize, check, apply, demo.

User errors end in one line on stderr and a non-zero exit (see docs/input-errors.md); never a traceback.
Ctrl-C (130) and SIGTERM (143) stop a run without writing anything and without leaving temporary files or
workers behind; running out of memory is one line (exit 5); a closed pipe (`kgen check ... | head -1`) ends
quietly.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import os
import re
import signal
import sys
import textwrap
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TextIO

from fitness.objective import OBJECTIVES
from kgen.check.kanonymity import SensitiveRule, check_k_anonymity
from kgen.check.verify import rules_from_models, verify_file, verify_release_file
from kgen.cli import mondrian as mondrian_command
from kgen.cli.progress import ProgressBar
from kgen.io.csvio import check_target, same_file, write_atomic, write_csv
from kgen.io.formulas import escape
from kgen.io.hierarchies import find_in_dir
from kgen.io.table import DEFAULT_MISSING, Table, read_table
from kgen.report import build as reporting
from kgen.report import html as html_report
from kgen.report import provenance
from kgen.report import risk as risking
from kgen.report import summary as summarizing
from kgen.run import apply as applying
from kgen.run import pipeline as api
from kgen.run.algorithms import CUT_POINT, REGISTRY
from kgen.run.config import Config
from kgen.run.pipeline import Interrupted
from kgen.runners import parallel
from kgen.runners.parallel import BACKENDS, CONNECT_TIMEOUT, stop_local_workers
from lattice.errors import InputError

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process killed by it
EXIT_OUT_OF_MEMORY = 5
DATA = Path(__file__).parent / "data"
DEMO_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


class ArgumentError(InputError):
    exit_code = 2


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other user error
        words = self.prog.split()
        command = f"kgen {words[-1]}" if len(words) > 1 else "kgen"
        raise ArgumentError(f"{message} (see '{command} --help')")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default, except where there is none to show (None, False)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "%(default)" in text or default is None or default is False or default == argparse.SUPPRESS or default == []:
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            shown = ",".join(action.default) if isinstance(action.default, (list, tuple)) else "%(default)s"
            return f"{text} (default: {shown})" if shown else f"{text} (default: empty)"
        return text

    def _split_lines(self, text: str, width: int) -> list[str]:  # never break inside "kgen-demo" or "-1"
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def columns(text: str) -> list[str]:
    """Comma-separated column names; with action="extend" a repeated option adds to the list."""
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def tokens(text: str) -> list[str]:
    """Comma-separated missing-value tokens: empty ones count (`--missing ,?` is "" and "?")."""
    return text.split(",")


# A comma starts a new COL=SPEC only when what follows looks like `NAME=`; builder specs such as
# intervals:5,10 keep their commas.
_NEXT_HIERARCHY = re.compile(r",(?=\s*[^,=:]+=)")


def hierarchy_items(text: str) -> list[str]:
    return [item for item in _NEXT_HIERARCHY.split(text) if item.strip()]


def parse_hierarchies(items: Sequence[str]) -> dict[str, str]:
    specs: dict[str, str] = {}
    for item in items:
        column, sep, spec = item.partition("=")
        if not sep or not column.strip() or not spec.strip():
            raise ArgumentError(f"--hierarchy expects COLUMN=FILE or COLUMN=BUILDER, got {item!r}")
        if column.strip() in specs and specs[column.strip()] != spec.strip():
            raise ArgumentError(f"--hierarchy gives column {column.strip()!r} two hierarchies: "
                                f"{specs[column.strip()]!r} and {spec.strip()!r}")
        specs[column.strip()] = spec.strip()
    return specs


SEPARATOR_NAMES = {",": ",", "comma": ",", ";": ";", "semicolon": ";", "tab": "\t", "\\t": "\t", "\t": "\t",
                   "|": "|", "pipe": "|"}


def separator(text: str) -> str:
    """A field separator by character or name: `,` `;` `|` tab (`tab`, `\\t` or a real tab)."""
    try:
        return SEPARATOR_NAMES[text.strip().lower() if text.strip() else text]
    except KeyError:
        raise argparse.ArgumentTypeError(f"separator must be one of: , ; | tab; got {text!r}") from None


def finite_number(kind: type, name: str, low: float | None = None, above: bool = False) -> Callable[[str], object]:
    """A number option that must be finite (and >= low, or > low when `above`); else a usage error."""
    parse_number = number(kind, name)

    def parse(text: str) -> object:
        value = parse_number(text)
        if not math.isfinite(value) or low is not None and (value <= low if above else value < low):
            bound = "" if low is None else f" {'>' if above else '>='} {low:g}"
            noun = "whole number" if kind is int else "finite number"
            raise argparse.ArgumentTypeError(f"{name} must be a {noun}{bound}, got {text!r}")
        return value
    return parse


def number(kind: type, name: str):
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            noun = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"{name} must be a {noun}, got {text!r}") from None
    return parse


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qi", required=True, type=columns, action="extend",
                        help="quasi-identifiers, in order: comma-separated and/or repeated (--qi a,b --qi c)")
    parser.add_argument("--k", required=True, type=number(int, "k"), help="k of k-anonymity")
    parser.add_argument("--suppression", type=number(float, "suppression"), default=0.0,
                        help="fraction of rows that may be suppressed (0.005 = 0.5%%)")
    parser.add_argument("--separator", type=separator,
                        help="field separator of the input: , ; | or tab (default: detected from the file)")


def add_sensitive_arguments(parser: argparse.ArgumentParser) -> None:
    """l-diversity and t-closeness on the --sensitive columns."""
    parser.add_argument("--l", type=number(float, "l"), help="l of l-diversity on every sensitive column")
    parser.add_argument("--l-variant", choices=["distinct", "entropy", "recursive"], default="distinct",
                        help="distinct, entropy, or recursive (c, l)-diversity (needs --c)")
    parser.add_argument("--c", type=number(float, "c"), help="c of recursive (c, l)-diversity")
    parser.add_argument("--t-closeness", type=number(float, "t-closeness"), metavar="T",
                        help="t of t-closeness on every sensitive column (EMD to the whole table)")
    parser.add_argument("--t-distance", choices=["equal", "ordered"], default="equal",
                        help="equal (categories) or ordered (numbers, else label order)")


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


def version() -> str:
    """The installed distribution's version, else the package's own (a source checkout)."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        return installed("kgen")
    except (ImportError, PackageNotFoundError):
        from kgen import __version__

        return __version__


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What anonymize, apply and demo share about the written release."""
    parser.add_argument("--escape-formulas", action="store_true",
                        help="prefix cells that a spreadsheet would run as formulas (=, +, -, @, tab, CR) with ' "
                             "(OWASP); without it such cells are kept exact and a warning is printed")
    parser.add_argument("--strict", action="store_true",
                        help="treat warnings (an unnamed column that looks like an identifier, formula cells, "
                             "more jobs than cores) as errors (exit 2)")


CONFIG_COMMANDS = ("anonymize", "apply")  # the commands that take --config FILE
_FROM_CONFIG = object()  # default of an option the config file sets: replaced after parsing unless given


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE.toml",
                        help="read options from a TOML file (keys = long option names, e.g. qi = [\"age\"], "
                             "k = 5, time-limit = 60, input = \"data.csv\"); the command line overrides it")


def config_path(argv: Sequence[str]) -> str | None:
    """The value of --config in argv (`--config F` or `--config=F`), None when absent."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--config" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def load_toml(path: str) -> tuple[dict, bytes]:
    """The parsed TOML file and its bytes; every failure is one InputError naming the file."""
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise InputError("--config needs Python 3.11 or the tomli package (pip install tomli)",
                             file=path) from None
    from kgen.io.files import open_input

    with open_input(path) as handle:
        data = handle.read()
    try:
        return tomllib.loads(data.decode("utf-8")), data
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text (a TOML file must be)", file=path) from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"is not valid TOML: {error}", file=path) from None


def config_value(action: argparse.Action, key: str, value: object, path: str) -> object:
    """A TOML value converted and validated exactly as the same option on the command line."""
    def bad(why: str) -> InputError:
        return InputError(f"key {key!r}: {why}", file=path)

    if action.nargs == 0:  # a flag (store_true)
        if not isinstance(value, bool):
            raise bad(f"must be true or false, got {value!r}")
        return value
    many = isinstance(action, argparse._ExtendAction)
    if isinstance(value, (dict, bool)):
        raise bad(f"must be {'a list, ' if many else ''}a string or a number, got {value!r}")
    if isinstance(value, list) and not many:
        raise bad(f"takes one value, got a list {value!r}")
    items = value if isinstance(value, list) else [value]
    converted: list = []
    for item in items:
        if isinstance(item, (dict, list, bool)):
            raise bad(f"must be a string or number, got {item!r}")
        text = str(item)
        try:
            result = action.type(text) if action.type is not None else text
        except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
            raise bad(str(error) or f"invalid value {text!r}") from None
        if action.choices is not None and result not in action.choices:
            raise bad(f"must be one of {', '.join(map(str, action.choices))}, got {text!r}")
        if many:
            converted.extend(result)
        else:
            converted.append(result)
    return converted if many else converted[0]


def apply_config_file(parser: argparse.ArgumentParser, argv: Sequence[str]) -> dict[str, object]:
    """Read `--config FILE` (anonymize, apply) and make its options the defaults of the subcommand's parser,
    so that the command line overrides them. Returns {dest: value} to fill in after parsing (the options not
    given on the command line keep the `_FROM_CONFIG` / None marker set here)."""
    command_name = next((a for a in argv if not a.startswith("-")), None)
    path = config_path(argv)
    if command_name not in CONFIG_COMMANDS or path is None:
        return {}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command_name]
    options, data = load_toml(path)
    by_key = {}
    for action in sub._actions:
        if action.dest in ("help", "config"):
            continue
        names = [o[2:] for o in action.option_strings if o.startswith("--")] or [action.dest]
        for name in names:
            by_key[name] = action
    values: dict[str, object] = {}
    for raw_key, value in options.items():
        key = raw_key.replace("_", "-")
        action = by_key.get(key)
        if action is None:
            raise InputError(f"unknown key {raw_key!r}; the keys are the long options of 'kgen {command_name}': "
                             f"{', '.join(sorted(by_key))}", file=path)
        values[action.dest] = config_value(action, raw_key, value, path)
        action.required = False
        if not action.option_strings:  # the positional input: optional once the file names it
            action.nargs = "?"
        action.default = None if isinstance(action, argparse._ExtendAction) else _FROM_CONFIG
    provenance.CONFIG_FILE = provenance.config_record(path, data)
    return values


def fill_from_config(args: argparse.Namespace, values: dict[str, object]) -> None:
    """Options the command line did not give take the config file's value."""
    for dest, value in values.items():
        current = getattr(args, dest, None)
        if current is _FROM_CONFIG or current is None:
            setattr(args, dest, value)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="kgen", description="k-anonymity by generalization and suppression (KGen).",
                    formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"kgen {version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=text, description=text, formatter_class=HelpFormatter)

    anon = command("anonymize", "anonymize a CSV file")
    anon.add_argument("input", help="the CSV file to anonymize")
    add_model_arguments(anon)
    anon.add_argument("--identifier", dest="identifiers", metavar="IDENTIFIER", type=columns, action="extend",
                      default=[], help="identifier columns (replaced by *): comma-separated and/or repeated")
    anon.add_argument("--sensitive", type=columns, action="extend", default=[],
                      help="sensitive columns (kept): comma-separated and/or repeated")
    add_sensitive_arguments(anon)
    anon.add_argument("--metric", choices=list(OBJECTIVES), default="log",
                      help="the information loss to minimize (see docs/metrics.md)")
    anon.add_argument("--hierarchy", type=hierarchy_items, action="extend", default=[], metavar="COL=SPEC",
                      help="ARX CSV file or builder: decimal, intervals:W1,W2, mask, date[:FMT], flat; "
                           "repeated and/or comma-separated (age=decimal,zip=mask)")
    anon.add_argument("--hierarchy-dir", help="folder with *hierarchy_<COL>.csv files")
    anon.add_argument("--missing", type=tokens, action="extend",
                      help="missing-value tokens, comma-separated and/or repeated (default: empty, ?, NA)")
    anon.add_argument("--algorithm", default=Config.algorithm,
                      help=f"{', '.join(sorted(REGISTRY) + sorted(CUT_POINT))} (docs/search.md)")
    add_search_arguments(anon)
    anon.add_argument("--max-evaluations", type=finite_number(int, "max-evaluations", 1),
                      help="stop after this many distinct evaluations (>= 1; default: no limit)")
    anon.add_argument("--time-limit", type=finite_number(float, "time-limit", 0, above=True),
                      help="stop after this many seconds (> 0; default: no limit)")
    anon.add_argument("--seed", type=number(int, "seed"), default=0, help="random seed of the search")
    anon.add_argument("--kernel", choices=["fast", "bitset"], default="fast", help="class-counting kernel")
    anon.add_argument("--no-prune", action="store_true", help="search the whole lattice")
    anon.add_argument("--no-bound", action="store_true",
                      help="skip the certified lower bound of the report (docs/certify.md)")
    anon.add_argument("--drop-suppressed", action="store_true", help="leave suppressed rows out")
    anon.add_argument("--jobs", type=number(int, "jobs"), default=1,
                      help="parallel workers evaluating nodes (1: serial; -1: every usable core; capped at the "
                           "usable cores)")
    anon.add_argument("--backend", choices=list(BACKENDS), default="loky",
                      help="loky (local processes), threading, or dask (a Dask cluster)")
    anon.add_argument("--scheduler", metavar="ADDRESS",
                      help="a running Dask scheduler, e.g. tcp://host:8786 (with --backend dask; without it, "
                           "dask starts a local cluster of --jobs workers)")
    anon.add_argument("--connect-timeout", type=finite_number(float, "connect-timeout", 0, above=True),
                      default=CONNECT_TIMEOUT, metavar="SECONDS",
                      help="give up on a --scheduler that cannot be reached or does not answer (exit 6)")
    anon.add_argument("--batch-size", type=number(int, "batch-size"),
                      help="nodes per parallel task (default: about two tasks per worker per population)")
    anon.add_argument("--max-risk", type=number(float, "max-risk"), metavar="R",
                      help="highest prosecutor risk allowed: raises k to ceil(1/R) (see docs/risk.md)")
    anon.add_argument("--device", choices=["cpu", "gpu", "array"], default="cpu",
                      help="where nodes are evaluated: cpu (default) or gpu (CuPy: pip install \"kgen[gpu]\"); "
                           "array runs the GPU code on numpy (for tests)")
    anon.add_argument("--partitioned", action="store_true",
                      help="row-partitioned evaluation on Dask for tables larger than one worker; see "
                           "docs/partitioned.md")
    anon.add_argument("--output", help="anonymized CSV (default: INPUT_anonymized.csv)")
    anon.add_argument("--report", help="JSON report (default: OUTPUT with .json)")
    anon.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report (docs/report.md)")
    add_output_arguments(anon)
    anon.add_argument("--quiet", action="store_true", help="print no summary (warnings and errors still show)")
    add_config_argument(anon)

    check = command("check", "verify that a released CSV satisfies the privacy model")
    check.add_argument("input", help="the released CSV file")
    add_model_arguments(check)
    check.add_argument("--show", type=number(int, "show"), default=20, help="how many violating rows to list")
    check.add_argument("--sensitive", type=columns, action="extend", default=[],
                       help="sensitive columns to check l / t on: comma-separated and/or repeated")
    check.add_argument("--report", help="the release's kgen report: INPUT must match its SHA-256 (exit 1 if not)")
    add_sensitive_arguments(check)

    apply = command("apply", "apply the node of a saved report to new data")
    apply.add_argument("input", help="the new CSV file")
    apply.add_argument("--report", required=True, help="the JSON report of an earlier kgen anonymize")
    apply.add_argument("--output", required=True, help="anonymized CSV")
    apply.add_argument("--apply-report", help="JSON report of this run (default: OUTPUT with .json)")
    apply.add_argument("--hierarchy", type=hierarchy_items, action="extend", default=[], metavar="COL=SPEC",
                       help="override a QI's hierarchy saved in the report (repeated and/or comma-separated)")
    apply.add_argument("--suppression", type=number(float, "suppression"),
                       help="suppression limit (default: the report's)")
    apply.add_argument("--separator", type=separator,
                       help="field separator of the input: , ; | or tab (default: detected from the file)")
    apply.add_argument("--allow-k1", action="store_true",
                       help="apply a report whose k is 1 (it protects no one; refused without this)")
    apply.add_argument("--drop-suppressed", action="store_true", help="leave suppressed rows out")
    apply.add_argument("--verify-release", metavar="FILE",
                       help="refuse to apply --report unless FILE (its release) matches the report's SHA-256")
    add_output_arguments(apply)
    apply.add_argument("--quiet", action="store_true", help="print no summary (warnings and errors still show)")
    add_config_argument(apply)

    risk = command("risk", "re-identification risk of any table (anonymized or not) on its QIs")
    risk.add_argument("input", help="the table to measure (a release or raw data)")
    risk.add_argument("--qi", type=columns, action="extend", default=None,
                      help="quasi-identifiers: comma-separated and/or repeated (default: --report's)")
    risk.add_argument("--risk-threshold", type=number(float, "risk-threshold"), default=risking.DEFAULT_THRESHOLD,
                      help="a record is at risk above this prosecutor risk 1/|class| (default 0.2)")
    risk.add_argument("--population", help="population CSV with the same QIs (generalized like INPUT, or raw "
                                           "with --report): journalist risk and exact population uniqueness")
    risk.add_argument("--report", help="INPUT's kgen report: its QIs, and its node generalizes --population")
    risk.add_argument("--sampling-fraction", type=number(float, "sampling-fraction"),
                      help="n / N for the population-uniqueness estimate (default: from --population, else 1)")
    risk.add_argument("--json", action="store_true", help="print the figures as JSON")

    page = command("report", "a self-contained HTML page for a kgen anonymize report")
    page.add_argument("input", metavar="RESULT.json", help="the JSON report of kgen anonymize")
    page.add_argument("--release", help="the release CSV: checked against the report's SHA-256 and measured "
                                        "(default: the file the report names, if present)")
    page.add_argument("-o", "--output", help="HTML file (default: RESULT.html)")

    demo = command("demo", "anonymize the embedded Adult dataset and summarize")
    demo.add_argument("--k", type=number(int, "k"), default=5, help="k of k-anonymity")
    demo.add_argument("--suppression", type=number(float, "suppression"), default=0.01,
                      help="fraction of rows that may be suppressed")
    demo.add_argument("--algorithm", default=Config.algorithm, help=f"{', '.join(sorted(REGISTRY))}")
    demo.add_argument("--seed", type=number(int, "seed"), default=0, help="random seed of the search")
    demo.add_argument("--output-dir", default="kgen-demo", help="folder for the release and its report")
    add_output_arguments(demo)
    mondrian_command.add_parsers(commands)  # kgen mondrian / mondrian-check (docs/mondrian.md)
    return parser


def default_output(input_path: str) -> Path:
    path = Path(input_path)
    if not path.name or path.is_dir():  # "." or a folder: there is no file name to derive from
        raise InputError("is a folder, not a file", file=input_path)
    return path.with_name(f"{path.stem}_anonymized.csv")


def warn(message: str) -> None:
    print(f"kgen: warning: {message}", file=sys.stderr)


def release_writer(table: Table, report: dict, escape_formulas: bool, strict: bool) -> Callable[[TextIO], None]:
    """The release's CSV writer (a stream of rows, never one string), with formula cells escaped when asked;
    warns (or, with --strict, refuses) when it holds cells that a spreadsheet would run as formulas and they
    are kept exact."""
    cells = report.get("formula_cells") or reporting.formula_record(table)
    if cells["cells"] and not escape_formulas:
        message = (f"the release holds {cells['cells']} cells that a spreadsheet would run as formulas (they start "
                   f"with =, +, -, @, tab or CR) in columns {', '.join(map(repr, cells['columns']))}; they are "
                   "written exactly: give --escape-formulas to prefix them with '")
        if strict:
            raise InputError(f"{message} (--strict makes this an error)")
        warn(message)
        report.setdefault("warnings", []).append(message)
    report["formula_cells"] = dict(cells, escaped=bool(escape_formulas and cells["cells"]))
    if not escape_formulas:
        return table.write_csv

    def write_escaped(handle: TextIO) -> None:
        write_csv(handle, [escape(c) for c in table.columns],
                  ([escape(v) for v in row] for row in table.iter_rows()), table.separator)

    return write_escaped


def write_outputs(result: api.Result, output: Path, report: Path, inputs: Sequence[str], config: Config,
                  escape_formulas: bool = False) -> None:
    """Both files or neither (`kgen.report.build.publish`): the written release is checked by the independent
    checker (`kgen.check.verify`) before both are renamed into place, and `verified` is written after that check."""
    table = result.release
    text = release_writer(table, result.report, escape_formulas, config.strict)
    escaped = result.report["formula_cells"]["escaped"]
    reporting.publish(output, report, text, result.report, inputs,
                      lambda path: verify_release_file(path, config, escaped, table.separator))


def protected_inputs(args: argparse.Namespace) -> list[str]:
    """Files an output must never overwrite: the input and every hierarchy file the run reads."""
    files = [args.input] + [s for s in parse_hierarchies(args.hierarchy).values() if Path(s).is_file()]
    if args.hierarchy_dir:
        files += [str(p) for c in args.qi if (p := find_in_dir(args.hierarchy_dir, c)) is not None]
    return files


# What the run is working on, for the out-of-memory message (main): the input and, once read, its size.
WORKING_ON: dict[str, object] = {}


def read_input(path: str, sep: str | None, qis: int) -> Table:
    WORKING_ON.clear()
    WORKING_ON["file"] = path
    table = read_table(path, sep)
    WORKING_ON.update(rows=table.n, qis=qis)
    return table


# Config fields whose option is spelled differently or whose value needs converting: field -> (the parsed option
# that must be present, conversion). Every other field is the parsed option of the same name (its dest).
DERIVED: dict[str, tuple[str, Callable[[argparse.Namespace], object]]] = {
    "hierarchies": ("hierarchy", lambda args: parse_hierarchies(args.hierarchy)),
    "missing": ("missing", lambda args: tuple(DEFAULT_MISSING if args.missing is None else args.missing)),
    "options": ("population", search_options),
    "prune": ("no_prune", lambda args: not args.no_prune),
    "bound": ("no_bound", lambda args: not args.no_bound),
}


def config_from_args(args: argparse.Namespace, **fixed: object) -> Config:
    """The run's Config, field by field from the parsed options (command line over `--config` file over
    defaults: `apply_config_file`); `fixed` sets fields the command has no option for (the demo's QIs)."""
    parsed = vars(args)
    values = {f.name: parsed[f.name] for f in dataclasses.fields(Config) if f.name in parsed}
    values |= {name: convert(args) for name, (option, convert) in DERIVED.items() if option in parsed}
    return Config(**(values | fixed))  # type: ignore[arg-type]


def run_partitioned(args: argparse.Namespace, config: Config) -> int:
    """`kgen anonymize --partitioned`: the input (a Parquet/CSV glob, folder or file) is read part by part on
    the Dask workers, the release is a folder of parts (`--output`, new or empty), checked part by part and
    merged before the parts are renamed into place; the report (default: the folder's name + .json) is written
    after that check."""
    if not args.output:
        raise InputError("--partitioned writes the release as a folder of parts: give --output FOLDER")
    output = Path(args.output)
    report = Path(args.report) if args.report else output.with_name(output.name + ".json")
    protected = protected_inputs(args)
    check_target(report, protected)
    if args.html:
        raise InputError("--html is not available with --partitioned (the report is JSON)")
    r = api.anonymize_partitioned(args.input, config, ProgressBar(None, enabled_stream(args.quiet)),
                                  output=str(output))
    write_atomic(report, reporting.to_json(r), protected)
    if not args.quiet:
        node = r.get("node")
        print(f"kgen: released {output}/ ({len((r.get('partitioned') or {}).get('parts') or [])} parts, node "
              f"{node}), report {report}; {(r.get('check') or {}).get('summary', '')}")
    return 0


def run_anonymize(args: argparse.Namespace) -> int:
    if args.partitioned:
        config = config_from_args(args)
        config.check()
        return run_partitioned(args, config)
    output = Path(args.output) if args.output else default_output(args.input)
    report = Path(args.report) if args.report else output.with_suffix(".json")
    protected = protected_inputs(args)
    if same_file(output, report):
        raise InputError("is given for both the output and the report: give different --output and --report",
                         file=str(output))
    config = config_from_args(args)
    config = risking.config_with_max_risk(config, args.max_risk)
    config.check()  # option errors before touching any file
    for target in (output, report):  # refuse before the search, not after it
        check_target(target, protected)
    if args.html:
        check_target(args.html, protected + [str(output), str(report)])
    if config.backend == "dask" and config.scheduler is not None:  # an unreachable cluster fails in seconds,
        parallel.validate_options(config.jobs, config.backend, config.scheduler, config.batch_size,
                                  config.connect_timeout)
        parallel.probe_scheduler(config.scheduler, config.connect_timeout)  # not after reading the data
    # a partitioned run reads its partitions itself: the whole table is never read here
    data = args.input if config.partitioned else read_input(args.input, args.separator, len(config.qi))
    result = run_search(data, config, quiet=args.quiet)
    write_outputs(result, output, report, protected, config, args.escape_formulas)
    if args.html:
        html_report.write(result.report, args.html, output, protected=protected + [str(output), str(report)])
    if not args.quiet:
        print(summarizing.text(result.report, output, report, html=args.html))
    return 0


def run_search(data: object, config: Config, quiet: bool = False) -> api.Result:
    """`kgen.run.pipeline.anonymize` with the command line's progress bar (drawn on a terminal only) and its warnings
    on stderr before the search. Raises `kgen.run.pipeline.Interrupted` when Ctrl-C stopped the search."""
    return api.anonymize(data, config, progress=ProgressBar(None, enabled_stream(quiet)), warn=warn)


def interrupted_summary(stop: Interrupted) -> str:
    """What an interrupted search found: the best node so far and its metrics, and that nothing was written."""
    result = stop.result
    head = (f"kgen: interrupted after {result.evaluations} evaluations ({result.seconds:.1f} s); "
            "no output was written")
    if result.best is None:
        return f"{head}; no node satisfying the model had been found yet"
    best = summary(stop.best(), None, None)
    return (f"{head}. Best so far (not released; rerun with --time-limit or --max-evaluations to release "
            f"the best found within a limit):\n{best}")


def enabled_stream(quiet: bool):
    # not a terminal, so the bar stays off; unlike open("/dev/null") it holds no file descriptor
    return io.StringIO() if quiet else sys.stderr


def summary(result: api.Result, output: Path | None, report: Path | None) -> str:
    """The console summary (kgen.report.summary: grouped node, risk, hierarchies; at most 100 columns a line)."""
    return summarizing.text(result.report, output, report)


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
    if args.report:
        print("\n".join(provenance.verify_against_report(provenance.read_report(args.report), args.input)))
    table = read_input(args.input, args.separator, len(args.qi))
    rules = sensitive_rules(args)
    result = check_k_anonymity(table, args.qi, args.k, args.suppression, rules)
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
    for target in (output, report):
        check_target(target, protected)
    if args.verify_release:
        verified = provenance.verify_against_report(provenance.read_report(args.report), args.verify_release,
                                                    exit_code=2)
        if not args.quiet:
            print("\n".join(verified))
    table = read_input(args.input, args.separator, len(saved["quasi_identifiers"]))
    applied = applying.apply(table, saved, overrides=overrides, suppression=args.suppression,
                             drop_suppressed=args.drop_suppressed, allow_k1=args.allow_k1, strict=args.strict,
                             source=args.report)
    table, r = applied.release, applied.report
    for message in r.get("warnings", []):
        warn(message)
    if not applied.holds:  # nothing is written: a release beyond the limit is not a release of this model
        print(f"kgen: error: {args.input}: the privacy model of {args.report} does not hold within the suppression "
              f"limit: {r['suppressed']} rows are in classes that break it, {r['max_suppressed_rows']} may be "
              "suppressed; nothing was written (raise --suppression, or anonymize this data anew)", file=sys.stderr)
        return EXIT_NO_SOLUTION
    k, rules = rules_from_models(r["models"], args.drop_suppressed)
    r["provenance"] = provenance.for_apply(args.input, args.report, provenance.read_report(args.report))
    text = release_writer(table, r, args.escape_formulas, args.strict)
    escaped = r["formula_cells"]["escaped"]
    qis = list(r["quasi_identifiers"])
    reporting.publish(output, report, text, r, protected,
                      lambda path: verify_file(path, qis, k, r["suppression_limit"], rules, escaped, table.separator))
    if not args.quiet:
        print(f"applied node {r['node']} of {args.report} to {args.input}: {r['rows']} rows, "
              f"{r['suppressed']} suppressed (limit {r['max_suppressed_rows']}), {r['classes']} classes, "
              f"smallest {r['smallest_class']}")
        print("\n".join(metric_lines(r)))
        print(f"  wrote {output} and {report}")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    folder = Path(args.output_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the output folder: {error.strerror or error}", file=str(folder)) from None
    source = DATA / "adult.csv"
    config = config_from_args(args, qi=DEMO_QIS, hierarchy_dir=str(DATA))
    print(f"kgen demo: Adult ({source.name}, 30,162 rows, UCI, CC BY 4.0), QIs {', '.join(DEMO_QIS)}")
    result = run_search(read_input(str(source), None, len(DEMO_QIS)), config)
    output, report = folder / "adult_anonymized.csv", folder / "adult_anonymized.json"
    write_outputs(result, output, report, [str(source)], config, args.escape_formulas)
    print(summary(result, output, report))
    verified = result.report["verified"]
    print(f"  independent check of {output}: {'PASS' if verified['passed'] else 'FAIL'} "
          f"(smallest class {verified['smallest_class']}, {verified['suppressed_rows']} suppressed rows)")
    html = folder / "adult_anonymized.html"
    html_report.write(result.report, html, output, protected=[str(source), str(output), str(report)])
    print(summarizing.next_steps(output, report, DEMO_QIS, args.k, html, args.suppression))
    return 0 if verified["passed"] else 1


def run_report(args: argparse.Namespace) -> int:
    """`kgen report`: the HTML page of a saved report (kgen.report.html)."""
    print(f"wrote {html_report.run_command(args.input, args.release, args.output)}")
    return 0


def run_risk(args: argparse.Namespace) -> int:
    """`kgen risk`: the risk figures of docs/risk.md for any table."""
    figures = risking.run_command(args.input, args.qi, args.risk_threshold, args.population, args.report,
                                  args.sampling_fraction)
    print(json.dumps(figures, indent=2) if args.json else risking.describe(figures))
    return 0


COMMANDS = {"anonymize": run_anonymize, "check": run_check, "demo": run_demo, "apply": run_apply,
            "risk": run_risk, "report": run_report, **mondrian_command.COMMANDS}
EXIT_NO_SOLUTION = 3


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that the same clean-up runs (temporary files removed,
    workers stopped, nothing written); main() then exits 143 with one line."""


TERM_RECEIVED = [False]  # set by the handler: a search stops on it as on Ctrl-C, and main() tells them apart


def on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: a second must not interrupt the clean-up
    TERM_RECEIVED[0] = True
    raise Terminated()


class QuietPipe(io.TextIOBase):
    """stdout that, once the reader has gone (`kgen check ... | head -1`), points fd 1 at /dev/null and
    drops the rest: no BrokenPipeError traceback, and the command still ends with its own exit status."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self.stream, self.closed_pipe = stream, False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self.gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self.gone()

    def gone(self) -> None:
        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass  # not a real file descriptor (a test's capture): dropping the text is enough

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


def out_of_memory_message() -> str:
    where = WORKING_ON.get("file")
    if "rows" in WORKING_ON:
        size = f"a table of {WORKING_ON['rows']:,} rows x {WORKING_ON['qis']} quasi-identifiers ({where})"
    elif where is not None:
        try:
            size = f"reading {where} ({os.path.getsize(str(where)) / 1e6:,.1f} MB)"
        except OSError:
            size = f"reading {where}"
    else:
        size = "this run"
    return (f"kgen: error: out of memory on {size}; what would help: fewer quasi-identifiers or rows (anonymize a "
            "sample, or split the file), --jobs 1 (each worker holds the table), --max-evaluations or "
            "--time-limit, or a machine with more memory")


def main(argv: Sequence[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = QuietPipe(stdout)
    TERM_RECEIVED[0] = False
    provenance.COMMAND_LINE = provenance.command_line(argv)
    previous = signal.getsignal(signal.SIGTERM)
    handler_set = False
    try:
        signal.signal(signal.SIGTERM, on_sigterm)
        handler_set = True
    except ValueError:  # not the main thread: SIGTERM keeps its disposition
        pass
    try:
        return run_command(argv)
    finally:
        if handler_set:
            signal.signal(signal.SIGTERM, previous)
        sys.stdout = stdout


def run_command(argv: Sequence[str] | None) -> int:
    try:
        try:
            parser = build_parser()
            from_config = apply_config_file(parser, list(sys.argv[1:] if argv is None else argv))
            args = parser.parse_args(argv)
            fill_from_config(args, from_config)
            return COMMANDS[args.command](args)
        except Interrupted as stop:
            if TERM_RECEIVED[0]:  # the search stopped on SIGTERM as it does on Ctrl-C
                raise Terminated() from None
            try:
                print(interrupted_summary(stop), file=sys.stderr)
            except KeyboardInterrupt:  # a second Ctrl-C while summarizing
                print("kgen: interrupted; no output was written", file=sys.stderr)
            return EXIT_INTERRUPTED
    except InputError as error:
        print(f"kgen: error: {error}", file=sys.stderr)
        return error.exit_code
    except Terminated:
        stop_local_workers()
        print("kgen: terminated (SIGTERM); no output was written", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        stop_local_workers()
        print("kgen: interrupted; no output was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError:  # numpy's _ArrayMemoryError included
        print(out_of_memory_message(), file=sys.stderr)
        return EXIT_OUT_OF_MEMORY
    except BrokenProcessPool:  # loky's TerminatedWorkerError: the system killed a worker, nearly always for memory
        stop_local_workers()
        print(out_of_memory_message().replace("out of memory on", "a parallel worker was killed (out of memory?) "
                                              "on", 1), file=sys.stderr)
        return EXIT_OUT_OF_MEMORY
    finally:
        WORKING_ON.clear()
        provenance.COMMAND_LINE = None
        provenance.CONFIG_FILE = None


if __name__ == "__main__":
    sys.exit(main())
