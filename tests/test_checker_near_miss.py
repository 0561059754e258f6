"""Every independent checker against releases that break its model by exactly one row or one value (issue 25).

Why: a checker is the last line of defence, and a checker that is off by one passes every correct release the
rest of the suite feeds it. Each test here gives a checker a pair of releases: one that meets the model exactly
(a class of k rows, l values, the suppression limit reached) and one that misses it by one row or one value.
The first must pass and the second must fail; a checker that accepts k - 1 rows, l - 1 values, one suppressed
row too many, or any prefix as a cover fails here (each was planted and seen failing).

Imports are gathered here so that a module move changes one place.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kgen import check_k_anonymity, from_mapping
from kgen.check.mondrian import check_release as mondrian_check

# --- kgen mondrian-check ---------------------------------------------------------------------------------------

def write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("k", [2, 3, 5])
def test_mondrian_check_fails_a_class_of_k_minus_one_rows_and_passes_k(tmp_path: Path, k: int) -> None:
    """Two classes, one of k rows and one of k rows or k - 1 rows; interval cells that cover their values."""
    rows_a = [f"{20 + i},x" for i in range(k)]
    released_a = ['"[20,29]",x'] * k
    for size, passes in ((k, True), (k - 1, False)):
        original = write(tmp_path / f"o{size}.csv", "age,s", rows_a + [f"{30 + i},y" for i in range(size)])
        release = write(tmp_path / f"r{size}.csv", "age,s", released_a + ['"[30,39]",y'] * size)
        verdict = mondrian_check(original, release, ["age"], k)
        assert verdict.passed is passes, (size, verdict.problems)
        assert verdict.smallest_class == size
        if not passes:
            assert any(f"smaller than k = {k}" in p for p in verdict.problems)


@pytest.mark.parametrize("l_value", [2, 3])
def test_mondrian_check_fails_a_class_of_l_minus_one_sensitive_values_and_passes_l(tmp_path: Path,
                                                                                   l_value: int) -> None:
    """Classes of 4 rows; the second has l or l - 1 distinct sensitive values (k = 2 is met either way)."""
    first = [f"{20 + i},v{i % l_value}" for i in range(4)]
    for distinct, passes in ((l_value, True), (l_value - 1, False)):
        second = [f"{30 + i},w{i % distinct}" for i in range(4)]
        original = write(tmp_path / f"o{distinct}.csv", "age,s", first + second)
        released = ['"[20,29]",' + r.split(",")[1] for r in first] + ['"[30,39]",' + r.split(",")[1] for r in second]
        release = write(tmp_path / f"r{distinct}.csv", "age,s", released)
        verdict = mondrian_check(original, release, ["age"], 2, l_value, "s")
        assert verdict.passed is passes, (distinct, verdict.problems)
        assert verdict.min_distinct_l == distinct
        if not passes:
            assert any(f"fewer than l = {l_value}" in p for p in verdict.problems)


@pytest.mark.parametrize(("cell", "covers"), [
    ("100**", True),     # the value's own prefix, as long as the pattern
    ("10***", True),     # a shorter stem
    ("*****", True),     # every value of 5 characters
    ("101**", False),    # the stem differs in its last character
    ("200**", False),    # the stem differs in its first character
    ("100*", False),     # the value (5 characters) is longer than the pattern
    ("100***", True),    # a pattern longer than the values whose stem starts them
    ("10034*", False),   # the stem is longer than the value: not a prefix of it
])
def test_mondrian_check_accepts_a_prefix_cell_only_when_its_stem_starts_the_value(tmp_path: Path, cell: str,
                                                                                  covers: bool) -> None:
    """Two rows '10034' and '10099' released as the same prefix cell; only a cell whose stem starts both values
    and that is at least as long as them covers them."""
    original = write(tmp_path / "o.csv", "zip,s", ["10034,a", "10099,b"])
    release = write(tmp_path / "r.csv", "zip,s", [f"{cell},a", f"{cell},b"])
    verdict = mondrian_check(original, release, ["zip"], 2, kinds={"zip": "prefix"})
    assert verdict.passed is covers, verdict.problems
    if not covers:
        assert any("prefix cells that do not cover" in p for p in verdict.problems)


# --- kgen check (single file) ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("starred", "passes"), [(2, True), (3, False)])
def test_kgen_check_allows_exactly_floor_t_n_suppressed_rows(starred: int, passes: bool) -> None:
    """10 rows, t = 0.25: floor(2.5) = 2 rows may be `*` in every QI; a third (fewer than k = 4, so not a class)
    fails."""
    released = ["a"] * (10 - starred) + ["*"] * starred
    table = from_mapping({"q1": released, "q2": [v if v == "*" else "x" for v in released]})
    verdict = check_k_anonymity(table, ["q1", "q2"], 4, 0.25)
    assert verdict.allowed == 2 and verdict.passed is passes


# --- the partitioned checker (kgen.partitioned.verify) ---------------------------------------------------------

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """An in-process Dask cluster (threads): the checker's tasks are the same, the start is fast."""
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    client = distributed.Client(cluster, set_as_default=False, timeout="30s")
    yield client
    client.close()
    cluster.close()


def check_parts(client, paths, qis, k, suppression):  # noqa: ANN001, ANN201
    from kgen.check.partitioned import check_parts as check

    return check(client, paths, qis, k, suppression)


@pytest.mark.parametrize(("starred", "passes"), [(2, True), (3, False)])
def test_partitioned_check_allows_exactly_floor_t_n_suppressed_rows(client, tmp_path: Path, starred: int,
                                                                    passes: bool) -> None:
    """Two parts, 20 rows, t = 0.125: floor(t n) = floor(2.5) = 2 rows may be `*` in every QI. Three starred rows
    (fewer than k = 4, so not a class of their own) are one suppressed row too many."""
    rest = 20 - starred
    first = ["a,x"] * (rest // 2) + ["*,*"] * (starred - 1)
    second = ["a,x"] * (rest - rest // 2) + ["*,*"]
    paths = [str(write(tmp_path / f"p0-{starred}.csv", "q1,q2", first)),
             str(write(tmp_path / f"p1-{starred}.csv", "q1,q2", second))]
    verdict = check_parts(client, paths, ["q1", "q2"], 4, 0.125)
    assert verdict.rows == 20 and verdict.allowed == 2 and verdict.starred_rows == starred
    assert verdict.passed is passes, verdict


@pytest.mark.parametrize(("size", "passes"), [(3, True), (2, False)])
def test_partitioned_check_fails_a_class_of_k_minus_one_rows_spread_over_parts(client, tmp_path: Path, size: int,
                                                                               passes: bool) -> None:
    """Class (b, y) has `size` rows over two parts; k = 3."""
    first = ["a,x"] * 3 + ["b,y"]
    second = ["b,y"] * (size - 1) + ["a,x"]
    paths = [str(write(tmp_path / f"p0-{size}.csv", "q1,q2", first)),
             str(write(tmp_path / f"p1-{size}.csv", "q1,q2", second))]
    verdict = check_parts(client, paths, ["q1", "q2"], 3, 0.0)
    assert verdict.passed is passes and verdict.smallest_class == size
    assert verdict.violating_rows == ([] if passes else [4, 5])
