"""`kgen mondrian` (centralized or, with --workers, distributed on Dask or Spark) and `kgen mondrian-check`.

Mondrian is its own command rather than `kgen anonymize --algorithm mondrian` because its output model is
different: no lattice node, no suppression, no LOG/LOS search objective; a class per box of the partition,
generalized on its own; and options (`--generalization`, `--workers`, `--partitioning`, `--sample`) that
mean nothing to a full-domain search. Everything else is shared with `kgen anonymize`: the option definitions
(`kgen.cli.options`), the readers and their one-line errors, the output checks, the Dask cluster handling
(address check, connect timeout, worker cap), the locked and checksummed publish of the release with its
report (`kgen.report.publish`), provenance and the risk section. See docs/mondrian.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kgen.cli.console import WORKING_ON, warn
from kgen.cli.options import (
    allow_k1_option,
    cluster_options,
    command_parser,
    encoding_option,
    hierarchy_options,
    identifier_option,
    keep_options,
    number,
    output_options,
    parse_hierarchies,
    privacy_options,
    public_report_option,
    qi_option,
    quiet_option,
    seed_option,
    sensitive_option,
)
from kgen.io.files import check_target, same_file
from kgen.io.hierarchies import find_in_dir
from kgen.report import provenance
from kgen.report.build import to_json
from kgen.report.publish import publish, publish_parts
from kgen.report.risk import sizes_report
from kgen.runners import parallel
from kgen.runners.memory import check_fits
from kgen.status import ReleaseCheckError
from lattice.errors import InputError

if TYPE_CHECKING:

    from kgen.mondrian.core import FragmentResult, Spec
    from kgen.mondrian.storage import Source

# the same tuples as kgen.mondrian.core / .distributed, repeated so that registering the commands imports
# neither pandas nor pyarrow (tests/test_mondrian.py checks they agree)
STRATEGIES = ("hierarchy", "prefix", "set", "interval")


PARTITIONINGS = ("quantile", "multidim")
ENGINES = ("dask", "spark")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"sample must be a fraction, got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"sample must be a fraction in (0, 1], got {text!r}")
    return value


def pairs(items: list[str], option: str) -> dict[str, str]:
    out = {}
    for item in items:
        column, sep, value = item.partition("=")
        if not sep or not column.strip() or not value.strip():
            raise InputError(f"{option} expects COLUMN=VALUE, got {item!r}")
        out[column.strip()] = value.strip()
    return out


def strategies_of(items: list[str]) -> str | dict[str, str] | None:
    """`--generalization interval` (every QI) and/or `--generalization age=interval` (one QI)."""
    every = [i for i in items if "=" not in i]
    if len(every) > 1:
        raise InputError("--generalization without COLUMN= may be given once")
    for kind in every + [i.partition("=")[2].strip() for i in items if "=" in i]:
        if kind not in STRATEGIES:
            raise InputError(f"unknown generalization {kind!r}; choose {', '.join(STRATEGIES)}")
    per = pairs([i for i in items if "=" in i], "--generalization")
    if every:
        return {"*": every[0], **per}
    return per or None


CHECKER = "kgen.check.mondrian, on the written file"


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen mondrian` and `kgen mondrian-check`."""
    run = command_parser(commands, "mondrian", "Mondrian: local multidimensional recoding (k, distinct l), "
                                               "centralized or distributed on Dask or Spark (docs/mondrian.md)")
    run.add_argument("input", help="CSV file, glob of CSV files, or Parquet file/folder")
    encoding_option(run)
    mondrian_model_options(run)
    run.add_argument("--workers", type=number(int, "workers"),
                     help="distributed: number of fragments (run on a LocalCluster on 127.0.0.1 of at most as many "
                          "processes as usable cores, unless --scheduler); the output is then a folder of "
                          "part-NNNNN.csv files")
    run.add_argument("--partitioning", choices=PARTITIONINGS, default="multidim")
    run.add_argument("--sample", type=_fraction, default=0.001, help="fraction the coordinator samples")
    cluster_options(run)
    run.add_argument("--engine", choices=ENGINES, default="dask",
                     help="distributed: where the fragments' tasks run (same release)")
    run.add_argument("--master", metavar="URL", help="--engine spark: the Spark master (default local[WORKERS])")
    seed_option(run, "seed of the coordinator's sample")
    keep_options(run)
    allow_k1_option(run)
    output_options(run, "release CSV (distributed: a folder of parts); default INPUT_mondrian.csv or INPUT_mondrian",
                   "JSON report (default: OUTPUT.json)")
    public_report_option(run)
    quiet_option(run)
    run.set_defaults(run=run_mondrian)

    check = command_parser(commands, "mondrian-check", "independently verify a Mondrian release against the "
                                                       "original table")
    check.add_argument("original")
    check.add_argument("release", help="release CSV, or a folder of parts (with --report)")
    encoding_option(check)
    mondrian_model_options(check)
    check.add_argument("--report", help="the run's report (for a folder of parts: each part's condition)")
    check.set_defaults(run=run_check)


def distinct_l(args: argparse.Namespace) -> object:
    """Mondrian's l (distinct l-diversity, a whole number): 1 when --l is not given; `--l 2` parses as the
    number 2.0 (l is real for entropy l-diversity), given to the engine as 2; a fraction is refused there."""
    if args.l is None:
        return 1
    return int(args.l) if float(args.l).is_integer() else args.l


def mondrian_model_options(parser: argparse.ArgumentParser) -> None:
    """The options `kgen mondrian` and `mondrian-check` share: the model and how each QI is generalized."""
    qi_option(parser)
    privacy_options(parser, only=("k", "l"))  # Mondrian enforces k and distinct l-diversity
    sensitive_option(parser, "the sensitive column of --l (one)")
    parser.add_argument("--generalization", action="append", default=[], metavar="[COL=]KIND",
                        help="hierarchy, prefix, set or interval, for every QI or COL=KIND for one (default: "
                             "hierarchy where given, interval for numbers, set otherwise)")
    hierarchy_options(parser)
    identifier_option(parser)


def sensitive_of(args: argparse.Namespace) -> str | None:
    if len(args.sensitive) > 1:
        raise InputError(f"Mondrian's distinct l-diversity takes one sensitive column, got {len(args.sensitive)}")
    return args.sensitive[0] if args.sensitive else None


def hierarchy_files(args: argparse.Namespace) -> dict[str, str]:
    """Every hierarchy file the run reads: given (--hierarchy) or found in --hierarchy-dir."""
    files = parse_hierarchies(args.hierarchy)
    if args.hierarchy_dir:
        for column in args.qi:
            found = find_in_dir(args.hierarchy_dir, column)
            if column not in files and found is not None:
                files[column] = str(found)
    return files


def _default_output(source: str, distributed: bool) -> Path:
    path = Path(source)
    if any(ch in source for ch in "*?[") or path.is_dir():
        raise InputError("give --output for a glob or folder input", file=source)
    return path.with_name(f"{path.stem}_mondrian" + ("" if distributed else ".csv"))


def _kinds(spec: Spec) -> dict[str, str]:
    return {q.name: q.strategy for q in spec.qis}


def report_of(spec: Spec, args: argparse.Namespace, metrics: dict, seconds: dict, **extra: object) -> dict:
    """The report, with the names the in-memory report uses for what both have (algorithm, models, k, l,
    quasi_identifiers, identifiers, sensitive, rows, classes, metrics, provenance, risk, verified)."""
    models = [{"model": "k-anonymity", "k": spec.k}]
    if spec.l > 1 and spec.sensitive:
        models.append({"model": "l-diversity", "variant": "distinct", "l": spec.l, "sensitive": spec.sensitive})
    return {
        "algorithm": "mondrian" if not args.workers else "distributed mondrian",
        "input": args.input, "models": models, "k": spec.k, "l": spec.l, "l_variant": "distinct",
        "quasi_identifiers": [q.name for q in spec.qis], "identifiers": list(spec.identifiers),
        "sensitive": [spec.sensitive] if spec.sensitive else [],
        "keep": list(args.keep), "keep_unnamed": bool(args.keep_unnamed), "warnings": list(args.warnings),
        "generalization": {q.name: {"generalization": q.strategy, "order": q.order} for q in spec.qis},
        "hierarchies": hierarchy_files(args), "seed": args.seed,
        "recoding": "local multidimensional (strict Mondrian), no suppression",
        "rows": metrics["rows"], "rows_released": metrics["rows"],
        "rows_written": metrics["rows"], "suppressed": 0,
        "classes": metrics["classes"], "smallest_class": metrics["smallest_class"],
        "metrics": metrics, "seconds": seconds, **extra,
    }


def require_frames() -> None:
    """Mondrian works on pandas frames and reads fragments with pyarrow (both optional extras): one line,
    exit 2, when either is missing, before anything is read."""

    missing = [name for name in ("pandas", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(f"kgen mondrian needs {' and '.join(missing)}: pip install \"kgen[pandas,parquet]\"")


def run_mondrian(args: argparse.Namespace) -> int:
    require_frames()
    # optional dependencies: the Mondrian engine needs pandas and pyarrow (checked just above)
    from kgen.mondrian.api import build_spec

    # optional dependency: pandas and pyarrow (the Mondrian engine)
    from kgen.mondrian.storage import Source

    distributed = args.workers is not None
    if distributed and args.workers < 1:
        raise InputError(f"--workers must be >= 1, got {args.workers}")
    if args.scheduler and not distributed:
        raise InputError("--scheduler needs --workers (the number of fragments)")
    if args.engine == "spark" and not distributed:
        raise InputError("--engine spark needs --workers (the number of fragments)")
    if args.engine == "spark":
        # optional dependency: pyspark and a Java runtime (extra `spark`); one line, exit 2, before any read
        from kgen.mondrian.spark import require_spark

        require_spark()
    if args.scheduler:
        parallel.check_address(args.scheduler)  # a malformed address: exit 2 before anything is read
    output = Path(args.output) if args.output else _default_output(args.input, distributed)
    report = Path(args.report) if args.report else output.with_name(output.name + ".json") if distributed \
        else output.with_suffix(".json")
    if same_file(output, report):
        raise InputError("is given for both the output and the report", file=str(output))
    WORKING_ON.clear()  # what the one-line out-of-memory message names and advises (kgen.cli.main)
    WORKING_ON.update(file=args.input, advice="--workers N (each fragment's task holds only its part; Parquet "
                                              "input lets a task read only its rows)")
    source = Source(args.input, args.encoding)
    if not distributed:  # the whole table is read here: refused before reading when the limits cannot hold it
        for file in source.files:  # (exit 5; under RLIMIT_AS pyarrow's scan can hang when its threads cannot start)
            check_fits(file, len(args.qi), advice="--workers N (each fragment's task holds only its part)")
    hierarchies = hierarchy_files(args)
    protected = list(source.files) + list(hierarchies.values())
    public = Path(args.public_report) if args.public_report else None
    check_target(report, protected)
    if public is not None:
        check_target(public, protected)
    if not distributed:
        check_target(output, protected)
    if args.k == 1 and not args.allow_k1:  # the message of Config.check, which Mondrian does not build
        raise InputError("k = 1 protects no one (every row may be unique): give --allow-k1 to release it anyway")
    warnings: list[str] = []
    spec = build_spec(source, args.qi, args.k, distinct_l(args), sensitive_of(args), expanded_strategies(args),
                      hierarchies, None, args.identifiers, args.keep, args.keep_unnamed, warn=warnings.append)
    for message in warnings:
        warn(message)
    args.warnings = warnings
    check = dict(qis=args.qi, k=spec.k, l=spec.l, sensitive=spec.sensitive, kinds=_kinds(spec),
                 hierarchies={q.name: hierarchies.get(q.name) for q in spec.qis if q.strategy == "hierarchy"},
                 identifiers=args.identifiers, encoding=source.encoding)
    run = run_distributed_mondrian if distributed else run_central_mondrian
    body = run(args, spec, source, output, report, protected, check)
    if not args.quiet:
        print(describe_run(body, output, report))
    return 0


def expanded_strategies(args: argparse.Namespace) -> dict[str, str] | None:
    strategies = strategies_of(args.generalization)
    if isinstance(strategies, dict) and "*" in strategies:
        every = strategies.pop("*")
        strategies = {q: strategies.get(q, every) for q in args.qi}
    return strategies


def run_central_mondrian(args: argparse.Namespace, spec: Spec, source: Source, output: Path, report: Path,
                         protected: list[str], check: dict) -> dict:
    """One fragment in this process, published as a locked pair: the release written under a temporary
    name, checked independently, its SHA-256 in the report, then both renamed into place."""
    from kgen.check.mondrian import check_release  # optional dependency: pandas (Mondrian's checker)
    from kgen.mondrian.api import numeric_columns  # optional dependency: pandas, pyarrow
    from kgen.mondrian.core import anonymize_fragment, summary

    # optional dependency: pandas and pyarrow (the Mondrian engine)
    from kgen.mondrian.storage import csv_writer

    started = time.perf_counter()
    frame = source.read(numeric_columns(spec))
    if len(frame) == 0:
        raise InputError("has a header but no data rows: nothing to anonymize", file=args.input)
    result = anonymize_fragment(frame, spec, where=args.input)
    metrics = summary(spec, [result])
    body = report_of(spec, args, metrics, {"anonymize": result.seconds, "total": time.perf_counter() - started},
                     provenance=provenance.for_files(source.files, check["hierarchies"], args.invocation),
                     risk=release_risk([result], spec))

    def verify(written: Path) -> dict:
        verdict = check_release(args.input, written, **check)
        if not verdict.passed:
            raise ReleaseCheckError(f"the written release failed its independent check: {verdict.problems[0]}; "
                                    "nothing was published", file=str(output))
        return {"checker": CHECKER, "passed": True, "rows": verdict.rows, "classes": verdict.classes,
                "smallest_class": verdict.smallest_class}

    publish(output, report, csv_writer(result.release, source.separator), body, protected,
            verify, Path(args.public_report) if args.public_report else None)
    return body


def release_risk(results: Sequence[FragmentResult], spec: Spec) -> dict:
    """The risk section of the release, as for `kgen anonymize` (`kgen.report.risk.sizes_report`: one
    definition), from the class sizes the fragments recorded: no second grouping of the release."""
    from kgen.mondrian.core import class_sizes  # optional dependency: pandas, pyarrow (the Mondrian engine)

    sizes = class_sizes(results)
    return sizes_report(sizes, int(sizes.sum()), 0, [q.name for q in spec.qis])


def run_distributed_mondrian(args: argparse.Namespace, spec: Spec, source: Source, output: Path, report: Path,
                             protected: list[str], check: dict) -> dict:
    """Fragments on Dask, written into a temporary folder, checked part by part, then the folder and the
    report published together under the output lock (each part's SHA-256 in the report)."""
    from kgen.check.mondrian import check_release  # optional dependency: pandas (Mondrian's checker)

    # optional dependency: pandas and pyarrow (the Mondrian engine)
    from kgen.mondrian.api import (
        anonymize_distributed,  # optional dependency: pandas, pyarrow
    )

    # optional dependency: pandas and pyarrow (the Mondrian engine)
    from kgen.mondrian.core import summary

    # optional dependency: pandas and pyarrow (the Mondrian engine)
    from kgen.mondrian.storage import describe

    if output.exists():
        raise InputError("already exists: give a new folder for the release parts (--output)", file=str(output))
    if not output.parent.is_dir():
        raise InputError(f"cannot be written: the folder {str(output.parent)!r} does not exist", file=str(output))
    temporary = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    umask = os.umask(0)
    os.umask(umask)
    temporary.chmod(0o777 & ~umask)  # a regular folder once published, not mkdtemp's private one
    try:
        run = anonymize_distributed(source, spec, temporary, args.workers, args.partitioning, args.sample,
                                    args.seed, args.engine, args.scheduler, args.master,
                                    connect_timeout=args.connect_timeout)
        metrics = summary(spec, [t.result for t in run.tasks])
        fragments = [{"part": Path(t.path).name, "condition": c, "described": describe(c), "rows": t.result.rows,
                      "sha256": provenance.sha256_file(t.path), "dp": t.result.dp, "read_seconds": t.read_seconds,
                      "anonymize_seconds": t.anonymize_seconds, "write_seconds": t.write_seconds}
                     for t, c in zip(run.tasks, run.conditions)]
        body = report_of(spec, args, metrics, run.seconds, workers=args.workers, partitioning=args.partitioning,
                         sample=args.sample, sample_rows=run.sample_rows,
                         engine=args.engine, scheduler=_cluster(args), fragments=fragments,
                         provenance=provenance.for_files(source.files, check["hierarchies"], args.invocation),
                         risk=release_risk([t.result for t in run.tasks], spec))
        (temporary / ".report.json").write_text(to_json(body), encoding="utf-8")
        verdict = check_release(args.input, temporary, report=temporary / ".report.json", **check)
        if not verdict.passed:
            raise ReleaseCheckError(f"the written release failed its independent check: {verdict.problems[0]}"
                                    "; nothing was published", file=str(output))
        (temporary / ".report.json").unlink()
        verified = {"checker": "kgen.check.mondrian, on the written parts", "passed": True, "rows": verdict.rows,
                    "classes": verdict.classes, "smallest_class": verdict.smallest_class}
        publish_parts(FolderParts(temporary, str(output), verified), output, report, body, protected,
                      Path(args.public_report) if args.public_report else None)
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return body


def _cluster(args: argparse.Namespace) -> str:
    """Where the tasks ran, for the report and the summary line."""
    if args.engine == "spark":
        return f"Spark {args.master} " if args.master else f"Spark local[{args.workers}] on 127.0.0.1"
    return args.scheduler or "LocalCluster on 127.0.0.1"


@dataclass(frozen=True)
class FolderPart:
    temp: str
    final: str


@dataclass
class FolderParts:
    """A distributed Mondrian release: checked parts in a temporary folder, published by renaming the folder
    to `folder` (the `Parts` that `kgen.report.publish.publish_parts`, the one publish of part releases, takes)."""

    temporary: Path
    folder: str
    verified: dict
    parts: list[FolderPart] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.parts = [FolderPart(str(p), str(Path(self.folder) / p.name))
                      for p in sorted(self.temporary.iterdir()) if not p.name.startswith(".")]

    def publish(self) -> None:
        if Path(self.folder).exists():
            raise InputError("already exists: another run published it first", file=self.folder)
        os.replace(self.temporary, self.folder)

    def unpublish(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)  # never a release without its report

    def discard(self) -> None:
        shutil.rmtree(self.temporary, ignore_errors=True)


def describe_run(body: dict, output: Path, report: Path) -> str:
    m = body["metrics"]
    lines = [f"{body['algorithm']}: {m['rows']} rows in {m['classes']} classes (smallest {m['smallest_class']}, "
             f"largest {m['largest_class']}), k = {body['k']}, l = {body['l']}"
             + (f", distinct l {m['min_distinct_l']}" if m["min_distinct_l"] is not None else ""),
             f"  DP {m['dp']:.4g} (DP/N {m['dp_per_row']:.2f})  NCP {number_text(m['ncp'])} (per cell "
             f"{number_text(m['ncp_normalized'])})  AECS {m['aecs']:.2f}  {body['seconds']['total']:.2f} s"]
    if "fragments" in body:
        lines.append(f"  {len(body['fragments'])} fragments ({body['partitioning']}, sample {body['sample']:g} = "
                     f"{body['sample_rows']} rows) on {body['scheduler']}")
    lines.append(f"  wrote {output} and {report} (verified independently)")
    public = ((body.get("provenance") or {}).get("public_report") or {}).get("path")
    if public:
        lines.append(f"    and {public} (public report)")
    return "\n".join(lines)


def number_text(value: float | None) -> str:
    """A figure for the console; a non-finite one (NCP of a QI spanning ±1e308) reads "n/a", as the
    report's null does."""
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.4g}"


def run_check(args: argparse.Namespace) -> int:
    require_frames()
    from kgen.check.mondrian import check_release  # optional dependency: pandas (Mondrian's checker)

    strategies = expanded_strategies(args) or {}
    verdict = check_release(args.original, args.release, args.qi, args.k, distinct_l(args), sensitive_of(args),
                            strategies, hierarchy_files(args), args.identifiers, args.report, args.encoding)
    status = "PASS" if verdict.passed else "FAIL"
    l_text = f", distinct l {verdict.min_distinct_l}" if verdict.min_distinct_l is not None else ""
    print(f"{status}: {args.release}: {verdict.rows} rows in {verdict.parts} part(s), {verdict.classes} classes, "
          f"smallest {verdict.smallest_class}{l_text}, DP {verdict.dp}; k = {args.k}, l = {distinct_l(args)}")
    for problem in verdict.problems[:20]:
        print(f"  {problem}")
    return 0 if verdict.passed else 1
