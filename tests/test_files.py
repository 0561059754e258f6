"""File safety (issue 11, item 3): regular files only, usual permissions, and a locked, consistent pair.

Devices, FIFOs and sockets are made in the test's own temporary folder (mknod, mkfifo, bind), never taken
from /dev: a run must refuse them and leave them as they were. The lock tests start real processes and are
bounded in time.
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgen.cli.main import main
from kgen.io.files import OutputBusyError, output_lock, write_atomic_many

PEOPLE = "age,zip,sex\n" + "".join(f"{20 + i % 7},{13000 + i % 3},{'MF'[i % 2]}\n" for i in range(30))
REPO = Path(__file__).resolve().parents[1]


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgen: error: "), err
    assert "Traceback" not in err
    return lines[0]


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, err


def anonymize(capsys: pytest.CaptureFixture[str], source: Path, output: Path, *extra: object) -> tuple[int, str]:
    return run(capsys, "anonymize",
               "--allow-k1",
               "--keep-unnamed", source, "--qi", "age,zip", "--k", "2", "--output", output, "--quiet", *extra)


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(PEOPLE, encoding="utf-8")
    return path


def make_device(path: Path) -> bool:
    """A character device node like /dev/null at `path` (needs CAP_MKNOD); False where it cannot be made."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return True
    except (PermissionError, OSError):
        return False


def dev_null_is_intact() -> bool:
    st = os.stat("/dev/null")
    return stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3


# ---------------------------------------------------------------- outputs


def test_output_symlinked_to_dev_null_is_refused_and_dev_null_untouched(people, tmp_path, capsys):
    link = tmp_path / "null.csv"
    link.symlink_to("/dev/null")
    before = os.stat("/dev/null")
    code, err = anonymize(capsys, people, link)
    assert code == 2
    assert f"{link}: is a character device, not a regular file" in one_line(err)
    assert dev_null_is_intact() and stat.S_IMODE(os.stat("/dev/null").st_mode) == stat.S_IMODE(before.st_mode)
    assert link.is_symlink()
    assert not (tmp_path / "null.json").exists()


def test_output_device_node_is_refused_and_left_a_device(people, tmp_path, capsys):
    device = tmp_path / "device"
    if not make_device(device):
        pytest.skip("cannot create a device node here (needs CAP_MKNOD)")
    code, err = anonymize(capsys, people, device, "--report", tmp_path / "r.json")
    assert code == 2 and "is a character device, not a regular file" in one_line(err)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert not (tmp_path / "r.json").exists()


def test_report_that_is_a_device_is_refused_too(people, tmp_path, capsys):
    link = tmp_path / "report.json"
    link.symlink_to("/dev/null")
    code, err = anonymize(capsys, people, tmp_path / "out.csv", "--report", link)
    assert code == 2 and f"{link}: is a character device" in one_line(err)
    assert not (tmp_path / "out.csv").exists() and dev_null_is_intact()


def test_fifo_output_is_refused_and_stays_a_fifo(people, tmp_path, capsys):
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    code, err = anonymize(capsys, people, fifo)
    assert code == 2 and "is a named pipe (FIFO), not a regular file" in one_line(err)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_socket_output_is_refused_and_stays_a_socket(people, tmp_path, capsys):
    path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        code, err = anonymize(capsys, people, path)
    assert code == 2 and "is a socket, not a regular file" in one_line(err)
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_folder_output_is_refused(people, tmp_path, capsys):
    folder = tmp_path / "out.csv"
    folder.mkdir()
    code, err = anonymize(capsys, people, folder)
    assert code == 2 and "is a folder: give a file name" in one_line(err)


def test_write_atomic_many_refuses_a_device_even_when_called_directly(tmp_path):
    link = tmp_path / "x.csv"
    link.symlink_to("/dev/null")
    with pytest.raises(Exception, match="character device"):
        write_atomic_many([(link, "a\n")])
    assert dev_null_is_intact()


# ---------------------------------------------------------------- inputs


def run_kgen(args: list[str], cwd: Path, timeout: float = 60, memory: int | None = None
             ) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "kgen", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, preexec_fn=limit)


def test_fifo_input_is_refused_at_once_instead_of_hanging(tmp_path):
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)  # nobody ever writes to it: opening it for reading would block for ever
    start = time.monotonic()
    done = run_kgen(["anonymize",
                     "--keep-unnamed", str(fifo), "--qi", "age", "--k", "2", "--output", str(tmp_path / "o.csv")],
                    tmp_path, timeout=60)
    assert time.monotonic() - start < 60
    assert done.returncode == 2
    assert f"{fifo}: is a named pipe (FIFO), not a regular file" in one_line(done.stderr)


def test_dev_zero_input_is_refused_instead_of_filling_the_memory(tmp_path):
    link = tmp_path / "zeros.csv"
    link.symlink_to("/dev/zero")
    # in a child with 2 GB of address space and a time limit: should the check come back, the test fails
    # quickly instead of filling the machine's memory
    done = run_kgen(["anonymize",
                     "--keep-unnamed", str(link), "--qi", "age", "--k", "2", "--output", str(tmp_path / "o.csv")],
                    tmp_path, timeout=60, memory=2 << 30)
    assert done.returncode == 2
    assert f"{link}: is a character device, not a regular file" in one_line(done.stderr)


def test_socket_input_is_refused(tmp_path, capsys):
    path = tmp_path / "in.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        code, err = anonymize(capsys, path, tmp_path / "o.csv")
    assert code == 2 and "is a socket, not a regular file" in one_line(err)


def test_fifo_hierarchy_is_refused(people, tmp_path):
    fifo = tmp_path / "sex.csv"
    os.mkfifo(fifo)
    done = run_kgen(["anonymize",
                     "--keep-unnamed", str(people), "--qi", "sex", "--k", "2", "--hierarchy", f"sex={fifo}",
                     "--output", str(tmp_path / "o.csv")], tmp_path, timeout=60)
    assert done.returncode == 2
    assert f"{fifo}, column 'sex': is a named pipe (FIFO), not a regular file" in one_line(done.stderr)


def test_check_refuses_a_device_input(tmp_path, capsys):
    link = tmp_path / "release.csv"
    link.symlink_to("/dev/zero")
    code, err = run(capsys, "check", link, "--qi", "age", "--k", "2")
    assert code == 2 and "is a character device" in one_line(err)


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_new_outputs_get_0666_minus_the_umask(people, tmp_path, capsys, mask):
    output = tmp_path / f"out{mask:o}.csv"
    old = os.umask(mask)
    try:
        code, err = anonymize(capsys, people, output)
    finally:
        os.umask(old)
    assert code == 0, err
    for path in (output, output.with_suffix(".json")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, (path, oct(path.stat().st_mode))


def test_a_replaced_output_keeps_its_mode(people, tmp_path, capsys):
    output, report = tmp_path / "out.csv", tmp_path / "out.json"
    for path, mode in ((output, 0o644), (report, 0o604)):
        path.write_text("old\n")
        path.chmod(mode)
    old = os.umask(0o077)  # the umask applies to new files only
    try:
        code, err = anonymize(capsys, people, output)
    finally:
        os.umask(old)
    assert code == 0, err
    assert output.read_text() != "old\n"
    assert stat.S_IMODE(output.stat().st_mode) == 0o644
    assert stat.S_IMODE(report.stat().st_mode) == 0o604


# ---------------------------------------------------------------- the lock


HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from kgen.io.files import output_lock
    with output_lock([sys.argv[1]], timeout=5):
        Path(sys.argv[2]).write_text("held")
        time.sleep(float(sys.argv[3]))
""")


def hold_lock(target: Path, marker: Path, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(target), str(marker), str(seconds)], env=env)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the lock holder did not start"
        time.sleep(0.02)
    return process


def test_a_second_run_fails_with_exit_7_while_another_holds_the_output(people, tmp_path, capsys, monkeypatch):
    output = tmp_path / "out.csv"
    holder = hold_lock(output, tmp_path / "held", 20)
    try:
        monkeypatch.setenv("KGEN_LOCK_TIMEOUT", "0.5")
        code, err = anonymize(capsys, people, output)
    finally:
        holder.kill()
        holder.wait(10)
    assert code == 7
    assert f"{output}: is being written by another kgen run" in one_line(err)
    assert not output.exists() and not output.with_suffix(".json").exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_second_run_waits_for_the_first_and_then_publishes(people, tmp_path, capsys, monkeypatch):
    output = tmp_path / "out.csv"
    holder = hold_lock(output, tmp_path / "held", 1.0)
    monkeypatch.setenv("KGEN_LOCK_TIMEOUT", "30")
    start = time.monotonic()
    code, err = anonymize(capsys, people, output)
    holder.wait(30)
    assert code == 0, err
    assert time.monotonic() - start >= 0.5  # it waited for the holder
    assert output.exists() and output.with_suffix(".json").exists()
    assert not list(tmp_path.glob(".*kgen-lock"))  # the lock files are removed when done


def test_output_busy_error_is_exit_7_and_a_input_error():
    assert OutputBusyError("x").exit_code == 7
    assert isinstance(OutputBusyError("x"), ValueError)


def test_lock_is_reentrant_within_one_process_and_released_at_the_end(tmp_path):
    # a caller (the CLI) may hold the lock for a whole run and then publish through write_atomic_many
    target = tmp_path / "a.csv"
    with output_lock([target], timeout=1):
        write_atomic_many([(target, "x\n")], lock_timeout=0.2)
        assert (tmp_path / ".a.csv.kgen-lock").exists()
    assert not (tmp_path / ".a.csv.kgen-lock").exists()
    with output_lock([target], timeout=0.2):  # released: free again
        pass


# Run A publishes its pair slowly: it pauses between renaming its release and renaming its report until run B
# has either published (no lock: B's pair lands in A's pause, and A's report then lands beside B's release) or
# is waiting for the lock (B has the lock file open). Either way the pause ends at once, so the test is quick.
SLOW_FIRST = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from kgen.io import files
    from kgen.cli.main import main
    marker, report = Path(sys.argv[1]), Path(sys.argv[2])
    real, done = os.replace, []

    def waiting(pid):
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            return False
        return any(link.endswith(".kgen-lock") for link in links)

    def slow(a, b):
        real(a, b)
        done.append(b)
        if len(done) == 1:
            marker.write_text("between")
            pid_file = marker.with_suffix(".pid")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not report.exists():
                if pid_file.exists() and pid_file.read_text() and waiting(int(pid_file.read_text())):
                    break
                time.sleep(0.05)

    files.os.replace = slow
    sys.exit(main(sys.argv[3:]))
""")


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the second run wait")
def test_two_runs_on_the_same_output_never_leave_a_mismatched_pair(people, tmp_path):
    output, report = tmp_path / "out.csv", tmp_path / "out.json"
    marker = tmp_path / "between"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "KGEN_LOCK_TIMEOUT": "60"}
    common = ["anonymize", "--keep-unnamed", str(people), "--qi", "age,zip", "--output", str(output), "--quiet"]
    first = subprocess.Popen([sys.executable, "-c", SLOW_FIRST, str(marker), str(report), *common, "--k", "2"],
                             env=env)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert first.poll() is None and time.monotonic() < deadline, "run A did not reach its renames"
            time.sleep(0.02)
        second = subprocess.Popen([sys.executable, "-m", "kgen", *common, "--k", "5"], env=env,
                                  stderr=subprocess.PIPE, text=True)
        marker.with_suffix(".pid").write_text(str(second.pid))
        _, err = second.communicate(timeout=120)
        assert first.wait(60) == 0
    finally:
        for process in (first, locals().get("second")):
            if process is not None and process.poll() is None:
                process.kill()
    assert second.returncode == 0, err
    k = json.loads(report.read_text())["k"]
    classes: dict[tuple[str, str], int] = {}
    for row in csv.DictReader(io.StringIO(output.read_text())):
        key = (row["age"], row["zip"])
        classes[key] = classes.get(key, 0) + 1
    smallest = min(n for key, n in classes.items() if key != ("*", "*"))
    assert smallest >= k, f"the report says k = {k} beside a release whose smallest class is {smallest}"
    assert k == 5, "run B published last: its report must be there"


def test_a_regular_file_without_line_ends_is_refused_before_it_fills_the_memory(tmp_path, capsys):
    from kgen.io import csvio

    zeros = tmp_path / "zeros.csv"
    with open(zeros, "wb") as handle:
        handle.truncate(csvio.MAX_LINE + 10)  # sparse: a file of NUL bytes and no line end, like /dev/zero
    code, err = anonymize(capsys, zeros, tmp_path / "o.csv")
    assert code == 2
    assert f"{zeros}: line 1 is longer than {csvio.MAX_LINE:,} characters" in one_line(err)
