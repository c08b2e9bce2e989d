"""Checking answers against their quotes: a last phase any method's plan can take. Pure: no I/O.

With ``RunSettings.verify`` on an LLM, a plan gets one more phase, "verify" (README: "Checking
answers against their quotes"). It is resolved from the outcomes of the phases before it: one
small call per answer found (none for an answer the document does not state, none for an
error), sending only the question, the answer and the quoted passages (never the pages), with a
strict schema (``VerificationOut``): a verdict, supported | partial | unsupported, and a reason
in one line. The estimate counts one such call per question (the worst case). The calls go
through the runner like any other (budget, batches, call cache); a check that fails or cannot
be read leaves its answer as it was, "unchecked", saying why: the phase is ``optional``.

Only quotes located on their cited page are sent; an answer with none is unsupported without a
call. On a free engine (the offline reader) nothing more is sent: the offline reader judges the
support of its own answers from its evidence (``rr_core.support``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rr_core.documents import Document
from rr_core.llm.providers import describe_provider
from rr_core.outputs import UNCHECKED, VerificationOut
from rr_core.plans import Call, Conclusion, Outcome, Phase, PhaseResults, Plan, count_layout
from rr_core.prompts import PromptLayout, verify_blocks
from rr_core.quotes import check_quote
from rr_core.settings import RunSettings
from rr_core.tokens import TokenCounter

STAGE = "verify"
# Expected size of a verdict and its reason; the most a verifier may write.
VERIFY_OUTPUT_TOKENS = 40
VERIFY_MAX_OUTPUT_TOKENS = 256
# Tokens an answer and its quotes are sized at before the answers exist (an answer reply's
# expected size, twice: the answer stands in the instructions before and after the quotes).
ANSWER_AND_QUOTES_TOKENS = 180


def verifier_name(settings: RunSettings) -> str:
    """Who checks, as ``Outcome.support_by`` records it."""
    return f"verifier {settings.verifier}"


def verify_note(settings: RunSettings) -> str:
    """What a plan with the check says of it: who checks and what is sent, or, on an engine that
    is not an LLM, that nothing more is sent ("" without the check)."""
    if not settings.verify:
        return ""
    info = describe_provider(settings.provider)
    if not info.is_llm:
        return (
            f"Checking answers sends nothing on {info.reader}: its reader judges whether a quote supports an "
            "answer itself."
        )
    return (
        f"Each answer found is checked against its quotes by {settings.verifier}: one more small call per "
        "answer, sending the question, the answer and the quotes only (never the pages)."
    )


def with_verification(plan: Plan, document: Document, counter: TokenCounter) -> Plan:
    """``plan`` with the check of its answers as a last phase (when its settings ask for it and
    its engine is an LLM); otherwise ``plan`` (with a note, for a free engine)."""
    settings = plan.settings
    if not settings.verify:
        return plan
    if not describe_provider(settings.provider).is_llm:
        return replace(plan, notes=(*plan.notes, verify_note(settings)))
    base_phases, base_conclude = plan.phases, plan.conclude
    count = len(base_phases)
    several = len(plan.questions) > 1

    def call_id(index: int) -> str:
        return f"verify.{index + 1}" if several else "verify"

    def check(index: int, question: str, answer: str, quotes: Sequence[tuple[int | None, str]]) -> Call:
        layout = PromptLayout(verify_blocks(question, answer, quotes), questions=(question,))
        tokens, _ = count_layout(layout, counter, document)
        return Call(
            id=call_id(index),
            stage=STAGE,
            layout=layout,
            schema=VerificationOut,
            prompt_tokens=tokens,
            reminder_tokens=0,
            output_tokens=VERIFY_OUTPUT_TOKENS,
            max_output_tokens=min(VERIFY_MAX_OUTPUT_TOKENS, settings.max_output_tokens),
            question=index if several else None,
            model=settings.verifier,
        )

    def sized(index: int, question: str) -> Call:
        call = check(index, question, "", ())
        return replace(call, prompt_tokens=call.prompt_tokens + ANSWER_AND_QUOTES_TOKENS)

    def located(outcome: Outcome) -> list[tuple[int | None, str]]:
        """The answer's quotes that stand on their cited page: only those are sent to be judged
        (a quote the document does not hold supports nothing, whatever a verifier says of it)."""
        pages = document.pages
        return [
            (c.page, c.quote)
            for c in outcome.citations
            if c.page is not None
            and 1 <= c.page <= len(pages)
            and check_quote(c.quote, pages[c.page - 1].text).status in ("verified", "approximate")
        ]

    def resolve(done: Sequence[PhaseResults]) -> Phase:
        outcomes = base_conclude(done[:count]).outcomes
        calls = tuple(
            check(i, o.question, o.answer or "", quotes)
            for i, o in enumerate(outcomes)
            if o.stated and o.error is None and (quotes := located(o))
        )
        return Phase(stage=STAGE, steps=calls, optional=True)

    def conclude(done: Sequence[PhaseResults]) -> Conclusion:
        conclusion = base_conclude(done[:count])
        checks = done[count] if len(done) > count else {}
        for i, outcome in enumerate(conclusion.outcomes):
            result = checks.get(call_id(i))
            if result is not None:
                judge(outcome, result.value if result.ok else None, result.error, settings)
            elif outcome.stated and outcome.error is None and not located(outcome):
                outcome.support, outcome.support_by = "unsupported", verifier_name(settings)
                outcome.support_reason = (
                    "none of its quotes stands on its cited page: nothing to check it against"
                )
        return conclusion

    phase = Phase(
        stage=STAGE,
        steps=tuple(sized(i, q) for i, q in enumerate(plan.questions)),
        estimated=True,
        resolve=resolve,
        note="one check per answer found, sized as one per question until the answers are known",
        optional=True,
    )
    return replace(
        plan, phases=(*base_phases, phase), conclude=conclude, notes=(*plan.notes, verify_note(settings))
    )


def judge(
    outcome: Outcome, verdict: VerificationOut | None, error: Exception | None, settings: RunSettings
) -> None:
    """Record a check's verdict on its outcome; a check that failed leaves it unchecked, saying why."""
    outcome.support_by = verifier_name(settings)
    if verdict is not None:
        outcome.support, outcome.support_reason = verdict.verdict, verdict.reason
        return
    said = " ".join(str(error or "no reply").split())
    outcome.support = UNCHECKED
    outcome.support_reason = f"Not checked against its quotes: {said[:200]}"
