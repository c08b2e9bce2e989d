"""The review grid's columns: a question, the type of answer it wants, and a short instruction.

A set of columns is a *playbook*: read from and written to CSV (``question,type`` as in
``shared/data/review/questions.csv``, optionally ``instruction`` and ``choices``). A column's
type says how the model is asked to answer (the wording added to the question) and how its
answer is read back: ``typed_answer`` turns an answer's text into the column's value (a yes or
no, an ISO date, a number, a list, one of the choices), or says that it could not.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from enum import Enum
from typing import Any

from rr_core.csvtable import looks_like_header, read_table
from rr_core.errors import ConfigError
from rr_core.outputs import says_not_stated

MAX_COLUMNS = 50


class AnswerType(Enum):
    """What a column's answer is."""

    TEXT = "text"
    YES_NO = "yes-no"
    DATE = "date"
    AMOUNT = "amount"
    NUMBER = "number"
    LIST = "list"
    CHOICE = "choice"

    @property
    def label(self) -> str:
        """As the screen names it."""
        return _LABELS[self]


_LABELS = {
    AnswerType.TEXT: "Free text",
    AnswerType.YES_NO: "Yes / no",
    AnswerType.DATE: "Date",
    AnswerType.AMOUNT: "Amount",
    AnswerType.NUMBER: "Number",
    AnswerType.LIST: "List",
    AnswerType.CHOICE: "One of given choices",
}
# Other spellings a CSV may use.
_ALIASES = {
    "yes/no": AnswerType.YES_NO, "yesno": AnswerType.YES_NO, "yes_no": AnswerType.YES_NO,
    "bool": AnswerType.YES_NO, "boolean": AnswerType.YES_NO, "free text": AnswerType.TEXT,
    "string": AnswerType.TEXT, "money": AnswerType.AMOUNT, "currency": AnswerType.AMOUNT,
    "integer": AnswerType.NUMBER, "float": AnswerType.NUMBER, "choices": AnswerType.CHOICE,
    "one of": AnswerType.CHOICE, "enum": AnswerType.CHOICE,
}  # fmt: skip

# What the question sent to the model says about the answer's form (the offline engine reads
# "yes or no" in a question as a yes/no question).
_ASKS = {
    AnswerType.TEXT: "",
    AnswerType.YES_NO: "Answer yes or no; if the document has no such provision, answer no.",
    AnswerType.DATE: "Answer with the date.",
    AnswerType.AMOUNT: "Answer with the amount and its currency.",
    AnswerType.NUMBER: "Answer with the number.",
    AnswerType.LIST: "Answer with every item, separated by semicolons.",
    AnswerType.CHOICE: "Answer with exactly one of: {choices}.",
}


def answer_type(name: str) -> AnswerType:
    """The type a CSV or the CLI names (``ConfigError`` lists the types otherwise)."""
    key = " ".join(name.strip().lower().split())
    try:
        return AnswerType(key)
    except ValueError:
        pass
    found = _ALIASES.get(key)
    if found is None:
        raise ConfigError(
            f"unknown answer type {name!r}; choose from: {', '.join(t.value for t in AnswerType)}"
        )
    return found


@dataclass(frozen=True, slots=True)
class Column:
    """One question of the grid, the type of its answer, and an optional instruction."""

    question: str
    type: AnswerType = AnswerType.TEXT
    instruction: str = ""
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ConfigError("a column needs a question")
        if self.type is AnswerType.CHOICE and len(self.choices) < 2:
            raise ConfigError(
                f"the column {self.question!r} is one of given choices: give two or more choices"
            )

    @property
    def prompt(self) -> str:
        """The question as sent to the model: the question, the form of the answer, the instruction."""
        asks = _ASKS[self.type].format(choices=", ".join(self.choices))
        return " ".join(part for part in (self.question.strip(), asks, self.instruction.strip()) if part)

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {"question": self.question, "type": self.type.value, "instruction": self.instruction,
                "choices": list(self.choices)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        """Read ``to_dict``'s output."""
        return cls(str(data["question"]), answer_type(str(data.get("type") or "text")),
                   str(data.get("instruction") or ""), tuple(str(c) for c in data.get("choices") or ()))  # fmt: skip

    @property
    def header(self) -> str:
        """The question with its type, as a table's header."""
        return f"{self.question} [{self.type.value}]"


# The header names a playbook's columns may go by (lower case, "_" read as a space).
COLUMN_ALIASES = {
    "question": "question", "questions": "question", "query": "question",
    "type": "type", "kind": "type", "answer type": "type", "types": "type",
    "instruction": "instruction", "instructions": "instruction",
    "choices": "choices", "choice": "choices", "options": "choices",
}  # fmt: skip
_EXPECTED = "a header question,type (instruction and choices optional), or one question a line"


def parse_columns(text: str, *, name: str = "columns") -> list[Column]:
    """Columns from a playbook CSV: a header with ``question`` and ``type`` (``instruction`` and
    ``choices`` optional; choices separated by ``|`` or ``;``; the delimiter a comma, a semicolon
    or a tab, as the header is written; "questions" and "kind" read as question and type), or
    one question a line (free text). ``ConfigError`` names the line at fault (as the file
    numbers it): an unknown header, a stray value, a quote left open."""
    text = text.lstrip("\ufeff")  # a byte-order mark, as spreadsheets save CSV
    table = read_table(text, name=name, aliases=COLUMN_ALIASES, required=("question",), expected=_EXPECTED)
    out: list[Column] = []
    if table is None:
        lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if lines and looks_like_header(lines[0][1]):
            raise ConfigError(
                f"{name}, line {lines[0][0]}: {lines[0][1].strip()!r} reads as a header but names no question "
                f"column; expected {_EXPECTED}."
            )
        out = [Column(" ".join(line.split())) for _, line in lines]
    else:
        for row in table.rows:
            question = " ".join(row.get("question").split())
            if not question:
                continue
            try:
                kind = answer_type(row.get("type") or "text")
                choices = tuple(c.strip() for c in re.split(r"[|;]", row.get("choices")) if c.strip())
                out.append(Column(question, kind, row.get("instruction"), choices))
            except ConfigError as exc:
                raise ConfigError(f"{name}, line {row.line}: {exc}") from None
    if not out:
        raise ConfigError(f"{name} holds no question.")
    if len(out) > MAX_COLUMNS:
        raise ConfigError(f"{name} holds {len(out)} questions; a grid takes at most {MAX_COLUMNS}.")
    seen: set[str] = set()
    for column in out:
        key = " ".join(column.question.lower().split())
        if key in seen:
            raise ConfigError(f"{name} asks {column.question!r} twice.")
        seen.add(key)
    return out


COLUMN_FIELDS = ("question", "type", "instruction", "choices")


def columns_from_rows(rows: Sequence[Mapping[str, object]], *, name: str = "columns") -> list[Column]:
    """Columns from a table's rows as typed (a screen's editor: ``question``, ``type``,
    ``instruction``, ``choices``; rows without a question left out), read as a playbook CSV
    is, with the same faults named (the row by its line: the header is line 1)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMN_FIELDS)
    for row in rows:
        values = ["" if row.get(f) is None else str(row.get(f)) for f in COLUMN_FIELDS]
        if values[0].strip():
            writer.writerow(values)
    return parse_columns(out.getvalue(), name=name)


def columns_csv(columns: Sequence[Column]) -> str:
    """The playbook as CSV (``parse_columns`` reads it back)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["question", "type", "instruction", "choices"])
    for c in columns:
        writer.writerow([c.question, c.type.value, c.instruction, " | ".join(c.choices)])
    return out.getvalue()


# ---- reading an answer as the column's type ------------------------------------------------------

_YES = re.compile(r"^\W*(yes|true|y)\b", re.I)
_NO = re.compile(r"^\W*(no|false|n|none)\b", re.I)
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for m in names
}  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+day)?(?:\s+of)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I
)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_SLASHED = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})\b")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "k": 1e3, "m": 1e6, "bn": 1e9}
_CURRENCY = re.compile(
    r"(US\$|\$|€|£|¥|\b(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|dollars?|euros?|pounds?(?: sterling)?|yen)\b)", re.I
)
# How a currency is shown: a symbol where there is one, else its ISO code.
_CURRENCY_SHOWN = {
    "us$": "$", "$": "$", "usd": "$", "dollar": "$", "dollars": "$", "€": "€", "eur": "€", "euro": "€",
    "euros": "€", "£": "£", "gbp": "£", "pound": "£", "pounds": "£", "pound sterling": "£",
    "pounds sterling": "£", "¥": "¥", "jpy": "¥", "yen": "¥",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Typed:
    """An answer read as its column's type: ``value`` is the canonical text ("Yes", an ISO
    date, a plain number…), ``""`` when the answer is not of that type (``raw`` keeps it)."""

    value: str
    raw: str
    ok: bool

    @property
    def shown(self) -> str:
        """What a cell shows: the typed value, else the answer as given."""
        return self.value if self.ok else self.raw


def read_date(text: str) -> date | None:
    """The first date written in ``text`` (month names, ISO, or m/d/y as in US contracts)."""
    found: list[tuple[int, date]] = []
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for m in pattern.finditer(text):
            a, b, y = m.groups()
            day, month = (a, b) if order == "dmy" else (b, a)
            made = _date(int(y), _MONTHS[month.lower().rstrip(".")], int(day))
            if made:
                found.append((m.start(), made))
    for m in _ISO.finditer(text):
        made = _date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if made:
            found.append((m.start(), made))
    for m in _SLASHED.finditer(text):
        month, day, year = (int(g) for g in m.groups())
        year = year + (2000 if year < 50 else 1900) if year < 100 else year
        made = _date(year, month, day)
        if made:
            found.append((m.start(), made))
    return min(found)[1] if found else None


_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?(?:\s+_+|\s+\[\s*\])?,?\s+(\d{{4}})\b", re.I)


def read_month(text: str) -> tuple[int, int] | None:
    """The (month, year) of the first date in ``text``, whether or not it gives the day
    ("April 2013", "April ___, 2013" as a contract leaves it blank)."""
    found = read_date(text)
    if found is not None:
        return found.month, found.year
    m = _MONTH_YEAR.search(text)
    return (_MONTHS[m.group(1).lower()], int(m.group(2))) if m else None


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def read_number(text: str) -> float | None:
    """The first number written in ``text``, with a scale word after it ("2.5 million")."""
    m = _NUMBER.search(text)
    if not m:
        return None
    try:
        value = float(m.group(0).replace(",", ""))
    except ValueError:
        return None
    after = text[m.end() : m.end() + 12].strip().lower()
    for word, factor in _SCALE.items():
        if re.match(rf"{word}\b", after):
            return value * factor
    return value


_SYMBOLS = ("$", "€", "£", "¥")


def _plain_number(value: float, *, cents: bool = False) -> str:
    if value == int(value):
        return f"{value:,.0f}"
    if cents and round(value, 2) == value:
        return f"{value:,.2f}"  # an amount's cents: $10,000.50
    return f"{value:,.4f}".rstrip("0").rstrip(".")


def typed_answer(column: Column, answer: str, *, stated: bool) -> Typed:
    """``answer`` read as ``column``'s type. Not stated: a yes/no column reads it as "No" (the
    question asks whether a provision exists), every other type as no value."""
    raw = " ".join(answer.split())
    kind = column.type
    if kind is AnswerType.YES_NO and says_not_stated(raw):
        stated = False  # "not stated" given as the answer: no such provision was found
    if not stated:
        if kind is AnswerType.YES_NO:
            return Typed("No", raw, True)
        return Typed("", raw, False)
    if kind is AnswerType.TEXT:
        return Typed(raw, raw, bool(raw))
    if kind is AnswerType.YES_NO:
        if _YES.match(raw):
            return Typed("Yes", raw, True)
        if _NO.match(raw):
            return Typed("No", raw, True)
        return Typed("", raw, False)
    if kind is AnswerType.DATE:
        found = read_date(raw)
        return Typed(found.isoformat(), raw, True) if found else Typed("", raw, False)
    if kind in (AnswerType.AMOUNT, AnswerType.NUMBER):
        number = read_number(raw)
        if number is None:
            return Typed("", raw, False)
        currency = _CURRENCY.search(raw) if kind is AnswerType.AMOUNT else None
        named_as = " ".join(currency.group(1).lower().split()) if currency else ""
        unit = _CURRENCY_SHOWN.get(named_as, named_as.upper())
        shown = _plain_number(number, cents=kind is AnswerType.AMOUNT)
        return Typed(f"{unit}{shown}" if unit in _SYMBOLS else f"{shown} {unit}".strip(), raw, True)
    if kind is AnswerType.LIST:
        # One item a line, or separated by semicolons or bullets, or "x, y and z"'s last "and".
        parts = [part for line in answer.splitlines() for part in re.split(r";|•|\band\b(?=[^;]*$)", line)]
        items = [" ".join(i.split()).strip(" .-*") for i in parts]
        items = [i for i in items if i]
        return Typed("; ".join(items), raw, bool(items))
    # one of the choices: the choice the answer names (the longest, when several match)
    low = raw.lower()
    named = [c for c in column.choices if re.search(rf"\b{re.escape(c.lower())}\b", low)]
    if not named:
        return Typed("", raw, False)
    return Typed(max(named, key=len), raw, True)
