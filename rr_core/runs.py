"""Running plans: the only place that calls a client. Produces one ``RunTrace`` per method.

Independent calls (the chunks of a chunked method, and the methods themselves) run in
threads, and every provider call passes through one shared limiter, so concurrency is
bounded however many methods and chunks are in flight.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from rr_core.costs import price_data_version, price_usage
from rr_core.documents import Document
from rr_core.errors import LLMError, ResponseParseError, RRError, RunCancelled
from rr_core.llm.base import LLMClient, LLMRequest, Usage
from rr_core.llm.errors_map import redact
from rr_core.methods import Plan, PlannedCall, RunSettings, plan_answer, plan_method, render_prompt
from rr_core.parsing import parse_answer, parse_retrieval
from rr_core.tokens import TokenCounter

DEFAULT_CONCURRENCY = 8


@dataclass(slots=True, kw_only=True)
class CallTrace:
    """One call as it happened: what was sent, what came back, what it cost."""

    stage: str
    chunk: int | None
    pages: list[int]
    reminders_after: list[int]
    leading_reminders: int
    reminder_tokens: int
    prompt: str
    response: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    output_cost_usd: float = 0.0
    price_known: bool = True
    latency_s: float = 0.0
    retrieved: list[int] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True, kw_only=True)
class RunTrace:
    """A method's whole run: the one record the UI, the ledger, the exports and the CLI read."""

    method: str
    question: str
    document: str
    document_sha256: str
    provider: str
    model: str
    is_llm: bool
    settings: dict[str, Any]
    calls: list[CallTrace] = field(default_factory=list)
    retrieved_pages: list[int] = field(default_factory=list)
    dropped_pages: list[int] = field(default_factory=list)
    answer: str | None = None
    page: int | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    error_kind: str | None = None
    estimate_usd: float = 0.0
    price_known: bool = True
    price_source: str = ""
    price_data: str = ""
    latency_s: float = 0.0
    started_at: str = ""

    @property
    def usage(self) -> Usage:
        """Tokens over all calls."""
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        return total

    @property
    def cost_usd(self) -> float:
        """Cost over all calls."""
        return sum(c.cost_usd for c in self.calls)

    @property
    def ok(self) -> bool:
        """True when the method produced an outcome without an error."""
        return self.error is None

    def cost_by_stage(self) -> dict[str, float]:
        """Cost split into retrieval, answer and reminder overhead (USD)."""
        out = {"retrieval": 0.0, "answer": 0.0, "reminders": 0.0}
        for call in self.calls:
            prompt = call.usage.prompt_tokens
            share = call.reminder_tokens / prompt if prompt and call.reminder_tokens else 0.0
            # Reminders are input tokens: their share of the call's input cost.
            input_cost = call.cost_usd - call.output_cost_usd
            out["reminders"] += input_cost * share
            key = "retrieval" if call.stage == "retrieve" else "answer"
            out[key] += call.cost_usd - input_cost * share
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (usage and cost totals included)."""
        data = asdict(self)
        data["usage"] = asdict(self.usage)
        data["cost_usd"] = self.cost_usd
        data["cost_by_stage"] = self.cost_by_stage()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunTrace:
        """Rebuild a trace from ``to_dict`` output (the ledger and imports)."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        calls = []
        for raw in fields.pop("calls", []):
            raw = {k: v for k, v in raw.items() if k in CallTrace.__dataclass_fields__}
            raw["usage"] = Usage(**raw.get("usage", {}))
            calls.append(CallTrace(**raw))
        return cls(calls=calls, **fields)


@dataclass(frozen=True, slots=True)
class CallEvent:
    """Progress of one call, for progress displays."""

    method: str
    stage: str
    chunk: int | None
    pages: int
    status: str  # "started" | "done" | "failed"
    message: str = ""


class _Limiter:
    """Bounds the provider calls in flight across all methods and chunks."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._semaphore = threading.BoundedSemaphore(self.limit)

    def __enter__(self) -> None:
        self._semaphore.acquire()

    def __exit__(self, *exc: object) -> None:
        self._semaphore.release()


class _Runner:
    """Runs one plan; shares the client, limiter and event sink with its siblings."""

    def __init__(
        self,
        document: Document,
        plan: Plan,
        client: LLMClient,
        counter: TokenCounter,
        limiter: _Limiter,
        emit: Callable[[CallEvent], None],
        cancel: threading.Event,
    ) -> None:
        self.document, self.plan, self.client = document, plan, client
        self.counter, self.limiter, self.emit, self.cancel = counter, limiter, emit, cancel
        self.max_workers = limiter.limit
        settings = plan.settings
        self.trace = RunTrace(
            method=plan.method.value,
            question=plan.question,
            document=document.name,
            document_sha256=document.sha256,
            provider=settings.provider,
            model=settings.model,
            is_llm=client.is_llm,
            settings=_settings_dict(settings),
            estimate_usd=plan.estimate.usd,
            price_known=plan.estimate.cost.known,
            price_source=plan.estimate.cost.source,
            price_data=price_data_version(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def run(self) -> RunTrace:
        started = time.perf_counter()
        try:
            if self.plan.method.retrieves:
                self._run_retrieve_then_answer()
            else:
                self._answer(self.plan.calls[0])
        except RRError as exc:
            self.trace.error = str(exc)
            self.trace.error_kind = type(exc).__name__
        self.trace.price_known = self.plan.estimate.cost.known and all(
            c.price_known for c in self.trace.calls
        )
        self.trace.latency_s = round(time.perf_counter() - started, 3)
        return self.trace

    def _execute(self, call: PlannedCall) -> CallTrace:
        """Send one call. The record is returned, or attached to the raised error: the caller
        adds it to the trace, so chunk calls land in chunk order whatever finishes first."""
        prompt = render_prompt(self.document, call)
        record = CallTrace(
            stage=call.stage,
            chunk=call.chunk,
            pages=list(call.pages),
            reminders_after=list(call.reminders_after),
            leading_reminders=call.leading_reminders,
            reminder_tokens=call.reminder_tokens,
            prompt=prompt,
        )
        settings = self.plan.settings
        request = LLMRequest(
            prompt=prompt,
            task=call.stage,
            model=settings.model,
            max_output_tokens=settings.max_output_tokens,
            top_k=call.top_k,
        )
        event = CallEvent(
            method=self.trace.method,
            stage=call.stage,
            chunk=call.chunk,
            pages=len(call.pages),
            status="started",
        )
        self.emit(event)
        started = time.perf_counter()
        try:
            with self.limiter:
                # Checked after waiting for a slot too: a stopped run sends nothing more.
                if self.cancel.is_set():
                    raise RunCancelled("The run was stopped before this call was sent.")
                completion = self.client.complete(request)
        except (LLMError, RunCancelled) as exc:
            record.error = str(exc)
            record.latency_s = round(time.perf_counter() - started, 3)
            self.emit(replace(event, status="failed", message=str(exc)))
            raise _CallFailed(record, exc) from exc
        record.latency_s = round(time.perf_counter() - started, 3)
        record.response = completion.text
        record.usage = completion.usage
        cost = price_usage(completion.usage, *settings.pricing)
        record.cost_usd = cost.total_usd
        record.output_cost_usd = cost.output_usd
        record.price_known = cost.known
        self.emit(replace(event, status="done"))
        return record

    def _answer(self, call: PlannedCall) -> None:
        try:
            record = self._execute(call)
        except _CallFailed as failed:
            self.trace.calls.append(failed.record)
            raise failed.error from None
        self.trace.calls.append(record)
        try:
            parsed = parse_answer(record.response)
        except ResponseParseError as exc:
            record.error = str(exc)
            raise
        self.trace.answer = parsed.answer
        page = parsed.page_number
        if page is not None and page not in call.pages:
            self.trace.warnings.append(
                f"The model cited page {page}, which was not in its context; citation dropped."
            )
            page = None
        self.trace.page = page

    def _retrieve(self, call: PlannedCall) -> _Retrieval:
        """One retrieval call; never raises an ``RRError`` (it is part of the outcome)."""
        try:
            record = self._execute(call)
        except _CallFailed as failed:
            return _Retrieval(failed.record, error=failed.error)
        try:
            parsed = parse_retrieval(record.response)
        except ResponseParseError as exc:
            record.error = str(exc)
            return _Retrieval(record, error=exc)
        allowed = set(call.pages)
        outcome = _Retrieval(record)
        for page in parsed.pages:
            if page in allowed and page not in outcome.kept:
                outcome.kept.append(page)
            elif page not in allowed:
                outcome.dropped.append(page)
        if len(outcome.kept) > call.top_k:
            outcome.warnings.append(
                f"The model returned {len(outcome.kept)} pages where {call.top_k} were asked; "
                f"kept the first {call.top_k}."
            )
            del outcome.kept[call.top_k :]
        record.retrieved = list(outcome.kept)
        return outcome

    def _run_retrieve_then_answer(self) -> None:
        calls = self.plan.retrieval_calls
        if len(calls) == 1:
            outcomes = [self._retrieve(calls[0])]
        else:
            workers = min(len(calls), self.max_workers)
            with ThreadPoolExecutor(max_workers=workers) as pool:
                outcomes = list(pool.map(self._retrieve, calls))
        # Merged in chunk order, so identical runs give identical traces.
        for outcome in outcomes:
            self.trace.calls.append(outcome.record)
            self.trace.dropped_pages.extend(outcome.dropped)
            self.trace.warnings.extend(outcome.warnings)
        failed = [o.error for o in outcomes if o.error is not None]
        if failed and len(failed) == len(outcomes):
            raise failed[0]
        for error in failed:
            self.trace.warnings.append(f"One chunk's retrieval failed and was skipped: {error}")
        self.trace.retrieved_pages = merge_ranked([o.kept for o in outcomes if o.error is None])
        if self.trace.dropped_pages:
            dropped = ", ".join(str(p) for p in self.trace.dropped_pages)
            self.trace.warnings.append(f"Dropped page numbers that were not in the context: {dropped}.")
        if not self.trace.retrieved_pages:
            self.trace.answer = "n/a"
            self.trace.warnings.append(
                "The retrieval phase returned no valid page, so there was nothing to answer from."
            )
            return
        answer_call = plan_answer(
            self.document, self.plan.question, self.plan.settings, self.counter, self.trace.retrieved_pages
        )
        self._answer(answer_call)


@dataclass(slots=True)
class _Retrieval:
    """One retrieval call's outcome, merged into the trace by the method's thread."""

    record: CallTrace
    kept: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: RRError | None = None


class _CallFailed(Exception):
    """Carries a failed call's record along with its error."""

    def __init__(self, record: CallTrace, error: RRError) -> None:
        super().__init__(str(error))
        self.record, self.error = record, error


def merge_ranked(rankings: Sequence[Sequence[int]]) -> list[int]:
    """Interleave per-chunk rankings: every chunk's first page, then every second, …"""
    merged: list[int] = []
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank] not in merged:
                merged.append(ranking[rank])
    return merged


def _settings_dict(settings: RunSettings) -> dict[str, Any]:
    # JSON-native values (enums as strings, tuples as lists), so that a trace read back from
    # the ledger or an export equals the trace that was saved.
    data = asdict(settings)
    return {
        k: (v.value if hasattr(v, "value") else list(v) if isinstance(v, tuple) else v)
        for k, v in data.items()
    }


def stream_runs(
    document: Document,
    question: str,
    settings: Sequence[RunSettings],
    client: LLMClient,
    counter: TokenCounter,
    *,
    max_concurrency: int = DEFAULT_CONCURRENCY,
) -> Iterator[CallEvent | RunTrace]:
    """Run several methods concurrently, yielding progress events, then each finished trace.

    Plans are made (and configuration errors raised) before any call is sent.
    """
    plans = [plan_method(document, question, s, counter) for s in settings]
    events: queue.Queue[CallEvent | RunTrace] = queue.Queue()
    limiter = _Limiter(max_concurrency)
    cancel = threading.Event()
    runners = [_Runner(document, p, client, counter, limiter, events.put, cancel) for p in plans]

    def work(runner: _Runner) -> None:
        try:
            events.put(runner.run())
        except Exception as exc:  # noqa: BLE001 - a bug must reach the caller, not hang it
            runner.trace.error = redact(f"Internal error: {type(exc).__name__}: {exc}")
            runner.trace.error_kind = "InternalError"
            events.put(runner.trace)

    threads = [threading.Thread(target=work, args=(r,), daemon=True) for r in runners]
    for thread in threads:
        thread.start()
    finished = 0
    try:
        while finished < len(runners):
            item = events.get()
            if isinstance(item, RunTrace):
                finished += 1
            yield item
    finally:
        # The caller stopped listening (a closed generator: the user left the page): send
        # no further paid calls. Calls already in flight finish on their own.
        cancel.set()


def run_methods(
    document: Document,
    question: str,
    settings: Sequence[RunSettings],
    client: LLMClient,
    counter: TokenCounter,
    *,
    max_concurrency: int = DEFAULT_CONCURRENCY,
    on_event: Callable[[CallEvent], None] | None = None,
) -> list[RunTrace]:
    """Run several methods; traces come back in the order of ``settings``."""
    order = {s.method.value: i for i, s in enumerate(settings)}
    traces: list[RunTrace] = []
    for item in stream_runs(document, question, settings, client, counter, max_concurrency=max_concurrency):
        if isinstance(item, RunTrace):
            traces.append(item)
        elif on_event is not None:
            on_event(item)
    return sorted(traces, key=lambda t: order.get(t.method, 0))


def run_method(
    document: Document, question: str, settings: RunSettings, client: LLMClient, counter: TokenCounter
) -> RunTrace:
    """Run one method."""
    return run_methods(document, question, [settings], client, counter)[0]
