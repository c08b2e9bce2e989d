"""Workbooks whose text stays text: no formula, no error value, verbatim, each sheet a table."""

from __future__ import annotations

import io

from openpyxl import Workbook, load_workbook

from rr_core.workbook import cell_text, finish_workbook, sheet_title


def test_text_that_reads_as_a_formula_or_an_error_is_text_verbatim_with_the_quote_prefix() -> None:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "=Answers"
    values = ["=2+5", "+1", "-3", "@SUM(A1)", "\uff1d1+1", "#N/A", "plain", "don't", 7, None]
    sheet.append([f"h{i}" for i in range(len(values))])
    sheet.append([cell_text(v) for v in values])
    sheet.append([cell_text("a\x0bb\x00c"), "x"])
    finish_workbook(book)
    out = io.BytesIO()
    book.save(out)
    back = load_workbook(io.BytesIO(out.getvalue()))["=Answers"]
    row = list(back.iter_rows(min_row=2, max_row=2))[0]
    assert [c.value for c in row] == values
    assert [c.data_type for c in row] == ["s"] * 8 + ["n", "n"]
    assert [bool(c.quotePrefix) for c in row[:8]] == [True] * 6 + [False, False]
    assert back["A3"].value == "a\ufffdb\ufffdc"  # what XML cannot carry, marked
    assert back.freeze_panes == "A2" and back.auto_filter.ref == "A1:J3"


def test_sheet_titles_are_valid_names() -> None:
    assert sheet_title("Q[1]: a/b?*\\c") == "Q 1 a b c"
    assert sheet_title("'\u202eevil'") == "\u2039U+202E\u203aevil"
    assert len(sheet_title("x" * 40)) == 31 and sheet_title("[]") == "Sheet"
