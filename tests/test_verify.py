"""The CLI checks every release on the written file itself before publishing it."""

from __future__ import annotations

import json

from kgen import api, cli
from kgen.verify import ReleaseCheckError

PEOPLE = "name,age,zip,disease\n" + "".join(
    f"p{i},{20 + i % 7},{1000 + i % 3},{'flu' if i % 2 else 'cold'}\n" for i in range(40))


def run(tmp_path, *extra):
    source = tmp_path / "people.csv"
    source.write_text(PEOPLE, encoding="utf-8")
    argv = ["anonymize", str(source), "--qi", "age,zip", "--identifier", "name", "--k", "3",
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
    code = cli.main(["apply", str(new), "--report", str(tmp_path / "out.json"), "--output",
                     str(tmp_path / "new_out.csv"), "--quiet"])
    assert code == 0
    assert json.loads((tmp_path / "new_out.json").read_text())["verified"]["passed"] is True
