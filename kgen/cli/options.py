"""Every command-line option and its parsing, defined once (pip's `cmdoptions` is the model).

Each command module builds its parser from these groups, so an option means the same thing, parses the same
way and fails with the same one line in every command that has it (`--qi a --qi b` extends everywhere; `--k`
is a whole number everywhere). `--config FILE.toml` fills the same options from a file.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from fitness import privacy
from fitness.device_evaluator import DEVICES
from fitness.evaluator import KERNELS
from fitness.objective import OBJECTIVES, parse_metric
from fitness.privacy import Parameter
from kgen.io.csvio import check_encoding
from kgen.io.files import open_input
from kgen.io.table import DEFAULT_MISSING
from kgen.report import provenance
from kgen.report.risk import DEFAULT_UNIQUENESS_MODEL, UNIQUENESS_MODELS
from kgen.run.config import Config, parse_node
from kgen.runners.parallel import CONNECT_TIMEOUT
from kgen.status import ArgumentError
from lattice.errors import InputError, names_shown


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


_NEXT_HIERARCHY = re.compile(r",(?=\s*[^,=:;]+=)")  # not `;` either: intervals:5,10;top=90 is one spec


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


def parse_microaggregate(items: Sequence[str]) -> dict[str, str]:
    """`--microaggregate QI=mean|median` items (comma-separated and/or repeated) as {QI: function}; the
    function is checked with the rest of the Config (`Config.check`)."""
    functions: dict[str, str] = {}
    for item in items:
        column, sep, function = (part.strip() for part in item.partition("="))
        if not sep or not column or not function:
            raise ArgumentError(f"--microaggregate expects QI=mean or QI=median, got {item!r}")
        if functions.get(column, function) != function:
            raise ArgumentError(f"--microaggregate gives {column!r} two functions: {functions[column]!r} and "
                                f"{function!r}")
        functions[column] = function
    return functions


def add_refinement_arguments(parser: argparse.ArgumentParser) -> None:
    """Local recoding and microaggregation (docs/local-recoding.md): what happens after the node is chosen."""
    parser.add_argument("--local-recoding", action="store_true",
                        help="generalize the rows the chosen node would suppress again, at nodes of their own "
                             "(ARX's iterative local recoding)")
    parser.add_argument("--microaggregate", type=columns, action="extend", default=[], metavar="QI=FUNCTION",
                        help="release a numeric QI as its class's mean or median (QI=mean, QI=median); "
                             "comma-separated and/or repeated")


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
    parse.numeric = kind  # type: ignore[attr-defined]
    return parse


def number(kind: type, name: str):
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            noun = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"{name} must be a {noun}, got {text!r}") from None
    parse.numeric = kind  # type: ignore[attr-defined]
    return parse


# --- options shared by several commands: each defined here once, added by name -----------------------------


def qi_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--qi", required=required, type=columns, action="extend", default=None if required else [],
                        help="quasi-identifiers, in order: comma-separated and/or repeated (--qi a,b --qi c)")


def parameter_type(p: Parameter) -> Callable[[str], object] | None:
    """How a model parameter's text is parsed: the range itself is checked once, by `Config.check`."""
    kind = p.constraint.kind
    return number(int, p.constraint.label) if kind == "whole" else \
        number(float, p.constraint.label) if kind == "real" else None


def privacy_options(parser: argparse.ArgumentParser, only: Sequence[str] | None = None,
                    required: bool = True) -> None:
    """Every privacy model family's parameters (`fitness.privacy`), as options of the same names: what a new
    model declares in its own module appears here, in run.toml and in Config without an edit. `only` names
    the parameters of an engine that supports a few models (Mondrian: k and l). Not `required` (`kgen check
    --report`), a required parameter (k) is optional and has no default."""
    for p in privacy.parameters():
        if only is not None and p.name not in only:
            continue
        choices = p.constraint.choices if p.constraint.kind == "choice" else None
        needed = p.required and required
        parser.add_argument(p.option, dest=p.name, type=parameter_type(p), choices=choices,
                            default=p.default if needed or not p.required else None, required=needed,
                            metavar=p.metavar, help=p.help)


def identifier_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--identifier", dest="identifiers", metavar="IDENTIFIER", type=columns, action="extend",
                        default=[], help="identifier columns (replaced by *): comma-separated and/or repeated")


def keep_options(parser: argparse.ArgumentParser) -> None:
    """The columns released as they are: every column needs a role, so the unnamed ones must be kept on
    purpose (docs/usage.md, "Every column has a role")."""
    parser.add_argument("--keep", metavar="COLUMN", type=columns, action="extend", default=[],
                        help="columns released as they are (insensitive): comma-separated and/or repeated; a "
                             "column with no role (--qi, --identifier, --sensitive, --keep) is refused")
    parser.add_argument("--keep-unnamed", action="store_true",
                        help="release every column no option names as it is, instead of refusing the run "
                             "(identifier-like ones are warned about)")


def allow_k1_option(parser: argparse.ArgumentParser, text: str = "allow k = 1 (it protects no one; refused "
                    "without this)") -> None:
    parser.add_argument("--allow-k1", action="store_true", help=text)


def sensitive_option(parser: argparse.ArgumentParser, text: str = "sensitive columns (kept)") -> None:
    parser.add_argument("--sensitive", type=columns, action="extend", default=[],
                        help=f"{text}: comma-separated and/or repeated")


def hierarchy_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hierarchy-dir", help="folder with *hierarchy_<COL>.csv files")


def missing_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--missing", type=tokens, action="extend",
                        help="missing-value tokens, comma-separated and/or repeated (default: empty, ?, NA)")


def separator_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--separator", type=separator,
                        help="field separator of the input: , ; | or tab (default: detected from the file)")


def hierarchy_options(parser: argparse.ArgumentParser, folder: bool = True) -> None:
    parser.add_argument("--hierarchy", type=hierarchy_items, action="extend", default=[], metavar="COL=SPEC",
                        help="ARX CSV file or builder: decimal, intervals:W1,W2, mask, date[:FMT], flat, and "
                             "more (docs/usage.md; preview: kgen hierarchy); repeated and/or comma-separated "
                             "(age=decimal,zip=mask)")
    if folder:
        hierarchy_dir_option(parser)


def add_hierarchy_preview_arguments(parser: argparse.ArgumentParser) -> None:
    """`kgen hierarchy`: one column of a data file, its builder (or file), and where to write the ARX CSV."""
    parser.add_argument("column", help="the column whose hierarchy to build")
    parser.add_argument("--data", required=True, help="the CSV file holding the column")
    parser.add_argument("--builder", metavar="SPEC",
                        help="a builder or an ARX CSV file, as --hierarchy COL=SPEC takes (default: the run's "
                             "default for the column: decimal for numbers, flat otherwise)")
    hierarchy_dir_option(parser)
    missing_option(parser)
    separator_option(parser)
    parser.add_argument("--output", metavar="FILE.csv", help="write the hierarchy as an ARX CSV file")


def seed_option(parser: argparse.ArgumentParser, text: str = "random seed of the search") -> None:
    parser.add_argument("--seed", type=number(int, "seed"), default=0, help=text)


def cluster_options(parser: argparse.ArgumentParser,
                    without: str = "without it, a local cluster on 127.0.0.1") -> None:
    """A Dask scheduler to use and how long to wait for it (exit 6 when it cannot be reached)."""
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help=f"a running Dask scheduler, e.g. tcp://host:8786 ({without})")
    parser.add_argument("--connect-timeout", type=finite_number(float, "connect-timeout", 0, above=True),
                        default=CONNECT_TIMEOUT, metavar="SECONDS",
                        help="give up on a --scheduler that cannot be reached or does not answer (exit 6)")


def output_options(parser: argparse.ArgumentParser, output: str, report: str = "JSON report (default: OUTPUT "
                   "with .json)") -> None:
    parser.add_argument("--output", help=output)
    parser.add_argument("--report", help=report)


def population_option(parser: argparse.ArgumentParser, text: str) -> None:
    """A population CSV with the same QIs, for journalist risk (kgen risk, kgen frontier; docs/risk.md). Where
    the privacy-model options are defined already (frontier), their `--population` (k-map's population table,
    `fitness.privacy.kmap_population`) is this same file: one option, read for both."""
    if "--population" in parser._option_string_actions:  # argparse keeps no public lookup of defined options
        return
    parser.add_argument("--population", metavar="FILE", help=f"population CSV with the same QIs: {text}")


def public_report_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--public-report", metavar="PATH",
                        help="also write the public report (what can be published beside the release: no paths, no "
                             "hierarchy rows, no input values; docs/report.md); the full report stays the steward's")


def uniqueness_model_option(parser: argparse.ArgumentParser) -> None:
    """`--uniqueness-model`: which estimate of population uniqueness a risk figure uses (docs/risk.md)."""
    parser.add_argument("--uniqueness-model", choices=UNIQUENESS_MODELS, default=DEFAULT_UNIQUENESS_MODEL,
                        help="population-uniqueness estimate: dankar (Dankar et al.'s rule, ARX's default), "
                             "pitman, zayatz or snb (default: dankar)")


def quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="print no summary (warnings and errors still show)")


def suppression_option(parser: argparse.ArgumentParser, default: float | None = 0.0) -> None:
    parser.add_argument("--suppression", type=number(float, "suppression"), default=default,
                        help="fraction of rows that may be suppressed (0.005 = 0.5%%)")


def add_model_arguments(parser: argparse.ArgumentParser, required: bool = True, k: bool = True) -> None:
    """--qi, every privacy model's options, --suppression and --separator; not `required` (`kgen check
    --report`: the report states the model), none is required and none has a default. Without `k`, no --k:
    the command sets k itself (`kgen frontier` ranges over it)."""
    qi_option(parser, required)
    privacy_options(parser, None if k else [p.name for p in privacy.parameters() if p.name != "k"], required)
    suppression_option(parser, 0.0 if required else None)
    separator_option(parser)
    encoding_option(parser)


def encoding_option(parser: argparse.ArgumentParser) -> None:
    """The text encoding of a CSV input (Excel-exported files are often Latin-1, Windows-1252 or UTF-16)."""
    parser.add_argument("--encoding", type=encoding_name, default="utf-8",
                        help="text encoding of a CSV input: utf-8, latin-1, cp1252 or utf-16 (with its byte-order "
                             "mark); .xlsx and Parquet inputs need none")


def encoding_name(text: str) -> str:
    try:
        return check_encoding(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def metric_name(text: str) -> str:
    """A `--metric` value, checked by the one parser of metric names (`fitness.objective.parse_metric`)."""
    try:
        parse_metric(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    """What defines the problem beside the QIs and the models (anonymize, frontier): the other roles (every
    column has one), --allow-k1, the metric, the hierarchies and the missing-value tokens."""
    identifier_option(parser)
    sensitive_option(parser)
    keep_options(parser)
    allow_k1_option(parser)
    parser.add_argument("--metric", type=metric_name, default="log", metavar="METRIC",
                        help=f"the information loss to minimize: {', '.join(OBJECTIVES)}, or arx-loss:G (ARX's Loss "
                             "with the gs-factor G in [0, 1]; arx-loss is G = 0.5); see docs/metrics.md")
    hierarchy_options(parser)
    add_control_arguments(parser)
    missing_option(parser)


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """How long a search may run, its seed, and how classes are counted (anonymize, frontier)."""
    parser.add_argument("--max-evaluations", type=finite_number(int, "max-evaluations", 1),
                        help="stop after this many distinct evaluations (>= 1; default: no limit)")
    parser.add_argument("--time-limit", type=finite_number(float, "time-limit", 0, above=True),
                        help="stop after this many seconds (> 0; default: no limit)")
    seed_option(parser)
    parser.add_argument("--kernel", choices=KERNELS, default="fast", help="class-counting kernel")


def device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where nodes are evaluated: cpu (default) or gpu (CuPy: pip install \"kgen[gpu]\"); "
                             "array runs the GPU code on numpy (for tests)")


def node_argument(text: str) -> dict[str, int]:
    try:
        return parse_node(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--node: ").removeprefix("--node ")) from None


def node_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", type=node_argument, metavar="QI=L,...",
                        help="publish this node (one level per QI, e.g. a point of kgen frontier) instead of "
                             "searching; refused (exit 3) when it breaks the models (docs/frontier.md)")


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """The GA's own options (`kgen`; `auto` takes --preset for its GA); given ones go to Config.options."""
    parser.add_argument("--ga-population", type=number(int, "ga-population"),
                        help="kgen: individuals per generation of the GA (paper preset 100, kgen+ 40)")
    parser.add_argument("--preset", choices=["paper", "kgen+", "memetic"],
                        help="kgen: the paper's algorithm (default), kgen+ (tagging, descent, seeding) or "
                             "memetic (kgen+ with a local search on its best node; auto's GA)")
    parser.add_argument("--selection", choices=["tournament", "roulette"],
                        help="kgen: tournament with the age penalty (default) or the paper's roulette")
    parser.add_argument("--practical-monotonicity", action="store_true",
                        help="flash: assume every model monotone, as ARX's option of that name (a heuristic "
                             "where a model is not: docs/search.md#flash)")


def per_qi_items(text: str) -> list[str]:
    """`QI=VALUE` items, comma-separated and/or repeated (`--min-level age=1,zip=2 --min-level sex=0`)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def per_qi(option: str, kind: type, noun: str) -> Callable[[Sequence[str]], dict[str, object]]:
    """The parser of a per-QI option's items into {QI: value}; a usage error (exit 2) for a malformed item,
    a value that is not a `kind`, or a QI given two values. Which QIs and values are allowed is checked once, in
    `Config.check_per_qi`."""
    def parse(items: Sequence[str]) -> dict[str, object]:
        values: dict[str, object] = {}
        for item in items or ():
            column, sep, text = item.partition("=")
            column = column.strip()
            if not sep or not column or not text.strip():
                raise ArgumentError(f"{option} expects QI={noun.upper()}, got {item!r}")
            try:
                value = kind(text.strip())
            except ValueError:
                raise ArgumentError(f"{option} {column}: the {noun} must be a "
                                    f"{'whole number' if kind is int else 'number'}, got {text.strip()!r}") from None
            if column in values and values[column] != value:
                raise ArgumentError(f"{option} gives {column!r} two values: {values[column]} and {value}")
            values[column] = value
        return values
    return parse


def add_control_arguments(parser: argparse.ArgumentParser) -> None:
    """The steward's per-QI controls of a lattice search: level limits and objective weights
    (docs/search.md, docs/metrics.md)."""
    parser.add_argument("--min-level", type=per_qi_items, action="extend", default=[], metavar="QI=L",
                        help="the least level QI may be released at (repeated and/or comma-separated)")
    parser.add_argument("--max-level", type=per_qi_items, action="extend", default=[], metavar="QI=L",
                        help="the greatest level QI may be released at (repeated and/or comma-separated)")
    parser.add_argument("--weight", type=per_qi_items, action="extend", default=[], metavar="QI=W",
                        help="QI's weight (>= 0, default 1) in the objective: log, loss, ncp, entropy")


def search_options(args: argparse.Namespace) -> dict[str, object]:
    """The GA's options given, under Config.options' keys (`ga_population`, `preset`, `selection`)."""
    return {key: value for key in ("ga_population", "preset", "selection")
            if (value := getattr(args, key, None)) is not None}


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What anonymize, apply and demo share about the written release."""
    parser.add_argument("--escape-formulas", action="store_true",
                        help="prefix cells that a spreadsheet would run as formulas (=, +, -, @, tab, CR) with ' "
                             "(OWASP); without it such cells are kept exact and a warning is printed")
    parser.add_argument("--strict", action="store_true",
                        help="treat warnings (a kept column that looks like an identifier, formula cells, "
                             "more jobs than cores) as errors (exit 2)")


CONFIG_COMMANDS = ("anonymize", "apply", "frontier")  # the commands that take --config FILE


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
        # optional dependency: tomllib (Python 3.11+) or tomli
        import tomllib  # Python 3.11+
    except ImportError:  # Python 3.10
        try:
            # optional dependency: tomllib (Python 3.11+) or tomli
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise InputError("--config needs Python 3.11 or the tomli package (pip install tomli)",
                             file=path) from None

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
    if isinstance(value, dict) and action.type is per_qi_items:  # min-level = {age = 1}: QI=VALUE items
        value = [f"{column}={item}" for column, item in value.items()]
    if isinstance(value, (dict, bool)):
        raise bad(f"must be {'a list, ' if many else ''}a string or a number, got {value!r}")
    if isinstance(value, list) and not many:
        raise bad(f"takes one value, got a list {value!r}")
    items = value if isinstance(value, list) else [value]
    numeric = getattr(action.type, "numeric", None)
    converted: list = []
    for item in items:
        if isinstance(item, (dict, list, bool)):
            raise bad(f"must be a string or number, got {item!r}")
        if numeric is not None and not isinstance(item, (int, float)):
            noun = "a whole number" if numeric is int else "a number"
            raise bad(f"must be {noun} (written without quotes), got the text {item!r}")
        if numeric is int and isinstance(item, float):
            raise bad(f"must be a whole number, got {item!r}")
        if numeric is None and not isinstance(item, str):
            raise bad(f"must be text (in quotes), got {item!r}")
        text = resolve_path(action, item, path)
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


# Options whose values are files or folders: relative to the TOML file's folder, not the working folder.
PATH_OPTIONS = frozenset({"input", "output", "report", "html", "hierarchy_dir", "apply_report", "verify_release",
                          "public_report"})
HIERARCHY_BUILDERS = ("decimal", "intervals", "mask", "date", "decade-date", "flat")


def resolve_path(action: argparse.Action, value: str | float, path: str) -> str:
    """A TOML value as text; a relative file or folder (PATH_OPTIONS, and the FILE of `hierarchy`'s
    COL=FILE) joined to the folder of the TOML file, so a run.toml works from any working folder."""
    text = str(value)
    folder = Path(path).parent

    def joined(name: str) -> str:
        return name if not name or Path(name).is_absolute() else str(folder / name)

    if action.dest in PATH_OPTIONS:
        return joined(text)
    if action.dest == "hierarchy":
        items = []
        for item in hierarchy_items(text):
            column, sep, spec = item.partition("=")
            builder = spec.strip().partition(":")[0] in HIERARCHY_BUILDERS
            items.append(item if not sep or builder else f"{column}={joined(spec.strip())}")
        return ",".join(items)
    return text


def apply_config_file(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[dict[str, object], dict | None]:
    """Read `--config FILE` (anonymize, apply) and make its options the defaults of the subcommand's parser,
    so that the command line overrides them. Returns {dest: value} to fill in after parsing (the options not
    given on the command line keep the `_FROM_CONFIG` / None marker set here) and the file's record (path,
    size, SHA-256) for the report's provenance, or None without a file."""
    command_name = next((a for a in argv if not a.startswith("-")), None)
    path = config_path(argv)
    if command_name not in CONFIG_COMMANDS or path is None:
        return {}, None
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
            near = difflib.get_close_matches(key, list(by_key), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise InputError(f"unknown key {raw_key!r}; {hint}the keys are the long options of 'kgen {command_name}' "
                             f"(kgen {command_name} --help): {names_shown(sorted(by_key))}", file=path)
        values[action.dest] = config_value(action, raw_key, value, path)
        action.required = False
        if not action.option_strings:  # the positional input: optional once the file names it
            action.nargs = "?"
        action.default = None if isinstance(action, argparse._ExtendAction) else _FROM_CONFIG
    return values, provenance.config_record(path, data)


def fill_from_config(args: argparse.Namespace, values: dict[str, object]) -> None:
    """Options the command line did not give take the config file's value."""
    for dest, value in values.items():
        current = getattr(args, dest, None)
        if current is _FROM_CONFIG or current is None:
            setattr(args, dest, value)

# Config fields whose option is spelled differently or whose value needs converting: field -> (the parsed option
# that must be present, conversion). Every other field is the parsed option of the same name (its dest).


DERIVED: dict[str, tuple[str, Callable[[argparse.Namespace], object]]] = {
    "hierarchies": ("hierarchy", lambda args: parse_hierarchies(args.hierarchy)),
    "missing": ("missing", lambda args: tuple(DEFAULT_MISSING if args.missing is None else args.missing)),
    "options": ("ga_population", search_options),
    "prune": ("no_prune", lambda args: not args.no_prune),
    "bound": ("no_bound", lambda args: not args.no_bound),
    "min_levels": ("min_level", lambda args: per_qi("--min-level", int, "level")(args.min_level)),
    "max_levels": ("max_level", lambda args: per_qi("--max-level", int, "level")(args.max_level)),
    "weights": ("weight", lambda args: per_qi("--weight", float, "weight")(args.weight)),
    "microaggregate": ("microaggregate", lambda args: parse_microaggregate(args.microaggregate)),
}


def config_from_args(args: argparse.Namespace, **fixed: object) -> Config:
    """The run's Config, field by field from the parsed options (command line over `--config` file over
    defaults: `apply_config_file`); `fixed` sets fields the command has no option for (the demo's QIs)."""
    parsed = vars(args)
    values = {f.name: parsed[f.name] for f in dataclasses.fields(Config) if f.name in parsed}
    values |= {name: convert(args) for name, (option, convert) in DERIVED.items() if option in parsed}
    return Config(**(values | fixed))  # type: ignore[arg-type]


def command_parser(commands: argparse._SubParsersAction, name: str, text: str) -> argparse.ArgumentParser:
    """A subcommand's parser, with the help formatter every command uses."""
    return commands.add_parser(name, help=text, description=text, formatter_class=HelpFormatter)
