"""Every method through the real SDKs, over HTTP, against the loopback stub (OpenAI Responses,
Anthropic Messages, Gemini generateContent): what the server received, phase by phase;
concurrency proven with barriers; the call cache (no request is paid twice); the fit check and silent truncation."""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from conftest import FEE_PAGES, fee_document, word_counter

from rr_core.documents import Document
from rr_core.llm.anthropic_client import AnthropicClient
from rr_core.llm.gemini_client import GeminiClient
from rr_core.llm.openai_client import OpenAIClient
from rr_core.methods import plan_method
from rr_core.plans import Plan
from rr_core.runs import MAX_STORED_RESPONSE_CHARS, CallEvent, Executor, RunTrace
from rr_core.settings import RunSettings
from rr_core.store import SQLiteStore
from tests.stub_server import Reply, StubServer, json_output, prompt_of, schema_name_of, server_error

QUESTION = "What is the termination fee?"
QUESTIONS = [QUESTION, "Which harbor crane carries small fishing boats?", "What does the orchard yield?"]
LIMIT_S = 30  # barriers and waits give up after this: a safety net, not a speed requirement
PROVIDERS = ("openai", "anthropic", "gemini")
MODELS = {"openai": "gpt-4.1-mini", "anthropic": "claude-sonnet-5-5", "gemini": "gemini-2.5-flash"}
# Small k and c for a 2,000-token document: several chunks, reminders inside them.
SMALL = {
    "reminder_every": 200,
    "chunk_size": 500,
    "rag_chunk_words": 50,
    "brief_top_n": 8,
    "brief_partition": 2,
}


def client_for(provider: str, stub: StubServer) -> OpenAIClient | AnthropicClient | GeminiClient:
    if provider == "gemini":
        return GeminiClient(
            model=MODELS[provider], api_key="AIza-stub-0123456789", base_url=stub.root, max_retries=0
        )
    if provider == "openai":
        return OpenAIClient(model="gpt-4.1-mini", api_key="sk-test-stub", base_url=stub.url, max_retries=0)
    return AnthropicClient(
        model="claude-sonnet-5-5", api_key="sk-ant-stub", base_url=stub.anthropic_url, max_retries=0
    )


def plan_for(
    document: Document, method: str, provider: str, question: str | list[str] = QUESTION, **changes: Any
) -> Plan:
    model = MODELS.get(provider, MODELS["anthropic"])
    settings = RunSettings(method=method, provider=provider, model=model, **SMALL).but(**changes)
    return plan_method(document, question, settings, word_counter())


def shapes(stub: StubServer) -> Counter[str]:
    """How many requests asked for each output shape."""
    return Counter(schema_name_of(body) or "?" for body in stub.bodies())


def pages_sent(body: Any) -> list[int]:
    return [int(n) for n in re.findall(r"^<PAGE (\d+)>$", prompt_of(body), re.MULTILINE)]


def meeting(shape: str, parties: int) -> Callable[[str, Any], Reply]:
    """A responder under which every request for ``shape`` waits until ``parties`` of them are
    in flight together; if they never are, the barrier gives up and the run fails, saying so."""
    barrier = threading.Barrier(parties, timeout=LIMIT_S)

    def respond(path: str, body: Any) -> Reply:
        if schema_name_of(body) == shape:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                return server_error(500, f"the {parties} {shape} calls were never in flight together")
        return Reply()

    return respond


def run_one(stub: StubServer, provider: str, plan: Plan, document: Document, **executor: Any) -> RunTrace:
    with Executor(client_for(provider, stub), **executor) as ex:
        (trace,) = ex.run(document, [plan])
    return trace


@pytest.fixture(scope="module")
def document() -> Document:
    return fee_document()


@pytest.fixture(autouse=True)
def _openai_never_stores(stub: StubServer) -> Any:
    yield
    for body in stub.bodies("responses"):
        assert body["store"] is False  # every OpenAI request of every test here


# ---- Calls per phase, for every method ------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("baseline", {"answer": 1}),
        ("reprompt", {"answer": 1}),
        ("icr", {"retrieval": 1, "answer": 1}),
        ("rr", {"retrieval": 1, "answer": 1}),
        ("rag", {"answer": 1}),
        ("closed-book", {"answer": 1}),
        ("oracle", {"answer": 1}),
    ],
)
def test_calls_per_phase(
    stub: StubServer, document: Document, provider: str, method: str, expected: dict[str, int]
) -> None:
    plan = plan_for(document, method, provider, gold_pages=(3,))
    trace = run_one(stub, provider, plan, document)
    assert trace.ok, trace.error
    assert shapes(stub) == Counter(expected)
    assert len(trace.calls) == len(stub.requests) and trace.answer == "stub answer"
    assert not any("cut the prompt" in w for w in trace.warnings)  # no false truncation alarm
    bodies = stub.bodies()
    if method in ("reprompt", "rr"):
        assert "<INSTRUCTIONS_REMINDER>" in prompt_of(bodies[0])
    if method in ("icr", "rr"):
        assert pages_sent(bodies[0]) == list(range(1, len(document.pages) + 1))
        assert pages_sent(bodies[1]) == [1, 2]  # what the stub retrieved, and only that
        assert "<INSTRUCTIONS_REMINDER>" not in prompt_of(bodies[1])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_closed_book_sends_no_page(stub: StubServer, document: Document, provider: str) -> None:
    trace = run_one(stub, provider, plan_for(document, "closed-book", provider), document)
    (body,) = stub.bodies()
    prompt = prompt_of(body)
    assert QUESTION in prompt
    assert pages_sent(body) == [] and "<PAGE" not in prompt and "<DOCUMENT>" not in prompt
    assert not any(sentence in prompt for sentence in FEE_PAGES.values())
    assert trace.calls[0].pages == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_oracle_sends_only_the_gold_pages(stub: StubServer, document: Document, provider: str) -> None:
    trace = run_one(stub, provider, plan_for(document, "oracle", provider, gold_pages=(19, 3)), document)
    (body,) = stub.bodies()
    assert pages_sent(body) == [3, 19]
    prompt = prompt_of(body)
    assert FEE_PAGES[3] in prompt and FEE_PAGES[19] in prompt
    assert not any(FEE_PAGES[p] in prompt for p in FEE_PAGES if p not in (3, 19))
    assert trace.page == 3 and trace.retrieved_pages == [3, 19]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rag_sends_the_best_passages_most_relevant_first(
    stub: StubServer, document: Document, provider: str
) -> None:
    plan = plan_for(document, "rag", provider, rag_top_k=3)
    trace = run_one(stub, provider, plan, document)
    (body,) = stub.bodies()
    passages = trace.details["passages"]
    assert len(passages) == 3 and [p["rank"] for p in passages] == [1, 2, 3]
    assert all(p["page"] in FEE_PAGES for p in passages)
    prompt = prompt_of(body)
    positions = [prompt.index(p["text"]) for p in passages]
    assert positions == sorted(positions)  # rank order
    assert pages_sent(body) == list(dict.fromkeys(p["page"] for p in passages))
    assert [s.stage for s in trace.steps] == ["rank"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("method", ("chunked-icr", "chunked-rr"))
def test_chunk_calls_overlap_then_one_answer(
    stub: StubServer, document: Document, provider: str, method: str
) -> None:
    plan = plan_for(document, method, provider)
    chunks = len(plan.chunks)
    assert chunks >= 3
    stub.responder = meeting("retrieval", chunks)  # every chunk call must be in flight at once
    trace = run_one(stub, provider, plan, document, concurrency=8)
    assert trace.ok, trace.error
    assert shapes(stub) == Counter({"retrieval": chunks, "answer": 1})
    assert stub.max_in_flight >= chunks
    retrievals = [b for b in stub.bodies() if schema_name_of(b) == "retrieval"]
    assert sorted(pages_sent(b)[0] for b in retrievals) == [c.start for c in plan.chunks]
    reminders = sum(prompt_of(b).count("<INSTRUCTIONS_REMINDER>") for b in retrievals)
    assert (reminders > 0) == (method == "chunked-rr")
    answer = next(b for b in stub.bodies() if schema_name_of(b) == "answer")
    assert pages_sent(answer) == sorted({p for c in plan.chunks for p in list(c)[:2]})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_briefcontext_map_calls_overlap_then_one_reduce(
    stub: StubServer, document: Document, provider: str
) -> None:
    plan = plan_for(document, "briefcontext", provider)
    ranked = plan.phases[0].steps[0].run()  # type: ignore[union-attr]
    groups = math.ceil(len(ranked) / SMALL["brief_partition"])
    assert groups >= 2
    stub.responder = meeting("extraction", groups)  # every group is read at once
    trace = run_one(stub, provider, plan, document, concurrency=8)
    assert trace.ok, trace.error
    assert shapes(stub) == Counter({"extraction": groups, "answer": 1})
    maps = [b for b in stub.bodies() if schema_name_of(b) == "extraction"]
    for body in maps:
        prompt = prompt_of(body)
        assert prompt.index(QUESTION) < prompt.index("<DOCUMENT>")  # the question first
    (reduce,) = [b for b in stub.bodies() if schema_name_of(b) == "answer"]
    assert prompt_of(reduce).count("stub extract") == groups  # one extract per group, with its page
    assert trace.details["preflight"]["decision"] == "map-reduce"
    assert [p["partition"] for p in trace.details["partitions"]] == list(range(1, groups + 1))
    assert [c.stage for c in trace.calls] == ["map"] * groups + ["reduce"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("method", ("icr", "rr", "chunked-rr"))
def test_several_questions_make_one_retrieval_pass(
    stub: StubServer, document: Document, provider: str, method: str
) -> None:
    plan = plan_for(document, method, provider, question=QUESTIONS)
    passes = len(plan.phases[0].calls)  # one per chunk, one for the unchunked methods
    trace = run_one(stub, provider, plan, document)
    assert trace.ok, trace.error
    assert shapes(stub) == Counter({"retrieval_per_question": passes, "answer": len(QUESTIONS)})
    if method != "chunked-rr":
        assert passes == 1
    first = stub.bodies()[0]
    for number, question in enumerate(QUESTIONS, start=1):
        assert f"Question {number}: {question}" in prompt_of(first)
    answers = [b for b in stub.bodies() if schema_name_of(b) == "answer"]
    asked = sorted(next(q for q in QUESTIONS if q in prompt_of(b)) for b in answers)
    assert asked == sorted(QUESTIONS)
    assert all(sum(q in prompt_of(b) for q in QUESTIONS) == 1 for b in answers)  # one question each
    assert [o.question for o in trace.outcomes] == QUESTIONS
    assert all(o.answer == "stub answer" and o.retrieved_pages for o in trace.outcomes)


# ---- The executor over HTTP --------------------------------------------------------------------


def test_a_concurrency_limit_of_two_never_has_more_than_two_calls_in_flight(
    stub: StubServer, document: Document
) -> None:
    stub.responder = meeting("retrieval", 2)  # pairs of chunk calls must meet: two are in flight
    plans = [plan_for(document, m, "openai") for m in ("chunked-icr", "chunked-rr")]
    with Executor(client_for("openai", stub), concurrency=2) as executor:
        traces = executor.run(document, plans)
    assert all(t.ok for t in traces), [t.error for t in traces]
    assert stub.max_in_flight == 2


def test_a_repeated_run_with_a_store_makes_no_new_request(
    stub: StubServer, document: Document, tmp_path: Any
) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plans = [
        plan_for(document, m, "openai", gold_pages=(3,))
        for m in ("chunked-rr", "rag", "briefcontext", "oracle")
    ]
    with Executor(client_for("openai", stub), cache=store) as first:
        before = first.run(document, plans)
    sent = len(stub.requests)
    assert sent == sum(len(t.calls) for t in before) and first.calls_made == sent and first.calls_cached == 0
    assert store.calls_cached() == sent
    with Executor(client_for("openai", stub), cache=store) as second:
        again = second.run(document, plans)
    assert len(stub.requests) == sent  # zero new requests at the server
    assert second.calls_made == 0 and second.calls_cached == sent
    for old, new in zip(before, again, strict=True):
        assert new.ok and all(c.cached for c in new.calls) and new.cached_calls == len(new.calls)
        assert (
            new.paid_usd == 0 and new.cost_usd == old.cost_usd and new.usage == old.usage
        )  # billed once, shown as billed
        assert new.answer == old.answer and new.retrieved_pages == old.retrieved_pages
        assert [c.cache_key for c in new.calls] == [c.cache_key for c in old.calls]
        assert new.cache_key == old.cache_key and new.run_id != old.run_id


def test_an_interrupted_run_pays_only_for_the_missing_calls(
    stub: StubServer, document: Document, tmp_path: Any
) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = plan_for(document, "chunked-rr", "openai")
    release = threading.Event()

    def held(path: str, body: Any) -> Reply:
        release.wait(LIMIT_S)  # the first call waits until the run has been stopped
        return Reply()

    stub.responder = held
    with Executor(client_for("openai", stub), concurrency=1, cache=store) as executor:

        def stop_on_first(event: CallEvent) -> None:
            if event.status == "started" and not executor.cancelled:
                executor.cancel()
                release.set()

        (stopped,) = executor.run(document, [plan], stop_on_first)
    assert len(stub.requests) == 1 and not stopped.ok and stopped.error_kind == "RunCancelled"
    assert store.calls_cached() == 1
    stub.responder = None
    with Executor(client_for("openai", stub), cache=store) as executor:
        (resumed,) = executor.run(document, [plan])
    total = len(plan.phases[0].calls) + 1
    assert resumed.ok and len(resumed.calls) == total
    assert executor.calls_cached == 1 and executor.calls_made == total - 1
    assert len(stub.requests) == 1 + (total - 1)  # only the missing calls were sent
    assert [c.cached for c in resumed.calls].count(True) == 1
    sent_again = [prompt_of(b) for b in stub.bodies()[1:]]
    assert stub.bodies()[0]["input"] not in sent_again  # the paid call was not sent twice


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_prompt_larger_than_the_context_window_is_refused_with_no_request(
    stub: StubServer, document: Document, provider: str
) -> None:
    plans = [plan_for(document, m, provider) for m in ("baseline", "rr", "chunked-rr")]
    window = plans[2].largest_prompt  # chunked R&R fits; the whole document does not
    with Executor(client_for(provider, stub), context_window=window) as executor:
        baseline, rr, chunked = executor.run(document, plans)
    for refused in (baseline, rr):
        assert refused.error_kind == "ContextTooLongError" and refused.calls == []
        assert "Nothing was sent" in (refused.error or "") and "chunked" in (refused.error or "").lower()
    assert chunked.ok
    assert all(len(pages_sent(b)) < len(document.pages) for b in stub.bodies())
    with Executor(client_for(provider, stub), context_window=10) as executor:
        stub.clear()
        executor.run(document, plans)
    assert stub.requests == []


def test_a_server_reporting_far_fewer_prompt_tokens_is_flagged_as_silent_truncation(
    stub: StubServer, document: Document
) -> None:
    usage = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
    stub.responder = lambda path, body: Reply(usage=usage)
    client = OpenAIClient(model="llama3.1", base_url=stub.url, api="chat", max_retries=0)
    plan = plan_for(document, "baseline", "openai-compatible")
    with Executor(client) as executor:
        (trace,) = executor.run(document, [plan])
    assert trace.ok
    (warning,) = [w for w in trace.warnings if "cut the prompt" in w]
    assert "40 prompt tokens" in warning and f"{plan.calls[0].prompt_tokens:,}" in warning


# ---- A runaway reply ------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_runaway_reply_is_a_failed_call_kept_nowhere(
    stub: StubServer, document: Document, provider: str, tmp_path: Any
) -> None:
    """A 1 MiB answer was stored whole (the answer, the history, the call cache); only the
    call's response text was cut to the cap."""
    huge = "fee " * (1 << 18)  # 1 MiB
    stub.responder = lambda path, body: json_output(
        {"question": QUESTION, "answer": huge, "page": "3", "quote": huge}
    )
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    trace = run_one(stub, provider, plan_for(document, "baseline", provider), document, cache=store)
    assert not trace.ok and "characters long" in (trace.error or "")
    assert trace.answer is None and all(not (o.answer or o.quote) for o in trace.outcomes)
    (call,) = trace.calls
    assert len(call.response) <= MAX_STORED_RESPONSE_CHARS
    assert call.usage.output_tokens > 0 and call.cost_usd > 0  # paid: the cost is kept
    assert store.calls_cached() == 0  # never answers again from the cache
    store.save_batch([trace])
    assert len(json.dumps(trace.to_dict())) < 2 * MAX_STORED_RESPONSE_CHARS
    stored = store.get(trace.run_id)
    assert stored is not None and stored.answer is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_trace_records_the_temperature_sent(stub: StubServer, document: Document, provider: str) -> None:
    with Executor(client_for(provider, stub)) as executor:
        (trace,) = executor.run(document, [plan_for(document, "baseline", provider)])
    body = stub.last.body
    if provider == "openai":  # gpt-4.1-mini takes one: 0
        assert body["temperature"] == 0 and trace.calls[0].temperature == 0.0
    elif provider == "gemini":  # in the generation config: 0
        assert body["generationConfig"]["temperature"] == 0 and trace.calls[0].temperature == 0.0
    else:  # the Messages API: a raw body field (the SDK has no parameter for it), 0
        assert body["temperature"] == 0 and trace.calls[0].temperature == 0.0
    assert trace.to_dict()["calls"][0]["temperature"] == trace.calls[0].temperature


def test_the_budget_cap_holds_with_many_calls_in_flight(stub: StubServer, document: Document) -> None:
    """Eight calls at once, each billed far above its estimate: the first goes alone, the bill
    it brings scales what the others hold, and what is paid stays under the cap."""
    from rr_core.runs import Budget

    stub.responder = lambda path, body: Reply(
        usage={"input_tokens": 100_000, "output_tokens": 10, "total_tokens": 100_010}
    )
    plans = [plan_for(document, "chunked-rr", "openai", question=q) for q in QUESTIONS]
    budget = Budget(0.25)  # each call bills about $0.04 on gpt-4.1-mini
    with Executor(client_for("openai", stub), concurrency=8, budget=budget) as executor:
        traces = executor.run(document, plans)
    paid = sum(t.paid_usd for t in traces)
    assert paid <= 0.25 and paid == pytest.approx(budget.settled_usd)
    assert 0 < len(stub.requests) < sum(len(p.calls) for p in plans)
    assert executor.stopped and "budget cap of $0.25" in executor.stopped
    skipped = [c for t in traces for c in t.calls if c.error and "not sent" in c.error]
    assert skipped and all("budget cap" in c.error for c in skipped if c.error)


def test_calls_go_one_at_a_time_until_a_bill_comes_back_even_after_failures(
    stub: StubServer, document: Document
) -> None:
    """The first replies fail unbilled, then every reply bills far above its estimate: no
    second call is in flight before the first bill is known, and then the cap stops the run."""
    from rr_core.runs import Budget

    seen = {"n": 0}
    lock = threading.Lock()

    def respond(path: str, body: Any) -> Reply:
        with lock:
            seen["n"] += 1
            n = seen["n"]
        if n <= 3:
            return Reply(status=400, error_message="bad thing", error_type="invalid_request_error")
        return Reply(usage={"input_tokens": 5_000_000, "output_tokens": 100, "total_tokens": 5_000_100})

    stub.responder = respond
    plans = [plan_for(document, "chunked-rr", "openai", question=q) for q in QUESTIONS]
    budget = Budget(0.18)
    with Executor(client_for("openai", stub), concurrency=8, budget=budget) as executor:
        executor.run(document, plans)
    assert stub.max_in_flight == 1
    assert len(stub.requests) == 4  # three failures, one bill of $2: then nothing more
    assert executor.stopped and "budget cap" in executor.stopped


def test_a_call_shared_with_one_in_flight_is_not_counted_as_found_in_the_store(
    stub: StubServer, document: Document, tmp_path: Any
) -> None:
    """Two runs send one prompt: the second waits for the first's reply. That reply was never
    in the store: counted as shared, not as found there."""
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    # The reply is held until both runs have looked the call up in the store (a condition, not a
    # delay): the twin then finds the call in flight, however busy the machine.
    looked_up = threading.Semaphore(0)
    find = store.find

    def counted_find(key: str) -> Any:
        found = find(key)
        looked_up.release()
        return found

    store.find = counted_find  # type: ignore[method-assign]

    def respond(path: str, body: dict[str, Any]) -> Reply:
        for _ in range(2):
            assert looked_up.acquire(timeout=60), "the two runs never both looked the call up"
        return Reply()

    stub.responder = respond
    plan = plan_for(document, "baseline", "openai")
    with Executor(client_for("openai", stub), concurrency=2, cache=store) as executor:
        first, second = executor.run(document, [plan, plan])
    assert len(stub.requests) == 1
    assert executor.calls_made == 1 and executor.calls_shared == 1 and executor.calls_cached == 0
    assert first.cached_calls == second.cached_calls == 0
    assert sum(c.shared for t in (first, second) for c in t.calls) == 1
