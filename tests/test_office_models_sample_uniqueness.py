"""The sample-uniqueness threshold (`--max-sample-uniqueness U`, ARX's `SampleUniqueness`): hand-computed
cases, a release that meets U and one row that breaks it, the exact searches against exhaustive search (the
model is declared monotone, and certify's bound needs it to be), and every command."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness.encoding import EncodedTable
from fitness.partition import Partition
from fitness.privacy.sample_uniqueness import SampleUniqueness, sample_uniques_share
from kgen import Config, check_k_anonymity, from_mapping, prepare
from kgen.check.rules import rules_from_models
from kgen.cli.main import main
from kgen.report.risk import record_risks
from lattice.errors import InputError, NoSolutionError
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.certify import Certify
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.ola import OLA


def table(n: int) -> EncodedTable:
    return EncodedTable(n, ())


def test_the_share_by_hand_is_kgen_risks_sample_uniques_share() -> None:
    sizes = np.array([1, 1, 2, 4])  # 2 uniques of 8 released rows
    assert sample_uniques_share(sizes) == 0.25 == record_risks(sizes, 0.5)["sample_uniques_share"]
    assert sample_uniques_share(np.array([], dtype=np.int64)) == 0.0


def test_the_fewest_smallest_classes_are_suppressed_until_the_share_holds() -> None:
    """Classes 5, 1, 10, 1, 5, 1 (23 rows): 3/23 = 0.130 > 0.05; one unique off gives 2/22 = 0.091, two give
    1/21 = 0.048 <= 0.05: the first two uniques go. At U = 0.13 nothing goes; at U = 0 all three."""
    sizes = Partition(np.array([5, 1, 10, 1, 5, 1]))
    none = np.zeros(6, dtype=bool)
    assert SampleUniqueness(0.05).enforce(sizes, table(23), none).tolist() == [False, True, False, True, False, False]
    assert not SampleUniqueness(0.131).enforce(sizes, table(23), none).any()
    assert SampleUniqueness(0.0).enforce(sizes, table(23), none).tolist() == [False, True, False, True, False, True]
    # the suppression limit: ARX's search stops (every class marked: infeasible) once a failing count passes it
    assert SampleUniqueness(0.05).enforce(sizes, table(23), none, limit=0).all()
    # uniques another model suppressed already: nothing more to do
    already = np.array([False, True, False, True, False, True])
    assert not SampleUniqueness(0.0).enforce(sizes, table(23), already).any()


def test_a_threshold_outside_zero_one_is_refused() -> None:
    for bad in (-0.1, 1.5, "x"):
        with pytest.raises(InputError, match="--max-sample-uniqueness"):
            SampleUniqueness(bad)  # type: ignore[arg-type]


def release(sizes: list[int], suppressed: int = 0) -> object:
    q = [f"v{i}" for i, size in enumerate(sizes) for _ in range(size)] + ["*"] * suppressed
    return from_mapping({"q": q})


def passes(t: object, u: float) -> bool:
    k, rules = rules_from_models([{"model": "k-anonymity", "k": 1}, SampleUniqueness(u).describe()], False)
    return check_k_anonymity(t, ["q"], k, 1.0, rules).passed


def test_the_rule_passes_a_release_at_u_and_fails_one_row_off() -> None:
    assert passes(release([1, 1, 2, 4]), 0.25)  # 2 / 8: exactly U
    assert not passes(release([1, 1, 1, 1, 4]), 0.25)  # one row of the pair made unique: 3 / 8
    assert not passes(release([1, 1, 2, 4]), 0.249)
    assert passes(release([2, 2], suppressed=3), 0.0)  # the suppressed rows are not released uniques


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 9), st.sampled_from("abc")), min_size=6, max_size=30),
       st.sampled_from([0.0, 0.2, 1.0]), st.sampled_from([0.0, 0.1, 0.3]))
def test_feasibility_is_monotone_and_exact_searches_certify_included_find_exhaustives_optimum(
        rows: list, suppression: float, u: float) -> None:
    """Declared monotone with and without suppression, as ARX declares it: checked by brute force on every
    node and its successors; certify (which refuses non-monotone models) then agrees with exhaustive."""
    columns = {"n": [str(a) for a, _ in rows], "c": [b for _, b in rows]}
    config = Config(qi=["n", "c"], k=1, allow_k1=True, suppression=suppression, max_sample_uniqueness=u)
    try:
        prepared = prepare(columns, config)
    except NoSolutionError:
        return
    assert prepared.evaluator.monotone_feasibility
    heights = prepared.heights
    for node in itertools.product(*(range(h + 1) for h in heights)):
        if prepared.evaluator.feasible(node):
            for i, h in enumerate(heights):
                if node[i] < h:
                    assert prepared.evaluator.feasible(node[:i] + (node[i] + 1,) + node[i + 1:]), node
    expected = Exhaustive().run(prepared.problem(), Limits())
    for search in (BestFirst(), OLA(), Incognito(), Certify()):
        found = search.run(prepared.problem(), Limits())
        assert (None if found.best is None else found.best.loss) == (
            None if expected.best is None else expected.best.loss), search


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    path = tmp_path / "data.csv"
    path.write_text("age,sex\n" + "".join(f"{a},{s}\n" for a, s in zip(rng.integers(20, 60, 200),
                                                                      rng.choice(["F", "M"], 200))))
    return path


def test_every_command_runs_checks_and_applies_the_threshold(data: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "out.csv"
    base = ["--qi", "age,sex", "--hierarchy", "age=decimal", "--k", "1", "--allow-k1", "--suppression", "0.05"]
    assert main(["anonymize", str(data), *base, "--max-sample-uniqueness", "0.02", "--output", str(output)]) == 0
    assert "sample uniqueness <= 0.02" in capsys.readouterr().out
    report = json.loads(output.with_suffix(".json").read_text())
    assert report["max_sample_uniqueness"] == 0.02 and report["verified"]["passed"] is True
    assert main(["check", str(output), "--qi", "age,sex", "--k", "1", "--max-sample-uniqueness", "0.02"]) == 0
    assert main(["check", str(output), "--report", str(output.with_suffix(".json"))]) == 0
    capsys.readouterr()
    assert main(["risk", str(output), "--qi", "age,sex", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sample_uniques_share"] <= 0.02
    again = tmp_path / "again.csv"
    assert main(["apply", str(data), "--report", str(output.with_suffix(".json")), "--output", str(again),
                 "--allow-k1", "--quiet"]) == 0
    assert again.read_bytes() == output.read_bytes()
