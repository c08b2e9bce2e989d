"""In real Chromium: text from a document or a model never becomes a link.

Streamlit's Markdown (GitHub-flavoured) links plain ``https://…``, ``www.…`` and e-mail
addresses by itself, even when every punctuation mark is escaped; ``md`` must stop that. A
small script renders hostile text through ``md`` in every element the screens use for it, and
once raw (to show the check sees links at all). Skipped without chromium or Playwright, unless
``RR_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import browser_kit as kit

pytestmark = pytest.mark.browser

HOSTILE = (
    "See https://evil.example/a, HTTP://EVIL.example/b, www.evil.example/c, WWW.Evil.example, "
    "x@evil.example, mailto:y@evil.example, xmpp:z@evil.example/r, ftp://evil.example/f, "
    "[c](https://evil.example/d) <https://evil.example/e> javascript:alert(1)"
)
SCRIPT = f"""
import sys
sys.path.insert(0, {str(kit.ROOT)!r})
import streamlit as st
from pages.common.text import md, table
from rr_core.exports import md_escape

hostile = {HOSTILE!r}
with st.container(key="escaped"):
    st.markdown(md(hostile))
    st.caption(md(hostile))
    st.warning(md(hostile))
    st.error(md(hostile))
    st.info(md(hostile))
    st.markdown(table(["Answer"], [[hostile]]))
    st.markdown(md_escape(hostile))
    with st.expander(md(hostile), expanded=True):
        st.markdown("> " + md(hostile))
with st.container(key="raw"):
    st.markdown(hostile)
"""


def test_no_url_or_address_from_untrusted_text_becomes_a_link(tmp_path: Path) -> None:
    try:
        executable = kit.chromium_path()
    except kit.BrowserUnavailable as exc:
        if os.environ.get("RR_REQUIRE_BROWSER") == "1":
            pytest.fail(f"RR_REQUIRE_BROWSER=1 but {exc}", pytrace=False)
        pytest.skip(str(exc))
    script = tmp_path / "hostile.py"
    script.write_text(SCRIPT)
    with (
        kit.serve_app(tmp_path, script=script) as server,
        kit.launch_chromium(executable) as browser,
        kit.new_tab(browser) as page,
    ):
        page.goto(server.url)
        page.locator(".st-key-raw a[href]").first.wait_for()
        kit.settle(page)
        escaped = page.locator(".st-key-escaped")
        assert escaped.locator('[data-testid="stMarkdownContainer"]').count() >= 8
        assert escaped.inner_text().count("evil.example/a") >= 9  # shown, as text
        hrefs = [a.get_attribute("href") for a in escaped.locator("a[href]").all()]
        assert hrefs == []
        # The same text, not escaped, is linked: the check sees links when there are some.
        assert page.locator(".st-key-raw a[href]").count() >= 5
