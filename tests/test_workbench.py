"""The application layer the screens and the CLI share: engine defaults, ask and sweep."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import fee_document, word_counter

from rr_core import workbench
from rr_core.errors import ConfigError, LedgerError
from rr_core.lab import TrialSpec
from rr_core.lab.presets import PRESETS
from rr_core.llm import ScriptedClient
from rr_core.llm.providers import REGISTRY
from rr_core.questions import Question
from rr_core.runs import Executor
from rr_core.settings import RunSettings
from rr_core.store import open_store
from rr_core.workbench import Engine

QUESTION = Question("What is the termination fee?", ("7 million",), (11,))


def reply(request: Any) -> str:
    return json.dumps(
        {
            "question": QUESTION.text,
            "answer": "7 million",
            "found": True,
            "citations": [{"page": "11", "quote": ""}],
        }
    )


# ---- the engine ----------------------------------------------------------------------------------


def test_engine_defaults_come_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    offline = Engine.choose()
    assert (offline.provider, offline.model, offline.price_model) == (
        "offline",
        REGISTRY["offline"].default_model,
        REGISTRY["offline"].default_price_model,
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    paid = Engine.choose()
    assert (paid.provider, paid.model, paid.price_model) == (
        "anthropic",
        REGISTRY["anthropic"].default_model,
        "",
    )
    assert Engine.choose("openai", "gpt-4o").model == "gpt-4o"
    assert Engine.choose("simulated", "gpt-4o").model == "simulated"  # it runs itself
    assert Engine.choose("offline", price_model="claude-sonnet-4-5").settings().pricing == (
        "claude-sonnet-4-5",
        None,
    )
    with pytest.raises(ConfigError, match="unknown provider"):
        Engine.choose("mystery")


def test_an_engines_key_is_never_shown() -> None:
    engine = Engine.choose("openai", api_key="sk-secret-123", base_url="http://localhost:9")
    assert "sk-secret-123" not in repr(engine) and "localhost" in repr(engine)


def test_free_engines_make_their_own_clients() -> None:
    for name in ("offline", "simulated"):
        client = Engine.choose(name).client(word_counter())
        assert not client.is_llm


# ---- ask -----------------------------------------------------------------------------------------


def _plan(methods: tuple[str, ...] = ("baseline",)) -> workbench.AskPlan:
    settings = [RunSettings(method=m, model="gpt-4.1-mini", provider="openai") for m in methods]
    return workbench.plan_ask(fee_document(), [QUESTION], settings, word_counter())


def test_ask_plans_estimates_runs_marks_and_saves() -> None:
    plan = _plan(("baseline", "reprompt"))
    assert len(plan.plans) == 2 and plan.calls == sum(p.estimate.calls for p in plan.plans) > 0
    assert plan.priced_as == "gpt-4.1-mini" and plan.price_known and plan.usd > 0
    client = ScriptedClient(responder=reply)
    result = workbench.ask(plan, client, concurrency=2)
    assert [t.method for t in result.traces] == ["baseline", "reprompt"] and result.is_llm
    assert all(t.outcome.correct for t in result.traces)  # marked against the known answer
    assert result.save_error is None and result.batch is not None
    assert {r.run_id for r in open_store().list()} == {t.run_id for t in result.traces}


def test_ask_with_the_store_as_cache_pays_once() -> None:
    first = ScriptedClient(responder=reply)
    workbench.ask(_plan(), first, concurrency=1, cache=True)
    again = ScriptedClient(responder=reply)
    result = workbench.ask(_plan(), again, concurrency=1, cache=True)
    assert len(first.requests) == 1 and again.requests == []
    assert all(c.cached for t in result.traces for c in t.calls)


def test_ask_keeps_paid_results_when_the_history_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise LedgerError("the disk is full")

    monkeypatch.setattr(workbench, "open_history", broken)
    result = workbench.ask(_plan(), ScriptedClient(responder=reply), concurrency=1)
    assert result.batch is None and result.save_error == "the disk is full"
    assert result.traces and result.traces[0].outcome.correct


def test_ask_saves_in_the_store_asked_for(tmp_path: Path) -> None:
    # A session that chose another file (a per-project store) saves there, not in RR_STUDIO_DB's.
    project = tmp_path / "project" / "runs.sqlite3"
    result = workbench.ask(
        _plan(), ScriptedClient(responder=reply), concurrency=1, owner="alice", url=project
    )
    assert workbench.open_history("alice", url=project).count() == len(result.traces)
    assert open_store(owner="alice").count() == 0 and open_store().count() == 0


def test_ask_runs_inside_the_callers_guard() -> None:
    seen: list[Executor] = []

    @contextmanager
    def guard(runner: Executor) -> Iterator[None]:
        seen.append(runner)
        yield

    workbench.ask(_plan(), ScriptedClient(responder=reply), concurrency=1, save=False, guard=guard)
    assert len(seen) == 1 and isinstance(seen[0], Executor)


def test_ask_budget_refuses_before_any_call() -> None:
    plan = _plan(("rr",))
    with pytest.raises(ConfigError, match="above the budget"):
        workbench.check_ask_budget(plan.plans, plan.settings[0], 1e-9)


# ---- sweep ---------------------------------------------------------------------------------------


def test_a_sweep_is_planned_checked_and_run_through_the_store() -> None:
    engine = Engine.choose("simulated")
    counter = word_counter()
    spec = TrialSpec(task="kv", lengths=(20,), repeats=1)
    series = [engine.settings(method="baseline")]
    trials, plan = workbench.plan_measurement(spec, PRESETS["key-value"], None, series, counter, bounds=False)
    assert trials and len(plan.jobs) == len(trials)
    workbench.check_sweep_budget(plan, None)
    with pytest.raises(ConfigError, match="above the budget"):
        workbench.check_sweep_budget(plan, 1e-9)
    first = workbench.sweep(plan, engine.client(counter), concurrency=1)
    assert first.calls_made == plan.calls and not first.is_llm
    again = workbench.sweep(plan, engine.client(counter), concurrency=1)
    assert again.calls_made == 0 and again.calls_cached == plan.calls
    # Another owner's sweep finds none of those replies: each user's cache is their own.
    other = workbench.sweep(plan, engine.client(counter), concurrency=1, owner="bob")
    assert other.calls_made == plan.calls and other.calls_cached == 0
    assert workbench.batch_records(owner="bob") == []


def test_ask_runs_as_jobs_that_plan_the_very_calls_that_were_shown() -> None:
    """Ask goes through the runner as plain-data jobs (the document by its hash), planned
    again where they run: every method, one question or several, the same calls by key."""
    from rr_core.jobs import Documents, plan_job
    from rr_core.methods import method_names

    counter = word_counter()
    document = fee_document()
    questions = [
        Question("What is the termination fee?", gold_pages=(3,)),
        Question("When is the fee due?", gold_pages=(7,)),
    ]
    settings = [RunSettings(method=m, reminder_every=1_000, chunk_size=3_000) for m in method_names()]
    plan = workbench.plan_ask(document, questions, settings, counter)
    resolver = Documents([document])
    for job, shown in zip(plan.jobs(), plan.plans, strict=True):
        assert json.loads(json.dumps(job.to_dict()))["source"]["sha256"] == document.sha256
        again = plan_job(job, resolver.open(job.source), counter)
        assert [c.render() for c in again.calls] == [c.render() for c in shown.calls], shown.method
        assert again.estimate == shown.estimate


def test_ask_saves_to_the_history_of_the_owner_it_is_given() -> None:
    result = workbench.ask(_plan(), ScriptedClient(responder=reply), concurrency=1, cache=True, owner="alice")
    assert result.batch is not None
    assert [r.run_id for r in workbench.open_history("alice").list()] == [t.run_id for t in result.traces]
    assert workbench.open_history().count() == 0  # the local user's history holds none of them
    assert [r["run_id"] for r in workbench.history_records(owner="alice")] == [
        t.run_id for t in result.traces
    ]
    assert workbench.history_records() == []


def test_a_saved_ask_keeps_its_document_so_any_process_can_open_it_again() -> None:
    from rr_core.documents import load_document, pdf_from_texts

    data = pdf_from_texts([f"Page {i}. The fee is due on the first of May." for i in range(1, 4)])
    document = load_document(data, filename="fees.pdf", counter=word_counter())
    settings = [RunSettings(method="baseline", model="gpt-4.1-mini", provider="openai")]
    plan = workbench.plan_ask(document, [QUESTION], settings, word_counter())
    result = workbench.ask(plan, ScriptedClient(responder=reply), concurrency=1)
    assert result.batch is not None
    again = workbench.stored_document(document.sha256, word_counter())
    assert [p.text for p in again.pages] == [p.text for p in document.pages]
    assert again.pdf_bytes == data and again.name == "fees.pdf"  # rendered as the user's PDF
    with pytest.raises(ConfigError, match="not in the document store"):
        workbench.stored_document("0" * 64, word_counter())
