"""The budget in now mode, through the real SDK against the loopback stub: each call holds its
worst case (its prompt and its whole output allowance) before it is sent and settles at the
billed usage, so calls in flight together never pass the cap, even on a server that bills 2 or
50 times what it read and wrote."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from conftest import fee_document, word_counter

import tests.stub_server as stub_server
from rr_core.documents import Document
from rr_core.llm.openai_client import OpenAIClient
from rr_core.methods import plan_method
from rr_core.plans import Plan
from rr_core.runs import Budget, Executor, worst_case
from rr_core.settings import RunSettings
from tests.stub_server import Reply, StubServer, prompt_of, schema_name_of

QUESTIONS = [
    "What is the termination fee?",
    "Which harbor crane carries small fishing boats?",
    "What does the orchard yield?",
]
LIMIT_S = 60  # barriers give up after this: a safety net, not a speed requirement


def numbered(respond: Callable[[int, Any], Reply]) -> Callable[[str, Any], Reply]:
    """A stub responder told each request's number (from 1, in the order they arrived)."""
    seen = itertools.count(1)
    lock = threading.Lock()

    def responder(path: str, body: Any) -> Reply:
        with lock:
            n = next(seen)
        return respond(n, body)

    return responder


def client(stub: StubServer) -> OpenAIClient:
    return OpenAIClient(model="gpt-4.1-mini", api_key="sk-test-stub", base_url=stub.url, max_retries=0)


def plans(document: Document) -> list[Plan]:
    settings = RunSettings(
        method="chunked-rr", provider="openai", model="gpt-4.1-mini", reminder_every=200, chunk_size=500
    )
    return [plan_method(document, q, settings, word_counter()) for q in QUESTIONS]


@pytest.fixture
def document() -> Document:
    return fee_document()


@pytest.fixture(autouse=True)
def _words(monkeypatch: pytest.MonkeyPatch) -> None:
    # The stub counts as the plans do (a word a token): what it bills over them is its factor.
    monkeypatch.setattr(stub_server, "TOKENIZER", lambda text: len(text.split()))


def honest_paid(stub: StubServer, document: Document) -> float:
    with Executor(client(stub), concurrency=8) as executor:
        traces = executor.run(document, plans(document))
    stub.clear()
    return sum(t.paid_usd for t in traces)


@pytest.mark.parametrize("factor", [2.0, 50.0])
def test_calls_in_flight_together_never_pass_the_cap_on_a_server_billing_over(
    stub: StubServer, document: Document, monkeypatch: pytest.MonkeyPatch, factor: float
) -> None:
    cap = 6 * honest_paid(stub, document)
    monkeypatch.setattr(stub_server, "BILLING_FACTOR", factor)
    budget = Budget(cap)
    if factor == 2.0:
        # The second and third calls meet at the stub (a barrier): they were in flight together,
        # whatever the machine's load (on a busy one, calls sent together could each be answered
        # before the next arrived, and the run then tested one call at a time).
        barrier = threading.Barrier(2, timeout=LIMIT_S)

        def respond(n: int, body: Any) -> Reply:
            if n in (2, 3):
                barrier.wait()  # raises (and the call fails) unless both are in flight together
            return Reply()

        stub.responder = numbered(respond)
    with Executor(client(stub), concurrency=8, budget=budget) as executor:
        traces = executor.run(document, plans(document))
    paid = sum(t.paid_usd for t in traces)
    assert 0 < paid <= cap and paid == pytest.approx(budget.settled_usd)
    assert budget.held_usd == pytest.approx(0.0)  # every hold was settled
    if factor == 50.0:  # the whole run would cost 50 times what it should: it stops, saying why
        assert executor.stopped and f"budget cap of ${cap:.2f}" in executor.stopped
        skipped = [c for t in traces for c in t.calls if c.error and "not sent" in c.error]
        assert skipped and all("budget cap" in (c.error or "") for c in skipped)
    else:
        assert stub.max_in_flight >= 2  # calls went together after the first bill
        assert all(c.error is None for t in traces for c in t.calls)


def test_after_the_first_bill_calls_go_together_each_holding_its_worst_case(
    stub: StubServer, document: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two retrievals meet at the stub (a barrier): both were in flight at once, each holding
    its worst case scaled by the first bill (billed twice its tokens)."""
    monkeypatch.setattr(stub_server, "BILLING_FACTOR", 2.0)
    barrier = threading.Barrier(2, timeout=LIMIT_S)
    held: list[float] = []
    budget = Budget(100.0)
    reserve = budget.reserve

    def recording_reserve(*args: Any, **kwargs: Any) -> Any:
        reservation = reserve(*args, **kwargs)
        if reservation is not None:
            held.append(budget.held_usd)
        return reservation

    budget.reserve = recording_reserve  # type: ignore[method-assign]

    def respond(n: int, body: Any) -> Reply:
        if n in (2, 3) and schema_name_of(body) == "retrieval":
            barrier.wait()  # raises (and the call fails) unless both are in flight together
        return Reply()

    stub.responder = numbered(respond)
    (plan,) = plans(document)[:1]
    with Executor(client(stub), concurrency=8, budget=budget) as executor:
        (trace,) = executor.run(document, [plan])
    assert trace.error is None and all(c.error is None for c in trace.calls)
    assert stub.max_in_flight >= 2
    # What a later call held: its worst case with the prompt billed at twice its tokens.
    retrieval = next(c for c in plan.calls if c.stage == "retrieve")
    worst = worst_case(retrieval, plan.settings.pricing)
    doubled = worst.price(2 * retrieval.prompt_tokens, worst.output_tokens)
    assert max(held) >= doubled * 0.99


def test_a_call_whose_worst_case_does_not_fit_is_not_sent(stub: StubServer, document: Document) -> None:
    """A cap above the call's estimate but below its worst case (every output token it may
    write): nothing is sent, and the run says why."""
    settings = RunSettings(method="baseline", provider="openai", model="gpt-4.1-mini")
    plan = plan_method(document, QUESTIONS[0], settings, word_counter())
    (call,) = plan.calls
    worst = worst_case(call, settings.pricing)
    assert plan.estimate.usd < worst.usd
    budget = Budget((plan.estimate.usd + worst.usd) / 2)
    with Executor(client(stub), budget=budget) as executor:
        (trace,) = executor.run(document, [plan])
    assert stub.requests == [] and budget.settled_usd == 0.0
    assert executor.stopped and "budget cap" in executor.stopped
    assert trace.calls[0].error and "not sent" in trace.calls[0].error


def long_after_the_first(max_share: float = 0.9) -> Any:
    """An honest server whose first reply is short and whose later ones use most of their output
    allowance (billed as written: within what the call allowed)."""

    def respond(n: int, body: Any) -> Reply:
        written = 5 if n == 1 else int(max_share * body["max_output_tokens"])
        read = len(prompt_of(body).split())
        return Reply(usage={"input_tokens": read, "output_tokens": written, "total_tokens": read + written})

    return numbered(respond)


def test_replies_longer_than_estimated_never_take_calls_in_flight_past_the_cap(
    stub: StubServer, document: Document
) -> None:
    """Calls held only their estimated output before (the cap was passed by every call in flight
    at once); each holds its whole output allowance now."""
    stub.responder = long_after_the_first()
    runs = plans(document)
    retrieval = next(c for c in runs[0].calls if c.stage == "retrieve")
    cap = 4 * worst_case(retrieval, runs[0].settings.pricing).usd
    budget = Budget(cap)
    with Executor(client(stub), concurrency=8, budget=budget) as executor:
        traces = executor.run(document, runs)
    paid = sum(t.paid_usd for t in traces)
    assert 0 < paid <= cap
    assert executor.stopped and "budget cap" in executor.stopped
