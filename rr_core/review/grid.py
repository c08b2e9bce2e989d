"""The review grid: documents × columns, planned as jobs, estimated before any call, run into cells.

A grid runs one method over every document (R&R with several questions by default: one
retrieval pass over the whole document for all the columns, then one short answer call per
column), and optionally a second method over a sample of the documents, to compare. Each
(document, method) is a ``Job`` (plain data: the document by content hash), planned where it
runs; its trace gives one ``Cell`` per column: the typed answer, "not stated", the citations
with their quote checks, the cell's share of the cost, and, where an answer key is given,
right or wrong. Nothing here sends a call: ``rr_core.workbench.review`` runs the jobs.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from rr_core.confidence import with_agreement
from rr_core.costs import Cost, Mode
from rr_core.csvtable import read_table
from rr_core.errors import ConfigError, RRError
from rr_core.jobs import Job, Resolver, plan_job
from rr_core.llm.base import min_cached_prefix
from rr_core.methods import get_method
from rr_core.metrics import fuzzy_match
from rr_core.plans import Call, Citation, Outcome, Plan, absence_words, estimate_calls, expected_cache
from rr_core.review.columns import (
    AnswerType,
    Column,
    Typed,
    read_date,
    read_month,
    read_number,
    typed_answer,
)
from rr_core.review.corpus import CorpusFile
from rr_core.settings import RunSettings
from rr_core.tokens import TokenCounter
from rr_core.traces import RunTrace

MAIN, COMPARE = "main", "compare"  # a job's role: the grid's method, or the comparison's
ALONE_SAMPLE = 3  # documents the "each question alone" figure is measured on


# ---- the answer key ---------------------------------------------------------------------------------


def document_key(name: str) -> str:
    """How a document is matched with the answer key: its file name, case and spaces aside."""
    return " ".join(PurePosixPath(name.replace("\\", "/")).name.lower().split())


def question_key(question: str) -> str:
    """How a question is matched with the answer key."""
    return " ".join(question.lower().split())


@dataclass(frozen=True, slots=True)
class AnswerKey:
    """Known answers by (document file name, question); each a tuple of accepted answers."""

    answers: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As JSON: the name and the rows."""
        return {"name": self.name, "rows": [[d, q, list(a)] for (d, q), a in self.answers.items()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerKey:
        """Read ``to_dict``'s output."""
        return cls(
            {(str(d), str(q)): tuple(a) for d, q, a in data.get("rows", [])}, str(data.get("name", ""))
        )

    def lookup(self, document: str, question: str) -> tuple[str, ...] | None:
        """The accepted answers for a cell, or None where the key says nothing of it."""
        return self.answers.get((document_key(document), question_key(question)))

    def __len__(self) -> int:
        return len(self.answers)


# The header names an answer key's columns may go by (lower case, "_" read as a space).
KEY_ALIASES = {
    "document": "document", "file": "document", "file name": "document", "filename": "document",
    "question": "question", "questions": "question",
    "answers": "answers", "answer": "answers", "accepted answers": "answers",
}  # fmt: skip


def parse_answer_key(text: str, *, name: str = "answers") -> AnswerKey:
    """An answer key from CSV: ``document,question,answers`` (accepted answers separated by
    ``|`` or ``;``; "not stated" or an empty cell: the document does not say; the delimiter a
    comma, a semicolon or a tab, as the header is written). ``ConfigError`` names the line at
    fault: an unknown header, a stray value, a quote left open."""
    table = read_table(
        text, name=name, aliases=KEY_ALIASES, required=("document", "question", "answers"),
        expected="a header document,question,answers",
    )  # fmt: skip
    if table is None:
        first = next((line.strip() for line in text.lstrip("\ufeff").splitlines() if line.strip()), "")
        if not first:
            raise ConfigError(f"{name} holds no answer.")
        raise ConfigError(
            f"{name}, line 1: the header needs document, question and answers (found {first[:80]!r})."
        )
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for row in table.rows:
        if not row.get("document") or not row.get("question"):
            continue
        accepted = tuple(a.strip() for a in re.split(r"[|;]", row.get("answers")) if a.strip()) or (
            "not stated",
        )
        out[(document_key(row.get("document")), question_key(row.get("question")))] = accepted
    if not out:
        raise ConfigError(f"{name} holds no answer.")
    return AnswerKey(out, name)


_PARTIAL_DATE = re.compile(r"^(\d{1,2})/\[\]/(\d{2}|\d{4})$")  # CUAD's "04/[]/2013": the day not given


def is_right(
    column: Column, typed: Typed, answer: str, stated: bool, accepted: Sequence[str], *, absent_by: str = ""
) -> bool | None:
    """Whether a cell's answer is one the key accepts, compared as the column's type; None when
    the cell is unanswered: nothing was found ("Not found" is not "No", nor "not stated"), or a
    yes/no column without an answer. A model's claim that a text is not stated is scored, and a
    reviewer's "not in the document" on any column (a person read it: on a yes/no column it is a
    "No")."""
    gold_not_stated = [a for a in accepted if a.strip().lower().rstrip(".") in ("not stated", "n/a", "none")]
    if not stated and not (
        absent_by == "reviewer" or absent_by == "model" and column.type is not AnswerType.YES_NO
    ):
        return None
    if column.type is AnswerType.YES_NO:
        wanted = {typed_answer(column, a, stated=a not in gold_not_stated).value for a in accepted}
        return typed.ok and typed.value in wanted
    if not stated:
        return bool(gold_not_stated)
    if column.type is AnswerType.DATE:
        mine = read_date(answer)
        month = read_month(answer)  # also when the answer gives no day (a partial key accepts it)
        for a in accepted:
            partial = _PARTIAL_DATE.match(a.strip())
            if partial:
                year = int(partial.group(2))
                year = year + (2000 if year < 50 else 1900) if year < 100 else year
                if month == (int(partial.group(1)), year):
                    return True
            elif mine is not None and read_date(a) == mine:
                return True
        return False
    if column.type in (AnswerType.AMOUNT, AnswerType.NUMBER):
        mine_n = read_number(answer)
        golds = [g for g in (read_number(a) for a in accepted) if g is not None]
        return mine_n is not None and any(abs(mine_n - g) <= 0.005 * max(abs(g), 1e-9) for g in golds)
    if column.type is AnswerType.CHOICE:
        return typed.ok and typed.value.lower() in {a.lower() for a in accepted}
    return bool(fuzzy_match(answer, accepted))


# ---- the plan ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReviewEstimate:
    """What the grid is expected to cost, before any call."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Cost = field(default_factory=Cost)  # sent now, no prompt cache: the ceiling
    cached_cost: Cost = field(default_factory=Cost)  # sent now, the prompt cache as expected
    batch_cost: Cost = field(default_factory=Cost)  # in provider batches, the prompt cache as expected
    cacheable_tokens: int = 0  # input tokens expected to be read from the prompt cache
    # Input tokens of the main method over the sample documents, as planned, and asked one
    # question at a time (its ratio: what asking all columns in one pass saves).
    sample_documents: int = 0
    sample_input_tokens: int = 0
    alone_input_tokens: int = 0

    def usd(self, mode: Mode = "now", *, cached: bool = False) -> float:
        """The estimate in dollars: ``now`` (no cache: the ceiling; ``cached``: with the prompt
        cache) or ``batch`` (with the cache)."""
        if mode == "batch":
            return self.batch_cost.total_usd
        return (self.cached_cost if cached else self.cost).total_usd

    @property
    def alone_ratio(self) -> float | None:
        """Input tokens of the grid's pass over those of asking each column alone (sample)."""
        return self.sample_input_tokens / self.alone_input_tokens if self.alone_input_tokens else None

    @property
    def cacheable_share(self) -> float:
        """The share of input tokens expected from the prompt cache."""
        return self.cacheable_tokens / self.input_tokens if self.input_tokens else 0.0


@dataclass(frozen=True, slots=True)
class ReviewPlan:
    """A grid before it runs: its documents, columns, method(s), jobs and estimate."""

    columns: tuple[Column, ...]
    documents: tuple[CorpusFile, ...]  # the readable ones, in corpus order
    settings: RunSettings
    jobs: tuple[Job, ...]
    estimate: ReviewEstimate
    compare: RunSettings | None = None
    compare_documents: tuple[str, ...] = ()  # sha256 of the rows the comparison runs on
    too_long: tuple[str, ...] = ()  # documents whose longest prompt is over the context window
    window: int | None = None

    @property
    def roles(self) -> tuple[str, ...]:
        """The grid's method, then the comparison's where there is one."""
        return (MAIN, COMPARE) if self.compare is not None else (MAIN,)

    def settings_of(self, role: str) -> RunSettings:
        """The settings a role runs with."""
        if role == COMPARE and self.compare is not None:
            return self.compare
        return self.settings

    def method_label(self, role: str) -> str:
        """A role's method as the screen names it (with the settings it reads)."""
        settings = self.settings_of(role)
        method = get_method(settings.method)
        described = method.describe(settings)
        return method.label + (f" ({described})" if described else "")

    def ledger_key(self) -> str:
        """The grid's own name in the run store (its replies recorded under it until written)."""
        digest = hashlib.sha256()
        for job in self.jobs:
            digest.update(repr(job.to_dict()).encode())
        return "review-" + digest.hexdigest()[:24]

    def document(self, sha256: str) -> CorpusFile | None:
        """The corpus file with this hash."""
        return next((d for d in self.documents if d.sha256 == sha256), None)


def _jobs_for(
    role: str, files: Sequence[CorpusFile], columns: Sequence[Column], settings: RunSettings, tokenizer: str
) -> list[Job]:
    method = get_method(settings.method)
    together = method.several_questions and len(columns) > 1
    groups = [list(range(len(columns)))] if together else [[i] for i in range(len(columns))]
    jobs = []
    for f in files:
        for group in groups:
            jobs.append(
                Job(
                    id=f"{role}:{f.sha256[:16]}:{','.join(map(str, group))}",
                    source=f.ref,
                    settings=settings,
                    questions=tuple(columns[i].prompt for i in group),
                    tokenizer=tokenizer,
                    meta={"role": role, "document": f.sha256, "columns": group},
                )
            )
    return jobs


def sample_rows(files: Sequence[CorpusFile], rows: int) -> list[CorpusFile]:
    """The rows a comparison runs on: ``rows`` of them, spread over the corpus (the same ones
    for the same corpus), in corpus order."""
    if rows <= 0 or not files:
        return []
    if rows >= len(files):
        return list(files)
    step = len(files) / rows
    return [files[int(i * step)] for i in range(rows)]


def plan_review(
    files: Sequence[CorpusFile],
    columns: Sequence[Column],
    settings: RunSettings,
    counter: TokenCounter,
    resolver: Resolver,
    *,
    compare: RunSettings | None = None,
    compare_rows: int = 5,
    window: int | None = None,
    tokenizer: str = "",
    on_document: Callable[[int, int], None] | None = None,
) -> ReviewPlan:
    """Plan the grid (each document opened through ``resolver``, planned and dropped in turn) and
    estimate it: calls, tokens, dollars now and in batch. ``ConfigError`` for a grid that
    cannot work (no document read, no column, a method that cannot plan)."""
    readable = [f for f in files if f.ok]
    if not readable:
        raise ConfigError("No document of the corpus could be read: add readable files.")
    if not columns:
        raise ConfigError("Add at least one question (column).")
    jobs = _jobs_for(MAIN, readable, columns, settings, tokenizer)
    compared: list[CorpusFile] = []
    if compare is not None:
        compared = sample_rows(readable, compare_rows)
        jobs += _jobs_for(COMPARE, compared, columns, compare, tokenizer)
    calls = input_tokens = output_tokens = cacheable = 0
    cost, cached_cost, batch_cost = Cost(), Cost(), Cost()
    too_long: list[str] = []
    by_document: dict[str, list[Job]] = {}
    for job in jobs:
        by_document.setdefault(str(job.meta["document"]), []).append(job)
    names = {f.sha256: f.name for f in readable}
    sample = {f.sha256 for f in readable[:ALONE_SAMPLE]}
    sample_tokens = alone_tokens = 0
    sharing = prefix_sharing(jobs)
    for number, (sha, its_jobs) in enumerate(by_document.items(), start=1):
        material = resolver.open(its_jobs[0].source)
        by_role: dict[str, tuple[RunSettings, list[Call], bool]] = {}
        for job in its_jobs:
            plan = _plan(job, material, counter)
            e = plan.estimate
            calls += e.calls
            input_tokens += e.input_tokens
            output_tokens += e.output_tokens
            cost = cost + e.cost
            by_role.setdefault(str(job.meta["role"]), (job.settings, [], sharing(job)))[1].extend(plan.calls)
            if window and plan.largest_prompt > window:
                too_long.append(names[sha])  # as the corpus names it (its folder or ZIP kept)
            if sha in sample and job.meta["role"] == MAIN:
                sample_tokens += e.input_tokens
                alone_tokens += sum(
                    _plan(_alone(job, q), material, counter).estimate.input_tokens for q in job.questions
                ) if len(job.questions) > 1 else e.input_tokens  # fmt: skip
        # The prompt cache as the grid's runner uses it: the document's runs of one method one
        # after another (a prefix they share written once, then read), lone prefixes marked
        # only where the document has several runs of the method (``prefix_sharing``).
        for role_settings, role_calls, lone in by_role.values():
            # Which calls read and write the cache: the same now and in batch (worked out once).
            expected = expected_cache(
                role_calls, min_tokens=min_cached_prefix(role_settings.model), lone_prefixes=lone
            )
            now_cached = estimate_calls(role_calls, role_settings, caching=True, expected=expected)
            cached_cost = cached_cost + now_cached.cost
            batch_cost = (
                batch_cost
                + estimate_calls(
                    role_calls, role_settings, caching=True, mode="batch", expected=expected
                ).cost
            )
            cacheable += now_cached.cached_tokens
        if on_document is not None:
            on_document(number, len(by_document))
    estimate = ReviewEstimate(
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        cached_cost=cached_cost,
        batch_cost=batch_cost,
        cacheable_tokens=cacheable,
        sample_documents=len(sample),
        sample_input_tokens=sample_tokens,
        alone_input_tokens=alone_tokens,
    )
    return ReviewPlan(
        columns=tuple(columns),
        documents=tuple(readable),
        settings=settings,
        jobs=tuple(jobs),
        estimate=estimate,
        compare=compare,
        compare_documents=tuple(f.sha256 for f in compared),
        too_long=tuple(dict.fromkeys(too_long)),
        window=window,
    )


def prefix_sharing(jobs: Sequence[Job]) -> Callable[[Job | None], bool]:
    """Whether a job's calls should mark for the prompt cache a prefix no other call of their
    run shares: only when its document has several runs of its method among ``jobs`` (a method
    that answers one question at a time, several columns: each run's prompt can start with the
    document, the first run writes it and the others read it). Otherwise no call would read it
    (R&R's one retrieval pass over a document), and writing it costs more (Anthropic: 1.25x)."""
    runs = Counter(_run_place(job) for job in jobs)

    def shares(job: Job | None) -> bool:
        return job is not None and runs.get(_run_place(job), 0) > 1

    return shares


def _run_place(job: Job) -> tuple[str, str]:
    return str(job.meta.get("role")), str(job.meta.get("document"))


def _plan(job: Job, material: Any, counter: TokenCounter) -> Plan:
    try:
        return plan_job(job, material, counter)
    except RRError as exc:
        raise ConfigError(f"{material.document.name}: {exc}") from None


def _alone(job: Job, question: str) -> Job:
    return Job(
        id=job.id, source=job.source, settings=job.settings, questions=(question,), tokenizer=job.tokenizer
    )


def retry_jobs(plan: ReviewPlan, cells: Sequence[Cell]) -> list[Job]:
    """Jobs that ask the given (failed) cells again, each alone."""
    jobs = []
    for cell in cells:
        f = plan.document(cell.document_sha256)
        if f is None:
            continue
        column = plan.columns[cell.column]
        jobs.append(
            Job(
                id=f"{cell.role}:{f.sha256[:16]}:{cell.column}:retry",
                source=f.ref,
                settings=plan.settings_of(cell.role),
                questions=(column.prompt,),
                tokenizer=plan.jobs[0].tokenizer if plan.jobs else "",
                meta={"role": cell.role, "document": f.sha256, "columns": [cell.column]},
            )
        )
    return jobs


# ---- cells ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One answer of the grid: which document and question it answers, by which method, how it
    was checked, and what it cost (its share of the calls it rests on)."""

    document: str
    document_sha256: str
    column: int
    question: str
    type: str
    role: str
    method: str
    answer: str  # the typed value, else the answer as given, else "Not found" (pages to read) or the model's claim
    raw: str  # the answer as the model gave it
    typed: bool  # the answer could be read as the column's type
    found: bool  # False: nothing found (``absent_by`` "reader") or the model says it is not stated
    citations: tuple[Citation, ...] = ()
    correct: bool | None = None  # against the answer key; None: no known answer
    accepted: tuple[str, ...] = ()  # the answer key's accepted answers
    cost_usd: float = 0.0  # the cell's share of its calls at the run's price (paid or not)
    paid_usd: float = 0.0  # of which paid by this run (not a stored reply, not a free engine)
    price_known: bool = True
    is_llm: bool = True
    error: str | None = None
    error_kind: str | None = None  # the error's class ("RunCancelled": stopped before it was asked)
    run_id: str = ""
    # Triage, as on Outcome: who says the answer is absent, whether the quote supports the answer,
    # and how far to trust it (high | check | none), with a score and a reason.
    pages_to_read: tuple[int, ...] = ()
    absent_by: str = ""
    support: str = "unchecked"
    support_reason: str = ""
    confidence: str = ""
    score: float | None = None
    confidence_reason: str = ""
    # A reviewer's decision, where one was made (``rr_core.review.decisions``): who, when, what.
    reviewed_by: str = ""
    reviewed_at: str = ""
    decision: str = ""  # accepted | corrected | absent

    @property
    def not_asked(self) -> bool:
        """Stopped before its calls were sent (not a failure of the method or the provider)."""
        return self.error_kind == "RunCancelled"

    @property
    def key(self) -> str:
        """The cell's place in the grid: method role, document, column."""
        return f"{self.role}:{self.document_sha256}:{self.column}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        """Read ``to_dict``'s output."""
        fields = Citation.__dataclass_fields__
        return cls(
            document=str(data["document"]), document_sha256=str(data["document_sha256"]), column=int(data["column"]),
            question=str(data["question"]), type=str(data["type"]), role=str(data["role"]), method=str(data["method"]),
            answer=str(data["answer"]), raw=str(data.get("answer_as_given") or ""), typed=bool(data.get("read_as_type")),
            found=bool(data["found"]),
            citations=tuple(Citation(**{k: v for k, v in c.items() if k in fields}) for c in data.get("citations") or ()),
            correct=data.get("correct"), accepted=tuple(data.get("accepted_answers") or ()),
            cost_usd=float(data.get("cost_usd") or 0.0), paid_usd=float(data.get("paid_usd") or 0.0),
            price_known=bool(data.get("price_known", True)), is_llm=bool(data.get("engine_is_llm", True)),
            error=data.get("error"), error_kind=data.get("error_kind"), run_id=str(data.get("run_id") or ""),
            pages_to_read=tuple(int(p) for p in data.get("pages_to_read") or ()),
            absent_by=str(data.get("absent_by") or ""), support=str(data.get("support") or "unchecked"),
            support_reason=str(data.get("support_reason") or ""), confidence=str(data.get("confidence") or ""),
            score=None if data.get("score") is None else float(data["score"]),
            confidence_reason=str(data.get("confidence_reason") or ""),
            reviewed_by=str(data.get("reviewed_by") or ""), reviewed_at=str(data.get("reviewed_at") or ""),
            decision=str(data.get("decision") or ""),
        )  # fmt: skip

    @property
    def ok(self) -> bool:
        """Answered (stated or not), not failed."""
        return self.error is None

    @property
    def status(self) -> str:
        """How far the cell was checked: right/wrong (against the key), else the quote check."""
        if self.error:
            return "failed"
        if self.correct is True:
            return "right"
        if self.correct is False:
            return "wrong"
        if not self.found:
            return "not found" if self.absent_by != "model" else "the model says not stated"
        # Where the quote stands is provenance, never approval of the answer.
        located = [c for c in self.citations if c.quote_check == "verified"]
        if located:
            return f"quote located on p. {located[0].page} (not checked against a known answer)"
        near = [c for c in self.citations if c.quote_check == "approximate"]
        if near:
            return f"quote located on p. {near[0].page} with small differences (not checked against a known answer)"
        return "quote not located on its page" if self.citations else "no citation"

    def to_dict(self) -> dict[str, Any]:
        """The CLI's and the JSON export's shape."""
        return {
            "document": self.document,
            "document_sha256": self.document_sha256,
            "column": self.column,
            "question": self.question,
            "type": self.type,
            "method": self.method,
            "role": self.role,
            "answer": self.answer,
            "answer_as_given": self.raw,
            "read_as_type": self.typed,
            "found": self.found,
            "citations": [
                {"page": c.page, "page_label": c.page_label, "quote": c.quote, "quote_check": c.quote_check}
                for c in self.citations
            ],
            "correct": self.correct,
            "accepted_answers": list(self.accepted),
            "cost_usd": round(self.cost_usd, 8),
            "paid_usd": round(self.paid_usd, 8),
            "price_known": self.price_known,
            "engine_is_llm": self.is_llm,
            "error": self.error,
            "error_kind": self.error_kind,
            "run_id": self.run_id,
            "pages_to_read": list(self.pages_to_read),
            "absent_by": self.absent_by,
            "support": self.support,
            "support_reason": self.support_reason,
            "confidence": self.confidence,
            "score": self.score,
            "confidence_reason": self.confidence_reason,
            "decision": self.decision,
            "reviewed_by": self.reviewed_by,
            "reviewed_at": self.reviewed_at,
        }


def cells_of(trace: RunTrace, job: Job, plan: ReviewPlan, key: AnswerKey | None = None) -> list[Cell]:
    """The cells a job's trace answers, one per column it asked."""
    role = str(job.meta.get("role", MAIN))
    listed = job.meta.get("columns")
    columns = [int(c) for c in listed] if isinstance(listed, list) else []
    f = plan.document(str(job.meta.get("document", "")))
    name = f.name if f is not None else trace.document
    shares = _cost_shares(trace, len(columns))
    out = []
    for position, index in enumerate(columns):
        column = plan.columns[index]
        outcome = trace.outcomes[position] if position < len(trace.outcomes) else None
        error = trace.error or (outcome.error if outcome is not None else None)
        if outcome is None and error is None:
            error = "The method gave no answer for this question."
        stated = outcome is not None and outcome.stated
        raw = (outcome.answer or "") if outcome is not None else ""
        absent_by = (outcome.absent_by if outcome is not None else "") or (
            "reader" if not trace.is_llm else "model"
        )
        to_read = tuple(outcome.pages_to_read) if outcome is not None else ()
        typed = typed_answer(column, raw, stated=stated)
        if (
            stated
            and column.type is AnswerType.YES_NO
            and typed.value == "No"
            and not (outcome and outcome.citations)
        ):
            # A "No" is an answer only with the clause that says so; without one, nothing was found.
            stated, typed = False, typed_answer(column, "", stated=False)
        if error is not None:
            shown = ""
        elif not stated:
            shown = absence_words(absent_by, to_read)
        else:
            shown = typed.shown
        accepted = key.lookup(name, column.question) if key is not None else None
        correct = (
            is_right(column, typed, raw, stated, accepted, absent_by=absent_by)
            if accepted is not None and error is None
            else None
        )
        cost, paid = shares[position]
        out.append(
            Cell(
                document=name,
                document_sha256=trace.document_sha256,
                column=index,
                question=column.question,
                type=column.type.value,
                role=role,
                method=plan.method_label(role),
                answer=shown,
                raw=raw,
                typed=typed.ok,
                found=stated,
                citations=tuple(outcome.citations) if outcome is not None and stated else (),
                correct=correct,
                accepted=tuple(accepted or ()),
                cost_usd=cost,
                paid_usd=paid,
                price_known=trace.price_known,
                is_llm=trace.is_llm,
                error=error,
                error_kind=(trace.error_kind or "Error") if error is not None and trace.error else None,
                run_id=trace.run_id,
                pages_to_read=to_read if error is None and not stated else (),
                absent_by=absent_by if error is None and not stated else "",
                support=outcome.support if outcome is not None and stated else "unchecked",
                support_reason=outcome.support_reason if outcome is not None and stated else "",
                confidence=_confidence(outcome, stated, error),
                score=(outcome.score if outcome is not None and stated else 0.0) if error is None else None,
                confidence_reason=(
                    outcome.confidence_reason
                    if outcome is not None and stated
                    else absence_words(absent_by, to_read)
                )
                if error is None
                else "",
            )
        )
    return out


def _confidence(outcome: Outcome | None, stated: bool, error: str | None) -> str:
    """A cell's band: the outcome's when it answered, ``none`` when nothing was found, "" when it failed."""
    if error is not None:
        return ""
    if outcome is None or not stated:
        return "none"
    return outcome.confidence or "check"


def agree_cells(cells: Sequence[Cell]) -> list[Cell]:
    """The cells with agreement counted where the grid's method and the comparison both
    answered a (document, question): each one's confidence and score moved by whether the
    other gave the same answer (``rr_core.confidence.with_agreement``), with "<method> says X"
    as the reason when they differ. Other cells are returned as they are."""
    by = {(c.role, c.document_sha256, c.column): c for c in cells}
    out = []
    for cell in cells:
        other_role = COMPARE if cell.role == MAIN else MAIN
        other = by.get((other_role, cell.document_sha256, cell.column))
        if (
            other is None
            or cell.error
            or other.error
            or not cell.found
            or cell.confidence not in ("high", "check")
        ):
            out.append(cell)
            continue
        agrees = other.found and bool(fuzzy_match(cell.answer, [other.answer]))
        said = other.answer if other.found else absence_words(other.absent_by).lower()
        band, score, reason = with_agreement(
            cell.score, cell.support, cell.confidence_reason, agrees=agrees, label=other.method, said=said
        )
        out.append(replace(cell, confidence=band, score=score, confidence_reason=reason))
    return out


def _cost_shares(trace: RunTrace, questions: int) -> list[tuple[float, float]]:
    """Each question's share of the trace's calls: its own calls, and an even share of the
    calls all its questions rest on (the retrieval pass). (cost at the run's price, paid)."""
    if questions <= 0:
        return []
    cost = [0.0] * questions
    paid = [0.0] * questions
    for call in trace.calls:
        call_paid = call.cost_usd if trace.is_llm and not call.cached else 0.0
        if call.question is not None and 0 <= call.question < questions:
            cost[call.question] += call.cost_usd
            paid[call.question] += call_paid
        else:
            for i in range(questions):
                cost[i] += call.cost_usd / questions
                paid[i] += call_paid / questions
    return list(zip(cost, paid, strict=True))


# ---- scores ---------------------------------------------------------------------------------------------


COVERAGES = (0.5, 0.8, 1.0)  # precision at these shares of the cells, ranked by score


@dataclass(frozen=True, slots=True)
class Score:
    """How one column (or all) by one method does against the answer key: what it answered,
    how much of that was right, and what always giving the commonest key answer would score."""

    role: str
    method: str
    column: int | None  # None: every column
    question: str
    right: int
    marked: int  # cells the key has an answer for (and that did not fail)
    cells: int
    failed: int
    not_stated: int  # cells without an answer (not found, or the model says not stated)
    answered: int = 0  # marked cells with an answer (right or wrong)
    base_right: int = 0  # marked cells the column's commonest key answer gets right
    high: int = 0  # marked cells in the ``high`` band
    high_right: int = 0
    at_coverage: tuple[tuple[float, float | None], ...] = ()  # (coverage, precision) by score rank

    @property
    def accuracy(self) -> float | None:
        """Right over marked; None when the key marks none."""
        return self.right / self.marked if self.marked else None

    @property
    def precision(self) -> float | None:
        """Right over answered."""
        return self.right / self.answered if self.answered else None

    @property
    def coverage(self) -> float | None:
        """Answered over marked cells."""
        return self.answered / self.marked if self.marked else None

    @property
    def base_rate(self) -> float | None:
        """The accuracy of always giving the column's most common key answer."""
        return self.base_right / self.marked if self.marked else None

    @property
    def high_precision(self) -> float | None:
        """Right over the ``high`` band's cells."""
        return self.high_right / self.high if self.high else None

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""

        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {
            "method": self.method,
            "role": self.role,
            "column": self.column,
            "question": self.question,
            "right": self.right,
            "marked": self.marked,
            "accuracy": r(self.accuracy),
            "answered": self.answered,
            "precision": r(self.precision),
            "coverage": r(self.coverage),
            "base_rate": r(self.base_rate),
            "high": self.high,
            "high_share": r(self.high / self.marked if self.marked else None),
            "high_precision": r(self.high_precision),
            "precision_at_coverage": {f"{c:.0%}": r(p) for c, p in self.at_coverage},
            "cells": self.cells,
            "failed": self.failed,
            "not_stated": self.not_stated,
        }


def _key_answer(cell: Cell, column: Column | None) -> str:
    """A cell's key answer as the base rate counts it: a yes/no column's Yes or No, else the
    first accepted answer, in lower case."""
    first = cell.accepted[0] if cell.accepted else ""
    if column is not None and column.type is AnswerType.YES_NO:
        gold_not = first.strip().lower().rstrip(".") in ("not stated", "n/a", "none")
        return typed_answer(column, first, stated=not gold_not).value
    return " ".join(first.lower().split())


def base_right(cells: Sequence[Cell], column: Column | None = None) -> int:
    """Marked cells that always giving the commonest key answer among ``cells`` gets right
    (a yes/no key compared as Yes or No)."""
    counts = Counter(_key_answer(c, column) for c in cells)
    return counts.most_common(1)[0][1] if counts else 0


def precision_at(cells: Sequence[Cell], coverage: float) -> float | None:
    """Precision of the best-scored ``coverage`` share of ``cells`` (answered ones ranked by
    score, highest first; equal scores in the grid's order of document and column, so the
    figure does not depend on the order the cells arrived in); None when fewer cells than that
    were answered."""
    ranked = sorted(
        (c for c in cells if c.found), key=lambda c: (-(c.score or 0.0), c.document_sha256, c.column)
    )
    wanted = max(1, round(coverage * len(cells))) if cells else 0
    if not wanted or len(ranked) < wanted:
        return None
    return sum(1 for c in ranked[:wanted] if c.correct is True) / wanted


@dataclass(slots=True)
class ScoreTally:
    """One score's cells taken one at a time: the counts of every cell, and only the cells the
    key marks kept (what the score's precision and base rate are read from). A grid's end sums
    up its cells so without holding those the key does not mark."""

    cells: int = 0
    failed: int = 0
    not_stated: int = 0
    marked: list[Cell] = field(default_factory=list)

    def add(self, cell: Cell) -> None:
        """Count one cell."""
        self.cells += 1
        if cell.error is not None:
            self.failed += 1
        elif not cell.found:
            self.not_stated += 1
        if cell.error is None and cell.accepted:
            self.marked.append(cell)

    def score(
        self, *, columns: Sequence[Column] = (), role: str = MAIN, method: str = "", column: int | None = None,
        question: str = "all columns",
    ) -> Score:  # fmt: skip
        """The score of the cells counted (as ``score_cells``)."""
        marked = self.marked
        by_column: dict[int, list[Cell]] = {}
        for c in marked:
            by_column.setdefault(c.column, []).append(c)
        base = sum(
            base_right(these, columns[i] if 0 <= i < len(columns) else None) for i, these in by_column.items()
        )
        high = [c for c in marked if c.confidence == "high"]
        return Score(
            role=role,
            method=method,
            column=column,
            question=question,
            right=sum(1 for c in marked if c.correct is True),
            marked=len(marked),
            cells=self.cells,
            failed=self.failed,
            not_stated=self.not_stated,
            answered=sum(1 for c in marked if c.found),
            base_right=base,
            high=len(high),
            high_right=sum(1 for c in high if c.correct is True),
            at_coverage=tuple((k, precision_at(marked, k)) for k in COVERAGES),
        )  # fmt: skip


def score_cells(
    cells: Iterable[Cell],
    *,
    columns: Sequence[Column] = (),
    role: str = MAIN,
    method: str = "",
    column: int | None = None,
    question: str = "all columns",
) -> Score:
    """The scores of some cells (one column's, or all of a method's) against the key: answered,
    right, precision, coverage, base rate, the ``high`` band's precision, and precision at 50%,
    80% and 100% coverage ranked by score. A pure function the screens call too."""
    tally = ScoreTally()
    for cell in cells:
        tally.add(cell)
    return tally.score(columns=columns, role=role, method=method, column=column, question=question)


def scores(plan: ReviewPlan, cells: Iterable[Cell]) -> list[Score]:
    """Per method, each column's score then all columns' (only cells the key marks count).
    The comparison is scored on its sample rows, and so is the main method beside it there.
    One pass over ``cells``, holding only the marked ones: a grid's stored cells can be read
    into it a page at a time."""
    groups: list[tuple[str, str]] = [(MAIN, plan.method_label(MAIN))]
    sampled: set[str] = set()
    if plan.compare is not None:
        sampled = set(plan.compare_documents)
        groups += [
            (COMPARE, plan.method_label(COMPARE)),
            (f"{MAIN}-on-sample", f"{plan.method_label(MAIN)} on the same rows"),
        ]
    indexes: list[int | None] = [*range(len(plan.columns)), None]
    tallies = {(role, index): ScoreTally() for role, _ in groups for index in indexes}
    for cell in cells:
        into = [cell.role] if cell.role == MAIN or (cell.role == COMPARE and plan.compare is not None) else []
        if cell.role == MAIN and cell.document_sha256 in sampled:
            into.append(f"{MAIN}-on-sample")
        for role in into:
            tallies[(role, None)].add(cell)
            mine = tallies.get((role, cell.column))
            if mine is not None:
                mine.add(cell)
    return [
        tallies[(role, index)].score(
            columns=plan.columns,
            role=role,
            method=label,
            column=index,
            question=plan.columns[index].question if index is not None else "all columns",
        )  # fmt: skip
        for role, label in groups
        for index in indexes
    ]


def iter_grid(
    plan: ReviewPlan, cells: Sequence[Cell], role: str = MAIN
) -> Iterator[tuple[CorpusFile, list[Cell | None]]]:
    """The grid's rows: each document and its cells in column order (None: not answered yet)."""
    by = {(c.document_sha256, c.column): c for c in cells if c.role == role}
    rows = (
        plan.documents if role == MAIN else [d for d in plan.documents if d.sha256 in plan.compare_documents]
    )
    for f in rows:
        yield f, [by.get((f.sha256, i)) for i in range(len(plan.columns))]
