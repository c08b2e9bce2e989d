"""The offline engine: not an LLM. It reads the prompt a model would read and answers by
lexical ranking, in the same JSON format, so the whole product works with no key."""

from __future__ import annotations

import json
import re
import time

from rr_core.llm.base import Completion, LLMRequest, Usage
from rr_core.prompts import split_tagged
from rr_core.retrieval import BM25, sentences, terms
from rr_core.tokens import TokenCounter, counter_for_model

OFFLINE_LABEL = "Offline engine (BM25 page ranking + sentence extraction; not an LLM)"

_QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)


class OfflineEngine:
    """Answers by BM25 over the pages in the prompt; usage is the real token count."""

    name = "offline"
    is_llm = False

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or counter_for_model()

    def complete(self, request: LLMRequest) -> Completion:
        """Rank the prompt's pages (retrieve) or extract the best sentence (answer)."""
        started = time.perf_counter()
        match = _QUESTION.search(request.prompt)
        question = match.group(1).strip() if match else ""
        pages = split_tagged(request.prompt)
        if request.task == "retrieve":
            payload: dict[str, object] = {
                "question": question,
                "pages": self._retrieve(question, pages, request.top_k),
            }
        else:
            answer, page = self._answer(question, pages)
            payload = {"question": question, "answer": answer, "page": page}
        text = json.dumps(payload, ensure_ascii=False)
        usage = Usage(
            input_tokens=self.counter.count(request.prompt),
            output_tokens=self.counter.count(text),
        )
        raw = {"engine": "offline", "seconds": round(time.perf_counter() - started, 4)}
        return Completion(text=text, usage=usage, model="offline", structured=True, raw=raw)

    @staticmethod
    def _retrieve(question: str, pages: list[tuple[int, str]], top_k: int) -> list[int]:
        if not pages:
            return []
        index = BM25([text for _, text in pages])
        return [pages[i][0] for i in index.rank(question, top_k)]

    @staticmethod
    def _answer(question: str, pages: list[tuple[int, str]]) -> tuple[str, str]:
        """The sentence sharing the most weighted question terms, with its page."""
        candidates = [(number, s) for number, text in pages for s in sentences(text)]
        if not candidates or not terms(question):
            return "n/a", "n/a"
        index = BM25([s for _, s in candidates], b=0.3)
        scores = index.scores(question)
        # Page-level relevance breaks ties between similar sentences on different pages.
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
