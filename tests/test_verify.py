"""The CLI checks every release on the written file itself before publishing it."""

from __future__ import annotations

import json

import pytest

from kgen.cli import main as cli
from kgen.run import pipeline as api
from kgen.status import ReleaseCheckError

PEOPLE = "name,age,zip,disease\n" + "".join(
    f"p{i},{20 + i % 7},{1000 + i % 3},{'flu' if i % 2 else 'cold'}\n" for i in range(40))


def run(tmp_path, *extra):
    source = tmp_path / "people.csv"
    source.write_text(PEOPLE, encoding="utf-8")
    argv = ["anonymize", "--allow-k1",
    "--keep-unnamed", str(source), "--qi", "age,zip", "--identifier", "name", "--k", "3",
            "--algorithm", "exhaustive", "--output", str(tmp_path / "out.csv"), "--quiet", *extra]
    return cli.main(argv)


def test_a_published_release_records_that_it_passed_the_independent_check(tmp_path):
    assert run(tmp_path) == 0
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["verified"]["passed"] is True


def test_a_release_that_fails_the_independent_check_is_never_published(tmp_path, monkeypatch, capsys):
    original = api.anonymize

    def broken(*args, **kwargs):  # simulate a bug: one released row gets a value no other row has
        result = original(*args, **kwargs)
        result.release.values["age"][0] = "unique-value"
        return result

    monkeypatch.setattr(api, "anonymize", broken)
    assert run(tmp_path) == ReleaseCheckError.exit_code
    err = capsys.readouterr().err
    assert "failed its independent check" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.csv"]


def test_l_diversity_is_verified_on_the_written_file(tmp_path):
    assert run(tmp_path, "--sensitive", "disease", "--l", "2") == 0
    assert json.loads((tmp_path / "out.json").read_text())["verified"]["passed"] is True


def test_kgen_apply_verifies_its_written_release(tmp_path):
    assert run(tmp_path) == 0
    new = tmp_path / "new.csv"
    new.write_text(PEOPLE, encoding="utf-8")
    code = cli.main(["apply", "--keep-unnamed", str(new), "--report", str(tmp_path / "out.json"), "--output",
                     str(tmp_path / "new_out.csv"), "--quiet"])
    assert code == 0
    assert json.loads((tmp_path / "new_out.json").read_text())["verified"]["passed"] is True


def test_the_checker_imports_nothing_of_the_evaluator():
    """The modules kgen.check.kanonymity reads a file with, followed import by import (the package's
    __init__ aside, which gathers the API), never reach fitness/."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def imports(module: str) -> set[str]:
        tree = ast.parse((root / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        return {m for m in found if (root / (m.replace(".", "/") + ".py")).exists() or m.split(".")[0] == "fitness"}

    seen, todo = set(), ["kgen.check.kanonymity", "kgen.check.verify"]
    while todo:
        module = todo.pop()
        if module in seen or module.split(".")[0] == "fitness":
            seen.add(module)
            continue
        seen.add(module)
        todo += list(imports(module))
    assert "kgen.io.table" in seen and "kgen.io.csvio" in seen
    assert not [m for m in seen if m.split(".")[0] == "fitness"]


def test_the_check_of_a_file_read_as_codes_equals_the_check_of_the_same_rows_as_strings(tmp_path):
    import numpy as np

    from kgen.check.kanonymity import SensitiveRule, check_k_anonymity
    from kgen.io.table import CodedColumn, Table, read_csv
    from kgen.report.risk import released_classes

    rng = np.random.default_rng(3)
    rows = [(str(rng.integers(3)), str(rng.integers(2)) if i % 9 else "*", f"s{rng.integers(4)}") for i in range(400)]
    rows += [("*", "*", "s0")] * 5
    path = tmp_path / "release.csv"
    path.write_text("a,b,s\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    coded = read_csv(path)
    assert isinstance(coded.values["a"], CodedColumn)
    plain = Table(coded.columns, {c: list(coded.values[c]) for c in coded.columns})
    rules = [SensitiveRule("s", l=2), SensitiveRule("s", t=0.3, distance="ordered")]
    for k in (2, 30):
        a, b = (check_k_anonymity(t, ["a", "b"], k, 0.02, rules) for t in (coded, plain))
        assert (a.passed, a.classes, a.smallest_class, a.suppressed_rows, a.violating_rows, a.details) == (
            b.passed, b.classes, b.smallest_class, b.suppressed_rows, b.violating_rows, b.details)
    a, b = (released_classes(t, ["a", "b"]) for t in (coded, plain))
    assert a.keys == b.keys and a.sizes.tolist() == b.sizes.tolist() and a.row_class.tolist() == b.row_class.tolist()
    assert a.suppressed == b.suppressed == 5


@pytest.mark.parametrize("label", ["12", "-0.5", "1e3", " 7 ", ".5", "+3", "1_000", "١٢", "nan", "inf", "1e400", "?",
                                   "", "0x10", "3.", "-", "1e"])
def test_the_checker_and_the_evaluator_agree_on_what_is_a_number(label: str) -> None:
    """The checker's test is written again on purpose; it must give the evaluator's answer (else an ordered
    t-closeness would be measured on different orders)."""
    from fitness.labels import is_number
    from kgen.check.kanonymity import _is_number

    assert _is_number(label) == is_number(label)
