"""Work that ends: a spec this build cannot read fails the work saying which versions; an
unexpected error fails it with its reason; a work whose process was killed (-9) while running it
is resumed by ``resume_work`` and finished, with no call sent twice."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rr_core.errors import ConfigError
from rr_core.kinds.sweep import SweepWork
from rr_core.llm.base import Completion, LLMRequest
from rr_core.llm.offline import OfflineEngine
from rr_core.store import open_store
from rr_core.tokens import counter_for_model
from rr_core.work import (
    LEASE_S,
    SPEC_VERSION,
    ReviewWork,
    resume_work,
    review_cells,
    run_work,
    runner_gone,
    submit_review,
)
from tests.test_work import setup  # noqa: F401  (the fixture: a store, a 4-contract grid)

ROOT = Path(__file__).resolve().parent.parent


class Counted:
    """The offline engine, counted as paid: each prompt sent is written to ``log`` (its digest),
    and from call ``limit + 1`` on it waits forever before sending (a process killed there has
    nothing in flight)."""

    name = "offline"
    is_llm = True
    max_concurrency: int | None = 1
    batch = None

    def __init__(self, log: Path, limit: int | None = None) -> None:
        self._engine = OfflineEngine(counter_for_model("gpt-4.1-mini"))
        self._log, self._limit = log, limit
        self._lock = threading.Lock()
        self.calls = 0

    def identity(self) -> dict[str, object]:
        return {"provider": "counted-offline"}

    def complete(self, request: LLMRequest) -> Completion:
        with self._lock:
            if self._limit is not None and self.calls >= self._limit:
                with self._log.open("a") as out:
                    out.write("BLOCKED\n")
                threading.Event().wait()  # never sent: the test kills the process here
            self.calls += 1
            with self._log.open("a") as out:
                out.write(hashlib.sha256(request.prompt.encode()).hexdigest() + "\n")
        return self._engine.complete(request)


CHILD = """
import sys
from pathlib import Path
from rr_core.store import open_store
from rr_core.work import run_work
from tests.test_work_lease import Counted
run_work(open_store(sys.argv[1]), sys.argv[2], client=Counted(Path(sys.argv[3]), int(sys.argv[4])))
"""


def _wait(condition: Callable[[], bool], what: str, limit: float = 180.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {limit:.0f} s for {what}")
        time.sleep(0.05)


def _sent(log: Path) -> list[str]:
    return [line for line in log.read_text().split() if line != "BLOCKED"] if log.exists() else []


def test_a_spec_of_another_version_or_with_unknown_fields_fails_the_work_naming_the_versions(setup) -> None:  # noqa: F811
    _, store, work = setup
    spec = work.to_dict()
    assert spec["spec_version"] == SPEC_VERSION
    newer = store.submit_work(
        "review", "newer", {**spec, "spec_version": SPEC_VERSION + 1}, 8, calls_key="v2"
    )
    record = run_work(store, newer)
    assert record is not None and record.state == "failed"
    assert f"spec version {SPEC_VERSION + 1}" in (record.error or "")
    assert f"reads versions 1 to {SPEC_VERSION}" in (record.error or "")
    unknown = store.submit_work("review", "unknown", {**spec, "shiny_option": True}, 8, calls_key="unknown")
    record = run_work(store, unknown)
    assert record is not None and record.state == "failed" and "shiny_option" in (record.error or "")
    sweep = SweepWork(preset="quick", series=("rr",), provider="offline", model="offline", sample="contract")
    odd = store.submit_work("sweep", "odd", {**sweep.to_dict(), "depth_grid": [1]}, 1, calls_key="odd")
    record = run_work(store, odd)
    assert record is not None and record.state == "failed" and "depth_grid" in (record.error or "")
    with pytest.raises(ConfigError, match="spec version 7"):
        ReviewWork.from_dict({**spec, "spec_version": 7})
    assert ReviewWork.from_dict(spec) == work and SweepWork.from_dict(sweep.to_dict()) == sweep


def test_an_unexpected_error_ends_the_work_failed_with_its_reason(setup, monkeypatch) -> None:  # noqa: F811
    from rr_core.kinds.review import PlannedReview

    _, store, work = setup

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("a defect in the runner")

    monkeypatch.setattr(PlannedReview, "run", broken)  # the grid's kind, as the runner dispatches to it
    work_id = submit_review(store, work)
    record = run_work(store, work_id)
    assert record is not None and record.state == "failed"
    assert record.error == "ValueError: a defect in the runner"


def test_runner_gone_reads_the_process_on_this_host_and_the_lease() -> None:
    from rr_core.store import WorkRecord
    from rr_core.work import runner_name

    now = datetime.now(UTC)
    fresh = now.isoformat(timespec="seconds")

    def record(worker: str, updated: str = fresh) -> WorkRecord:
        return WorkRecord(work_id="w", kind="review", title="t", state="running", spec={}, worker=worker,
                          updated_at=updated)  # fmt: skip

    assert runner_gone(record(f"in-process {runner_name()}")) == ""  # this very process
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(done.stdout)
    host = runner_name().rsplit(":", 1)[0]
    assert "ended before it finished" in runner_gone(record(f"worker {host}:{dead_pid}"))
    elsewhere = "worker another-host:123"
    assert runner_gone(record(elsewhere)) == ""  # heard from just now
    stale = (now - timedelta(seconds=LEASE_S + 5)).isoformat(timespec="seconds")
    assert "has not been heard from" in runner_gone(record(elsewhere, stale))


def test_work_killed_mid_run_is_resumed_and_finished_with_no_call_sent_twice(tmp_path: Path) -> None:
    """A process running a grid in its own thread (the app's in-process queue) is killed -9 with
    the work "running". ``resume_work`` sees its process is gone, and the resumed run asks only
    what has no stored reply: no prompt is sent twice, and every cell is there."""
    from rr_core.review import items_from_uploads, parse_columns
    from rr_core.workbench import Engine, read_review_corpus
    from tests.test_work import COLUMNS, _contract

    path = str(tmp_path / "runs.sqlite3")
    store = open_store(path)
    engine = Engine.choose("offline")
    files = read_review_corpus(
        items_from_uploads([(f"c{i}.pdf", _contract(i)) for i in range(4)])[0],
        model=engine.counting_model(), store=store, processes=1,
    )  # fmt: skip
    work = ReviewWork(
        tuple(files), tuple(parse_columns(COLUMNS)), engine.settings(method="rr"), engine.provider, engine.model,
        engine.price_model, concurrency=1,
    )  # fmt: skip
    work_id = submit_review(store, work)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, path, work_id, str(first_log), "3"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        _wait(
            lambda: first_log.exists() and "BLOCKED" in first_log.read_text(), "the child to block on call 4"
        )

        def stored() -> int:
            with sqlite3.connect(path) as db:
                return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

        _wait(lambda: stored() >= len(_sent(first_log)), "the child's replies to be stored")
        assert child.poll() is None, "the child ended before it was killed"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=120)
    record = store.get_work(work_id)
    assert record is not None and record.state == "running"  # as a killed process leaves it
    assert len(_sent(first_log)) == 3
    assert resume_work(store, work_id)
    resumed = store.get_work(work_id)
    assert resumed is not None and resumed.state == "queued"
    finished = run_work(store, work_id, client=Counted(second_log))
    assert finished is not None and finished.state == "done", finished
    assert finished.done == 8 and finished.attempts == 2
    assert len(review_cells(store, work_id)) == 8
    first, second = _sent(first_log), _sent(second_log)
    assert second and not set(first) & set(second), "a prompt was sent twice"
    assert len(second) == len(set(second))


def test_the_runner_logs_a_line_when_a_work_starts_progresses_and_ends(setup, caplog) -> None:  # noqa: F811
    import logging

    _, store, work = setup
    work_id = submit_review(store, work)
    with caplog.at_level(logging.INFO, logger="rr_core.work"):
        assert run_work(store, work_id) is not None
    lines = [r.getMessage() for r in caplog.records if r.name == "rr_core.work"]
    assert lines[0].startswith(f"work {work_id} started by ") and "0 of 8 done" in lines[0]
    assert f"work {work_id}: 8 of 8 cells" in lines
    assert lines[-1] == f"work {work_id} done: 8 of 8 done"


def test_the_work_list_says_when_by_whom_and_which(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Two identical grids sent at different times are told apart: id, time sent, owner, runner."""
    from rr_core.cli import main

    path = tmp_path / "runs.sqlite3"
    monkeypatch.setenv("RR_STUDIO_DB", str(path))
    store = open_store(str(path))
    first = store.submit_work("review", "Review · 2 documents × 1 questions", {"files": []}, 2)
    store.update_work(first, state="done", done=2)
    second = store.submit_work("review", "Review · 2 documents × 1 questions", {"files": []}, 2)
    assert main(["work"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [second, first]
    for line, work_id in zip(lines, (second, first), strict=True):
        record = store.get_work(work_id)
        assert record is not None and record.created_at[:16].replace("T", " ") in line
        assert "[by local; run by " in line
    assert "run by no one yet" in lines[0]


def test_a_work_still_run_by_a_live_runner_is_not_run_twice_and_is_taken_up_once_let_go(
    setup,  # noqa: F811
    monkeypatch,
) -> None:  # type: ignore[no-untyped-def]
    """A job handed out again (procrastinate re-queues a worker that stopped beating while it
    finishes its call in hand after SIGTERM) meets its work still run by a live runner: it
    does not run it alongside; once that runner lets it go (hands it back), it runs it."""
    import rr_core.work as work_module

    _, store, work = setup
    monkeypatch.setattr(work_module, "HANDOVER_WAIT_S", 1.0)
    work_id = submit_review(store, work)
    store.update_work(work_id, state="running", worker="worker another-host:4242", started=True)
    client = Counted(Path(os.devnull))
    record = run_work(store, work_id, client=client)
    assert record is not None and record.state == "running" and record.worker == "worker another-host:4242"
    assert client.calls == 0 and review_cells(store, work_id) == []

    monkeypatch.setattr(work_module, "HANDOVER_WAIT_S", 600.0)
    ended: list[Any] = []
    runner = threading.Thread(target=lambda: ended.append(run_work(store, work_id, client=client)))
    runner.start()
    store.update_work(work_id, state="queued")  # the other runner hands it back
    runner.join(600)
    assert not runner.is_alive()
    assert ended[0] is not None and ended[0].state == "done" and ended[0].done == 8
    assert ended[0].attempts == 2  # the other runner's, then this one


def test_a_background_grid_with_a_comparison_counts_agreement_when_its_cells_are_read(setup) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """Cells are recorded as each arrives, before its twin of the other method is answered:
    agreement is counted on reading (once), as the in-session grid counts it."""
    from rr_core.review import agree_cells
    from rr_core.work import grid_cells

    _, store, work = setup
    compared = ReviewWork.from_dict(
        {**work.to_dict(), "compare": work.settings.but(method="baseline").to_dict(), "compare_rows": 2}
    )
    work_id = submit_review(store, compared)
    record = run_work(store, work_id)
    assert record is not None and record.state == "done"
    raw = review_cells(store, work_id)
    shown = grid_cells(store, work_id, compared)
    assert shown == agree_cells(raw) and shown != raw  # agreement moved some cells' scores
    assert grid_cells(store, work_id, compared) == shown  # read again: counted once, not twice
    assert grid_cells(store, work_id, work) == raw  # no comparison: as recorded
