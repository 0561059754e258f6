"""Which columns have a role (`kgen.io.roles`: a column no option names is refused), and which kept columns
look like identifiers (a name, an id, unique on every row): what the run warns about before anything is
released, or with `strict` refuses."""

from __future__ import annotations

import weakref

import numpy as np

from kgen.io.roles import identifier_warning, kept_columns, named_like_identifier, require_roles
from kgen.io.table import Table
from kgen.run.config import Config
from kgen.runners import parallel
from lattice.errors import MAX_NAMES

NEARLY_UNIQUE = 0.9  # a column with at least this share of distinct values among all rows identifies rows


_UNNAMED_LAST: list = [None, None, None]  # weak reference to the last table, its key and its answer


def named(config: Config) -> list[str]:
    """The columns a run gives a role to (quasi-identifiers, identifiers, sensitive columns)."""
    return list(config.qi) + list(config.identifiers) + list(config.sensitive)


def check_roles(table: Table, config: Config) -> None:
    """Refuse a table with a column no role names (`kgen.io.roles.require_roles`), unless it is kept."""
    require_roles(table.columns, named(config), config.keep, config.keep_unnamed, table.source)


def unnamed_columns(table: Table, config: Config) -> list[dict]:
    """Columns released as they are (`keep`, or every unnamed one with `keep_unnamed`) that look like an
    identifier: unique or nearly unique over the rows (at least 90 % distinct values), or named like one (id,
    name, email, phone, ssn, ...). Released as they are, they could identify people. (A run asks several
    times: the last answer is kept, without keeping the table alive.)"""
    key = (tuple(config.qi), tuple(config.identifiers), tuple(config.sensitive), tuple(config.missing),
           tuple(config.keep), config.keep_unnamed)
    last, last_key, answer = _UNNAMED_LAST
    if last is not None and last() is table and last_key == key:
        return [dict(a) for a in answer]
    answer = find_unnamed(table, config)
    _UNNAMED_LAST[:] = [weakref.ref(table), key, answer]
    return [dict(a) for a in answer]


def find_unnamed(table: Table, config: Config) -> list[dict]:
    missing = set(config.missing)
    found = []
    for column in kept_columns(table.columns, named(config), config.keep, config.keep_unnamed):
        reasons = []
        if named_like_identifier(column):
            reasons.append("named like an identifier")
        if table.n >= 2:
            codes, labels = table.codes(column)  # per distinct value: a coded column holds no string per row
            present = np.bincount(codes, minlength=len(labels)).tolist() if len(labels) else []
            distinct = len({label.strip() for label, count in zip(labels, present) if count} - missing)
            if distinct >= NEARLY_UNIQUE * table.n:
                share = distinct / table.n
                reasons.append("unique on every row" if distinct == table.n else f"{share:.0%} distinct values")
        if reasons:
            found.append({"column": column, "reason": " and ".join(reasons)})
    return found


def identifier_warnings(table: Table, config: Config, unnamed: list[dict] | None = None) -> list[str]:
    """One warning per kept column that looks like an identifier (`unnamed_columns`, or `unnamed` when the
    caller found them already: each costs a pass over the column)."""
    found = unnamed_columns(table, config) if unnamed is None else unnamed
    return [identifier_warning(u["column"], u["reason"]) for u in found]


def run_warnings(table: Table, config: Config, unnamed: list[dict] | None = None) -> list[str]:
    """What the run should warn about before searching (stderr and the report's `warnings`): kept columns
    that look like identifiers (a line per column, at most MAX_NAMES of them: the report lists them all), and
    more jobs than usable cores. `unnamed`: `unnamed_columns` already found by the caller."""
    warnings = identifier_warnings(table, config, unnamed)
    if len(warnings) > MAX_NAMES:
        hidden = len(warnings) - MAX_NAMES
        warnings = warnings[:MAX_NAMES] + [f"and {hidden} more kept columns look like identifiers; the report's "
                                           "unnamed_columns lists them all"]
    if parallel.wants_parallel(config.jobs, config.backend) and not (config.backend == "dask" and config.scheduler):
        note = parallel.capped_jobs(config.jobs)[1]  # a remote cluster's cores are not ours to count
        if note is not None:
            warnings.append(note)
    return warnings
