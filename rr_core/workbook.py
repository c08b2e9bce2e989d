"""Excel workbooks in which text from a document, a checklist or a model stays text.

openpyxl reads a string that starts with "=" as a formula and "#N/A" as an error value. Here
every text cell is typed as text (a string is never run, whatever it starts with) and kept
verbatim: where a spreadsheet would read it as a formula when typed in, the cell carries the
quote-prefix style (Excel's "entered with a leading apostrophe"), not an apostrophe in the text.
Each sheet's header row is frozen and filters are on its first table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rr_core.exports import formula_like
from rr_core.untrusted import plain_name

if TYPE_CHECKING:
    from openpyxl import Workbook
    from openpyxl.worksheet.worksheet import Worksheet

# What XML 1.0 (so a workbook) cannot hold: control characters other than tab, LF and CR.
_NOT_IN_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_ERROR_VALUES = frozenset(("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"))
# Excel refuses these in a sheet's name, and a name longer than 31 characters.
_NOT_IN_TITLE = re.compile(r"[\[\]:*?/\\\x00-\x1f]")


def cell_text(value: object) -> object:
    """A value as a cell can hold it: a character a workbook cannot carry (a control character
    other than tab and line breaks) becomes U+FFFD; anything else is kept as it is."""
    return _NOT_IN_XML.sub("\ufffd", value) if isinstance(value, str) else value


def sheet_title(text: str) -> str:
    """A valid sheet name for ``text``: no characters Excel refuses, no bidi controls, at most
    31 characters, not wrapped in apostrophes."""
    title = " ".join(_NOT_IN_TITLE.sub(" ", plain_name(text)).split()).strip("'").strip()[:31].strip()
    return title or "Sheet"


def finish_workbook(book: Workbook) -> None:
    """Make every text cell text (never a formula or an error value) and each sheet a table: the
    header row frozen, filters on the first block of rows, a valid and unique name."""
    taken: set[str] = set()
    for sheet in book.worksheets:
        title, n = sheet_title(sheet.title), 1
        while title.casefold() in taken:
            n += 1
            title = f"{sheet_title(sheet.title)[: 31 - len(str(n)) - 1]} {n}"
        taken.add(title.casefold())
        if sheet.title != title:
            sheet.title = title
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, str):
                    cell.data_type = "s"
                    if formula_like(cell.value) or cell.value.strip() in _ERROR_VALUES:
                        cell.quotePrefix = True
        _make_table(sheet)


def _make_table(sheet: Worksheet) -> None:
    """Freeze row 1 and put filters on the rows down to the first empty one."""
    if sheet.max_row < 1 or sheet.max_column < 1 or all(c.value in (None, "") for c in sheet[1]):
        return
    sheet.freeze_panes = "A2"
    last = 1
    for values in sheet.iter_rows(min_row=2, values_only=True):
        if all(v in (None, "") for v in values):
            break
        last += 1
    end = sheet.cell(row=last, column=sheet.max_column).coordinate
    sheet.auto_filter.ref = f"A1:{end}"
