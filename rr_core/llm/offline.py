"""The offline engine: not an LLM. It reads the prompt a model would read and answers by
lexical ranking, in the same JSON format, so the whole product works with no key."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import rr_core.support  # noqa: F401  (its code is part of the reader's version)
from rr_core.errors import ProviderError
from rr_core.llm.base import BatchAPI, Completion, Identity, LLMRequest, Usage
from rr_core.llm.batch import LocalBatch
from rr_core.outputs import (
    AnswerOut,
    ExtractionOut,
    MultiRetrievalOut,
    Output,
    PlainAnswerOut,
    PlainRetrievalOut,
    RetrievalOut,
)
from rr_core.prompts import split_tagged
from rr_core.reader import read_answer
from rr_core.retrieval import BM25, page_terms
from rr_core.tokens import TokenCounter, counter_for_model

OFFLINE_LABEL = "Offline engine (BM25 page ranking + extractive reading; not an LLM)"


def _reader_version() -> str:
    """The engine's code as a digest: a reply stored by another version of the reader (before
    an upgrade) never answers for this one (the call cache keys on the engine's identity)."""
    digest = hashlib.sha256()
    for name in ("rr_core.reader", "rr_core.retrieval", "rr_core.support", __name__):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            try:
                digest.update(Path(path).read_bytes())
            except OSError:
                digest.update(name.encode())
    return digest.hexdigest()[:16]


_QUESTION = re.compile(r"^Question(?: \d+)?: (.*)$", re.MULTILINE)
_LIMIT = re.compile(r"up to (\d+) page")


def _read(request: LLMRequest) -> tuple[list[str], list[tuple[int, str]], int]:
    """The question(s), pages and page limit of a request: from its layout, or (a bare
    prompt) from the text, as a reader would."""
    layout = request.layout
    if layout is not None:
        return list(layout.questions), layout.pages(), layout.limit or 5
    prompt = request.prompt
    # The opening instructions hold the question(s); they end at the first closing tag.
    head = prompt.split("</INSTRUCTIONS>", 1)[0]
    limit = _LIMIT.search(head)
    return (
        [q.strip() for q in _QUESTION.findall(head)],
        split_tagged(prompt),
        int(limit.group(1)) if limit else 5,
    )


_PAGE_OPEN = re.compile(r"<PAGE (\d+)>\n")


class OfflineEngine:
    """Answers by BM25 over the pages in the prompt; usage is the real token count."""

    name = "offline"
    is_llm = False
    max_concurrency: int | None = 1  # local Python work: calls_at_once

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or counter_for_model()
        # Not a provider batch: every call answered here, at once (``LocalBatch``).
        self.batch: BatchAPI | None = LocalBatch(self)

    def identity(self) -> Identity:
        """The tokenizer counts the usage it reports; the reader's version decides its replies."""
        return {"provider": self.name, "tokenizer": self.counter.label, "reader": _READER_VERSION}

    def complete(self, request: LLMRequest) -> Completion:
        """Fill the requested output shape from the prompt's pages, as a model would."""
        started = time.perf_counter()
        questions, pages, limit = _read(request)
        fill = _FILLERS.get(request.schema)
        if fill is None:
            raise ProviderError(
                f"The offline engine cannot produce a {request.schema.WIRE_NAME!r} reply.", provider=self.name
            )
        payload = fill(self, questions, pages, limit)
        text = json.dumps(payload, ensure_ascii=False)
        usage = Usage(
            input_tokens=prompt_tokens(self.counter, request.prompt),
            output_tokens=self.counter.count(text),
        )
        raw = {"engine": "offline", "seconds": round(time.perf_counter() - started, 4)}
        return Completion(text=text, usage=usage, model="offline", structured=True, raw=raw)

    def _fill_retrieval(
        self, questions: list[str], pages: list[tuple[int, str]], limit: int
    ) -> dict[str, object]:
        question = questions[0] if questions else ""
        return {"question": question, "pages": self._retrieve(question, pages, limit)}

    def _fill_retrieval_many(
        self, questions: list[str], pages: list[tuple[int, str]], limit: int
    ) -> dict[str, object]:
        return {
            "results": [
                {"question": i, "pages": self._retrieve(q, pages, limit)}
                for i, q in enumerate(questions, start=1)
            ]
        }

    def _fill_answer(
        self, questions: list[str], pages: list[tuple[int, str]], limit: int
    ) -> dict[str, object]:
        question = questions[0] if questions else ""
        reading = read_answer(question, pages)
        citations = [{"page": str(c.page), "quote": c.quote} for c in reading.citations]
        first = citations[0] if citations else {"page": "n/a", "quote": ""}
        return {
            "question": question,
            "answer": reading.answer,
            "found": reading.found,
            "citations": citations,
            "pages_to_read": list(reading.pages_to_read),
            # The first citation again, for readers of the one-citation shape.
            "page": first["page"],
            "quote": first["quote"],
        } | ({} if reading.found else {"absent_by": "reader"})  # who says it is absent: this reader

    def _fill_extraction(
        self, questions: list[str], pages: list[tuple[int, str]], limit: int
    ) -> dict[str, object]:
        question = questions[0] if questions else ""
        reading = read_answer(question, pages)
        if not reading.found:
            return {"relevant": False, "extracts": [], "answer": "n/a"}
        return {
            "relevant": True,
            "extracts": [{"page": str(c.page), "text": c.quote} for c in reading.citations],
            "answer": reading.answer,
        }

    @staticmethod
    def _retrieve(question: str, pages: list[tuple[int, str]], top_k: int) -> list[int]:
        if not pages:
            return []
        index = BM25.from_counts(p.counts for p in page_terms([text for _, text in pages]))
        return [pages[i][0] for i in index.rank(question, top_k)]


_Filler = Callable[[OfflineEngine, list[str], list[tuple[int, str]], int], dict[str, object]]
_FILLERS: dict[type[Output], _Filler] = {
    RetrievalOut: OfflineEngine._fill_retrieval,
    MultiRetrievalOut: OfflineEngine._fill_retrieval_many,
    AnswerOut: OfflineEngine._fill_answer,
    ExtractionOut: OfflineEngine._fill_extraction,
    # The paper's plain-text shapes: answered in JSON all the same, which their parsers read
    # first, so that a reader that found nothing still says so ("absent_by": "reader").
    PlainRetrievalOut: OfflineEngine._fill_retrieval,
    PlainAnswerOut: OfflineEngine._fill_answer,
}


# ---- Usage: the prompt's real token count, from counts already known ------------------------
#
# Tokenizers cut text into pieces by a pattern before merging bytes, and no token spans two
# pieces. In a prompt, ">" followed by blank lines always ends a piece right before the next
# "<" (the closing tag of a page, a reminder, <DOCUMENT>): so a prompt's count is the sum of
# the counts of its blocks cut there, exactly. A page block's count comes from its page's
# count, remembered when the document was loaded, plus the two seams where the tags meet
# the text (the tag and the text's first piece; the text's last words and the closing tag),
# so no page is tokenised again. Blocks whose text is not the page's own (neutralised tag
# look-alikes) or that give no safe seam are counted whole, once, and remembered.

_SEAM = ">\n\n<"


def prompt_tokens(counter: TokenCounter, prompt: str) -> int:
    """``counter.count(prompt)``, without tokenising again the pages counted at loading."""
    total = 0
    start = 0
    while (cut := prompt.find(_SEAM, start)) >= 0:
        total += _block_tokens(counter, prompt[start : cut + 3])
        start = cut + 3
    return total + _block_tokens(counter, prompt[start:])


def _block_tokens(counter: TokenCounter, block: str) -> int:
    opening = _PAGE_OPEN.match(block)
    if opening is None or "\u2039" in block:  # not a page, or a page with neutralised tags
        return counter.count_known(block)
    closing = f"\n</PAGE {opening.group(1)}>"
    end = block.rfind(closing)
    if end < opening.end() or block[end + len(closing) :] not in ("", "\n\n"):
        return counter.count_known(block)
    text = block[opening.end() : end]
    # The opening tag's piece ends at its line break unless the text starts with one of these.
    if not text or text[0] in "\r\n/":
        return counter.count_known(block)
    tags = _tag_tokens(counter, block[: opening.end()]) + _tag_tokens(counter, block[end:])
    if text[-1].isalnum():  # a word or number ends the text's last piece, and the text
        return tags + counter.count_known(text)
    # Otherwise (a full stop that takes the line break along...) the seam is counted from
    # the last space after a non-space, where a piece starts in the text and in the block.
    last_space = text.rfind(" ")
    if last_space < 1 or text[last_space - 1].isspace():
        return counter.count_known(block)
    tail = text[last_space:]
    return (
        _tag_tokens(counter, block[: opening.end()])
        + counter.count_known(text)
        - counter.count(tail)
        + counter.count(tail + block[end:])
    )


@lru_cache(maxsize=16_384)
def _tag_tokens(counter: TokenCounter, tag: str) -> int:
    """Tokens of a page's opening or closing tag (with what follows it in the prompt)."""
    return counter.count(tag)


_READER_VERSION = _reader_version()
