"""Cells that a spreadsheet would run as formulas (CSV injection), and OWASP's escape for them.

A released CSV is often opened in Excel or LibreOffice, which treat a cell starting with `=`, `+`, `-`, `@`,
a tab or a carriage return as a formula (`=HYPERLINK(...)` can send data away). kgen keeps data exact by
default and warns when a release holds such cells; `--escape-formulas` prefixes them with `'` (OWASP's rule).

Two choices make the escape safe to check and to undo:
- a cell that is a plain number (`-3`, `+1.5`, `-2e3`) is not escaped and not counted: a spreadsheet reads it
  as that number, and escaping would turn a numeric column into text;
- a cell that already starts with `'` is escaped too (`'x` -> `''x`), so escaping is a bijection on values:
  `unescape` (drop one leading `'`) restores every value, equivalence classes are unchanged, and the
  independent check of an escaped file gives the same verdict as on the exact one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def is_formula(value: str) -> bool:
    """Whether a spreadsheet could run the cell as a formula (a plain number is not counted)."""
    return value.startswith(TRIGGERS) and not _NUMBER.fullmatch(value)


def needs_escape(value: str) -> bool:
    return is_formula(value) or value.startswith(QUOTE)


def escape(value: str) -> str:
    """OWASP's rule: a `'` before a cell that could run as a formula (and before one starting with `'`)."""
    return QUOTE + value if needs_escape(value) else value


def unescape(value: str) -> str:
    """The inverse of `escape` on the values it produces."""
    return value[1:] if value.startswith(QUOTE) else value


def formula_columns(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> tuple[int, list[str]]:
    """How many cells (header included) could run as formulas, and the columns that hold them."""
    count, found = 0, set()
    for index, name in enumerate(columns):
        if is_formula(name):
            count += 1
            found.add(index)
    for row in rows:
        for index, value in enumerate(row):
            if value[:1] in TRIGGERS and is_formula(value):
                count += 1
                found.add(index)
    return count, [columns[i] for i in sorted(found)]
