"""Do two checkouts of kgen write the same release? Byte for byte, on the datasets of the tests and experiments.

Why: a rewrite for speed (issue 15: the CSV ingest and `prepare`) or for structure (issue 23: kgen/ rebuilt
into wings) must not change a single released byte nor what the report says about it. A unit test compares a
few tables; this tool compares whole runs of the command line, the way users call it, on every dataset the
tests and experiments use (Adult, Cargo 2000, CUP), on the synthetic benchmark table at 10k, 100k and 1M rows,
and on synthetic variants that stress the numeric reader (leading zeros, negative integers, a missing token or
an empty field first seen after row 100,000, quoted numbers, CRLF line ends, a byte-order mark, a `;`
separator, a stray quote, mixed spellings of one number, decimal fractions). Besides the in-memory
`kgen anonymize`, it runs `kgen anonymize --partitioned` (a CSV glob or a folder of Parquet parts in, a folder
of part files out) and `kgen mondrian`, centralized (one CSV out) and distributed with `--workers 2` (a folder
of parts out), each on a local Dask cluster of two workers.

Each case runs `python -m kgen COMMAND ...` once with PYTHONPATH=A and once with PYTHONPATH=B, one after
the other (never in parallel, so that the wall times are comparable), from a neutral working directory, into
fresh temporary folders. The two runs must agree on:

- the exit status and the messages on stderr (the temporary folder's name replaced by a placeholder);
- the bytes of the release: the CSV file, or every file of the release folder (each part by name; a part
  only one run wrote is a difference too);
- the JSON report, field by field, except what may differ between two honest runs: timings (any key ending
  in `seconds`), the creation time, the interpreter and version stamps, and the temporary folder's name,
  which is replaced by a placeholder before comparing.

A change may add or rename report fields on purpose. `--ignore [CASES:]PATTERN` sets a field aside (`stderr`
sets aside a reworded message; for the
cases whose names match CASES, an fnmatch pattern; all cases without it) and `--rename [CASES:]OLD=NEW`
compares A's field OLD with B's field NEW. Neither is silent: every difference an `--ignore` set aside is
still listed, as "set aside", on the console and in the results file, so a reader sees exactly which fields
were added or renamed and with which values.

Every search is the GA or an exact search, with a fixed seed and an evaluation budget, and Mondrian's sample
has a fixed seed, so that a run is a function of its inputs; running the same tree twice (`--tree X --tree
X`) must say "identical" everywhere, which is how the tool's own determinism is checked. Generated input files
live in the benchmark cache (`benchmarks.synthetic.cache_dir()`), never in the repository.

    python -m benchmarks.same_release --tree /path/to/A --tree /path/to/B [--cases NAMES] [--rows-max N]
        [--out results/benchmarks/same-release.md] [--ignore [CASES:]PATTERN] [--rename [CASES:]OLD=NEW] [--list]
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
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
# A Dask scheduler started with dashboard_address=None still serves HTTP on port 8787 and, when another process
# on this shared machine holds that port, warns on stderr ("Port 8787 is already in use"): a fact about the
# machine, not about kgen, that made a case's stderr differ or not from one run to the next. Only that warning
# (a UserWarning raised in distributed.node) is silenced in the runs; every other warning still shows.
DASK_PORT_WARNING = "ignore:Port 8787 is already in use:UserWarning:distributed.node"
KEEP_MARKER = "<!-- same_release: text below this line is kept when the table above is rewritten -->"
VARIANT_VERSION = 2  # part of the generated files' names: bump it when a generator changes


@dataclass(frozen=True)
class Case:
    """One comparison: an input (a file or a glob, resolved or generated on first use), the kgen command and
    its options, and whether the release is one file or a folder of part files (`--partitioned`, Mondrian
    with `--workers`)."""

    name: str
    rows: int  # data rows of the input: what --rows-max filters on (the table shows the report's count)
    source: Callable[[], Path | str]
    options: tuple[str, ...]
    note: str = ""
    verb: tuple[str, ...] = ("anonymize",)  # the kgen command: anonymize, mondrian
    folder: bool = False  # the release is a folder of parts (its name must not exist before the run)

    def command(self, python: str, output: Path, report: Path) -> list[str]:
        return [python, "-m", "kgen", *self.verb, str(self.source()), *self.options, "--output", str(output),
                "--report", str(report), "--quiet"]

    def inputs(self) -> list[Path]:
        """The input's files: the file itself, or every file its glob matches (read before the runs, so that
        both find them in the page cache)."""
        source = str(self.source())
        if any(ch in source for ch in "*?["):
            return sorted(Path(p) for p in glob.glob(source))
        return [Path(source)]


@dataclass
class Outcome:
    """What one run left behind: exit status, stderr, the release's bytes' digest, the report, the times."""

    tree: str
    returncode: int
    stderr: str
    wall: float
    cpu: float
    release_sha256: str | None  # the file's; for a folder, the digest of its sorted (part, sha256) list
    release_bytes: int | None  # for a folder, of all its parts
    report: dict | None
    parts: dict[str, str] | None = None  # a folder release: each file's path in it -> its sha256


@dataclass
class CaseResult:
    """The two runs of one case and every difference found between them (empty: identical)."""

    case: Case
    a: Outcome
    b: Outcome
    differences: list[str] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)  # differences an --ignore pattern matched: listed, not hidden

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


def _publish_folder(build: Callable[[Path], None], target: Path) -> Path:
    """Build a generated folder under a temporary name, then rename it: a crash leaves no half folder that a
    later run would take for the input."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(tmp)
        tmp.replace(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def synthetic_parquet(rows: int, parts: int = 4) -> str:
    """The synthetic table (same rows as `synthetic.path(rows)`) as `parts` Parquet files of contiguous rows:
    a `--partitioned` run's partitions, and a Mondrian Parquet input. Returns the glob of its parts."""
    target = synthetic.cache_dir() / "same_release" / f"synthetic_parquet_{rows}_{parts}_v{VARIANT_VERSION}"

    def build(folder: Path) -> None:
        import pyarrow as pa  # the parquet extra, installed with the tool's venv
        import pyarrow.parquet as pq

        data = synthetic.generate(rows)
        for i, chunk in enumerate(np.array_split(np.arange(rows), parts)):
            table = pa.table({c: data[c][chunk] for c in synthetic.COLUMNS})
            pq.write_table(table, folder / f"part-{i:03d}.parquet")
    return str(_publish_folder(build, target) / "part-*.parquet")


def synthetic_parquet_file(rows: int) -> Path:
    """The synthetic table as one Parquet file. Why not the parts' glob: `kgen mondrian --workers` reads a glob,
    but its independent check reads the original as one file and refuses a glob ("file not found", exit 2, in
    both trees compared for issue 23), so a glob case would only compare two identical failures."""
    target = synthetic.cache_dir() / "same_release" / f"synthetic_{rows}_v{VARIANT_VERSION}.parquet"
    if target.exists():
        return target
    import pyarrow as pa  # the parquet extra, installed with the tool's venv
    import pyarrow.parquet as pq

    data = synthetic.generate(rows)
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({c: data[c] for c in synthetic.COLUMNS}), tmp)
    tmp.replace(target)
    return target


def adult_csv_parts(parts: int = 3) -> str:
    """Adult (`;`, text QIs, `?`) cut into `parts` CSV files of contiguous rows, each with the header: a CSV
    glob whose files are a `--partitioned` run's partitions. Returns the glob."""
    source = shared("adult", "adult.csv")()
    target = synthetic.cache_dir() / "same_release" / f"adult_csv_{parts}_v{VARIANT_VERSION}"

    def build(folder: Path) -> None:
        header, *lines = source.read_text(encoding="utf-8").splitlines()
        for i, chunk in enumerate(np.array_split(np.arange(len(lines)), parts)):
            text = "".join(lines[j] + "\n" for j in chunk)
            (folder / f"adult-{i}.csv").write_text(header + "\n" + text, encoding="utf-8")
    return str(_publish_folder(build, target) / "adult-*.csv")


# ----------------------------------------------------------------------------------------------------- cases


def ga(seed: int, evaluations: int = 300, *extra: str) -> tuple[str, ...]:
    """The GA (kgen's own search) with a fixed seed and an evaluation budget: deterministic and quick."""
    return ("--algorithm", "kgen", "--seed", str(seed), "--max-evaluations", str(evaluations), *extra)


def cargo_qis(q: int) -> str:
    header = shared("cargo2000", "c2k_data_comma.csv")().open(encoding="utf-8").readline().strip().split(",")
    return ",".join(header[1 : 1 + q])


def partitioned(seed: int, evaluations: int = 100, *extra: str) -> tuple[str, ...]:
    """`--partitioned` on a LocalCluster of two worker processes (`--jobs 2`), with the seeded GA."""
    return ("--partitioned", "--jobs", "2", *ga(seed, evaluations, *extra))


def mondrian(*extra: str, workers: int | None = None) -> tuple[str, ...]:
    """Mondrian's options; distributed with `workers` fragments (a LocalCluster) and a seeded sample."""
    return (*extra, *(("--workers", str(workers)) if workers else ()))


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
        Case("partitioned-adult-csvglob", adult_rows, adult_csv_parts, ("--qi", ADULT_QIS, "--k", "5",
             "--suppression", "0.01", *adult_h, *partitioned(1)), "--partitioned: 3 CSV files (`;`, text, `?`), "
             "ARX hierarchies, 2 local workers; release: a folder of parts", folder=True),
        Case("partitioned-synthetic-parquet-100k", 100_000, lambda: synthetic_parquet(100_000), ("--qi",
             SYNTHETIC_QIS, "--k", "2", "--suppression", "0.005", "--metric", "dm", *partitioned(2)),
             "--partitioned: 4 Parquet files, DM, 2 local workers; release: a folder of parts", folder=True),
        Case("mondrian-adult", adult_rows, adult, mondrian("--qi", "sex,age,race,marital-status,education,"
             "native-country", "--k", "5", *adult_h), "Mondrian, centralized: every QI by its ARX "
             "hierarchy; release: one CSV", verb=("mondrian",)),
        Case("mondrian-adult-ldiv-workers2", adult_rows, adult, mondrian("--qi", "sex,age,race,marital-status,"
             "education", "--sensitive", "occupation", "--l", "2", "--k", "4", "--sample", "0.05", "--seed", "3",
             workers=2), "Mondrian distributed on 2 local workers: interval and set generalization, distinct "
             "l-diversity; release: a folder of parts", verb=("mondrian",), folder=True),
        Case("mondrian-synthetic-10k", 10_000, synthetic_table(10_000), mondrian("--qi", SYNTHETIC_QIS, "--k",
             "5"), "Mondrian, centralized: all-integer QIs as intervals; release: one CSV", verb=("mondrian",)),
        Case("mondrian-synthetic-parquet-100k-workers2", 100_000, lambda: synthetic_parquet_file(100_000),
             mondrian("--qi", SYNTHETIC_QIS, "--k", "10", "--partitioning", "quantile", "--sample", "0.01",
                      "--seed", "2", workers=2),
             "Mondrian distributed on 2 local workers from one Parquet file, quantile partitioning; release: "
             "a folder of parts", verb=("mondrian",), folder=True),
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


def scoped(specs: Sequence[str], case: str) -> list[str]:
    """The `--ignore`/`--rename` values that apply to one case: `CASES:VALUE` where the case's name matches
    the fnmatch pattern CASES, or a bare VALUE (every case). Why scoped: a field Mondrian's report renamed
    (`sensitive`, `rows`) must still be compared in every anonymize report."""
    values = []
    for spec in specs:
        cases, colon, value = spec.partition(":")
        if not colon:
            values.append(spec)
        elif fnmatch.fnmatchcase(case, cases):
            values.append(value)
    return values


def renamed(flat: dict[str, object], renames: Sequence[str]) -> dict[str, object]:
    """A's flattened report with each `OLD=NEW` applied (OLD itself and every path under it), so that a field a
    change renamed on purpose is compared with its new name instead of being set aside."""
    pairs = [tuple(r.split("=", 1)) for r in renames if "=" in r]
    out = {}
    for path, value in flat.items():
        for old, new in pairs:
            if path == old or path.startswith(old + "."):
                path = new + path[len(old):]
                break
        out[path] = value
    return out


def matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether a dotted field path, or a field above it, matches one of the fnmatch `patterns`."""
    parts = path.split(".")
    return any(fnmatch.fnmatchcase(".".join(parts[:n]), p) for n in range(1, len(parts) + 1) for p in patterns)


def report_comparison(a: dict, b: dict, ignore: Sequence[str] = (), renames: Sequence[str] = ()
                      ) -> tuple[list[str], list[str]]:
    """(differences, set aside): the dotted paths where two reports differ (added, removed or changed), and
    those of them an `ignore` pattern matched. Volatile fields (timings, stamps) are neither.

    A pattern matches a path or any of its leading parts (`verified` matches `verified.passed`); `renames`
    ("OLD=NEW") move A's fields before comparing."""
    flat_a, flat_b = renamed(flatten(a), renames), flatten(b)
    differences: list[str] = []
    set_aside: list[str] = []
    for path in sorted(flat_a.keys() | flat_b.keys()):
        if matches(path, VOLATILE):
            continue
        if path not in flat_a:
            text = f"report: {path} only in B"
        elif path not in flat_b:
            text = f"report: {path} only in A"
        elif flat_a[path] != flat_b[path] or type(flat_a[path]) is not type(flat_b[path]):
            text = f"report: {path} {_short(flat_a[path])} != {_short(flat_b[path])}"
        else:
            continue
        (set_aside if matches(path, ignore) else differences).append(text)
    return differences, set_aside


def report_differences(a: dict, b: dict, ignore: Sequence[str] = (), renames: Sequence[str] = ()) -> list[str]:
    """The differences of `report_comparison`, without those `ignore` set aside."""
    return report_comparison(a, b, ignore, renames)[0]


def _short(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def release_differences(a: Outcome, b: Outcome) -> list[str]:
    """The release's bytes: one line for a file; for a folder of parts, one line per part that differs or
    that only one run wrote (a part of the other run's folder is never compared with a part of another name)."""
    if a.parts is None and b.parts is None:
        if a.release_sha256 == b.release_sha256:
            return []
        return [f"release bytes differ ({a.release_bytes} B sha256 {str(a.release_sha256)[:12]} != "
                f"{b.release_bytes} B sha256 {str(b.release_sha256)[:12]})"]
    if a.parts is None or b.parts is None:
        kinds = ["a folder" if o.parts is not None else "a file" if o.release_sha256 else "nothing" for o in (a, b)]
        return [f"release is {kinds[0]} in A, {kinds[1]} in B"]
    differences = []
    for name in sorted(a.parts.keys() | b.parts.keys()):
        if name not in a.parts:
            differences.append(f"release part {name} only in B")
        elif name not in b.parts:
            differences.append(f"release part {name} only in A")
        elif a.parts[name] != b.parts[name]:
            differences.append(f"release part {name} bytes differ (sha256 {a.parts[name][:12]} != "
                               f"{b.parts[name][:12]})")
    if differences:
        differences.insert(0, f"release folder differs ({len(a.parts)} files, {a.release_bytes} B in A; "
                              f"{len(b.parts)} files, {b.release_bytes} B in B)")
    return differences


def comparison(a: Outcome, b: Outcome, ignore: Sequence[str] = (), renames: Sequence[str] = ()
               ) -> tuple[list[str], list[str]]:
    """(differences, set aside) between two runs of one case; see `compare`."""
    differences = []
    set_aside: list[str] = []
    if a.returncode != b.returncode:
        differences.append(f"exit status {a.returncode} != {b.returncode}")
    if a.stderr != b.stderr:  # the pseudo-field "stderr" sets a changed message aside (a warning reworded)
        text = f"stderr differs: {_short(a.stderr[-200:])} != {_short(b.stderr[-200:])}"
        (set_aside if matches("stderr", ignore) else differences).append(text)
    differences += release_differences(a, b)
    if (a.report is None) != (b.report is None):
        differences.append("report written by only one run")
    elif a.report is not None and b.report is not None:
        found, aside = report_comparison(a.report, b.report, ignore, renames)
        differences += found
        set_aside += aside
    return differences, set_aside


def compare(a: Outcome, b: Outcome, ignore: Sequence[str] = (), renames: Sequence[str] = ()) -> list[str]:
    """Every difference between two runs of one case that a user could see: exit status, stderr, release bytes
    (a file, or each part of a folder), report fields (see `report_comparison`). Empty: the same release."""
    return comparison(a, b, ignore, renames)[0]


# -------------------------------------------------------------------------------------------------- running


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a run: ours, with PYTHONPATH the tree alone (no other checkout can leak in).

    PYTHONHASHSEED is removed on purpose: every run hashes strings with a fresh seed, so that a release that
    depends on the order of a set or of a dict filled from one differs between two runs of the same tree."""
    dropped = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONHASHSEED")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = str(tree)
    env["PYTHONWARNINGS"] = DASK_PORT_WARNING
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


def folder_digests(folder: Path) -> dict[str, str]:
    """Every file under a release folder (hidden ones too: a leftover is a difference) -> its sha256."""
    return {p.relative_to(folder).as_posix(): sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def release_of(output: Path) -> tuple[str | None, int | None, dict[str, str] | None]:
    """(sha256, bytes, parts) of what a run released at `output`: a file, a folder of parts, or nothing."""
    if output.is_dir():
        parts = folder_digests(output)
        listing = "".join(f"{name} {digest}\n" for name, digest in parts.items())
        size = sum((output / name).stat().st_size for name in parts)
        return hashlib.sha256(listing.encode("utf-8")).hexdigest(), size, parts
    if output.exists():
        return sha256(output), output.stat().st_size, None
    return None, None, None


def run_once(case: Case, tree: Path, python: str) -> Outcome:
    """One run of the case with PYTHONPATH=tree into a fresh temporary folder (removed afterwards)."""
    folder = Path(tempfile.mkdtemp(prefix="same-release-"))
    try:
        output, report = folder / ("release" if case.folder else "release.csv"), folder / "release.json"
        command = case.command(python, output, report)
        if (tree / "kgen" / "io" / "roles.py").exists():  # a tree where every column needs a role (issue 24)
            command.append("--keep-unnamed")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        completed = subprocess.run(command, env=child_env(tree), cwd="/", capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        data = None
        if report.exists():
            data = json.loads(report.read_text(encoding="utf-8").replace(str(folder), PLACEHOLDER))
        digest, size, parts = release_of(output)
        return Outcome(str(tree), completed.returncode, completed.stderr.replace(str(folder), PLACEHOLDER), wall,
                       cpu, digest, size, data, parts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compare_case(case: Case, tree_a: Path, tree_b: Path, python: str = sys.executable,
                 ignore: Sequence[str] = (), renames: Sequence[str] = ()) -> CaseResult:
    """Run the case with tree A, then with tree B (never at once), and compare the two runs. `ignore` and
    `renames` may be scoped to cases (`CASES:VALUE`, see `scoped`)."""
    for source in case.inputs():  # generated before either run is timed, then read once so both find it cached
        with open(source, "rb") as handle:
            while handle.read(1 << 24):
                pass
    a = run_once(case, tree_a, python)
    b = run_once(case, tree_b, python)
    differences, set_aside = comparison(a, b, scoped(ignore, case.name), scoped(renames, case.name))
    return CaseResult(case, a, b, differences, set_aside)


# -------------------------------------------------------------------------------------------------- output


def rows_of(report: dict, default: int) -> object:
    """The report's row count: top level (anonymize), else under `metrics` (Mondrian before issue 23)."""
    return report.get("rows", (report.get("metrics") or {}).get("rows", default))


def row_of(result: CaseResult) -> list[str]:
    report = result.a.report or {}
    rows = rows_of(report, result.case.rows)
    loss = report.get("loss")
    return [result.case.name, f"{rows:,}" if isinstance(rows, int) else str(rows),
            "yes" if result.identical else "**NO**", f"{result.a.wall:.1f}", f"{result.b.wall:.1f}",
            f"{result.a.cpu:.1f}", f"{result.b.cpu:.1f}", f"{result.b.wall / result.a.wall:.2f}",
            str(result.a.returncode), str(result.a.release_sha256 or "-")[:12],
            f"{loss:.4f}" if isinstance(loss, float) else str(loss if loss is not None else "-"),
            str(report.get("suppressed", "-")),
            str(report.get("evaluations", "-"))]


HEADERS = ["case", "rows", "identical", "A wall s", "B wall s", "A CPU s", "B CPU s", "B/A wall", "exit",
           "release sha256", "loss", "suppressed", "evaluations"]


def markdown(results: Sequence[CaseResult], trees: Sequence[Path], argv: Sequence[str], started: str) -> str:
    lines = ["# Same release: two checkouts of kgen, byte for byte", "",
             "`benchmarks/same_release.py` runs every case's `python -m kgen anonymize` (or `kgen mondrian`) once "
             "with PYTHONPATH=A and once with PYTHONPATH=B (sequentially, cwd `/`, fresh temporary folders) and "
             "compares the exit status, stderr, the release's bytes (the CSV, or every part of a release folder, "
             "by name) and every field of the JSON report except timings, the creation time, version and "
             "platform stamps (the temporary folder's name is replaced by a placeholder); fields set aside by "
             "`--ignore` are listed below the table. Searches are seeded with evaluation budgets, and Mondrian's "
             "sample is seeded, so a run is a function of its inputs.",
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
    if any(r.set_aside for r in results):
        lines += ["", "Report fields set aside by `--ignore` (not counted as differences; each pattern's reason is "
                  "in the notes below), case by case, grouped by top-level field (a list or a section with more "
                  "than three fields shows its count and first three):", ""]
        for r in results:
            if r.set_aside:
                lines.append(f"- {r.case.name}: " + "; ".join(grouped(r.set_aside)))
    lines += ["", "Cases:", ""]
    lines += [f"- `{r.case.name}` (`kgen {' '.join(r.case.verb)}`): {r.case.note}; options "
              f"`{' '.join(shorten_paths(r.case.options))}`" for r in results]
    return "\n".join(lines) + "\n"


def grouped(set_aside: Sequence[str]) -> list[str]:
    """Set-aside differences by their top-level field: up to three shown whole, a larger group (provenance,
    risk, a list) as its count and first three, so that the results file stays readable yet names every
    field."""
    groups: dict[str, list[str]] = {}
    for text in set_aside:
        path, _, rest = text.removeprefix("report: ").partition(" ")
        groups.setdefault(path.split(".", 1)[0], []).append(f"`{path}` {rest}")
    out = []
    for top, items in groups.items():
        if len(items) <= 3:
            out += items
        else:
            out.append(f"`{top}`: {len(items)} fields (" + ", ".join(items[:3]) + ", ...)")
    return out


def shorten_paths(options: Sequence[str]) -> list[str]:
    return [o.replace(str(SHARED_DATA), "$DATA") if "/" in o else (o if len(o) <= 80 else o[:77] + "...")
            for o in options]


def command_word(case: Case) -> str:
    """The kgen command a case runs (`anonymize`, `mondrian`), for --list: the same options mean different
    things to each."""
    return " ".join(case.verb)


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
    parser.add_argument("--ignore", action="append", default=[], metavar="[CASES:]PATTERN",
                        help="report field pattern (dotted path, fnmatch) set aside (still listed) for the cases "
                             "matching CASES (fnmatch; default all); repeatable")
    parser.add_argument("--rename", action="append", default=[], metavar="[CASES:]OLD=NEW",
                        help="compare A's report field OLD with B's NEW (a field renamed on purpose); repeatable")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of both runs")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    selected = cases()
    if args.list:
        for case in selected:
            print(f"{case.name:40} {command_word(case):10} {case.rows:>10,}  {case.note}")
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
    print(f"{'case':40} {'rows':>10} identical {'A wall':>7} {'B wall':>7} {'A cpu':>7} {'B cpu':>7}", flush=True)
    results = []
    for case in selected:
        result = compare_case(case, trees[0], trees[1], args.python, args.ignore, args.rename)
        results.append(result)
        rows = rows_of(result.a.report or {}, case.rows)
        print(f"{case.name:40} {rows:>10,} {'yes' if result.identical else 'NO':>9} {result.a.wall:7.1f} "
              f"{result.b.wall:7.1f} {result.a.cpu:7.1f} {result.b.cpu:7.1f}", flush=True)
        for difference in result.differences[:10]:
            print(f"    {difference}")
        for aside in result.set_aside:
            print(f"    set aside: {aside}")
        if result.a.stderr != result.b.stderr:  # the whole of both, to tell a kgen message from a library's log
            for label, outcome in (("A", result.a), ("B", result.b)):
                print(f"    stderr of {label} (last 2000 characters):\n" + outcome.stderr[-2000:])
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
