"""Adding a privacy model touches only its own module and its independent check rule (issue 23, item 6).

The test copies kgen's source (fitness/, kgen/, lattice/) to a temporary folder, adds exactly two files there —
a model family `fitness/privacy/rowfloor.py` and its check rule `kgen/check/rules/rowfloor.py` — and runs the
commands on the copy in a fresh interpreter. The new model must appear, with no other edit, as a command-line
option of anonymize and check, a run.toml key, a Config field, a report key and section, a summary line, a model
that `kgen apply` reads back, and a rule that `kgen check` and the check before publishing apply.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fitness import privacy
from kgen.check import rules as check_rules
from kgen.run.config import Config

ROOT = Path(__file__).resolve().parents[1]

MODEL = '''
"""A floor on class sizes, separate from k: a model written for the registry test."""
from dataclasses import dataclass
from typing import ClassVar

from fitness.models import CountRule, MeasureRule
from fitness.parameters import Constraint, require_whole
from fitness.privacy import ModelFamily, Parameter


@dataclass(frozen=True)
class RowFloor:
    rows: int
    name: ClassVar[str] = "row-floor"
    needs_rows: ClassVar[bool] = False
    monotone: ClassVar[bool] = True
    monotone_with_suppression: ClassVar[bool] = True
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self):
        require_whole("rows", self.rows, 1)

    @property
    def min_class_size(self):
        return self.rows

    @property
    def count_rule(self):
        return CountRule(self.rows)

    @property
    def params(self):
        return {"rows": self.rows}

    def violating(self, partition, table):
        return partition.sizes < self.rows

    def describe(self):
        return {"model": self.name, **self.params}


FAMILY = ModelFamily(
    name="row-floor",
    parameters=(Parameter("row_floor", Constraint("row floor", "whole", low=1, optional=True),
                          help="every released class has at least this many rows"),),
    build=lambda values, sensitive: [RowFloor(values["row_floor"])],
    read=lambda d: RowFloor(d.get("rows")),
    summary=lambda d: f"row floor {d.get('rows')}",
    order=90,
)
'''

RULE = '''
"""The independent check of the row floor: classes of the written file smaller than the floor."""
from dataclasses import dataclass

from kgen.check.rules import CheckRule


@dataclass(frozen=True)
class Floor:
    rows: int
    column = None

    def validate(self):
        pass

    def breaking(self, table, classes, sizes, cache):
        return sizes < self.rows


RULE = CheckRule("row-floor", read=lambda d, dropped: Floor(int(d["rows"])))
'''


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The source with the two new files, and a small table."""
    root = tmp_path_factory.mktemp("registry")
    for package in ("fitness", "kgen", "lattice"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copytree(ROOT / "kgen" / "data", root / "kgen" / "data")
    (root / "fitness" / "privacy" / "rowfloor.py").write_text(MODEL)
    (root / "kgen" / "check" / "rules" / "rowfloor.py").write_text(RULE)
    rows = ["age,zip,disease"] + [f"{20 + i % 7},{100 + i % 5},d{i % 3}" for i in range(60)]
    (root / "data.csv").write_text("\n".join(rows) + "\n")
    return root


def kgen(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m kgen ARGS` on the copy (its folder first on sys.path), not on the installed source."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "kgen", *args], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=120)


def python(copy: Path, code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_copy_runs_its_own_source_not_the_installed_one(copy: Path) -> None:
    done = python(copy, "import kgen, fitness.privacy as p; print(kgen.__file__); print(list(p.FAMILIES))")
    assert done.returncode == 0, done.stderr
    path, families = done.stdout.splitlines()
    assert path.startswith(str(copy)) and "row-floor" in families
    assert "row-floor" not in privacy.FAMILIES and "row-floor" not in check_rules.RULES  # this interpreter's


@pytest.mark.slow  # several fresh interpreters, each importing kgen
def test_a_new_model_is_an_option_a_report_section_and_a_summary_line(copy: Path) -> None:
    out = copy / "out-cli"
    out.mkdir()
    done = kgen(copy, "anonymize", "data.csv", "--qi", "age,zip", "--k", "2", "--row-floor", "12",
                "--hierarchy", "age=decimal,zip=mask", "--sensitive", "disease", "--algorithm", "exhaustive",
                "--output", str(out / "release.csv"))
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "release.csv.json").read_text()) if (out / "release.csv.json").exists() else \
        json.loads(next(out.glob("*.json")).read_text())
    assert report["row_floor"] == 12
    assert {"model": "row-floor", "rows": 12} in report["models"]
    assert report["smallest_class"] >= 12
    assert report["verified"]["passed"] is True
    assert "row floor 12" in done.stdout


@pytest.mark.slow  # several fresh interpreters, each importing kgen
def test_a_new_model_is_a_run_toml_key_and_a_config_field(copy: Path) -> None:
    (copy / "run.toml").write_text('qi = ["age", "zip"]\nk = 2\nrow_floor = 20\nsensitive = ["disease"]\n'
                                   'hierarchy = ["age=decimal", "zip=mask"]\nalgorithm = "exhaustive"\n')
    out = copy / "out-toml"
    out.mkdir()
    done = kgen(copy, "anonymize", "data.csv", "--config", "run.toml", "--output", str(out / "r.csv"), "--quiet")
    assert done.returncode == 0, done.stderr
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["row_floor"] == 20 and report["smallest_class"] >= 20
    api = python(copy, """
        import kgen
        from kgen.run.config import Config
        config = Config(qi=["age", "zip"], k=2, row_floor=30, sensitive=["disease"], algorithm="exhaustive",
                        hierarchies={"age": "decimal", "zip": "mask"})
        result = kgen.anonymize("data.csv", config)
        print(result.report["row_floor"], result.report["smallest_class"])
        try:
            Config(qi=["age"], row_floor=0).check()
        except kgen.InputError as error:
            print(error)
    """)
    assert api.returncode == 0, api.stderr
    first, refusal = api.stdout.splitlines()
    assert first.split()[0] == "30" and int(first.split()[1]) >= 30
    assert "row floor must be a whole number >= 1" in refusal


@pytest.mark.slow  # several fresh interpreters, each importing kgen
def test_apply_reads_the_new_model_back_and_check_applies_its_rule(copy: Path) -> None:
    out = copy / "out-apply"
    out.mkdir()
    first = kgen(copy, "anonymize", "data.csv", "--qi", "age,zip", "--k", "2", "--row-floor", "12",
                 "--hierarchy", "age=decimal,zip=mask", "--sensitive", "disease", "--algorithm", "exhaustive",
                 "--output", str(out / "release.csv"), "--quiet")
    assert first.returncode == 0, first.stderr
    report = next(out.glob("*.json"))
    applied = kgen(copy, "apply", "data.csv", "--report", str(report), "--output", str(out / "again.csv"),
                   "--quiet")
    assert applied.returncode == 0, applied.stderr
    again = json.loads(next(p for p in out.glob("again*.json")).read_text())
    assert {"model": "row-floor", "rows": 12} in again["models"]
    holds = kgen(copy, "check", str(out / "release.csv"), "--qi", "age,zip", "--k", "2", "--row-floor", "12")
    assert holds.returncode == 0 and holds.stdout.startswith("PASS"), holds.stdout + holds.stderr
    broken = kgen(copy, "check", str(out / "release.csv"), "--qi", "age,zip", "--k", "2", "--row-floor", "61")
    assert broken.returncode == 1 and broken.stdout.startswith("FAIL"), broken.stdout + broken.stderr


@pytest.mark.slow  # several fresh interpreters, each importing kgen
def test_a_model_without_a_check_rule_is_never_published(copy: Path, tmp_path: Path) -> None:
    """Planted: the rule file missing. The release cannot be checked, so nothing is written."""
    rule = copy / "kgen" / "check" / "rules" / "rowfloor.py"
    saved = rule.read_text()
    rule.unlink()
    try:
        done = kgen(copy, "anonymize", "data.csv", "--qi", "age,zip", "--k", "2", "--row-floor", "12",
                    "--hierarchy", "age=decimal,zip=mask", "--sensitive", "disease", "--algorithm", "exhaustive",
                    "--output", str(tmp_path / "release.csv"))
    finally:
        rule.write_text(saved)
    assert done.returncode != 0 and "no independent check rule for the privacy model 'row-floor'" in done.stderr
    assert not (tmp_path / "release.csv").exists()


def test_every_family_has_a_check_rule_and_every_parameter_a_config_field() -> None:
    assert set(privacy.FAMILIES) <= set(check_rules.RULES)
    fields = set(Config.__dataclass_fields__)
    for p in privacy.parameters():
        assert p.name in fields and p.help and p.option.startswith("--")
