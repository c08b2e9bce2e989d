"""Team mode's workers, for real: PostgreSQL (started by the tests), procrastinate workers as
separate processes (``python -m rr_core worker``), the OpenAI SDK against the loopback stub.

A worker killed (-9) in the middle of a grid: another worker picks the job up once the first
stops beating, asks only the cells not recorded, and no reply the store holds is paid again;
the grid's progress is read by any other process; another user sees none of it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rr_core.documents import pdf_from_texts
from rr_core.review import items_from_uploads, parse_columns
from rr_core.store import open_store
from rr_core.work import ReviewWork, review_cells, submit_review
from rr_core.workbench import read_review_corpus
from tests.stub_server import Reply, StubServer, prompt_of, slow

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = "question,type\nWhich state's law governs this agreement?,text\nIs either party's liability capped?,yes-no\n"
DOCUMENTS = 6


def _contract(i: int) -> bytes:
    pages = [f"Supply agreement {i}, schedule page {p}. Deliveries are weekly. " * 25 for p in range(4)]
    pages[2] += f" This Agreement is governed by the laws of the State of {['Texas', 'Ohio', 'Utah'][i % 3]}."
    return pdf_from_texts(pages, title=f"Agreement {i}")


def _grid(store: Any, prefix: str, documents: int) -> tuple[list[Any], ReviewWork]:
    """Generated contracts read into the store, and an R&R grid over them on OpenAI (stubbed)."""
    from rr_core.workbench import Engine

    files = read_review_corpus(
        items_from_uploads([(f"{prefix}{i}.pdf", _contract(i)) for i in range(documents)])[0],
        model="gpt-4.1-mini", store=store, processes=1,
    )  # fmt: skip
    engine = Engine("openai", "gpt-4.1-mini", "gpt-4.1-mini")
    work = ReviewWork(
        tuple(files), tuple(parse_columns(COLUMNS)), engine.settings(method="rr"), "openai", "gpt-4.1-mini",
        "gpt-4.1-mini", concurrency=1,
    )  # fmt: skip
    return files, work


def _wait(condition: Any, what: str, limit: float = 120.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {limit:.0f} s for {what}")
        time.sleep(0.05)


def _worker(pg_url: str, stub: StubServer, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "RR_STUDIO_DB": pg_url,
        "OPENAI_API_KEY": "sk-test-worker",
        "OPENAI_BASE_URL": stub.url,  # the worker's configured server: its key goes there only
        "PYTHONPATH": str(ROOT),
    }
    handle = log.open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "rr_core", "worker", "--concurrency", "1", "--heartbeat", "0.5", "--stalled-after", "3"],
        cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
    )  # fmt: skip


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def test_a_killed_worker_loses_no_cell_and_pays_no_stored_reply_again(pg_url: str, tmp_path: Path) -> None:
    from rr_core.queue import WorkerQueue

    with StubServer(responder=lambda path, body: slow(0.3)) as stub:
        store = open_store(pg_url, owner="ana")
        files, work = _grid(store, "a", DOCUMENTS)
        work_id = submit_review(store, work)
        WorkerQueue(pg_url, "ana").submit(work_id)

        first = _worker(pg_url, stub, tmp_path / "worker-a.log")
        second = None
        try:
            watcher = open_store(pg_url, owner="ana")  # another replica's view: progress from the database

            def three_cells() -> bool:
                if first.poll() is not None:
                    raise AssertionError((tmp_path / "worker-a.log").read_text(errors="replace")[-3000:])
                return (watcher.get_work(work_id) or work).done >= 3  # type: ignore[attr-defined]

            _wait(three_cells, "three cells from the first worker")
            first.kill()  # -9: no goodbye, no heartbeat
            first.wait(30)
            before = {c.key: c.run_id for c in review_cells(watcher, work_id)}
            record = watcher.get_work(work_id)
            assert record is not None and record.state == "running" and len(before) >= 3

            second = _worker(pg_url, stub, tmp_path / "worker-b.log")
            _wait(
                lambda: (watcher.get_work(work_id) or record).state == "done",
                "the second worker to finish",
                180,
            )
        finally:
            _stop(first)
            if second is not None:
                _stop(second)
        done = watcher.get_work(work_id)
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in tmp_path.glob("worker-*.log"))
        assert done is not None and done.state == "done", logs
        assert done.attempts == 2 and done.worker.startswith("worker ")
        cells = review_cells(watcher, work_id)
        assert len(cells) == 2 * DOCUMENTS and all(c.ok for c in cells), [c.error for c in cells if c.error]
        # Every cell recorded before the kill is still there, from the same run: not asked again.
        after = {c.key: c.run_id for c in cells}
        assert all(after[key] == run for key, run in before.items())
        # At the stub: no prompt sent twice but the one call in flight when the worker was killed
        # (its reply never reached the store; concurrency 1).
        sent = Counter(
            prompt_of(r.body) for r in stub.requests if r.path.endswith(("/responses", "/chat/completions"))
        )
        twice = [p for p, n in sent.items() if n > 1]
        assert len(twice) <= 1 and all(n <= 2 for n in sent.values())
        assert all(r.body.get("store") is False for r in stub.requests if r.path.endswith("/responses"))
        # Another user of the same database sees none of it.
        other = open_store(pg_url, owner="bo")
        assert other.get_work(work_id) is None and other.work_results(work_id) == []
        assert other.get_document(files[0].sha256) is None


def _open_jobs(pg_url: str) -> int:
    import psycopg

    with psycopg.connect(pg_url) as db:
        row = db.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
        ).fetchone()
    return int(row[0]) if row else 0


def test_one_work_handed_to_the_queue_twice_runs_once_at_a_time(pg_url: str, tmp_path: Path) -> None:
    """The same work queued twice (a second tab's submit, a resume while its job waits) with two
    workers free: the jobs share a lock, so the second starts only when the first has ended,
    finds the work done and sends nothing."""
    from rr_core.queue import WorkerQueue

    with StubServer(responder=lambda path, body: slow(0.2)) as stub:
        store = open_store(pg_url, owner="ana")
        _, work = _grid(store, "b", 3)
        work_id = submit_review(store, work)
        queue = WorkerQueue(pg_url, "ana")
        queue.submit(work_id)
        queue.submit(work_id)
        assert _open_jobs(pg_url) == 2
        workers = [_worker(pg_url, stub, tmp_path / f"worker-{i}.log") for i in range(2)]
        try:
            _wait(
                lambda: (store.get_work(work_id) or work).state == "done" and _open_jobs(pg_url) == 0,  # type: ignore[attr-defined]
                "both jobs to end",
                180,
            )
        finally:
            for worker in workers:
                _stop(worker)
        record = store.get_work(work_id)
        assert record is not None and record.state == "done" and record.attempts == 1, record
        assert len(review_cells(store, work_id)) == 2 * 3
        sent = Counter(
            prompt_of(r.body) for r in stub.requests if r.path.endswith(("/responses", "/chat/completions"))
        )
        assert sent and all(n == 1 for n in sent.values())  # nothing asked twice


def _cli(pg_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RR_STUDIO_DB": pg_url, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "rr_core", "--json", "--user", "cy", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_cli_submits_a_lab_sweep_a_worker_runs_it_and_work_shows_it(pg_url: str, tmp_path: Path) -> None:
    import json

    submitted = _cli(
        pg_url, "lab", "contract", "--provider", "offline", "--price-model", "gpt-4.1-mini", "--methods", "rr,baseline",
        "--lengths", "3000", "--depths", "0,50", "--repeats", "1", "--no-bounds", "--submit",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    work_id = json.loads(submitted.stdout)["work_id"]
    assert json.loads(submitted.stdout)["already_open"] is False
    # The same sweep again while it is queued: the same work, not a second one.
    again = _cli(
        pg_url, "lab", "contract", "--provider", "offline", "--price-model", "gpt-4.1-mini", "--methods", "rr,baseline",
        "--lengths", "3000", "--depths", "0,50", "--repeats", "1", "--no-bounds", "--submit",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["work_id"] == work_id and json.loads(again.stdout)["already_open"] is True
    listed = json.loads(_cli(pg_url, "work").stdout)
    assert [w["work_id"] for w in listed["work"]] == [work_id] and listed["work"][0]["state"] == "queued"
    # Another user cannot stop it, or see it.
    env = {**os.environ, "RR_STUDIO_DB": pg_url, "PYTHONPATH": str(ROOT)}
    other = subprocess.run(
        [sys.executable, "-m", "rr_core", "--user", "dee", "work", "--cancel", work_id],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert other.returncode == 2 and "no such open work" in other.stderr

    with StubServer() as stub:
        worker = _worker(pg_url, stub, tmp_path / "worker.log")
        try:
            store = open_store(pg_url, owner="cy")
            _wait(
                lambda: (store.get_work(work_id) or listed).state == "done",
                "the worker to run the sweep",
                180,
            )  # type: ignore[attr-defined]
        finally:
            _stop(worker)
    shown_run = _cli(pg_url, "work", "--show", work_id)
    assert shown_run.returncode == 0, shown_run.stderr
    shown = json.loads(shown_run.stdout)
    assert shown["state"] == "done" and shown["done"] == shown["total"] > 0
    assert len(shown["results"]) == shown["total"]  # each run of the sweep, as recorded
    record = open_store(pg_url, owner="cy").get_work(work_id)
    assert record is not None and record.result is not None and record.result["is_llm"] is False
    assert len(record.result["series"]) == 2 and record.result["paid_usd"] == 0


def test_a_work_and_its_job_are_written_in_one_transaction(pg_url: str) -> None:
    """Team mode: the work row and its procrastinate jobs (a grid: one per document) are
    committed together. A job that cannot be written leaves no work behind (a row without a job
    would be answered "already queued" by the next submit and never run); a resumed work gets its
    jobs with its reopening."""
    import psycopg

    from rr_core.errors import ConfigError
    from rr_core.queue import WorkerQueue
    from rr_core.work import resume_work

    store = open_store(pg_url, owner="ana")
    try:
        files, work = _grid(store, "t", 2)
        queue = WorkerQueue(pg_url, "ana")
        hook = queue.enqueue()
        work_id = submit_review(store, work, enqueue=hook)

        def jobs() -> list[tuple[Any, ...]]:
            with psycopg.connect(pg_url) as db:
                return db.execute(
                    "SELECT args->>'work_id', args->>'part', status FROM procrastinate_jobs ORDER BY id"
                ).fetchall()

        parts = sorted(f.sha256 for f in files)
        assert sorted(jobs()) == [(work_id, sha, "todo") for sha in parts]  # a job per document
        assert [p.part for p in store.work_parts(work_id)] == parts
        assert submit_review(store, work, enqueue=hook) == work_id  # already queued: no second job
        assert len(jobs()) == 2

        def broken(connection: Any, new_id: str, its_parts: Any) -> None:
            hook(connection, new_id, its_parts)  # written, then the transaction fails after them
            raise ConfigError("the queue refused the job")

        other = ReviewWork.from_dict({**work.to_dict(), "columns": work.to_dict()["columns"][:1]})
        try:
            submit_review(store, other, enqueue=broken)
        except ConfigError as exc:
            assert "refused" in str(exc)
        else:
            raise AssertionError("the failed enqueue was not reported")
        assert [w.work_id for w in store.list_work()] == [work_id]  # no row without its jobs
        assert len(jobs()) == 2  # and no job without its row
        again = submit_review(store, other, enqueue=hook)  # nothing stale answers "already queued"
        assert again != work_id and len(jobs()) == 4

        with psycopg.connect(pg_url) as db:  # the workers never ran them here: clear the queue
            db.execute("DELETE FROM procrastinate_jobs")
        assert store.request_cancel(work_id)
        record = store.get_work(work_id)
        assert record is not None and record.state == "cancelled"
        assert {p.state for p in store.work_parts(work_id)} == {"cancelled"}
        assert resume_work(store, work_id, enqueue=hook)
        assert sorted(jobs()) == [(work_id, sha, "todo") for sha in parts]
        assert {p.state for p in store.work_parts(work_id)} == {"queued"}
    finally:
        store.close()


class _Gate:
    """A stub responder that answers model calls only as far as the test allows: call n waits
    until ``allow(n)`` (work released on a signal, not on time)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.arrived = 0
        self._allowed = 0

    def __call__(self, path: str, body: Any) -> Reply:
        if not path.endswith(("/responses", "/chat/completions")):
            return Reply()
        with self._cond:
            self.arrived += 1
            mine = self.arrived
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._allowed >= mine, timeout=600)
        return Reply()

    def allow(self, calls: int) -> None:
        with self._cond:
            self._allowed = calls
            self._cond.notify_all()


def test_sigterm_stops_a_worker_after_the_call_in_hand_and_the_next_worker_resumes(
    pg_url: str, tmp_path: Path
) -> None:
    from rr_core.queue import WorkerQueue

    gate = _Gate()
    with StubServer(responder=gate) as stub:
        store = open_store(pg_url, owner="ana")
        _, work = _grid(store, "t", DOCUMENTS)
        work_id = submit_review(store, work)
        WorkerQueue(pg_url, "ana").submit(work_id)
        first = _worker(pg_url, stub, tmp_path / "worker-a.log")
        second = None
        try:
            gate.allow(4)
            _wait(lambda: gate.arrived == 5, "the fifth call (held at the stub)")
            first.send_signal(signal.SIGTERM)  # the fifth call is in hand
            _wait(
                lambda: "this runner is stopping" in (tmp_path / "worker-a.log").read_text(errors="replace"),
                "the worker to stop sending",
            )
            gate.allow(5)  # the call in hand gets its reply
            first.wait(120)
            record = store.get_work(work_id)
            assert record is not None and record.state == "queued", record
            assert gate.arrived == 5 and 0 < record.done < record.total  # nothing sent after the stop
            assert _open_jobs(pg_url) == 1  # the job handed back, for the next worker
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
    logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in tmp_path.glob("worker-*.log"))
    done = store.get_work(work_id)
    assert done is not None and done.state == "done" and done.attempts == 2, logs
    cells = review_cells(store, work_id)
    assert len(cells) == 2 * DOCUMENTS and all(c.ok for c in cells), [c.error for c in cells if c.error]
    sent = Counter(
        prompt_of(r.body) for r in stub.requests if r.path.endswith(("/responses", "/chat/completions"))
    )
    assert sent and all(n == 1 for n in sent.values())  # the call in hand was kept: none paid twice
