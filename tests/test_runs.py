"""Runs: every method end to end on the offline engine, faults through the scripted client,
and the executor (one bounded pool, events, plan order, quote and fit checks)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from conftest import (
    PAPER_METHODS,
    PLANTED_PAGE,
    PLANTED_QUESTION,
    planted_texts,
    small_settings,
    word_counter,
)

from rr_core.documents import Document, document_from_texts
from rr_core.errors import ConfigError, ProviderError, RateLimitError
from rr_core.llm import OfflineEngine, ScriptedClient
from rr_core.llm.base import LLMRequest
from rr_core.methods import method_names, plan_method
from rr_core.outputs import NOT_STATED, MultiRetrievalOut, RetrievalOut
from rr_core.plans import Plan
from rr_core.runs import TRACE_SCHEMA_VERSION, CallEvent, Executor, RunTrace, run_plans
from rr_core.settings import RunSettings

REMINDER_OPEN = "<INSTRUCTIONS_REMINDER>"
FACT = "4.2 million euros"
RETRIEVING = ("icr", "rr", "chunked-icr", "chunked-rr")


def answer_json(answer: str = FACT, page: object = PLANTED_PAGE, quote: str = "") -> str:
    return json.dumps({"question": PLANTED_QUESTION, "answer": answer, "page": page, "quote": quote})


def retrieval_json(pages: list[object]) -> str:
    return json.dumps({"question": PLANTED_QUESTION, "pages": pages})


def is_retrieval(request: LLMRequest) -> bool:
    return request.schema in (RetrievalOut, MultiRetrievalOut)


def by_schema(
    retrieve: Callable[[LLMRequest], str], answer: Callable[[LLMRequest], str]
) -> Callable[[LLMRequest], str]:
    return lambda request: retrieve(request) if is_retrieval(request) else answer(request)


def pages_of(request: LLMRequest) -> list[int]:
    assert request.layout is not None
    return [n for n, _ in request.layout.pages()]


def good_responder(request: LLMRequest) -> str:
    """Retrieves the gold page when the prompt holds it (else the first page) and answers."""
    if is_retrieval(request):
        pages = pages_of(request)
        return retrieval_json([PLANTED_PAGE] if PLANTED_PAGE in pages else pages[:1])
    return answer_json()


def plans_for(
    document: Document, *methods: str, question: str | list[str] = PLANTED_QUESTION, **changes: object
) -> list[Plan]:
    counter = word_counter()
    return [plan_method(document, question, small_settings(m, **changes), counter) for m in methods]


def run(
    document: Document, client: object, *methods: str, concurrency: int = 8, **changes: object
) -> list[RunTrace]:
    return run_plans(document, plans_for(document, *methods, **changes), client, concurrency=concurrency)  # type: ignore[arg-type]


# ---- The offline engine, end to end ----------------------------------------------------


def test_every_method_finds_the_planted_fact_offline(planted_document: Document) -> None:
    names = method_names()
    traces = run(planted_document, OfflineEngine(word_counter()), *names, gold_pages=(PLANTED_PAGE,))
    assert [t.method for t in traces] == names
    for trace in traces:
        assert trace.ok, (trace.method, trace.error)
        assert trace.is_llm is False and trace.provider == "offline"
        assert trace.schema_version == TRACE_SCHEMA_VERSION
        if trace.method == "closed-book":  # it reads nothing, so it cannot know
            assert trace.answer == "n/a" and trace.page is None and trace.retrieved_pages == []
            continue
        assert FACT in (trace.answer or ""), trace.method
        assert trace.page == PLANTED_PAGE, trace.method
        assert trace.outcome.quote_check == "verified", trace.method
        one_pass = ("baseline", "reprompt", "reprompt-before-answer", "question-last", "repeat")
        if trace.method in one_pass:  # one pass, no retrieval
            assert trace.retrieved_pages == [] and len(trace.calls) == 1
        else:
            assert PLANTED_PAGE in trace.retrieved_pages
            assert trace.calls[-1].stage in ("answer", "reduce")
            assert PLANTED_PAGE in trace.calls[-1].pages


def test_offline_usage_is_the_token_count_of_what_was_read(planted_document: Document) -> None:
    counter = word_counter()
    (trace,) = run(planted_document, OfflineEngine(counter), "rr")
    for call in trace.calls:
        assert call.usage.input_tokens == counter.count(call.prompt)
        assert call.usage.output_tokens == counter.count(call.response) > 0
    assert trace.usage.prompt_tokens == sum(c.usage.prompt_tokens for c in trace.calls)


@pytest.mark.parametrize("method", (*PAPER_METHODS, "rag", "closed-book", "oracle"))
def test_calls_follow_the_plan_offline(planted_document: Document, method: str) -> None:
    (plan,) = plans_for(planted_document, method, gold_pages=(PLANTED_PAGE,))
    (trace,) = run_plans(planted_document, [plan], OfflineEngine(word_counter()))
    assert [(c.id, c.stage, c.chunk) for c in trace.calls] == [(c.id, c.stage, c.chunk) for c in plan.calls]
    for call, planned in zip(trace.calls, plan.known_calls, strict=False):
        assert call.prompt == planned.render()
        assert call.planned_prompt_tokens == planned.prompt_tokens
        assert call.schema == planned.schema.WIRE_NAME and call.cache_key
    assert [s.stage for s in trace.steps] == (["rank"] if method == "rag" else [])


def test_cost_by_stage_sums_to_the_cost(planted_document: Document) -> None:
    traces = run(planted_document, OfflineEngine(word_counter()), *PAPER_METHODS, "briefcontext")
    for trace in traces:
        stages = trace.cost_by_stage()
        assert trace.cost_usd > 0
        assert sum(stages.values()) == pytest.approx(trace.cost_usd, rel=1e-9)
        assert (stages.get("reminders", 0) > 0) == (trace.method in ("reprompt", "rr", "chunked-rr"))
        assert (stages.get("retrieve", 0) > 0) == (trace.method in RETRIEVING)
        if trace.method == "briefcontext":
            assert stages["map"] > 0 and stages["reduce"] > 0
        else:
            assert stages["answer"] > 0


def test_run_trace_round_trips_through_dict_and_json(planted_document: Document) -> None:
    traces = run(planted_document, OfflineEngine(word_counter()), "chunked-rr", "baseline", "briefcontext")
    for trace in traces:
        data = trace.to_dict()
        assert RunTrace.from_dict(data) == trace
        through_json = json.loads(json.dumps(data))
        rebuilt = RunTrace.from_dict(through_json)
        assert rebuilt == trace
        assert json.loads(json.dumps(rebuilt.to_dict())) == through_json
        assert rebuilt.cost_usd == pytest.approx(trace.cost_usd)
        assert rebuilt.usage == trace.usage
        assert (
            data["cost_usd"] == trace.cost_usd and data["usage"]["input_tokens"] == trace.usage.input_tokens
        )
        assert data["schema_version"] == 3 and data["settings"]["method"] == trace.method
        assert (data["question"], data["answer"], data["page"]) == (trace.question, trace.answer, trace.page)
        without = trace.to_dict(prompts=False)
        assert all(c["prompt"] is None for c in without["calls"]) and all(c["prompt"] for c in data["calls"])


def test_a_version_one_trace_reads_back() -> None:
    old = {
        "method": "rr", "question": "What is the fee?", "document": "a.pdf", "document_sha256": "f" * 64,
        "provider": "openai", "model": "gpt-4.1-mini", "is_llm": True,
        "settings": {"method": "rr", "reminder_every": 5000, "top_k": 3, "chunk_size": 20000, "model": "gpt-4.1-mini",
                     "provider": "openai", "reminder_style": "full", "reminder_placement": "interval",
                     "reminder_pages": [], "max_output_tokens": 512, "price_model": ""},
        "calls": [{"stage": "retrieve", "chunk": None, "pages": [1, 2, 3], "reminders_after": [2],
                   "leading_reminders": 0, "reminder_tokens": 40, "prompt": "p", "response": '{"pages": [2]}',
                   "usage": {"input_tokens": 900, "cached_tokens": 0, "cache_write_tokens": 0, "output_tokens": 9},
                   "cost_usd": 0.001, "output_cost_usd": 0.0001, "price_known": True, "latency_s": 0.5,
                   "retrieved": [2], "error": None}],
        "retrieved_pages": [2], "dropped_pages": [7], "answer": "4.2 million", "page": 2,
        "warnings": ["w"], "error": None, "error_kind": None, "estimate_usd": 0.002,
        "usage": {"input_tokens": 900}, "cost_usd": 0.001, "cost_by_stage": {"retrieval": 0.001},
    }  # fmt: skip
    trace = RunTrace.from_dict(old)
    assert trace.schema_version == 1 and trace.run_id.startswith("v1-")
    assert (trace.method, trace.label, trace.question, trace.answer, trace.page) == (
        "rr",
        "rr",
        "What is the fee?",
        "4.2 million",
        2,
    )
    assert trace.retrieved_pages == [2] and trace.dropped_pages == [7]
    assert trace.settings.reminder_every == 5000 and trace.settings.top_k == 3
    assert trace.calls[0].id == "retrieve" and trace.calls[0].usage.input_tokens == 900
    assert trace.cost_usd == pytest.approx(0.001)
    assert RunTrace.from_dict(json.loads(json.dumps(trace.to_dict()))).answer == "4.2 million"
    assert trace.outcome.found is True and [c.page for c in trace.outcome.citations] == [2]


# ---- Retrieval outcomes (scripted) --------------------------------------------------------


def test_out_of_range_retrieved_pages_are_dropped_and_reported(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_schema(lambda r: retrieval_json([27, 999, 0, -1, "3", 27]), lambda r: answer_json())
    )
    (trace,) = run(planted_document, client, "icr")
    assert trace.ok
    assert trace.retrieved_pages == [27, 3]
    assert sorted(trace.dropped_pages) == [-1, 0, 999]
    assert any("999" in w for w in trace.warnings)
    assert trace.calls[-1].pages == [3, 27]
    assert trace.answer == FACT and trace.page == 27


def test_chunk_retrieval_of_a_page_outside_the_chunk_is_dropped(planted_document: Document) -> None:
    # A chunk's model saw only that chunk: a number from elsewhere cannot be its finding.
    client = ScriptedClient(
        responder=by_schema(
            lambda r: retrieval_json([pages_of(r)[0], 40 if 40 not in pages_of(r) else 1]),
            lambda r: answer_json(page=1),
        )
    )
    (trace,) = run(planted_document, client, "chunked-icr")
    assert trace.ok
    first_pages = [call.pages[0] for call in trace.calls if call.stage == "retrieve"]
    assert trace.retrieved_pages == first_pages
    assert trace.outcome.retrieved_groups == [[p] for p in first_pages]
    assert trace.dropped_pages  # every chunk named a page it did not hold


@pytest.mark.parametrize("pages", [[], [0, 41, 1000]])
def test_empty_retrieval_answers_na_without_an_answer_call(
    planted_document: Document, pages: list[int]
) -> None:
    client = ScriptedClient(responder=by_schema(lambda r: retrieval_json(pages), lambda r: answer_json()))
    for method in ("icr", "rr", "chunked-rr"):
        (trace,) = run(planted_document, client, method)
        assert trace.ok and trace.answer == NOT_STATED and trace.outcome.found is False and trace.page is None
        assert all(c.stage == "retrieve" for c in trace.calls)
        assert any("no valid page" in w for w in trace.warnings)
    assert all(is_retrieval(r) for r in client.requests)


def test_more_pages_than_asked_are_cut_to_n(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_schema(lambda r: retrieval_json(list(range(1, 9))), lambda r: answer_json(page=3))
    )
    (trace,) = run(planted_document, client, "icr", top_k=5)
    assert trace.retrieved_pages == [1, 2, 3, 4, 5]
    assert any("kept the first 5" in w for w in trace.warnings)


def test_answer_prompt_holds_only_the_retrieved_pages(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_schema(lambda r: retrieval_json([31, 27, 4]), lambda r: answer_json())
    )
    (trace,) = run(planted_document, client, "rr")
    answer_requests = [r for r in client.requests if not is_retrieval(r)]
    assert len(answer_requests) == 1
    assert pages_of(answer_requests[0]) == [4, 27, 31]
    assert answer_requests[0].layout.pages() == [(n, planted_document.page(n).text) for n in (4, 27, 31)]  # type: ignore[union-attr]
    assert trace.calls[-1].prompt == answer_requests[0].prompt
    # The answer phase of R&R carries no reminders.
    assert REMINDER_OPEN not in answer_requests[0].prompt
    assert trace.calls[-1].reminders_after == [] and trace.calls[-1].leading_reminders == 0


def test_rr_retrieval_prompt_has_reminders_and_icr_does_not(planted_document: Document) -> None:
    for method, expected in (("rr", True), ("icr", False)):
        client = ScriptedClient(responder=good_responder)
        (trace,) = run(planted_document, client, method)
        retrieval = [r for r in client.requests if is_retrieval(r)]
        assert len(retrieval) == 1
        assert (REMINDER_OPEN in retrieval[0].prompt) is expected
        if expected:
            assert retrieval[0].prompt.count(REMINDER_OPEN) == len(trace.calls[0].reminders_after) > 0
            assert PLANTED_QUESTION in retrieval[0].prompt.split(REMINDER_OPEN)[1]


def test_a_cited_page_outside_the_context_is_dropped(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_schema(lambda r: retrieval_json([27]), lambda r: answer_json(page=5))
    )
    (trace,) = run(planted_document, client, "icr")
    assert trace.answer == FACT and trace.page is None
    assert any("page 5" in w and "not in its context" in w for w in trace.warnings)
    (baseline,) = run(planted_document, ScriptedClient([answer_json(page=99)]), "baseline")
    assert baseline.page is None and any("page 99" in w for w in baseline.warnings)


@pytest.mark.parametrize(("raw", "page"), [("7", 7), ("page 7", 7), (7.0, 7), ("n/a", None)])
def test_cited_page_forms(planted_document: Document, raw: object, page: int | None) -> None:
    (trace,) = run(planted_document, ScriptedClient([answer_json(page=raw)]), "baseline")
    assert trace.ok and trace.page == page and not trace.warnings


def test_several_questions_run_one_retrieval_then_one_answer_each(planted_document: Document) -> None:
    questions = [PLANTED_QUESTION, "Which crane is in the harbor?", "Who keeps the zebras?"]
    client = ScriptedClient(
        responder=by_schema(
            lambda r: json.dumps(
                {"results": [{"question": 1, "pages": [27]}, {"question": 2, "pages": [3, 4]}]}
            ),
            lambda r: answer_json(page=pages_of(r)[0]),
        )
    )
    (trace,) = run_plans(planted_document, plans_for(planted_document, "rr", question=questions), client)
    assert sum(is_retrieval(r) for r in client.requests) == 1
    assert [c.id for c in trace.calls] == ["retrieve.1", "answer.1", "answer.2"]
    assert [c.question for c in trace.calls] == [None, 0, 1]
    assert trace.questions == questions
    assert [(o.question, o.page, o.retrieved_pages) for o in trace.outcomes] == [
        (questions[0], 27, [27]), (questions[1], 3, [3, 4]), (questions[2], None, []),
    ]  # fmt: skip
    assert trace.outcomes[2].answer == NOT_STATED and trace.outcomes[2].found is False
    assert any("no entry for question(s) 3" in w for w in trace.warnings)


def test_several_questions_offline_find_each_page(planted_document: Document) -> None:
    questions = [PLANTED_QUESTION, "What does the harbor crane shelter?"]
    for method in RETRIEVING:
        (plan,) = plans_for(planted_document, method, question=questions)
        (trace,) = run_plans(planted_document, [plan], OfflineEngine(word_counter()))
        assert trace.ok and len(trace.outcomes) == 2
        assert trace.outcomes[0].page == PLANTED_PAGE
        assert "crane" in (trace.outcomes[1].answer or "").lower()
        # One retrieval call per chunk (one for the unchunked methods), whatever the number of questions.
        assert sum(c.stage == "retrieve" for c in trace.calls) == len(plan.phases[0].calls)
        assert [c.id for c in trace.calls if c.stage == "answer"] == ["answer.1", "answer.2"]


# ---- Faults: one method's failure is its own ------------------------------------------------


def test_malformed_answer_fails_only_that_method(planted_document: Document) -> None:
    def answer(request: LLMRequest) -> str:
        is_baseline = REMINDER_OPEN not in request.prompt and len(pages_of(request)) == 40
        return "Sorry, I think the fee is 4.2 million." if is_baseline else answer_json()

    client = ScriptedClient(responder=by_schema(lambda r: retrieval_json([27]), answer))
    baseline, reprompt, icr = run(planted_document, client, "baseline", "reprompt", "icr")
    assert baseline.error_kind == "ResponseParseError" and not baseline.ok
    assert baseline.answer is None
    assert baseline.calls[0].response.startswith("Sorry")  # the raw reply is kept
    assert baseline.calls[0].error
    for trace in (reprompt, icr):
        assert trace.ok and trace.answer == FACT and trace.page == 27


def test_malformed_retrieval_is_a_parse_error(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_schema(lambda r: '{"question": "q", "answer": "no pages here"}', lambda r: answer_json())
    )
    (trace,) = run(planted_document, client, "icr")
    assert trace.error_kind == "ResponseParseError"
    assert all(is_retrieval(r) for r in client.requests)


def test_provider_error_in_one_method_leaves_the_others(planted_document: Document) -> None:
    def retrieve(request: LLMRequest) -> str:
        if REMINDER_OPEN in request.prompt:
            raise RateLimitError("429: slow down", provider="scripted", status=429)
        return retrieval_json([27])

    client = ScriptedClient(responder=by_schema(retrieve, lambda r: answer_json()))
    baseline, icr, rr = run(planted_document, client, "baseline", "icr", "rr")
    assert rr.error_kind == "RateLimitError" and "slow down" in (rr.error or "")
    assert rr.answer is None and len(rr.calls) == 1 and rr.calls[0].error
    for trace in (baseline, icr):
        assert trace.ok and trace.answer == FACT


def test_one_failing_chunk_is_skipped_with_a_warning(planted_document: Document) -> None:
    def retrieve(request: LLMRequest) -> str:
        pages = pages_of(request)
        if 1 in pages:
            raise ProviderError("502 bad gateway", provider="scripted", status=502)
        return retrieval_json([PLANTED_PAGE] if PLANTED_PAGE in pages else pages[:1])

    client = ScriptedClient(responder=by_schema(retrieve, lambda r: answer_json()))
    (trace,) = run(planted_document, client, "chunked-icr")
    assert trace.ok and trace.answer == FACT and trace.page == PLANTED_PAGE
    assert any("failed" in w and "502" in w for w in trace.warnings)
    failed = [c for c in trace.calls if c.error]
    assert len(failed) == 1 and 1 in failed[0].pages
    assert PLANTED_PAGE in trace.retrieved_pages
    assert not any(p in trace.retrieved_pages for p in failed[0].pages)


def test_all_chunks_failing_is_the_methods_error(planted_document: Document) -> None:
    def retrieve(request: LLMRequest) -> str:
        raise ProviderError("500 server error", provider="scripted", status=500)

    client = ScriptedClient(responder=by_schema(retrieve, lambda r: answer_json()))
    (trace,) = run(planted_document, client, "chunked-rr")
    assert trace.error_kind == "ProviderError" and trace.answer is None
    assert all(is_retrieval(r) for r in client.requests)


def test_an_unexpected_exception_surfaces_as_an_internal_error(planted_document: Document) -> None:
    def broken(request: LLMRequest) -> str:
        raise ValueError("bug in a client")

    baseline, icr = run(planted_document, ScriptedClient(responder=broken), "baseline", "chunked-icr")
    for trace in (baseline, icr):
        assert trace.error_kind == "InternalError" and "bug in a client" in (trace.error or "")


# ---- Quotes: checked against the cited page ------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "status"),
    [
        ("The termination fee is 4.2 million euros.", "verified"),
        ("The  termination fee is\n4.2 million euros", "verified"),  # spacing does not matter
        ("The termination fee is 4.2 milion euros.", "approximate"),
        ("The fee is zero.", "not-found"),
        ("", "no-quote"),
    ],
)
def test_the_runner_checks_the_quote_against_the_cited_page(
    planted_document: Document, quote: str, status: str
) -> None:
    (trace,) = run(planted_document, ScriptedClient([answer_json(quote=quote)]), "baseline")
    assert trace.outcome.quote_check == status
    if status == "approximate":
        assert 90 <= trace.outcome.quote_score < 100
    # The same quote against a page that does not hold it is not verified.
    (elsewhere,) = run(planted_document, ScriptedClient([answer_json(quote=quote, page=3)]), "baseline")
    assert elsewhere.outcome.quote_check in ("not-found", "no-quote")


def test_each_citation_is_checked_against_its_own_page_and_labelled(planted_document: Document) -> None:
    filler = planted_document.page(3).text.split(". ")[0]
    reply = json.dumps(
        {
            "question": PLANTED_QUESTION,
            "answer": FACT,
            "found": True,
            "citations": [
                {"page": str(PLANTED_PAGE), "quote": "The termination fee is 4.2 million euros."},
                {"page": "3", "quote": filler},  # stands on page 3
                {"page": "3", "quote": "The termination fee is 4.2 milion euros."},  # not on page 3
                {"page": "5", "quote": ""},
            ],
        }
    )
    (trace,) = run(planted_document, ScriptedClient([reply]), "baseline")
    outcome = trace.outcome
    assert [(c.page, c.quote_check) for c in outcome.citations] == [
        (PLANTED_PAGE, "verified"), (3, "verified"), (3, "not-found"), (5, "no-quote"),
    ]  # fmt: skip
    assert outcome.cited_pages == [PLANTED_PAGE, 3, 5]
    assert all(c.page_label == planted_document.page(c.page).label for c in outcome.citations if c.page)
    data = json.loads(json.dumps(trace.to_dict()))["outcomes"][0]
    assert [(c["page"], c["quote_check"]) for c in data["citations"]] == [
        (PLANTED_PAGE, "verified"), (3, "verified"), (3, "not-found"), (5, "no-quote"),
    ]  # fmt: skip
    assert set(data["citations"][0]) == {"page", "page_label", "quote", "quote_check", "quote_score"}
    # Readers of schema 2 find the first citation where they looked before.
    assert (data["page"], data["quote"], data["quote_check"], data["found"]) == (
        PLANTED_PAGE, "The termination fee is 4.2 million euros.", "verified", True,
    )  # fmt: skip
    assert RunTrace.from_dict(json.loads(json.dumps(trace.to_dict()))) == trace


def test_not_stated_is_an_answer_with_nothing_to_check(planted_document: Document) -> None:
    reply = json.dumps({"question": PLANTED_QUESTION, "answer": NOT_STATED, "found": False, "citations": []})
    (trace,) = run(planted_document, ScriptedClient([reply]), "baseline")
    outcome = trace.outcome
    assert trace.ok and outcome.found is False and outcome.citations == [] and outcome.page is None
    # a model's "not stated" is its claim, labelled as such
    assert outcome.absent_by == "model"
    assert outcome.answer_text == "the model says the document does not state it"
    assert outcome.compared_answer == "n/a"
    assert trace.to_dict()["outcomes"][0]["found"] is False


def test_a_reader_that_found_nothing_keeps_the_pages_to_read(planted_document: Document) -> None:
    """The offline engine's "not found" names pages worth reading: kept (those in its context),
    shown as not found rather than as a claim that the document is silent, and read back."""
    reply = json.dumps(
        {"question": PLANTED_QUESTION, "answer": "Not found by the offline engine; pages to read: 2, 999, 1",
         "found": False, "citations": [], "pages_to_read": ["2", 999, 1], "absent_by": "reader"}
    )  # fmt: skip
    (trace,) = run(planted_document, ScriptedClient([reply]), "baseline")
    outcome = trace.outcome
    assert outcome.found is False and outcome.pages_to_read == [2, 1]  # 999 is not a page here
    assert outcome.absent_by == "reader" and outcome.answer_text == "Not found; pages to read: 2, 1"
    assert (outcome.confidence, outcome.score) == ("none", 0.0)
    assert outcome.compared_answer == "n/a"  # still scored as not stated
    assert RunTrace.from_dict(json.loads(json.dumps(trace.to_dict()))).outcome.pages_to_read == [2, 1]


def test_a_schema_two_trace_reads_its_one_page_and_quote_as_one_citation(planted_document: Document) -> None:
    (trace,) = run(
        planted_document,
        ScriptedClient([answer_json(quote="The termination fee is 4.2 million euros.")]),
        "baseline",
    )
    old = json.loads(json.dumps(trace.to_dict()))
    old["schema_version"] = 2
    for outcome in old["outcomes"]:  # what schema 2 wrote: no citations, no found
        del outcome["citations"], outcome["found"]
    old["outcomes"].append({**old["outcomes"][0], "question": "Q2", "answer": "n/a", "page": None, "quote": "",
                            "quote_check": "no-quote", "quote_score": 0.0, "page_label": ""})  # fmt: skip
    rebuilt = RunTrace.from_dict(old)
    assert rebuilt.schema_version == 2
    first, second = rebuilt.outcomes
    assert first.found is True and [(c.page, c.quote, c.quote_check) for c in first.citations] == [
        (PLANTED_PAGE, "The termination fee is 4.2 million euros.", "verified")
    ]
    assert first.quote_score == 100.0 and first.page_label == trace.outcome.page_label
    assert second.found is False and second.citations == []  # an n/a answer is "not stated"
    again = rebuilt.to_dict()
    assert again["schema_version"] == 2 and again["outcomes"][0]["citations"][0]["page"] == PLANTED_PAGE


# ---- The executor: pool, events, order, fit ------------------------------------------------------


class InFlight:
    """A responder that records the most calls in flight at once (``most``).

    The first ``meet`` calls wait for each other at a barrier before answering, so a run gets
    past them only if that many calls really are in flight together; if they never are, the
    barrier gives up and those calls fail the run, saying so. The other calls are held up to
    ``hold_s`` (an Event wait), which gives calls that should not overlap the chance to show
    that they do; the hold can only hide a breach, never fail a correct run.
    """

    def __init__(self, meet: int = 0, hold_s: float = 0.05) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.arrived = 0
        self.meet = meet
        self.hold_s = hold_s
        self.never = threading.Event()
        self.barrier = threading.Barrier(max(1, meet), timeout=10)

    def __call__(self, request: LLMRequest) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.arrived += 1
            meets = self.arrived <= self.meet
        try:
            if meets:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    raise AssertionError(f"{self.meet} calls were never in flight at once") from None
            else:
                self.never.wait(self.hold_s)
            return good_responder(request)
        finally:
            with self.lock:
                self.now -= 1


def test_chunk_retrievals_run_concurrently(planted_document: Document) -> None:
    (plan,) = plans_for(planted_document, "chunked-icr")
    chunks = len(plan.phases[0].calls)
    assert chunks >= 3
    # Every chunk's retrieval must be in flight at once for any of them to answer.
    inflight = InFlight(meet=chunks)
    (trace,) = run_plans(planted_document, [plan], ScriptedClient(responder=inflight), concurrency=chunks)
    assert trace.ok and trace.page == PLANTED_PAGE, trace.error
    assert inflight.most == chunks


@pytest.mark.parametrize("methods", [("chunked-rr",), ("chunked-icr", "rr", "baseline")])
def test_concurrency_one_bounds_calls_in_flight(planted_document: Document, methods: tuple[str, ...]) -> None:
    inflight = InFlight()
    traces = run(
        planted_document, ScriptedClient(responder=inflight), *methods, concurrency=1, chunk_size=5_000
    )
    assert all(t.ok for t in traces), [t.error for t in traces]
    assert inflight.most == 1


def test_concurrency_bounds_across_methods_in_one_pool(planted_document: Document) -> None:
    # Two calls must be in flight together to get on; the pool lets no third one in.
    inflight = InFlight(meet=2)
    traces = run(
        planted_document,
        ScriptedClient(responder=inflight),
        "chunked-icr",
        "chunked-rr",
        "baseline",
        concurrency=2,
    )
    assert all(t.ok for t in traces), [t.error for t in traces]
    assert inflight.most == 2


def test_one_executor_keeps_its_bound_over_several_runs(planted_document: Document) -> None:
    inflight = InFlight(meet=2)
    plans = plans_for(planted_document, "chunked-icr", "chunked-rr")
    with Executor(ScriptedClient(responder=inflight), concurrency=2) as executor:
        first = executor.run(planted_document, plans[:1])
        second = executor.run(planted_document, plans[1:])
    assert first[0].ok and second[0].ok
    assert inflight.most == 2
    assert executor.calls_made == len(first[0].calls) + len(second[0].calls) and executor.calls_cached == 0


def test_events_report_each_call_and_traces_come_in_plan_order(planted_document: Document) -> None:
    events: list[CallEvent] = []
    plans = plans_for(planted_document, "chunked-icr", "baseline")
    traces = run_plans(planted_document, plans, OfflineEngine(word_counter()), on_event=events.append)
    assert [t.method for t in traces] == ["chunked-icr", "baseline"]
    for index, trace in enumerate(traces):
        mine = [e for e in events if e.run == index]
        assert {e.method for e in mine} == {trace.method} and {e.label for e in mine} == {trace.label}
        assert sum(e.status == "started" for e in mine) == len(trace.calls)
        assert sum(e.status == "done" for e in mine) == len(trace.calls)
        assert sorted((e.stage, e.chunk) for e in mine if e.status == "done") == sorted(
            (c.stage, c.chunk) for c in trace.calls
        )


def test_the_same_method_at_two_settings_returns_two_distinct_traces_in_order(
    planted_document: Document,
) -> None:
    # The old runner keyed traces by method name: R&R at k = 1,000 and at k = 5,000 came back swapped.
    small, large = (plans_for(planted_document, "rr", reminder_every=k)[0] for k in (1_000, 5_000))
    for order in ((small, large), (large, small)):
        traces = run_plans(planted_document, list(order), OfflineEngine(word_counter()))
        assert [t.settings.reminder_every for t in traces] == [p.settings.reminder_every for p in order]
        assert [t.describe for t in traces] == [p.describe for p in order]
        assert [len(t.calls[0].reminders_after) for t in traces] == [p.calls[0].reminder_count for p in order]
        assert traces[0].run_id != traces[1].run_id and traces[0].cache_key != traces[1].cache_key


def test_the_run_key_is_deterministic_and_ignores_pricing(planted_document: Document) -> None:
    engine = OfflineEngine(word_counter())
    (a,) = run_plans(planted_document, plans_for(planted_document, "rr"), engine)
    (b,) = run_plans(planted_document, plans_for(planted_document, "rr", price_model="gpt-4o"), engine)
    (c,) = run_plans(planted_document, plans_for(planted_document, "rr", top_k=3), engine)
    assert a.cache_key == b.cache_key != c.cache_key
    assert [x.cache_key for x in a.calls] == [x.cache_key for x in b.calls]
    assert a.run_id != b.run_id


def test_stream_yields_a_failed_event_for_a_failed_call(planted_document: Document) -> None:
    client = ScriptedClient([RateLimitError("429", provider="scripted", status=429)])
    with Executor(client) as executor:
        items = list(executor.stream(planted_document, plans_for(planted_document, "baseline")))
    assert isinstance(items[-1], RunTrace) and items[-1].error_kind == "RateLimitError"
    assert [e.status for e in items if isinstance(e, CallEvent)] == ["started", "failed"]


def test_configuration_errors_are_raised_before_any_call(planted_document: Document) -> None:
    client = ScriptedClient(responder=good_responder)
    with pytest.raises(ConfigError):
        plans_for(planted_document, "baseline", "rr", top_k=0)
    with pytest.raises(ConfigError):
        plans_for(planted_document, "baseline", question="  ")
    assert client.requests == []


def test_a_plan_too_large_for_the_context_window_is_refused_before_any_call(
    planted_document: Document,
) -> None:
    client = ScriptedClient(responder=good_responder)
    plans = plans_for(planted_document, "baseline", "chunked-rr")
    window = plans[1].largest_prompt + 10  # the chunked plan fits, the baseline does not
    assert plans[0].largest_prompt > window
    with Executor(client, context_window=window) as executor:
        baseline, chunked = executor.run(planted_document, plans)
    assert baseline.error_kind == "ContextTooLongError" and baseline.calls == []
    assert "Nothing was sent" in (baseline.error or "") and "chunk" in (baseline.error or "")
    assert chunked.ok
    assert all(len(pages_of(r)) < 40 for r in client.requests)  # no request carried the whole document


def test_run_records_settings_estimate_and_document_identity(planted_document: Document) -> None:
    (trace,) = run(planted_document, OfflineEngine(word_counter()), "rr")
    assert trace.document == "planted.txt" and trace.document_sha256 == planted_document.sha256
    assert trace.settings.method == "rr" and trace.settings.reminder_every == 1_000
    assert trace.label == "R&R" and trace.describe == "k = 1,000 · N = 5"
    assert trace.estimate_usd > 0 and trace.price_known
    assert trace.started_at and trace.latency_s >= 0
    assert trace.question == PLANTED_QUESTION and len(trace.run_id) == 32


def test_small_document_with_all_methods_and_default_settings() -> None:
    texts = planted_texts(pages=6, gold=4, sentences=10)
    counter = word_counter()
    document = document_from_texts("small.txt", texts, counter=counter)
    plans = [
        plan_method(document, PLANTED_QUESTION, RunSettings(method=m, gold_pages=(4,)), counter)
        for m in method_names()
        if m != "closed-book"
    ]
    for trace in run_plans(document, plans, OfflineEngine(counter)):
        assert trace.ok and trace.page == 4 and FACT in (trace.answer or ""), trace.method
        if trace.method.startswith("chunked"):
            assert len(trace.calls) == 2  # one chunk + the answer


def test_local_engines_take_one_call_at_a_time_and_providers_as_many_as_asked() -> None:
    # The offline engine's work is Python under the GIL: threads would only add switching.
    from rr_core.llm.simulated import SimulatedReader

    with Executor(OfflineEngine(), concurrency=8) as local:
        assert local.concurrency == 1
    with Executor(SimulatedReader(reach=3_000), concurrency=8) as simulated:
        assert simulated.concurrency == 1
    with Executor(ScriptedClient([]), concurrency=16) as remote:
        assert remote.concurrency == 16


# ---- The call cache: whose reply, and only a reply that parsed --------------------------------


class DictCache:
    """A call cache in memory (the run store's protocol), counting what it keeps."""

    def __init__(self) -> None:
        self.calls: dict[str, object] = {}

    def find(self, key: str):  # type: ignore[no-untyped-def]
        return self.calls.get(key)

    def put(self, key: str, call) -> None:  # type: ignore[no-untyped-def]
        self.calls.setdefault(key, call)

    def mark_sent(self, call) -> None:  # type: ignore[no-untyped-def]
        pass

    def clear_sent(self, key: str, sender: str) -> None:
        pass

    def take_unanswered(self, keys, sender: str, gone) -> list:  # type: ignore[no-untyped-def]
        return []

    def add_spend(self, ledger: str, key: str, usd: float) -> None:
        pass

    def ledger_spent(self, ledger: str) -> float:
        return 0.0


def test_a_malformed_reply_is_not_cached_so_the_next_run_asks_again(planted_document: Document) -> None:
    cache = DictCache()
    client = ScriptedClient(["Sorry, I think the fee is 4.2 million."], responder=lambda r: answer_json())
    plans = plans_for(planted_document, "baseline")
    (first,) = run_plans(planted_document, plans, client, cache=cache)  # type: ignore[arg-type]
    assert first.error_kind == "ResponseParseError" and cache.calls == {}
    (second,) = run_plans(planted_document, plans, client, cache=cache)  # type: ignore[arg-type]
    assert len(client.requests) == 2  # asked again: "run again to fill them in" is true
    assert second.ok and second.answer == FACT and not second.calls[0].cached
    (third,) = run_plans(planted_document, plans, client, cache=cache)  # type: ignore[arg-type]
    assert len(client.requests) == 2 and third.calls[0].cached and third.answer == FACT


def test_a_stored_reply_answers_only_for_the_reader_that_gave_it(planted_document: Document) -> None:
    from rr_core.llm.simulated import SimulatedReader

    counter = word_counter()
    cache = DictCache()
    plans = plans_for(planted_document, "baseline")
    (far,) = run_plans(planted_document, plans, SimulatedReader(reach=4_000, counter=counter), cache=cache)  # type: ignore[arg-type]
    (near,) = run_plans(planted_document, plans, SimulatedReader(reach=100, counter=counter), cache=cache)  # type: ignore[arg-type]
    assert not near.calls[0].cached and near.calls[0].cache_key != far.calls[0].cache_key
    (again,) = run_plans(planted_document, plans, SimulatedReader(reach=100, counter=counter), cache=cache)  # type: ignore[arg-type]
    assert again.calls[0].cached and again.calls[0].cache_key == near.calls[0].cache_key
    # Two scripted clients share replies only when they say they play one script.
    one = run_plans(
        planted_document, plans, ScriptedClient(responder=good_responder, script="a"), cache=cache
    )  # type: ignore[arg-type]
    other = run_plans(
        planted_document, plans, ScriptedClient(responder=good_responder, script="b"), cache=cache
    )  # type: ignore[arg-type]
    assert not one[0].calls[0].cached and not other[0].calls[0].cached


def test_the_executor_never_probes_a_client() -> None:
    import inspect

    import rr_core.llm.base
    import rr_core.runs

    for module in (rr_core.runs, rr_core.llm.base):
        source = inspect.getsource(module)
        assert "getattr(client" not in source and "getattr(self.client" not in source, module.__name__


def test_every_client_declares_its_identity() -> None:
    from rr_core.llm.anthropic_client import AnthropicClient
    from rr_core.llm.openai_client import OpenAIClient
    from rr_core.llm.simulated import SimulatedReader

    counter = word_counter()
    seen = [
        OfflineEngine(counter).identity(),
        SimulatedReader(reach=500, counter=counter).identity(),
        ScriptedClient().identity(),
        OpenAIClient(model="gpt-4.1", api_key="sk-x", base_url="HTTPS://Api.OpenAI.com:443/v1/").identity(),
        OpenAIClient(model="llama3.1", base_url="http://localhost:11434/v1", api="chat").identity(),
        AnthropicClient(model="claude-x", api_key="sk-ant-x").identity(),
    ]
    assert seen[1]["reach"] == 500 and seen[0]["provider"] == "offline"
    assert seen[3] == {
        "provider": "openai",
        "api": "responses",
        "base_url": "https://api.openai.com/v1",  # normalised: one server, one key
        "model": "gpt-4.1",
        "temperature": 0.0,
    }
    assert seen[4]["base_url"] == "http://localhost:11434/v1" and seen[4]["provider"] == "openai-compatible"
    assert seen[5]["temperature"] == 0.0 and seen[5]["provider"] == "anthropic"  # a raw body field
    assert len({json.dumps(s, sort_keys=True) for s in seen}) == len(seen)


def test_the_budget_holds_each_call_and_learns_from_bills_above_the_estimate() -> None:
    from rr_core.runs import Budget

    budget = Budget(1.00)
    first = budget.reserve(0.10)
    assert first is not None and budget.held_usd == pytest.approx(0.10)
    budget.settle(first, 0.30)  # billed three times the estimate
    assert budget.overrun == pytest.approx(3.0) and budget.settled_usd == pytest.approx(0.30)
    second = budget.reserve(0.10)  # now holds 0.30, what such a call has been billed
    assert second is not None and second.held_usd == pytest.approx(0.30)
    third = budget.reserve(0.10)
    assert third is not None
    stop = threading.Event()
    stop.set()
    # 0.30 paid + 0.60 held + 0.30 > 1.00: it would wait for calls in flight (stopped: not sent).
    assert budget.reserve(0.10, stop) is None
    budget.settle(second, None)  # failed unbilled: its hold is released
    assert budget.reserve(0.10) is not None
    # Once bills ran above their estimates, a small call holds at least the largest bill.
    smaller = Budget(1.00)
    one = smaller.reserve(0.10)
    assert one is not None
    smaller.settle(one, 0.30)
    small = smaller.reserve(0.01)
    assert small is not None and small.held_usd == pytest.approx(0.30)


def test_a_call_that_fits_once_calls_in_flight_settle_waits_for_them() -> None:
    """Calls in flight hold their worst case: one that fits only once they have settled (below
    it) waits for them instead of stopping the run; one that could not fit even then is refused
    at once."""
    from rr_core.runs import Budget

    budget = Budget(1.00)
    first = budget.reserve(0.40)
    assert first is not None
    budget.settle(first, 0.10)  # billed a quarter of what it held
    second = budget.reserve(0.40)
    third = budget.reserve(0.40)
    assert second is not None and third is not None
    assert budget.reserve(0.95) is None  # 0.10 paid + 0.95 > 1.00 whatever settles: refused at once
    got: list[object] = []
    waiting = threading.Thread(target=lambda: got.append(budget.reserve(0.40)))
    waiting.start()  # 0.10 + 0.80 held + 0.40 > 1.00: it waits
    budget.settle(second, 0.10)
    waiting.join(120)
    assert not waiting.is_alive() and got and got[0] is not None
    assert budget.held_usd == pytest.approx(0.80) and budget.settled_usd == pytest.approx(0.20)


def test_the_first_call_goes_alone_until_its_bill_is_known() -> None:
    from rr_core.runs import Budget

    budget = Budget(10.0)
    first = budget.reserve(0.10)
    assert first is not None
    stop = threading.Event()
    stop.set()
    # A second call would wait for the first bill: stopped while waiting, it is not sent.
    assert budget.reserve(0.10, stop) is None and budget.held_usd == pytest.approx(0.10)
    budget.settle(first, 0.10)
    assert budget.reserve(0.10, stop) is not None  # the bill is known: no wait


def test_a_failed_unbilled_call_does_not_open_parallel_sending() -> None:
    from rr_core.runs import Budget

    budget = Budget(10.0)
    stop = threading.Event()
    stop.set()
    first = budget.reserve(0.10)
    assert first is not None
    budget.settle(first, None)  # failed: no bill came back
    second = budget.reserve(0.10)
    assert second is not None  # nothing in flight: it goes
    # Still no bill seen: a third call waits for the second (stopped while waiting: not sent).
    assert budget.reserve(0.10, stop) is None
    budget.settle(second, 0.10)
    assert budget.reserve(0.10, stop) is not None


def test_a_reply_the_offline_reader_stored_does_not_answer_for_another_version_of_it(
    tmp_path, planted_document, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The offline engine's replies are kept in the call cache like any provider's; once its
    reader changes (an upgrade), the replies of the old reader are not taken for the new one's."""
    import rr_core.llm.offline as offline_module
    from rr_core.store import open_store

    counter = word_counter()
    store = open_store(str(tmp_path / "runs.sqlite3"))
    plan = plan_method(planted_document, PLANTED_QUESTION, small_settings("rr"), counter)
    assert OfflineEngine(counter).identity()["reader"] == offline_module._READER_VERSION

    def ran() -> tuple[int, int]:
        with Executor(OfflineEngine(counter), cache=store) as executor:
            executor.run(planted_document, [plan])
            return executor.calls_made, executor.calls_cached

    first = ran()
    assert first[0] > 0 and ran() == (0, first[0])  # the same reader: every reply from the store
    monkeypatch.setattr(offline_module, "_READER_VERSION", "another-reader")
    assert ran() == first  # another reader: asked again
