"""A console progress bar for searches longer than about a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Callable as a search's `on_progress(evaluations, best)`; draws on a terminal after `delay` seconds."""

    def __init__(self, total: int | None, stream: TextIO | None = None, delay: float = 1.0,
                 force: bool = False) -> None:
        self.total, self.stream, self.delay = total, stream or sys.stderr, delay
        self.enabled = force or self.stream.isatty()
        self.start = time.perf_counter()
        self.last = 0.0
        self.drawn = False

    def __call__(self, evaluations: int, best: object) -> None:
        now = time.perf_counter() - self.start
        if not self.enabled or now < self.delay or now - self.last < 0.1:
            return
        self.last = now
        loss = getattr(best, "loss", None)
        best_text = f"best loss {loss:.4f}" if loss is not None else "no feasible node yet"
        if self.total:
            done = min(1.0, evaluations / self.total)
            bar = "#" * int(30 * done) + "-" * (30 - int(30 * done))
            text = f"\r[{bar}] {evaluations}/{self.total} nodes, {best_text}, {now:.1f}s"
        else:
            text = f"\r{evaluations} nodes, {best_text}, {now:.1f}s"
        self.drawn = True  # before writing: a Ctrl-C during the write must still get its line ended by close()
        self.stream.write(text)
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
