"""Microaggregation of numeric QIs inside each released class (issue 26, item 5; ARX's semantics).

The classes are formed by the generalized QIs, as for any release (ARX's microaggregation with clustering: the
QI's hierarchy still takes part in the search). The released value of a microaggregated QI in a class is then
the class's mean or median of that QI's original values, written instead of the generalized value; suppressed
rows keep `*`. The value is the same on every row of a class, so the classes the written file forms (rows with
equal strings in every QI, as the independent checker groups them) are the released classes or unions of them
(two classes whose other QIs agree may share a mean): k-anonymity holds on the file as it does on the classes,
and the checker, unchanged, proves it. Its information loss per QI is the sum of squared errors against the
original values (SSE), and SSE over the total sum of squares about the column's mean (`relative_sse`: 0 loses
nothing, 1 is as coarse as one mean for every row), over the released rows, as ARX and sdcMicro report it.
docs/local-recoding.md has the design.
"""

from __future__ import annotations

import numpy as np

from fitness.encoding import EncodedQI
from kgen.io.table import CodedColumn
from lattice.builders import is_number
from lattice.errors import InputError


def leaf_numbers(qi: EncodedQI) -> np.ndarray:
    """The QI's original values as numbers, per leaf code; InputError when one is not a number."""
    labels = qi.labels[0]
    for code, label in enumerate(labels):
        if not is_number(label):
            row = int(np.flatnonzero(qi.codes[0] == code)[0]) + 1
            raise InputError(f"--microaggregate needs numbers, and data row {row} is not one", column=qi.name)
    return np.array([float(label) for label in labels])


def class_values(values: np.ndarray, classes: np.ndarray, count: int, function: str) -> np.ndarray:
    """Per class (ids 0..count-1), the mean or median of `values` over its rows."""
    sizes = np.bincount(classes, minlength=count)
    if function == "mean":
        return np.bincount(classes, weights=values, minlength=count) / np.maximum(sizes, 1)
    order = np.lexsort((values, classes))
    ordered = values[order]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    low = ordered[starts + (sizes - 1) // 2]
    high = ordered[starts + sizes // 2]
    return (low + high) / 2.0


def text(value: float) -> str:
    """A released number: at most 4 decimals, no trailing zeros (38.5814, 40)."""
    return np.format_float_positional(round(float(value), 4), trim="-")


def aggregate(qi: EncodedQI, function: str, classes: np.ndarray, suppressed: np.ndarray
              ) -> tuple[CodedColumn, dict]:
    """The released column of a microaggregated QI and its information loss.

    Parameters
    ----------
    qi
        The QI (its original values are its leaves).
    function
        "mean" or "median".
    classes
        Per row, its released class (`kgen.run.recoding.release_classes`; the suppressed rows' is ignored).
    suppressed
        Per row, whether it is suppressed (written `*`).

    Returns
    -------
    CodedColumn, dict
        The column (each class's value, `*` on suppressed rows) and the report's figures: function, classes,
        sse, sst, relative_sse, mean_squared_error.
    """
    values = leaf_numbers(qi)[qi.codes[0]]
    kept = ~suppressed
    ids, local = np.unique(classes[kept], return_inverse=True)
    local = local.reshape(-1)
    per_class = class_values(values[kept], local, ids.size, function)
    labels = [text(v) for v in per_class]
    distinct = sorted(set(labels))
    index = {label: i for i, label in enumerate(distinct)}
    codes = np.full(classes.size, len(distinct), dtype=np.int64)
    codes[kept] = np.array([index[label] for label in labels], dtype=np.int64)[local]
    released = per_class[local]
    sse = float(((values[kept] - released) ** 2).sum())
    sst = float(((values[kept] - values[kept].mean()) ** 2).sum()) if kept.any() else 0.0
    figures = {"function": function, "classes": int(ids.size), "sse": sse, "sst": sst,
               "relative_sse": sse / sst if sst > 0 else 0.0,
               "mean_squared_error": sse / int(kept.sum()) if kept.any() else 0.0}
    return CodedColumn(codes, tuple(distinct) + ("*",)), figures
