"""Self-Route (Li et al. 2024, "Retrieval Augmented Generation or Long-Context LLMs?"; issue 25 §4):
a cheap competitor that reads the whole document only when it has to.

RAG answers first, from the few passages that best match the question (``rag``). When its
reader says the passages do not state the answer (or no passage matches at all), the question
goes to the whole document in one call, as Baseline reads it. The long call is sent only
then: a question RAG answers costs one short call. Before the run the plan counts the long
call too, so an estimate (and a budget) is the most the run can cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rr_core.methods.building import (
    ANSWER_OUTPUT_TOKENS,
    Context,
    Method,
    answer_outcome,
    make_plan,
)
from rr_core.methods.rag import pages_in_rank_order, passage_details, passage_phases
from rr_core.outputs import AnswerOut
from rr_core.passages import Ranked
from rr_core.plans import Conclusion, Phase, PhaseResults, Plan, StepResult

ROUTED_NOTE = "RAG's passages did not state the answer, so the whole document was read (Self-Route)."


def _passages_answered(done: Sequence[PhaseResults]) -> bool:
    """Whether RAG's answer call came back with an answer (a failed call is not "not found":
    its error stands, and no long call is paid on top of it)."""
    result: StepResult | None = done[1].get("answer") if len(done) > 1 else None
    if result is None:
        return False  # no passage matched: nothing was read
    return not result.ok or bool(result.value.found)


def _self_route(ctx: Context) -> Plan:
    all_pages = list(range(1, len(ctx.document.pages) + 1))
    whole = ctx.sized_call(
        id="answer.whole",
        stage="answer",
        task="answer",
        schema=AnswerOut,
        tokens=math.ceil(len(all_pages) * ctx.average_page_tokens()),
        output_tokens=ANSWER_OUTPUT_TOKENS,
    )

    def route(done: Sequence[PhaseResults]) -> Phase:
        if _passages_answered(done):
            return Phase(stage="answer", steps=())
        call = ctx.call(
            id="answer.whole",
            stage="answer",
            task="answer",
            pages=ctx.page_texts(all_pages),
            schema=AnswerOut,
            output_tokens=ANSWER_OUTPUT_TOKENS,
            shared_pages=True,
        )
        return Phase(stage="answer", steps=(call,))

    def conclude(done: Sequence[PhaseResults]) -> Conclusion:
        ranked: list[Ranked] = done[0]["rank"].value
        passages = pages_in_rank_order(ranked)
        routed = len(done) > 2 and "answer.whole" in done[2]
        details: dict[str, object] = {
            "retriever": "BM25",
            "passages": passage_details(ranked),
            "routed_to": "whole document" if routed else "passages",
        }
        if routed:
            outcome, warnings = answer_outcome(done[2]["answer.whole"], ctx.questions[0], allowed=all_pages)
            outcome.retrieved_pages = all_pages  # it read every page
            return Conclusion([outcome], [ROUTED_NOTE, *warnings], details)
        outcome, warnings = answer_outcome(done[1].get("answer"), ctx.questions[0], allowed=passages)
        outcome.retrieved_pages = passages
        return Conclusion([outcome], warnings, details)

    return make_plan(
        ctx,
        phases=(
            *passage_phases(ctx),  # RAG's ranking and its answer from the passages
            Phase(
                stage="answer",
                steps=(whole,),
                estimated=True,
                resolve=route,
                note="the whole document, sent only when the passages do not state the answer "
                "(counted here: the most the run can cost)",
            ),
        ),
        conclude=conclude,
        notes=("Passages ranked by BM25 (lexical); the whole document is read only when they fail.",),
    )


SELF_ROUTE = Method(
    name="self-route",
    label="Self-Route",
    group="other",
    summary="Answers from the best-matching passages, as RAG does; only when they do not state the answer "
    "does it read the whole document.",
    params=("rag_chunk_words", "rag_top_k"),
    retrieves=True,
    planner=_self_route,
)

METHODS = (SELF_ROUTE,)
