"""The output shapes a call asks for: wire schemas, tolerant parsing, strict where it matters."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr_core.errors import ResponseParseError
from rr_core.outputs import (
    MAX_CITATIONS,
    OUTPUTS,
    AnswerOut,
    ExtractionOut,
    MultiRetrievalOut,
    RetrievalOut,
    output_named,
)

ANSWER = {
    "question": "What is the fee?",
    "answer": "4.2 million euros",
    "page": 7,
    "quote": "The fee is 4.2 million euros.",
}


# ---- Wire schemas ---------------------------------------------------------------------


def test_every_shape_has_a_strict_wire_schema_naming_every_field() -> None:
    assert [cls.WIRE_NAME for cls in OUTPUTS] == [
        "answer",
        "retrieval",
        "retrieval_per_question",
        "extraction",
        "verification",
    ]
    for cls in OUTPUTS:
        schema = cls.WIRE_SCHEMA
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) == set(schema["properties"])
        assert output_named(cls.WIRE_NAME) is cls
    assert set(AnswerOut.WIRE_SCHEMA["required"]) == {"question", "answer", "found", "citations"}
    cited = AnswerOut.WIRE_SCHEMA["properties"]["citations"]["items"]
    assert cited["required"] == ["page", "quote"] and cited["additionalProperties"] is False
    assert set(RetrievalOut.WIRE_SCHEMA["required"]) == {"question", "pages"}
    assert MultiRetrievalOut.WIRE_SCHEMA["required"] == ["results"]
    item = MultiRetrievalOut.WIRE_SCHEMA["properties"]["results"]["items"]
    assert item["required"] == ["question", "pages"] and item["additionalProperties"] is False
    assert set(ExtractionOut.WIRE_SCHEMA["required"]) == {"relevant", "extracts", "answer"}
    with pytest.raises(KeyError):
        output_named("telepathy")


# ---- Answers ----------------------------------------------------------------------------


def test_bare_json_answer() -> None:
    parsed = AnswerOut.parse(json.dumps(ANSWER))
    assert (parsed.question, parsed.answer, parsed.page_number, parsed.quote) == (
        "What is the fee?",
        "4.2 million euros",
        7,
        "The fee is 4.2 million euros.",
    )


@pytest.mark.parametrize(
    "wrapped",
    ["```json\n{body}\n```", "Sure! {body} Let me know.", "[{body}]", "{body}\n\nNote: a guess."],
)
def test_wrapped_answers_parse(wrapped: str) -> None:
    parsed = AnswerOut.parse(wrapped.replace("{body}", json.dumps(ANSWER)))
    assert parsed.answer == "4.2 million euros" and parsed.page_number == 7


@pytest.mark.parametrize(
    ("page", "expected"),
    [(7, 7), ("7", 7), ("page 7", 7), ("Page 7.", 7), (7.0, 7), ("n/a", None), ("N/A", None), (None, None),
     (True, None), (7.5, None), ([7], None)],
)  # fmt: skip
def test_page_forms(page: object, expected: int | None) -> None:
    assert AnswerOut.parse(json.dumps({**ANSWER, "page": page})).page_number == expected


def test_several_citations_each_with_its_page_and_quote() -> None:
    reply = {
        "question": "What are the exclusion criteria?",
        "answer": "pregnancy; prior surgery; age under 18",
        "found": True,
        "citations": [
            {"page": "6", "quote": "Pregnant or breastfeeding women."},
            {"page": 7, "quote": "Prior surgery on the knee."},
            {"page": "page 7", "quote": "Age under 18 years."},
            {"page": "7", "quote": "Prior surgery on the knee."},  # the same twice: kept once
        ],
    }
    parsed = AnswerOut.parse(json.dumps(reply))
    assert parsed.found is True
    assert [(c.page_number, c.quote) for c in parsed.citations] == [
        (6, "Pregnant or breastfeeding women."),
        (7, "Prior surgery on the knee."),
        (7, "Age under 18 years."),
    ]
    assert (parsed.page_number, parsed.quote) == (6, "Pregnant or breastfeeding women.")


def test_the_first_shape_reads_as_one_citation() -> None:
    parsed = AnswerOut.parse(json.dumps(ANSWER))
    assert parsed.found is True
    assert [(c.page_number, c.quote) for c in parsed.citations] == [(7, "The fee is 4.2 million euros.")]


@pytest.mark.parametrize(
    "reply",
    [
        {"answer": "n/a", "page": "n/a", "quote": ""},  # the first shape's way of saying it
        {"answer": "N/A.", "page": 3, "quote": "Some sentence."},
        {"answer": "not stated in the document", "found": False, "citations": []},
        {"answer": "Not stated in the document.", "citations": [{"page": 2, "quote": "x"}]},
        {"answer": "The fee", "found": False, "citations": [{"page": 2, "quote": "x"}]},
        {"answer": "The fee", "found": "false", "citations": []},
    ],
)
def test_not_stated_is_found_false_with_no_citation(reply: dict[str, object]) -> None:
    parsed = AnswerOut.parse(json.dumps(reply))
    assert parsed.found is False and parsed.citations == [] and parsed.page_number is None


@pytest.mark.parametrize(
    ("cited", "expected"),
    [
        ({"page": 3, "quote": "q"}, [(3, "q")]),  # one object, not a list
        ("A bare sentence.", [(None, "A bare sentence.")]),
        ([{"page_number": "4", "text": "t"}], [(4, "t")]),  # near-miss keys
        ([{"page": "n/a", "quote": "n/a"}, {"page": 2, "quote": ""}], [(2, "")]),  # empty ones dropped
        (None, []),
    ],
)
def test_citation_forms_are_read_tolerantly(cited: object, expected: list[tuple[int | None, str]]) -> None:
    parsed = AnswerOut.parse(json.dumps({"answer": "a", "found": True, "citations": cited}))
    assert [(c.page_number, c.quote) for c in parsed.citations] == expected


def test_a_runaway_list_of_citations_is_cut_and_says_so() -> None:
    many = [{"page": n, "quote": f"q{n}"} for n in range(1, 101)]
    parsed = AnswerOut.parse(json.dumps({"answer": "a", "citations": many}))
    assert len(parsed.citations) == MAX_CITATIONS and parsed.citations_cut == 100 - MAX_CITATIONS


def test_none_is_an_answer_not_a_refusal() -> None:
    parsed = AnswerOut.parse(json.dumps({"answer": "None", "citations": [{"page": 2, "quote": "No fees."}]}))
    assert parsed.found is True and len(parsed.citations) == 1


def test_missing_page_and_quote_mean_no_citation() -> None:
    parsed = AnswerOut.parse(json.dumps({"answer": "Paris"}))
    assert parsed.page_number is None and parsed.answer == "Paris" and parsed.quote == ""


@pytest.mark.parametrize(
    ("answer", "expected"), [(None, "n/a"), (["a", "b"], "a; b"), ("  padded ", "padded"), (42, "42")]
)
def test_answer_values_become_text(answer: object, expected: str) -> None:
    assert AnswerOut.parse(json.dumps({**ANSWER, "answer": answer})).answer == expected


def test_missing_answer_key_is_a_parse_error_that_keeps_the_raw_text() -> None:
    raw = json.dumps({"question": "q", "page": 3})
    with pytest.raises(ResponseParseError) as info:
        AnswerOut.parse(raw)
    assert info.value.raw == raw
    assert "answer" in str(info.value)


@pytest.mark.parametrize("cls", OUTPUTS)
@pytest.mark.parametrize("text", ["I cannot find the answer.", "", "{not json}", "[1, 2, 3]", "null"])
def test_non_json_is_a_parse_error_for_every_shape(cls: type, text: str) -> None:
    with pytest.raises(ResponseParseError) as info:
        cls.parse(text)  # type: ignore[attr-defined]
    assert info.value.raw == text


# ---- Retrieval ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pages", "expected"),
    [([3, 1, 2], [3, 1, 2]), (["3", "page 1", 2.0], [3, 1, 2]), ("3, 5 and 9", [3, 5, 9]), (4, [4]),
     ([3, "n/a", None, 5], [3, 5]), ([], []), (None, []), ({"page": 3}, [3]), (True, [])],
)  # fmt: skip
def test_retrieval_page_forms(pages: object, expected: list[int]) -> None:
    assert RetrievalOut.parse(json.dumps({"question": "q", "pages": pages})).pages == expected


def test_retrieval_tolerates_a_near_miss_key() -> None:
    assert RetrievalOut.parse('{"question": "q", "page_numbers": [4, 2]}').pages == [4, 2]
    assert RetrievalOut.parse('```json\n{"relevant_pages": ["4"]}\n```').pages == [4]


def test_retrieval_without_pages_is_a_parse_error() -> None:
    # An answer-shaped reply to a retrieval prompt is not "no page is relevant".
    raw = '{"question": "q", "answer": "4.2 million euros"}'
    with pytest.raises(ResponseParseError) as info:
        RetrievalOut.parse(raw)
    assert info.value.raw == raw


@given(st.lists(st.integers(1, 10_000), max_size=20), st.sampled_from(["", "Sure: ", "```json\n"]))
def test_retrieval_keeps_order_of_any_page_list(pages: list[int], prefix: str) -> None:
    suffix = "\n```" if prefix.startswith("```") else ""
    text = prefix + json.dumps({"question": "q", "pages": pages}) + suffix
    assert RetrievalOut.parse(text).pages == pages


# ---- Several questions in one retrieval ------------------------------------------------------


def test_multi_retrieval_reads_one_entry_per_question() -> None:
    parsed = MultiRetrievalOut.parse(
        json.dumps({"results": [{"question": 1, "pages": [3, 9]}, {"question": 2, "pages": ["12"]}]})
    )
    assert parsed.pages_for(2) == ({1: [3, 9], 2: [12]}, [], [])


def test_multi_retrieval_reports_missing_and_extra_entries() -> None:
    parsed = MultiRetrievalOut.parse(
        json.dumps(
            {
                "results": [
                    {"question": 3, "pages": [5]},
                    {"question": 7, "pages": [1]},  # there are only three questions
                    {"question": 0, "pages": [2]},
                    {"question": "Question 1", "pages": "4, 6"},
                ]
            }
        )
    )
    found, missing, extra = parsed.pages_for(3)
    assert found == {3: [5], 1: [4, 6]}
    assert missing == [2]
    assert sorted(extra) == [0, 7]


def test_multi_retrieval_merges_repeated_entries_for_one_question_without_duplicates() -> None:
    parsed = MultiRetrievalOut.parse(
        '{"results": [{"question": 1, "pages": [3, 4]}, {"question": 1, "pages": [4, 8, 8]}]}'
    )
    assert parsed.pages_for(1) == ({1: [3, 4, 8]}, [], [])


def test_multi_retrieval_tolerates_another_key_for_the_list() -> None:
    parsed = MultiRetrievalOut.parse('Here: {"answers": [{"question": "2", "pages": [5]}]}')
    assert parsed.pages_for(2) == ({2: [5]}, [1], [])


def test_multi_retrieval_reads_numbered_keys() -> None:
    # {"1": [3, 4], "2": [9]}: a common near miss, which the parser documents it reads.
    parsed = MultiRetrievalOut.parse('{"1": [3, 4], "2": [9]}')
    assert parsed.pages_for(2) == ({1: [3, 4], 2: [9]}, [], [])


def test_multi_retrieval_entry_without_a_question_number_is_a_parse_error() -> None:
    with pytest.raises(ResponseParseError):
        MultiRetrievalOut.parse('{"results": [{"question": "the first", "pages": [3]}]}')
    with pytest.raises(ResponseParseError):
        MultiRetrievalOut.parse('{"question": "q", "answer": "no list"}')


@given(
    st.integers(1, 8),
    st.lists(st.tuples(st.integers(-2, 12), st.lists(st.integers(1, 300), max_size=6)), max_size=12),
)
def test_multi_retrieval_pages_for_partitions_every_entry(
    count: int, entries: list[tuple[int, list[int]]]
) -> None:
    text = json.dumps({"results": [{"question": q, "pages": pages} for q, pages in entries]})
    found, missing, extra = MultiRetrievalOut.parse(text).pages_for(count)
    named = {q for q, _ in entries}
    assert set(found) == {q for q in named if 1 <= q <= count}
    assert missing == [q for q in range(1, count + 1) if q not in named]
    assert sorted(extra) == sorted(q for q, _ in entries if not 1 <= q <= count)
    for q, pages in found.items():
        expected = list(dict.fromkeys(p for e_q, e_pages in entries if e_q == q for p in e_pages))
        assert pages == expected


# ---- Extractions (BriefContext's map step) ----------------------------------------------------


def test_extraction_reads_extracts_with_their_pages() -> None:
    parsed = ExtractionOut.parse(
        json.dumps(
            {
                "relevant": True,
                "extracts": [
                    {"page": "4", "text": " The fee is 4.2 million. "},
                    {"page": "n/a", "text": "x"},
                ],
                "answer": "4.2 million",
            }
        )
    )
    assert parsed.relevant is True and parsed.answer == "4.2 million"
    assert [(e.page, e.text) for e in parsed.extracts] == [(4, "The fee is 4.2 million."), ("n/a", "x")]


@pytest.mark.parametrize(
    ("extracts", "expected"),
    [
        (None, []),
        ("", []),
        ("a bare sentence", [("n/a", "a bare sentence")]),
        ({"page": 2, "text": "t"}, [(2, "t")]),
    ],
)
def test_extraction_tolerates_odd_extract_shapes(
    extracts: object, expected: list[tuple[object, str]]
) -> None:
    parsed = ExtractionOut.parse(json.dumps({"relevant": True, "extracts": extracts, "answer": None}))
    assert [(e.page, e.text) for e in parsed.extracts] == expected
    assert parsed.answer == "n/a"


def test_an_empty_extraction_means_nothing_relevant() -> None:
    parsed = ExtractionOut.parse("{}")
    assert parsed.relevant is False and parsed.extracts == [] and parsed.answer == "n/a"


def test_a_page_that_is_not_a_page_number_is_said_not_dropped_silently() -> None:
    """3.5 is no page: it is neither read as page 3 (a wrong citation) nor dropped unseen."""
    retrieved = RetrievalOut.parse('{"pages": [3, 3.5, "7", "three", 99999]}')
    assert retrieved.pages == [3, 7, 99999] and retrieved.unusable == ["3.5", "three"]
    answer = AnswerOut.parse('{"answer": "x", "page": "3.5"}')
    assert answer.page_number is None and answer.citations[0].page_given == "3.5"
    assert AnswerOut.parse('{"answer": "x", "page": "n/a", "quote": "q"}').citations[0].page_given == ""
    assert AnswerOut.parse('{"answer": "x", "page": 4.0}').page_number == 4


def test_the_run_warns_about_pages_that_are_not_page_numbers() -> None:
    from conftest import planted_texts, word_counter

    from rr_core.documents import document_from_texts
    from rr_core.llm import ScriptedClient
    from rr_core.methods import get_method
    from rr_core.runs import run_plans
    from rr_core.settings import RunSettings

    document = document_from_texts("d.txt", planted_texts(), counter=word_counter())
    plan = get_method("icr").plan(document, "What is the fee?", RunSettings(method="icr"), word_counter())
    client = ScriptedClient(['{"pages": [2, 2.5]}', '{"answer": "a fee", "page": "2.5"}'])
    (trace,) = run_plans(document, [plan], client)
    assert trace.retrieved_pages == [2] and trace.page is None
    said = " ".join(trace.warnings)
    assert "'2.5' as pages" in said and "cited page '2.5', which is not a page number" in said
