"""Lexical relevance (BM25) over short texts: the offline engine's reader.

A page is turned into terms once: ``page_terms`` keeps each page's terms and sentences in a
bounded memory keyed by a digest of its text, so the methods of one question (and the calls
of one method) share the work instead of repeating it per call.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress

from rr_core.tokens import text_key

# Letters and digits of any script: an ASCII-only pattern found no term at all in a Korean
# question, so the offline engine answered "n/a" to everything in non-Latin documents.
_WORD = re.compile(r"[^\W_]+(?:[.,][0-9]+)*")

# Scripts written without spaces between words (Chinese, Japanese), and Korean, whose words
# carry their particles ("보증금은", "보증금을"): a run of them is read as overlapping character
# pairs (the bigrams of CJK search engines), so a question's words meet the page's wherever
# they stand. Hangul (syllables and jamo), kana, the CJK ideographs and their extensions.
_CJK = re.compile(
    "([\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+)"
)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just me more most my no nor not now of off on once only or other our out over own same she
    should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours shall may must""".split()
)


def _token_terms(token: str) -> tuple[str, ...]:
    """The terms of one lower-cased, white-space-free token: ``_WORD``'s words in it, each
    stemmed, stopwords left out.

    No word spans white space, so a text's terms are its tokens' terms in order. A token that
    is a plain run of letters and digits once one mark at either end is set aside ("fee.",
    "(a)") is one word; the others ("4.2", "a/b") go to the regex.
    """
    if _CJK.search(token):
        return _cjk_terms(token)
    if not token.isalnum():
        # One mark at an end (never part of a word: a word starts and ends with a letter or
        # digit) leaves a plain word, or the regex decides.
        if token[:-1].isalnum():
            token = token[:-1]
        elif token[1:].isalnum():
            token = token[1:]
        elif token[1:-1].isalnum():
            token = token[1:-1]
        else:
            return tuple(term for word in _WORD.findall(token) if (term := _term(word)))
    term = _term(token)
    return (term,) if term else ()


# Within a CJK or Hangul run, what carries the content. Korean: each word's stem, its
# particle or ending taken off (the longest that leaves two syllables; 임차인이 and 임차인은
# are both 임차인), question words dropped. Japanese: kanji and katakana, the hiragana runs
# between them being grammar (particles, endings). Chinese: the run cut at its function
# characters and question words, so that 承租人应支付多少押金 gives 承租人, 支付 and 押金
# rather than pairs that straddle two words (应支, 付多) and stand in no page.
_SCRIPT_RUN = re.compile("([\uac00-\ud7a3]+)|([\u3040-\u309f]+)|([^\uac00-\ud7a3\u3040-\u309f]+)")
_KOREAN_ENDINGS = sorted(
    """은 는 이 가 을 를 의 에 와 과 도 만 로 으로 에서 에게 께서 까지 부터 보다 처럼 에는 에서는
    으로는 로는 와는 과는 이다 이며 이고 이나 이라 입니다 입니까 합니다 합니까 습니다 습니까 니다
    니까 한다 하는 하여 하고 하며 했다 한 할 된다 되는 되어 된 될 하지 해야""".split(),
    key=len,
    reverse=True,
)
_KOREAN_QUESTION = frozenset("얼마 무엇 어디 언제 누구 어떤 어느 몇 왜 어떻게".split())
_HANZI_BREAK = re.compile(
    "多少|什么|哪里|哪个|为什么|怎么|如何|是否|[的了是在和与及或为于应吗呢吧啊么哪谁何几这那其之也都而被把将对向从由给按所该]"
)


def _pairs(run: str) -> list[str]:
    """A run's overlapping character pairs; a lone character as itself."""
    return [run] if len(run) == 1 else [run[j : j + 2] for j in range(len(run) - 1)]


def _korean_stem(word: str) -> str:
    for ending in _KOREAN_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 2:
            return word[: -len(ending)]
    return word


def _cjk_run_terms(run: str) -> list[str]:
    out: list[str] = []
    for hangul, _hiragana, other in _SCRIPT_RUN.findall(run):
        if hangul:
            stem = _korean_stem(hangul)
            if stem not in _KOREAN_QUESTION:
                out.extend(_pairs(stem))
        elif other:
            out.extend(chain.from_iterable(_pairs(p) for p in _HANZI_BREAK.split(other) if p))
    return out


def _cjk_terms(token: str) -> tuple[str, ...]:
    """The terms of a token with CJK or Hangul in it: each run of those scripts as the
    character pairs of its content (see ``_SCRIPT_RUN``), the rest as words."""
    out: list[str] = []
    for word in _WORD.findall(token):
        for i, piece in enumerate(_CJK.split(word)):
            if not piece:
                continue
            if i % 2:  # a run of CJK or Hangul (split keeps the captured runs at odd places)
                out.extend(_cjk_run_terms(piece))
            elif term := _term(piece):
                out.append(term)
    return tuple(out)


def _term(word: str) -> str:
    return "" if word in STOPWORDS else _stem(word)


class _TokenMemory(dict[str, tuple[str, ...]]):
    """Each lower-cased token seen so far and its terms.

    Tokens repeat far more than they vary, so a text's terms are looked up token by token
    from C (``map`` over ``str.split``, ``chain`` to flatten): Python runs only for a token
    not seen before. 1.2-1.4x as fast as a Python loop over the tokens, same terms. Emptied
    when it grows past the limit (a few MB).
    """

    LIMIT = 200_000

    def __missing__(self, token: str) -> tuple[str, ...]:
        found = _token_terms(token)
        if len(self) >= self.LIMIT:
            self.clear()
        self[token] = found
        return found


_TOKENS = _TokenMemory()


def _lowered_terms(lowered: str) -> list[str]:
    return list(chain.from_iterable(map(_TOKENS.__getitem__, lowered.split())))


def terms(text: str) -> list[str]:
    """Lower-cased content words with a light suffix stemmer."""
    return _lowered_terms(text.lower())


def _terms_per_piece(pieces: Sequence[str]) -> list[list[str]]:
    """``[terms(p) for p in pieces]``."""
    return [_lowered_terms(piece.lower()) for piece in pieces]


_STEMMED_ENDINGS = frozenset("sntgd")  # the last letters of the suffixes below


def _stem(word: str) -> str:
    if len(word) <= 4 or word[-1] not in _STEMMED_ENDINGS or word[0].isdigit():
        return word
    for suffix in ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


class BM25:
    """Okapi BM25 over a small collection, built once and queried many times."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.4, b: float = 0.75) -> None:
        self._index([Counter(terms(t)) for t in texts], [], k1, b)

    @classmethod
    def from_counts(cls, docs: Iterable[Mapping[str, int]], *, k1: float = 1.4, b: float = 0.75) -> BM25:
        """The index of texts already turned into term counts (``Counter(terms(text))``)."""
        index = cls.__new__(cls)
        index._index(list(docs), [], k1, b)
        return index

    @classmethod
    def from_terms(cls, docs: Iterable[Sequence[str]], *, k1: float = 1.4, b: float = 0.75) -> BM25:
        """The index of short texts already turned into terms (``terms(text)``), such as
        sentences: counting a few terms on the fly beats building a ``Counter`` for each."""
        index = cls.__new__(cls)
        index._index([], list(docs), k1, b)
        return index

    def _index(
        self, counts: list[Mapping[str, int]], sequences: list[Sequence[str]], k1: float, b: float
    ) -> None:
        self._counts, self._sequences = counts, sequences
        self.lengths = [sum(d.values()) for d in counts] or [len(d) for d in sequences]
        self.avg_len = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        self.k1, self.b = k1, b
        # Inverse document frequencies, worked out only for the terms queries use.
        self._idf: dict[str, float] = {}

    @property
    def docs(self) -> list[Mapping[str, int]] | list[Sequence[str]]:
        """The indexed texts as term counts (or as terms, for ``from_terms``)."""
        return self._counts or self._sequences

    def _frequencies(self, term: str) -> list[int]:
        """How often the term occurs in each text."""
        if self._counts:
            return [doc.get(term, 0) for doc in self._counts]
        return [seq.count(term) for seq in self._sequences]

    def _idf_of(self, term: str, frequencies: list[int]) -> float:
        value = self._idf.get(term)
        if value is None:
            n = len(frequencies)
            f = n - frequencies.count(0)
            value = self._idf[term] = math.log(1 + (n - f + 0.5) / (f + 0.5))
        return value

    def idf(self, term: str) -> float:
        """The term's inverse document frequency in this collection."""
        known = self._idf.get(term)
        return known if known is not None else self._idf_of(term, self._frequencies(term))

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every text for the query."""
        out = [0.0] * len(self.lengths)
        norms = [self.k1 * (1 - self.b + self.b * length / (self.avg_len or 1.0)) for length in self.lengths]
        # Term by term; each text's score still adds its terms up in the query set's order.
        for term in set(terms(query)):
            frequencies = self._frequencies(term)
            idf = self._idf_of(term, frequencies)
            for i in compress(range(len(out)), frequencies):
                tf = frequencies[i]
                out[i] += idf * tf * (self.k1 + 1) / (tf + norms[i])
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
# A sentence ends at . ! ? or ; followed by white space and a capital, a digit, a bracket or
# a quote, unless the full stop closes an abbreviation. The pattern starts with the mark
# itself, so the search skips along the text to the next mark before any look-behind runs
# (checking the abbreviations at every character made this regex most of the engine's
# time); the white space in group 1 is where the text is cut.
# CJK text ends a sentence with a full-width mark and no space: it is cut right after the mark
# (group 2). A Korean or CJK sentence after a full stop and a space starts with its own script.
# Both kinds start with the one class of marks, so the regex engine skips along the text to the
# next mark of either kind in C (an alternation of two starts made every search 2.3x as slow).
_SENTENCE_BREAK = re.compile(
    "[.!?;。！？；](?:(?<=[.!?;])"
    + _NOT_AFTER_ABBREVIATION
    + r"(\s+)(?=[A-Z0-9(\"'\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
    + r"|(?<=[。！？；])(\s*))"
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


def _pieces(text: str) -> list[str]:
    """The text cut into sentence-like pieces, white space normalised, short ones included.

    Pieces are cut only at white space, so they hold every word of the text, in order.
    """
    out = []
    for paragraph in _paragraphs(text):
        start = 0
        for match in _SENTENCE_BREAK.finditer(paragraph):
            cut = 1 if match.group(1) is not None else 2
            out.append(" ".join(paragraph[start : match.start(cut)].split()))
            start = match.end(cut)
        out.append(" ".join(paragraph[start:].split()))
    return out


def sentences(text: str) -> list[str]:
    """Split text into sentence-like pieces, joining wrapped lines."""
    return [piece for piece in _pieces(text) if len(piece) >= 3]


# ---- Pages turned into terms once ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PageTerms:
    """A page text read for BM25: its terms counted, its sentences and each sentence's terms."""

    counts: Counter[str]  # Counter(terms(text))
    sentences: tuple[str, ...]  # sentences(text)
    sentence_terms: tuple[tuple[str, ...], ...]  # terms(s) for each sentence
    lengths: tuple[int, ...] = ()  # len(terms(s)) for each sentence
    length: int = 0  # their sum

    @classmethod
    def of(cls, text: str) -> PageTerms:
        """Read one page: one pass over its sentences gives both the page's and theirs."""
        pieces = _pieces(text)
        per_piece = _terms_per_piece(pieces)
        # Pieces hold every word of the page, so their terms together are the page's terms.
        counts = Counter(chain.from_iterable(per_piece))
        kept = [i for i, piece in enumerate(pieces) if len(piece) >= 3]
        lengths = tuple(len(per_piece[i]) for i in kept)
        return cls(
            counts,
            tuple(pieces[i] for i in kept),
            tuple(tuple(per_piece[i]) for i in kept),
            lengths,
            sum(lengths),
        )


class _PageMemory:
    """The pages read lately, by digest of their text (thread-safe): a page stays while it was
    read within the last ``recent`` reads (a read is one call's pages: one document), and
    never more than ``capacity`` pages. A document asked several times in a row keeps its
    pages, however many; a grid over a corpus holds the few documents in flight, not the
    corpus (a page costs about 14 KB here)."""

    def __init__(self, capacity: int, recent: int = 64) -> None:
        self.capacity = capacity
        self.recent = recent
        self._reads = 0  # reads so far; each page remembers the last that used it
        self._pages: OrderedDict[bytes, tuple[PageTerms, int]] = OrderedDict()  # least lately read first
        # Held while pages are read too: two methods running at once on the same document
        # wait for each other instead of both reading the same pages.
        self._lock = threading.Lock()

    def read(self, texts: Sequence[str]) -> list[PageTerms]:
        keys = [text_key(t) for t in texts]
        with self._lock:
            self._reads += 1
            now = self._reads
            out = []
            for key, text in zip(keys, texts, strict=True):
                found = self._pages.get(key)
                if found is None:
                    page = PageTerms.of(text)
                else:
                    page = found[0]
                    self._pages.move_to_end(key)
                self._pages[key] = (page, now)
                out.append(page)
            oldest = now - self.recent
            while self._pages and (
                len(self._pages) > self.capacity or next(iter(self._pages.values()))[1] <= oldest
            ):
                self._pages.popitem(last=False)
            return out

    def __len__(self) -> int:
        return len(self._pages)

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()


# Above the largest document's page count (5,000), so one document's pages all stay while
# its methods run (40 MiB for 3,000 contract pages); the last 64 reads: a grid's documents in
# flight (a few at once, each read by its calls one after another) or a chunked run's fan-out
# (a read a chunk), not the whole corpus.
_PAGES = _PageMemory(capacity=6_000)


def page_terms(texts: Sequence[str]) -> list[PageTerms]:
    """Each text read for BM25, from memory when a page with the same text was read before."""
    return _PAGES.read(texts)


def page_margin(texts: Sequence[str], question: str) -> float | None:
    """How far the best page for the question stands ahead of the next, by BM25 over the
    pages: ``(best - second) / best`` in [0, 1]. None when fewer than two pages or no page
    holds a word of the question (nothing to rank). A thin margin says the question's words
    spread over several pages alike, so where the answer stands is less certain."""
    if len(texts) < 2:
        return None
    scores = BM25.from_counts(page.counts for page in page_terms(texts)).scores(question)
    best, second = heapq.nlargest(2, scores)
    if best <= 0:
        return None
    return round((best - second) / best, 3)


def sentence_scores(
    pages: Sequence[PageTerms], query: str, *, k1: float = 1.4, b: float = 0.3
) -> list[list[float] | None]:
    """BM25 of every sentence of the pages, taken as one collection, page by page.

    The same figures as ``BM25.from_terms(all sentences' terms, b=b).scores(query)``, but only
    the sentences of pages that hold a query term are looked at: a page without one gets
    None (all its sentences score 0).
    """
    lengths = [page.lengths for page in pages]
    n = sum(len(page_lengths) for page_lengths in lengths)
    avg_len = (sum(page.length for page in pages) / n) if n else 0.0
    out: list[list[float] | None] = [None] * len(pages)
    norms: list[list[float] | None] = [None] * len(pages)
    for term in set(terms(query)):  # each sentence adds its terms up in the query set's order
        found = []
        for j, page in enumerate(pages):
            if term in page.counts:
                frequencies = [seq.count(term) for seq in page.sentence_terms]
                found.append((j, frequencies))
        f = sum(len(freq) - freq.count(0) for _, freq in found)
        idf = math.log(1 + (n - f + 0.5) / (f + 0.5))
        for j, frequencies in found:
            page_norms = norms[j]
            if page_norms is None:
                page_norms = norms[j] = [
                    k1 * (1 - b + b * length / (avg_len or 1.0)) for length in lengths[j]
                ]
            page_scores = out[j]
            if page_scores is None:
                page_scores = out[j] = [0.0] * len(frequencies)
            for i in compress(range(len(frequencies)), frequencies):
                tf = frequencies[i]
                page_scores[i] += idf * tf * (k1 + 1) / (tf + page_norms[i])
    return out
