"""Stopping a run: once cancelled (or its listener is gone), no further paid call is sent."""

from __future__ import annotations

import json
import threading
import time

from conftest import PLANTED_QUESTION, planted_texts, word_counter

from rr_core.documents import Document, document_from_texts
from rr_core.llm import ScriptedClient
from rr_core.llm.base import LLMRequest
from rr_core.methods import plan_method
from rr_core.outputs import RetrievalOut
from rr_core.plans import Plan
from rr_core.runs import CallEvent, Executor, RunTrace, run_plans
from rr_core.settings import RunSettings

LIMIT_S = 30  # a generous limit for waits on a condition, never a speed requirement


def planted() -> Document:
    return document_from_texts("planted", planted_texts(), counter=word_counter())


def chunked_plan(document: Document) -> Plan:
    settings = RunSettings(method="chunked-rr", chunk_size=1_000, reminder_every=500)
    return plan_method(document, PLANTED_QUESTION, settings, word_counter())


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + LIMIT_S
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    assert condition(), what  # type: ignore[operator]


def test_closing_the_stream_stops_calls_not_yet_sent() -> None:
    document = planted()
    plan = chunked_plan(document)
    assert len(plan.chunks) >= 3
    release = threading.Event()

    def blocking(request: LLMRequest) -> str:
        release.wait(timeout=LIMIT_S)
        return '{"question": "q", "pages": [1]}'

    client = ScriptedClient(responder=blocking)
    before = threading.active_count()
    executor = Executor(client, concurrency=1)
    stream = executor.stream(document, [plan])
    first = next(stream)
    assert isinstance(first, CallEvent) and first.status == "started"
    stream.close()  # the user left the page while the first chunk call was in flight
    assert executor.cancelled
    release.set()
    executor.close()
    wait_for(lambda: threading.active_count() <= before, "the run's threads did not finish")
    assert len(client.requests) == 1  # the call in flight finished; no other chunk was sent


def test_cancel_sends_no_further_calls_and_says_which_were_skipped() -> None:
    document = planted()
    plan = chunked_plan(document)
    release = threading.Event()

    def blocking(request: LLMRequest) -> str:
        release.wait(timeout=LIMIT_S)
        return json.dumps({"question": "q", "pages": [request.layout.pages()[0][0]]})  # type: ignore[union-attr]

    client = ScriptedClient(responder=blocking)
    events: list[CallEvent] = []
    with Executor(client, concurrency=1) as executor:

        def on_event(event: CallEvent) -> None:
            events.append(event)
            if event.status == "started" and not executor.cancelled:
                executor.cancel()  # the Stop button, pressed while the first call is in flight
                release.set()

        (trace,) = executor.run(document, [plan], on_event)
    assert len(client.requests) == 1 and executor.calls_made == 1
    assert [e.status for e in events].count("started") == 1
    skipped = [e for e in events if e.status == "skipped"]
    # The other chunks, then the answer call (resolved from the one chunk that answered).
    assert len(skipped) == len(plan.phases[0].calls)
    assert all("stopped" in e.message for e in skipped)
    assert trace.error_kind == "RunCancelled" and "stopped" in (trace.error or "")
    assert [c.error is None for c in trace.calls].count(True) == 1


def test_chunked_traces_are_in_chunk_order_whatever_finishes_first() -> None:
    document = planted()
    plan = chunked_plan(document)
    chunks = len(plan.phases[0].calls)
    firsts = [c.pages[0] for c in plan.phases[0].calls]

    def run_once() -> RunTrace:
        # Each chunk answers only after the chunk after it has answered: the last chunk first.
        answered = {first: threading.Event() for first in firsts}

        def reply(request: LLMRequest) -> str:
            if request.schema is not RetrievalOut:
                return '{"question": "q", "answer": "n/a", "page": "n/a"}'
            first = request.layout.pages()[0][0]  # type: ignore[union-attr]
            index = firsts.index(first)
            if index + 1 < chunks:
                assert answered[firsts[index + 1]].wait(LIMIT_S), "the chunks were not all in flight"
            answered[first].set()
            # Each names a page outside its chunk too.
            return json.dumps({"question": "q", "pages": [first, 999]})

        (trace,) = run_plans(document, [plan], ScriptedClient(responder=reply), concurrency=chunks)
        return trace

    traces = [run_once() for _ in range(2)]
    first = traces[0]
    assert first.ok, first.error
    chunk_order = [c.chunk for c in first.calls if c.stage == "retrieve"]
    assert chunk_order == list(range(1, chunks + 1))
    assert first.dropped_pages == [999] * chunks
    assert first.retrieved_pages == firsts
    assert traces[0].to_dict()["warnings"] == traces[1].to_dict()["warnings"]
