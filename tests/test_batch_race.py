"""The batch sender never leaves a run waiting: a reply collected by the batch watcher while a
run is still joining the batch reaches that run; a watcher that dies fails the runs waiting on
it, with its reason. Orderings are forced with events, never sleeps."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

import pytest

from rr_core.batching import BatchSender
from rr_core.dispatch import Delivered, Outgoing
from rr_core.errors import RunCancelled
from rr_core.llm.base import BatchLine, BatchResult, BatchStatus, Completion, LLMRequest, Usage
from rr_core.outputs import AnswerOut
from rr_core.store import SQLiteStore
from rr_core.store.base import BatchRecord

WAIT = 120  # seconds: a generous limit on every wait for a condition
BATCH = "batch_race"
FIRST, SECOND = "key-first", "key-second"


def _out(key: str) -> Outgoing:
    return Outgoing(
        key=key, request=LLMRequest(prompt=f"prompt {key}", schema=AnswerOut, model="gpt-4.1-mini")
    )


def _reply(key: str) -> Completion:
    return Completion(text=f"reply {key}", usage=Usage(input_tokens=10, output_tokens=2))


class _Ordered:
    """An ended batch whose results come one by one, each released by the test."""

    def __init__(self) -> None:
        self.lookup_started = threading.Event()
        self.first_collected = threading.Event()
        self.go_on = threading.Event()
        self.submitted: list[str] = []

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        return None  # a fake keeps no batch a lost reply could have made

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        self.submitted.extend(line.custom_id for line in lines)
        return "batch_again"

    def status(self, batch_id: str) -> BatchStatus:
        return BatchStatus(
            batch_id=batch_id, state="ended", total=2, done=2, failed=0, provider_state="ended"
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        # FIRST's run has looked its batch up in the store and not yet joined it.
        assert self.lookup_started.wait(WAIT)
        yield BatchResult(custom_id=FIRST, kind="succeeded", completion=_reply(FIRST))
        # The watcher has taken FIRST's reply (no run had asked for it yet): the test lets a
        # run ask for it now, and the watcher goes on once that run has joined.
        self.first_collected.set()
        assert self.go_on.wait(WAIT)
        yield BatchResult(custom_id=SECOND, kind="succeeded", completion=_reply(SECOND))

    def cancel(self, batch_id: str) -> None:
        """Nothing to stop."""


class _HeldLookup(SQLiteStore):
    """The store, whose look-up of FIRST's batch returns once the watcher has collected it."""

    api: _Ordered

    def pending_batch(self, key: str) -> BatchRecord | None:
        record = super().pending_batch(key)
        if key == FIRST:
            self.api.lookup_started.set()
            assert self.api.first_collected.wait(WAIT)
        return record


def _sender(api: object, store: SQLiteStore, **kw: object) -> BatchSender:
    return BatchSender(
        api,  # type: ignore[arg-type]
        store,
        provider="fake",
        label="race",
        keep=lambda out, completion: True,
        poll_s=0.01,
        **kw,  # type: ignore[arg-type]
    )


def test_a_reply_the_watcher_collected_while_a_run_joined_reaches_that_run(tmp_path: Path) -> None:
    store = _HeldLookup(tmp_path / "runs.db")
    api = store.api = _Ordered()
    store.add_batch(
        BatchRecord(batch_id=BATCH, provider="fake", label="race", state="submitted", total=2),
        [FIRST, SECOND],
    )
    sender = _sender(api, store)
    joined: list[Future[Delivered]] = []
    try:
        second = sender.send(_out(SECOND))  # starts the watcher on the recorded batch
        # FIRST's run looks its batch up; the watcher collects FIRST's reply meanwhile.
        joining = threading.Thread(target=lambda: joined.append(sender.send(_out(FIRST))))
        joining.start()
        joining.join(WAIT)
        assert joined
        api.go_on.set()
        first = joined[0]
        assert second.result(WAIT).reply.text == f"reply {SECOND}"
        assert first.result(WAIT).reply.text == f"reply {FIRST}"
        assert api.submitted == []  # nothing sent again
    finally:
        sender.close()
        store.close()


class _Broken(_Ordered):
    def status(self, batch_id: str) -> BatchStatus:
        raise ValueError("a bug in an adapter")


def test_a_watcher_that_dies_fails_the_runs_waiting_on_it_with_its_reason(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    store.add_batch(
        BatchRecord(batch_id=BATCH, provider="fake", label="race", state="submitted", total=2),
        [FIRST, SECOND],
    )
    sender = _sender(_Broken(), store)
    try:
        waiting = sender.send(_out(FIRST))
        with pytest.raises(RunCancelled, match="a bug in an adapter"):
            waiting.result(WAIT)
    finally:
        sender.close()
        store.close()


class _BrokenSubmit(_Ordered):
    def find(self, marker: str, *, total: int, since: float) -> str | None:
        return None  # a fake keeps no batch a lost reply could have made

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        raise ValueError("a bug while submitting")


def test_a_submitter_that_dies_fails_the_runs_waiting_on_it_with_its_reason(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    sender = _sender(_BrokenSubmit(), store, settle_s=0.0)
    try:
        sender.run_started()
        waiting = sender.send(_out(FIRST))
        sender.wait_started()
        with pytest.raises(RunCancelled, match="a bug while submitting"):
            waiting.result(WAIT)
    finally:
        sender.close()
        store.close()


class _Phases:
    """Ended batches whose results come one by one; batch 1's second reply waits for the test."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()
        self.release_second = threading.Event()

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        return None  # a fake keeps no batch a lost reply could have made

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        with self.lock:
            self.batches.append([line.custom_id for line in lines])
            return f"batch_{len(self.batches)}"

    def status(self, batch_id: str) -> BatchStatus:
        return BatchStatus(
            batch_id=batch_id, state="ended", total=2, done=2, failed=0, provider_state="ended"
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        with self.lock:
            keys = list(self.batches[int(batch_id.split("_")[1]) - 1])
        for number, key in enumerate(keys):
            if batch_id == "batch_1" and number == 1:
                assert self.release_second.wait(WAIT)
            yield BatchResult(custom_id=key, kind="succeeded", completion=_reply(key))

    def cancel(self, batch_id: str) -> None:
        """Nothing to stop."""


def test_a_run_answered_first_waits_for_the_others_next_calls_one_batch_per_phase(tmp_path: Path) -> None:
    """On a busy machine an ended batch's replies are handed out slowly: the run answered
    first sends its next phase while the other still waits for its reply (already in the
    results). Its call is not sent alone: the next batch waits until that reply is handed out
    and the other run has sent its call too (the order is forced with an event)."""
    store = SQLiteStore(tmp_path / "runs.db")
    api = _Phases()
    sender = _sender(api, store, settle_s=0.0)
    try:
        sender.run_started()
        sender.run_started()
        first = {run: sender.send(_out(f"{run}-1")) for run in ("a", "b")}
        # Each run waits on a collection it keeps (the sender tells waits apart by identity).
        waits = {run: [first[run]] for run in ("a", "b")}
        for run in ("a", "b"):
            sender.wait_started(waits[run])
        assert first["a"].result(WAIT).reply.text == "reply a-1"
        sender.wait_finished(waits["a"])
        second_a = sender.send(_out("a-2"))
        waits["a"] = [second_a]
        sender.wait_started(waits["a"])  # run a waits; run b's reply is still being handed out
        api.release_second.set()
        assert first["b"].result(WAIT).reply.text == "reply b-1"
        sender.wait_finished(waits["b"])
        second_b = sender.send(_out("b-2"))
        waits["b"] = [second_b]
        sender.wait_started(waits["b"])
        assert second_a.result(WAIT).reply.text == "reply a-2"
        assert second_b.result(WAIT).reply.text == "reply b-2"
        assert api.batches == [["a-1", "b-1"], ["a-2", "b-2"]]  # one batch per phase, each call once
    finally:
        sender.close()
        store.close()
