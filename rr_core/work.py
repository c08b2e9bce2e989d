"""Long work that outlives the page: a review grid as plain data in the store, run by whoever
picks it up, watched and stopped from anywhere.

The page (or the CLI) *submits* a ``ReviewWork`` (the corpus by content hash, the columns, the
method(s), the engine without its key, the answer key, the mode and budget) to the store, then
hands its id to a ``WorkQueue``:

- ``InProcessQueue`` (the embedded default): a thread of this process runs it; the tab can
  close, the work goes on while the server runs;
- team mode: workers on a task queue backed by the same PostgreSQL (``rr_core.queue``) run it,
  on any machine.

``run_work`` is the one runner both use: it records each cell in the store as it arrives (a
worker that dies loses no finished cell), skips the cells already recorded when the work is
started again, and sends nothing that the call cache already holds (never paid twice). A stop
request recorded by any process is seen within about a second, and no further call is sent.
A worker uses the keys configured where it runs; a key typed in the browser never reaches the
store, so only the in-process queue can use it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Protocol

from rr_core.costs import Mode
from rr_core.errors import ConfigError, LLMError, RRError
from rr_core.llm import LLMClient
from rr_core.review import AnswerKey, Cell, Column, CorpusFile, ReviewPlan, agree_cells
from rr_core.review.export import scores_json
from rr_core.runs import Executor
from rr_core.settings import RunSettings
from rr_core.store import Enqueue, Store, WorkRecord
from rr_core.tokens import counter_for_model

REVIEW = "review"
SWEEP = "sweep"
STOP_POLL_S = 1.0  # how often a running work looks for a stop request
# The version of the specs this build writes and reads. A spec of another version is refused
# with both versions named (never half-read): a newer build's field could change what is asked.
SPEC_VERSION = 2  # 2: the settings may ask for the answer check (``verify``, ``verify_model``)
# A running work's lease: its runner touches the work row every LEASE_RENEW_S, from the moment
# it takes the work up until it lets it go (planning included); a work whose row has not moved
# for LEASE_S, or whose runner's process on this host has ended, may be taken up by another.
LEASE_S = 60.0
LEASE_RENEW_S = 10.0
# How long a runner handed a work that another, live runner still runs waits for it to let go
# (a worker finishing the call in hand after SIGTERM, while its job is handed out again).
HANDOVER_WAIT_S = 3 * LEASE_S
log = logging.getLogger(__name__)


def _spec_fields(kind: str, data: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse a spec this build cannot read in full: another version, or fields it does not know."""
    version = data.get("spec_version", 1)
    if not isinstance(version, int) or not 1 <= version <= SPEC_VERSION:
        raise ConfigError(
            f"this {kind} work was written with spec version {version}; this build reads versions 1 to"
            f" {SPEC_VERSION}. Run it with the build that wrote it, or submit it again here."
        )
    unknown = sorted(set(data) - set(known) - {"spec_version"})
    if unknown:
        raise ConfigError(
            f"this {kind} work's spec (version {version}) has fields this build (spec version {SPEC_VERSION})"
            f" does not know: {', '.join(unknown)}. Run it with the build that wrote it, or submit it again here."
        )


@dataclass(frozen=True, slots=True)
class ReviewWork:
    """A review grid as plain data: what any runner needs to run it (never an API key)."""

    files: tuple[CorpusFile, ...]
    columns: tuple[Column, ...]
    settings: RunSettings
    provider: str
    model: str
    price_model: str = ""
    base_url: str | None = None
    compare: RunSettings | None = None
    compare_rows: int = 5
    key: AnswerKey | None = None
    mode: Mode = "now"
    max_usd: float | None = None
    concurrency: int = 4

    def to_dict(self) -> dict[str, Any]:
        """As JSON (what the store keeps)."""
        return {
            "spec_version": SPEC_VERSION,
            "files": [f.to_dict() for f in self.files],
            "columns": [c.to_dict() for c in self.columns],
            "settings": self.settings.to_dict(),
            "provider": self.provider,
            "model": self.model,
            "price_model": self.price_model,
            "base_url": self.base_url,
            "compare": self.compare.to_dict() if self.compare is not None else None,
            "compare_rows": self.compare_rows,
            "key": self.key.to_dict() if self.key is not None else None,
            "mode": self.mode,
            "max_usd": self.max_usd,
            "concurrency": self.concurrency,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReviewWork:
        """Read ``to_dict``'s output (``ConfigError`` for a spec of another version)."""
        _spec_fields(REVIEW, data, (f.name for f in fields(cls)))
        mode = str(data.get("mode") or "now")
        return cls(
            files=tuple(CorpusFile.from_dict(f) for f in data["files"]),
            columns=tuple(Column.from_dict(c) for c in data["columns"]),
            settings=RunSettings.from_dict(dict(data["settings"])),
            provider=str(data["provider"]),
            model=str(data["model"]),
            price_model=str(data.get("price_model") or ""),
            base_url=data.get("base_url"),
            compare=RunSettings.from_dict(dict(data["compare"])) if data.get("compare") else None,
            compare_rows=int(data.get("compare_rows") or 5),
            key=AnswerKey.from_dict(data["key"]) if data.get("key") else None,
            mode="batch" if mode == "batch" else "now",
            max_usd=float(data["max_usd"]) if data.get("max_usd") is not None else None,
            concurrency=max(1, int(data.get("concurrency") or 4)),
        )

    def calls_key(self) -> str:
        """What its calls are (documents, questions, methods, model and server), not how they
        are paid or bounded: open work with this key would ask, and pay for, the same calls."""
        return _calls_key(REVIEW, self.to_dict())

    @property
    def title(self) -> str:
        """How lists name it."""
        readable = sum(1 for f in self.files if f.ok)
        return f"Review · {readable} documents × {len(self.columns)} questions"

    def engine(self) -> Any:
        """The engine it runs on (no key: the runner's configured key, or the one handed in)."""
        from rr_core.workbench import Engine

        return Engine(self.provider, self.model, self.price_model, base_url=self.base_url)

    def plan(self, store: Store) -> ReviewPlan:
        """The grid, planned again from the document store (the same jobs, the same keys)."""
        from rr_core.workbench import plan_grid

        engine = self.engine()
        counter = counter_for_model(engine.counting_model())
        return plan_grid(
            list(self.files), list(self.columns), self.settings, counter, compare=self.compare,
            compare_rows=self.compare_rows, window=engine.window(), store=store, tokenizer=engine.counting_model(),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class SweepWork:
    """A Lab sweep as plain data: the preset, the trials' spec, the series, the engine (no key),
    and the document by content hash (a sample by name). What runs it plans it again, the same
    trials and jobs (planning is deterministic), and pays only for calls not in the store."""

    preset: str
    series: tuple[str, ...]  # method specs, as the CLI writes them ("rr", "rr:k=5000")
    provider: str
    model: str
    price_model: str = ""
    base_url: str | None = None
    task: str = ""
    lengths: tuple[int, ...] | None = None
    repeats: int | None = None
    seed: int = 0
    paraphrase: bool = False
    distracters: int = 0
    questions: tuple[tuple[str, tuple[str, ...], tuple[int, ...]], ...] = ()
    depths: tuple[float, ...] | None = None
    bounds: bool = True
    layout: str = ""
    document_sha256: str = ""  # the document in the document store ("" : a sample, or none)
    sample: str = ""  # a sample's name
    mode: Mode = "now"
    max_usd: float | None = None
    concurrency: int = 4

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        from dataclasses import asdict

        return {"spec_version": SPEC_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepWork:
        """Read ``to_dict``'s output (``ConfigError`` for a spec of another version)."""
        _spec_fields(SWEEP, data, (f.name for f in fields(cls)))
        values = {k: v for k, v in data.items() if k != "spec_version"}
        for name in ("series", "lengths", "depths"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        values["questions"] = tuple(
            (str(q), tuple(a), tuple(int(p) for p in g)) for q, a, g in values.get("questions", ())
        )
        return cls(**values)

    def calls_key(self) -> str:
        """What its calls are, as ``ReviewWork.calls_key``."""
        return _calls_key(SWEEP, self.to_dict())

    @property
    def title(self) -> str:
        """How lists name it."""
        return f"Lab sweep · {self.preset} · {', '.join(self.series)}"

    def planned(self, store: Store) -> tuple[Any, Any, Any]:
        """(the document, the sweep's plan, the engine), planned again here."""
        from rr_core.lab import trial_spec
        from rr_core.lab.presets import get_preset
        from rr_core.methods import parse_spec
        from rr_core.questions import Question
        from rr_core.settings import QuestionPlacement
        from rr_core.sources import sample_document
        from rr_core.workbench import Engine, plan_measurement

        engine = Engine(self.provider, self.model, self.price_model, base_url=self.base_url)
        counter = counter_for_model(engine.counting_model())
        preset = get_preset(self.preset)
        document = None
        if self.document_sha256:
            from rr_core.review.corpus import StoredDocuments

            document = StoredDocuments(store, counter).document(self.document_sha256)
        elif self.sample:
            document = sample_document(self.sample, counter)
        layout = QuestionPlacement(self.layout) if self.layout else preset.layout
        spec = trial_spec(
            preset, document, task=self.task or None, lengths=self.lengths, repeats=self.repeats, seed=self.seed,
            paraphrase=self.paraphrase, distracters=self.distracters,
            questions=tuple(Question(q, a, g) for q, a, g in self.questions),
        )  # fmt: skip
        base = engine.settings(question_placement=layout)
        series = [parse_spec(m, base) for m in self.series]
        _, plan = plan_measurement(
            spec, preset, document, series, counter, depths=self.depths, bounds=self.bounds, layout=layout,
            tokenizer=engine.counting_model(),
        )  # fmt: skip
        return document, plan, engine


# What changes how a work's calls are paid or bounded, not which calls it makes.
_NOT_CALLS = frozenset({"key", "mode", "max_usd", "concurrency", "price_model", "spec_version"})


def _calls_key(kind: str, spec: Mapping[str, Any]) -> str:
    kept = {name: value for name, value in spec.items() if name not in _NOT_CALLS}
    text = json.dumps([kind, kept], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def new_work_id() -> str:
    """A new work's id."""
    return uuid.uuid4().hex[:16]


def submit_sweep(
    store: Store, work: SweepWork, *, work_id: str | None = None, enqueue: Enqueue | None = None
) -> str:
    """Record a Lab sweep as queued work; its id (the same sweep already queued or running:
    that one's, so that it is not run, and paid, twice at once). ``enqueue``: the queue's job
    for new work, written in the same transaction (see ``WorkStore.submit_work``)."""
    _, plan, _ = work.planned(store)
    return store.submit_work(
        SWEEP, work.title, work.to_dict(), len(plan.jobs), calls_key=work.calls_key(), work_id=work_id,
        enqueue=enqueue,
    )  # fmt: skip


def submit_review(
    store: Store,
    work: ReviewWork,
    plan: ReviewPlan | None = None,
    *,
    work_id: str | None = None,
    enqueue: Enqueue | None = None,
) -> str:
    """Record a review as queued work; its id (the same grid already queued or running: that
    one's). ``plan``: the grid as shown (its cell count); ``enqueue``: as ``submit_sweep``."""
    plan = plan or work.plan(store)
    cells = len(plan.documents) * len(plan.columns) + len(plan.compare_documents) * len(plan.columns)
    return store.submit_work(
        REVIEW,
        work.title,
        work.to_dict(),
        cells,
        calls_key=work.calls_key(),
        work_id=work_id,
        enqueue=enqueue,
    )


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


def runner_gone(record: WorkRecord, *, now: datetime | None = None) -> str:
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


def review_cells(store: Store, work_id: str) -> list[Cell]:
    """The cells a review's work has recorded so far, in the order they arrived."""
    return [Cell.from_dict(r) for r in store.work_results(work_id)]


def grid_cells(store: Store, work_id: str, work: ReviewWork) -> list[Cell]:
    """The recorded cells as the grid shows them: where a comparison ran on a row, agreement
    between the two methods counts in each cell's confidence (recorded as each cell arrived,
    before its twin was answered; counted here, once, on reading)."""
    cells = review_cells(store, work_id)
    return agree_cells(cells) if work.compare is not None else cells


def runner_name() -> str:
    """Who runs work here: the host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def run_work(
    store: Store,
    work_id: str,
    *,
    client: LLMClient | None = None,
    worker: str = "",
    on_cell: Callable[[Cell], None] | None = None,
    leaving: Callable[[], bool] | None = None,
) -> WorkRecord | None:
    """Run queued (or interrupted) work to its end, recording cells as they arrive; returns the
    work as it ended (None when there is no such work). Cells already recorded are not asked
    again; calls already answered come from the call cache (nothing is paid twice).

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
    if record.kind not in (REVIEW, SWEEP):
        raise ConfigError(f"work {work_id} is a {record.kind!r}, which this build cannot run")
    store.update_work(work_id, state="running", worker=who, started=True, error="")
    log.info(
        "work %s started by %s: %s, %d of %d done", work_id, who, record.title, record.done, record.total
    )
    try:
        with _lease(store, work_id):
            ended = _run(store, work_id, record, client, on_cell, leaving)
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
def _lease(store: Store, work_id: str) -> Iterator[None]:
    """While the block runs: the work's row is touched every ``LEASE_RENEW_S`` (its runner is
    alive), planning included."""
    finished = threading.Event()

    def renew() -> None:
        while not finished.wait(LEASE_RENEW_S):
            try:
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
    record: WorkRecord,
    client: LLMClient | None,
    on_cell: Callable[[Cell], None] | None,
    leaving: Callable[[], bool] | None,
) -> WorkRecord | None:
    """``run_work``'s part once the work is marked running: it ends failed on any error."""
    try:
        stop = _StopWhenAsked(store, work_id, leaving)
        if record.kind == SWEEP:
            return _run_sweep(store, work_id, SweepWork.from_dict(record.spec), client, stop)
        result = _run_review(store, work_id, ReviewWork.from_dict(record.spec), client, on_cell, stop)
    except (RRError, OSError) as exc:
        store.update_work(work_id, state="failed", error=str(exc))
        return store.get_work(work_id)
    except Exception as exc:  # a defect: the work ends, saying what broke, instead of staying "running"
        log.exception("work %s failed", work_id)
        store.update_work(work_id, state="failed", error=f"{type(exc).__name__}: {exc}")
        return store.get_work(work_id)
    return result


def _run_review(
    store: Store,
    work_id: str,
    work: ReviewWork,
    client: LLMClient | None,
    on_cell: Callable[[Cell], None] | None,
    stop: _StopWhenAsked,
) -> WorkRecord | None:
    from rr_core.workbench import review

    plan = work.plan(store)
    kept = {c.key for c in review_cells(store, work_id) if c.ok}
    todo = [job for job in plan.jobs if not _all_kept(job.meta, kept)]
    done = len(kept)
    store.update_work(work_id, done=done)
    if client is None:
        engine = work.engine()
        client = engine.client(counter_for_model(engine.counting_model()))

    begun = store.get_work(work_id)
    total = begun.total if begun is not None else 0

    def keep(cell: Cell) -> None:
        nonlocal done
        if cell.not_asked:  # stopped before it was sent: left for a resumed run to ask
            return
        if cell.key in kept:  # recorded before this run (its document is asked again for its other
            return  # columns): the recorded answer stays, with its run and its citations
        store.add_results(work_id, [(cell.key, cell.to_dict())])
        done += 1
        kept.add(cell.key)
        store.update_work(work_id, done=done)
        if done % _progress_step(total) == 0:
            log.info("work %s: %d of %d cells", work_id, done, total)
        stop.check()  # a stop asked for while the cell was answered: nothing further is sent
        if on_cell is not None:
            on_cell(cell)

    result = review(
        plan, client, concurrency=work.concurrency, key=work.key, jobs=todo, max_usd=work.max_usd,
        mode=work.mode, store=store, on_cell=keep, guard=stop.guard, keep=False,
    ) if todo else None  # fmt: skip
    cells = grid_cells(store, work_id, work)
    failed = sum(1 for c in cells if not c.ok)
    summary = {
        "cells": len(cells),
        "failed_cells": failed,
        "paid_usd": round(result.paid_usd, 8) if result else 0.0,
        "possibly_billed": result.possibly_billed if result else "",
        "history_batch": result.batch if result else None,
        "save_error": result.save_error if result else None,
        "scores": scores_json(plan, cells),
    }
    record = store.get_work(work_id)
    total = record.total if record is not None else len(cells)
    stopped = bool(result and result.cancelled) and len(cells) < total
    if stopped and stop.left:  # the runner is going away: the next one takes the work up
        store.update_work(work_id, state="queued", done=len(cells))
        return store.get_work(work_id)
    state = "cancelled" if stopped else "done"
    error = _first_error(cells) if failed and failed == len(cells) else None
    store.update_work(work_id, state="failed" if error else state, result=summary, error=error)
    return store.get_work(work_id)


def _run_sweep(
    store: Store, work_id: str, work: SweepWork, client: LLMClient | None, stop: _StopWhenAsked
) -> WorkRecord | None:
    """Run the sweep through the store as call cache (a resumed sweep pays only for what is
    missing); progress in runs; the result is the sweep's JSON (any replica shows it)."""
    from rr_core.lab.report import sweep_json
    from rr_core.workbench import sweep

    _, plan, engine = work.planned(store)
    if client is None:
        client = engine.client(counter_for_model(engine.counting_model()))

    def progress(done: int, total: int, partial: Any) -> None:
        store.update_work(work_id, done=done, total=total)
        if done % _progress_step(total) == 0:
            log.info("work %s: %d of %d runs", work_id, done, total)
        stop.check()

    with stop.guard_open() as runners:
        result = sweep(
            plan, client, concurrency=work.concurrency, window=engine.window(), max_usd=work.max_usd, store=store,
            on_progress=progress, mode=work.mode, label=work.title, on_runner=runners,
        )  # fmt: skip
    summary = {
        **sweep_json(plan, result, context={"preset": work.preset, "mode": work.mode}),
        "is_llm": client.is_llm,
        "possibly_billed": result.possibly_billed,
    }
    if result.cancelled and stop.left:  # the runner is going away: the next one takes the work up
        store.update_work(work_id, state="queued")
        return store.get_work(work_id)
    state = "cancelled" if result.cancelled else "done"
    failed_all = bool(plan.jobs) and len(result.failures) >= len(plan.jobs)
    store.update_work(
        work_id, state="failed" if failed_all else state, result=summary,
        error=result.failures[0] if failed_all and result.failures else None,
    )  # fmt: skip
    return store.get_work(work_id)


def _progress_step(total: int) -> int:
    """Log progress about ten times a work (every cell of a small one)."""
    return max(1, total // 10)


def _all_kept(meta: Mapping[str, Any], kept: set[str]) -> bool:
    columns = meta.get("columns")
    if not isinstance(columns, list):
        return False
    return all(f"{meta.get('role')}:{meta.get('document')}:{c}" in kept for c in columns)


def _first_error(cells: list[Cell]) -> str:
    return next((c.error for c in cells if c.error), "every cell failed")


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
            self._runner.cancel()
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
