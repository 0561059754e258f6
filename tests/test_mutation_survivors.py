"""Tests added for the mutants that survived the first mutation run of issue 25 (results/mutation.md).

- The integer reader narrows a column to int32 when its range allows: a range test off by one
  (`high <= 2**31`) turned 2**31 into -2**31; the canonical-length check then sent the column to the slower
  text path (same strings, no numbers), and no table of the suite held a value at that boundary.
- `IntegerLabels` equals the tuple of the same strings in the same order only (it was equal to any order).
- `verify_against_report` checks the input's checksum when it is given one (the branch no test reached).
- Journalist risk: a population class smaller than its sample class counts with the sample's size.
- Pitman's estimate above the population is refused (not converged), never reported.
- `mondrian-check`: an interval cell one short of the value does not cover it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kgen import from_mapping, read_csv
from kgen.check.mondrian import check_release as mondrian_check
from kgen.io.csvio import IntegerLabels
from kgen.report.provenance import file_record, verify_against_report
from kgen.report.risk import pitman_uniques, risk_report

EDGES = [
    [2**31 - 1, 2**31, 5],
    [-(2**31), 7, 2**31 - 1],
    [-(2**31) - 1, 3],
    [2**31, -(2**31)],
    [10**18 - 1, -(10**18) + 1, 0],
]


@pytest.mark.parametrize("values", EDGES)
def test_integers_at_the_int32_and_int64_boundaries_read_exactly(tmp_path: Path, values: list[int]) -> None:
    rows = values * 3
    path = tmp_path / "data.csv"
    path.write_text("a,b\n" + "".join(f"{v},x{i % 2}\n" for i, v in enumerate(rows)), encoding="utf-8")
    table = read_csv(path)
    column = table.values["a"]
    assert list(column) == [str(v) for v in rows]
    numbers = column.numbers  # a column of canonical integers keeps its numbers (else a slower text path)
    assert numbers is not None and sorted(numbers.tolist()) == sorted(set(values))
    assert [int(label) for label in column.labels] == numbers.tolist()


def test_integer_labels_equal_a_tuple_only_in_the_same_order() -> None:
    labels = IntegerLabels(np.array([10, 9, -3]))
    assert labels == ("10", "9", "-3") and labels == ["10", "9", "-3"]
    assert labels != ("9", "10", "-3") and labels != ["-3", "10", "9"]


def test_verify_against_report_checks_the_input_when_given_one(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n2\n", encoding="utf-8")
    report = {"provenance": {"input": file_record(data)}}
    assert "input" in verify_against_report(report, None, data)[0]
    data.write_text("a\n1\n3\n", encoding="utf-8")
    with pytest.raises(Exception, match="does not match its report"):
        verify_against_report(json.loads(json.dumps(report)), None, data)


def test_a_population_class_smaller_than_its_sample_class_counts_with_the_sample_size() -> None:
    """The sample class of 3 has only 2 records in the population (which must contain the sample): it is
    counted with |P_E| = 3, risk 1/3, and reported as incomplete; a class of 1 in a population of 10: 1/10."""
    sample = from_mapping({"q": ["a", "a", "a", "b"]})
    population = from_mapping({"q": ["a"] * 2 + ["b"] * 10})
    journalist = risk_report(sample, ["q"], population=population)["journalist"]
    assert journalist["max"] == pytest.approx(1 / 3)
    assert journalist["mean"] == pytest.approx((3 * (1 / 3) + 1 / 10) / 4)


def test_a_pitman_estimate_above_the_population_is_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    import fitness.uniqueness as uniqueness  # where pitman_uniques looks its fit up

    monkeypatch.setattr(uniqueness, "pitman_fit", lambda histogram: (1000.0, 0.99))  # a fit far outside the data
    estimate = pitman_uniques({1: 5, 2: 1}, 20)
    assert estimate["converged"] is False and "uniques" not in estimate


@pytest.mark.parametrize(("value", "covers"), [("29", True), ("20", True), ("30", False), ("19", False)])
def test_mondrian_check_an_interval_covers_only_values_within_its_ends(tmp_path: Path, value: str,
                                                                       covers: bool) -> None:
    (tmp_path / "o.csv").write_text(f"age,s\n25,a\n{value},b\n", encoding="utf-8")
    (tmp_path / "r.csv").write_text('age,s\n"[20,29]",a\n"[20,29]",b\n', encoding="utf-8")
    verdict = mondrian_check(tmp_path / "o.csv", tmp_path / "r.csv", ["age"], 2)
    assert verdict.passed is covers, verdict.problems
