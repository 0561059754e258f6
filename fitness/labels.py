"""What a column's labels mean as numbers: the one test of "this label is a number" in fitness.

The ordered t-closeness distance (`fitness.models`) and ARX's interval loss (`fitness.objective`) both read a
column as numbers only when its labels parse as finite floats; they must agree on what parses.
"""

from __future__ import annotations

import math

from lattice import builders


def is_number(label: str) -> bool:
    """Whether a label reads as a plain decimal number: "12", "-0.5", "1e3"; not "nan", "inf", "?", "1_000" or
    non-ASCII digits (`lattice.builders.is_number`: the numeric builders, the metrics and t-closeness agree).

    Parameters
    ----------
    label : str
        A value's label as it appears in the data or a hierarchy.

    Returns
    -------
    bool
        True when `float(label)` succeeds and is finite.
    """
    return builders.is_number(label) and math.isfinite(float(label))  # 1e400 is a plain number, not a finite one
