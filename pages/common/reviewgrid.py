"""What the Review screen shows of its grid: each cell's text and colour, one row per document.

Colour says one thing only: green is right and red is wrong *against an answer key*; without
one no cell is coloured by correctness, and a quote found on its page is provenance (the page
shown beside the answer), never green.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from pages.common.text import short
from rr_core.review import Cell, ReviewPlan, iter_grid

RIGHT_STYLE = "background-color: #d3f0d8"
WRONG_STYLE = "background-color: #f7d4d4"
FAILED_STYLE = "color: #a15c00"
NOT_STATED_STYLE = "color: #6b7280"
PENDING = "…"


def cell_text(cell: Cell | None) -> str:
    """The typed answer (with the page it cites), "not stated…", "failed", or … (not yet)."""
    if cell is None:
        return PENDING
    if cell.error:
        return "failed"
    page = next((c.page for c in cell.citations if c.page is not None), None)
    return cell.answer + (f"  · p. {page}" if page is not None else "")


def cell_style(cell: Cell | None, keyed: bool) -> str:
    """Green or red only against the answer key (``keyed``); grey for not stated, amber for failed."""
    if cell is None:
        return ""
    if cell.error:
        return FAILED_STYLE
    if keyed and cell.correct is True:
        return RIGHT_STYLE
    if keyed and cell.correct is False:
        return WRONG_STYLE
    return "" if cell.found else NOT_STATED_STYLE


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
