"""A mutation run: apply single-point changes to kgen's code one at a time and see whether the tests notice.

Why: a test suite that passes says nothing about the bugs it would let through. Each mutant in the table
(benchmarks/mutation_table.py: file, original snippet, mutated snippet, the test files to run, and for a survivor
the reason it cannot be caught) is applied alone, its tests are run, and the file is restored, always: on
success, failure, a timeout, Ctrl-C or SIGTERM (the original bytes and modification time are put back, so
Python's bytecode cache stays valid; a backup beside the file restores it even after a crash, on the next
run). The outcome of each mutant, caught (by which test) or survived, goes to results/mutation.md.

    python -m benchmarks.mutation                      # every mutant, then the clean baseline
    python -m benchmarks.mutation --only mondrian-k-1  # some of them (ids, repeatable)
    python -m benchmarks.mutation --planted            # the planted bugs of issue 25 only

The baseline runs every named test file on the unchanged code first: a mutant counts as caught only when
its tests pass without it. Mutants run with PYTHONDONTWRITEBYTECODE=1, so no bytecode of a mutant is cached.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "benchmarks" / "mutation_table.py"
OUTPUT = REPO / "results" / "mutation.md"
BACKUP_SUFFIX = ".mutation-backup"
TIMEOUT = 900.0


@dataclass(frozen=True)
class Mutant:
    """One single-point change: `original` (exactly once in `file`) becomes `mutated`."""

    id: str
    file: str
    original: str
    mutated: str
    tests: tuple[str, ...]
    planted: bool = False  # one of issue 25's planted bugs
    equivalent: str = ""  # why a survivor cannot be caught (the mutant behaves as the original)
    note: str = ""


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # caught | survived | timeout | error
    caught_by: list[str] = field(default_factory=list)
    seconds: float = 0.0
    detail: str = ""


def load(path: Path = TABLE) -> list[Mutant]:
    spec = importlib.util.spec_from_file_location("mutation_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mutants = []
    for entry in module.MUTANTS:
        entry = dict(entry)
        entry["tests"] = tuple(entry["tests"])
        mutants.append(Mutant(**entry))
    ids = [m.id for m in mutants]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SystemExit(f"mutation table: duplicate ids {duplicates}")
    return mutants


def recover(files: Sequence[str]) -> None:
    """Put back any file a crashed earlier run left mutated (its backup is the original)."""
    for name in sorted(set(files)):
        target = REPO / name
        backup = target.with_name(target.name + BACKUP_SUFFIX)
        if backup.exists():
            target.write_bytes(backup.read_bytes())
            stat = backup.stat()
            os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            backup.unlink()
            print(f"restored {name} from the backup a previous run left", file=sys.stderr)


class Terminated(Exception):
    pass


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The file with the mutant in place; the original bytes and times are restored whatever happens."""
    target = REPO / mutant.file
    original = target.read_bytes()
    stat = target.stat()
    text = original.decode("utf-8")
    count = text.count(mutant.original)
    if count != 1:
        raise ValueError(f"{mutant.id}: the original snippet occurs {count} times in {mutant.file} (needs 1)")
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    backup.write_bytes(original)
    os.utime(backup, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    try:
        target.write_bytes(text.replace(mutant.original, mutant.mutated).encode("utf-8"))
        yield
    finally:
        target.write_bytes(original)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        backup.unlink(missing_ok=True)


FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def run_tests(tests: Sequence[str], timeout: float, first_failure: bool = True) -> tuple[int | None, str]:
    environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "-rfE", *tests]
    if first_failure:
        command.insert(4, "-x")
    process = subprocess.Popen(command, cwd=REPO, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
        return process.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        return None, out
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise


def run_mutant(mutant: Mutant, timeout: float) -> Outcome:
    start = time.perf_counter()
    with applied(mutant):
        code, out = run_tests(mutant.tests, timeout)
    seconds = time.perf_counter() - start
    if code is None:
        return Outcome(mutant, "timeout", [], seconds, f"no result in {timeout:.0f} s")
    if code == 0:
        return Outcome(mutant, "survived", [], seconds)
    failed = FAILED.findall(out)
    if code == 1 and failed:
        return Outcome(mutant, "caught", failed, seconds)
    tail = out.strip().splitlines()[-1:] or [""]
    # collection errors (a mutant that breaks an import) are caught too, but said so
    return Outcome(mutant, "caught" if code in (1, 2) else "error", failed, seconds,
                   f"pytest exit {code}: {tail[0][:120]}")


def cell(text: str, width: int = 70) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return "`" + (text if len(text) <= width else text[: width - 3] + "...") + "`"


def write_report(outcomes: Sequence[Outcome], baseline: tuple[bool, float, str], path: Path, argv: Sequence[str]
                 ) -> None:
    caught = [o for o in outcomes if o.status in ("caught", "timeout")]
    survived = [o for o in outcomes if o.status == "survived"]
    explained = [o for o in survived if o.mutant.equivalent]
    countable = len(outcomes) - len(explained)
    rate = len(caught) / countable if countable else 1.0
    planted = [o for o in outcomes if o.mutant.planted]
    lines = [
        "# Mutation run",
        "",
        f"`python -m benchmarks.mutation {' '.join(argv)}`".replace(" `", "`"),
        "",
        "Each mutant is one single-point change from `benchmarks/mutation_table.py`, applied alone; the test files "
        "named for it are run (`pytest -x`), and the file is restored. Caught: a test failed (the first failing "
        "test is named). Survived: every test passed; an equivalent mutant (one that cannot change what kgen "
        "does) is explained in the table and left out of the rate.",
        "",
        f"- baseline (every named test file, unchanged code): {'passed' if baseline[0] else 'FAILED'} "
        f"in {baseline[1]:.0f} s{'' if baseline[0] else ': ' + baseline[2]}",
        f"- mutants: {len(outcomes)}; caught {len(caught)}; survived {len(survived)} "
        f"({len(explained)} equivalent, explained below); errors {sum(o.status == 'error' for o in outcomes)}",
        f"- caught among the non-equivalent: {len(caught)} of {countable} = {rate:.1%}",
        f"- issue 25's planted bugs: {sum(o.status in ('caught', 'timeout') for o in planted)} of {len(planted)} "
        "caught",
        "",
        "| # | id | file | change (original -> mutated) | outcome | caught by | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, o in enumerate(outcomes, 1):
        m = o.mutant
        by = ", ".join(f"`{t}`" for t in o.caught_by[:2]) or (o.detail and cell(o.detail, 60)) or ""
        status = o.status + (" (planted)" if m.planted else "")
        if o.status == "survived" and m.equivalent:
            status = "survived: equivalent"
        lines.append(f"| {i} | {m.id} | `{m.file}` | {cell(m.original)} -> {cell(m.mutated)} | {status} | {by} "
                     f"| {o.seconds:.0f} |")
    if survived:
        lines += ["", "## Survivors", ""]
        for o in survived:
            reason = o.mutant.equivalent or "NOT EXPLAINED: add a test that catches it"
            lines.append(f"- **{o.mutant.id}** (`{o.mutant.file}`): {reason}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--only", action="append", default=[], help="run only this mutant id (repeatable)")
    parser.add_argument("--planted", action="store_true", help="run only the planted bugs of issue 25")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per mutant (a timeout is caught)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the clean run of the named test files")
    args = parser.parse_args(argv)
    mutants = load(args.table)
    recover([m.file for m in mutants])
    if args.only:
        unknown = sorted(set(args.only) - {m.id for m in mutants})
        if unknown:
            parser.error(f"unknown mutant ids: {', '.join(unknown)}")
        mutants = [m for m in mutants if m.id in args.only]
    if args.planted:
        mutants = [m for m in mutants if m.planted]
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    outcomes: list[Outcome] = []
    try:
        for m in mutants:  # every snippet must be there before anything runs
            if (REPO / m.file).read_text(encoding="utf-8").count(m.original) != 1:
                raise SystemExit(f"{m.id}: the original snippet does not occur exactly once in {m.file}")
        baseline = (True, 0.0, "")
        if not args.no_baseline:
            tests = sorted({t for m in mutants for t in m.tests})
            start = time.perf_counter()
            code, out = run_tests(tests, args.timeout * 2, first_failure=False)
            baseline = (code == 0, time.perf_counter() - start, ", ".join(FAILED.findall(out)[:5]) or f"exit {code}")
            print(f"baseline: {'passed' if code == 0 else 'FAILED ' + baseline[2]} ({baseline[1]:.0f} s)", flush=True)
        for i, m in enumerate(mutants, 1):
            outcome = run_mutant(m, args.timeout)
            outcomes.append(outcome)
            print(f"[{i}/{len(mutants)}] {m.id}: {outcome.status} {', '.join(outcome.caught_by[:1])} "
                  f"{outcome.detail} ({outcome.seconds:.0f} s)", flush=True)
    except (KeyboardInterrupt, Terminated):
        print("interrupted: every file is restored; the report covers the mutants run so far", file=sys.stderr)
        write_report(outcomes, baseline if "baseline" in locals() else (False, 0.0, "not run"), args.output,
                     list(argv if argv is not None else sys.argv[1:]))
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    write_report(outcomes, baseline, args.output, list(argv if argv is not None else sys.argv[1:]))
    unexplained = [o for o in outcomes if o.status == "survived" and not o.mutant.equivalent]
    return 1 if unexplained or not baseline[0] else 0


if __name__ == "__main__":
    raise SystemExit(main())
