"""Reading the model's JSON: tolerant of wrapping, strict about what must be there."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr_core.errors import ResponseParseError
from rr_core.parsing import (
    ANSWER_SCHEMA,
    RETRIEVAL_SCHEMA,
    extract_json,
    parse_answer,
    parse_retrieval,
    schema_for,
)

ANSWER = {"question": "What is the fee?", "answer": "4.2 million euros", "page": 7}


def test_bare_json_answer() -> None:
    parsed = parse_answer(json.dumps(ANSWER))
    assert (parsed.question, parsed.answer, parsed.page_number) == (
        "What is the fee?",
        "4.2 million euros",
        7,
    )


@pytest.mark.parametrize(
    "wrapped",
    [
        "```json\n{body}\n```",
        "```\n{body}\n```",
        "```JSON {body}```",
        "Here is the answer:\n```json\n{body}\n```\nHope that helps.",
        "Sure! {body} Let me know if you need more.",
        "The JSON you asked for: {body}",
        "{body}\n\nNote: the page is my best guess.",
        "[{body}]",
    ],
)
def test_fenced_and_prose_wrapped_json(wrapped: str) -> None:
    parsed = parse_answer(wrapped.replace("{body}", json.dumps(ANSWER)))
    assert parsed.answer == "4.2 million euros" and parsed.page_number == 7


def test_prose_with_a_stray_brace_before_the_json() -> None:
    text = 'I considered {pages} then decided: {"answer": "Paris", "page": "3"}'
    assert parse_answer(text).page_number == 3


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (7, 7),
        ("7", 7),
        ("page 7", 7),
        ("Page 7.", 7),
        (7.0, 7),
        ("n/a", None),
        ("N/A", None),
        (None, None),
        (True, None),
        (7.5, None),
        ([7], None),
    ],
)
def test_page_forms(page: object, expected: int | None) -> None:
    parsed = parse_answer(json.dumps({**ANSWER, "page": page}))
    assert parsed.page_number == expected


def test_missing_page_means_no_citation() -> None:
    parsed = parse_answer(json.dumps({"answer": "Paris"}))
    assert parsed.page_number is None and parsed.answer == "Paris"


@pytest.mark.parametrize(
    ("answer", "expected"), [(None, "n/a"), (["a", "b"], "a; b"), ("  padded ", "padded"), (42, "42")]
)
def test_answer_values_become_text(answer: object, expected: str) -> None:
    assert parse_answer(json.dumps({**ANSWER, "answer": answer})).answer == expected


def test_missing_answer_key_is_a_parse_error() -> None:
    raw = json.dumps({"question": "q", "page": 3})
    with pytest.raises(ResponseParseError) as info:
        parse_answer(raw)
    assert info.value.raw == raw
    assert "answer" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "I cannot find the answer in the document.",
        "",
        "{not json}",
        "```json\n{'answer': 1}\n```",
        "[1, 2, 3]",
        "null",
    ],
)
def test_non_json_is_a_parse_error_that_keeps_the_raw_text(text: str) -> None:
    with pytest.raises(ResponseParseError) as info:
        parse_answer(text)
    assert info.value.raw == text
    with pytest.raises(ResponseParseError):
        parse_retrieval(text)


def test_parse_error_message_quotes_the_start_of_the_reply() -> None:
    with pytest.raises(ResponseParseError, match="I cannot find"):
        parse_answer("I cannot find the answer in the document.")


# ---- Retrieval ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        ([3, 1, 2], [3, 1, 2]),
        (["3", "page 1", 2.0], [3, 1, 2]),
        ("3, 5 and 9", [3, 5, 9]),
        (4, [4]),
        ([3, "n/a", None, 5], [3, 5]),
        ([], []),
        (None, []),
    ],
)
def test_retrieval_page_forms(pages: object, expected: list[int]) -> None:
    parsed = parse_retrieval(json.dumps({"question": "q", "pages": pages}))
    assert parsed.pages == expected


def test_retrieval_tolerates_a_near_miss_key() -> None:
    assert parse_retrieval('{"question": "q", "page_numbers": [4, 2]}').pages == [4, 2]
    assert parse_retrieval('```json\n{"relevant_pages": ["4"]}\n```').pages == [4]


def test_retrieval_without_pages_is_a_parse_error() -> None:
    # An answer-shaped reply to a retrieval prompt is not "no page is relevant".
    raw = '{"question": "q", "answer": "4.2 million euros"}'
    with pytest.raises(ResponseParseError) as info:
        parse_retrieval(raw)
    assert info.value.raw == raw


@given(st.lists(st.integers(1, 10_000), max_size=20), st.sampled_from(["", "Sure: ", "```json\n"]))
def test_retrieval_keeps_order_of_any_page_list(pages: list[int], prefix: str) -> None:
    suffix = "\n```" if prefix.startswith("```") else ""
    text = prefix + json.dumps({"question": "q", "pages": pages}) + suffix
    assert parse_retrieval(text).pages == pages


def test_extract_json_prefers_the_whole_text_then_fences_then_the_first_object() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('text {"a": 3} more {"a": 4}') == {"a": 3}


def test_schemas_by_task() -> None:
    assert schema_for("retrieve") is RETRIEVAL_SCHEMA and schema_for("answer") is ANSWER_SCHEMA
    assert set(ANSWER_SCHEMA["required"]) == {"question", "answer", "page"}
    assert set(RETRIEVAL_SCHEMA["required"]) == {"question", "pages"}


@pytest.mark.parametrize(
    ("pages", "expected"),
    [(7.0, [7]), (7, [7]), ({"page": 3}, [3]), ([{"page": 3}, {"page_number": "5"}], [3, 5]), (True, [])],
)
def test_retrieval_pages_in_odd_shapes_never_crash(pages, expected) -> None:
    import json

    assert parse_retrieval(json.dumps({"question": "q", "pages": pages})).pages == expected
