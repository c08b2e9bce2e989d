"""Work as plain data: jobs serialise, are planned where they run, and go through one
dispatch chain (cache → in-flight de-duplication → warm-up order → sender)."""

from __future__ import annotations

import json
import pickle
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import ClassVar

import pytest
from conftest import PLANTED_PAGE, PLANTED_QUESTION, small_settings, word_counter

from rr_core.dispatch import Delivered, Dispatcher, Outgoing
from rr_core.errors import ConfigError
from rr_core.jobs import DocumentRef, Documents, Job, Material, plan_job, register_source, source_from_dict
from rr_core.llm import OfflineEngine
from rr_core.llm.base import Completion, LLMRequest, Usage
from rr_core.methods import plan_method
from rr_core.outputs import AnswerOut
from rr_core.runs import CachedCall, Executor, RunTrace


def _job(document, method: str = "rr", **meta: object) -> Job:  # type: ignore[no-untyped-def]
    return Job(
        id=f"{method}-1",
        source=DocumentRef.of(document),
        settings=small_settings(method),
        questions=(PLANTED_QUESTION,),
        tokenizer="words",
        meta=dict(meta),
    )


def test_a_job_round_trips_through_json_and_pickle(planted_document) -> None:  # type: ignore[no-untyped-def]
    job = _job(planted_document, series="R&R", bound=False)
    again = Job.from_dict(json.loads(json.dumps(job.to_dict())))
    assert again == job
    assert pickle.loads(pickle.dumps(job)) == job
    text = json.dumps(job.to_dict())
    assert planted_document.pages[0].text[:40] not in text  # the document is a reference, not its text
    assert len(text) < 2_000


def test_a_job_from_a_newer_version_or_an_unknown_source_is_refused(planted_document) -> None:  # type: ignore[no-untyped-def]
    data = _job(planted_document).to_dict()
    with pytest.raises(ConfigError, match="newer version"):
        Job.from_dict({**data, "schema_version": 99})
    with pytest.raises(ConfigError, match="unknown document source"):
        source_from_dict({"kind": "tape"})


def test_a_job_is_planned_where_it_runs_and_plans_the_same_calls(planted_document) -> None:  # type: ignore[no-untyped-def]
    job = _job(planted_document)
    counter = word_counter()
    direct = plan_method(planted_document, PLANTED_QUESTION, job.settings, counter)
    planned = plan_job(job, Material(planted_document), counter)
    assert [c.render() for c in planned.calls] == [c.render() for c in direct.calls]


def test_jobs_run_through_the_executor_and_match_running_the_plans(planted_document) -> None:  # type: ignore[no-untyped-def]
    counter = word_counter()
    jobs = [_job(planted_document, m) for m in ("baseline", "rr", "chunked-rr")]
    resolver = Documents([planted_document])
    with Executor(OfflineEngine(counter), resolver=resolver, counter=counter) as executor:
        traces = [t for t in executor.stream_jobs(jobs) if isinstance(t, RunTrace)]
    plans = [plan_method(planted_document, PLANTED_QUESTION, j.settings, counter) for j in jobs]
    with Executor(OfflineEngine(counter)) as executor:
        direct = executor.run(planted_document, plans)
    by_job = {t.job_id: t for t in traces}
    for job, expected in zip(jobs, direct, strict=True):
        trace = by_job[job.id]
        assert trace.ok and trace.answer == expected.answer
        assert [c.cache_key for c in trace.calls] == [c.cache_key for c in expected.calls]
        assert trace.outcome.page == PLANTED_PAGE


def test_a_job_whose_document_cannot_be_found_fails_alone_with_a_clear_message(planted_document) -> None:  # type: ignore[no-untyped-def]
    counter = word_counter()
    missing = Job(
        id="lost",
        source=DocumentRef(sha256="0" * 64, name="gone.pdf"),
        settings=small_settings("baseline"),
        questions=("q?",),
    )
    with Executor(
        OfflineEngine(counter), resolver=Documents([planted_document]), counter=counter
    ) as executor:
        traces = [
            t
            for t in executor.stream_jobs([missing, _job(planted_document, "baseline")])
            if isinstance(t, RunTrace)
        ]
    lost = next(t for t in traces if t.job_id == "lost")
    assert lost.error is not None and "gone.pdf" in lost.error and "document store" in lost.error
    assert next(t for t in traces if t.job_id != "lost").ok


def test_documents_resolve_from_stored_bytes(planted_document) -> None:  # type: ignore[no-untyped-def]
    loaded: list[str] = []

    def loader(data: bytes, name: str):  # type: ignore[no-untyped-def]
        loaded.append(name)
        return planted_document

    resolver = Documents(
        fetch=lambda sha: (b"bytes", "planted.txt") if sha == planted_document.sha256 else None, loader=loader
    )
    assert resolver.open(DocumentRef.of(planted_document)).document is planted_document
    assert resolver.open(DocumentRef.of(planted_document)).document is planted_document
    assert loaded == ["planted.txt"]  # opened once, then kept


def test_a_registered_source_kind_opens_through_its_opener(planted_document) -> None:  # type: ignore[no-untyped-def]
    @dataclass(frozen=True)
    class Recipe:
        kind: ClassVar[str] = "test-recipe"
        seed: int

        @property
        def key(self) -> str:
            return f"recipe-{self.seed}"

        def to_dict(self) -> dict[str, object]:
            return {"kind": self.kind, "seed": self.seed}

    register_source("test-recipe", lambda d: Recipe(int(d["seed"])))
    assert source_from_dict({"kind": "test-recipe", "seed": 3}) == Recipe(3)
    resolver = Documents()
    resolver.register(
        "test-recipe",
        lambda source: Material(planted_document, gold_pages=(PLANTED_PAGE,), details={"seed": 3}),
    )
    counter = word_counter()
    job = Job(id="t", source=Recipe(3), settings=small_settings("oracle"), questions=(PLANTED_QUESTION,))
    with Executor(OfflineEngine(counter), resolver=resolver, counter=counter) as executor:
        (trace,) = [t for t in executor.stream_jobs([job]) if isinstance(t, RunTrace)]
    assert trace.ok and trace.details["source"] == {"seed": 3}
    assert trace.calls[0].pages == [PLANTED_PAGE]  # the oracle read the recipe's gold page


# ---- the dispatch chain -------------------------------------------------------------------


class _Gate:
    """A sender whose calls return only when released, recording the order they were sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.pending: dict[str, Future[Delivered]] = {}
        self.lock = threading.Lock()

    def send(self, out: Outgoing) -> Future[Delivered]:
        future: Future[Delivered] = Future()
        with self.lock:
            self.sent.append(out.key)
            self.pending[out.key] = future
        return future

    def release(self, key: str) -> None:
        with self.lock:
            future = self.pending.pop(key)
        future.set_result(Delivered(Completion(text=key, usage=Usage(input_tokens=1)), "provider"))


def _out(key: str, prefix: str | None = None) -> Outgoing:
    return Outgoing(key=key, request=LLMRequest(prompt=key, schema=AnswerOut, model="m"), prefix=prefix)


def test_the_chain_answers_from_the_cache_first_and_shares_a_call_in_flight() -> None:
    class Store:
        def find(self, key: str) -> CachedCall | None:
            return CachedCall("stored", Usage()) if key == "k-stored" else None

    gate = _Gate()
    chain = Dispatcher(gate, Store())
    stored = chain.submit(_out("k-stored"))
    assert stored.result(timeout=60).source == "store" and gate.sent == []
    first, second = chain.submit(_out("k1")), chain.submit(_out("k1"))
    assert gate.sent == ["k1"]  # one call paid for two
    gate.release("k1")
    assert first.result(timeout=60).source == "provider"
    assert second.result(timeout=60).source == "shared"
    assert (chain.cached, chain.shared) == (1, 1)


def test_calls_sharing_a_prefix_wait_for_the_first_reply_before_they_go() -> None:
    gate = _Gate()
    chain = Dispatcher(gate)
    futures = [chain.submit(_out(f"q{i}", prefix="doc")) for i in range(4)]
    other = chain.submit(_out("solo", prefix="other-doc"))
    assert gate.sent == ["q0", "solo"]  # one per prefix first: the rest would all miss the cache
    gate.release("q0")
    assert sorted(gate.sent) == sorted(["q0", "solo", "q1", "q2", "q3"])
    for key in ("q1", "q2", "q3", "solo"):
        gate.release(key)
    assert [f.result(timeout=60).reply.text for f in futures] == ["q0", "q1", "q2", "q3"]
    assert other.result(timeout=60).source == "provider" and chain.deferred == 3
    chain.submit(_out("q9", prefix="doc"))
    assert gate.sent[-1] == "q9"  # a warm prefix sends at once


def test_a_failed_call_in_flight_lets_the_waiting_one_try_for_itself() -> None:
    gate = _Gate()
    chain = Dispatcher(gate)
    first, second = chain.submit(_out("k")), chain.submit(_out("k"))
    with gate.lock:
        failing = gate.pending.pop("k")
    failing.set_exception(RuntimeError("boom"))
    assert first.exception(timeout=60) is not None
    assert gate.sent == ["k", "k"]  # the waiting call was sent on its own
    gate.release("k")
    assert second.result(timeout=60).source == "provider"
