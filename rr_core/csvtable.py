"""A CSV table a user gives (a playbook of questions, an answer key): read right, or refused
with one line that names the line at fault and what was expected.

The header says how the file is read: its delimiter is the one of ",", ";" or a tab that splits
it into known column names (a spreadsheet in a comma-decimal locale saves ";"), and each name is
matched through the table's aliases ("questions" is the question, "kind" the type). Refused: a
header in which two columns could be the same one, or that lacks a required column; a row with
more values than the header has columns (a comma inside a value not in quotes: ``USD 5,000,000``)
or fewer than its required ones; a quote left open (it would swallow the rest of the file).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rr_core.errors import ConfigError

DELIMITERS = (",", ";", "\t")
_SHOWN = {",": "a comma", ";": "a semicolon", "\t": "a tab"}
# A line that reads as a header rather than a question: short names, no question mark.
_NAME_LIKE = re.compile(r"^[^\W\d][\w .#/()-]{0,30}$")


@dataclass(frozen=True, slots=True)
class Row:
    """One row: the line it starts on (as the file numbers it, 1-based) and its values by column."""

    line: int
    values: dict[str, str]

    def get(self, column: str) -> str:
        """The row's value in ``column`` ("" when it has none)."""
        return self.values.get(column, "")


@dataclass(frozen=True, slots=True)
class Table:
    """A table as read: its columns (known names; "" for one the table does not use), its rows,
    and the delimiter its header was written with."""

    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    delimiter: str


def _name(field: str) -> str:
    return " ".join(field.strip().lower().replace("_", " ").split())


def _split(line: str, delimiter: str) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error:
        return [line]


def _header(line: str, aliases: Mapping[str, str]) -> tuple[str, list[str]] | None:
    """The delimiter that splits ``line`` into the most known column names, and the names (""
    for an unknown one); None when no delimiter gives one."""
    best: list[tuple[int, str, list[str]]] = []
    for delimiter in DELIMITERS:
        fields = _split(line, delimiter)
        names = [aliases.get(_name(f), "") for f in fields]
        known = sum(1 for n in names if n)
        if known:
            best.append((known, delimiter, names))
    if not best:
        return None
    best.sort(key=lambda b: -b[0])
    return best[0][1], best[0][2]


def looks_like_header(line: str) -> bool:
    """Whether a first line reads as a header (two or more short names, no question mark) rather
    than as a question."""
    for delimiter in DELIMITERS:
        fields = [f.strip() for f in _split(line, delimiter)]
        if len(fields) >= 2 and all(_NAME_LIKE.match(f) and len(f.split()) <= 4 for f in fields):
            return True
    return False


def read_table(
    text: str,
    *,
    name: str,
    aliases: Mapping[str, str],
    required: Sequence[str],
    expected: str,
) -> Table | None:
    """The table in ``text`` (a byte-order mark and blank lines before the header allowed), or
    None when its first line names no known column. ``aliases`` maps each accepted header name
    (lower case, single spaces) to its column; ``expected`` says in words what the header should
    be. ``ConfigError`` names the line at fault."""
    # Line ends as any system writes them (\r\n, and a lone \r of old Mac files) read as \n.
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return None
    found = _header(lines[start], aliases)
    if found is None:
        return None
    delimiter, columns = found
    first = start + 1  # the header's line, as the file numbers it
    given = [f.strip() for f in _split(lines[start], delimiter)]
    for column in dict.fromkeys(c for c in columns if c):
        same = [g for g, c in zip(given, columns, strict=True) if c == column]
        if len(same) > 1:
            raise ConfigError(
                f"{name}, line {first}: {' and '.join(repr(s) for s in same)} could both be the {column} "
                f"column; keep one. Expected {expected}."
            )
    missing = [c for c in required if c not in columns]
    if missing:
        raise ConfigError(
            f"{name}, line {first}: the header needs {', '.join(required)} (missing: {', '.join(missing)}). "
            f"Expected {expected}."
        )
    need = max(columns.index(c) for c in required) + 1
    reader = csv.reader(io.StringIO("".join(lines[start + 1 :])), delimiter=delimiter, strict=True)
    rows: list[Row] = []
    ended = 0  # the last line read, counted from the header
    while True:
        line = first + ended + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if "end of data" in str(exc):
                raise ConfigError(
                    f"{name}, line {line}: a quote opened on this line is never closed (it would take in the "
                    'rest of the file); expected a value in quotes to end with its own quote, as in "a, b"'
                ) from None
            raise ConfigError(
                f"{name}, line {first + reader.line_num}: not read as CSV ({exc}); expected a value in quotes "
                f"to end with a quote followed by {_SHOWN[delimiter]} or the end of the line"
            ) from None
        ended = reader.line_num
        if not any(f.strip() for f in fields):
            continue
        if len(fields) > len(columns) and any(f.strip() for f in fields[len(columns) :]):
            raise ConfigError(
                f"{name}, line {line}: {len(fields)} values where the header has {len(columns)} columns "
                f"({', '.join(given)}); a value that holds {_SHOWN[delimiter]} needs quotes around it, "
                'as in "USD 5,000,000"'
            )
        if len(fields) < need:
            raise ConfigError(
                f"{name}, line {line}: {len(fields)} value{'s' if len(fields) != 1 else ''} where "
                f"{need} are needed ({', '.join(given[:need])})"
            )
        values = {c: f.strip() for c, f in zip(columns, fields, strict=False) if c}
        rows.append(Row(line, values))
    return Table(tuple(columns), tuple(rows), delimiter)
