"""Passages: pages cut into short runs of words for lexical search (RAG, BriefContext).

A passage never crosses a page boundary, so every passage has exactly one page: retrieved
text is highlighted on its page and an answer over passages cites a page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rr_core.retrieval import BM25

_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Passage:
    """A run of about ``words`` words of one page."""

    page: int
    index: int  # 0-based position of the passage within its page
    text: str


def split_passages(pages: Sequence[tuple[int, str]], words: int) -> list[Passage]:
    """Cut each page into consecutive passages of about ``words`` words (the last ones of a
    page may be shorter; a page with fewer words is one passage). Covers every word once."""
    out: list[Passage] = []
    for number, text in pages:
        spans = [m.span() for m in _WORD.finditer(text)]
        if not spans:
            continue
        count = max(1, round(len(spans) / words))
        size = -(-len(spans) // count)  # ceil: even-sized passages within the page
        for index, first in enumerate(range(0, len(spans), size)):
            last = min(first + size, len(spans)) - 1
            out.append(Passage(number, index, text[spans[first][0] : spans[last][1]]))
    return out


@dataclass(frozen=True, slots=True)
class Ranked:
    """A passage with its BM25 score and rank (1 = best)."""

    passage: Passage
    score: float
    rank: int


def rank_passages(passages: Sequence[Passage], question: str, top: int) -> list[Ranked]:
    """The ``top`` passages by BM25 against the question, best first (positive scores only)."""
    if not passages:
        return []
    index = BM25([p.text for p in passages])
    scores = index.scores(question)
    order = index.rank(question, top)
    return [Ranked(passages[i], scores[i], r) for r, i in enumerate(order, start=1)]
