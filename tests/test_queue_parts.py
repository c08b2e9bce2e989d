"""Team mode: a review grid queued to the workers is one job per document, so that N workers
share one big grid. Real PostgreSQL, real procrastinate workers (``python -m rr_core worker``)
and the OpenAI SDK against the loopback stub, as in ``tests/test_queue.py`` (its helpers reused).

Each document's job asks only that document's cells; the work is running while any part runs,
and the last part to end (decided under a lock on the work's row) writes the work's end. A stop
request ends every part; a worker told to stop hands its part back and another resumes it; no
call is paid twice.
"""

from __future__ import annotations

import re
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from rr_core.store import open_store
from rr_core.work import review_cells, submit_review
from tests.stub_server import StubServer, prompt_of
from tests.test_queue import _Gate, _grid, _open_jobs, _stop, _wait, _worker

DOCUMENTS = 6
MODEL_PATHS = ("/responses", "/chat/completions")


def _sent(stub: StubServer) -> Counter[str]:
    return Counter(prompt_of(r.body) for r in stub.requests if r.path.endswith(MODEL_PATHS))


def _logs(tmp_path: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in tmp_path.glob("worker-*.log"))


def _jobs_of(pg_url: str, work_id: str) -> list[str]:
    import psycopg

    with psycopg.connect(pg_url) as db:
        rows = db.execute(
            "SELECT args->>'part' FROM procrastinate_jobs WHERE args->>'work_id' = %s", (work_id,)
        ).fetchall()
    return [str(r[0]) for r in rows]


def test_two_workers_share_a_grid_one_job_per_document(pg_url: str, tmp_path: Path) -> None:
    from rr_core.queue import WorkerQueue

    gate = _Gate()
    with StubServer(responder=gate) as stub:
        store = open_store(pg_url, owner="ana")
        files, work = _grid(store, "p", DOCUMENTS)
        work_id = submit_review(store, work, enqueue=WorkerQueue(pg_url, "ana").enqueue())
        assert sorted(_jobs_of(pg_url, work_id)) == sorted(f.sha256 for f in files)  # 6 jobs
        workers = [_worker(pg_url, stub, tmp_path / f"worker-{i}.log") for i in range(2)]
        try:
            # Both workers hold a call at once: two documents of the one grid run side by side.
            _wait(lambda: gate.arrived >= 2, "a call from each worker", 120)
            running = [p for p in store.work_parts(work_id) if p.state == "running"]
            assert len(running) == 2 and len({p.worker for p in running}) == 2, running
            record = store.get_work(work_id)
            assert record is not None and record.state == "running"
            gate.allow(10**6)
            _wait(
                lambda: (store.get_work(work_id) or record).state == "done" and _open_jobs(pg_url) == 0,
                "the grid to end",
                180,
            )
        finally:
            gate.allow(10**6)
            for worker in workers:
                _stop(worker)
    done = store.get_work(work_id)
    assert done is not None and done.state == "done", (done, _logs(tmp_path))
    cells = review_cells(store, work_id)
    assert len(cells) == 2 * DOCUMENTS == done.total == done.done
    assert len({c.key for c in cells}) == len(cells) and all(c.ok for c in cells)  # each recorded once
    sent = _sent(stub)
    assert all(n == 1 for n in sent.values())  # nothing asked twice
    # Every call the stub saw is one prompt asked once (18 calls for the 12 cells: the method
    # makes more than one call for some documents); none asked twice by two workers.
    assert sum(sent.values()) == gate.arrived >= len(cells)
    assert {p.state for p in store.work_parts(work_id)} == {"done"}
    assert (
        done.result is not None and done.result["cells"] == len(cells) and done.result["parts"] == DOCUMENTS
    )
    assert done.result["failed_cells"] == 0


def test_a_worker_stopped_mid_part_hands_it_back_and_the_other_resumes_it(
    pg_url: str, tmp_path: Path
) -> None:
    from rr_core.queue import WorkerQueue

    gate = _Gate()
    with StubServer(responder=gate) as stub:
        store = open_store(pg_url, owner="ana")
        _, work = _grid(store, "q", 3)
        work_id = submit_review(store, work, enqueue=WorkerQueue(pg_url, "ana").enqueue())
        first = _worker(pg_url, stub, tmp_path / "worker-a.log")
        second = None
        try:
            _wait(lambda: gate.arrived == 1, "the first call (held at the stub)")
            held = [p for p in store.work_parts(work_id) if p.state == "running"]
            assert len(held) == 1
            first.send_signal(signal.SIGTERM)  # the call is in hand
            _wait(
                lambda: "this runner is stopping" in (tmp_path / "worker-a.log").read_text(errors="replace"),
                "the worker to stop sending",
            )
            gate.allow(1)  # the call in hand gets its reply
            first.wait(120)
            part = next(p for p in store.work_parts(work_id) if p.part == held[0].part)
            assert part.state == "queued"  # handed back
            record = store.get_work(work_id)
            assert record is not None and record.state == "queued", record
            assert gate.arrived == 1  # nothing sent after the stop
            assert _open_jobs(pg_url) == 3  # its job back in the queue, beside the two not started
            gate.allow(10**6)
            second = _worker(pg_url, stub, tmp_path / "worker-b.log")
            _wait(
                lambda: (store.get_work(work_id) or record).state == "done", "the next worker to finish", 180
            )
        finally:
            gate.allow(10**6)
            _stop(first)
            if second is not None:
                _stop(second)
    done = store.get_work(work_id)
    assert done is not None and done.state == "done", _logs(tmp_path)
    cells = review_cells(store, work_id)
    assert len(cells) == 2 * 3 and all(c.ok for c in cells)
    sent = _sent(stub)
    assert sent and all(n == 1 for n in sent.values())  # the call in hand was kept: none paid twice


def test_a_killed_workers_part_runs_again_elsewhere_paying_no_stored_reply_twice(
    pg_url: str, tmp_path: Path
) -> None:
    from rr_core.queue import WorkerQueue

    gate = _Gate()
    with StubServer(responder=gate) as stub:
        store = open_store(pg_url, owner="ana")
        _, work = _grid(store, "k", 2)
        work_id = submit_review(store, work, enqueue=WorkerQueue(pg_url, "ana").enqueue())
        first = _worker(pg_url, stub, tmp_path / "worker-a.log")
        second = None
        try:
            gate.allow(1)  # its first call answered (stored), the second held
            _wait(lambda: gate.arrived == 2, "the second call (held at the stub)")
            first.kill()  # -9: no goodbye, no heartbeat
            first.wait(30)
            gate.allow(10**6)
            second = _worker(pg_url, stub, tmp_path / "worker-b.log")
            _wait(
                lambda: (store.get_work(work_id) or work).state == "done", "the other worker to finish", 180
            )  # type: ignore[attr-defined]
        finally:
            gate.allow(10**6)
            _stop(first)
            if second is not None:
                _stop(second)
    done = store.get_work(work_id)
    assert done is not None and done.state == "done", _logs(tmp_path)
    assert len(review_cells(store, work_id)) == 2 * 2
    sent = _sent(stub)
    # The reply stored before the kill is not asked again; only the call in flight at the kill
    # (its reply never reached the store) may be.
    assert [n for n in sent.values() if n > 1] in ([], [2])


def test_a_stop_request_ends_every_part(pg_url: str, tmp_path: Path) -> None:
    from rr_core.queue import WorkerQueue

    gate = _Gate()
    with StubServer(responder=gate) as stub:
        store = open_store(pg_url, owner="ana")
        files, work = _grid(store, "s", DOCUMENTS)
        work_id = submit_review(store, work, enqueue=WorkerQueue(pg_url, "ana").enqueue())
        workers = [_worker(pg_url, stub, tmp_path / f"worker-{i}.log") for i in range(2)]
        try:
            _wait(lambda: gate.arrived >= 2, "a call from each worker", 120)
            in_hand = {p.part for p in store.work_parts(work_id) if p.state == "running"}
            assert store.request_cancel(work_id)
            # The parts not started end at once; the two running end after their call in hand.
            assert sum(1 for p in store.work_parts(work_id) if p.state == "cancelled") == DOCUMENTS - 2
            gate.allow(10**6)
            _wait(
                lambda: (store.get_work(work_id) or work).state == "cancelled" and _open_jobs(pg_url) == 0,  # type: ignore[attr-defined]
                "every part to end",
                180,
            )
        finally:
            gate.allow(10**6)
            for worker in workers:
                _stop(worker)
    parts = store.work_parts(work_id)
    assert all(p.ended for p in parts) and all(p.state != "done" or p.worker for p in parts), parts
    # Nothing sent once the stop was seen but the rest of the document in hand of each worker (a
    # part is one document: its cells are finished and recorded together): every call was about
    # one of those two documents, none about a document not started.
    assert len(in_hand) == 2, in_hand
    numbers = {i for i, f in enumerate(files) if f.sha256 in in_hand}
    about = {int(m) for prompt in _sent(stub) for m in re.findall(r"Supply agreement (\d+),", prompt)}
    assert about and about <= numbers, (about, numbers, _logs(tmp_path))
    record = store.get_work(work_id)
    assert record is not None and record.state == "cancelled" and record.done < record.total


def test_exactly_one_part_ends_the_work_when_parts_end_together(pg_url: str) -> None:
    """Parts ending at the same moment on different connections: the lock on the work's row
    makes exactly one of them the last (it writes the work's end), never both or neither."""
    store = open_store(pg_url, owner="ana")
    names = [f"d{i}" for i in range(8)]
    work_id = store.submit_work("review", "t", {}, 8, parts=names)
    for name in names:
        store.start_part(work_id, name, "w")
    start = threading.Barrier(len(names))
    lasts: list[Any] = []

    def end(name: str) -> None:
        mine = open_store(pg_url, owner="ana")
        start.wait(60)
        got = mine.end_part(work_id, name, "done", {"paid_usd": 0.0})
        if got is not None:
            lasts.append(got)

    threads = [threading.Thread(target=end, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(lasts) == 1 and sorted(p.part for p in lasts[0]) == names
    assert all(p.state == "done" for p in lasts[0])
    # A part ended again (a duplicate job) is not the last a second time.
    assert store.end_part(work_id, names[0], "done") is None


class _Billing:
    """A stub responder billing each model call its whole output allowance (no prompt token):
    close to its worst case, so that two parts sending at once would pass a cap each keeps
    alone. The first ``hold`` calls are held until ``release`` (two parts in flight at once).
    Keeps what each bill costs at the model's price: what was paid, counted at the stub."""

    def __init__(self, hold: int) -> None:
        self._cond = threading.Condition()
        self._hold = hold
        self._released = False
        self.arrived = 0
        self.bills: list[float] = []

    def release(self) -> None:
        with self._cond:
            self._released = True
            self._cond.notify_all()

    def __call__(self, path: str, body: Any) -> Any:
        from rr_core.costs import estimate_cost
        from tests.stub_server import Reply

        if not path.endswith(MODEL_PATHS):
            return Reply()
        output = int(body.get("max_output_tokens") or body.get("max_tokens") or 0)
        with self._cond:
            self.arrived += 1
            self._cond.notify_all()
            if self.arrived <= self._hold:
                self._cond.wait_for(lambda: self._released, timeout=600)
            self.bills.append(estimate_cost(0, output, "gpt-4.1-mini", "openai").total_usd)
        return Reply(
            usage={
                "input_tokens": 0, "output_tokens": output, "total_tokens": output,
                "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0},
            }
        )  # fmt: skip


def test_parts_running_at_once_on_two_workers_keep_the_works_cap_together(
    pg_url: str, tmp_path: Path
) -> None:
    """4 documents, a cap of 2.5 calls' bills (the grid asks more), 2 workers running parts at
    the same time: each call is held in the store against the work's cap before it is sent, so
    what all parts paid together (counted at the stub) never passes it. Without the shared hold
    each part, starting with nothing spent, would send its two calls: four bills, over the cap."""
    from dataclasses import replace

    from rr_core.costs import estimate_cost
    from rr_core.queue import WorkerQueue

    billing = _Billing(hold=1)
    with StubServer(responder=billing) as stub:
        store = open_store(pg_url, owner="ana")
        _, grid = _grid(store, "m", 4)
        # A large output allowance: a call's bill is most of its worst case (its prompt is small beside it).
        settings = replace(grid.settings, max_output_tokens=8_192)
        bill = estimate_cost(0, settings.max_output_tokens, "gpt-4.1-mini", "openai").total_usd
        cap = 2.5 * bill
        work = replace(grid, settings=settings, max_usd=cap)
        work_id = submit_review(store, work, enqueue=WorkerQueue(pg_url, "ana").enqueue())
        workers = [_worker(pg_url, stub, tmp_path / f"worker-{i}.log") for i in range(2)]
        try:
            # The first call is held until both workers run a part (the second part's runner
            # has started, with nothing billed yet).
            _wait(
                lambda: (
                    sum(1 for p in store.work_parts(work_id) if p.state == "running") == 2
                    or billing.arrived >= 2
                ),
                "two parts running at once",
                120,
            )
            billing.release()
            _wait(
                lambda: not (store.get_work(work_id) or work).is_open and _open_jobs(pg_url) == 0,  # type: ignore[attr-defined]
                "every part to end",
                180,
            )
        finally:
            billing.release()
            for worker in workers:
                _stop(worker)
    paid = sum(billing.bills)
    record = store.get_work(work_id)
    assert record is not None and not record.is_open, _logs(tmp_path)
    assert billing.bills, _logs(tmp_path)  # calls were sent, within the cap
    assert paid <= cap + 1e-9, (paid, cap, _logs(tmp_path))
    cells = review_cells(store, work_id)
    assert len([c for c in cells if c.ok]) < 2 * 4  # the cap stopped the grid before its end
    print(f"cap ${cap:.6f}, paid at the stub ${paid:.6f} for {len(billing.bills)} calls; work {record.state}")


def test_a_grid_of_2000_documents_is_queued_in_one_transaction_quickly(pg_url: str) -> None:
    """Deferring a job per document is one statement (procrastinate's batch defer) in the
    transaction that records the work: 2,000 documents' jobs, measured against the tests' real
    PostgreSQL (printed; the limit is generous for a busy machine)."""
    import time

    from rr_core.queue import WorkerQueue

    store = open_store(pg_url, owner="ana")
    hook = WorkerQueue(pg_url, "ana").enqueue()  # the queue's tables made once, before timing
    parts = [f"{i:064x}" for i in range(2_000)]
    started = time.perf_counter()
    work_id = store.submit_work("review", "a big grid", {"files": []}, 2_000 * 50, parts=parts, enqueue=hook)
    took = time.perf_counter() - started
    print(f"2,000 documents: work row, parts and jobs written in one transaction in {took:.2f} s")
    assert sorted(_jobs_of(pg_url, work_id)) == parts
    assert len(store.work_parts(work_id)) == 2_000
    assert took < 60
