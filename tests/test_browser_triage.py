"""Triage in real Chromium: an answer to check beside a settled one on Ask, and the Review screen's
To-check queue (its cell, the page with the quote highlighted, Accept / Correct / Not in the
document), at 1440×900 and 1024×768. Screenshots go to ``artifacts/browser/``.

How far to trust each answer is the engine's to say (``confidence`` and its reason, filled in by
the triage stage). So that this test shows the screens whatever the engine says today, the server
runs with a stand-in (a ``sitecustomize`` on its path) that marks answers by a fixed rule: on Ask,
Baseline's answer is "check" and the others "high"; in the grid, the second column is "check",
a cell found nothing is "none" (not found, pages 1 and 2 to read), the rest "high".
Skipped without chromium or Playwright, unless ``RR_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import browser_kit as kit
from tests.browser_kit import SMALL, VIEWPORT, settle

pytestmark = pytest.mark.browser
ARTIFACTS = kit.ROOT / "artifacts" / "browser"

STAND_IN = '''
"""The browser test's stand-in for the engine's triage (see tests/test_browser_triage.py)."""
import dataclasses

import rr_core.review as review
import rr_core.review.grid as grid

_cells_of = grid.cells_of


def _marked(cell):
    if cell.error:
        return cell
    if not cell.found:
        return dataclasses.replace(cell, confidence="none", score=0.0, absent_by="reader", pages_to_read=(1, 2))
    if cell.column == 1:
        return dataclasses.replace(cell, confidence="check", score=0.4,
                                   confidence_reason="the quote does not contain the answer (stand-in rule)")
    return dataclasses.replace(cell, confidence="high", score=0.9)


def cells_of(*args, **kwargs):
    return [_marked(c) for c in _cells_of(*args, **kwargs)]


grid.cells_of = review.cells_of = cells_of

import rr_core.workbench as workbench  # noqa: E402  (after the patch: it imports cells_of)

workbench.cells_of = cells_of
_ask = workbench.ask


def ask(*args, **kwargs):
    done = _ask(*args, **kwargs)
    for trace in done.traces:
        for outcome in trace.outcomes:
            if not outcome.found:
                continue
            if trace.method == "baseline":
                outcome.confidence, outcome.score = "check", 0.3
                outcome.confidence_reason = "R&R gives another answer (stand-in rule)"
            else:
                outcome.confidence, outcome.score = "high", 0.9
    return done


workbench.ask = ask
'''


@pytest.fixture(scope="module")
def app_url(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    hook = tmp_path_factory.mktemp("stand_in")
    (hook / "sitecustomize.py").write_text(STAND_IN)
    path = os.pathsep.join(p for p in (str(hook), str(kit.ROOT), os.environ.get("PYTHONPATH", "")) if p)
    try:
        with kit.serve_app(tmp_path_factory.mktemp("server"), env={"PYTHONPATH": path}) as server:
            yield server.url
    except kit.ServerFailed as exc:
        pytest.fail(str(exc), pytrace=False)


def _go(page: Any, screen: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=screen).click()


def _card(page: Any, name: str) -> Any:
    return (
        kit.main_area(page)
        .locator('[data-testid="stVerticalBlockBorderWrapper"], [data-testid="stVerticalBlock"]')
        .filter(has=page.get_by_role("heading", name=name, exact=True))
        .last
    )


def _shot_of(page: Any, parts: list[Any], path: Path) -> Path:
    """A screenshot of the smallest rectangle holding these elements (and a margin), the window
    made as tall as the screen's content for it (Streamlit scrolls inside the window), then restored."""
    path.parent.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    tall = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], int(tall))})
    page.evaluate("() => { document.querySelector('[data-testid=stMain]').scrollTop = 0; }")
    page.wait_for_selector(kit.STAPP, state="attached")
    boxes = [b for b in (part.bounding_box() for part in parts) if b]
    assert len(boxes) == len(parts), "an element to shoot has no box"
    left = max(min(b["x"] for b in boxes) - 8, 0)
    top = max(min(b["y"] for b in boxes) - 8, 0)
    right = max(b["x"] + b["width"] for b in boxes) + 8
    bottom = max(b["y"] + b["height"] for b in boxes) + 8
    page.screenshot(path=str(path), clip={"x": left, "y": top, "width": right - left, "height": bottom - top})
    page.set_viewport_size(size)
    return path


def test_an_answer_to_check_looks_different_from_a_settled_one_on_ask(app_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    with kit.new_tab(browser, viewport=VIEWPORT) as page:
        page.goto(app_url)
        settle(page, kit.STARTUP_TIMEOUT_S * 1000)
        kit.main_area(page).get_by_role("button", name="Run").click()
        expect(kit.main_area(page).get_by_role("heading", name="Results")).to_be_visible(
            timeout=kit.RUN_TIMEOUT_MS
        )
        settle(page)
        baseline, other = _card(page, "Baseline"), _card(page, "R&R")
        expect(baseline.get_by_text("check this")).to_be_visible()
        expect(baseline.get_by_text(re.compile("R&R gives another answer"))).to_be_visible()
        expect(other.get_by_text("check this")).to_have_count(0)
        # Provenance, not approval: "located", and no tick beside it.
        expect(kit.main_area(page).get_by_text(re.compile(r"Quote located on p\.")).first).to_be_visible()
        baseline.scroll_into_view_if_needed()
        a, b = baseline.bounding_box(), other.bounding_box()
        assert a and b and abs(a["y"] - b["y"]) < 40, "the two answers are not side by side"
        _shot_of(page, [baseline, other], ARTIFACTS / "triage-ask-check-beside-high-1440.png")


def _queue_shot(page: Any, width: int) -> None:
    from playwright.sync_api import expect

    main = kit.main_area(page)
    settle(page, kit.STARTUP_TIMEOUT_S * 1000)
    _go(page, "Review")
    settle(page)
    main.get_by_role("button", name="Run the grid").click()
    queue = main.locator(".st-key-review_queue")
    expect(queue).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
    settle(page)
    expect(queue).to_contain_text(re.compile("check this|Not found"))
    expect(queue.locator('[data-testid="stPlotlyChart"]')).to_be_visible()
    expect(queue.get_by_role("button", name=re.compile("^Accept"))).to_be_visible()
    expect(queue.get_by_role("button", name=re.compile("^Not in the document"))).to_be_visible()
    expect(queue.get_by_role("button", name=re.compile("^Correct"))).to_be_visible()
    queue.scroll_into_view_if_needed()
    box = queue.bounding_box()
    assert box and box["width"] <= width, box
    _shot_of(page, [queue], ARTIFACTS / f"triage-queue-{width}.png")
    grid = main.locator(".st-key-review_grid_box")
    expect(grid).to_be_visible()
    _shot_of(page, [grid], ARTIFACTS / f"triage-grid-{width}.png")
    # Accept by its keyboard shortcut: the queue goes on, and the grid says the cell was reviewed.
    # (The queue opens at its first cell not decided yet: a decision of an earlier session holds.)
    here = queue.get_by_text(re.compile(r"^\d+ of \d+ ·"))
    expect(here).to_be_visible()
    position = int(here.inner_text().split(" of ", 1)[0])
    here.click()  # the focus on the page, not in a field (a shortcut is not taken from a field)
    page.keyboard.press("a")
    expect(queue.get_by_text(re.compile(rf"^{position + 1} of \d+ ·"))).to_be_visible()
    settle(page)
    expect(queue).to_contain_text(re.compile(r"reviewed by local|check this|Not found"))


def test_the_to_check_queue_at_1440_and_1024(app_url: str, browser: Any) -> None:
    with kit.new_tab(browser, viewport=VIEWPORT) as page:
        page.goto(app_url)
        _queue_shot(page, VIEWPORT["width"])
    with kit.new_tab(browser, viewport=SMALL) as page:
        page.goto(app_url)
        _queue_shot(page, SMALL["width"])


def test_a_correction_takes_its_words_from_a_click_on_the_page(app_url: str, browser: Any) -> None:
    """Correct: type the right answer, click its place on the page; the clicked word's sentence
    becomes the correction's words, highlighted on the page, and the decision is kept."""
    from playwright.sync_api import expect

    with kit.new_tab(browser, viewport=VIEWPORT) as page:
        page.goto(app_url)
        main = kit.main_area(page)
        settle(page, kit.STARTUP_TIMEOUT_S * 1000)
        _go(page, "Review")
        settle(page)
        main.get_by_role("button", name="Run the grid").click()
        queue = main.locator(".st-key-review_queue")
        expect(queue).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        settle(page)
        here = queue.get_by_text(re.compile(r"^\d+ of \d+ ·"))
        position = int(here.inner_text().split(" of ", 1)[0])
        chart = queue.locator('[data-testid="stPlotlyChart"]')
        expect(chart).to_be_visible()
        chart.scroll_into_view_if_needed()
        points = chart.locator(".scatterlayer .point")
        expect(points.nth(5)).to_be_attached()
        # A word in the middle of the page's words: its centre, clicked as a reviewer would.
        target = points.nth(points.count() // 2)
        box = target.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        words = queue.get_by_label(re.compile("^Its words on the page"))
        expect(words).not_to_have_value("", timeout=kit.RUN_TIMEOUT_MS)
        picked = words.input_value()
        assert len(picked.split()) >= 2, picked
        settle(page)
        expect(queue).to_contain_text("your words highlighted")
        _shot_of(page, [queue], ARTIFACTS / "triage-correct-picked.png")
        queue.get_by_label(re.compile("^The right answer")).fill("Corrected in the browser")
        queue.get_by_role("button", name=re.compile("^Correct")).click()
        expect(queue.get_by_text(re.compile(rf"^{position + 1} of \d+ ·"))).to_be_visible(
            timeout=kit.RUN_TIMEOUT_MS
        )
        settle(page)
        expect(main.locator(".st-key-review_grid_box")).to_contain_text("Corrected in the browser")
        _shot_of(page, [queue], ARTIFACTS / "triage-correct-by-click.png")
