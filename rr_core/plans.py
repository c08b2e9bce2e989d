"""Plans: everything a method will do, decided before any money is spent. Pure: no I/O.

A plan is a sequence of **phases**. A phase is a set of independent **steps**: LLM calls
(which the executor may run concurrently) or local steps that are not LLM calls (a BM25
ranking). A phase that depends on earlier results is planned with *estimated* steps, sized
for the cost estimate, and a ``resolve`` function that turns the earlier results into its
real steps at run time. ``conclude`` turns all results into the outcome(s).

The executor (``rr_core.runs``) runs any plan and never asks which method made it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rr_core.costs import Cost, Mode, estimate_costs
from rr_core.documents import Document
from rr_core.llm.base import MIN_CACHED_PREFIX_TOKENS, CacheHint, CacheTTL, min_cached_prefix
from rr_core.outputs import NOT_STATED, Output
from rr_core.prompts import SEPARATOR, Block, PromptLayout
from rr_core.settings import RunSettings
from rr_core.tokens import TokenCounter

# ---- Steps ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One LLM call: its prompt as a layout, the reply shape, and its expected size."""

    id: str  # unique within the plan ("retrieve.2", "answer")
    stage: str  # what it is for, as shown to the user ("retrieve", "answer", "map", "reduce")
    layout: PromptLayout = field(repr=False)
    schema: type[Output]
    prompt_tokens: int
    reminder_tokens: int
    output_tokens: int
    max_output_tokens: int
    chunk: int | None = None
    question: int | None = None  # index into the plan's questions, where a call serves one
    model: str = ""  # the model asked, where it is not the run's (a cheaper verifier); priced as it

    @property
    def pages(self) -> tuple[int, ...]:
        """Page numbers in the prompt, in prompt order (passages repeat their page)."""
        return tuple(n for n, _ in self.layout.pages())

    @property
    def reminders_after(self) -> tuple[int, ...]:
        """Pages right after which a reminder block stands."""
        out: list[int] = []
        last: int | None = None
        for block in self.layout.blocks:
            if block.kind == "page":
                last = block.page
            elif block.kind == "reminder" and last is not None:
                out.append(last)
        return tuple(out)

    @property
    def leading_reminders(self) -> int:
        """Reminder blocks before the first page."""
        count = 0
        for block in self.layout.blocks:
            if block.kind == "page":
                break
            count += block.kind == "reminder"
        return count

    @property
    def reminder_count(self) -> int:
        """Reminder blocks in the prompt."""
        return self.layout.reminder_count

    def render(self) -> str:
        """The exact prompt text."""
        return self.layout.render()

    @property
    def prefix_tokens(self) -> int:
        """Estimated tokens of the prompt's cacheable prefix (the layout's ``prefix_chars``):
        its share of the prompt's characters times the prompt's tokens, and never more than
        one token per two characters (an estimated call's tokens stand for pages its layout
        does not hold yet)."""
        chars = self.layout.prefix_chars()
        total = self.layout.total_chars()
        if chars <= 0 or total <= 0:
            return 0
        return min(self.prompt_tokens * chars // total, chars // 2)

    def cache_hint(
        self, document_sha256: str, ttl: CacheTTL = "5m", *, min_tokens: int = MIN_CACHED_PREFIX_TOKENS
    ) -> CacheHint | None:
        """Where this call's cacheable prefix ends, for the provider's prompt cache; None when
        the prefix is shorter than the providers cache (``min_tokens``)."""
        tokens = self.prefix_tokens
        if tokens < min_tokens:
            return None
        return CacheHint(
            prefix_chars=self.layout.prefix_chars(),
            key=prefix_key(document_sha256, self.layout.placement.value),
            ttl=ttl,
            tokens=tokens,
        )

    def prefix_digest(self) -> str:
        """A digest of the cacheable prefix's text: equal for calls that share the prefix."""
        digest = hashlib.sha256()
        for block in self.layout.blocks[: self.layout.prefix_blocks()]:
            digest.update(block.text.encode())
            digest.update(SEPARATOR.encode())
        return digest.hexdigest()[:32]


def prefix_key(document_sha256: str, layout: str) -> str:
    """The cache key of the prefixes a document shares under one layout (short: a hash)."""
    return hashlib.sha256(f"{document_sha256}\x00{layout}".encode()).hexdigest()[:32]


def expected_cache(
    calls: Sequence[Call],
    document_sha256: str = "",
    *,
    min_tokens: int = MIN_CACHED_PREFIX_TOKENS,
    lone_prefixes: bool = True,
) -> list[tuple[int, int]]:
    """(cached tokens, cache-write tokens) expected of each call, in order, when each is sent
    after the replies of those before it: the first call with a given prefix writes it, later
    ones read it; a prefix shorter than ``min_tokens`` is neither (0, 0), and so is a prefix
    no other call has when ``lone_prefixes`` is False (the runner then does not mark it)."""
    # Each call's hint and prefix digest, worked out once (a grid estimates thousands of calls).
    hints = [call.cache_hint(document_sha256, min_tokens=min_tokens) for call in calls]
    digests = [
        call.prefix_digest() if hint is not None else "" for call, hint in zip(calls, hints, strict=True)
    ]
    counts = Counter(d for d, hint in zip(digests, hints, strict=True) if hint is not None)
    shared = frozenset(d for d, n in counts.items() if n > 1)
    seen: set[str] = set()
    out: list[tuple[int, int]] = []
    for hint, identity in zip(hints, digests, strict=True):
        if hint is None or (identity not in shared and not lone_prefixes):
            out.append((0, 0))
            continue
        out.append((hint.tokens, 0) if identity in seen else (0, hint.tokens))
        seen.add(identity)
    return out


def shared_prefixes(
    calls: Sequence[Call], document_sha256: str = "", *, min_tokens: int = MIN_CACHED_PREFIX_TOKENS
) -> frozenset[str]:
    """The digests of the cacheable prefixes at least two of ``calls`` have: the prefixes worth
    writing to a provider's prompt cache (another call reads them)."""
    digests = Counter(
        call.prefix_digest() for call in calls if call.cache_hint(document_sha256, min_tokens=min_tokens)
    )
    return frozenset(d for d, n in digests.items() if n > 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalStep:
    """A step that is not an LLM call (a ranking); free, and run by the executor in order."""

    id: str
    stage: str
    description: str
    run: Callable[[], Any] = field(repr=False, compare=False)


Step = Call | LocalStep


@dataclass(slots=True)
class StepResult:
    """What one step produced: a parsed reply (or a local value), or the error it met."""

    step: Step
    value: Any = None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        """True when the step produced a value."""
        return self.error is None


PhaseResults = Mapping[str, StepResult]  # step id -> result
Resolve = Callable[[Sequence[PhaseResults]], "Phase"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Phase:
    """Steps that can run together. ``estimated`` phases are resolved from earlier results."""

    stage: str
    steps: tuple[Step, ...]
    estimated: bool = False
    resolve: Resolve | None = field(default=None, repr=False, compare=False)
    note: str = ""
    # Its steps may all fail without failing the run: ``conclude`` reads their errors (the check
    # of the answers: a failed check leaves an answer unchecked, never lost).
    optional: bool = False

    @property
    def calls(self) -> tuple[Call, ...]:
        """The LLM calls of the phase."""
        return tuple(s for s in self.steps if isinstance(s, Call))


# ---- Outcomes -------------------------------------------------------------------------

NOT_STATED_SCORED = "n/a"  # how "not stated" compares with known answers (METHOD.md §11)
NOT_FOUND = "Not found"  # a reader found nothing: a claim about the search, not the document
MODEL_SAYS_NOT_STATED = "the model says the document does not state it"


def absence_words(absent_by: str, pages_to_read: Sequence[int] = ()) -> str:
    """An answer that is not there, in words that say who says so: "Not found" (the reader
    found nothing; ``absent_by`` "reader" or unknown) or the model's claim, with the pages to
    read, best first, where any were named."""
    said = MODEL_SAYS_NOT_STATED if absent_by == "model" else NOT_FOUND
    if pages_to_read:
        said += f"; pages to read: {', '.join(map(str, pages_to_read))}"
    return said


@dataclass(slots=True, kw_only=True)
class Citation:
    """One passage an answer rests on: the page and the sentence quoted from it, and (filled
    in by the runner) whether the sentence stands on that page."""

    page: int | None = None
    quote: str = ""
    page_label: str = ""  # the page's printed label, where the PDF defines one
    quote_check: str = "unchecked"  # verified | approximate | not-found | no-quote | no-page | unchecked
    quote_score: float = 0.0


@dataclass(slots=True, kw_only=True)
class Outcome:
    """The answer to one question, with the passages it rests on and the pages behind it.

    ``found`` is False when the answer is that the document does not state it: then there is
    nothing to cite, and the answer is not dressed as one. ``page``, ``quote`` and the check
    fields read the first citation (what schema 2 stored as the answer's one citation).
    """

    question: str
    answer: str | None = None
    found: bool = True
    citations: list[Citation] = field(default_factory=list)
    # Not found: the pages worth reading, best first, where the reader names them (the offline
    # engine); a model is not asked for them.
    pages_to_read: list[int] = field(default_factory=list)
    retrieved_pages: list[int] = field(default_factory=list)
    # For methods that retrieve per part (chunks, partitions): the pages each part returned.
    retrieved_groups: list[list[int]] = field(default_factory=list)
    dropped_pages: list[int] = field(default_factory=list)
    # Known right answers (samples' planted questions, the Lab): filled in by the caller.
    gold_answers: list[str] = field(default_factory=list)
    gold_pages: list[int] = field(default_factory=list)
    correct: bool | None = None
    error: str | None = None
    # Triage (README "Answers an analyst can triage"). ``found`` False says nothing was stated;
    # ``absent_by`` says who says so: "reader" (the offline engine found nothing: "Not found",
    # a claim about the search, not the document) or "model" (the model's claim that the
    # document does not state it).
    absent_by: str = ""
    # Does the quoted text state this answer to this question? supported | partial |
    # unsupported | unchecked; who judged it ("offline reader", "verifier <model>") and why.
    support: str = "unchecked"
    support_reason: str = ""
    support_by: str = ""
    # How far to trust the answer: high | check | none ("" = not assessed), a score in [0, 1]
    # and the reason a "check" answer should be checked.
    confidence: str = ""
    score: float | None = None
    confidence_reason: str = ""
    # How far the best page for the question stands ahead of the next by BM25 over the
    # document's pages ((best - second) / best; None: nothing to rank). Shown, not scored
    # (``rr_core.confidence``).
    retrieval_margin: float | None = None

    def not_stated(self) -> None:
        """Record that nothing was found to answer from (nothing to cite): "Not found"."""
        self.answer, self.found, self.citations, self.pages_to_read = NOT_STATED, False, [], []
        self.absent_by = "reader"  # the method read nothing that answers, whoever its model

    @property
    def stated(self) -> bool:
        """An answer the model gave as found in the document (not an error, not "not stated")."""
        return self.answer is not None and self.found

    @property
    def answer_text(self) -> str:
        """The answer as shown and exported, "" when there is none. Without one: "Not found"
        with the pages to read when a reader found nothing (a claim about its search, never
        "not stated"), or the model's claim that the document does not state it, as its own."""
        if self.answer is None:
            return ""
        if self.found:
            return self.answer
        return absence_words(self.absent_by, self.pages_to_read)

    @property
    def compared_answer(self) -> str:
        """The answer as scored against known answers: ``n/a`` when not stated or missing."""
        return self.answer if self.stated and self.answer else NOT_STATED_SCORED

    @property
    def cited_pages(self) -> list[int]:
        """The cited pages, in citation order, each once."""
        return list(dict.fromkeys(c.page for c in self.citations if c.page is not None))

    @property
    def first(self) -> Citation | None:
        """The first citation, or None."""
        return self.citations[0] if self.citations else None

    @property
    def page(self) -> int | None:
        """The first citation's page."""
        return self.citations[0].page if self.citations else None

    @property
    def quote(self) -> str:
        """The first citation's quote."""
        return self.citations[0].quote if self.citations else ""

    @property
    def page_label(self) -> str:
        """The first citation's printed page label."""
        return self.citations[0].page_label if self.citations else ""

    @property
    def quote_check(self) -> str:
        """The first citation's check; ``no-quote`` for an answer without citations."""
        if self.citations:
            return self.citations[0].quote_check
        return "no-quote" if self.answer is not None else "unchecked"

    @property
    def quote_score(self) -> float:
        """The first citation's match score."""
        return self.citations[0].quote_score if self.citations else 0.0


@dataclass(slots=True)
class Conclusion:
    """What ``conclude`` returns: one outcome per question, and anything worth saying."""

    outcomes: list[Outcome]
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


Conclude = Callable[[Sequence[PhaseResults]], Conclusion]


# ---- The plan -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a plan is expected to cost before it runs."""

    calls: int
    input_tokens: int
    output_tokens: int
    reminder_tokens: int
    cost: Cost
    # Of ``input_tokens``, expected to be read from / written to the prompt cache (0 unless
    # estimated with caching).
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def usd(self) -> float:
        """Estimated total in US dollars."""
        return self.cost.total_usd


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Every step a method will take on a document, and what that is expected to cost."""

    method: str
    label: str
    questions: tuple[str, ...]
    settings: RunSettings
    document_sha256: str
    phases: tuple[Phase, ...]
    conclude: Conclude = field(repr=False, compare=False)
    describe: str = ""  # the settings the method reads, e.g. "k = 10,000 · N = 5"
    chunks: tuple[range, ...] = ()
    notes: tuple[str, ...] = ()
    estimate: Estimate = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "estimate", estimate_calls(self.calls, self.settings))

    @property
    def question(self) -> str:
        """The (first) question."""
        return self.questions[0] if self.questions else ""

    @property
    def calls(self) -> tuple[Call, ...]:
        """Every call, estimated ones included, in phase order."""
        return tuple(c for phase in self.phases for c in phase.calls)

    @property
    def known_calls(self) -> tuple[Call, ...]:
        """The calls whose prompts are already known (not estimated)."""
        return tuple(c for phase in self.phases if not phase.estimated for c in phase.calls)

    @property
    def reminders(self) -> int:
        """Reminder blocks over the whole plan."""
        return sum(c.reminder_count for c in self.calls)

    @property
    def largest_prompt(self) -> int:
        """Tokens of the largest prompt the plan sends (estimated calls included)."""
        return max((c.prompt_tokens for c in self.calls), default=0)


def call_pricing(call: Call, settings: RunSettings) -> tuple[str, str | None]:
    """(model, provider) that prices one call: the model it asks, where it names its own (a
    verifier) and the run is priced as itself; else the run's ``pricing``."""
    if call.model and not settings.price_model:
        return call.model, settings.provider
    return settings.pricing


def estimate_calls(
    calls: Sequence[Call],
    settings: RunSettings,
    *,
    caching: bool = False,
    mode: Mode = "now",
    ttl: CacheTTL = "5m",
    lone_prefixes: bool = True,
    expected: Sequence[tuple[int, int]] | None = None,
) -> Estimate:
    """Tokens and cost of calls; priced per call (long-context tiers price each prompt).

    ``caching``: the calls' shared prefixes are expected to be written once and read after
    (``expected_cache``, with the model's shortest cached prefix; ``lone_prefixes``: as the
    runner's ``cache_lone_prefixes``; in a batch, each prefix's writer is sent ahead at the list
    price, as the runner sends it); ``mode``: sent now or in a
    provider batch (priced at its discount); ``expected``: ``expected_cache``'s answer for these
    calls, worked out already (the same calls estimated now and in batch)."""
    if expected is None:
        expected = (
            expected_cache(calls, min_tokens=min_cached_prefix(settings.model), lone_prefixes=lone_prefixes)
            if caching
            else [(0, 0)] * len(calls)
        )
    # Each call as ``estimate_cost`` prices it; in a batch, the call that writes a prefix goes
    # first, sent now at the list price (the others, in the batch, read what it wrote).
    cost = estimate_costs(
        (
            c.prompt_tokens,
            c.output_tokens,
            *call_pricing(c, settings),
            read,
            written,
            ttl,
            "now" if written else mode,
        )
        for c, (read, written) in zip(calls, expected, strict=True)
    )
    return Estimate(
        calls=len(calls),
        input_tokens=sum(c.prompt_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
        reminder_tokens=sum(c.reminder_tokens for c in calls),
        cost=cost,
        cached_tokens=sum(read for read, _ in expected),
        cache_write_tokens=sum(written for _, written in expected),
    )


# ---- Token arithmetic over a layout ------------------------------------------------------
# A prompt is counted as the sum of its blocks (whole pages come from loading), so a plan
# for a 3,000-page document takes milliseconds. The sum differs from counting the rendered
# prompt by a few tokens at the seams; traces record the provider's exact usage.


@lru_cache(maxsize=8192)
def _count_cached(counter: TokenCounter, text: str) -> int:
    return counter.count(text)


def _tag_tokens(counter: TokenCounter, number: int) -> int:
    """Tokens of a page's tags and separators (depends only on the number's digits)."""
    probe = "9" * len(str(number))
    return _count_cached(counter, f"<PAGE {probe}>\n\n</PAGE {probe}>{SEPARATOR}")


def block_tokens(layout: PromptLayout, counter: TokenCounter, document: Document | None) -> list[int]:
    """Tokens of each block of a layout, separators included."""
    out: list[int] = []
    for block in layout.blocks:
        out.append(_block_tokens(block, counter, document))
    return out


def _block_tokens(block: Block, counter: TokenCounter, document: Document | None) -> int:
    if block.kind == "page" and block.page is not None:
        whole = (
            document is not None
            and 1 <= block.page <= len(document.pages)
            and block.source is document.pages[block.page - 1].text
        )
        body = document.pages[block.page - 1].tokens if whole and document else counter.count(block.source)
        return body + _tag_tokens(counter, block.page)
    return _count_cached(counter, block.text + SEPARATOR)


def count_layout(layout: PromptLayout, counter: TokenCounter, document: Document | None) -> tuple[int, int]:
    """(prompt tokens, of which reminder tokens) of a layout."""
    counts = block_tokens(layout, counter, document)
    reminders = sum(n for n, b in zip(counts, layout.blocks, strict=True) if b.kind == "reminder")
    return sum(counts), reminders
