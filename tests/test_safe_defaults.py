"""Safe by default (issue 24, items 1, 3 and 4): every column has a role before anything is released, a public
report that leaks nothing the release does not show, and words that agree with the report (released count,
per-QI wording, --allow-k1, --ga-population, run.toml types and paths, --encoding, Excel input, DataFrame
hierarchies). The planted-bug tests at the end put each fixed bug back and show that a check here fails."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

import kgen
from kgen import Config, IdentifierWarning, InputError, KgenWarning, anonymize
from kgen.cli.main import main
from kgen.report import summary as summarizing
from kgen.report.public import public_report
from kgen.run import apply as applying

ROWS = [("Ann", "30", "1234", "flu", "Zürich"), ("Bob", "31", "1235", "flu", "Zürich"),
        ("Cid", "40", "1236", "cold", "Köln"), ("Dan", "41", "1237", "cold", "Köln"),
        ("Eve", "32", "1238", "flu", "Bern"), ("Fay", "43", "1239", "cold", "Bern")]
HEADER = ("name", "age", "zip", "dx", "city")


def write(path: Path, rows: list[tuple] = ROWS, header: tuple = HEADER, encoding: str = "utf-8") -> Path:
    path.write_text("\n".join(";".join(r) for r in [header, *rows]) + "\n", encoding=encoding)
    return path


def run(*argv: str) -> int:
    return main([str(a) for a in argv])


def one_line_error(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# --- 1. every column has a role ------------------------------------------------------------------------------


def test_anonymize_refuses_a_column_no_option_names(tmp_path: Path, capsys) -> None:
    data = write(tmp_path / "t.csv")
    code = run("anonymize", data, "--qi", "age,zip", "--k", "2", "--output", tmp_path / "o.csv")
    line = one_line_error(capsys)
    assert code == 2 and not (tmp_path / "o.csv").exists()
    assert "'name', 'dx', 'city'" in line and "--keep" in line and "--identifier" in line and "--keep-unnamed" in line


def test_keep_and_keep_unnamed_release_the_columns_as_they_are(tmp_path: Path, capsys) -> None:
    data = write(tmp_path / "t.csv")
    assert run("anonymize", data, "--qi", "age,zip", "--k", "2", "--identifier", "name", "--keep", "dx,city",
               "--output", tmp_path / "o.csv", "--quiet") == 0
    assert "Zürich" in (tmp_path / "o.csv").read_text(encoding="utf-8")
    report = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert report["keep"] == ["dx", "city"] and report["keep_unnamed"] is False
    assert run("anonymize", data, "--qi", "age,zip", "--k", "2", "--keep-unnamed", "--output", tmp_path / "u.csv",
               "--quiet") == 0
    err = capsys.readouterr().err
    assert "column 'name' is kept" in err and "looks like an identifier" in err  # kept, but warned about


def test_the_refusal_names_at_most_ten_columns(tmp_path: Path) -> None:
    columns = {"q": ["a", "a"]} | {f"c{i}": ["x", "y"] for i in range(14)}
    with pytest.raises(InputError) as caught:
        anonymize(columns, Config(qi=["q"], k=2))
    message = str(caught.value)
    assert "14 columns without a role" in message and "'c9'" in message and "'c10'" not in message
    assert "and 4 more" in message


def test_the_python_api_refuses_and_warns_with_a_kgen_warning_class() -> None:
    frame = {"patient_id": ["p1", "p2", "p3", "p4"], "age": ["30", "31", "40", "41"]}
    with pytest.raises(InputError, match="'patient_id'"):
        anonymize(frame, Config(qi=["age"], k=2))
    with pytest.warns(IdentifierWarning, match="patient_id"):
        result = anonymize(frame, Config(qi=["age"], k=2, keep=["patient_id"]))
    assert issubclass(IdentifierWarning, KgenWarning) and issubclass(KgenWarning, UserWarning)
    assert kgen.IdentifierWarning is IdentifierWarning
    assert result.release.column("patient_id")[0] == "p1"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a kept column that is not identifier-like warns about nothing
        anonymize({"dx": ["a", "a", "b", "b"], "age": ["30", "31", "40", "41"]}, Config(qi=["age"], k=2, keep=["dx"]))


def test_keep_names_only_columns_of_the_table_and_only_once_with_one_role() -> None:
    data = {"age": ["30", "31"], "dx": ["a", "b"]}
    with pytest.raises(InputError, match="--keep names a column the table does not have"):
        anonymize(data, Config(qi=["age"], k=2, keep=["dx", "nope"]))
    with pytest.raises(InputError, match="two roles"):
        anonymize(data, Config(qi=["age"], k=2, keep=["age", "dx"]))


def test_apply_refuses_a_new_column_and_keeps_what_the_report_kept(tmp_path: Path, capsys) -> None:
    data = write(tmp_path / "t.csv")
    assert run("anonymize", data, "--qi", "age,zip", "--k", "2", "--identifier", "name", "--keep", "dx,city",
               "--output", tmp_path / "o.csv", "--quiet") == 0
    more = write(tmp_path / "n.csv", [r + ("x",) for r in ROWS], HEADER + ("email",))
    code = run("apply", more, "--report", tmp_path / "o.json", "--output", tmp_path / "a.csv", "--quiet")
    assert code == 2 and "'email'" in one_line_error(capsys) and not (tmp_path / "a.csv").exists()
    assert run("apply", more, "--report", tmp_path / "o.json", "--output", tmp_path / "a.csv", "--keep", "email",
               "--quiet") == 0
    assert "looks like an identifier" in capsys.readouterr().err
    applied = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert applied["keep"] == ["dx", "city", "email"]


@pytest.mark.filterwarnings("ignore::kgen.IdentifierWarning")  # two-row tables: every kept column unique
def test_the_python_apply_refuses_an_unnamed_column(tmp_path: Path) -> None:
    result = anonymize({"age": ["30", "31", "40", "41"], "dx": list("aabb")}, Config(qi=["age"], k=2, keep=["dx"]))
    with pytest.raises(InputError, match="'extra'"):
        applying.apply({"age": ["30", "31"], "dx": ["a", "b"], "extra": ["1", "2"]}, result.report)
    applied = applying.apply({"age": ["30", "31"], "dx": ["a", "b"], "extra": ["1", "2"]}, result.report,
                             keep_unnamed=True)
    assert applied.release.column("extra") == ["1", "2"]


def test_mondrian_refuses_a_column_no_option_names(tmp_path: Path, capsys) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    data = write(tmp_path / "t.csv")
    code = run("mondrian", data, "--qi", "age,zip", "--k", "2", "--output", tmp_path / "m.csv")
    assert code == 2 and "'name', 'dx', 'city'" in one_line_error(capsys) and not (tmp_path / "m.csv").exists()
    assert run("mondrian", data, "--qi", "age,zip", "--k", "2", "--identifier", "name", "--keep", "dx,city",
               "--output", tmp_path / "m.csv", "--quiet") == 0
    assert json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))["keep"] == ["dx", "city"]


def test_the_partitioned_path_refuses_a_column_no_option_names() -> None:
    partitioned = pytest.importorskip("kgen.run.partitioned")
    source = SimpleNamespace(columns=["age", "name"], name="parts/")
    with pytest.raises(InputError, match="'name'"):
        partitioned.validate(Config(qi=["age"], k=2), source)
    partitioned.validate(Config(qi=["age"], k=2, keep_unnamed=True), source)


def test_the_demo_gives_every_column_a_role(tmp_path: Path, capsys) -> None:
    from kgen.cli.demo import DATA, DEMO_KEEP, DEMO_QIS

    header = (DATA / "adult.csv").read_text(encoding="utf-8").splitlines()[0].split(";")
    assert set(header) == set(DEMO_QIS) | set(DEMO_KEEP)


# --- 3. the public report ------------------------------------------------------------------------------------


def leaks(public: object, release: Path, inputs: set[str], folder: Path) -> list[str]:
    """Every string of a (public) report that must not go out: an absolute path, anything naming `folder`,
    and any value of the input or the hierarchies (`inputs`) that the release does not show."""
    shown = {cell for line in release.read_text(encoding="utf-8").splitlines() for cell in line.split(";")}
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            if value.startswith("/") or str(folder) in value or (value in inputs and value not in shown):
                found.append(value)
    walk(public)
    return found


@pytest.fixture
def published(tmp_path: Path) -> dict:
    """A release whose input and hierarchy hold values it does not show (ages, zips, an unused label)."""
    data = write(tmp_path / "t.csv")
    hierarchy = tmp_path / "h_zip.csv"
    rows = [f"{z};{z[:3]}*;*" for z in ("1234", "1235", "1236", "1237", "1238", "1239", "9999")]
    hierarchy.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "o.csv"
    assert run("anonymize", data.resolve(), "--qi", "age,zip", "--k", "2", "--identifier", "name", "--keep", "dx,city",
               "--hierarchy", f"zip={hierarchy.resolve()}", "--output", out.resolve(),
               "--public-report", (tmp_path / "public.json").resolve(), "--quiet") == 0
    inputs = {cell for r in ROWS for cell in r} | {cell for r in rows for cell in r.split(";")}
    return {"folder": tmp_path, "release": out, "inputs": inputs,
            "public": json.loads((tmp_path / "public.json").read_text(encoding="utf-8")),
            "full": json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))}


def test_the_public_report_holds_no_path_hierarchy_row_or_input_value(published: dict) -> None:
    p = published
    assert leaks(p["public"], p["release"], p["inputs"], p["folder"]) == []
    assert p["public"]["public"] is True and p["public"]["verified"]["passed"] is True
    assert p["public"]["provenance"]["release"]["name"] == "o.csv"
    assert p["public"]["provenance"]["hierarchies"]["zip"]["file"]["name"] == "h_zip.csv"
    assert p["public"]["provenance"]["release"]["sha256"] == p["full"]["provenance"]["release"]["sha256"]


def test_the_full_report_records_the_public_report_checksum(published: dict) -> None:
    import hashlib

    record = published["full"]["provenance"]["public_report"]
    data = (published["folder"] / "public.json").read_bytes()
    assert record["sha256"] == hashlib.sha256(data).hexdigest() and record["bytes"] == len(data)


@pytest.mark.filterwarnings("ignore::kgen.IdentifierWarning")  # two-row tables: every kept column unique
def test_the_public_report_of_the_api_and_of_apply(tmp_path: Path) -> None:
    result = anonymize({"age": ["30", "31", "40", "41"], "dx": list("aabb")}, Config(qi=["age"], k=2, keep=["dx"]))
    public = result.public_report()
    assert public == public_report(result.report) and "suppressed_rows" not in public
    applied = applying.apply({"age": ["30", "31"], "dx": ["a", "b"]}, result.report)
    assert "hierarchy_specs" not in applied.public_report() and applied.public_report()["public"] is True


def test_apply_and_mondrian_write_a_public_report_too(published: dict) -> None:
    p = published
    folder = p["folder"]
    applied = folder / "public-apply.json"
    assert run("apply", (folder / "t.csv").resolve(), "--report", (folder / "o.json").resolve(), "--output",
               (folder / "a.csv").resolve(), "--public-report", applied.resolve(), "--quiet") == 0
    public = json.loads(applied.read_text(encoding="utf-8"))
    assert public["applied_report"] == "o.json" and leaks(public, folder / "a.csv", p["inputs"], folder) == []
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    mondrian = folder / "public-mondrian.json"
    assert run("mondrian", (folder / "t.csv").resolve(), "--qi", "age,zip", "--k", "2", "--identifier", "name",
               "--keep", "dx,city", "--output", (folder / "m.csv").resolve(), "--public-report", mondrian.resolve(),
               "--quiet") == 0
    public = json.loads(mondrian.read_text(encoding="utf-8"))
    assert public["verified"]["passed"] is True and leaks(public, folder / "m.csv", p["inputs"], folder) == []
    assert json.loads((folder / "m.json").read_text(encoding="utf-8"))["provenance"]["public_report"]["sha256"]


# --- 4. consistent words -------------------------------------------------------------------------------------


SUPPRESSING = [("30", "1234", "a"), ("31", "1234", "a"), ("40", "1236", "b"), ("41", "1236", "b"),
               ("90", "9999", "c")]


def test_the_summary_counts_released_and_suppressed_rows_as_the_report_does(tmp_path: Path, capsys) -> None:
    data = write(tmp_path / "s.csv", SUPPRESSING, ("age", "zip", "dx"))
    assert run("anonymize", data, "--qi", "age", "--k", "2", "--suppression", "0.2", "--keep", "zip,dx",
               "--algorithm", "ola", "--output", tmp_path / "o.csv") == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert report["suppressed"] == 1 and report["rows_released"] == 4 and report["rows_written"] == 5
    assert "5 rows: 4 released, 1 suppressed (written with * in every QI)" in out
    assert "5 released" not in out
    assert ("proved optimal" in out) == bool(report["optimal"]) and "may not be optimal" not in out


def test_a_qi_generalized_to_one_value_is_not_in_between() -> None:
    attributes = {"zip": {"level": 1, "height": 4, "distinct_after": 1}, "age": {"level": 1, "height": 2,
                                                                             "distinct_after": 3}}
    full, kept, between = summarizing.node_groups(attributes)
    assert (full, kept, between) == (["zip"], [], ["age"])


def test_k1_needs_allow_k1_in_anonymize_mondrian_and_the_api(tmp_path: Path, capsys) -> None:
    data = write(tmp_path / "t.csv")
    assert run("anonymize", data, "--qi", "age,zip", "--k", "1", "--keep-unnamed", "--output", tmp_path / "o.csv") == 2
    assert "--allow-k1" in one_line_error(capsys)
    assert run("anonymize", data, "--qi", "age,zip", "--k", "1", "--keep-unnamed", "--allow-k1", "--output",
               tmp_path / "o.csv", "--quiet") == 0
    with pytest.raises(InputError, match="allow_k1"):
        anonymize({"age": ["1", "2"]}, Config(qi=["age"], k=1))
    assert anonymize({"age": ["1", "2"]}, Config(qi=["age"], k=1, allow_k1=True)).report["k"] == 1
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    capsys.readouterr()
    assert run("mondrian", data, "--qi", "age,zip", "--k", "1", "--keep-unnamed", "--output", tmp_path / "m.csv") == 2
    assert "--allow-k1" in one_line_error(capsys)


def test_population_is_only_the_risk_table_and_the_ga_size_is_ga_population(tmp_path: Path, capsys) -> None:
    data = write(tmp_path / "t.csv")
    base = ["anonymize", data, "--qi", "age,zip", "--k", "2", "--keep-unnamed", "--output", tmp_path / "o.csv"]
    assert run(*base, "--population", "12") == 2
    assert "--population" in one_line_error(capsys)
    assert run(*base, "--ga-population", "12", "--quiet") == 2  # auto, the default, takes no GA size
    assert "error: --ga-population and --selection tune the GA alone" in capsys.readouterr().err
    assert run(*base, "--algorithm", "kgen", "--ga-population", "12", "--quiet") == 0
    report = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert report["parameters"]["population"] == 12
    result = anonymize({"age": ["1", "2", "3", "4"]}, Config(qi=["age"], k=2, algorithm="kgen",
                                                                  options={"ga_population": 14}))
    assert result.report["parameters"]["population"] == 14


def test_run_toml_values_are_typed_strictly_and_paths_resolve_from_its_folder(tmp_path: Path, capsys,
                                                                                monkeypatch) -> None:
    project = tmp_path / "project"
    (project / "h").mkdir(parents=True)
    write(project / "t.csv")
    (project / "h" / "zip.csv").write_text("".join(f"123{i};123*;*\n" for i in range(4, 10)), encoding="utf-8")
    toml = project / "run.toml"
    text = ('input = "t.csv"\nqi = ["age", "zip"]\nk = 2\nidentifier = ["name"]\nkeep = ["dx", "city"]\n'
            'hierarchy = ["zip=h/zip.csv", "age=decimal"]\noutput = "o.csv"\n')
    toml.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # not the file's folder
    assert run("anonymize", "--config", toml, "--quiet") == 0
    assert (project / "o.csv").exists()
    report = json.loads((project / "o.json").read_text(encoding="utf-8"))
    assert report["attributes"]["zip"]["hierarchy"].endswith("zip.csv")
    toml.write_text(text.replace("k = 2", 'k = "2"'), encoding="utf-8")
    assert run("anonymize", "--config", toml, "--quiet") == 2
    line = one_line_error(capsys)
    assert "'k'" in line and str(toml) in line and "whole number" in line
    toml.write_text(text.replace('input = "t.csv"', "input = 5"), encoding="utf-8")
    assert run("anonymize", "--config", toml, "--quiet") == 2
    assert "'input'" in one_line_error(capsys)


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "utf-16"])
def test_encoding_reads_excel_exported_files_in_every_command(tmp_path: Path, capsys, encoding: str) -> None:
    data = write(tmp_path / "t.csv", encoding=encoding)
    out = tmp_path / "o.csv"
    assert run("anonymize", data, "--qi", "age,zip", "--k", "2", "--identifier", "name", "--keep", "dx,city",
               "--output", out, "--quiet", "--encoding", encoding) == 0
    assert "Zürich" in out.read_text(encoding="utf-8")
    assert run("check", data, "--qi", "name", "--k", "1", "--encoding", encoding) == 0
    assert run("risk", data, "--qi", "city", "--encoding", encoding) == 0
    assert run("apply", data, "--report", tmp_path / "o.json", "--output", tmp_path / "a.csv", "--quiet",
               "--encoding", encoding) == 0
    capsys.readouterr()
    assert run("anonymize", data, "--qi", "age,zip", "--k", "2", "--keep-unnamed", "--output", out, "--quiet") == 2
    line = one_line_error(capsys)
    assert "--encoding" in line and str(data) in line


def test_undecodable_bytes_are_one_line_naming_file_row_and_column(tmp_path: Path, capsys) -> None:
    data = tmp_path / "bad.csv"
    data.write_bytes(b"a;b\nx;y\nz;\x81w\n")  # 0x81 is not a character of Windows-1252
    assert run("check", data, "--qi", "a", "--k", "1", "--encoding", "cp1252") == 2
    line = one_line_error(capsys)
    assert "row 2" in line and "column 'b'" in line and "cp1252" in line
    assert run("check", data, "--qi", "a", "--k", "1", "--encoding", "klingon") == 2
    assert "unknown encoding" in one_line_error(capsys)


def test_excel_input_in_anonymize_check_apply_and_risk(tmp_path: Path, capsys) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(list(HEADER))
    for name, age, zip_code, dx, city in ROWS:
        book.active.append([name, int(age), float(zip_code), dx, city])
    data = tmp_path / "t.xlsx"
    book.save(data)
    out = tmp_path / "o.csv"
    assert run("anonymize", data, "--qi", "age,zip", "--k", "2", "--identifier", "name", "--keep", "dx,city",
               "--output", out, "--quiet") == 0
    assert "[1230, 1239]" in out.read_text(encoding="utf-8")  # 1234.0 read as 1234, as a CSV export writes it
    assert run("check", data, "--qi", "name", "--k", "1") == 0
    assert run("risk", data, "--qi", "city") == 0
    assert run("apply", data, "--report", tmp_path / "o.json", "--output", tmp_path / "a.csv", "--quiet") == 0
    (tmp_path / "bad.xlsx").write_text("not a workbook", encoding="utf-8")
    capsys.readouterr()
    assert run("risk", tmp_path / "bad.xlsx", "--qi", "city") == 2
    assert "not a readable .xlsx" in one_line_error(capsys)


def test_a_dataframe_is_a_hierarchy_in_the_api() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"zip": ["1234", "1235", "1236", "1237"], "dx": list("aabb")})
    hierarchy = pd.DataFrame([[z, z[:3] + "*", "*"] for z in ("1234", "1235", "1236", "1237")])
    result = anonymize(frame, Config(qi=["zip"], k=2, keep=["dx"], hierarchies={"zip": hierarchy}))
    assert set(result.release.column("zip")) == {"123*"}
    assert result.report["attributes"]["zip"]["hierarchy"] == "DataFrame"


# --- planted bugs: each fixed bug put back, and a check above that catches it ---------------------------------


def test_planted_no_role_check_lets_a_name_column_out_and_the_refusal_test_sees_it(tmp_path, capsys,
                                                                                   monkeypatch) -> None:
    import kgen.run.roles as roles

    monkeypatch.setattr(roles, "require_roles", lambda *args, **kwargs: None)  # the check gone
    with pytest.raises(AssertionError):
        test_anonymize_refuses_a_column_no_option_names(tmp_path, capsys)


def test_planted_leaking_public_report_is_caught(published: dict) -> None:
    """The leak check finds what the full report holds (absolute paths, hierarchy rows with an unused label,
    suppressed input values): a public report that copied any of it would fail."""
    p = published
    found = leaks(p["full"], p["release"], p["inputs"], p["folder"])
    assert any(v.startswith("/") for v in found) and "9999" in found
    leaky = dict(p["public"], hierarchy_specs=p["full"]["hierarchy_specs"])
    assert "9999" in leaks(leaky, p["release"], p["inputs"], p["folder"])


def test_planted_summary_counting_written_rows_as_released_is_caught(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(summarizing, "released_text", lambda r: f"{r['rows']} rows, {r['rows_written']} released")
    with pytest.raises(AssertionError):
        test_the_summary_counts_released_and_suppressed_rows_as_the_report_does(tmp_path, capsys)


def parts_text(folder: Path) -> Path:
    """The parts of a folder release joined into one file, for `leaks` (which reads one release file)."""
    joined = folder.parent / f"{folder.name}-joined.csv"
    joined.write_text("".join(p.read_text(encoding="utf-8").replace(",", ";") for p in sorted(folder.glob("part-*"))),
                      encoding="utf-8")
    return joined


@pytest.mark.slow  # a Dask LocalCluster: over 2 s
def test_the_public_report_of_partitioned_and_distributed_mondrian_leaks_nothing(published: dict) -> None:
    """The two folder releases (`anonymize --partitioned`, `mondrian --workers`) write a public report too, and it
    holds no path, hierarchy row or input value: a distributed Mondrian's fragment conditions name cut values
    and hierarchy leaves of the input, which the public report must not carry."""
    pytest.importorskip("distributed")
    pytest.importorskip("pandas")
    p = published
    folder = p["folder"]
    rows = [(f"P{i}", str(20 + i % 40), f"123{4 + i % 6}", "flu" if i % 3 else "cold", "Bern")
            for i in range(240)]
    data = write(folder / "many.csv", rows)
    hierarchy = folder / "h_zip.csv"
    public = folder / "public-parts.json"
    assert run("anonymize", data.resolve(), "--qi", "age,zip", "--k", "5", "--identifier", "name", "--keep",
               "dx,city", "--hierarchy", f"zip={hierarchy.resolve()}", "--partitioned", "--output",
               (folder / "parts").resolve(), "--public-report", public.resolve(), "--quiet") == 0
    inputs = {cell for r in rows for cell in r} | p["inputs"]
    report = json.loads(public.read_text(encoding="utf-8"))
    assert report["public"] is True and report["verified"]["passed"] is True
    assert leaks(report, parts_text(folder / "parts"), inputs, folder) == []
    public = folder / "public-fragments.json"
    assert run("mondrian", data.resolve(), "--qi", "age,zip", "--k", "5", "--identifier", "name", "--keep",
               "dx,city", "--hierarchy", f"zip={hierarchy.resolve()}", "--workers", "2", "--output",
               (folder / "fragments").resolve(), "--public-report", public.resolve(), "--quiet") == 0
    report = json.loads(public.read_text(encoding="utf-8"))
    assert report["public"] is True and report["verified"]["passed"] is True
    assert leaks(report, parts_text(folder / "fragments"), inputs, folder) == []
    full = json.loads((folder / "fragments.json").read_text(encoding="utf-8"))
    assert all("condition" in f for f in full["fragments"])  # the cut values of the input, in the full report only
    assert all(set(f) == {"part", "rows", "sha256"} for f in report["fragments"])


def test_options_the_algorithm_refuses_are_refused_before_the_data_is_read(tmp_path: Path, capsys) -> None:
    """auto refused --ga-population only after reading and preparing the table (minutes on a large one)."""
    missing = tmp_path / "not-there.csv"  # reading it would be "file not found"
    assert run("anonymize", missing, "--qi", "age", "--k", "2", "--keep-unnamed", "--ga-population", "12",
               "--output", tmp_path / "o.csv") == 2
    assert "--ga-population and --selection tune the GA alone" in one_line_error(capsys)
    with pytest.raises(InputError, match="unknown algorithm 'nope'"):
        anonymize(str(missing), Config(qi=["age"], k=2, algorithm="nope"))
