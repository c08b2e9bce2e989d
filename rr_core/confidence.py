"""Confidence: how far to trust an answer, and why to check it. Pure: no I/O.

The rule (README "How sure is an answer"), for an answer that is there:

- the score starts from its **support** (``rr_core.support``): supported 0.80, partial 0.45,
  unsupported 0.15, unchecked 0.55 (a model's answer nobody checked);
- **answer-type fit**: +0.10 when the answer is of the asked kind, -0.20 when it is not;
- **provenance**: -0.20 when none of its quotes was located on its page;
- **agreement** (only when other methods answered the same question): +0.10 when another
  method gave the same answer, -0.30 when every other method that answered said something
  else (or said it is not there);
- **retrieval margin** (``Outcome.retrieval_margin``, the best page's BM25 lead over the next,
  0-1): recorded on every outcome, weighted 0. On the evaluation set it separates nothing: it
  is below 0.1 for 27% of right answers and 29% of wrong ones, and a -0.10 below 0.1 took 24
  right answers and 1 wrong one out of the high band.

The score is clamped to [0, 1]. ``high`` needs a score of at least ``HIGH_AT`` *and* a
supported answer; anything else answered is ``check``, with the first reason that pulled it
down. Not found, not answered or failed is ``none`` (score 0). ``HIGH_AT`` was calibrated on
the evaluation set (the review contracts with their key, ``tests/data/offline_eval.csv``).
"""

from __future__ import annotations

from collections.abc import Sequence

from rr_core.metrics import fuzzy_match
from rr_core.plans import Outcome, absence_words
from rr_core.quotes import APPROXIMATE, VERIFIED
from rr_core.support import PARTIAL, SUPPORTED, UNSUPPORTED, kind_fits

HIGH, CHECK, NONE = "high", "check", "none"
HIGH_AT = 0.85
AGREE, DISAGREE = 0.10, 0.30
_BASE = {SUPPORTED: 0.80, PARTIAL: 0.45, UNSUPPORTED: 0.15}
_UNCHECKED_BASE = 0.55

# Another method's answer to the same question: its label ("Baseline") and its outcome.
Other = tuple[str, Outcome]


def _same(a: str, b: str) -> bool:
    return bool(fuzzy_match(a, [b]))


def rate(outcome: Outcome, *, others: Sequence[Other] = ()) -> tuple[str, float, str]:
    """The confidence band, score and reason for an outcome (nothing is changed)."""
    if outcome.error is not None or outcome.answer is None:
        return NONE, 0.0, "not answered"
    if not outcome.found:
        return NONE, 0.0, absence_words(outcome.absent_by, outcome.pages_to_read)
    answer = outcome.answer
    reasons: list[str] = []
    score = _BASE.get(outcome.support, _UNCHECKED_BASE)
    if outcome.support in (PARTIAL, UNSUPPORTED):
        reasons.append(outcome.support_reason or f"the quote is {outcome.support}")
    elif outcome.support not in _BASE:
        reasons.append("nobody checked that the quote states the answer")
    if kind_fits(outcome.question, answer):
        score += 0.10
    else:
        score -= 0.20
        reasons.append("the answer is not of the asked kind")
    if not any(c.quote_check in (VERIFIED, APPROXIMATE) for c in outcome.citations):
        score -= 0.20
        reasons.append("no quote was located on its page")
    answered = [(label, o) for label, o in others if o.error is None and o.answer is not None]
    if answered:
        agreeing = [label for label, o in answered if o.found and _same(answer, o.answer or "")]
        if agreeing:
            score += AGREE
        else:
            score -= DISAGREE
            label, first = answered[0]
            said = (first.answer or "") if first.found else absence_words(first.absent_by).lower()
            reasons.append(f"{label} says {said}")
    score = round(min(1.0, max(0.0, score)), 3)
    if score >= HIGH_AT and outcome.support == SUPPORTED:
        return HIGH, score, ""
    return CHECK, score, reasons[0] if reasons else "the score is below the high band"


def assess(outcome: Outcome, *, others: Sequence[Other] = ()) -> Outcome:
    """Set ``outcome``'s confidence, score and reason by the rule above; return it."""
    outcome.confidence, outcome.score, outcome.confidence_reason = rate(outcome, others=others)
    return outcome


def assess_together(runs: Sequence[tuple[str, Sequence[Outcome]]]) -> None:
    """Assess each outcome with the same question's outcomes from the other methods (``runs``:
    each method's label and its outcomes), so that agreement counts where several methods ran."""
    if len(runs) < 2:
        return
    for mine, (_, outcomes) in enumerate(runs):
        for outcome in outcomes:
            others = [
                (other_label, o)
                for theirs, (other_label, other_outcomes) in enumerate(runs)
                if theirs != mine
                for o in other_outcomes
                if o.question == outcome.question
            ]
            assess(outcome, others=others)


def with_agreement(
    score: float | None, support: str, reason: str, *, agrees: bool, label: str, said: str
) -> tuple[str, float, str]:
    """A band, score and reason already rated, with another method's answer to the same
    question taken into account (the agreement term of the rule above)."""
    value = (score or 0.0) + (AGREE if agrees else -DISAGREE)
    value = round(min(1.0, max(0.0, value)), 3)
    if not agrees:
        reason = f"{label} says {said}"
    if value >= HIGH_AT and support == SUPPORTED:
        return HIGH, value, ""
    return CHECK, value, reason or "the score is below the high band"
