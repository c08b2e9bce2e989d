"""The application layer: the use cases the screens and the command line share.

- ``Engine`` (from ``rr_core.engine``): the engine a use case runs on (provider, model, the
  model it is priced as, a key or server given for the run), registry defaults;
- **ask**: ``plan_ask`` (the chosen methods planned for a document and its questions, with
  the estimate and the context window), ``check_ask_budget``, ``ask`` (run them with the
  store as call cache if asked, under a budget, and save them to the history);
- **review**: ``read_review_corpus`` (files read once into the document store),
  ``plan_grid`` (documents × columns planned and estimated), ``check_review_budget``,
  ``review`` (the grid's jobs run into cells, through the store as call cache);
- **sweep**: ``plan_measurement`` (trials' recipes, each trial built, planned and dropped), ``check_sweep_budget``,
  ``sweep`` (run through the store as call cache, under a budget);
- **history**: ``history_records`` (one user's stored runs, newest first), ``acting_user`` (who
  the command line acts as: ``--user``, ``RR_STUDIO_USER``, required with a shared store).

The screens and the CLI keep only what is theirs: reading widgets or arguments, and drawing
or printing. The runner and the store are reached through ``open_runner`` (``rr_core.engine``)
and ``open_history`` only. The grid and the sweep themselves live with their kinds of long work
(``rr_core.kinds.review``, ``rr_core.kinds.sweep``), below the work runner, which runs them the
same way in a thread of the app and on workers; they are named here for the screens.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rr_core.confidence import assess_together
from rr_core.costs import Mode, assumed_free
from rr_core.documents import Document
from rr_core.engine import BATCH_POLL_S as BATCH_POLL_S
from rr_core.engine import Engine as Engine
from rr_core.engine import Guard as Guard
from rr_core.engine import batch_poll_s as batch_poll_s
from rr_core.engine import open_runner as open_runner
from rr_core.errors import ConfigError, LedgerError
from rr_core.jobs import DocumentRef, Documents, Job
from rr_core.kinds.base import WorkSpec
from rr_core.kinds.review import SAVE_EVERY as SAVE_EVERY
from rr_core.kinds.review import ReviewResult as ReviewResult
from rr_core.kinds.review import plan_grid as plan_grid
from rr_core.kinds.review import review as review
from rr_core.kinds.review import review_resolver as review_resolver
from rr_core.llm import LLMClient, describe_provider
from rr_core.methods import plan_questions
from rr_core.plans import Plan, estimate_calls
from rr_core.questions import Question, mark_traces
from rr_core.review import CorpusFile, Item, ReviewPlan, StoredDocuments, read_corpus
from rr_core.review.corpus import Passwords, Where, reading_bytes, reading_key
from rr_core.runs import CallEvent, Executor, RunTrace
from rr_core.settings import RunSettings
from rr_core.store import (
    LOCAL_OWNER,
    DocumentStore,
    Store,
    StoredRun,
    WorkRecord,
    is_postgres,
    open_store,
    redact_url,
)
from rr_core.store.config import DB_ENV
from rr_core.tokens import TokenCounter
from rr_core.work import (
    InProcessQueue,
    ReviewWork,
    WorkQueue,
    new_work_id,
    resume_work,
    submit_review,
    submit_sweep,
)

if TYPE_CHECKING:
    from rr_core.kinds.sweep import SweepWork as SweepWork
    from rr_core.kinds.sweep import plan_measurement as plan_measurement
    from rr_core.kinds.sweep import sweep as sweep
    from rr_core.lab.sweep import SweepPlan

# The Lab's use cases, from its kind of long work, loaded on first use: a review or an ask does
# not load the Lab's modules (``rr_core.lab``: ~25 ms of every command, app start and worker).
_LAB_NAMES = ("SweepWork", "plan_measurement", "sweep")


def __getattr__(name: str) -> Any:
    if name in _LAB_NAMES:
        from rr_core.kinds import sweep as lab_kind

        return getattr(lab_kind, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- the narrow points: the runner and the store ----------------------------------------------


USER_ENV = "RR_STUDIO_USER"  # who the command line acts as (``--user`` overrides it)


def open_history(owner: str = LOCAL_OWNER, *, url: str | Path | None = None) -> Store:
    """The run store as ``owner`` (the local user when none is given): the history, and the call
    cache (``url``: a store other than ``RR_STUDIO_DB``'s, as a session that chose a per-project
    file). ``LedgerError`` when it cannot open; ``ConfigError`` when it names a store no backend
    serves."""
    return open_store(url, owner=owner)


def acting_user(given: str | None = None, *, url: str | Path | None = None) -> str:
    """Who a command acts as: ``given`` (``--user``), else ``$RR_STUDIO_USER``; with neither,
    the local user for a SQLite file, and a ``ConfigError`` for a PostgreSQL store (shared by a
    team: acting as nobody in particular would mix everyone's runs under one name).

    An email (``ann@example.com``) names the owner who signed in with it (``<issuer>#<sub>``,
    looked up in the store at ``url``); two owners who share it are a ``ConfigError`` listing
    both, and, in a team's store, an email no one signed in with is one saying what to give."""
    name = given if given is not None else os.environ.get(USER_ENV, "")
    if name and name != name.strip():
        raise ConfigError(f"the user name {name!r} has spaces around it: give the name alone")
    if name:
        return owner_of_email(name, url=url) if "@" in name and "#" not in name else name
    if is_postgres(url):
        shown = redact_url(str(url or os.environ.get(DB_ENV, "")))
        raise ConfigError(
            f"{DB_ENV}={shown} is a PostgreSQL store, shared by a team: say whose runs to use with"
            f" --user NAME or {USER_ENV}=NAME (the email you sign in with, or your owner id)"
        )
    return LOCAL_OWNER


def owner_of_email(email: str, *, url: str | Path | None = None) -> str:
    """The owner who signed in with ``email`` (see ``acting_user``)."""
    store = open_history(url=url)
    try:
        owners = store.owners_with_email(email)
    finally:
        store.close()
    if len(owners) == 1:
        return owners[0]
    if len(owners) > 1:
        raise ConfigError(
            f"{len(owners)} people signed in with {email}: " + ", ".join(owners) + ". Give the owner id"
            " of the one you mean with --user (the part before # is the sign-in provider)."
        )
    if is_postgres(url):
        raise ConfigError(
            f"no one has signed in with {email} to this team's store since emails were recorded. Sign in"
            " to the app once, or give the owner id with --user (<issuer>#<sub>: the app's user menu shows it)."
        )
    return email  # a local file: the name is the owner, as given


# ---- ask -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AskPlan:
    """The chosen methods planned for a document and its questions, before any call."""

    document: Document
    questions: tuple[Question, ...]
    settings: tuple[RunSettings, ...]  # one per method (or variant)
    plans: tuple[Plan, ...]
    window: int | None = None  # the model's context window, where known
    counter: TokenCounter | None = None  # what planned them (the runner plans the jobs again with it)

    def jobs(self) -> list[Job]:
        """The plans as jobs (plain data: the document by its hash), which the runner plans
        again where it runs them: the same calls, by the same keys."""
        source = DocumentRef.of(self.document)
        return [
            Job(id=f"ask-{i}", source=source, settings=plan.settings, questions=plan.questions)
            for i, plan in enumerate(self.plans)
        ]

    @property
    def calls(self) -> int:
        """Calls expected in all."""
        return sum(p.estimate.calls for p in self.plans)

    @property
    def input_tokens(self) -> int:
        """Input tokens expected in all."""
        return sum(p.estimate.input_tokens for p in self.plans)

    @property
    def usd(self) -> float:
        """The estimate in US dollars (what the tokens would cost, for a free engine)."""
        return sum(p.estimate.usd for p in self.plans)

    @property
    def priced_as(self) -> str:
        """The model the estimate is priced as."""
        return self.settings[0].pricing[0] if self.settings else ""

    @property
    def price_known(self) -> bool:
        """Whether every plan's price is known."""
        return all(p.estimate.cost.known for p in self.plans)

    @property
    def too_long(self) -> list[Plan]:
        """The plans whose longest prompt is over the context window (refused before sending)."""
        return [p for p in self.plans if self.window and p.largest_prompt > self.window]


def plan_ask(
    document: Document,
    questions: Sequence[Question],
    settings: Sequence[RunSettings],
    counter: TokenCounter,
    *,
    window: int | None = None,
) -> AskPlan:
    """Plan each method (one ``RunSettings`` each) for the questions (``ConfigError`` for a
    setting that cannot work)."""
    plans = [p for s in settings for p in plan_questions(document, list(questions), s, counter)]
    return AskPlan(document, tuple(questions), tuple(settings), tuple(plans), window, counter)


def check_ask_budget(plans: Sequence[Plan], base: RunSettings, max_usd: float) -> None:
    """Refuse, before any call, methods estimated above the budget or with no known price."""
    estimate = estimate_calls([c for p in plans for c in p.calls], base)
    priced_as, provider = base.pricing
    if assumed_free(priced_as, provider) or not estimate.cost.known:
        raise ConfigError(
            f"A budget of ${max_usd:.2f} was set, but no price is known for {priced_as}"
            + (" on this server (it is counted as free)" if estimate.cost.known else "")
            + ", so the run could pass it unseen. Nothing was sent: name the model whose prices the "
            "server charges with --price-model MODEL, or leave out --max-usd."
        )
    if estimate.cost.total_usd > max_usd:
        raise ConfigError(
            f"The methods are estimated at ${estimate.cost.total_usd:.2f} ({estimate.calls:,} calls), above "
            f"the budget of ${max_usd:.2f}. Nothing was sent: raise the budget or ask less."
        )


@dataclass(frozen=True, slots=True)
class AskResult:
    """What an ask gave back: the traces (in the plans' order), and where they were kept."""

    traces: list[RunTrace]
    batch: str | None  # the history's batch id; None when not saved
    save_error: str | None  # why the history could not keep them (the results stand)
    is_llm: bool
    # "up to $X possibly billed for N calls …" (sent with no answer back, or left in flight by an
    # interrupted earlier run), and that X; "" and 0 when none may be.
    possibly_billed: str = ""
    possibly_usd: float = 0.0


def ask(
    plan: AskPlan,
    client: LLMClient,
    *,
    concurrency: int,
    max_usd: float | None = None,
    cache: bool = False,
    save: bool = True,
    on_event: Callable[[CallEvent], None] | None = None,
    guard: Guard | None = None,
    owner: str = LOCAL_OWNER,
    url: str | Path | None = None,
) -> AskResult:
    """Run the plans that were shown; mark the answers against known ones; save to history.

    With ``cache`` the run store is also the call cache: each reply is kept as it returns,
    and a call asked before (same reader, same prompt) is not paid again; a store this build
    cannot serve is then a ``ConfigError`` before anything is sent. A store that cannot open
    or save is reported in ``save_error``; paid results are returned regardless. The history
    is ``owner``'s in the store at ``url`` (``None``: ``RR_STUDIO_DB``'s).
    """
    store: Store | None = None
    save_error: str | None = None
    if cache:
        try:
            store = open_history(owner, url=url)
        except LedgerError as exc:
            save_error = str(exc)
    with (
        open_runner(
            client, concurrency=concurrency, cache=store, window=plan.window, max_usd=max_usd
        ) as runner,
        guard(runner) if guard is not None else nullcontext(),
    ):
        traces = _run_jobs(runner, plan, on_event)
    possibly = (runner.possibly_billed_note, runner.possibly_billed_usd)
    mark_traces(traces, list(plan.questions))
    # Several methods on the same questions: agreement between them counts in each confidence.
    assess_together([(t.label, t.outcomes) for t in traces])
    batch = None
    if save and save_error is None:
        try:  # paid results are shown whether or not the history can keep them
            kept = store or open_history(owner, url=url)
            batch = kept.save_batch(traces)
            keep_document(kept, plan.document)
        except (LedgerError, ConfigError) as exc:
            save_error = str(exc)
    return AskResult(traces, batch, save_error, client.is_llm, *possibly)


def _run_jobs(
    runner: Executor, plan: AskPlan, on_event: Callable[[CallEvent], None] | None
) -> list[RunTrace]:
    """The ask's jobs through the runner (planned again there, with the counter that planned
    them); traces in the order of the plans that were shown."""
    traces: list[RunTrace | None] = [None] * len(plan.plans)
    resolver = Documents([plan.document])
    for item in runner.stream_jobs(plan.jobs(), resolver=resolver, counter=plan.counter):
        if isinstance(item, RunTrace):
            traces[item.position] = item
        elif isinstance(item, CallEvent) and on_event is not None:
            on_event(item)
    return [t for t in traces if t is not None]


# ---- sweep -----------------------------------------------------------------------------------


def check_sweep_budget(plan: SweepPlan, max_usd: float | None, mode: Mode = "now") -> None:
    """Refuse, before any call, a sweep above the budget or with no known price to keep it."""
    from rr_core.lab.sweep import check_budget

    check_budget(plan, max_usd, mode)


def keep_document(store: DocumentStore, document: Document) -> None:
    """Keep a run's document in the store by its hash (its reading, and a PDF's bytes), so the
    History and the Document screen can open it again, on any replica, after it is closed."""
    store.put_reading(document.sha256, reading_key(document.tokenizer, document.ocr), reading_bytes(document))
    if document.pdf_bytes is not None and hashlib.sha256(document.pdf_bytes).hexdigest() == document.sha256:
        store.put_document(document.pdf_bytes, document.name)


def stored_document(
    sha256: str, counter: TokenCounter, *, owner: str = LOCAL_OWNER, store: Store | None = None
) -> Document:
    """A document kept in the store (its reading; a PDF's bytes for rendering); ``ConfigError``
    when the store does not hold it."""
    return StoredDocuments(
        store if store is not None else open_history(owner), counter, with_pdf=True
    ).document(sha256)


# ---- review ----------------------------------------------------------------------------------


def read_review_corpus(
    items: Sequence[Item],
    *,
    model: str = "",
    store: Store | None = None,
    processes: int | None = None,
    on_file: Callable[[int, int, CorpusFile], None] | None = None,
    ocr: bool = False,
    passwords: Passwords | None = None,
    where: Where = "cli",
) -> list[CorpusFile]:
    """Read a review's files once (in parallel processes) into the document store; one summary
    per file, problems listed (``model``: the model whose tokenizer counts the pages). ``ocr``
    reads pages without text by OCR, ``passwords`` open encrypted PDFs (never stored); a file
    not read says what to do ``where`` the user is (the Review screen or the command line)."""
    return read_corpus(items, store if store is not None else open_history(), model=model,
                       processes=processes, on_file=on_file, ocr=ocr, passwords=passwords,
                       where=where)  # fmt: skip


def check_review_budget(plan: ReviewPlan, max_usd: float | None, mode: Mode = "now") -> None:
    """Refuse, before any call, a grid estimated above the budget or with no known price."""
    if max_usd is None:
        return
    priced_as, provider = plan.settings.pricing
    if assumed_free(priced_as, provider) or not plan.estimate.cost.known:
        raise ConfigError(
            f"A budget of ${max_usd:.2f} was set, but no price is known for {priced_as}, so the grid could "
            "pass it unseen. Nothing was sent: name the model whose prices apply, or leave out the budget."
        )
    usd = plan.estimate.usd(mode)
    if usd > max_usd:
        raise ConfigError(
            f"The grid is estimated at ${usd:.2f} ({plan.estimate.calls:,} calls, {mode}), above the budget "
            f"of ${max_usd:.2f}. Nothing was sent: raise the budget, or review fewer documents or questions."
        )


# ---- work that outlives the page ----------------------------------------------------------------

_IN_PROCESS: dict[tuple[str, str], InProcessQueue] = {}


def runs_on_workers(url: str | Path | None = None) -> bool:
    """Whether submitted work runs on team mode's workers (a PostgreSQL store), not in this process."""
    return is_postgres(url)


def open_queue(owner: str = LOCAL_OWNER, *, url: str | Path | None = None) -> WorkQueue:
    """Where submitted work runs: the workers of team mode (a PostgreSQL store), else a thread
    of this process (one queue per owner and store, shared by every page of the process)."""
    if is_postgres(url):
        from rr_core.queue import WorkerQueue

        return WorkerQueue(str(url or os.environ[DB_ENV]), owner)
    key = (owner, str(url or ""))
    queue = _IN_PROCESS.get(key)
    if queue is None:
        queue = _IN_PROCESS[key] = InProcessQueue(lambda: open_history(owner, url=url))
    return queue


class Submitted(NamedTuple):
    """Work handed to the queue: its id, and whether it was recorded now (False: the same work
    was already queued or running, and that is the one shown). ``finished``: the same calls
    already ran to the end in this work (nothing was queued: open it, or send again with
    ``again``)."""

    work_id: str
    new: bool
    finished: WorkRecord | None = None


def finished_already(store: Store, work: WorkSpec) -> WorkRecord | None:
    """The newest work that made the same calls and ended done (re-sending them asks first)."""
    return store.finished_work(work.kind, work.calls_key())


def submit_grid(
    work: ReviewWork,
    plan: ReviewPlan,
    *,
    store: Store,
    owner: str = LOCAL_OWNER,
    url: str | Path | None = None,
    client: LLMClient | None = None,
    again: bool = False,
) -> Submitted:
    """Record the grid as work and hand it to the queue; its id (watch it with ``store.get_work``),
    and whether it is new: the same grid already queued or running is that work, not a second
    one. The same grid already finished is not sent again unless ``again``: the finished work is
    handed back (``Submitted.finished``) for the caller to ask. ``client``: the page's own (a
    typed key), used only by the in-process queue."""
    finished = None if again else finished_already(store, work)
    if finished is not None:
        return Submitted(finished.work_id, new=False, finished=finished)
    fresh = new_work_id()
    queue = open_queue(owner, url=url)
    work_id = submit_review(store, work, plan, work_id=fresh, enqueue=queue.enqueue())
    _hand_over(Submitted(work_id, new=work_id == fresh), queue, client)
    return Submitted(work_id, new=work_id == fresh)


def _hand_over(sent: Submitted, queue: WorkQueue, client: LLMClient | None) -> None:
    """Work recorded: the workers' job was written with it (in its transaction). In this process
    a thread runs it: new work, and work already open is handed over again (a thread already
    running it is kept; one lost with a restarted server is started again)."""
    if isinstance(queue, InProcessQueue):
        queue.submit(sent.work_id, client=client)


def submit_measurement(
    work: SweepWork, *, store: Store, owner: str = LOCAL_OWNER, url: str | Path | None = None,
    client: LLMClient | None = None,
) -> Submitted:  # fmt: skip
    """Record a Lab sweep as work and hand it to the queue (as ``submit_grid``; a finished sweep
    sent again runs again: its replies come from the store, free)."""
    fresh = new_work_id()
    queue = open_queue(owner, url=url)
    work_id = submit_sweep(store, work, work_id=fresh, enqueue=queue.enqueue())
    _hand_over(Submitted(work_id, new=work_id == fresh), queue, client)
    return Submitted(work_id, new=work_id == fresh)


def resume(work_id: str, *, owner: str = LOCAL_OWNER, url: str | Path | None = None) -> None:
    """Queue stopped or failed work again (only what is missing is asked; ``ConfigError`` when
    there is no such ended work)."""
    store = open_history(owner, url=url)
    queue = open_queue(owner, url=url)
    hook = queue.enqueue()
    if not resume_work(store, work_id, enqueue=hook):
        raise ConfigError(
            f"There is no stopped or failed work {work_id} to resume, or other work making the same calls "
            "is queued or running (stop it first: the same calls would be paid twice)."
        )
    if hook is None:  # the in-process queue: a thread runs it now
        queue.submit(work_id)


# ---- batches ---------------------------------------------------------------------------------


def batch_records(
    limit: int = 20, store: Store | None = None, owner: str = LOCAL_OWNER
) -> list[dict[str, Any]]:
    """The provider batches in the run store, newest first, as the progress views show them
    (state, n of m done, how long it has waited: until now while open, until its last update
    once it ended). Read from the store, so they outlive the tab or process that sent them."""
    store = store if store is not None else open_history(owner)
    now = datetime.now(UTC)
    out = []
    for record in store.batches(limit):
        open_ = record.state in ("submitted", "in_progress")
        waited = _waited(record.created_at, None if open_ else record.updated_at, now)
        out.append({**asdict(record), "open": open_, "waited": waited})
    return out


def _waited(start: str, end: str | None, now: datetime) -> str:
    try:
        began = datetime.fromisoformat(start)
        ended = datetime.fromisoformat(end) if end else now
    except ValueError:
        return "unknown"
    if began.tzinfo is None:
        began = began.replace(tzinfo=UTC)
    if ended.tzinfo is None:
        ended = ended.replace(tzinfo=UTC)
    seconds = max(0, int((ended - began).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {seconds:02d}s"


# ---- history -----------------------------------------------------------------------------------


def history_records(
    limit: int = 200, store: Store | None = None, owner: str = LOCAL_OWNER, *, offset: int = 0
) -> list[dict[str, Any]]:
    """One user's stored runs, newest first (``offset``: past that many newer ones), as ``history``
    prints them: each run's fields, and what it paid (``paid_usd``: 0 for a free engine, whose
    ``cost_usd`` is what the same tokens would cost)."""
    store = store if store is not None else open_history(owner)
    return [_history_record(run) for run in store.list(limit, offset=offset)]


def _history_record(run: StoredRun) -> dict[str, Any]:
    is_llm = describe_provider(run.provider).is_llm
    return {**asdict(run), "is_llm": is_llm, "paid_usd": run.cost_usd if is_llm else 0.0}
