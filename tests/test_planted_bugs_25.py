"""Bugs planted in kgen (issue 25) that the rest of the suite let through; each test here fails with its bug.

- The SHA-256 of only a file's first 1 MiB chunk: every report, release and input the suite checksummed was
  smaller than one chunk. Here a release longer than three chunks is changed after its first MiB.
- The journalist mean as an unweighted mean of the class risks: the suite's sample had classes of equal size,
  where both means agree. Here the classes differ in size.
- `kgen apply` with a report that has no k-anonymity model: a traceback (exit 4) instead of one line (exit 2).
- The report claiming an exact search's answer optimal when the search stopped on its budget.
- Datafly walking past a feasible node: when raises tie, the feasible one must end the walk.
- Certify and the hitting-set bound: five changes that weaken or distort the bound (a lower bound kept from
  an earlier round, a climb that stops one level short, LOG's denominator counting QIs of height 0, a cover
  cut from a node outside the box, the maximal-node filter across its blocks). The bound is checked where it
  is claimed exact: equal to the least LOG outside the infeasible nodes' down-sets (brute force), and the
  certified search's interval closed on the exhaustive optimum, on sub-boxes and with QIs of height 0.

Certify and the cut model are tested by behaviour only (the bound's value, the search's answer), so that a
rewrite of lattice/search/certify.py or lattice/hitting.py keeps these tests. Imports are gathered here.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kgen import Config, NoSolutionError, anonymize, from_mapping
from kgen.report.provenance import sha256_file, verify_against_report
from kgen.report.risk import risk_report
from lattice.box import Box
from lattice.hitting import maximal_nodes
from lattice.node import leq, precision_loss
from lattice.search.base import Limits, Problem
from lattice.search.certify import Certify, certified_bound
from lattice.search.datafly import Datafly
from lattice.search.exhaustive import Exhaustive


def kgen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


# --- checksums of files longer than one chunk ------------------------------------------------------------------

def test_the_sha256_of_a_file_covers_every_byte_past_the_first_mib(tmp_path: Path) -> None:
    import hashlib

    data = bytes(random.Random(0).getrandbits(8) for _ in range(1000)) * 3500  # 3.5 MB: four 1 MiB chunks
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # the last byte changed
    assert sha256_file(path) == hashlib.sha256(data[:-1] + bytes([data[-1] ^ 1])).hexdigest()


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_kgen_check_report_refuses_a_release_changed_after_its_first_mib(tmp_path: Path) -> None:
    """A release of 1.5 MB (a long non-QI column); one byte near its end changed after the run."""
    rng = random.Random(1)
    rows = [f"{rng.randint(0, 9)},{rng.choice('MF')},{'n' * 700}{i}" for i in range(2100)]
    (tmp_path / "data.csv").write_text("age,sex,note\n" + "\n".join(rows) + "\n", encoding="utf-8")
    done = kgen("anonymize",
                "--keep-unnamed", "data.csv", "--qi", "age,sex", "--k", "2", "--output", "out.csv", "--quiet",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    release = tmp_path / "out.csv"
    assert release.stat().st_size > 1 << 20  # longer than one chunk
    assert kgen("check", "out.csv", "--qi", "age,sex", "--k", "2", "--report", "out.json",
                cwd=tmp_path).returncode == 0
    text = release.read_text(encoding="utf-8")
    at = text.rindex("n" * 10)
    release.write_text(text[:at] + "N" + text[at + 1:], encoding="utf-8")  # still 2-anonymous: only the checksum
    changed = kgen("check", "out.csv", "--qi", "age,sex", "--k", "2", "--report", "out.json", cwd=tmp_path)
    assert changed.returncode == 1 and "does not match its report" in changed.stderr, changed.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    with pytest.raises(Exception, match="does not match its report"):
        verify_against_report(report, release)


# --- journalist risk: the mean over records ---------------------------------------------------------------------

def test_the_journalist_mean_weights_each_class_by_its_records() -> None:
    """Sample classes of 3 and 1 records whose population classes hold 5 and 10: the mean over the 4 records is
    (3/5 + 1/10) / 4 = 0.175 (the unweighted mean of the class risks, (1/5 + 1/10) / 2, is 0.15)."""
    sample = from_mapping({"q": ["a", "a", "a", "b"]})
    population = from_mapping({"q": ["a"] * 5 + ["b"] * 10})
    journalist = risk_report(sample, ["q"], population=population)["journalist"]
    assert journalist["mean"] == pytest.approx(0.175)
    assert journalist["max"] == pytest.approx(0.2)


# --- kgen apply: a report without a k-anonymity model ------------------------------------------------------------

@pytest.mark.parametrize("keep", ["l-diversity", "none"])
def test_apply_with_a_report_without_a_k_anonymity_model_is_one_line_and_exit_2(tmp_path: Path, keep: str) -> None:
    """The report's own l-diversity model kept alone (or no model at all): "exactly one k-anonymity model"."""
    (tmp_path / "data.csv").write_text("age,s\n" + "".join(f"{20 + i % 4},{'xy'[i % 2]}\n" for i in range(16)),
                                       encoding="utf-8")
    done = kgen("anonymize",
                "--keep-unnamed", "data.csv", "--qi", "age", "--k", "2", "--sensitive", "s", "--l", "2", "--output",
                "out.csv", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert [m["model"] for m in report["models"]][:1] == ["k-anonymity"]
    report["models"] = [m for m in report["models"] if m["model"] == keep]
    assert len(report["models"]) == (keep != "none")
    report.pop("k", None)
    (tmp_path / "edited.json").write_text(json.dumps(report), encoding="utf-8")
    applied = kgen("apply",
                   "--keep-unnamed", "data.csv", "--report", "edited.json", "--output", "again.csv",
                   "--quiet", cwd=tmp_path)
    assert applied.returncode == 2, applied.stderr
    assert applied.stderr.count("\n") == 1 and "Traceback" not in applied.stderr
    assert "models" in applied.stderr and "edited.json" in applied.stderr
    if keep != "none":
        assert "exactly one k-anonymity model, found 0" in applied.stderr
    assert not (tmp_path / "again.csv").exists()


# --- the report's optimality claim ---------------------------------------------------------------------------------

def optimality_table() -> dict[str, list[str]]:
    rng = random.Random(0)
    return {"a": [str(rng.randint(0, 9)) for _ in range(40)], "b": [str(rng.randint(0, 3)) for _ in range(40)],
            "c": [rng.choice("xyz") for _ in range(40)]}


@pytest.mark.parametrize("algorithm", ["exhaustive", "ola", "bestfirst"])
def test_an_exact_search_stopped_by_its_budget_claims_optimal_only_when_its_bound_proves_it(algorithm: str) -> None:
    base = {"qi": ["a", "b", "c"], "k": 3, "suppression": 0.05, "algorithm": algorithm,
            "hierarchies": {"a": "intervals:2,4", "b": "intervals:2", "c": "flat"}}
    full = anonymize(from_mapping(optimality_table()), Config(**base, keep_unnamed=True))  # type: ignore[arg-type]
    optimum = full.report["loss"]
    assert full.report["optimal"] is True and full.report["lower_bound"] == optimum  # tight where exact
    claims = []
    for budget in range(1, full.search.evaluations):
        try:
            cut = anonymize(from_mapping(optimality_table()), Config(**base, max_evaluations=budget,
                                                                     keep_unnamed=True))  # type: ignore[arg-type]
        except NoSolutionError:
            continue
        report = cut.report
        assert cut.search.stopped == "budget"
        assert report["lower_bound"] is None or report["lower_bound"] <= optimum + 1e-12
        if report["loss"] > optimum + 1e-12:
            assert report["optimal"] is not True, (budget, report["loss"], optimum)
        claims.append(report["optimal"])
    assert False in claims  # some budget stopped the search before it could prove its answer


# --- Datafly stops at the first feasible node ---------------------------------------------------------------------

class Verdict:
    def __init__(self, node: tuple[int, ...], feasible: bool, loss: float) -> None:
        self.node, self.feasible, self.loss, self.los, self.log = node, feasible, loss, 0.0, loss


class UpSet:
    """Feasible: at or above one of `minimal`; loss LOG; records each batch that reaches it."""

    def __init__(self, heights: tuple[int, ...], minimal: list[tuple[int, ...]]) -> None:
        self.heights, self.minimal, self.store = heights, minimal, {}
        self.batches: list[list[Verdict]] = []

    def feasible(self, node: tuple[int, ...]) -> bool:
        return any(leq(m, node) for m in self.minimal)

    def evaluate(self, node: tuple[int, ...]) -> Verdict:
        return self.evaluate_many([node])[0]

    def evaluate_many(self, nodes: list) -> list[Verdict]:
        out = [Verdict(tuple(n), self.feasible(tuple(n)), precision_loss(n, self.heights)) for n in nodes]
        self.store.update((v.node, v) for v in out)
        self.batches.append(out)
        return out

    def cached(self, node: tuple[int, ...]) -> Verdict | None:
        return self.store.get(tuple(node))


def up_set_problem(heights: tuple[int, ...], minimal: list[tuple[int, ...]], box: Box | None = None) -> Problem:
    return Problem(UpSet(heights, minimal), box or Box.full(heights), heights, True, True, loss_is_log=True)


def test_datafly_takes_the_feasible_one_of_two_tied_raises() -> None:
    """Heights (2, 2), no distinct counts (levels left tie): (1, 0) is feasible, (0, 1) is not."""
    problem = up_set_problem((2, 2), [(1, 0)])
    result = Datafly().run(problem, Limits())
    assert result.best.node == (1, 0) and result.params["path"] == [[0, 0], [1, 0]]


@pytest.mark.parametrize("seed", range(40))
def test_datafly_ends_on_the_first_feasible_node_it_evaluates(seed: int) -> None:
    rng = random.Random(seed)
    heights = tuple(rng.randint(1, 3) for _ in range(rng.randint(2, 4)))
    minimal = [tuple(rng.randint(0, h) for h in heights) for _ in range(rng.randint(1, 4))]
    problem = up_set_problem(heights, minimal)
    result = Datafly().run(problem, Limits())
    fake = problem.evaluator
    path = [tuple(n) for n in result.params["path"]]
    assert result.best is not None and result.best.feasible and result.best.node == path[-1]
    assert all(not fake.feasible(n) for n in path[:-1])  # it walked on only from infeasible nodes
    assert all(sum(b) - sum(a) == 1 and leq(a, b) for a, b in zip(path, path[1:]))  # one level at a time
    for batch in fake.batches[:-1]:  # every batch before the last held no feasible node
        assert not any(v.feasible for v in batch), (batch, path)


# --- the certified bound: exact where claimed exact ----------------------------------------------------------------

def least_log_outside(heights: tuple[int, ...], box: Box, infeasible: list[tuple[int, ...]]) -> float | None:
    """Brute force: the least LOG of a box node in no infeasible node's down-set."""
    values = [precision_loss(n, heights) for n in box.nodes() if not any(leq(n, m) for m in infeasible)]
    return min(values) if values else None


def random_case(seed: int) -> tuple[tuple[int, ...], Box, list[tuple[int, ...]]]:
    """Heights with zeros among them, a sub-box (lower > 0 where the height allows), and infeasible nodes of
    the whole lattice: some below the box (their down-sets miss it), many more than one block of 32."""
    rng = random.Random(seed)
    dims = rng.randint(2, 5)
    heights = tuple(rng.choice([0, 1, 2, 3, 4]) for _ in range(dims))
    lower = tuple(rng.randint(0, min(h, 1)) for h in heights)
    box = Box(lower, heights)
    infeasible = [tuple(rng.randint(0, h) for h in heights) for _ in range(rng.randint(1, 120))]
    return heights, box, infeasible


@pytest.mark.parametrize("seed", range(60))
def test_the_bound_from_infeasible_nodes_is_the_least_log_outside_their_down_sets(seed: int) -> None:
    heights, box, infeasible = random_case(seed)
    problem = up_set_problem(heights, [], box)
    record = certified_bound(problem, infeasible, None)
    truth = least_log_outside(heights, box, infeasible)
    if truth is None:
        assert record["lower_bound"] is None
    else:
        assert record["lower_bound"] == pytest.approx(truth, abs=1e-12), (heights, box, record)


def test_a_cover_cut_from_a_node_below_the_box_cuts_nothing() -> None:
    heights = (2, 2)
    box = Box((1, 0), (2, 2))
    record = certified_bound(up_set_problem(heights, [], box), [(0, 2)], None)  # its down-set misses the box
    assert record["lower_bound"] == pytest.approx(precision_loss((1, 0), heights))


def test_the_maximal_nodes_of_many_nodes_are_exactly_the_undominated_ones() -> None:
    rng = random.Random(5)
    nodes = [tuple(rng.randint(0, 4) for _ in range(4)) for _ in range(300)]
    expected = {n for n in nodes if not any(m != n and leq(n, m) for m in nodes)}
    assert sorted(maximal_nodes(nodes)) == sorted(expected)


@pytest.mark.parametrize("seed", range(30))
def test_certify_closes_its_interval_on_the_exhaustive_optimum(seed: int) -> None:
    """No limit: the answer is exhaustive's, and the bound equals it (tight where claimed exact)."""
    rng = random.Random(100 + seed)
    heights, box, _ = random_case(seed)
    minimal = [tuple(rng.randint(a, b) for a, b in zip(box.lower, box.upper)) for _ in range(rng.randint(1, 4))]
    truth = Exhaustive().run(up_set_problem(heights, minimal, box), Limits()).best
    result = Certify(seed_evaluations=rng.choice([0, 4]), cuts=rng.choice([1, 3])).run(
        up_set_problem(heights, minimal, box), Limits(seed=seed))
    assert result.stopped == "complete"
    assert result.best.loss == truth.loss
    assert result.params["optimal"] is True and result.params["lower_bound"] == truth.loss


@pytest.mark.parametrize("seed", range(30))
def test_certify_stopped_by_its_budget_keeps_a_valid_interval(seed: int) -> None:
    rng = random.Random(200 + seed)
    heights, box, _ = random_case(seed)
    minimal = [tuple(rng.randint(a, b) for a, b in zip(box.lower, box.upper)) for _ in range(rng.randint(1, 4))]
    truth = Exhaustive().run(up_set_problem(heights, minimal, box), Limits()).best.loss
    for budget in (2, 4, 8):
        result = Certify(seed_evaluations=0, cuts=2).run(up_set_problem(heights, minimal, box),
                                                         Limits(max_evaluations=budget, seed=seed))
        lower = result.params["lower_bound"]
        assert lower is None or lower <= truth + 1e-12, (budget, lower, truth)
        if result.best is not None:
            assert result.best.loss >= truth
            assert result.params["optimal"] is (lower is not None and lower >= result.best.loss)
            if result.params["optimal"]:
                assert result.best.loss == truth



@pytest.mark.parametrize(("dims", "height"), [(3, 2), (3, 4), (5, 2), (5, 4), (8, 4)])
def test_certify_proves_a_one_gene_threshold_within_one_climb_of_evaluations(dims: int, height: int) -> None:
    """Feasible iff gene 0 is at its top. From the infeasible bottom, one climb to a maximal infeasible node
    (a binary search per gene, ceil(log2(h + 2)) evaluations each) gives the one cover cut that decides the
    problem: the optimum is proved within that budget. A climb that stops below a gene's top leaves weaker
    cuts, and the interval stays open (measured: 3 to 5 times the evaluations)."""
    import math

    heights = (height,) * dims
    budget = dims * math.ceil(math.log2(height + 2)) + 2
    result = Certify(seed_evaluations=0, cuts=1).run(up_set_problem(heights, [(height,) + (0,) * (dims - 1)]),
                                                     Limits(max_evaluations=budget, seed=0))
    assert result.best is not None and result.best.node == (height,) + (0,) * (dims - 1)
    assert result.params["optimal"] is True, (result.evaluations, budget)
