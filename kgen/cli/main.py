"""The `kgen` command line: anonymize, check, apply, demo.

User errors end in one line on stderr and a non-zero exit (see docs/input-errors.md); never a traceback.
Ctrl-C (130) and SIGTERM (143) stop a run without writing anything and without leaving temporary files or
workers behind; running out of memory is one line (exit 5); a closed pipe (`kgen check ... | head -1`) ends
quietly.
"""

from __future__ import annotations

import argparse
import errno
import io
import os
import signal
import sys
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool

from kgen.cli import anonymize, apply, check, demo, explore, frontier, hierarchy, mondrian, report, risk
from kgen.cli.console import WORKING_ON
from kgen.cli.options import (
    HelpFormatter,
    Parser,
    apply_config_file,
    fill_from_config,
)
from kgen.io import files
from kgen.report import provenance
from kgen.run.pipeline import Interrupted
from kgen.runners.parallel import default_workers_timeout, stop_local_workers
from kgen.status import ExitCode
from kgen.version import version
from lattice.errors import InputError

# The commands, in the order `kgen --help` lists them: each module registers its parser (`add_parser`), which
# names the function that runs it (`set_defaults(run=...)`).


COMMAND_MODULES = (anonymize, check, apply, risk, report, hierarchy, frontier, explore, demo, mondrian)


def build_parser() -> argparse.ArgumentParser:
    """The `kgen` parser: each command module registers its own subcommand (`add_parser`)."""
    parser = Parser(prog="kgen", description="k-anonymity by generalization and suppression (KGen).",
                    formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"kgen {version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in COMMAND_MODULES:
        module.add_parser(commands)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that the same clean-up runs (temporary files removed,
    workers stopped, nothing written); main() then exits 143 with one line."""


TERM_RECEIVED = [False]  # set by the handler: a search stops on it as on Ctrl-C, and main() tells them apart


def on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: a second must not interrupt the clean-up
    TERM_RECEIVED[0] = True
    raise Terminated()


class QuietPipe(io.TextIOBase):
    """stdout that, once the reader has gone (`kgen check ... | head -1`), points fd 1 at /dev/null and
    drops the rest: no BrokenPipeError traceback, and the command still ends with its own exit status."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self.stream, self.closed_pipe = stream, False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self.gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self.gone()

    def gone(self) -> None:
        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass  # not a real file descriptor (a test's capture): dropping the text is enough

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


def out_of_memory_message() -> str:
    where = WORKING_ON.get("file")
    if "rows" in WORKING_ON:
        size = f"a table of {WORKING_ON['rows']:,} rows x {WORKING_ON['qis']} quasi-identifiers ({where})"
    elif where is not None:
        try:
            size = f"reading {where} ({os.path.getsize(str(where)) / 1e6:,.1f} MB)"
        except OSError:
            size = f"reading {where}"
    else:
        size = "this run"
    advice = WORKING_ON.get("advice", "--jobs 1 (each worker holds the table), --max-evaluations or --time-limit")
    return (f"kgen: error: out of memory on {size}; what would help: fewer quasi-identifiers or rows (anonymize a "
            f"sample, or split the file), {advice}, or a machine with more memory")


# What out of memory looks like when it is not a MemoryError: a thread that cannot start (RuntimeError), a
# shared library that cannot be mapped or an allocation refused inside an extension (ImportError, OSError).
MEMORY_WORDS = ("can't start new thread", "failed to map segment", "cannot allocate memory", "out of memory",
                "bad_alloc", "memoryerror")


def ran_out_of_memory(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from (scipy's "install seems to be broken" wraps the
    ImportError of a library it could not map), is the system refusing memory."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or (isinstance(current, OSError) and current.errno == errno.ENOMEM):
            return True
        if any(word in str(current).lower() for word in MEMORY_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def main(argv: Sequence[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = QuietPipe(stdout)
    TERM_RECEIVED[0] = False
    previous = signal.getsignal(signal.SIGTERM)
    handler_set = False
    try:
        signal.signal(signal.SIGTERM, on_sigterm)
        handler_set = True
    except ValueError:  # not the main thread: SIGTERM keeps its disposition
        pass
    try:
        return run_command(argv)
    finally:
        if handler_set:
            signal.signal(signal.SIGTERM, previous)
        sys.stdout = stdout


def run_command(argv: Sequence[str] | None) -> int:
    try:
        try:
            parser = build_parser()
            words = list(sys.argv[1:] if argv is None else argv)
            from_config, config_file = apply_config_file(parser, words)
            args = parser.parse_args(argv)
            fill_from_config(args, from_config)
            args.invocation = provenance.command_invocation(provenance.command_line(argv), config_file)
            files.lock_timeout()  # the environment's settings are checked before any work
            default_workers_timeout()  # (a bad KGEN_WORKERS_TIMEOUT failed only once a Dask cluster started)
            return args.run(args)
        except Interrupted as stop:
            if TERM_RECEIVED[0]:  # the search stopped on SIGTERM as it does on Ctrl-C
                raise Terminated() from None
            try:
                print(anonymize.interrupted_summary(stop), file=sys.stderr)
            except KeyboardInterrupt:  # a second Ctrl-C while summarizing
                print("kgen: interrupted; no output was written", file=sys.stderr)
            return ExitCode.INTERRUPTED
    except InputError as error:
        print(f"kgen: error: {error}", file=sys.stderr)
        return error.exit_code
    except Terminated:
        stop_local_workers()
        print("kgen: terminated (SIGTERM); no output was written", file=sys.stderr)
        return ExitCode.TERMINATED
    except KeyboardInterrupt:
        stop_local_workers()
        if TERM_RECEIVED[0]:  # SIGTERM, turned into a plain interruption by a search that stopped on it
            print("kgen: terminated (SIGTERM); no output was written", file=sys.stderr)
            return ExitCode.TERMINATED
        print("kgen: interrupted; no output was written", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except MemoryError:  # numpy's _ArrayMemoryError and pyarrow's ArrowMemoryError included
        print(out_of_memory_message(), file=sys.stderr)
        return ExitCode.OUT_OF_MEMORY
    except BrokenProcessPool:  # loky's TerminatedWorkerError (a RuntimeError, so caught before the next clause)
        stop_local_workers()
        print(out_of_memory_message().replace("out of memory on", "a parallel worker was killed (out of memory?) "
                                              "on", 1), file=sys.stderr)
        return ExitCode.OUT_OF_MEMORY
    except (RuntimeError, ImportError, OSError) as error:  # out of memory in another form; anything else is a bug
        if not ran_out_of_memory(error):
            raise
        stop_local_workers()
        print(out_of_memory_message(), file=sys.stderr)
        return ExitCode.OUT_OF_MEMORY
    finally:
        WORKING_ON.clear()


if __name__ == "__main__":
    sys.exit(main())
