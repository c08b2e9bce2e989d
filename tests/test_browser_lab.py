"""The Lab in real Chromium at 1440 and 1024 pixels: the estimate (with what the sweep can
detect) and the results' first table (right, interval, cost, frontier) fit the window with no
sideways scroll; the plain-words sentences come before the statistics.

Skipped when chromium or Playwright is missing, unless ``RR_REQUIRE_BROWSER=1``. Screenshots go
to ``artifacts/browser/`` (or the folder named by ``RR_LAB_SHOTS``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests import browser_kit as kit
from tests.browser_kit import settle

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("RR_LAB_SHOTS") or kit.ROOT / "artifacts" / "browser")

# How far each element reaches sideways, against the window and its own visible width: a
# glide-data-grid table scrolls inside ``.dvn-scroller`` when its columns do not fit.
MEASURE = """() => {
  // The results' first table: the first one on the page (the batches' and the statistics'
  // tables are in closed expanders below or above it and draw no grid).
  const grid = document.querySelector('[data-testid="stMain"] [data-testid="stDataFrame"] .dvn-scroller');
  const root = document.scrollingElement;
  const main = document.querySelector('[data-testid="stMain"]');
  return {
    window: window.innerWidth,
    page: root.scrollWidth,
    main: main ? main.scrollWidth - main.clientWidth : 0,
    grid: grid ? grid.scrollWidth - grid.clientWidth : null,
    gridRight: grid ? grid.getBoundingClientRect().right : null,
  };
}"""


def _open_lab(page: Any, app_url: str) -> Any:
    from playwright.sync_api import expect

    page.goto(app_url)
    main = kit.main_area(page)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=kit.STARTUP_TIMEOUT_S * 1000
    )
    settle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Lab").click()
    expect(main.get_by_role("heading", name="Lab: does R&R help here?")).to_be_visible()
    settle(page)
    return main


@pytest.mark.parametrize("size", ["1440", "1024"])
def test_the_labs_estimate_and_first_results_fit_the_window(app_url: str, browser: Any, size: str) -> None:
    from playwright.sync_api import expect

    viewport = kit.VIEWPORT if size == "1440" else kit.SMALL
    with kit.new_tab(browser, viewport=viewport) as page:
        main = _open_lab(page, app_url)
        # Before spending: the cost and what the sweep can detect.
        expect(main.get_by_text(re.compile(r"Before running: \d+ trials"))).to_be_visible()
        expect(main.get_by_text(re.compile(r"^Can show: With \d+ questions"))).to_be_attached()
        for label in ("Now, list price, no cache", "Now, with prompt cache", "In batches, with prompt cache"):
            box = main.get_by_text(re.compile(rf"^{re.escape(label)}")).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], label
        measured = page.evaluate(MEASURE)
        assert measured["page"] <= measured["window"] and measured["main"] <= 1, measured
        kit.shot(page, SHOTS / f"lab_first_screen_{size}.png", full=False)
        # A small grid, run on the simulated reader (free).
        main.get_by_label("Repeats per cell").fill("2")
        main.get_by_label("Repeats per cell").press("Enter")
        settle(page)
        main.get_by_role("button", name="Run the measurement").click()
        expect(main.get_by_text("In plain words")).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        settle(page)
        plain = main.get_by_text("In plain words")
        plain.scroll_into_view_if_needed()
        table = main.locator('[data-testid="stDataFrame"]').first
        expect(table).to_be_visible()
        measured = page.evaluate(MEASURE)
        # The first table's columns (cost and frontier last) all fit: nothing scrolls sideways.
        kit.shot(page, SHOTS / f"lab_results_{size}.png", full=False)
        table.scroll_into_view_if_needed()
        kit.shot(page, SHOTS / f"lab_results_table_{size}.png", full=False)
        assert measured["grid"] is not None and measured["grid"] <= 1, str(measured)
        assert measured["gridRight"] <= measured["window"] and measured["page"] <= measured["window"], (
            measured
        )
        statistics = main.get_by_text("The statistics: counts, intervals and paired tests")
        assert plain.bounding_box()["y"] < statistics.bounding_box()["y"]  # type: ignore[index]
