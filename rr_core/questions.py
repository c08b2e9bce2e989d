"""Questions as a user brings them: typed, one per line in a file, or a CSV with the known
answers and gold pages (``question,answers,gold_pages``; several answers or pages separated
by ``|`` or ``;``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rr_core.csvtable import looks_like_header, read_table
from rr_core.errors import ConfigError
from rr_core.metrics import mark_outcome
from rr_core.plans import Outcome


class Answered(Protocol):
    """Anything holding outcomes (a run's trace)."""

    @property
    def outcomes(self) -> list[Outcome]:
        """One outcome per question."""
        ...


MAX_QUESTIONS = 200
_SPLIT = re.compile(r"[|;]")


@dataclass(frozen=True, slots=True)
class Question:
    """A question, and where known its accepted answers and the page(s) that hold them."""

    text: str
    answers: tuple[str, ...] = ()
    gold_pages: tuple[int, ...] = ()


# The header names a questions file's columns may go by (lower case, "_" read as a space).
QUESTION_ALIASES = {
    "question": "question", "questions": "question", "query": "question",
    "answers": "answers", "answer": "answers", "accepted answers": "answers",
    "gold pages": "gold_pages", "gold page": "gold_pages", "pages": "gold_pages",
}  # fmt: skip
_EXPECTED = "a header question,answers,gold_pages (answers and gold_pages optional), or one question a line"


def parse_questions(text: str, *, name: str = "questions") -> list[Question]:
    """Questions from a file's text: CSV with a ``question`` header (the delimiter a comma, a
    semicolon or a tab, as the header is written), else one per line. ``ConfigError`` names
    the line at fault: a header that reads as one but names no question, a stray value, a quote
    left open, a gold page that is not a number."""
    text = text.lstrip("\ufeff")
    table = read_table(text, name=name, aliases=QUESTION_ALIASES, required=("question",), expected=_EXPECTED)
    out: list[Question] = []
    if table is None:
        lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if lines and looks_like_header(lines[0][1]):
            raise ConfigError(
                f"{name}, line {lines[0][0]}: {lines[0][1].strip()!r} reads as a header but names no question "
                f"column; expected {_EXPECTED}."
            )
        out = [Question(" ".join(line.split())) for _, line in lines]
    else:
        for row in table.rows:
            question = " ".join(row.get("question").split())
            if not question:
                continue
            answers = tuple(a.strip() for a in _SPLIT.split(row.get("answers")) if a.strip())
            pages: list[int] = []
            for p in _SPLIT.split(row.get("gold_pages").replace(",", ";")):
                if not p.strip():
                    continue
                if not p.strip().isdigit():
                    raise ConfigError(
                        f"{name}, line {row.line}: gold page {p.strip()!r} is not a page number."
                    )
                pages.append(int(p))
            out.append(Question(question, answers, tuple(pages)))
    if not out:
        raise ConfigError(f"{name} holds no question.")
    if len(out) > MAX_QUESTIONS:
        raise ConfigError(f"{name} holds {len(out)} questions; at most {MAX_QUESTIONS} at a time.")
    return out


def read_questions(path: Path) -> list[Question]:
    """Questions from a file (see ``parse_questions``)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the questions file {path}: {exc}") from None
    return parse_questions(text, name=path.name)


def mark_traces(traces: Sequence[Answered], questions: Sequence[Question]) -> None:
    """Where a question's right answers are known, mark each outcome right or wrong."""
    known = {" ".join(q.text.split()): q for q in questions if q.answers}
    for trace in traces:
        for outcome in trace.outcomes:
            q = known.get(" ".join(outcome.question.split()))
            if q is not None:
                mark_outcome(outcome, q.answers, q.gold_pages)
