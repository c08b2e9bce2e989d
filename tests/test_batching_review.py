"""Review findings on the batch sender: a run never waits forever for a call its batch dropped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from rr_core.batching import BatchSender
from rr_core.dispatch import Outgoing
from rr_core.errors import ProviderError
from rr_core.llm.base import BatchLine, BatchResult, BatchStatus, Completion, LLMRequest
from rr_core.store.base import BatchRecord

WAIT = 120  # seconds: a generous limit on every wait for a condition


class Ledger:
    def __init__(self) -> None:
        self.settled: dict[str, str] = {}

    def add_batch(self, batch: BatchRecord, keys: Sequence[str]) -> None:
        pass

    def pending_batch(self, key: str) -> BatchRecord | None:
        return None

    def confirm_batch(self, marker: str, batch_id: str) -> None:
        pass

    def update_batch(
        self, batch_id: str, *, state: str, done: int | None = None, failed: int | None = None
    ) -> None:
        pass

    def settle_items(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        self.settled.update(outcomes)


class SilentBatch:
    """A batch that ends and names none of its calls (an adapter that cannot list what was
    sent, e.g. Anthropic after a restart, returns only the lines it finds)."""

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        return None  # a fake keeps no batch a lost reply could have made

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        return "batch_silent"

    def status(self, batch_id: str) -> BatchStatus:
        return BatchStatus(
            batch_id=batch_id, state="ended", total=1, done=0, failed=0, provider_state="ended"
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        return iter(())

    def cancel(self, batch_id: str) -> None:
        pass


def test_a_call_its_ended_batch_returns_nothing_for_fails_instead_of_waiting_forever() -> None:
    billed: list[Completion | None] = []
    ledger = Ledger()
    sender = BatchSender(
        SilentBatch(),  # type: ignore[arg-type]
        ledger,
        provider="fake",
        label="review",
        keep=lambda out, completion: True,
        bill=lambda out, completion: billed.append(completion),
        poll_s=0.01,
        settle_s=0.01,
    )
    try:
        out = Outgoing(key="k" * 64, request=LLMRequest(prompt="p", schema=object, model="m"))  # type: ignore[arg-type]
        future = sender.send(out)
        try:
            error = future.exception(timeout=WAIT)
        except FutureTimeout:  # pragma: no cover - the defect
            pytest.fail("the call's batch ended without it and the run waits forever")
        assert isinstance(error, ProviderError)
        assert billed == [None]  # its budget hold is released
        assert ledger.settled == {"k" * 64: "expired"}  # released: a later run may send it again
    finally:
        sender.close()
