"""The one error type for bad user input, carried up to the CLI as a one-line message."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: a file, row, column or value that cannot be used.

    The message is complete on its own; the optional fields let callers and tests inspect what went wrong.
    `exit_code` is the CLI's exit status for this error (see docs/input-errors.md): 2 for bad input or
    usage, 3 for NoSolutionError.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        column: str | None = None,
        value: str | None = None,
        exit_code: int | None = None,
        line: int | None = None,
    ) -> None:
        parts = []
        if file is not None:
            parts.append(str(file))
        if row is not None:
            parts.append(f"row {row}")
        if line is not None:
            parts.append(f"line {line}")
        if column is not None:
            parts.append(f"column {column!r}")
        where = ", ".join(parts)
        text = f"{where}: {message}" if where else message
        # one line, always: a value or file name with a line break must not split the message
        super().__init__(text.replace("\r", "\\r").replace("\n", "\\n"))
        self.message = message
        self.file, self.row, self.column, self.value, self.line = file, row, column, value, line
        if exit_code is not None:
            self.exit_code = exit_code

    def located(self, *, file: str | None = None, row: int | None = None, column: str | None = None,
                note: str = "") -> InputError:
        """A copy of this error (same class and exit code) with the location fields it lacks filled in
        and `note` appended to the message: for callers that know where in the data the value came from."""
        return type(self)(
            self.message + note,
            file=self.file if self.file is not None else file,
            row=self.row if self.row is not None else row,
            column=self.column if self.column is not None else column,
            value=self.value,
            exit_code=self.exit_code,
            line=self.line,
        )


MAX_SHOWN = 40  # the most of a data value any message shows


MAX_NAMES = 10  # the most names (of columns, say) any message lists


def names_shown(names: object, limit: int = MAX_NAMES) -> str:
    """At most `limit` names, each clipped, then how many more: a table of 10,000 columns gives one line, not
    89 KB of them."""
    items = [clip(n, quote=False) for n in names]  # type: ignore[attr-defined]
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def clip(value: object, limit: int = MAX_SHOWN, quote: bool = True) -> str:
    """A value as a message may show it: quoted (repr) and cut to `limit` characters, `...` marking a cut.
    Messages never show more of the data than this (never a whole row)."""
    text = str(value)
    cut = text[:limit]
    shown = repr(cut) if quote else cut
    return shown + "..." if len(text) > limit else shown


class NoSolutionError(InputError):
    """No node of the search space satisfies the privacy model within the suppression limit."""

    exit_code = 3
