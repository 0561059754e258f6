"""The frontier explorer (kgen/report/explorer.py) clicked in a real browser: Debian's headless Chromium driven by
Selenium through Debian's chromedriver (`apt-get install chromium chromium-driver`; `pip install
"kgen[browser]"`). Selenium is given the driver's path, so it never downloads one. The test skips, with the
reason, when either is missing (under CI=true it fails instead: .ci/run installs both). Marked slow: .ci/run
runs it in its second step.

Two points are clicked (and one chosen with the keyboard); the details shown must be that point's: title, levels,
risk table, released rows and the command. A page that showed another point's details fails."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgen import Config, frontier, read_csv
from kgen.report.explorer import write

pytestmark = pytest.mark.slow  # a browser start and three page loads: about 20 s on the shared machine

DATA = Path(__file__).resolve().parents[1] / "kgen" / "data"
CHROMIUM = os.environ.get("KGEN_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("KGEN_CHROMEDRIVER", "/usr/bin/chromedriver")


def missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":  # .ci/run installs them: there the test must not be skipped
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    try:  # optional dependency: selenium (extra `browser`)
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing('selenium not installed (pip install "kgen[browser]")')
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() or shutil.which(path)):
            missing(f"{path} not found (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1600", "--disable-background-networking", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    table = read_csv(DATA / "adult.csv")
    qis = ["sex", "age", "race", "marital-status"]
    result = frontier(table, Config(qi=qis, suppression=0.01, hierarchy_dir=str(DATA),
        keep_unnamed=True), "average", 2, 2,
                      input_path="adult.csv")
    path = tmp_path_factory.mktemp("explorer") / "frontier.html"
    write(result, path)
    return path, result


def shown(driver: object) -> dict:
    """What the details panel shows now."""
    find = driver.find_element  # type: ignore[attr-defined]
    from selenium.webdriver.common.by import By

    levels = [[td.text for td in row.find_elements(By.TAG_NAME, "td")]
              for row in find(By.ID, "levels").find_elements(By.TAG_NAME, "tr")[1:]]
    sample = [[td.text for td in row.find_elements(By.TAG_NAME, "td")]
              for row in find(By.ID, "sample").find_elements(By.TAG_NAME, "tr")[1:]]
    return {"title": find(By.ID, "d-title").text, "command": find(By.ID, "command").text, "levels": levels,
            "risks": find(By.ID, "risks").text, "sample": sample, "index": find(By.ID, "details").get_attribute(
                "data-index"), "bars": len(find(By.ID, "histogram").find_elements(By.CSS_SELECTOR, "rect.bar"))}


def assert_shows(driver: object, result: dict, i: int) -> None:
    point = result["points"][i]
    got = shown(driver)
    assert got["index"] == str(i)
    assert got["title"].startswith(f"Point {i + 1}: k {point['k']},")
    assert got["command"] == point["command"]
    assert got["levels"] == [[q, str(point["node"][q]), got["levels"][j][2]] for j, q in enumerate(point["node"])]
    assert got["sample"] == [[cell.strip() for cell in row] for row in point["sample"]]
    assert f"smallest class {point['smallest_class']}" in got["risks"].replace("\n", " ")
    assert f"suppressed rows {point['suppressed']}" in got["risks"].replace("\n", " ")
    assert got["bars"] == min(len(point["class_sizes"]), got["bars"]) and got["bars"] > 0


def test_clicking_two_points_shows_each_ones_details_and_command(browser: object, page: tuple[Path, dict]) -> None:
    from selenium.webdriver.common.by import By

    path, result = page
    assert len(result["points"]) >= 3
    browser.get(path.as_uri())  # type: ignore[attr-defined]
    first, last = 1, len(result["points"]) - 1
    for i in (first, last):
        browser.find_element(By.ID, f"point-{i}").click()  # type: ignore[attr-defined]
        assert_shows(browser, result, i)
        selected = browser.find_elements(By.CSS_SELECTOR, "circle.point.selected")  # type: ignore[attr-defined]
        assert [c.get_attribute("data-index") for c in selected] == [str(i)]
    assert result["points"][first]["command"] != result["points"][last]["command"]


def test_a_point_is_chosen_with_the_keyboard(browser: object, page: tuple[Path, dict]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path, result = page
    browser.get(path.as_uri())  # type: ignore[attr-defined]
    circle = browser.find_element(By.ID, "point-2")  # type: ignore[attr-defined]
    browser.execute_script("arguments[0].focus()", circle)  # type: ignore[attr-defined]
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    assert_shows(browser, result, 2)
    browser.execute_script("arguments[0].focus()", browser.find_element(By.ID, "point-0"))  # type: ignore[attr-defined]
    ActionChains(browser).send_keys(Keys.SPACE).perform()
    assert_shows(browser, result, 0)


def test_without_javascript_the_page_is_the_table_of_points(page: tuple[Path, dict], tmp_path: Path) -> None:
    try:  # optional dependency: selenium (extra `browser`); skipped without it, failed under CI=true
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        missing('selenium not installed (pip install "kgen[browser]")')

    path, result = page
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--blink-settings=scriptEnabled=false"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.get(path.as_uri())
        assert not driver.find_element(By.ID, "details").is_displayed()
        rows = driver.find_elements(By.CSS_SELECTOR, "#points tr")[1:]
        assert len(rows) == len(result["points"])
        assert all(p["command"] in row.text for row, p in zip(rows, result["points"]))
    finally:
        driver.quit()
