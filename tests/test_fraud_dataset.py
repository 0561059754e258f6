"""The synthetic fraud dataset F: deterministic, the documented schema, usable hierarchies, real correlations."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path

import pytest

from kgen import Config, prepare, read_csv
from kgen.datasets import ATTRIBUTES, IDENTIFIER, ROWS, generate
from kgen.datasets.fraud import CITIES, COUNTRIES
from kgen.io.csvio import format_csv

DOCS = Path(__file__).resolve().parents[1] / "docs" / "fraud-dataset.md"
SEED0_SHA256 = "c436f5c25561de1754ec0200c2ce5a3b921aec0069d9fc55ada11aefb6d87a4b"


@pytest.fixture(scope="module")
def data():
    return generate(0)


def csv_text(dataset) -> str:
    return format_csv(dataset.table.columns, dataset.table.rows())


def test_same_seed_gives_the_same_table_and_another_seed_a_different_one(data):
    assert csv_text(generate(0)) == csv_text(data)
    assert csv_text(generate(1)) != csv_text(data)


def test_seed_zero_is_pinned_so_committed_results_stay_reproducible(data):
    assert hashlib.sha256(csv_text(data).encode()).hexdigest() == SEED0_SHA256


def test_shape_is_the_papers_47_attributes_and_1599_rows_plus_an_identifier(data):
    assert ROWS == 1599 and data.table.n == 1599
    assert data.table.columns == (IDENTIFIER, *data.attributes)
    assert len(data.attributes) == 47
    assert len(set(data.table.column(IDENTIFIER))) == 1599
    assert {a.kind for a in ATTRIBUTES} == {"date", "number", "string", "place"}
    assert {a.kind for a in ATTRIBUTES[:4]} == {"date", "number", "string", "place"}


def test_values_match_their_declared_type(data):
    for attribute in ATTRIBUTES:
        values = [v for v in data.table.column(attribute.name) if v != ""]
        assert values, attribute.name
        if attribute.kind == "date":
            for v in values:
                dt.date.fromisoformat(v)
        elif attribute.kind == "number":
            for v in values:
                int(v)
        elif attribute.kind == "place":
            assert set(values) <= set(CITIES) | set(COUNTRIES), attribute.name


def test_every_attribute_has_a_valid_hierarchy_covering_its_values(data):
    for attribute in ATTRIBUTES:
        hierarchy = data.hierarchy(attribute.name)
        assert hierarchy.height >= 1
        assert set(data.table.column(attribute.name)) <= set(hierarchy.paths)
        assert len(hierarchy.top_labels()) == 1
    assert data.hierarchy("subject_city").generalize("Breda", 1) == "Noord-Brabant"
    assert data.hierarchy("subject_city").generalize("Breda", 2) == "Netherlands"
    assert data.hierarchy("transaction_date").height == 3


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_written_csv_and_arx_files_give_the_same_problem_as_the_in_memory_specs(data, tmp_path):
    paths = data.write(tmp_path)
    assert len(paths) == 48
    qis = list(data.attributes)
    base = dict(qi=qis, k=2, suppression=0.005, identifiers=(IDENTIFIER,))
    from_files = prepare(read_csv(paths[0]), Config(**base, hierarchy_dir=str(tmp_path), keep_unnamed=True))
    in_memory = prepare(data.table, Config(**base, hierarchies=data.hierarchies, keep_unnamed=True))
    assert from_files.heights == in_memory.heights
    assert from_files.box == in_memory.box
    node = tuple((lo + hi) // 2 for lo, hi in zip(in_memory.box.lower, in_memory.box.upper))
    assert from_files.evaluator.evaluate(node) == in_memory.evaluator.evaluate(node)


def test_attributes_are_correlated_through_the_latent_variables(data):
    table = data.table
    rows = list(zip(*(table.column(c) for c in ("subject_city", "subject_postcode", "subject_birth_date",
                                                 "transaction_date", "subject_age", "tax_office"))))
    for city, postcode, birth, day, age, office in rows:
        low, high = CITIES[city][2]
        if postcode:
            assert low <= int(re.match(r"\d+", postcode).group()) <= high
        b, d = dt.date.fromisoformat(birth), dt.date.fromisoformat(day)
        assert int(age) == d.year - b.year - ((d.month, d.day) < (b.month, b.day))
        assert CITIES[office][0] == CITIES[city][0]
    risk = {"Y": [], "N": []}
    for label, score in zip(table.column("fraud_label"), table.column("risk_score")):
        risk[label].append(int(score))
    assert sum(risk["Y"]) / len(risk["Y"]) > sum(risk["N"]) / len(risk["N"]) + 20


def test_the_anonymization_problem_is_neither_trivial_nor_degenerate(data):
    qis = list(data.attributes[:6])
    prepared = prepare(data.table, Config(qi=qis, k=2, suppression=0.005, identifiers=(IDENTIFIER,),
                                          hierarchies={c: data.hierarchies[c] for c in qis}, keep_unnamed=True))
    bottom, top = prepared.box.lower, prepared.heights
    assert not prepared.evaluator.evaluate(bottom).feasible
    feasible = [n for n in prepared.box.nodes() if prepared.evaluator.evaluate(n).feasible]
    best = min(feasible, key=lambda n: prepared.evaluator.evaluate(n).loss)
    assert best != top and 0.2 < prepared.evaluator.evaluate(best).loss < 0.8


def test_documentation_lists_every_attribute_in_order(data):
    text = DOCS.read_text(encoding="utf-8")
    documented = re.findall(r"^\| \d+ \| `(\w+)` \| (\w+) \|", text, flags=re.MULTILINE)
    assert documented == [(a.name, a.kind) for a in ATTRIBUTES]
