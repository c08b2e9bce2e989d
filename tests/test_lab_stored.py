"""A Lab sweep's runs stored as they arrive: each finished run (one method on one trial) is
recorded as small plain JSON, and the sweep's result rebuilt from those records is the result the
run produced (scores, cells, bounds, failures, calls, paid), with no call and no client. A sweep
stopped and resumed records only the runs it had not recorded, and pays nothing twice."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from rr_core.kinds.sweep import SweepWork
from rr_core.lab.report import sweep_json
from rr_core.lab.sweep import SweepResult, TrialRecord, stored_sweep
from rr_core.store import Store, open_store
from rr_core.tokens import counter_for_model
from rr_core.work import resume_work, run_work, submit_sweep
from rr_core.workbench import sweep
from tests.test_work import Gated, _wait


def _work(provider: str = "offline", **values: Any) -> SweepWork:
    chosen: dict[str, Any] = {"concurrency": 2, "bounds": True, **values}
    return SweepWork(
        preset="quick", series=("rr", "baseline"), provider=provider, model=provider, price_model="gpt-4.1-mini",
        lengths=(3000,), repeats=1, depths=(0.0, 50.0), sample="contract", **chosen,
    )  # fmt: skip


def _run_info(result: SweepResult) -> dict[str, Any]:
    """What a run says of itself beside its records (as the work's summary keeps it)."""
    return {
        "engine": result.engine,
        "is_llm": result.is_llm,
        "cancelled": result.cancelled,
        "stopped": result.stopped,
        "save_error": result.save_error,
        "possibly_billed": result.possibly_billed,
        "possibly_usd": result.possibly_usd,
    }


def _same_measurement(rebuilt: SweepResult, ran: SweepResult) -> None:
    assert rebuilt.scores == ran.scores and rebuilt.bound_scores == ran.bound_scores
    assert rebuilt.summaries == ran.summaries and rebuilt.bounds == ran.bounds
    assert rebuilt.cells == ran.cells and rebuilt.failures == ran.failures
    assert (rebuilt.paid_usd(), rebuilt.would_cost_usd()) == (ran.paid_usd(), ran.would_cost_usd())
    assert (rebuilt.calls_made, rebuilt.calls_cached, rebuilt.calls_shared) == (
        ran.calls_made,
        ran.calls_cached,
        ran.calls_shared,
    )


@pytest.mark.parametrize("provider", ["offline", "simulated"])
def test_a_sweep_rebuilt_from_its_trial_records_is_the_sweep_it_ran(provider: str, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.sqlite3"))
    work = _work(provider)
    _, plan, engine = work.planned(store)
    records: list[TrialRecord] = []
    ran = sweep(
        plan, engine.client(counter_for_model(engine.counting_model())), concurrency=2, store=store,
        on_trial=records.append,
    )  # fmt: skip
    assert len(records) == len(plan.jobs) and not any(r.not_asked for r in records)
    assert ran.calls_made > 0 and ran.bound_scores and len(ran.summaries) == 2
    # What is stored: plain JSON, small (no prompt, no document text).
    stored = [json.loads(json.dumps(r.to_dict())) for r in records]
    assert all(len(json.dumps(r)) < 2_000 for r in stored)
    assert all(TrialRecord.from_dict(d) == r for d, r in zip(stored, records, strict=True))
    rebuilt = stored_sweep(plan, stored, _run_info(ran))
    assert rebuilt == ran
    _same_measurement(rebuilt, ran)
    assert sweep_json(plan, rebuilt) == sweep_json(plan, ran)
    # Records of a job the plan does not hold are left out; a job recorded twice counts once.
    extra = {**stored[0], "key": "not-in-this-plan#0"}
    assert stored_sweep(plan, [extra, *stored, stored[0]], _run_info(ran)).scores == ran.scores


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    path = str(tmp_path / "runs.sqlite3") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    return open_store(path)


def test_a_sweep_run_as_work_is_shown_from_its_stored_runs_as_the_same_sweep_run_here(
    store: Store, tmp_path: Path
) -> None:
    work = _work()
    work_id = submit_sweep(store, work)
    done = run_work(store, work_id)
    assert done is not None and done.state == "done", done.error if done else None
    assert done.done == done.total == len(store.work_results(work_id))
    # The same sweep run here, on a store of its own: the same measurement, the same calls.
    elsewhere = open_store(str(tmp_path / "elsewhere.sqlite3"))
    _, plan, engine = work.planned(elsewhere)
    ran = sweep(
        plan, engine.client(counter_for_model(engine.counting_model())), concurrency=2, store=elsewhere
    )
    _, shown_plan, shown = work.stored(store, work_id, done.result)
    assert shown_plan.jobs == plan.jobs
    _same_measurement(shown, ran)
    assert shown.is_llm is False and shown.engine == ran.engine
    # The work's summary is the sweep's JSON of those runs.
    summary = done.result or {}
    expected = sweep_json(plan, ran)
    for name in ("series", "bounds", "cells", "calls_made", "calls_cached", "paid_usd", "would_cost_usd"):
        assert summary[name] == expected[name], name


def test_a_stopped_sweep_resumed_records_only_the_runs_it_had_not(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.sqlite3"))
    work = _work(concurrency=1)
    work_id = submit_sweep(store, work)
    total = (store.get_work(work_id) or pytest.fail("no work")).total
    gated = Gated()
    added: list[str] = []
    add = store.add_results

    def counting(work: str, results: Any, part: str = "") -> None:
        added.extend(key for key, _ in results)
        add(work, results, part)

    store.add_results = counting  # type: ignore[method-assign]
    thread = threading.Thread(target=run_work, args=(store, work_id), kwargs={"client": gated})
    thread.start()
    gated.gate.release(2)  # two calls answered, then a stop
    _wait(lambda: gated.calls == 2, "two calls")
    assert store.request_cancel(work_id)
    gated.gate.release(10_000)  # a call already sent is answered; nothing further is sent
    thread.join(timeout=300)
    assert not thread.is_alive()
    stopped = store.get_work(work_id)
    assert stopped is not None and stopped.state == "cancelled", stopped
    asked = {r.key for r in map(TrialRecord.from_dict, store.work_results(work_id)) if not r.not_asked}
    assert 0 < len(asked) < total and stopped.done == len(asked)
    first = set(added)
    added.clear()
    paid_before = gated.calls

    assert resume_work(store, work_id)
    again = run_work(store, work_id, client=gated)
    assert again is not None and again.state == "done", again.error if again else None
    # Only the runs not recorded were recorded again (a run stopped before its call was sent too).
    assert not set(added) & asked and first | set(added) >= {r["key"] for r in store.work_results(work_id)}
    assert again.done == again.total == total == len(store.work_results(work_id))
    summary = again.result or {}
    # Every call reached the engine once over both runs, and the work counts each: never paid twice.
    assert summary["calls_made"] == gated.calls >= paid_before
    # The whole sweep, as one uninterrupted run of it measures it.
    fresh = open_store(str(tmp_path / "fresh.sqlite3"))
    _, plan, _ = work.planned(fresh)
    whole = Gated()
    whole.gate.release(10_000)
    ran = sweep(plan, whole, concurrency=1, store=fresh)
    assert gated.calls == whole.calls
    _, _, shown = work.stored(store, work_id, again.result)
    assert shown.scores == ran.scores and shown.summaries == ran.summaries and not shown.failures
    # The same calls made; a run stopped between its calls finds its first ones in the store.
    assert shown.calls_made == ran.calls_made and shown.calls_cached <= paid_before
