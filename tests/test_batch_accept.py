"""The accept window: a batch is recorded (under our own id, "submitting") before it is sent,
so a reply lost after the provider accepted it, or a process killed then, never leads to a
second submission: the next run finds the batch at the provider (OpenAI: by the id in its
metadata; Anthropic: by its time and size) and polls it. Real SDKs against the loopback stub."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from rr_core.batching import BatchSender
from rr_core.dispatch import Delivered, Outgoing
from rr_core.errors import RunCancelled
from rr_core.llm.base import Completion
from rr_core.runs import Budget
from rr_core.store import SQLiteStore
from rr_core.store.base import BatchRecord, CachedCall
from tests.stub_server import StubServer
from tests.test_llm_batch import KINDS, key_of, make_client, request

WAIT = 120  # seconds: a generous limit on every wait for a condition
CALLS = 3


def _sender(kind: str, stub: StubServer, store: SQLiteStore) -> BatchSender:
    client = make_client(kind, stub)
    assert client.batch is not None

    def keep(out: Outgoing, completion: Completion) -> bool:
        store.put(out.key, CachedCall(completion.text, completion.usage, mode="batch"))
        return True

    return BatchSender(
        client.batch, store, provider=kind, label="accept", keep=keep, poll_s=0.05, settle_s=0.0
    )


def _send_all(sender: BatchSender) -> list[Future[Delivered]]:
    sender.run_started()
    sent = [sender.send(Outgoing(key=key_of(i), request=request(i))) for i in range(CALLS)]
    sender.wait_started()
    return sent


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_whose_acceptance_was_lost_is_found_and_polled_not_sent_again(
    kind: str, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    with StubServer() as stub:
        stub.lose_create_replies = 1  # the provider creates the batch; its answer never arrives
        first = _sender(kind, stub, store)
        try:
            for future in _send_all(first):
                with pytest.raises(RunCancelled, match="possibly billed"):
                    future.result(WAIT)
            assert len(first.possibly_billed) == CALLS  # never shown as "$0 paid"
        finally:
            first.close()
        assert len(stub.batches) == 1
        recorded = store.pending_batch(key_of(0))
        assert recorded is not None and recorded.state == "submitting"

        stub.batch_auto_complete = True
        second = _sender(kind, stub, store)  # the same work run again (a new process)
        try:
            sent = _send_all(second)
            assert stub.release_batch_items() == CALLS  # the provider answers the batch it had
            replies = [future.result(WAIT) for future in sent]
        finally:
            second.close()
        assert all(reply.batch for reply in replies)
        assert len(stub.batches) == 1 and max(stub.batch_submissions.values()) == 1  # 0 paid twice
        (batch_id,) = stub.batches
        assert second.resumed == [batch_id]
        assert store.pending_batch(key_of(0)) is None  # settled, under the provider's id
        assert [b.batch_id for b in store.batches() if b.batch_id == batch_id] == [batch_id]


@pytest.mark.parametrize("kind", KINDS)
def test_a_recorded_batch_the_provider_never_created_is_sent_once(kind: str, tmp_path: Path) -> None:
    """Killed after recording it and before sending: the provider lists no such batch, so its
    calls are released and sent, once."""
    store = SQLiteStore(tmp_path / "runs.db")
    keys = [key_of(i) for i in range(CALLS)]
    store.add_batch(
        BatchRecord(
            batch_id="rr-killedbeforesending", provider=kind, label="accept", state="submitting", total=CALLS
        ),
        keys,
    )
    with StubServer() as stub:
        stub.batch_auto_complete = True
        sender = _sender(kind, stub, store)
        try:
            replies = [future.result(WAIT) for future in _send_all(sender)]
        finally:
            sender.close()
        assert all(reply.batch for reply in replies)
        assert len(stub.batches) == 1 and sorted(stub.batch_submissions.elements()) == sorted(keys)


def test_a_call_sent_without_a_bill_back_stays_counted_as_possibly_billed() -> None:
    budget = Budget(1.0)
    unanswered = budget.reserve(0.4)
    assert unanswered is not None
    budget.settle(unanswered, None, possibly=True)  # sent; it timed out, or its batch's reply was lost
    assert budget.possibly_usd == pytest.approx(0.4) and budget.settled_usd == 0.0
    refused = budget.reserve(0.4)
    assert refused is not None  # 0.8 of 1.0: room for it
    budget.settle(refused, None)  # refused by the provider: nothing billed, nothing counted
    assert budget.possibly_usd == pytest.approx(0.4)
    assert budget.reserve(0.7) is None  # 0.4 possibly billed + 0.7 would pass the cap


@pytest.mark.parametrize("kind", KINDS)
def test_each_reply_is_billed_before_its_run_is_handed_it(kind: str, tmp_path: Path) -> None:
    """The batch's thread is a daemon: a run handed its last reply lets the process end. What the
    call cost is recorded first, so an ending process never cuts a bill short."""
    store = SQLiteStore(tmp_path / "runs.db")
    futures: dict[str, Future[Delivered]] = {}
    billed: list[tuple[str, bool]] = []  # (call, whether its run had the reply already)

    def keep(out: Outgoing, completion: Completion) -> bool:
        store.put(out.key, CachedCall(completion.text, completion.usage, mode="batch"))
        return True

    def bill(out: Outgoing, completion: Completion | None) -> None:
        assert completion is not None
        billed.append((out.key, futures[out.key].done()))

    with StubServer() as stub:
        stub.batch_auto_complete = True
        client = make_client(kind, stub)
        assert client.batch is not None
        sender = BatchSender(
            client.batch,
            store,
            provider=kind,
            label="bill-first",
            keep=keep,
            bill=bill,
            poll_s=0.05,
            settle_s=0.0,
        )
        try:
            sender.run_started()
            for i in range(CALLS):
                futures[key_of(i)] = sender.send(Outgoing(key=key_of(i), request=request(i)))
            sender.wait_started()
            replies = [future.result(WAIT) for future in futures.values()]
        finally:
            sender.close()
    assert all(reply.batch for reply in replies)
    assert sorted(key for key, _ in billed) == sorted(futures)
    assert [key for key, handed in billed if handed] == []  # none handed over before its bill
