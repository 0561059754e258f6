"""Hand-checked examples of the steward's builders (issue 26): coded intervals, fractional widths, value orders,
calendar levels, ages at a reference date, masks from either side; and `kgen hierarchy`, whose preview must show
the levels the run uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgen.cli.main import main
from kgen.io.hierarchies import build, load_arx
from kgen.io.table import read_table
from kgen.run import pipeline as api
from kgen.run.config import Config
from kgen.run.prepare import preview_levels
from lattice.errors import InputError


def paths(spec: str, values: list[str]) -> dict[str, tuple[str, ...]]:
    return dict(build("c", spec, values).paths)


def test_intervals_with_bottom_and_top_coding():
    got = paths("intervals:5,10,30;bottom=18;top=90", ["17", "18", "23", "45", "89", "90", "95"])
    assert got["17"] == ("17", "<18", "<18", "<18", "*")
    assert got["18"] == ("18", "[18, 22]", "[18, 27]", "[18, 47]", "*")
    assert got["23"] == ("23", "[23, 27]", "[18, 27]", "[18, 47]", "*")
    assert got["45"] == ("45", "[43, 47]", "[38, 47]", "[18, 47]", "*")
    assert got["89"] == ("89", "[88, 89]", "[88, 89]", "[78, 89]", "*")  # cut at the top code
    assert got["90"] == ("90", "90+", "90+", "90+", "*") and got["95"] == ("95", "90+", "90+", "90+", "*")


def test_intervals_with_only_a_top_code_start_at_multiples_of_the_width():
    got = paths("intervals:10;top=100000", ["5", "95000", "250000"])
    assert got["5"] == ("5", "[0, 9]", "*") and got["95000"] == ("95000", "[95000, 95009]", "*")
    assert got["250000"] == ("250000", "100000+", "*")


def test_fractional_widths_give_half_open_intervals():
    got = paths("intervals:0.5,1.5", ["0.2", "0.7", "1.6"])
    assert got["0.2"] == ("0.2", "[0, 0.5)", "[0, 1.5)", "*")
    assert got["0.7"] == ("0.7", "[0.5, 1)", "[0, 1.5)", "*")
    assert got["1.6"] == ("1.6", "[1.5, 2)", "[1.5, 3)", "*")


def test_whole_widths_without_coding_keep_the_original_labels():
    assert paths("intervals:5,10", ["7", "12"]) == {"7": ("7", "[5, 9]", "[0, 9]", "*"),
                                                    "12": ("12", "[10, 14]", "[10, 19]", "*")}


def test_order_builder_groups_consecutive_values_of_the_given_order(tmp_path: Path):
    got = paths("order:Mon,Tue,Wed,Thu,Fri,Sat,Sun;sizes=2,4", ["Mon", "Wed", "Sat", "Sun"])
    assert got["Mon"] == ("Mon", "Mon..Tue", "Mon..Thu", "*")
    assert got["Wed"] == ("Wed", "Wed..Thu", "Mon..Thu", "*")
    assert got["Sat"] == ("Sat", "Fri..Sat", "Fri..Sun", "*")
    assert got["Sun"] == ("Sun", "Sun", "Fri..Sun", "*")
    order = tmp_path / "levels.txt"
    order.write_text("low\nmid\nhigh\n", encoding="utf-8")
    assert paths(f"order:{order};sizes=2", ["high", "low"]) == {"low": ("low", "low..mid", "*"),
                                                               "high": ("high", "high", "*")}
    with pytest.raises(InputError, match="not in the value order"):
        paths("order:a,b;sizes=2", ["c"])
    with pytest.raises(InputError, match="not a multiple"):
        paths("order:a,b,c;sizes=2,3", ["a"])


def test_dates_to_week_month_quarter_year():
    got = paths("dates:month,quarter,year,decade", ["2024-12-30", "2025-05-15"])
    assert got["2024-12-30"] == ("2024-12-30", "2024-12", "2024-Q4", "2024", "2020s", "*")
    assert got["2025-05-15"] == ("2025-05-15", "2025-05", "2025-Q2", "2025", "2020s", "*")
    weeks = paths("dates:week,year", ["2024-12-30", "2025-01-15"])  # 2024-12-30 is in ISO week 1 of 2025
    assert weeks["2024-12-30"] == ("2024-12-30", "2025-W01", "2025", "*")
    assert weeks["2025-01-15"] == ("2025-01-15", "2025-W03", "2025", "*")
    assert paths("dates:month;format=%d/%m/%Y", ["31/01/2026"])["31/01/2026"] == ("31/01/2026", "2026-01", "*")
    with pytest.raises(InputError, match="does not nest"):
        paths("dates:week,month", ["2025-01-01"])


def test_birth_dates_to_age_and_age_bands_at_a_reference_date():
    got = paths("age:2026-01-01;bands=5,10", ["1990-01-01", "1990-01-02", "2001-06-30"])
    assert got["1990-01-01"] == ("1990-01-01", "36", "[35, 39]", "[30, 39]", "*")  # 36 on the day itself
    assert got["1990-01-02"] == ("1990-01-02", "35", "[35, 39]", "[30, 39]", "*")  # one day short of 36
    assert got["2001-06-30"] == ("2001-06-30", "24", "[20, 24]", "[20, 29]", "*")
    with pytest.raises(InputError, match="after the reference date"):
        paths("age:2026-01-01", ["2027-01-01"])


def test_masking_from_the_left_and_from_the_right():
    assert paths("mask:left", ["12345"])["12345"] == ("12345", "*2345", "**345", "***45", "****5", "*")
    assert paths("mask:right", ["12345"]) == paths("mask", ["12345"])
    assert paths("mask", ["12345"])["12345"] == ("12345", "1234*", "123**", "12***", "1****", "*")
    with pytest.raises(InputError, match="mask direction"):
        paths("mask:up", ["1"])


def test_an_unknown_setting_is_refused_in_one_line():
    with pytest.raises(InputError, match="bad setting"):
        paths("intervals:5;cap=9", ["1"])


# --- kgen hierarchy: the preview is the run's hierarchy ---------------------------------------------------------

def people(path: Path) -> Path:
    lines = ["age,birth,zip"] + [f"{16 + (i * 7) % 80},{1950 + i % 60}-0{1 + i % 9}-1{i % 10},{10000 + i * 37}"
                                 for i in range(120)] + ["?,1980-01-01,10001"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("column", "spec"), [("age", "intervals:5,10,30;bottom=18;top=90"),
                                              ("birth", "age:2026-01-01;bands=5,10"), ("zip", "mask:left")])
def test_the_preview_shows_the_levels_the_run_uses(tmp_path: Path, column: str, spec: str):
    data = people(tmp_path / "people.csv")
    table = read_table(str(data))
    _, levels = preview_levels(table, column, spec)
    prepared = api.prepare(table, Config(qi=[column], k=1, allow_k1=True, keep_unnamed=True,
                                                hierarchies={column: spec}))
    qi = prepared.encoded.qis[0]
    assert len(levels) == qi.height + 1
    for entry in levels:
        assert list(entry.counts) == list(qi.labels[entry.level])
        run_counts = {label: 0 for label in qi.labels[entry.level]}
        for code in qi.codes[entry.level]:
            run_counts[qi.labels[entry.level][code]] += 1
        assert entry.counts == run_counts


def test_kgen_hierarchy_prints_the_levels_and_writes_an_arx_file_that_runs_alike(tmp_path: Path, capsys):
    data = people(tmp_path / "people.csv")
    out = tmp_path / "age.csv"
    spec = "intervals:5,10,30;bottom=18;top=90"
    assert main(["hierarchy", "age", "--data", str(data), "--builder", spec, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "level 4: 1 group, smallest 121 rows: * (121)" in printed
    assert "level 3: 6 groups, smallest 1 rows: [18, 47] (46), [48, 77] (44), [78, 89] (17), 90+ (9)" in printed
    ages = [line.split(",")[0] for line in data.read_text().splitlines()[1:-1]]
    assert dict(load_arx(out, "age").paths) == dict(build("age", spec, ages).with_missing("?").paths)
    built = api.anonymize(str(data), Config(qi=["age"], k=3, algorithm="exhaustive", keep_unnamed=True,
                                                      hierarchies={"age": spec}))
    filed = api.anonymize(str(data), Config(qi=["age"], k=3, algorithm="exhaustive", keep_unnamed=True,
                                                      hierarchies={"age": str(out)}))
    assert built.evaluation.node == filed.evaluation.node and built.evaluation.loss == filed.evaluation.loss
    assert main(["hierarchy", "age", "--data", str(data), "--builder", "intervals:5;top=x"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
