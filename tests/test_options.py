"""Command-line options and their Python API twins (issue 11, item 1): list options accumulate, one role per
column, identifier-like columns without a role are warned about (errors under --strict), limits are finite,
--jobs is capped at the usable cores, an unreachable scheduler fails fast (exit 6), --separator, --version,
and every default in --help."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kgen.cli.main import build_parser, main
from kgen.cli.options import separator
from kgen.io.table import from_mapping, read_csv
from kgen.report import build as reporting
from kgen.run import pipeline as api
from kgen.run import roles
from kgen.run.config import Config
from kgen.runners import parallel
from lattice.errors import InputError

REPO = Path(__file__).resolve().parents[1]
DATA = ("name,claim_id,sex,age,zip,disease\n"
        "Ann,c1,M,30,14850,flu\nBob,c2,M,31,14850,cold\nCid,c3,F,40,14853,flu\n"
        "Dan,c4,F,41,14853,cold\nEve,c5,F,47,14853,cold\nFay,c6,M,35,14850,flu\n")


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "claims.csv"
    path.write_text(DATA)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def kgen_process(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kgen", *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


# --- list options --------------------------------------------------------------------------------------------

def test_repeated_qi_and_identifier_options_accumulate(capsys, table: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(table), "--qi", "sex", "--qi", "age", "--identifier", "name",
                       "--identifier", "claim_id", "--k", "2", "--output", str(output), "--quiet",
                       "--algorithm", "exhaustive")
    assert code == 0, err
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["quasi_identifiers"] == ["sex", "age"] and report["identifiers"] == ["name", "claim_id"]
    released = read_csv(output)
    assert set(released.values["name"]) == {"*"} and set(released.values["claim_id"]) == {"*"}


def test_commas_and_repetition_mix_in_every_list_option() -> None:
    args = build_parser().parse_args([
        "anonymize",
                                      "--keep-unnamed",
                                      "x.csv", "--qi", "a,b", "--qi", "c", "--k", "2", "--identifier", "i1",
                                      "--identifier", "i2,i3",
        "--sensitive", "s1", "--sensitive", "s2", "--missing", "?", "--missing", ",NA",
        "--hierarchy", "a=decimal,b=intervals:5,10", "--hierarchy", "c=flat"])
    assert args.qi == ["a", "b", "c"] and args.identifiers == ["i1", "i2", "i3"] and args.sensitive == ["s1", "s2"]
    assert args.missing == ["?", "", "NA"]
    assert args.hierarchy == ["a=decimal", "b=intervals:5,10", "c=flat"]
    check = build_parser().parse_args(["check", "x.csv", "--qi", "a", "--qi", "b", "--k", "2", "--sensitive", "s",
                                       "--sensitive", "t"])
    assert check.qi == ["a", "b"] and check.sensitive == ["s", "t"]


@pytest.mark.parametrize("extra", [["--identifier", "age"], ["--sensitive", "sex"], ["--qi", "age"],
                                   ["--identifier", "name", "--identifier", "name"]])
def test_a_column_named_twice_is_an_error(capsys, table: Path, tmp_path: Path, extra: list[str]) -> None:
    code, _, err = run(capsys, "anonymize", "--allow-k1", "--keep-unnamed", str(table), "--qi", "sex,age",
    "--k", "2", *extra,
                       "--output", str(tmp_path / "out.csv"))
    assert code == 2 and err.startswith("kgen: error: column ") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.csv").exists()


def test_the_python_api_reads_a_string_as_comma_separated_names_and_checks_roles() -> None:
    data = from_mapping({"a": ["1", "1", "2", "2"], "b": ["x", "x", "y", "y"]})
    result = api.anonymize(data, Config(qi="a,b", k=2, algorithm="exhaustive", keep_unnamed=True))
    assert result.report["quasi_identifiers"] == ["a", "b"]
    with pytest.raises(InputError, match="two roles"):
        api.anonymize(data, Config(qi=["a"], identifiers=["a"], k=2, keep_unnamed=True))


# --- columns that look like identifiers ----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [
    ("patient_id", True), ("eMail", True), ("PhoneNumber", True), ("username", True), ("Full Name", True),
    ("SSN", True), ("customerid", True), ("id", True),
    ("paid", False), ("valid", False), ("zip", False), ("age", False), ("diagnosis", False), ("idle", False),
])
def test_identifier_names_are_matched_on_words(name: str, expected: bool) -> None:
    assert roles.named_like_identifier(name) is expected


def test_a_kept_identifier_column_is_warned_about_and_reported(capsys, table: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.csv"
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--k", "2",
                       "--output", str(output), "--quiet")
    assert code == 0
    assert "kgen: warning: column 'claim_id' is kept" in err and "'zip'" not in err
    report = json.loads(output.with_suffix(".json").read_text())
    assert [u["column"] for u in report["unnamed_columns"]] == ["claim_id"]
    assert any("claim_id" in w for w in report["warnings"])


def test_strict_turns_the_warning_into_an_error_and_writes_nothing(capsys, table: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name", "--k", "2",
                       "--output", str(tmp_path / "out.csv"), "--strict")
    assert code == 2 and "claim_id" in err and "--strict" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.csv"]
    data = read_csv(table)
    with pytest.raises(InputError, match="claim_id"):
        api.anonymize(data, Config(qi=["sex", "age"], identifiers=["name"], k=2, strict=True, keep_unnamed=True))


def test_a_nearly_unique_column_is_flagged_even_with_a_harmless_name() -> None:
    values = [f"v{i}" for i in range(95)] + ["v0"] * 5  # 95 distinct of 100
    data = from_mapping({"q": ["a", "b"] * 50, "notes": values, "group": ["g1", "g2"] * 50})
    found = roles.unnamed_columns(data, Config(qi=["q"], k=2, keep_unnamed=True))
    assert found == [{"column": "notes", "reason": "95% distinct values"}]


# --- limits and figures --------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [["--time-limit", "nan"], ["--time-limit", "inf"], ["--time-limit", "0"],
                                   ["--time-limit", "-1"], ["--max-evaluations", "0"], ["--max-evaluations", "-5"],
                                   ["--connect-timeout", "nan"]])
def test_limits_must_be_finite_and_positive(capsys, table: Path, tmp_path: Path, extra: list[str]) -> None:
    code, _, err = run(capsys, "anonymize",
                       "--allow-k1",
                       "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name,claim_id",
                       "--k", "2", *extra, "--output", str(tmp_path / "out.csv"))
    assert code == 2 and err.startswith("kgen: error: argument --"), err
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("settings", [{"time_limit": math.nan}, {"time_limit": math.inf}, {"time_limit": 0.0},
                                      {"max_evaluations": 0}, {"max_evaluations": True}, {"k": True},
                                      {"max_evaluations": 2.5}, {"connect_timeout": -1.0}])
def test_the_python_api_applies_the_same_limits(settings: dict) -> None:
    data = from_mapping({"a": ["1", "1", "2", "2"]})
    with pytest.raises(InputError):
        api.anonymize(data, Config(qi=["a"], **{"k": 2, **settings}, keep_unnamed=True))


def test_reports_never_hold_nan_or_infinity(capsys, table: Path, tmp_path: Path) -> None:
    figures = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": np.float64(2.0), "d": np.int64(3)}
    assert reporting.finite(figures) == {"a": None, "b": [None, None, 1.5], "c": 2.0, "d": 3}
    output = tmp_path / "out.csv"
    code, _, _ = run(capsys, "anonymize",
                     "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name,claim_id",
                     "--k", "2", "--time-limit", "30", "--output", str(output), "--quiet")
    assert code == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"the report holds {constant}")

    report = json.loads(output.with_suffix(".json").read_text(), parse_constant=refuse)
    assert report["time_limit"] == 30.0


# --- parallel options ----------------------------------------------------------------------------------------

def test_jobs_are_capped_at_the_usable_cores_with_a_warning(capsys, table: Path, tmp_path: Path,
                                                           monkeypatch) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    assert parallel.capped_jobs(1) == (1, None) and parallel.capped_jobs(-1) == (2, None)
    jobs, note = parallel.capped_jobs(64)
    assert jobs == 2 and "--jobs 64" in note and "using 2" in note
    output = tmp_path / "out.csv"
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name,claim_id",
                       "--k", "2", "--jobs", "64", "--backend", "threading", "--output", str(output), "--quiet")
    assert code == 0 and "kgen: warning: --jobs 64 is more than the 2 cores" in err
    assert any("--jobs 64" in w for w in json.loads(output.with_suffix(".json").read_text())["warnings"])


def test_usable_cores_follow_the_cpu_affinity(tmp_path: Path) -> None:
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from kgen.runners.parallel import usable_cores; print(usable_cores())")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("LOKY_MAX_CPU_COUNT", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip() == "1", out.stderr


@pytest.mark.parametrize("address", ["tcp://no such host:8786", "tcp://host:x", "tcp://host:99999", "host",
                                     "ftp://host:21", "tcp://:8786"])
def test_a_malformed_scheduler_address_is_a_usage_error(capsys, table: Path, tmp_path: Path, address: str) -> None:
    started = time.monotonic()
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name,claim_id",
                       "--k", "2", "--backend", "dask", "--scheduler", address, "--output", str(tmp_path / "o.csv"))
    assert code == 2 and "scheduler address" in err and len(err.strip().splitlines()) == 1, err
    assert time.monotonic() - started < 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_an_unreachable_scheduler_fails_within_the_connect_timeout(table: Path, tmp_path: Path) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    out = kgen_process("anonymize",
                       "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name,claim_id", "--k", "2",
                       "--backend", "dask", "--scheduler", address, "--connect-timeout", "1",
                       "--output", str(tmp_path / "o.csv"), cwd=tmp_path)
    assert out.returncode == 6, out.stderr
    assert out.stderr.startswith(f"kgen: error: cannot connect to the Dask scheduler at {address} within 1 s")
    assert len(out.stderr.strip().splitlines()) == 1 and time.monotonic() - started < 30


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_a_scheduler_that_accepts_but_never_answers_fails_within_the_connect_timeout(table: Path,
                                                                                      tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        out = kgen_process("anonymize",
                           "--keep-unnamed", str(table), "--qi", "sex,age", "--identifier", "name,claim_id", "--k", "2",
                           "--backend", "dask", "--scheduler", address, "--connect-timeout", "1",
                           "--output", str(tmp_path / "o.csv"), cwd=tmp_path, timeout=60)
    assert out.returncode == 6 and "no answer" in out.stderr, out.stderr
    assert time.monotonic() - started < 30  # before: still waiting after 50 s
    assert not (tmp_path / "o.csv").exists()


def test_cluster_errors_have_exit_code_6() -> None:
    assert parallel.ClusterError("x").exit_code == 6 and isinstance(parallel.ClusterError("x"), InputError)


# --- separator, version, help --------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [(",", ","), (";", ";"), ("|", "|"), ("pipe", "|"), ("tab", "\t"),
                                                ("\\t", "\t"), ("\t", "\t"), ("TAB", "\t"), ("semicolon", ";")])
def test_separator_names(text: str, expected: str) -> None:
    assert separator(text) == expected


def test_separator_is_used_to_read_the_input(capsys, tmp_path: Path) -> None:
    source = tmp_path / "semi.csv"
    source.write_text(DATA.replace(",", ";"))
    output = tmp_path / "out.csv"
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(source), "--qi", "sex,age", "--identifier", "name,claim_id",
                       "--k", "2", "--separator", ";", "--output", str(output), "--quiet")
    assert code == 0, err
    assert output.read_text().splitlines()[0] == "name;claim_id;sex;age;zip;disease"
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(source), "--qi", "sex,age", "--k", "2", "--separator", ",",
                       "--output", str(output))
    assert code == 2 and "unknown column 'sex'" in err  # read with "," the file has one column
    code, _, err = run(capsys, "anonymize",
                       "--keep-unnamed", str(source), "--qi", "sex", "--k", "2", "--separator", ":")
    assert code == 2 and "separator must be one of" in err


def test_version(capsys) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"kgen {version('kgen')}"


@pytest.mark.parametrize("command", ["anonymize", "check", "apply", "demo"])
def test_help_shows_every_default(command: str) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    text = " ".join(sub.format_help().split())
    for action in sub._actions:
        if action.option_strings and not (action.default is None or action.default is False
                                          or action.default in ([], "==SUPPRESS==")):
            shown = ",".join(action.default) if isinstance(action.default, (list, tuple)) else str(action.default)
            assert f"(default: {shown})" in text, (command, action.option_strings)
    if command == "anonymize":
        for needle in ("(default: 0)", "(default: fast)", "(default: 1)", "(default: loky)", "(default: 10.0)",
                       "(default: log)", "(default: auto)", "(default: empty, ?, NA)"):
            assert needle in text, needle


def test_check_and_apply_read_with_the_separator_too(capsys, tmp_path: Path) -> None:
    source = tmp_path / "semi.csv"
    source.write_text("g;s\nx;1\nx;2\ny;1\ny;2\n")
    assert main(["check", str(source), "--qi", "g", "--k", "2", "--separator", ";"]) == 0
    assert capsys.readouterr().out.startswith(f"PASS: {source}: 4 rows, 2 classes")
    assert main(["check", str(source), "--qi", "g", "--k", "2", "--separator", ","]) == 2  # one column "g;s"


def test_every_config_field_is_documented_in_order() -> None:
    documented = re.findall(r"^    (\w+) :", Config.__doc__.split("Attributes\n")[1], re.MULTILINE)
    assert documented == [f.name for f in dataclasses.fields(Config)]
