"""The sent-but-unanswered ledger of now-mode calls: each call is recorded in the run store before
it is sent and cleared once its reply is stored; what a killed process left in flight is
reported by the next run of the same calls ("up to $X possibly billed for N calls sent before
the interruption") and counted as possibly billed in its budget; a call that timed out counts
at what it held."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, fee_document, planted_texts, word_counter

from rr_core.documents import Document
from rr_core.llm.openai_client import OpenAIClient
from rr_core.methods import plan_method
from rr_core.plans import Plan
from rr_core.runs import Budget, Executor, worst_case
from rr_core.settings import RunSettings
from rr_core.store import SentCall, SQLiteStore
from tests.stub_server import Reply, StubServer, hanging, prompt_of, server_error

LIMIT_S = 120  # every wait for a condition gives up after this: a safety net, not a deadline


def client(stub: StubServer, timeout_s: float = 120.0) -> OpenAIClient:
    return OpenAIClient(
        model="gpt-4.1-mini", api_key="sk-test-stub", base_url=stub.url, max_retries=0, timeout_s=timeout_s
    )


def baseline(document: Document) -> Plan:
    settings = RunSettings(method="baseline", provider="openai", model="gpt-4.1-mini")
    return plan_method(document, "What is the termination fee?", settings, word_counter())


@pytest.fixture
def document() -> Document:
    return fee_document()


def test_a_call_is_in_the_ledger_while_the_provider_has_it_and_leaves_once_stored(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    path = tmp_path / "runs.sqlite3"
    store = SQLiteStore(path)
    seen: list[list[SentCall]] = []

    def respond(route: str, body: Any) -> Reply:
        seen.append(SQLiteStore(path).unanswered())  # what the store holds while the call is out
        return Reply()

    stub.responder = respond
    plan = baseline(document)
    with Executor(client(stub), cache=store, budget=Budget(1.0)) as executor:
        (trace,) = executor.run(document, [plan])
    assert trace.ok
    ((sent,),) = seen
    worst = worst_case(plan.calls[0], plan.settings.pricing)
    assert sent.key == trace.calls[0].cache_key and sent.sender == executor.sender_id
    assert (sent.provider, sent.model) == ("openai", "gpt-4.1-mini")
    assert sent.reserved_usd == pytest.approx(worst.usd)  # its worst case, as held in the budget
    assert store.unanswered() == [] and store.find(sent.key) is not None
    assert executor.possibly_billed_note == ""


def test_calls_an_interrupted_run_left_in_flight_are_reported_and_held_in_the_budget_once(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = baseline(document)
    with Executor(client(stub)) as dry:
        (first,) = dry.run(document, [plan])
    key = first.calls[0].cache_key
    store.mark_sent(
        SentCall(key=key, provider="openai", model="gpt-4.1-mini", reserved_usd=0.02, sender="killed")
    )
    budget = Budget(1.0)
    with Executor(client(stub), cache=store, budget=budget) as executor:
        (trace,) = executor.run(document, [plan])
    assert trace.ok
    assert budget.possibly_usd == pytest.approx(0.02)  # counted against the cap
    assert executor.possibly_billed_usd == pytest.approx(0.02) and executor.possibly_billed_calls == 1
    assert executor.possibly_billed_note == (
        "up to $0.0200 possibly billed for 1 call sent before the interruption of an earlier run and never answered"
    )
    assert store.unanswered() == []  # reported once: the next run does not count it again
    with Executor(client(stub), cache=store, budget=Budget(1.0)) as again:
        again.run(document, [plan])
    assert again.possibly_billed_note == "" and again.budget is not None and again.budget.possibly_usd == 0.0


def test_left_in_flight_calls_count_against_the_cap_before_anything_is_sent(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = baseline(document)
    with Executor(client(stub)) as dry:
        (first,) = dry.run(document, [plan])
    stub.clear()
    key = first.calls[0].cache_key
    store.mark_sent(
        SentCall(key=key, provider="openai", model="gpt-4.1-mini", reserved_usd=0.9, sender="killed")
    )
    worst = worst_case(plan.calls[0], plan.settings.pricing).usd
    with Executor(client(stub), cache=store, budget=Budget(0.9 + worst / 2)) as executor:
        (trace,) = executor.run(document, [plan])
    assert stub.requests == []  # $0.90 possibly billed leaves no room for its worst case
    assert executor.stopped and "budget cap" in executor.stopped and not trace.ok


def test_a_call_that_timed_out_counts_as_possibly_billed_at_what_it_held(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    stub.enqueue(hanging())
    plan = baseline(document)
    budget = Budget(1.0)
    with Executor(client(stub, timeout_s=1.0), cache=store, budget=budget) as executor:
        (trace,) = executor.run(document, [plan])
    worst = worst_case(plan.calls[0], plan.settings.pricing).usd
    assert not trace.ok and "possibly billed" in (trace.calls[0].error or "")
    assert budget.possibly_usd == pytest.approx(worst) and budget.settled_usd == 0.0
    assert executor.possibly_billed_usd == pytest.approx(worst)
    assert executor.possibly_billed_note.startswith(
        f"up to ${worst:.4f} possibly billed for 1 call sent with no"
    )
    # It stays in the ledger: the next run of it says it may have been billed.
    assert [c.key for c in store.unanswered()] == [trace.calls[0].cache_key]
    with Executor(client(stub), cache=store) as again:
        (retry,) = again.run(document, [plan])
    assert retry.ok and again.possibly_billed_calls == 1 and store.unanswered() == []


def test_kill_9_in_now_mode_answered_calls_come_from_the_store_and_calls_in_flight_are_reported(
    tmp_path: Path, stub: StubServer
) -> None:
    """A Lab sweep in now mode killed (-9) with two replies stored and two calls at the provider;
    the same command again: the stored replies are not asked again, the two calls in flight are
    sent again and said to be possibly billed."""
    release = threading.Event()
    lock = threading.Lock()
    answered: list[str] = []

    def gated(route: str, body: Any) -> Reply:
        with lock:
            first_two = len(answered) < 2
            if first_two:
                answered.append(prompt_of(body))
        if not first_two:
            release.wait(LIMIT_S)  # in flight until the process is gone
        return Reply()

    stub.responder = gated
    document = tmp_path / "planted.txt"
    document.write_text("\f".join(planted_texts()))
    db = tmp_path / "runs.sqlite3"
    env = dict(os.environ, OPENAI_API_KEY="sk-test-kill", OPENAI_BASE_URL=stub.url, RR_STUDIO_DB=str(db))
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    argv = [sys.executable, "-m", "rr_core", "--json", "lab", str(document), "--provider", "openai"]
    argv += ["--model", "gpt-4.1-mini", "--methods", "baseline", "--depths", "0,25,50,75,100"]
    argv += ["--repeats", "1", "--lengths", "3000", "--concurrency", "2"]
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        limit = time.monotonic() + LIMIT_S
        store = SQLiteStore(db) if db.exists() else None
        while time.monotonic() < limit and process.poll() is None:
            if store is None and db.exists():
                store = SQLiteStore(db)
            if len(stub.requests) >= 4 and store is not None and len(store.unanswered()) >= 2:
                break
            time.sleep(0.05)
        assert store is not None and len(stub.requests) == 4 and len(store.unanswered()) == 2
        process.kill()
        process.wait(timeout=LIMIT_S)
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
    first_run = len(stub.requests)
    stub.responder = None
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    data = json.loads(done.stdout)
    again = [prompt_of(r.body) for r in stub.requests[first_run:]]
    assert not set(answered) & set(again)  # paid before the kill: from the run store
    in_flight = [prompt_of(r.body) for r in stub.requests[2:first_run]]
    assert len(in_flight) == 2 and set(in_flight) <= set(again)  # sent again: paid twice (no idempotency)
    assert len(again) == len(set(again))  # every other call once
    # The sweep's own ledger counts the two stored before the kill as paid by it (once).
    assert data["calls_made"] == len(again) + 2
    assert data["possibly_billed"].startswith("up to $")
    assert "2 calls sent before the interruption" in data["possibly_billed"]
    assert data["possibly_usd"] > 0 and f"up to ${data['possibly_usd']:.4f}" in data["possibly_billed"]
    assert SQLiteStore(db).unanswered() == []


def test_a_parallel_run_never_takes_the_calls_another_live_run_has_in_flight(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    """Two sessions ask the same question at once: the second finds the first's call in the
    ledger, in flight; it is the first's to settle, not 'possibly billed' in the second."""
    path = tmp_path / "runs.sqlite3"
    release, arrived = threading.Event(), threading.Event()
    calls = 0
    lock = threading.Lock()

    def first_waits(route: str, body: Any) -> Reply:
        nonlocal calls
        with lock:
            calls += 1
            first = calls == 1
        if first:
            arrived.set()
            release.wait(LIMIT_S)  # in flight until the second run has finished
        return Reply()

    stub.responder = first_waits
    plan = baseline(document)
    results: list[Any] = []
    with Executor(client(stub), cache=SQLiteStore(path), budget=Budget(1.0)) as first:
        worker = threading.Thread(target=lambda: results.extend(first.run(document, [plan])))
        worker.start()
        try:
            assert arrived.wait(LIMIT_S)
            (in_flight,) = SQLiteStore(path).unanswered()
            assert in_flight.sender == first.sender_id
            with Executor(client(stub), cache=SQLiteStore(path), budget=Budget(1.0)) as second:
                (trace,) = second.run(document, [plan])
            assert trace.ok and second.possibly_billed_note == ""
            assert second.budget is not None and second.budget.possibly_usd == 0.0
            assert [c.sender for c in SQLiteStore(path).unanswered()] == [first.sender_id]  # still its own
        finally:
            release.set()
            worker.join(LIMIT_S)
    (answered,) = results
    assert answered.ok and first.possibly_billed_note == "" and SQLiteStore(path).unanswered() == []


def test_a_runner_that_leaves_hands_what_it_took_back_for_the_next(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    """A worker stopping (SIGTERM) took an earlier process's unanswered call and ends its work
    'queued': the call goes back to the ledger, and the runner that takes the work up reports it."""
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = baseline(document)
    with Executor(client(stub)) as dry:
        (first,) = dry.run(document, [plan])
    key = first.calls[0].cache_key
    left = SentCall(key=key, provider="openai", model="gpt-4.1-mini", reserved_usd=0.02, sender="killed")
    store.mark_sent(left)
    release = threading.Event()
    # Its own call fails once released (answered, not stored): what it took is all that is left.
    stub.responder = lambda route, body: (release.wait(LIMIT_S), server_error(500, "busy"))[1]
    leaving = Executor(client(stub), cache=store, budget=Budget(1.0))
    worker = threading.Thread(target=lambda: leaving.run(document, [plan]))
    worker.start()
    try:
        limit = time.monotonic() + LIMIT_S
        while not leaving.earlier_unanswered and time.monotonic() < limit:
            time.sleep(0.02)  # waits for a condition; the limit is a safety net
        assert [c.key for c in leaving.earlier_unanswered] == [key]
        leaving.leave()
    finally:
        release.set()
        worker.join(LIMIT_S)
        leaving.close()
    assert [(c.key, c.sender, c.reserved_usd) for c in store.unanswered()] == [(key, "killed", 0.02)]
    stub.responder = None
    with Executor(client(stub), cache=store, budget=Budget(1.0)) as next_runner:
        (trace,) = next_runner.run(document, [plan])
    assert trace.ok and next_runner.possibly_billed_calls == 1
    assert "1 call sent before the interruption" in next_runner.possibly_billed_note


def test_a_client_that_breaks_after_sending_leaves_its_call_in_the_ledger(
    document: Document, tmp_path: Path
) -> None:
    """Something other than a provider's answer (a bug in a client, raised after the call went
    out) says nothing of the bill: the call stays possibly billed, here and for the next run."""
    from rr_core.llm.base import Completion, LLMRequest
    from rr_core.llm.fake import ScriptedClient

    class BreaksAfterSending(ScriptedClient):
        def complete(self, request: LLMRequest) -> Completion:
            raise RuntimeError("a bug after the request was sent")

    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = baseline(document)
    budget = Budget(1.0)
    with Executor(BreaksAfterSending(), cache=store, budget=budget) as executor:
        (trace,) = executor.run(document, [plan])
    assert not trace.ok and "RuntimeError" in (trace.error or "")
    assert executor.possibly_billed_calls == 1 and budget.possibly_usd > 0
    assert [c.sender for c in store.unanswered()] == [executor.sender_id]


def test_a_closed_executor_stays_the_sender_of_its_calls_until_they_are_back(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    """A screen left mid-run closes its runner while a call is still out: until that call is
    back, a run started next must not take it (it is in flight, its sender's to settle)."""
    from datetime import UTC, datetime

    from rr_core import senders

    path = tmp_path / "runs.sqlite3"
    release, arrived = threading.Event(), threading.Event()

    def held(route: str, body: Any) -> Reply:
        arrived.set()
        release.wait(LIMIT_S)
        return Reply()

    stub.responder = held
    executor = Executor(client(stub), cache=SQLiteStore(path), budget=Budget(1.0))
    worker = threading.Thread(target=lambda: executor.run(document, [baseline(document)]))
    worker.start()
    try:
        assert arrived.wait(LIMIT_S)
        executor.close()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        assert not senders.is_gone(executor.sender_id, now, limit_s=120.0)
    finally:
        release.set()
        worker.join(LIMIT_S)
    assert SQLiteStore(path).unanswered() == []  # back, stored, cleared
    assert senders.is_gone(executor.sender_id, now, limit_s=120.0)
