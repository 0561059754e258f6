"""The release in and out of Python: a pandas DataFrame of a table, and `write_release` for API users.

pandas users expect a DataFrame back, and API users need the same guarantees as the command line when they
write a release: the CSV and its JSON report written together, atomically, the privacy model checked on the
written file by the independent checker, and the release's SHA-256 in the report's provenance.
These functions work through `table.columns` and `table.column(name)` only, so they do not depend on how
`kgen.io.table.Table` stores its values.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kgen.io.table import to_pandas
from lattice.errors import InputError


def csv_text(table: object) -> str:
    from kgen.io.csvio import format_csv

    columns = list(table.columns)  # type: ignore[attr-defined]
    rows = zip(*(table.column(c) for c in columns))  # type: ignore[attr-defined]
    return format_csv(columns, rows, getattr(table, "separator", ","))


def write_release(result: object, path: str | os.PathLike, report: str | os.PathLike | None = None,
                  protected: Sequence[str | os.PathLike] = ()) -> Path:
    """Write an anonymization's release (CSV) and its report (JSON, default: `path` with `.json`) together.

    As `kgen anonymize` does (`kgen.report.build.publish`): both files go to temporary files first; the release is
    streamed to its file a chunk of rows at a time (`Table.write_csv`), never built as one string; the
    release's size and SHA-256 as written go into the report's provenance, the written release is checked with
    the independent checker (`kgen.check.verify`: ReleaseCheckError, exit code 4 on the command line), and only then
    is `verified` added to the report and are both renamed into place. The input file named in the report and
    the `protected` files are never overwritten. Returns the report's path.
    """
    from kgen.check.verify import rules_from_models, verify_file
    from kgen.io.csvio import same_file
    from kgen.report.build import publish

    target = Path(path)
    report_path = Path(report) if report is not None else target.with_suffix(".json")
    if same_file(target, report_path):
        raise InputError("is given for both the release and the report", file=str(target))
    r = result.report  # type: ignore[attr-defined]
    release = result.release  # type: ignore[attr-defined]
    params = (r.get("provenance") or {}).get("parameters", {}).get("values", {})
    dropped = bool(params.get("drop_suppressed", r["rows_released"] < r["rows"]))
    k, rules = rules_from_models(r["models"], dropped)
    source = (r.get("provenance") or {}).get("input", {}).get("path")
    inputs = list(protected) + ([source] if source else [])
    content = release.write_csv if hasattr(release, "write_csv") else csv_text(release)
    publish(target, report_path, content, r, inputs,
            lambda written: verify_file(written, list(r["quasi_identifiers"]), k, r["suppression_limit"], rules,
                                        separator=getattr(release, "separator", None)))
    return report_path


__all__ = ["to_pandas", "write_release"]
