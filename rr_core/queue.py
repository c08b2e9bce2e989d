"""Team mode's task queue: work run by worker processes on any number of machines, through
procrastinate on the same PostgreSQL as the store.

Why procrastinate (DESIGN notes in the README): it keeps its jobs in the PostgreSQL the store
already needs (one server to run, back up and secure, and a job is submitted in a database
transaction), it has workers with heartbeats and a query for the jobs of workers that stopped
beating, and both sync and async tasks. Celery or RQ would add a broker (Redis or RabbitMQ)
to run, secure and back up beside PostgreSQL, for no gain at this load.

A job carries only (owner, work id): the work itself (its spec, progress, cells and stop
request) is in the store, owned and under row-level security, and ``rr_core.work.run_work``
runs it. A worker that dies mid-job loses nothing recorded: another worker's requeue loop
finds the job stalled (no heartbeat for ``stalled_after_s``) and runs it again, which asks only
the cells not recorded and pays for no call the store already holds. A worker told to stop
(SIGTERM, Ctrl-C) sends nothing further, waits for the calls in flight (the cell in hand), and
hands its job back to the queue, where the next worker resumes the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import procrastinate
from procrastinate import exceptions as pq_errors

from rr_core.errors import ConfigError
from rr_core.llm import LLMClient
from rr_core.store import Enqueue, WorkPart, WorkRecord, open_store, redact_url
from rr_core.work import run_part, run_work, runner_name

QUEUE = "rr-work"
TASK = "rr_core.run_work"
HEARTBEAT_S = 5.0  # how often a worker says it is alive
STALLED_AFTER_S = 20.0  # a worker silent this long is taken for dead: its jobs run again elsewhere

log = logging.getLogger("rr_core.queue")


class WorkHandedBack(Exception):
    """A job whose worker is shutting down: its work is left queued, and the job is queued again."""


def make_app(url: str) -> procrastinate.App:
    """The queue's app on the PostgreSQL at ``url``, with its one task."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    # Only a job handed back is queued again (at once, as often as workers stop); a job that
    # failed otherwise is not.
    handed_back = procrastinate.RetryStrategy(retry_exceptions=[WorkHandedBack])

    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=handed_back)
    def run_work_task(context: procrastinate.JobContext, owner: str, work_id: str, part: str = "") -> None:
        store = open_store(url, owner=owner)
        who = f"worker {runner_name()}"
        try:
            # The worker asks its running jobs to end when it is told to stop (SIGTERM).
            ended: WorkPart | WorkRecord | None
            if part:  # one part of a work run in parts (a grid's document)
                ended = run_part(store, work_id, part, worker=who, leaving=context.should_abort)
            else:
                ended = run_work(store, work_id, worker=who, leaving=context.should_abort)
        finally:
            store.close()
        if ended is not None and ended.state == "queued" and context.should_abort():
            log.warning(
                "work %s%s handed back to the queue: this worker is stopping",
                work_id,
                f" part {part}" if part else "",
            )
            raise WorkHandedBack(work_id)

    return app


async def _apply_schema(app: procrastinate.App) -> None:
    """Create the queue's tables once (several workers and replicas may start together)."""
    connector = app.connector
    exists = await connector.execute_query_one_async(
        "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
    )
    if exists["present"]:
        return
    await connector.execute_query_async("SELECT pg_advisory_lock(5252)")
    try:
        again = await connector.execute_query_one_async(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
        )
        if not again["present"]:
            await app.schema_manager.apply_schema_async()
    finally:
        await connector.execute_query_async("SELECT pg_advisory_unlock(5252)")


def prepare(url: str) -> None:
    """Make sure the queue's tables exist (the first replica or worker to start creates them)."""

    async def go() -> None:
        app = make_app(url)
        async with app.open_async():
            await _apply_schema(app)

    asyncio.run(go())


class WorkerQueue:
    """Submits work to the workers (the page and the CLI in team mode)."""

    name = "workers"

    def __init__(self, url: str, owner: str) -> None:
        self._url, self._owner = url, owner

    def submit(self, work_id: str, *, client: LLMClient | None = None) -> None:
        """Queue a job for the work (a key typed in the browser is not sent: workers use theirs)."""
        del client

        async def go() -> None:
            app = make_app(self._url)
            async with app.open_async():
                await _apply_schema(app)
                # A work's jobs run one at a time (a work handed to the queue again): the lock
                # makes the next wait for the one running to end. A job queued again as stalled
                # (its worker stopped beating for --stalled-after) no longer holds it.
                lock = f"{self._owner}:{work_id}"
                await app.configure_task(TASK, lock=lock).defer_async(owner=self._owner, work_id=work_id)

        try:
            asyncio.run(go())
        except (OSError, pq_errors.ProcrastinateException) as exc:
            raise ConfigError(f"the work could not be queued at {redact_url(self._url)}: {exc}") from None

    def enqueue(self) -> Enqueue:
        """Queues the work's job on the connection of the store's transaction that records the
        work (the same database): the row and its job are committed together, or neither is.
        A work recorded without its job would be answered "already queued" and never run. A work
        run in parts (a grid: its documents) gets one job per part, all in that transaction."""
        _prepared(self._url)
        app = make_app(self._url)

        def defer(connection: Any, work_id: str, parts: Sequence[str]) -> None:
            # One job of a work (or of a part) runs at a time (see ``submit``).
            try:
                if not parts:
                    app.configure_task(TASK, lock=f"{self._owner}:{work_id}", connection=connection).defer(
                        owner=self._owner, work_id=work_id
                    )
                    return
                # A job per part, written in one statement (procrastinate's batch defer).
                jobs = [
                    app.configure_task(TASK, lock=f"{self._owner}:{work_id}:{part}").make_new_job(
                        owner=self._owner, work_id=work_id, part=part
                    )
                    for part in parts
                ]
                app.job_manager.batch_defer_jobs(jobs, connection=connection)
            except pq_errors.ProcrastinateException as exc:
                raise ConfigError(f"the work could not be queued at {redact_url(self._url)}: {exc}") from None

        return defer


_PREPARED: set[str] = set()


def _prepared(url: str) -> None:
    """The queue's tables exist (checked once per process and database)."""
    if url in _PREPARED:
        return
    try:
        prepare(url)
    except (OSError, pq_errors.ProcrastinateException) as exc:
        raise ConfigError(f"the work queue at {redact_url(url)} could not be prepared: {exc}") from None
    _PREPARED.add(url)


async def _requeue_stalled(app: procrastinate.App, stalled_after_s: float) -> None:
    """Every few seconds: jobs of workers that stopped beating go back to the queue."""
    while True:
        try:
            for job in await app.job_manager.get_stalled_jobs(
                queue=QUEUE, seconds_since_heartbeat=stalled_after_s
            ):
                log.warning("job %s of a worker that stopped is queued again", job.id)
                await app.job_manager.retry_job(job)
        except pq_errors.ProcrastinateException as exc:  # the database away for a moment
            log.warning("could not look for stalled jobs: %s", exc)
        await asyncio.sleep(max(1.0, stalled_after_s / 4))


def run_worker(
    url: str,
    *,
    concurrency: int = 2,
    heartbeat_s: float = HEARTBEAT_S,
    stalled_after_s: float = STALLED_AFTER_S,
    name: str | None = None,
) -> None:
    """Run a worker until it is stopped (SIGINT/SIGTERM: it sends no further call, waits for the
    calls in flight, and hands its work back to the queue for the next worker)."""

    async def serve() -> None:
        app = make_app(url)
        async with app.open_async():
            await _apply_schema(app)
            requeue = asyncio.create_task(_requeue_stalled(app, stalled_after_s))
            options: dict[str, Any] = {
                "queues": [QUEUE],
                "concurrency": concurrency,
                "update_heartbeat_interval": heartbeat_s,
                "stalled_worker_timeout": stalled_after_s,
                "name": name or f"rr-worker {runner_name()}",
                "delete_jobs": "successful",
                # Told to stop, the worker at once asks its jobs to end (``should_abort``); each
                # ends after the calls in flight (a sync job cannot be interrupted).
                "shutdown_graceful_timeout": 0,
            }
            try:
                await app.run_worker_async(**options)
            finally:
                requeue.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await requeue

    asyncio.run(serve())
