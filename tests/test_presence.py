"""delta-presence and k-map with a population table (issue 27): hand-computed examples from the definitions
(Nergiz et al. 2007; ARX's KMap with a DataSubset), the optimum of every exact search against exhaustive
search on random tables, the independent check of a release broken by one row, planted bugs, and the
command line (anonymize, check, apply, run.toml) with its one-line errors."""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitness.evaluator import NodeEvaluator
from fitness.privacy.common import TableRef
from fitness.privacy.kmap_population import KMapPopulation
from fitness.privacy.presence import DeltaPresence
from kgen import Config, prepare
from kgen.check.kanonymity import check_k_anonymity
from kgen.check.rules import rules_from_models
from kgen.cli.main import main
from kgen.io.table import read_csv
from kgen.status import ExitCode
from lattice.errors import InputError, NoSolutionError
from lattice.search.base import Limits
from lattice.search.bestfirst import BestFirst
from lattice.search.certify import Certify
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.ola import OLA

# Six people; age generalizes 21..24 -> 20-29, 31, 32 -> 30-39 -> *. The research subset is 21 and 31.
AGES = ["21", "22", "23", "24", "31", "32"]
HIERARCHY = "21;20-29;*\n22;20-29;*\n23;20-29;*\n24;20-29;*\n31;30-39;*\n32;30-39;*\n"


def people(member: tuple[int, ...] = (0, 4)) -> dict[str, list[str]]:
    return {"age": AGES, "m": ["1" if i in member else "0" for i in range(len(AGES))]}


@pytest.fixture
def age_hierarchy(tmp_path: Path) -> str:
    path = tmp_path / "age.csv"
    path.write_text(HIERARCHY)
    return str(path)


def presence(hierarchy: str, dmin: float, dmax: float, suppression: float = 0.0, data: dict | None = None):
    config = Config(qi=["age"], k=1, allow_k1=True, suppression=suppression, hierarchies={"age": hierarchy},
                    delta_presence=f"{dmin},{dmax}", research_subset="m")
    return prepare(data or people(), config, require_feasible=False)


def test_delta_presence_counts_each_class_in_the_subset_and_in_the_population(age_hierarchy: str) -> None:
    prepared = presence(age_hierarchy, 0.2, 0.5)
    partition = prepared.evaluator.partition((1,), with_rows=True)
    # released 21 -> 20-29 (1 of 4 people), 31 -> 30-39 (1 of 2)
    assert sorted(zip(partition.sizes.tolist(), partition.population.tolist())) == [(1, 2), (1, 4)]
    assert prepared.table.n == 2 and prepared.encoded.population.n == 6
    assert [e.feasible for e in map(prepared.evaluator.evaluate, [(0,), (1,), (2,)])] == [False, True, True]
    # level 0: 21 is 1 of 1 (share 1 > 0.5); level 1: 1/4 and 1/2 lie in [0.2, 0.5]; level 2: 2/6
    assert BestFirst().run(prepared.problem(), Limits()).best.node == (1,)


def test_a_dmin_above_a_class_share_needs_more_generalization(age_hierarchy: str) -> None:
    prepared = presence(age_hierarchy, 0.3, 0.5)  # 20-29's 1/4 is below 0.3; * holds 2 of 6
    assert BestFirst().run(prepared.problem(), Limits()).best.node == (2,)


def test_a_population_class_with_no_subset_row_fails_the_node_when_dmin_is_above_zero(age_hierarchy: str) -> None:
    # at level 0 the people aged 22, 23, 24, 32 form classes with no subset row (share 0): nothing of them is
    # released, so nothing can be suppressed, and the node fails even with every row allowed to go
    assert presence(age_hierarchy, 0.1, 1.0, 0.5).evaluator.evaluate((0,)).suppressed == 2
    assert presence(age_hierarchy, 0.0, 1.0).evaluator.evaluate((0,)).feasible


def test_suppression_removes_the_subset_rows_of_a_class_outside_the_bounds(age_hierarchy: str) -> None:
    # members 21 and 22: at level 1 the class 20-29 holds 2 of 4 (0.5), 30-39 none of 2: share 0 < 0.4
    data = people((0, 1))
    evaluation = presence(age_hierarchy, 0.0, 0.4, 0.5, data).evaluator.evaluate((1,))
    assert (evaluation.suppressed, evaluation.feasible) == (2, False)  # 2 of 2 released rows, the budget is 1


def test_delta_presence_is_monotone_without_suppression_only() -> None:
    model = DeltaPresence(0.1, 0.5, "m")
    assert model.monotone and not model.monotone_with_suppression
    assert KMapPopulation.monotone and KMapPopulation.monotone_with_suppression


def test_k_map_counts_the_population_table_at_the_same_node(tmp_path: Path, age_hierarchy: str) -> None:
    population = tmp_path / "population.csv"
    population.write_text("age\n" + "\n".join(AGES) + "\n")
    config = Config(qi=["age"], k=1, allow_k1=True, suppression=0.5, hierarchies={"age": age_hierarchy}, k_map=3,
                    population=str(population))
    prepared = prepare({"age": ["21", "31"]}, config)
    # level 1: 21 -> 20-29 matches 4 people, 31 -> 30-39 only 2 < 3: suppressed (1 row, within the budget)
    evaluation = prepared.evaluator.evaluate((1,))
    assert (evaluation.suppressed, evaluation.feasible) == (1, True)
    assert not prepared.evaluator.evaluate((0,)).feasible
    assert BestFirst().run(prepared.problem(), Limits()).best.node == (1,)


def test_a_sensitive_column_is_the_released_rows_own(age_hierarchy: str) -> None:
    data = {**people(), "s": ["a", "b", "c", "d", "e", "f"]}
    config = Config(qi=["age"], k=1, allow_k1=True, hierarchies={"age": age_hierarchy}, sensitive=["s"], l=2,
                    delta_presence="0,0.5", research_subset="m")
    prepared = prepare(data, config)
    codes, labels = prepared.encoded.sensitive["s"]
    assert [labels[c] for c in codes] == ["a", "e"] and prepared.encoded.population.sensitive == {}
    assert BestFirst().run(prepared.problem(), Limits()).best.node == (2,)  # l = 2 needs 21 and 31 together


def test_the_common_path_carries_no_population() -> None:
    prepared = prepare({"age": AGES}, Config(qi=["age"], k=2))
    assert prepared.encoded.population is None and not prepared.evaluator.needs_population
    assert prepared.evaluator.partition((0,)).population is None


def test_an_evaluator_refuses_a_population_model_without_population_rows() -> None:
    prepared = prepare({"age": AGES}, Config(qi=["age"], k=2))
    with pytest.raises(ValueError, match="population"):
        NodeEvaluator(prepared.encoded, [DeltaPresence(0.0, 0.5, "m")])


# --- the searches' optima against exhaustive search on random tables ------------------------------------------

@st.composite
def population_problems(draw):
    n = draw(st.integers(6, 30))
    columns: dict[str, list[str]] = {}
    for j in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            columns[f"q{j}"] = [str(draw(st.integers(0, draw(st.sampled_from([9, 99]))))) for _ in range(n)]
        else:
            columns[f"q{j}"] = [draw(st.sampled_from("abcd")) for _ in range(n)]
    members = [True] + [draw(st.booleans()) for _ in range(n - 1)]
    suppression = draw(st.sampled_from([0.0, 0.1, 0.3]))
    return columns, members, suppression, draw(st.sampled_from(["presence", "presence-arx", "kmap"])), \
        draw(st.integers(0, 3))


def problem_of(case, folder: Path):
    columns, members, suppression, name, choice = case
    qis = list(columns)
    base = dict(qi=qis, k=1, allow_k1=True, suppression=suppression, keep_unnamed=True)
    if name.startswith("presence"):
        dmin, dmax = ((0.0, 0.5), (0.1, 0.6), (0.2, 0.9), (0.0, 0.34))[choice]
        if name == "presence-arx":  # ARX's order of checks beside k = 2: not monotone, no search may prune on it
            base = {**base, "k": 2, "delta_presence_variant": "arx"}
            members = [True, True, *members[2:]]  # k = 2 needs two released rows
        data = {**columns, "m": ["1" if m else "0" for m in members]}
        return data, Config(**base, delta_presence=f"{dmin},{dmax}", research_subset="m")
    population = folder / "population.csv"  # the population: every row; the sample: the members
    with open(population, "w", newline="") as handle:
        csv.writer(handle).writerows([qis, *zip(*(columns[q] for q in qis))])
    sample = {q: [v for v, m in zip(columns[q], members) if m] for q in qis}
    return sample, Config(**base, k_map=(2, 3, 4, 6)[choice], population=str(population))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(population_problems())
def test_every_exact_search_finds_exhaustives_optimum_with_a_population(case) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data, config = problem_of(case, Path(folder))
        try:
            prepared = prepare(data, config)
        except NoSolutionError:  # monotone feasibility and an infeasible top: no node is feasible, proved up front
            return
        truth = Exhaustive().run(prepared.problem(), Limits())
        expected = None if truth.best is None else truth.best.loss
        problem = prepared.problem()
        if not problem.monotone_feasibility:  # certify's cuts need it: it refuses such a problem
            with pytest.raises(InputError, match="monotone feasibility"):
                Certify().run(problem, Limits())
        for search in (BestFirst(), OLA(), Incognito()) + ((Certify(),) if problem.monotone_feasibility else ()):
            prepared.evaluator.clear_cache()
            found = search.run(prepared.problem(), Limits())
            assert found.stopped == "complete", (search, found.stopped)
            assert (None if found.best is None else found.best.loss) == expected, search


# --- the command line: anonymize, check, apply, run.toml; the independent check -------------------------------

# Twelve people: 20-29 holds eight, 30-39 four; the subset takes two of the first and one of the second, so at
# level 1 each class's share is 1/4.
POPULATION = [str(a) for a in (21, 21, 22, 22, 23, 23, 24, 24, 31, 31, 32, 32)]
SUBSET = ["21", "23", "31"]


@pytest.fixture
def files(tmp_path: Path, age_hierarchy: str) -> dict[str, str]:
    (tmp_path / "population.csv").write_text("id,age\n" + "".join(f"{i},{a}\n" for i, a in enumerate(POPULATION)))
    rows = {"21": "0", "23": "4", "31": "8"}
    (tmp_path / "subset.csv").write_text("id,age\n" + "".join(f"{rows[a]},{a}\n" for a in SUBSET))
    return {"dir": str(tmp_path), "population": str(tmp_path / "population.csv"),
            "subset": str(tmp_path / "subset.csv"), "hierarchy": age_hierarchy,
            "release": str(tmp_path / "release.csv"), "report": str(tmp_path / "release.json")}


def anonymize(files: dict[str, str], *extra: str) -> int:
    return main(["anonymize", files["population"], "--qi", "age", "--identifier", "id", "--hierarchy",
                 f"age={files['hierarchy']}", "--k", "1", "--allow-k1", "--output", files["release"],
                 "--delta-presence", "0.2,0.3", "--research-subset", files["subset"], *extra])


def test_anonymize_check_and_apply_keep_delta_presence(files: dict[str, str], capsys) -> None:
    assert anonymize(files) == 0
    out = capsys.readouterr().out
    assert "(0.2, 0.3)-presence" in out
    report = json.loads(Path(files["report"]).read_text())
    assert report["node"] == {"age": 1} and report["rows"] == 3
    assert report["delta_presence"] == "0.2,0.3" and report["research_subset"] == files["subset"]
    model = next(m for m in report["models"] if m["model"] == "delta-presence")
    assert (model["dmin"], model["dmax"]) == (0.2, 0.3) and len(model["subset_digest"]) == 64
    assert report["verified"]["passed"] is True
    population_rows = len(Path(files["population"]).read_text().strip().splitlines()) - 1
    assert report["provenance"]["input"]["rows"] == population_rows  # the input file's, which its sha256 is of
    assert report["provenance"]["input"]["anonymized_rows"] == 3
    assert main(["check", files["release"], "--report", files["report"]]) == 0
    stricter = ["--delta-presence", "0.26,0.3", "--research-subset", files["subset"]]
    assert main(["check", files["release"], "--report", files["report"], *stricter]) == 1
    applied = str(Path(files["dir"]) / "applied.csv")
    assert main(["apply", files["population"], "--report", files["report"], "--output", applied, "--allow-k1"]) == 0
    assert Path(applied).read_text() == Path(files["release"]).read_text()


def test_apply_refuses_a_different_research_subset(files: dict[str, str], capsys) -> None:
    assert anonymize(files) == 0
    Path(files["subset"]).write_text("id,age\n0,21\n8,31\n")
    applied = str(Path(files["dir"]) / "applied.csv")
    assert main(["apply", files["population"], "--report", files["report"], "--output", applied, "--allow-k1"]) == 2
    assert "is not the subset the run used" in capsys.readouterr().err


def test_the_checker_fails_a_release_moved_by_one_row(files: dict[str, str]) -> None:
    assert anonymize(files) == 0
    report = json.loads(Path(files["report"]).read_text())
    k, rules = rules_from_models(report["models"], dropped=False)
    release = read_csv(files["release"])
    assert check_k_anonymity(release, ["age"], k, 0.0, rules, {"report": report}).passed
    lines = Path(files["release"]).read_text().splitlines()
    broken = Path(files["dir"]) / "broken.csv"
    row = next(i for i, line in enumerate(lines) if line.endswith("20-29"))
    broken.write_text("\n".join(lines[:row] + [lines[row].replace("20-29", "30-39")] + lines[row + 1:]) + "\n")
    # 20-29 now holds 1 of 8 people (below 0.2), 30-39 2 of 4 (above 0.3)
    result = check_k_anonymity(read_csv(broken), ["age"], k, 0.0, rules, {"report": report})
    assert not result.passed and len(result.violating_rows) == 3


def test_the_checker_needs_the_report_for_a_population(files: dict[str, str]) -> None:
    assert anonymize(files) == 0
    report = json.loads(Path(files["report"]).read_text())
    k, rules = rules_from_models(report["models"], dropped=False)
    with pytest.raises(InputError, match="--report"):
        check_k_anonymity(read_csv(files["release"]), ["age"], k, 0.0, rules)


def test_a_planted_evaluator_bug_is_caught_before_publishing(files: dict[str, str], monkeypatch, capsys) -> None:
    # the evaluator counts the released rows as the population: every class looks fully in the subset, share 1
    monkeypatch.setattr(DeltaPresence, "violating", lambda self, partition, table: np.zeros(partition.count, bool))
    assert anonymize(files) == ExitCode.RELEASE_CHECK_FAILED  # ReleaseCheckError: nothing is written
    assert not Path(files["release"]).exists()
    assert "failed its independent check" in capsys.readouterr().err


def test_a_planted_population_count_bug_is_caught_before_publishing(files: dict[str, str], monkeypatch) -> None:
    from fitness import kernel

    real = kernel.partition_with_population

    def inflated(*args):  # every class matches ten times the population it does
        partition = real(*args)
        return type(partition)(partition.sizes, partition.rows, partition.population * 10, partition.population_only)

    monkeypatch.setattr(kernel, "partition_with_population", inflated)
    code = main(["anonymize", files["subset"], "--qi", "age", "--identifier", "id", "--hierarchy",
                 f"age={files['hierarchy']}", "--k", "1", "--allow-k1", "--output", files["release"],
                 "--k-map", "8", "--population", files["population"], "--suppression", "1"])
    assert code == ExitCode.RELEASE_CHECK_FAILED and not Path(files["release"]).exists()


def test_k_map_with_a_population_from_run_toml(files: dict[str, str], capsys) -> None:
    toml = Path(files["dir"]) / "run.toml"
    toml.write_text(f'qi = ["age"]\nidentifier = ["id"]\nk = 1\nallow_k1 = true\nk_map = 4\n'
                    f'population = "{files["population"]}"\nhierarchy = ["age={files["hierarchy"]}"]\n')
    assert main(["anonymize", files["subset"], "--config", str(toml), "--output", files["release"]]) == 0
    report = json.loads(Path(files["report"]).read_text())
    assert {"model": "k-map-population", "k_map": 4, "population": files["population"]}.items() <= \
        next(m for m in report["models"] if m["model"] == "k-map-population").items()
    assert report["node"] == {"age": 1}  # 20-29 matches 8 people, 30-39 4
    assert "4-map (population" in capsys.readouterr().out
    assert main(["check", files["release"], "--report", files["report"]]) == 0
    assert main(["check", files["release"], "--report", files["report"], "--k-map", "5", "--population",
                 files["population"]]) == 1


@pytest.mark.parametrize("change, message", [
    (("--research-subset", "missing.csv"), "no such file"),
    (("--research-subset", "{dir}/wrong.csv"), "must have the input's columns"),
    (("--research-subset", "{dir}/stranger.csv"), "is not a row of the population"),
    (("--research-subset", "{dir}/empty.csv"), "is empty"),
    (("--delta-presence", "0.5,0.2"), "DMIN,DMAX"),
    (("--algorithm", "k-optimize"), "cannot evaluate a model with a population"),
])
def test_bad_subsets_are_one_line_with_exit_2(files: dict[str, str], capsys, change: tuple, message: str) -> None:
    folder = Path(files["dir"])
    (folder / "wrong.csv").write_text("id,years\n0,21\n")
    (folder / "stranger.csv").write_text("id,age\n0,21\n99,21\n")
    (folder / "empty.csv").write_text("id,age\n")
    option, value = change
    argv = ["anonymize", files["population"], "--qi", "age", "--identifier", "id", "--hierarchy",
            f"age={files['hierarchy']}", "--k", "1", "--allow-k1", "--output", files["release"],
            "--delta-presence", "0.2,0.3", "--research-subset", files["subset"]]
    if option in argv:
        argv[argv.index(option) + 1] = value.format(dir=folder)
    else:
        argv += [option, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_population_value_outside_the_hierarchy_names_the_population_file(files: dict[str, str], capsys) -> None:
    Path(files["population"]).write_text("id,age\n0,21\n1,99\n")
    code = main(["anonymize", files["subset"], "--qi", "age", "--identifier", "id", "--hierarchy",
                 f"age={files['hierarchy']}", "--k", "1", "--allow-k1", "--output", files["release"],
                 "--k-map", "2", "--population", files["population"]])
    assert code == 2
    assert f"{files['population']}, row 2, column 'age'" in capsys.readouterr().err


def test_the_population_reference_is_a_table_ref_with_its_digest(files: dict[str, str]) -> None:
    from kgen.run.config import resolve_resources

    resolved = resolve_resources({"population": files["population"], "research_subset": "m"})
    assert isinstance(resolved["population"], TableRef) and len(resolved["population"].sha256) == 64
    assert resolved["research_subset"] == "m"  # a column of the input


def test_the_python_api_reports_the_population_section(age_hierarchy: str) -> None:
    from kgen import anonymize

    result = anonymize(people(), Config(qi=["age"], k=1, allow_k1=True, hierarchies={"age": age_hierarchy},
                                        delta_presence="0.2,0.5", research_subset="m"))
    assert result.report["node"] == {"age": 1} and result.report["rows"] == 2
    assert result.report["population_counts"] == {
        "population_rows": 6, "released_classes": 2, "least_population_match": 2, "share_min": 0.25,
        "share_max": 0.5, "population_classes_without_released_rows": 0}
    assert "m" not in result.release.columns  # the membership column is not released


def test_the_report_names_the_kernel_a_population_model_really_ran_on(age_hierarchy: str) -> None:
    """`--kernel bitset` with a population model: the joint count runs on the fast kernel, and the report's
    `evaluator` says so instead of naming the kernel that was asked for."""
    config = Config(qi=["age"], k=1, allow_k1=True, hierarchies={"age": age_hierarchy}, kernel="bitset",
                    delta_presence="0,1", research_subset="m")
    described = prepare(people(), config, require_feasible=False).evaluator.describe()
    assert described["kernel"] == "fast" and described["asked_kernel"] == "bitset"
    plain = prepare({"age": AGES}, Config(qi=["age"], k=2, kernel="bitset")).evaluator.describe()
    assert plain["kernel"] == "bitset" and "asked_kernel" not in plain
