"""How much memory this process may use, and about how much a run on a file needs: a run that cannot fit
is refused in one line (exit 5) before it starts.

Why before: out of memory does not always reach Python as a MemoryError. Under `ulimit -v` (RLIMIT_AS) a
native library may abort the process (pyarrow's `ValueOrDie`, a C++ `std::bad_alloc`: exit 134, no message
of ours), a thread may fail to start, or a lazily imported extension (scipy's, for the certified bound) may
fail to map and raise ImportError. The command line turns the last ones into exit 5 as well (`kgen.cli.main`);
an abort it cannot catch, so the run is not started when the limit cannot hold it.

Two limits are read: the address space (RLIMIT_AS, `ulimit -v`), against the address space the run maps
(every library it will import, a stack per thread, the table); and the control group's memory (cgroup v2
`memory.max`, v1 `memory.limit_in_bytes`), against the memory the run touches. The figures are estimates,
calibrated on the runs of results/memory-limits.md; both err on the side of running.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from kgen.status import OutOfMemoryError

MIB = 1 << 20
# Address space mapped after the command line has started (numpy and kgen already imported): pyarrow's CSV,
# compute and Parquet modules, scipy's optimize (the certified bound's integer program), jemalloc's and
# glibc's reservations. Calibrated: the smallest `ulimit -v` under which a 40-row run completes is about
# 985 MiB on a 2-core machine (results/memory-limits.md); below it a run aborted, hung or failed.
LATER_IMPORTS = 720 * MIB
THREAD_STACK = 8 * MIB  # what a thread reserves when the stack limit is unlimited (glibc's default)
BLAS_BUFFER = 32 * MIB  # what scipy's OpenBLAS allocates per core when it starts (it retries for ever if refused)
EXTRA_THREADS = 4  # the reader's pool and the progress and signal threads, beside pyarrow's one per core
# The table: per row, each QI's codes at every level, the evaluator's class keys and their temporaries; per
# byte of CSV, the reader's blocks. Calibrated on `ulimit -v` runs of main (results/memory-limits.md): 400,000
# rows x 5 QIs need about 1,075 MiB, 1,000,000 rows x 5 QIs about 1,225 MiB, against 985 MiB for 40 rows; the
# estimate is 2 to 4 % above (a run refused near its limit, rather than one that aborts or hangs).
VIRTUAL_PER_BYTE = 1
PER_ROW_AND_QI = 48
PER_ROW = 16
# Touched memory: the ingest and prepare peak is 5x the file (docs/input-errors.md: 2,000,000 rows, 70 MB,
# 347 MiB), and the later imports add about 75 MiB.
RESIDENT_PER_BYTE = 5
LATER_RESIDENT = 100 * MIB
PARQUET_CELL = 16  # bytes per cell of a Parquet table once read into memory (its file is compressed)
SAMPLE = 1 << 20  # the bytes of a CSV read to estimate its rows
UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a number near 2^63


@dataclass(frozen=True)
class Size:
    """A table as the estimate sees it: its bytes (as a CSV's size counts them) and rows."""

    data: int
    rows: int


@dataclass(frozen=True)
class Need:
    """What a run is estimated to need: mapped address space and touched (resident) memory, in bytes."""

    virtual: int
    resident: int


@dataclass(frozen=True)
class Limit:
    """A memory limit on this process: `size` in bytes, `kind` "virtual" or "resident", `name` for the
    message (what sets it, and how to raise it)."""

    size: int
    kind: str
    name: str


def address_space_limit() -> Limit | None:
    """The soft RLIMIT_AS (`ulimit -v`), or None when there is none."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    return Limit(int(soft), "virtual", "the address-space limit (ulimit -v)")


def cgroup_limit(root: str = "/sys/fs/cgroup", membership: str = "/proc/self/cgroup") -> Limit | None:
    """The memory limit of this process's control group (v2 `memory.max`, v1 `memory.limit_in_bytes`),
    or None when there is none or it cannot be read."""
    try:
        lines = Path(membership).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.strip().lstrip("/")
        if controllers == "":  # v2: one unified hierarchy
            candidates += [Path(root, relative, "memory.max"), Path(root, "memory.max")]
        elif "memory" in controllers.split(","):
            candidates += [Path(root, "memory", relative, "memory.limit_in_bytes"),
                           Path(root, "memory", "memory.limit_in_bytes")]
    for candidate in candidates:
        try:
            text = candidate.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text == "max" or not text.isdigit() or int(text) >= UNLIMITED:
            return None
        return Limit(int(text), "resident", f"the control group's memory limit ({candidate})")
    return None


def process_size() -> tuple[int, int]:
    """This process's mapped address space and resident memory now (bytes; 0, 0 where /proc is missing)."""
    sizes = {"VmSize:": 0, "VmRSS:": 0}
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            key, *rest = line.split()
            if key in sizes and rest:
                sizes[key] = int(rest[0]) * 1024
    except (OSError, ValueError):
        pass
    return sizes["VmSize:"], sizes["VmRSS:"]


def thread_reserve() -> int:
    """Address space that the threads a run starts reserve: a stack each, and OpenBLAS's buffer per core."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    stack = THREAD_STACK if soft == resource.RLIM_INFINITY or soft <= 0 else min(int(soft), 64 * MIB)
    cores = os.cpu_count() or 1
    return cores * (stack + BLAS_BUFFER) + EXTRA_THREADS * stack


def table_size(path: str) -> Size:
    """A table's bytes and rows, estimated without reading it: a CSV's size, and its rows from the line ends
    of its first MiB; a Parquet file's rows and columns from its footer (PARQUET_CELL bytes a cell)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return Size(0, 0)
    if path.lower().endswith((".parquet", ".pq")):
        try:
            # optional dependency: pyarrow (extra `parquet`)
            import pyarrow.parquet as pq

            meta = pq.read_metadata(path)
            return Size(max(size, meta.num_rows * meta.num_columns * PARQUET_CELL), meta.num_rows)
        except (ImportError, OSError, ValueError):
            return Size(size, 0)
    try:
        with open(path, "rb") as handle:
            sample = handle.read(SAMPLE)
    except OSError:
        return Size(size, 0)
    lines = sample.count(b"\n") + sample.count(b"\r") - sample.count(b"\r\n")
    return Size(size, int(size * lines / len(sample)) if sample else 0)


def estimate(table: Size, qis: int) -> Need:
    """What a run on `table` with `qis` quasi-identifiers is estimated to need, from this process's size now."""
    virtual, resident = process_size()
    rows = table.rows * (PER_ROW + qis * PER_ROW_AND_QI)
    return Need(virtual + LATER_IMPORTS + thread_reserve() + VIRTUAL_PER_BYTE * table.data + rows,
                resident + LATER_RESIDENT + RESIDENT_PER_BYTE * table.data)


def shortfall(need: Need, limits: list[Limit]) -> tuple[Limit, int] | None:
    """The first limit that cannot hold `need`, with the need it is compared with; None when all can."""
    for limit in limits:
        wanted = need.virtual if limit.kind == "virtual" else need.resident
        if wanted > limit.size:
            return limit, wanted
    return None


def check_fits(path: str, qis: int, advice: str = "anonymize a sample or fewer columns of the file") -> None:
    """Refuse a run on `path` that the memory limits cannot hold (OutOfMemoryError, exit 5), before reading.

    Parameters
    ----------
    path
        The input table (CSV or Parquet).
    qis
        How many quasi-identifiers the run generalizes (their codes and class keys are counted per row).
    """
    limits = [limit for limit in (address_space_limit(), cgroup_limit()) if limit is not None]
    if not limits:
        return
    table = table_size(path)
    short = shortfall(estimate(table, qis), limits)
    if short is None:
        return
    limit, wanted = short
    what = "address space" if limit.kind == "virtual" else "memory"
    raise OutOfMemoryError(
        f"out of memory before starting: a run on this table ({table.data / 1e6:,.1f} MB, about {table.rows:,} "
        f"rows x {qis} quasi-identifiers) needs about {wanted / MIB:,.0f} MiB of {what}, and {limit.name} is "
        f"{limit.size / MIB:,.0f} MiB; "
        f"what would help: raise the limit, or {advice}", file=path)
