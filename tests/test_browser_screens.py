"""The screens in real Chromium: the first paint's navigation, downloads, printed page labels.

Each test that needs the process's very first session starts its own server (Streamlit
treats the first script run of a process differently). Skipped when chromium or Playwright is
missing, unless ``RR_REQUIRE_BROWSER=1``. Screenshots go to ``artifacts/browser/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
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


def _unavailable(reason: str) -> None:
    if os.environ.get("RR_REQUIRE_BROWSER") == "1":
        pytest.fail(f"RR_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        return kit.chromium_path()
    except kit.BrowserUnavailable as exc:
        _unavailable(str(exc))
        raise AssertionError("unreachable") from exc


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    try:
        with kit.launch_chromium(chromium) as launched:
            yield launched
    except kit.BrowserUnavailable as exc:
        _unavailable(str(exc))


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
