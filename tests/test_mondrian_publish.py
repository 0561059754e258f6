"""`kgen mondrian` on the house's one path: the shared options, readers and their errors, output checks, Dask
cluster handling, and the locked, checksummed publish. One test per case a hostile user found (issue 23);
each fails if the case comes back."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kgen.cli.main import main
from kgen.status import ClusterError

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


def write_table(path: Path, rows: int = 200, seed: int = 0, extra: str = "") -> Path:
    rng = np.random.default_rng(seed)
    lines = ["age,zip,sex,disease"]
    for _ in range(rows):
        lines.append(f"{rng.integers(18, 90)},{rng.integers(10000, 10050)},{'MF'[rng.integers(0, 2)]},"
                     f"d{rng.integers(0, 4)}")
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def run_cli(*argv: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "kgen", *argv], capture_output=True, text=True, timeout=240)
    return done.returncode, done.stdout, done.stderr


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def strict_json(path: Path) -> dict:
    def refuse(token: str) -> None:
        raise ValueError(f"invalid JSON constant {token}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def test_the_report_records_the_checksum_of_the_release_beside_it(tmp_path: Path) -> None:
    data = write_table(tmp_path / "people.csv")
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "5", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    report = strict_json(tmp_path / "out.json")
    assert report["provenance"]["release"]["sha256"] == sha256(tmp_path / "out.csv")
    assert report["provenance"]["input"]["sha256"] == sha256(data)
    assert report["verified"]["passed"] is True and report["risk"]["classes"] == report["classes"]


def test_two_runs_on_one_output_leave_a_consistent_pair(tmp_path: Path) -> None:
    """Two runs publishing the same output at once (k = 2 and k = 50): whichever wins, the report beside the
    release is that release's report (before: a k = 50 "verified" report beside a k = 2 release)."""
    data = write_table(tmp_path / "people.csv", rows=3000)
    out = tmp_path / "out.csv"
    procs = [subprocess.Popen([sys.executable, "-m", "kgen", "mondrian",
                               "--keep-unnamed", str(data), "--qi", "age,zip,sex", "--k",
                               str(k), "--allow-k1", "--output", str(out), "--quiet"], stderr=subprocess.PIPE)
             for k in (2, 50)]
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    report = strict_json(tmp_path / "out.json")
    assert report["provenance"]["release"]["sha256"] == sha256(out)
    assert main(["mondrian-check", str(data), str(out), "--qi", "age,zip,sex", "--k", str(report["k"])]) == 0


def test_a_failed_check_publishes_nothing(tmp_path: Path, monkeypatch) -> None:
    from kgen.check import mondrian as checker

    data = write_table(tmp_path / "people.csv")
    failing = checker.MondrianCheck(rows=1, problems=["planted: a class of k - 1 rows"])
    monkeypatch.setattr(checker, "check_release", lambda *a, **k: failing)
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "5", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.csv"]


def test_an_output_naming_a_hierarchy_it_reads_is_refused(tmp_path: Path) -> None:
    data = write_table(tmp_path / "people.csv")
    folder = tmp_path / "h"
    folder.mkdir()
    hierarchy = folder / "people_hierarchy_sex.csv"
    hierarchy.write_text("M;*\nF;*\n", encoding="utf-8")
    before = hierarchy.read_bytes()
    code = main(["mondrian", "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "5", "--hierarchy-dir", str(folder),
                 "--output", str(hierarchy), "--quiet"])
    assert code == 2 and hierarchy.read_bytes() == before


def test_workers_beyond_the_cores_start_no_more_processes_than_cores(monkeypatch) -> None:
    from kgen.mondrian import distributed
    from kgen.runners import parallel

    started = {}

    class FakeCluster:
        def __init__(self, n_workers: int, **kwargs: object) -> None:
            started["processes"] = n_workers

    class FakeClient:
        def __init__(self, cluster: object, **kwargs: object) -> None:
            pass

    monkeypatch.setattr("distributed.LocalCluster", FakeCluster)
    monkeypatch.setattr("distributed.Client", FakeClient)
    distributed.open_client(1000, None)
    assert started["processes"] == parallel.usable_cores() < 1000


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
@pytest.mark.parametrize("case", ["unclosed-quote", "latin-1", "utf-16", "header-only", "ragged"])
def test_unreadable_input_is_one_line_without_data(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.csv"
    secret = "Zoë-Secret-Value"
    if case == "unclosed-quote":
        path.write_text(f'age,zip\n30,1\n"{secret},2\n31,3\n', encoding="utf-8")
    elif case == "latin-1":
        path.write_bytes(f"age,zip\n30,{secret}\n31,2\n".encode("latin-1"))
    elif case == "utf-16":
        path.write_bytes(f"age,zip\n30,{secret}\n31,2\n".encode("utf-16"))
    elif case == "header-only":
        path.write_text("age,zip\n", encoding="utf-8")
    else:
        path.write_text(f"age,zip\n30,1\n31,{secret},9\n32,3\n", encoding="utf-8")
    code, out, err = run_cli("mondrian", "--keep-unnamed", str(path), "--qi", "age,zip", "--k", "2", "--output",
                             str(tmp_path / "out.csv"))
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert secret not in err and str(path) in err
    assert not (tmp_path / "out.csv").exists()


def test_a_malformed_scheduler_is_refused_at_once(tmp_path: Path) -> None:
    data = write_table(tmp_path / "people.csv")
    started = time.monotonic()
    code, _, err = run_cli("mondrian", "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "5", "--workers", "2",
                           "--scheduler", "tcp://no host:99999", "--output", str(tmp_path / "parts"))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert time.monotonic() - started < 15


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_a_silent_scheduler_is_exit_6_within_the_connect_timeout(tmp_path: Path) -> None:
    data = write_table(tmp_path / "people.csv")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accepts and says nothing
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        code, _, err = run_cli("mondrian", "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "5", "--workers", "2",
                               "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}", "--connect-timeout", "2",
                               "--output", str(tmp_path / "parts"))
        assert code == ClusterError.exit_code == 6, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert time.monotonic() - started < 60
    finally:
        stop.set()
        thread.join()
        for s in accepted:
            s.close()
        server.close()


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    from kgen.io import files

    data = write_table(tmp_path / "people.csv")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "5", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.csv"]


def test_huge_numbers_give_a_valid_json_report(tmp_path: Path) -> None:
    """A QI spanning -1e308 .. 1e308 has an infinite range: its NCP is not a number, and the report says
    null (before: `"ncp": NaN`, invalid JSON)."""
    data = tmp_path / "huge.csv"
    data.write_text("x,y\n" + "".join(f"{v},{i % 3}\n" for i, v in enumerate(["1e308", "-1e308"] * 10)))
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "x,y", "--k", "2", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    strict_json(tmp_path / "out.json")


@pytest.mark.slow
def test_sigterm_during_a_distributed_run_is_one_line(tmp_path: Path) -> None:
    data = write_table(tmp_path / "people.csv", rows=400_000)
    process = subprocess.Popen([sys.executable, "-m", "kgen", "mondrian",
                                "--keep-unnamed", str(data), "--qi", "age,zip,sex", "--k",
                                "5", "--workers", "2", "--output", str(tmp_path / "parts")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # the signal comes once the run has its temporary folder: mid-run
    while not list(tmp_path.glob(".parts.*")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    assert process.poll() is None, "the run ended before the signal could be sent"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143
    assert err.strip().splitlines() == ["kgen: terminated (SIGTERM); no output was written"]
    assert not (tmp_path / "parts").exists() and not (tmp_path / "parts.json").exists()


def test_mondrian_check_reads_a_text_qi_as_a_set(tmp_path: Path) -> None:
    """A release of text QIs, as written, passes: a text QI is checked as a set, as the engine generalizes it
    (before: every QI was taken for an interval and `{F|M}` failed)."""
    data = write_table(tmp_path / "people.csv")
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "sex,disease", "--k", "40", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    assert "{" in (tmp_path / "out.csv").read_text()  # sets were released
    assert main(["mondrian-check", str(data), str(tmp_path / "out.csv"), "--qi", "sex,disease", "--k", "40"]) == 0


def test_a_repeated_qi_option_extends_as_in_anonymize(tmp_path: Path) -> None:
    data = write_table(tmp_path / "people.csv")
    assert main(["mondrian", "--keep-unnamed", str(data), "--qi", "age", "--qi", "zip", "--k", "5", "--output",
                 str(tmp_path / "out.csv"), "--quiet"]) == 0
    assert strict_json(tmp_path / "out.json")["quasi_identifiers"] == ["age", "zip"]


def test_one_cluster_error_class() -> None:
    from kgen.mondrian import distributed
    from kgen.runners import parallel

    assert distributed.ClusterError is parallel.ClusterError is ClusterError


def test_mondrian_reports_use_the_in_memory_names(tmp_path: Path) -> None:
    from kgen.report.build import ANONYMIZE_KEYS

    data = write_table(tmp_path / "people.csv")
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "5", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    report = strict_json(tmp_path / "out.json")
    shared = {"algorithm", "models", "k", "l", "l_variant", "quasi_identifiers", "identifiers", "sensitive",
              "rows", "rows_released", "suppressed", "classes", "smallest_class", "metrics", "seed", "provenance",
              "risk"}
    assert shared <= set(report) and shared <= set(ANONYMIZE_KEYS)
    assert {"verified"} <= set(report)
    assert main(["report", str(tmp_path / "out.json"), "-o", str(tmp_path / "page.html")]) == 0
    assert "Re-identification risk" in (tmp_path / "page.html").read_text(encoding="utf-8")
    assert os.path.getsize(tmp_path / "page.html") > 1000


def test_a_glob_input_is_read_and_checked_as_one_table(tmp_path: Path) -> None:
    """The docs and --help offer a glob of CSV files; the checker reads the original the same way (before:
    "file not found" after the whole run)."""
    whole = write_table(tmp_path / "whole.csv", rows=300)
    header, *rows = whole.read_text(encoding="utf-8").splitlines()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("\n".join([header, *rows[:150]]) + "\n", encoding="utf-8")
    (tmp_path / "in" / "b.csv").write_text("\n".join([header, *rows[150:]]) + "\n", encoding="utf-8")
    assert main(["mondrian",
                 "--keep-unnamed", str(tmp_path / "in" / "*.csv"), "--qi", "age,zip", "--k", "5", "--output",
                 str(tmp_path / "out.csv"), "--quiet"]) == 0
    assert strict_json(tmp_path / "out.json")["verified"]["rows"] == 300


def test_mondrian_risk_comes_from_the_recorded_class_sizes_and_equals_the_release_grouped(tmp_path: Path) -> None:
    """The report's risk is built from the partitions' sizes the engine recorded (no second grouping of the
    release); grouping the written file independently gives the same figures (one definition of risk)."""
    from kgen.io.table import read_csv
    from kgen.report.risk import risk_report

    data = write_table(tmp_path / "people.csv", rows=300)
    assert main(["mondrian",
                 "--keep-unnamed", str(data), "--qi", "age,zip", "--k", "4", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    report = strict_json(tmp_path / "out.json")
    grouped = risk_report(read_csv(tmp_path / "out.csv"), ["age", "zip"])
    assert report["risk"] == json.loads(json.dumps(grouped))
    assert report["risk"]["smallest_class"] >= 4 and report["risk"]["classes"] == report["classes"]


def write_city_table(path: Path, encoding: str, rows: int = 120) -> Path:
    """A table whose text QI has non-ASCII values (Zürich, Genève), saved in `encoding` as Excel would."""
    cities = ["Zürich", "Genève", "Bern", "Lugano"]
    lines = ["age,city,disease"] + [f"{20 + i % 50},{cities[i % 4]},d{i % 3}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding=encoding)
    return path


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_mondrian_reads_an_input_in_the_given_encoding_and_writes_utf8(tmp_path: Path, encoding: str) -> None:
    """`--encoding` on `kgen mondrian` and `mondrian-check`, as on anonymize: the text QI's values come back
    whole in the UTF-8 release (before: Mondrian read only UTF-8 and refused such a file)."""
    data = write_city_table(tmp_path / "people.csv", encoding)
    out = tmp_path / "out.csv"
    assert main(["mondrian", "--keep-unnamed", str(data), "--qi", "age,city", "--k", "5", "--encoding", encoding,
                 "--output", str(out), "--quiet"]) == 0
    released = out.read_text(encoding="utf-8")
    assert "Zürich" in released and "Genève" in released
    assert strict_json(tmp_path / "out.json")["verified"]["passed"] is True
    code, stdout, _ = run_cli("mondrian-check", str(data), str(out), "--qi", "age,city", "--k", "5",
                              "--encoding", encoding)
    assert code == 0 and stdout.startswith("PASS")


def test_a_latin1_input_without_encoding_is_one_line_naming_the_option(tmp_path: Path) -> None:
    data = write_city_table(tmp_path / "people.csv", "latin-1")
    code, stdout, stderr = run_cli("mondrian", "--keep-unnamed", str(data), "--qi", "age,city", "--k", "5",
                                   "--output", str(tmp_path / "out.csv"))
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "--encoding" in stderr
    assert "Traceback" not in stderr and not (tmp_path / "out.csv").exists()


@pytest.mark.slow
def test_distributed_mondrian_tasks_read_their_fragments_in_the_given_encoding(tmp_path: Path) -> None:
    """The encoding travels with the Source to every Dask task: the parts hold the same UTF-8 values, and the
    run's own check of the parts against the Latin-1 original passes."""
    pytest.importorskip("distributed")
    data = write_city_table(tmp_path / "people.csv", "latin-1", rows=400)
    out = tmp_path / "parts"
    code, _, stderr = run_cli("mondrian", "--keep-unnamed", str(data), "--qi", "age,city", "--k", "5",
                              "--encoding", "latin-1", "--workers", "2", "--output", str(out), "--quiet")
    assert code == 0, stderr
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(out.glob("part-*.csv")))
    assert "Zürich" in text and "Genève" in text
    assert strict_json(tmp_path / "parts.json")["verified"]["passed"] is True


def test_mondrian_reads_an_excel_workbook_and_checks_the_release_against_it(tmp_path: Path) -> None:
    """An `.xlsx` input, as `kgen anonymize` reads it (before: "is not UTF-8 text"): the centralized run and
    its independent check read the first sheet as text; `mondrian-check` passes on it and fails at k + 1."""
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["age", "city", "disease"])
    for i in range(60):
        sheet.append([20 + i % 30, ["Zürich", "Bern", "Genève"][i % 3], f"d{i % 2}"])
    book.save(tmp_path / "people.xlsx")
    out = tmp_path / "out.csv"
    assert main(["mondrian", "--keep-unnamed", str(tmp_path / "people.xlsx"), "--qi", "age,city", "--k", "4",
                 "--output", str(out), "--quiet"]) == 0
    assert strict_json(tmp_path / "out.json")["verified"]["passed"] is True
    assert "Zürich" in out.read_text(encoding="utf-8")
    code, stdout, _ = run_cli("mondrian-check", str(tmp_path / "people.xlsx"), str(out), "--qi", "age,city",
                              "--k", "4")
    assert code == 0 and stdout.startswith("PASS"), stdout
    smallest = int(stdout.split("smallest ")[1].split(",")[0])
    code, stdout, _ = run_cli("mondrian-check", str(tmp_path / "people.xlsx"), str(out), "--qi", "age,city",
                              "--k", str(smallest + 1))
    assert code == 1 and stdout.startswith("FAIL")


def test_two_excel_workbooks_are_one_line(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    for name in ("a.xlsx", "b.xlsx"):
        book = openpyxl.Workbook()
        book.active.append(["age"])
        book.save(tmp_path / name)
    code, _, stderr = run_cli("mondrian", "--keep-unnamed", str(tmp_path / "*.xlsx"), "--qi", "age", "--k", "2",
                              "--output", str(tmp_path / "out.csv"))
    assert code == 2 and "more than one Excel workbook" in stderr and len(stderr.strip().splitlines()) == 1


@pytest.mark.slow  # a 600,000-row table: over 2 s
def test_mondrian_out_of_memory_is_one_line_with_mondrian_advice(tmp_path: Path) -> None:
    """A Mondrian run that the address-space limit cannot hold: exit 5, one line naming the file and Mondrian's
    own way out (--workers), never the anonymize-only --jobs / --max-evaluations, no traceback, no output."""
    pytest.importorskip("resource")
    rows = ["a,b,c,d"] + [f"{i},{i * 7 % 1000},{i % 97},{i % 13}" for i in range(600_000)]
    source = tmp_path / "big.csv"
    source.write_text("\n".join(rows) + "\n")
    script = ("import resource, sys, numpy, pandas, pyarrow, kgen.cli.main, kgen.mondrian.core\n"
              "from kgen.cli.main import main\n"
              "used = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
              "limit = used + 60 * 2**20\n"
              "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
              "sys.exit(main(sys.argv[1:]))\n")
    out = subprocess.run([sys.executable, "-c", script, "mondrian", "--keep-unnamed", str(source), "--qi", "a,b,c",
                          "--k", "2", "--output", str(tmp_path / "o.csv")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 5, out.stderr[-2000:]
    assert "out of memory" in out.stderr and str(source) in out.stderr and "--workers" in out.stderr
    assert "--jobs" not in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.csv").exists()
