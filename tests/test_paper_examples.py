"""The KGen paper's worked examples (section 2-3): Tables 1, 2 and 4, and the LOG examples of section 2.4."""

from __future__ import annotations

from fractions import Fraction

import pytest

from fitness.encoding import EncodedTable, encode_column
from fitness.supportmap import SupportMap
from kgen import Config, anonymize, check_k_anonymity, from_mapping
from kgen.run.pipeline import release
from kgen.run.prepare import prepare
from lattice import builders
from lattice.box import Box
from lattice.hierarchy import Hierarchy
from lattice.node import height, leq, precision_loss

QIS = ["Age", "Gender", "Postcode"]

TABLE_1 = {
    "Name": ["Alice", "Max", "Laurel", "Frank"],
    "Age": ["24", "28", "42", "49"],
    "Gender": ["F", "M", "F", "M"],
    "Postcode": ["80015", "80019", "85073", "85071"],
    "Crime": ["Assault", "Kidnapping", "Homicide", "Rape"],
}

TABLE_2 = {
    "Name": ["*****"] * 4,
    "Age": ["20 - 30", "20 - 30", "40 - 50", "40 - 50"],
    "Gender": ["P"] * 4,
    "Postcode": ["8001*", "8001*", "8507*", "8507*"],
    "Crime": ["Assault", "Kidnapping", "Homicide", "Rape"],
}

# Table 4(a), the age support map, as an ARX hierarchy (one row per raw value, one column per level).
AGE_ROWS = [
    ["24", "20-24", "20-29", "0-49", "0-99"],
    ["28", "25-29", "20-29", "0-49", "0-99"],
    ["42", "40-44", "40-49", "0-49", "0-99"],
    ["49", "45-49", "40-49", "0-49", "0-99"],
]

# Table 4(a) and 4(b): level -> {value: rows (1-based)}.
AGE_SUPPORT = {
    0: {"24": [1], "28": [2], "42": [3], "49": [4]},
    1: {"20-24": [1], "25-29": [2], "40-44": [3], "45-49": [4]},
    2: {"20-29": [1, 2], "40-49": [3, 4]},
    3: {"0-49": [1, 2, 3, 4]},
    4: {"0-99": [1, 2, 3, 4]},
}
POSTCODE_SUPPORT = {
    0: {"80015": [1], "80019": [2], "85073": [3], "85071": [4]},
    1: {"8001*": [1, 2], "8507*": [3, 4]},
    2: {"800**": [1, 2], "850**": [3, 4]},
    3: {"80***": [1, 2], "85***": [3, 4]},
    4: {"8****": [1, 2, 3, 4]},
}


def paper_hierarchies() -> dict[str, object]:
    return {
        "Age": Hierarchy.from_rows("Age", AGE_ROWS, "Table 4(a)"),
        "Gender": Hierarchy.from_rows("Gender", [["F", "P"], ["M", "P"]], "gender"),
        "Postcode": "mask",
    }


def paper_config(**changes: object) -> Config:
    fields = {"qi": QIS, "k": 2, "identifiers": ["Name"], "sensitive": ["Crime"],
              "hierarchies": paper_hierarchies(), "algorithm": "exhaustive"}
    fields.update(changes)
    return Config(**fields)


def support(table: EncodedTable, qi: int) -> dict[int, dict[str, list[int]]]:
    """The support map of one QI as {level: {generalized value: 1-based rows}}."""
    bitsets = SupportMap.build(table).bitsets[qi]
    encoded = table.qis[qi]
    return {
        level: {encoded.labels[level][code]: [r + 1 for r in bits.search(1)] for code, bits in enumerate(sets)}
        for level, sets in enumerate(bitsets)
    }


def test_table_2_is_2_anonymous_and_table_1_is_not() -> None:
    published = check_k_anonymity(from_mapping(TABLE_2), QIS, k=2)
    assert published.passed and published.smallest_class == 2 and published.classes == 2
    original = check_k_anonymity(from_mapping(TABLE_1), QIS, k=2)
    assert not original.passed
    assert original.violating_rows == [1, 2, 3, 4]


def test_table_2_node_generalizes_table_1_into_table_2_classes() -> None:
    prepared = prepare(TABLE_1, paper_config())
    node = (2, 1, 1)  # Age 20-29, Gender P, Postcode 8001*: Table 2
    evaluation = prepared.evaluator.evaluate(node)
    assert evaluation.feasible and evaluation.classes == 2 and evaluation.suppressed == 0
    suppressed = prepared.evaluator.suppressed_rows(node)
    published = release(prepared, node, suppressed, drop_suppressed=False)
    assert published.values["Name"] == ["*"] * 4
    assert published.values["Age"] == ["20-29", "20-29", "40-49", "40-49"]
    assert published.values["Gender"] == ["P"] * 4
    assert published.values["Postcode"] == TABLE_2["Postcode"]
    assert published.values["Crime"] == TABLE_1["Crime"]
    assert check_k_anonymity(published, QIS, k=2).passed


def test_evaluation_of_table_2_node_reports_every_metric() -> None:
    evaluator = prepare(TABLE_1, paper_config()).evaluator
    e = evaluator.evaluate((2, 1, 1))
    assert (e.classes, e.smallest_class, e.suppressed, e.feasible) == (2, 2, 0, True)
    assert e.log == e.loss == pytest.approx((2 / 4 + 1 / 1 + 1 / 5) / 3)
    assert (e.los, e.dm, e.aecs) == (0.0, 8.0, 2.0)  # DM = 2^2 + 2^2, AECS = 4 rows / 2 classes
    bottom = evaluator.evaluate((0, 0, 0))
    assert (bottom.classes, bottom.suppressed, bottom.feasible) == (0, 4, False)
    assert (bottom.los, bottom.dm, bottom.aecs) == (1.0, 16.0, 0.0)  # DM = |S| * n


def test_evaluation_with_suppression_counts_the_suppressed_rows() -> None:
    # (4, 1, 3): Age 0-99, Gender P, Postcode 80***/85***: two classes of two.
    # (2, 0, 1): Age 20-29/40-49 and Postcode 8001*/8507* pair the rows, but Gender splits every pair: four
    # rows alone, more than the limit of floor(0.5 * 4) = 2.
    evaluator = prepare(TABLE_1, paper_config(k=2, suppression=0.5)).evaluator
    e = evaluator.evaluate((4, 1, 3))
    assert (e.classes, e.smallest_class, e.suppressed, e.feasible) == (2, 2, 0, True)
    e = evaluator.evaluate((2, 0, 1))
    assert (e.classes, e.suppressed, e.feasible, e.los) == (0, 4, False, 1.0)
    data = {"a": ["x", "x", "x", "y"], "b": ["1", "1", "1", "1"]}
    e = prepare(data, Config(qi=["a", "b"], k=2, suppression=0.25)).evaluator.evaluate((0, 0))
    assert (e.classes, e.smallest_class, e.suppressed, e.feasible) == (1, 3, 1, True)
    assert (e.los, e.dm, e.aecs) == (0.25, 9.0 + 1 * 4, 3.0)


def test_node_height_and_lattice_order() -> None:
    assert height((3, 4, 1)) == 8 and height(()) == 0
    assert leq((0, 1, 0), (0, 1, 1)) and not leq((1, 0, 0), (0, 1, 1))
    with pytest.raises(ValueError):
        leq((0, 1), (0, 1, 1))


def test_anonymizing_table_1_finds_a_2_anonymous_table_at_least_as_precise_as_table_2() -> None:
    result = anonymize(TABLE_1, paper_config())
    heights = (4, 1, 5)
    assert result.report["heights"] == dict(zip(QIS, heights))
    # Optimum by hand: Gender kept, Age 0-49, Postcode 8****: (3/4 + 0 + 4/5) / 3 = 31/60 < 34/60 (Table 2).
    assert result.report["node"] == {"Age": 3, "Gender": 0, "Postcode": 4}
    assert result.report["log"] == pytest.approx(31 / 60)
    assert result.report["log"] < precision_loss((2, 1, 1), heights)
    assert check_k_anonymity(result.release, QIS, k=2).passed
    assert result.release.values["Name"] == ["*"] * 4


def test_table_4_support_maps() -> None:
    hierarchies = paper_hierarchies()
    postcode = builders.masking_hierarchy("Postcode", TABLE_1["Postcode"])
    table = EncodedTable(4, (encode_column("Age", TABLE_1["Age"], hierarchies["Age"]),
                             encode_column("Postcode", TABLE_1["Postcode"], postcode)))
    assert support(table, 0) == AGE_SUPPORT
    postcode_map = support(table, 1)
    assert {level: postcode_map[level] for level in range(5)} == POSTCODE_SUPPORT
    # The paper's top is "*****"; kgen's masking tops every hierarchy with a single "*".
    assert postcode_map[5] == {"*": [1, 2, 3, 4]}


def test_table_4_intersection_of_age_level_2_and_postcode_level_1_gives_two_classes() -> None:
    hierarchies = paper_hierarchies()
    postcode = builders.masking_hierarchy("Postcode", TABLE_1["Postcode"])
    table = EncodedTable(4, (encode_column("Age", TABLE_1["Age"], hierarchies["Age"]),
                             encode_column("Postcode", TABLE_1["Postcode"], postcode)))
    classes, small = SupportMap.build(table).classes((2, 1), k_floor=1)
    assert small == 0
    assert sorted([r + 1 for r in c.search(1)] for c in classes) == [[1, 2], [3, 4]]


def test_interval_builder_reproduces_the_age_support_map_grouping() -> None:
    hierarchy = builders.interval_hierarchy("Age", TABLE_1["Age"], [5, 10, 50, 100])
    table = EncodedTable(4, (encode_column("Age", TABLE_1["Age"], hierarchy),))
    built = support(table, 0)
    for level, expected in AGE_SUPPORT.items():
        assert sorted(built[level].values()) == sorted(expected.values()), level
    assert built[1]["[20, 24]"] == [1] and built[2]["[40, 49]"] == [3, 4]


def test_log_examples_of_section_2_4() -> None:
    heights = (3, 4, 1)
    assert precision_loss((1, 0, 0), heights) == pytest.approx(1 / 9)
    assert round(precision_loss((1, 0, 0), heights), 2) == 0.11
    assert precision_loss((0, 0, 1), heights) == pytest.approx(1 / 3)
    assert round(precision_loss((0, 0, 1), heights), 2) == 0.33
    assert precision_loss((0, 0, 0), heights) == 0.0
    assert precision_loss((3, 4, 1), heights) == 1.0


def test_log_ignores_attributes_of_height_zero() -> None:
    assert precision_loss((1, 0, 2), (2, 0, 4)) == pytest.approx(0.5)
    assert precision_loss((0, 0), (0, 0)) == 0.0


def test_nodes_with_equal_log_get_the_identical_float_so_ties_break_on_los_then_node() -> None:
    heights = (1, 4, 1, 2, 3, 2, 2, 2)  # Adult's
    first: dict[Fraction, float] = {}
    for node in Box.full(heights).nodes():
        exact = sum(Fraction(x, h) for x, h in zip(node, heights)) / len(heights)
        value = precision_loss(node, heights)
        assert value == float(exact)
        assert first.setdefault(exact, value) == value


def test_equal_log_ties_are_broken_by_fewer_suppressed_rows_before_the_smaller_node() -> None:
    # Heights (2, 1): (0, 1) and (2, 0) both have LOG 1/2; (0, 1) suppresses the lone a4 row (within the limit
    # of one row), (2, 0) suppresses nothing, so (2, 0) wins although (0, 1) is lexicographically smaller.
    data = {"a": ["a1", "a1", "a2", "a2", "a4"], "b": ["b1", "b1", "b1", "b2", "b2"]}
    hierarchies = {
        "a": Hierarchy.from_rows("a", [["a1", "A", "*"], ["a2", "B", "*"], ["a4", "C", "*"]]),
        "b": Hierarchy.from_rows("b", [["b1", "*"], ["b2", "*"]]),
    }
    config = Config(qi=["a", "b"], k=2, suppression=0.2, hierarchies=hierarchies, algorithm="exhaustive")
    evaluator = prepare(data, config).evaluator
    tied = evaluator.evaluate((0, 1)), evaluator.evaluate((2, 0))
    assert all(e.feasible for e in tied) and tied[0].loss == tied[1].loss == 0.5
    assert (tied[0].suppressed, tied[1].suppressed) == (1, 0)
    assert not evaluator.evaluate((1, 0)).feasible
    result = anonymize(data, config)
    assert result.evaluation.node == (2, 0) and result.report["suppressed"] == 0
