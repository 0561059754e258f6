"""Verification of a release on the written file itself, with the independent checker (`kgen.check.kanonymity`).

The CLI writes the release to a temporary file, re-reads that file, checks the privacy model on it, and only
then renames it into place: a release that fails its own check is never published. The report's `verified`
record is written after that check ran, with its figures (`verified_record`).

A release written with `--escape-formulas` is read back and un-escaped before the check (`kgen.io.formulas`:
escaping is a bijection on values, so this checks exactly the values a reader recovers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kgen.check.kanonymity import CheckResult, ClassRule, check_k_anonymity
from kgen.io.formulas import unescape
from kgen.io.table import Table, read_csv
from kgen.status import ReleaseCheckError


def unescaped(table: Table) -> Table:
    """The table with `kgen.io.formulas.escape` undone on the header and every value."""
    columns = tuple(unescape(c) for c in table.columns)
    values = {unescape(c): [unescape(v) for v in table.values[c]] for c in table.columns}
    return Table(columns, values, table.source, table.separator, table.row_numbers)


def verify_file(path: str | os.PathLike, qi: list[str], k: int, suppression: float,
                rules: list[ClassRule], escaped: bool = False, separator: str | None = None,
                context: Mapping | None = None) -> CheckResult:
    """Read the file at `path` (un-escaping it when it was written with `--escape-formulas`) and check it
    (`context`: as `check_k_anonymity`'s)."""
    table = read_csv(path, separator) if separator else read_csv(path)
    result = check_k_anonymity(unescaped(table) if escaped else table, qi, k, suppression, rules, context)
    if not result.passed:
        raise ReleaseCheckError(
            f"the release failed its independent check ({len(result.violating_rows)} rows in classes that break "
            f"the model, {result.suppressed_rows} suppressed of {result.allowed} allowed): nothing was written; "
            "this is a bug in kgen, please report it")
    return result


def verified_record(result: CheckResult, escaped: bool = False) -> dict:
    """The report's `verified`: written only once the independent check of the written file has passed."""
    return {"checker": "kgen.check, on the written file", "passed": bool(result.passed), "rows": result.rows,
            "classes": result.classes, "smallest_class": result.smallest_class,
            "suppressed_rows": result.suppressed_rows, "escaped_formulas_undone": escaped}
