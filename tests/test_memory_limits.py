"""Out of memory is exit 5 in one line however it shows up (issue 25): a run the limits cannot hold is refused
before it starts (kgen/runners/memory.py), and what slips through as a thread that cannot start or an
extension that cannot be mapped is exit 5 at the command line's top (kgen/cli/main.py)."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kgen.cli import main as cli_main
from kgen.runners import memory
from kgen.status import ExitCode, OutOfMemoryError

QIS = "age,sex,zip,income,children"


def generated_table(path: Path, rows: int = 20_000) -> Path:
    """A table of `rows` rows and five numeric QIs (deterministic)."""
    rng = np.random.default_rng(25)
    columns = [rng.integers(0, 90, rows), rng.integers(0, 2, rows), rng.integers(10000, 10100, rows),
               rng.integers(0, 99999, rows), rng.integers(0, 5, rows)]
    lines = [QIS] + [",".join(map(str, row)) for row in zip(*columns)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("megabytes", [600, 700, 900])
def test_a_run_under_an_address_space_limit_it_cannot_fit_is_exit_5_in_one_line(tmp_path: Path,
                                                                               megabytes: int) -> None:
    """Under `ulimit -v` 600, 700 and 900 MB a run used to abort (134, std::bad_alloc), print a "can't start
    new thread" traceback or a scipy ImportError traceback, or spin in OpenBLAS's start-up for ever."""
    data = generated_table(tmp_path / "data.csv")
    command = (f"ulimit -v {megabytes * 1000}; exec {sys.executable} -m kgen anonymize {data} --qi {QIS} --k 5 "
               f"--output {tmp_path / 'out.csv'} --quiet")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == ExitCode.OUT_OF_MEMORY, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgen: error:"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "ulimit -v" in lines[0]
    assert not (tmp_path / "out.csv").exists()


def test_a_run_that_fits_is_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = generated_table(tmp_path / "data.csv", rows=200)
    monkeypatch.setattr(memory, "address_space_limit", lambda: memory.Limit(64 << 30, "virtual", "ulimit -v"))
    monkeypatch.setattr(memory, "cgroup_limit", lambda: memory.Limit(64 << 30, "resident", "cgroup"))
    memory.check_fits(str(data), 5)


def test_a_run_the_limit_cannot_hold_is_refused_before_reading(tmp_path: Path, monkeypatch, capsys) -> None:
    data = generated_table(tmp_path / "data.csv", rows=200)
    monkeypatch.setattr(memory, "address_space_limit", lambda: memory.Limit(300 << 20, "virtual", "ulimit -v"))
    with pytest.raises(OutOfMemoryError, match="ulimit -v is 300 MiB"):
        memory.check_fits(str(data), 5)
    code = cli_main.main(["anonymize",
                          "--keep-unnamed", str(data), "--qi", QIS, "--k", "2", "--output", str(tmp_path / "o.csv"),
                          "--quiet"])
    assert code == ExitCode.OUT_OF_MEMORY
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "o.csv").exists()


def test_the_estimate_grows_with_the_table(tmp_path: Path) -> None:
    small_table = memory.table_size(str(generated_table(tmp_path / "small.csv", rows=100)))
    large_table = memory.table_size(str(generated_table(tmp_path / "large.csv", rows=20_000)))
    assert small_table.rows == 101 and 19_000 < large_table.rows < 21_000  # estimated from the line ends
    small, large = memory.estimate(small_table, 5), memory.estimate(large_table, 5)
    assert large.virtual > small.virtual and large.resident > small.resident
    assert small.virtual > memory.LATER_IMPORTS  # the libraries still to be imported are counted


def test_a_resident_limit_is_compared_with_resident_memory() -> None:
    need = memory.Need(virtual=4 << 30, resident=500 << 20)
    assert memory.shortfall(need, [memory.Limit(1 << 30, "resident", "cgroup")]) is None
    assert memory.shortfall(need, [memory.Limit(400 << 20, "resident", "cgroup")]) is not None
    assert memory.shortfall(need, [memory.Limit(3 << 30, "virtual", "ulimit -v")]) is not None


@pytest.mark.parametrize(("layout", "expected"), [
    ({"cgroup": "0::/job\n", "job/memory.max": "1073741824\n"}, 1 << 30),
    ({"cgroup": "0::/job\n", "job/memory.max": "max\n"}, None),
    ({"cgroup": "0::/\n", "memory.max": "536870912\n"}, 1 << 29),
    ({"cgroup": "4:memory:/job\n", "memory/job/memory.limit_in_bytes": "268435456\n"}, 1 << 28),
    ({"cgroup": "4:memory:/job\n", "memory/memory.limit_in_bytes": "9223372036854771712\n"}, None),
    ({"cgroup": "4:cpu:/job\n"}, None),
])
def test_the_cgroup_memory_limit_is_read_from_v2_and_v1(tmp_path: Path, layout: dict, expected: int | None) -> None:
    for name, text in layout.items():
        target = tmp_path / ("proc-cgroup" if name == "cgroup" else Path("fs", name))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    limit = memory.cgroup_limit(str(tmp_path / "fs"), str(tmp_path / "proc-cgroup"))
    assert (limit.size if limit else None) == expected


def raising(error: BaseException):
    def run(args) -> int:
        raise error
    return run


def chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as cause:
            raise outer from cause
    except BaseException as error:
        return error


@pytest.mark.parametrize("error", [
    RuntimeError("can't start new thread"),
    chained(ImportError("The `scipy` install you are using seems to be broken"),
            ImportError("_fblas.so: failed to map segment from shared object")),
    OSError(errno.ENOMEM, "Cannot allocate memory"),
    ImportError("libopenblas.so: cannot allocate memory in static TLS block"),
])
def test_out_of_memory_in_another_form_is_exit_5_in_one_line(monkeypatch, capsys, error: BaseException) -> None:
    monkeypatch.setattr(cli_main, "build_parser", parser_running(raising(error)))
    assert cli_main.main(["report", "x.json"]) == ExitCode.OUT_OF_MEMORY
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "out of memory" in err


@pytest.mark.parametrize("error", [RuntimeError("a bug"), ImportError("No module named 'nothing'")])
def test_other_runtime_and_import_errors_are_not_called_out_of_memory(monkeypatch, error: BaseException) -> None:
    monkeypatch.setattr(cli_main, "build_parser", parser_running(raising(error)))
    with pytest.raises(type(error)):
        cli_main.main(["report", "x.json"])


def parser_running(run):
    """A `build_parser` whose every command runs `run`."""
    build = cli_main.build_parser

    def build_parser():
        parser = build()
        for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
            for sub in action.choices.values():
                sub.set_defaults(run=run)
        return parser
    return build_parser


def test_each_row_and_qi_is_counted_in_the_estimate() -> None:
    """The calibrated cost of a row: a million rows of five QIs add about 250 MiB of address space."""
    empty = memory.estimate(memory.Size(0, 0), 5).virtual
    million = memory.estimate(memory.Size(0, 1_000_000), 5).virtual
    assert 200 << 20 < million - empty < 300 << 20
    assert memory.estimate(memory.Size(0, 1_000_000), 10).virtual - million > 200 << 20
