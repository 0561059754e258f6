"""The progress bar (kgen/progress.py): it moves with evaluations against the budget or time against the time
limit, whichever ends the search first, shows the best LOG so far in 80 columns, and stays off a terminal."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kgen.cli.progress import ProgressBar

BEST = SimpleNamespace(log=0.43215, loss=0.43215)


def drawn(bar: ProgressBar, evaluations: int, best: object, seconds: float) -> str:
    """The last line the bar drew for `evaluations` after `seconds`."""
    bar.start -= seconds
    bar(evaluations, best)
    bar.close()
    text = bar.stream.getvalue()  # type: ignore[attr-defined]
    assert text.endswith("\n")
    return text.rstrip("\n").split("\r")[-1]


def test_bar_follows_evaluations_against_the_budget() -> None:
    line = drawn(ProgressBar(5000, io.StringIO(), delay=0, force=True), 1250, BEST, 3)
    assert line.startswith(" 25%|") and "1250/5000 evals" in line and "best LOG 0.4321" in line
    assert len(line) <= 80


def test_bar_follows_time_against_the_time_limit() -> None:
    line = drawn(ProgressBar(None, io.StringIO(), delay=0, force=True, time_limit=40), 100, BEST, 10)
    assert line.startswith(" 25%|") and "10/40s" in line and "100 evals" in line


@pytest.mark.parametrize("evaluations, seconds, percent", [(4000, 1, 80), (500, 9, 90)])
def test_with_both_limits_the_one_that_ends_first_drives_the_bar(evaluations: int, seconds: float,
                                                                 percent: int) -> None:
    line = drawn(ProgressBar(5000, io.StringIO(), delay=0, force=True, time_limit=10), evaluations, BEST, seconds)
    assert line.startswith(f" {percent}%|")


def test_a_lattice_too_large_to_reach_is_no_total() -> None:
    """At 97 QIs the lattice has 52 digits: the bar counts evaluations instead of sitting at 0%."""
    line = drawn(ProgressBar(None, io.StringIO(), delay=0, force=True, space=10**52), 777, BEST, 2)
    assert "%" not in line and line.startswith("777 evals")
    small = drawn(ProgressBar(None, io.StringIO(), delay=0, force=True, space=1000), 500, BEST, 2)
    assert small.startswith(" 50%|") and "500/1000 nodes" in small


def test_best_so_far_says_when_nothing_is_feasible_and_names_another_objective() -> None:
    assert "no feasible node yet" in drawn(ProgressBar(10, io.StringIO(), delay=0, force=True), 3, None, 1)
    other = SimpleNamespace(log=0.5, loss=0.1234)
    assert "best loss 0.1234 LOG 0.5000" in drawn(ProgressBar(10, io.StringIO(), delay=0, force=True), 3, other, 1)


def test_line_fits_80_columns_with_large_figures() -> None:
    line = drawn(ProgressBar(10**9, io.StringIO(), delay=0, force=True, time_limit=86400), 123456789, BEST, 3600)
    assert len(line) <= 80


def test_bar_stays_silent_off_a_terminal_and_before_its_delay() -> None:
    stream = io.StringIO()
    off = ProgressBar(100, stream, delay=0)
    off.start -= 2
    off(50, BEST)
    early = ProgressBar(100, stream, delay=60.0, force=True)
    early(50, BEST)
    off.close()
    early.close()
    assert stream.getvalue() == ""


@pytest.mark.slow  # over 5 s: runs in .ci/run's second step
def test_bar_moves_on_a_terminal_during_a_real_search(tmp_path: Path) -> None:
    """`kgen anonymize` with a time limit on a pseudo-terminal: the bar's percentage grows toward 100."""
    names = [f"q{j}" for j in range(12)]  # 4^12 nodes: far more than the search can evaluate in 3 s
    rows = [",".join(names)] + [",".join(str((i * (j + 7)) % 997) for j in range(12)) for i in range(2000)]
    source = tmp_path / "in.csv"
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="200")
    process = subprocess.Popen(
        [sys.executable, "-m", "kgen", "anonymize", str(source), "--qi", ",".join(names), "--k", "2",
         "--suppression", "0.05", "--algorithm", "random", "--time-limit", "3", "--max-evaluations", "100000000",
         "--no-prune", "--output", str(tmp_path / "out.csv")],
        stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert process.wait(timeout=300) == 0
    text = seen.decode(errors="replace")
    percents = [int(p) for p in re.findall(r"(\d+)%\|", text)]
    assert percents, text[-2000:]
    if len(percents) < 3:
        pytest.skip(f"the search ended before the bar drew three times ({text[-300:]!r})")
    assert percents == sorted(percents) and percents[-1] > percents[0]
    lines = [line for line in text.replace("\r\n", "\r").replace("\n", "\r").split("\r") if "%|" in line]
    assert all(len(line) <= 80 for line in lines)
    assert all("/100000000 evals" in line and "/3s" in line for line in lines)
