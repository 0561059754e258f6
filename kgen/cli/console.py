"""What every command shares on the console: warnings on stderr, the input being read (for the
out-of-memory message), and whether a progress bar may draw."""

from __future__ import annotations

import io
import sys

from kgen.io.table import Table, read_table
from kgen.runners.memory import check_fits


def warn(message: str) -> None:
    print(f"kgen: warning: {message}", file=sys.stderr)

def enabled_stream(quiet: bool):
    # not a terminal, so the bar stays off; unlike open("/dev/null") it holds no file descriptor
    return io.StringIO() if quiet else sys.stderr

# What the run is working on, for the out-of-memory message (main): the input and, once read, its size.
WORKING_ON: dict[str, object] = {}

def read_input(path: str, sep: str | None, qis: int, encoding: str = "utf-8") -> Table:
    WORKING_ON.clear()
    WORKING_ON["file"] = path
    check_fits(path, qis)  # a run the memory limits cannot hold is refused before it starts (exit 5)
    table = read_table(path, sep, encoding)
    WORKING_ON.update(rows=table.n, qis=qis)
    return table
