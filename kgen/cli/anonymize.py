"""`kgen anonymize`: the one run path (`kgen.run.pipeline.anonymize`) with a progress bar, then the one
publish of the release and its report (`kgen.report.build.publish`), in memory or partitioned."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgen.cli.console import enabled_stream, read_input, warn
from kgen.cli.options import (
    add_config_argument,
    add_limit_arguments,
    add_model_arguments,
    add_output_arguments,
    add_problem_arguments,
    add_refinement_arguments,
    add_search_arguments,
    cluster_options,
    command_parser,
    config_from_args,
    device_option,
    node_option,
    number,
    parse_hierarchies,
    public_report_option,
    quiet_option,
)
from kgen.cli.progress import ProgressBar
from kgen.io.files import check_target, same_file
from kgen.io.hierarchies import find_in_dir
from kgen.report import html as html_report
from kgen.report import risk as risking
from kgen.report import summary as summarizing
from kgen.report.publish import write_release
from kgen.run import pipeline as api
from kgen.run.algorithms import CUT_POINT, REGISTRY
from kgen.run.config import Config
from kgen.run.pipeline import Interrupted
from kgen.runners import parallel
from kgen.runners.parallel import BACKENDS
from lattice.errors import InputError


def default_output(input_path: str) -> Path:
    path = Path(input_path)
    if not path.name or path.is_dir():  # "." or a folder: there is no file name to derive from
        raise InputError("is a folder, not a file", file=input_path)
    return path.with_name(f"{path.stem}_anonymized.csv")



def protected_inputs(args: argparse.Namespace) -> list[str]:
    """Files an output must never overwrite: the input, every hierarchy file the run reads, and the `--config`
    file (`--config run.toml --output run.toml` overwrote it)."""
    files = [args.input] + [s for s in parse_hierarchies(args.hierarchy).values() if Path(s).is_file()]
    files += [args.config] if getattr(args, "config", None) else []
    if args.hierarchy_dir:
        files += [str(p) for c in args.qi if (p := find_in_dir(args.hierarchy_dir, c)) is not None]
    return files

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
    if args.public_report:
        check_target(args.public_report, protected)
    if args.html:
        raise InputError("--html is not available with --partitioned (the report is JSON)")
    result = api.anonymize_partitioned(args.input, config, ProgressBar(None, enabled_stream(args.quiet)),
                                       output=str(output), report=str(report), protected=protected,
                                       invocation=args.invocation, public=args.public_report)
    r = result.report
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
    for target in (output, report) + ((Path(args.public_report),) if args.public_report else ()):
        check_target(target, protected)  # refuse before the search, not after it
    if args.html:
        check_target(args.html, protected + [str(output), str(report)])
    if config.backend == "dask" and config.scheduler is not None:  # an unreachable cluster fails in seconds,
        parallel.validate_options(config.jobs, config.backend, config.scheduler, config.batch_size,
                                  config.connect_timeout)
        parallel.probe_scheduler(config.scheduler, config.connect_timeout)  # not after reading the data
    # a partitioned run reads its partitions itself: the whole table is never read here
    data = args.input if config.partitioned else read_input(args.input, args.separator, len(config.qi),
                                                                  args.encoding)
    result = run_search(data, config, args.invocation, quiet=args.quiet)
    write_release(result, output, report, protected, escape_formulas=args.escape_formulas, strict=config.strict,
                  warn=warn, public=args.public_report)
    if args.html:
        write_page(result.report, args.html, output, protected + [str(output), str(report)])
    if not args.quiet:
        print(summarizing.text(result.report, output, report, html=args.html, public=args.public_report))
    return 0

def write_page(report: dict, page: str, output: Path, protected: list[str]) -> None:
    """The HTML page, written after the release and its report are published: a page that cannot be written
    (a full disk) is a warning, and the exit status stays the release's (published and verified); the page
    can be made again with `kgen report`."""
    try:
        html_report.write(report, page, output, protected=protected)
    except InputError as error:
        warn(f"{error}; the release and its report were published (kgen report makes the page again)")


def run_search(data: object, config: Config, invocation: dict, quiet: bool = False) -> api.Result:
    """`kgen.run.pipeline.anonymize` with the command line's progress bar (drawn on a terminal only) and its warnings
    on stderr before the search. Raises `kgen.run.pipeline.Interrupted` when Ctrl-C stopped the search."""
    return api.anonymize(data, config, progress=ProgressBar(None, enabled_stream(quiet)), warn=warn,
                         invocation=invocation)

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

def summary(result: api.Result, output: Path | None, report: Path | None) -> str:
    """The console summary (kgen.report.summary: grouped node, risk, hierarchies; at most 100 columns a line)."""
    return summarizing.text(result.report, output, report)


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen anonymize` and its options."""
    anon = command_parser(commands, "anonymize", "anonymize a CSV file")
    anon.add_argument("input", help="the CSV file to anonymize")
    add_model_arguments(anon)
    add_problem_arguments(anon)
    anon.add_argument("--algorithm", default=Config.algorithm,
                      help=f"{', '.join(sorted(REGISTRY) + sorted(CUT_POINT))} (docs/search.md); safepub, the "
                           "default with --differential-privacy")
    add_search_arguments(anon)
    add_limit_arguments(anon)
    anon.add_argument("--no-prune", action="store_true", help="search the whole lattice")
    anon.add_argument("--no-bound", action="store_true",
                      help="skip the certified lower bound of the report (docs/certify.md)")
    anon.add_argument("--drop-suppressed", action="store_true", help="leave suppressed rows out")
    add_refinement_arguments(anon)
    anon.add_argument("--jobs", type=number(int, "jobs"), default=1,
                      help="parallel workers evaluating nodes (1: serial; -1: every usable core; capped at the "
                           "usable cores)")
    anon.add_argument("--backend", choices=list(BACKENDS), default="loky",
                      help="loky (local processes), threading, or dask (a Dask cluster)")
    cluster_options(anon, "with --backend dask; without it, dask starts a local cluster of --jobs workers")
    anon.add_argument("--batch-size", type=number(int, "batch-size"),
                      help="nodes per parallel task (default: about two tasks per worker per population)")
    anon.add_argument("--max-risk", type=number(float, "max-risk"), metavar="R",
                      help="highest prosecutor risk allowed: raises k to ceil(1/R) (see docs/risk.md)")
    device_option(anon)
    node_option(anon)
    anon.add_argument("--partitioned", action="store_true",
                      help="row-partitioned evaluation on Dask for tables larger than one worker; see "
                           "docs/partitioned.md")
    anon.add_argument("--output", help="anonymized CSV (default: INPUT_anonymized.csv)")
    anon.add_argument("--report", help="JSON report (default: OUTPUT with .json)")
    anon.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report (docs/report.md)")
    public_report_option(anon)
    add_output_arguments(anon)
    quiet_option(anon)
    add_config_argument(anon)
    anon.set_defaults(run=run_anonymize)
