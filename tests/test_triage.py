"""Triage end to end: "Not found" is never shown as absence or "No" in any output (JSON, CSV,
Excel, the CLI's text), and a grid's scores say what to rely on (answered, precision,
coverage, base rate, the high band, precision at coverage)."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook

from rr_core.cli import main
from rr_core.review import COMPARE, MAIN, AnswerType, Cell, Column, agree_cells, score_cells
from rr_core.review.grid import precision_at
from rr_core.review.sample import DAMAGED_NAME, sample_corpus
from tests.test_review_cli import run_json

ABSENCE_WORDS = ("not stated", "no such provision", "does not state")


# ---- scores on a small hand-made grid ------------------------------------------------------------------


def _cell(
    column: int, answer: str, correct: bool | None, key: str, *, score: float = 0.5, band: str = "check"
) -> Cell:
    found = correct is not None
    return Cell(
        document=f"d{score}-{answer}", document_sha256="x", column=column, question="q", type="yes-no",
        role="main", method="m", answer=answer if found else "Not found", raw=answer, typed=found,
        found=found, correct=correct, accepted=(key,), confidence=band if found else "none",
        score=score if found else 0.0,
    )  # fmt: skip


def test_scores_carry_answered_precision_coverage_base_rate_and_the_high_band() -> None:
    columns = [Column("Is it capped?", AnswerType.YES_NO)]
    cells = [
        _cell(0, "Yes", True, "Yes", score=0.9, band="high"),
        _cell(0, "Yes", True, "Yes", score=0.9, band="high"),
        _cell(0, "Yes", False, "No", score=0.7),
        _cell(0, "No", True, "No", score=0.6),
        _cell(0, "", None, "Yes"),  # nothing found: unanswered, not a "No"
        _cell(0, "", None, "Yes"),
    ]
    s = score_cells(cells, columns=columns)
    assert (s.marked, s.answered, s.right) == (6, 4, 3)
    assert s.precision == 3 / 4 and s.coverage == 4 / 6
    assert s.base_rate == 4 / 6  # always "Yes": right on 4 of the 6 keyed cells
    assert (s.high, s.high_right, s.high_precision) == (2, 2, 1.0)
    at = dict(s.at_coverage)
    assert at[0.5] == 2 / 3  # the 3 best-scored cells: two right, one wrong
    assert at[0.8] is None and at[1.0] is None  # fewer answered than that
    data = s.to_dict()
    for field in (
        "answered",
        "precision",
        "coverage",
        "base_rate",
        "high_precision",
        "precision_at_coverage",
    ):
        assert field in data
    assert data["precision_at_coverage"] == {"50%": 0.6667, "80%": None, "100%": None}


def test_precision_at_coverage_ranks_equal_scores_by_the_grids_order_not_by_arrival() -> None:
    """Two answered cells share the best score, one right and one wrong: which one the 50%
    cut keeps is the grid's order (document, column), the same whatever order they arrived
    in, so a summary summed up from the store a page at a time says what the screen says."""
    right = dataclasses.replace(_cell(0, "Yes", True, "Yes", score=0.8), document_sha256="a")
    wrong = dataclasses.replace(_cell(0, "Yes", False, "No", score=0.8), document_sha256="b")
    low = [
        dataclasses.replace(_cell(0, "No", True, "No", score=0.1), document_sha256=f"c{i}") for i in range(2)
    ]
    for order in ([right, wrong, *low], [wrong, right, *low], [*low, wrong, right]):
        assert precision_at(order, 0.25) == 1.0  # "a" before "b"
        assert score_cells(iter(order)).at_coverage == score_cells(order).at_coverage  # any iterable, once


def test_agreement_between_the_grid_and_the_comparison_moves_confidence() -> None:
    def cell(role: str, answer: str, *, score: float = 0.9, band: str = "high", column: int = 0) -> Cell:
        return Cell(
            document="a.pdf", document_sha256="a", column=column, question="q", type="text", role=role,
            method="Baseline" if role == COMPARE else "R&R", answer=answer, raw=answer, typed=True, found=True,
            support="supported", confidence=band, score=score,
        )  # fmt: skip

    same = agree_cells([cell(MAIN, "Texas"), cell(COMPARE, "Texas")])
    assert [c.confidence for c in same] == ["high", "high"] and same[0].score == 1.0
    differ = agree_cells([cell(MAIN, "Texas"), cell(COMPARE, "Ohio")])
    assert [(c.confidence, c.confidence_reason) for c in differ] == [
        ("check", "Baseline says Ohio"),
        ("check", "R&R says Texas"),
    ]
    alone = [cell(MAIN, "Texas", column=1), cell(COMPARE, "Ohio", column=2)]
    assert agree_cells(alone) == alone  # no other method on the same cell: unchanged


# ---- the sample corpus, offline, through the CLI ---------------------------------------------------------


@pytest.fixture
def sample_files(tmp_path: Path) -> dict[str, Path]:
    sample = sample_corpus()
    folder = tmp_path / "contracts"
    folder.mkdir()
    for item in sample.items:
        if item.name != DAMAGED_NAME:
            (folder / item.name).write_bytes(item.data)
    questions = io.StringIO()
    writer = csv.writer(questions)
    writer.writerow(["question", "type"])
    for c in sample.columns:
        writer.writerow([c.question, c.type.value])
    (tmp_path / "questions.csv").write_text(questions.getvalue(), encoding="utf-8")
    (tmp_path / "answers.csv").write_text(sample.answers_csv, encoding="utf-8")
    return {"contracts": folder, "questions": tmp_path / "questions.csv", "answers": tmp_path / "answers.csv"}


def _argv(files: dict[str, Path], *extra: str) -> list[str]:
    return [
        "review", str(files["contracts"]), "--questions", str(files["questions"]),
        "--answers", str(files["answers"]), "--processes", "1", *extra,
    ]  # fmt: skip


def _no_absence_claimed(text: str) -> None:
    low = text.lower()
    assert not any(w in low for w in ABSENCE_WORDS), text


def test_an_offline_review_never_shows_an_unfound_cell_as_absence_or_no(
    capsys: pytest.CaptureFixture[str], sample_files: dict[str, Path], tmp_path: Path
) -> None:
    out_csv, out_xlsx = tmp_path / "cells.csv", tmp_path / "cells.xlsx"
    data, _ = run_json(capsys, _argv(sample_files, "--csv", str(out_csv), "--xlsx", str(out_xlsx)))
    cells: list[dict[str, Any]] = data["cells"]
    unfound = [c for c in cells if not c["error"] and not c["found"]]
    found = [c for c in cells if not c["error"] and c["found"]]
    assert found and unfound, "the sample has answers the reader finds and some it does not"
    for c in unfound:
        assert c["answer"].startswith("Not found") and c["absent_by"] == "reader", c
        assert c["confidence"] == "none" and c["correct"] is None and c["citations"] == []
        if c["pages_to_read"]:
            assert c["answer"] == "Not found; pages to read: " + ", ".join(map(str, c["pages_to_read"]))
    for c in found:
        assert c["confidence"] in ("high", "check") and 0.0 <= c["score"] <= 1.0
        assert c["support"] in ("supported", "partial", "unsupported")
        if c["type"] == "yes-no" and c["answer"] == "No":
            assert c["citations"], "a No is an answer only with the clause that says so"
    # JSON scores: every column carries answered, precision, coverage and base rate
    for entry in [*data["scores"]["main"]["columns"], data["scores"]["main"]["all"]]:
        for field in (
            "answered",
            "precision",
            "coverage",
            "base_rate",
            "high_precision",
            "precision_at_coverage",
        ):
            assert field in entry
    # CSV: the same words, and "no (not found)" as the found column
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text(encoding="utf-8"))))
    for row in rows:
        _no_absence_claimed(row["answer"] + " " + row["found"])
        if row["found"] != "yes":
            assert row["found"] == "no (not found)" and row["answer"].startswith("Not found")
            assert row["confidence"] == "none"
        else:
            assert "verified" not in row["quote_check"] and "located" in row["quote_check"]
    scores_rows = list(
        csv.DictReader(io.StringIO((tmp_path / "cells.scores.csv").read_text(encoding="utf-8")))
    )
    assert scores_rows and all(r["base_rate"] != "" and r["coverage"] != "" for r in scores_rows)
    # Excel: no cell of any sheet claims absence; the scores sheet is there
    book = load_workbook(out_xlsx)
    assert "Scores" in book.sheetnames
    for sheet in book.worksheets:
        if sheet.title == "Costs and settings":
            continue
        for line in sheet.iter_rows(values_only=True):
            for value in line:
                if isinstance(value, str):
                    _no_absence_claimed(value)
    answers = [list(r) for r in book["Answers"].iter_rows(values_only=True)]
    shown = [v for r in answers[1:] for v in r if isinstance(v, str)]
    assert any(v.startswith("Not found") for v in shown) == bool(unfound)
    assert shown.count("No") == sum(1 for c in found if c["answer"] == "No")  # a "No" only where stated
    # the CLI's text: the same
    code = main(_argv(sample_files))
    text, err = capsys.readouterr()
    assert code == 0, err
    _no_absence_claimed(text)
    assert "base rate" in text and "precision" in text and "coverage" in text
    if unfound:
        assert "Not found" in text
