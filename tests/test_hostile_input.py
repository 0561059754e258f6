"""Hostile and messy input (issue 8): one test per case of docs/input-errors.md.

Each error case checks the exit code, that stderr is ONE line `kgen: error: ...` naming the file, row, column
or value, and that no traceback is printed. Each valid-but-messy case checks the released table itself and
that it passes `kgen check`. The CLI runs in-process through `kgen.cli.main.main`, and a few cases through
`python -m kgen` in a subprocess.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from kgen.cli import anonymize as anonymize_command
from kgen.cli.main import main
from kgen.io.files import write_atomic, write_atomic_many
from lattice.builders import decimal_hierarchy, interval_hierarchy
from lattice.errors import InputError

EXIT_OK, EXIT_CHECK_FAILED, EXIT_INPUT, EXIT_NO_SOLUTION, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

PEOPLE = "age,zip,sex,disease\n" + "".join(
    f"{age},{zip_},{sex},{disease}\n"
    for age, zip_, sex, disease in [
        (23, "13053", "M", "flu"), (27, "13068", "F", "cold"), (28, "13068", "M", "flu"),
        (35, "14850", "F", "asthma"), (36, "14853", "M", "cold"), (39, "14850", "F", "flu"),
        (41, "13053", "M", "asthma"), (45, "13068", "F", "cold"), (47, "13053", "M", "flu"),
    ]
)


# ---------------------------------------------------------------- helpers


def write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """Run the CLI in-process; no traceback may reach the console."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def error_line(err: str) -> str:
    """The single error line on stderr (fails unless there is exactly one `kgen: error:` line)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert lines[0].startswith("kgen: error: "), lines[0]
    return lines[0]


def anonymize(capsys: pytest.CaptureFixture[str], source: Path, *args: object, qi: str = "age,zip",
              k: object = 2, output: Path | None = None) -> tuple[int, str, str]:
    output = output or source.with_name("out.csv")
    return run(capsys, "anonymize",
               "--keep-unnamed", "--allow-k1", source, "--qi", qi, "--k", k, "--output", output, "--quiet", *args)


def refused(capsys: pytest.CaptureFixture[str], source: Path, *args: object, qi: str = "age,zip", k: object = 2,
            code: int = EXIT_INPUT, output: Path | None = None) -> str:
    """Run an anonymization that must fail with `code`, leave no output, and return its error line."""
    output = output or source.with_name("out.csv")
    existed = output.exists()
    got, out, err = anonymize(capsys, source, *args, qi=qi, k=k, output=output)
    assert got == code, err
    assert out == ""
    if not existed:
        assert not output.exists()
    assert not list(source.parent.glob(".*.tmp"))
    return error_line(err)


def released(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8"), newline="")))


def passes_check(capsys: pytest.CaptureFixture[str], output: Path, qi: str, k: int, suppression: float = 0.0) -> None:
    code, out, _ = run(capsys, "check", output, "--qi", qi, "--k", k, "--suppression", suppression)
    assert code == EXIT_OK and out.startswith("PASS"), out


# ---------------------------------------------------------------- reading the input


def test_empty_file_is_an_error_naming_the_file(tmp_path, capsys):
    source = write(tmp_path, "empty.csv", b"")
    line = refused(capsys, source)
    assert f"{source}: is empty" in line


def test_file_of_blank_lines_is_empty_too(tmp_path, capsys):
    source = write(tmp_path, "blank.csv", "\n  \r\n\n")
    assert "is empty" in refused(capsys, source)


def test_header_only_says_there_are_no_data_rows(tmp_path, capsys):
    source = write(tmp_path, "header.csv", "age,zip,sex\n")
    line = refused(capsys, source)
    assert f"{source}: has a header but no data rows" in line


def test_duplicate_column_names_are_named_with_both_positions(tmp_path, capsys):
    source = write(tmp_path, "dup.csv", "age,zip, age\n30,111,31\n")
    line = refused(capsys, source)
    assert f"{source}, line 1, column 'age': duplicate column name 'age' (columns 1 and 3)" in line


def test_header_with_a_trailing_separator_names_the_nameless_column(tmp_path, capsys):
    source = write(tmp_path, "trailing.csv", "age,zip,\n30,111,\n")
    line = refused(capsys, source)
    assert "line 1" in line and "column 3 of the header has no name (a trailing separator?)" in line


def test_ragged_row_names_its_row_and_its_line(tmp_path, capsys):
    # Data row 2 starts on line 4: the quoted field of row 1 spans two lines. The row is not shown.
    source = write(tmp_path, "ragged.csv", 'age,zip,note\n30,111,"two\nlines"\n31,112\n')
    line = refused(capsys, source)
    assert f"{source}, row 2, line 4: has 2 fields but the header has 3" in line
    assert "112" not in line.replace(str(source), "")  # the temporary folder's name may hold any digits


def test_bytes_that_are_not_utf8_name_row_line_and_column_and_show_only_the_field(tmp_path, capsys):
    source = write(tmp_path, "latin1.csv", "age,city,note\n30,Zürich,secret\n31,Genève,x\n".encode("latin-1"))
    line = refused(capsys, source, qi="age,city")
    assert f"{source}, row 1, column 'city': is not UTF-8: line 2 has byte 0xfc: 'Z\\\\xfcrich'" in line
    shown = line.replace(str(source), "")  # the temporary folder's name may hold any digits (pytest-300)
    assert "re-save the file as UTF-8" in line and "30" not in shown and "secret" not in shown


def test_utf16_file_is_recognized(tmp_path, capsys):
    source = write(tmp_path, "utf16.csv", "age,zip\n30,111\n".encode("utf-16"))
    assert "is UTF-16" in refused(capsys, source)


def test_unclosed_quote_names_the_line(tmp_path, capsys):
    source = write(tmp_path, "quote.csv", 'age,zip\n30,111\n31,"112\n32,113\n')
    line = refused(capsys, source)
    assert f"{source}, row 2, line 3: is not valid CSV" in line and "never closed" in line


def test_bom_is_dropped_and_the_first_column_is_found(tmp_path, capsys):
    source = write(tmp_path, "bom.csv", b"\xef\xbb\xbf" + PEOPLE.encode())
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", qi="age,sex", output=output)
    assert code == EXIT_OK, err
    text = output.read_bytes()
    assert text.startswith(b"age,zip,sex,disease\n")
    passes_check(capsys, output, "age,sex", 2)


def test_crlf_and_cr_only_line_endings_are_read(tmp_path, capsys):
    for name, ending in (("crlf.csv", "\r\n"), ("cr.csv", "\r")):
        source = write(tmp_path, name, PEOPLE.replace("\n", ending))
        output = tmp_path / f"out_{name}"
        code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", output=output)
        assert code == EXIT_OK, err
        assert len(released(output)) == 9
        assert [r["disease"] for r in released(output)] == [line.split(",")[3] for line in PEOPLE.split()[1:]]


def test_quoted_separators_and_newlines_survive_unchanged(tmp_path, capsys):
    notes = ['says "hi", twice', "two\nlines", "semi;colon", "plain", "a,b,c", "x\r\ny", "", " pad ", "last"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["age", "city", "note"])
    cities = ["Ithaca, NY", "Ithaca, NY", "Rome; IT", "Rome; IT", "Ithaca, NY", "Rome; IT", "Ithaca, NY",
              "Rome; IT", "Ithaca, NY"]
    for age, city, note in zip(range(30, 39), cities, notes):
        writer.writerow([age, city, note])
    source = write(tmp_path, "quoted.csv", buffer.getvalue())
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", qi="age,city", output=output)
    assert code == EXIT_OK, err
    rows = released(output)
    assert [r["note"] for r in rows] == notes
    assert {r["city"] for r in rows} <= {"Ithaca, NY", "Rome; IT", "*"}
    passes_check(capsys, output, "age,city", 2)


def test_semicolon_file_is_detected_and_written_back_with_semicolons(tmp_path, capsys):
    source = write(tmp_path, "semi.csv", PEOPLE.replace(",", ";"))
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", output=output)
    assert code == EXIT_OK, err
    assert output.read_text().splitlines()[0] == "age;zip;sex;disease"


def test_blank_lines_are_skipped_and_separator_only_rows_are_kept(tmp_path, capsys):
    # `,,,` is a record whose values are all missing: dropping it would lose a row of the user's data.
    source = write(tmp_path, "blanks.csv", "\n" + PEOPLE.replace("\n", "\n\n", 3) + ",,,\n,,,\n")
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", qi="age,sex", output=output)
    assert code == EXIT_OK, err
    rows = released(output)
    assert len(rows) == 11
    assert rows[-1]["zip"] == rows[-1]["disease"] == rows[-2]["zip"] == ""
    assert [r["disease"] for r in rows[:9]] == [line.split(",")[3] for line in PEOPLE.split()[1:]]
    passes_check(capsys, output, "age,sex", 2)


def test_unreadable_input_is_named(tmp_path, capsys):
    line = refused(capsys, tmp_path / "nope.csv")
    assert f"{tmp_path / 'nope.csv'}: file not found" in line
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    assert f"{folder}: is a folder, not a file" in refused(capsys, folder)


# ---------------------------------------------------------------- columns and values


def test_unknown_column_lists_the_columns_there_are(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    line = refused(capsys, source, qi="age,postcode")
    assert f"{source}, column 'postcode': unknown column 'postcode'; the table has: age, zip, sex, disease" in line


def test_qi_column_entirely_missing_is_released_as_missing(tmp_path, capsys):
    rows = PEOPLE.splitlines()
    text = "\n".join([rows[0] + ",income"] + [r + ("," if i % 2 else ",?") for i, r in enumerate(rows[1:])]) + "\n"
    source = write(tmp_path, "missing.csv", text)
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", "--report", tmp_path / "r.json",
                             qi="sex,income", output=output)
    assert code == EXIT_OK, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["node"]["income"] == 0 and report["heights"]["income"] == 1
    # "" and "?" are both missing: one canonical token, never imputed
    assert {r["income"] for r in released(output)} == {"?"}
    passes_check(capsys, output, "sex,income", 2)


def test_text_in_a_numeric_qi_names_row_column_and_value(tmp_path, capsys):
    source = write(tmp_path, "text.csv", PEOPLE.replace("\n36,", "\nthirty-six,"))
    line = refused(capsys, source)
    assert f"{source}, row 5, column 'age': value 'thirty-six' is text in a numeric column" in line


def test_text_in_a_column_declared_decimal_names_row_column_and_value(tmp_path, capsys):
    source = write(tmp_path, "text.csv", PEOPLE.replace("\n41,", "\n4l,"))
    line = refused(capsys, source, "--hierarchy", "age=decimal")
    assert f"{source}, row 7, column 'age': value '4l' is not a number" in line


def test_negative_and_decimal_numbers_get_intervals_that_contain_them(tmp_path, capsys):
    values = ["-12.5", "-3", "-0.25", "0", "0.5", "9.5", "9.75", "10", "11.25", "-12.5", "99.9", "-3"]
    source = write(tmp_path, "numbers.csv", "x,y\n" + "".join(f"{v},a\n" for v in values))
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", "--report", tmp_path / "r.json",
                             qi="x", output=output)
    assert code == EXIT_OK, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["heights"]["x"] == 3  # [x, 10s, 100s, *]: two digits, plus * for the negatives
    assert report["node"]["x"] >= 1
    for raw, row in zip(values, released(output)):
        label = row["x"]
        if label == "*":
            continue
        low, high = re.fullmatch(r"\[(-?\d+), (-?\d+)\)", label).groups()  # half-open: there are fractions
        assert Decimal(low) <= Decimal(raw) < Decimal(high), (raw, label)
    passes_check(capsys, output, "x", 2)


def test_numeric_builders_round_negatives_down_and_use_half_open_intervals_for_fractions():
    paths = decimal_hierarchy("x", ["-5", "3", "12"]).paths
    assert paths["-5"] == ("-5", "[-10, -1]", "[-100, -1]", "*")
    assert paths["12"] == ("12", "[10, 19]", "[0, 99]", "*")
    paths = decimal_hierarchy("x", ["-0.5", "9.5"]).paths
    assert paths["9.5"] == ("9.5", "[0, 10)", "*")
    assert paths["-0.5"] == ("-0.5", "[-10, 0)", "*")
    assert interval_hierarchy("x", ["-5", "3.5"], [5, 10]).paths["-5"] == ("-5", "[-5, 0)", "[-10, 0)", "*")
    for bad in ("nan", "inf", "1_000", "١٢", "0x10"):
        with pytest.raises(InputError, match="is not a number"):
            decimal_hierarchy("x", ["1", bad])
    with pytest.raises(InputError, match="more than 18 digits"):
        decimal_hierarchy("x", ["1e999999999"])


# ---------------------------------------------------------------- hierarchies


def test_hierarchy_missing_a_value_names_file_value_and_data_row(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "sex.csv", "M;person\n")
    line = refused(capsys, source, "--hierarchy", f"sex={hierarchy}", qi="sex")
    assert f"{hierarchy}, column 'sex': value 'F' of column 'sex' is missing from the hierarchy" in line
    assert f"(first in row 2 of {source})" in line


def test_value_with_two_parents_names_the_hierarchy_row_and_level(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "zip.csv", "13053;130**;*\n13068;130**;*\n\n14850;148**;*\n14853;130**;+\n")
    line = refused(capsys, source, "--hierarchy", f"zip={hierarchy}", qi="zip")
    assert (f"{hierarchy}, row 5, column 'zip': value '130**' at level 1 has two parents at level 2: "
            "'*' and '+'") in line


def test_hierarchy_rows_of_different_lengths_name_the_row(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "zip.csv", "13053;130**;*\n13068;130**;*\n14850;*\n14853;148**;*\n")
    line = refused(capsys, source, "--hierarchy", f"zip={hierarchy}", qi="zip")
    assert f"{hierarchy}, row 3, column 'zip': has 2 levels but the first row has 3" in line


def test_hierarchy_with_an_empty_label_names_the_row_and_level(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "sex.csv", "M;person;*\nF;;*\n")
    line = refused(capsys, source, "--hierarchy", f"sex={hierarchy}", qi="sex")
    assert f"{hierarchy}, row 2, column 'sex': value 'F' has an empty generalization at level 1" in line


def test_hierarchy_with_a_separator_at_the_end_of_every_row_is_accepted(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "sex.csv", "M;*;\nF;*;\n")
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", "--hierarchy", f"sex={hierarchy}",
                             "--report", tmp_path / "r.json", qi="sex", output=output)
    assert code == EXIT_OK, err
    assert json.loads((tmp_path / "r.json").read_text())["heights"]["sex"] == 1


def test_hierarchy_folder_that_does_not_exist_is_an_error_not_a_silent_default(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    line = refused(capsys, source, "--hierarchy-dir", tmp_path / "hierarchies")
    assert f"{tmp_path / 'hierarchies'}: hierarchy folder does not exist" in line


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize("k", [0, -3])
def test_k_below_one_is_refused(tmp_path, capsys, k):
    source = write(tmp_path, "people.csv", PEOPLE)
    assert f"k must be a whole number >= 1, got {k}" in refused(capsys, source, k=k)


def test_k_that_is_not_a_whole_number_is_refused(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    assert "argument --k: k must be a whole number, got '2.5'" in refused(capsys, source, k="2.5")


def test_k_above_the_number_of_rows_is_refused(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    line = refused(capsys, source, k=10)
    assert f"{source}: k = 10 is larger than the number of rows (9)" in line


@pytest.mark.parametrize("suppression", ["-0.1", "1.5", "nan", "inf"])
def test_suppression_outside_zero_one_is_refused(tmp_path, capsys, suppression):
    source = write(tmp_path, "people.csv", PEOPLE)
    assert "suppression must be a fraction in [0, 1], got" in refused(capsys, source, "--suppression", suppression)


def test_single_row_works_with_k_one_and_is_refused_with_k_two(tmp_path, capsys):
    source = write(tmp_path, "one.csv", "age,zip,name\n34,13053,Ann\n")
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--identifier", "name", k=1, output=output)
    assert code == EXIT_OK, err
    assert released(output) == [{"age": "34", "zip": "13053", "name": "*"}]
    assert "larger than the number of rows (1)" in refused(capsys, source, k=2, output=tmp_path / "out2.csv")


def test_no_feasible_node_exits_3_and_says_what_would_help(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    # The top of this hierarchy has two values: 'south' holds one row, which k = 2 can only suppress.
    hierarchy = write(tmp_path, "zip.csv", "13053;north\n13068;north\n14850;north\n14853;south\n")
    line = refused(capsys, source, "--hierarchy", f"zip={hierarchy}", qi="zip", code=EXIT_NO_SOLUTION)
    assert f"{source}: no transformation satisfies the privacy model" in line
    assert "suppresses 1 of 9 rows" in line
    assert "Raise --suppression to at least 0.1112" in line  # rounded up: floor(0.1112 * 9) = 1
    code, _, err = anonymize(capsys, source, "--hierarchy", f"zip={hierarchy}", "--suppression", "0.1112",
                             qi="zip", output=tmp_path / "ok.csv")
    assert code == EXIT_OK, err


def test_a_search_that_runs_out_of_budget_without_a_feasible_node_exits_3(tmp_path, capsys):
    source, qis = long_table(tmp_path)
    line = refused(capsys, source, "--algorithm", "exhaustive", "--no-prune", "--max-evaluations", 5, qi=qis,
                   k=400, code=EXIT_NO_SOLUTION)
    assert "found no feasible node in 5 evaluations; raise --max-evaluations or --time-limit" in line


def test_two_hundred_qi_columns_finish_with_the_default_algorithm(tmp_path, capsys):
    rng = random.Random(8)
    records = [[str(rng.randrange(0, 1000)) if c % 2 else rng.choice("ABCDEFGH") for c in range(200)]
               for _ in range(15)]
    rows = [r for record in records for r in (record, record)]  # every record twice: the bottom is 2-anonymous
    rng.shuffle(rows)
    names = [f"q{c}" for c in range(200)]
    source = write(tmp_path, "wide.csv", ",".join(names) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    output = tmp_path / "out.csv"
    start = time.perf_counter()
    code, _, err = anonymize(capsys, source, "--max-evaluations", 300, qi=",".join(names), output=output)
    seconds = time.perf_counter() - start
    assert code == EXIT_OK, err
    assert seconds < 30
    passes_check(capsys, output, ",".join(names), 2)


# ---------------------------------------------------------------- outputs


def test_output_equal_to_the_input_is_refused_however_it_is_spelled(tmp_path, capsys, monkeypatch):
    source = write(tmp_path, "people.csv", PEOPLE)
    os.link(source, tmp_path / "hardlink.csv")
    (tmp_path / "symlink.csv").symlink_to(source)
    monkeypatch.chdir(tmp_path)
    before = source.read_bytes()
    for spelling in ("people.csv", "./people.csv", f"{tmp_path}/../{tmp_path.name}/people.csv", "hardlink.csv",
                     "symlink.csv"):
        line = refused(capsys, source, output=Path(spelling))
        assert f"is an input of this run ({str(source)!r}): refusing to overwrite it" in line
    line = refused(capsys, source, "--report", "people.csv", output=tmp_path / "new.csv")
    assert "people.csv: is an input of this run" in line
    assert source.read_bytes() == before


def test_output_equal_to_a_hierarchy_file_is_refused(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "h_hierarchy_sex.csv", "M;*\nF;*\n")
    before = hierarchy.read_bytes()
    line = refused(capsys, source, "--hierarchy", f"sex={hierarchy}", qi="sex", output=hierarchy)
    assert f"{hierarchy}: is an input of this run" in line
    line = refused(capsys, source, "--hierarchy-dir", tmp_path, qi="sex", output=hierarchy)
    assert f"{hierarchy}: is an input of this run" in line
    assert hierarchy.read_bytes() == before


def test_output_and_report_at_the_same_path_are_refused(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    out = tmp_path / "same.csv"
    line = refused(capsys, source, "--report", out, output=out)
    assert f"{out}: is given for both the output and the report" in line


def test_output_folder_that_cannot_be_written_is_refused_before_the_search(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    a_file = write(tmp_path, "file", "x")
    line = refused(capsys, source, output=a_file / "out.csv")
    assert f"{a_file / 'out.csv'}: cannot be written: {str(a_file)!r} is a file, not a folder" in line
    line = refused(capsys, source, output=tmp_path / "no" / "out.csv")
    assert f"the folder {str(tmp_path / 'no')!r} does not exist (create it first)" in line
    assert not (tmp_path / "no").exists()
    assert f"{tmp_path}: is a folder: give a file name" in refused(capsys, source, output=tmp_path)
    # /proc refuses new files even to root: a folder that really cannot be written
    line = refused(capsys, source, output=Path("/proc/kgen-out.csv"))
    assert "/proc/kgen-out.csv: cannot be written: the folder '/proc' is not writable" in line


def test_a_failing_write_leaves_no_temporary_file_and_the_old_output_intact(tmp_path, monkeypatch):
    target = write(tmp_path, "out.csv", "old\n")
    other = tmp_path / "report.json"

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(InputError, match="cannot be written: No space left on device"):
        write_atomic_many([(target, "new\n"), (other, "{}\n")])
    assert target.read_text() == "old\n" and not other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]

    def interrupted_replace(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_the_input_is_only_read(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    hierarchy = write(tmp_path, "sex.csv", "M;*\nF;*\n")
    os.utime(source, (1_000_000_000, 1_000_000_000))
    before = (source.read_bytes(), source.stat().st_mtime_ns, hierarchy.read_bytes(), hierarchy.stat().st_mtime_ns)
    code, _, err = anonymize(capsys, source, "--hierarchy", f"sex={hierarchy}", qi="age,sex")
    assert code == EXIT_OK, err
    after = (source.read_bytes(), source.stat().st_mtime_ns, hierarchy.read_bytes(), hierarchy.stat().st_mtime_ns)
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "out.json", "people.csv", "sex.csv"]


# ---------------------------------------------------------------- interruption


def long_table(folder: Path, rows: int = 400, qis: int = 5, seed: int = 0, distinct: int | None = None
               ) -> tuple[Path, str]:
    """Numbers in 0..999 (decimal hierarchies of height 3); `distinct` records drawn with replacement."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(qis)]
    records = [",".join(str(rng.randrange(0, 1000)) for _ in names) for _ in range(distinct or rows)]
    lines = [",".join(names)] + (records if distinct is None else [rng.choice(records) for _ in range(rows)])
    return write(folder, "long.csv", "\n".join(lines) + "\n"), ",".join(names)


class InterruptingBar:
    """Stands in for the progress bar and presses Ctrl-C at its `after`-th call."""

    after = 2

    def __init__(self, total, stream=None, **_):
        self.calls = 0

    def __call__(self, evaluations, best):
        self.calls += 1
        if self.calls >= self.after:
            raise KeyboardInterrupt

    def close(self):
        pass


def test_ctrl_c_during_a_search_reports_the_best_so_far_and_writes_nothing(tmp_path, capsys, monkeypatch):
    source, qis = long_table(tmp_path)  # 4^5 = 1024 nodes: exhaustive evaluates 256 per progress call
    monkeypatch.setattr(anonymize_command, "ProgressBar", InterruptingBar)
    code, out, err = anonymize(capsys, source, "--algorithm", "exhaustive", "--no-prune", "--suppression", "0.05",
                               qi=qis, k=2)
    assert code == EXIT_INTERRUPTED
    assert err.startswith("kgen: interrupted after 512 evaluations")
    assert "no output was written. Best so far (not released" in err
    assert re.search(r"exhaustive \(interrupted, 512 evaluations, [\d.]+ s\): 5 QIs", err)
    assert "LOG " in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv"]


def test_ctrl_c_before_any_feasible_node_says_so(tmp_path, capsys, monkeypatch):
    source, qis = long_table(tmp_path)
    monkeypatch.setattr(InterruptingBar, "after", 1)
    monkeypatch.setattr(anonymize_command, "ProgressBar", InterruptingBar)
    # k = all rows: only nodes with every QI at its top are feasible, and the first 256 nodes are low
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", "--no-prune", qi=qis, k=400)
    assert code == EXIT_INTERRUPTED
    assert err.strip() == ("kgen: interrupted after 256 evaluations "
                           f"({err.split('(')[1].split(')')[0]}); no output was written; "
                           "no node satisfying the model had been found yet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv"]


def test_sigint_to_a_running_kgen_process_exits_130_with_the_best_so_far(tmp_path):
    import pty

    # 4^12 nodes: hours for exhaustive; few distinct records, so a feasible node comes in the first batch
    source, qis = long_table(tmp_path, rows=2000, qis=12, seed=1, distinct=30)
    master, slave = pty.openpty()  # stderr on a terminal, so the progress bar shows when the search runs
    process = subprocess.Popen(
        [sys.executable, "-m", "kgen", "anonymize",
         "--keep-unnamed", str(source), "--qi", qis, "--k", "2", "--suppression", "0.01",
         "--algorithm", "exhaustive", "--no-prune", "--time-limit", "3600",  # a box this large needs a limit
         "--output", str(tmp_path / "out.csv")],
        stdout=subprocess.PIPE, stderr=slave, cwd=tmp_path,
        # a runner started in the background inherits SIGINT as ignored, and Python keeps it so: give the child
        # the disposition of a terminal, where Ctrl-C interrupts
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"best LOG" not in seen and time.monotonic() < deadline:  # "12%|#--| N/M nodes, 3s, best LOG ..."
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                seen += os.read(master, 4096)
        assert b"best LOG" in seen, seen
        process.send_signal(signal.SIGINT)
        # keep draining the terminal while waiting: a child blocked writing to a full pty never exits
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            chunk = b""
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                seen += chunk
            if not chunk and process.poll() is not None:
                break
        code = process.wait(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    text = seen.decode(errors="replace")
    assert code == EXIT_INTERRUPTED, text
    assert "Traceback" not in text
    assert "kgen: interrupted after" in text and "no output was written" in text
    assert "Best so far" in text and "(interrupted," in text
    assert process.stdout.read() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv"]


def test_ctrl_c_outside_the_search_writes_nothing(tmp_path, capsys, monkeypatch):
    source = write(tmp_path, "people.csv", PEOPLE)

    def interrupted_prepare(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(anonymize_command.api, "prepare", interrupted_prepare)
    code, out, err = anonymize(capsys, source)
    assert code == EXIT_INTERRUPTED and out == ""
    assert err == "kgen: interrupted; no output was written\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["people.csv"]


# ---------------------------------------------------------------- the real command


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        (b"age,zip\n30,111\n30,\xff\n", ["--qi", "age", "--k", "2"], "row 2, column 'zip': is not UTF-8: line 3"),
        (PEOPLE.encode(), ["--qi", "age", "--k", "0"], "k must be a whole number >= 1"),
        (PEOPLE.encode(), ["--qi", "age,nope", "--k", "2"], "unknown column 'nope'"),
        (PEOPLE.encode(), ["--k", "2"], "the following arguments are required: --qi"),
    ],
    ids=["not-utf8", "k-zero", "unknown-column", "missing-option"],
)
def test_python_m_kgen_prints_one_line_and_no_traceback(tmp_path, content, args, expected):
    source = write(tmp_path, "in.csv", content)
    done = subprocess.run([sys.executable, "-m", "kgen", "anonymize",
                           "--keep-unnamed", "--allow-k1", str(source), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_INPUT
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert error_line(done.stderr) and expected in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_python_m_kgen_check_exits_1_when_the_release_fails(tmp_path):
    source = write(tmp_path, "release.csv", PEOPLE)
    done = subprocess.run([sys.executable, "-m", "kgen", "check", str(source), "--qi", "age", "--k", "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_CHECK_FAILED
    assert done.stdout.startswith("FAIL") and "Traceback" not in done.stderr


def test_every_exit_code_is_distinct_and_documented():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "input-errors.md").read_text()
    for code in (EXIT_OK, EXIT_CHECK_FAILED, EXIT_INPUT, EXIT_NO_SOLUTION, EXIT_INTERRUPTED):
        assert re.search(rf"^\| *`?{code}`? *\|", doc, re.MULTILINE), code


def test_semicolon_hierarchy_with_comma_labels_is_read_with_semicolons(tmp_path):
    """ARX files of decimal intervals hold `[0, 9]`: the `,` inside labels must not win over `;`."""
    from kgen.io.csvio import read_rows

    path = tmp_path / "h.csv"
    path.write_text("5;[0, 9]\n15;[10, 19]\n", encoding="utf-8")
    assert read_rows(path) == [["5", "[0, 9]"], ["15", "[10, 19]"]]


# ---------------------------------------------------------------- messages show no data row (issue 11)


def test_a_long_value_is_cut_to_40_characters_in_the_message(tmp_path, capsys):
    secret = "thirty-six years old, born 1988-04-02 in Ithaca, ssn 123-45-6789"
    source = write(tmp_path, "text.csv", PEOPLE.replace("\n36,", f'\n"{secret}",'))
    line = refused(capsys, source)
    assert f"{source}, row 5, column 'age': value {secret[:40]!r}... is text in a numeric column" in line
    shown = line.replace(str(source), "")  # the temporary folder's name may hold any digits
    assert "6789" not in shown and "14853" not in shown  # neither the rest of the field nor the rest of the row


def test_rows_are_data_rows_blank_lines_not_counted_and_lines_are_physical(tmp_path, capsys):
    source = write(tmp_path, "blank.csv", "age,zip\n\n30,111\n\n31,112,9\n")
    line = refused(capsys, source)
    assert f"{source}, row 2, line 5: has 3 fields but the header has 2" in line


def test_bad_utf8_in_the_header_names_the_line_and_field(tmp_path, capsys):
    source = write(tmp_path, "header.csv", b"age,z\xfcp\n30,111\n")
    line = refused(capsys, source)
    assert f"{source}: is not UTF-8: line 1 has byte 0xfc in the header, field 2: 'z\\\\xfcp'" in line


def test_a_hierarchy_value_is_cut_to_40_characters(tmp_path, capsys):
    source = write(tmp_path, "people.csv", PEOPLE)
    long_label = "M" + "x" * 60
    hierarchy = write(tmp_path, "sex.csv", f"{long_label};person;*\n{long_label};other;*\n")
    line = refused(capsys, source, "--hierarchy", f"sex={hierarchy}", qi="sex")
    assert f"value {long_label[:40]!r}... is listed twice" in line and long_label not in line


@pytest.mark.parametrize(("separator", "name"), [("\t", "tab"), ("|", "pipe"), (";", "semicolon")])
def test_tab_pipe_and_semicolon_files_are_detected_and_written_back_alike(tmp_path, capsys, separator, name):
    source = write(tmp_path, f"{name}.csv", PEOPLE.replace(",", separator))
    output = tmp_path / "out.csv"
    code, _, err = anonymize(capsys, source, "--algorithm", "exhaustive", output=output)
    assert code == EXIT_OK, err
    assert output.read_text().splitlines()[0] == separator.join(["age", "zip", "sex", "disease"])


def test_an_explicit_separator_is_used_and_an_unsupported_one_refused(tmp_path):
    from kgen.io.table import read_csv

    # detection would pick `,` (two fields on every line); the user says the file is `|`-separated
    path = write(tmp_path, "p.csv", "name|note\nann|a,b\nbob|c,d\n")
    table = read_csv(path, separator="|")
    assert table.columns == ("name", "note") and list(table.column("note")) == ["a,b", "c,d"]
    assert read_csv(write(tmp_path, "t.csv", "a\tb\n1\t2\n"), separator="tab").columns == ("a", "b")
    with pytest.raises(InputError, match="unsupported separator ':'"):
        read_csv(path, separator=":")
