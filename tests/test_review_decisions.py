"""A reviewer's decisions applied to grid cells (``rr_core.review.decisions``): a decision wins over
the engine's answer in the cell, its score and the exports, and the reviewed cells come out as an
answer key that the answer-key reader takes back and that scores the grid."""

from __future__ import annotations

from dataclasses import replace

from rr_core.plans import Citation
from rr_core.review import MAIN, AnswerType, Cell, Column, ReviewPlan, parse_answer_key, scores
from rr_core.review.columns import typed_answer
from rr_core.review.decisions import (
    ReviewDecision,
    answer_key_csv,
    apply_decisions,
    band,
    needs_check,
    reviewed_words,
    to_check,
)
from rr_core.review.export import review_csv
from rr_core.review.grid import ReviewEstimate, is_right
from rr_core.settings import RunSettings

LAW = Column("Which law governs?", AnswerType.TEXT)
TERMINATE = Column("May a party terminate for convenience?", AnswerType.YES_NO)
PLAN = ReviewPlan(
    columns=(LAW, TERMINATE),
    documents=(),
    settings=RunSettings(method="rr"),
    jobs=(),
    estimate=ReviewEstimate(),
)
KEY = parse_answer_key(
    "document,question,answers\n"
    "a.txt,Which law governs?,Delaware\n"
    "b.txt,Which law governs?,New York\n"
    "a.txt,May a party terminate for convenience?,Yes\n"
    "b.txt,May a party terminate for convenience?,No\n"
)


def _cell(document: str, column: int, answer: str, **triage: object) -> Cell:
    col = PLAN.columns[column]
    typed = typed_answer(col, answer, stated=True)
    accepted = KEY.lookup(document, col.question) or ()
    return replace(
        Cell(
            document=document, document_sha256=document * 8, column=column, question=col.question,
            type=col.type.value, role=MAIN, method="R&R", answer=typed.shown, raw=answer, typed=typed.ok,
            found=True, citations=(Citation(page=2, quote=f"… {answer} …", quote_check="verified"),),
            correct=is_right(col, typed, answer, True, accepted), accepted=accepted,
        ),
        **triage,  # type: ignore[arg-type]
    )  # fmt: skip


def _grid() -> list[Cell]:
    return [
        _cell("a.txt", 0, "Delaware", confidence="high", score=0.9),
        _cell("b.txt", 0, "Ohio", confidence="check", score=0.3, confidence_reason="Baseline says New York"),
        _cell("a.txt", 1, "Yes", confidence="check", score=0.5),
        _cell("b.txt", 1, "Yes", confidence=""),
    ]


def test_the_queue_holds_the_answers_to_check_then_the_cells_not_found_least_sure_first() -> None:
    cells = _grid()
    absent = replace(cells[3], found=False, confidence="none", score=0.1, absent_by="reader")
    failed = replace(cells[0], error="boom", confidence="check")
    queue = to_check([*cells[:3], absent, failed])
    assert [c.key for c in queue] == [cells[1].key, cells[2].key, absent.key]
    assert [band(c) for c in (cells[0], cells[1], absent, cells[3], failed)] == [
        "high",
        "check",
        "none",
        "high",
        "none",
    ]
    assert not needs_check(cells[3]) and not needs_check(failed)  # not assessed / failed: not queued


def test_decisions_win_over_the_engine_in_the_cell_the_scores_and_the_exports() -> None:
    cells = _grid()
    before = scores(PLAN, cells)[-1]
    assert (before.right, before.marked) == (2, 4)  # Ohio is wrong; b's "Yes" is wrong
    decisions = [
        ReviewDecision(document_sha256=cells[1].document_sha256, question=cells[1].question.upper(), decision="corrected",
                       answer="New York", page=5, quote="the laws of the State of New York", owner="ana",
                       decided_at="2026-11-28T15:40:00+00:00"),
        ReviewDecision(document_sha256=cells[3].document_sha256, question=cells[3].question, decision="absent",
                       owner="ana", decided_at="2026-11-28T15:41:00+00:00"),
        ReviewDecision(document_sha256=cells[2].document_sha256, question=cells[2].question, decision="accepted",
                       owner="bo", decided_at="2026-11-28T15:42:00+00:00"),
    ]  # fmt: skip
    decided = apply_decisions(PLAN, cells, decisions, KEY)
    assert decided[0] == cells[0]  # undecided: as the engine left it
    law = decided[1]
    assert (law.answer, law.found, law.correct, law.decision) == ("New York", True, True, "corrected")
    assert law.citations == (
        Citation(page=5, quote="the laws of the State of New York", quote_check="unchecked"),
    )
    assert reviewed_words(law) == "corrected: reviewed by ana, 2026-11-28 15:40 UTC"
    assert (decided[2].answer, decided[2].decision, decided[2].reviewed_by) == (
        cells[2].answer,
        "accepted",
        "bo",
    )
    # "Not in the document" on a yes/no column: the key's "No" is then right.
    absent = decided[3]
    assert (absent.found, absent.absent_by, absent.citations, absent.correct) == (False, "reviewer", (), True)
    after = scores(PLAN, decided)[-1]
    assert (after.right, after.marked) == (4, 4)
    exported = review_csv(PLAN, decided)
    assert "New York" in exported and "Ohio" not in exported


def test_the_reviewed_cells_export_as_an_answer_key_that_scores_the_grid() -> None:
    cells = _grid()
    decisions = [
        ReviewDecision(document_sha256=cells[1].document_sha256, question=cells[1].question, decision="corrected",
                       answer="New York | NY; State", owner="ana", decided_at="t"),
        ReviewDecision(document_sha256=cells[0].document_sha256, question=cells[0].question, decision="accepted",
                       owner="ana", decided_at="t"),
        ReviewDecision(document_sha256=cells[3].document_sha256, question=cells[3].question, decision="absent",
                       owner="ana", decided_at="t"),
    ]  # fmt: skip
    decided = apply_decisions(PLAN, cells, decisions)
    text = answer_key_csv([*decided, replace(decided[0], role="compare")])  # a second method: one row
    key = parse_answer_key(text)
    assert len(key) == 3  # the undecided cell is not in it
    assert key.lookup("a.txt", LAW.question) == ("Delaware",)
    assert key.lookup("b.txt", LAW.question) == ("New York / NY, State",)  # one answer, not three
    assert key.lookup("b.txt", TERMINATE.question) == ("not stated",)
    # Scoring the engine's own grid against the reviewers' key: the corrected cell is wrong.
    rescored = [
        replace(c, correct=is_right(PLAN.columns[c.column], typed_answer(PLAN.columns[c.column], c.raw, stated=c.found),
                                     c.raw, c.found, accepted))
        if (accepted := key.lookup(c.document, c.question)) is not None else replace(c, correct=None, accepted=())
        for c in cells
    ]  # fmt: skip
    overall = scores(PLAN, rescored)[-1]
    assert (overall.right, overall.marked) == (1, 3)
    assert [c.correct for c in rescored] == [True, False, None, False]
