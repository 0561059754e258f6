"""`kgen anonymize --config run.toml`: every option from a reviewed TOML file, the command line overriding it,
and every mistake in the file one line (exit 2) naming the file and the key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kgen.cli.main import main

DATA = "name,age,sex,zip\nAnn,30,M,13053\nBob,31,M,13068\nCid,40,F,14853\nDan,41,F,14850\nEve,47,F,14853\n" \
       "Fay,33,M,13053\n"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(DATA)
    return path


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(text)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_config_file_alone_gives_every_option(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "release.csv"
    config = write_config(tmp_path, f'input = "{data}"\nqi = ["age", "sex", "zip"]\nk = 2\nidentifier = "name"\n'
                                    f'hierarchy = ["zip=mask"]\ntime-limit = 60\nmax_evaluations = 500\n'
                                    f'quiet = true\noutput = "{out}"\n')
    code, err = run(capsys, "anonymize", "--keep-unnamed", "--config", str(config))
    assert code == 0, err
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["k"] == 2 and report["quasi_identifiers"] == ["age", "sex", "zip"]
    assert {row.split(",")[0] for row in out.read_text().splitlines()[1:]} == {"*"}  # the identifier
    params = report["provenance"]["parameters"]["values"]
    assert params["time_limit"] == 60 and params["max_evaluations"] == 500 and params["hierarchies"] == {"zip": "mask"}
    record = report["provenance"]["invocation"]["config_file"]
    assert record["path"] == str(config)
    assert record["sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()


def test_command_line_overrides_the_config_file(tmp_path: Path, data: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, 'qi = ["age", "sex", "zip"]\nk = 2\nquiet = true\n')
    out = tmp_path / "release.csv"
    code, err = run(capsys, "anonymize",
                    "--keep-unnamed", str(data), "--config", str(config), "--k", "3", "--qi", "age,zip",
                    "--output", str(out))
    assert code == 0, err
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["k"] == 3 and report["quasi_identifiers"] == ["age", "zip"]  # replaced, not appended


def test_config_for_apply(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first.csv"
    assert run(capsys, "anonymize",
               "--keep-unnamed", str(data), "--qi", "age,sex,zip", "--k", "2", "--output", str(first),
               "--quiet")[0] == 0
    out = tmp_path / "again.csv"
    config = write_config(tmp_path, f'report = "{first.with_suffix(".json")}"\noutput = "{out}"\nquiet = true\n')
    code, err = run(capsys, "apply", "--keep-unnamed", str(data), "--config", str(config))
    assert code == 0, err
    assert out.read_text() == first.read_text()


@pytest.mark.parametrize(("text", "words"), [
    ('qi = ["age"]\nk = 2\ncolour = "red"\n', ["unknown key 'colour'"]),
    ('qi = ["age"]\nk = "two"\n', ["key 'k'", "whole number"]),
    ('qi = ["age"]\nk = 2\ntime-limit = -1\n', ["key 'time-limit'", "> 0"]),
    ('qi = ["age"]\nk = [2, 3]\n', ["key 'k'", "one value"]),
    ('qi = ["age"]\nk = 2\nquiet = "yes"\n', ["key 'quiet'", "true or false"]),
    ('qi = ["age"]\nk = 2\nmetric = "nope"\n', ["key 'metric'", "unknown metric 'nope'; choose one of: log"]),
    ('qi = ["age"\n', ["not valid TOML"]),
])
def test_bad_config_file_is_one_line_exit_2(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str],
                                            text: str, words: list[str]) -> None:
    config = write_config(tmp_path, text)
    code, err = run(capsys, "anonymize", "--keep-unnamed", str(data), "--config", str(config), "--quiet")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "run.toml" in err
    for word in words:
        assert word in err
    assert not (tmp_path / "people_anonymized.csv").exists()


def test_missing_config_file_is_one_line_exit_2(tmp_path: Path, data: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "anonymize", "--keep-unnamed", str(data), "--config", str(tmp_path / "nope.toml"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "nope.toml" in err and "not found" in err
