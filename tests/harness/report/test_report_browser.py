"""report.html in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`, installed by
scripts/provision.sh) opens a copy of the page alone, as a reviewer opens one attached to a ticket.

What a parser cannot see is checked here: every plot decodes and is laid out at a visible size, nothing but the
page itself is fetched, and the verdicts are drawn in their colours. A full-page screenshot of each page is kept
in the test artifacts folder (`test-artifacts/`, or `$PULP_SYNC_TEST_ARTIFACTS`) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from harness.analysis.derived import save_run_outputs
from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant
from harness.report.render import render
from harness.results.folder import Results
from tests.harness.helpers import make_run
from tests.harness.results.test_outputs import PNG_SIGNATURE

CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(os.environ.get("PULP_SYNC_TEST_ARTIFACTS", Path(__file__).parents[3] / "test-artifacts"))
COLOURS = {"slower": "rgba(204, 34, 34, 1)", "no-difference": "rgba(119, 119, 119, 1)"}
"""The report's CSS colours (#c22 red, #777 grey) as the browser computes them."""

IMAGES = """return Array.from(document.images).map(image => {
    const box = image.getBoundingClientRect();
    return {alt: image.alt, complete: image.complete, width: image.naturalWidth, height: image.naturalHeight,
            shownWidth: box.width, shownHeight: box.height, scheme: image.currentSrc.split(":")[0]};
});"""
"""Each image as the browser has it: decoded (natural size), laid out (shown size), and where it came from."""


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    """Headless Chromium through chromedriver from Debian's packages, never a driver fetched at run time."""
    assert Path(CHROMEDRIVER).is_file(), f"{CHROMEDRIVER} is missing: run scripts/provision.sh"
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def _results(ratio: float) -> Results:
    """Two variants over two manifests, ten interleaved rounds, `slow` taking `ratio` times `base`'s time."""
    spec = Experiment(name="browser", variants=(InlineVariant("base", "asyncio"), InlineVariant("slow", "asyncio")),
                      manifests=("100", "200"), runs=10, warmup=0, baseline="base")
    runs = []
    for manifest, seconds in (("100", 1.0), ("200", 2.0)):
        for round_ in range(1, 11):
            jitter = 1 + 0.01 * ((round_ * 7) % 5 - 2)
            runs += [make_run("base", seconds * jitter, round_, manifest),
                     make_run("slow", seconds * jitter * ratio * (1 + 0.002 * (round_ % 3 - 1)), round_, manifest)]
    sizes = {"files": 100, "bytes": 10_000_000}
    return Results(experiment=spec, runs=runs, manifests={manifest: sizes for manifest in spec.manifests})


def _lone_copy(tmp_path: Path, ratio: float) -> tuple[Path, list[str]]:
    """report.html rendered in one folder and copied alone into an empty one; and the plots it should show."""
    made = tmp_path / "made"
    made.mkdir()
    save_run_outputs(made, _results(ratio))
    rendered = render(made)
    alone = tmp_path / "attached"
    alone.mkdir()
    return Path(shutil.copy(rendered.report, alone)), rendered.plots


def _screenshot(browser: webdriver.Chrome, name: str) -> Path:
    """The whole page as a PNG in the artifacts folder (the window grown to the page's height first)."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"report-{name}.png"
    assert browser.save_screenshot(str(path)), path
    return path


@pytest.mark.parametrize(("name", "ratio", "verdict"), [("slowdown", 1.2, "slower"), ("a-a", 1.0, "no-difference")])
def test_the_page_alone_shows_every_plot_and_its_verdict(
        browser: webdriver.Chrome, tmp_path: Path, name: str, ratio: float, verdict: str) -> None:
    page, plots = _lone_copy(tmp_path, ratio)
    assert [p.name for p in page.parent.iterdir()] == ["report.html"]
    browser.get(page.as_uri())
    assert browser.title.startswith("browser"), browser.title

    images = browser.execute_script(IMAGES)
    assert sorted(image["alt"] for image in images) == sorted(plots) and "ratios" in plots
    for image in images:
        assert image["complete"] and image["width"] > 100 and image["height"] > 100, f"broken plot: {image}"
        assert image["shownWidth"] > 100 and image["shownHeight"] > 100, f"plot laid out invisibly: {image}"
        assert image["scheme"] == "data", image
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(entry => entry.name)")
    assert fetched == [], f"the page fetched more than itself: {fetched}"

    shown = browser.find_elements(By.CSS_SELECTOR, f"#headline .{verdict}")
    assert shown and all(element.is_displayed() for element in shown), browser.page_source[:2000]
    assert {element.value_of_css_property("color") for element in shown} == {COLOURS[verdict]}
    assert not browser.find_elements(By.CSS_SELECTOR, "#headline .faster")

    screenshot = _screenshot(browser, name)
    assert screenshot.read_bytes()[:8] == PNG_SIGNATURE and screenshot.stat().st_size > 50_000
