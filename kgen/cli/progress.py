"""A console progress bar that moves: evaluations against the budget, or time against the time limit.

The size of the lattice is no total for a bar: at 97 QIs it is a 52-digit number and the bar never moves.
What ends a search that is not exhaustive is its budget (`--max-evaluations`) or its time limit
(`--time-limit`), so the bar shows the fraction of whichever will end it first, with the best LOG found so far.
Without either limit it falls back to the lattice size when that is small enough to be reached (exhaustive
searches), else it counts evaluations without a bar. Drawing is left to tqdm; the bar appears only on a
terminal, after `delay` seconds (short searches print nothing), and fits in 80 columns.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

from tqdm import tqdm

WIDTH = 80
STEPS = 1000  # the bar's resolution: tqdm counts permille of the limit that ends the search first
REACHABLE = 10**9  # a lattice larger than this is not a total that a search will reach


class ProgressBar:
    """Callable as a search's `on_progress(evaluations, best)` (see `lattice.search.base.Limits`); the
    command line gives one to `kgen.run.pipeline.anonymize`, which calls `begin` with the search's limits and `close`.

    Parameters
    ----------
    total
        The evaluation budget (`max_evaluations`), or None.
    stream
        Where to draw (default stderr); nothing is drawn unless it is a terminal or `force` is set.
    delay
        Seconds before the first drawing.
    time_limit
        The search's time limit in seconds, or None.
    space
        The number of nodes in the searched lattice: the total when there is no limit and it is reachable.
    """

    def __init__(self, total: int | None, stream: TextIO | None = None, delay: float = 1.0,
                 force: bool = False, time_limit: float | None = None, space: int | None = None) -> None:
        self.stream = stream or sys.stderr
        self.budget = total
        self.time_limit = time_limit
        self.space = space if space is not None and space <= REACHABLE else None
        self.delay = delay
        self.enabled = force or _isatty(self.stream)
        self.start = time.perf_counter()
        self.bar: object | None = None
        self.drawn = False
        self.last = -1.0

    def begin(self, total: int | None, time_limit: float | None, space: int | None) -> None:
        """Told by `kgen.run.pipeline.search` once the search is known, before it starts: its evaluation budget, time
        limit and lattice size (as the constructor's arguments); the clock starts again."""
        self.budget, self.time_limit = total, time_limit
        self.space = space if space is not None and space <= REACHABLE else None
        self.start = time.perf_counter()

    @property
    def bounded(self) -> bool:
        return bool(self.budget or self.time_limit or self.space)

    def fraction(self, evaluations: int, elapsed: float) -> float:
        """The share of the search done: the largest of evaluations/budget and elapsed/time limit (whichever
        ends it first); evaluations/lattice size when neither is set."""
        parts = []
        if self.budget:
            parts.append(evaluations / self.budget)
        if self.time_limit:
            parts.append(elapsed / self.time_limit)
        if not parts and self.space:
            parts.append(evaluations / self.space)
        return min(1.0, max(parts)) if parts else 0.0

    def describe(self, evaluations: int, elapsed: float, best: object) -> str:
        """The text beside the bar: evaluations (of the budget), seconds (of the limit), best LOG so far."""
        log = getattr(best, "log", None)
        loss = getattr(best, "loss", None)
        if log is None and loss is None:
            best_text = "no feasible node yet"
        elif log is not None and (loss is None or abs(loss - log) < 1e-12):
            best_text = f"best LOG {log:.4f}"
        else:
            best_text = f"best loss {loss:.4f} LOG {log:.4f}" if log is not None else f"best loss {loss:.4f}"
        if self.budget:
            count = f"{evaluations}/{self.budget} evals"
        elif self.space and not self.time_limit:
            count = f"{evaluations}/{self.space} nodes"
        else:
            count = f"{evaluations} evals"
        seconds = f"{elapsed:.0f}/{self.time_limit:g}s" if self.time_limit else f"{elapsed:.0f}s"
        return f"{count}, {seconds}, {best_text}"

    def _open(self, text: str, steps: int) -> object:

        # the text is held in a one-item list: tqdm then shows it as it is (a string would get a ", " before it)
        bar_format = "{percentage:3.0f}%|{bar}| {postfix[0]}" if self.bounded else "{postfix[0]}"
        # nrows: a terminal that reports 0 rows (a bare pty) would make tqdm hide the bar
        rows = max(shutil.get_terminal_size().lines, 2)
        return tqdm(total=STEPS if self.bounded else None, file=self.stream, ncols=WIDTH, nrows=rows,
                    bar_format=bar_format, postfix=[text], initial=steps, mininterval=0.1, leave=True,
                    dynamic_ncols=False,
                    ascii=not _unicode(self.stream))

    def __call__(self, evaluations: int, best: object) -> None:
        elapsed = time.perf_counter() - self.start
        if not self.enabled or elapsed < self.delay or elapsed - self.last < 0.1:
            return
        self.last = elapsed
        self.drawn = True  # before drawing: a Ctrl-C during the write must still get its line ended by close()
        text = self.describe(evaluations, elapsed, best)
        steps = int(STEPS * self.fraction(evaluations, elapsed)) if self.bounded else evaluations
        if self.bar is None:  # drawn on creation, already with this state
            self.bar = self._open(text, steps)
            return
        bar = self.bar
        bar.postfix = [text]  # type: ignore[attr-defined]
        bar.n = steps  # type: ignore[attr-defined]
        bar.refresh()  # type: ignore[attr-defined]

    def close(self) -> None:
        """End the bar's line; the bar may begin again (k-Optimize's search, then the lattice search)."""
        if self.bar is not None:
            self.bar.close()  # type: ignore[attr-defined]
            self.bar = None
        elif self.drawn:
            self.stream.write("\n")
            self.stream.flush()
        self.drawn, self.last = False, -1.0


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def _unicode(stream: TextIO) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return encoding in ("utf8", "utf16", "utf32")
