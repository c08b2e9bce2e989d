"""The six methods of the R&R paper (000 §3–§4, METHOD.md §3–§8).

- one pass over the whole document: ``baseline``, and ``reprompt`` with reminders every k;
- retrieve, then answer from the retrieved pages only: ``icr``, ``rr`` (reminders in the
  retrieval call), and their chunked forms, which retrieve per chunk of about c tokens.

The retrieving methods serve several questions in one retrieval pass (000 §9): one long
call returns pages per question, then one short answer call per question.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from rr_core.chunking import partition_pages
from rr_core.errors import ConfigError
from rr_core.methods.building import (
    ANSWER_OUTPUT_TOKENS,
    Context,
    Kept,
    Method,
    answer_outcome,
    failed_parts,
    keep_pages,
    make_plan,
    merge_ranked,
    retrieve_output_tokens,
)
from rr_core.outputs import AnswerOut, MultiRetrievalOut, RetrievalOut
from rr_core.plans import Call, Conclusion, Outcome, Phase, PhaseResults, Plan
from rr_core.settings import QUESTION_FIRST, QuestionPlacement, ReminderPlacement

# Reminders repeat the question inside the document: a layout that withholds the question until
# after the document would contradict them. The cache-aware layout is the exception: its
# reminders (tags only) carry no question.
REMINDS_NOTE = (
    "its reminders repeat the question inside the document, so the question cannot wait until after it; "
    "only the cache-aware layout's tags-only reminders leave it out"
)
REMINDING_LAYOUTS = (*QUESTION_FIRST, QuestionPlacement.CACHE_AWARE)


def one_pass(ctx: Context, *, remind: bool) -> Plan:
    """One answer call over the whole document (with reminders every k where ``remind``)."""
    pages = ctx.page_texts(range(1, len(ctx.document.pages) + 1))
    call = ctx.call(
        id="answer",
        stage="answer",
        task="answer",
        pages=pages,
        schema=AnswerOut,
        output_tokens=ANSWER_OUTPUT_TOKENS,
        remind=remind,
        shared_pages=True,
    )

    def conclude(results: Sequence[PhaseResults]) -> Conclusion:
        outcome, warnings = answer_outcome(results[0].get("answer"), ctx.questions[0], allowed=call.pages)
        return Conclusion([outcome], warnings)

    return make_plan(ctx, phases=(Phase(stage="answer", steps=(call,)),), conclude=conclude)


# ---- Retrieve, then answer ----------------------------------------------------------


def _retrieval_calls(ctx: Context, chunks: Sequence[range], *, remind: bool, chunked: bool) -> list[Call]:
    several = len(ctx.questions) > 1
    calls = []
    for i, chunk in enumerate(chunks, start=1):
        calls.append(
            ctx.call(
                id=f"retrieve.{i}",
                stage="retrieve",
                task="retrieve_many" if several else "retrieve",
                pages=ctx.page_texts(chunk),
                schema=MultiRetrievalOut if several else RetrievalOut,
                output_tokens=retrieve_output_tokens(ctx.settings.top_k) * len(ctx.questions),
                remind=remind,
                chunk=i if chunked else None,
                shared_pages=True,
            )
        )
    return calls


def _per_question(ctx: Context, results: PhaseResults) -> tuple[list[list[Kept]], list[str]]:
    """For each question, what each successful retrieval call kept; and the warnings."""
    count = len(ctx.questions)
    per_question: list[list[Kept]] = [[] for _ in range(count)]
    warnings: list[str] = []
    for result in results.values():
        if not result.ok or not isinstance(result.step, Call):
            continue
        allowed = result.step.pages
        if count == 1:
            per_question[0].append(keep_pages(result.value.pages, allowed, ctx.settings.top_k))
            if result.value.unusable:
                where = f"chunk {result.step.chunk}" if result.step.chunk else "the retrieval call"
                warnings.append(
                    f"The reply for {where} named {', '.join(map(repr, result.value.unusable))} as pages; "
                    "not page numbers, so ignored."
                )
            continue
        found, missing, extra = result.value.pages_for(count)
        where = f"chunk {result.step.chunk}" if result.step.chunk else "the retrieval call"
        if missing:
            warnings.append(
                f"The reply for {where} had no entry for question(s) {', '.join(map(str, missing))}."
            )
        if extra:
            warnings.append(
                f"The reply for {where} named unknown question number(s) {', '.join(map(str, extra))}; ignored."
            )
        for q in range(count):
            per_question[q].append(keep_pages(found.get(q + 1, []), allowed, ctx.settings.top_k))
    return per_question, warnings


def _retrieve_then_answer(ctx: Context, *, remind: bool, chunked: bool) -> Plan:
    s = ctx.settings
    n_pages = len(ctx.document.pages)
    chunks = partition_pages(ctx.document.page_tokens, s.chunk_size) if chunked else [range(1, n_pages + 1)]
    retrieval = Phase(
        stage="retrieve", steps=tuple(_retrieval_calls(ctx, chunks, remind=remind, chunked=chunked))
    )
    expected_pages = min(n_pages, s.top_k * len(chunks))
    estimated = tuple(
        ctx.sized_call(
            id=f"answer.{q + 1}" if len(ctx.questions) > 1 else "answer",
            stage="answer",
            task="answer",
            schema=AnswerOut,
            tokens=math.ceil(expected_pages * ctx.average_page_tokens()),
            output_tokens=ANSWER_OUTPUT_TOKENS,
            question=q if len(ctx.questions) > 1 else None,
        )
        for q in range(len(ctx.questions))
    )

    def resolve(done: Sequence[PhaseResults]) -> Phase:
        per_question, _ = _per_question(ctx, done[0])
        calls = []
        for q, kept in enumerate(per_question):
            pages = sorted(set(merge_ranked([k.kept for k in kept])))
            if not pages:
                continue
            several = len(ctx.questions) > 1
            calls.append(
                ctx.call(
                    id=f"answer.{q + 1}" if several else "answer",
                    stage="answer",
                    task="answer",
                    pages=ctx.page_texts(pages),
                    schema=AnswerOut,
                    output_tokens=ANSWER_OUTPUT_TOKENS,
                    question=q if several else None,
                )
            )
        return Phase(stage="answer", steps=tuple(calls))

    answer = Phase(
        stage="answer",
        steps=estimated,
        estimated=True,
        resolve=resolve,
        note="sized as N average pages per chunk until retrieval has run",
    )

    def conclude(done: Sequence[PhaseResults]) -> Conclusion:
        per_question, warnings = _per_question(ctx, done[0])
        warnings = failed_parts(done[0], "Retrieval") + warnings
        answers = done[1] if len(done) > 1 else {}
        outcomes: list[Outcome] = []
        for q, kept in enumerate(per_question):
            groups = [k.kept for k in kept]
            ranked = merge_ranked(groups)
            call_id = f"answer.{q + 1}" if len(ctx.questions) > 1 else "answer"
            outcome, said = answer_outcome(answers.get(call_id), ctx.questions[q], allowed=ranked)
            outcome.retrieved_pages = ranked
            outcome.retrieved_groups = groups if chunked else []
            outcome.dropped_pages = [p for k in kept for p in k.dropped]
            for k in kept:
                warnings.extend(k.warnings)
            if outcome.dropped_pages:
                warnings.append(
                    "Dropped page numbers that were not in the context: "
                    + ", ".join(str(p) for p in outcome.dropped_pages)
                    + "."
                )
            if not ranked:
                outcome.not_stated()
                said.append(
                    "The retrieval phase returned no valid page, so there was nothing to answer from."
                )
            warnings.extend(said)
            outcomes.append(outcome)
        return Conclusion(outcomes, warnings)

    return make_plan(
        ctx, phases=(retrieval, answer), conclude=conclude, chunks=tuple(chunks) if chunked else ()
    )


BASELINE = Method(
    name="baseline",
    label="Baseline",
    group="paper",
    summary="Reads the whole document in one go and answers.",
    planner=lambda ctx: one_pass(ctx, remind=False),
)
REPROMPT = Method(
    name="reprompt",
    label="Reprompting",
    group="paper",
    summary="Reads the whole document in one go, with the question repeated every k tokens.",
    params=("reminder_every",),
    reminds=True,
    layouts=REMINDING_LAYOUTS,
    layout_note=REMINDS_NOTE,
    planner=lambda ctx: one_pass(ctx, remind=True),
)
ICR = Method(
    name="icr",
    label="ICR",
    group="paper",
    summary="First picks the N most relevant pages, then answers from those pages only.",
    params=("top_k",),
    several_questions=True,
    retrieves=True,
    planner=lambda ctx: _retrieve_then_answer(ctx, remind=False, chunked=False),
)
RR = Method(
    name="rr",
    label="R&R",
    group="paper",
    summary="Picks the N most relevant pages with the question repeated every k tokens, then answers from those pages only.",
    params=("reminder_every", "top_k"),
    reminds=True,
    layouts=REMINDING_LAYOUTS,
    layout_note=REMINDS_NOTE,
    several_questions=True,
    retrieves=True,
    planner=lambda ctx: _retrieve_then_answer(ctx, remind=True, chunked=False),
)
CHUNKED_ICR = Method(
    name="chunked-icr",
    label="Chunked ICR",
    group="paper",
    summary="Splits the document into parts of about c tokens, picks N pages in each part, then answers from them.",
    params=("top_k", "chunk_size"),
    several_questions=True,
    retrieves=True,
    planner=lambda ctx: _retrieve_then_answer(ctx, remind=False, chunked=True),
)
CHUNKED_RR = Method(
    name="chunked-rr",
    label="Chunked R&R",
    group="paper",
    summary="Like chunked ICR, with the question repeated every k tokens inside each part.",
    params=("reminder_every", "top_k", "chunk_size"),
    reminds=True,
    layouts=REMINDING_LAYOUTS,
    layout_note=REMINDS_NOTE,
    several_questions=True,
    retrieves=True,
    planner=lambda ctx: _retrieve_then_answer(ctx, remind=True, chunked=True),
)


def _before_answer_only(ctx: Context) -> Plan:
    """Reprompting with one reminder right before each page that holds the answer, and none
    between other pages (000 §5.2, Table 6): the gold pages come from the evaluation."""
    gold = sorted(set(ctx.settings.gold_pages))
    if not gold:
        raise ConfigError(
            "Reminders before the answer only need the page(s) that hold the answer (gold pages): "
            "an evaluation-only ablation."
        )
    outside = [p for p in gold if not 1 <= p <= len(ctx.document.pages)]
    if outside:
        raise ConfigError(
            f"Gold page(s) {', '.join(map(str, outside))} are not in the document (1–{len(ctx.document.pages)})."
        )
    placed = ctx.settings.but(reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=tuple(gold))
    return one_pass(replace(ctx, settings=placed), remind=True)


BEFORE_ANSWER = Method(
    name="reprompt-before-answer",
    label="Reprompting, before the answer only",
    group="paper",
    summary="The paper's oracle ablation: reads the whole document with one reminder right before the page "
    "that holds the answer and none elsewhere (it must be told that page: evaluation only).",
    reminds=True,
    needs_gold=True,
    layouts=REMINDING_LAYOUTS,
    layout_note=REMINDS_NOTE,
    planner=_before_answer_only,
)

METHODS = (BASELINE, REPROMPT, ICR, RR, CHUNKED_ICR, CHUNKED_RR, BEFORE_ANSWER)
