"""What a store is, as seams: the protocols callers are typed against and the values crossing them.

No database here (no sqlite3, no driver, no SDK): a backend implements these protocols in its own
module (``sqlite.py``, the embedded default). Everything a store holds belongs to one *owner*
(the single local user, ``"local"``, until there is sign-in): a store is opened as an owner and
sees only that owner's rows.

- ``RunStore``: runs (the History screen, ``ask --save``);
- ``CallCache``: replies by call key, so that no call is paid twice, and the provider batches
  those calls are waiting in (so that a restarted process resumes polling instead of submitting
  them again);
- ``DocumentStore``: document bytes by content hash (and what reading them gave);
- ``WorkStore``: long work (a review grid, a Lab sweep) as plain data, its progress, its
  results as they arrive and a stop request, so that it outlives the page that started it;
- ``Store``: one object giving all four.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rr_core.llm.base import Usage
from rr_core.traces import RunTrace

LOCAL_OWNER = "local"  # the one user of the embedded default

# A provider batch's life: submitting (recorded under our own id before it is sent: the
# provider may have it, or not), submitted, in progress, then one of the four ends.
BATCH_STATES = ("submitting", "submitted", "in_progress", "ended", "expired", "failed", "canceled")
OPEN_BATCH_STATES = ("submitted", "in_progress")  # still to be polled
# How an item of a batch settles: "done" (its reply is stored), or released for resubmission.
ITEM_OUTCOMES = ("done", "errored", "expired", "canceled")
RELEASED_OUTCOMES = ("errored", "expired", "canceled")


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One stored run, as listed (the trace itself is loaded on demand)."""

    run_id: str
    batch: str
    created_at: str
    document: str
    question: str
    method: str
    label: str
    provider: str
    model: str
    answer: str | None
    page: int | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_s: float
    error: str | None
    questions: int = 1  # how many questions the run asked (``question`` is the first)


@dataclass(frozen=True, slots=True)
class CachedCall:
    """A stored reply: its text, the usage it was billed at, and the temperature its request
    was sent with (``temperature_known`` False: a reply stored before that was recorded)."""

    text: str
    usage: Usage
    model: str = ""
    temperature: float | None = None
    temperature_known: bool = False
    # How it was paid: "now" (list price) or "batch" (a provider batch, at its price).
    mode: str = "now"
    # The work whose ledger records it as paid (a Lab sweep's key; "" for none), and whether
    # that ledger has been written. A sweep killed before its ledger was written leaves its
    # replies unaccounted: run again, it records them as paid once (they were, by it).
    ledger: str = ""
    accounted: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchRecord:
    """A provider batch as the store keeps it: whose calls are in it is kept item by item."""

    batch_id: str  # the provider's id
    provider: str
    label: str  # what it belongs to, e.g. "Lab sweep · planted facts" (shown in the progress view)
    state: str  # one of BATCH_STATES
    total: int
    done: int = 0  # items with a stored reply
    failed: int = 0  # items errored, expired or canceled (released for resubmission)
    created_at: str = ""  # ISO UTC, set by the store when empty
    updated_at: str = ""
    owner: str = ""  # set by the store (its own owner)

    def __post_init__(self) -> None:
        if self.state not in BATCH_STATES:
            raise ValueError(f"batch state {self.state!r} is not one of {', '.join(BATCH_STATES)}")
        if not self.batch_id:
            raise ValueError("a batch needs the provider's batch id")
        if min(self.total, self.done, self.failed) < 0:
            raise ValueError("a batch's counts cannot be negative")

    @property
    def is_open(self) -> bool:
        """Still to be polled: submitted or in progress."""
        return self.state in OPEN_BATCH_STATES


@dataclass(frozen=True, slots=True, kw_only=True)
class SentCall:
    """A call sent now (not in a batch) whose reply is not stored yet: recorded before it is
    sent and cleared once its reply is stored or the provider answered (billed or not). One
    left behind was in flight when its process was stopped (``kill -9``): it may be billed."""

    key: str  # the call's key in the call cache
    provider: str
    model: str
    reserved_usd: float  # its worst case, as held in the budget (what it may have cost)
    sender: str  # the process (executor) that sent it
    sent_at: str = ""  # ISO UTC, set by the store when empty


SENT_COLUMNS = "key, provider, model, reserved_usd, sender, sent_at"


def sent_from_row(row: Sequence[Any]) -> SentCall:
    """A ``SentCall`` from a row of ``SENT_COLUMNS``."""
    key, provider, model, reserved_usd, sender, sent_at = row
    return SentCall(
        key=key,
        provider=provider,
        model=model,
        reserved_usd=float(reserved_usd),
        sender=sender,
        sent_at=sent_at,
    )


class RunStore(Protocol):
    """Runs, as the History screen, ``ask --save`` and the exports see them (the owner's only)."""

    def save_batch(self, traces: Sequence[RunTrace], batch: str | None = None) -> str:
        """Store the traces of one question (its methods) under a new batch id, atomically, and
        return it; ``batch``: add them to that batch instead (a grid saved as it runs)."""
        ...

    def list(self, limit: int = 200, offset: int = 0) -> list[StoredRun]:
        """The newest runs first (``offset``: skip that many newer ones: a page further back)."""
        ...

    def get(self, run_id: str) -> RunTrace | None:
        """The full trace of a run, or None if it is gone (or another owner's)."""
        ...

    def get_runs(self, run_ids: Iterable[str]) -> builtins.list[RunTrace]:
        """The full traces of these runs, in the order asked (each once; those gone left out),
        read in one query (a grid's traces, shown again)."""
        ...

    def delete(self, run_ids: Iterable[str]) -> int:
        """Delete runs; returns how many existed."""
        ...

    def count(self) -> int:
        """How many runs are stored."""
        ...


class CallCache(Protocol):
    """Replies by call key, kept as they arrive, and the provider batches calls wait in.

    A key is in at most one unsettled batch item at a time: ``add_batch`` refuses a key that is
    still waiting elsewhere (``BatchConflict``), so a call is never submitted twice.
    """

    def find(self, key: str) -> CachedCall | None:
        """The stored reply for this key, or None."""
        ...

    def put(self, key: str, call: CachedCall) -> None:
        """Keep a reply under its key (the first reply for a key stays)."""
        ...

    def account(self, ledger: str) -> int:
        """Mark the replies of a ledger as recorded (its work finished and wrote them); how many."""
        ...

    def add_spend(self, ledger: str, key: str, usd: float) -> None:
        """Record what a call of ``ledger``'s work was billed (or, sent with no answer back, may
        have been), as it is billed: kept or not, parsed or not."""
        ...

    def ledger_spent(self, ledger: str) -> float:
        """What ``ledger``'s work has been billed over all its runs (its budget cap covers them),
        calls held in flight by its runners (``hold_spend``) at what they hold."""
        ...

    def hold_spend(self, ledger: str, hold: str, usd: float, cap_usd: float) -> bool:
        """Before a call of ``ledger``'s work is sent by one of several runners at once (a grid's
        parts on several workers): hold ``usd`` (its worst case) under the id ``hold``, unless
        what the work was billed and holds plus ``usd`` would pass ``cap_usd``; checked and
        held atomically (one hold at a time per ledger); whether it was held."""
        ...

    def settle_hold(self, ledger: str, hold: str, key: str, usd: float) -> None:
        """The held call came back: what it holds becomes what it was billed (0: unbilled)."""
        ...

    def add_batch(self, batch: BatchRecord, keys: Sequence[str]) -> None:
        """Record a submitted batch and one waiting item per call key, atomically."""
        ...

    def pending_batch(self, key: str) -> BatchRecord | None:
        """The batch this key's call is still waiting in (not done, not released), if any."""
        ...

    def confirm_batch(self, marker: str, batch_id: str) -> None:
        """A batch recorded as "submitting" under our own ``marker`` was found at (or accepted
        by) the provider as ``batch_id``: it and its items are kept under that id, "submitted"."""
        ...

    def update_batch(
        self, batch_id: str, *, state: str, done: int | None = None, failed: int | None = None
    ) -> None:
        """Record a batch's new state (and counts, where given)."""
        ...

    def settle_items(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        """Settle items by key: "done" (reply stored) or "errored"/"expired"/"canceled" (released)."""
        ...

    def open_batches(self) -> list[BatchRecord]:
        """Batches still submitted or in progress, oldest first (to resume polling)."""
        ...

    def batches(self, limit: int = 50) -> list[BatchRecord]:
        """The newest batches first (the progress view)."""
        ...

    def mark_sent(self, call: SentCall) -> None:
        """Record a call about to be sent now (its reply not stored yet)."""
        ...

    def clear_sent(self, key: str, sender: str) -> None:
        """The call ``sender`` sent under ``key`` was answered: no longer possibly billed unseen."""
        ...

    def take_unanswered(
        self, keys: Sequence[str], sender: str, gone: Callable[[SentCall], bool]
    ) -> list[SentCall]:
        """Calls under ``keys`` sent by another sender that is ``gone`` and never answered (left
        by an interrupted process), removed from the ledger as they are handed to ``sender``, who
        reports them. A live sender's calls stay its own (they are in flight)."""
        ...

    def unanswered(self) -> list[SentCall]:
        """Every call sent and never answered, oldest first."""
        ...


class DocumentStore(Protocol):
    """Document bytes by content hash, so any run's document can be opened again."""

    def put_document(self, data: bytes, name: str) -> str:
        """Keep the bytes (once per content); returns their sha256 hex digest."""
        ...

    def get_document(self, sha256: str) -> bytes | None:
        """The bytes with this digest, or None."""
        ...

    def document_name(self, sha256: str) -> str | None:
        """The file name the bytes were first kept under, or None."""
        ...

    def put_reading(self, sha256: str, tokenizer: str, data: bytes) -> None:
        """Keep what reading the document gave (its pages, counted by ``tokenizer``), opaque bytes."""
        ...

    def get_reading(self, sha256: str, tokenizer: str) -> bytes | None:
        """The reading kept for this document and tokenizer, or None."""
        ...


# A reviewer's decision on a review cell (``rr_core.review.decisions`` applies them).
ACCEPTED, CORRECTED, ABSENT = "accepted", "corrected", "absent"
DECISIONS = (ACCEPTED, CORRECTED, ABSENT)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewDecision:
    """What a reviewer decided about one cell (document × question), by whom and when."""

    document_sha256: str
    question: str
    decision: str  # accepted | corrected | absent
    role: str = ""  # the method role of the cell decided on (the decision holds for every role)
    document: str = ""  # the file name, for display and the answer key
    answer: str = ""  # accepted: the engine's answer; corrected: the reviewer's
    page: int | None = None  # corrected: the page the right answer stands on
    quote: str = ""  # corrected: the words on that page that state it
    owner: str = ""  # who decided (the store's owner; "local" in single-user mode)
    decided_at: str = ""  # ISO 8601, UTC

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"a decision is one of {', '.join(DECISIONS)} (got {self.decision!r})")

    @property
    def key(self) -> tuple[str, str]:
        """Where it applies: the document's hash and the question (as the answer key compares it)."""
        return self.document_sha256, " ".join(self.question.lower().split())

    def to_dict(self) -> dict[str, Any]:
        """As JSON (and the store's row)."""
        return {
            "document_sha256": self.document_sha256,
            "question": self.question,
            "decision": self.decision,
            "role": self.role,
            "document": self.document,
            "answer": self.answer,
            "page": self.page,
            "quote": self.quote,
            "owner": self.owner,
            "decided_at": self.decided_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReviewDecision:
        """Read ``to_dict``'s output."""
        page = data.get("page")
        return cls(
            document_sha256=str(data["document_sha256"]),
            question=str(data["question"]),
            decision=str(data["decision"]),
            role=str(data.get("role") or ""),
            document=str(data.get("document") or ""),
            answer=str(data.get("answer") or ""),
            page=None if page is None else int(page),
            quote=str(data.get("quote") or ""),
            owner=str(data.get("owner") or ""),
            decided_at=str(data.get("decided_at") or ""),
        )


class ReviewDecisionStore(Protocol):
    """A reviewer's decisions on review cells, one per (owner, document, question): a decision made
    again replaces the last one; it applies wherever that document and question appear."""

    def put_decision(self, decision: ReviewDecision) -> ReviewDecision:
        """Keep a decision as the store's owner, now; returns it as kept (owner and time filled in)."""
        ...

    def decisions_for(self, documents: Iterable[str]) -> list[ReviewDecision]:
        """The owner's decisions on these documents (by content hash)."""
        ...

    def delete_decision(self, document_sha256: str, question: str) -> bool:
        """Forget a decision (undo); False when there was none."""
        ...


DECISION_COLUMNS = (
    "document_sha256, question, decision, role, document, answer, page, quote, owner, decided_at"
)


def decision_from_row(row: Sequence[Any]) -> ReviewDecision:
    """A decision from a row of ``DECISION_COLUMNS``."""
    return ReviewDecision.from_dict(dict(zip(DECISION_COLUMNS.split(", "), row, strict=True)))


# A piece of work's life: queued, running, then one of the three ends.
WORK_STATES = ("queued", "running", "done", "failed", "cancelled")
OPEN_WORK_STATES = ("queued", "running")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkRecord:
    """A long piece of work (a review grid, a Lab sweep) as the store keeps it: what it is (its
    spec, plain JSON), how far it got, and its results. Any process can run it, watch it or ask
    it to stop; it outlives the page (and the process) that submitted it."""

    work_id: str
    kind: str  # "review", …: which runner reads the spec
    title: str
    state: str
    spec: dict[str, Any]
    done: int = 0
    total: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None
    cancel_requested: bool = False
    worker: str = ""  # who runs (or last ran) it: "in-process …", "worker host:pid"
    attempts: int = 0  # how many times a runner started it (a resumed job: 2 or more)
    created_at: str = ""
    updated_at: str = ""
    owner: str = ""

    def __post_init__(self) -> None:
        if self.state not in WORK_STATES:
            raise ValueError(f"work state {self.state!r} is not one of {', '.join(WORK_STATES)}")

    @property
    def is_open(self) -> bool:
        """Queued or running."""
        return self.state in OPEN_WORK_STATES


# The work table's columns as both backends read them, and a row of them as a record.
WORK_COLUMNS = (
    "work_id, kind, title, state, spec, done, total, result, error, cancel_requested, worker, attempts,"
    " created_at, updated_at, owner"
)


def work_from_row(row: Sequence[Any]) -> WorkRecord:
    """A ``WORK_COLUMNS`` row as a record (spec and result are JSON text)."""
    (work_id, kind, title, state, spec, done, total, result, error, cancel, worker, attempts, created, updated,
     owner) = row  # fmt: skip
    return WorkRecord(
        work_id=work_id, kind=kind, title=title, state=state, spec=json.loads(spec), done=int(done),
        total=int(total), result=json.loads(result) if result else None, error=error,
        cancel_requested=bool(cancel), worker=worker, attempts=int(attempts), created_at=created,
        updated_at=updated, owner=owner,
    )  # fmt: skip


def work_changes(
    now: str,
    *,
    state: str | None,
    done: int | None,
    total: int | None,
    result: Mapping[str, Any] | None,
    error: str | None,
    worker: str | None,
    started: bool,
) -> tuple[list[str], list[Any]]:
    """What ``update_work`` sets, as column names (``name = ?``-ready, without the placeholder)
    and their values; ``attempts`` (when ``started``) is set without a value."""
    if state is not None and state not in WORK_STATES:
        raise ValueError(f"work state {state!r} is not one of {', '.join(WORK_STATES)}")
    names: list[str] = ["updated_at"]
    values: list[Any] = [now]
    for name, value in (
        ("state", state),
        ("done", done),
        ("total", total),
        ("error", error),
        ("worker", worker),
    ):
        if value is not None:
            names.append(name)
            values.append(value)
    if result is not None:
        names.append("result")
        values.append(json.dumps(dict(result)))
    if started:
        names.append("attempts")
    return names, values


# Queues a work's jobs inside the store's transaction that records the work: called with that
# transaction's connection, the work's id and its parts to queue, one job each (none: one job
# for the whole work) (team mode's workers: procrastinate jobs).
Enqueue = Callable[[Any, str, Sequence[str]], None]

# A part's ends (a part handed back by its runner is "queued" again).
ENDED_PART_STATES = ("done", "failed", "cancelled")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkPart:
    """One part of a work run as its own job (a review grid's document, in team mode): its state,
    who runs it and when its runner was last heard from (its lease), and how it ended."""

    work_id: str
    part: str
    state: str
    worker: str = ""
    updated_at: str = ""
    result: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ended(self) -> bool:
        """Done, failed or cancelled."""
        return self.state in ENDED_PART_STATES


PART_COLUMNS = "work_id, part, state, worker, updated_at, result, error"


def part_from_row(row: Sequence[Any]) -> WorkPart:
    """A part from a row of ``PART_COLUMNS``."""
    work_id, part, state, worker, updated, result, error = row
    return WorkPart(
        work_id=work_id, part=part, state=state, worker=worker, updated_at=updated,
        result=json.loads(result) if result else None, error=error,
    )  # fmt: skip


class WorkStore(Protocol):
    """Long work and its results as they arrive (the owner's only)."""

    def submit_work(
        self,
        kind: str,
        title: str,
        spec: Mapping[str, Any],
        total: int,
        *,
        calls_key: str = "",
        work_id: str | None = None,
        enqueue: Enqueue | None = None,
        parts: Sequence[str] = (),
    ) -> str:
        """Record new work, queued; returns its id. ``calls_key``: what the work's calls are (its
        jobs, model and server, not its budget or concurrency); when the owner has open work
        (queued or running, no stop asked) of this kind with this key, its id instead (a second
        click, a second tab: the same calls are not run, and paid, twice at once); checked and
        recorded in one transaction. ``work_id``: the id to give new work (else a new one).
        ``enqueue``: queues the new work's job in that same transaction (its connection and the
        work's id); when it raises, nothing is recorded. ``parts``: the work is run as these
        parts, one job each (recorded queued, and handed to ``enqueue``)."""
        ...

    def get_work(self, work_id: str) -> WorkRecord | None:
        """The work with this id, or None (another owner's is None)."""
        ...

    def list_work(self, limit: int = 50, kind: str | None = None) -> list[WorkRecord]:
        """The newest work first."""
        ...

    def finished_work(self, kind: str, calls_key: str) -> WorkRecord | None:
        """The newest work of this kind with this calls key that ended done (the same calls,
        already answered: re-sending them asks first), or None."""
        ...

    def update_work(
        self,
        work_id: str,
        *,
        state: str | None = None,
        done: int | None = None,
        total: int | None = None,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
        worker: str | None = None,
        started: bool = False,
    ) -> None:
        """Record progress or an end (``started``: a runner picked it up; counts an attempt)."""
        ...

    def request_cancel(self, work_id: str) -> bool:
        """Ask the work to stop (whoever runs it sees it); False when it is not open. Its parts
        not started end at once; with none running, the work ends cancelled."""
        ...

    def reopen_work(self, work_id: str, *, enqueue: Enqueue | None = None) -> bool:
        """Queue ended work again (stop request cleared); False when it is open or unknown, or
        when other open work has its ``calls_key`` (it would make the same calls at once).
        ``enqueue``: queues its job in the transaction that reopens it (see ``submit_work``); a
        work run in parts gets one job for each part that did not end done."""
        ...

    def work_parts(self, work_id: str) -> list[WorkPart]:
        """A work's parts (none: it runs as one job)."""
        ...

    def start_part(self, work_id: str, part: str, worker: str) -> None:
        """A runner takes the part up: the part and its work are running (an attempt counted)."""
        ...

    def touch_part(self, work_id: str, part: str) -> None:
        """The part's runner is alive (its lease, and its work's, renewed)."""
        ...

    def end_part(
        self,
        work_id: str,
        part: str,
        state: str,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> list[WorkPart] | None:
        """Record how a run of the part ended ("queued": handed back; its work is queued again
        when no other part runs). Decided under a lock on the work's row: returns every part
        when this call ended the work's last open part (the caller then writes the work's end;
        exactly one caller does), else None."""
        ...

    def count_results(self, work_id: str) -> int:
        """How many results the work has kept (its progress, over all its parts)."""
        ...

    def add_results(
        self, work_id: str, results: Sequence[tuple[str, Mapping[str, Any]]], part: str = ""
    ) -> None:
        """Keep results as they arrive, each under a key (a grid cell's), as ``part``'s (a work
        run in parts: the part that recorded them); a key kept again is replaced."""
        ...

    def work_results(self, work_id: str) -> list[dict[str, Any]]:
        """The results kept so far, in the order they arrived."""
        ...

    def iter_work_results(
        self, work_id: str, page: int = 500, part: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The results kept so far (``part``: that part's only), in the order they arrived, read
        ``page`` at a time: the reader holds one page, not the work's results (a grid's end sums
        up 10,000 cells so; a part reads its own, not the grid's).
        Meant for a work that has ended: a result kept again while it reads may be read twice."""
        ...


class SignInStore(Protocol):
    """Sign-ins ended by signing out (team mode), by the sign-in's id (``rr_core.signin``): a
    copy of the session's cookie taken before then signs no one in."""

    def end_sign_in(self, sign_in: str) -> None:
        """Record that this sign-in ended (signing out)."""
        ...

    def sign_in_ended(self, sign_in: str) -> bool:
        """Whether this sign-in was ended."""
        ...

    def note_email(self, email: str) -> None:
        """Record the email the store's owner signed in with (its latest), so that the command
        line can find the owner by it (``owners_with_email``)."""
        ...

    def owners_with_email(self, email: str) -> list[str]:
        """Every owner who signed in with this email (case aside), whoever's store asks: the one
        thing a store shares across owners (emails only, never their rows)."""
        ...


class Store(RunStore, CallCache, DocumentStore, WorkStore, SignInStore, ReviewDecisionStore, Protocol):
    """One store: runs, call replies and batches, documents, long work, ended sign-ins, review
    decisions, all of one owner."""

    @property
    def owner(self) -> str:
        """Whose rows this store reads and writes."""
        ...

    @property
    def location(self) -> str:
        """Where it is, for display (a file path; never a password)."""
        ...

    def close(self) -> None:
        """Release what it holds open."""
        ...
