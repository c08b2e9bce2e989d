"""Running plans: the only place that calls a client. One ``RunTrace`` per plan.

One ``Executor`` per caller (an app session, a CLI command, a Lab sweep) owns one bounded
pool for every call in flight, a cancel switch and progress events. It runs the plans it is
given (the ones that were shown), phase by phase: the steps of a phase run together, an
estimated phase is resolved from the results before it, and the plan's ``conclude`` turns
the results into outcomes. It never asks which method made a plan.

With a call cache (the run store), every call is looked up by its key first and stored as
soon as it returns and parses: an interrupted or repeated run pays only for what is missing. A
call's key holds the client's ``identity()`` (provider, server, model and every setting that
changes its replies), so a stored reply answers only for the reader that gave it. When a reply
cannot be stored, the executor sends nothing more (``stopped``) rather than pay for replies it
cannot keep.

With a ``Budget``, each call reserves its worst case (its prompt and its whole output
allowance, scaled by how far bills have run over) before it is sent and settles at the cost of
the usage the provider reports; a call that fits only once calls in flight settle waits for
them, and one whose worst case would pass the cap even then is not sent, nor is any after it
(``stopped`` says why). Calls sent now are recorded in the store before they go and cleared
once answered (the sent-but-unanswered ledger); what an interrupted process left there is
reported, and held in the budget, by the next run of the same calls.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import queue
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from rr_core import senders
from rr_core.batching import BatchProgress, BatchSender
from rr_core.confidence import assess
from rr_core.costs import Mode, estimate_cost, price_data_version, price_usage
from rr_core.dispatch import Delivered, Dispatcher, NowSender, Outgoing
from rr_core.documents import Document
from rr_core.errors import (
    BudgetReached,
    ConfigError,
    ContextTooLongError,
    LLMError,
    NotConnected,
    ProviderError,
    ProviderTimeout,
    ResponseParseError,
    RRError,
    RunCancelled,
    SaveFailed,
)
from rr_core.jobs import DocumentRef, Job, Resolver, plan_job
from rr_core.llm.base import CacheHint, Completion, LLMClient, LLMRequest, Usage, calls_at_once
from rr_core.llm.errors_map import redact
from rr_core.plans import (
    Call,
    LocalStep,
    Phase,
    PhaseResults,
    Plan,
    StepResult,
    call_pricing,
    shared_prefixes,
)
from rr_core.quotes import check_quote
from rr_core.retrieval import page_margin
from rr_core.settings import RunSettings
from rr_core.store.base import CachedCall as CachedCall
from rr_core.store.base import CallCache as CallCache
from rr_core.store.base import SentCall
from rr_core.support import UNCHECKED, offline_support
from rr_core.tokens import TokenCounter, counter_for_model
from rr_core.traces import TRACE_SCHEMA_VERSION as TRACE_SCHEMA_VERSION
from rr_core.traces import CallTrace as CallTrace
from rr_core.traces import RunTrace as RunTrace
from rr_core.traces import StepTrace as StepTrace

DEFAULT_CONCURRENCY = 8
# The longest reply kept: enough for any JSON we asked for (max_output_tokens is capped at
# 8,192); a longer one is a failed call, kept nowhere (trace, answer, history, call cache).
MAX_STORED_RESPONSE_CHARS = 64_000
# A server that reports far fewer prompt tokens than were sent may have cut the prompt.
TRUNCATION_RATIO = 0.6
# How long a provider keeps a cached prompt prefix, by the hint's lifetime.
CACHE_TTL_S = {"5m": 300.0, "1h": 3_600.0}


@dataclass(frozen=True, slots=True)
class CallEvent:
    """Progress of one call, for progress displays."""

    run: int  # index of the plan in the batch
    method: str
    label: str
    stage: str
    chunk: int | None
    pages: int
    status: str  # "started" | "done" | "failed" | "cached" | "skipped"
    message: str = ""


# ---- Keys -----------------------------------------------------------------------------


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def call_key(client: LLMClient, model: str, call: Call, prompt: str) -> str:
    """The deterministic key of one call: who answers as the client declares itself (its
    ``identity()``), the model asked, the reply shape and the exact prompt."""
    prompt_hash = hashlib.sha256(prompt.encode()).hexdigest()
    return _digest(
        [
            "call",
            dict(client.identity()),
            model,
            call.schema.WIRE_NAME,
            call.max_output_tokens,
            prompt_hash,
        ]
    )


def run_key(plan: Plan, provider: str, model: str) -> str:
    """The deterministic key of a run: document, method, settings, question(s), model."""
    settings = plan.settings.to_dict()
    settings.pop("price_model", None)  # pricing changes no call
    return _digest(
        [
            "run",
            TRACE_SCHEMA_VERSION,
            plan.document_sha256,
            plan.method,
            settings,
            list(plan.questions),
            provider,
            model,
        ]
    )


# ---- The budget -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorstCase:
    """The most one call can be billed if the provider bills what it reads and writes: its
    prompt (with a margin) and every output token it may write, and the price of any count
    of them (``price(prompt_tokens, output_tokens)`` in US dollars)."""

    prompt_tokens: int
    output_tokens: int
    price: Callable[[float, float], float] = field(repr=False)

    @property
    def usd(self) -> float:
        """The worst case at the tokens planned."""
        return self.price(self.prompt_tokens, self.output_tokens)


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one call holds of the budget while it is in flight."""

    estimate_usd: float  # the call's own estimate
    held_usd: float  # what it holds: the estimate scaled by what bills have run to so far
    worst: WorstCase | None = None  # its worst case in tokens, when known
    hold: str = ""  # its hold in the store, against a cap shared with other runners ("" : none)


# Output tokens a reply is counted at (about four characters a token), passed to the budget
# with the billed usage.
CHARS_PER_TOKEN = 4


class Budget:
    """A cap on what the calls of a run, batch or sweep may cost, kept while they run.

    A call reserves its cost before it is sent and settles at the cost of the usage the
    provider reports. A reservation that would take what is settled plus what is held (plus
    what was possibly billed) above the cap is refused: the call is not sent. A call that knows
    its worst case (``WorstCase``: its prompt and its whole output allowance) holds it, with the
    tokens scaled by how far bills have run over them so far: prompt tokens billed over prompt
    tokens sent, and output tokens billed over the call's whole allowance. Every call also
    holds at least its estimate times the largest dollar ratio seen, and at least the largest
    bill seen once bills ran over (estimates that ran low once are not trusted to scale). Until a call has come back with a bill, calls go one at a time
    (a call that failed unbilled tells nothing of the bills), so how far bills run over is
    known before several calls are in flight. Thread-safe.
    """

    def __init__(self, cap_usd: float, spent_usd: float = 0.0) -> None:
        self.cap_usd = cap_usd
        # ``spent_usd``: what earlier runs of the same work paid (a work run again after a stop,
        # or taken up by another runner): counted as settled, so the cap holds for the work.
        self.settled_usd = spent_usd
        self.earlier_usd = spent_usd
        self.held_usd = 0.0
        # Calls sent whose bill never came (a timeout, a lost connection, a batch whose
        # acceptance was lost, calls left in flight by an interrupted process): counted at
        # what they held, as possibly billed.
        self.possibly_usd = 0.0
        self._scale = 1.0
        self._prompt_scale = 1.0
        self._output_scale = 1.0
        self._largest_bill = 0.0
        self._in_flight = 0
        self._billed_calls = 0
        self._changed = threading.Condition()

    def reserve(
        self,
        estimate_usd: float,
        cancel: threading.Event | None = None,
        *,
        one_at_first: bool = True,
        worst: WorstCase | None = None,
        wait_for_room: bool = True,
    ) -> Reservation | None:
        """Hold a call's cost; None when that would pass the cap (or ``cancel`` is set while the
        call waits). ``worst``: the call's worst case, held scaled by the bills so far. A call
        that fits only once calls in flight have settled waits for them. ``one_at_first`` False:
        wait for nothing, neither a first bill nor room (a batch's calls are all committed at
        once, before any of them can settle; they hold their worst case). ``wait_for_room``
        False: refuse instead of waiting for calls in flight to settle (calls sent beside
        batches, whose holds settle only when a batch ends)."""
        with self._changed:
            while True:
                if one_at_first and self._billed_calls == 0 and self._in_flight > 0:
                    pass  # the first bill is not known yet: wait for it
                else:
                    held = self.hold_for(estimate_usd, worst)
                    spent = self.settled_usd + self.possibly_usd
                    if spent + self.held_usd + held <= self.cap_usd + 1e-9:
                        self.held_usd += held
                        self._in_flight += 1
                        return Reservation(estimate_usd, held, worst)
                    if (
                        not (one_at_first and wait_for_room)
                        or self._in_flight == 0
                        or spent + held > self.cap_usd + 1e-9
                    ):
                        return None  # it would pass the cap even once every call in flight is settled
                    # It fits once calls in flight settle (below their worst case): wait for them.
                if cancel is not None and cancel.is_set():
                    return None
                self._changed.wait(0.2)

    def hold_for(self, estimate_usd: float, worst: WorstCase | None = None) -> float:
        """What a call estimated at ``estimate_usd`` (with worst case ``worst``) holds in flight."""
        held = estimate_usd * self._scale
        if self._scale > 1.0:
            held = max(held, self._largest_bill)
        if worst is not None:
            scaled = worst.price(
                worst.prompt_tokens * self._prompt_scale, worst.output_tokens * self._output_scale
            )
            held = max(held, scaled)
        return held

    def add_possibly(self, usd: float) -> None:
        """Count calls sent by an earlier process whose replies never came (a ``kill -9`` while
        they were in flight) as possibly billed."""
        with self._changed:
            self.possibly_usd += usd
            self._changed.notify_all()

    @property
    def billed_calls(self) -> int:
        """Calls that came back with a bill."""
        return self._billed_calls

    @property
    def overrun(self) -> float:
        """The most a call was billed over its estimate (1: never over)."""
        return max(self._scale, self._prompt_scale, self._output_scale)

    def settle(
        self,
        reservation: Reservation,
        paid_usd: float | None,
        *,
        possibly: bool = False,
        billed: tuple[int, int, int] | None = None,
    ) -> None:
        """Release a reservation and count what the call cost (None: it failed and brought no
        bill; until a bill has come back, calls still go one at a time). ``possibly``: it was
        sent and its bill never came; what it held stays counted, as possibly billed.
        ``billed``: the prompt and output tokens billed and the output tokens the reply holds
        (counted here), which scale what later worst cases hold."""
        with self._changed:
            self.held_usd = max(0.0, self.held_usd - reservation.held_usd)
            self._in_flight -= 1
            if possibly and paid_usd is None:
                self.possibly_usd += reservation.held_usd
            if paid_usd is not None:
                self.settled_usd += paid_usd
                self._billed_calls += 1
                self._largest_bill = max(self._largest_bill, paid_usd)
                if reservation.estimate_usd > 0 and paid_usd > reservation.estimate_usd * self._scale:
                    self._scale = paid_usd / reservation.estimate_usd
                worst = reservation.worst
                if billed is not None and worst is not None:
                    prompt, output, _ = billed
                    if worst.prompt_tokens > 0:
                        self._prompt_scale = max(self._prompt_scale, prompt / worst.prompt_tokens)
                    # Output billed past the call's whole allowance: a provider billing more
                    # than it may write. (Billed output over what the reply holds says nothing:
                    # a thinking model's thoughts are billed as output, within the allowance.)
                    if worst.output_tokens > 0 and output > worst.output_tokens:
                        self._output_scale = max(self._output_scale, output / worst.output_tokens)
            self._changed.notify_all()


def worst_case(call: Call, pricing: tuple[str, str | None], mode: Mode = "now") -> WorstCase:
    """The most a call can be billed by a provider that bills what it reads and writes: its
    planned prompt with a margin and its whole output allowance, at the price it is sent at."""

    def price(prompt_tokens: float, output_tokens: float) -> float:
        return estimate_cost(
            math.ceil(prompt_tokens), math.ceil(output_tokens), *pricing, mode=mode
        ).total_usd

    return WorstCase(int(call.prompt_tokens * BATCH_PROMPT_MARGIN), call.max_output_tokens, price)


def possibly_billed_note(usd: float, calls: int, earlier_usd: float = 0.0, earlier_calls: int = 0) -> str:
    """ "up to $X possibly billed for N calls …": calls sent whose bills never came (timed out,
    lost) and calls an earlier, interrupted process sent and never saw answered; "" for none."""
    parts = []
    if calls:
        parts.append(
            f"{calls:,} call{'s' if calls != 1 else ''} sent with no answer back (timed out or lost)"
        )
    if earlier_calls:
        parts.append(
            f"{earlier_calls:,} call{'s' if earlier_calls != 1 else ''} sent before the interruption"
            " of an earlier run and never answered"
        )
    if not parts:
        return ""
    return f"up to ${usd + earlier_usd:.4f} possibly billed for " + " and ".join(parts)


# ---- The executor ------------------------------------------------------------------------


class _Failed(Exception):
    """Carries a failed call's record along with its error."""

    def __init__(self, record: CallTrace, error: RRError) -> None:
        super().__init__(str(error))
        self.record, self.error = record, error


log = logging.getLogger(__name__)

# What a runner yields: a call's progress, a batch's progress, a finished run.
RunnerEvent = CallEvent | BatchProgress | RunTrace
# Runs waiting together in batch mode (each a sleeping thread).
BATCH_ACTIVE_RUNS = 2_000
# What a batch call's prompt may run over its planned count, for the budget's worst case.
BATCH_PROMPT_MARGIN = 1.1


class Runner(Protocol):
    """Anything that runs jobs: takes plain-data jobs, yields progress events and, as each
    run finishes, its trace (in any order; ``RunTrace.position`` is the job's index). The
    in-process ``Executor`` is one; a worker pool would be another."""

    def stream_jobs(self, jobs: Sequence[Job]) -> Iterator[RunnerEvent]:
        """Plan each job where it runs, run it, yield events and traces."""
        ...

    def cancel(self) -> None:
        """Send no further calls."""
        ...


# What a run's planning step gives back: the document, the plan, and the source's details.
_Prepared = tuple[Document, Plan, Mapping[str, Any]]


class Executor:
    """Runs jobs (and plans) through one client with one dispatch chain, one bounded pool, a
    cancel switch and events: the in-process ``Runner``."""

    def __init__(
        self,
        client: LLMClient,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        cache: CallCache | None = None,
        context_window: int | None = None,
        budget: Budget | None = None,
        resolver: Resolver | None = None,
        counter: TokenCounter | None = None,
        mode: str = "now",
        batch_label: str = "",
        poll_s: float = 30.0,
        ledger: str = "",
        cache_lone_prefixes: bool | Callable[[Job | None], bool] = True,
        shared_cap: bool = False,
    ) -> None:
        self.client = client
        # Plans jobs: one counter for all, or (None) the tokenizer each job names.
        self.counter = counter
        self.concurrency = calls_at_once(client, concurrency)
        self.cache = cache
        self.context_window = context_window
        self.resolver = resolver
        # A free engine (offline, simulated) pays nothing: no budget to keep.
        self.budget = budget if client.is_llm else None
        # Why no further call is sent, when it is not the caller's cancel: the budget cap, or
        # a reply that could not be stored (``save_error`` too).
        self.stopped: str | None = None
        self.save_error: str | None = None
        self._cancel = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="rr-call")
        self.calls_made = 0
        self._possibly_usd = 0.0  # calls sent whose bill never came, at what they held
        self._possibly_calls = 0
        # This executor, as the sender of the calls it records in the store before sending them
        # now; and the calls an earlier process sent and never saw answered (found by key as this
        # one prepares the same calls: a run started again after ``kill -9``).
        self.sender_id = senders.new_sender()
        self.earlier_unanswered: list[SentCall] = []
        self._leaving = False  # ``leave``: what was taken goes back for the next runner
        # Calls sent now and not back yet: the sender stays live (its calls its own) until the
        # executor is closed and they are all back.
        self._sending = 0
        self._closed = False
        # The ledger this executor's replies are recorded in (a Lab sweep's key; "" for none),
        # the keys it has recorded as paid, and stored replies it took as its own.
        self.ledger = ledger
        # Other runners spend against the same ledger's cap at the same time (a grid's parts on
        # several workers): each call is also held in the store, against the cap, before it is
        # sent (``CallCache.hold_spend``), and settled there to its bill.
        self.shared_cap = shared_cap
        self._recorded: set[str] = set()
        self._claimed = 0
        self._count_lock = threading.Lock()
        # Prompt-cache prefixes (``Outgoing.prefix``) a reply has come back for, and when.
        self._warm: dict[str, float] = {}
        # Whether a prefix no other call of its phase shares is marked for the prompt cache
        # (for every run, or per run's job): yes when later questions over the document are
        # likely (a question asked on the Document screen, a document's next run in a grid);
        # no where no call will read it (a grid's one run over a document), as the write
        # would cost more (Anthropic: 1.25x) and, in a batch, send the call ahead at the full
        # price to warm a cache no call reads.
        self.cache_lone_prefixes = cache_lone_prefixes
        self.mode = mode
        now = NowSender(self._pool.submit, self._call_now)
        self.batcher: BatchSender | None = None
        if mode == "batch":
            self.batcher = self._batch_sender(batch_label, poll_s, now)
            self.dispatcher = Dispatcher(self.batcher, cache, warm=now)
        elif mode == "now":
            self.dispatcher = Dispatcher(now, cache)
        else:
            raise ConfigError(f"unknown mode {mode!r}; choose now or batch")
        self._events: queue.Queue[RunnerEvent] | None = None

    def _batch_sender(self, label: str, poll_s: float, now: NowSender) -> BatchSender:
        api, ledger = self.client.batch, self.cache
        if api is None:
            raise ConfigError(
                f"{self.client.name} cannot take batches; choose mode now (or a provider that batches)."
            )
        if ledger is None:
            raise ConfigError(
                "Batch mode needs the run store, where a batch is recorded until its replies come."
            )
        return BatchSender(
            api,
            ledger,
            provider=self.client.name,
            label=label or "R&R Studio",
            keep=self._keep_checked,
            admit=lambda out: self._admit(out, batch=True),
            bill=self._bill,
            possibly=self._bill_possibly,
            cancel=self._cancel,
            on_progress=self._batch_progress,
            on_unrecorded=self._stop,
            poll_s=poll_s,
            # Under a cap, the first call goes now, alone: its bill prices what every batch call
            # holds of the budget (a provider billing 50 times the usage is seen before any
            # batch is committed, not after).
            probe=now.send if self.budget is not None else None,
            needs_probe=lambda: self.budget is not None and self.budget.billed_calls == 0,
        )

    def _batch_progress(self, progress: BatchProgress) -> None:
        events = self._events
        if events is not None:
            events.put(progress)

    @property
    def calls_cached(self) -> int:
        """Calls answered from the store (paid before, by other work)."""
        return self.dispatcher.cached - self._claimed

    @property
    def batch_problems(self) -> list[str]:
        """What went wrong with provider batches (a state or result that could not be read or
        recorded), for the run's report."""
        return list(self.batcher.errors) if self.batcher is not None else []

    @property
    def calls_shared(self) -> int:
        """Calls that waited for the same call in flight for another run (not paid twice)."""
        return self.dispatcher.shared

    # -- lifecycle --
    def cancel(self) -> None:
        """Send no further calls; calls in flight finish on their own."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel`` was called (or the executor stopped itself: ``stopped``)."""
        return self._cancel.is_set()

    def _stop(self, why: str) -> None:
        """Send no further calls, and say why (the first reason stays)."""
        with self._count_lock:
            if self.stopped is None:
                self.stopped = why
        self._cancel.set()

    def leave(self) -> None:
        """Send no further calls: this runner is going away and the next takes the work up. The
        calls an earlier process left unanswered, taken by this one, go back to the ledger on
        ``close`` (under their own senders, who are gone): the next runner reports them."""
        self._leaving = True
        self.cancel()

    def close(self) -> None:
        """Stop the pool (after the calls in flight) and the batch sender (its batches go on at
        the provider and are recorded: a later run polls them instead of paying again)."""
        if self.batcher is not None:
            self.batcher.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._leaving:
            self._hand_back_unanswered()
        with self._count_lock:
            self._closed = True
            done = self._sending == 0
        if done:
            senders.ended(self.sender_id)

    def _sent_back(self) -> None:
        """A call sent now came back (or failed): the last one back after close ends the sender."""
        with self._count_lock:
            self._sending -= 1
            done = self._closed and self._sending == 0
        if done:
            senders.ended(self.sender_id)

    def _hand_back_unanswered(self) -> None:
        with self._count_lock:
            taken, self.earlier_unanswered = self.earlier_unanswered, []
        if self.cache is None or not taken:
            return
        try:
            for call in taken:
                self.cache.mark_sent(call)
        except (RRError, OSError) as exc:
            log.warning(
                "calls possibly billed could not be handed back to the run store: %s", redact(str(exc))
            )

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running --
    def stream_jobs(
        self, jobs: Sequence[Job], *, resolver: Resolver | None = None, counter: TokenCounter | None = None
    ) -> Iterator[RunnerEvent]:
        """Plan each job where it runs (its source opened through ``resolver``, else the
        executor's; planned with ``counter``, else the executor's, else the job's tokenizer),
        run them concurrently, yield progress events, then each finished trace."""
        events: queue.Queue[RunnerEvent] = queue.Queue()
        opening = _Opening(resolver or self.resolver, counter or self.counter)
        runners = [_Run(self, index, events.put, job=job, opening=opening) for index, job in enumerate(jobs)]
        return self._drive(runners, events)

    def stream_plans(self, planned: Sequence[tuple[Document, Plan]]) -> Iterator[RunnerEvent]:
        """Like ``stream_jobs`` for plans already made (shown to the user before running)."""
        events: queue.Queue[RunnerEvent] = queue.Queue()
        runners = [
            _Run(self, index, events.put, planned=(document, plan, {}))
            for index, (document, plan) in enumerate(planned)
        ]
        return self._drive(runners, events)

    def stream(self, document: Document, plans: Sequence[Plan]) -> Iterator[RunnerEvent]:
        """Run the plans concurrently, yielding progress events, then each finished trace."""
        return self.stream_plans([(document, plan) for plan in plans])

    def run(
        self,
        document: Document,
        plans: Sequence[Plan],
        on_event: Callable[[CallEvent], None] | None = None,
    ) -> list[RunTrace]:
        """Run the plans; traces come back in the order of ``plans``."""
        traces: list[RunTrace | None] = [None] * len(plans)
        for item in self.stream(document, plans):
            if isinstance(item, RunTrace):
                traces[item.position] = item
            elif isinstance(item, CallEvent) and on_event is not None:
                on_event(item)
        return [t for t in traces if t is not None]

    def _drive(self, runners: list[_Run], events: queue.Queue[RunnerEvent]) -> Iterator[RunnerEvent]:
        self._events = events
        sender = self.dispatcher.sender

        def work(runner: _Run) -> None:
            try:
                events.put(runner.run())
            except Exception as exc:  # noqa: BLE001 - a bug must reach the caller, not hang it
                trace = runner.failed_trace()
                trace.error = redact(f"Internal error: {type(exc).__name__}: {exc}")
                trace.error_kind = "InternalError"
                events.put(trace)
            finally:
                sender.run_finished()

        # Runs start as others finish: a sweep of a thousand trials holds a few documents'
        # prompts at a time, not all of them (the pool bounds the calls themselves). Nothing
        # here keeps a run once it has started: a finished run (its document, plan and prompts)
        # is dropped as soon as its trace has been handed on.
        total = len(runners)
        waiting = list(reversed(runners))
        runners.clear()
        # A batch holds every run's calls at once: many runs wait together (threads that
        # mostly sleep), so one batch carries a whole phase of a sweep.
        active_limit = BATCH_ACTIVE_RUNS if self.batcher is not None else max(4, 2 * self.concurrency)

        def start_next() -> None:
            if waiting:
                sender.run_started()
                threading.Thread(target=work, args=(waiting.pop(),), daemon=True).start()

        for _ in range(min(active_limit, total)):
            start_next()
        finished = 0
        try:
            while finished < total:
                item = events.get()
                if isinstance(item, RunTrace):
                    finished += 1
                    start_next()
                yield item
        finally:
            # The caller stopped listening (the user left the page): send no further calls.
            if finished < total:
                self.cancel()

    # -- one call --
    def _skip(self, run: _Run, record: CallTrace, event: CallEvent, error: RRError) -> _Failed:
        record.error = str(error)
        run.emit(replace(event, status="skipped", message=str(error)))
        return _Failed(record, error)

    def _not_sent(self) -> RunCancelled:
        if self.stopped is None:
            return RunCancelled("The run was stopped before this call was sent.")
        kind = SaveFailed if self.save_error else BudgetReached
        return kind(f"{self.stopped} This call was not sent.")

    def _reserve(self, run: _Run, call: Call, *, batch: bool = False) -> Reservation | None:
        """Hold the call's worst case (its prompt with a margin, and every output token it may
        write, at the price it is sent at: now or in a batch, scaled by how far bills have run
        over their tokens); raises BudgetReached (and stops) when that would pass the cap. Calls
        in flight together never pass the cap unless one is billed over its worst case by more
        than any bill before it."""
        if self.budget is None:
            return None
        pricing = call_pricing(call, run.plan.settings)
        mode: Mode = "batch" if batch else "now"
        worst = worst_case(call, pricing, mode)
        estimate = estimate_cost(worst.prompt_tokens, worst.output_tokens, *pricing, mode=mode)
        held = (
            self.budget.reserve(
                estimate.total_usd,
                self._cancel,
                one_at_first=not batch,
                worst=worst,
                wait_for_room=self.batcher is None,
            )
            if estimate.known
            else None
        )
        if held is not None and self.shared_cap and self.ledger and self.cache is not None:
            held = self._hold_shared(held)
            if held is None and not self._cancel.is_set():
                self._stop(
                    f"The budget cap of ${self.budget.cap_usd:.2f} was reached by this work's runners together"
                    " (what they were billed and the calls they hold in flight, as recorded in the store)."
                    " No further call was sent."
                )
                raise BudgetReached(self.stopped or "The run was stopped before this call was sent.")
        if held is None and not self._cancel.is_set():
            budget = self.budget
            if not estimate.known:
                why = (
                    f"No price is known for {pricing[0]}, so the budget cap of "
                    f"${budget.cap_usd:.2f} cannot be kept. No call was sent."
                )
            elif budget.earlier_usd >= budget.cap_usd - 1e-9:
                why = (
                    f"The work's budget cap of ${budget.cap_usd:.2f} was already spent by its earlier runs "
                    f"(${budget.earlier_usd:.4f} billed or possibly billed). No call was sent: raise the cap "
                    "to go on."
                )
            elif budget.settled_usd > budget.cap_usd:
                why = (
                    f"The budget cap of ${budget.cap_usd:.2f} was passed: the provider billed "
                    f"${budget.settled_usd:.4f}, up to {budget.overrun:,.1f} times what the calls were "
                    "estimated at (a call's bill is known only once it returns). No further call was sent."
                )
            else:
                possibly = (
                    f"${budget.possibly_usd:.4f} possibly billed (sent, and no bill came), "
                    if budget.possibly_usd > 0
                    else ""
                )
                earlier = (
                    f" (${budget.earlier_usd:.4f} of it by this work's earlier runs)"
                    if budget.earlier_usd > 0
                    else ""
                )
                why = (
                    f"The budget cap of ${budget.cap_usd:.2f} was reached: ${budget.settled_usd:.4f} paid{earlier}, "
                    f"{possibly}${budget.held_usd:.4f} held by calls in flight, and the next call would "
                    f"hold ${budget.hold_for(estimate.total_usd, worst):.4f} (its worst case: its prompt "
                    "and every output token it may write, or what such calls were billed when more). "
                    "No further call was sent."
                )
            self._stop(why)
        if held is None:
            raise BudgetReached(self.stopped or "The run was stopped before this call was sent.")
        return held

    def _hold_shared(self, reservation: Reservation) -> Reservation | None:
        """Hold the reserved call in the store against the cap the work's runners share; None
        (its local hold released) when it would pass it, or cannot be recorded."""
        assert self.budget is not None and self.cache is not None
        hold = uuid.uuid4().hex
        try:
            ok = self.cache.hold_spend(self.ledger, hold, reservation.held_usd, self.budget.cap_usd)
        except (RRError, OSError) as exc:
            message = redact(str(exc))
            with self._count_lock:
                self.save_error = self.save_error or message
            ok = False
        if not ok:
            self.budget.settle(reservation, None)
            return None
        return replace(reservation, hold=hold)

    def _admit(self, out: Outgoing, *, batch: bool = False) -> None:
        """Before a call is sent (now or in a batch): not after a cancel, and only with its
        cost held in the budget (``_Failed`` refuses it, and it is not sent)."""
        pending: _Pending = out.owner
        run, record, event = pending.run, pending.record, pending.event
        if self._cancel.is_set():
            raise self._skip(run, record, event, self._not_sent())
        try:
            pending.reservation = self._reserve(run, pending.call, batch=batch)
        except BudgetReached:
            raise self._skip(run, record, event, self._not_sent()) from None
        run.emit(event)

    def _bill_possibly(self, out: Outgoing) -> None:
        """A call was sent and its bill never came (its batch's acceptance was lost, it timed
        out): what it held stays counted, as possibly billed."""
        self._bill(out, None, possibly=True)

    @property
    def possibly_billed_usd(self) -> float:
        """What calls sent without a bill back may have cost (counted at what they held), this
        process's and those an earlier one left in flight."""
        with self._count_lock:
            return self._possibly_usd + sum(c.reserved_usd for c in self.earlier_unanswered)

    @property
    def possibly_billed_calls(self) -> int:
        """How many calls ``possibly_billed_usd`` counts."""
        with self._count_lock:
            return self._possibly_calls + len(self.earlier_unanswered)

    @property
    def possibly_billed_note(self) -> str:
        """ "up to $X possibly billed for N calls …", or "" when none may be."""
        return possibly_billed_note(
            self._possibly_usd, self._possibly_calls, sum(c.reserved_usd for c in self.earlier_unanswered),
            len(self.earlier_unanswered),
        )  # fmt: skip

    def _take_unanswered(self, outgoing: Sequence[Outgoing]) -> None:
        """Calls a sender now gone (an earlier process) sent under these calls' keys and never
        saw answered: counted as possibly billed (in the budget too), once."""
        if self.cache is None or not outgoing or not self.client.is_llm or self._cancel.is_set():
            return  # (cancelled: nothing will be sent, and what is taken now might not be handed back)
        keys = [out.key for out in outgoing]
        # No call outlives its request's time limit (retries included): a sender elsewhere whose
        # call is older than that is gone.
        limit_s = max(out.request.timeout_s for out in outgoing)

        def gone(call: SentCall) -> bool:
            return senders.is_gone(call.sender, call.sent_at, limit_s=limit_s)

        try:
            left = self.cache.take_unanswered(keys, self.sender_id, gone)
            # A reply stored before its process was stopped (between keeping it and clearing its
            # entry) was billed once, and is counted where it is used: not possibly billed again.
            left = [c for c in left if self.cache.find(c.key) is None]
        except (RRError, OSError):
            return  # the store will say what is wrong when a reply is kept
        if not left:
            return
        with self._count_lock:
            self.earlier_unanswered.extend(left)
        if self.budget is not None:
            self.budget.add_possibly(sum(c.reserved_usd for c in left))

    def _mark_sent(self, out: Outgoing) -> None:
        """Record the call in the store before it is sent now (``_Failed`` when that cannot be
        done: a call the store cannot record is not sent). A free engine bills nothing: no entry."""
        if self.cache is None or not self.client.is_llm:
            return
        pending: _Pending = out.owner
        held = pending.reservation.held_usd if pending.reservation is not None else None
        if held is None:
            held = worst_case(pending.call, call_pricing(pending.call, pending.run.plan.settings)).usd
        sent = SentCall(
            key=out.key, provider=self.client.name, model=out.request.model, reserved_usd=held,
            sender=self.sender_id,
        )  # fmt: skip
        try:
            self.cache.mark_sent(sent)
        except (RRError, OSError) as exc:
            message = redact(str(exc))
            with self._count_lock:
                self.save_error = self.save_error or message
            self._stop(f"A call could not be recorded in the run store before sending ({message}).")
            self._bill(out, None)
            raise self._skip(pending.run, pending.record, pending.event, self._not_sent()) from exc

    def _clear_sent(self, key: str) -> None:
        if self.cache is None or not self.client.is_llm:
            return
        # When it cannot be cleared it stays: a later run reports it as possibly billed (the safe side).
        with contextlib.suppress(RRError, OSError):
            self.cache.clear_sent(key, self.sender_id)

    def _bill(
        self, out: Outgoing, completion: Completion | None, *, mode: Mode = "batch", possibly: bool = False
    ) -> None:
        """A call came back (with its bill) or failed (none): settle what it held."""
        pending: _Pending = out.owner
        paid = (
            price_usage(
                completion.usage, *call_pricing(pending.call, pending.run.plan.settings), mode=mode
            ).total_usd
            if completion is not None
            else None
        )
        reservation, pending.reservation = pending.reservation, None
        hold = reservation.hold if reservation is not None else ""
        if reservation is not None and self.budget is not None:
            billed = (
                (
                    completion.usage.prompt_tokens,
                    completion.usage.output_tokens,
                    len(completion.text) // CHARS_PER_TOKEN,
                )
                if completion is not None
                else None
            )
            self.budget.settle(reservation, paid, possibly=possibly, billed=billed)
        if possibly and completion is None:
            if reservation is not None:
                held = reservation.held_usd
            else:  # no budget: what it may have cost is its worst case at the price it was sent at
                held = worst_case(
                    pending.call, call_pricing(pending.call, pending.run.plan.settings), mode
                ).usd
            with self._count_lock:
                self._possibly_usd += held
                self._possibly_calls += 1
            self._spend(out.key, held, hold)
        elif completion is not None:
            with self._count_lock:
                self.calls_made += 1
            self._spend(out.key, paid or 0.0, hold)
        elif hold:  # failed with no bill: what it held in the store is released
            self._spend(out.key, 0.0, hold)

    def _spend(self, key: str, usd: float, hold: str = "") -> None:
        """Record what a call of this work was billed (or may have been), as it is billed, so a
        later run of the work counts it inside the work's cap (``hold``: the call's hold in the
        store becomes its bill). Not recorded: no further call."""
        if not self.ledger or self.cache is None or not self.client.is_llm:
            return
        if usd <= 0 and not hold:
            return
        try:
            if hold:
                self.cache.settle_hold(self.ledger, hold, key, usd)
            else:
                self.cache.add_spend(self.ledger, key, usd)
        except (RRError, OSError) as exc:
            message = redact(str(exc))
            with self._count_lock:
                self.save_error = self.save_error or message
            self._stop(f"What a call was billed could not be recorded in the run store ({message}).")

    def _claim(self, key: str, stored: CachedCall) -> bool:
        """Whether a stored reply is this work's own, paid by an earlier process of it that was
        stopped before writing its ledger (a sweep started again after ``kill -9``): recorded
        as paid, once."""
        if not self.ledger or stored.accounted or stored.ledger != self.ledger:
            return False
        with self._count_lock:
            if key in self._recorded:
                return False
            self._recorded.add(key)
            self.calls_made += 1
            self._claimed += 1
        return True

    def _keep_checked(self, out: Outgoing, completion: Completion) -> bool:
        """Keep a batch's reply that parses, as it arrives; True when kept."""
        pending: _Pending = out.owner
        if not _parses(pending.call, completion.text):
            return False
        self._keep(out.key, completion, "batch")
        return self.save_error is None

    def _call_now(self, out: Outgoing) -> Completion:
        """The sender's call (in the pool): admitted, sent, billed."""
        self._admit(out)
        with self._count_lock:
            self._sending += 1
        try:
            return self._send_now(out)
        finally:
            self._sent_back()

    def _send_now(self, out: Outgoing) -> Completion:
        pending: _Pending = out.owner
        run, call, record, event = pending.run, pending.call, pending.record, pending.event
        self._mark_sent(out)
        warm = self._warm_prefix(out)
        completion: Completion | None = None
        # Sent, and no answer known: until the provider answers (a reply, or an error it sent),
        # the call may be billed (a client that raised something else may have sent it too).
        unanswered = True
        try:
            completion = self.client.complete(out.request)
            unanswered = False
            self._note_cache(run, out, warm, completion, record)
        except RunCancelled:
            unanswered = False  # the client stopped before sending (a cancel it was given)
            raise
        except LLMError as exc:
            if exc.usage is not None:
                # Answered, and billed, with nothing usable (a reply left empty): its bill is
                # settled and its cost recorded like any reply's.
                completion = Completion(text="", usage=exc.usage, model=out.request.model)
                self._price_failed(run, call, record, exc.usage)
            # Sent, and no answer (a timeout, a connection lost): the provider may have billed it.
            # (Not a server that could not be reached at all: nothing left this machine.)
            unanswered = exc.usage is None and (
                isinstance(exc, ProviderTimeout)
                or (
                    isinstance(exc, ProviderError)
                    and exc.status is None
                    and not isinstance(exc, NotConnected)
                )
            )
            record.error = str(exc) + (" (possibly billed: sent, and no answer came)" if unanswered else "")
            record.latency_s = round(time.perf_counter() - pending.started, 3)
            run.emit(replace(event, status="failed", message=record.error))
            raise _Failed(record, exc) from exc
        finally:
            self._bill(out, completion, mode="now", possibly=unanswered)
            if not unanswered and (completion is None or record.error):
                self._clear_sent(out.key)  # the provider answered: an error (billed or not)
        # Kept as soon as it returns and parses (here, before this pool thread sends another
        # call): a reply that cannot be kept stops the run before more is paid. Its entry in the
        # sent-but-unanswered ledger goes once the reply is stored (or did not parse: not kept,
        # but answered). A call that timed out stays there: a later run reports it.
        if _parses(call, completion.text):
            self._keep(out.key, completion, "now")
            if self.save_error is None:
                self._clear_sent(out.key)
        else:
            self._clear_sent(out.key)
        return completion

    def _price_failed(
        self, run: _Run, call: Call, record: CallTrace, usage: Usage, *, mode: Mode = "now"
    ) -> None:
        """A failed call's bill on its record (what it cost is paid, though it gave nothing)."""
        record.usage = usage
        record.mode = mode
        cost = price_usage(usage, *call_pricing(call, run.plan.settings), mode=mode)
        record.cost_usd, record.output_cost_usd, record.cached_cost_usd, record.price_known = (
            cost.total_usd,
            cost.output_usd,
            cost.cached_usd,
            cost.known,
        )

    def _warm_prefix(self, out: Outgoing) -> bool:
        """Whether a reply to a call with the same cacheable prefix came back within its lifetime."""
        hint = out.request.cache
        if hint is None or out.prefix is None:
            return False
        return self._is_warm(out.prefix, hint)

    def _lone_cached(self, run: _Run) -> bool:
        policy = self.cache_lone_prefixes
        return policy if isinstance(policy, bool) else policy(run.job)

    def _is_warm(self, prefix: str, hint: CacheHint | None) -> bool:
        if hint is None:
            return False
        with self._count_lock:
            since = self._warm.get(prefix)
        return since is not None and time.monotonic() - since < CACHE_TTL_S[hint.ttl]

    def _note_cache(
        self, run: _Run, out: Outgoing, warm: bool, completion: Completion, record: CallTrace
    ) -> None:
        """Remember a prefix the provider has now cached; say when an expected hit was not reported."""
        hint = out.request.cache
        if hint is None or out.prefix is None or not completion.cache_hint_sent:
            return
        with self._count_lock:
            self._warm[out.prefix] = time.monotonic()
        if warm:
            record.expected_cached_tokens = hint.tokens
            if completion.usage.cached_tokens == 0:
                run.warn(
                    f"Call {record.id}: a cache hit on ~{hint.tokens:,} tokens was expected (its prefix was sent "
                    "before) and none was reported: those tokens were billed at the full input rate."
                )

    def _keep(self, key: str, completion: Completion, mode: Mode) -> None:
        """Store a parsed reply (how it was paid, and the ledger that records it: unaccounted
        until the work writes that ledger); when the store fails, send nothing more (it would be
        paid again)."""
        with self._count_lock:
            self._recorded.add(key)
        if self.cache is None:
            return
        try:
            self.cache.put(
                key,
                CachedCall(
                    completion.text,
                    completion.usage,
                    completion.model,
                    temperature=completion.temperature,
                    temperature_known=True,
                    mode=mode,
                    ledger=self.ledger,
                    accounted=not self.ledger,
                ),
            )
        except (RRError, OSError) as exc:
            message = redact(str(exc))
            with self._count_lock:
                self.save_error = self.save_error or message
            self._stop(f"A reply could not be kept in the run store ({message}).")

    def _prepare(self, run: _Run, call: Call, *, shared: Collection[str] = ()) -> Outgoing:
        """The call's record, event and request, on its way into the dispatch chain.

        ``shared``: the prefix digests another call of the same phase also has. Unless lone
        prefixes are cached (``cache_lone_prefixes``), only such a prefix, or one a reply came
        back for within its lifetime, is marked for the provider's prompt cache."""
        prompt = call.render()
        settings = run.plan.settings
        model = call.model or settings.model
        key = call_key(self.client, model, call, prompt)
        record = CallTrace(
            id=call.id,
            stage=call.stage,
            chunk=call.chunk,
            question=call.question,
            pages=list(dict.fromkeys(call.pages)),
            reminders_after=list(call.reminders_after),
            leading_reminders=call.leading_reminders,
            reminder_tokens=call.reminder_tokens,
            planned_prompt_tokens=call.prompt_tokens,
            schema=call.schema.WIRE_NAME,
            prompt=prompt,
            cache_key=key,
        )
        event = CallEvent(
            run.index, run.plan.method, run.plan.label, call.stage, call.chunk, len(record.pages), "started"
        )
        hint = call.cache_hint(run.plan.document_sha256, "5m")
        prefix = call.prefix_digest() if hint is not None else None
        lone = prefix is not None and prefix not in shared and not self._lone_cached(run)
        if lone and not self._is_warm(prefix or "", hint):
            hint = prefix = None  # no other call reads it: sent as a plain prompt
        request = LLMRequest(
            prompt=prompt,
            schema=call.schema,
            model=model,
            max_output_tokens=call.max_output_tokens,
            layout=call.layout,
            cache=hint,
        )
        pending = _Pending(run, call, record, event, time.perf_counter())
        return Outgoing(key=key, request=request, prefix=prefix, owner=pending)

    def _finish(self, out: Outgoing, sent: Future[Delivered]) -> tuple[CallTrace, Any]:
        """The call's reply through the chain, priced, checked, parsed and kept."""
        pending: _Pending = out.owner
        run, call, record, event = pending.run, pending.call, pending.record, pending.event
        error = sent.exception()
        if isinstance(error, _Failed):
            raise error
        if isinstance(error, RRError):
            if isinstance(error, LLMError) and error.usage is not None:
                # A batch's call answered with nothing usable, billed all the same (a call sent
                # now that fails is priced where it is sent: it arrives here as ``_Failed``).
                self._price_failed(run, call, record, error.usage, mode="batch")
            record.error = str(error)
            run.emit(replace(event, status="failed", message=str(error)))
            raise _Failed(record, error)
        if error is not None:  # a bug (in a client, say): it reaches the caller as one
            raise error
        delivered = sent.result()
        completion = delivered.reply
        settings = run.plan.settings
        record.cached = not delivered.paid_here
        record.shared = delivered.source == "shared"
        record.mode = "batch" if delivered.batch else "now"
        if isinstance(completion, CachedCall):
            record.mode = "batch" if completion.mode == "batch" else "now"  # priced as it was billed
            if self._claim(out.key, completion):
                record.cached = False  # paid by this work before it was stopped: its ledger records it
        # What this call's request was sent with (a stored reply says what its request had;
        # one stored before that was recorded: what the client is configured to send).
        record.temperature = (
            completion.temperature
            if isinstance(completion, Completion) or completion.temperature_known
            else _temperature(self.client.identity().get("temperature"))
        )
        record.latency_s = round(time.perf_counter() - pending.started, 3)
        record.response = completion.text[:MAX_STORED_RESPONSE_CHARS]
        record.usage = completion.usage
        cost = price_usage(completion.usage, *call_pricing(call, settings), mode=record.mode)
        record.cost_usd, record.output_cost_usd, record.cached_cost_usd, record.price_known = (
            cost.total_usd,
            cost.output_usd,
            cost.cached_usd,
            cost.known,
        )
        if (
            not record.cached
            and self.client.is_llm
            and 0 < completion.usage.prompt_tokens < TRUNCATION_RATIO * call.prompt_tokens
        ):
            run.warn(
                f"The server reported {completion.usage.prompt_tokens:,} prompt tokens for call {call.id} where "
                f"about {call.prompt_tokens:,} were sent: it may have cut the prompt to fit its context window "
                "without saying so."
            )
        try:
            if len(completion.text) > MAX_STORED_RESPONSE_CHARS:
                # Nothing keeps it (trace, answer, history, call cache): a runaway reply is a fault.
                raise ResponseParseError(
                    f"The reply was {len(completion.text):,} characters long, more than any answer asked "
                    f"for ({MAX_STORED_RESPONSE_CHARS:,} at most); it was not kept.",
                    raw=completion.text[:200],
                )
            parsed = call.schema.parse(completion.text)
        except ResponseParseError as exc:
            # Not stored: the next run asks again.
            record.error = str(exc)
            run.emit(replace(event, status="failed", message=str(exc)))
            raise _Failed(record, exc) from exc
        if hasattr(parsed, "pages") and isinstance(parsed.pages, list):
            record.retrieved = [p for p in parsed.pages if isinstance(p, int)]
        run.emit(replace(event, status="cached" if record.cached else "done"))
        return record, parsed


def _parses(call: Call, text: str) -> bool:
    """Whether a reply is one worth keeping: not runaway, and of the shape asked for."""
    if len(text) > MAX_STORED_RESPONSE_CHARS:
        return False
    try:
        call.schema.parse(text)
    except ResponseParseError:
        return False
    return True


def _temperature(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class _Opening:
    """How a stream's jobs are opened and planned."""

    resolver: Resolver | None
    counter: TokenCounter | None


@dataclass(slots=True)
class _Pending:
    """Who a call in the chain belongs to: its run, step, record and first event."""

    run: _Run
    call: Call
    record: CallTrace
    event: CallEvent
    started: float
    reservation: Reservation | None = None


class _Run:
    """One job's run: plans it (or takes the plan already made), drives its phases, collects
    its trace."""

    def __init__(
        self,
        executor: Executor,
        index: int,
        emit: Callable[[CallEvent | RunTrace], None],
        *,
        job: Job | None = None,
        planned: _Prepared | None = None,
        opening: _Opening | None = None,
    ) -> None:
        self.executor, self.index, self._emit = executor, index, emit
        self.job, self._planned, self._opening = job, planned, opening
        self._lock = threading.Lock()
        self._trace: RunTrace | None = None

    @property
    def trace(self) -> RunTrace:
        """The run's trace (once planned)."""
        assert self._trace is not None
        return self._trace

    def _prepare(self) -> _Prepared:
        """The document and plan: planned here, where the job runs."""
        if self._planned is not None:
            return self._planned
        job, opening = self.job, self._opening
        assert job is not None and opening is not None
        if opening.resolver is None:
            raise ConfigError("This runner has no way to open a job's document (no resolver).")
        material = opening.resolver.open(job.source)
        counter = opening.counter or counter_for_model(job.token_model)
        plan = plan_job(job, material, counter)
        return material.document, plan, material.details

    def _start_trace(self, document: Document, plan: Plan, details: Mapping[str, Any]) -> RunTrace:
        settings = plan.settings
        trace = RunTrace(
            run_id=uuid.uuid4().hex,
            method=plan.method,
            label=plan.label,
            describe=plan.describe,
            questions=list(plan.questions),
            document=document.name,
            document_sha256=document.sha256,
            provider=settings.provider,
            model=settings.model,
            is_llm=self.executor.client.is_llm,
            settings=settings,
            cache_key=run_key(plan, settings.provider, settings.model),
            position=self.index,
            job_id=self.job.id if self.job is not None else "",
            estimate_usd=plan.estimate.usd,
            price_known=plan.estimate.cost.known,
            price_source=plan.estimate.cost.source,
            price_data=price_data_version(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            notes=list(plan.notes),
        )
        if details:
            trace.details["source"] = dict(details)
        return trace

    def failed_trace(self) -> RunTrace:
        """The trace so far, or one made from the job when planning itself failed."""
        if self._trace is not None:
            return self._trace
        job = self.job
        source = job.source if job is not None else None
        settings = job.settings if job is not None else RunSettings()
        self._trace = RunTrace(
            run_id=uuid.uuid4().hex,
            method=settings.method,
            label=settings.method,
            describe="",
            questions=list(job.questions) if job is not None else [],
            document=source.name if isinstance(source, DocumentRef) else (source.key if source else ""),
            document_sha256=source.sha256 if isinstance(source, DocumentRef) else "",
            provider=settings.provider,
            model=settings.model,
            is_llm=self.executor.client.is_llm,
            settings=settings,
            position=self.index,
            job_id=job.id if job is not None else "",
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        return self._trace

    def emit(self, event: CallEvent) -> None:
        self._emit(event)

    def warn(self, message: str) -> None:
        with self._lock:
            self.trace.warnings.append(message)

    def run(self) -> RunTrace:
        started = time.perf_counter()
        try:
            self.document, self.plan, details = self._prepare()
        except RRError as exc:
            trace = self.failed_trace()
            trace.error, trace.error_kind = str(exc), type(exc).__name__
            return trace
        self._trace = self._start_trace(self.document, self.plan, details)
        try:
            self._refuse_oversized()
            done: list[PhaseResults] = []
            for phase in self.plan.phases:
                concrete = phase.resolve(done) if phase.estimated and phase.resolve else phase
                if phase.estimated and not concrete.steps:
                    done.append({})
                    continue
                done.append(self._run_phase(concrete))
            conclusion = self.plan.conclude(done)
            self.trace.outcomes = conclusion.outcomes
            self.trace.warnings.extend(conclusion.warnings)
            self.trace.details.update(conclusion.details)
            self._check_quotes()
            self._triage()
            errors = [o.error for o in self.trace.outcomes if o.error]
            if errors and len(errors) == len(self.trace.outcomes):
                self.trace.error = errors[0]
                self.trace.error_kind = self._first_error_kind()
        except RRError as exc:
            self.trace.error = str(exc)
            self.trace.error_kind = type(exc).__name__
        self.trace.price_known = self.plan.estimate.cost.known and all(
            c.price_known for c in self.trace.calls
        )
        self.trace.latency_s = round(time.perf_counter() - started, 3)
        return self.trace

    def _refuse_oversized(self) -> None:
        window = self.executor.context_window
        if window and self.plan.largest_prompt > window:
            raise ContextTooLongError(
                f"{self.plan.label}'s largest prompt is about {self.plan.largest_prompt:,} tokens; "
                f"{self.plan.settings.model} reads at most {window:,}. Nothing was sent. "
                "A chunked method with a smaller chunk size c fits.",
                provider=self.plan.settings.provider,
            )

    def _run_phase(self, phase: Phase) -> PhaseResults:
        executor = self.executor
        results: dict[str, StepResult] = {}
        shared = (
            () if executor._lone_cached(self) else shared_prefixes(phase.calls, self.plan.document_sha256)
        )
        outgoing = {step.id: executor._prepare(self, step, shared=shared) for step in phase.calls}
        executor._take_unanswered(list(outgoing.values()))
        sent = {sid: executor.dispatcher.submit(out) for sid, out in outgoing.items()}
        for step in phase.steps:
            if isinstance(step, LocalStep):
                results[step.id] = self._local(step)
        if sent:
            sender = executor.dispatcher.sender
            replies = list(sent.values())
            sender.wait_started(replies)
            try:
                wait(replies)
            finally:
                sender.wait_finished(replies)
        for step in phase.calls:
            try:
                record, parsed = executor._finish(outgoing[step.id], sent[step.id])
                results[step.id] = StepResult(step, parsed)
            except _Failed as failed:
                record = failed.record
                results[step.id] = StepResult(step, error=failed.error)
            with self._lock:
                self.trace.calls.append(record)
        ordered = {s.id: results[s.id] for s in phase.steps}
        if ordered and not phase.optional and all(not r.ok for r in ordered.values()):
            # Nothing to go on: the phase's first error becomes the run's.
            error = next(r.error for r in ordered.values())
            raise error if isinstance(error, RRError) else RRError(str(error))
        return ordered

    def _local(self, step: LocalStep) -> StepResult:
        started = time.perf_counter()
        record = StepTrace(id=step.id, stage=step.stage, description=step.description)
        try:
            value = step.run()
        finally:
            record.latency_s = round(time.perf_counter() - started, 3)
            self.trace.steps.append(record)
        return StepResult(step, value)

    def _check_quotes(self) -> None:
        """Each citation's quote against its own page, and the page's printed label."""
        pages = self.document.pages
        for outcome in self.trace.outcomes:
            for citation in outcome.citations:
                page = citation.page
                text = pages[page - 1].text if page is not None and 1 <= page <= len(pages) else None
                check = check_quote(citation.quote, text)
                citation.quote_check, citation.quote_score = check.status, check.score
                if text is not None and page is not None:
                    citation.page_label = pages[page - 1].label

    def _triage(self) -> None:
        """Who says a missing answer is absent, whether each answer's quotes support it (the
        offline reader judges its own, free; a model's stays unchecked), and its confidence."""
        reader = not self.executor.client.is_llm
        texts = [page.text for page in self.document.pages]
        margins: dict[str, float | None] = {}
        for outcome in self.trace.outcomes:
            if outcome.question not in margins:
                margins[outcome.question] = page_margin(texts, outcome.question)
            outcome.retrieval_margin = margins[outcome.question]
            if outcome.answer is not None and not outcome.found and not outcome.absent_by:
                outcome.absent_by = "reader" if reader else "model"
            if reader and outcome.stated and outcome.support == UNCHECKED:
                outcome.support, outcome.support_reason = offline_support(
                    outcome.question, outcome.answer, [c.quote for c in outcome.citations]
                )
                outcome.support_by = "offline reader"
            assess(outcome)

    def _first_error_kind(self) -> str:
        return "LLMError" if any(c.error for c in self.trace.calls) else "RRError"


def run_plans(
    document: Document,
    plans: Sequence[Plan],
    client: LLMClient,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_event: Callable[[CallEvent], None] | None = None,
    cache: CallCache | None = None,
    context_window: int | None = None,
    budget: Budget | None = None,
) -> list[RunTrace]:
    """Run plans with a one-off executor (the CLI and tests); traces in the order of plans."""
    with Executor(
        client, concurrency=concurrency, cache=cache, context_window=context_window, budget=budget
    ) as executor:
        return executor.run(document, plans, on_event)
