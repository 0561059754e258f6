"""Which columns have a role, and which columns without one look like identifiers (a name, an id, unique on
every row): what the run warns about, or refuses, before anything is released."""

from __future__ import annotations

import re
import weakref

import numpy as np

from kgen.io.table import Table
from kgen.run.config import Config
from kgen.runners import parallel
from lattice.errors import MAX_NAMES

# Words that name direct identifiers (matched against the words of a column name: `patient_id`, `eMail`,
# `Full Name`), and compounds written as one word (`username`, `customerid`).
IDENTIFIER_WORDS = frozenset({
    "id", "ids", "uid", "uuid", "guid", "name", "names", "firstname", "lastname", "surname", "forename",
    "fullname", "username", "login", "email", "mail", "phone", "telephone", "tel", "mobile", "cellphone", "fax",
    "ssn", "sin", "nin", "nino", "passport", "iban", "bic", "account", "acct", "address", "street", "ip",
    "mrn", "license", "licence", "dob", "birthdate", "birthday", "social", "nhs", "tin", "vat",
})


IDENTIFIER_ENDINGS = ("name", "email", "phone", "number", "address")


ID_OWNERS = frozenset({"user", "customer", "patient", "client", "person", "member", "employee", "claim",
                       "account", "record", "student", "case", "subject", "session", "device", "order", "policy"})


NEARLY_UNIQUE = 0.9  # a column with at least this share of distinct values among all rows identifies rows


def name_words(column: str) -> list[str]:
    """The words of a column name, lower case: `patientID` -> patient, id; `e-mail` -> e, mail."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", column)]


def named_like_identifier(column: str) -> bool:
    words = name_words(column)
    return any(w in IDENTIFIER_WORDS or (w.endswith(IDENTIFIER_ENDINGS) and len(w) > 5)
               or (w.endswith("id") and w[:-2] in ID_OWNERS) for w in words)


_UNNAMED_LAST: list = [None, None, None]  # weak reference to the last table, its key and its answer


def unnamed_columns(table: Table, config: Config) -> list[dict]:
    """Columns that no option names (not QI, identifier or sensitive) and that look like an identifier:
    unique or nearly unique over the rows (at least 90 % distinct values), or named like one (id, name,
    email, phone, ssn, ...). Released as they are, they could identify people. (A run asks several times:
    the last answer is kept, without keeping the table alive.)"""
    key = (tuple(config.qi), tuple(config.identifiers), tuple(config.sensitive), tuple(config.missing))
    last, last_key, answer = _UNNAMED_LAST
    if last is not None and last() is table and last_key == key:
        return [dict(a) for a in answer]
    answer = find_unnamed(table, config)
    _UNNAMED_LAST[:] = [weakref.ref(table), key, answer]
    return [dict(a) for a in answer]


def find_unnamed(table: Table, config: Config) -> list[dict]:
    named = set(config.qi) | set(config.identifiers) | set(config.sensitive)
    missing = set(config.missing)
    found = []
    for column in table.columns:
        if column in named:
            continue
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


def run_warnings(table: Table, config: Config) -> list[str]:
    """What the run should warn about before searching (stderr and the report's `warnings`): columns that look
    like identifiers but have no role, and more jobs than usable cores."""
    unnamed = unnamed_columns(table, config)
    warnings = [f"column {u['column']!r} has no role ({u['reason']}) and is released as it is; name it with "
                "--identifier (replaced by *), --qi or --sensitive" for u in unnamed[:MAX_NAMES]]
    if len(unnamed) > MAX_NAMES:  # a line per column, at most MAX_NAMES of them: the report lists them all
        warnings.append(f"and {len(unnamed) - MAX_NAMES} more columns have no role and look like identifiers; "
                        "the report's unnamed_columns lists them all")
    if parallel.wants_parallel(config.jobs, config.backend) and not (config.backend == "dask" and config.scheduler):
        note = parallel.capped_jobs(config.jobs)[1]  # a remote cluster's cores are not ours to count
        if note is not None:
            warnings.append(note)
    return warnings
