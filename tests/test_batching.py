"""Batch mode: a phase's calls go out as one provider batch, recorded in the run store so a
restarted run polls the batch instead of paying again; expired items go again alone; the
budget holds each call's worst case before the batch is sent."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from conftest import PLANTED_PAGE, PLANTED_QUESTION, small_settings, word_counter

from rr_core.errors import ConfigError
from rr_core.llm import OfflineEngine, ScriptedClient
from rr_core.llm.base import BatchLine, BatchResult, BatchStatus, Completion, Identity, LLMRequest
from rr_core.methods import plan_method
from rr_core.runs import Budget, Executor, RunTrace
from rr_core.store import SQLiteStore

WAIT = 120  # seconds: a generous limit on every wait for a condition


class FakeBatch:
    """A provider batch API in memory: answers each line through an engine when the test
    finishes the batch; counts every custom_id ever submitted."""

    def __init__(self, engine: OfflineEngine) -> None:
        self.engine = engine
        self.lock = threading.Condition()
        self.batches: dict[str, list[BatchLine]] = {}
        self.finished: dict[str, str] = {}  # batch id -> final state
        self.expire: set[str] = set()  # custom ids to return as expired once
        self.error: set[str] = set()  # custom ids to return as errored
        self.submissions: Counter[str] = Counter()
        self.auto = True  # finish each batch as soon as it is polled

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        return None  # a fake keeps no batch a lost reply could have made

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        batch_id = f"batch_{uuid.uuid4().hex[:10]}"
        with self.lock:
            self.batches[batch_id] = list(lines)
            self.submissions.update(line.custom_id for line in lines)
            self.lock.notify_all()
        return batch_id

    def finish(self, batch_id: str, state: str = "ended") -> None:
        with self.lock:
            self.finished[batch_id] = state

    def status(self, batch_id: str) -> BatchStatus:
        with self.lock:
            if self.auto and batch_id not in self.finished:
                self.finished[batch_id] = "ended"
            state = self.finished.get(batch_id, "in_progress")
            total = len(self.batches[batch_id])
        return BatchStatus(
            batch_id=batch_id, state=state, total=total, done=0, failed=0, provider_state=state
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        with self.lock:
            lines = list(reversed(self.batches[batch_id]))  # out of order
        for line in lines:
            if line.custom_id in self.expire:
                self.expire.discard(line.custom_id)
                yield BatchResult(custom_id=line.custom_id, kind="expired", error="expired")
            elif line.custom_id in self.error:
                yield BatchResult(custom_id=line.custom_id, kind="errored", error="invalid request: too long")
            else:
                yield BatchResult(
                    custom_id=line.custom_id, kind="succeeded", completion=self.engine.complete(line.request)
                )

    def cancel(self, batch_id: str) -> None:
        self.finish(batch_id, "canceled")


class Batching:
    """A client whose calls can go as batches (the offline engine's replies, as if paid)."""

    name = "fake-provider"
    is_llm = True
    max_concurrency: int | None = None

    def __init__(self) -> None:
        self.engine = OfflineEngine(word_counter())
        self.batch = FakeBatch(self.engine)
        self.sync_calls = 0

    def identity(self) -> Identity:
        return {"provider": "fake-provider", "model": "gpt-4.1-mini"}

    def complete(self, request: LLMRequest) -> Completion:
        self.sync_calls += 1
        return self.engine.complete(request)


def _plans(document, *methods: str):  # type: ignore[no-untyped-def]
    counter = word_counter()
    return [
        plan_method(
            document, PLANTED_QUESTION, small_settings(m, provider="openai", model="gpt-4.1-mini"), counter
        )
        for m in methods
    ]


def _run(executor: Executor, document, plans) -> list[RunTrace]:  # type: ignore[no-untyped-def]
    return executor.run(document, plans)


def _executor(client: Batching, store: SQLiteStore, **kw: object) -> Executor:
    kw.setdefault("poll_s", 0.05)
    return Executor(client, cache=store, mode="batch", **kw)  # type: ignore[arg-type]


def test_each_phase_of_every_run_goes_out_as_one_batch_at_half_price(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    client, store = Batching(), SQLiteStore(tmp_path / "runs.sqlite3")
    plans = _plans(planted_document, "baseline", "rr", "chunked-rr")
    with _executor(client, store) as executor:
        traces = _run(executor, planted_document, plans)
    assert all(t.ok for t in traces), [t.error for t in traces]
    assert all(t.outcome.page == PLANTED_PAGE for t in traces)
    # Phase 1 of all three runs in one batch, then the answer calls of the retrieving runs.
    assert len(client.batch.batches) == 2 and client.sync_calls == 0
    keys = {c.cache_key for t in traces for c in t.calls}  # the same call in two runs goes once
    assert set(client.batch.submissions) == keys and max(client.batch.submissions.values()) == 1
    assert all(c.mode == "batch" for t in traces for c in t.calls)
    with Executor(Batching(), cache=SQLiteStore(tmp_path / "now.sqlite3")) as now:
        sync = _run(now, planted_document, plans)
    for batch, direct in zip(traces, sync, strict=True):
        assert batch.cost_usd == pytest.approx(direct.cost_usd / 2, rel=1e-6)
    assert [b.state for b in store.batches()] == ["ended", "ended"]


def test_a_restarted_run_polls_the_recorded_batch_and_submits_nothing_twice(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    client = Batching()
    client.batch.auto = False
    db = tmp_path / "runs.sqlite3"
    plans = _plans(planted_document, "baseline", "rr")
    first = _executor(client, SQLiteStore(db))
    consumer = threading.Thread(target=lambda: list(first.stream(planted_document, plans)), daemon=True)
    consumer.start()
    with client.batch.lock:
        assert client.batch.lock.wait_for(lambda: client.batch.batches, WAIT)
    first.cancel()  # the process is stopped while its batch is in flight
    consumer.join(WAIT)
    assert not consumer.is_alive()
    first.close()
    submitted = Counter(client.batch.submissions)
    (batch_id,) = client.batch.batches
    assert [b.batch_id for b in SQLiteStore(db).open_batches()] == [batch_id]
    client.batch.finish(batch_id)
    client.batch.auto = True  # the next phase's batch ends when polled
    with _executor(client, SQLiteStore(db)) as second:
        traces = _run(second, planted_document, plans)
    assert all(t.ok for t in traces)
    assert second.dispatcher.sender.resumed == [batch_id]  # type: ignore[attr-defined]
    first_phase = set(submitted)
    assert all(client.batch.submissions[k] == 1 for k in first_phase)  # 0 duplicate submissions
    assert max(client.batch.submissions.values()) == 1
    # The resumed calls are paid by this run (the first one never recorded them).
    assert all(not c.cached and c.mode == "batch" for t in traces for c in t.calls)


def test_expired_items_go_again_alone_and_errored_ones_fail_their_call(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    client = Batching()
    plans = _plans(planted_document, "baseline", "closed-book")
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    keys = []
    with _executor(client, store) as probe:  # learn the keys with a dry pass on a copy
        traces = _run(probe, planted_document, plans)
        keys = [t.calls[0].cache_key for t in traces]
    client = Batching()
    client.batch.expire.add(keys[0])
    client.batch.error.add(keys[1])
    with _executor(client, SQLiteStore(tmp_path / "fresh.sqlite3")) as executor:
        baseline, closed = _run(executor, planted_document, plans)
    assert baseline.ok and client.batch.submissions[keys[0]] == 2
    second_batch = list(client.batch.batches.values())[1]
    assert [line.custom_id for line in second_batch] == [keys[0]]  # resubmitted alone
    assert not closed.ok and "too long" in (closed.error or "")


def test_the_budget_holds_each_batch_calls_worst_case_before_sending(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    client = Batching()
    plans = _plans(planted_document, "baseline", "rr", "chunked-rr")
    with _executor(client, SQLiteStore(tmp_path / "runs.sqlite3"), budget=Budget(1e-6)) as executor:
        traces = _run(executor, planted_document, plans)
    assert not client.batch.batches  # nothing submitted
    assert all(not t.ok and "budget" in (t.error or "").lower() for t in traces)


def test_batch_mode_needs_a_client_that_batches_and_a_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot take batches"):
        Executor(ScriptedClient(), cache=SQLiteStore(tmp_path / "r.sqlite3"), mode="batch").close()
    with pytest.raises(ConfigError, match="run store"):
        Executor(Batching(), mode="batch")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="now or batch"):
        Executor(Batching(), mode="later")  # type: ignore[arg-type]


def test_a_sweep_started_again_after_a_kill_records_what_it_paid_once_and_a_finished_one_none(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Replies a killed sweep paid for are recorded by the same sweep run again (its ledger was
    never written), once each and at the price they were billed; after a sweep writes its
    ledger, running it again records them as found in the store."""
    plans = _plans(planted_document, "baseline", "rr", "chunked-rr")
    db = tmp_path / "runs.sqlite3"

    def ledger_of(traces: list[RunTrace]) -> list[tuple[str, bool, str, float]]:
        return sorted((c.cache_key, c.cached, c.mode, round(c.cost_usd, 12)) for t in traces for c in t.calls)

    with _executor(Batching(), SQLiteStore(db), ledger="sweep-1") as killed:
        first = _run(killed, planted_document, plans)  # its process dies before the ledger is written
    with _executor(Batching(), SQLiteStore(db), ledger="sweep-1") as again:
        resumed = _run(again, planted_document, plans)
    assert ledger_of(resumed) == ledger_of(first)  # the same ledger as the run that paid
    assert again.calls_made == killed.calls_made
    # A repeated call is shared in flight or found in the store, as its timing makes it.
    assert again.calls_cached + again.calls_shared == killed.calls_cached + killed.calls_shared
    assert all(c.mode == "batch" for t in resumed for c in t.calls)
    assert SQLiteStore(db).account("sweep-1") == len({c.cache_key for t in first for c in t.calls})
    with _executor(Batching(), SQLiteStore(db), ledger="sweep-1") as rerun:
        third = _run(rerun, planted_document, plans)
    assert rerun.calls_made == 0 and all(c.cached for t in third for c in t.calls)
    with _executor(Batching(), SQLiteStore(db), ledger="another-sweep") as other:
        _run(other, planted_document, plans)
    assert other.calls_made == 0  # another sweep's replies are never this one's to record


class _Unreadable(FakeBatch):
    """A batch API whose status can never be read (a batch id another account cannot see)."""

    def status(self, batch_id: str) -> BatchStatus:
        from rr_core.errors import ProviderError

        raise ProviderError("HTTP 404: no such batch", provider="fake-provider")


def test_a_batch_whose_state_cannot_be_read_stops_its_runs_waiting_and_says_why(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from rr_core import batching

    client = Batching()
    client.batch = _Unreadable(client.engine)
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    with _executor(client, store, poll_s=0.01) as executor:
        original = batching.MAX_POLL_FAILURES
        batching.MAX_POLL_FAILURES = 3
        try:
            (trace,) = _run(executor, planted_document, _plans(planted_document, "baseline"))
        finally:
            batching.MAX_POLL_FAILURES = original
    assert not trace.ok and "could not be read 3 times" in (trace.error or "")
    assert any("no such batch" in p for p in executor.batch_problems)
    assert [b.state for b in store.open_batches()] == ["submitted"]  # still recorded: polled again later


def test_closing_the_runner_releases_the_budget_of_calls_waiting_on_a_batch(
    planted_document, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    client = Batching()
    client.batch.auto = False
    budget = Budget(10.0)
    executor = _executor(client, SQLiteStore(tmp_path / "runs.sqlite3"), budget=budget)
    consumer = threading.Thread(
        target=lambda: list(executor.stream(planted_document, _plans(planted_document, "baseline", "rr"))),
        daemon=True,
    )
    consumer.start()
    with client.batch.lock:
        assert client.batch.lock.wait_for(lambda: client.batch.batches, WAIT)
    assert budget.held_usd > 0
    executor.close()
    consumer.join(WAIT)
    assert not consumer.is_alive() and budget.held_usd == pytest.approx(0.0)
