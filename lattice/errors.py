"""The one error type for bad user input, carried up to the CLI as a one-line message."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: a file, row, column or value that cannot be used.

    The message is complete on its own; the optional fields let callers and tests inspect what went wrong.
    `exit_code` is the CLI's exit status for this error (see the README's table of cases).
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
    ) -> None:
        parts = []
        if file is not None:
            parts.append(str(file))
        if row is not None:
            parts.append(f"row {row}")
        if column is not None:
            parts.append(f"column {column!r}")
        where = ", ".join(parts)
        super().__init__(f"{where}: {message}" if where else message)
        self.file, self.row, self.column, self.value = file, row, column, value
        if exit_code is not None:
            self.exit_code = exit_code


class NoSolutionError(InputError):
    """No node of the search space satisfies the privacy model within the suppression limit."""

    exit_code = 3
