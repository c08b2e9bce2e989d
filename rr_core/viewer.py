"""What the model saw, as data for the page viewer. Pure: no I/O, no streamlit.

- ``page_strip``: per page, its tokens, where the *plan's* reminders and chunk breaks fall
  (``plan_marks`` reads them off the plan), and its rank among retrieved pages after a run.
- ``segments_of``: a prompt layout's blocks with their token spans; from them
  ``reminder_offsets`` and ``instruction_distances`` (how far every page sits from the
  nearest copy of the instructions: the paper's reason reprompting works).
- ``condense_prompt``, ``condense_to_fit``: a prompt shortened for display, tags and
  reminders kept intact.
- ``place_quote``: where a cited quote stands on its page, as one contiguous run of the
  page's words with their boxes (rapidfuzz alignment), so that exactly the quote is
  highlighted.

Token counting comes in as a function, so tests need no tokenizer.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from rr_core.documents import Box, PageWord
from rr_core.plans import Plan
from rr_core.prompts import SEPARATOR, PromptLayout, page_spans
from rr_core.quotes import APPROXIMATE_AT

SegmentKind = Literal["opening", "reminder", "closing", "page", "other"]
INSTRUCTION_KINDS: frozenset[str] = frozenset({"opening", "reminder", "closing"})

# ---- The page strip --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StripPage:
    """One page of the strip: its size, place, and role in a plan and a run."""

    number: int
    tokens: int
    start: int  # tokens of the document before this page
    chunk: int  # 1-based chunk index in the plan (1 when the plan does not chunk)
    reminder_after: bool  # a call of the plan puts a reminder right after this page
    rank: int | None = None  # 1 = retrieved first; None = not retrieved
    cited: bool = False  # a citation of the answer shown stands on this page


@dataclass(frozen=True, slots=True)
class PlanMarks:
    """Where a plan's long-context calls put reminders, and where its chunks break."""

    reminders_after: frozenset[int]
    leading_reminders: int
    chunks: tuple[range, ...]


def plan_marks(plan: Plan) -> PlanMarks:
    """The reminder and chunk layout of a plan, read off its known calls (not recomputed)."""
    after: set[int] = set()
    leading = 0
    for call in plan.known_calls:
        after.update(call.reminders_after)
        leading += call.leading_reminders
    return PlanMarks(frozenset(after), leading, plan.chunks)


def page_strip(
    page_tokens: Sequence[int],
    *,
    reminders_after: Iterable[int] = (),
    chunks: Sequence[range] = (),
    retrieved: Sequence[int] = (),
    cited: Iterable[int] = (),
) -> list[StripPage]:
    """Every page with its tokens, reminder marker, chunk and retrieval rank."""
    reminders = set(reminders_after)
    chunk_of: dict[int, int] = {}
    for index, pages in enumerate(chunks, start=1):
        for number in pages:
            chunk_of[number] = index
    rank = {page: i for i, page in enumerate(dict.fromkeys(retrieved), start=1)}
    cited_pages = set(cited)
    strip: list[StripPage] = []
    start = 0
    for number, tokens in enumerate(page_tokens, start=1):
        strip.append(
            StripPage(
                number=number,
                tokens=tokens,
                start=start,
                chunk=chunk_of.get(number, 1),
                reminder_after=number in reminders,
                rank=rank.get(number),
                cited=number in cited_pages,
            )
        )
        start += tokens
    return strip


def chunk_breaks(strip: Sequence[StripPage]) -> list[int]:
    """Page numbers after which a new chunk starts."""
    return [a.number for a, b in zip(strip, strip[1:], strict=False) if a.chunk != b.chunk]


# ---- Prompt layout ---------------------------------------------------------------------

_KINDS: dict[str, SegmentKind] = {
    "opening": "opening",
    "reminder": "reminder",
    "closing": "closing",
    "page": "page",
}


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of a prompt: tokens ``[start, end)`` and characters ``[char_start, char_end)``."""

    kind: SegmentKind
    start: int
    end: int
    char_start: int
    char_end: int
    page: int | None = None

    @property
    def tokens(self) -> int:
        """Tokens in the segment."""
        return self.end - self.start


def segments_of(layout: PromptLayout, counts: Sequence[int]) -> list[Segment]:
    """A prompt's blocks as segments with token and character offsets (``counts``: tokens per
    block, as the plan counted them). Nothing is re-parsed: the layout says what each block is."""
    segments: list[Segment] = []
    offset = 0
    char = 0
    for block, tokens in zip(layout.blocks, counts, strict=True):
        kind = _KINDS.get(block.kind, "other")
        segments.append(Segment(kind, offset, offset + tokens, char, char + len(block.text), block.page))
        offset += tokens
        char += len(block.text) + len(SEPARATOR)
    return segments


def reminder_offsets(segments: Sequence[Segment]) -> list[int]:
    """Token offset at which each reminder block starts, in prompt order."""
    return [s.start for s in segments if s.kind == "reminder"]


def reminder_pages(segments: Sequence[Segment]) -> list[int | None]:
    """For each reminder, the page right before it (None when it precedes every page)."""
    out: list[int | None] = []
    last_page: int | None = None
    for s in segments:
        if s.kind == "page":
            last_page = s.page
        elif s.kind == "reminder":
            out.append(last_page)
    return out


def instruction_distances(segments: Sequence[Segment]) -> dict[int, int]:
    """Per page: tokens from the middle of the page to the nearest copy of the instructions.

    Copies are the opening, every reminder and the closing. A page next to a copy scores
    about half its own length; a page deep in a long document without reminders, far more.
    Segments come in prompt order and do not overlap (``segments_of``), so the nearest copy
    is the last one before the page's middle or the first one after it: found by bisection,
    not by trying every copy for every page (which took 0.7 s at 3,000 pages).
    """
    blocks = [(s.start, s.end) for s in segments if s.kind in INSTRUCTION_KINDS]
    if not blocks:
        return {}
    starts = [a for a, _ in blocks]
    out: dict[int, int] = {}
    for s in segments:
        if s.kind != "page" or s.page is None:
            continue
        middle = (s.start + s.end) / 2
        at = bisect_right(starts, middle)  # blocks[:at] start at or before the middle
        near = blocks[max(at - 1, 0) : at + 1]
        out[s.page] = round(min(_gap(middle, a, b) for a, b in near))
    return out


def _gap(point: float, start: int, end: int) -> float:
    if point < start:
        return start - point
    if point > end:
        return point - end
    return 0.0


def condense_prompt(prompt: str, keep_chars: int = 300) -> str:
    """The prompt with each page cut to its first ``keep_chars`` characters.

    Tags, instructions and reminder blocks stay whole, so the structure reads at a glance.
    """
    return _condense(prompt, page_spans(prompt), keep_chars)


@dataclass(frozen=True, slots=True)
class Condensed:
    """A prompt shortened for the screen: its text, how far each page was cut, what was left out."""

    text: str
    keep_chars: int  # each page shows at most this many characters
    cut_off: bool  # even at the shortest cut the prompt was longer than the limit: ``text`` ends early


def condense_to_fit(prompt: str, limit: int, keeps: Sequence[int] = (200, 80, 20)) -> Condensed:
    """The prompt with its pages cut to the longest of ``keeps`` that fits in ``limit``
    characters (cut at ``limit`` when even the shortest does not). The pages are found once."""
    spans = page_spans(prompt)
    for keep in keeps:
        text = _condense(prompt, spans, keep)
        if len(text) <= limit:
            break
    return Condensed(text[:limit], keep, len(text) > limit)


def _condense(prompt: str, spans: Sequence[tuple[int, int, int]], keep_chars: int) -> str:
    parts: list[str] = []
    done = 0
    for _, start, end in spans:
        if end - start <= keep_chars:
            continue
        window = prompt[start : start + keep_chars]
        head = window.rsplit(" ", 1)[0] if " " in window else window
        omitted = end - start - len(head)
        parts += [prompt[done:start], head, f" … [{omitted:,} more characters]"]
        done = end
    parts.append(prompt[done:])
    return "".join(parts)


# ---- Placing a quote on its page -----------------------------------------------------------

# The share of a quote's words (rapidfuzz ratio over normalised words, 0-100) a run of the
# page's words must match for the quote to count as placed: the quote check's own bar for
# "approximate", so a quote is highlighted exactly when it was found on its page.
PLACE_AT = APPROXIMATE_AT
_EDGE = re.compile(r"^[^\w]+|[^\w]+$")
# How many words each end of an aligned run may move to find the best-matching run.
_SLACK = 3


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a quote stands on its page: a contiguous run of the page's words."""

    start: int  # index of the run's first word in the page's words
    end: int  # one past the last
    score: float  # 100 for word for word; ``PLACE_AT`` and up for a near match
    boxes: tuple[Box, ...]  # one box per line of the run: what to highlight
    occurrences: int = 1  # runs that match word for word (the first is placed)


def _norm_word(word: str) -> str:
    return _EDGE.sub("", word).lower()


def place_quote(quote: str, words: Sequence[PageWord]) -> Placement | None:
    """The one contiguous run of the page's words (in reading order) that the quote is, or
    None when no run matches closely enough. Only that run is returned, so only the quoted
    words are highlighted: not other places where some of its words recur, not its sentence.
    """
    wanted = [w for w in (_norm_word(t) for t in quote.split()) if w]
    if not wanted:
        return None
    # The page's words without bare punctuation ("•", "—"), each with its index in ``words``.
    kept = [(i, n) for i, n in ((i, _norm_word(w.text)) for i, w in enumerate(words)) if n]
    tokens = [n for _, n in kept]
    if not tokens:
        return None
    size = len(wanted)
    exact = [s for s in range(len(tokens) - size + 1) if tokens[s : s + size] == wanted]
    if exact:
        a, b, score = exact[0], exact[0] + size, 100.0
    else:
        found = _align(wanted, tokens)
        if found is None:
            return None
        a, b, score = found
    first, last = kept[a][0], kept[b - 1][0]
    return Placement(first, last + 1, score, _line_boxes(words[first : last + 1]), max(len(exact), 1))


def _align(wanted: list[str], tokens: list[str]) -> tuple[int, int, float] | None:
    """The run of ``tokens`` closest to ``wanted`` (rapidfuzz), as (start, end, score)."""
    needle = " ".join(wanted)
    starts: list[int] = []  # character offset of each token in the joined page
    at = 0
    for token in tokens:
        starts.append(at)
        at += len(token) + 1
    hay = " ".join(tokens)
    if len(needle) < len(hay):
        alignment = fuzz.partial_ratio_alignment(needle, hay)
        if alignment is None:
            return None
        a = max(bisect_right(starts, alignment.dest_start) - 1, 0)
        b = max(bisect_right(starts, max(alignment.dest_end - 1, alignment.dest_start)), a + 1)
    else:
        a, b = 0, len(tokens)
    # The alignment is of characters: try moving each end by a few words for the best run.
    best: tuple[float, int, int] = (-1.0, a, b)
    for start in range(max(a - _SLACK, 0), min(a + _SLACK, b - 1) + 1):
        for end in range(max(b - _SLACK, start + 1), min(b + _SLACK, len(tokens)) + 1):
            score = float(fuzz.ratio(needle, " ".join(tokens[start:end])))
            if score > best[0]:
                best = (score, start, end)
    score, start, end = best
    return (start, end, round(score, 1)) if score >= PLACE_AT else None


def _line_boxes(run: Sequence[PageWord]) -> tuple[Box, ...]:
    """The run's word boxes joined per line: one box from the first to the last word of it."""
    boxes: list[Box] = []
    line: tuple[int, int] | None = None
    for word in run:
        x0, y0, x1, y1 = word.box
        if boxes and word.line == line:
            a0, b0, a1, b1 = boxes[-1]
            boxes[-1] = (min(a0, x0), min(b0, y0), max(a1, x1), max(b1, y1))
        else:
            boxes.append(word.box)
            line = word.line
    return tuple(boxes)


def without_reminders(segments: Sequence[Segment]) -> list[Segment]:
    """The same layout with the reminder blocks taken out: the prompt as a baseline sees it."""
    out: list[Segment] = []
    shift = 0
    for s in segments:
        if s.kind == "reminder":
            shift += s.tokens
            continue
        out.append(Segment(s.kind, s.start - shift, s.end - shift, s.char_start, s.char_end, s.page))
    return out


# ---- A place clicked on a page -------------------------------------------------------------------

_ENDS_SENTENCE = re.compile(r"[.!?;:][\"')\]]*$")
SENTENCE_WORDS = 60  # at most this many words either side of the clicked one


def sentence_at(words: Sequence[PageWord], index: int) -> str:
    """The sentence of the page that holds word ``index`` (in reading order): from the word
    after the previous sentence's end to the next end, on whatever lines it runs over, at
    most ``SENTENCE_WORDS`` words either side. What a reviewer means by clicking a place."""
    if not 0 <= index < len(words):
        return ""
    start = index
    while start > 0 and index - start < SENTENCE_WORDS and not _ENDS_SENTENCE.search(words[start - 1].text):
        start -= 1
    end = index
    while (
        end < len(words) - 1 and end - index < SENTENCE_WORDS and not _ENDS_SENTENCE.search(words[end].text)
    ):
        end += 1
    return " ".join(w.text for w in words[start : end + 1])


def word_centres(words: Sequence[PageWord], zoom: float) -> list[tuple[float, float]]:
    """Each word's centre in a picture of its page drawn at ``zoom`` pixels per point."""
    return [((w.box[0] + w.box[2]) / 2 * zoom, (w.box[1] + w.box[3]) / 2 * zoom) for w in words]
