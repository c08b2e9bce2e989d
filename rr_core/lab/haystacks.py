"""Test documents with a known answer ("haystacks"), built the papers' way. Pure: no I/O
except reading a QA file the user points to.

Every builder returns ``Trial`` values: a document cut or extended to about ``length``
tokens, one question, its accepted answers and the page that holds them, planted at
``depth`` percent of the document on a page boundary (so no page is split).

- ``planted_trials``: the user's own document, with a fictional fact (names, amounts,
  dates no model can know) planted at each depth; optionally a paraphrased question and
  distracters (near-copies with other values) elsewhere. Distracters differ per repeat. A fact
  the cut document could answer by itself (it states an accepted answer, or names the fact's
  subject) is replaced by the next candidate, deterministically; ``Trial.replanted`` counts them.
- ``passage_trials``: the Lost-in-the-Middle protocol (000 §4.1, 001 §3): one passage per
  page, the gold passage at depth p among the question's own retrieved passages (or, from an
  oracle-only file, other questions' passages ranked by BM25), answer-bearing ones left out.
- ``kv_trials``: key–value retrieval (001 §4): pairs one per page, generated or from a file.
- ``question_trials``: the user's own questions (question, answers, gold page) on the document.

Each trial carries its ``TrialRecipe``: plain data (a job's source) from which that one trial
is built again, exactly, without the others (``TrialRecipe.build``); what trials share (a
parsed file, its BM25 index, the host's text and facts) is kept per process, a few at a time.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from rr_core.documents import Document, Page
from rr_core.errors import ConfigError
from rr_core.jobs import register_source
from rr_core.metrics import contains_answer
from rr_core.planting import HostText, PlantedFact, plant_fact
from rr_core.questions import Question
from rr_core.retrieval import BM25
from rr_core.tokens import TokenCounter

Depths = Sequence[float] | Callable[[int], Sequence[float]]


def unique_depths(depths: Depths, length: int) -> list[float]:
    """The depths at one length, each once (a depth asked twice is one cell, not two)."""
    return list(dict.fromkeys(float(d) for d in (depths(length) if callable(depths) else depths)))


def _cells(lengths: Sequence[int], depths: Depths) -> int:
    return sum(len(unique_depths(depths, length)) for length in dict.fromkeys(lengths))


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
    construction: str = ""  # how the distracters were chosen (``CONSTRUCTIONS``), where it varies
    exact: bool = False  # scored by exact match (key–value: the value itself), not fuzzy match
    replanted: int = 0  # planted facts: candidates rejected first (the document could answer them)
    dropped: int = 0  # passages left out because they hold an accepted answer (not the gold)
    recipe: TrialRecipe | None = None  # what it was built from (None: made by hand)

    @property
    def tokens(self) -> int:
        """The tokens of the document actually built (``length`` is the one asked for)."""
        return self.document.total_tokens

    @property
    def gold_depth(self) -> float:
        """Where the answer's page really starts, in percent of the built document's tokens
        (``depth`` is the one asked for: page boundaries move it a little)."""
        if not self.gold_pages:
            return self.depth
        return depth_of(self.document.page_tokens, self.gold_pages[0] - 1)

    @property
    def tokens_after(self) -> int:
        """Tokens from the start of the answer's page to the end of the document."""
        pages = self.document.pages
        first = min(self.gold_pages, default=len(pages) + 1)
        return sum(p.tokens for p in pages[max(first - 1, 0) :])

    @property
    def facts(self) -> TrialFacts:
        """What scoring and the reports read of the trial, without its document."""
        return TrialFacts(
            id=self.id,
            task=self.task,
            length=self.length,
            depth=self.depth,
            repeat=self.repeat,
            question_id=self.question_id,
            question=self.question,
            answers=self.answers,
            gold_pages=self.gold_pages,
            construction=self.construction,
            exact=self.exact,
            replanted=self.replanted,
            dropped=self.dropped,
            tokens=self.tokens,
            gold_depth=self.gold_depth,
            tokens_after=self.tokens_after,
            document_sha256=self.document.sha256,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialFacts:
    """A built trial without its document: what a run records for scoring (``Material.details``)
    and what a sweep's plan keeps of each trial."""

    id: str
    task: str
    length: int
    depth: float
    repeat: int
    question_id: str
    question: str
    answers: tuple[str, ...]
    gold_pages: tuple[int, ...]
    construction: str = ""
    exact: bool = False
    replanted: int = 0
    dropped: int = 0
    tokens: int = 0  # of the document built
    gold_depth: float = 0.0
    tokens_after: int = 0
    document_sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The facts as JSON."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["answers"], data["gold_pages"] = list(self.answers), list(self.gold_pages)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialFacts:
        """Read ``to_dict``'s output."""
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        values["answers"] = tuple(str(a) for a in values.get("answers", ()))
        values["gold_pages"] = tuple(int(p) for p in values.get("gold_pages", ()))
        values["depth"] = float(values.get("depth", 0.0))
        values["gold_depth"] = float(values.get("gold_depth", values["depth"]))
        return cls(**values)


MAX_TRIALS = 20_000
"""The most trials one sweep builds (each is a document in memory): checked before building."""


def check_trial_count(repeats: int, cells: int, *, what: str = "repeats") -> None:
    """Refuse, before anything is built, a grid of more than ``MAX_TRIALS`` trials
    (``cells``: the length × depth cells one repeat makes)."""
    if repeats < 1:
        raise ConfigError(f"The number of {what} must be at least 1; it is {repeats:,}.")
    if repeats * cells > MAX_TRIALS:
        raise ConfigError(
            f"{repeats:,} {what} × {cells:,} length-and-depth cells would build {repeats * cells:,} test "
            f"documents; at most {MAX_TRIALS:,} at a time. Use fewer {what}, lengths or depths."
        )


def check_unique(trials: Sequence[Trial]) -> list[Trial]:
    """The trials, once it is certain no two share an id (a duplicate would be counted twice)."""
    seen: set[str] = set()
    for t in trials:
        if t.id in seen:
            raise RuntimeError(f"bug: two test documents share the trial id {t.id!r}")
        seen.add(t.id)
    return list(trials)


class PageCounts:
    """Token counts of page texts, each text counted once however many trials reuse it.
    ``keep``: at most this many texts kept, the least recently used dropped first (None: all)."""

    def __init__(self, counter: TokenCounter, *, keep: int | None = None) -> None:
        self.counter = counter
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()

    def count(self, texts: Sequence[str], *, once: Collection[int] = ()) -> list[int]:
        """Token counts of the texts (``once``: indices of texts no other trial shows, counted
        and not kept)."""
        with self._lock:
            known: dict[str, int] = {}
            for t in texts:
                n = self._counts.get(t)
                if n is not None:
                    known[t] = n
                    if self._keep is not None:
                        self._counts.move_to_end(t)
            missing = list(dict.fromkeys(t for t in texts if t not in known))
            if missing:
                fresh = dict(zip(missing, self.counter.count_many(missing), strict=True))
                known.update(fresh)
                skip = {texts[i] for i in once}
                self._counts.update((t, n) for t, n in fresh.items() if t not in skip)
                if self._keep is not None:
                    while len(self._counts) > self._keep:
                        self._counts.popitem(last=False)
            return [known[t] for t in texts]

    def document(self, name: str, texts: Sequence[str], *, once: Collection[int] = ()) -> Document:
        """A document of these page texts (counted from the cache; ``once`` as in ``count``)."""
        counts = self.count(texts, once=once)
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
    by starting over from its first page (repeated pages are the same text again); it stops where
    it is nearest the length (pages are never split: ``trial_notes`` says where a cell's documents
    are more than ``LENGTH_TOLERANCE`` off its length)."""
    if not texts or sum(counts) <= 0:
        raise ConfigError("The document has no text to build test documents from.")
    out: list[int] = []
    total = 0
    i = 0
    while total < length:
        index = i % len(texts)
        if out and not _takes(total, counts[index], length):
            break  # a page that would take the document further from the length than stopping
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
    lengths = list(dict.fromkeys(lengths))
    check_trial_count(repeats, _cells(lengths, depths))
    texts = [p.text for p in document.pages if p.has_text]
    counts = cache.count(texts)
    # Every cut starts at the first page, so the longest holds all the text any trial shows.
    longest = fit_length(texts, counts, max(lengths)) if lengths else []
    host = HostText(texts[i] for i in sorted(set(longest)))
    grid = tuple(lengths), tuple(len(unique_depths(depths, length)) for length in lengths)
    trials: list[Trial] = []
    # A fact per repeat, planted at every depth and length: which depth a fact sits at never
    # depends on the fact, so depth and fact are not confounded (a fact per depth made each depth
    # a different question). Trials that share a fact are not independent: the statistics count
    # facts, so a sweep needs repeats (facts) to show a difference.
    facts: dict[int, tuple[PlantedFact, int]] = {}
    for repeat in range(repeats):
        rng = random.Random(f"{seed}-{repeat}")
        for length in lengths:
            chosen = fit_length(texts, counts, length)
            for slot, depth in enumerate(unique_depths(depths, length)):
                if repeat not in facts:
                    facts[repeat] = plant_fact(host, _fact_seed(seed, repeat))
                recipe = TrialRecipe(
                    task="planted",
                    length=length,
                    depth=float(depth),
                    repeat=repeat,
                    seed=seed,
                    slot=slot,
                    lengths=grid[0],
                    depth_counts=grid[1],
                    paraphrase=paraphrase,
                    distracters=distracters,
                    host_sha256=document.sha256,
                    host_name=document.name,
                )
                trials.append(
                    _planted_trial(
                        recipe, document.name, [texts[i] for i in chosen], facts[repeat], rng, cache
                    )
                )
    return check_unique(trials)


def _fact_seed(seed: int, repeat: int) -> int:
    return (seed * 1_000 + repeat) * 1_000


def _planted_trial(
    recipe: TrialRecipe,
    name: str,
    base: list[str],
    planted: tuple[PlantedFact, int],
    rng: random.Random,
    cache: PageCounts,
) -> Trial:
    """One planted trial: the fact opening the page at the depth's boundary of the cut ``base``
    (no page is split, the fact is whole), distracters on pages ``rng`` draws."""
    fact, replanted = planted
    question = fact.paraphrase if recipe.paraphrase else fact.question
    gold = boundary_at(cache.count(base), recipe.depth)
    pages = list(base)
    pages[gold] = f"{fact.sentence}\n\n{pages[gold]}"
    others = [i for i in range(len(pages)) if i != gold]
    changed = {gold}
    for sentence, where in zip(
        fact.distracters[: recipe.distracters],
        rng.sample(others, min(recipe.distracters, len(others))),
        strict=False,
    ):
        pages[where] = f"{pages[where]}\n\n{sentence}"
        changed.add(where)
    return Trial(
        id=recipe.trial_id,
        task="planted",
        length=recipe.length,
        depth=recipe.depth,
        repeat=recipe.repeat,
        question_id=recipe.question_id,
        question=question,
        answers=fact.answers,
        gold_pages=(gold + 1,),
        # The pages the fact and its distracters changed are this trial's alone: not kept.
        document=cache.document(
            f"{name} · {recipe.length:,} tokens · fact at {recipe.depth:g}%", pages, once=changed
        ),
        replanted=replanted,
        recipe=recipe,
    )


OWN_CTXS = "own-ctxs"
BM25_FROM_OTHER_ROWS = "bm25-from-other-rows"
OTHER_ARTICLES = "other-articles"
OTHER_QUESTIONS_SPREAD = "other-questions-gold-spread"
OTHER_ABSTRACTS = "other-abstracts"
CONSTRUCTIONS = {
    OWN_CTXS: "each question's own retrieved passages, most relevant first, the gold moved among them (001 §3; "
    "000 §4.1 for NQ)",
    BM25_FROM_OTHER_ROWS: "other questions' passages ranked by BM25 against the question, most relevant first; "
    "any passage holding an accepted answer dropped (the file has one passage per question)",
    OTHER_ARTICLES: "SQuAD: the question's paragraph is the gold; the distracters are paragraphs of other articles, "
    "never the gold's own, in an order drawn per question; any holding an accepted answer dropped (000 §4.1)",
    OTHER_QUESTIONS_SPREAD: "HotpotQA: the supporting paragraphs are the gold pages, spread at regular intervals; "
    "the distracters are other questions' paragraphs in an order drawn per question, any holding an accepted "
    "answer dropped; depth is not varied (000 §4.1)",
    OTHER_ABSTRACTS: "PubMed: the question's abstract is the gold; the distracters are the file's other abstracts "
    "in an order drawn per question, any holding an accepted answer dropped (000 §4.1)",
}
# The construction of a file format whose questions have no passages of their own.
GROUP_CONSTRUCTIONS = {"squad": OTHER_ARTICLES, "hotpotqa": OTHER_QUESTIONS_SPREAD, "pubmed": OTHER_ABSTRACTS}


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage of a QA file: a Wikipedia chunk (or a paragraph, an abstract) with its title."""

    title: str
    text: str

    def shown(self, number: int | None = None) -> str:
        """The passage as 001 shows a search result: ``Document [n](Title: …) text``."""
        head = f"Document [{number}]" if number is not None else "Document"
        return f"{head}(Title: {self.title}) {self.text}" if self.title else f"{head} {self.text}"


@dataclass(frozen=True, slots=True)
class QAItem:
    """A question of a QA set: its answers, its gold passage and its own distracters (the
    passages retrieved for it, most relevant first, with every answer-bearing one left out;
    none in an oracle-only file or a SQuAD, HotpotQA or PubMed file, whose distracters come
    from the other questions' ``group``s)."""

    question: str
    answers: tuple[str, ...]
    gold: Passage
    distracters: tuple[Passage, ...] = ()
    left_out: int = 0  # the question's passages that hold an answer but are not the gold
    more_golds: tuple[Passage, ...] = ()  # HotpotQA: the other supporting paragraphs
    group: str = ""  # the article, question or abstract the gold comes from ("": none)
    context: tuple[Passage, ...] = ()  # HotpotQA: the question's other paragraphs (others' distracters)
    abstains: bool = False  # SQuAD v2 unanswerable, kept to be scored as abstention ("n/a")
    kind: str = ""  # the file's format where distracters come from other groups (``GROUP_CONSTRUCTIONS``)

    @property
    def golds(self) -> tuple[Passage, ...]:
        """Every gold passage, the first one first."""
        return (self.gold, *self.more_golds)


@dataclass(frozen=True, slots=True)
class KVRow:
    """A row of a key–value retrieval file: the pairs in their order, and the asked key."""

    records: tuple[tuple[str, str], ...]
    key: str
    value: str


def _opened(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    return opener(path, "rt", encoding="utf-8")


def _rows(path: Path, limit: int) -> Iterable[tuple[int, dict[str, object]]]:
    """(line number, object) of a JSONL file (optionally gzipped), at most ``limit`` rows."""
    count = 0
    try:
        with _opened(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise ConfigError(f"{path.name}, line {number}: not JSON ({exc}).") from None
                if not isinstance(row, dict):
                    raise ConfigError(f"{path.name}, line {number}: not a JSON object.")
                yield number, row
                count += 1
                if count >= limit:
                    return
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _head(path: Path, size: int = 65_536) -> str:
    try:
        with _opened(path) as handle:
            return str(handle.read(size))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _whole_json(path: Path) -> Any:
    try:
        with _opened(path) as handle:
            return json.load(handle)
    except ValueError as exc:
        raise ConfigError(f"{path.name}: not JSON ({exc}).") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


FILE_FORMATS = {
    "qa": "Lost-in-the-Middle QA (question, answers, ctxs with isgold, or the retrieval results with "
    "hasanswer and nq_annotated_gold)",
    "kv": "key–value retrieval (ordered_kv_records, key, value)",
    "squad": "SQuAD v2 (data → paragraphs → qas, or one row per question with context and answers)",
    "hotpotqa": "HotpotQA, distractor setting (question, answer, supporting_facts, context)",
    "pubmed": "PubMed questions (question, answer, abstract id, abstract) or PubMedQA (QUESTION, CONTEXTS, "
    "final_decision)",
}


# A PubMed question's abstract, by one of these fields; or the R&R repository's questions.json
# layout (question, answer, context).
PUBMED_ABSTRACT_KEYS = frozenset(("abstract", "abstract_id", "pmid"))
RR_PUBMED_KEYS = frozenset(("context", "answer"))


def _row_format(row: Mapping[str, object]) -> str | None:
    keys = row.keys()
    if {"question", "answers", "ctxs"} <= keys:
        return "qa"
    if {"ordered_kv_records", "key", "value"} <= keys:
        return "kv"
    if {"question", "supporting_facts", "context"} <= keys:
        return "hotpotqa"
    if {"question", "context", "answers"} <= keys and isinstance(row["answers"], dict | list):
        return "squad"
    if "question" in keys and (PUBMED_ABSTRACT_KEYS & keys or RR_PUBMED_KEYS.issubset(keys)):
        return "pubmed"
    if {"QUESTION", "CONTEXTS"} <= keys:
        return "pubmed"
    return None


def file_format(path: Path) -> str:
    """The file's format (``FILE_FORMATS``), from its first row (JSONL) or the shape of its
    JSON; ``ConfigError`` for anything else, or for a file with no row."""
    head = _head(path).lstrip()
    if not head:
        raise ConfigError(f"{path.name} has no rows.")
    found = _jsonl_format(head) or _json_format(head)
    if found is None:
        raise ConfigError(
            f"{path.name} is in none of the formats the Lab reads: "
            + "; ".join(FILE_FORMATS.values())
            + " (neither a QA file nor a key–value file)."
        )
    return found


def _jsonl_format(head: str) -> str | None:
    """The format of a JSONL file, from its first line (None: not one row per line)."""
    try:
        row = json.loads(head.split("\n", 1)[0])
    except ValueError:
        return None
    return _row_format(row) if isinstance(row, dict) else None


def _json_format(head: str) -> str | None:
    """The format of a whole-JSON file, from its first characters."""
    if head.startswith("{") and '"data"' in head and '"paragraphs"' in head:
        return "squad"
    if head.startswith("{") and '"QUESTION"' in head and '"CONTEXTS"' in head:
        return "pubmed"
    if head.startswith("[") and '"supporting_facts"' in head:
        return "hotpotqa"
    if head.startswith("[") and '"question"' in head and ('"context"' in head or '"abstract"' in head):
        return "pubmed"
    return None


def _text(value: object, what: str) -> str:
    """A non-empty string field of a row (``ValueError`` names it otherwise)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, not {json.dumps(value)[:40]}")
    return value


def holds_answer(passage: Passage, answers: Sequence[str]) -> bool:
    """Whether a passage (its title or its text) holds one of the accepted answers."""
    return contains_answer(passage.text, answers) or contains_answer(passage.title, answers)


def _answers(raw: object, what: str = '"answers"') -> tuple[str, ...]:
    # The release gives a list of accepted answers; a bare string would be read as letters.
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{what} must be a non-empty list of strings")
    return tuple(dict.fromkeys(_text(a, "each answer") for a in raw))


def _qa_item(row: dict[str, object]) -> QAItem:
    question = _text(row["question"], '"question"')
    answers = _answers(row["answers"])
    ctxs = row["ctxs"]
    if not isinstance(ctxs, list) or not ctxs:
        raise ValueError('"ctxs" must be a non-empty list')
    if not all(isinstance(c, dict) for c in ctxs):
        raise ValueError("each ctx must be an object with a title and a text")
    passages = []
    for i, c in enumerate(ctxs, start=1):
        title = c.get("title")
        if title is not None and not isinstance(title, str):
            raise ValueError(f"ctx {i}: the title must be a string")
        passages.append(Passage(title or "", _text(c.get("text"), f"ctx {i}'s text")))
    golds = [i for i, c in enumerate(ctxs) if c.get("isgold")]
    annotated = row.get("nq_annotated_gold")
    if not golds and isinstance(annotated, dict):
        # The retrieval results (nq-open-contriever-msmarco-retrieved-documents): the ctxs are
        # the question's retrieved passages, most relevant first, none the gold; the gold is
        # NaturalQuestions' annotated paragraph, chunked as the release's k-document files show it.
        text = annotated.get("chunked_long_answer") or annotated.get("long_answer")
        title = annotated.get("title")
        gold = Passage(
            title if isinstance(title, str) else "", _text(text, "nq_annotated_gold's text").strip()
        )
        return _own_item(question, answers, gold, ctxs, passages, skip=None)
    if not golds and len(ctxs) == 1:
        golds = [0]  # a one-passage row without the flag: that passage is the gold
    if len(golds) != 1:
        raise ValueError(
            f"{len(golds)} ctxs marked isgold; exactly one must be (or give nq_annotated_gold, as the "
            "retrieval results do)"
        )
    return _own_item(question, answers, passages[golds[0]], ctxs, passages, skip=golds[0])


def _own_item(
    question: str,
    answers: tuple[str, ...],
    gold: Passage,
    ctxs: Sequence[dict[str, Any]],
    passages: Sequence[Passage],
    skip: int | None,
) -> QAItem:
    distracters: list[Passage] = []
    left_out = 0
    for i, (ctx, passage) in enumerate(zip(ctxs, passages, strict=True)):
        if i == skip:
            continue
        if (
            ctx.get("hasanswer")
            or holds_answer(passage, answers)
            or passage.text.strip() == gold.text.strip()
        ):
            left_out += 1  # answer-bearing: a second place to find the answer
            continue
        distracters.append(passage)
    return QAItem(question, answers, gold, tuple(distracters), left_out)


def _squad_answers(qa: Mapping[str, Any]) -> tuple[str, ...]:
    raw = qa.get("answers")
    if isinstance(raw, dict):  # one row per question (Hugging Face's layout)
        raw = raw.get("text")
    texts = [a.get("text") if isinstance(a, dict) else a for a in raw or []]
    return tuple(dict.fromkeys(t.strip() for t in texts if isinstance(t, str) and t.strip()))


def _squad_item(title: str, context: str, qa: Mapping[str, Any], unanswerable: bool) -> QAItem | None:
    answers = _squad_answers(qa)
    question = _text(qa.get("question"), '"question"').strip()
    gold = Passage(title, _text(context, '"context"').strip())
    if not answers or qa.get("is_impossible"):
        if not unanswerable:
            return None  # SQuAD v2's unanswerable questions: left out unless scored as abstention
        return QAItem(question, ("n/a",), gold, group=title, abstains=True, kind="squad")
    return QAItem(question, answers, gold, group=title, kind="squad")


def _read_squad(path: Path, limit: int, unanswerable: bool) -> list[QAItem]:
    items: list[QAItem] = []
    if _jsonl_format(_head(path).lstrip()) is None:
        data = _whole_json(path)
        try:
            for article in data["data"]:
                title = str(article.get("title", "")).replace("_", " ")
                for paragraph in article["paragraphs"]:
                    for qa in paragraph["qas"]:
                        item = _squad_item(title, paragraph["context"], qa, unanswerable)
                        if item is not None and len(items) < limit:
                            items.append(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{path.name}: not SQuAD's data → paragraphs → qas ({exc}).") from None
        return items
    for number, row in _rows(path, limit):
        try:
            item = _squad_item(str(row.get("title", "")), row["context"], row, unanswerable)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{path.name}, line {number}: not a SQuAD question ({exc}).") from None
        if item is not None:
            items.append(item)
    return items


def _hotpot_item(row: Mapping[str, Any], index: int) -> QAItem:
    question = _text(row.get("question"), '"question"')
    answer = _text(row.get("answer"), '"answer"')
    context, support = row["context"], row["supporting_facts"]
    if isinstance(context, dict):  # Hugging Face's layout: columns, not pairs
        context = list(zip(context["title"], context["sentences"], strict=True))
    if isinstance(support, dict):
        support = list(zip(support["title"], support["sent_id"], strict=True))
    paragraphs = [
        Passage(str(title), "".join(str(s) for s in sentences).strip()) for title, sentences in context
    ]
    wanted = list(dict.fromkeys(str(title) for title, _ in support))
    golds = [next((p for p in paragraphs if p.title == t), None) for t in wanted]
    if not golds or any(g is None for g in golds):
        raise ValueError("a supporting fact names a paragraph that is not in the context")
    found = tuple(g for g in golds if g is not None)
    others = tuple(p for p in paragraphs if p not in found)
    group = str(row.get("_id") or row.get("id") or index)
    return QAItem(
        question, (answer,), found[0], more_golds=found[1:], group=group, context=others, kind="hotpotqa"
    )


def _read_hotpot(path: Path, limit: int) -> list[QAItem]:
    if _jsonl_format(_head(path).lstrip()) is None:
        rows = list(enumerate(_whole_json(path), start=1))[:limit]
    else:
        rows = list(_rows(path, limit))
    items = []
    for number, row in rows:
        try:
            items.append(_hotpot_item(row, number))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{path.name}, item {number}: not a HotpotQA question ({exc}).") from None
    return items


def _pubmed_item(row: Mapping[str, Any], key: str) -> QAItem:
    if "QUESTION" in row:  # PubMedQA: {pmid: {QUESTION, CONTEXTS, final_decision, ...}}
        question = _text(row["QUESTION"], '"QUESTION"')
        abstract = " ".join(_text(c, "each of CONTEXTS") for c in row["CONTEXTS"])
        answer = _text(row.get("final_decision"), '"final_decision"')
        return QAItem(question, (answer,), Passage("", abstract.strip()), group=key, kind="pubmed")
    question = _text(row.get("question"), '"question"')
    raw = row.get("answers", row.get("answer"))
    answers = _answers([raw] if isinstance(raw, str) else raw, '"answer"')
    abstract = _text(row.get("abstract", row.get("context")), '"abstract"').strip()
    ident = row.get("abstract_id", row.get("pmid"))
    group = str(ident) if ident not in (None, "") else hashlib.sha256(abstract.encode()).hexdigest()[:16]
    title = row.get("title")
    shown = Passage(title if isinstance(title, str) else "", abstract)
    return QAItem(question, answers, shown, group=group, kind="pubmed")


def _read_pubmed(path: Path, limit: int) -> list[QAItem]:
    rows: list[tuple[str, Any]]
    if _jsonl_format(_head(path).lstrip()) is not None:
        rows = [(str(n), r) for n, r in _rows(path, limit)]
    else:
        data = _whole_json(path)
        pairs = data.items() if isinstance(data, dict) else enumerate(data, start=1)
        rows = [(str(k), v) for k, v in pairs]
    items = []
    for key, row in rows[:limit]:
        try:
            items.append(_pubmed_item(row, key))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{path.name}, item {key}: not a PubMed question ({exc}).") from None
    return items


def read_qa_jsonl(path: Path, limit: int = 5_000, *, unanswerable: bool = False) -> list[QAItem]:
    """The questions of a QA file, whatever its format (``file_format``):

    - the Lost-in-the-Middle release (JSONL, optionally gzipped): ``question``, ``answers`` (a
      list) and ``ctxs`` (``title``, ``text``, ``isgold``, ``hasanswer``). The gold is the ctx
      marked ``isgold`` wherever it stands, or, in the retrieval results the R&R paper built its
      NQ documents from, ``nq_annotated_gold``; the others are the question's own distracters in
      their given order (most relevant first), any that holds an answer (``hasanswer``, or in its
      title or text) left out. An oracle-only file has one ctx per question (its distracters are
      then ranked from the other rows);
    - SQuAD v2, HotpotQA (distractor setting) and PubMed (or PubMedQA): the gold passages of
      each question, its distracters drawn from the other questions' (``GROUP_CONSTRUCTIONS``).
      ``unanswerable``: keep SQuAD v2's unanswerable questions, to be scored as abstention."""
    kind = file_format(path)
    if kind == "kv":
        raise ConfigError(f"{path.name} is a key–value retrieval file: use the key–value preset for it.")
    if kind == "squad":
        items = _read_squad(path, limit, unanswerable)
    elif kind == "hotpotqa":
        items = _read_hotpot(path, limit)
    elif kind == "pubmed":
        items = _read_pubmed(path, limit)
    else:
        items = []
        held = 0
        for number, row in _rows(path, limit):
            try:
                items.append(_qa_item(row))
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"{path.name}, line {number}: not a question with answers and ctxs ({exc})."
                ) from None
            held += len(items[-1].distracters)
            if held >= MAX_HELD_PASSAGES:
                break  # the retrieval results hold hundreds of passages a question: enough rows read
    if not items:
        raise ConfigError(f"{path.name} has no question to ask.")
    if any(not it.distracters for it in items) and len(items) < 2:
        raise ConfigError(
            f"{path.name} needs at least two questions (with one passage per question, the others' "
            "passages are the distracters)."
        )
    return items


read_qa_file = read_qa_jsonl

MAX_HELD_PASSAGES = 400_000
"""A QA file's own passages held in memory at most (about 300 MB): the NQ retrieval results give
each question hundreds of ranked passages, so their first rows are read until this many (the
R&R paper asked 250 questions; a sweep asks at most 100 a cell)."""


def read_kv_jsonl(path: Path, limit: int = 5_000) -> list[KVRow]:
    """A key–value retrieval file of the Lost-in-the-Middle release: ``ordered_kv_records``
    (a list of [key, value] pairs), the asked ``key`` (one of them) and its ``value``."""
    if file_format(path) != "kv":
        raise ConfigError(f"{path.name} is a QA file: use the lost-in-the-middle preset for it.")
    rows: list[KVRow] = []
    for number, row in _rows(path, limit):
        try:
            records = tuple((str(k), str(v)) for k, v in row["ordered_kv_records"])  # type: ignore[attr-defined]
            key, value = str(row["key"]), str(row["value"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path.name}, line {number}: not key–value records ({exc}).") from None
        if (key, value) not in records:
            raise ConfigError(
                f"{path.name}, line {number}: the key {key} with its value is not among the records."
            )
        rows.append(KVRow(records, key, value))
    if not rows:
        raise ConfigError(f"{path.name} has no rows.")
    return rows


def _ranked_distracters(
    items: Sequence[QAItem], index: int, index_of: Callable[[], BM25]
) -> Iterable[tuple[Passage, bool]]:
    """Other rows' gold passages, most relevant to the question first (BM25; ties in file
    order), each passage once, with whether it holds one of the question's answers (then it
    must be left out)."""
    item = items[index]
    scores = index_of().scores(item.question)
    seen = {item.gold}
    for i in sorted(range(len(items)), key=lambda i: (-scores[i], i)):
        passage = items[i].gold
        if i == index or passage in seen:
            continue
        seen.add(passage)
        yield passage, holds_answer(passage, item.answers)


Units = list[tuple[str, Passage]]


def passage_units(items: Sequence[QAItem]) -> Units:
    """Every passage of a grouped file (SQuAD's paragraphs, HotpotQA's paragraphs, PubMed's
    abstracts) once, with the group it belongs to, in file order."""
    seen: dict[Passage, str] = {}
    for it in items:
        for passage in (*it.golds, *it.context):
            seen.setdefault(passage, it.group)
    return [(group, passage) for passage, group in seen.items()]


def _group_distracters(items: Sequence[QAItem], index: int, units: Units) -> Iterable[tuple[Passage, bool]]:
    """Passages of other groups (another article, question or abstract; never one titled as a
    gold passage is), in an order drawn for this question, with whether each holds one of its
    answers."""
    item = items[index]
    titles = {g.title for g in item.golds if g.title}
    # PubMedQA's answers (yes, no, maybe) are words any abstract may use: not a second answer.
    verdict = {a.lower() for a in item.answers} <= {"yes", "no", "maybe"}
    order = list(range(len(units)))
    random.Random(f"distracters-{index}").shuffle(order)
    for i in order:
        group, passage = units[i]
        if group == item.group or passage in item.golds or (passage.title and passage.title in titles):
            continue
        yield passage, not verdict and holds_answer(passage, item.answers)


LENGTH_TOLERANCE = 0.10
"""A built document is within this share of the length it is labelled with (or refused)."""
OTHERS_FOR_ALL = 19
"""Length 0 on a file without a question's own passages: this many distracters (001's headline
20-document setting)."""


def passage_trials(
    items: Sequence[QAItem],
    cache: PageCounts,
    *,
    lengths: Sequence[int],
    depths: Depths,
    repeats: int,
    seed: int = 0,
    file: Path | None = None,
    unanswerable: bool = False,
) -> list[Trial]:
    """The gold passage at each depth among its distracters, one passage per page, as 001 shows
    them (title and text); the distracters keep their order (most relevant first), cut to about
    ``length`` tokens (0: all of each question's own passages). A question with its own passages
    uses them; otherwise other questions' passages (see ``CONSTRUCTIONS``). A question with no
    passage left to hide its answer among is refused: its document would be the answer alone.
    A question whose passages cannot make the longest length (within ``LENGTH_TOLERANCE``) is
    replaced by another; a file with none that can is refused. HotpotQA's gold paragraphs are
    spread at regular intervals, one trial per length (depth is not varied). ``repeats`` above
    the file's questions is capped to them (each repeat asks another question). ``file``: where
    the items were read from (their recipes name it, so they can be built again), and
    ``unanswerable``: whether they were read with SQuAD v2's unanswerable questions."""
    lengths = list(dict.fromkeys(lengths))
    spread = spreads(items)
    check_trial_count(min(repeats, len(items)), _cells(lengths, (0.0,) if spread else depths))
    index: list[BM25] = []

    def bm25() -> BM25:
        if not index:
            index.append(passage_index(items))
        return index[0]

    kept: list[Units] = []

    def units() -> Units:
        if not kept:
            kept.append(passage_units(items))
        return kept[0]

    where, sha = (str(file), file_sha256(file)) if file is not None else ("", "")
    longest = max(lengths, default=0)
    pools: dict[int, PassagePool] = {}

    def pool_of(picked: int) -> PassagePool:
        if picked not in pools:
            pools[picked] = passage_pool(items, picked, longest, bm25, cache, units)
        return pools[picked]

    trials: list[Trial] = []
    name = file.name if file is not None else "The QA file"
    for repeat, picked in enumerate(choose_rows(items, repeats, seed, lengths, pool_of, name)):
        for length in lengths:
            for depth in (0.0,) if spread else unique_depths(depths, length):
                recipe = TrialRecipe(
                    task="passages",
                    length=length,
                    depth=float(depth),
                    repeat=repeat,
                    seed=seed,
                    lengths=(longest,),
                    pick=picked,
                    file=where,
                    file_sha256=sha,
                    unanswerable=unanswerable,
                )
                trials.append(_passage_trial(recipe, items[picked], pool_of(picked), cache))
    return check_unique(trials)


def spreads(items: Sequence[QAItem]) -> bool:
    """Whether the file's questions have several gold passages (HotpotQA), spread at regular
    intervals rather than placed at a depth."""
    return any(it.more_golds for it in items)


def passage_picks(items: int, repeats: int, seed: int) -> list[int]:
    """The file rows a passages sweep asks first, one per repeat (capped to the rows)."""
    return random.Random(seed).sample(range(items), min(repeats, items))


def choose_rows(
    items: Sequence[QAItem],
    repeats: int,
    seed: int,
    lengths: Sequence[int],
    pool_of: Callable[[int], PassagePool],
    name: str,
) -> list[int]:
    """The rows asked, one per repeat: ``passage_picks``, where a row whose passages cannot make
    every length (within ``LENGTH_TOLERANCE``) is replaced by the next of a second draw; one line
    naming the lengths the file can build when no row can (0 asks for all of each question's own
    passages, or ``OTHERS_FOR_ALL`` others: always built)."""
    first = passage_picks(len(items), repeats, seed)
    asked = [n for n in lengths if n > 0]
    if not asked:
        return first
    taken = set(first)
    rest = [i for i in range(len(items)) if i not in taken]
    order = first + random.Random(f"{seed}-more").sample(rest, len(rest))
    chosen: list[int] = []
    most, least = 0, None
    for picked in order:
        pool = pool_of(picked)
        if all(pool.fits(n) for n in asked):
            chosen.append(picked)
            if len(chosen) == len(first):
                break
        most = max(most, pool.total)
        least = pool.least if least is None else min(least, pool.least)
    if not chosen:
        raise ConfigError(
            f"{name} cannot build documents of {', '.join(f'{n:,}' for n in asked)} tokens within "
            f"{LENGTH_TOLERANCE:.0%}: its longest document is {most:,} tokens (and its shortest {least or 0:,}); "
            f"ask lengths from {least or 0:,} to {most:,}."
        )
    return chosen


def passage_index(items: Sequence[QAItem]) -> BM25:
    """BM25 over the items' gold passages (ranks distracters for an oracle-only file)."""
    return BM25([f"{it.gold.title} {it.gold.text}" for it in items])


@dataclass(frozen=True, slots=True)
class PassagePool:
    """The distracters a question's longest document needs, in order (shorter ones take a
    prefix), their token counts, the golds', and the answer-bearing passages left out."""

    passages: tuple[Passage, ...]
    counts: tuple[int, ...]
    gold_tokens: int
    dropped: int
    own: bool
    construction: str = ""

    @property
    def total(self) -> int:
        """The tokens of the longest document the pool makes (golds and every distracter)."""
        return self.gold_tokens + sum(self.counts)

    @property
    def least(self) -> int:
        """The tokens of the shortest document the pool makes (golds and one distracter)."""
        return self.gold_tokens + self.counts[0]

    def cut(self, length: int) -> int:
        """How many distracters a document of about ``length`` tokens takes (0: all; at least one)."""
        size, total = 0, self.gold_tokens
        while size < len(self.passages) and (size == 0 or _takes(total, self.counts[size], length)):
            total += self.counts[size]
            size += 1
        return size

    def fits(self, length: int) -> bool:
        """Whether the document cut to ``length`` is within ``LENGTH_TOLERANCE`` of it."""
        built = self.gold_tokens + sum(self.counts[: self.cut(length)])
        return length <= 0 or abs(built - length) <= LENGTH_TOLERANCE * length


def _takes(total: int, n: int, length: int) -> bool:
    """Whether a page of ``n`` tokens joins a document of ``total`` on the way to ``length``:
    when it brings the document nearer the length than stopping would (0: no limit)."""
    return length <= 0 or total + n - length <= length - total


def passage_pool(
    items: Sequence[QAItem],
    picked: int,
    longest: int,
    bm25: Callable[[], BM25],
    cache: PageCounts,
    units: Callable[[], Units] = lambda: [],
) -> PassagePool:
    """The distracters of row ``picked`` for documents up to about ``longest`` tokens (0: all of
    its own passages, or ``OTHERS_FOR_ALL`` of the others)."""
    item = items[picked]
    own = bool(item.distracters)
    source: Iterable[tuple[Passage, bool]]
    if own:
        source, construction = ((p, False) for p in item.distracters), OWN_CTXS
    elif item.group:
        source = _group_distracters(items, picked, units())
        construction = GROUP_CONSTRUCTIONS.get(item.kind, OTHER_ARTICLES)
    else:
        source, construction = _ranked_distracters(items, picked, bm25), BM25_FROM_OTHER_ROWS
    # Counted as shown, numbered (a page's number moves by one with the gold: the same width).
    gold_tokens = sum(cache.count([g.shown(n) for n, g in enumerate(item.golds, start=1)]))
    pool: list[Passage] = []
    pool_counts: list[int] = []
    dropped = item.left_out
    total = gold_tokens
    for passage, holds in source:
        if holds:
            dropped += 1
            continue
        if longest <= 0 and not own and len(pool) >= OTHERS_FOR_ALL:
            break
        (n,) = cache.count([passage.shown(len(pool) + 2)])
        if pool and not _takes(total, n, longest):
            break
        pool.append(passage)
        pool_counts.append(n)
        total += n
    if not pool:
        raise ConfigError(
            f"The question {item.question[:60]!r} has no passage without its answer to hide it among "
            f"({dropped} hold an answer): a document of the answer alone measures nothing."
        )
    return PassagePool(tuple(pool), tuple(pool_counts), gold_tokens, dropped, own, construction)


def _passage_trial(recipe: TrialRecipe, item: QAItem, pool: PassagePool, cache: PageCounts) -> Trial:
    """One passages trial: the pool cut to about ``recipe.length`` tokens, the gold at the depth
    (HotpotQA's golds at regular intervals); refused when the built document is not within
    ``LENGTH_TOLERANCE`` of its label."""
    size = pool.cut(recipe.length)
    chosen, counts = pool.passages[:size], pool.counts[:size]
    golds = item.golds
    # Several golds go at regular intervals, the first at the start (as the reference code does).
    targets = [recipe.depth] if len(golds) == 1 else [100 * j / len(golds) for j in range(len(golds))]
    positions = [boundary_at([*counts, 0], t) if chosen else 0 for t in targets]
    order: list[Passage] = []
    gold_pages: list[int] = []
    for i in range(len(chosen) + 1):
        for gold, at in zip(golds, positions, strict=True):
            if at == i:
                order.append(gold)
                gold_pages.append(len(order))
        if i < len(chosen):
            order.append(chosen[i])
    texts = [p.shown(n) for n, p in enumerate(order, start=1)]
    where = "golds spread" if len(golds) > 1 else f"gold at {recipe.depth:g}%"
    document = cache.document(f"{len(texts)} passages · {where}", texts)
    built = document.total_tokens
    if recipe.length and abs(built - recipe.length) > LENGTH_TOLERANCE * recipe.length:
        raise ConfigError(
            f"The trial {recipe.trial_id} builds {built:,} tokens for a {recipe.length:,}-token label (more than "
            f"{LENGTH_TOLERANCE:.0%} off): its question's passages cannot make that length; ask lengths its file "
            "can build."
        )
    return Trial(
        id=recipe.trial_id,
        task="passages",
        length=recipe.length,
        depth=recipe.depth,
        repeat=recipe.repeat,
        question_id=recipe.question_id,
        question=item.question,
        answers=item.answers,
        gold_pages=tuple(gold_pages),
        document=document,
        construction=pool.construction or (OWN_CTXS if pool.own else BM25_FROM_OTHER_ROWS),
        dropped=pool.dropped,
        recipe=recipe,
    )


def check_kv_sizes(wanted: Sequence[int], rows: Sequence[KVRow]) -> None:
    """Refuse sizes a key–value grid cannot build: more pairs than a file's rows have, or a
    document without a pair besides the asked one."""
    smallest = min((len(r.records) for r in rows), default=0)
    for n in wanted:
        if rows and n > smallest:
            raise ConfigError(
                f"{n:,} pairs asked, but the file's rows have {smallest:,}: ask at most {smallest:,} "
                "(or 0 for each row's own number)."
            )
        if n < 0 or n == 1 or (n == 0 and not rows) or (rows and smallest < 2):
            asked = f"{smallest:,} in a row of the file" if rows and n == 0 else f"{n:,} asked"
            raise ConfigError(
                f"Key–value retrieval needs at least 2 pairs (the asked one and others); {asked}."
            )


def kv_picks(rows: int, repeats: int, seed: int) -> list[int]:
    """The file rows a key–value sweep asks, one per repeat (capped to the rows)."""
    return random.Random(f"kv-{seed}").sample(range(rows), min(repeats, rows))


def kv_sizes(wanted: Sequence[int], row: KVRow | None) -> list[int]:
    """The sizes of one repeat, each once (on a 75-key file, 0 — the row's own — and 75 are
    one document)."""
    return list(dict.fromkeys(len(row.records) if row is not None and n == 0 else n for n in wanted))


def _generated_pairs(rng: random.Random, n: int) -> list[tuple[str, str]]:
    return [
        (
            str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        )
        for _ in range(n)
    ]


def kv_trials(
    cache: PageCounts,
    *,
    pairs: Sequence[int],
    depths: Sequence[float],
    repeats: int,
    seed: int = 0,
    rows: Sequence[KVRow] = (),
    file: Path | None = None,
) -> list[Trial]:
    """Key–value retrieval (001 §4): ``n`` pairs, one per page, the asked pair at each depth,
    scored by exact match on the value. Pairs are generated UUIDs, or a file's rows (its pairs
    in their order, the asked pair moved to the depth; ``n`` = 0 keeps all of a row's pairs).
    A row cannot give more pairs than it has, and a document needs at least one pair besides
    the asked one: both are refused. ``repeats`` above the file's rows is capped to them.
    ``file``: where the rows were read from (their recipes name it)."""
    depths = list(dict.fromkeys(float(d) for d in depths))
    wanted = list(dict.fromkeys(pairs))
    check_trial_count(min(repeats, len(rows)) if rows else repeats, len(wanted) * len(depths))
    check_kv_sizes(wanted, rows)
    where, sha = (str(file), file_sha256(file)) if file is not None else ("", "")
    trials: list[Trial] = []
    picks = kv_picks(len(rows), repeats, seed) if rows else []
    for repeat in range(len(picks) if rows else repeats):
        rng = random.Random(f"kv-{seed}-{repeat}")
        row = rows[picks[repeat]] if rows else None
        for n in kv_sizes(wanted, row):
            if row is not None:
                gold_pair = (row.key, row.value)
                others = [r for r in row.records if r != gold_pair][: n - 1]
            else:
                records = _generated_pairs(rng, n)
                gold_pair, others = records[0], records[1:]
            for depth in depths:
                recipe = TrialRecipe(
                    task="kv",
                    length=n,
                    depth=depth,
                    repeat=repeat,
                    seed=seed,
                    lengths=() if rows else tuple(wanted),
                    pick=picks[repeat] if rows else -1,
                    file=where,
                    file_sha256=sha,
                )
                trials.append(_kv_trial(recipe, gold_pair, others, cache))
    return check_unique(trials)


def _kv_trial(
    recipe: TrialRecipe, gold_pair: tuple[str, str], others: Sequence[tuple[str, str]], cache: PageCounts
) -> Trial:
    """One key–value trial: the asked pair moved to the depth among the others."""
    other_counts = cache.count([json.dumps({k: v}) for k, v in others])
    position = boundary_at([*other_counts, 0], recipe.depth)
    ordered = [*others[:position], gold_pair, *others[position:]]
    texts = [json.dumps({k: v}) for k, v in ordered]
    key, value = gold_pair
    return Trial(
        id=recipe.trial_id,
        task="kv",
        length=recipe.length,
        depth=recipe.depth,
        repeat=recipe.repeat,
        question_id=recipe.question_id,
        question=f"What is the value associated with the key {key}?",
        answers=(value,),
        gold_pages=(position + 1,),
        document=cache.document(f"{len(texts)} key–value pairs · key at {recipe.depth:g}%", texts),
        exact=True,
        recipe=recipe,
    )


def question_recipes(document: Document, questions: Iterable[Question]) -> list[TrialRecipe]:
    """The recipes of the user's own questions on the whole document (checked: each has its
    answers and gold pages, in the document)."""
    counts = document.page_tokens
    recipes = []
    for i, q in enumerate(questions):
        if not q.answers or not q.gold_pages:
            raise ConfigError(
                f"Question {i + 1} ({q.text[:40]}…) needs its answers and gold page to be measured."
            )
        outside = [p for p in q.gold_pages if not 1 <= p <= len(document.pages)]
        if outside:
            raise ConfigError(f"Question {i + 1}: gold page {outside[0]} is not in the document.")
        recipes.append(
            TrialRecipe(
                task="questions",
                length=document.total_tokens,
                depth=depth_of(counts, q.gold_pages[0] - 1),
                slot=i,
                host_sha256=document.sha256,
                host_name=document.name,
                question=q.text,
                answers=q.answers,
                gold_pages=q.gold_pages,
            )
        )
    return recipes


def question_trials(document: Document, questions: Iterable[Question]) -> list[Trial]:
    """The user's own questions on the whole document; depth is where the gold page starts."""
    return [_question_trial(recipe, document) for recipe in question_recipes(document, questions)]


def _question_trial(recipe: TrialRecipe, document: Document) -> Trial:
    return Trial(
        id=recipe.trial_id,
        task="questions",
        length=recipe.length,
        depth=recipe.depth,
        repeat=0,
        question_id=recipe.question_id,
        question=recipe.question,
        answers=recipe.answers,
        gold_pages=recipe.gold_pages,
        document=document,
        recipe=recipe,
    )


# ---- Recipes: one trial at a time --------------------------------------------------------

Builder = Callable[["TrialRecipe", "PageCounts", Document | None], "Trial"]
# How a task's trial builder is found by its name (``ConfigError`` for an unknown task): registered
# by the task registry (``rr_core.lab.tasks``, which builds on this module and is loaded with the
# package), so this module imports no registry and names no task.
_FIND_BUILDER: list[Callable[[str], Builder]] = []


def register_builders(find: Callable[[str], Builder]) -> None:
    """Have ``TrialRecipe.build`` find each task's builder through ``find``."""
    _FIND_BUILDER[:] = [find]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialRecipe:
    """Everything one trial is built from, as plain data: a job's source (``kind = "trial"``).

    ``build`` makes exactly the trial the task's builder makes for this cell, without building
    the others: what one trial takes from the rest of its grid is in the recipe (``lengths``:
    the grid's lengths, whose longest bounds the host text a fact must be new to, or the pool
    of passages; ``depth_counts``: the cells before this one, whose distracters the repeat's
    random draws placed first). A file-based task names its file and the SHA-256 of its bytes
    (a file changed since is refused); a task on the user's document names that document by
    its SHA-256 (opened where the trial is built).
    """

    kind: ClassVar[str] = "trial"
    task: str
    length: int  # tokens asked for (pairs, for key–value retrieval)
    depth: float
    repeat: int = 0
    seed: int = 0
    slot: int = 0  # the depth's place at its length (planted: which distracter draws); the question's (own)
    lengths: tuple[int, ...] = ()
    depth_counts: tuple[int, ...] = ()
    paraphrase: bool = False
    distracters: int = 0
    pick: int = -1  # the file's row (passages; key–value from a file)
    file: str = ""
    file_sha256: str = ""
    host_sha256: str = ""  # planted facts, own questions: the document
    host_name: str = ""
    question: str = ""  # own questions: the question, its answers and gold pages
    answers: tuple[str, ...] = ()
    gold_pages: tuple[int, ...] = ()
    unanswerable: bool = False  # passages: SQuAD v2's unanswerable questions kept (scored as abstention)

    @property
    def key(self) -> str:
        """A stable name of the recipe (its JSON's digest)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:24]

    @property
    def trial_id(self) -> str:
        """The id of the trial it builds."""
        if self.task == "questions":
            return f"own-q{self.slot + 1}"
        unit = "n" if self.task == "kv" else "d"
        return f"{self.task}-{unit}{self.length}-p{self.depth:g}-r{self.repeat}"

    @property
    def question_id(self) -> str:
        """The question the trial asks (trials that share it are not independent)."""
        if self.task == "planted":
            return f"fact-{self.seed}-{self.repeat}"  # the repeat's fact, at every depth
        if self.task == "passages":
            return f"qa-{self.pick}"
        if self.task == "kv":
            return (
                f"kv-file-{self.pick}" if self.file_sha256 else f"kv-{self.seed}-{self.repeat}-{self.length}"
            )
        return f"own-{self.slot + 1}"

    def to_dict(self) -> dict[str, Any]:
        """The recipe as JSON (with ``kind``)."""
        data: dict[str, Any] = {"kind": self.kind}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            data[name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialRecipe:
        """Read ``to_dict``'s output."""
        try:
            return cls(
                task=str(data["task"]),
                length=int(data["length"]),
                depth=float(data["depth"]),
                repeat=int(data.get("repeat", 0)),
                seed=int(data.get("seed", 0)),
                slot=int(data.get("slot", 0)),
                lengths=tuple(int(n) for n in data.get("lengths", ())),
                depth_counts=tuple(int(n) for n in data.get("depth_counts", ())),
                paraphrase=bool(data.get("paraphrase", False)),
                distracters=int(data.get("distracters", 0)),
                pick=int(data.get("pick", -1)),
                file=str(data.get("file", "")),
                file_sha256=str(data.get("file_sha256", "")),
                host_sha256=str(data.get("host_sha256", "")),
                host_name=str(data.get("host_name", "")),
                question=str(data.get("question", "")),
                answers=tuple(str(a) for a in data.get("answers", ())),
                gold_pages=tuple(int(p) for p in data.get("gold_pages", ())),
                unanswerable=bool(data.get("unanswerable", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"Not a trial recipe ({exc}).") from None

    def build(self, counter: TokenCounter, host: Document | None = None) -> Trial:
        """The trial (``host``: the document a planted fact or an own question is on). Inputs
        several trials share (the parsed file, its BM25 index, the host's text) are kept per
        process, a few at a time."""
        if self.host_sha256 and (host is None or host.sha256 != self.host_sha256):
            raise ConfigError(
                f"The trial {self.trial_id} is built on {self.host_name or 'a document'} (sha256 "
                f"{self.host_sha256[:12]}…), which is not the document given: open it again to run this."
            )
        if not _FIND_BUILDER:
            raise ConfigError("no Lab task is registered (rr_core.lab.tasks registers them)")
        build = _FIND_BUILDER[0](self.task)
        with _BUILDING:
            return build(self, shared_counts(counter), host)

    def checked_file(self) -> Path:
        """The recipe's file, refused when it is gone or its bytes changed since."""
        path = Path(self.file)
        if not self.file:
            raise ConfigError(f"The recipe of {self.trial_id} names no file to build it from.")
        try:
            now = file_sha256(path)
        except OSError as exc:
            raise ConfigError(
                f"{path.name} cannot be read for the trial {self.trial_id} ({exc.strerror or exc})."
            ) from None
        if now != self.file_sha256:
            raise ConfigError(
                f"{path.name} changed since the sweep was planned (sha256 {self.file_sha256[:12]}… then, "
                f"{now[:12]}… now): its trials would not be the ones planned. Plan the sweep again."
            )
        return path


def build_planted(recipe: TrialRecipe, cache: PageCounts, host: Document | None) -> Trial:
    """A planted trial from its recipe, on ``host``."""
    if host is None:
        raise ConfigError(f"The trial {recipe.trial_id} needs the document its fact is planted in.")
    if recipe.length not in recipe.lengths or len(recipe.depth_counts) != len(recipe.lengths):
        raise ConfigError(f"The recipe of {recipe.trial_id} does not name its grid's lengths.")
    texts, counts = _HOST_PAGES.get((host.sha256, cache.counter), lambda: _host_pages(host, cache))
    longest = max(recipe.lengths)
    key = (host.sha256, cache.counter, longest)
    text = _HOST_TEXTS.get(
        key, lambda: HostText(texts[i] for i in sorted(set(fit_length(texts, counts, longest))))
    )
    fact = _FACTS.get(
        (*key, recipe.seed, recipe.repeat), lambda: plant_fact(text, _fact_seed(recipe.seed, recipe.repeat))
    )
    rng = random.Random(f"{recipe.seed}-{recipe.repeat}")
    if recipe.distracters:
        # The repeat's draws before this cell, replayed: a draw of k of n pages takes the
        # same random numbers whatever the pages are.
        for length, cells in zip(recipe.lengths, recipe.depth_counts, strict=True):
            others = len(fit_length(texts, counts, length)) - 1
            for slot in range(cells):
                if (length, slot) == (recipe.length, recipe.slot):
                    break
                rng.sample(range(others), min(recipe.distracters, others))
            else:
                continue
            break
    chosen = fit_length(texts, counts, recipe.length)
    return _planted_trial(recipe, host.name, [texts[i] for i in chosen], fact, rng, cache)


def build_passages(recipe: TrialRecipe, cache: PageCounts, host: Document | None = None) -> Trial:
    """A passages trial from its recipe (its file read once per process)."""
    path = recipe.checked_file()
    items = _QA_FILES.get(
        (str(path), recipe.file_sha256, recipe.unanswerable),
        lambda: read_qa_jsonl(path, unanswerable=recipe.unanswerable),
    )
    if not 0 <= recipe.pick < len(items):
        raise ConfigError(f"{path.name} has no row {recipe.pick + 1} for the trial {recipe.trial_id}.")
    return _passage_trial(recipe, items[recipe.pick], shared_pool(path, recipe, items, cache), cache)


def shared_pool(path: Path, recipe: TrialRecipe, items: Sequence[QAItem], cache: PageCounts) -> PassagePool:
    """The pool of the recipe's row, kept per process (callers hold ``_BUILDING``)."""
    longest = max(recipe.lengths, default=recipe.length)
    file_key = (str(path), recipe.file_sha256, recipe.unanswerable)

    def bm25() -> BM25:
        return _BM25.get(file_key, lambda: passage_index(items))

    def units() -> Units:
        return _UNITS.get(file_key, lambda: passage_units(items))

    return _POOLS.get(
        (*file_key, cache.counter, recipe.pick, longest),
        lambda: passage_pool(items, recipe.pick, longest, bm25, cache, units),
    )


def build_kv(recipe: TrialRecipe, cache: PageCounts, host: Document | None = None) -> Trial:
    """A key–value trial from its recipe (generated pairs drawn again, or a file's row)."""
    if recipe.file_sha256:
        path = recipe.checked_file()
        rows = _KV_FILES.get((str(path), recipe.file_sha256), lambda: read_kv_jsonl(path))
        if not 0 <= recipe.pick < len(rows) or recipe.length > len(rows[recipe.pick].records):
            raise ConfigError(f"{path.name} has no row {recipe.pick + 1} of {recipe.length} pairs.")
        row = rows[recipe.pick]
        gold_pair = (row.key, row.value)
        others = [r for r in row.records if r != gold_pair][: recipe.length - 1]
        return _kv_trial(recipe, gold_pair, others, cache)
    if recipe.length not in recipe.lengths:
        raise ConfigError(f"The recipe of {recipe.trial_id} does not name its grid's sizes.")
    rng = random.Random(f"kv-{recipe.seed}-{recipe.repeat}")
    for n in recipe.lengths[: recipe.lengths.index(recipe.length)]:
        for _ in range(2 * n):  # the sizes before this one drew their pairs first
            rng.getrandbits(128)
    records = _generated_pairs(rng, recipe.length)
    return _kv_trial(recipe, records[0], records[1:], cache)


def build_question(recipe: TrialRecipe, cache: PageCounts, host: Document | None) -> Trial:
    """One of the user's own questions on ``host``."""
    if host is None:
        raise ConfigError(f"The trial {recipe.trial_id} needs the document its question is asked of.")
    return _question_trial(recipe, host)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Kept(Generic[K, V]):
    """The last few values made, by key (callers hold ``_BUILDING``)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, make: Callable[[], V]) -> V:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self._items[key] = value
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        self._items.clear()


# Shared by the trials of a sweep, kept per process: building one trial is then a cut and a
# paste, and a few hosts, files and indexes at most stay in memory.
SHARED_PAGE_COUNTS = 20_000  # page texts whose token counts are kept, per tokenizer (a long host's pages)
_BUILDING = threading.RLock()
_SHARED_COUNTS: _Kept[TokenCounter, PageCounts] = _Kept(4)
_HOST_PAGES: _Kept[tuple[str, TokenCounter], tuple[list[str], list[int]]] = _Kept(4)
_HOST_TEXTS: _Kept[tuple[str, TokenCounter, int], HostText] = _Kept(4)
_FACTS: _Kept[tuple[str, TokenCounter, int, int, int], tuple[PlantedFact, int]] = _Kept(4_096)
_QA_FILES: _Kept[tuple[str, str, bool], list[QAItem]] = _Kept(4)
_KV_FILES: _Kept[tuple[str, str], list[KVRow]] = _Kept(4)
_BM25: _Kept[tuple[str, str, bool], BM25] = _Kept(4)
_UNITS: _Kept[tuple[str, str, bool], Units] = _Kept(4)
_POOLS: _Kept[tuple[str, str, bool, TokenCounter, int, int], PassagePool] = _Kept(1_024)
_FILE_HASHES: _Kept[tuple[str, int, int], str] = _Kept(16)


def building() -> threading.RLock:
    """The lock held while inputs kept per process are made or read."""
    return _BUILDING


def shared_counts(counter: TokenCounter) -> PageCounts:
    """The page counts kept per process for this counter (callers hold ``building()``)."""
    return _SHARED_COUNTS.get(counter, lambda: PageCounts(counter, keep=SHARED_PAGE_COUNTS))


def forget_shared() -> None:
    """Drop every input kept for building trials (tests; a long-lived process freeing memory)."""
    with _BUILDING:
        for kept in (
            _SHARED_COUNTS,
            _HOST_PAGES,
            _HOST_TEXTS,
            _FACTS,
            _QA_FILES,
            _KV_FILES,
            _BM25,
            _UNITS,
            _POOLS,
            _FILE_HASHES,
        ):
            kept.clear()


def _host_pages(host: Document, cache: PageCounts) -> tuple[list[str], list[int]]:
    texts = [p.text for p in host.pages if p.has_text]
    return texts, cache.count(texts)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (kept while its size and modification time stay)."""
    stat = os.stat(path)
    with _BUILDING:
        return _FILE_HASHES.get(
            (str(path), stat.st_size, stat.st_mtime_ns),
            lambda: hashlib.sha256(path.read_bytes()).hexdigest(),
        )


def qa_items(path: Path, *, unanswerable: bool = False) -> list[QAItem]:
    """A QA file's items, read once per process while the file stays the same."""
    sha = file_sha256(path)
    with _BUILDING:
        return _QA_FILES.get(
            (str(path), sha, unanswerable), lambda: read_qa_jsonl(path, unanswerable=unanswerable)
        )


def kv_rows(path: Path) -> list[KVRow]:
    """A key–value file's rows, read once per process while the file stays the same."""
    sha = file_sha256(path)
    with _BUILDING:
        return _KV_FILES.get((str(path), sha), lambda: read_kv_jsonl(path))


register_source(TrialRecipe.kind, TrialRecipe.from_dict)
