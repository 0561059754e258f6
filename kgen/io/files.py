"""File safety: kgen reads and writes regular files only, publishes outputs atomically and as a locked pair.

Why a module of its own: every way a run can harm the system or lose data goes through here. An output that
is a device (`/dev/null`), a named pipe, a socket or a folder is refused before the search: renaming a
temporary file over it would replace a system file, and writing into it would block or vanish. An input that
is not a regular file is refused before it is opened for reading: a FIFO would block the run for ever and
`/dev/zero` would fill the memory. New outputs get the permissions any program would give them
(0666 & ~umask), a replaced output keeps its mode, and the release and its report are published under an
advisory lock (`fcntl.flock` on a lock file beside each output) so that two runs writing the same output can
never leave one run's release beside the other run's report.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from kgen.status import OutputBusyError
from lattice.errors import InputError

# How long a run waits for another run to finish publishing the same output (seconds); KGEN_LOCK_TIMEOUT
# overrides it (0: fail at once).
LOCK_TIMEOUT = 120.0
LOCK_POLL = 0.05


def kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(name: str, mode: int, role: str) -> InputError:
    what = kind(mode)
    if what == "a folder":
        return InputError("is a folder, not a file" if role == "input" else "is a folder: give a file name",
                          file=name)
    return InputError(f"is {what}, not a regular file: kgen {'reads' if role == 'input' else 'writes'} "
                      f"regular files only", file=name)


def not_found(path: str | os.PathLike) -> InputError:
    """The error for an input that is not a regular file: "file not found", or what it is instead (a FIFO, a
    device, a socket, a folder), so that a pipe is not reported as missing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return InputError("file not found", file=str(path))
    return _not_regular(str(path), mode, "input")


def open_input(path: str | os.PathLike) -> BinaryIO:
    """Open an input (data or hierarchy file) for reading in binary, refusing anything but a regular file.

    The type is checked with `os.stat` before opening (a socket cannot be opened, a FIFO would block) and
    again on the open descriptor (the path may have changed in between); the open itself is non-blocking so
    that a FIFO swapped in at the last moment cannot hang the run.
    """
    name = str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except OSError as error:
        raise InputError(f"cannot be read: {error.strerror or error}", file=name) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(name, mode, "input")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", file=name) from None
    except OSError as error:
        raise InputError(f"cannot be read: {error.strerror or error}", file=name) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(name, mode, "input")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


MAX_JSON_BYTES = 256 << 20  # a report, a config: far larger is not one of ours, and would fill memory


def read_json(path: str | os.PathLike, what: str = "report") -> object:
    """A JSON input (a report, a release's report) read as inputs are: a regular file only (a FIFO or a
    device is refused before it is opened), at most MAX_JSON_BYTES, UTF-8; every failure one InputError."""
    name = str(path)
    with open_input(path) as handle:
        data = handle.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise InputError(f"is larger than {MAX_JSON_BYTES >> 20} MiB: not a kgen {what}", file=name)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"is not UTF-8 text: not a kgen {what}", file=name) from None
    except json.JSONDecodeError as error:
        raise InputError(f"is not a JSON {what}: {error.msg} (line {error.lineno})", file=name,
                         line=error.lineno) from None


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same file (after symlinks; hard links included when both exist)."""
    try:
        pa, pb = Path(a), Path(b)
        return pa.resolve() == pb.resolve() or (pa.exists() and pb.exists() and pa.samefile(pb))
    except OSError:
        return False


def check_target(path: str | os.PathLike, protected: Iterable[str | os.PathLike] = ()) -> None:
    """Raise an InputError unless `path` can be written as an output: a regular file or nothing yet (never a
    device, FIFO, socket or folder, also through a symlink), not one of the `protected` files (inputs,
    hierarchies), in an existing folder where a file can be created.

    Called before a long search so that a bad output path fails in a second, not after an hour. Leaves
    nothing behind (the probe file is removed).
    """
    target = Path(path)
    for source in protected:
        if same_file(target, source):
            raise InputError(f"is an input of this run ({str(source)!r}): refusing to overwrite it; give another "
                             "--output or --report", file=str(target))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        if error.errno not in (errno.ENOTDIR, errno.ENOENT):
            raise InputError(f"cannot be written: {error.strerror or error}", file=str(target)) from None
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise _not_regular(str(target), mode, "output")
    if target.is_symlink():
        raise InputError("is a symbolic link: kgen publishes regular files only (through a link the release "
                         "would take the target's owner and mode); give the target's own path", file=str(target))
    folder = target.parent
    if folder.exists() and not folder.is_dir():
        raise InputError(f"cannot be written: {str(folder)!r} is a file, not a folder", file=str(target))
    if not folder.is_dir():
        raise InputError(f"cannot be written: the folder {str(folder)!r} does not exist (create it first)",
                         file=str(target))
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputError(f"cannot be written: the folder {str(folder)!r} is not writable "
                         f"({error.strerror or error})", file=str(target)) from None
    os.close(fd)
    os.unlink(probe)


def current_umask() -> int:
    """The process's umask, read without changing it where Linux tells it (`/proc/self/status`)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it back at once
    os.umask(mask)
    return mask


def _give_mode(fd: int, target: Path) -> None:
    """Give a temporary file the mode its target will have: the replaced file's mode (and owner, when we
    may), or 0666 & ~umask for a new file, as open() would have made it."""
    try:
        old = os.stat(target)
    except OSError:
        os.fchmod(fd, 0o666 & ~current_umask())
        return
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if hasattr(os, "geteuid") and os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
        with contextlib.suppress(OSError):
            os.fchown(fd, old.st_uid, old.st_gid)


def lock_path(target: Path) -> Path:
    """The lock file that guards publishing `target`: beside it, hidden."""
    return target.parent / f".{target.name}.kgen-lock"


def lock_timeout() -> float:
    """KGEN_LOCK_TIMEOUT in seconds (default LOCK_TIMEOUT); the CLI reads it at start, so a bad value is an
    error before any work, not after the search."""
    text = os.environ.get("KGEN_LOCK_TIMEOUT")
    if text is None:
        return LOCK_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"KGEN_LOCK_TIMEOUT must be a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise InputError(f"KGEN_LOCK_TIMEOUT must be a finite number of seconds >= 0, got {text!r}")
    return value


def _acquire(target: Path, deadline: float) -> int:
    """An open descriptor holding the exclusive lock of `target`'s lock file.

    The lock file is removed by its holder when done; a waiter that got the lock on a file that was removed
    meanwhile (its inode is no longer the one at the path) tries again, so two runs never both hold it."""
    path = lock_path(target)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666 & ~current_umask())
        except OSError as error:
            raise InputError(f"cannot be written: cannot create its lock file ({error.strerror or error})",
                             file=str(target)) from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise OutputBusyError(
                            "is being written by another kgen run (its lock is held); wait for it to finish or "
                            "give another --output/--report (KGEN_LOCK_TIMEOUT sets how long to wait)",
                            file=str(target)) from None
                    time.sleep(LOCK_POLL)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder removed this lock file while we waited: lock the new one


def ours(fd: int, path: Path) -> bool:
    """Whether the file at `path` is the empty lock file this process holds open as `fd`: kgen deletes only
    its own lock files, never a user's file that happens to bear the name."""
    held = os.fstat(fd)
    return held.st_size == 0 and os.path.samestat(held, os.stat(path))


_HELD: dict[Path, int] = {}  # targets whose lock this process holds, and how many times (re-entrant)


@contextlib.contextmanager
def output_lock(targets: Sequence[str | os.PathLike], timeout: float | None = None) -> Iterator[None]:
    """Hold the exclusive advisory lock of every target (in a fixed order, so that two runs sharing some
    outputs cannot deadlock) while publishing them. Waits up to `timeout` seconds (default LOCK_TIMEOUT or
    KGEN_LOCK_TIMEOUT) for another run to finish, then raises OutputBusyError (exit 7). Re-entrant within a
    process: a caller may hold the lock for a whole run and publish through `write_atomic_many` inside."""
    wait = lock_timeout() if timeout is None else timeout
    deadline = time.monotonic() + wait
    ordered = sorted({Path(os.path.abspath(t)) for t in targets}, key=str)
    held: list[tuple[Path, int | None]] = []
    try:
        for target in ordered:
            if target in _HELD:
                _HELD[target] += 1
                held.append((target, None))
            else:
                fd = _acquire(target, deadline)
                _HELD[target] = 1
                held.append((target, fd))
        yield
    finally:
        for target, fd in reversed(held):
            _HELD[target] -= 1
            if fd is None:
                continue
            del _HELD[target]
            with contextlib.suppress(OSError):
                if ours(fd, lock_path(target)):
                    os.unlink(lock_path(target))
            os.close(fd)  # closing releases the lock


Content = str | Callable[[TextIO], None]


def write_atomic_many(items: Sequence[tuple[str | os.PathLike, Content]],
                      protected: Iterable[str | os.PathLike] = (),
                      check: Callable[[list[Path]], None] | None = None,
                      lock_timeout: float | None = None) -> None:
    """Write several files all-or-nothing as far as the file system allows, as one consistent set.

    Each content (a string, or a function writing to a text handle: a release streamed in chunks) goes to a
    temporary file in its target's folder, and only when every one is complete are they renamed into place.
    On any failure (or Ctrl-C) before the renames, every temporary file is removed and no target is touched.
    `check(temporary_paths)`, when given, inspects the complete temporary files before the renames; if it
    raises, nothing is published. Refuses to write over the `protected` files (inputs) and over anything
    that is not a regular file. The whole publication holds `output_lock` on every target, so two runs
    writing the same outputs publish one after the other, never interleaved.
    """
    protected = list(protected)
    targets = [Path(path) for path, _ in items]
    for i, target in enumerate(targets):
        if any(same_file(target, other) for other in targets[:i]):
            raise InputError("is given for two outputs (e.g. --output and --report)", file=str(target))
        check_target(target, protected)
    with output_lock(targets, lock_timeout):
        for target in targets:  # again under the lock: another run may have put something else there
            check_target(target, protected)
        _publish(targets, [content for _, content in items], check)


def _publish(targets: list[Path], contents: list[Content], check: Callable[[list[Path]], None] | None) -> None:
    temporaries: list[str] = []
    current = targets[0] if targets else Path(".")
    try:
        for target, content in zip(targets, contents):
            current = target
            fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            temporaries.append(temporary)
            _give_mode(fd, target)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                if isinstance(content, str):
                    handle.write(content)
                else:
                    content(handle)
                handle.flush()
                os.fsync(handle.fileno())
        if check is not None:
            check([Path(t) for t in temporaries])
        for target, temporary in zip(targets, temporaries):
            current = target
            os.replace(temporary, target)
    except BaseException as error:
        for temporary in temporaries:
            Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise InputError(f"cannot be written: {error.strerror or error}", file=str(current)) from None
        raise


def write_atomic(path: str | os.PathLike, content: Content, protected: Iterable[str | os.PathLike] = ()) -> None:
    """Write one file via a temporary file in the same folder and a rename: readers see the old file or the
    whole new one, never a partial one. Refuses to write over any of the `protected` files (inputs)."""
    write_atomic_many([(path, content)], protected)
