"""benchmarks/same_release.py: the same tree twice compares identical; a planted difference is caught.

The end-to-end tests run `python -m kgen anonymize` on two tiny tables (a few subprocesses); the planted
difference is a second "tree" whose only change is a `sitecustomize` that appends to the release after kgen
wrote it, so the test does not depend on any of kgen's internals. A release folder (`--partitioned`, Mondrian
with `--workers`) is compared part by part: tested on folders written here, with one part changed, one part
missing and a leftover file, since a partitioned run needs a Dask cluster.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from benchmarks.same_release import (
    Case,
    CaseResult,
    Outcome,
    compare,
    compare_case,
    comparison,
    release_of,
    report_comparison,
    report_differences,
    run_once,
    scoped,
)

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


def test_a_reworded_message_set_aside_as_stderr_is_listed_not_counted() -> None:
    a = Outcome("A", 0, "kgen: warning: old words\n", 1.0, 1.0, "abc", 10, {"loss": 0.5})
    b = Outcome("B", 0, "kgen: warning: new words\n", 1.0, 1.0, "abc", 10, {"loss": 0.5})
    differences, aside = comparison(a, b, ["stderr"])
    assert differences == [] and len(aside) == 1 and aside[0].startswith("stderr differs")
    assert comparison(a, b, ["loss"])[0] != []  # another pattern leaves the message counted


def release_folder(folder: Path, parts: dict[str, str]) -> Outcome:
    """An outcome whose release is a folder holding `parts` (name -> text), as `run_once` would record it."""
    folder.mkdir()
    for name, text in parts.items():
        (folder / name).write_text(text, encoding="utf-8")
    digest, size, digests = release_of(folder)
    return Outcome(str(folder), 0, "", 1.0, 1.0, digest, size, {"rows": 4}, digests)


PARTS = {"part-00000.csv": "age,zip\n20-29,10***\n20-29,10***\n",
         "part-00001.csv": "age,zip\n30-39,11***\n30-39,11***\n"}


def test_a_planted_difference_in_one_part_of_a_release_folder_is_reported(tmp_path: Path) -> None:
    a = release_folder(tmp_path / "a", PARTS)
    assert compare(a, release_folder(tmp_path / "same", PARTS)) == []
    planted = dict(PARTS, **{"part-00001.csv": PARTS["part-00001.csv"].replace("30-39", "30-40", 1)})
    b = release_folder(tmp_path / "b", planted)
    differences = compare(a, b)
    assert differences[0].startswith("release folder differs (2 files")
    assert differences[1].startswith("release part part-00001.csv bytes differ (sha256 ")
    assert len(differences) == 2, differences  # the untouched part and the report are not reported
    assert a.release_sha256 != b.release_sha256 and a.release_bytes == b.release_bytes


def test_a_part_only_one_run_wrote_and_a_leftover_file_are_reported(tmp_path: Path) -> None:
    a = release_folder(tmp_path / "a", PARTS)
    b = release_folder(tmp_path / "b", {"part-00000.csv": PARTS["part-00000.csv"], ".report.json": "{}"})
    assert compare(a, b)[1:] == ["release part .report.json only in B", "release part part-00001.csv only in A"]
    file_release = Outcome("A", 0, "", 1.0, 1.0, "abc", 10, {"rows": 4})
    assert compare(file_release, a) == ["release is a file in A, a folder in B"]


def test_ignore_and_rename_apply_to_the_cases_they_name_and_what_they_set_aside_is_listed() -> None:
    specs = ["exact", "mondrian-*:rows", "partitioned-*:verified.checker"]
    assert scoped(specs, "adult-ga-log") == ["exact"]
    assert scoped(specs, "mondrian-adult") == ["exact", "rows"]
    before = {"quasi_identifiers": {"age": {"generalization": "interval"}}, "k": 5, "metrics": {"rows": 4}}
    after = {"quasi_identifiers": ["age"], "generalization": {"age": {"generalization": "interval"}}, "k": 5,
             "rows": 4, "metrics": {"rows": 4}}
    differences, aside = report_comparison(before, after, scoped(specs, "mondrian-adult") + ["quasi_identifiers"],
                                           ["quasi_identifiers=generalization"])
    assert differences == []
    assert aside == ["report: quasi_identifiers.0 only in B", "report: rows only in B"]
    changed = dict(after, generalization={"age": {"generalization": "set"}})
    found, _ = report_comparison(before, changed, ["quasi_identifiers", "rows"], ["quasi_identifiers=generalization"])
    assert found == ['report: generalization.age.generalization "interval" != "set"']  # a renamed field is compared
    # the same field is compared in a case the pattern does not name
    assert report_differences(before, after, scoped(specs, "adult-ga-log")) != []
    ok = Outcome("A", 0, "", 1.0, 1.0, "abc", 10, {"loss": 0.5})
    added = Outcome("B", 0, "", 1.0, 1.0, "abc", 10, {"loss": 0.5, "exact": False})
    assert comparison(ok, added, ["exact"]) == ([], ["report: exact only in B"])
