"""Lexical relevance (BM25) over short texts: the offline engine's reader."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

# Letters and digits of any script: an ASCII-only pattern found no term at all in a Korean
# question, so the offline engine answered "n/a" to everything in non-Latin documents.
_WORD = re.compile(r"[^\W_]+(?:[.,][0-9]+)*")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just me more most my no nor not now of off on once only or other our out over own same she
    should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours shall may must""".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased content words with a light suffix stemmer."""
    out = []
    for raw in _WORD.findall(text.lower()):
        if raw in STOPWORDS:
            continue
        out.append(_stem(raw))
    return out


def _stem(word: str) -> str:
    if word[0].isdigit() or len(word) <= 4:
        return word
    for suffix in ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


class BM25:
    """Okapi BM25 over a small collection, built once and queried many times."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.4, b: float = 0.75) -> None:
        self.docs = [Counter(terms(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg_len = (sum(self.lengths) / len(self.lengths)) if self.docs else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every text for the query."""
        q_terms = set(terms(query))
        out = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * length / (self.avg_len or 1.0))
            for term in q_terms:
                tf = doc.get(term)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            out.append(score)
        return out

    def rank(self, query: str, top_k: int) -> list[int]:
        """Indices of the best ``top_k`` texts with a positive score, best first."""
        scored = [(s, i) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda si: (-si[0], si[1]))
        return [i for _, i in scored[:top_k]]


_ABBREVIATIONS = (
    "Dr",
    "Mr",
    "Ms",
    "Mrs",
    "Prof",
    "No",
    "St",
    "Inc",
    "Ltd",
    "Co",
    "vs",
    "e.g",
    "i.e",
    "cf",
    "Art",
    "Sec",
)
_NOT_AFTER_ABBREVIATION = "".join(f"(?<!\\b{re.escape(a)}\\.)" for a in _ABBREVIATIONS)
_SENTENCE_END = re.compile(
    _NOT_AFTER_ABBREVIATION + r"(?<=[.!?;])\s+(?=[A-Z0-9(\"'])|\n{2,}|\n(?=[-*•\d]+[.)]?\s)"
)


_BULLET = re.compile(r"[-*•]\s|\d+[.)]\s")


def _paragraphs(text: str) -> list[str]:
    """Join wrapped lines; a short line followed by a capitalised one (a heading, a table
    row) stands on its own."""
    out: list[str] = []
    current: list[str] = []
    lines = [line.strip() for line in text.split("\n")]
    for index, line in enumerate(lines):
        if not line:
            if current:
                out.append(" ".join(current))
                current = []
            continue
        current.append(line)
        following = lines[index + 1] if index + 1 < len(lines) else ""
        heading_like = len(line) < 60 and not line.endswith((",", "-", ";", ":"))
        if (heading_like and following[:1].isupper()) or _BULLET.match(following):
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def sentences(text: str) -> list[str]:
    """Split text into sentence-like pieces, joining wrapped lines."""
    pieces = []
    for chunk in (c for p in _paragraphs(text) for c in _SENTENCE_END.split(p)):
        piece = " ".join(chunk.split())
        if len(piece) >= 3:
            pieces.append(piece)
    return pieces
