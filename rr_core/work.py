"""Long work that outlives the page: a review grid or a Lab sweep as plain data in the store,
run by whoever picks it up, watched and stopped from anywhere.

The page (or the CLI) *submits* a spec of a registered kind (``rr_core.kinds``: ``ReviewWork``,
``SweepWork``; the corpus by content hash, never an API key) to the store, then hands its id to
a ``WorkQueue``:

- ``InProcessQueue`` (the embedded default): a thread of this process runs it; the tab can
  close, the work goes on while the server runs;
- team mode: workers on a task queue backed by the same PostgreSQL (``rr_core.queue``) run it,
  on any machine.

``run_work`` is the one runner both use, and it knows no kind: it reads the spec through its
kind, plans it once, and runs it; the kind records each finished job's results in the store as
they arrive (a worker that dies loses no finished cell), skips those already recorded when the
work is started again, and sends nothing that the call cache already holds (never paid twice).
A stop request recorded by any process is seen within about a second, and no further call is
sent. A worker uses the keys configured where it runs; a key typed in the browser never reaches
the store, so only the in-process queue can use it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from rr_core.errors import ConfigError, LLMError, RRError
from rr_core.kinds import get_kind
from rr_core.kinds.base import SPEC_VERSION as SPEC_VERSION
from rr_core.kinds.base import Ended, PlannedWork, WorkContext, WorkSpec, progress_step
from rr_core.kinds.review import REVIEW as REVIEW
from rr_core.kinds.review import PlannedReview
from rr_core.kinds.review import ReviewWork as ReviewWork
from rr_core.kinds.review import grid_cells as grid_cells
from rr_core.kinds.review import grid_results as grid_results
from rr_core.kinds.review import review_cells as review_cells
from rr_core.llm import LLMClient
from rr_core.review import ReviewPlan
from rr_core.runs import Executor
from rr_core.store import Enqueue, Store, WorkPart, WorkRecord

if TYPE_CHECKING:  # the Lab's kind loads when a sweep is read (``get_kind``), not with every review
    from rr_core.kinds.sweep import PlannedSweep, SweepWork

STOP_POLL_S = 1.0  # how often a running work looks for a stop request
PART_PROGRESS_S = 1.0  # how often a part counts its work's results for the progress shown
# A running work's lease: its runner touches the work row every LEASE_RENEW_S, from the moment
# it takes the work up until it lets it go (planning included); a work whose row has not moved
# for LEASE_S, or whose runner's process on this host has ended, may be taken up by another.
LEASE_S = 60.0
LEASE_RENEW_S = 10.0
# How long a runner handed a work that another, live runner still runs waits for it to let go
# (a worker finishing the call in hand after SIGTERM, while its job is handed out again).
HANDOVER_WAIT_S = 3 * LEASE_S
log = logging.getLogger(__name__)


def new_work_id() -> str:
    """A new work's id."""
    return uuid.uuid4().hex[:16]


def submit_work(
    store: Store,
    work: WorkSpec,
    planned: PlannedWork | None = None,
    *,
    work_id: str | None = None,
    enqueue: Enqueue | None = None,
) -> str:
    """Record work of any kind as queued; its id (the same calls already queued or running: that
    work's, so that they are not run, and paid, twice at once). ``planned``: the work as shown
    (its total; planned here otherwise); ``enqueue``: the queue's job for new work, written in the
    same transaction (see ``WorkStore.submit_work``)."""
    total = (planned or work.prepare(store)).total
    # The workers' queue (the one that writes jobs with the work) runs a kind's parts apart, one
    # job each: N workers share one big grid. A thread of this process runs the work whole.
    parts = work.parts() if enqueue is not None else ()
    return store.submit_work(
        work.kind, work.title, work.to_dict(), total, calls_key=work.calls_key(), work_id=work_id,
        enqueue=enqueue, parts=parts,
    )  # fmt: skip


def submit_sweep(
    store: Store,
    work: SweepWork,
    planned: PlannedSweep | None = None,
    *,
    work_id: str | None = None,
    enqueue: Enqueue | None = None,
) -> str:
    """Record a Lab sweep as queued work (as ``submit_work``)."""
    return submit_work(store, work, planned, work_id=work_id, enqueue=enqueue)


def submit_review(
    store: Store,
    work: ReviewWork,
    plan: ReviewPlan | None = None,
    *,
    work_id: str | None = None,
    enqueue: Enqueue | None = None,
) -> str:
    """Record a review as queued work (as ``submit_work``); ``plan``: the grid as shown."""
    planned = PlannedReview(work, plan) if plan is not None else None
    return submit_work(store, work, planned, work_id=work_id, enqueue=enqueue)


def resume_work(store: Store, work_id: str, *, enqueue: Enqueue | None = None) -> bool:
    """Queue stopped or failed work again (its recorded cells stay; only the rest is asked).
    Work still marked running whose runner is gone (its process on this host ended, or its lease
    ran out: a killed app or worker) is first marked failed, saying so, then queued again."""
    record = store.get_work(work_id)
    if record is not None and record.state == "running":
        gone = runner_gone(record)
        if gone:
            store.update_work(work_id, state="failed", error=gone)
    return store.reopen_work(work_id, enqueue=enqueue)


def runner_gone(record: WorkRecord | WorkPart, *, now: datetime | None = None) -> str:
    """Why a running work's runner is known to be gone ("" while it may still run): its
    process, on this host, has ended; or it has not renewed its lease for ``LEASE_S``."""
    where = record.worker.rsplit(" ", 1)[-1]
    host, _, pid = where.rpartition(":")
    if host == socket.gethostname() and pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return f"the process running it ({record.worker}) ended before it finished"
        except PermissionError:
            pass  # a process of another user has that id: the lease says (below)
    # A live process with the runner's id may be another (an id reused after a restart): the
    # lease, renewed by the runner as long as it runs, decides.
    try:
        touched = datetime.fromisoformat(record.updated_at)
    except ValueError:
        return ""
    if touched.tzinfo is None:
        touched = touched.replace(tzinfo=UTC)
    idle = ((now or datetime.now(UTC)) - touched).total_seconds()
    if idle > LEASE_S:
        return (
            f"its runner ({record.worker}) has not been heard from for {idle:.0f} s (lease {LEASE_S:.0f} s)"
        )
    return ""


def runner_name() -> str:
    """Who runs work here: the host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def run_work(
    store: Store,
    work_id: str,
    *,
    client: LLMClient | None = None,
    worker: str = "",
    leaving: Callable[[], bool] | None = None,
) -> WorkRecord | None:
    """Run queued (or interrupted) work of any registered kind to its end, planned once here,
    recording each job's results as they arrive; returns the work as it ended (None when there
    is no such work). Results already recorded are not asked again; calls already answered come
    from the call cache (nothing is paid twice).

    ``leaving``: whether the runner is shutting down (a worker's SIGTERM). Then nothing further
    is sent, the calls in flight are waited for, and the work is left queued for the next
    runner (it is not cancelled)."""
    who = worker or runner_name()
    record = store.get_work(work_id)
    if record is not None and record.state == "running" and record.worker != who and not runner_gone(record):
        record = _wait_for_runner(store, record)
        if record is not None and record.state == "running" and not runner_gone(record):
            log.info("work %s is still run by %s, alive: not run here as well", work_id, record.worker)
            return record
    if record is None:
        return None
    # Ended work is not run again by a job that waited behind the one that ended it (a second
    # submit's): a failed one too, until a resume queues it again.
    if record.state in ("done", "cancelled", "failed") or record.cancel_requested:
        if record.is_open:
            store.update_work(work_id, state="cancelled")
        return store.get_work(work_id)
    try:
        kind = get_kind(record.kind)
    except ConfigError as exc:
        raise ConfigError(f"work {work_id}: {exc}") from None
    store.update_work(work_id, state="running", worker=who, started=True, error="")
    log.info(
        "work %s started by %s: %s, %d of %d done", work_id, who, record.title, record.done, record.total
    )
    try:
        with _lease(store, work_id):
            ended = _run(store, work_id, record.spec, kind.read, client, leaving)
    finally:
        try:
            last = store.get_work(work_id)
        except RRError:  # the store away: its own error says so
            last = None
        if last is not None:
            log.info(
                "work %s %s: %d of %d done%s", work_id, last.state if last.state != "running" else "left running",
                last.done, last.total, f" ({last.error})" if last.error else "",
            )  # fmt: skip
    return ended


def run_part(
    store: Store,
    work_id: str,
    part: str,
    *,
    client: LLMClient | None = None,
    worker: str = "",
    leaving: Callable[[], bool] | None = None,
) -> WorkPart | None:
    """Run one part of a work run in parts (a grid's document: its cells only, those recorded
    skipped), with a whole work's stop, lease and hand-back; returns the part as it ended (None:
    no such part). The part that ends the work's last open part writes the work's end, decided
    under a lock on the work's row (exactly one does); the work's progress counts every part's
    results."""
    who = worker or runner_name()
    held = _part(store, work_id, part)
    if held is not None and held.state == "running" and held.worker != who and not runner_gone(held):
        held = _wait_for_part(store, held)
        if held is not None and held.state == "running" and not runner_gone(held):
            log.info(
                "work %s part %s is still run by %s, alive: not run here as well", work_id, part, held.worker
            )
            return held
    record = store.get_work(work_id)
    if held is None or record is None or held.ended:
        return held
    if record.cancel_requested:
        _end_part(store, record, part, Ended("cancelled"))
        return _part(store, work_id, part)
    try:
        kind = get_kind(record.kind)
    except ConfigError as exc:
        raise ConfigError(f"work {work_id}: {exc}") from None
    store.start_part(work_id, part, who)
    log.info("work %s part %s started by %s", work_id, part[:12], who)
    try:
        with _lease(store, work_id, part):
            ended = _run_part(store, record, part, kind.read, client, leaving)
        _end_part(store, record, part, ended)
    finally:
        log.info("work %s part %s ended here", work_id, part[:12])
    return _part(store, work_id, part)


def _part(store: Store, work_id: str, part: str) -> WorkPart | None:
    return next((p for p in store.work_parts(work_id) if p.part == part), None)


def _run_part(
    store: Store,
    record: WorkRecord,
    part: str,
    read: Callable[[dict[str, Any]], WorkSpec],
    client: LLMClient | None,
    leaving: Callable[[], bool] | None,
) -> Ended:
    """``run_part``'s part once the part is running: the spec cut down to it, planned, run."""
    work_id = record.work_id
    try:
        stop = _StopWhenAsked(store, work_id, leaving)
        planned = read(record.spec).part(part).prepare(store)
        context = _context(store, work_id, client, stop, planned.unit, part)
        # The work's progress counts every part's results: counted when this part has recorded
        # some, at most every PART_PROGRESS_S (a count reads the work's results: at each cell of
        # a big grid's every part, its time grew with the square of its size), and once more at
        # the part's end if a count was let go.
        last = {"done": -1, "at": -PART_PROGRESS_S, "owed": 0}

        def count() -> None:
            last["at"], last["owed"] = time.monotonic(), 0
            store.update_work(work_id, done=store.count_results(work_id))

        def progress(done: int, total: int) -> None:
            del total
            if done == last["done"]:
                return  # nothing recorded by this part since
            last["done"] = done
            if time.monotonic() - last["at"] >= PART_PROGRESS_S:
                count()
            else:
                last["owed"] = 1

        ended = planned.run(replace(context, progress=progress))
        if last["owed"]:
            count()
        return ended
    except (RRError, OSError) as exc:
        return Ended("failed", None, str(exc))
    except Exception as exc:  # a defect: the part ends, saying what broke, instead of staying "running"
        log.exception("work %s part %s failed", work_id, part)
        return Ended("failed", None, f"{type(exc).__name__}: {exc}")


def _end_part(store: Store, record: WorkRecord, part: str, ended: Ended) -> None:
    """Record the part's end; the last part to end writes the work's (summed up by its kind)."""
    work_id = record.work_id
    parts = store.end_part(work_id, part, ended.state, ended.summary, ended.error)
    if parts is None:
        return
    try:
        whole = get_kind(record.kind).read(record.spec).summarize(store, work_id, parts)
    except (RRError, OSError) as exc:
        whole = Ended("failed", None, f"the grid's parts ended, but could not be summed up: {exc}")
    store.update_work(work_id, state=whole.state, result=whole.summary, error=whole.error,
                      done=store.count_results(work_id))  # fmt: skip
    log.info("work %s %s: its last part has ended", work_id, whole.state)


def _wait_for_part(store: Store, held: WorkPart) -> WorkPart | None:
    """The part once its live runner has let it go, or as it is after ``HANDOVER_WAIT_S``."""
    end = time.monotonic() + HANDOVER_WAIT_S
    current: WorkPart | None = held
    while current is not None and current.state == "running" and not runner_gone(current):
        if time.monotonic() > end:
            break
        time.sleep(min(2.0, LEASE_RENEW_S / 2))
        current = _part(store, held.work_id, held.part)
    return current


def _wait_for_runner(store: Store, record: WorkRecord) -> WorkRecord | None:
    """The work once its live runner has let it go (handed it back, ended it, or is gone), or
    as it is after ``HANDOVER_WAIT_S``: a job handed out again while another runner still
    finishes its call in hand must not send that call a second time."""
    end = time.monotonic() + HANDOVER_WAIT_S
    current: WorkRecord | None = record
    while current is not None and current.state == "running" and not runner_gone(current):
        if time.monotonic() > end:
            break
        time.sleep(min(2.0, LEASE_RENEW_S / 2))
        current = store.get_work(record.work_id)
    return current


@contextmanager
def _lease(store: Store, work_id: str, part: str = "") -> Iterator[None]:
    """While the block runs: the work's row (and its part's) is touched every ``LEASE_RENEW_S``
    (its runner is alive), planning included."""
    finished = threading.Event()

    def renew() -> None:
        while not finished.wait(LEASE_RENEW_S):
            try:
                if part:
                    store.touch_part(work_id, part)
                else:
                    store.update_work(work_id)
            except RRError:
                log.warning("work %s: could not renew its lease", work_id, exc_info=True)

    renewer = threading.Thread(target=renew, name=f"lease-{work_id}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        finished.set()
        renewer.join(timeout=5)


def _run(
    store: Store,
    work_id: str,
    spec: dict[str, Any],
    read: Callable[[dict[str, Any]], WorkSpec],
    client: LLMClient | None,
    leaving: Callable[[], bool] | None,
) -> WorkRecord | None:
    """``run_work``'s part once the work is marked running: the spec read through its kind (a
    spec of another version refused), planned once, run; it ends failed on any error."""
    try:
        stop = _StopWhenAsked(store, work_id, leaving)
        planned = read(spec).prepare(store)
        ended = planned.run(_context(store, work_id, client, stop, planned.unit))
    except (RRError, OSError) as exc:
        store.update_work(work_id, state="failed", error=str(exc))
        return store.get_work(work_id)
    except Exception as exc:  # a defect: the work ends, saying what broke, instead of staying "running"
        log.exception("work %s failed", work_id)
        store.update_work(work_id, state="failed", error=f"{type(exc).__name__}: {exc}")
        return store.get_work(work_id)
    _end(store, work_id, ended)
    return store.get_work(work_id)


def _context(
    store: Store, work_id: str, client: LLMClient | None, stop: _StopWhenAsked, unit: str, part: str = ""
) -> WorkContext:
    """What a planned work (or ``part`` of it) runs with: its finished jobs' results and its
    progress go to the store."""

    def record(results: list[tuple[str, dict[str, Any]]]) -> None:
        store.add_results(work_id, results, part)

    def progress(done: int, total: int) -> None:
        store.update_work(work_id, done=done, total=total)
        if done and done % progress_step(total) == 0:
            log.info("work %s: %d of %d %s", work_id, done, total, unit)

    return WorkContext(store, work_id, client, stop, record, progress, part)


def _end(store: Store, work_id: str, ended: Ended) -> None:
    """Record how a run of the work ended ("queued": its runner left; the next takes it up)."""
    if ended.state == "queued":
        if ended.done is not None:
            store.update_work(work_id, state="queued", done=ended.done)
        else:
            store.update_work(work_id, state="queued")
        return
    store.update_work(work_id, state=ended.state, result=ended.summary, error=ended.error)


class _StopWhenAsked:
    """Stops the runner when a stop request is recorded (by any process), or when the runner
    itself is leaving (``leaving``: a worker's shutdown; ``left`` says so after): looked for
    after each cell, and every ``STOP_POLL_S`` by a watcher while calls are in flight."""

    def __init__(self, store: Store, work_id: str, leaving: Callable[[], bool] | None = None) -> None:
        self._store, self._work_id, self._leaving = store, work_id, leaving
        self._runner: Executor | None = None
        self.left = False

    def check(self) -> bool:
        """Stop the runner if a stop was asked for; whether it was."""
        if self._leaving is not None and self._leaving() and self._runner is not None:
            if not self.left:
                log.warning("work %s: this runner is stopping; nothing further is sent", self._work_id)
            self.left = True
            self._runner.leave()  # what it took from an earlier process goes back for the next runner
            return True
        try:
            record = self._store.get_work(self._work_id)
        except RRError:
            return False
        if (record is None or record.cancel_requested) and self._runner is not None:
            self._runner.cancel()
            return True
        return False

    @contextmanager
    def guard_open(self) -> Iterator[Callable[[Executor], None]]:
        """For a use case that opens its own runner: hands back a callback taking the runner,
        and watches for a stop until the block ends."""

        def found(runner: Executor) -> None:
            self._runner = runner

        with self._watching():
            yield found

    @contextmanager
    def guard(self, runner: Executor) -> Iterator[None]:
        """Watch for a stop while ``runner`` runs."""
        self._runner = runner
        with self._watching():
            yield

    @contextmanager
    def _watching(self) -> Iterator[None]:
        """Until the block ends: look for a stop every ``STOP_POLL_S``."""
        finished = threading.Event()

        def watch() -> None:
            while not finished.wait(STOP_POLL_S):
                if self.check():
                    return

        watcher = threading.Thread(target=watch, name=f"stop-watch-{self._work_id}", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            finished.set()
            watcher.join(timeout=5)


# ---- queues ---------------------------------------------------------------------------------------


class WorkQueue(Protocol):
    """Where submitted work is run."""

    @property
    def name(self) -> str:
        """How the screen names it ("in this process", "workers")."""
        ...

    def submit(self, work_id: str, *, client: LLMClient | None = None) -> None:
        """Have the work run (``client``: one made for the page, key included, in-process only)."""
        ...

    def enqueue(self) -> Enqueue | None:
        """What queues a work's job inside the store's transaction that records the work (the
        workers' queue, in the same database), or None: ``submit`` it once it is recorded."""
        ...


class InProcessQueue:
    """The embedded default: each work runs in a thread of this process (it outlives the tab,
    not the server; started again, it resumes where it stopped)."""

    name = "in this process"

    def __init__(self, open_store: Callable[[], Store]) -> None:
        self._open_store = open_store
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def submit(self, work_id: str, *, client: LLMClient | None = None) -> None:
        """Start a thread for the work, unless one is running it already."""
        with self._lock:
            running = self._threads.get(work_id)
            if running is not None and running.is_alive():
                return
            thread = threading.Thread(
                target=self._run, args=(work_id, client), name=f"work-{work_id}", daemon=True
            )
            self._threads[work_id] = thread
            thread.start()

    def enqueue(self) -> Enqueue | None:
        """None: a thread is started by ``submit``, once the work is recorded."""
        return None

    def running(self, work_id: str) -> bool:
        """Whether a thread of this process runs the work now."""
        thread = self._threads.get(work_id)
        return thread is not None and thread.is_alive()

    def wait(self, work_id: str, timeout: float) -> bool:
        """Wait for the work's thread to end; whether it did."""
        thread = self._threads.get(work_id)
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self, work_id: str, client: LLMClient | None) -> None:
        store = self._open_store()
        try:
            run_work(store, work_id, client=client, worker=f"in-process {runner_name()}")
        except LLMError as exc:  # a client that could not be made (no key): the work says why
            store.update_work(work_id, state="failed", error=str(exc))
        except Exception as exc:  # never a thread that dies leaving its work "running"
            log.exception("work %s failed", work_id)
            store.update_work(work_id, state="failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            store.close()
