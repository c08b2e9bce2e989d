"""Text from documents, models and servers is shown as text: never as live Markdown.

Streamlit renders Markdown (links, images, ``:red[...]`` colours, ``:material/...:`` icons)
in captions, error boxes and most labels. ``md`` escapes every character that starts such
markup, so an answer that carries ``[click](https://…)`` shows those characters, not a link;
and it breaks up the plain URLs and e-mail addresses that Markdown would link by itself.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from rr_core.untrusted import unlinked

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~$:<&])")


def md(text: object) -> str:
    """``text`` escaped for Streamlit Markdown: shown literally, never as markup, and no URL or
    e-mail address in it becomes a link (escaping alone does not stop GFM's autolinks)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", unlinked(str(text)))


def plural(n: int, noun: str) -> str:
    """``1 page``, ``2 pages``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def short(text: str, limit: int = 70) -> str:
    """One line, cut at ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def when(iso: str) -> str:
    """An ISO time as ``2026-11-23 10:42 UTC``."""
    return iso.replace("T", " ")[:16] + (" UTC" if iso.endswith(("+00:00", "Z")) else "")


def table(columns: Sequence[str], rows: Sequence[Sequence[object]], *, numeric: Collection[str] = ()) -> str:
    """A Markdown table, every cell shown literally: numbers with thousands separators, None
    blank, the ``numeric`` columns right-aligned.

    For the small tables of the first screens: ``st.dataframe`` loads pandas and pyarrow on
    first use (0.9 s of a fresh server's first open) and its grid's code in the browser.
    """

    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value:,}"
        return md(value).replace("\n", " ")

    head = "| " + " | ".join(md(c) for c in columns) + " |"
    rule = "| " + " | ".join("---:" if c in numeric else "---" for c in columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])
