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


def nesting(steps: list[int], plural: str, singular: str, things: str, name: str) -> list[int]:
    """Steps (interval widths, group sizes) that are whole numbers >= 1, each a multiple of the one before, so
    that the levels nest; an InputError naming the column otherwise."""
    if not steps or any(w < 1 for w in steps):
        raise InputError(f"{plural} {steps} must be whole numbers >= 1", column=name)
    for a, b in zip(steps, steps[1:]):
        if b % a:
            raise InputError(f"{singular} {b} is not a multiple of {a}: the {things} would not nest", column=name)
    return steps


def interval_hierarchy(name: str, values: Iterable[str], widths: Sequence[int]) -> Hierarchy:
    """Intervals of the given widths, one level per width; each width must be a multiple of the one before
    (so the intervals nest), and a `*` level tops it off."""
    widths = nesting([int(w) for w in widths], "interval widths", "interval width", "intervals", name)
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


# --- the steward's builders (issue 26): coded intervals, value orders, calendar levels, ages, left masks ------

def _decimal_text(number: Decimal) -> str:
    """A Decimal as plain text without exponent or trailing zeros (`Decimal("2.50")` -> `2.5`, `1E+1` -> `10`)."""
    text = format(number.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _widths(name: str, widths: Sequence[object]) -> list[Decimal]:
    """Interval widths as Decimals: positive, each a multiple of the one before (so the intervals nest)."""
    try:
        out = [Decimal(str(w).strip()) for w in widths]
    except ArithmeticError:
        raise InputError(f"interval widths {clip(str(list(widths)))} must be numbers", column=name) from None
    if not out or any(not w.is_finite() or w <= 0 for w in out):
        raise InputError(f"interval widths {[str(w) for w in widths]} must be positive numbers", column=name)
    for a, b in zip(out, out[1:]):
        if b % a:
            raise InputError(f"interval width {_decimal_text(b)} is not a multiple of {_decimal_text(a)}: the "
                             "intervals would not nest", column=name)
    return out


def coded_interval_hierarchy(name: str, values: Iterable[str], widths: Sequence[object],
                             bottom: object | None = None, top: object | None = None) -> Hierarchy:
    """Intervals of the given widths (whole or fractional, each a multiple of the one before) with bottom and
    top coding: a value below `bottom` reads `<bottom` and one at or above `top` reads `top+` at every level
    below the `*` top (sdcMicro's topBotCoding, ARX's interval bounds). With a bottom the intervals start at
    it ([18, 22], [23, 27] for width 5 from 18), else at multiples of the width; an interval that reaches the
    top code is cut at it, so no label claims values it cannot hold. Integer data gets closed labels
    `[low, high]`, data with fractions half-open ones `[low, high)`."""
    steps = _widths(name, widths)
    low_code = None if bottom is None else _number(str(bottom), name)
    high_code = None if top is None else _number(str(top), name)
    if low_code is not None and high_code is not None and low_code >= high_code:
        raise InputError(f"bottom {_decimal_text(low_code)} must be below top {_decimal_text(high_code)}",
                         column=name)
    numbers = {value: _number(value, name) for value in sorted(set(values))}
    integral = _integral(numbers.values()) and all(w == w.to_integral_value() for w in steps)
    origin = low_code if low_code is not None else Decimal(0)
    rows, shared = [], _Labels()
    for value, number in numbers.items():
        if low_code is not None and number < low_code:
            coded = [shared(f"<{_decimal_text(low_code)}")] * len(steps)
        elif high_code is not None and number >= high_code:
            coded = [shared(f"{_decimal_text(high_code)}+")] * len(steps)
        else:
            coded = [shared(_coded_interval(origin + ((number - origin) // w) * w, w, high_code, integral))
                     for w in steps]
        rows.append([value, *coded, TOP])
    return Hierarchy.from_rows(name, rows, f"interval hierarchy of {name!r}")


def _coded_interval(low: Decimal, width: Decimal, cap: Decimal | None, integral: bool) -> str:
    high = low + width if cap is None else min(low + width, cap)
    if integral:
        return f"[{_decimal_text(low)}, {_decimal_text(high - 1)}]"
    return f"[{_decimal_text(low)}, {_decimal_text(high)})"


def order_hierarchy(name: str, values: Iterable[str], order: Sequence[str], sizes: Sequence[int]) -> Hierarchy:
    """ARX's order-based builder: the values in a given order (`order`, e.g. Mon..Sun or low < mid < high),
    grouped into runs of `sizes[i]` consecutive values at level i + 1 (each size a multiple of the one
    before, so the groups nest), then `*`. A group is named `first..last` by its first and last value in the
    order; groups are cut by position in the order, not in the data, so new data gets the same groups.
    A data value missing from the order is an error naming it."""
    order = [str(v).strip() for v in order if str(v).strip()]
    if len(set(order)) != len(order):
        twice = next(v for i, v in enumerate(order) if v in order[:i])
        raise InputError(f"the value order names {clip(twice)} twice", column=name, value=twice)
    sizes = nesting([int(s) for s in sizes], "order group sizes", "order group size", "groups", name)
    position = {v: i for i, v in enumerate(order)}
    rows = []
    for value in sorted(set(values)):
        if value.strip() not in position:
            raise InputError(f"value {clip(value)} is not in the value order of the order builder", column=name,
                             value=value)
        i = position[value.strip()]
        row = [value]
        for size in sizes:
            start = i // size * size
            group = order[start:start + size]
            row.append(group[0] if len(group) == 1 else f"{group[0]}..{group[-1]}")
        rows.append(row + [TOP])
    return Hierarchy.from_rows(name, rows, f"order hierarchy of {name!r}")


CALENDAR_LEVELS = ("week", "month", "quarter", "year", "decade")


def calendar_hierarchy(name: str, values: Iterable[str], levels: Sequence[str], fmt: str = "%Y-%m-%d") -> Hierarchy:
    """Dates to the calendar levels asked for, in order, then `*`: week (ISO, `2026-W05`), month
    (`2026-01`), quarter (`2026-Q1`), year (`2026`), decade (`2020s`). A week does not nest in a month or a
    quarter, so after a week only the (ISO) year or decade may follow."""
    levels = [level.strip() for level in levels if level.strip()]
    unknown = [level for level in levels if level not in CALENDAR_LEVELS]
    if not levels or unknown:
        raise InputError(f"calendar levels must be some of {', '.join(CALENDAR_LEVELS)} in order, got "
                         f"{clip(','.join(levels))}", column=name)
    ranks = [CALENDAR_LEVELS.index(level) for level in levels]
    if ranks != sorted(set(ranks)):
        raise InputError("calendar levels must go from fine to coarse, each once (week, month, quarter, year, "
                         f"decade), got {clip(','.join(levels))}", column=name)
    if "week" in levels and ({"month", "quarter"} & set(levels)):
        raise InputError("a week does not nest in a month or a quarter: use week with year or decade only",
                         column=name)
    rows, shared = [], _Labels()
    for value in sorted(set(values)):
        day = _date(value, fmt, name)
        year = day.isocalendar()[0] if "week" in levels else day.year
        labels = {"week": f"{day.isocalendar()[0]:04d}-W{day.isocalendar()[1]:02d}",
                  "month": f"{day.year:04d}-{day.month:02d}", "quarter": f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}",
                  "year": f"{year:04d}", "decade": f"{year // 10 * 10:04d}s"}
        rows.append([value, *(shared(labels[level]) for level in levels), TOP])
    return Hierarchy.from_rows(name, rows, f"calendar hierarchy of {name!r}")


def _date(value: str, fmt: str, name: str) -> dt.date:
    try:
        return dt.datetime.strptime(value.strip(), fmt).date()
    except ValueError:
        raise InputError(f"value {clip(value)} is not a date in the format {fmt!r}", column=name,
                         value=value) from None


def age_hierarchy(name: str, values: Iterable[str], reference: str, bands: Sequence[int] = (),
                  fmt: str = "%Y-%m-%d") -> Hierarchy:
    """Birth dates to the age in whole years at the `reference` date (level 1), then age bands of the given
    widths (`[20, 24]`, `[20, 29]`: each a multiple of the one before), then `*`. A birth date after the
    reference date is an error naming it."""
    when = _date(reference, "%Y-%m-%d", name) if "-" in reference else None
    if when is None:
        raise InputError(f"the reference date {clip(reference)} must be written YYYY-MM-DD", column=name)
    widths = [int(b) for b in bands]
    if any(w < 1 for w in widths):
        raise InputError(f"age bands {widths} must be whole numbers >= 1", column=name)
    for a, b in zip(widths, widths[1:]):
        if b % a:
            raise InputError(f"age band {b} is not a multiple of {a}: the bands would not nest", column=name)
    rows, shared = [], _Labels()
    for value in sorted(set(values)):
        born = _date(value, fmt, name)
        if born > when:
            raise InputError(f"birth date {clip(value)} is after the reference date {reference}", column=name,
                             value=value)
        age = when.year - born.year - ((when.month, when.day) < (born.month, born.day))
        rows.append([value, shared(str(age)), *(shared(_interval(age // w * w, w)) for w in widths), TOP])
    return Hierarchy.from_rows(name, rows, f"age hierarchy of {name!r} at {reference}")


def left_masking_hierarchy(name: str, values: Iterable[str]) -> Hierarchy:
    """Mask characters from the left, one more per level (`12345` -> `*2345` -> `**345`): for codes whose
    meaning is at the end. As `masking_hierarchy` otherwise (whole masks below the top read `**`)."""
    values = sorted(set(values))
    h = max((len(v) for v in values), default=1) or 1
    rows, shared = [], _Labels()
    for value in values:
        row = [value]
        for level in range(1, h):
            hidden = min(level, len(value))
            masked = "*" * hidden + value[hidden:]
            row.append(shared("**" if masked == TOP else masked))
        row.append(TOP)
        rows.append(row)
    return Hierarchy.from_rows(name, rows, f"left masking hierarchy of {name!r}")
