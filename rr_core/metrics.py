"""Scoring answers and retrieval (METHOD.md §11)."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rr_core.plans import Outcome

# Letters and digits of any script survive (a Korean answer is not an empty string).
_NOT_WORDY = re.compile(r"[^\w ]|_")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _fuzzy_norm(text: str) -> str:
    text = _NOT_WORDY.sub("", " ".join(text.lower().split()))
    return " ".join(text.split())


def fuzzy_match(prediction: str, answers: Iterable[str]) -> float:
    """1.0 if one string's word set is a subset of the other's (or contains it), for any gold."""
    return max((_fuzzy_one(prediction, gold) for gold in answers), default=0.0)


def _fuzzy_one(prediction: str, gold: str) -> float:
    if prediction.strip().lower() == "n/a" or gold.strip().lower() == "n/a":
        return float(prediction.strip().lower() == gold.strip().lower())
    p, g = _fuzzy_norm(prediction), _fuzzy_norm(gold)
    if not p or not g:
        return 0.0
    if p in g or g in p:
        return 1.0
    pw, gw = set(p.split()), set(g.split())
    return float(pw <= gw or gw <= pw)


def squad_normalize(text: str) -> str:
    """SQuAD normalisation: lowercase, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def best_subspan_em(prediction: str, answers: Iterable[str]) -> float:
    """1.0 if any normalised gold answer is a substring of the normalised prediction."""
    norm = squad_normalize(prediction)
    return float(any(squad_normalize(g) and squad_normalize(g) in norm for g in answers))


def page_recall(retrieved: Sequence[int], gold_page: int) -> float:
    """1.0 if the gold page is among the retrieved pages."""
    return float(gold_page in retrieved)


def page_accuracy(cited: int | None, gold_page: int) -> float:
    """1.0 if the cited page is the gold page."""
    return float(cited == gold_page)


def mark_outcome(outcome: Outcome, answers: Sequence[str], gold_pages: Sequence[int] = ()) -> None:
    """Record the known answers on an outcome and whether its answer matches (fuzzy match)."""
    outcome.gold_answers = list(answers)
    outcome.gold_pages = list(gold_pages)
    outcome.correct = bool(fuzzy_match(outcome.compared_answer, answers)) if answers else None


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether any answer occurs in the text as whole words, both normalised as for fuzzy match
    (§11): "1901" does not occur in "19011", "Paris" does in "(Paris, France)"."""
    body = f" {_fuzzy_norm(text)} "
    return any((norm := _fuzzy_norm(gold)) and f" {norm} " in body for gold in answers)
