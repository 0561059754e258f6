"""Hierarchy builders for numbers, strings, dates and categories (SPEC section 1).

Each builder takes the distinct raw values of a column (missing values excluded) and returns a validated
`Hierarchy`. Errors name the column and the offending value.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from lattice.errors import InputError, clip
from lattice.hierarchy import TOP, Hierarchy

NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
MAX_DIGITS = 18  # decimal rounding beyond 10^18 would need more levels than any table can use


def is_number(value: str) -> bool:
    """A plain decimal number (`-12`, `3.5`, `.5`, `1e3`); not `nan`, `inf`, `1_000` or non-ASCII digits."""
    return NUMBER.fullmatch(value.strip()) is not None


def _number(value: str, column: str) -> Decimal:
    if not is_number(value):
        raise InputError(f"value {clip(value)} is not a number; a numeric hierarchy needs numbers "
                         "(declare the missing-value token or give a hierarchy file)", column=column, value=value)
    return Decimal(value.strip())


def _interval(low: int, width: int, integral: bool = True) -> str:
    """`[low, high]` for integers; `[low, low + width)` when the data has fractions (9.5 is not in [0, 9])."""
    return f"[{low}, {low + width - 1}]" if integral else f"[{low}, {low + width})"


class _Labels(dict):
    """One string object per distinct label: a high-cardinality column (200,000 incomes) shares the few
    thousand interval labels of its upper levels instead of holding a new string per value and level."""

    def __call__(self, label: str) -> str:
        return self.setdefault(label, label)


def _integral(numbers: Iterable[Decimal]) -> bool:
    return all(n == n.to_integral_value() for n in numbers)


def _with_single_top(name: str, rows: list[list[str]], source: str) -> Hierarchy:
    """Append a `*` level when the last level still has more than one label."""
    if rows and len({r[-1] for r in rows}) > 1:
        rows = [r + [TOP] for r in rows]
    return Hierarchy.from_rows(name, rows, source)


def decimal_hierarchy(name: str, values: Iterable[str]) -> Hierarchy:
    """Decimal rounding, the paper's default for numbers: level L maps v to
    [floor(v / 10^L) * 10^L, floor(v / 10^L) * 10^L + 10^L - 1]; h = number of digits of max |v|.

    Negative numbers round down too (-5 -> [-10, -1]); level h is one class for non-negative data, and when
    it is not (negative numbers) a `*` level is added. With fractions, intervals are half-open:
    [0, 10) holds 9.5. Numbers of more than MAX_DIGITS digits are an error.
    """
    values = sorted(set(values))
    numbers = {v: _number(v, name) for v in values}
    for value, number in numbers.items():
        if number.copy_abs() >= Decimal(10) ** MAX_DIGITS:  # before floor(): 1e999999999 would not fit in memory
            raise InputError(f"value {clip(value)} has more than {MAX_DIGITS} digits: too large for decimal "
                             "rounding; give intervals or a hierarchy file", column=name, value=value)
    biggest = max((abs(int(math.floor(n))) for n in numbers.values()), default=0)
    h = max(1, len(str(biggest)))
    integral = _integral(numbers.values())
    rows, shared = [], _Labels()
    for value, number in numbers.items():
        row = [value]
        for level in range(1, h + 1):
            width = 10 ** level
            row.append(shared(_interval(int(math.floor(number / width)) * width, width, integral)))
        rows.append(row)
    return _with_single_top(name, rows, f"decimal hierarchy of {name!r}")


def interval_hierarchy(name: str, values: Iterable[str], widths: Sequence[int]) -> Hierarchy:
    """Intervals of the given widths, one level per width; each width must be a multiple of the one before
    (so the intervals nest), and a `*` level tops it off."""
    widths = [int(w) for w in widths]
    if not widths or any(w < 1 for w in widths):
        raise InputError(f"interval widths {widths} must be positive integers", column=name)
    for a, b in zip(widths, widths[1:]):
        if b % a:
            raise InputError(f"interval width {b} is not a multiple of {a}: the intervals would not nest",
                             column=name)
    numbers = {value: _number(value, name) for value in sorted(set(values))}
    integral = _integral(numbers.values())
    rows, shared = [], _Labels()
    for value, number in numbers.items():
        rows.append([value] + [shared(_interval(int(math.floor(number / w)) * w, w, integral)) for w in widths]
                    + [TOP])
    return Hierarchy.from_rows(name, rows, f"interval hierarchy of {name!r}")


def masking_hierarchy(name: str, values: Iterable[str]) -> Hierarchy:
    """Mask characters from the right, one more per level (`NL805` -> `NL80*` -> `NL8**`); h = the longest
    value's length, and the top level is `*`. A value masked whole below the top reads `**`, never `*`: a
    release marks its suppressed rows with `*` in every QI, and a generalized class must not look like them."""
    values = sorted(set(values))
    h = max((len(v) for v in values), default=1) or 1
    rows, shared = [], _Labels()
    for value in values:
        row = [value]
        for level in range(1, h):
            keep = max(0, len(value) - level)
            masked = value[:keep] + "*" * (len(value) - keep)
            row.append(shared("**" if masked == TOP else masked))
        row.append(TOP)
        rows.append(row)
    return Hierarchy.from_rows(name, rows, f"masking hierarchy of {name!r}")


def date_hierarchy(name: str, values: Iterable[str], fmt: str = "%Y-%m-%d", decade: bool = False) -> Hierarchy:
    """Dates: day -> month (YYYY-MM) -> year (YYYY) [-> decade (YYYYs)] -> `*`."""
    rows, shared = [], _Labels()
    for value in sorted(set(values)):
        try:
            day = dt.datetime.strptime(value.strip(), fmt).date()
        except ValueError:
            raise InputError(f"value {clip(value)} is not a date in the format {fmt!r}", column=name,
                             value=value) from None
        row = [value, shared(f"{day.year:04d}-{day.month:02d}"), shared(f"{day.year:04d}")]
        if decade:
            row.append(shared(f"{day.year // 10 * 10:04d}s"))
        rows.append(row + [TOP])
    return Hierarchy.from_rows(name, rows, f"date hierarchy of {name!r}")


def mapping_hierarchy(name: str, values: Iterable[str], levels: Sequence[Mapping[str, str]]) -> Hierarchy:
    """Categories through a chain of mappings (city -> province -> country), topped with `*`."""
    hierarchy = Hierarchy.from_levels(name, sorted(set(values)), levels, f"mapping of {name!r}")
    rows = [list(p) for p in hierarchy.paths.values()]
    return _with_single_top(name, rows, f"mapping of {name!r}")
