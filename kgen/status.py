"""Exit codes and the errors that carry them: the one table (pip's `status_codes` is the model).

Every way a kgen command can end is a row of `ExitCode`; every error a user can meet is an `InputError`
(lattice/errors.py, the lowest layer, so that searches and evaluators can raise it too) whose `exit_code` is
one of these rows. The command line prints the error's one line and returns its code: no module defines a
number of its own, and docs/input-errors.md lists this table.
"""

from __future__ import annotations

from enum import IntEnum

from lattice.errors import InputError, NoSolutionError


class ExitCode(IntEnum):
    """What a `kgen` command's exit status means (README, docs/input-errors.md)."""

    SUCCESS = 0
    CHECK_FAILED = 1  # `kgen check` / `mondrian-check`: the file does not satisfy the model or its report
    BAD_INPUT = InputError.exit_code  # 2: bad input or usage
    NO_SOLUTION = NoSolutionError.exit_code  # 3: no node within the suppression limit
    RELEASE_CHECK_FAILED = 4  # the written release failed its independent check: a bug in kgen
    OUT_OF_MEMORY = 5
    CLUSTER = 6  # the Dask scheduler unreachable, silent, without workers, or lost
    OUTPUT_BUSY = 7  # another kgen run is publishing the same output
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
    TERMINATED = 143  # SIGTERM (128 + SIGTERM), what a shell reports for a process killed by it


class ArgumentError(InputError):
    """A command-line usage error (an unknown option, a missing value)."""

    exit_code = ExitCode.BAD_INPUT


class ChecksumError(InputError):
    """A file does not match the checksum its report records: it is not the file the report describes."""

    exit_code = ExitCode.CHECK_FAILED


class ReleaseCheckError(InputError):
    """The written release failed the independent check: nothing is published (a bug in kgen: report it)."""

    exit_code = ExitCode.RELEASE_CHECK_FAILED


class ClusterError(InputError):
    """The Dask scheduler could not be reached, did not answer, had no workers, or was lost (exit 6)."""

    exit_code = ExitCode.CLUSTER


class OutOfMemoryError(InputError):
    """The run cannot fit in the memory this process may use (RLIMIT_AS, the cgroup's limit), or ran out of it
    in a form that is not a MemoryError (a thread that cannot start, an extension that cannot be mapped): exit 5."""

    exit_code = ExitCode.OUT_OF_MEMORY


class OutputBusyError(InputError):
    """Another kgen run holds the lock on an output for longer than this run may wait (exit 7)."""

    exit_code = ExitCode.OUTPUT_BUSY


class KgenWarning(UserWarning):
    """What kgen warns about in Python (`warnings.warn`), printed on stderr by the command line; `--strict`
    (Config.strict) makes such a warning an error. Filter them as one family: `warnings.simplefilter("error",
    kgen.KgenWarning)`."""


class IdentifierWarning(KgenWarning):
    """A column released as it is (`--keep`, `--keep-unnamed`) looks like a direct identifier: named like one
    (id, name, email, ...) or unique on nearly every row. Kept on purpose it is released in clear, so the run
    says so where a notebook shows it."""


__all__ = ["ArgumentError", "ChecksumError", "ClusterError", "ExitCode", "IdentifierWarning", "InputError",
           "KgenWarning", "NoSolutionError", "OutOfMemoryError", "OutputBusyError", "ReleaseCheckError"]
