"""A call of a provider batch answered with nothing usable (no text) was billed all the same:
its usage settles the budget and is the call's cost, at the batch price, like any reply's (not
$0, and not "possibly billed" at its worst case). Real SDKs over HTTP against the loopback stub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fee_document, word_counter

from rr_core.costs import price_usage
from rr_core.methods import plan_method
from rr_core.runs import Budget, Executor
from rr_core.settings import RunSettings
from rr_core.store import SQLiteStore
from tests.stub_server import Reply, StubServer
from tests.test_verification import MODELS, PROVIDERS, client_for

QUESTIONS = ["What is the termination fee?", "Who are the parties?", "When does it end?"]


def empty(path: str, body: Any) -> Reply:
    """Every call answered, and billed, with no text at all."""
    return Reply(text="")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_but_billed_batch_reply_is_paid_at_its_usage(
    stub: StubServer, provider: str, tmp_path: Path
) -> None:
    stub.responder = empty
    stub.batch_auto_complete = True
    document = fee_document()
    settings = RunSettings(method="baseline", provider=provider, model=MODELS[provider][0])
    plans = [plan_method(document, q, settings, word_counter()) for q in QUESTIONS]
    budget = Budget(5.0)
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    with Executor(
        client_for(provider, stub), cache=store, mode="batch", poll_s=0.05, budget=budget
    ) as executor:
        traces = executor.run(document, plans)
    # A capped run's first call goes alone, now (its bill shows how the provider bills); the
    # others go in one batch.
    calls = [c for t in traces for c in t.calls]
    assert len(stub.batches) == 1 and len(calls) == len(QUESTIONS)
    batched = [c for c in calls if c.mode == "batch"]
    assert len(batched) == len(QUESTIONS) - 1
    total = 0.0
    for call in calls:
        assert "returned no text" in (call.error or "") and "possibly billed" not in (call.error or "")
        assert call.usage is not None and call.usage.prompt_tokens > 0
        cost = price_usage(call.usage, settings.model, provider, mode=call.mode).total_usd
        assert cost > 0 and call.cost_usd == pytest.approx(cost)
        total += cost
    assert sum(t.paid_usd for t in traces) == pytest.approx(total)
    assert (
        budget.settled_usd == pytest.approx(total) and budget.possibly_usd == 0.0 and budget.held_usd == 0.0
    )
    assert executor.possibly_billed_note == ""
