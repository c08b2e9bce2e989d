"""Retrieval-augmented generation (002 §3.4, METHOD.md §10): the classic baseline.

Pages are cut into passages of about w words (never across a page), ranked against the
question with BM25, and the best few are put before the model, most relevant first, each
tagged with the page it came from so the answer cites a page. The ranking is a local step,
not an LLM call: it is free, and it runs when the plan runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from rr_core.methods.building import (
    ANSWER_OUTPUT_TOKENS,
    Context,
    Method,
    answer_outcome,
    make_plan,
    words_to_tokens,
)
from rr_core.outputs import AnswerOut
from rr_core.passages import Ranked, rank_passages, split_passages
from rr_core.plans import Conclusion, LocalStep, Phase, PhaseResults, Plan


def ranking_step(ctx: Context, top: int) -> LocalStep:
    """A local step ranking the document's passages against the (first) question with BM25."""
    words = ctx.settings.rag_chunk_words

    def run() -> list[Ranked]:
        pages = ctx.page_texts(range(1, len(ctx.document.pages) + 1))
        return rank_passages(split_passages(pages, words), ctx.questions[0], top)

    return LocalStep(
        id="rank",
        stage="rank",
        description=f"BM25 ranks passages of about {words} words; keeps the best {top}",
        run=run,
    )


def passage_details(ranked: Sequence[Ranked]) -> list[dict[str, object]]:
    """What the trace keeps of the ranked passages (for the viewer's highlights)."""
    return [
        {"rank": r.rank, "page": r.passage.page, "score": round(r.score, 3), "text": r.passage.text}
        for r in ranked
    ]


def pages_in_rank_order(ranked: Sequence[Ranked]) -> list[int]:
    """The passages' pages, best first, each once."""
    return list(dict.fromkeys(r.passage.page for r in ranked))


def passage_phases(ctx: Context) -> tuple[Phase, Phase]:
    """RAG's first two phases, which Self-Route shares: BM25 ranks the passages, then one call
    answers from the kept ones, most relevant first (sized as the kept passages until the
    ranking has run; no call when no passage matched)."""
    s = ctx.settings
    rank = ranking_step(ctx, s.rag_top_k)
    estimated = ctx.sized_call(
        id="answer",
        stage="answer",
        task="answer",
        schema=AnswerOut,
        tokens=s.rag_top_k * (words_to_tokens(s.rag_chunk_words) + 8),
        output_tokens=ANSWER_OUTPUT_TOKENS,
    )

    def resolve(done: Sequence[PhaseResults]) -> Phase:
        ranked: list[Ranked] = done[0]["rank"].value
        if not ranked:
            return Phase(stage="answer", steps=())
        passages = [(r.passage.page, r.passage.text) for r in ranked]  # most relevant first
        call = ctx.call(
            id="answer",
            stage="answer",
            task="answer",
            pages=passages,
            schema=AnswerOut,
            output_tokens=ANSWER_OUTPUT_TOKENS,
        )
        return Phase(stage="answer", steps=(call,))

    return (
        Phase(stage="rank", steps=(rank,)),
        Phase(
            stage="answer",
            steps=(estimated,),
            estimated=True,
            resolve=resolve,
            note="sized as the kept passages until the ranking has run",
        ),
    )


def _rag(ctx: Context) -> Plan:
    def conclude(done: Sequence[PhaseResults]) -> Conclusion:
        ranked: list[Ranked] = done[0]["rank"].value
        pages = pages_in_rank_order(ranked)
        answers = done[1] if len(done) > 1 else {}
        outcome, warnings = answer_outcome(answers.get("answer"), ctx.questions[0], allowed=pages)
        outcome.retrieved_pages = pages
        if not ranked:
            outcome.not_stated()
            warnings.append(
                "No passage shares a word with the question, so there was nothing to answer from."
            )
        return Conclusion([outcome], warnings, {"retriever": "BM25", "passages": passage_details(ranked)})

    return make_plan(
        ctx,
        phases=passage_phases(ctx),
        conclude=conclude,
        notes=("Passages ranked by BM25 (lexical). No dense retriever is configured.",),
    )


RAG = Method(
    name="rag",
    label="RAG",
    group="other",
    summary="Searches the document for the few passages that best match the question's words and answers from them.",
    params=("rag_chunk_words", "rag_top_k"),
    retrieves=True,
    planner=_rag,
)

METHODS = (RAG,)
