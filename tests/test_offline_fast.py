"""The fast offline engine (issue 9): the same retrieval as before, each page read once, usage
counted exactly without tokenising loaded pages again. (Answer calls are read extractively
since issue 15, see ``test_offline_reader.py``: their prompts and usage still match.)"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

import pytest
from conftest import word_counter
from hypothesis import given
from hypothesis import strategies as st

from rr_core import retrieval
from rr_core.documents import document_from_texts
from rr_core.llm import OfflineEngine
from rr_core.llm.base import LLMClient, LLMRequest
from rr_core.llm.offline import prompt_tokens
from rr_core.methods import get_method, plan_method
from rr_core.outputs import AnswerOut
from rr_core.plans import StepResult
from rr_core.prompts import build_prompt, instructions, restore, split_tagged
from rr_core.retrieval import BM25, PageTerms, page_terms, sentence_scores, sentences, terms
from rr_core.samples import get_sample
from rr_core.settings import RunSettings
from rr_core.tokens import TokenCounter, _load_encoding, counter_for_model
from tests import offline_reference as reference

# ---- Texts that probe every rule: abbreviations, numbers, bullets, scripts, tag look-alikes

_PIECES = st.sampled_from(
    [
        "Dr.", "e.g.", "No.", "Sec.", "Inc.", "vs.", "The", "fee", "payments", "terminations",
        "agencies", "4.2", "1,000", "3.", "(a)", "\"Quoted\"", "'single'", "end.", "Why?", "Stop!",
        "semi;", "- bullet", "* star", "• dot", "12)", "1.", "snake_case", "_", "빅포인트의",
        "유효기간은", "ΟΔΟΣ", "İstanbul", "café", "coûte", "<PAGE 3>", "</PAGE 2>", "<DOCUMENT>",
        "\u2039", ">", "<", "/", "//", "a/b", "x" * 30, "Question: injected", "<|endoftext|>",
        ".5", "(4.2),", "e.g.,", "U.S.", "x_1.5", "1_.5", "a.5_b", "\u01c5", "\ufb01", "\u00b2", "\u0130.",
        "임차인이", "보증금은", "얼마입니까?", "承租人应支付多少押金。", "押金。", "第5条", "賃借人が支払う", "ユーロ", "。",
        "！", "ㄱ", "제5조", "A3押金B",
    ]
)  # fmt: skip
_SEPARATORS = st.sampled_from(
    [
        " ",
        " ",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\n\n\n",
        "\t",
        " \n ",
        "\r\n",
        ">\n\n<",
        "\u00a0",
        "\u2028",
        "\x1c",
        ". ",
    ]
)


@st.composite
def page_text(draw: Any, max_pieces: int = 40) -> str:
    pieces = draw(st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=max_pieces))
    out = []
    for piece in pieces:
        out.append(piece)
        out.append(draw(_SEPARATORS))
    text = "".join(out)
    return text.strip() if draw(st.booleans()) else text


@given(page_text())
def test_terms_and_sentences_are_those_of_the_reference(text: str) -> None:
    assert terms(text) == reference.terms(text)
    assert sentences(text) == reference.sentences(text)
    read = PageTerms.of(text)
    assert read.counts == Counter(reference.terms(text))
    assert read.sentences == tuple(reference.sentences(text))
    assert read.sentence_terms == tuple(tuple(reference.terms(s)) for s in reference.sentences(text))


@given(texts=st.lists(page_text(max_pieces=20), max_size=6), query=page_text(max_pieces=5))
def test_bm25_from_counts_terms_and_sentence_scores_agree(texts: list[str], query: str) -> None:
    plain = BM25(texts)
    assert BM25.from_counts(Counter(reference.terms(t)) for t in texts).scores(query) == plain.scores(query)
    assert BM25.from_terms(reference.terms(t) for t in texts).scores(query) == plain.scores(query)
    assert plain.scores(query) == reference.BM25(texts).scores(query)
    read = [PageTerms.of(t) for t in texts]
    flat = BM25.from_terms((s for page in read for s in page.sentence_terms), b=0.3).scores(query)
    by_page = sentence_scores(read, query, b=0.3)
    expected = [
        flat[sum(len(p.sentences) for p in read[:j]) :][: len(read[j].sentences)] for j in range(len(read))
    ]
    assert [s if s is not None else [0.0] * len(read[j].sentences) for j, s in enumerate(by_page)] == expected


def test_sentence_rules_hold_on_a_realistic_page() -> None:
    text = (
        "Dr. Smith met Mr. Jones at 10.30 a.m. on 1 May. They signed the Agreement; Fees are due.\n"
        "The rate is 1.75 percent per month. e.g. Late fees apply? Yes! (a) First item.\n"
        "- a bullet\n2) a numbered item\nSHORT HEADING\nNext paragraph starts here."
    )
    assert sentences(text) == reference.sentences(text)
    assert PageTerms.of(text).sentences == tuple(reference.sentences(text))


@given(
    texts=st.lists(page_text(max_pieces=12), max_size=6),
    raw=st.lists(
        st.sampled_from(["<PAGE 2>\n", "\n</PAGE 2>", "<PAGE ", "x", "\n", "<PAGE ٣>\nq\n</PAGE ٣>"]),
        max_size=8,
    ),
)
def test_split_tagged_reads_prompts_as_the_plain_regex_does(texts: list[str], raw: list[str]) -> None:
    # The definition: a lazy regex from each opening tag to its own closing tag (slow on long
    # prompts, so the code finds closing tags with str.find instead).
    reference = re.compile(r"<PAGE (\d+)>\n(.*?)\n</PAGE \1>", re.DOTALL)
    prompt = build_prompt(instructions("answer", "q"), list(enumerate(texts, start=1)))
    for odd in (prompt, "".join(raw), "".join(raw) + prompt + "".join(raw)):
        expected = [(int(m.group(1)), restore(m.group(2))) for m in reference.finditer(odd)]
        assert split_tagged(odd) == expected


# ---- Each page read once ---------------------------------------------------------------------


def test_a_page_is_turned_into_terms_once_across_calls_and_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"Page {i} talks about late payment interest number {i}." for i in range(60)]
    read_count: Counter[str] = Counter()
    original = PageTerms.of

    def counting(text: str) -> PageTerms:
        read_count[text] += 1
        return original(text)

    monkeypatch.setattr(PageTerms, "of", staticmethod(counting))
    retrieval._PAGES.clear()
    start = threading.Barrier(3)
    results: list[list[PageTerms]] = []

    def read() -> None:
        start.wait(timeout=30)
        results.append(page_terms(texts))

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    results.append(page_terms(texts[::-1])[::-1])
    assert set(read_count) == set(texts) and max(read_count.values()) == 1
    assert len(results) == 4 and all(r == results[0] for r in results)


def test_the_page_memory_is_bounded() -> None:
    memory = retrieval._PageMemory(capacity=5)
    memory.read([f"text {i}" for i in range(12)])
    assert len(memory._pages) == 5


# ---- Usage: exact, without tokenising loaded pages again -------------------------------------


def _counters() -> list[TokenCounter]:
    out = [word_counter()]
    for model in ("gpt-4.1-mini", "gpt-4-turbo"):  # o200k_base, cl100k_base
        if _load_encoding(counter_for_model(model).encoding_name)[0] is not None:
            out.append(counter_for_model(model))
    return out


@pytest.mark.parametrize("counter", _counters(), ids=lambda c: c.label)
@given(
    texts=st.lists(page_text(max_pieces=25), min_size=1, max_size=6),
    reminders_after=st.sets(st.integers(1, 6), max_size=3),
    leading=st.integers(0, 2),
    counted=st.booleans(),
    task=st.sampled_from(["answer", "retrieve"]),
)
def test_prompt_tokens_is_the_whole_prompts_count(
    counter: TokenCounter, texts: list[str], reminders_after: set[int], leading: int, counted: bool, task: str
) -> None:
    if counted:  # the pages were counted when their document was loaded
        counter.count_many(texts)
    blocks = instructions(task, "What is the fee?\n<PAGE 1>", top_k=3)
    prompt = build_prompt(
        blocks,
        list(enumerate(texts, start=1)),
        reminders_after=reminders_after,
        reminders_before_document=leading,
    )
    assert prompt_tokens(counter, prompt) == counter.count(prompt)


def test_usage_does_not_tokenise_the_loaded_pages_again(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _counters()[-1]
    sample = get_sample("contract")
    document = document_from_texts(sample.title, sample.pages, counter=counter)
    plan = plan_method(document, sample.questions[2].question, RunSettings(method="baseline"), counter)
    prompt = plan.calls[0].render()
    expected = counter.count(prompt)
    counted: list[str] = []
    original = TokenCounter.count

    def spy(self: TokenCounter, text: str) -> int:
        counted.append(text)
        return original(self, text)

    monkeypatch.setattr(TokenCounter, "count", spy)
    completion = OfflineEngine(counter).complete(
        LLMRequest(prompt=prompt, schema=AnswerOut, model="offline", layout=plan.calls[0].layout)
    )
    assert completion.usage.input_tokens == expected
    # What is counted is the instructions and the seams where tags meet text, never a page
    # (the instructions are as long as a short page: judged by content, not by length).
    pages = [" ".join(p.text.split()) for p in document.pages if p.text.strip()]
    for text in counted:
        flat = " ".join(text.split())
        assert not any(page in flat for page in pages), "a page (or the whole prompt) was tokenised again"


# ---- The same completions as the engine before -----------------------------------------------


def _calls(engine: LLMClient, document: Any, question: str, method: str, counter: TokenCounter) -> list[Any]:
    """Every completion of one method, driven phase by phase (no threads: a fixed order)."""
    settings = RunSettings(method=method, chunk_size=12_000, reminder_every=4_000)
    plan = get_method(method).plan(document, question, settings, counter)
    out: list[Any] = []
    done: list[dict[str, StepResult]] = []
    for phase in plan.phases:
        concrete = phase.resolve(done) if phase.estimated and phase.resolve else phase
        results: dict[str, StepResult] = {}
        for call in concrete.calls:
            request = LLMRequest(
                prompt=call.render(), schema=call.schema, model="offline", layout=call.layout
            )
            out.append(engine.complete(request))
            results[call.id] = StepResult(call, call.schema.parse(out[-1].text))
        done.append(results)
    return out


def _comparable(completions: list[Any]) -> list[tuple[str, int]]:
    """Each call's retrieval reply (an answer reply: only that it answered) and input tokens."""
    return [
        (c.text if '"pages"' in c.text or '"results"' in c.text else "answer", c.usage.input_tokens)
        for c in completions
    ]


@pytest.mark.parametrize("name", ["contract", "protocol"])
def test_the_engine_answers_the_samples_as_before(name: str) -> None:
    counter = _counters()[-1]
    sample = get_sample(name)
    document = document_from_texts(sample.title, sample.pages, counter=counter)
    fast, slow = OfflineEngine(counter), reference.ReferenceEngine(counter)
    questions = [q.question for q in sample.questions[::4]] + ["Who is the zebra keeper?"]
    for question in questions:
        for method in ("baseline", "rr", "chunked-rr", "icr"):
            got = _calls(fast, document, question, method, counter)
            expected = _calls(slow, document, question, method, counter)
            assert _comparable(got) == _comparable(expected), (question, method)


@given(texts=st.lists(page_text(), min_size=1, max_size=8), question=page_text(max_pieces=6))
def test_the_engine_answers_odd_pages_as_before(texts: list[str], question: str) -> None:
    counter = word_counter()
    document = document_from_texts("odd", texts, counter=counter)
    question = " ".join(question.split()) or "fee"
    fast, slow = OfflineEngine(counter), reference.ReferenceEngine(counter)
    for method in ("baseline", "rr"):
        got = _calls(fast, document, question, method, counter)
        expected = _calls(slow, document, question, method, counter)
        assert _comparable(got) == _comparable(expected)
