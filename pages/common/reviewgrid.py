"""What the Review screen shows of its grid: each cell's text and colour, one row per document.

Colour says one thing only: green is right and red is wrong *against an answer key*; without
one no cell is coloured by correctness, and a quote located on its page is provenance (the page
shown beside the answer), never green. How far to trust a cell is said apart from that: a cell to
check is amber (text, and a light amber ground where no key colours it) and starts "check this";
a cell the reader did not find reads "Not found" with the pages to read; a reviewer's decision
is marked "reviewed". A cell not assessed ("" confidence) shows nothing special.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

from pages.common.text import short
from rr_core.review import Cell, ReviewPlan, iter_grid
from rr_core.review.decisions import band

RIGHT_STYLE = "background-color: #d3f0d8"
WRONG_STYLE = "background-color: #f7d4d4"
FAILED_STYLE = "color: #a15c00"
NOT_STATED_STYLE = "color: #6b7280"
CHECK_TEXT = "color: #8a4b00; font-style: italic"  # amber: check this (never green or red)
CHECK_GROUND = "background-color: #fff1d6"
PENDING = "…"
# The grid's column widths (px): the document's name (pinned at left), then each question. At
# 1024×768, beside the sidebar, the grid is about 564 px wide: the name and three questions fit
# (148 + 3 × 132 = 544, and room for a scroll bar); a cell's whole text is in its details.
GRID_FIRST_PX, GRID_COLUMN_PX = 148, 132
CHECK_MARK = "check this"
# The grid's filter: which cells it shows, by band (a reviewer's decision is a band of its own).
FILTERS = {"high": "high", "check": "check this", "none": "not found", "reviewed": "reviewed"}
ORDERS = {
    "corpus": "corpus order",
    "to-check": "most cells to check first",
    "score": "least sure first (lowest score)",
}


def pages_words(pages: Sequence[int], most: int = 3) -> str:
    """``p. 3, 7, 9`` (the first ``most``, best first)."""
    return "p. " + ", ".join(map(str, pages[:most])) + (" …" if len(pages) > most else "")


def cell_text(cell: Cell | None) -> str:
    """The typed answer (with the page it cites), "Not found · read p. …", the model's "not
    stated" labelled as its claim, "check this · …" for a cell to check, "failed", or … (not yet)."""
    if cell is None:
        return PENDING
    if cell.error:
        return "failed"
    if not cell.found and cell.absent_by == "reader":
        text = "Not found" + (f" · read {pages_words(cell.pages_to_read)}" if cell.pages_to_read else "")
    elif not cell.found and cell.absent_by == "model":
        text = "not stated (the model's claim)"
    else:
        page = next((c.page for c in cell.citations if c.page is not None), None)
        text = cell.answer + (f"  · p. {page}" if page is not None else "")
    if cell.decision:
        return "reviewed · " + text
    if cell.confidence == "check":
        return f"{CHECK_MARK} · " + text
    return text


def cell_style(cell: Cell | None, keyed: bool) -> str:
    """Green or red only against the answer key (``keyed``); amber for a cell to check (and for
    failed), grey for not stated or not found."""
    if cell is None:
        return ""
    if cell.error:
        return FAILED_STYLE
    check = cell.confidence == "check" and not cell.decision
    if keyed and cell.correct is True:
        return RIGHT_STYLE + ("; " + CHECK_TEXT if check else "")
    if keyed and cell.correct is False:
        return WRONG_STYLE + ("; " + CHECK_TEXT if check else "")
    if check:
        return CHECK_GROUND + "; " + CHECK_TEXT
    return "" if cell.found else NOT_STATED_STYLE


def cell_band(cell: Cell) -> str:
    """The filter's band of a cell: reviewed, else high (also when not assessed), check or none."""
    return "reviewed" if cell.decision else band(cell)


def headers(plan: ReviewPlan) -> list[str]:
    """The grid's column headers: number and question (cut short; the full one is the tooltip)."""
    return [f"{i + 1}. {short(c.question, 48)}" for i, c in enumerate(plan.columns)]


def grid_frame(
    plan: ReviewPlan, cells: Sequence[Cell], role: str, keyed: bool
) -> tuple[pd.DataFrame, list[list[str]]]:
    """The grid as shown: one row per document (its file name), one column per question; and
    each cell's style, row by row."""
    rows: list[list[str]] = []
    styles: list[list[str]] = []
    names: list[str] = []
    for f, row in iter_grid(plan, cells, role):
        names.append(f.name)
        rows.append([cell_text(c) for c in row])
        styles.append([cell_style(c, keyed) for c in row])
    frame = pd.DataFrame(rows, columns=headers(plan), index=pd.Index(names, name="Document"))
    return frame, styles


def grid_view(
    plan: ReviewPlan,
    cells: Sequence[Cell],
    role: str,
    keyed: bool,
    *,
    show: Collection[str] = tuple(FILTERS),
    order: str = "corpus",
) -> tuple[pd.DataFrame, list[list[str]], list[str]]:
    """The grid filtered and sorted by confidence: only the cells of the bands in ``show`` (the
    others blank; a row with none of them left out), rows in ``order`` (``ORDERS``); the frame,
    its styles and each row's document hash."""
    rows: list[tuple[tuple[float, ...], str, str, list[str], list[str]]] = []
    for position, (f, row) in enumerate(iter_grid(plan, cells, role)):
        kept = [c for c in row if c is not None and cell_band(c) in show]
        if len(kept) == 0 and len(show) < len(FILTERS):
            continue
        texts = [cell_text(c) if c is None or cell_band(c) in show else "" for c in row]
        looks = [cell_style(c, keyed) if c is None or cell_band(c) in show else "" for c in row]
        answered = [c for c in row if c is not None]
        if order == "to-check":
            rank: tuple[float, ...] = (
                -sum(1 for c in answered if band(c) != "high" and not c.decision),
                position,
            )
        elif order == "score":
            known = [c.score for c in answered if c.score is not None]
            rank = (min(known) if known else 1.0, position)
        else:
            rank = (position,)
        rows.append((rank, f.name, f.sha256, texts, looks))
    rows.sort(key=lambda r: r[0])
    frame = pd.DataFrame(
        [r[3] for r in rows], columns=headers(plan), index=pd.Index([r[1] for r in rows], name="Document")
    )
    return frame, [r[4] for r in rows], [r[2] for r in rows]
