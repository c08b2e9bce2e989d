"""Team mode: a review grid queued to the workers is one job per document, so that N workers
share one big grid. Real PostgreSQL, real procrastinate workers (``python -m rr_core worker``)
and the OpenAI SDK against the loopback stub, as in ``tests/test_queue.py`` (its helpers reused).

Each document's job asks only that document's cells; the work is running while any part runs,
and the last part to end (decided under a lock on the work's row) writes the work's end. A stop
request ends every part; a worker told to stop hands its part back and another resumes it; no
call is paid twice.
"""

from __future__ import annotations

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
    assert sum(sent.values()) == gate.arrived  # every call the stub saw is counted here
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
        _, work = _grid(store, "s", DOCUMENTS)
        work_id = submit_review(store, work, enqueue=WorkerQueue(pg_url, "ana").enqueue())
        workers = [_worker(pg_url, stub, tmp_path / f"worker-{i}.log") for i in range(2)]
        try:
            _wait(lambda: gate.arrived >= 2, "a call from each worker", 120)
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
    # Nothing sent once the stop was seen: at most the document in hand of each worker.
    assert gate.arrived <= 2 * 2, _logs(tmp_path)
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
