"""`kgen anonymize` of a large Parquet file end to end (issue 29): write the file fast, run the command line,
check the release, and record time and peak memory.

Two modes:

- default: `kgen anonymize FILE.parquet --qi <10 QIs> --k 5 --suppression 0.005 --device DEVICE
  --max-evaluations N --no-bound` as a child process (the release is verified by kgen's independent checker
  before it is renamed into place), then `kgen check` of the release against its report as a second child.
  Per child: wall seconds, CPU seconds and peak resident set (`os.wait4`, that child alone); with
  `--device gpu`, the GPU's peak memory in use, polled from `nvidia-smi` every 0.2 s.
- `--phases`: the same run in this process through `kgen.run.pipeline` (the code `kgen anonymize` runs, minus the
  argument parsing), phase by phase (read, prepare, search, finish = suppressed rows + release + report,
  write + independent check), wall and CPU seconds, the peak resident set after each and the GPU's peak
  during each: where the time goes, printed as each phase ends (a run cut short keeps what it finished).

The Parquet file is `benchmarks.gpu_table`'s table (10 integer QIs and `diagnosis`), drawn by numpy or, with
`--device gpu`, by CuPy, and written a row group at a time.

    python -m benchmarks.gpu_e2e --rows 100000000 --device gpu --evaluations 5000 --dir /tmp/e2e \\
        --out results/benchmarks/gpu-e2e.md
    python -m benchmarks.gpu_e2e --rows 10000000 --device cpu --evaluations 200 --phases --out ...
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import common, gpu_table

K = 5
SUPPRESSION = 0.005
QIS = ",".join(gpu_table.COLUMNS)


class GpuMemory:
    """The most GPU memory in use while it runs (MiB, from `nvidia-smi`, every `interval` seconds); None
    without nvidia-smi. Counts every process on the card: run nothing else beside it."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True) if shutil.which("nvidia-smi") else None

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                text = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                      capture_output=True, text=True, timeout=5).stdout
                used = max(int(line) for line in text.split())
                self.peak = used if self.peak is None else max(self.peak, used)
            except (OSError, ValueError, subprocess.SubprocessError):
                pass
            self._stop.wait(self.interval)

    def __enter__(self) -> GpuMemory:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def child(command: list[str]) -> dict[str, object]:
    """Run a command; its wall and CPU seconds, peak RSS (GiB), GPU peak (MiB) and exit status."""
    print("$ " + " ".join(command), flush=True)
    with GpuMemory() as gpu:
        start = time.perf_counter()
        process = subprocess.Popen(command)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2), "gpu_peak_mib": gpu.peak, "exit": process.returncode}


def command_line(args: argparse.Namespace, data: Path) -> list[dict[str, object]]:
    """`kgen anonymize` then `kgen check`, as children."""
    release = args.dir / "release.csv"
    report = args.dir / "release.json"
    roles = ["--qi", QIS, "--sensitive", gpu_table.SENSITIVE, "--k", str(K), "--suppression", str(SUPPRESSION)]
    anonymize = [sys.executable, "-m", "kgen", "anonymize", str(data), *roles, "--device", args.device,
                 "--max-evaluations", str(args.evaluations), "--no-bound", "--seed", "1", "--output", str(release),
                 "--report", str(report), "--quiet"]
    check = [sys.executable, "-m", "kgen", "check", str(release), *roles, "--report", str(report)]
    steps = [{"step": "kgen anonymize", **child(anonymize)}]
    if report.exists():
        figures = json.loads(report.read_text(encoding="utf-8"))
        steps[0].update({key: figures.get(key) for key in ("prepare_seconds", "seconds", "evaluations", "node",
                                                           "suppressed")})
        steps[0]["verified"] = (figures.get("verified") or {}).get("passed")
    steps.append({"step": "kgen check", **child(check)})
    return steps


def phases(args: argparse.Namespace, data: Path) -> list[dict[str, object]]:
    """The same run through `kgen.run.pipeline`, phase by phase, in this process."""
    from kgen.io.table import read_table
    from kgen.report.publish import write_release
    from kgen.run.config import Config
    from kgen.run.pipeline import finish, prepare, search

    config = Config(qi=tuple(gpu_table.COLUMNS), sensitive=(gpu_table.SENSITIVE,), k=K, suppression=SUPPRESSION,
                    device=args.device, max_evaluations=args.evaluations, seed=1, bound=False)  # --no-bound
    state: dict[str, object] = {}
    steps: list[tuple[str, Callable[[], object]]] = [
        ("read", lambda: state.setdefault("table", read_table(data))),
        ("prepare", lambda: state.setdefault("prepared", prepare(state["table"], config))),
        ("search", lambda: state.setdefault("result", search(state["prepared"]))),  # type: ignore[arg-type]
        ("finish (suppressed rows, release, report)",
         lambda: state.setdefault("finished", finish(state["prepared"], state["result"]))),  # type: ignore[arg-type]
        ("write + independent check", lambda: write_release(state["finished"], args.dir / "release.csv")),
    ]
    out = []
    for name, body in steps:
        with GpuMemory() as gpu:
            wall, cpu = time.perf_counter(), time.process_time()
            body()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out.append({"step": name, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "gpu_peak_mib": gpu.peak,
                    "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)})
        print(out[-1], flush=True)  # each phase as it ends: a run cut short keeps the phases it finished
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--device", choices=["cpu", "gpu", "array"], default="array")
    parser.add_argument("--evaluations", type=int, default=5000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kgen-e2e"), help="where the files are written")
    parser.add_argument("--phases", action="store_true", help="phase by phase in this process (kgen.run.pipeline)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures here (markdown)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    data = args.dir / f"table_{args.rows}.parquet"
    xp = __import__("cupy") if args.device == "gpu" else __import__("numpy")
    written = gpu_table.write_parquet(data, args.rows, xp=xp)
    print(f"{data}: {args.rows} rows, {data.stat().st_size / 2**30:.2f} GiB, written in {written:.1f} s", flush=True)
    steps = phases(args, data) if args.phases else command_line(args, data)
    headers = sorted({key for step in steps for key in step}, key=lambda k: (k != "step", k))
    table = common.markdown(headers, [[step.get(h, "-") for h in headers] for step in steps])
    print(table)
    if args.out:
        gpu = ""
        if args.device == "gpu":
            from benchmarks.gpu import gpu_name

            gpu = f"; GPU: {gpu_name()}"
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        args.out.write_text(
            f"# `kgen anonymize` of a {args.rows:,}-row Parquet file end to end (issue 29)\n\n"
            f"Machine: {common.machine()}{gpu}; {stamp}\n\nCommand: `python -m benchmarks.gpu_e2e "
            f"{' '.join(sys.argv[1:])}`\n\nParquet file written in {written:.1f} s "
            f"({data.stat().st_size / 2**30:.2f} GiB).\n\n{table}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
