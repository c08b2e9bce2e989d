"""Stopping a run: once its listener is gone, no further paid call is sent."""

from __future__ import annotations

import threading
import time

from conftest import PLANTED_QUESTION, planted_texts, word_counter

from rr_core.documents import document_from_texts
from rr_core.llm import ScriptedClient
from rr_core.llm.base import LLMRequest
from rr_core.methods import Method, RunSettings, plan_method
from rr_core.runs import CallEvent, RunTrace, run_methods, stream_runs


def chunked_settings() -> RunSettings:
    return RunSettings(method=Method.CHUNKED_RR, chunk_size=1_000, reminder_every=500)


def test_closing_the_stream_stops_calls_not_yet_sent() -> None:
    counter = word_counter()
    document = document_from_texts("planted", planted_texts(), counter=counter)
    chunks = len(plan_method(document, PLANTED_QUESTION, chunked_settings(), counter).chunks)
    assert chunks >= 3
    release = threading.Event()

    def blocking(request: LLMRequest) -> str:
        release.wait(timeout=30)
        return '{"question": "q", "pages": [1]}'

    client = ScriptedClient(responder=blocking)
    before = threading.active_count()
    stream = stream_runs(document, PLANTED_QUESTION, [chunked_settings()], client, counter, max_concurrency=1)
    first = next(stream)
    assert isinstance(first, CallEvent) and first.status == "started"
    stream.close()  # the user left the page while the first chunk call was in flight
    release.set()
    deadline = time.monotonic() + 30
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before, "the run's threads did not finish"
    assert len(client.requests) == 1  # the call in flight finished; no other chunk was sent


def test_chunked_traces_are_in_chunk_order_whatever_finishes_first() -> None:
    counter = word_counter()
    document = document_from_texts("planted", planted_texts(), counter=counter)

    def reply(request: LLMRequest) -> str:
        if "identify up to" not in request.prompt:
            return '{"question": "q", "answer": "n/a", "page": "n/a"}'
        pages = [int(line.split()[1].rstrip(">")) for line in request.prompt.splitlines() if line.startswith("<PAGE ")]
        # Later chunks answer first, and each names a page outside its chunk.
        time.sleep(0.05 * (len(document.pages) - pages[0]) / len(document.pages))
        return f'{{"question": "q", "pages": [{pages[0]}, 999]}}'

    traces: list[RunTrace] = []
    for _ in range(2):
        [trace] = run_methods(document, PLANTED_QUESTION, [chunked_settings()], ScriptedClient(responder=reply), counter)
        traces.append(trace)
    first = traces[0]
    chunk_order = [c.chunk for c in first.calls if c.stage == "retrieve"]
    assert chunk_order == sorted(chunk_order)
    assert first.dropped_pages == [999] * len(chunk_order)
    assert first.retrieved_pages == sorted(first.retrieved_pages)
    assert traces[0].to_dict()["warnings"] == traces[1].to_dict()["warnings"]
