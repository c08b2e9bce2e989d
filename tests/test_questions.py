"""Questions as users bring them: typed, one per line, or a CSV with answers and gold pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr_core.errors import ConfigError
from rr_core.metrics import mark_outcome
from rr_core.plans import Outcome
from rr_core.questions import MAX_QUESTIONS, Question, parse_questions, read_questions


def test_one_question_per_line_blank_lines_skipped() -> None:
    text = "What is the fee?\n\n   Who  signed\tit?  \nWhen does it end?\n"
    assert parse_questions(text) == [
        Question("What is the fee?"), Question("Who signed it?"), Question("When does it end?"),
    ]  # fmt: skip


def test_csv_with_answers_and_gold_pages() -> None:
    text = (
        "question,answers,gold_pages\n"
        '"What is the fee, in euros?",4.2 million euros|EUR 4.2 million,27\n'
        "Who signed?,Jane Doe,3;4\n"
        "Which law governs?,,\n"
        ',"ignored: no question",9\n'
    )
    assert parse_questions(text) == [
        Question("What is the fee, in euros?", ("4.2 million euros", "EUR 4.2 million"), (27,)),
        Question("Who signed?", ("Jane Doe",), (3, 4)),
        Question("Which law governs?"),
    ]


def test_csv_header_in_any_case_and_order_with_extra_columns() -> None:
    text = "Gold_Pages,notes,Question,Answers\n5,x,What is the fee?,4.2 million\n"
    assert parse_questions(text) == [Question("What is the fee?", ("4.2 million",), (5,))]


def test_a_bad_gold_page_names_its_line() -> None:
    with pytest.raises(ConfigError, match="line 3.*'p7'"):
        parse_questions("question,gold_pages\nA?,1\nB?,p7\n", name="qs.csv")


@pytest.mark.parametrize("text", ["", "\n  \n", "question,answers\n,x\n"])
def test_no_question_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="no question"):
        parse_questions(text)


def test_too_many_questions_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=str(MAX_QUESTIONS)):
        parse_questions("\n".join(f"Question {i}?" for i in range(MAX_QUESTIONS + 1)))


def test_read_questions_from_a_file_with_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "questions.csv"
    path.write_text("\ufeffquestion,answers,gold_pages\nWhat is the fee?,4.2 million,27\n", encoding="utf-8")
    assert read_questions(path) == [Question("What is the fee?", ("4.2 million",), (27,))]
    with pytest.raises(ConfigError, match="cannot read"):
        read_questions(tmp_path / "missing.txt")


def test_mark_outcome_records_the_known_answers_and_whether_the_answer_matches() -> None:
    right = Outcome(question="q", answer="The fee is 4.2 million euros.")
    mark_outcome(right, ["4.2 million euros"], [27])
    assert right.correct is True and right.gold_answers == ["4.2 million euros"] and right.gold_pages == [27]
    wrong = Outcome(question="q", answer="9 million dollars")
    mark_outcome(wrong, ["4.2 million euros"])
    assert wrong.correct is False
    unanswered = Outcome(question="q", answer=None)
    mark_outcome(unanswered, ["4.2 million euros"])
    assert unanswered.correct is False
    unknown = Outcome(question="q", answer="x")
    mark_outcome(unknown, [])
    assert unknown.correct is None


def test_not_stated_is_wrong_where_the_document_has_the_answer_and_right_where_it_has_none() -> None:
    # The model's words for "not stated" do not matter: found=false is scored as n/a.
    said = Outcome(question="q", answer="The document does not give the fee amount", found=False)
    mark_outcome(said, ["fee"])  # would match word for word if "not stated" were read as an answer
    assert said.correct is False
    nothing = Outcome(question="q")
    nothing.not_stated()
    mark_outcome(nothing, ["n/a"])
    assert nothing.correct is True and nothing.citations == []


def test_a_questions_csv_with_semicolons_or_other_header_names_is_read_right() -> None:
    for text in ("questions;answer;gold pages\nWhat is the fee?;4.2 million;5\n",
                 "Question\tAnswers\tpages\nWhat is the fee?\t4.2 million\t5\n"):  # fmt: skip
        assert parse_questions(text) == [Question("What is the fee?", ("4.2 million",), (5,))]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Topic,Notes\nWhat is the fee?,x\n", "qs.csv, line 1: 'Topic,Notes' reads as a header"),
        (
            "question,answers\nWhat is the fee?,EUR 4,2 million\n",
            "qs.csv, line 2: 3 values where the header has 2",
        ),
        (
            'question,answers\n"What is the fee?,x\nWho signed?,y\n',
            "qs.csv, line 2: a quote opened on this line",
        ),
    ],
)
def test_a_questions_csv_that_cannot_be_read_right_is_refused_naming_its_line(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_questions(text, name="qs.csv")
    assert str(caught.value).startswith(needle) and "\n" not in str(caught.value)
