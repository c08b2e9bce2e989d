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
from rr_core.metrics import contains_answer
from rr_core.planting import HostText, PlantedFact, plant_fact
from rr_core.questions import Question
from rr_core.retrieval import BM25
from rr_core.tokens import TokenCounter

Depths = Sequence[float] | Callable[[int], Sequence[float]]


def _depths(depths: Depths, length: int) -> list[float]:
    """The depths at one length, each once (a depth asked twice is one cell, not two)."""
    return list(dict.fromkeys(float(d) for d in (depths(length) if callable(depths) else depths)))


def _cells(lengths: Sequence[int], depths: Depths) -> int:
    return sum(len(_depths(depths, length)) for length in dict.fromkeys(lengths))


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
    lengths = list(dict.fromkeys(lengths))
    check_trial_count(repeats, _cells(lengths, depths))
    texts = [p.text for p in document.pages if p.has_text]
    counts = cache.count(texts)
    # Every cut starts at the first page, so the longest holds all the text any trial shows.
    longest = fit_length(texts, counts, max(lengths)) if lengths else []
    host = HostText(texts[i] for i in sorted(set(longest)))
    trials: list[Trial] = []
    # A fact per repeat and depth (the same at every length, so lengths compare like with like):
    # trials that share a fact are not independent, so a fact a cell gives every cell more
    # questions to count, where one fact per repeat made a whole row hang on two questions.
    facts: dict[tuple[int, int], tuple[PlantedFact, int]] = {}
    for repeat in range(repeats):
        rng = random.Random(f"{seed}-{repeat}")
        for length in lengths:
            chosen = fit_length(texts, counts, length)
            base = [texts[i] for i in chosen]
            base_counts = [counts[i] for i in chosen]
            for slot, depth in enumerate(_depths(depths, length)):
                if (repeat, slot) not in facts:
                    facts[repeat, slot] = plant_fact(host, (seed * 1_000 + repeat) * 1_000 + slot)
                fact, replanted = facts[repeat, slot]
                question = fact.paraphrase if paraphrase else fact.question
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
                        question_id=f"fact-{seed}-{repeat}-{slot}",
                        question=question,
                        answers=fact.answers,
                        gold_pages=(gold + 1,),
                        document=cache.document(
                            f"{document.name} · {length:,} tokens · fact at {depth:g}%", pages
                        ),
                        replanted=replanted,
                    )
                )
    return check_unique(trials)


OWN_CTXS = "own-ctxs"
BM25_FROM_OTHER_ROWS = "bm25-from-other-rows"
CONSTRUCTIONS = {
    OWN_CTXS: "each question's own retrieved passages, most relevant first, the gold moved among them (001 §3)",
    BM25_FROM_OTHER_ROWS: "other questions' passages ranked by BM25 against the question, most relevant first; "
    "any passage holding an accepted answer dropped (the file has one passage per question)",
}


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage of a QA file: a Wikipedia chunk with its title."""

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
    none in an oracle-only file)."""

    question: str
    answers: tuple[str, ...]
    gold: Passage
    distracters: tuple[Passage, ...] = ()
    left_out: int = 0  # the question's passages that hold an answer but are not the gold


@dataclass(frozen=True, slots=True)
class KVRow:
    """A row of a key–value retrieval file: the pairs in their order, and the asked key."""

    records: tuple[tuple[str, str], ...]
    key: str
    value: str


def _rows(path: Path, limit: int) -> Iterable[tuple[int, dict[str, object]]]:
    """(line number, object) of a JSONL file (optionally gzipped), at most ``limit`` rows."""
    opener = gzip.open if path.suffix == ".gz" else open
    count = 0
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
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


def file_format(path: Path) -> str:
    """``"qa"`` (question, answers, ctxs) or ``"kv"`` (ordered_kv_records, key, value), from the
    first row; ``ConfigError`` for anything else, or for a file with no row."""
    for _, row in _rows(path, 1):
        if {"question", "answers", "ctxs"} <= row.keys():
            return "qa"
        if {"ordered_kv_records", "key", "value"} <= row.keys():
            return "kv"
        raise ConfigError(
            f"{path.name} is neither a Lost-in-the-Middle QA file (question, answers, ctxs) nor a "
            "key–value file (ordered_kv_records, key, value)."
        )
    raise ConfigError(f"{path.name} has no rows.")


def _text(value: object, what: str) -> str:
    """A non-empty string field of a row (``ValueError`` names it otherwise)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, not {json.dumps(value)[:40]}")
    return value


def holds_answer(passage: Passage, answers: Sequence[str]) -> bool:
    """Whether a passage (its title or its text) holds one of the accepted answers."""
    return contains_answer(passage.text, answers) or contains_answer(passage.title, answers)


def _qa_item(row: dict[str, object]) -> QAItem:
    question = _text(row["question"], '"question"')
    raw_answers = row["answers"]
    # The release gives a list of accepted answers; a bare string would be read as letters.
    if not isinstance(raw_answers, list) or not raw_answers:
        raise ValueError('"answers" must be a non-empty list of strings')
    answers = tuple(_text(a, "each answer") for a in raw_answers)
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
    if not golds and len(ctxs) == 1:
        golds = [0]  # a one-passage row without the flag: that passage is the gold
    if len(golds) != 1:
        raise ValueError(f"{len(golds)} ctxs marked isgold; exactly one must be")
    gold = golds[0]
    distracters: list[Passage] = []
    left_out = 0
    for i, (ctx, passage) in enumerate(zip(ctxs, passages, strict=True)):
        if i == gold:
            continue
        if ctx.get("hasanswer") or holds_answer(passage, answers) or passage == passages[gold]:
            left_out += 1  # answer-bearing: a second place to find the answer
            continue
        distracters.append(passage)
    return QAItem(question, answers, passages[gold], tuple(distracters), left_out)


def read_qa_jsonl(path: Path, limit: int = 5_000) -> list[QAItem]:
    """A QA file of the Lost-in-the-Middle release (JSONL, optionally gzipped): ``question``,
    ``answers`` (a list) and ``ctxs`` (``title``, ``text``, ``isgold``, ``hasanswer``). The gold
    is the ctx marked ``isgold`` wherever it stands; the others are the question's own
    distracters in their given order (most relevant first), any that holds an answer (in its
    title or text) left out. An oracle-only file has one ctx per question (its distracters are
    then ranked from the other rows)."""
    if file_format(path) == "kv":
        raise ConfigError(f"{path.name} is a key–value retrieval file: use the key–value preset for it.")
    items: list[QAItem] = []
    for number, row in _rows(path, limit):
        try:
            items.append(_qa_item(row))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path.name}, line {number}: not a question with answers and ctxs ({exc})."
            ) from None
    if any(not it.distracters for it in items) and len(items) < 2:
        raise ConfigError(
            f"{path.name} needs at least two questions (with one passage per question, the others' "
            "passages are the distracters)."
        )
    return items


def read_kv_jsonl(path: Path, limit: int = 5_000) -> list[KVRow]:
    """A key–value retrieval file of the Lost-in-the-Middle release: ``ordered_kv_records``
    (a list of [key, value] pairs), the asked ``key`` (one of them) and its ``value``."""
    if file_format(path) == "qa":
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


def passage_trials(
    items: Sequence[QAItem],
    cache: PageCounts,
    *,
    lengths: Sequence[int],
    depths: Depths,
    repeats: int,
    seed: int = 0,
) -> list[Trial]:
    """The gold passage at each depth among its distracters, one passage per page, as 001 shows
    them (title and text); the distracters keep their order (most relevant first), cut to about
    ``length`` tokens. A question with its own passages uses them; otherwise other questions'
    passages ranked by BM25 (see ``CONSTRUCTIONS``). A question with no passage left to hide
    its answer among is refused: its document would be the answer alone. ``repeats`` above the
    file's questions is capped to them (each repeat asks another question)."""
    lengths = list(dict.fromkeys(lengths))
    check_trial_count(min(repeats, len(items)), _cells(lengths, depths))
    rng = random.Random(seed)
    picks = rng.sample(range(len(items)), min(repeats, len(items)))
    index: list[BM25] = []

    def bm25() -> BM25:
        if not index:
            index.append(BM25([f"{it.gold.title} {it.gold.text}" for it in items]))
        return index[0]

    longest = max(lengths, default=0)
    trials: list[Trial] = []
    for repeat, picked in enumerate(picks):
        item = items[picked]
        own = bool(item.distracters)
        source: Iterable[tuple[Passage, bool]] = (
            ((p, False) for p in item.distracters) if own else _ranked_distracters(items, picked, bm25)
        )
        gold_tokens = cache.count([item.gold.shown()])[0]
        # The distracters the longest document needs, in order; shorter ones take a prefix.
        pool: list[Passage] = []
        pool_counts: list[int] = []
        dropped = item.left_out
        total = gold_tokens
        for passage, holds in source:
            if holds:
                dropped += 1
                continue
            (n,) = cache.count([passage.shown()])
            if total + n > longest and pool:
                break
            pool.append(passage)
            pool_counts.append(n)
            total += n
        if not pool:
            raise ConfigError(
                f"The question {item.question[:60]!r} has no passage without its answer to hide it among "
                f"({dropped} hold an answer): a document of the answer alone measures nothing."
            )
        for length in lengths:
            size = 0
            total = gold_tokens
            while size < len(pool) and (total + pool_counts[size] <= length or size == 0):
                total += pool_counts[size]
                size += 1
            chosen, counts = pool[:size], pool_counts[:size]
            for depth in _depths(depths, length):
                position = boundary_at([*counts, 0], depth) if chosen else 0
                order = [*chosen[:position], item.gold, *chosen[position:]]
                texts = [p.shown(n) for n, p in enumerate(order, start=1)]
                trials.append(
                    Trial(
                        id=f"passages-d{length}-p{depth:g}-r{repeat}",
                        task="passages",
                        length=length,
                        depth=float(depth),
                        repeat=repeat,
                        question_id=f"qa-{picked}",
                        question=item.question,
                        answers=item.answers,
                        gold_pages=(position + 1,),
                        document=cache.document(f"{len(texts)} passages · gold at {depth:g}%", texts),
                        construction=OWN_CTXS if own else BM25_FROM_OTHER_ROWS,
                        dropped=dropped,
                    )
                )
    return check_unique(trials)


def kv_trials(
    cache: PageCounts,
    *,
    pairs: Sequence[int],
    depths: Sequence[float],
    repeats: int,
    seed: int = 0,
    rows: Sequence[KVRow] = (),
) -> list[Trial]:
    """Key–value retrieval (001 §4): ``n`` pairs, one per page, the asked pair at each depth,
    scored by exact match on the value. Pairs are generated UUIDs, or a file's rows (its pairs
    in their order, the asked pair moved to the depth; ``n`` = 0 keeps all of a row's pairs).
    A row cannot give more pairs than it has, and a document needs at least one pair besides
    the asked one: both are refused. ``repeats`` above the file's rows is capped to them."""
    depths = list(dict.fromkeys(float(d) for d in depths))
    wanted = list(dict.fromkeys(pairs))
    check_trial_count(min(repeats, len(rows)) if rows else repeats, len(wanted) * len(depths))
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
    trials: list[Trial] = []
    picks = random.Random(f"kv-{seed}").sample(range(len(rows)), min(repeats, len(rows))) if rows else []
    for repeat in range(len(picks) if rows else repeats):
        rng = random.Random(f"kv-{seed}-{repeat}")
        # Each size once: on a 75-key file, 0 (the row's own) and 75 are one document.
        sizes = list(
            dict.fromkeys(len(rows[picks[repeat]].records) if rows and n == 0 else n for n in wanted)
        )
        for n in sizes:
            if rows:
                row = rows[picks[repeat]]
                gold_pair = (row.key, row.value)
                others = [r for r in row.records if r != gold_pair][: n - 1]
                question_id = f"kv-file-{picks[repeat]}"
            else:
                records = [
                    (
                        str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                        str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    )
                    for _ in range(n)
                ]
                gold_pair, others = records[0], records[1:]
                question_id = f"kv-{seed}-{repeat}-{n}"  # one question asked at every depth
            other_counts = cache.count([json.dumps({k: v}) for k, v in others])
            for depth in depths:
                position = boundary_at([*other_counts, 0], depth)
                ordered = [*others[:position], gold_pair, *others[position:]]
                texts = [json.dumps({k: v}) for k, v in ordered]
                key, value = gold_pair
                trials.append(
                    Trial(
                        id=f"kv-n{n}-p{depth:g}-r{repeat}",
                        task="kv",
                        length=n,
                        depth=depth,
                        repeat=repeat,
                        question_id=question_id,
                        question=f"What is the value associated with the key {key}?",
                        answers=(value,),
                        gold_pages=(position + 1,),
                        document=cache.document(f"{len(texts)} key–value pairs · key at {depth:g}%", texts),
                        exact=True,
                    )
                )
    return check_unique(trials)


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
