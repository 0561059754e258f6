"""Files and messages a hostile user tried (issue 25): JSON inputs are regular files read within a bound,
the environment is checked before any work, and no message lists more than ten names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kgen import from_mapping
from kgen.cli.main import main
from kgen.io import files
from lattice.errors import InputError, names_shown


def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text("age,sex\n" + "".join(f"{20 + i % 5},{'MF'[i % 2]}\n" for i in range(40)), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["apply", "check", "risk", "report"])
def test_a_fifo_given_as_a_report_is_refused_at_once(tmp_path: Path, command: str, capsys) -> None:
    data = people(tmp_path)
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    argv = {"apply": ["apply",
                      "--keep-unnamed", str(data), "--report", str(fifo), "--output", str(tmp_path / "out.csv")],
            "check": ["check", str(data), "--qi", "age", "--k", "2", "--report", str(fifo)],
            "risk": ["risk", str(data), "--report", str(fifo)],
            "report": ["report", str(fifo)]}[command]
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(main(argv)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert done == [2], "a FIFO report hung the command"
    assert "report.json" in capsys.readouterr().err


def test_a_fifo_report_message_names_what_it_is(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="report.json"):
        files.read_json(fifo)


def test_a_huge_json_input_is_refused_without_reading_it_all(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"x": "y" * 5000}), encoding="utf-8")
    with pytest.raises(InputError, match="larger than"):
        files.read_json(big)


def test_a_bad_lock_timeout_is_an_error_before_the_search(tmp_path: Path, capsys) -> None:
    data = people(tmp_path)
    started = time.monotonic()
    code = subprocess.run([sys.executable, "-m", "kgen", "anonymize",
                           "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2",
                           "--algorithm", "exhaustive", "--output", str(tmp_path / "out.csv")],
                          env={**os.environ, "KGEN_LOCK_TIMEOUT": "soon"}, capture_output=True, text=True,
                          timeout=120)
    assert code.returncode == 2 and "KGEN_LOCK_TIMEOUT" in code.stderr
    assert "Traceback" not in code.stderr and not (tmp_path / "out.csv").exists()
    assert time.monotonic() - started < 60


def test_an_unknown_column_lists_at_most_ten_names() -> None:
    table = from_mapping({f"column_{i:05d}": ["1"] for i in range(10_000)})
    with pytest.raises(InputError) as error:
        table.column("nope")
    text = str(error.value)
    assert "and 9990 more" in text and len(text) < 400


def test_names_shown_keeps_short_lists_whole() -> None:
    assert names_shown(["a", "b"]) == "a, b"
    assert names_shown([str(i) for i in range(12)]) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"


def test_a_symlinked_output_is_refused(tmp_path: Path, capsys) -> None:
    data = people(tmp_path)
    target = tmp_path / "elsewhere.csv"
    target.write_text("kept\n")
    link = tmp_path / "out.csv"
    link.symlink_to(target)
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--output", str(link), "--quiet"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert target.read_text() == "kept\n" and link.is_symlink()


def test_a_file_named_like_the_lock_is_never_deleted(tmp_path: Path) -> None:
    """An input that happens to bear the lock file's name (`.<output>.kgen-lock`) outlives the publication."""
    data = people(tmp_path)
    lookalike = tmp_path / ".out.csv.kgen-lock"
    lookalike.write_text("age,sex\n30,F\n", encoding="utf-8")
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    assert lookalike.read_text(encoding="utf-8") == "age,sex\n30,F\n"
    assert not (tmp_path / ".out.json.kgen-lock").exists()  # kgen's own lock files are removed


def test_apply_never_writes_over_a_hierarchy_its_report_names(tmp_path: Path, capsys) -> None:
    data = people(tmp_path)
    hierarchy = tmp_path / "sex.csv"
    hierarchy.write_text("M;*\nF;*\n", encoding="utf-8")
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--hierarchy", f"sex={hierarchy}",
                 "--output", str(tmp_path / "out.csv"), "--quiet"]) == 0
    before = hierarchy.read_bytes()
    assert main(["apply",
                 "--keep-unnamed", str(data), "--report", str(tmp_path / "out.json"), "--output", str(hierarchy),
                 "--apply-report", str(tmp_path / "again.json"), "--quiet"]) == 2
    assert hierarchy.read_bytes() == before


def test_apply_never_writes_over_the_release_it_verified(tmp_path: Path) -> None:
    data = people(tmp_path)
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--output", str(tmp_path / "out.csv"),
                 "--quiet"]) == 0
    release = tmp_path / "out.csv"
    before = release.read_bytes()
    assert main(["apply",
                 "--keep-unnamed", str(data), "--report", str(tmp_path / "out.json"), "--verify-release", str(release),
                 "--output", str(release), "--apply-report", str(tmp_path / "again.json"), "--quiet"]) == 2
    assert release.read_bytes() == before


def test_a_page_that_cannot_be_written_leaves_the_published_release_and_exit_0(tmp_path: Path, capsys) -> None:
    data = people(tmp_path)
    page = tmp_path / "missing-folder" / "page.html"
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--output", str(tmp_path / "out.csv"),
                 "--html", str(tmp_path / "page.html"), "--quiet"]) == 0
    assert (tmp_path / "page.html").exists()
    code = main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--output", str(tmp_path / "out2.csv"),
                 "--html", str(page), "--quiet"])
    # the page's folder is checked before the search (exit 2, nothing published) ...
    assert code == 2 and not (tmp_path / "out2.csv").exists()
    json.loads((tmp_path / "out.json").read_text())


def test_a_page_failing_after_publication_is_a_warning(tmp_path: Path, capsys, monkeypatch) -> None:
    from kgen.report import html

    data = people(tmp_path)

    def full(*args: object, **kwargs: object) -> None:
        raise InputError("cannot be written: No space left on device", file=str(tmp_path / "page.html"))

    monkeypatch.setattr(html, "write", full)
    code = main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age,sex", "--k", "2", "--output", str(tmp_path / "out.csv"),
                 "--html", str(tmp_path / "page.html"), "--quiet"])
    assert code == 0 and (tmp_path / "out.csv").exists() and (tmp_path / "out.json").exists()
    assert "No space left on device" in capsys.readouterr().err


def test_a_value_masked_whole_below_the_top_is_not_the_suppression_marker(tmp_path: Path) -> None:
    """`zip=mask` on 1-character values: level 1 reads `**`, so a generalized class never looks like the
    suppressed rows (before: exit 4, "bug in kgen", on valid input)."""
    data = tmp_path / "z.csv"
    data.write_text("zip,s\n1,s1\n1,s1\n2,s2\n2,s2\nAB,s1\nAC,s1\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "zip", "--k", "2", "--sensitive", "s", "--l", "2", "--l-variant",
                 "entropy", "--suppression", "0.34", "--hierarchy", "zip=mask", "--output", str(out),
                 "--quiet"]) == 0
    assert main(["check", str(out), "--qi", "zip", "--k", "2", "--sensitive", "s", "--l", "2", "--l-variant",
                 "entropy", "--suppression", "0.34"]) == 0


def test_a_hierarchy_file_with_the_marker_below_its_top_is_refused(tmp_path: Path, capsys) -> None:
    data = people(tmp_path)
    hierarchy = tmp_path / "sex.csv"
    hierarchy.write_text("M;*;*\nF;X;*\n", encoding="utf-8")
    assert main(["anonymize", "--keep-unnamed", str(data), "--qi", "sex", "--k", "2", "--hierarchy", f"sex={hierarchy}",
                 "--output", str(tmp_path / "out.csv"), "--quiet"]) == 2
    assert "marks suppressed rows" in capsys.readouterr().err


def test_k_optimize_gives_the_empty_value_an_interval_of_its_own(tmp_path: Path) -> None:
    """The empty value forms its own interval, labelled `(blank)` (before: a message about a hierarchy the
    user never gave)."""
    data = tmp_path / "ages.csv"
    data.write_text("age,zip\n30,1\n,1\n,1\n31,1\n32,1\n33,1\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    assert main(["anonymize",
                 "--keep-unnamed", str(data), "--qi", "age", "--k", "2", "--algorithm", "k-optimize", "--output",
                 str(out), "--quiet"]) == 0
    assert "(blank)" in out.read_text(encoding="utf-8")


def test_k_optimize_has_a_default_time_limit() -> None:
    from kgen.run import koptimize

    assert 0 < koptimize.DEFAULT_SECONDS <= 120


def sixty_binary_qis() -> tuple[dict, list[str]]:
    import random

    rng = random.Random(1)
    names = [f"q{i:02d}" for i in range(60)]
    return {n: [str(rng.randint(0, 1)) for _ in range(30)] for n in names}, names


def test_samarati_refuses_a_box_it_cannot_finish_without_a_limit() -> None:
    from kgen import Config, anonymize

    data, names = sixty_binary_qis()
    config = Config(qi=names, k=2, suppression=0.5, hierarchies=dict.fromkeys(names, "flat"), algorithm="samarati",
                    keep_unnamed=True)
    with pytest.raises(InputError, match="without a limit"):
        anonymize(data, config)


def test_certify_without_a_limit_on_a_huge_box_stops_at_its_default_and_reports_its_interval(monkeypatch) -> None:
    from kgen import Config, anonymize
    from lattice.search import certify

    monkeypatch.setattr(certify, "DEFAULT_SECONDS", 3.0)
    data, names = sixty_binary_qis()
    config = Config(qi=names, k=2, suppression=0.5, hierarchies=dict.fromkeys(names, "flat"), algorithm="certify",
                    keep_unnamed=True)
    started = time.monotonic()
    result = anonymize(data, config)
    assert time.monotonic() - started < 120
    assert result.report["lower_bound"] is not None and result.report["lower_bound"] <= result.report["loss"]
