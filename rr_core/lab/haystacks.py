"""Test documents with a known answer ("haystacks"), built the papers' way. Pure: no I/O
except reading a QA file the user points to.

Every builder returns ``Trial`` values: a document cut or extended to about ``length``
tokens, one question, its accepted answers and the page that holds them, planted at
``depth`` percent of the document on a page boundary (so no page is split).

- ``planted_trials``: the user's own document, with a fictional fact (names, amounts,
  dates no model can know) planted at each depth; optionally a paraphrased question and
  distracters (near-copies with other values) elsewhere. Distracters differ per repeat.
- ``passage_trials``: the Lost-in-the-Middle protocol (000 §4.1, 001 §3): one passage per
  page, the gold passage at depth p among other questions' passages.
- ``kv_trials``: key–value retrieval (001 §4): generated UUID pairs, one per page.
- ``question_trials``: the user's own questions (question, answers, gold page) on the document.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rr_core.documents import Document, Page
from rr_core.errors import ConfigError
from rr_core.planting import build_fact
from rr_core.questions import Question
from rr_core.tokens import TokenCounter

Depths = Sequence[float] | Callable[[int], Sequence[float]]


def _depths(depths: Depths, length: int) -> Sequence[float]:
    return depths(length) if callable(depths) else depths


@dataclass(frozen=True, slots=True)
class Trial:
    """One test: a document, a question with known answers, and where the answer sits."""

    id: str
    task: str
    length: int  # target tokens (pairs, for key–value retrieval)
    depth: float  # where the answer sits, percent of the document (0 = start)
    repeat: int
    question_id: str  # trials that ask the same question share it (bounds run once per question)
    question: str
    answers: tuple[str, ...]
    gold_pages: tuple[int, ...]
    document: Document


class PageCounts:
    """Token counts of page texts, each text counted once however many trials reuse it."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._counts: dict[str, int] = {}

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token counts of the texts."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._counts))
        if missing:
            self._counts.update(zip(missing, self.counter.count_many(missing), strict=True))
        return [self._counts[t] for t in texts]

    def document(self, name: str, texts: Sequence[str]) -> Document:
        """A document of these page texts (counted from the cache)."""
        counts = self.count(texts)
        pages = tuple(
            Page(number=i + 1, text=t, tokens=n) for i, (t, n) in enumerate(zip(texts, counts, strict=True))
        )
        return Document(
            name=name,
            kind="txt",
            pages=pages,
            tokenizer=self.counter.label,
            approximate_tokens=self.counter.approximate,
            sha256=hashlib.sha256("\f".join(texts).encode()).hexdigest(),
        )


def fit_length(texts: Sequence[str], counts: Sequence[int], length: int) -> list[int]:
    """Indices of source pages making about ``length`` tokens: the document cut, or extended
    by starting over from its first page (repeated pages are the same text again)."""
    if not texts or sum(counts) <= 0:
        raise ConfigError("The document has no text to build test documents from.")
    out: list[int] = []
    total = 0
    i = 0
    while total < length:
        index = i % len(texts)
        if total + counts[index] > length and out:
            break
        out.append(index)
        total += counts[index]
        i += 1
    return out


def boundary_at(counts: Sequence[int], depth: float) -> int:
    """The page (0-based) starting nearest to ``depth`` percent of the tokens."""
    total = sum(counts)
    target = total * min(max(depth, 0.0), 100.0) / 100
    starts = [0]
    for n in counts[:-1]:
        starts.append(starts[-1] + n)
    return min(range(len(starts)), key=lambda i: (abs(starts[i] - target), i))


def depth_of(counts: Sequence[int], page_index: int) -> float:
    """Where a page starts, in percent of the document's tokens."""
    total = sum(counts) or 1
    return round(100 * sum(counts[:page_index]) / total, 1)


def planted_trials(
    document: Document,
    cache: PageCounts,
    *,
    lengths: Sequence[int],
    depths: Depths,
    repeats: int,
    seed: int = 0,
    paraphrase: bool = False,
    distracters: int = 0,
) -> list[Trial]:
    """Facts planted in the user's document at each length × depth, ``repeats`` facts per cell."""
    texts = [p.text for p in document.pages if p.has_text]
    counts = cache.count(texts)
    trials: list[Trial] = []
    for repeat in range(repeats):
        fact = build_fact(seed * 1_000 + repeat)
        question = fact.paraphrase if paraphrase else fact.question
        rng = random.Random(f"{seed}-{repeat}")
        for length in lengths:
            chosen = fit_length(texts, counts, length)
            base = [texts[i] for i in chosen]
            base_counts = [counts[i] for i in chosen]
            for depth in _depths(depths, length):
                gold = boundary_at(base_counts, depth)
                pages = list(base)
                # The fact opens the page at the boundary: no page is split, the fact is whole.
                pages[gold] = f"{fact.sentence}\n\n{pages[gold]}"
                others = [i for i in range(len(pages)) if i != gold]
                for sentence, where in zip(
                    fact.distracters[:distracters],
                    rng.sample(others, min(distracters, len(others))),
                    strict=False,
                ):
                    pages[where] = f"{pages[where]}\n\n{sentence}"
                trials.append(
                    Trial(
                        id=f"planted-d{length}-p{depth:g}-r{repeat}",
                        task="planted",
                        length=length,
                        depth=float(depth),
                        repeat=repeat,
                        question_id=f"fact-{seed}-{repeat}",
                        question=question,
                        answers=fact.answers,
                        gold_pages=(gold + 1,),
                        document=cache.document(
                            f"{document.name} · {length:,} tokens · fact at {depth:g}%", pages
                        ),
                    )
                )
    return trials


@dataclass(frozen=True, slots=True)
class QAItem:
    """A question of a QA set with its answers and its gold passage."""

    question: str
    answers: tuple[str, ...]
    passage: str


def read_qa_jsonl(path: Path, limit: int = 5_000) -> list[QAItem]:
    """A QA file in the Lost-in-the-Middle format (JSONL, optionally gzipped): ``question``,
    ``answers``, and the gold passage in ``ctxs[0]`` (``title``, ``text``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    items: list[QAItem] = []
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    ctx = row["ctxs"][0]
                    passage = f"{ctx.get('title', '')}\n{ctx['text']}".strip()
                    items.append(QAItem(str(row["question"]), tuple(str(a) for a in row["answers"]), passage))
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise ConfigError(
                        f"{path.name}, line {number}: not a question with answers and ctxs ({exc})."
                    ) from None
                if len(items) >= limit:
                    break
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if len(items) < 2:
        raise ConfigError(
            f"{path.name} needs at least two questions (the others' passages are the distracters)."
        )
    return items


def passage_trials(
    items: Sequence[QAItem],
    cache: PageCounts,
    *,
    lengths: Sequence[int],
    depths: Depths,
    repeats: int,
    seed: int = 0,
) -> list[Trial]:
    """Gold passage at each depth among other questions' passages, one passage per page."""
    rng = random.Random(seed)
    picks = rng.sample(range(len(items)), min(repeats, len(items)))
    counts = cache.count([it.passage for it in items])
    trials: list[Trial] = []
    for repeat, index in enumerate(picks):
        item = items[index]
        # Other questions' passages; a passage identical to the gold one would be a second gold page.
        pool = [i for i in range(len(items)) if items[i].passage != item.passage]
        order = random.Random(f"{seed}-{repeat}").sample(pool, len(pool))
        for length in lengths:
            chosen: list[int] = []
            total = counts[index]
            for i in order:
                if total + counts[i] > length and chosen:
                    break
                chosen.append(i)
                total += counts[i]
            distracter_counts = [counts[i] for i in chosen]
            for depth in _depths(depths, length):
                position = boundary_at([*distracter_counts, 0], depth) if chosen else 0
                page_ids = [*chosen[:position], index, *chosen[position:]]
                texts = [items[i].passage for i in page_ids]
                trials.append(
                    Trial(
                        id=f"passages-d{length}-p{depth:g}-r{repeat}",
                        task="passages",
                        length=length,
                        depth=float(depth),
                        repeat=repeat,
                        question_id=f"qa-{index}",
                        question=item.question,
                        answers=item.answers,
                        gold_pages=(position + 1,),
                        document=cache.document(f"{len(texts)} passages · gold at {depth:g}%", texts),
                    )
                )
    return trials


def kv_trials(
    cache: PageCounts,
    *,
    pairs: Sequence[int],
    depths: Sequence[float],
    repeats: int,
    seed: int = 0,
) -> list[Trial]:
    """Key–value retrieval: ``n`` UUID pairs, one per page, the asked key at each depth."""
    trials: list[Trial] = []
    for repeat in range(repeats):
        rng = random.Random(f"kv-{seed}-{repeat}")
        for n in pairs:
            records = [
                (
                    str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                )
                for _ in range(n)
            ]
            texts = [json.dumps({k: v}) for k, v in records]
            counts = cache.count(texts)
            for depth in depths:
                gold = boundary_at(counts, depth)
                key, value = records[gold]
                trials.append(
                    Trial(
                        id=f"kv-n{n}-p{depth:g}-r{repeat}",
                        task="kv",
                        length=n,
                        depth=float(depth),
                        repeat=repeat,
                        question_id=f"kv-{seed}-{repeat}-{n}-{gold}",
                        question=f"What is the value associated with the key {key}?",
                        answers=(value,),
                        gold_pages=(gold + 1,),
                        document=cache.document(f"{n} key–value pairs · key at {depth:g}%", texts),
                    )
                )
    return trials


def question_trials(document: Document, questions: Iterable[Question]) -> list[Trial]:
    """The user's own questions on the whole document; depth is where the gold page starts."""
    counts = document.page_tokens
    trials = []
    for i, q in enumerate(questions):
        if not q.answers or not q.gold_pages:
            raise ConfigError(
                f"Question {i + 1} ({q.text[:40]}…) needs its answers and gold page to be measured."
            )
        outside = [p for p in q.gold_pages if not 1 <= p <= len(document.pages)]
        if outside:
            raise ConfigError(f"Question {i + 1}: gold page {outside[0]} is not in the document.")
        trials.append(
            Trial(
                id=f"own-q{i + 1}",
                task="questions",
                length=document.total_tokens,
                depth=depth_of(counts, q.gold_pages[0] - 1),
                repeat=0,
                question_id=f"own-{i + 1}",
                question=q.text,
                answers=q.answers,
                gold_pages=q.gold_pages,
                document=document,
            )
        )
    return trials
