"""The bounds of the Lost-in-the-Middle paper (001): closed-book and oracle.

- ``closed-book`` sends the question alone, no document: how much the model knows without
  reading (the lower bound; a fictional planted fact should score ~0 here).
- ``oracle`` sends only the gold page(s) the user names: how well the model reads when
  retrieval is perfect (the upper bound, for evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence

from rr_core.errors import ConfigError
from rr_core.methods.building import ANSWER_OUTPUT_TOKENS, Context, Method, answer_outcome, make_plan
from rr_core.outputs import AnswerOut
from rr_core.plans import Conclusion, Phase, PhaseResults, Plan


def _closed_book(ctx: Context) -> Plan:
    call = ctx.call(
        id="answer",
        stage="answer",
        task="closed_book",
        pages=None,
        schema=AnswerOut,
        output_tokens=ANSWER_OUTPUT_TOKENS,
    )

    def conclude(results: Sequence[PhaseResults]) -> Conclusion:
        outcome, warnings = answer_outcome(results[0].get("answer"), ctx.questions[0], allowed=())
        return Conclusion([outcome], warnings)

    return make_plan(ctx, phases=(Phase(stage="answer", steps=(call,)),), conclude=conclude)


def _oracle(ctx: Context) -> Plan:
    gold = sorted(set(ctx.settings.gold_pages))
    if not gold:
        raise ConfigError("The oracle reads only the page(s) that hold the answer: name them (gold pages).")
    outside = [p for p in gold if not 1 <= p <= len(ctx.document.pages)]
    if outside:
        raise ConfigError(
            f"Gold page(s) {', '.join(map(str, outside))} are not in the document (1–{len(ctx.document.pages)})."
        )
    call = ctx.call(
        id="answer",
        stage="answer",
        task="answer",
        pages=ctx.page_texts(gold),
        schema=AnswerOut,
        output_tokens=ANSWER_OUTPUT_TOKENS,
    )

    def conclude(results: Sequence[PhaseResults]) -> Conclusion:
        outcome, warnings = answer_outcome(results[0].get("answer"), ctx.questions[0], allowed=gold)
        outcome.retrieved_pages = list(gold)
        return Conclusion([outcome], warnings)

    return make_plan(ctx, phases=(Phase(stage="answer", steps=(call,)),), conclude=conclude)


CLOSED_BOOK = Method(
    name="closed-book",
    label="Closed-book",
    group="bounds",
    floor=True,
    summary="Asks the question with no document at all: what the model knows without reading (lower bound).",
    planner=_closed_book,
)
ORACLE = Method(
    name="oracle",
    label="Oracle",
    group="bounds",
    summary="Gives the model only the page(s) known to hold the answer: how well it reads when nothing is missed (upper bound).",
    needs_gold=True,
    planner=_oracle,
)

METHODS = (CLOSED_BOOK, ORACLE)
