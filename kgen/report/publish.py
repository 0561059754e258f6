"""The one publish: a release and its report written as a locked pair, checked on the written file.

Every command and the API publish through `write_release` (`kgen anonymize`, `apply`, `demo`, and
`kgen.write_release`), which reads what to check from the report itself (its QIs, models and suppression
limit), so the check can never be of a weaker model than the one the report claims. `publish` writes both
files under temporary names and a lock (`kgen.io.files.write_atomic_many`), records the written release's
size and SHA-256 in the report's provenance, runs the independent check on the written bytes, and only then
adds `verified` and renames both into place. A check that fails publishes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TextIO

from kgen.check.rules import rules_from_models
from kgen.check.verify import verified_record, verify_file
from kgen.io.csvio import format_csv, write_csv
from kgen.io.files import check_target, output_lock, same_file, write_atomic, write_atomic_many
from kgen.io.formulas import escape
from kgen.io.table import Table, read_csv
from kgen.report import provenance
from kgen.report.build import CHECKER, formula_record, to_json
from kgen.report.public import public_json
from kgen.status import ReleaseCheckError
from lattice.errors import InputError, names_shown


class Tabular(Protocol):
    """What `csv_text` writes: any table with named columns."""

    columns: Sequence[str]

    def column(self, name: str) -> Sequence[str]: ...


class Publishable(Protocol):
    """A run's outcome that can be published: an anonymization, an apply, a partitioned run."""

    release: object
    report: dict


class WrittenPart(Protocol):
    temp: str
    final: str


class Parts(Protocol):
    """A partitioned run's checked parts under temporary names (`kgen.runners.partitioned.release`)."""

    folder: str
    parts: Sequence[WrittenPart]
    verified: dict

    def publish(self) -> None: ...

    def discard(self) -> None: ...

    def unpublish(self) -> None: ...


def publish(output: Path, report_path: Path, release: str | Callable[[TextIO], None], report: dict,
            protected: Sequence[str | os.PathLike], check: Callable[[Path], object],
            public: Path | None = None) -> None:
    """Write a release and its report as a pair: both or neither (`kgen.io.files.write_atomic_many`).

    Both go to temporary files first. Then the release's size and SHA-256 as written go into the report's
    provenance, `check` runs on the written temporary release, and only after it returned is `verified` added
    (`kgen.check.verify.verified_record`, the check's own figures) and the report rewritten; then both are renamed
    into place. A check that raises leaves `verified` saying it failed, with its error, in `report` (the
    caller's dict) and publishes nothing.

    Parameters
    ----------
    output, report_path
        Where the release and the report go.
    release
        The release's CSV text, or a function writing it to a text stream.
    report
        The report (changed in place: `provenance.release`, `verified`).
    protected
        Files that must never be overwritten (the input, hierarchy files).
    check
        The independent check of the written file: returns a `kgen.check.kanonymity.CheckResult` or raises (an
        InputError such as `kgen.check.verify.ReleaseCheckError`, exit 4).
    public
        Where the public report goes (`kgen.report.public`), or None: written with the pair, after the check
        and from the checked report, its size and SHA-256 recorded in the full report's provenance.
    """
    report.pop("verified", None)  # a verdict is only ever the one of the check below
    escaped = bool((report.get("formula_cells") or {}).get("escaped"))

    def check_pair(paths: list[Path]) -> None:
        provenance.attach_release_file(report, output, paths[0])  # the SHA-256 of the bytes on disk
        try:
            result = check(paths[0])
        except InputError as error:
            report["verified"] = {"checker": CHECKER, "passed": False, "error": str(error)}
            raise
        report["verified"] = result if isinstance(result, dict) else verified_record(result, escaped)  # type: ignore[arg-type]
        if public is not None:
            rewrite(paths[2], attach_public(report, public))
        rewrite(paths[1], to_json(report))

    items: list[tuple[Path, str | Callable[[TextIO], None]]] = [(output, release), (report_path, to_json(report))]
    write_atomic_many(items + ([(public, "")] if public is not None else []), protected=protected,
                      check=check_pair)


def rewrite(path: Path, text: str) -> None:
    """Write a temporary file of the pair again (after the check), flushed to disk; keeps its mode."""
    with open(path, "w", encoding="utf-8", newline="") as handle:  # truncates
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def attach_public(report: dict, public: Path) -> str:
    """The public report's text (from the checked report) and its name, size and SHA-256 recorded in the full
    report's provenance, so the steward's report says which public report goes with it."""
    text = public_json(report)
    data = text.encode("utf-8")
    report.setdefault("provenance", {})["public_report"] = {
        "path": str(public), "absolute_path": str(public.resolve()), "bytes": len(data),
        "sha256": provenance.sha256_bytes(data)}
    return text


def csv_text(table: Tabular) -> str:

    columns = list(table.columns)
    rows = zip(*(table.column(c) for c in columns))
    return format_csv(columns, rows, getattr(table, "separator", ","))


def release_writer(table: Table, report: dict, escape_formulas: bool, strict: bool,
                   warn: Callable[[str], None] | None) -> Callable[[TextIO], None]:
    """The release's CSV writer (a stream of rows, never one string), with formula cells escaped when asked.

    Cells that a spreadsheet would run as formulas and that are kept exact are a warning (`warn`, and the
    report's `warnings`), or with `strict` an InputError: written exactly, they are a risk to whoever opens
    the file, and the steward should decide."""
    cells = report.get("formula_cells") or formula_record(table)
    if cells["cells"] and not escape_formulas:
        message = (f"the release holds {cells['cells']} cells that a spreadsheet would run as formulas (they start "
                   f"with =, +, -, @, tab or CR) in columns {names_shown(cells['columns'])}; they are "
                   "written exactly: give --escape-formulas to prefix them with '")
        if strict:
            raise InputError(f"{message} (--strict makes this an error)")
        if warn is not None:
            warn(message)
        if message not in report.setdefault("warnings", []):
            report["warnings"].append(message)
    report["formula_cells"] = dict(cells, escaped=bool(escape_formulas and cells["cells"]))
    if not escape_formulas:
        return table.write_csv if hasattr(table, "write_csv") else lambda handle: handle.write(csv_text(table))

    def write_escaped(handle: TextIO) -> None:
        write_csv(handle, [escape(c) for c in table.columns],
                  ([escape(v) for v in row] for row in table.iter_rows()), table.separator)

    return write_escaped


def part_record(part: WrittenPart) -> dict:
    """A written part's size and SHA-256 (of its bytes under the temporary name), named by its final path."""
    final = part.final
    record = provenance.file_record(part.temp)
    return record | {"path": final, "absolute_path": str(Path(final).resolve())}


def publish_parts(release: Parts, folder: Path, report_path: Path, report: dict,
                  protected: Sequence[str | os.PathLike], public: Path | None = None) -> None:
    """A partitioned release and its report as a pair, under the output lock: each part's size and SHA-256
    (of the bytes written) go into the report's provenance, `verified` is the check of the written parts
    (run on the workers before this, `kgen.check.partitioned`), then the parts are renamed into place and the
    report written; a report that cannot be written takes the parts back (never a release without it)."""
    parts = release.parts
    if Path(release.folder).resolve() != folder.resolve():
        raise InputError("a partitioned release is published into the folder its parts were written to",
                         file=str(folder))
    with output_lock([folder, report_path] + ([public] if public is not None else [])):
        try:
            check_target(report_path, protected)
            if public is not None:
                check_target(public, protected)
            records = [part_record(w) for w in parts]
            report.setdefault("provenance", {})["release"] = {"path": str(folder), "parts": records}
            report["verified"] = dict(release.verified)
            text = attach_public(report, public) if public is not None else None
        except BaseException:
            release.discard()
            raise
        release.publish()
        try:
            if text is not None and public is not None:
                write_atomic(public, text, protected)
            write_atomic(report_path, to_json(report), protected)
        except BaseException:
            release.unpublish()
            raise


def write_release(result: Publishable, path: str | os.PathLike, report: str | os.PathLike | None = None,
                  protected: Sequence[str | os.PathLike] = (), *, escape_formulas: bool = False,
                  strict: bool = False, warn: Callable[[str], None] | None = None,
                  public: str | os.PathLike | None = None) -> Path:
    """Write a run's release (CSV) and its report (JSON, default: `path` with `.json`) as a checked pair.

    The one publish of kgen (`kgen anonymize`, `apply`, `demo` and the API): both files go to temporary
    files first; the release is streamed a chunk of rows at a time (`Table.write_csv`); its size and SHA-256
    as written go into the report's provenance; the written file is checked by the independent checker
    against what the report claims (its QIs, every model, the suppression limit; ReleaseCheckError, exit 4);
    only then is `verified` added and are both renamed into place (`publish`). The input named in the report
    and the `protected` files are never overwritten.

    Parameters
    ----------
    result
        An anonymization or an apply (`release` and `report`); the report gains `provenance.release`,
        `formula_cells.escaped` and `verified`.
    path, report
        Where the release and the report go.
    protected
        Files that must never be overwritten (inputs, hierarchy files).
    escape_formulas, strict, warn
        Formula cells escaped with `'`; with `strict` unescaped formula cells are an error, else `warn` is
        told (see `release_writer`).
    public
        Also write the public report there (`kgen.report.public`: what may be published beside the
        release), with the pair, after the check; its SHA-256 goes into the full report's provenance.

    Returns
    -------
    Path
        The report's path.
    """
    target = Path(path)
    report_path = Path(report) if report is not None else target.with_suffix(".json")
    if same_file(target, report_path):
        raise InputError("is given for both the release and the report", file=str(target))
    public_path = Path(public) if public is not None else None
    r = result.report
    release = result.release
    if hasattr(release, "parts"):  # a partitioned run's folder of parts (kgen.runners.partitioned.release)
        publish_parts(release, target, report_path, r, protected, public_path)  # type: ignore[arg-type]
        return report_path
    content = release_writer(release, r, escape_formulas, strict, warn)
    params = (r.get("provenance") or {}).get("parameters", {}).get("values", {})
    dropped = bool(params.get("drop_suppressed", r.get("rows_written", r["rows"]) < r["rows"]))
    k, rules = rules_from_models(r["models"], dropped)
    source = (r.get("provenance") or {}).get("input", {}).get("path")
    inputs = list(protected) + ([source] if source else [])
    escaped = bool(r["formula_cells"]["escaped"])
    publish(target, report_path, content, r, inputs,
            lambda written: verify_file(written, list(r["quasi_identifiers"]), k, r["suppression_limit"], rules,
                                        escaped, separator=getattr(release, "separator", None),
                                        context={"report": r}),
            public_path)
    return report_path


def write_frontier(result: dict, report_path: str | os.PathLike, table_path: str | os.PathLike | None = None,
                   protected: Sequence[str | os.PathLike] = ()) -> Path:
    """Write a frontier (`kgen.run.frontier.frontier`) as its JSON and CSV, a locked, checksummed pair.

    The CSV (one row per point; default: the JSON's path with .csv) is written first under a temporary name,
    its SHA-256 goes into the JSON's provenance, and the check reads the written CSV back and compares it,
    point by point, with the JSON's points before both are renamed into place (`publish`). Each point's own
    release was checked by the independent checker when the frontier was computed (`checked`).

    Returns
    -------
    Path
        The JSON's path.
    """
    target = Path(report_path)
    table = Path(table_path) if table_path is not None else target.with_suffix(".csv")
    if same_file(target, table):
        raise InputError("is given for both the frontier's JSON and its CSV", file=str(target))
    header, rows = frontier_table(result)
    result.setdefault("provenance", {})

    def check(written: Path) -> dict:
        read = read_csv(written)
        nodes = list(read.column("node")) if read.n else []
        if list(read.columns) != header or nodes != [row[0] for row in rows]:
            raise ReleaseCheckError("the written frontier CSV does not match its points: nothing was written; "
                                    "this is a bug in kgen, please report it")
        return {"checker": "the written CSV read back against the points", "passed": True, "rows": read.n,
                "points_checked": sum(bool(p.get("checked", {}).get("passed")) for p in result["points"])}

    publish(table, target, format_csv(header, rows, ","), result, list(protected), check)
    return target


def frontier_table(result: dict) -> tuple[list[str], list[list[str]]]:
    """The frontier as a table: one row per point (node as QI=L pairs, k, loss, risk, classes, suppressed)."""
    header = ["node", "k", "log", "loss", "los", "risk", "highest_prosecutor", "average_prosecutor", "classes",
              "suppressed", "smallest_class"]
    rows = [[",".join(f"{q}={x}" for q, x in p["node"].items()), str(p["k"]), repr(p["log"]), repr(p["loss"]),
             repr(p["los"]), repr(p["risk"]), repr(p["risks"]["highest_prosecutor"]),
             repr(p["risks"]["average_prosecutor"]), str(p["classes"]), str(p["suppressed"]),
             str(p["smallest_class"])] for p in result["points"]]
    return header, rows
