"""Shared fixtures: the real datasets beside the clone, and the separate Python that runs pycanon.

The datasets live in `../shared/data` relative to the repository (CI clones the repository with `shared/`
beside it); `KGEN_SHARED` may point elsewhere. Tests that need them are skipped, with the path in the reason,
when they are absent.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYCANON_SCRIPT = REPO / "tests" / "pycanon_check.py"


def shared_root() -> Path:
    """`KGEN_SHARED` if set, else the `shared` folder beside the repository."""
    override = os.environ.get("KGEN_SHARED")
    return Path(override) if override else Path(__file__).parents[2] / "shared"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not found at {path} (clone the repository with shared/ beside it, "
                    "or set KGEN_SHARED)")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder `shared/data` with adult/, cargo2000/ and cup/."""
    return _require(shared_root() / "data")


@pytest.fixture(scope="session")
def adult_dir(shared_data: Path) -> Path:
    """Adult (30,162 rows, `;`) with its ARX hierarchies `adult_hierarchy_<QI>.csv`."""
    return _require(shared_data / "adult")


@pytest.fixture(scope="session")
def adult_csv(adult_dir: Path) -> Path:
    return _require(adult_dir / "adult.csv")


@pytest.fixture(scope="session")
def adult_head(adult_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """The first n rows of Adult (all columns) as a file, for quick runs: one file per n in the session."""
    made: dict[int, Path] = {}

    def head(n: int) -> Path:
        if n not in made:
            lines = adult_csv.read_text(encoding="utf-8").splitlines()[: n + 1]
            made[n] = tmp_path_factory.mktemp("adult") / f"adult{n}.csv"
            made[n].write_text("\n".join(lines) + "\n", encoding="utf-8")
        return made[n]

    return head


@pytest.fixture(scope="session")
def adult_sample(adult_head: Callable[[int], Path]) -> Path:
    """The first 4,000 rows of Adult (all columns)."""
    return adult_head(4000)


@pytest.fixture(scope="session")
def cargo_csv(shared_data: Path) -> Path:
    """Cargo 2000: 3,942 rows, 98 columns, `nr` the identifier, `?` missing."""
    return _require(shared_data / "cargo2000" / "c2k_data_comma.csv")


PYCANON_VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kgen-pycanon"


def build_venv(target: Path, packages: Sequence[str], timeout: float = 900) -> bool:
    """Make the virtual environment `target` with `packages` unless it exists; True if this call built it.

    Why: two test runs at once (two checkouts, a CI job beside a local run) share the cached venv. It is built
    in a temporary folder beside `target` and renamed into place only when complete, so a run never sees it
    half-built; a lock file beside it makes a second run wait for the first instead of building it again.
    A folder left without its python (an interrupted older layout) is moved away and rebuilt.
    """
    python = target / "bin" / "python"
    if python.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if python.exists():  # built by another run while this one waited
            return False
        if target.exists():
            shutil.rmtree(target)
        temporary = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            subprocess.run([sys.executable, "-m", "venv", "--clear", *([] if packages else ["--without-pip"]),
                            str(temporary)], check=True, capture_output=True, timeout=300)
            if packages:
                subprocess.run([str(temporary / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                "--disable-pip-version-check", *packages], check=True, capture_output=True,
                               timeout=timeout)
            os.rename(temporary, target)  # atomic: `target` appears complete or not at all
        finally:
            if temporary.exists():
                shutil.rmtree(temporary, ignore_errors=True)
    return True


def _cached_pycanon_python() -> tuple[str | None, str]:
    """The Python of the cached pycanon venv, created on first use (`build_venv`)."""
    try:
        build_venv(PYCANON_VENV, ["pycanon==1.3.6"])
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"could not create the pycanon venv at {PYCANON_VENV}: {error}"
    return str(PYCANON_VENV / "bin" / "python"), ""


@pytest.fixture(scope="session")
def pycanon_python() -> str:
    """The Python of a separate virtual environment with pycanon 1.3.6 (its pins clash with kgen's).

    Named by `KGEN_PYCANON_PYTHON` (`.ci/run` creates it); otherwise a venv cached under
    `~/.cache/kgen-pycanon` is created on first use. When neither can be had, the tests skip, except under
    CI=true, where the cross-check must not be skipped silently: there they fail.
    """
    python = os.environ.get("KGEN_PYCANON_PYTHON")
    if not python:
        python, message = _cached_pycanon_python()
        if python is None:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"CI=true but {message}")
            pytest.skip(message)
    try:
        probe = subprocess.run(
            [python, "-c", "import pycanon, importlib.metadata as m; print(m.version('pycanon'))"],
            capture_output=True, text=True, timeout=120,
        )
    except OSError as error:
        pytest.fail(f"KGEN_PYCANON_PYTHON={python} cannot be run: {error}")
    if probe.returncode != 0:
        pytest.fail(f"KGEN_PYCANON_PYTHON={python} cannot import pycanon: {probe.stderr.strip()[-500:]}")
    return python


@pytest.fixture(scope="session")
def pycanon(pycanon_python: str) -> Callable[..., list[dict]]:
    """`pycanon(files, qi, sensitive=(), numeric=(), measures=(), exclude_suppressed=False)`: pycanon's
    figures for each file (see tests/pycanon_check.py), measured in its own interpreter."""

    def measure(files: Sequence[str | Path], qi: Sequence[str], sensitive: Sequence[str] = (),
                numeric: Sequence[str] = (), measures: Sequence[str] = (),
                exclude_suppressed: bool = False) -> list[dict]:
        command = [pycanon_python, str(PYCANON_SCRIPT), *map(str, files), "--qi", ",".join(qi)]
        if sensitive:
            command += ["--sensitive", ",".join(sensitive)]
        if numeric:
            command += ["--numeric", ",".join(numeric)]
        if measures:
            command += ["--measures", ",".join(measures)]
        if exclude_suppressed:
            command.append("--exclude-suppressed")
        completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert completed.returncode == 0, completed.stderr[-2000:]
        return [json.loads(line) for line in completed.stdout.splitlines()]

    return measure
