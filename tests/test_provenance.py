"""Provenance in every report (kgen/report/provenance.py): version, time, invocation with every parameter, input and
release checksums computed on the files, hierarchy sources; `kgen check --report` and `kgen apply
--verify-release` refuse a file that does not match its report."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from kgen import Config, anonymize, from_mapping
from kgen.io.csvio import format_csv
from kgen.report import provenance


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_kgen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


@pytest.fixture
def released(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """An input CSV, an ARX hierarchy file for `a`, and the release and report of `kgen anonymize`."""
    rows = [[str(i % 10), "x" if i % 3 else "y", str(i)] for i in range(60)]
    source = tmp_path / "in.csv"
    source.write_text(format_csv(["a", "b", "s"], rows), encoding="utf-8")
    hierarchy = tmp_path / "h_a.csv"
    hierarchy.write_text("".join(f"{v};{int(v) // 5};*\n" for v in map(str, range(10))), encoding="utf-8")
    out, report = tmp_path / "out.csv", tmp_path / "out.json"
    done = run_kgen("anonymize", str(source), "--qi", "a,b", "--k", "4", "--hierarchy", f"a={hierarchy}",
                    "--hierarchy", "b=flat", "--output", str(out), "--report", str(report), "--quiet", "--keep", "s")
    assert done.returncode == 0, done.stderr
    return source, hierarchy, out, report


def test_report_ties_input_release_and_hierarchies_to_their_bytes(released) -> None:
    source, hierarchy, out, report = released
    prov = json.loads(report.read_text())["provenance"]
    assert prov["input"]["sha256"] == sha(source) and prov["input"]["bytes"] == source.stat().st_size
    assert prov["release"]["sha256"] == sha(out) and prov["release"]["bytes"] == out.stat().st_size
    assert prov["hierarchies"]["a"]["file"]["sha256"] == sha(hierarchy)
    assert prov["hierarchies"]["b"]["builder"] == "flat"
    assert prov["invocation"]["kind"] == "command line"
    assert prov["invocation"]["argv"][:3] == ["kgen", "anonymize", str(source)]
    assert datetime.fromisoformat(prov["created_utc"]).utcoffset().total_seconds() == 0
    assert prov["kgen_version"] and prov["platform"]["python"]
    assert prov["seed"] == 0


def test_every_config_field_is_recorded_with_defaults_marked() -> None:
    table = from_mapping({"a": [str(i % 5) for i in range(20)], "b": ["x", "y"] * 10})
    config = Config(qi=["a", "b"], k=2, seed=7, hierarchies={"a": "decimal", "b": "flat"}, keep_unnamed=True)
    prov = anonymize(table, config).report["provenance"]
    names = {f.name for f in dataclasses.fields(Config)}
    assert set(prov["parameters"]["values"]) == names
    assert prov["parameters"]["values"]["seed"] == 7 and "seed" not in prov["parameters"]["defaults_used"]
    assert "kernel" in prov["parameters"]["defaults_used"] and "k" in prov["parameters"]["defaults_used"]
    assert prov["invocation"]["kind"] == "python api"
    assert prov["input"]["path"] is None and prov["input"]["rows"] == 20
    assert prov["hierarchies"]["a"]["builder"] == "decimal"
    # the digest of the hierarchy used changes with the hierarchy
    other = anonymize(table, dataclasses.replace(config, hierarchies={"a": "flat", "b": "flat"}))
    assert other.report["provenance"]["hierarchies"]["a"]["sha256"] != prov["hierarchies"]["a"]["sha256"]


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_check_with_report_passes_on_the_release_and_fails_on_a_changed_file(released) -> None:
    _, _, out, report = released
    done = run_kgen("check", str(out), "--qi", "a,b", "--k", "4", "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert "SHA-256 matches the report" in done.stdout
    out.write_text(out.read_text().replace("\n", "\r\n"), encoding="utf-8")  # same cells, other bytes
    done = run_kgen("check", str(out), "--qi", "a,b", "--k", "4", "--report", str(report))
    assert done.returncode == 1
    assert "does not match its report" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_apply_verifies_the_original_release_and_records_its_own(released, tmp_path: Path) -> None:
    source, _, out, report = released
    applied, applied_report = tmp_path / "applied.csv", tmp_path / "applied.json"
    done = run_kgen("apply", str(source), "--report", str(report), "--verify-release", str(out), "--output",
                    str(applied), "--apply-report", str(applied_report))
    assert done.returncode == 0, done.stderr
    prov = json.loads(applied_report.read_text())["provenance"]
    assert prov["release"]["sha256"] == sha(applied)
    assert prov["applied_report"]["sha256"] == sha(report)
    assert prov["input"]["sha256"] == sha(source)
    tampered = tmp_path / "tampered.csv"
    tampered.write_text(out.read_text() + "\n", encoding="utf-8")
    again = tmp_path / "again.csv"
    done = run_kgen("apply", str(source), "--report", str(report), "--verify-release", str(tampered), "--output",
                    str(again))
    assert done.returncode == 2 and "does not match its report" in done.stderr  # a wrong input for apply
    assert not again.exists()


def test_check_written_refuses_a_file_with_other_bytes(tmp_path: Path) -> None:
    report: dict = {}
    digest = provenance.attach_release(report, tmp_path / "r.csv", "a,b\n1,2\n")
    good = tmp_path / "good.csv"
    good.write_bytes(b"a,b\n1,2\n")
    provenance.check_written(good, digest)
    assert report["provenance"]["release"]["bytes"] == 8
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"a,b\n1,3\n")
    with pytest.raises(provenance.ChecksumError) as error:
        provenance.check_written(bad, digest)
    assert error.value.exit_code == 4  # like a release failing its independent check: nothing published


def test_report_without_provenance_is_a_one_line_error(tmp_path: Path) -> None:
    report = tmp_path / "old.json"
    report.write_text("{}", encoding="utf-8")
    data = tmp_path / "d.csv"
    data.write_text("a\n1\n", encoding="utf-8")
    done = run_kgen("check", str(data), "--qi", "a", "--k", "1", "--report", str(report))
    assert done.returncode == 2 and "no provenance" in done.stderr and "Traceback" not in done.stderr
