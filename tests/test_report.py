"""One run path and one report builder (issue 14, item 4): the command line builds its Config from its options
field by field and runs `kgen.run.pipeline.anonymize`; `kgen/report/build.py` builds every report, in a fixed
key order, and a report's `verified` is written only after the independent check ran."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from pathlib import Path

import pytest

from kgen import write_release
from kgen.check.kanonymity import CheckResult
from kgen.cli import console, demo, options
from kgen.cli import main as cli
from kgen.cli.progress import ProgressBar
from kgen.io.table import from_mapping
from kgen.report import build as reporting
from kgen.report import publish as publishing
from kgen.run import pipeline as api
from kgen.run.config import Config
from kgen.status import ReleaseCheckError
from lattice.errors import InputError

PEOPLE = "name,age,zip,disease\n" + "".join(
    f"p{i},{20 + i % 7},{1000 + i % 3},{'flu' if i % 2 else 'cold'}\n" for i in range(40))


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(PEOPLE, encoding="utf-8")
    return path


def anonymize_argv(source: Path, output: Path, *extra: str) -> list[str]:
    return ["anonymize",
            "--keep-unnamed", "--allow-k1",
            str(source), "--qi", "age,zip", "--identifier", "name", "--sensitive", "disease",
            "--k", "3", "--algorithm", "exhaustive", "--output", str(output), "--quiet", *extra]


# --- the Config of the command line -----------------------------------------------------------------------------

EVERY_OPTION = [
    "anonymize", "--keep-unnamed", "in.csv", "--qi", "a,b", "--k", "3", "--suppression", "0.1", "--identifier", "i",
    "--sensitive", "s", "--l", "2", "--l-variant", "recursive", "--c", "3", "--t-closeness", "0.5",
    "--t-distance", "ordered", "--metric", "dm", "--hierarchy", "a=decimal", "--hierarchy-dir", "hierarchies",
    "--missing", "x", "--algorithm", "ola", "--ga-population", "10", "--seed", "7", "--max-evaluations", "9",
    "--time-limit", "5", "--kernel", "bitset", "--no-prune", "--drop-suppressed", "--jobs", "2",
    "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1", "--batch-size", "4", "--connect-timeout", "3",
    "--strict", "--device", "array", "--no-bound", "--partitioned", "--beta-likeness", "1", "--beta-variant",
    "enhanced", "--delta-disclosure", "1", "--k-map", "5", "--sampling-fraction", "0.1", "--k-map-estimator",
    "zero-truncated-poisson", "--k-map-significance", "0.05", "--max-average-risk", "0.1", "--keep", "c", "--allow-k1",
    "--encoding", "latin-1", "--local-recoding", "--microaggregate", "a=mean", "--min-level", "a=1",
    "--max-level", "b=2", "--weight", "a=2", "--node", "a=1,b=0", "--t-hierarchy", "s.csv",
    "--max-population-uniqueness", "0.1", "--uniqueness-model", "zayatz", "--population", "p.csv",
    "--max-sample-uniqueness", "0.1",
    "--l-estimator", "grassberger",
    "--delta-presence", "0,0.5", "--research-subset", "m", "--differential-privacy", "1,1e-6",
    "--delta-presence-variant", "arx",
    "--dp-search-share", "0.2", "--dp-steps", "7", "--dp-score", "aecs",
    "--practical-monotonicity",
]


def test_every_config_field_is_set_by_an_option_of_kgen_anonymize() -> None:
    config = options.config_from_args(cli.build_parser().parse_args(EVERY_OPTION))
    defaults = Config(qi=["a", "b"])
    unset = [f.name for f in dataclasses.fields(Config)
             if f.name != "qi" and getattr(config, f.name) == getattr(defaults, f.name)]
    assert unset == [], f"Config fields that no option of 'kgen anonymize' sets: {unset}"
    assert config.qi == ["a", "b"] and config.identifiers == ["i"] and config.hierarchies == {"a": "decimal"}
    assert config.missing == ("x",) and config.options == {"ga_population": 10}
    assert config.prune is False and config.bound is False and config.partitioned is True


def test_options_left_out_give_the_config_defaults() -> None:
    config = options.config_from_args(cli.build_parser().parse_args(["anonymize", "in.csv", "--qi", "a", "--k", "2"]))
    assert config == Config(qi=["a"], k=2, identifiers=[], sensitive=[], keep=[])


def test_the_demo_builds_its_config_from_its_options_too() -> None:
    args = cli.build_parser().parse_args(["demo", "--k", "7", "--seed", "3", "--algorithm", "ola", "--strict"])
    config = options.config_from_args(args, qi=demo.DEMO_QIS, hierarchy_dir="data")
    assert config == Config(qi=demo.DEMO_QIS, k=7, suppression=0.01, hierarchy_dir="data", algorithm="ola", seed=3,
                            strict=True)


# --- the run path -------------------------------------------------------------------------------------------------

def test_the_command_line_runs_the_python_api(people: Path, tmp_path: Path, monkeypatch) -> None:
    calls = []
    original = api.anonymize

    def spy(data, config, *args, **kwargs):
        calls.append((config, kwargs))
        return original(data, config, *args, **kwargs)

    monkeypatch.setattr(api, "anonymize", spy)
    assert cli.main(anonymize_argv(people, tmp_path / "out.csv", "--seed", "5")) == 0
    [(config, kwargs)] = calls
    assert config.k == 3 and config.seed == 5 and config.identifiers == ["name"]
    assert kwargs["warn"] is console.warn and isinstance(kwargs["progress"], ProgressBar)


class Recorder:
    """A progress callback with the optional `begin` and `close` of kgen.run.pipeline.search."""

    def __init__(self, events: list, stop_after: int | None = None) -> None:
        self.events, self.stop_after, self.calls = events, stop_after, 0

    def begin(self, budget, time_limit, space) -> None:
        self.events.append(("begin", budget, time_limit, space))

    def __call__(self, evaluations, best) -> None:
        self.calls += 1
        self.events.append(("progress", evaluations))
        if self.stop_after is not None and self.calls >= self.stop_after:
            raise KeyboardInterrupt

    def close(self) -> None:
        self.events.append(("close",))


def table_with_an_id_column():
    return from_mapping({"id": [str(i) for i in range(60)], "age": [str(20 + i % 30) for i in range(60)],
                         "sex": ["F", "M", "M"] * 20})


def test_the_api_warns_before_the_search_and_tells_the_progress_its_limits() -> None:
    events: list = []
    config = Config(qi=["age", "sex"], k=4, hierarchies={"age": "intervals:5,10", "sex": "flat"}, time_limit=60,
                    keep_unnamed=True)
    result = api.anonymize(table_with_an_id_column(), config, Recorder(events),
                           warn=lambda message: events.append(("warn", message)))
    assert events[0][0] == "warn" and "'id' is kept" in events[0][1]
    # no --max-evaluations: auto (the default) has no evaluation budget of its own, the time limit ends it
    assert events[1] == ("begin", None, 60, result.report["box"]["size"])
    assert events[-1] == ("close",) and ("progress", result.search.evaluations) in events
    assert result.report["warnings"] == [events[0][1]]


def test_ctrl_c_in_the_python_api_raises_interrupted_with_the_best_so_far() -> None:
    events: list = []
    config = Config(qi=["age", "sex"], k=4, hierarchies={"age": "intervals:5,10", "sex": "flat"},
                    algorithm="exhaustive", prune=False, keep_unnamed=True)
    with pytest.raises(api.Interrupted) as caught:
        api.anonymize(table_with_an_id_column(), config, Recorder(events, stop_after=1))
    assert isinstance(caught.value, KeyboardInterrupt) and caught.value.result.stopped == "interrupted"
    assert events[-1] == ("close",)
    best = caught.value.best()
    assert best is None or best.search.stopped == "interrupted"


def test_partitioned_runs_go_to_kgen_partitioned(monkeypatch) -> None:
    calls = []
    fake = types.ModuleType("kgen.run.partitioned")
    fake.anonymize = lambda data, config, output=None, progress=None, **published: calls.append(
        (data, config, output, progress)) or "partitioned"
    monkeypatch.setitem(sys.modules, "kgen.run.partitioned", fake)
    config, progress = Config(qi=["a"], k=2, partitioned=True, keep_unnamed=True), Recorder([])
    assert api.anonymize("data/*.parquet", config, progress) == "partitioned"
    assert calls == [("data/*.parquet", config, None, progress)]


def test_the_command_line_gives_a_partitioned_run_the_path_unread(people: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    seen = []

    def anonymize(data, config, output=None, progress=None, **published):
        seen.append((data, output))
        raise InputError("stop here")

    monkeypatch.setitem(sys.modules, "kgen.run.partitioned", types.SimpleNamespace(anonymize=anonymize))
    assert cli.main(anonymize_argv(people, tmp_path / "parts", "--partitioned")) == 2
    assert seen == [(str(people), str(tmp_path / "parts"))]


def test_partitioned_without_its_package_is_one_input_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "kgen.run.partitioned", None)  # as if the package were not installed
    with pytest.raises(InputError, match="needs the kgen.run.partitioned module"):
        api.anonymize(from_mapping({"a": ["1", "1"]}), Config(qi=["a"], k=2, partitioned=True, keep_unnamed=True))


# --- the reports ------------------------------------------------------------------------------------------------

def test_reports_keep_their_key_order(people: Path, tmp_path: Path) -> None:
    assert cli.main(anonymize_argv(people, tmp_path / "out.csv")) == 0
    report = json.loads((tmp_path / "out.json").read_text())
    assert list(report) == [*reporting.ANONYMIZE_KEYS, "verified"]
    assert list(report)[:7] == ["algorithm", "exact", "parameters", "seed", "max_evaluations", "time_limit", "stopped"]
    assert cli.main(["apply", "--keep-unnamed", str(people), "--report", str(tmp_path / "out.json"), "--output",
                     str(tmp_path / "again.csv"), "--quiet"]) == 0
    applied = json.loads((tmp_path / "again.json").read_text())
    assert list(applied) == [*reporting.APPLY_KEYS, "verified"]
    assert list(applied)[:4] == ["applied_report", "applied_search", "input", "holds"]


def test_verified_is_written_only_after_the_check_ran(people: Path, tmp_path: Path, monkeypatch) -> None:
    seen = []

    def check(path, *_, **__) -> CheckResult:
        # the report's temporary file, written before the check: it must not claim any verdict yet
        [temporary] = tmp_path.glob(".out.json.*.tmp")
        seen.append(json.loads(temporary.read_text()))
        return CheckResult(rows=40, k=3, classes=777, smallest_class=3, suppressed_rows=0, violating_rows=[],
                           allowed=0)

    monkeypatch.setattr(publishing, "verify_file", check)
    assert cli.main(anonymize_argv(people, tmp_path / "out.csv")) == 0
    assert len(seen) == 1 and "verified" not in seen[0]
    verified = json.loads((tmp_path / "out.json").read_text())["verified"]
    assert verified["passed"] is True and verified["classes"] == 777


def test_a_failed_check_leaves_the_report_saying_so_and_publishes_nothing(tmp_path: Path) -> None:
    table = from_mapping({"age": [str(20 + i % 30) for i in range(60)], "sex": ["F", "M", "M"] * 20})
    result = api.anonymize(table, Config(qi=["age", "sex"], k=4, hierarchies={"age": "intervals:5,10",
                                                                              "sex": "flat"}, keep_unnamed=True))
    assert "verified" not in result.report
    result.report["models"] = [{"model": "k-anonymity", "k": 1000}]  # a release that cannot hold this
    with pytest.raises(ReleaseCheckError):
        write_release(result, tmp_path / "out.csv")
    assert result.report["verified"]["passed"] is False
    assert "failed its independent check" in result.report["verified"]["error"]
    assert list(tmp_path.iterdir()) == []


def test_write_release_records_the_figures_of_the_check_that_ran(tmp_path: Path) -> None:
    table = from_mapping({"age": [str(20 + i % 30) for i in range(60)], "sex": ["F", "M", "M"] * 20})
    result = api.anonymize(table, Config(qi=["age", "sex"], k=4, hierarchies={"age": "intervals:5,10",
                                                                              "sex": "flat"}, keep_unnamed=True))
    report = json.loads(write_release(result, tmp_path / "out.csv").read_text())
    assert report["verified"]["passed"] is True and report["verified"]["rows"] == 60
    assert report["verified"]["classes"] == report["classes"]


def test_partitioned_without_dask_is_one_input_error_naming_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "kgen.run.partitioned", None)
    monkeypatch.delitem(sys.modules, "kgen.run.partitioned")
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if Dask's extra were not installed
    for name in [m for m in sys.modules if m.startswith("kgen.runners.partitioned.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(InputError, match=r"--partitioned needs distributed: pip install"):
        api.anonymize(from_mapping({"a": ["1", "1"]}), Config(qi=["a"], k=2, partitioned=True, keep_unnamed=True))
