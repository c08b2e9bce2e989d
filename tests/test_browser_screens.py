"""The screens in real Chromium: the first paint's navigation, downloads, printed page labels.

Each test that needs the process's very first session starts its own server (Streamlit
treats the first script run of a process differently). Skipped when chromium or Playwright is
missing, unless ``RR_REQUIRE_BROWSER=1``. Screenshots go to ``artifacts/browser/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import browser_kit as kit
from tests.browser_kit import settle

pytestmark = pytest.mark.browser

ARTIFACTS = kit.ROOT / "artifacts" / "browser"
SCREENS = ("Ask", "Document", "Lab", "Review", "History")

# Records the text of every sidebar navigation link the page ever shows, from the first
# mutation on: a name that paints for one frame and is replaced is still caught.
RECORD_NAV = """
window.__navSeen = new Set();
window.__navShot = false;
new MutationObserver(() => {
  for (const a of document.querySelectorAll('[data-testid="stSidebarNav"] a')) {
    window.__navSeen.add(a.innerText.trim());
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def test_first_paint_shows_only_the_screens_names(browser: Any, tmp_path: Path) -> None:
    """The first session of a fresh server never paints the file names (``ask``, ``document``…)
    that Streamlit's discovery of ``pages/`` would list before ``st.navigation`` runs."""
    try:
        server_cm = kit.serve_app(tmp_path / "server")
        server = server_cm.__enter__()
    except kit.ServerFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        with kit.new_tab(browser) as page:
            page.add_init_script(RECORD_NAV)
            page.goto(server.url, wait_until="commit")
            nav = page.locator('[data-testid="stSidebarNav"]')
            nav.wait_for(state="visible")
            kit.shot(page, ARTIFACTS / "first_paint_nav.png", full=False)  # as soon as it shows
            settle(page)
            seen = set(page.evaluate("[...window.__navSeen]"))
            kit.shot(page, ARTIFACTS / "first_paint_settled.png", full=False)
    finally:
        server_cm.__exit__(None, None, None)
    assert seen, "no navigation link was ever seen"
    assert seen <= set(SCREENS), f"the navigation painted {sorted(seen - set(SCREENS))}"
    assert set(SCREENS) <= seen


def _small_corpus(folder: Path, count: int = 3) -> list[Path]:
    from rr_core.documents import pdf_from_texts
    from rr_core.review.sample import sample_corpus

    paths = []
    for item in sample_corpus(count, damaged=False).items:
        path = folder / item.name.replace(".txt", ".pdf")
        path.write_bytes(pdf_from_texts((item.data or b"").decode().split("\f"), title=item.name))
        paths.append(path)
    return paths


def test_back_to_back_export_clicks_each_deliver_a_file(browser: Any, tmp_path: Path) -> None:
    """Ten clicks, alternating the Review screen's CSV and Excel exports without waiting for
    the app between them, give ten downloads (a click during the rerun the one before started
    used to find its file gone: ``MediaFileStorageError: Deferred file … not found``)."""
    import re

    from playwright.sync_api import expect

    corpus = _small_corpus(tmp_path)
    try:
        server_cm = kit.serve_app(tmp_path / "server")
        server = server_cm.__enter__()
    except kit.ServerFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        with kit.new_tab(browser) as page:
            page.goto(server.url)
            settle(page, kit.STARTUP_TIMEOUT_S * 1000)
            page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Review").click()
            main = kit.main_area(page)
            settle(page)
            main.locator('[data-testid="stRadio"]').get_by_text(re.compile("^Upload files")).click()
            settle(page)
            main.locator('[data-testid="stFileUploader"]').first.locator(
                'input[type="file"]'
            ).set_input_files([str(p) for p in corpus])
            expect(main.get_by_text(re.compile(rf"^{len(corpus)} documents read"))).to_be_visible(
                timeout=kit.RUN_TIMEOUT_MS
            )
            settle(page)
            main.get_by_role("button", name="Run the grid").click()
            csv = main.get_by_role("button", name="Download CSV")
            xlsx = main.get_by_role("button", name="Download Excel workbook")
            expect(xlsx).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
            settle(page)
            downloads: list[Any] = []
            page.on("download", lambda d: downloads.append(d))
            for i in range(10):
                (csv if i % 2 == 0 else xlsx).click()
            # Wait for the tenth file (or for the limit: then the count says what was lost).
            deadline_ms = kit.UI_TIMEOUT_MS
            waited = 0
            while len(downloads) < 10 and waited < deadline_ms:
                page.wait_for_timeout(250)  # the browser's event loop delivers the downloads
                waited += 250
            names = [d.suggested_filename for d in downloads]
            sizes = [Path(d.path()).stat().st_size for d in downloads]
            settle(page)
            kit.shot(page, ARTIFACTS / "review-exports-after-10-clicks.png", full=False)
    finally:
        server_cm.__exit__(None, None, None)
    log = server.log.read_text(errors="replace")
    assert "not found" not in log, kit.tail(server.log)
    assert sorted(names) == ["rr-review.csv"] * 5 + ["rr-review.xlsx"] * 5, names
    assert all(size > 0 for size in sizes), sizes


def _labelled_pdf(path: Path) -> Path:
    """Twelve pages: front matter printed i and ii, then 1 to 10 (PDF pages 3 to 12)."""
    import pymupdf

    from rr_core.documents import pdf_from_texts

    texts = ["Front matter one.", "Front matter two."] + [
        f"Body page {n}. The deposit on this page is {n * 100} euros." for n in range(1, 11)
    ]
    with pymupdf.open(stream=pdf_from_texts(texts), filetype="pdf") as doc:
        doc.set_page_labels(
            [{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
             {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1}]
        )  # fmt: skip
        path.write_bytes(doc.tobytes())
    return path


@pytest.mark.parametrize("size", ["1440", "1024"])
def test_the_document_screen_shows_printed_page_labels(browser: Any, tmp_path: Path, size: str) -> None:
    import re

    from playwright.sync_api import expect

    pdf = _labelled_pdf(tmp_path / "labelled.pdf")
    try:
        server_cm = kit.serve_app(tmp_path / "server")
        server = server_cm.__enter__()
    except kit.ServerFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        with kit.new_tab(browser, viewport=kit.VIEWPORT if size == "1440" else kit.SMALL) as page:
            page.goto(server.url)
            settle(page, kit.STARTUP_TIMEOUT_S * 1000)
            main = kit.main_area(page)
            main.locator('[data-testid="stRadio"]').get_by_text("My file", exact=True).click()
            main.locator('[data-testid="stFileUploader"]').locator('input[type="file"]').set_input_files(
                str(pdf)
            )
            expect(main.get_by_text(re.compile(r"labelled\.pdf\s*— 12 pages"))).to_be_visible(
                timeout=kit.RUN_TIMEOUT_MS
            )
            settle(page)
            question = main.get_by_label("Question", exact=True)
            question.fill("What is the deposit on printed page 8?")
            question.press("Control+Enter")
            settle(page)
            page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Document").click()
            expect(main.get_by_role("heading", name="What the model saw")).to_be_visible()
            settle(page)
            picker = main.get_by_label("PDF page (printed labels differ)")
            picker.fill("10")
            picker.press("Enter")
            settle(page)
            caption = main.get_by_text(re.compile(r"^p\. 8 \(PDF page 10 of 12\) · "))
            expect(caption).to_be_visible()
            kit.shot(page, ARTIFACTS / f"document-printed-labels-{size}.png")
    finally:
        server_cm.__exit__(None, None, None)
