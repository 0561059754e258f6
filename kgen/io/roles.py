"""Every column has a role before anything is released: quasi-identifier, identifier, sensitive, or kept
(released as it is, ARX's "insensitive attribute"). A column no option names is refused, because copying it
unchanged is how direct identifiers (a name, a patient id) leave in clear when the steward forgot them.
Shared by every command that releases data (anonymize, apply, Mondrian) and the Python API; the names that
look like identifiers are recognised here too, so a kept column that looks like one is warned about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from lattice.errors import InputError

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

SHOWN = 10  # at most this many column names in the refusal's one line

ROLE_OPTIONS = ("--qi, --identifier (replaced by *), --sensitive, or --keep COLUMN (released as it is); "
                "--keep-unnamed releases every unnamed column as it is")


def name_words(column: str) -> list[str]:
    """The words of a column name, lower case: `patientID` -> patient, id; `e-mail` -> e, mail."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", column)]


def named_like_identifier(column: str) -> bool:
    """Whether a column's name reads like a direct identifier (id, name, email, phone, ssn, ...)."""
    words = name_words(column)
    return any(w in IDENTIFIER_WORDS or (w.endswith(IDENTIFIER_ENDINGS) and len(w) > 5)
               or (w.endswith("id") and w[:-2] in ID_OWNERS) for w in words)


def kept_columns(columns: Sequence[str], named: Iterable[str], keep: Iterable[str], keep_unnamed: bool) -> list[str]:
    """The columns released as they are: those `keep` names, and with `keep_unnamed` every column no role
    names."""
    named, keep = set(named), set(keep)
    return [c for c in columns if c in keep or keep_unnamed and c not in named]


def require_roles(columns: Sequence[str], named: Iterable[str], keep: Iterable[str], keep_unnamed: bool,
                  source: str | None = None) -> None:
    """Refuse (InputError, exit 2) a table with a column that no role names, unless `keep_unnamed`.

    Parameters
    ----------
    columns
        The table's columns, in order.
    named
        The columns given a role by the run (quasi-identifiers, identifiers, sensitive columns).
    keep, keep_unnamed
        The columns to release as they are, and whether every unnamed column is.
    source
        The file the message names.
    """
    keep = list(keep)
    unknown = [c for c in keep if c not in columns]
    if unknown:
        raise InputError(f"--keep names a column the table does not have: {unknown[0]!r}", file=source,
                         column=unknown[0])
    if keep_unnamed:
        return
    given = set(named) | set(keep)
    unnamed = [c for c in columns if c not in given]
    if not unnamed:
        return
    shown = ", ".join(repr(c) for c in unnamed[:SHOWN]) + (f" and {len(unnamed) - SHOWN} more"
                                                             if len(unnamed) > SHOWN else "")
    plural = "s" if len(unnamed) > 1 else ""
    raise InputError(f"{len(unnamed)} column{plural} without a role ({shown}): nothing is released with a column no "
                     f"option names; give each one with {ROLE_OPTIONS}", file=source)


def identifier_warning(column: str, reason: str) -> str:
    """The warning for a kept column that looks like an identifier (`reason`: named like one, unique on every
    row, ...)."""
    return (f"column {column!r} is kept (released as it is) but looks like an identifier ({reason}); name it "
            "with --identifier (replaced by *) unless it is safe to publish")
