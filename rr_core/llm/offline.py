"""The offline engine: not an LLM. It reads the prompt a model would read and answers by
lexical ranking, in the same JSON format, so the whole product works with no key."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

from rr_core.errors import ProviderError
from rr_core.llm.base import Completion, LLMRequest, Usage
from rr_core.outputs import AnswerOut, ExtractionOut, MultiRetrievalOut, Output, RetrievalOut
from rr_core.prompts import split_tagged
from rr_core.retrieval import BM25, sentences, terms
from rr_core.tokens import TokenCounter, counter_for_model

OFFLINE_LABEL = "Offline engine (BM25 page ranking + sentence extraction; not an LLM)"

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


class OfflineEngine:
    """Answers by BM25 over the pages in the prompt; usage is the real token count."""

    name = "offline"
    is_llm = False

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or counter_for_model()

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
            input_tokens=self.counter.count(request.prompt),
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
        answer, page = self._answer(question, pages)
        return {
            "question": question,
            "answer": answer,
            "page": page,
            "quote": "" if answer == "n/a" else answer,
        }

    def _fill_extraction(
        self, questions: list[str], pages: list[tuple[int, str]], limit: int
    ) -> dict[str, object]:
        question = questions[0] if questions else ""
        answer, page = self._answer(question, pages)
        if answer == "n/a":
            return {"relevant": False, "extracts": [], "answer": "n/a"}
        return {"relevant": True, "extracts": [{"page": page, "text": answer}], "answer": answer}

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


_Filler = Callable[[OfflineEngine, list[str], list[tuple[int, str]], int], dict[str, object]]
_FILLERS: dict[type[Output], _Filler] = {
    RetrievalOut: OfflineEngine._fill_retrieval,
    MultiRetrievalOut: OfflineEngine._fill_retrieval_many,
    AnswerOut: OfflineEngine._fill_answer,
    ExtractionOut: OfflineEngine._fill_extraction,
}
