"""The batch sender: the dispatch chain's last link when a run is sent as provider batches.

Calls are collected while the runs plan and send; once every active run is waiting for
replies (nothing more can be added now) the collected calls go out as **one** provider batch
(OpenAI Batch, Anthropic Message Batches: half price). The batch's id and its items (call
keys) are written to the ledger at once, so a process that is stopped and started again finds
each call's batch by its key and **polls it instead of submitting the call again**. Replies
arrive when the batch ends; each is checked, kept in the call cache, and handed to the run
waiting for it. Items that expired or were canceled are submitted again, alone, in the next
batch; errored items fail their call with the provider's message.

Nothing here names a provider: the client's ``batch`` capability does the wire work.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from rr_core.dispatch import Delivered, Outgoing
from rr_core.errors import (
    LedgerError,
    LLMError,
    NotConnected,
    ProviderError,
    ProviderTimeout,
    RRError,
    RunCancelled,
)
from rr_core.llm.base import BatchAPI, BatchLine, BatchResult, BatchStatus, Completion
from rr_core.store.base import BatchRecord, CallCache
from rr_core.usage import Usage

# Items a provider takes in one batch (OpenAI 50,000; Anthropic 100,000): the smaller.
MAX_BATCH_ITEMS = 50_000
# An expired or canceled item is submitted again at most this many times.
RESUBMISSIONS = 2
# Status reads that may fail in a row before the runs waiting on a batch stop waiting.
MAX_POLL_FAILURES = 8
# How often the sender looks for calls waiting on a batch no watcher polls (a safety net: it
# polls that batch again, so no run waits on a batch nobody reads).
ORPHAN_CHECK_S = 5.0
# Our own id for a batch, recorded before it is sent (the provider's replaces it once known).
MARKER_PREFIX = "rr-"
NOT_FOUND = "-"


def possibly_accepted(error: RRError) -> bool:
    """Whether a batch submission that raised ``error`` may still have been created: no answer
    (a timeout, a connection lost) or a server error; a refusal (4xx) created nothing."""
    if isinstance(error, ProviderTimeout):
        return True
    if isinstance(error, NotConnected):
        return False  # no connection was made: nothing was sent
    if isinstance(error, ProviderError):
        return error.status is None or error.status >= 500
    return False


def _pass_on(done: Future[Delivered], mine: Future[Delivered]) -> None:
    error = done.exception()
    if error is not None:
        mine.set_exception(error)
    else:
        mine.set_result(done.result())


def _unix(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


# The longest a batch is waited for: the providers' 24-hour window, and an hour to spare.
MAX_BATCH_WAIT_S = 25 * 3600.0


# The batch state is the call cache's (``rr_core.store``): the sender records, polls and
# settles through it.
BatchLedger = CallCache


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """Where a batch stands, for progress views (the CLI, the Lab)."""

    batch_id: str
    label: str
    state: str
    total: int
    done: int
    failed: int
    waiting_s: float
    resumed: bool = False  # a batch submitted by an earlier process, polled again


def batch_line(progress: BatchProgress) -> str:
    """One line of progress, e.g. ``batch_abc… (Lab sweep): in progress, 40 of 120 done, waiting 3m 20s``."""
    minutes, seconds = divmod(int(progress.waiting_s), 60)
    waited = f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"
    counted = (
        f"{progress.done:,} of {progress.total:,} done"
        + (f", {progress.failed:,} failed" if progress.failed else "")
        if progress.done or progress.failed or progress.state != "in_progress"
        else f"{progress.total:,} calls (the provider may count them only at the end)"
    )
    resumed = " (submitted earlier, polled again)" if progress.resumed else ""
    state = progress.state.replace("_", " ")
    return f"batch {progress.batch_id} ({progress.label}){resumed}: {state}, {counted}, waiting {waited}"


@dataclass(slots=True)
class _Item:
    out: Outgoing | None  # None: a result for a call no run is waiting on yet
    future: Future[Delivered] = field(default_factory=Future)
    reply: Completion | None = None  # a reply that came before any run asked for it
    attempts: int = 0
    batch_id: str = ""  # the batch it is in


class BatchSender:
    """Collects calls into provider batches and delivers their replies (thread-safe).

    ``keep(out, completion)`` checks a reply against the call's shape and stores it in the
    call cache (True when kept);
    ``admit(out)`` reserves the call's budget before it joins a batch (it raises to refuse);
    ``bill(out, completion)`` settles that reservation when the reply (or its failure) comes.
    """

    def __init__(
        self,
        api: BatchAPI,
        ledger: BatchLedger,
        *,
        provider: str,
        label: str,
        keep: Callable[[Outgoing, Completion], bool],
        admit: Callable[[Outgoing], None] = lambda out: None,
        bill: Callable[[Outgoing, Completion | None], None] = lambda out, completion: None,
        possibly: Callable[[Outgoing], None] | None = None,
        cancel: threading.Event | None = None,
        on_progress: Callable[[BatchProgress], None] = lambda progress: None,
        on_unrecorded: Callable[[str], None] = lambda message: None,
        poll_s: float = 30.0,
        settle_s: float = 0.2,
        probe: Callable[[Outgoing], Future[Delivered]] | None = None,
        needs_probe: Callable[[], bool] = lambda: False,
    ) -> None:
        self.api, self.ledger, self.provider, self.label = api, ledger, provider, label
        self._keep, self._admit, self._bill = keep, admit, bill
        self._possibly = possibly or (lambda out: bill(out, None))
        self._cancel = cancel or threading.Event()
        self._on_progress, self._on_unrecorded = on_progress, on_unrecorded
        self.poll_s, self.settle_s = poll_s, settle_s
        self._lock = threading.Condition()
        self._queue: list[_Item] = []
        self._items: dict[str, _Item] = {}  # by call key: every call waiting on a batch
        self._polling: set[str] = set()
        self._collecting = 0  # batches whose results are being handed out now
        self._last_queued = 0.0
        self._last_check = time.monotonic()
        self.active = 0  # runs that may still send calls
        self.waiting = 0  # of those, runs waiting for replies
        self._waits: dict[int, tuple[Future[Any], ...]] = {}  # what each waiting run waits for
        self._blind_waits = 0  # runs waiting that did not say for what
        self.submitted: list[str] = []  # batch ids submitted by this sender
        self.resumed: list[str] = []  # batch ids of earlier processes, polled again
        self.errors: list[str] = []
        self.possibly_billed: list[str] = []  # keys of calls sent whose batch may be billed, unconfirmed
        self._reclaim_lock = threading.Lock()
        self._reclaimed: dict[str, str] = {}  # our batch id -> the provider's (or NOT_FOUND)
        # A capped run's first call goes alone, now (``probe``), while ``needs_probe()``: its bill
        # says how far the provider bills over the estimates before any batch is committed.
        self._probe, self._needs_probe = probe, needs_probe
        self._probing = False
        self._deferred: list[tuple[Outgoing, Future[Delivered]]] = []  # calls waiting for that bill
        self._closed = False
        self._stopped = threading.Event()  # set by close: watchers stop polling
        self._flusher = threading.Thread(target=self._flush_loop, name="rr-batch-flush", daemon=True)
        self._flusher.start()

    # -- the sender --
    def send(self, out: Outgoing) -> Future[Delivered]:
        """Join the next batch, or the batch already holding this call (never submitted twice);
        under a cap with no bill seen yet, the first call goes alone, now, and the others wait
        for its bill (what they hold of the budget is priced from it)."""
        if self._probe is not None:
            with self._lock:
                if self._probing:
                    deferred: Future[Delivered] = Future()
                    self._deferred.append((out, deferred))
                    return deferred
                probing = self._needs_probe()
                self._probing = probing
            if probing:
                if self.ledger.pending_batch(out.key) is None:
                    sent = self._probe(out)
                    sent.add_done_callback(lambda _: self._probed())
                    return sent
                with self._lock:
                    self._probing = False  # already in a batch: it is polled, not a probe
        return self._join(out)

    def _probed(self) -> None:
        """The probe's bill (or its failure) came: the calls that waited go on (admitted at the
        price the bill implies, or refused; another probe if it brought no bill)."""
        with self._lock:
            self._probing = False
            deferred, self._deferred = self._deferred, []
        for out, future in deferred:
            try:
                sent = self.send(out)
            except Exception as exc:  # noqa: BLE001 - refused (the budget): the call's error
                future.set_exception(exc)
                continue
            sent.add_done_callback(functools.partial(_pass_on, mine=future))

    def _join(self, out: Outgoing) -> Future[Delivered]:
        self._admit(out)  # refused: raises, and nothing of the call is kept here
        record: BatchRecord | None = None
        looked = False
        while True:
            with self._lock:
                known = self._items.get(out.key)
                if known is not None and known.out is None:
                    # Its batch is polled, or its reply already came (the watcher may have
                    # collected it while this call's batch was looked up in the store).
                    known.out = out
                    reply, failed = known.reply, known.future.done()
                    break
                if looked:
                    # Looked for and joined under one lock: nothing the watcher collected since
                    # the look-up is overwritten.
                    item = _Item(out, batch_id=record.batch_id if record is not None else "")
                    self._items[out.key] = item
                    if record is None:
                        self._queue.append(item)
                        self._last_queued = time.monotonic()
                        self._lock.notify_all()
                        return item.future
                    # Polled (again, if its watcher has just ended: an ended batch's results are
                    # read once more, and this call's is delivered).
                    break
            record = self.ledger.pending_batch(out.key)
            if record is not None and record.state == "submitting":
                marker = record.batch_id
                record = self._reclaim(record)
                if record is None:  # the provider never created it: this call goes again
                    self.ledger.settle_items(marker, {out.key: "errored"})
            looked = True
        if known is None or known.out is not out:
            assert record is not None
            self._poll(record.batch_id, resumed=record.batch_id not in self.submitted)
            return item.future
        if reply is not None:
            self._arrived(known, reply)
        elif failed:  # its batch already failed it (billed all the same when its reply said so)
            error = known.future.exception()
            usage = getattr(error, "usage", None)
            billed = (
                Completion(text="", usage=usage, model=out.request.model)
                if isinstance(usage, Usage)
                else None
            )
            self._bill(out, billed)
        return known.future

    def _arrived(self, item: _Item, completion: Completion) -> None:
        """A reply for a call a run waits on: check and keep it, settle its item, deliver."""
        assert item.out is not None
        kept = self._keep(item.out, completion)
        try:
            self.ledger.settle_items(item.batch_id, {item.out.key: "done" if kept else "errored"})
        except (RRError, OSError) as exc:
            self._say(f"Batch {item.batch_id}: an item could not be recorded ({exc}).")
        self._deliver(item, completion)

    # -- when to submit --
    def run_started(self) -> None:
        """A run may send calls from now on."""
        with self._lock:
            self.active += 1

    def run_finished(self) -> None:
        """A run sends nothing more."""
        with self._lock:
            self.active -= 1
            self._lock.notify_all()

    def wait_started(self, futures: Collection[Future[Any]] | None = None) -> None:
        """A run waits for replies (it sends nothing until they come): for ``futures``, when
        given (it counts as waiting only while one of them is pending)."""
        with self._lock:
            self.waiting += 1
            if futures is None:
                self._blind_waits += 1
            else:
                self._waits[id(futures)] = tuple(futures)
            self._lock.notify_all()

    def wait_finished(self, futures: Collection[Future[Any]] | None = None) -> None:
        """A run has its replies and goes on."""
        with self._lock:
            self.waiting -= 1
            if futures is None:
                self._blind_waits -= 1
            else:
                self._waits.pop(id(futures), None)

    def _runs_waiting(self) -> int:
        """Runs blocked on a reply still to come (under the lock). A run whose replies have all
        come but has not woken yet is not waiting: it is about to send its next phase, which
        belongs in the same batch as the other runs' (under load it may wake late)."""
        pending = sum(any(not f.done() for f in futures) for futures in self._waits.values())
        return self._blind_waits + pending

    def _flush_loop(self) -> None:
        with self._lock:
            while not self._closed:
                quiet = time.monotonic() - self._last_queued
                # Not while an ended batch's replies are being handed out: the runs still
                # counted as waiting on it are about to send their next phase, which belongs in
                # the same batch as the calls queued so far (on a busy machine the hand-out
                # takes longer than the quiet, and a phase would be split in two batches).
                ready = (
                    self._queue
                    and not self._collecting
                    and quiet >= self.settle_s
                    and self._runs_waiting() >= self.active
                )
                if ready or (self._queue and self._cancel.is_set()):
                    taken, self._queue = self._queue, []
                    self._lock.release()
                    try:
                        self._submit(taken)
                    except Exception as exc:  # noqa: BLE001 - a bug: its calls fail with it, none waits forever
                        why = f"Sending a batch failed ({type(exc).__name__}: {exc}); its calls were not answered."
                        self._say(why)
                        for item in taken:
                            self._fail(item, RunCancelled(why))
                    finally:
                        self._lock.acquire()
                    continue
                if time.monotonic() - self._last_check >= ORPHAN_CHECK_S:
                    self._last_check = time.monotonic()
                    orphans = {
                        item.batch_id
                        for item in self._items.values()
                        if item.batch_id
                        and item.out is not None
                        and not item.future.done()
                        and item.batch_id not in self._polling
                    }
                    if orphans:
                        self._lock.release()
                        try:
                            for batch_id in orphans:  # waiting on a batch nobody polls: poll it
                                self._poll(batch_id, resumed=batch_id not in self.submitted)
                        finally:
                            self._lock.acquire()
                        continue
                self._lock.wait(self.settle_s if self._queue else 1.0)

    def close(self) -> None:
        """Stop collecting and polling; runs still waiting stop waiting and release what they
        held of the budget (the batches go on at the provider and stay recorded: a later run
        polls them instead of paying again)."""
        self._stopped.set()
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            left = [item for item in self._items.values() if not item.future.done()]
            deferred, self._deferred = self._deferred, []
        for item in left:
            self._fail(item, RunCancelled("The run was stopped while its batch was in flight."))
        for _, future in deferred:
            if not future.done():
                future.set_exception(RunCancelled("The run was stopped before this call was sent."))

    def _sleep(self, seconds: float) -> bool:
        """Wait between polls; True as soon as the sender is closed or the run cancelled."""
        end = time.monotonic() + seconds
        while not (self._stopped.is_set() or self._cancel.is_set()):
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._stopped.wait(min(left, 0.25))
        return True

    # -- submitting --
    def _submit(self, items: list[_Item]) -> None:
        if self._cancel.is_set():
            for item in items:
                self._fail(item, RunCancelled("The run was stopped before this call was sent."))
            return
        for start in range(0, len(items), MAX_BATCH_ITEMS):
            part = items[start : start + MAX_BATCH_ITEMS]
            lines = [BatchLine(item.out.key, item.out.request) for item in part if item.out is not None]
            keys = [line.custom_id for line in lines]
            # Recorded before it is sent, under our own id: a process killed while the provider
            # accepts it, or a reply lost on the way back, leaves its calls findable (``_reclaim``).
            marker = f"{MARKER_PREFIX}{uuid.uuid4().hex[:24]}"
            try:
                self.ledger.add_batch(
                    BatchRecord(
                        batch_id=marker,
                        provider=self.provider,
                        label=self.label,
                        state="submitting",
                        total=len(keys),
                    ),
                    keys,
                )
            except (RRError, OSError) as exc:
                message = f"A batch of {len(keys):,} calls could not be recorded before sending ({exc}); it was not sent."
                self._say(message)
                for item in part:
                    self._fail(item, RunCancelled(message))
                continue
            try:
                batch_id = self.api.submit(lines, label=self.label, marker=marker)
            except RRError as exc:
                self._refused_or_lost(marker, keys, part, exc)
                continue
            try:
                self.ledger.confirm_batch(marker, batch_id)
            except (RRError, OSError) as exc:
                # Submitted; recorded only under our own id: a restart finds it at the provider.
                message = (
                    f"Batch {batch_id} was submitted but its id could not be recorded in the run store ({exc}); "
                    "nothing more is sent (a run started again looks for it at the provider before sending)."
                )
                self._say(message)
                self._on_unrecorded(message)
                for item in part:
                    self._fail(item, RunCancelled(message), possibly_billed=True)
                continue
            with self._lock:
                self.submitted.append(batch_id)
                for item in part:
                    item.batch_id = batch_id
            self._poll(batch_id, resumed=False)

    def _refused_or_lost(self, marker: str, keys: list[str], part: list[_Item], exc: RRError) -> None:
        """A submission that raised: refused by the provider (nothing was created: its calls are
        released), or its reply lost (the provider may have the batch: it stays recorded as
        "submitting", its calls possibly billed, and nothing more is sent)."""
        if not possibly_accepted(exc):
            try:
                self.ledger.settle_items(marker, dict.fromkeys(keys, "errored"))
                self.ledger.update_batch(marker, state="failed")
            except (RRError, OSError) as error:
                self._say(f"A refused batch could not be released in the run store ({error}).")
            for item in part:
                self._fail(item, exc)
            return
        message = (
            f"The provider's answer to a batch of {len(keys):,} calls was lost ({exc}): it may have accepted "
            f"it, so those calls are possibly billed. It stays recorded as {marker}; running the same work "
            "again looks for it at the provider before sending anything again. Nothing more is sent."
        )
        self._say(message)
        self._on_unrecorded(message)
        for item in part:
            self._fail(item, RunCancelled(message), possibly_billed=True)

    def _reclaim(self, record: BatchRecord) -> BatchRecord | None:
        """A call recorded in a batch that was being submitted when its process stopped (or
        whose acceptance was lost): the provider's batch, when it has it (recorded under its id
        from now on); None when it has none (the call is released, to be sent again)."""
        marker = record.batch_id
        with self._reclaim_lock:
            known = self._reclaimed.get(marker, "")
            if not known:
                since = _unix(record.created_at)
                found = self.api.find(marker, total=record.total, since=since)
                known = found or NOT_FOUND
                if found is not None:
                    with contextlib.suppress(LedgerError):  # confirmed by another process meanwhile
                        self.ledger.confirm_batch(marker, found)
                # Not found: it stays "submitting", and each of its calls is released as a run
                # asks for it (sent again).
                self._reclaimed[marker] = known
        if known == NOT_FOUND:
            return None
        return replace(record, batch_id=known, state="submitted")

    # -- polling --
    def _poll(self, batch_id: str, *, resumed: bool) -> None:
        with self._lock:
            if batch_id in self._polling:
                return
            self._polling.add(batch_id)
            if resumed:
                self.resumed.append(batch_id)
        threading.Thread(
            target=self._watch, args=(batch_id, resumed), name=f"rr-batch-{batch_id[:12]}", daemon=True
        ).start()

    def _watch(self, batch_id: str, resumed: bool) -> None:
        """Poll a batch to its end and deliver its results; a watcher that fails (a bug, an
        unexpected error) fails the calls waiting on the batch with its reason."""
        try:
            self._watch_batch(batch_id, resumed)
        except Exception as exc:  # noqa: BLE001 - any failure: its waiting calls fail with it
            why = (
                f"Watching batch {batch_id} failed ({type(exc).__name__}: {exc}); it stays recorded, and "
                "running the same work again polls it again."
            )
            self._say(why)
            self._abandon(batch_id, why)
            return
        with self._lock:
            self._polling.discard(batch_id)
            # Calls that joined the batch after its results were read, that the results did not
            # name: treated as missing from them (submitted again, once, alone).
            late = any(
                item.batch_id == batch_id
                and item.out is not None
                and item.reply is None
                and not item.future.done()
                for item in self._items.values()
            )
        if late:
            self._collect(batch_id, iter(()))

    def _watch_batch(self, batch_id: str, resumed: bool) -> None:
        started = time.monotonic()
        delay = min(self.poll_s, 1.0)
        failures = 0
        stopped = "The run was stopped while its batch was in flight; run it again to collect the batch."
        while True:
            try:
                status = self.api.status(batch_id)
                failures = 0
            except LLMError as exc:
                failures += 1
                self._say(f"Batch {batch_id}: its state could not be read ({exc}).")
                if failures >= MAX_POLL_FAILURES:
                    # Still recorded as open: a later run polls it again (nothing is paid twice).
                    return self._abandon(
                        batch_id,
                        f"Batch {batch_id} could not be read {failures} times in a row ({exc}); it stays "
                        "recorded, and running the same work again polls it again.",
                    )
                if self._sleep(delay):
                    return self._abandon(batch_id, stopped)
                delay = min(delay * 2, self.poll_s)
                continue
            self._progress(status, started, resumed)
            if status.finished:
                break
            if time.monotonic() - started > MAX_BATCH_WAIT_S:
                return self._abandon(
                    batch_id,
                    f"Batch {batch_id} was still open after {MAX_BATCH_WAIT_S / 3600:.0f} hours; it stays "
                    "recorded, and running the same work again polls it again.",
                )
            if self._sleep(delay):
                return self._abandon(batch_id, stopped)
            delay = min(delay * 2, self.poll_s)
        try:
            self._collect(batch_id, self.api.results(batch_id))
        except RRError as exc:
            self._say(f"Batch {batch_id}: results could not be read ({exc}).")
            self._abandon(batch_id, f"The results of batch {batch_id} could not be read: {exc}")

    def _say(self, message: str) -> None:
        """Keep a problem with a batch, for the run's report."""
        with self._lock:
            if message not in self.errors:
                self.errors.append(message)

    def _progress(self, status: BatchStatus, started: float, resumed: bool) -> None:
        try:
            self.ledger.update_batch(
                status.batch_id, state=status.state, done=status.done, failed=status.failed
            )
        except (RRError, OSError) as exc:
            self._say(f"Batch {status.batch_id}: its state could not be recorded ({exc}).")
        self._on_progress(
            BatchProgress(
                status.batch_id,
                self.label,
                status.state,
                status.total,
                status.done,
                status.failed,
                round(time.monotonic() - started, 1),
                resumed,
            )
        )

    def _collect(self, batch_id: str, results: Iterator[BatchResult]) -> None:
        with self._lock:
            self._collecting += 1
        try:
            self._hand_out(batch_id, results)
        finally:
            with self._lock:
                self._collecting -= 1
                self._last_queued = time.monotonic()  # the runs just answered get their quiet to send
                self._lock.notify_all()

    def _hand_out(self, batch_id: str, results: Iterator[BatchResult]) -> None:
        outcomes: dict[str, str] = {}
        again: list[_Item] = []
        failed: list[tuple[_Item, ProviderError]] = []  # failed once their outcomes are recorded
        for result in self._every_item(batch_id, results):
            with self._lock:
                item = self._items.get(result.custom_id)
                if item is None:  # no run waits for it yet: hold the reply until one asks
                    item = self._items[result.custom_id] = _Item(None, batch_id=batch_id)
                elif item.future.done() or item.reply is not None or item.batch_id != batch_id:
                    # Answered already, or its reply held for (or being handed to) its run (a
                    # batch read twice), or waiting in another batch.
                    continue
                succeeded = result.kind == "succeeded" and result.completion is not None
                held = succeeded and item.out is None
                if held:
                    item.reply = result.completion  # settled when a run takes it (``send``)
            if succeeded:
                if not held:
                    assert result.completion is not None
                    self._arrived(item, result.completion)
            elif (
                result.kind in ("expired", "canceled")
                and item.out is not None
                and item.attempts < RESUBMISSIONS
            ):
                outcomes[result.custom_id] = result.kind
                with self._lock:
                    item.attempts += 1
                    item.batch_id = ""  # in no batch until submitted again
                again.append(item)
            else:
                outcomes[result.custom_id] = result.kind if result.kind != "succeeded" else "errored"
                message = result.error or f"The provider's batch returned this call as {result.kind}."
                failed.append((item, ProviderError(message, provider=self.provider, usage=result.usage)))
        try:
            if outcomes:
                try:
                    self.ledger.settle_items(batch_id, outcomes)
                except (RRError, OSError) as exc:
                    self._say(f"Batch {batch_id}: its items could not be recorded ({exc}).")
        finally:
            for item, error in failed:
                self._fail(item, error)
        if again:
            with self._lock:
                self._queue.extend(again)
                self._last_queued = time.monotonic()
                self._lock.notify_all()

    def _every_item(self, batch_id: str, results: Iterator[BatchResult]) -> Iterator[BatchResult]:
        """The batch's results, then an "expired" one for each call waiting on it that the
        provider named nowhere (an adapter that cannot list what was sent returns only the
        lines it finds): without it that call's run would wait forever."""
        seen: set[str] = set()
        for result in results:
            seen.add(result.custom_id)
            yield result
        with self._lock:
            missing = [
                key
                for key, item in self._items.items()
                if item.batch_id == batch_id
                and item.out is not None
                and item.reply is None  # a held reply is being handed to its run
                and not item.future.done()
                and key not in seen
            ]
        for key in missing:
            yield BatchResult(
                custom_id=key, kind="expired", error="The provider's batch returned no result for this call."
            )

    # A reply's bill is recorded before the run waiting on it is handed the reply: the run (and,
    # after its last reply, the process) never goes on while what a call cost is still being
    # written by this daemon thread.
    def _deliver(self, item: _Item, completion: Completion) -> None:
        try:
            if item.out is not None:
                self._bill(item.out, completion)
        finally:
            if not item.future.done():
                item.future.set_result(Delivered(completion, "batch", batch=True))

    def _fail(self, item: _Item, error: BaseException, *, possibly_billed: bool = False) -> None:
        try:
            if item.out is not None:
                usage = getattr(error, "usage", None)
                if possibly_billed:
                    with self._lock:
                        self.possibly_billed.append(item.out.key)
                    self._possibly(item.out)
                elif isinstance(usage, Usage):  # answered with nothing usable, and billed all the same
                    self._bill(item.out, Completion(text="", usage=usage, model=item.out.request.model))
                else:
                    self._bill(item.out, None)
        finally:
            if not item.future.done():
                item.future.set_exception(error)

    def _abandon(self, batch_id: str, why: str) -> None:
        """Stop waiting for a batch (it goes on at the provider; its items stay recorded, so
        a later run polls it instead of paying again)."""
        with self._lock:
            self._polling.discard(batch_id)
            waiting = [i for i in self._items.values() if i.batch_id == batch_id and not i.future.done()]
        for item in waiting:
            self._fail(item, RunCancelled(why))
