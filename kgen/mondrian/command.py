"""`kgen mondrian` (centralized or, with --workers, distributed on Dask or Spark) and `kgen mondrian-check`.

Mondrian is its own command rather than `kgen anonymize --algorithm mondrian` because its output model is
different: no lattice node, no suppression, no LOG/LOS search objective; a class per box of the partition,
generalized on its own; and options (`--generalization`, `--workers`, `--partitioning`, `--sample`) that
mean nothing to a full-domain search. See docs/mondrian.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kgen.csvio import check_target, same_file, write_atomic
from lattice.errors import InputError

if TYPE_CHECKING:
    from kgen.mondrian.core import Spec

# the same tuples as kgen.mondrian.core / .distributed / .api, repeated so that registering the commands imports
# neither pandas nor pyarrow (tests/test_mondrian.py checks they agree)
STRATEGIES = ("hierarchy", "prefix", "set", "interval")
PARTITIONINGS = ("quantile", "multidim")
ENGINES = ("dask", "spark")


class ReleaseCheckFailed(InputError):
    """The written release failed the independent check: nothing is published (a bug: report it)."""

    exit_code = 4


def _columns(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def _whole(name: str):
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
    return parse


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


def add_parsers(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("mondrian", help="Mondrian: local multidimensional recoding (k, distinct l), "
                                               "centralized or distributed on Dask or Spark (docs/mondrian.md)")
    run.add_argument("input", help="CSV file, glob of CSV files, or Parquet file/folder")
    run.add_argument("--qi", required=True, type=_columns, help="quasi-identifiers, comma-separated")
    run.add_argument("--k", required=True, type=_whole("k"))
    run.add_argument("--sensitive", help="sensitive column (for --l)")
    run.add_argument("--l", type=_whole("l"), default=1, help="distinct l-diversity of --sensitive (default 1)")
    run.add_argument("--generalization", action="append", default=[], metavar="[COL=]KIND",
                     help="hierarchy, prefix, set or interval, for every QI or COL=KIND for one (default: "
                          "hierarchy where given, interval for numbers, set otherwise)")
    run.add_argument("--hierarchy", action="append", default=[], metavar="COL=FILE", help="ARX hierarchy file")
    run.add_argument("--hierarchy-dir", help="folder with *hierarchy_<COL>.csv files")
    run.add_argument("--identifier", type=_columns, default=[], help="identifier columns (replaced by *)")
    run.add_argument("--workers", type=_whole("workers"),
                     help="distributed: number of fragments/workers (a LocalCluster on 127.0.0.1 unless "
                          "--scheduler); the output is then a folder of part-NNNNN.csv files")
    run.add_argument("--partitioning", choices=PARTITIONINGS, default="multidim")
    run.add_argument("--sample", type=_fraction, default=0.001, help="fraction the coordinator samples "
                                                                      "(default 0.001)")
    run.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786")
    run.add_argument("--engine", choices=ENGINES, default="dask", help="distributed: where the fragments' tasks "
                                                                         "run (default dask; same release)")
    run.add_argument("--master", metavar="URL", help="--engine spark: the Spark master (default local[WORKERS])")
    run.add_argument("--seed", type=_whole("seed"), default=0, help="seed of the coordinator's sample")
    run.add_argument("--output", help="release CSV (distributed: a folder of parts); default INPUT_mondrian.csv or "
                                          "INPUT_mondrian")
    run.add_argument("--report", help="JSON report (default: OUTPUT.json)")
    run.add_argument("--quiet", action="store_true")

    check = commands.add_parser("mondrian-check", help="independently verify a Mondrian release against the "
                                                       "original table")
    check.add_argument("original")
    check.add_argument("release", help="release CSV, or a folder of parts (with --report)")
    check.add_argument("--qi", required=True, type=_columns)
    check.add_argument("--k", required=True, type=_whole("k"))
    check.add_argument("--sensitive")
    check.add_argument("--l", type=_whole("l"), default=1)
    check.add_argument("--generalization", action="append", default=[], metavar="[COL=]KIND")
    check.add_argument("--hierarchy", action="append", default=[], metavar="COL=FILE")
    check.add_argument("--identifier", type=_columns, default=[])
    check.add_argument("--report", help="the run's report (for a folder of parts: each part's condition)")


def _default_output(source: str, distributed: bool) -> Path:
    path = Path(source)
    if any(ch in source for ch in "*?[") or path.is_dir():
        raise InputError("give --output for a glob or folder input", file=source)
    return path.with_name(f"{path.stem}_mondrian" + ("" if distributed else ".csv"))


def _kinds(spec: Spec) -> dict[str, str]:
    return {q.name: q.strategy for q in spec.qis}


def report_of(spec: Spec, args: argparse.Namespace, metrics: dict, seconds: dict, **extra: object) -> dict:
    return {
        "algorithm": "mondrian" if not args.workers else "distributed mondrian",
        "input": args.input, "k": spec.k, "l": spec.l, "l_variant": "distinct", "sensitive": spec.sensitive,
        "quasi_identifiers": {q.name: {"generalization": q.strategy, "order": q.order} for q in spec.qis},
        "hierarchies": pairs(args.hierarchy, "--hierarchy"),
        "recoding": "local multidimensional (strict Mondrian), no suppression",
        "metrics": metrics, "seconds": seconds, **extra,
    }


def require_frames() -> None:
    """Mondrian works on pandas frames and reads fragments with pyarrow (both optional extras): one line,
    exit 2, when either is missing, before anything is read."""
    import importlib.util

    missing = [name for name in ("pandas", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(f"kgen mondrian needs {' and '.join(missing)}: pip install \"kgen[pandas,parquet]\"")


def run_mondrian(args: argparse.Namespace) -> int:
    require_frames()
    from kgen.check_mondrian import check_release
    from kgen.mondrian.api import anonymize_distributed, build_spec, numeric_columns
    from kgen.mondrian.core import anonymize_fragment, summary
    from kgen.mondrian.storage import Source, describe

    distributed = args.workers is not None
    if distributed and args.workers < 1:
        raise InputError(f"--workers must be >= 1, got {args.workers}")
    if args.scheduler and not distributed:
        raise InputError("--scheduler needs --workers (the number of fragments)")
    if args.engine == "spark" and not distributed:
        raise InputError("--engine spark needs --workers (the number of fragments)")
    if args.engine == "spark":
        from kgen.mondrian.spark import require_spark

        require_spark()  # one line, exit 2, before anything is read
    output = Path(args.output) if args.output else _default_output(args.input, distributed)
    report = Path(args.report) if args.report else output.with_name(output.name + ".json") if distributed \
        else output.with_suffix(".json")
    if same_file(output, report):
        raise InputError("is given for both the output and the report", file=str(output))
    source = Source(args.input)
    hierarchies = pairs(args.hierarchy, "--hierarchy")
    protected = list(source.files) + list(hierarchies.values())
    check_target(report, protected)
    strategies = strategies_of(args.generalization)
    if isinstance(strategies, dict) and "*" in strategies:
        every = strategies.pop("*")
        strategies = {q: strategies.get(q, every) for q in args.qi}
    spec = build_spec(source, args.qi, args.k, args.l, args.sensitive, strategies, hierarchies,
                      args.hierarchy_dir, args.identifier)
    started = time.perf_counter()
    check = dict(qis=args.qi, k=spec.k, l=spec.l, sensitive=spec.sensitive, kinds=_kinds(spec),
                 hierarchies={q.name: hierarchies.get(q.name) or _found(args.hierarchy_dir, q.name)
                              for q in spec.qis if q.strategy == "hierarchy"},
                 identifiers=args.identifier)
    if not distributed:
        check_target(output, protected)
        frame = source.read(numeric_columns(spec))
        result = anonymize_fragment(frame, spec, where=args.input)
        metrics = summary(spec, [result])
        seconds = {"anonymize": result.seconds, "total": time.perf_counter() - started}
        body = report_of(spec, args, metrics, seconds)
        _publish_file(result.release, output, report, body, source.separator, args.input, check)
    else:
        if output.exists():
            raise InputError("already exists: give a new folder for the release parts (--output)", file=str(output))
        if not output.parent.is_dir():
            raise InputError(f"cannot be written: the folder {str(output.parent)!r} does not exist", file=str(output))
        temporary = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
        umask = os.umask(0)
        os.umask(umask)
        temporary.chmod(0o777 & ~umask)  # a regular folder once published, not mkdtemp's private one
        try:
            run = anonymize_distributed(args.input, spec, temporary, args.workers, args.partitioning, args.sample,
                                        args.seed, args.engine, args.scheduler, args.master)
            metrics = summary(spec, [t.result for t in run.tasks])
            fragments = [{"part": Path(t.path).name, "condition": c, "described": describe(c), "rows": t.result.rows,
                          "dp": t.result.dp, "read_seconds": t.read_seconds,
                          "anonymize_seconds": t.anonymize_seconds, "write_seconds": t.write_seconds}
                         for t, c in zip(run.tasks, run.conditions)]
            body = report_of(spec, args, metrics, run.seconds, workers=args.workers, partitioning=args.partitioning,
                             sample=args.sample, sample_rows=run.sample_rows, seed=args.seed,
                             engine=args.engine, scheduler=_cluster(args), fragments=fragments)
            body["verified"] = {"checker": "kgen.check_mondrian, on the written parts", "passed": True}
            text = json.dumps(body, indent=2) + "\n"
            (temporary / ".report.json").write_text(text, encoding="utf-8")
            verdict = check_release(args.input, temporary, report=temporary / ".report.json", **check)
            if not verdict.passed:
                raise ReleaseCheckFailed(f"the written release failed its independent check: {verdict.problems[0]}"
                                         "; nothing was published", file=str(output))
            (temporary / ".report.json").unlink()
            os.replace(temporary, output)
            write_atomic(report, text, protected)
        finally:
            if temporary.exists():
                shutil.rmtree(temporary, ignore_errors=True)
    if not args.quiet:
        print(describe_run(body, output, report))
    return 0


def _cluster(args: argparse.Namespace) -> str:
    """Where the tasks ran, for the report and the summary line."""
    if args.engine == "spark":
        return f"Spark {args.master}" if args.master else f"Spark local[{args.workers}] on 127.0.0.1"
    return args.scheduler or "LocalCluster on 127.0.0.1"


def _found(folder: str | None, column: str) -> str | None:
    if folder is None:
        return None
    from kgen.hierarchies import find_in_dir

    found = find_in_dir(folder, column)
    return str(found) if found else None


def _publish_file(release, output: Path, report: Path, body: dict, separator: str, original: str,
                  check: dict) -> None:
    """Write the release to a temporary file, check it independently, then rename release and report."""
    from kgen.check_mondrian import check_release
    from kgen.mondrian.storage import write_csv

    temporary = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        write_csv(release, temporary, separator)
        verdict = check_release(original, temporary, **check)
        if not verdict.passed:
            raise ReleaseCheckFailed(f"the written release failed its independent check: {verdict.problems[0]}; "
                                     "nothing was published", file=str(output))
        body["verified"] = {"checker": "kgen.check_mondrian, on the written file", "passed": True}
        write_atomic(report, json.dumps(body, indent=2) + "\n", [original])
        os.replace(temporary, output)
    finally:
        temporary.unlink(missing_ok=True)


def describe_run(body: dict, output: Path, report: Path) -> str:
    m = body["metrics"]
    lines = [f"{body['algorithm']}: {m['rows']} rows in {m['classes']} classes (smallest {m['smallest_class']}, "
             f"largest {m['largest_class']}), k = {body['k']}, l = {body['l']}"
             + (f", distinct l {m['min_distinct_l']}" if m["min_distinct_l"] is not None else ""),
             f"  DP {m['dp']:.4g} (DP/N {m['dp_per_row']:.2f})  NCP {m['ncp']:.4g} (per cell "
             f"{m['ncp_normalized']:.4f})  AECS {m['aecs']:.2f}  {body['seconds']['total']:.2f} s"]
    if "fragments" in body:
        lines.append(f"  {len(body['fragments'])} fragments ({body['partitioning']}, sample {body['sample']:g} = "
                     f"{body['sample_rows']} rows) on {body['scheduler']}")
    lines.append(f"  wrote {output} and {report} (verified independently)")
    return "\n".join(lines)


def run_check(args: argparse.Namespace) -> int:
    require_frames()
    from kgen.check_mondrian import check_release

    strategies = strategies_of(args.generalization) or {}
    if "*" in strategies:
        every = strategies.pop("*")
        strategies = {q: strategies.get(q, every) for q in args.qi}
    hierarchies = pairs(args.hierarchy, "--hierarchy")
    verdict = check_release(args.original, args.release, args.qi, args.k, args.l, args.sensitive, strategies,
                            hierarchies, args.identifier, args.report)
    status = "PASS" if verdict.passed else "FAIL"
    l_text = f", distinct l {verdict.min_distinct_l}" if verdict.min_distinct_l is not None else ""
    print(f"{status}: {args.release}: {verdict.rows} rows in {verdict.parts} part(s), {verdict.classes} classes, "
          f"smallest {verdict.smallest_class}{l_text}, DP {verdict.dp}; k = {args.k}, l = {args.l}")
    for problem in verdict.problems[:20]:
        print(f"  {problem}")
    return 0 if verdict.passed else 1


COMMANDS = {"mondrian": run_mondrian, "mondrian-check": run_check}
