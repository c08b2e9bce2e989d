"""Reading a model's JSON tolerantly: the first object in prose or fences, pages as ints.

The output shapes built on these helpers are tested in ``test_outputs.py``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr_core.errors import ResponseParseError
from rr_core.parsing import NA, coerce_page, extract_json, page_list

BODY = {"question": "What is the fee?", "answer": "4.2 million euros", "page": 7}


def test_extract_json_prefers_the_whole_text_then_fences_then_the_first_object() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('text {"a": 3} more {"a": 4}') == {"a": 3}


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
    assert extract_json(wrapped.replace("{body}", json.dumps(BODY))) == BODY


def test_prose_with_a_stray_brace_before_the_json() -> None:
    text = 'I considered {pages} then decided: {"answer": "Paris", "page": "3"}'
    assert extract_json(text) == {"answer": "Paris", "page": "3"}


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
        extract_json(text)
    assert info.value.raw == text


def test_parse_error_message_quotes_the_start_of_the_reply() -> None:
    with pytest.raises(ResponseParseError, match="I cannot find"):
        extract_json("I cannot find the answer in the document.")


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (7, 7),
        ("7", 7),
        ("page 7", 7),
        ("Page 7.", 7),
        (7.0, 7),
        ("n/a", NA),
        ("N/A", NA),
        (None, NA),
        (True, NA),
        (7.5, NA),
        ([7], NA),
    ],
)
def test_coerce_page_forms(page: object, expected: int | str) -> None:
    assert coerce_page(page) == expected


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
        (7.0, [7]),
        ({"page": 3}, [3]),
        ([{"page": 3}, {"page_number": "5"}], [3, 5]),
        (True, []),
    ],
)
def test_page_list_forms_never_crash(pages: object, expected: list[int]) -> None:
    assert page_list(pages) == expected


@given(st.lists(st.integers(1, 10_000), max_size=20))
def test_page_list_keeps_the_order_of_any_list(pages: list[int]) -> None:
    assert page_list(pages) == pages
    assert page_list([str(p) for p in pages]) == pages
