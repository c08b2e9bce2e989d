"""Where the eye is, at 1440×900 and 1024×768, in real Chromium: a Review cell's details open in
a dialog over the grid (its heading inside the window, no scrolling), the grid at 1024 px keeps
the document's name pinned at left with three whole question columns beside it, and the
Document screen's reminder table fits its column (nothing cut, no sideways scroll).

Screenshots go to ``artifacts/browser/``. Skipped without chromium or Playwright, unless
``RR_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pages.common.reviewgrid import GRID_COLUMN_PX, GRID_FIRST_PX
from tests import browser_kit as kit
from tests.browser_kit import SMALL, VIEWPORT, settle

pytestmark = pytest.mark.browser

ARTIFACTS = kit.ROOT / "artifacts" / "browser"
ROW_PX = 35  # Streamlit's row height in a dataframe
SIZES = {"1440": VIEWPORT, "1024": SMALL}
# The headers of the grid's columns a user can see: the grid draws on a canvas and keeps an
# accessible table of the columns in view (whole or in part) beside it.
HEADERS_IN_VIEW = """() => [...document.querySelectorAll(
  '.st-key-review_grid_box [role="columnheader"]')].map(e => e.innerText.trim())"""


def _go(page: Any, screen: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=screen).click()


def _grid(page: Any) -> Any:
    return kit.main_area(page).locator('.st-key-review_grid_box [data-testid="stDataFrame"]')


def _sample_grid(page: Any, url: str) -> Any:
    """The Review screen with the sample corpus's grid run (the offline engine)."""
    from playwright.sync_api import expect

    page.goto(url)
    settle(page, kit.STARTUP_TIMEOUT_S * 1000)
    _go(page, "Review")
    settle(page)
    kit.main_area(page).get_by_role("button", name="Run the grid").click()
    grid = _grid(page)
    expect(grid).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
    settle(page)
    return grid


def _in_window(page: Any, box: dict[str, float] | None) -> bool:
    size = page.viewport_size
    return bool(
        box
        and box["y"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
    )


@pytest.mark.parametrize("size", list(SIZES))
def test_a_cells_details_open_in_view_over_the_grid(app_url: str, browser: Any, size: str) -> None:
    from playwright.sync_api import expect

    with kit.new_tab(browser, viewport=SIZES[size]) as page:
        grid = _sample_grid(page, app_url)
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        assert box
        # A click on the first document's first question, as a user does.
        page.mouse.click(box["x"] + GRID_FIRST_PX + GRID_COLUMN_PX / 2, box["y"] + ROW_PX * 1.5)
        dialog = page.get_by_role("dialog")
        expect(dialog).to_be_visible()
        settle(page)
        heading = dialog.get_by_role("heading", name=re.compile(r"· question 1$"))
        expect(heading).to_be_visible()
        assert _in_window(page, heading.bounding_box()), (heading.bounding_box(), page.viewport_size)
        details = dialog.locator(".st-key-review_cell")
        expect(details).to_contain_text("Which jurisdiction's law governs this agreement?")
        expect(details).to_contain_text("Answer:")
        expect(details).to_contain_text("Confidence:")
        expect(details.locator('[data-testid="stImageCaption"]')).to_contain_text("its quote highlighted")
        assert _in_window(page, details.get_by_text("Answer:").bounding_box())
        kit.shot(page, ARTIFACTS / f"review-cell-dialog-{size}.png", full=False)

        # Dismissed, it stays closed over the next rerun; the same cell clicked again opens it again.
        page.keyboard.press("Escape")
        expect(dialog).to_have_count(0)
        settle(page)
        kit.main_area(page).get_by_role("button", name="Run the grid").scroll_into_view_if_needed()
        expect(page.get_by_role("dialog")).to_have_count(0)
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        assert box
        page.mouse.click(box["x"] + GRID_FIRST_PX + GRID_COLUMN_PX / 2, box["y"] + ROW_PX * 1.5)
        expect(
            page.get_by_role("dialog").get_by_role("heading", name=re.compile(r"· question 1$"))
        ).to_be_visible()


def test_the_grid_at_1024_pins_the_document_and_shows_three_questions(app_url: str, browser: Any) -> None:
    with kit.new_tab(browser, viewport=SMALL) as page:
        grid = _sample_grid(page, app_url)
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        assert box
        # Three whole question columns beside the document's name, in the grid's width.
        assert box["width"] >= GRID_FIRST_PX + 3 * GRID_COLUMN_PX, box
        assert box["x"] + box["width"] <= SMALL["width"], box
        shown = page.evaluate(HEADERS_IN_VIEW)
        assert shown[0] == "Document" and len([h for h in shown if re.match(r"^\d+\. ", h)]) >= 3, shown
        kit.shot(page, ARTIFACTS / "review-grid-1024-start.png", full=False)
        # Scrolled to the right end, the document's name still shows at left (pinned).
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + ROW_PX * 1.5)
        page.mouse.wheel(2000, 0)
        page.wait_for_function(
            f"() => ({HEADERS_IN_VIEW})().some(h => h.startsWith('5. '))", timeout=kit.UI_TIMEOUT_MS
        )
        shown = page.evaluate(HEADERS_IN_VIEW)
        assert shown[0] == "Document" and not any(h.startswith("1. ") for h in shown), shown
        kit.shot(page, ARTIFACTS / "review-grid-1024-scrolled.png", full=False)


def _labelled_long_pdf(path: Path) -> Path:
    """Forty pages, front matter printed i and ii, then 1 to 38: long enough (about 17,000
    tokens) for R&R's default interval (10,000 tokens) to place a reminder."""
    import pymupdf

    from rr_core.documents import pdf_from_texts

    filler = (
        "The parties agree that the services described in this schedule are delivered in stages, each "
        "stage reviewed by both project managers before the next one begins, and that the records of "
        "each review are kept for six years at the supplier's main office. "
    )
    texts = ["Front matter: contents.", "Front matter: definitions."] + [
        f"Body page {n}. " + filler * 8 + (f"The deposit is {n * 100} euros." if n == 8 else "")
        for n in range(1, 39)
    ]
    with pymupdf.open(stream=pdf_from_texts(texts), filetype="pdf") as doc:
        doc.set_page_labels(
            [{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
             {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1}]
        )  # fmt: skip
        path.write_bytes(doc.tobytes())
    return path


@pytest.mark.parametrize("size", list(SIZES))
def test_the_document_screens_reminder_table_fits(
    app_url: str, browser: Any, tmp_path: Path, size: str
) -> None:
    from playwright.sync_api import expect

    pdf = _labelled_long_pdf(tmp_path / "labelled-long.pdf")
    with kit.new_tab(browser, viewport=SIZES[size]) as page:
        page.goto(app_url)
        settle(page, kit.STARTUP_TIMEOUT_S * 1000)
        main = kit.main_area(page)
        main.locator('[data-testid="stRadio"]').get_by_text("My file", exact=True).click()
        main.locator('[data-testid="stFileUploader"]').locator('input[type="file"]').set_input_files(str(pdf))
        expect(main.get_by_text(re.compile(r"labelled-long\.pdf\s*— 40 pages"))).to_be_visible(
            timeout=kit.RUN_TIMEOUT_MS
        )
        settle(page)
        question = main.get_by_label("Question", exact=True)
        question.fill("What is the deposit?")
        question.press("Control+Enter")
        settle(page)
        main.get_by_role("button", name="Run", exact=True).click()
        expect(main.get_by_role("heading", name="Results")).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        settle(page)
        _go(page, "Document")
        expect(main.get_by_role("heading", name="What the model saw")).to_be_visible()
        settle(page)
        # The cited page by its printed label, the PDF's own index beside it (body page 8 is PDF page 10).
        expect(main.get_by_text(re.compile(r"^p\. 8 \(PDF page 10 of 40\) · "))).to_be_visible()
        reminders = main.locator(".st-key-reminder_table table")
        expect(reminders).to_be_visible()
        reminders.scroll_into_view_if_needed()
        table = reminders.bounding_box()
        column = main.locator(".st-key-reminder_table").bounding_box()
        assert table and column
        # The table's right edge inside its column and the window, and nothing to scroll sideways.
        assert table["x"] + table["width"] <= column["x"] + column["width"] + 1, (table, column)
        assert table["x"] + table["width"] <= SIZES[size]["width"], table
        overflow = reminders.evaluate(
            """t => { let e = t; const out = [];
                 while (e && e.getAttribute('data-testid') !== 'stMain') {
                   if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
                     out.push([e.tagName, e.className, e.scrollWidth, e.clientWidth]);
                   e = e.parentElement; }
                 return out; }"""
        )
        assert overflow == [], overflow
        for header in ("reminder", "after page", "at token"):
            cell = reminders.get_by_role("columnheader", name=header)
            assert _in_window(page, cell.bounding_box()), header
        kit.shot(page, ARTIFACTS / f"document-reminders-{size}.png")
