"""The Review screen in real Chromium: upload a corpus of generated contract PDFs with one
encrypted, one scanned (image-only) and one damaged (cut short) file, run the grid on the
offline engine, see the three problems listed with their messages and every other document
answered, select a cell and open it on the Document screen at its cited page.

Prints (does not assert) two timings for 24+ documents: the screen redrawn with the finished
grid (browser, ms) and a cell opened (the script run it triggers, ms: the server's time as the
browser sees it). Screenshots at 1440×900 and 1024×768 go to ``artifacts/browser/``.
Skipped without chromium or Playwright, unless ``RR_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from pages.common.reviewgrid import GRID_COLUMN_PX, GRID_FIRST_PX
from rr_core.documents import load_document, pdf_from_texts
from rr_core.errors import CorruptDocument
from rr_core.review.sample import sample_corpus
from tests import browser_kit as kit
from tests.browser_kit import SMALL, VIEWPORT, settle

pytestmark = pytest.mark.browser

ARTIFACTS = kit.ROOT / "artifacts" / "browser"
DOCUMENTS = 24
PROBLEMS = {  # file: (problem as listed, words of its message)
    "locked.pdf": ("encrypted", "encrypted"),
    "scanned.pdf": ("scanned (no text layer)", "text layer"),
    "damaged.pdf": ("damaged", "cut short"),
}
# Records when Streamlit's script run starts and ends (the app's data-test-script-state).
SCRIPT_TIMER = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  window.__runs = [];
  new MutationObserver(() => {
    window.__runs.push([app.getAttribute('data-test-script-state'), performance.now()]);
  }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """24 generated contracts as PDFs, and an encrypted, a scanned and a damaged one."""
    folder = tmp_path_factory.mktemp("corpus")
    sample = sample_corpus(DOCUMENTS, damaged=False)
    paths = []
    for item in sample.items:
        path = folder / item.name.replace(".txt", ".pdf")
        path.write_bytes(pdf_from_texts((item.data or b"").decode().split("\f"), title=item.name))
        paths.append(path)
    first = paths[0].read_bytes()
    with pymupdf.open(stream=first, filetype="pdf") as doc:
        (folder / "locked.pdf").write_bytes(
            doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
        )
        with pymupdf.open() as scan:  # each page an image of the page: no text layer
            for page in doc:
                blank = scan.new_page(width=page.rect.width, height=page.rect.height)
                blank.insert_image(blank.rect, pixmap=page.get_pixmap(dpi=60))
            (folder / "scanned.pdf").write_bytes(scan.tobytes())
    # Cut short before its first page: a longer cut may be repaired (and read, with a warning).
    damaged = first[:300]
    with pytest.raises(CorruptDocument):
        load_document(damaged, filename="damaged.pdf")
    (folder / "damaged.pdf").write_bytes(damaged)
    return [*paths, *(folder / name for name in PROBLEMS)]


def _script_ms(page: Any) -> float:
    """How long the last script run took, from its start to its end, as the browser saw it."""
    runs = page.evaluate("() => window.__runs")
    starts = [t for state, t in runs if state == "running"]
    ends = [t for state, t in runs if state == "notRunning"]
    assert starts and ends, runs
    return float(ends[-1] - starts[0])


ROW_PX = 35  # Streamlit's row height


def _grid(page: Any) -> Any:
    return kit.main_area(page).locator('.st-key-review_grid_box [data-testid="stDataFrame"]')


def _go(page: Any, screen: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=screen).click()


def test_review_a_corpus_with_three_bad_files_and_open_a_cell(
    app_url: str, browser: Any, corpus: list[Path]
) -> None:
    from playwright.sync_api import expect

    with kit.new_tab(browser, viewport=VIEWPORT) as page:
        page.goto(app_url)
        settle(page, kit.STARTUP_TIMEOUT_S * 1000)
        _go(page, "Review")
        main = kit.main_area(page)
        expect(main.get_by_role("heading", name=re.compile("^Review"))).to_be_visible()
        settle(page)
        main.locator('[data-testid="stRadio"]').get_by_text(re.compile("^Upload files")).click()
        settle(page)
        main.locator('[data-testid="stFileUploader"]').first.locator('input[type="file"]').set_input_files(
            [str(p) for p in corpus]
        )
        expect(main.get_by_text(re.compile(rf"^{DOCUMENTS} documents read"))).to_be_visible(
            timeout=kit.RUN_TIMEOUT_MS
        )
        settle(page)
        for name, (problem, words) in PROBLEMS.items():
            alert = main.locator('[data-testid="stAlert"]').filter(has_text=name)
            expect(alert).to_contain_text(f"{name} — {problem}")
            expect(alert).to_contain_text(words)
        expect(main.get_by_text("One pass for all questions:")).to_be_visible()
        kit.shot(page, ARTIFACTS / "review-corpus-1440.png")

        main.get_by_role("button", name="Run the grid").click()
        grid = _grid(page)
        expect(grid).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        settle(page)
        # Every readable document answered (the three bad files are not rows), none failed.
        summary = main.get_by_text(re.compile(r"cells answered"))
        expect(summary).to_contain_text(f"{DOCUMENTS * 5} of {DOCUMENTS * 5} cells answered")
        expect(summary).not_to_contain_text("failed")
        assert grid.bounding_box()["height"] > ROW_PX * 10
        kit.shot(page, ARTIFACTS / "review-grid-1440.png")

        # The screen redrawn with the finished grid: to another screen and back.
        _go(page, "History")
        settle(page)
        started = time.perf_counter()
        _go(page, "Review")
        expect(_grid(page)).to_be_visible()
        expect(main.get_by_text(re.compile(r"cells answered"))).to_be_visible()
        drawn_ms = (time.perf_counter() - started) * 1000
        settle(page)

        # Select a cell (the first document's governing law) as a user does: a click on it.
        page.evaluate(SCRIPT_TIMER)
        _grid(page).scroll_into_view_if_needed()
        box = _grid(page).bounding_box()
        assert box
        page.mouse.click(box["x"] + GRID_FIRST_PX + GRID_COLUMN_PX / 2, box["y"] + ROW_PX * 1.5)
        detail = page.get_by_role("dialog").locator(".st-key-review_cell")  # over the grid
        expect(detail).to_be_visible()
        settle(page)
        opened_ms = _script_ms(page)
        expect(detail).to_contain_text("Which jurisdiction's law governs this agreement?")
        expect(detail).to_contain_text("Quote check")
        print(
            f"\n[review timing] {DOCUMENTS} documents × 5 questions: screen redrawn with the finished grid "
            f"{drawn_ms:.0f} ms (browser); a cell opened {opened_ms:.0f} ms (script run, as the browser saw it)"
        )
        kit.shot(page, ARTIFACTS / "review-cell-1440.png")

        detail.get_by_role("button", name="Open in the Document screen").click()
        expect(main.get_by_role("heading", name="What the model saw")).to_be_visible()
        settle(page)
        expect(main.get_by_text("Opened from the Review grid")).to_be_visible()
        expect(main.locator('[data-testid="stImage"]').first).to_be_visible()
        caption = main.locator('[data-testid="stImageCaption"]').first
        expect(caption).to_contain_text("its quote highlighted")
        kit.shot(page, ARTIFACTS / "review-document-1440.png")

    with kit.new_tab(browser, viewport=SMALL) as small:
        small.goto(app_url)
        settle(small, kit.STARTUP_TIMEOUT_S * 1000)
        _go(small, "Review")
        settle(small)
        small_main = kit.main_area(small)
        small_main.get_by_role("button", name="Run the grid").click()
        expect(_grid(small)).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        settle(small)
        kit.shot(small, ARTIFACTS / "review-sample-1024.png")
