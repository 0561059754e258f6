"""Independent cross-check of released files with the pycanon library (run in its own virtual environment, see
tests/pycanon_check.py and the `pycanon` fixture): pycanon's k must equal the smallest released class that
kgen's report and `kgen check` state, and be at least the k asked for."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kgen import check_k_anonymity, read_csv
from kgen.cli.main import main

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def anonymize_file(source: Path, output: Path, qis: list[str], k: int, t: float, *extra: str) -> dict:
    code = main(["anonymize",
                 "--keep-unnamed", "--allow-k1",
                 str(source), "--qi", ",".join(qis), "--k", str(k), "--suppression", str(t),
                 "--output", str(output), "--quiet", *extra])
    assert code == 0
    return json.loads(output.with_suffix(".json").read_text())


def expected_whole_table_k(report: dict) -> int:
    """pycanon's k over every row: suppressed rows form one class of `*`s of their own."""
    sizes = [report["smallest_class"]] if report["classes"] else []
    if report["suppressed"]:
        sizes.append(report["suppressed"])
    return min(sizes)


@pytest.mark.slow
def test_adult_releases_agree_with_pycanon(pycanon, adult_csv: Path, adult_dir: Path, tmp_path: Path) -> None:
    cases = [(2, 0.0), (5, 0.01)]
    files, reports = [], []
    for k, t in cases:
        output = tmp_path / f"adult_k{k}.csv"
        reports.append(anonymize_file(adult_csv, output, ADULT_QIS, k, t, "--hierarchy-dir", str(adult_dir),
                                      "--sensitive", "salary-class", "--algorithm", "exhaustive"))
        files.append(output)
    released = pycanon(files, ADULT_QIS, exclude_suppressed=True)
    whole = pycanon(files, ADULT_QIS)
    for (k, t), report, path, ours, full in zip(cases, reports, files, released, whole):
        verdict = check_k_anonymity(read_csv(path), ADULT_QIS, k, t)
        assert verdict.passed
        assert ours["rows"] == 30162 - report["suppressed"]
        assert ours["k"] == report["smallest_class"] >= k, (k, t, ours, report["smallest_class"])
        assert full["rows"] == 30162 and full["k"] == expected_whole_table_k(report)
        if report["suppressed"] < k:
            assert verdict.smallest_class == ours["k"]


def test_unanonymized_adult_is_1_anonymous_for_pycanon_and_kgen_check(pycanon, adult_csv: Path) -> None:
    (measured,) = pycanon([adult_csv], ADULT_QIS)
    verdict = check_k_anonymity(read_csv(adult_csv), ADULT_QIS, k=2)
    assert measured["k"] == 1 and not verdict.passed
    assert check_k_anonymity(read_csv(adult_csv), ADULT_QIS, k=1).smallest_class == measured["k"]


def random_table(rng: random.Random, path: Path) -> None:
    n = rng.randint(20, 120)
    rows = []
    for i in range(n):
        rows.append([f"id{i}", str(rng.randint(0, 99)), rng.choice(["NL805", "NL806", "NL811", "BE10"]),
                     rng.choice(["a", "b", "c", "", "?"]), rng.choice(["x", "y"])])
    path.write_text("id,age,zip,kind,s\n" + "\n".join(",".join(r) for r in rows) + "\n")


def test_random_releases_agree_with_pycanon(pycanon, tmp_path: Path) -> None:
    """Releases of the default algorithm (the GA) and of the exhaustive search, on random tables."""
    rng = random.Random(20261121)
    qis = ["age", "zip", "kind"]
    files, reports, ks = [], [], []
    for case in range(12):
        source, output = tmp_path / f"in{case}.csv", tmp_path / f"out{case}.csv"
        random_table(rng, source)
        k, t = rng.randint(2, 6), rng.choice([0.0, 0.02, 0.1])
        extra = ["--identifier", "id", "--hierarchy", "zip=mask"] + (["--algorithm", "exhaustive"] if case % 2 else [])
        if case % 3 == 0:
            extra.append("--drop-suppressed")
        reports.append(anonymize_file(source, output, qis, k, t, *extra))
        files.append(output)
        ks.append(k)
    released = pycanon(files, qis, exclude_suppressed=True)
    whole = pycanon(files, qis)
    for k, report, ours, full in zip(ks, reports, released, whole):
        assert ours["k"] == report["smallest_class"] >= k
        assert full["k"] == (report["smallest_class"] if report["rows_written"] == ours["rows"]
                             else expected_whole_table_k(report))


def test_check_and_pycanon_agree_on_tables_kgen_did_not_write(pycanon, tmp_path: Path) -> None:
    """The verifier itself, on hand-made tables: the smallest class of `kgen check` is pycanon's k."""
    tables = {
        "pairs.csv": "a,b\n1,x\n1,x\n2,y\n2,y\n",
        "single.csv": "a,b\n1,x\n1,x\n2,y\n3,y\n",
        "quoted.csv": 'a;b\n"1,5";x\n"1,5";x\n"1,5";x\n 1;x\n',
        "missing.csv": "a,b\n,x\n,x\n?,x\n",
    }
    paths = []
    for name, text in tables.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    for path, measured in zip(paths, pycanon(paths, ["a", "b"])):
        assert check_k_anonymity(read_csv(path), ["a", "b"], k=1).smallest_class == measured["k"], path.name
