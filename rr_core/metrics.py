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


# ASCII characters that are neither a letter, a digit nor whitespace: what §11 drops from ASCII
# text, in one pass of bytes.translate (the regex takes 30 times as long on a long document).
_ASCII_DROPPED = bytes(b for b in range(128) if not (chr(b).isalnum() or chr(b).isspace()))


def fuzzy_normalize(text: str) -> str:
    """METHOD.md §11: lowercase, drop what is not a letter, digit or space, collapse spaces."""
    lowered = text.lower()
    if lowered.isascii():
        return " ".join(lowered.encode("ascii").translate(None, _ASCII_DROPPED).decode("ascii").split())
    return " ".join(_NOT_WORDY.sub("", " ".join(lowered.split())).split())


def fuzzy_match(prediction: str, answers: Iterable[str]) -> float:
    """1.0 if the unique words of the prediction are a subset of a gold answer's, or the other
    way round (METHOD.md §11): words, never characters ("1" does not match "1901")."""
    return max((_fuzzy_one(prediction, gold) for gold in answers), default=0.0)


def _fuzzy_one(prediction: str, gold: str) -> float:
    if prediction.strip().lower() == "n/a" or gold.strip().lower() == "n/a":
        return float(prediction.strip().lower() == gold.strip().lower())
    pw, gw = set(fuzzy_normalize(prediction).split()), set(fuzzy_normalize(gold).split())
    if not pw or not gw:
        return 0.0  # the empty set is a subset of everything: an empty answer matches nothing
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
    body = f" {fuzzy_normalize(text)} "
    return any((norm := fuzzy_normalize(gold)) and f" {norm} " in body for gold in answers)


# ---- The reference metric of the paper's Table 1 (000) -----------------------------------------
#
# The code the paper's authors published scores more leniently than their sentence (METHOD.md
# §11): after lowercasing, trimming, dropping every character that is not an ASCII letter, digit
# or space (unless the text is exactly "n/a") and collapsing runs of spaces, a prediction is
# right when the word sets are subsets either way, *or either text is a substring of the other*
# ("1" matches "1901"; "the Paris region" matches "paris"). Reproduced here to compare with
# Table 1, reported beside the strict word-set metric, never instead of it. One difference: a
# prediction or gold answer left empty by the normalisation matches nothing (an empty string is
# a substring of everything, which would score an empty reply right).

_REFERENCE_DROPPED = re.compile(r"[^a-z0-9 ]+")


def _reference_normalize(text: str) -> str:
    text = text.lower().strip()
    if text == "n/a":
        return text
    return re.sub(" +", " ", _REFERENCE_DROPPED.sub("", text))


def paper_match(prediction: str, answers: Iterable[str]) -> float:
    """The reference code's lenient fuzzy match (see above): 1.0 when, normalised, the words of
    one answer are all in the other, or one text contains the other; the best over the answers."""
    return max((_paper_one(prediction, gold) for gold in answers), default=0.0)


def _paper_one(prediction: str, gold: str) -> float:
    a, b = _reference_normalize(prediction), _reference_normalize(gold)
    if not a.strip() or not b.strip():
        return 0.0
    words_a, words_b = set(a.split()), set(b.split())
    return float(words_a <= words_b or words_b <= words_a or a in b or b in a)
