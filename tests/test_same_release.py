"""benchmarks/same_release.py: the same tree twice compares identical; a planted difference is caught.

The end-to-end tests run `python -m kgen anonymize` on two tiny tables (a few subprocesses); the planted
difference is a second "tree" whose only change is a `sitecustomize` that appends to the release after kgen
wrote it, so the test does not depend on any of kgen's internals.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from benchmarks.same_release import Case, CaseResult, Outcome, compare, compare_case, report_differences, run_once

REPO = Path(__file__).resolve().parents[1]


def tiny_integers(folder: Path) -> Path:
    path = folder / "tiny.csv"
    rows = [f"{20 + (i * 7) % 50},{i % 2},{10000 + (i * 131) % 900},{(i * 37) % 1000 - 500}" for i in range(300)]
    path.write_text("age,sex,zip,balance\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def tiny_quirks(folder: Path) -> Path:
    """`;`, CRLF, a byte-order mark, quoted numbers, leading zeros, a late `?`, a sensitive text column."""
    path = folder / "quirks.csv"
    rows = []
    for i in range(240):
        age = "?" if i == 230 else f'"{18 + (i * 11) % 60}"'
        rows.append(f"{age};{(i * 3) % 40:03d};{('a', 'b', 'c', 'd')[i % 4]}")
    path.write_bytes(("\ufeffage;code;diagnosis\r\n" + "\r\n".join(rows) + "\r\n").encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def tiny_cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    folder = tmp_path_factory.mktemp("same-release")
    integers, quirks = tiny_integers(folder), tiny_quirks(folder)
    return [
        Case("tiny-ga", 300, lambda: integers, ("--qi", "age,sex,zip,balance", "--k", "3", "--suppression", "0.02",
             "--algorithm", "kgen", "--seed", "4", "--max-evaluations", "40")),
        Case("tiny-quirks-ldiv", 240, lambda: quirks, ("--qi", "age,code", "--sensitive", "diagnosis", "--l", "2",
             "--k", "2", "--algorithm", "exhaustive", "--seed", "0")),
    ]


@pytest.fixture(scope="module")
def same_tree_results(tiny_cases: list[Case]) -> list[CaseResult]:
    return [compare_case(case, REPO, REPO, sys.executable) for case in tiny_cases]


@pytest.mark.slow
def test_the_same_tree_twice_gives_identical_releases_and_reports(same_tree_results: list[CaseResult]) -> None:
    for result in same_tree_results:
        assert result.a.returncode == 0, result.a.stderr
        assert result.a.release_sha256 is not None and result.a.report is not None
        assert result.identical, (result.case.name, result.differences)
        # the placeholder replaced the temporary folder: the two runs wrote to different folders
        assert "<OUT>" in str(result.a.report["provenance"]["release"])


@pytest.mark.slow
def test_a_release_changed_by_the_other_tree_is_reported(tmp_path: Path, tiny_cases: list[Case],
                                                          same_tree_results: list[CaseResult]) -> None:
    planted = tmp_path / "planted-tree"
    planted.mkdir()
    for package in ("kgen", "lattice", "fitness"):
        (planted / package).symlink_to(REPO / package, target_is_directory=True)
    (planted / "sitecustomize.py").write_text(
        "import atexit, sys\n"
        "def _plant():\n"
        "    if '--output' in sys.argv:\n"
        "        with open(sys.argv[sys.argv.index('--output') + 1], 'a', encoding='utf-8') as out:\n"
        "            out.write('planted\\n')\n"
        "atexit.register(_plant)\n", encoding="utf-8")
    baseline = same_tree_results[0]
    other = run_once(tiny_cases[0], planted, sys.executable)
    differences = compare(baseline.a, other)
    assert any(d.startswith("release bytes differ") for d in differences), differences
    assert not any(d.startswith("report:") for d in differences), differences  # only the bytes were touched


def test_timings_and_stamps_are_not_differences_but_results_are() -> None:
    report = {"node": {"age": 1}, "loss": 0.5, "suppressed": 3, "evaluations": 40, "seconds": 0.1,
              "prepare_seconds": 0.2, "verified": {"passed": True, "rows": 10},
              "provenance": {"created_utc": "2026-01-01", "platform": {"python": "3.11"}, "seed": 4}}
    other = copy.deepcopy(report)
    other.update(seconds=9.0, prepare_seconds=8.0)
    other["provenance"].update(created_utc="2027-01-01", platform={"python": "3.12"})
    assert report_differences(report, other) == []
    for path, value in (("loss", 0.25), ("suppressed", 4), ("evaluations", 41), ("node", {"age": 2})):
        changed = copy.deepcopy(report)
        changed[path] = value
        assert len(report_differences(report, changed)) == 1, path
    failed = copy.deepcopy(report)
    failed["verified"]["passed"] = False
    assert report_differences(report, failed) == ["report: verified.passed true != false"]
    extra = copy.deepcopy(report)
    extra["new_field"] = 1
    assert report_differences(report, extra) == ["report: new_field only in B"]
    assert report_differences(report, extra, ignore=["new_field"]) == []


def test_exit_status_and_stderr_are_compared() -> None:
    ok = Outcome("A", 0, "", 1.0, 1.0, "abc", 10, {"loss": 0.5})
    failed = Outcome("B", 3, "kgen: no solution\n", 1.0, 1.0, None, None, None)
    differences = compare(ok, failed)
    assert any(d.startswith("exit status 0 != 3") for d in differences)
    assert any(d.startswith("stderr differs") for d in differences)
    assert any(d.startswith("release bytes differ") for d in differences)
    assert "report written by only one run" in differences
    assert compare(ok, copy.deepcopy(ok)) == []
