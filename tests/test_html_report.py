"""The readable summary (kgen/report/summary.py) and the HTML report (kgen/report/html.py), checked as a person would:
the page is rendered by headless Chromium (Debian's `chromium` package), and its text and decoded images are
read back from the browser. The Chromium tests skip, with the reason, when no Chromium is installed (under
CI=true they fail instead: .ci/run installs it)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kgen import Config, anonymize, from_mapping
from kgen.report import summary as summarizing
from kgen.report.html import render

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
IMAGE_CHECK = (
    "<script>window.addEventListener('load', () => {const imgs = [...document.images];"
    "const ok = imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0).length;"
    "const d = document.createElement('div'); d.id = 'kgen-image-check';"
    "d.textContent = 'images decoded: ' + ok + ' of ' + imgs.length; document.body.appendChild(d);});</script>"
)


def synthetic_report(q: int, full: int, kept: int) -> dict:
    """A report shaped like kgen's with `q` QIs: `full` at the top, `kept` at level 0, the rest in between."""
    attributes = {}
    for i in range(q):
        level = 4 if i < full else 0 if i < full + kept else 2
        attributes[f"attribute_with_a_long_name_{i:02d}"] = {
            "level": level, "height": 4, "loss": level / 4, "distinct_before": 100, "distinct_after": 5,
            "hierarchy": "decimal" if i % 2 else f"/data/hierarchies/h_{i}.csv", "minimum_level": 0}
    return {
        "algorithm": "kgen", "stopped": "budget", "evaluations": 123456, "seconds": 12.5, "k": 5,
        "suppression_limit": 0.02, "max_suppressed_rows": 78, "rows": 3942, "rows_released": 3942,
        "log": 0.9, "los": 0.01, "suppressed": 40, "classes": 13, "smallest_class": 5, "aecs": 300.0,
        "loss": 0.9, "metric": "log", "metrics": {"ncp": 0.8, "loss": 0.8, "entropy": 0.9, "dm": 3779143},
        "privacy": [], "attributes": attributes, "quasi_identifiers": list(attributes),
        "risk": {"prosecutor": {"max": 0.2, "mean": 0.0034, "records_above_threshold": 0.0,
                                "rows_above_threshold": 123456},
                 "threshold": 0.2, "marketer": 0.0034, "sample_uniques": 123456, "sample_uniques_share": 0.0,
                 "class_sizes": [[5, 3], [7, 2], [300, 8]], "rows_released": 3902, "classes": 13,
                 "smallest_class": 5, "suppressed": 40,
                 "population_uniqueness": {"model": "exact", "sampling_fraction": 1.0, "share": 0.0,
                                           "population_rows": 3902}},
    }


def test_summary_fits_100_columns_and_groups_the_node_at_97_qis() -> None:
    text = summarizing.text(synthetic_report(97, 84, 9), "out/release.csv", "out/release.json")
    lines = text.splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert "84 of 97 QIs fully generalized, 9 kept at level 0, 4 in between" in text
    kept = next(line for line in lines if "kept at level 0 (9)" in line)
    assert "attribute_with_a_long_name_84" in kept and "more)" in kept
    assert "in between (4)" in text
    assert "0.2" in text and "123456 sample uniques" in text
    assert "hierarchies:" in text and "decimal (48)" in text and "file in /data/hierarchies (49)" in text


@pytest.mark.parametrize("q", [1, 3, 12, 13, 40, 300])
def test_summary_never_exceeds_100_columns(q: int) -> None:
    text = summarizing.text(synthetic_report(q, q // 2, q // 4))
    assert max(map(len, text.splitlines())) <= 100


def test_fit_lists_what_fits_and_counts_the_rest() -> None:
    names = [f"name{i}" for i in range(50)]
    line = summarizing.fit("head: ", names, 40)
    assert len(line) <= 40 and line.startswith("head: name0, name1")
    shown = line.count("name")
    assert line.endswith(f"(+{50 - shown} more)")
    assert summarizing.fit("h: ", ["a", "b"], 40) == "h: a, b"


def test_real_summary_names_each_qi_and_its_hierarchy() -> None:
    table = from_mapping({"age": [str(20 + i % 30) for i in range(90)], "zip": [f"8{i % 9}00{i % 3}" for i in
                                                                               range(90)]})
    result = anonymize(table, Config(qi=["age", "zip"], k=3, hierarchies={"age": "intervals:5,10", "zip": "mask"},
                                     keep_unnamed=True))
    text = summarizing.text(result.report)
    assert "intervals:5,10" in text and "mask" in text and "risk: prosecutor highest" in text
    assert max(map(len, text.splitlines())) <= 100


def hostile_result() -> dict:
    """A real report for a table whose column names and values are HTML."""
    table = from_mapping({"<script>alert(1)</script>": [str(i % 6) for i in range(40)],
                          "a&b \"q\"": ["<b>x</b>", "y"] * 20})
    return anonymize(table, Config(qi=["<script>alert(1)</script>", "a&b \"q\""], k=2,
                                   hierarchies={"<script>alert(1)</script>": "decimal",
                                                "a&b \"q\"": "flat"}, keep_unnamed=True)).report


def test_page_escapes_every_text_and_inlines_its_images() -> None:
    page = render(hostile_result())
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a&amp;b &quot;q&quot;" in page
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(images) == 2
    for data in images:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "http://" not in page and "https://" not in page  # nothing to fetch: self-contained
    for heading in ("Summary", "Generalization and loss per quasi-identifier", "Class sizes",
                    "Re-identification risk", "Provenance"):
        assert f"<h2>{heading}</h2>" in page


def chromium() -> str:
    for name in (os.environ.get("KGEN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (found := shutil.which(name)):
            return found
    reason = "headless Chromium not installed (Debian: apt-get install chromium; or set KGEN_CHROMIUM)"
    if os.environ.get("CI", "").lower() == "true":  # .ci/run installs it: there the check must not be skipped
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def browse(page: Path, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, text=True, timeout=120)


def check_in_browser(page: Path, tmp_path: Path, expected_text: list[str], height: int = 2400) -> None:
    """Render `page` in headless Chromium: every image decodes, the text is there, the screenshot is not blank."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", IMAGE_CHECK + "</body>"), encoding="utf-8")
    dom = browse(probe, "--virtual-time-budget=10000", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r"images decoded: (\d+) of (\d+)", dom.stdout)
    assert found, dom.stdout[-2000:]
    assert found.group(1) == found.group(2) == "2"
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    for expected in expected_text:
        assert expected in text, expected
    shot = tmp_path / "shot.png"
    done = browse(page, f"--window-size=1200,{height}", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (height, 1200)
    assert pixels.std() > 0.05  # not a blank page


def run_kgen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgen", *args], capture_output=True, text=True, timeout=300)


def kgen_main(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """`kgen ARGS` in this process (no interpreter start): exit status, stdout, stderr."""
    from kgen.cli.main import main

    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.slow  # over 2 s: in the slow step, to keep the default run under 3 minutes
def test_html_report_renders_in_chromium(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    chromium()
    rows = ["age,zip,disease"] + [f"{20 + i % 30},8{i % 9}00{i % 3},d{i % 4}" for i in range(300)]
    source = tmp_path / "patients.csv"
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out, report, html = tmp_path / "rel.csv", tmp_path / "rel.json", tmp_path / "rel.html"
    status, _, err = kgen_main(capsys, "anonymize", str(source), "--qi", "age,zip", "--sensitive", "disease",
                               "--k", "4", "--hierarchy", "age=intervals:5,10", "--hierarchy", "zip=mask",
                               "--output", str(out), "--report", str(report), "--html", str(html), "--quiet")
    assert status == 0, err
    r = json.loads(report.read_text())
    check_in_browser(html, tmp_path, [
        "kgen release report: patients.csv", "Re-identification risk", "prosecutor risk: highest",
        f"{r['risk']['prosecutor']['max']:.3%}", r["provenance"]["release"]["sha256"],
        r["provenance"]["input"]["sha256"], "SHA-256 matches the report", "the same figures"])


def test_kgen_report_flags_a_release_that_is_not_the_reports(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rows = ["a,b"] + [f"{i % 10},{i % 2}" for i in range(50)]
    source = tmp_path / "in.csv"
    source.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out, report = tmp_path / "rel.csv", tmp_path / "rel.json"
    assert kgen_main(capsys, "anonymize", str(source), "--qi", "a,b", "--k", "2", "--output", str(out),
                     "--report", str(report), "--quiet")[0] == 0
    other = tmp_path / "other.csv"
    other.write_text("\n".join(out.read_text().splitlines()[:-1]) + "\n", encoding="utf-8")  # one row less
    status, _, err = kgen_main(capsys, "report", str(report), "--release", str(other), "-o",
                               str(tmp_path / "page.html"))
    assert status == 0, err
    page = (tmp_path / "page.html").read_text()
    assert "does NOT match the report" in page and "DIFFERENT figures" in page
    status, _, _ = kgen_main(capsys, "report", str(report))  # default: the release the report names
    assert status == 0 and (tmp_path / "rel.html").exists()
    assert "SHA-256 matches the report" in (tmp_path / "rel.html").read_text()
    before = source.read_bytes()
    status, _, err = kgen_main(capsys, "report", str(report), "-o", str(source))  # never over the input
    assert status == 2 and "refusing to overwrite" in err
    assert source.read_bytes() == before


def test_anonymize_html_path_is_checked_before_the_search(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "in.csv"
    source.write_text("a,b\n" + "".join(f"{i % 5},{i % 2}\n" for i in range(40)), encoding="utf-8")
    out = tmp_path / "out.csv"
    for html in (str(source), str(out), str(tmp_path / "missing" / "page.html")):
        status, _, err = kgen_main(capsys, "anonymize", str(source), "--qi", "a,b", "--k", "2", "--output",
                                   str(out), "--html", html, "--quiet")
        assert status == 2 and len(err.strip().splitlines()) == 1, err
        assert not out.exists()


@pytest.mark.slow
def test_html_report_at_97_qis_renders_in_chromium(cargo_csv: Path, tmp_path: Path) -> None:
    chromium()
    header = cargo_csv.read_text(encoding="utf-8").splitlines()[0].split(",")
    qis = header[header.index("nr") + 1:]
    out, report, html = tmp_path / "c.csv", tmp_path / "c.json", tmp_path / "c.html"
    done = run_kgen("anonymize", str(cargo_csv), "--qi", ",".join(qis), "--identifier", "nr", "--k", "5",
                    "--suppression", "0.02", "--max-evaluations", "3000", "--output", str(out), "--report",
                    str(report), "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert max(map(len, done.stdout.splitlines())) <= 100
    assert re.search(r"node: \d+ of 97 QIs fully generalized", done.stdout)
    check_in_browser(html, tmp_path, ["Generalization and loss per quasi-identifier", "97 quasi-identifiers",
                                      "Hierarchies"], height=4200)
