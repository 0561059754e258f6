"""Do two checkouts of kgen write the same release? Byte for byte, on the datasets of the tests and experiments.

Why: a rewrite for speed (issue 15: the CSV ingest and `prepare`) must not change a single released byte nor
what the report says about it. A unit test compares a few tables; this tool compares whole runs of the command
line, the way users call it, on every dataset the tests and experiments use (Adult, Cargo 2000, CUP), on the
synthetic benchmark table at 10k, 100k and 1M rows, and on synthetic variants that stress the numeric reader
(leading zeros, negative integers, a missing token or an empty field first seen after row 100,000, quoted
numbers, CRLF line ends, a byte-order mark, a `;` separator, a stray quote, mixed spellings of one number,
decimal fractions).

Each case runs `python -m kgen anonymize ...` once with PYTHONPATH=A and once with PYTHONPATH=B, one after
the other (never in parallel, so that the wall times are comparable), from a neutral working directory, into
fresh temporary folders. The two runs must agree on:

- the exit status and the messages on stderr (the temporary folder's name replaced by a placeholder);
- the bytes of the released CSV;
- the JSON report, field by field, except what may differ between two honest runs: timings (any key ending
  in `seconds`), the creation time, the interpreter and version stamps, and the temporary folder's name,
  which is replaced by a placeholder before comparing (`--ignore` adds patterns for fields a change adds or
  renames on purpose).

Every search is the GA or an exact search, with a fixed seed and an evaluation budget, so that a run is a
function of its inputs; running the same tree twice (`--tree X --tree X`) must say "identical" everywhere,
which is how the tool's own determinism is checked. Generated input files live in the benchmark cache
(`benchmarks.synthetic.cache_dir()`), never in the repository.

    python -m benchmarks.same_release --tree /path/to/A --tree /path/to/B [--cases NAMES] [--rows-max N]
        [--out results/benchmarks/same-release.md] [--ignore PATTERN] [--list]
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import synthetic

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("KGEN_SHARED", REPO.parent / "shared")) / "data"  # as tests/conftest.py
ADULT_QIS = "sex,age,race,marital-status,education,native-country,workclass,occupation"
CUP_QIS = "ZIP,AGE,GENDER,INCOME,STATE,RAMNTALL,NGIFTALL,MINRAMNT"
SYNTHETIC_QIS = ",".join(synthetic.COLUMNS)
PLACEHOLDER = "<OUT>"
VOLATILE = (  # report fields that differ between two honest runs of the same code (dotted paths, fnmatch)
    "*seconds",  # seconds, prepare_seconds, bound_seconds, and any timing nested deeper
    "provenance.created_utc",
    "provenance.kgen_version",
    "provenance.platform.*",
    "provenance.code*",  # a digest of the code, should a report carry one: the trees differ by design
)
KEEP_MARKER = "<!-- same_release: text below this line is kept when the table above is rewritten -->"
VARIANT_VERSION = 2  # part of the generated files' names: bump it when a generator changes


@dataclass(frozen=True)
class Case:
    """One comparison: an input file (resolved, or generated, on first use) and the anonymize options."""

    name: str
    rows: int  # data rows of the input: what --rows-max filters on (the table shows the report's count)
    source: Callable[[], Path]
    options: tuple[str, ...]
    note: str = ""

    def command(self, python: str, output: Path, report: Path) -> list[str]:
        return [python, "-m", "kgen", "anonymize", str(self.source()), *self.options, "--output", str(output),
                "--report", str(report), "--quiet"]


@dataclass
class Outcome:
    """What one run left behind: exit status, stderr, the release's bytes' digest, the report, the times."""

    tree: str
    returncode: int
    stderr: str
    wall: float
    cpu: float
    release_sha256: str | None
    release_bytes: int | None
    report: dict | None


@dataclass
class CaseResult:
    """The two runs of one case and every difference found between them (empty: identical)."""

    case: Case
    a: Outcome
    b: Outcome
    differences: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


# ---------------------------------------------------------------------------------------------------- inputs


def shared(*parts: str) -> Callable[[], Path]:
    """A file of the shared datasets, checked when the case runs."""
    def resolve() -> Path:
        path = SHARED_DATA.joinpath(*parts)
        if not path.exists():
            raise SystemExit(f"same_release: {path} not found (set KGEN_SHARED to the folder holding data/)")
        return path
    return resolve


def synthetic_table(rows: int) -> Callable[[], Path]:
    return lambda: synthetic.path(rows)


def _write(path: Path, text_rows: Iterator[str], header: str, *, bom: bool = False, newline: str = "\n") -> Path:
    """Write a generated file atomically (a temporary name, then a rename), so that a crash leaves none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as out:
        out.write(header + newline)
        for line in text_rows:
            out.write(line + newline)
    tmp.replace(path)
    return path


def variant_zeros(rows: int) -> Path:
    """Comma, LF. Leading zeros (a 5-digit zip, a 3-digit department: `00042`, `007`; and `acct`, a
    zero-padded number that is no QI, so the release shows it as read), negative integers (`balance`), `?` in
    `hours` and an empty `children` field only after data row 100,000 (a reader that decides a column's type
    on its first rows sees integers only)."""
    target = synthetic.cache_dir() / "same_release" / f"zeros_negatives_late_missing_{rows}_v{VARIANT_VERSION}.csv"
    if target.exists():
        return target
    data = synthetic.generate(rows, synthetic.SEED + 1)
    zip5 = (data["zip"] - 10_000) % 100_000
    balance = data["income"] // 100 - 300

    def lines() -> Iterator[str]:
        for i in range(rows):
            row = i + 1
            hours = "?" if row > 100_000 and row % 997 == 0 else str(data["hours"][i])
            children = "" if row > 120_000 and row % 1499 == 0 else str(data["children"][i])
            yield (f"{data['age'][i]},{data['sex'][i]},{zip5[i]:05d},{balance[i]},{hours},{children},"
                   f"{data['dept'][i]:03d},{data['score'][i]},{data['income'][i] % 100_000:07d}")
    return _write(target, lines(), "age,sex,zip5,balance,hours,children,dept3,score,acct")


def variant_bom(rows: int) -> Path:
    """`;` separator, CRLF line ends, a UTF-8 byte-order mark, a quoted header, `income` quoted on every
    fifth row, `year` always quoted, `ward` a region spelled `7`, `07` or `007` (quoted on every third row),
    and a text column whose quoted values hold the separator. No stray quote: pyarrow may read it."""
    target = synthetic.cache_dir() / "same_release" / f"bom_crlf_semicolon_quoted_{rows}_v{VARIANT_VERSION}.csv"
    if target.exists():
        return target
    data = synthetic.generate(rows, synthetic.SEED + 2)
    cities = ("Lyon", "Saint-Denis; Réunion", "Zürich", "Nord; Pas-de-Calais", "Ørsted")
    widths = np.random.default_rng(synthetic.SEED + 2).integers(1, 4, rows)

    def lines() -> Iterator[str]:
        for i in range(rows):
            income = f'"{data["income"][i]}"' if i % 5 == 0 else str(data["income"][i])
            ward = f"{int(data['region'][i]) % 10:0{int(widths[i])}d}"
            ward = f'"{ward}"' if i % 3 == 0 else ward
            yield (f"{data['age'][i]};{data['sex'][i]};{income};\"{data['year'][i]}\";{data['hours'][i]};"
                   f"{data['score'][i]};{data['region'][i]};{ward};\"{cities[int(data['dept'][i]) % len(cities)]}\"")
    header = ";".join(f'"{c}"' for c in ("age", "sex", "income", "year", "hours", "score", "region", "ward",
                                          "city"))
    return _write(target, lines(), header, bom=True, newline="\r\n")


def variant_mixed(rows: int) -> Path:
    """Comma, LF. One number spelled several ways in one column (`7`, `07`, `007`, and `-0` beside `0`),
    decimal fractions (`ratio`: not the integers' fast path), `NA` in `children` only after row 100,000, and a
    stray quote (`5"x`) in a text column after row 100,000 (a file a strict quote check hands to the csv
    module)."""
    target = synthetic.cache_dir() / "same_release" / f"mixed_forms_{rows}_v{VARIANT_VERSION}.csv"
    if target.exists():
        return target
    data = synthetic.generate(rows, synthetic.SEED + 3)
    rng = np.random.default_rng(synthetic.SEED + 3)
    widths = rng.integers(1, 4, rows)
    ratio = np.round(data["hours"] / 4.0, 2)

    def lines() -> Iterator[str]:
        for i in range(rows):
            row = i + 1
            code = int(data["children"][i])
            spelled = "-0" if code == 0 and widths[i] == 3 else f"{code:0{int(widths[i])}d}"
            children = "NA" if row > 100_000 and row % 1009 == 0 else str(data["children"][i])
            note = '5"x' if row > 100_000 and row % 4099 == 0 else f"n{int(data['dept'][i]) % 17}"
            yield f"{data['age'][i]},{data['sex'][i]},{spelled},{ratio[i]:.2f},{children},{data['region'][i]},{note}"
    return _write(target, lines(), "age,sex,code,ratio,children,region,note")


def generated(make: Callable[[int], Path], rows: int) -> Callable[[], Path]:
    return lambda: make(rows)


# ----------------------------------------------------------------------------------------------------- cases


def ga(seed: int, evaluations: int = 300, *extra: str) -> tuple[str, ...]:
    """The GA (kgen's own search) with a fixed seed and an evaluation budget: deterministic and quick."""
    return ("--algorithm", "kgen", "--seed", str(seed), "--max-evaluations", str(evaluations), *extra)


def cargo_qis(q: int) -> str:
    header = shared("cargo2000", "c2k_data_comma.csv")().open(encoding="utf-8").readline().strip().split(",")
    return ",".join(header[1 : 1 + q])


def cases() -> list[Case]:
    """Every case, in the order they run (small ones first)."""
    adult = shared("adult", "adult.csv")
    adult_h = ("--hierarchy-dir", str(SHARED_DATA / "adult"))
    cargo = shared("cargo2000", "c2k_data_comma.csv")
    cup = shared("cup", "cup.csv")
    cup_h = ("--hierarchy-dir", str(SHARED_DATA / "cup"))
    adult_rows, cargo_rows, cup_rows = 30_162, 3_942, 63_441
    return [
        Case("cargo-q10-ga", cargo_rows, cargo, ("--identifier", "nr", "--qi", cargo_qis(10), "--k", "2",
             "--suppression", "0.005", *ga(1)), "10 QIs, decimal hierarchies, `?` missing, trailing line of commas"),
        Case("cargo-q25-ga+-loss", cargo_rows, cargo, ("--identifier", "nr", "--qi", cargo_qis(25), "--k", "3",
             "--suppression", "0.01", "--metric", "loss", *ga(2, 300, "--preset", "kgen+")), "kgen+ preset"),
        Case("cargo-q97-ga", cargo_rows, cargo, ("--identifier", "nr", "--qi", cargo_qis(97), "--k", "2",
             "--suppression", "0.005", *ga(3, 1000)), "all 97 QIs (the paper's largest lattice)"),
        Case("adult-ga-log", adult_rows, adult, ("--qi", ADULT_QIS, "--k", "5", "--suppression", "0.01",
             *adult_h, *ga(1)), "8 QIs, ARX hierarchies"),
        Case("adult-ga+-dm-drop", adult_rows, adult, ("--qi", ADULT_QIS, "--k", "10", "--suppression", "0.02",
             "--metric", "dm", "--drop-suppressed", *adult_h, *ga(2, 300, "--preset", "kgen+")),
             "kgen+, DM, suppressed rows left out"),
        Case("adult-ola", adult_rows, adult, ("--qi", ADULT_QIS, "--k", "5", "--suppression", "0.01", *adult_h,
             "--algorithm", "ola", "--seed", "0"), "exact (OLA)"),
        Case("adult-bestfirst-ncp", adult_rows, adult, ("--qi", "sex,age,race,marital-status,education", "--k",
             "3", "--suppression", "0.005", "--metric", "ncp", *adult_h, "--algorithm", "bestfirst", "--seed", "0"),
             "exact best-first, NCP"),
        Case("adult-exhaustive", adult_rows, adult, ("--qi", "sex,age,race,marital-status", "--k", "4",
             "--suppression", "0.0", *adult_h, "--algorithm", "exhaustive", "--seed", "0"),
             "whole lattice, no suppression"),
        Case("adult-ldiv-entropy", adult_rows, adult, ("--qi", "sex,age,race,marital-status,education,workclass",
             "--sensitive", "occupation", "--l", "3", "--l-variant", "entropy", "--k", "5", "--suppression", "0.02",
             *adult_h, *ga(4)), "entropy l-diversity on occupation"),
        Case("adult-tcloseness", adult_rows, adult, ("--qi", "sex,age,race,marital-status,education",
             "--sensitive", "salary-class", "--t-closeness", "0.2", "--k", "2", "--suppression", "0.01",
             *adult_h, *ga(5)), "t-closeness on salary-class"),
        Case("cup-ga", cup_rows, cup, ("--qi", CUP_QIS, "--k", "5", "--suppression", "0.01", *cup_h, *ga(1)),
             "8 QIs, ARX hierarchies (ZIP: 100k lines)"),
        Case("cup-ga-ldiv-ncp", cup_rows, cup, ("--qi", "AGE,GENDER,INCOME,STATE,NGIFTALL", "--sensitive",
             "RAMNTALL", "--l", "2", "--k", "3", "--suppression", "0.02", "--metric", "ncp", *cup_h, *ga(2)),
             "distinct l-diversity, NCP"),
        Case("synthetic-10k", 10_000, synthetic_table(10_000), ("--qi", SYNTHETIC_QIS, "--k", "2",
             "--suppression", "0.005", *ga(1, 200)), "all-integer columns, default decimal hierarchies"),
        Case("synthetic-100k", 100_000, synthetic_table(100_000), ("--qi", SYNTHETIC_QIS, "--k", "2",
             "--suppression", "0.005", *ga(1, 200)), "all-integer columns, default decimal hierarchies"),
        Case("variant-mixed-110k", 110_000, generated(variant_mixed, 110_000), ("--qi",
             "age,sex,code,ratio,children,region", "--k", "5", "--suppression", "0.02", *ga(6, 200)),
             "7/07/007 and -0/0, fractions, late NA, late stray quote"),
        Case("variant-bom-120k", 120_000, generated(variant_bom, 120_000), ("--qi",
             "age,sex,income,year,hours,score,region,ward", "--sensitive", "city", "--k", "5", "--suppression", "0.01",
             *ga(7, 200)), "BOM, CRLF, `;`, quoted numbers and header, 7/07/007"),
        Case("variant-zeros-150k", 150_000, generated(variant_zeros, 150_000), ("--qi",
             "age,sex,zip5,balance,hours,children,dept3", "--k", "5", "--suppression", "0.02", *ga(8, 200)),
             "leading zeros (QI and kept), negatives, `?` and empty fields after row 100,000"),
        Case("synthetic-1m", 1_000_000, synthetic_table(1_000_000), ("--qi", SYNTHETIC_QIS, "--k", "2",
             "--suppression", "0.005", *ga(1, 200)), "all-integer columns, default decimal hierarchies"),
    ]


# ------------------------------------------------------------------------------------------------ comparing


def flatten(value: object, prefix: str = "") -> dict[str, object]:
    """A JSON value as {dotted path: leaf}; lists keep their order (index in the path)."""
    if isinstance(value, dict):
        items: dict[str, object] = {}
        for key, inner in value.items():
            items.update(flatten(inner, f"{prefix}{key}."))
        return items or {prefix.rstrip("."): {}}
    if isinstance(value, list):
        items = {}
        for index, inner in enumerate(value):
            items.update(flatten(inner, f"{prefix}{index}."))
        return items or {prefix.rstrip("."): []}
    return {prefix.rstrip("."): value}


def report_differences(a: dict, b: dict, ignore: Sequence[str] = ()) -> list[str]:
    """The dotted paths where two reports differ (added, removed or changed), volatile fields left out.

    A pattern matches a path or any of its leading parts (`verified` matches `verified.passed`)."""
    patterns = (*VOLATILE, *ignore)

    def ignored(path: str) -> bool:
        parts = path.split(".")
        return any(fnmatch.fnmatchcase(".".join(parts[:n]), p) for n in range(1, len(parts) + 1) for p in patterns)

    flat_a, flat_b = flatten(a), flatten(b)
    differences = []
    for path in sorted(flat_a.keys() | flat_b.keys()):
        if ignored(path):
            continue
        if path not in flat_a:
            differences.append(f"report: {path} only in B")
        elif path not in flat_b:
            differences.append(f"report: {path} only in A")
        elif flat_a[path] != flat_b[path] or type(flat_a[path]) is not type(flat_b[path]):
            differences.append(f"report: {path} {_short(flat_a[path])} != {_short(flat_b[path])}")
    return differences


def _short(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compare(a: Outcome, b: Outcome, ignore: Sequence[str] = ()) -> list[str]:
    """Every difference between two runs of one case that a user could see: exit status, stderr, release bytes,
    report fields (see `report_differences`). Empty: the same release."""
    differences = []
    if a.returncode != b.returncode:
        differences.append(f"exit status {a.returncode} != {b.returncode}")
    if a.stderr != b.stderr:
        differences.append(f"stderr differs: {_short(a.stderr[-200:])} != {_short(b.stderr[-200:])}")
    if a.release_sha256 != b.release_sha256:
        differences.append(f"release bytes differ ({a.release_bytes} B sha256 {str(a.release_sha256)[:12]} != "
                           f"{b.release_bytes} B sha256 {str(b.release_sha256)[:12]})")
    if (a.report is None) != (b.report is None):
        differences.append("report written by only one run")
    elif a.report is not None and b.report is not None:
        differences += report_differences(a.report, b.report, ignore)
    return differences


# -------------------------------------------------------------------------------------------------- running


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a run: ours, with PYTHONPATH the tree alone (no other checkout can leak in).

    PYTHONHASHSEED is removed on purpose: every run hashes strings with a fresh seed, so that a release that
    depends on the order of a set or of a dict filled from one differs between two runs of the same tree."""
    dropped = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONHASHSEED")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = str(tree)
    return env


def check_tree(tree: Path, python: str) -> None:
    """Refuse a tree whose packages are not the ones imported (e.g. an editable install shadowing them)."""
    probe = subprocess.run([python, "-c", "import kgen, lattice, fitness; "
                            "print(kgen.__file__); print(lattice.__file__); print(fitness.__file__)"],
                           env=child_env(tree), cwd="/", capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        raise SystemExit(f"same_release: cannot import kgen from {tree}: {probe.stderr.strip()[-300:]}")
    for line in probe.stdout.split():
        if not Path(line).resolve().is_relative_to(tree.resolve()):
            raise SystemExit(f"same_release: with PYTHONPATH={tree}, Python imports {line} (not from the tree)")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def run_once(case: Case, tree: Path, python: str) -> Outcome:
    """One run of the case with PYTHONPATH=tree into a fresh temporary folder (removed afterwards)."""
    folder = Path(tempfile.mkdtemp(prefix="same-release-"))
    try:
        output, report = folder / "release.csv", folder / "release.json"
        command = case.command(python, output, report)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        completed = subprocess.run(command, env=child_env(tree), cwd="/", capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        data = None
        if report.exists():
            data = json.loads(report.read_text(encoding="utf-8").replace(str(folder), PLACEHOLDER))
        return Outcome(str(tree), completed.returncode, completed.stderr.replace(str(folder), PLACEHOLDER), wall,
                       cpu, sha256(output) if output.exists() else None,
                       output.stat().st_size if output.exists() else None, data)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compare_case(case: Case, tree_a: Path, tree_b: Path, python: str = sys.executable,
                 ignore: Sequence[str] = ()) -> CaseResult:
    """Run the case with tree A, then with tree B (never at once), and compare the two runs."""
    source = case.source()  # generated before either run is timed, then read once so both find it cached
    with open(source, "rb") as handle:
        while handle.read(1 << 24):
            pass
    a = run_once(case, tree_a, python)
    b = run_once(case, tree_b, python)
    return CaseResult(case, a, b, compare(a, b, ignore))


# -------------------------------------------------------------------------------------------------- output


def row_of(result: CaseResult) -> list[str]:
    report = result.a.report or {}
    rows = report.get("rows", result.case.rows)
    loss = report.get("loss")
    return [result.case.name, f"{rows:,}" if isinstance(rows, int) else str(rows),
            "yes" if result.identical else "**NO**", f"{result.a.wall:.1f}", f"{result.b.wall:.1f}",
            f"{result.a.cpu:.1f}", f"{result.b.cpu:.1f}", f"{result.b.wall / result.a.wall:.2f}",
            str(result.a.returncode), str(result.a.release_sha256 or "-")[:12],
            f"{loss:.4f}" if isinstance(loss, float) else str(loss), str(report.get("suppressed", "-")),
            str(report.get("evaluations", "-"))]


HEADERS = ["case", "rows", "identical", "A wall s", "B wall s", "A CPU s", "B CPU s", "B/A wall", "exit",
           "release sha256", "loss", "suppressed", "evaluations"]


def markdown(results: Sequence[CaseResult], trees: Sequence[Path], argv: Sequence[str], started: str) -> str:
    lines = ["# Same release: two checkouts of kgen, byte for byte", "",
             "`benchmarks/same_release.py` runs every case's `python -m kgen anonymize` once with PYTHONPATH=A and "
             "once with PYTHONPATH=B (sequentially, cwd `/`, fresh temporary folders) and compares the exit "
             "status, stderr, the released CSV's bytes and every field of the JSON report except timings, the "
             "creation time, version and platform stamps (the temporary folder's name is replaced by a "
             "placeholder). Searches are seeded with evaluation budgets, so a run is a function of its inputs.",
             "", f"- Date: {started}",
             f"- Machine: {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
             f"{platform.machine()} (shared with other jobs: wall times are indicative; CPU s = user + system of "
             "the run)",
             f"- Tree A: `{trees[0]}` ({git_describe(trees[0])})", f"- Tree B: `{trees[1]}` ({git_describe(trees[1])})",
             f"- Command: `python -m benchmarks.same_release {' '.join(argv)}`", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "---|" * len(HEADERS))
    lines += ["| " + " | ".join(row_of(r)) + " |" for r in results]
    same = sum(r.identical for r in results)
    lines += ["", f"**{same} of {len(results)} cases identical.**", ""]
    for r in results:
        if r.differences:
            lines.append(f"- {r.case.name}: " + "; ".join(r.differences[:10]))
    lines += ["", "Cases:", ""]
    lines += [f"- `{r.case.name}`: {r.case.note}; options `{' '.join(shorten_paths(r.case.options))}`" for r in results]
    return "\n".join(lines) + "\n"


def shorten_paths(options: Sequence[str]) -> list[str]:
    return [o.replace(str(SHARED_DATA), "$DATA") if "/" in o else (o if len(o) <= 80 else o[:77] + "...")
            for o in options]


def git_describe(tree: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True,
                             text=True, timeout=30)
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    if out.returncode != 0:
        return "not a git checkout"
    subject = out.stdout.strip()
    subject = subject if len(subject) <= 70 else subject[:67] + "..."
    return subject.replace("|", "/") + (", with uncommitted changes" if dirty.stdout.strip() else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", required=True,
                        help="a kgen checkout (give exactly two; the same one twice checks determinism)")
    parser.add_argument("--cases", default=None, help="comma-separated case names (default: all; see --list)")
    parser.add_argument("--rows-max", type=int, default=None, help="skip cases whose input has more rows")
    parser.add_argument("--out", type=Path, default=None, help="also write the results table (markdown) here")
    parser.add_argument("--ignore", action="append", default=[],
                        help="report field pattern (dotted path, fnmatch) not to compare; repeatable")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of both runs")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    selected = cases()
    if args.list:
        for case in selected:
            print(f"{case.name:22} {case.rows:>10,}  {case.note}")
        return 0
    if len(args.tree) != 2:
        parser.error("give --tree exactly twice")
    trees = [t.resolve() for t in args.tree]
    if args.cases:
        wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
        unknown = sorted(set(wanted) - {c.name for c in selected})
        if unknown:
            parser.error(f"unknown case(s) {', '.join(unknown)}; --list names them")
        selected = [c for c in selected if c.name in wanted]
    if args.rows_max is not None:
        selected = [c for c in selected if c.rows <= args.rows_max]
    for tree in dict.fromkeys(trees):
        check_tree(tree, args.python)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"A = {trees[0]}\nB = {trees[1]}")
    print(f"{'case':22} {'rows':>10} identical {'A wall':>7} {'B wall':>7} {'A cpu':>7} {'B cpu':>7}", flush=True)
    results = []
    for case in selected:
        result = compare_case(case, trees[0], trees[1], args.python, args.ignore)
        results.append(result)
        rows = (result.a.report or {}).get("rows", case.rows)
        print(f"{case.name:22} {rows:>10,} {'yes' if result.identical else 'NO':>9} {result.a.wall:7.1f} "
              f"{result.b.wall:7.1f} {result.a.cpu:7.1f} {result.b.cpu:7.1f}", flush=True)
        for difference in result.differences[:10]:
            print(f"    {difference}")
        if result.a.returncode != 0:
            print(f"    (exit {result.a.returncode}: {result.a.stderr.strip()[-200:]})")
    same = sum(r.identical for r in results)
    differing = ", ".join(r.case.name for r in results if not r.identical)
    print(f"{same} of {len(results)} cases identical" + (f"; differ: {differing}" if differing else ""))
    if args.out:
        shown = list(argv if argv is not None else sys.argv[1:])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        text = markdown(results, trees, shown, started)
        if args.out.exists():  # hand-written notes below the marker (e.g. how the tool was checked) stay
            old = args.out.read_text(encoding="utf-8")
            if KEEP_MARKER in old:
                text += "\n" + old[old.index(KEEP_MARKER):]
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0 if same == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
