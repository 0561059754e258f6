"""Screenshots of the frontier explorer (docs/frontier.md): Adult (README QIs, highest risk, k 2 to 50, t = 1 %)
and Cargo 2000 (3,942 records, 25 QIs, average risk), each with one point clicked, taken in headless Chromium
through Selenium and Debian's chromedriver (as tests/test_explorer_browser.py).

    python -m benchmarks.explorer_screenshots      # writes docs/images/frontier_adult.png, frontier_cargo25.png
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from benchmarks.common import DATA, REPO
from kgen.io.table import read_csv
from kgen.report.explorer import write
from kgen.run.config import Config
from kgen.run.frontier import frontier

IMAGES = REPO / "docs" / "images"


def shoot(result: dict, target: Path, click: int) -> None:
    """Write the page, open it, click point `click`, save a screenshot of the whole page."""
    from selenium import webdriver  # optional dependency: selenium (extra `browser`)
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1500", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    try:
        with tempfile.TemporaryDirectory() as folder:
            page = Path(folder) / "frontier.html"
            write(result, page)
            driver.get(page.as_uri())
            driver.find_element(By.ID, f"point-{click}").click()
            driver.save_screenshot(str(target))
    finally:
        driver.quit()
    print(f"wrote {target}")


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    adult = frontier(read_csv(DATA / "adult" / "adult.csv"),
                     Config(qi=["sex", "age", "race", "marital-status"], suppression=0.01,
                            hierarchy_dir=str(DATA / "adult"),
                                keep_unnamed=True), "highest", 2, 50, input_path="adult.csv")
    shoot(adult, IMAGES / "frontier_adult.png", 2)
    sys.path.insert(0, str(REPO))
    from experiments.common import load_cargo  # the 3,942 records (the file's last line is all commas)

    dataset = load_cargo()
    cargo = frontier(dataset.table, dataset.config(25), "average", 2, 50, input_path="c2k_data_comma.csv")
    shoot(cargo, IMAGES / "frontier_cargo25.png", len(cargo["points"]) // 2)


if __name__ == "__main__":
    main()
