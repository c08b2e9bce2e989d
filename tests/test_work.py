"""Long work in the store: a review grid submitted, run by a queue, stopped from another
store handle (another process would do the same), resumed without asking a finished cell
again or paying a stored call twice."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rr_core.documents import pdf_from_texts
from rr_core.errors import LedgerError
from rr_core.llm.base import Completion, LLMRequest
from rr_core.llm.offline import OfflineEngine
from rr_core.review import items_from_uploads, parse_answer_key, parse_columns
from rr_core.store import SQLiteStore, Store, open_store
from rr_core.tokens import counter_for_model
from rr_core.work import (
    InProcessQueue,
    ReviewWork,
    grid_results,
    resume_work,
    review_cells,
    run_work,
    submit_review,
)
from rr_core.workbench import Engine, read_review_corpus

COLUMNS = """question,type
Which state's law governs this agreement?,text
Is either party's liability capped? ,yes-no
"""


def _contract(i: int) -> bytes:
    law = ["Texas", "New York", "Ohio", "Utah"][i % 4]
    pages = [f"Agreement number {i}. This page is about deliveries and schedules. " * 20 for _ in range(3)]
    pages[1] += f" This Agreement shall be governed by the laws of the State of {law}."
    if i % 2:
        pages[2] += " In no event shall either party's liability exceed the fees paid in the prior year."
    return pdf_from_texts(pages, title=f"Contract {i}")


class Gated:
    """The offline engine behind a gate: each call waits until the test lets calls through,
    and every call that reached it is counted (what a provider would bill)."""

    name = "offline"
    is_llm = True  # counted as paid, so that "never paid twice" means something
    max_concurrency: int | None = 1
    batch = None

    def __init__(self) -> None:
        self._engine = OfflineEngine(counter_for_model("gpt-4.1-mini"))
        self.gate = threading.Semaphore(0)
        self.calls = 0
        self._lock = threading.Lock()

    def identity(self) -> dict[str, object]:
        return {"provider": "gated-offline"}

    def complete(self, request: LLMRequest) -> Completion:
        if not self.gate.acquire(timeout=600):
            raise TimeoutError("the test never opened the gate")
        with self._lock:
            self.calls += 1
        return self._engine.complete(request)


def _wait(condition, what: str, limit: float = 180.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {limit:.0f} s for {what}")
        time.sleep(0.02)


@pytest.fixture(params=["sqlite", "postgresql"])
def setup(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = str(tmp_path / "runs.sqlite3") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = open_store(path)
    engine = Engine.choose("offline")
    files = read_review_corpus(
        items_from_uploads([(f"c{i}.pdf", _contract(i)) for i in range(4)])[0],
        model=engine.counting_model(),
        store=store,
        processes=1,
    )
    key = parse_answer_key(
        "document,question,answers\n"
        + "".join(
            f"c{i}.pdf,Which state's law governs this agreement?,{['Texas', 'New York', 'Ohio', 'Utah'][i]}\n"
            for i in range(4)
        )
    )
    work = ReviewWork(
        tuple(files), tuple(parse_columns(COLUMNS)), engine.settings(method="rr"), engine.provider, engine.model,
        engine.price_model, key=key, concurrency=1,
    )  # fmt: skip
    return path, store, work


def test_work_round_trips_as_json(setup) -> None:  # type: ignore[no-untyped-def]
    _, _, work = setup
    again = ReviewWork.from_dict(work.to_dict())
    assert again == work
    assert "api_key" not in str(work.to_dict())


def test_a_submitted_review_runs_in_process_and_records_every_cell(setup) -> None:  # type: ignore[no-untyped-def]
    path, store, work = setup
    work_id = submit_review(store, work)
    record = store.get_work(work_id)
    assert record is not None and record.state == "queued" and record.total == 8
    queue = InProcessQueue(lambda: open_store(path))
    queue.submit(work_id)
    assert queue.wait(work_id, 120)
    record = store.get_work(work_id)
    assert record is not None and record.state == "done", record
    assert record.done == 8 and record.attempts == 1
    cells = review_cells(store, work_id)
    assert len(cells) == 8 and all(c.ok for c in cells)
    laws = [c for c in cells if c.column == 0]
    assert sum(1 for c in laws if c.correct) == 4  # the offline engine finds each governing law
    assert all(c.correct is None for c in cells if c.column == 1)  # no key for that column: unmarked
    assert record.result is not None and record.result["cells"] == 8


def test_stop_from_another_handle_then_resume_pays_nothing_twice(setup, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import rr_core.kinds.review as review_kind
    import rr_core.work as work_module
    import rr_core.workbench as workbench

    path, store, work = setup
    # The grid run whole, for another owner of the same store (none of the replies below): how
    # many calls it makes, and so how many to let through before the stop (see below).
    whole = Gated()
    for _ in range(200):
        whole.gate.release()
    fresh = open_store(path, owner="fresh")
    fresh_files = read_review_corpus(
        items_from_uploads([(f"c{i}.pdf", _contract(i)) for i in range(4)])[0], model="gpt-4.1-mini", store=fresh,
        processes=1,
    )  # fmt: skip
    assert run_work(
        fresh,
        submit_review(
            fresh, ReviewWork.from_dict({**work.to_dict(), "files": [f.to_dict() for f in fresh_files]})
        ),
        client=whole,
    )
    documents = len(work.files)
    assert whole.calls >= 2 * documents, whole.calls  # each document: a retrieval, then answers

    monkeypatch.setattr(work_module, "STOP_POLL_S", 0.02)
    runners: list[object] = []
    opened = workbench.open_runner

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        runner = opened(*args, **kwargs)
        runners.append(runner)
        return runner

    monkeypatch.setattr(review_kind, "open_runner", spy)  # the runner the grid opens
    work_id = submit_review(store, work)
    client = Gated()
    queue = InProcessQueue(lambda: open_store(path))
    queue.submit(work_id, client=client)
    other = open_store(path)  # another process's view of the same store
    # Calls through one at a time, as many as make sure that at least one document is finished
    # (one more than every document one call short: all calls but documents - 1) and, with the
    # one call in flight when the stop is seen, at least one is not (two calls are left). The
    # documents run side by side: counting calls, not cells, keeps this independent of how
    # their calls interleave and of when their cells are recorded.
    let_through = whole.calls - documents + 1
    for _ in range(let_through):
        sent = client.calls
        client.gate.release()
        _wait(lambda sent=sent: client.calls > sent, "a call")
    _wait(lambda: (other.get_work(work_id) or store.get_work(work_id)).done >= 2, "a document's cells")  # type: ignore[union-attr]
    assert other.request_cancel(work_id)
    _wait(lambda: bool(runners) and runners[0].cancelled, "the runner to see the stop")  # type: ignore[attr-defined]
    paid_when_stopped = client.calls
    assert paid_when_stopped == let_through
    for _ in range(200):  # open the gate: the call in flight ends, and no further call is sent
        client.gate.release()
    assert queue.wait(work_id, 120)
    stopped = store.get_work(work_id)
    assert stopped is not None and stopped.state == "cancelled", stopped
    assert client.calls <= paid_when_stopped + 1
    kept = {c.key for c in review_cells(store, work_id)}
    assert 2 <= len(kept) < 8

    assert resume_work(store, work_id)
    again = Gated()
    for _ in range(200):
        again.gate.release()
    finished = run_work(store, work_id, client=again)
    assert finished is not None and finished.state == "done" and finished.attempts == 2
    cells = review_cells(store, work_id)
    assert {c.key for c in cells} >= kept and len({c.key for c in cells}) == 8
    # The second run asks only the documents without recorded cells, and pays for no call the
    # first run made (its replies are in the store): together no more than one uninterrupted run.
    assert client.calls + again.calls == whole.calls
    # What the work shows: what its last run paid, and what all its runs were billed.
    assert stopped.result is not None and finished.result is not None
    first_paid, last_paid = stopped.result["paid_usd"], finished.result["paid_usd"]
    assert first_paid > 0 and last_paid > 0
    monkeypatch.setenv("RR_STUDIO_DB", path)
    import json

    from rr_core.cli import main

    assert main(["--json", "--user", "local", "work", "--show", work_id]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["paid_usd"] == last_paid
    assert shown["all_runs_usd"] == pytest.approx(first_paid + last_paid)
    assert main(["--user", "local", "work", "--show", work_id]) == 0
    assert (
        f"paid ${last_paid:.4f} by its last run; ${first_paid + last_paid:.4f} billed over all its runs"
        in (capsys.readouterr().out)
    )


def test_a_document_half_recorded_when_its_worker_died_keeps_the_recorded_cell(setup) -> None:  # type: ignore[no-untyped-def]
    """A worker can die between a document's two cells: the resumed run asks that document
    again for its missing column, and the cell recorded before stays as it was (same run,
    same answer), never replaced by the second asking."""
    path, store, work = setup
    first_id = submit_review(store, work)
    assert run_work(store, first_id) is not None
    recorded = next(c for c in review_cells(store, first_id) if c.column == 0 and c.document == "c0.pdf")
    marked = {**recorded.to_dict(), "run_id": "recorded-before-the-worker-died"}

    work_id = submit_review(store, work)
    store.add_results(work_id, [(recorded.key, marked)])
    finished = run_work(store, work_id)
    assert finished is not None and finished.state == "done" and finished.done == 8, finished
    cells = {c.key: c for c in review_cells(store, work_id)}
    assert len(cells) == 8 and all(c.ok for c in cells.values())
    assert cells[recorded.key].run_id == "recorded-before-the-worker-died"
    assert cells[recorded.key].answer == recorded.answer
    # The document's other column was asked and recorded by the resumed run.
    sibling = next(c for c in cells.values() if c.document == "c0.pdf" and c.column == 1)
    assert sibling.run_id and sibling.run_id != "recorded-before-the-worker-died"


def test_the_same_grid_submitted_again_while_open_is_the_same_work(setup) -> None:  # type: ignore[no-untyped-def]
    """A second click, a second tab: the grid queued or running is not recorded (nor run, nor
    paid) a second time, even with another budget, concurrency or answer key (the same calls);
    once it has ended, or a stop was asked for, submitting makes new work, and the stopped one
    cannot be resumed while the new one is open."""
    from rr_core.store import LOCAL_OWNER
    from rr_core.workbench import open_queue, submit_grid

    path, store, work = setup
    first = submit_review(store, work)
    assert submit_review(open_store(path), work) == first  # another handle: another process
    bounded = ReviewWork.from_dict({**work.to_dict(), "concurrency": 2, "max_usd": 1.0, "key": None})
    assert submit_review(store, bounded) == first  # the same calls, bounded or paid otherwise
    fewer = ReviewWork.from_dict({**work.to_dict(), "columns": work.to_dict()["columns"][:1]})
    other = submit_review(store, fewer)  # other calls: other work
    assert other != first
    assert store.request_cancel(other)
    assert open_store(path, owner="someone-else").list_work() == []
    store.update_work(first, state="running")
    assert submit_review(store, work) == first
    assert store.request_cancel(first)  # a stop asked for: the next submit is new work
    store.update_work(first, state="cancelled")  # (its runner saw the stop)
    second = submit_review(store, work)
    assert second != first
    assert not resume_work(store, first)  # it would make the calls the open one makes
    # Through the application layer: it says whether the work is new.
    again = submit_grid(work, work.plan(store), store=store, url=path)
    assert again.work_id == second and not again.new
    queue = open_queue(LOCAL_OWNER, url=path)
    if isinstance(queue, InProcessQueue):  # handed to the queue again: the one thread runs it
        assert queue.wait(second, 120)
    else:  # team mode: a worker would; here, this test
        run_work(store, second)
    ended = store.get_work(second)
    assert ended is not None and ended.state == "done" and ended.attempts == 1
    # The same grid finished: nothing is queued; the finished work is handed back to ask about.
    asked = submit_grid(work, work.plan(store), store=store, url=path)
    assert not asked.new and asked.work_id == second
    assert asked.finished is not None and asked.finished.state == "done"
    assert [w.work_id for w in store.list_work() if w.is_open] == []
    fresh = submit_grid(work, work.plan(store), store=store, url=path, again=True)  # "run it again"
    assert fresh.new and fresh.work_id not in (first, second)
    if isinstance(queue, InProcessQueue):
        assert queue.wait(fresh.work_id, 120)


def test_submits_at_the_same_instant_record_one_work(setup) -> None:  # type: ignore[no-untyped-def]
    """Eight handles (eight processes, in team mode replicas) submit the same grid at once, five
    times over: each time one work is recorded and all eight are given its id."""
    path, _, work = setup
    handles = [open_store(path) for _ in range(8)]
    for round_ in range(5):
        spec = {**work.to_dict(), "concurrency": round_ + 1}
        barrier = threading.Barrier(len(handles))
        ids: list[str] = []

        def submit(handle, spec=spec, barrier=barrier, ids=ids) -> None:  # type: ignore[no-untyped-def]
            barrier.wait(timeout=60)
            ids.append(
                handle.submit_work("review", "a grid", spec, 8, calls_key=f"calls {spec['concurrency']}")
            )

        threads = [threading.Thread(target=submit, args=(h,)) for h in handles]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert len(ids) == len(handles) and len(set(ids)) == 1, ids
    assert len(open_store(path).list_work()) == 5


def test_stopping_queued_work_ends_it_at_once_and_cannot_stop_twice(setup) -> None:  # type: ignore[no-untyped-def]
    _, store, work = setup
    work_id = submit_review(store, work)
    assert store.request_cancel(work_id)
    record = store.get_work(work_id)
    assert record is not None and record.state == "cancelled"
    assert not store.request_cancel(work_id)
    assert run_work(store, work_id) is not None
    assert review_cells(store, work_id) == []


def test_work_is_the_owners_only(setup) -> None:  # type: ignore[no-untyped-def]
    path, store, work = setup
    work_id = submit_review(store, work)
    other = open_store(path, owner="someone-else")
    assert other.get_work(work_id) is None
    assert other.list_work() == []
    assert not other.request_cancel(work_id)
    assert [w.work_id for w in store.list_work()] == [work_id]


def test_a_worker_without_a_key_fails_the_work_with_the_reason(setup, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path, store, work = setup
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    paid = ReviewWork.from_dict({**work.to_dict(), "provider": "openai", "model": "gpt-4.1-mini"})
    work_id = submit_review(store, paid)
    record = run_work(store, work_id)
    assert record is not None and record.state == "failed"
    assert "OPENAI_API_KEY" in (record.error or "")


def test_a_lab_sweep_as_work_runs_resumes_for_free_and_says_what_it_measured(setup) -> None:  # type: ignore[no-untyped-def]
    from rr_core.kinds.sweep import SweepWork
    from rr_core.work import submit_sweep

    path, store, _ = setup
    work = SweepWork(
        preset="quick", series=("rr", "baseline"), provider="offline", model="offline", price_model="gpt-4.1-mini",
        lengths=(3000,), repeats=1, depths=(0.0, 50.0), bounds=False, sample="contract", concurrency=2,
    )  # fmt: skip
    assert SweepWork.from_dict(work.to_dict()) == work
    work_id = submit_sweep(store, work)
    record = store.get_work(work_id)
    assert record is not None and record.kind == "sweep" and record.total > 0
    done = run_work(store, work_id)
    assert done is not None and done.state == "done", done.error if done else None
    assert done.done == done.total
    result = done.result or {}
    assert result["is_llm"] is False and result["paid_usd"] == 0
    first_calls = result["calls_made"]
    assert first_calls > 0 and len(result["series"]) == 2
    # Started again (a worker that died after the last run): every run is recorded, none is run
    # again; the summary is the same sweep's, from its recorded runs.
    recorded = store.work_results(work_id)
    assert len(recorded) == done.total
    assert resume_work(store, work_id)
    again = run_work(store, work_id)
    assert again is not None and again.state == "done" and again.attempts == 2
    assert store.work_results(work_id) == recorded
    assert (again.result or {})["calls_made"] == first_calls and (again.result or {})["calls_cached"] == 0
    assert (again.result or {})["series"] == result["series"]


class _Counting:
    """A store that counts the calls made to it (each one transaction), and can refuse one write
    of results (``refuse``: the call that fails, counted from 1), as a database failing mid-write."""

    def __init__(self, store: Store, refuse: int = 0) -> None:
        self._store, self._refuse = store, refuse
        self.calls: Counter[str] = Counter()
        self.written: list[list[str]] = []  # each add_results call's keys

    def add_results(
        self, work_id: str, results: Sequence[tuple[str, Mapping[str, Any]]], part: str = ""
    ) -> None:
        self.calls["add_results"] += 1
        self.written.append([key for key, _ in results])
        if self.calls["add_results"] == self._refuse:
            raise LedgerError("the database refused the write (a test's failure mid-write)")
        self._store.add_results(work_id, results, part)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted


@pytest.fixture(params=["sqlite", "postgresql"])
def wide(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A grid of 20 documents × 5 questions, run by a method asking one question a call (100
    runs), finished: its store's path, the store, the work and its id."""
    path = str(tmp_path / "runs.sqlite3") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = open_store(path)
    engine = Engine.choose("offline")
    files = read_review_corpus(
        items_from_uploads([(f"c{i}.pdf", _contract(i)) for i in range(20)])[0], model=engine.counting_model(),
        store=store, processes=1,
    )  # fmt: skip
    columns = "question,type\n" + "".join(f"Which state's law governs part {i}?,text\n" for i in range(5))
    work = ReviewWork(
        tuple(files), tuple(parse_columns(columns)), engine.settings(method="baseline"), engine.provider,
        engine.model, engine.price_model, concurrency=2,
    )  # fmt: skip
    work_id = submit_review(store, work)
    finished = run_work(store, work_id)
    assert finished is not None and finished.state == "done" and finished.done == 100, finished
    return path, store, work, work_id


def test_show_results_reads_a_finished_grid_in_two_queries_whatever_its_size(wide, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The Review screen's Show results (``grid_results``): a finished grid of 20 documents × 5
    questions, 100 runs, is read with one query for its cells and one for its runs (it was one
    query a run: 100 more)."""
    path, store, work, work_id = wide
    counting = _Counting(store)
    statements: list[str] = []
    if isinstance(store, SQLiteStore):  # the SQL itself, where the driver shows it
        opened = SQLiteStore._open

        def traced(self: SQLiteStore) -> sqlite3.Connection:
            db = opened(self)
            db.set_trace_callback(statements.append)
            return db

        monkeypatch.setattr(SQLiteStore, "_open", traced)
    cells, traces = grid_results(counting, work_id, work)  # type: ignore[arg-type]
    assert len(cells) == 100 and all(c.ok for c in cells)
    assert len(traces) == 100 and [t.run_id for t in traces] == [c.run_id for c in cells]
    assert dict(counting.calls) == {"work_results": 1, "get_runs": 1}
    if isinstance(store, SQLiteStore):
        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) == 2, selects


def test_a_documents_cells_are_recorded_together_and_a_failed_write_leaves_none_of_them(wide) -> None:  # type: ignore[no-untyped-def]
    """A grid whose method asks one question a call (five jobs a document, several under way at
    once, the documents' jobs interleaved): each document's cells are written in one call of the store,
    all five together. When the store fails on the third document's write, the work fails,
    none of that document's cells is recorded, the two before are whole, and the work resumed
    asks only the rest, paying for no call twice (the call cache holds what the first run paid)."""
    path, store, work, _ = wide
    fresh = open_store(path, owner="fresh")  # no reply of the finished grid in its call cache
    files = read_review_corpus(
        items_from_uploads([(f"c{i}.pdf", _contract(i)) for i in range(20)])[0], model="gpt-4.1-mini",
        store=fresh, processes=1,
    )  # fmt: skip
    again = ReviewWork.from_dict({**work.to_dict(), "files": [f.to_dict() for f in files]})
    work_id = submit_review(fresh, again)
    first = Gated()
    for _ in range(1000):
        first.gate.release()
    failing = _Counting(fresh, refuse=3)
    ended = run_work(failing, work_id, client=first)  # type: ignore[arg-type]
    assert ended is not None and ended.state == "failed" and "refused the write" in (ended.error or ""), ended
    assert len(failing.written) == 3
    for keys in failing.written:  # one document each, all its five columns
        assert len({key.split(":")[1] for key in keys}) == 1 and sorted(k[-1] for k in keys) == list("01234")
    recorded = {c.key for c in review_cells(fresh, work_id)}
    assert recorded == set(failing.written[0]) | set(failing.written[1])  # the third document: none of it

    assert resume_work(fresh, work_id)
    second = Gated()
    for _ in range(1000):
        second.gate.release()
    finished = run_work(fresh, work_id, client=second)
    assert finished is not None and finished.state == "done" and finished.done == 100, finished
    assert len({c.key for c in review_cells(fresh, work_id)}) == 100
    # One call a cell, each paid once over both runs (the failed document's came from the cache).
    assert first.calls + second.calls == 100, (first.calls, second.calls)


class _Paid:
    """The offline engine, counted as paid (priced as its plan's price model)."""

    name = "offline"
    is_llm = True
    max_concurrency: int | None = 1
    batch = None

    def __init__(self) -> None:
        self._engine = OfflineEngine(counter_for_model("gpt-4.1-mini"))

    def identity(self) -> dict[str, object]:
        return {"provider": "paid-offline"}

    def complete(self, request: LLMRequest) -> Completion:
        return self._engine.complete(request)


class _Garbled(_Paid):
    """Billed like the engine's replies, and no reply can be read (none is kept)."""

    def complete(self, request: LLMRequest) -> Completion:
        reply = self._engine.complete(request)
        return Completion(text="Sorry, I cannot answer in JSON.", usage=reply.usage, model=reply.model)


def test_a_works_budget_cap_holds_over_all_its_runs(tmp_path: Path) -> None:
    """A capped grid stopped and run again (or taken up by the next runner) starts its second
    run with what the first paid already counted: the work's runs together stay under its cap.
    (Each run had the whole cap before: together they could pay up to twice it.)"""
    from rr_core.kinds.review import review

    engine = Engine.choose("offline", price_model="gpt-4.1-mini")
    uploads = [(f"c{i}.pdf", _contract(i)) for i in range(6)]

    def stored(name: str) -> tuple[Store, list[Any]]:
        store = open_store(str(tmp_path / f"{name}.sqlite3"))
        files = read_review_corpus(
            items_from_uploads(uploads)[0],
            model=engine.counting_model(), store=store, processes=1,
        )  # fmt: skip
        return store, files

    store, files = stored("whole")
    work = ReviewWork(
        tuple(files), tuple(parse_columns(COLUMNS)), engine.settings(method="rr", max_output_tokens=300), engine.provider, engine.model,
        engine.price_model, concurrency=1,
    )  # fmt: skip
    plan = work.plan(store)
    whole = review(plan, _Paid(), concurrency=1, store=store, save=False)
    assert whole.paid_usd > 0 and all(c.ok for c in whole.cells)
    cap = 0.7 * whole.paid_usd
    half = len(plan.jobs) // 2
    together = []
    for work_id in ("", "work-1"):  # without the work's ledger (as before), then with it
        kept, _ = stored(work_id or "none")
        first = review(
            plan, _Paid(), concurrency=1, store=kept, jobs=plan.jobs[:half], max_usd=cap, work_id=work_id
        )
        second = review(
            plan, _Paid(), concurrency=1, store=kept, jobs=plan.jobs[half:], max_usd=cap, work_id=work_id
        )
        assert not first.cancelled and 0 < first.paid_usd <= cap
        together.append(first.paid_usd + second.paid_usd)
    before, after = together
    assert before > cap  # each run kept the cap alone
    assert after <= cap + 1e-9  # the work's runs together keep it
    # Billed replies that could not be read (nothing stored) count too: what a call was billed
    # is recorded as it is billed, kept or not.
    kept, _ = stored("garbled")
    first = review(
        plan, _Garbled(), concurrency=1, store=kept, jobs=plan.jobs[:half], max_usd=cap, work_id="w2"
    )
    assert first.paid_usd > 0 and not any(c.ok for c in first.cells)
    second = review(plan, _Paid(), concurrency=1, store=kept, max_usd=cap, work_id="w2")
    assert first.paid_usd + second.paid_usd <= cap + 1e-9
    assert kept.ledger_spent(plan.ledger_key() + "-w2") == pytest.approx(first.paid_usd + second.paid_usd)

    # A run of a work whose earlier runs spent its cap sends nothing, and says so (it read as a
    # provider that billed over the estimate).
    class _Counted(_Paid):
        calls = 0

        def complete(self, request: LLMRequest) -> Completion:
            self.calls += 1
            return super().complete(request)

    spent = _Counted()
    kept, _ = stored("spent")
    review(plan, _Paid(), concurrency=1, store=kept, max_usd=cap, work_id="w3")
    kept.add_spend(plan.ledger_key() + "-w3", "a call billed beyond", cap)  # the cap spent by earlier runs
    again = review(plan, spent, concurrency=1, store=kept, max_usd=cap, work_id="w3")
    assert again.paid_usd == 0 and spent.calls == 0
    said = {c.error for c in again.cells if not c.ok}
    assert said and all("already spent by its earlier runs" in (e or "") for e in said), said


def test_a_grid_run_in_parts_shows_each_parts_cells_in_its_progress_as_they_are_recorded(setup) -> None:  # type: ignore[no-untyped-def]
    """The progress of a grid run in parts counts every part's cells (at most once a second
    while a part runs, and once more at its end): after each part, the work's ``done`` is the
    cells recorded so far, however fast the parts went; each part read its own cells."""
    from rr_core.work import run_part

    path, store, work = setup
    jobs: list[tuple[str, ...]] = []
    work_id = submit_review(store, work, enqueue=lambda db, wid, parts: jobs.append(tuple(parts)))
    (parts,) = jobs
    assert len(parts) == len(work.files)
    columns = len(parse_columns(COLUMNS))
    for i, part in enumerate(parts, start=1):
        ended = run_part(store, work_id, part)
        assert ended is not None and ended.state == "done", ended
        record = store.get_work(work_id)
        assert record is not None and record.done == i * columns, (i, record.done)
        assert len(list(store.iter_work_results(work_id, part=part))) == columns
    record = store.get_work(work_id)
    assert record is not None and record.state == "done" and record.done == record.total
