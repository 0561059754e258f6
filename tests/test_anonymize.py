"""End to end on Adult: the exhaustive optimum, the Python API on mappings and DataFrames, the released table
(identifiers, suppressed rows, columns, row order) and the report of issue 2 item 6 against the released file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kgen import Config, InputError, anonymize, check_k_anonymity, from_mapping, prepare, read_csv
from kgen.cli.main import main
from kgen.io.table import Table
from lattice.node import precision_loss

REPORT_FIELDS = {"algorithm", "k", "suppression_limit", "node", "heights", "log", "los", "suppressed", "classes",
                 "evaluations", "seconds", "attributes"}
ATTRIBUTE_FIELDS = {"level", "height", "loss", "distinct_before", "distinct_after"}
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


@pytest.fixture(scope="module")
def adult(adult_csv: Path) -> Table:
    return read_csv(adult_csv)


def adult_subset(adult: Table, rows: int, with_id: bool = True) -> dict[str, list[str]]:
    """The first `rows` rows of Adult as a column mapping, with an identifier column `id` first."""
    data = {"id": [f"person-{i}" for i in range(rows)]} if with_id else {}
    data.update({c: list(adult.values[c][:rows]) for c in adult.columns})
    return data


def lower_neighbours(node: tuple[int, ...], lower: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [node[:i] + (x - 1,) + node[i + 1:] for i, x in enumerate(node) if x > lower[i]]


@pytest.mark.slow
@pytest.mark.parametrize(("k", "expected"), [(2, 0.625), (5, 0.6875)])
def test_exhaustive_finds_the_adult_optimum(adult: Table, adult_dir: Path, k: int, expected: float) -> None:
    config = Config(qi=ADULT_QIS, k=k, suppression=0.0, hierarchy_dir=str(adult_dir), algorithm="exhaustive",
                    keep_unnamed=True)
    result = anonymize(adult, config)
    assert result.search.stopped == "complete"
    assert result.report["log"] == expected == result.evaluation.loss
    assert result.report["suppressed"] == 0
    assert result.report["evaluations"] == result.report["box"]["size"]
    heights = tuple(result.report["heights"][q] for q in ADULT_QIS)
    assert heights == (1, 4, 1, 2, 3, 2, 2, 2)
    assert precision_loss(result.evaluation.node, heights) == expected
    # The released file is k-anonymous with nothing suppressed ...
    verdict = check_k_anonymity(result.release, ADULT_QIS, k)
    assert verdict.passed and verdict.suppressed_rows == 0 and verdict.smallest_class >= k
    # ... and lowering any one attribute breaks k-anonymity (checked with the other, bitset, kernel).
    bitset = prepare(adult, Config(qi=ADULT_QIS, k=k, hierarchy_dir=str(adult_dir), kernel="bitset", keep_unnamed=True))
    for node in lower_neighbours(result.evaluation.node, (0,) * len(heights)):
        assert not bitset.evaluator.feasible(node), node


@pytest.mark.slow
def test_pruning_does_not_change_the_adult_optimum(adult: Table, adult_dir: Path) -> None:
    common = dict(qi=ADULT_QIS, k=5, hierarchy_dir=str(adult_dir), algorithm="exhaustive")
    pruned = anonymize(adult, Config(**common, keep_unnamed=True))
    full = anonymize(adult, Config(**common, prune=False, keep_unnamed=True))
    assert full.report["box"]["size"] == 2 * 5 * 2 * 3 * 4 * 3 * 3 * 3 > pruned.report["box"]["size"]
    assert full.evaluation.node == pruned.evaluation.node
    assert full.report["log"] == pruned.report["log"] == 0.6875


@pytest.mark.slow  # over 4 s: runs in .ci/run's second step
def test_mapping_dataframe_and_csv_give_the_same_release(adult: Table, adult_dir: Path, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    data = adult_subset(adult, 1500)
    config = Config(qi=ADULT_QIS[:5], k=3, suppression=0.01, identifiers=["id"], sensitive=["salary-class"],
                    hierarchy_dir=str(adult_dir), keep_unnamed=True)
    from_map = anonymize(data, config)
    from_frame = anonymize(pd.DataFrame(data), config)
    path = tmp_path / "subset.csv"
    path.write_text(",".join(data) + "\n" + "\n".join(",".join(r) for r in zip(*data.values())) + "\n")
    from_file = anonymize(str(path), config)
    for other in (from_frame, from_file):
        assert other.evaluation.node == from_map.evaluation.node
        assert other.release.columns == from_map.release.columns
        assert {c: list(v) for c, v in other.release.values.items()} == \
               {c: list(v) for c, v in from_map.release.values.items()}
    assert check_k_anonymity(from_map.release, ADULT_QIS[:5], 3, 0.01).passed


def test_dataframe_with_numbers_and_nan() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": [23, 27, 35, 36, None, 38], "sex": ["M", "M", "F", "F", "F", None],
                          "income": [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]})
    result = anonymize(frame, Config(qi=["age", "sex"], k=2, suppression=0.0, keep_unnamed=True))
    assert check_k_anonymity(result.release, ["age", "sex"], 2).passed
    assert result.release.values["income"] == ["1.5", "2.5", "3.5", "4.5", "5.5", "6.5"]


def test_released_table_keeps_columns_and_order_stars_identifiers_and_suppressed_rows(adult: Table,
                                                                                   adult_dir: Path) -> None:
    data = adult_subset(adult, 2000)
    config = Config(qi=ADULT_QIS, k=10, suppression=0.02, identifiers=["id"], sensitive=["salary-class"],
                    hierarchy_dir=str(adult_dir), algorithm="exhaustive", keep_unnamed=True)
    result = anonymize(data, config)
    released, report = result.release, result.report
    assert report["suppressed"] > 0, "pick a case with suppression"
    assert released.columns == tuple(data) and released.n == 2000
    prepared = prepare(data, config)
    starred_rows = []
    for r in range(2000):
        if all(released.values[q][r] == "*" for q in ADULT_QIS):
            starred_rows.append(r + 1)
            continue
        for q in ADULT_QIS:
            hierarchy = prepared.hierarchies[q]
            assert released.values[q][r] == hierarchy.generalize(data[q][r].strip(), report["node"][q]), (r, q)
    assert starred_rows == report["suppressed_rows"] and len(starred_rows) == report["suppressed"]
    assert np.flatnonzero(result.suppressed_rows).tolist() == [r - 1 for r in starred_rows]
    assert released.values["id"] == ["*"] * 2000
    assert released.values["salary-class"] == data["salary-class"]  # sensitive values untouched, same order
    assert check_k_anonymity(released, ADULT_QIS, 10, 0.02).passed


def test_drop_suppressed_leaves_out_exactly_the_suppressed_rows(adult: Table, adult_dir: Path) -> None:
    data = adult_subset(adult, 2000)
    common = dict(qi=ADULT_QIS, k=10, suppression=0.02, identifiers=["id"], hierarchy_dir=str(adult_dir),
                  algorithm="exhaustive")
    kept = anonymize(data, Config(**common, keep_unnamed=True))
    dropped = anonymize(data, Config(**common, drop_suppressed=True, keep_unnamed=True))
    suppressed = set(kept.report["suppressed_rows"])
    assert suppressed and dropped.release.n == 2000 - len(suppressed)
    for column in data:
        expected = [v for r, v in enumerate(kept.release.values[column], start=1) if r not in suppressed]
        assert list(dropped.release.values[column]) == expected
    assert "*" not in dropped.release.values["sex"]  # sex is never generalized to * here
    assert check_k_anonymity(dropped.release, ADULT_QIS, 10).passed


def test_report_has_every_issue_2_field_consistent_with_the_released_file(adult: Table, adult_dir: Path,
                                                                          tmp_path: Path) -> None:
    source = tmp_path / "adult_subset.csv"
    data = adult_subset(adult, 3000)
    source.write_text(";".join(data) + "\n" + "\n".join(";".join(r) for r in zip(*data.values())) + "\n")
    output, report_path = tmp_path / "out.csv", tmp_path / "out.json"
    code = main(["anonymize",
                 "--keep-unnamed", str(source), "--qi", ",".join(ADULT_QIS), "--identifier", "id", "--sensitive",
                 "salary-class", "--k", "5", "--suppression", "0.01", "--hierarchy-dir", str(adult_dir),
                 "--output", str(output), "--report", str(report_path), "--quiet"])
    assert code == 0
    report = json.loads(report_path.read_text())
    assert REPORT_FIELDS <= set(report)
    released = read_csv(output)
    assert released.separator == ";" and released.columns == tuple(data) and released.n == 3000

    assert report["algorithm"] == "auto" and report["k"] == 5 and report["suppression_limit"] == 0.01
    assert list(report["node"]) == list(report["heights"]) == list(report["attributes"]) == ADULT_QIS
    node = tuple(report["node"][q] for q in ADULT_QIS)
    heights = tuple(report["heights"][q] for q in ADULT_QIS)
    assert report["log"] == pytest.approx(precision_loss(node, heights))
    assert isinstance(report["evaluations"], int) and 0 < report["evaluations"] <= report["box"]["size"]
    assert report["seconds"] >= 0

    starred = [all(released.values[q][r] == "*" for q in ADULT_QIS) for r in range(released.n)]
    assert report["suppressed"] == sum(starred) <= int(0.01 * 3000)
    assert report["los"] == pytest.approx(sum(starred) / 3000)
    kept = [r for r in range(released.n) if not starred[r]]
    classes = Counter(tuple(released.values[q][r] for q in ADULT_QIS) for r in kept)
    assert report["classes"] == len(classes) and min(classes.values()) >= 5
    for q in ADULT_QIS:
        attribute = report["attributes"][q]
        assert ATTRIBUTE_FIELDS <= set(attribute)
        assert attribute["level"] == report["node"][q] and attribute["height"] == report["heights"][q]
        assert attribute["loss"] == pytest.approx(attribute["level"] / attribute["height"])
        assert attribute["distinct_before"] == len(set(data[q]))
        assert attribute["distinct_after"] == len({released.values[q][r] for r in kept})
    assert released.values["id"] == ["*"] * 3000
    assert released.values["salary-class"] == data["salary-class"]


def test_input_file_is_never_overwritten_and_outputs_are_complete(adult_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("sex,age\nMale,30\nMale,31\nFemale,40\nFemale,41\n")
    before = source.read_bytes()
    assert main(["anonymize", "--keep-unnamed", str(source), "--qi", "sex,age", "--k", "2", "--quiet"]) == 0
    assert source.read_bytes() == before
    output = tmp_path / "in_anonymized.csv"
    assert read_csv(output).n == 4 and json.loads(output.with_suffix(".json").read_text())["k"] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_from_mapping_converts_values_to_strings_and_none_to_missing() -> None:
    table = from_mapping({"a": [1, None, 2.5], "b": ["x", "y", "z"]})
    assert table.values["a"] == ["1", "", "2.5"] and table.n == 3


def test_missing_tokens_are_configurable() -> None:
    data = {"age": ["21", "-", "25", "-", "NA", "NA"], "note": ["a", "b", "c", "d", "e", "f"]}
    # With "-" as the only token, "NA" is text in a numeric column: an error naming it.
    with pytest.raises(InputError) as error:
        prepare(data, Config(qi=["age"], k=2, missing=("-",), keep_unnamed=True))
    assert error.value.value == "NA"
    both = anonymize(data, Config(qi=["age"], k=2, missing=("-", "NA"), algorithm="exhaustive", keep_unnamed=True))
    assert both.release.values["age"] == ["[20, 29]", "-", "[20, 29]", "-", "-", "-"]
    assert both.report["attributes"]["age"]["distinct_before"] == 3  # 21, 25 and missing


def test_released_row_values_are_those_of_the_same_input_row() -> None:
    data = {"id": [str(i) for i in range(8)], "age": ["11", "12", "33", "34", "35", "56", "57", "58"],
            "keep": list("abcdefgh")}
    result = anonymize(data, Config(qi=["age"], k=2, identifiers=["id"], algorithm="exhaustive", keep_unnamed=True))
    assert result.release.values["keep"] == list("abcdefgh")
    assert result.release.values["age"] == ["[10, 19]"] * 2 + ["[30, 39]"] * 3 + ["[50, 59]"] * 3
