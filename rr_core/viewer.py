"""What the model saw, as data for the page viewer. Pure: no I/O, no streamlit.

- ``page_strip``: per page, its tokens, where the *plan's* reminders and chunk breaks fall
  (``plan_marks`` reads them off the plan), and its rank among retrieved pages after a run.
- ``segments_of``: a prompt layout's blocks with their token spans; from them
  ``reminder_offsets`` and ``instruction_distances`` (how far every page sits from the
  nearest copy of the instructions: the paper's reason reprompting works).
- ``condense_prompt``, ``condense_to_fit``: a prompt shortened for display, tags and
  reminders kept intact.
- ``locate_support``: the passage of a page that supports an answer (rapidfuzz alignment).

Token counting comes in as a function, so tests need no tokenizer.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from rr_core.plans import Plan
from rr_core.prompts import SEPARATOR, PromptLayout, page_spans

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
    cited: bool = False


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
    cited: int | None = None,
) -> list[StripPage]:
    """Every page with its tokens, reminder marker, chunk and retrieval rank."""
    reminders = set(reminders_after)
    chunk_of: dict[int, int] = {}
    for index, pages in enumerate(chunks, start=1):
        for number in pages:
            chunk_of[number] = index
    rank = {page: i for i, page in enumerate(dict.fromkeys(retrieved), start=1)}
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
                cited=number == cited,
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


# ---- Supporting text -------------------------------------------------------------------

NOT_AN_ANSWER = frozenset({"", "n/a", "na", "none", "unknown"})
_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*\n\s*")


@dataclass(frozen=True, slots=True)
class Support:
    """Where an answer sits on a page: the aligned words and the sentence around them."""

    quote: str  # the page's words best aligned with the answer
    passage: str  # the sentence(s) containing the quote: what to highlight
    start: int  # character span of ``quote`` in the page text
    end: int
    score: float  # rapidfuzz partial_ratio, 0–100


def locate_support(answer: str | None, page_text: str, *, min_score: float = 60.0) -> Support | None:
    """The passage of ``page_text`` that best supports ``answer``, or None when nothing does."""
    if answer is None or answer.strip().lower().strip(".") in NOT_AN_ANSWER or not page_text.strip():
        return None
    needle = " ".join(answer.split())
    hay = page_text
    low_needle, low_hay = needle.lower(), hay.lower()
    if len(low_needle) != len(needle) or len(low_hay) != len(hay):  # lower() changed lengths
        low_needle, low_hay = needle, hay
    flat_hay, index = _flatten(low_hay)
    exact = flat_hay.find(low_needle)
    if exact >= 0:
        a, b, score = exact, exact + len(low_needle), 100.0
    else:
        alignment = fuzz.partial_ratio_alignment(low_needle, flat_hay)
        if alignment is None or alignment.score < min_score:
            return None
        a, b, score = alignment.dest_start, alignment.dest_end, float(alignment.score)
    if b <= a:
        return None
    start, end = index[a], index[b - 1] + 1
    start, end = _widen_to_words(hay, start, end)
    sentence_start, sentence_end = _sentence_span(hay, start, end)
    return Support(
        quote=" ".join(hay[start:end].split()),
        passage=" ".join(hay[sentence_start:sentence_end].split()),
        start=start,
        end=end,
        score=round(score, 1),
    )


def _flatten(text: str) -> tuple[str, list[int]]:
    """Whitespace runs collapsed to one space, with each kept character's original index."""
    out: list[str] = []
    index: list[int] = []
    previous_space = True
    for i, ch in enumerate(text):
        if ch.isspace():
            if previous_space:
                continue
            out.append(" ")
            previous_space = True
        else:
            out.append(ch)
            previous_space = False
        index.append(i)
    return "".join(out), index


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the sentence(s) around ``[start, end)``."""
    breaks = [(m.start(), m.end()) for m in _SENTENCE_BREAK.finditer(text)]
    sentence_start = max((b for a, b in breaks if b <= start), default=0)
    sentence_end = min((a for a, b in breaks if a >= end), default=len(text))
    return sentence_start, sentence_end


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
