"""The offline engine as it was before it was made fast (issue 9), kept as the oracle.

The fast engine must give the same completions, byte for byte, and the same usage: the tests
in ``test_offline_fast.py`` run both on the same prompts. Nothing here is optimised on purpose.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence

from rr_core.llm.base import BatchAPI, Completion, LLMRequest, Usage
from rr_core.prompts import split_tagged
from rr_core.retrieval import _CJK, _HANZI_BREAK, _KOREAN_ENDINGS, _KOREAN_QUESTION, STOPWORDS
from rr_core.tokens import TokenCounter

_WORD = re.compile(r"[^\W_]+(?:[.,][0-9]+)*")
_QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)


def terms(text: str) -> list[str]:
    out = []
    for raw in _WORD.findall(text.lower()):
        if _CJK.search(raw):
            out.extend(_cjk_terms(raw))
            continue
        if raw in STOPWORDS:
            continue
        out.append(_stem(raw))
    return out


def _cjk_terms(word: str) -> list[str]:
    """A word with CJK or Hangul runs: each run by script, its content as character pairs."""
    out: list[str] = []
    position = 0
    for run in _CJK.finditer(word):
        out.extend(terms(word[position : run.start()]))
        out.extend(_run_pairs(run.group()))
        position = run.end()
    out.extend(terms(word[position:]))
    return out


def _run_pairs(run: str) -> list[str]:
    out: list[str] = []
    for match in re.finditer("[\uac00-\ud7a3]+|[\u3040-\u309f]+|[^\uac00-\ud7a3\u3040-\u309f]+", run):
        part = match.group()
        if "\uac00" <= part[0] <= "\ud7a3":
            stem = next(
                (part[: -len(e)] for e in _KOREAN_ENDINGS if part.endswith(e) and len(part) - len(e) >= 2),
                part,
            )
            if stem not in _KOREAN_QUESTION:
                out.extend(_pairs(stem))
        elif not "\u3040" <= part[0] <= "\u309f":  # hiragana is grammar
            for piece in _HANZI_BREAK.split(part):
                if piece:
                    out.extend(_pairs(piece))
    return out


def _pairs(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _stem(word: str) -> str:
    if word[0].isdigit() or len(word) <= 4:
        return word
    for suffix in ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


class BM25:
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
    _NOT_AFTER_ABBREVIATION
    + r"(?<=[.!?;])\s+(?=[A-Z0-9(\"'\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])|\n{2,}|\n(?=[-*•\d]+[.)]?\s)"
    + r"|(?<=[。！？；])\s*"
)
_BULLET = re.compile(r"[-*•]\s|\d+[.)]\s")


def _paragraphs(text: str) -> list[str]:
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
    pieces = []
    for chunk in (c for p in _paragraphs(text) for c in _SENTENCE_END.split(p)):
        piece = " ".join(chunk.split())
        if len(piece) >= 3:
            pieces.append(piece)
    return pieces


class ReferenceEngine:
    """The slow engine: every call reads its pages from scratch and counts the whole prompt."""

    name = "offline-reference"
    is_llm = False
    max_concurrency: int | None = 1
    batch: BatchAPI | None = None  # a reference for answers, not for batches

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def identity(self) -> dict[str, object]:
        return {"provider": self.name, "tokenizer": self.counter.label}

    def complete(self, request: LLMRequest) -> Completion:
        from rr_core.outputs import RetrievalOut

        layout = request.layout
        if layout is not None:
            question, limit = (layout.questions[0] if layout.questions else ""), layout.limit or 5
        else:
            match = _QUESTION.search(request.prompt)
            question, limit = (match.group(1).strip() if match else ""), 5
        pages = split_tagged(request.prompt)
        if request.schema is RetrievalOut:
            payload: dict[str, object] = {
                "question": question,
                "pages": self._retrieve(question, pages, limit),
            }
        else:
            answer, page = self._answer(question, pages)
            payload = {
                "question": question,
                "answer": answer,
                "page": page,
                "quote": "" if answer == "n/a" else answer,
            }
        text = json.dumps(payload, ensure_ascii=False)
        usage = Usage(input_tokens=self.counter.count(request.prompt), output_tokens=self.counter.count(text))
        return Completion(text=text, usage=usage, model="offline", structured=True)

    @staticmethod
    def _retrieve(question: str, pages: list[tuple[int, str]], top_k: int) -> list[int]:
        if not pages:
            return []
        index = BM25([text for _, text in pages])
        return [pages[i][0] for i in index.rank(question, top_k)]

    @staticmethod
    def _answer(question: str, pages: list[tuple[int, str]]) -> tuple[str, str]:
        candidates = [(number, s) for number, text in pages for s in sentences(text)]
        if not candidates or not terms(question):
            return "n/a", "n/a"
        index = BM25([s for _, s in candidates], b=0.3)
        scores = index.scores(question)
        page_index = BM25([text for _, text in pages])
        page_score = dict(zip((n for n, _ in pages), page_index.scores(question), strict=True))
        best = max(
            range(len(candidates)),
            key=lambda i: (scores[i] + 0.1 * page_score[candidates[i][0]], -i),
        )
        if scores[best] <= 0:
            return "n/a", "n/a"
        number, sentence = candidates[best]
        return sentence, str(number)
