"""The review grid as a kind of long work: documents × questions (columns), each document one job
whose finished trace gives its cells.

- ``ReviewWork``: the grid as plain data (the corpus by content hash, the columns, the method(s),
  the engine without its key, the answer key, the mode and budget), versioned;
- ``plan_grid``: the grid planned and estimated before any call; ``review``: its jobs run into
  cells through the store as call cache (the use case the screens and the CLI call, through
  ``rr_core.workbench``);
- ``PlannedReview``: the grid planned once where it runs; it records each cell as it arrives
  and skips the cells recorded before (a resumed grid asks only the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from rr_core.batching import BatchProgress
from rr_core.costs import Mode
from rr_core.engine import Engine, Guard, open_runner, spent_under, work_ledger
from rr_core.errors import ConfigError, LedgerError
from rr_core.jobs import Job
from rr_core.kinds.base import SPEC_VERSION, Ended, Kind, WorkContext, calls_key, check_spec
from rr_core.llm import LLMClient
from rr_core.review import (
    AnswerKey,
    Cell,
    Column,
    CorpusFile,
    ReviewPlan,
    StoredDocuments,
    agree_cells,
    cells_of,
    plan_review,
    prefix_sharing,
)
from rr_core.review.export import scores_json
from rr_core.review.grid import sample_rows
from rr_core.runs import CallEvent, RunTrace
from rr_core.settings import RunSettings
from rr_core.store import Store, WorkPart, open_store
from rr_core.tokens import TokenCounter, counter_for_model

REVIEW = "review"
PARTS_LEDGER = "review-parts"  # the ledger's name (before the work's id) of a grid run in parts


@dataclass(frozen=True, slots=True)
class ReviewWork:
    """A review grid as plain data: what any runner needs to run it (never an API key)."""

    kind: ClassVar[str] = REVIEW

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
    # A part's (one document of a grid run in parts): the name of the whole grid's ledger, which
    # all its parts share (their budget cap is the work's). Not in the spec: ``part`` sets it.
    ledger: str = ""

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
        check_spec(REVIEW, data, (f.name for f in fields(cls)))
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
        return calls_key(REVIEW, self.to_dict())

    @property
    def title(self) -> str:
        """How lists name it."""
        readable = sum(1 for f in self.files if f.ok)
        return f"Review · {readable} documents × {len(self.columns)} questions"

    def engine(self) -> Engine:
        """The engine it runs on (no key: the runner's configured key, or the one handed in)."""
        return Engine(self.provider, self.model, self.price_model, base_url=self.base_url)

    def plan(self, store: Store) -> ReviewPlan:
        """The grid, planned again from the document store (the same jobs, the same keys)."""
        engine = self.engine()
        counter = counter_for_model(engine.counting_model())
        return plan_grid(
            list(self.files), list(self.columns), self.settings, counter, compare=self.compare,
            compare_rows=self.compare_rows, window=engine.window(), store=store, tokenizer=engine.counting_model(),
        )  # fmt: skip

    def prepare(self, store: Store) -> PlannedReview:
        """The grid planned where it runs (once a run), ready to run."""
        return PlannedReview(self, self.plan(store))

    def parts(self) -> tuple[str, ...]:
        """Its documents (by content hash), each a part: a team's workers share a big grid."""
        return tuple(dict.fromkeys(f.sha256 for f in self.files if f.ok))

    def part(self, name: str) -> ReviewWork:
        """The grid cut down to one document (the comparison kept when the document is one of
        its rows in the whole grid), planned alone where its job runs."""
        mine = [f for f in self.files if f.ok and f.sha256 == name][:1]
        if not mine:
            raise ConfigError(f"this grid has no readable document {name[:12]}")
        compared = self.compare is not None and any(
            f.sha256 == name for f in sample_rows([f for f in self.files if f.ok], self.compare_rows)
        )
        return replace(
            self, files=tuple(mine), compare=self.compare if compared else None, compare_rows=1,
            ledger=PARTS_LEDGER,
        )  # fmt: skip

    def summarize(self, store: Store, work_id: str, parts: Sequence[WorkPart]) -> Ended:
        """The grid run in parts, once its last part has ended: its cells from the store, what
        each part paid summed, scored against the key over the whole grid; failed when a part
        failed (its reason), cancelled when one was stopped with cells missing."""
        plan = self.plan(store)
        cells = sum_up(plan, summary_cells(store, work_id, self, plan), scored=True)
        results = [p.result or {} for p in parts]
        failed = [p for p in parts if p.state == "failed"]
        stopped = any(p.state == "cancelled" for p in parts)
        total = (len(plan.documents) + len(plan.compare_documents)) * len(plan.columns)
        summary: dict[str, Any] = {
            "cells": cells.cells,
            "failed_cells": cells.failed,
            "paid_usd": round(sum(float(r.get("paid_usd") or 0.0) for r in results), 8),
            "possibly_billed": "; ".join(
                str(r["possibly_billed"]) for r in results if r.get("possibly_billed")
            ),
            "possibly_usd": round(sum(float(r.get("possibly_usd") or 0.0) for r in results), 6),
            "history_batch": next((r["history_batch"] for r in results if r.get("history_batch")), None),
            "save_error": next((r["save_error"] for r in results if r.get("save_error")), None),
            "scores": cells.scores,
            "parts": len(parts),
            "ledger": work_ledger(PARTS_LEDGER, work_id),  # what all its runs were billed: `work --show`
        }
        if failed:
            return Ended("failed", summary, failed[0].error or "a document of the grid failed")
        return Ended("cancelled" if stopped and cells.cells < total else "done", summary)


def review_resolver(counter: TokenCounter, store: Store | None = None) -> StoredDocuments:
    """Opens a review's documents from the document store (their stored readings)."""
    return StoredDocuments(store if store is not None else open_store(), counter)


def plan_grid(
    files: Sequence[CorpusFile],
    columns: Sequence[Column],
    settings: RunSettings,
    counter: TokenCounter,
    *,
    compare: RunSettings | None = None,
    compare_rows: int = 5,
    window: int | None = None,
    store: Store | None = None,
    tokenizer: str = "",
) -> ReviewPlan:
    """The grid planned and estimated before any call (``ConfigError`` when it cannot work)."""
    return plan_review(
        files, columns, settings, counter, review_resolver(counter, store),
        compare=compare, compare_rows=compare_rows, window=window, tokenizer=tokenizer,
    )  # fmt: skip


@dataclass(slots=True)
class ReviewResult:
    """What a grid run gave back: its cells (as they arrived), traces (when kept), what it paid
    and where its traces were saved."""

    cells: list[Cell]
    traces: list[RunTrace]
    batch: str | None = None  # the history's batch id; None when not saved
    save_error: str | None = None
    cancelled: bool = False
    paid_usd: float = 0.0  # what the run paid (stored replies and free engines pay nothing)
    # "up to $X possibly billed for N calls …" (see ``AskResult``), and that X.
    possibly_billed: str = ""
    possibly_usd: float = 0.0


# A grid's traces are saved to the history as they arrive, this many at a time (one transaction
# each), and then dropped: a run of any size holds at most this many.
SAVE_EVERY = 16


def review(
    plan: ReviewPlan,
    client: LLMClient,
    *,
    concurrency: int,
    key: AnswerKey | None = None,
    jobs: Sequence[Job] | None = None,
    max_usd: float | None = None,
    mode: Mode = "now",
    store: Store | None = None,
    on_cell: Callable[[Cell], None] | None = None,
    on_trace: Callable[[RunTrace], None] | None = None,
    on_event: Callable[[CallEvent], None] | None = None,
    on_batch: Callable[[BatchProgress], None] | None = None,
    guard: Guard | None = None,
    save: bool = True,
    keep: bool = True,
    work_id: str = "",
    ledger: str = "",
) -> ReviewResult:
    """Run the grid's jobs (or ``jobs``: a retry of some cells) through the run store as call
    cache: a grid stopped and started again pays only for what is missing, and a cell asked
    before is answered from the store. Each job's trace is handed to ``on_trace`` and then its
    cells to ``on_cell`` as the job finishes (a screen keeps them as they come); the traces
    are saved to the history as they arrive (``SAVE_EVERY`` at a time, one history batch).
    ``keep`` False: the result holds no cell and no trace (work that records its cells as
    they come: memory does not grow with the corpus). ``work_id``: the work this run is one
    run of (run again after a stop, or by the next runner): its replies are recorded under the
    work's own ledger, and ``max_usd`` is the work's, over all its runs (what its earlier runs
    paid counts inside it). ``ledger``: the ledger's name before the work's id (a part of a grid
    run in parts: the name all its parts share; else the plan's own)."""
    cache = store if store is not None else open_store()
    todo = list(jobs) if jobs is not None else list(plan.jobs)
    counter = counter_for_model(todo[0].token_model) if todo else None
    resolver = StoredDocuments(cache, counter) if counter is not None else None
    # A part's runners (other documents of the grid, on other workers) spend against its cap at once.
    shared = bool(ledger and work_id and max_usd is not None)
    ledger = work_ledger(ledger or plan.ledger_key(), work_id)
    spent = spent_under(cache, ledger) if work_id and max_usd is not None else 0.0
    cells: list[Cell] = []
    traces: list[RunTrace] = []
    unsaved: list[RunTrace] = []
    result = ReviewResult(cells, traces)

    def flush() -> None:
        if not (save and unsaved and result.save_error is None):
            unsaved.clear()
            return
        try:
            result.batch = cache.save_batch(unsaved, batch=result.batch)
        except (LedgerError, ConfigError, OSError) as exc:
            result.save_error = str(exc)
        unsaved.clear()

    cancelled = False
    with (
        open_runner(
            client,
            concurrency=concurrency,
            cache=cache,
            window=plan.window,
            max_usd=max_usd,
            spent_usd=spent,
            mode=mode,
            label=f"Review · {len(plan.documents)} documents × {len(plan.columns)} questions",
            ledger=ledger,
            # Per document and method, from the jobs sent (a retry's, a resumed grid's rest).
            cache_lone_prefixes=prefix_sharing(todo),
            shared_cap=shared,
        ) as runner,
        guard(runner) if guard is not None else nullcontext(),
    ):
        for item in runner.stream_jobs(todo, resolver=resolver, counter=counter):
            if isinstance(item, RunTrace):
                result.paid_usd += item.paid_usd
                if keep:
                    traces.append(item)
                if on_trace is not None:
                    on_trace(item)
                for cell in cells_of(item, todo[item.position], plan, key):
                    if keep:
                        cells.append(cell)
                    if on_cell is not None:
                        on_cell(cell)
                unsaved.append(item)
                if len(unsaved) >= SAVE_EVERY:
                    flush()
            elif isinstance(item, CallEvent) and on_event is not None:
                on_event(item)
            elif isinstance(item, BatchProgress) and on_batch is not None:
                on_batch(item)
        cancelled = runner.cancelled
        result.possibly_billed, result.possibly_usd = runner.possibly_billed_note, runner.possibly_billed_usd
    result.cancelled = cancelled
    if plan.compare is not None and keep:  # main and compare on the same rows: agreement counts
        result.cells = agree_cells(cells)
    flush()
    try:
        cache.account(ledger)
    except (LedgerError, ConfigError, OSError) as exc:
        result.save_error = result.save_error or str(exc)
    return result


def review_cells(store: Store, work_id: str) -> list[Cell]:
    """The cells a review's work has recorded so far, in the order they arrived."""
    return [Cell.from_dict(r) for r in store.work_results(work_id)]


def grid_cells(store: Store, work_id: str, work: ReviewWork) -> list[Cell]:
    """The recorded cells as the grid shows them: where a comparison ran on a row, agreement
    between the two methods counts in each cell's confidence (recorded as each cell arrived,
    before its twin was answered; counted here, once, on reading)."""
    cells = review_cells(store, work_id)
    return agree_cells(cells) if work.compare is not None else cells


def grid_results(store: Store, work_id: str, work: ReviewWork) -> tuple[list[Cell], list[RunTrace]]:
    """A grid's recorded cells (as ``grid_cells``) and the traces they rest on, each once, in
    the cells' order: two reads of the store (its results, then its runs), whatever its size."""
    cells = grid_cells(store, work_id, work)
    return cells, store.get_runs(c.run_id for c in cells if c.run_id)


def summary_cells(
    store: Store, work_id: str, work: ReviewWork, plan: ReviewPlan, part: str | None = None
) -> Iterator[Cell]:
    """The recorded cells (``part``: that part's) as ``grid_cells`` gives them, read a page at a
    time and without what no summary reads (their quotes, the model's raw text): a grid's end
    holds a page of cells and those the key marks, not the grid. The comparison's rows
    (agreement is counted between the two methods there) are held until the end, then given
    agreed."""
    sampled = set(plan.compare_documents) if work.compare is not None else set()
    held: list[Cell] = []
    for data in store.iter_work_results(work_id, part=part):
        cell = replace(Cell.from_dict(data), citations=(), raw="", support_reason="", pages_to_read=())
        if cell.document_sha256 in sampled:
            held.append(cell)
        else:
            yield cell
    yield from agree_cells(held) if held else ()


@dataclass(frozen=True, slots=True)
class SummedUp:
    """A grid's cells summed up in one pass: how many, how many failed (and the first failure's
    reason), the scores against the key (empty when not asked for)."""

    cells: int
    failed: int
    first_error: str | None
    scores: dict[str, Any]


def sum_up(plan: ReviewPlan, cells: Iterable[Cell], *, scored: bool) -> SummedUp:
    """``cells`` counted, and scored when ``scored``, going through them once."""
    count = failed = 0
    first_error: str | None = None

    def counted() -> Iterator[Cell]:
        nonlocal count, failed, first_error
        for cell in cells:
            count += 1
            if not cell.ok:
                failed += 1
                first_error = first_error or cell.error
            yield cell

    if scored:
        found = scores_json(plan, counted())
    else:
        found = {}
        for _ in counted():
            pass
    return SummedUp(count, failed, first_error, found)


@dataclass(frozen=True, slots=True)
class PlannedReview:
    """A grid planned where it runs (once a run)."""

    work: ReviewWork
    plan: ReviewPlan
    unit: str = "cells"

    @property
    def total(self) -> int:
        """Its cells (the comparison's rows included)."""
        return (len(self.plan.documents) + len(self.plan.compare_documents)) * len(self.plan.columns)

    def run(self, context: WorkContext) -> Ended:
        """Ask the cells not recorded yet (a document with any missing is asked again; its recorded
        cells stay), recording each document's cells together, in one transaction, once its last
        job has answered: a runner killed mid-write leaves none of that document's cells written,
        and the next runner asks them again from the call cache (paying nothing twice)."""
        work, plan, store, work_id, stop = self.work, self.plan, context.store, context.work_id, context.stop
        # The cells recorded (before this run, then by it), by document: a document's are let go
        # once it is recorded whole (a grid holds the documents in flight, not the corpus).
        kept: dict[str, set[str]] = {}
        done = 0
        for earlier in map(Cell.from_dict, context.recorded()):
            if earlier.ok:
                kept.setdefault(earlier.document_sha256, set()).add(earlier.key)
                done += 1
        todo = [
            job
            for job in plan.jobs
            if not _all_kept(job.meta, kept.get(str(job.meta.get("document")), set()))
        ]
        total = self.total
        context.progress(done, total)
        client = context.client
        if client is None:
            engine = work.engine()
            client = engine.client(counter_for_model(engine.counting_model()))
        # Per document: how many of its cells are still to come from this run's jobs, and those
        # that came, held until the last one has.
        coming: dict[str, int] = {}
        for job in todo:
            listed = job.meta.get("columns")
            sha = str(job.meta.get("document"))
            coming[sha] = coming.get(sha, 0) + (len(listed) if isinstance(listed, list) else 0)
        held: dict[str, list[Cell]] = {}
        kept = {sha: keys for sha, keys in kept.items() if sha in coming}

        def record(sha: str) -> None:
            nonlocal done
            mine = kept.pop(sha, set())  # the document is done with: its keys are not looked up again
            cells = [c for c in held.pop(sha, []) if c.key not in mine]
            if not cells:
                return
            context.record([(c.key, c.to_dict()) for c in cells])
            done += len(cells)
            context.progress(done, total)

        def keep(cell: Cell) -> None:
            sha = cell.document_sha256
            coming[sha] = coming.get(sha, 1) - 1
            # Stopped before it was sent: left for a resumed run to ask. Recorded before this run
            # (its document is asked again for its other columns): the recorded answer stays,
            # with its run and its citations.
            if not cell.not_asked and cell.key not in kept.get(sha, ()):
                held.setdefault(sha, []).append(cell)
            if coming[sha] <= 0:
                record(sha)
                stop.check()  # a stop asked for while the document was answered: nothing further is sent

        result = review(
            plan, client, concurrency=work.concurrency, key=work.key, jobs=todo, max_usd=work.max_usd,
            work_id=work_id,
            mode=work.mode, store=store, on_cell=keep, guard=stop.guard, keep=False, ledger=work.ledger,
        ) if todo else None  # fmt: skip
        for sha in list(held):  # a document whose last job gave no cell (should not be): kept all the same
            record(sha)
        # A part sums up its own cells (the grid's are summed up by ``summarize``).
        cells = summary_cells(store, work_id, work, plan, part=context.part or None)
        ended = sum_up(plan, cells, scored=not work.ledger)
        summary: dict[str, Any] = {
            "cells": ended.cells,
            "failed_cells": ended.failed,
            "paid_usd": round(result.paid_usd, 8) if result else 0.0,
            "possibly_billed": result.possibly_billed if result else "",
            "possibly_usd": round(result.possibly_usd, 6) if result else 0.0,
            "history_batch": result.batch if result else None,
            "save_error": result.save_error if result else None,
            "scores": ended.scores,
            "ledger": work_ledger(work.ledger or plan.ledger_key(), work_id),  # all its runs': `work --show`
        }
        stopped = bool(result and result.cancelled) and ended.cells < total
        if stopped and stop.left:  # the runner is going away: the next one takes the work up
            return Ended("queued", done=ended.cells)
        error = (
            (ended.first_error or "every cell failed")
            if ended.failed and ended.failed == ended.cells
            else None
        )
        return Ended("failed" if error else "cancelled" if stopped else "done", summary, error)


def _all_kept(meta: Mapping[str, Any], kept: set[str]) -> bool:
    columns = meta.get("columns")
    if not isinstance(columns, list):
        return False
    return all(f"{meta.get('role')}:{meta.get('document')}:{c}" in kept for c in columns)


KIND = Kind(REVIEW, ReviewWork.from_dict)
