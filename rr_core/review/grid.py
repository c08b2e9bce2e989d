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

import csv
import hashlib
import io
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from rr_core.costs import Cost, Mode
from rr_core.errors import ConfigError, RRError
from rr_core.jobs import Job, Resolver, plan_job
from rr_core.methods import get_method
from rr_core.metrics import fuzzy_match
from rr_core.plans import Call, Citation, Plan, estimate_calls
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


def parse_answer_key(text: str, *, name: str = "answers") -> AnswerKey:
    """An answer key from CSV: ``document,question,answers`` (accepted answers separated by
    ``|`` or ``;``; "not stated" or an empty cell: the document does not say)."""
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows:
        raise ConfigError(f"{name} holds no answer.")
    header = {(k or "").strip().lower() for k in rows[0]}
    missing = {"document", "question", "answers"} - header
    if missing:
        raise ConfigError(
            f"{name}: the header needs document, question and answers (missing: {', '.join(sorted(missing))})."
        )
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for row in rows:
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        if not row["document"] or not row["question"]:
            continue
        accepted = tuple(a.strip() for a in re.split(r"[|;]", row["answers"]) if a.strip()) or ("not stated",)
        out[(document_key(row["document"]), question_key(row["question"]))] = accepted
    return AnswerKey(out, name)


_PARTIAL_DATE = re.compile(r"^(\d{1,2})/\[\]/(\d{2}|\d{4})$")  # CUAD's "04/[]/2013": the day not given


def is_right(column: Column, typed: Typed, answer: str, stated: bool, accepted: Sequence[str]) -> bool:
    """Whether a cell's answer is one the key accepts, compared as the column's type."""
    gold_not_stated = [a for a in accepted if a.strip().lower().rstrip(".") in ("not stated", "n/a", "none")]
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
            now_cached = estimate_calls(role_calls, role_settings, caching=True, lone_prefixes=lone)
            cached_cost = cached_cost + now_cached.cost
            batch_cost = (
                batch_cost
                + estimate_calls(
                    role_calls, role_settings, caching=True, mode="batch", lone_prefixes=lone
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
    answer: str  # the typed value, else the answer as given, else "not stated in the document"
    raw: str  # the answer as the model gave it
    typed: bool  # the answer could be read as the column's type
    found: bool  # False: the document does not state it
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
            return "not stated"
        checks = {c.quote_check for c in self.citations}
        if "verified" in checks:
            return "quote found on page (not checked against a known answer)"
        if "approximate" in checks:
            return "quote approximately on page (not checked against a known answer)"
        return "quote not found on page" if checks else "no citation"

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
        typed = typed_answer(column, raw, stated=stated)
        if error is not None:
            shown = ""
        elif not stated and column.type is AnswerType.YES_NO:
            shown = "No (no such provision found)"
        elif not stated:
            shown = "not stated in the document"
        else:
            shown = typed.shown
        accepted = key.lookup(name, column.question) if key is not None else None
        correct = (
            is_right(column, typed, raw, stated, accepted) if accepted is not None and error is None else None
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
            )
        )
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


@dataclass(frozen=True, slots=True)
class Score:
    """Right answers of one column (or of all) by one method, against the answer key."""

    role: str
    method: str
    column: int | None  # None: every column
    question: str
    right: int
    marked: int  # cells the key has an answer for (and that did not fail)
    cells: int
    failed: int
    not_stated: int

    @property
    def accuracy(self) -> float | None:
        """Right over marked; None when the key marks none."""
        return self.right / self.marked if self.marked else None

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "method": self.method,
            "role": self.role,
            "column": self.column,
            "question": self.question,
            "right": self.right,
            "marked": self.marked,
            "accuracy": None if self.accuracy is None else round(self.accuracy, 4),
            "cells": self.cells,
            "failed": self.failed,
            "not_stated": self.not_stated,
        }


def scores(plan: ReviewPlan, cells: Sequence[Cell]) -> list[Score]:
    """Per method, each column's score then all columns' (only cells the key marks count).
    The comparison is scored on its sample rows, and so is the main method beside it there."""
    out: list[Score] = []
    groups: list[tuple[str, str, list[Cell]]] = [
        (MAIN, plan.method_label(MAIN), [c for c in cells if c.role == MAIN])
    ]
    if plan.compare is not None:
        sampled = set(plan.compare_documents)
        groups.append((COMPARE, plan.method_label(COMPARE), [c for c in cells if c.role == COMPARE]))
        groups.append(
            (
                f"{MAIN}-on-sample",
                f"{plan.method_label(MAIN)} on the same rows",
                [c for c in cells if c.role == MAIN and c.document_sha256 in sampled],
            )
        )
    for role, label, mine in groups:
        for index in [*range(len(plan.columns)), None]:
            these = [c for c in mine if index is None or c.column == index]
            out.append(
                Score(
                    role=role,
                    method=label,
                    column=index,
                    question=plan.columns[index].question if index is not None else "all columns",
                    right=sum(1 for c in these if c.correct is True),
                    marked=sum(1 for c in these if c.correct is not None),
                    cells=len(these),
                    failed=sum(1 for c in these if c.error is not None),
                    not_stated=sum(1 for c in these if c.error is None and not c.found),
                )
            )
    return out


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
