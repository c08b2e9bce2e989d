"""Runs: every method end to end on the offline engine, and faults through the scripted client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from conftest import PLANTED_PAGE, PLANTED_QUESTION, planted_texts, word_counter

from rr_core.documents import Document, document_from_texts
from rr_core.errors import ProviderError, RateLimitError
from rr_core.llm import OfflineEngine, ScriptedClient
from rr_core.llm.base import LLMRequest
from rr_core.methods import Method, RunSettings, plan_method
from rr_core.prompts import split_tagged
from rr_core.runs import CallEvent, RunTrace, merge_ranked, run_method, run_methods, stream_runs

REMINDER_OPEN = "<INSTRUCTIONS_REMINDER>"
FACT = "4.2 million euros"


def settings(method: Method | str, **changes: object) -> RunSettings:
    """Small k and c so a 40-page document gets reminders and several chunks."""
    base = RunSettings(
        method=Method(method), reminder_every=1_000, chunk_size=3_000, price_model="gpt-4.1-mini"
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def answer_json(answer: str = FACT, page: object = PLANTED_PAGE) -> str:
    return json.dumps({"question": PLANTED_QUESTION, "answer": answer, "page": page})


def retrieval_json(pages: list[object]) -> str:
    return json.dumps({"question": PLANTED_QUESTION, "pages": pages})


def by_task(
    retrieve: Callable[[LLMRequest], str], answer: Callable[[LLMRequest], str]
) -> Callable[[LLMRequest], str]:
    return lambda request: retrieve(request) if request.task == "retrieve" else answer(request)


def pages_of(request: LLMRequest) -> list[int]:
    return [n for n, _ in split_tagged(request.prompt)]


def good_responder(request: LLMRequest) -> str:
    """Retrieves the gold page when the prompt holds it (else the first page) and answers."""
    if request.task == "retrieve":
        pages = pages_of(request)
        return retrieval_json([PLANTED_PAGE] if PLANTED_PAGE in pages else pages[:1])
    return answer_json()


def run(document: Document, client: object, *methods: Method, **changes: object) -> list[RunTrace]:
    return run_methods(
        document,
        PLANTED_QUESTION,
        [settings(m, **changes) for m in methods],
        client,
        word_counter(),  # type: ignore[arg-type]
    )


# ---- The offline engine, end to end ----------------------------------------------------


def test_every_method_finds_the_planted_fact_offline(planted_document: Document) -> None:
    traces = run(planted_document, OfflineEngine(word_counter()), *Method)
    assert [t.method for t in traces] == [m.value for m in Method]
    for trace in traces:
        assert trace.ok, (trace.method, trace.error)
        assert FACT in (trace.answer or ""), trace.method
        assert trace.page == PLANTED_PAGE, trace.method
        assert trace.is_llm is False and trace.provider == "offline"
        if Method(trace.method).retrieves:
            assert PLANTED_PAGE in trace.retrieved_pages
            assert trace.calls[-1].stage == "answer"
            assert PLANTED_PAGE in trace.calls[-1].pages
        else:
            assert trace.retrieved_pages == [] and len(trace.calls) == 1


def test_offline_usage_is_the_token_count_of_what_was_read(planted_document: Document) -> None:
    counter = word_counter()
    trace = run_method(
        planted_document, PLANTED_QUESTION, settings(Method.RR), OfflineEngine(counter), counter
    )
    for call in trace.calls:
        assert call.usage.input_tokens == counter.count(call.prompt)
        assert call.usage.output_tokens == counter.count(call.response) > 0
    assert trace.usage.prompt_tokens == sum(c.usage.prompt_tokens for c in trace.calls)


def test_call_counts_follow_the_plan_offline(planted_document: Document) -> None:
    counter = word_counter()
    for method in Method:
        plan = plan_method(planted_document, PLANTED_QUESTION, settings(method), counter)
        trace = run_method(
            planted_document, PLANTED_QUESTION, settings(method), OfflineEngine(counter), counter
        )
        assert len(trace.calls) == len(plan.calls), method
        planned = [(c.stage, c.chunk) for c in plan.calls]
        assert [(c.stage, c.chunk) for c in trace.calls] == planned


def test_cost_by_stage_sums_to_the_cost(planted_document: Document) -> None:
    traces = run(planted_document, OfflineEngine(word_counter()), *Method)
    for trace in traces:
        stages = trace.cost_by_stage()
        assert trace.cost_usd > 0
        assert sum(stages.values()) == pytest.approx(trace.cost_usd, rel=1e-9)
        method = Method(trace.method)
        assert (stages["reminders"] > 0) == method.reminds
        assert (stages["retrieval"] > 0) == method.retrieves
        assert stages["answer"] > 0


def test_run_trace_round_trips_through_dict_and_json(planted_document: Document) -> None:
    traces = run(planted_document, OfflineEngine(word_counter()), Method.CHUNKED_RR, Method.BASELINE)
    for trace in traces:
        data = trace.to_dict()
        assert RunTrace.from_dict(data) == trace
        through_json = json.loads(json.dumps(data))
        rebuilt = RunTrace.from_dict(through_json)
        assert json.loads(json.dumps(rebuilt.to_dict())) == through_json
        assert rebuilt.cost_usd == pytest.approx(trace.cost_usd)
        assert rebuilt.usage == trace.usage
        assert (
            data["cost_usd"] == trace.cost_usd and data["usage"]["input_tokens"] == trace.usage.input_tokens
        )


# ---- Retrieval outcomes (scripted) --------------------------------------------------------


def test_out_of_range_retrieved_pages_are_dropped_and_reported(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_task(lambda r: retrieval_json([27, 999, 0, -1, "3", 27]), lambda r: answer_json())
    )
    trace = run(planted_document, client, Method.ICR)[0]
    assert trace.ok
    assert trace.retrieved_pages == [27, 3]
    assert sorted(trace.dropped_pages) == [-1, 0, 999]
    assert any("999" in w for w in trace.warnings)
    assert trace.calls[-1].pages == [3, 27]
    assert trace.answer == FACT and trace.page == 27


def test_chunk_retrieval_of_a_page_outside_the_chunk_is_dropped(planted_document: Document) -> None:
    # A chunk's model saw only that chunk: a number from elsewhere cannot be its finding.
    client = ScriptedClient(
        responder=by_task(
            lambda r: retrieval_json([pages_of(r)[0], 40 if 40 not in pages_of(r) else 1]),
            lambda r: answer_json(page=1),
        )
    )
    trace = run(planted_document, client, Method.CHUNKED_ICR)[0]
    assert trace.ok
    first_pages = [call.pages[0] for call in trace.calls if call.stage == "retrieve"]
    assert trace.retrieved_pages == first_pages
    assert trace.dropped_pages  # every chunk named a page it did not hold


@pytest.mark.parametrize("pages", [[], [0, 41, 1000]])
def test_empty_retrieval_answers_na_without_an_answer_call(
    planted_document: Document, pages: list[int]
) -> None:
    client = ScriptedClient(responder=by_task(lambda r: retrieval_json(pages), lambda r: answer_json()))
    for method in (Method.ICR, Method.RR, Method.CHUNKED_RR):
        trace = run(planted_document, client, method)[0]
        assert trace.ok and trace.answer == "n/a" and trace.page is None
        assert all(c.stage == "retrieve" for c in trace.calls)
        assert any("no valid page" in w for w in trace.warnings)
    assert all(r.task == "retrieve" for r in client.requests)


def test_more_pages_than_asked_are_cut_to_n(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_task(lambda r: retrieval_json(list(range(1, 9))), lambda r: answer_json(page=3))
    )
    trace = run(planted_document, client, Method.ICR, top_k=5)[0]
    assert trace.retrieved_pages == [1, 2, 3, 4, 5]
    assert any("kept the first 5" in w for w in trace.warnings)


def test_answer_prompt_holds_only_the_retrieved_pages(planted_document: Document) -> None:
    client = ScriptedClient(responder=by_task(lambda r: retrieval_json([31, 27, 4]), lambda r: answer_json()))
    trace = run(planted_document, client, Method.RR)[0]
    answer_requests = [r for r in client.requests if r.task == "answer"]
    assert len(answer_requests) == 1
    pages = split_tagged(answer_requests[0].prompt)
    assert pages == [(n, planted_document.page(n).text) for n in (4, 27, 31)]
    assert trace.calls[-1].prompt == answer_requests[0].prompt
    # The answer phase of R&R carries no reminders.
    assert REMINDER_OPEN not in answer_requests[0].prompt
    assert trace.calls[-1].reminders_after == [] and trace.calls[-1].leading_reminders == 0


def test_rr_retrieval_prompt_has_reminders_and_icr_does_not(planted_document: Document) -> None:
    for method, expected in ((Method.RR, True), (Method.ICR, False)):
        client = ScriptedClient(responder=good_responder)
        trace = run(planted_document, client, method)[0]
        retrieval = [r for r in client.requests if r.task == "retrieve"]
        assert len(retrieval) == 1
        assert (REMINDER_OPEN in retrieval[0].prompt) is expected
        if expected:
            assert retrieval[0].prompt.count(REMINDER_OPEN) == len(trace.calls[0].reminders_after) > 0
            assert PLANTED_QUESTION in retrieval[0].prompt.split(REMINDER_OPEN)[1]


def test_a_cited_page_outside_the_context_is_dropped(planted_document: Document) -> None:
    client = ScriptedClient(responder=by_task(lambda r: retrieval_json([27]), lambda r: answer_json(page=5)))
    trace = run(planted_document, client, Method.ICR)[0]
    assert trace.answer == FACT and trace.page is None
    assert any("page 5" in w and "not in its context" in w for w in trace.warnings)
    baseline = run(planted_document, ScriptedClient([answer_json(page=99)]), Method.BASELINE)[0]
    assert baseline.page is None and any("page 99" in w for w in baseline.warnings)


@pytest.mark.parametrize(("raw", "page"), [("7", 7), ("page 7", 7), (7.0, 7), ("n/a", None)])
def test_cited_page_forms(planted_document: Document, raw: object, page: int | None) -> None:
    trace = run(planted_document, ScriptedClient([answer_json(page=raw)]), Method.BASELINE)[0]
    assert trace.ok and trace.page == page and not trace.warnings


# ---- Faults: one method's failure is its own ------------------------------------------------


def test_malformed_answer_fails_only_that_method(planted_document: Document) -> None:
    def answer(request: LLMRequest) -> str:
        is_baseline = REMINDER_OPEN not in request.prompt and len(pages_of(request)) == 40
        return "Sorry, I think the fee is 4.2 million." if is_baseline else answer_json()

    client = ScriptedClient(responder=by_task(lambda r: retrieval_json([27]), answer))
    baseline, reprompt, icr = run(planted_document, client, Method.BASELINE, Method.REPROMPT, Method.ICR)
    assert baseline.error_kind == "ResponseParseError" and not baseline.ok
    assert baseline.answer is None
    assert baseline.calls[0].response.startswith("Sorry")  # the raw reply is kept
    assert baseline.calls[0].error
    for trace in (reprompt, icr):
        assert trace.ok and trace.answer == FACT and trace.page == 27


def test_malformed_retrieval_is_a_parse_error(planted_document: Document) -> None:
    client = ScriptedClient(
        responder=by_task(lambda r: '{"question": "q", "answer": "no pages here"}', lambda r: answer_json())
    )
    trace = run(planted_document, client, Method.ICR)[0]
    assert trace.error_kind == "ResponseParseError"
    assert all(r.task == "retrieve" for r in client.requests)


def test_provider_error_in_one_method_leaves_the_others(planted_document: Document) -> None:
    def retrieve(request: LLMRequest) -> str:
        if REMINDER_OPEN in request.prompt:
            raise RateLimitError("429: slow down", provider="scripted", status=429)
        return retrieval_json([27])

    client = ScriptedClient(responder=by_task(retrieve, lambda r: answer_json()))
    baseline, icr, rr = run(planted_document, client, Method.BASELINE, Method.ICR, Method.RR)
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

    client = ScriptedClient(responder=by_task(retrieve, lambda r: answer_json()))
    trace = run(planted_document, client, Method.CHUNKED_ICR)[0]
    assert trace.ok and trace.answer == FACT and trace.page == PLANTED_PAGE
    assert any("failed" in w and "502" in w for w in trace.warnings)
    failed = [c for c in trace.calls if c.error]
    assert len(failed) == 1 and 1 in failed[0].pages
    assert PLANTED_PAGE in trace.retrieved_pages
    assert not any(p in trace.retrieved_pages for p in failed[0].pages)


def test_all_chunks_failing_is_the_methods_error(planted_document: Document) -> None:
    def retrieve(request: LLMRequest) -> str:
        raise ProviderError("500 server error", provider="scripted", status=500)

    client = ScriptedClient(responder=by_task(retrieve, lambda r: answer_json()))
    trace = run(planted_document, client, Method.CHUNKED_RR)[0]
    assert trace.error_kind == "ProviderError" and trace.answer is None
    assert all(r.task == "retrieve" for r in client.requests)


def test_an_unexpected_exception_surfaces_as_an_internal_error(planted_document: Document) -> None:
    def broken(request: LLMRequest) -> str:
        raise ValueError("bug in a client")

    baseline, icr = run(
        planted_document, ScriptedClient(responder=broken), Method.BASELINE, Method.CHUNKED_ICR
    )
    for trace in (baseline, icr):
        assert trace.error_kind == "InternalError" and "bug in a client" in (trace.error or "")


# ---- Concurrency ------------------------------------------------------------------------------


class InFlight:
    """A responder that records the most calls in flight at once (``most``).

    The first ``meet`` calls wait for each other at a barrier before answering, so a run gets
    past them only if that many calls really are in flight together; if they never are, the
    barrier gives up and those calls fail the run, saying so. The other calls are held
    ``hold_s``, which gives calls that should not overlap the chance to show that they do.
    """

    def __init__(self, meet: int = 0, hold_s: float = 0.05) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.arrived = 0
        self.meet = meet
        self.hold_s = hold_s
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
                time.sleep(self.hold_s)
            return good_responder(request)
        finally:
            with self.lock:
                self.now -= 1


def test_chunk_retrievals_run_concurrently(planted_document: Document) -> None:
    counter = word_counter()
    plan = plan_method(planted_document, PLANTED_QUESTION, settings(Method.CHUNKED_ICR), counter)
    chunks = len(plan.retrieval_calls)
    assert chunks >= 3
    # Every chunk's retrieval must be in flight at once for any of them to answer.
    inflight = InFlight(meet=chunks)
    trace = run_methods(
        planted_document,
        PLANTED_QUESTION,
        [settings(Method.CHUNKED_ICR)],
        ScriptedClient(responder=inflight),
        counter,
        max_concurrency=chunks,
    )[0]
    assert trace.ok and trace.page == PLANTED_PAGE, trace.error
    assert inflight.most == chunks


@pytest.mark.parametrize("methods", [(Method.CHUNKED_RR,), (Method.CHUNKED_ICR, Method.RR, Method.BASELINE)])
def test_max_concurrency_one_bounds_calls_in_flight(
    planted_document: Document, methods: tuple[Method, ...]
) -> None:
    inflight = InFlight()
    traces = run_methods(
        planted_document,
        PLANTED_QUESTION,
        [settings(m, chunk_size=5_000) for m in methods],
        ScriptedClient(responder=inflight),
        word_counter(),
        max_concurrency=1,
    )
    assert all(t.ok for t in traces), [t.error for t in traces]
    assert inflight.most == 1


def test_max_concurrency_bounds_across_methods(planted_document: Document) -> None:
    # Two calls must be in flight together to get on; the limiter lets no third one in.
    inflight = InFlight(meet=2)
    traces = run_methods(
        planted_document,
        PLANTED_QUESTION,
        [settings(m) for m in (Method.CHUNKED_ICR, Method.CHUNKED_RR, Method.BASELINE)],
        ScriptedClient(responder=inflight),
        word_counter(),
        max_concurrency=2,
    )
    assert all(t.ok for t in traces), [t.error for t in traces]
    assert inflight.most == 2


# ---- Events, order, configuration --------------------------------------------------------------


def test_events_report_each_call_and_traces_come_last_per_method(planted_document: Document) -> None:
    events: list[CallEvent] = []
    traces = run_methods(
        planted_document,
        PLANTED_QUESTION,
        [settings(Method.CHUNKED_ICR), settings(Method.BASELINE)],
        OfflineEngine(word_counter()),
        word_counter(),
        on_event=events.append,
    )
    assert [t.method for t in traces] == ["chunked-icr", "baseline"]
    for trace in traces:
        mine = [e for e in events if e.method == trace.method]
        assert sum(e.status == "started" for e in mine) == len(trace.calls)
        assert sum(e.status == "done" for e in mine) == len(trace.calls)


def test_stream_runs_yields_a_failed_event_for_a_failed_call(planted_document: Document) -> None:
    client = ScriptedClient([RateLimitError("429", provider="scripted", status=429)])
    items = list(
        stream_runs(planted_document, PLANTED_QUESTION, [settings(Method.BASELINE)], client, word_counter())
    )
    assert isinstance(items[-1], RunTrace) and items[-1].error_kind == "RateLimitError"
    assert [e.status for e in items if isinstance(e, CallEvent)] == ["started", "failed"]


def test_configuration_errors_are_raised_before_any_call(planted_document: Document) -> None:
    from rr_core.errors import ConfigError

    client = ScriptedClient(responder=good_responder)
    with pytest.raises(ConfigError):
        run(planted_document, client, Method.BASELINE, Method.RR, top_k=0)
    with pytest.raises(ConfigError):
        run_methods(planted_document, "  ", [settings(Method.BASELINE)], client, word_counter())
    assert client.requests == []


def test_merge_ranked_interleaves_chunk_rankings() -> None:
    assert merge_ranked([[3, 1], [12, 11, 10], [20]]) == [3, 12, 20, 1, 11, 10]
    assert merge_ranked([[5, 6], [6, 5]]) == [5, 6]
    assert merge_ranked([]) == []


def test_run_records_settings_estimate_and_document_identity(planted_document: Document) -> None:
    trace = run(planted_document, OfflineEngine(word_counter()), Method.RR)[0]
    assert trace.document == "planted.txt" and trace.document_sha256 == planted_document.sha256
    assert trace.settings["method"] == "rr" and trace.settings["reminder_every"] == 1_000
    assert trace.estimate_usd > 0 and trace.price_known
    assert trace.started_at and trace.latency_s >= 0
    assert trace.question == PLANTED_QUESTION


def test_small_document_with_all_methods_and_default_settings() -> None:
    texts = planted_texts(pages=6, gold=4, sentences=10)
    counter = word_counter()
    document = document_from_texts("small.txt", texts, counter=counter)
    traces = run_methods(
        document, PLANTED_QUESTION, [RunSettings(method=m) for m in Method], OfflineEngine(counter), counter
    )
    for trace in traces:
        assert trace.ok and trace.page == 4 and FACT in (trace.answer or "")
        if Method(trace.method).chunked:
            assert len(trace.calls) == 2  # one chunk + the answer
