"""A reviewer's decisions on grid cells, and the grid as the reviewer left it.

An analyst walks the cells worth checking (confidence ``check``, and ``none``: not found) and,
for each, accepts the engine's answer, corrects it (the right answer, and where it stands: a page
and a quote), or says the document does not state it. A decision is kept per (owner, document,
question), so it holds wherever that cell appears: in this grid, in the next run of it, under
another method. It wins over the engine's answer in the grid, the exports and the scores.

Everything here is pure: the store keeps decisions (``ReviewDecisionStore``), the screen makes
them, and these functions apply them to cells and turn reviewed cells into an answer key.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from rr_core.plans import Citation
from rr_core.review.columns import Column, typed_answer
from rr_core.review.grid import AnswerKey, Cell, ReviewPlan, is_right, question_key
from rr_core.store.base import ABSENT, ACCEPTED, CORRECTED, DECISIONS, ReviewDecision

__all__ = [
    "ABSENT",
    "ACCEPTED",
    "CORRECTED",
    "DECISIONS",
    "ReviewDecision",
    "answer_key_csv",
    "apply_decisions",
    "band",
    "needs_check",
    "reviewed_words",
    "to_check",
]

# How far to trust a cell, as the grid sorts and filters it: "" (not assessed) sorts with high.
BANDS = ("high", "check", "none")
BAND_LABELS = {"high": "high", "check": "check this", "none": "not found"}
ABSENT_SHOWN = "not in the document (reviewer)"


def band(cell: Cell) -> str:
    """The cell's confidence band for sorting and filtering: high, check or none ("" counts as
    high: not assessed, nothing special shown); a failed cell is "none"."""
    if cell.error:
        return "none"
    return cell.confidence if cell.confidence in BANDS else "high"


def needs_check(cell: Cell) -> bool:
    """Whether the "To check" queue walks this cell: assessed ``check`` or ``none``, not failed."""
    return cell.error is None and cell.confidence in ("check", "none")


def to_check(cells: Sequence[Cell], role: str | None = None) -> list[Cell]:
    """The queue: the answers to check first (quick to confirm or correct: the quote is there to
    read), then the cells not found (the pages to read); each part lowest score first, then by
    document and column (the same order however the cells arrived)."""
    mine = [c for c in cells if needs_check(c) and (role is None or c.role == role)]
    return sorted(
        mine,
        key=lambda c: (
            c.confidence != "check",
            c.score if c.score is not None else 0.5,
            c.document,
            c.document_sha256,
            c.column,
        ),
    )


def decision_for(decisions: Mapping[tuple[str, str], ReviewDecision], cell: Cell) -> ReviewDecision | None:
    """The decision that applies to a cell, if any."""
    return decisions.get((cell.document_sha256, question_key(cell.question)))


def index_decisions(decisions: Iterable[ReviewDecision]) -> dict[tuple[str, str], ReviewDecision]:
    """Decisions by where they apply (the last one given wins)."""
    return {d.key: d for d in decisions}


def apply_decisions(
    plan: ReviewPlan,
    cells: Sequence[Cell],
    decisions: Iterable[ReviewDecision],
    key: AnswerKey | None = None,
) -> list[Cell]:
    """The cells as the reviewer left them: each decided cell carries the decision (its answer,
    page and quote for a correction; "not in the document" for an absence), who made it and when,
    and, against the answer key, right or wrong for what it now says. Undecided cells unchanged."""
    by = index_decisions(decisions)
    return [_decided(plan.columns[c.column], c, by.get((c.document_sha256, question_key(c.question))), key)
            for c in cells]  # fmt: skip


def _decided(column: Column, cell: Cell, decision: ReviewDecision | None, key: AnswerKey | None) -> Cell:
    if decision is None:
        return cell
    reviewed = replace(
        cell, reviewed_by=decision.owner, reviewed_at=decision.decided_at, decision=decision.decision
    )
    if decision.decision == ACCEPTED:
        return reviewed
    citations: tuple[Citation, ...] = ()
    if decision.decision == ABSENT:
        stated, raw = False, ""
    else:
        stated, raw = True, decision.answer
        citations = (
            (Citation(page=decision.page, quote=decision.quote, quote_check="unchecked"),)
            if decision.page is not None or decision.quote
            else ()
        )
    typed = typed_answer(column, raw, stated=stated)
    shown = ABSENT_SHOWN if not stated else typed.shown
    accepted = key.lookup(cell.document, column.question) if key is not None else None
    if accepted is None and cell.accepted:
        accepted = cell.accepted
    correct = (
        is_right(column, typed, raw, stated, accepted, absent_by="" if stated else "reviewer")
        if accepted is not None
        else None
    )
    return replace(
        reviewed,
        answer=shown,
        raw=raw,
        typed=typed.ok,
        found=stated,
        citations=citations,
        correct=correct,
        accepted=tuple(accepted or ()),
        error=None,
        error_kind=None,
        pages_to_read=() if stated else cell.pages_to_read,
        absent_by="reviewer" if not stated else "",
        support="unchecked",
        support_reason="",
    )


def reviewed_words(cell: Cell) -> str:
    """``reviewed by ana, 2026-11-28 15:40 UTC`` (and what was decided); "" for an undecided cell."""
    if not cell.decision:
        return ""
    when = cell.reviewed_at.replace("T", " ")[:16] + (" UTC" if cell.reviewed_at else "")
    what = {ACCEPTED: "accepted", CORRECTED: "corrected", ABSENT: "not in the document"}[cell.decision]
    return f"{what}: reviewed by {cell.reviewed_by or 'unknown'}" + (f", {when}" if when.strip() else "")


def answer_key_csv(cells: Sequence[Cell]) -> str:
    """The reviewed cells as an answer key (``document,question,answers``: what ``parse_answer_key``
    reads), so the same corpus can score another method or model. Only decided cells; an absence
    is written "not stated"."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["document", "question", "answers"])
    seen: set[tuple[str, str]] = set()
    for cell in cells:
        if not cell.decision:
            continue
        place = (cell.document_sha256, question_key(cell.question))
        if place in seen:  # the same cell under a second method: one row
            continue
        seen.add(place)
        answer = (cell.answer if cell.typed else cell.raw or cell.answer) if cell.found else "not stated"
        writer.writerow([cell.document, cell.question, answer.replace("|", "/").replace(";", ",")])
    return out.getvalue()
