"""Hierarchy builders (decimal, intervals, mask, date, mapping) and ARX files: exact outputs, the tree property,
and the errors that name the file, the value and the level."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgen import Config, InputError, prepare
from kgen.io.hierarchies import build, default_spec, find_in_dir, load_arx
from kgen.io.table import read_csv
from lattice import builders
from lattice.hierarchy import TOP, Hierarchy


def assert_tree(hierarchy: Hierarchy) -> None:
    """Every path has height + 1 labels, starts with its value, each label at level L has one parent at L + 1,
    and the top level is a single value."""
    parents: list[dict[str, str]] = [{} for _ in range(hierarchy.height)]
    for value, path in hierarchy.paths.items():
        assert len(path) == hierarchy.height + 1 and path[0] == value
        for level in range(hierarchy.height):
            assert parents[level].setdefault(path[level], path[level + 1]) == path[level + 1], (value, level)
    assert len(hierarchy.top_labels()) == 1


def classes_at(hierarchy: Hierarchy, level: int) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for value, path in hierarchy.paths.items():
        groups.setdefault(path[level], set()).add(value)
    return {frozenset(g) for g in groups.values()}


def assert_coarsens(hierarchy: Hierarchy) -> None:
    """Each level's classes are unions of the classes of the level below."""
    for level in range(hierarchy.height):
        below, above = classes_at(hierarchy, level), classes_at(hierarchy, level + 1)
        assert all(any(b <= a for a in above) for b in below)


# --- decimal rounding -------------------------------------------------------------------------------------------

def test_decimal_rounding_levels_and_height_from_the_digits_of_the_maximum() -> None:
    h = builders.decimal_hierarchy("n", ["0", "7", "15", "123"])
    assert h.height == 3
    assert h.paths["7"] == ("7", "[0, 9]", "[0, 99]", "[0, 999]")
    assert h.paths["15"] == ("15", "[10, 19]", "[0, 99]", "[0, 999]")
    assert h.paths["123"] == ("123", "[120, 129]", "[100, 199]", "[0, 999]")
    assert h.paths["0"] == ("0", "[0, 9]", "[0, 99]", "[0, 999]")
    assert_tree(h)


def test_decimal_rounding_of_a_power_of_ten_keeps_one_class_at_the_top() -> None:
    h = builders.decimal_hierarchy("n", ["100", "5"])
    assert h.height == 3 and h.top_labels() == {"[0, 999]"}


def test_decimal_rounding_of_negative_numbers_rounds_down_and_adds_a_star_top() -> None:
    h = builders.decimal_hierarchy("n", ["-5", "12"])
    assert h.height == 3
    assert h.paths["-5"] == ("-5", "[-10, -1]", "[-100, -1]", TOP)
    assert h.paths["12"] == ("12", "[10, 19]", "[0, 99]", TOP)
    assert_tree(h)


def test_decimal_rounding_of_fractions_uses_half_open_intervals() -> None:
    h = builders.decimal_hierarchy("n", ["9.5", "10"])
    assert h.paths["9.5"] == ("9.5", "[0, 10)", "[0, 100)")
    assert h.paths["10"] == ("10", "[10, 20)", "[0, 100)")


def test_decimal_rounding_rejects_text_naming_the_column_and_value() -> None:
    with pytest.raises(InputError) as error:
        builders.decimal_hierarchy("age", ["12", "twelve"])
    assert error.value.column == "age" and error.value.value == "twelve"
    assert "twelve" in str(error.value)


# --- intervals --------------------------------------------------------------------------------------------------

def test_intervals_of_given_widths_nest_and_end_in_star() -> None:
    h = builders.interval_hierarchy("age", ["24", "28", "42", "49"], [5, 10])
    assert h.height == 3
    assert h.paths["24"] == ("24", "[20, 24]", "[20, 29]", TOP)
    assert h.paths["28"] == ("28", "[25, 29]", "[20, 29]", TOP)
    assert h.paths["49"] == ("49", "[45, 49]", "[40, 49]", TOP)
    assert_tree(h)


@pytest.mark.parametrize("widths", [[5, 12], [0], [], [-5]])
def test_intervals_that_cannot_nest_are_an_error(widths: list[int]) -> None:
    with pytest.raises(InputError) as error:
        builders.interval_hierarchy("age", ["1", "2"], widths)
    assert error.value.column == "age"


# --- masking ----------------------------------------------------------------------------------------------------

def test_masking_from_the_right_one_character_per_level() -> None:
    h = builders.masking_hierarchy("zip", ["NL805", "NL806", "AB"])
    assert h.height == 5
    assert h.paths["NL805"] == ("NL805", "NL80*", "NL8**", "NL***", "N****", TOP)
    assert h.paths["NL806"][1] == "NL80*"
    assert h.paths["AB"] == ("AB", "A*", "**", "**", "**", TOP)
    assert_tree(h)


# --- dates ------------------------------------------------------------------------------------------------------

def test_dates_go_day_month_year_star() -> None:
    h = builders.date_hierarchy("born", ["2021-03-04", "2021-03-20", "1999-12-31"])
    assert h.paths["2021-03-04"] == ("2021-03-04", "2021-03", "2021", TOP)
    assert h.paths["1999-12-31"] == ("1999-12-31", "1999-12", "1999", TOP)
    assert_tree(h)


def test_dates_with_decade_and_custom_format() -> None:
    h = builders.date_hierarchy("born", ["04/03/2021", "31/12/1999"], "%d/%m/%Y", decade=True)
    assert h.paths["04/03/2021"] == ("04/03/2021", "2021-03", "2021", "2020s", TOP)
    assert h.paths["31/12/1999"] == ("31/12/1999", "1999-12", "1999", "1990s", TOP)
    assert_tree(h)


def test_a_value_that_is_not_a_date_names_the_column_and_value() -> None:
    with pytest.raises(InputError) as error:
        builders.date_hierarchy("born", ["2021-03-04", "2021-02-30"])
    assert error.value.column == "born" and error.value.value == "2021-02-30"


# --- categorical mapping ----------------------------------------------------------------------------------------

CITY_TO_PROVINCE = {"Milano": "MI", "Sesto": "MI", "Monza": "MB", "Lyon": "Rhone"}
PROVINCE_TO_COUNTRY = {"MI": "Italy", "MB": "Italy", "Rhone": "France"}


def test_mapping_chains_city_province_country_and_adds_a_star_top() -> None:
    h = builders.mapping_hierarchy("city", ["Milano", "Monza", "Lyon", "Sesto"], [CITY_TO_PROVINCE,
                                                                                 PROVINCE_TO_COUNTRY])
    assert h.height == 3
    assert h.paths["Milano"] == ("Milano", "MI", "Italy", TOP)
    assert h.paths["Lyon"] == ("Lyon", "Rhone", "France", TOP)
    assert_tree(h)


def test_mapping_to_one_country_needs_no_extra_level() -> None:
    h = builders.mapping_hierarchy("city", ["Milano", "Monza"], [CITY_TO_PROVINCE, PROVINCE_TO_COUNTRY])
    assert h.height == 2 and h.top_labels() == {"Italy"}


def test_mapping_without_a_parent_names_the_value_and_level() -> None:
    with pytest.raises(InputError) as error:
        builders.mapping_hierarchy("city", ["Milano", "Roma"], [CITY_TO_PROVINCE, PROVINCE_TO_COUNTRY])
    assert error.value.value == "Roma" and "level 1" in str(error.value)


def test_builder_specs_by_name() -> None:
    values = ["24", "28", "42"]
    assert build("age", "decimal", values).paths["24"] == ("24", "[20, 29]", "[0, 99]")
    assert build("age", "intervals:5,10", values).paths["42"] == ("42", "[40, 44]", "[40, 49]", TOP)
    assert build("age", "mask", values).paths["42"] == ("42", "4*", TOP)
    assert build("age", "flat", values).paths["42"] == ("42", TOP)
    assert build("d", "date:%Y%m%d", ["20210304"]).paths["20210304"] == ("20210304", "2021-03", "2021", TOP)
    assert build("d", "decade-date", ["2021-03-04"]).height == 4
    mapped = build("city", [CITY_TO_PROVINCE, PROVINCE_TO_COUNTRY], ["Milano", "Lyon"])
    assert mapped.paths["Milano"] == ("Milano", "MI", "Italy", TOP)


def test_default_hierarchy_is_decimal_for_numbers_and_flat_for_text() -> None:
    assert default_spec("age", ["1", "22", "-3.5"]) == "decimal"
    assert default_spec("sex", ["Male", "Female"]) == "flat"
    with pytest.raises(InputError) as error:
        default_spec("age", ["1", "2", "3", "unknown"], "data.csv")
    assert error.value.value == "unknown" and error.value.column == "age"


# --- tree property of every builder (hypothesis) ----------------------------------------------------------------

integers = st.lists(st.integers(min_value=-5000, max_value=10**7), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(integers)
def test_decimal_hierarchies_are_trees_whose_levels_coarsen(numbers: list[int]) -> None:
    h = builders.decimal_hierarchy("n", [str(v) for v in numbers])
    assert_tree(h)
    assert_coarsens(h)
    assert h.height >= len(str(max(abs(v) for v in numbers)))


@settings(max_examples=60, deadline=None)
@given(integers, st.lists(st.sampled_from([2, 3, 5]), min_size=1, max_size=4))
def test_interval_hierarchies_are_trees_whose_levels_coarsen(numbers: list[int], factors: list[int]) -> None:
    widths = [1]
    for f in factors:
        widths.append(widths[-1] * f)
    h = builders.interval_hierarchy("n", [str(v) for v in numbers], widths[1:])
    assert_tree(h)
    assert_coarsens(h)
    assert h.height == len(factors) + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="AB12*-", min_size=1, max_size=7), min_size=1, max_size=30))
def test_masking_hierarchies_are_trees_whose_levels_coarsen(values: list[str]) -> None:
    h = builders.masking_hierarchy("s", values)
    assert_tree(h)
    assert_coarsens(h)
    assert h.height == max(len(v) for v in values)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31)), min_size=1,
                max_size=30), st.booleans())
def test_date_hierarchies_are_trees_whose_levels_coarsen(days: list[dt.date], decade: bool) -> None:
    h = builders.date_hierarchy("d", [d.isoformat() for d in days], decade=decade)
    assert_tree(h)
    assert_coarsens(h)


# --- ARX files --------------------------------------------------------------------------------------------------

def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


@pytest.mark.parametrize("text", [
    "24;20-29;*\n28;20-29;*\n42;40-49;*\n",
    "24,20-29,*\n28,20-29,*\n42,40-49,*\n",
    "\ufeff24;20-29;*\r\n28;20-29;*\r\n42;40-49;*\r\n",
    '"24";"20-29";"*"\n28;20-29;*\n\n42;40-49;*\n',
])
def test_arx_files_with_either_separator_bom_crlf_and_quotes(tmp_path: Path, text: str) -> None:
    h = load_arx(write(tmp_path / "h.csv", text), "age")
    assert h.height == 2
    assert dict(h.paths) == {"24": ("24", "20-29", "*"), "28": ("28", "20-29", "*"), "42": ("42", "40-49", "*")}


def test_arx_value_with_two_parents_names_file_value_and_level(tmp_path: Path) -> None:
    path = write(tmp_path / "h.csv", "a;X;*\nb;X;Z\n")
    with pytest.raises(InputError) as error:
        load_arx(path, "c")
    message = str(error.value)
    assert str(path) in message and "'X'" in message and "level 1" in message
    assert error.value.value == "X"


def test_arx_rows_of_different_lengths_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "h.csv", "a;X;*\nb;*\n")
    with pytest.raises(InputError) as error:
        load_arx(path, "c")
    assert str(path) in str(error.value) and error.value.row == 2


def test_value_missing_from_the_hierarchy_names_file_value_and_level(tmp_path: Path) -> None:
    hierarchy = write(tmp_path / "h.csv", "a;*\nb;*\n")
    data = {"c": ["a", "b", "zzz", "a"]}
    with pytest.raises(InputError) as error:
        prepare(data, Config(qi=["c"], k=1, hierarchies={"c": str(hierarchy)}, keep_unnamed=True, allow_k1=True))
    message = str(error.value)
    assert str(hierarchy) in message and "'zzz'" in message and "level 0" in message


def test_hierarchy_dir_picks_the_file_named_after_the_column(tmp_path: Path) -> None:
    write(tmp_path / "data_hierarchy_city.csv", "Milano;MI;*\nMonza;MB;*\n")
    write(tmp_path / "data_hierarchy_cityname.csv", "x;*\n")
    assert find_in_dir(tmp_path, "city") == tmp_path / "data_hierarchy_city.csv"
    assert find_in_dir(tmp_path, "zip") is None
    prepared = prepare({"city": ["Milano", "Monza"], "zip": ["1", "2"]},
                       Config(qi=["city", "zip"], k=2, hierarchy_dir=str(tmp_path), keep_unnamed=True))
    assert prepared.hierarchies["city"].paths["Monza"] == ("Monza", "MB", "*")
    assert prepared.hierarchy_sources["zip"] == "decimal"


def test_adult_hierarchies_are_trees_covering_the_data(adult_dir: Path, adult_csv: Path) -> None:
    table = read_csv(adult_csv)
    for path in sorted(adult_dir.glob("adult_hierarchy_*.csv")):
        column = path.stem.removeprefix("adult_hierarchy_")
        h = load_arx(path, column)
        assert_tree(h)
        assert_coarsens(h)
        h.check_covers(sorted({v.strip() for v in table.column(column)}), column)


# --- missing values ---------------------------------------------------------------------------------------------

def test_missing_values_stay_missing_below_the_top_and_join_it_at_the_top() -> None:
    data = {"age": ["21", "?", "35", "NA", "", "48"]}
    prepared = prepare(data, Config(qi=["age"], k=1, keep_unnamed=True, allow_k1=True))
    h = prepared.hierarchies["age"]
    token = prepared.qi_values["age"][1]
    assert token in ("", "?", "NA") and prepared.qi_values["age"][3] == prepared.qi_values["age"][4] == token
    assert h.paths[token] == (token, token, "[0, 99]")
    assert h.paths["21"] == ("21", "[20, 29]", "[0, 99]")
    codes = prepared.encoded.qis[0].codes
    assert len(set(codes[1].tolist())) == 4  # [20, 29], [30, 39], [40, 49], missing
    assert len(set(codes[2].tolist())) == 1
