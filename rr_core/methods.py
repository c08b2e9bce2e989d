"""The methods as values that produce plans (METHOD.md §3–§8). Pure: no I/O, no clock.

A plan holds every call a method will make, the reminder and chunk layout, and token and
cost estimates. Later phases that depend on earlier answers (the answer call of ICR-style
methods) are planned as *pending* calls with an estimated size, and planned for real by
``plan_answer`` once the retrieved pages are known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache, partial
from typing import Literal

from rr_core.chunking import partition_pages, plan_reminders
from rr_core.costs import Cost, estimate_cost
from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.prompts import Instructions, build_prompt, instructions
from rr_core.tokens import TokenCounter

Stage = Literal["retrieve", "answer"]

# Typical output sizes, for estimates before a run (JSON with a short answer / a page list).
ANSWER_OUTPUT_TOKENS = 60
RETRIEVE_OUTPUT_TOKENS_BASE = 20
RETRIEVE_OUTPUT_TOKENS_PER_PAGE = 3


class Method(StrEnum):
    """The six methods of the R&R paper."""

    BASELINE = "baseline"
    REPROMPT = "reprompt"
    ICR = "icr"
    RR = "rr"
    CHUNKED_ICR = "chunked-icr"
    CHUNKED_RR = "chunked-rr"

    @property
    def retrieves(self) -> bool:
        """Whether the method first retrieves pages, then answers from them."""
        return self not in (Method.BASELINE, Method.REPROMPT)

    @property
    def reminds(self) -> bool:
        """Whether the method injects reminders into its long-context call(s)."""
        return self in (Method.REPROMPT, Method.RR, Method.CHUNKED_RR)

    @property
    def chunked(self) -> bool:
        """Whether retrieval runs per chunk."""
        return self in (Method.CHUNKED_ICR, Method.CHUNKED_RR)

    @property
    def label(self) -> str:
        """A human name for tables and charts."""
        return METHOD_LABELS[self]


METHOD_LABELS = {
    Method.BASELINE: "Baseline",
    Method.REPROMPT: "Reprompting",
    Method.ICR: "ICR",
    Method.RR: "R&R",
    Method.CHUNKED_ICR: "Chunked ICR",
    Method.CHUNKED_RR: "Chunked R&R",
}


class ReminderStyle(StrEnum):
    """What a reminder says: the full instructions, or only a pointer (ablation)."""

    FULL = "full"
    TAGS_ONLY = "tags-only"


class ReminderPlacement(StrEnum):
    """Where reminders go: every k tokens, all at the start (ablation), or before given pages
    (the paper's oracle ablation; evaluation only)."""

    INTERVAL = "interval"
    BEGINNING = "beginning"
    BEFORE_PAGES = "before-pages"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """The user's choices for one method, carried into the core as one value."""

    method: Method
    reminder_every: int = 10_000
    top_k: int = 5
    chunk_size: int = 20_000
    model: str = "gpt-4.1-mini"
    provider: str = "offline"
    reminder_style: ReminderStyle = ReminderStyle.FULL
    reminder_placement: ReminderPlacement = ReminderPlacement.INTERVAL
    reminder_pages: tuple[int, ...] = ()
    max_output_tokens: int = 512
    # Price the run as this model (the offline engine is free, but shows what a paid model
    # would cost for the same tokens). Empty: the model itself.
    price_model: str = ""

    @property
    def pricing(self) -> tuple[str, str | None]:
        """(model, provider) that prices this run."""
        if self.price_model:
            return self.price_model, None
        return self.model, self.provider

    def validate(self) -> None:
        """Raise ``ConfigError`` for values that cannot work."""
        if self.reminder_every < 100:
            raise ConfigError("The reprompt interval k must be at least 100 tokens.")
        if not 1 <= self.top_k <= 100:
            raise ConfigError("Pages to retrieve (N) must be between 1 and 100.")
        if self.chunk_size < 500:
            raise ConfigError("The chunk size must be at least 500 tokens.")
        if self.reminder_placement is ReminderPlacement.BEFORE_PAGES and not self.reminder_pages:
            raise ConfigError("Reminders 'before pages' need the page numbers to put them before.")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedCall:
    """One LLM call of a plan. ``pending`` calls wait for earlier results."""

    stage: Stage
    chunk: int | None
    pages: tuple[int, ...]
    reminders_after: tuple[int, ...]
    leading_reminders: int
    instructions: Instructions = field(repr=False)
    prompt_tokens: int
    reminder_tokens: int
    output_tokens: int
    top_k: int
    pending: bool = False

    @property
    def reminder_count(self) -> int:
        """How many reminder blocks the prompt carries."""
        return len(self.reminders_after) + self.leading_reminders


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a plan is expected to cost before it runs."""

    calls: int
    input_tokens: int
    output_tokens: int
    reminder_tokens: int
    cost: Cost

    @property
    def usd(self) -> float:
        """Estimated total in US dollars."""
        return self.cost.total_usd


@dataclass(frozen=True, slots=True)
class Plan:
    """Every call a method will make on a document, and what that is expected to cost."""

    method: Method
    question: str
    settings: RunSettings
    calls: tuple[PlannedCall, ...]
    chunks: tuple[range, ...]
    estimate: Estimate

    @property
    def retrieval_calls(self) -> tuple[PlannedCall, ...]:
        """The calls of the retrieval phase (empty for one-call methods)."""
        return tuple(c for c in self.calls if c.stage == "retrieve")

    @property
    def reminders(self) -> int:
        """Reminder blocks injected over the whole plan."""
        return sum(c.reminder_count for c in self.calls)


# ---- Token arithmetic ------------------------------------------------------------------
# Prompts are counted as the sum of their parts (page counts come from loading), so a plan
# for a 400-page document takes milliseconds. The sum differs from counting the rendered
# prompt by a few tokens at the seams; run traces record the provider's exact usage.


@lru_cache(maxsize=4096)
def _count_cached(counter: TokenCounter, text: str) -> int:
    return counter.count(text)


def _tag_tokens(counter: TokenCounter, number: int) -> int:
    """Tokens of a page's tags and separators (depends only on the number's digits)."""
    probe = "9" * len(str(number))
    # Separators after the tags, as in the prompt: BPE merges "\n\n" into the ">" before it
    # and the page text's last character takes its "\n". Leading separators instead cost
    # about a token a page more than the rendered prompt (5% on short pages).
    return _count_cached(counter, f"<PAGE {probe}>\n\n</PAGE {probe}>\n\n")


def _prompt_tokens(
    counter: TokenCounter,
    blocks: Instructions,
    document: Document,
    pages: Sequence[int],
    reminders: int,
) -> tuple[int, int]:
    """(prompt tokens, of which reminder tokens) for a prompt over the given pages."""
    fixed = _count_cached(counter, blocks.opening) + _count_cached(counter, blocks.closing)
    fixed += _count_cached(counter, "\n\n<DOCUMENT>\n\n</DOCUMENT>\n\n")
    body = sum(document.pages[n - 1].tokens + _tag_tokens(counter, n) for n in pages)
    reminder_tokens = reminders * (_count_cached(counter, blocks.reminder) + 1)
    return fixed + body + reminder_tokens, reminder_tokens


def _retrieve_output_tokens(top_k: int) -> int:
    return RETRIEVE_OUTPUT_TOKENS_BASE + RETRIEVE_OUTPUT_TOKENS_PER_PAGE * top_k


# ---- Planning -------------------------------------------------------------------------


def _reminder_layout(
    settings: RunSettings, document: Document, pages: Sequence[int]
) -> tuple[tuple[int, ...], int]:
    """(pages after which a reminder goes, reminders before the first page) for one call."""
    if not pages:
        return (), 0
    interval = plan_reminders([document.pages[n - 1].tokens for n in pages], settings.reminder_every)
    after = tuple(pages[i - 1] for i in interval)
    if settings.reminder_placement is ReminderPlacement.INTERVAL:
        return after, 0
    if settings.reminder_placement is ReminderPlacement.BEGINNING:
        return (), len(after)
    # BEFORE_PAGES: one reminder right before each given page present in this call.
    position = {n: i for i, n in enumerate(pages)}
    targets = sorted(position[p] for p in set(settings.reminder_pages) if p in position)
    leading = 1 if targets and targets[0] == 0 else 0
    return tuple(pages[i - 1] for i in targets if i > 0), leading


def _call(
    *,
    stage: Stage,
    chunk: int | None,
    pages: Sequence[int],
    remind: bool,
    question: str,
    settings: RunSettings,
    document: Document,
    counter: TokenCounter,
) -> PlannedCall:
    blocks = instructions(
        stage,
        question,
        top_k=settings.top_k,
        tags_only_reminder=settings.reminder_style is ReminderStyle.TAGS_ONLY,
    )
    after, leading = _reminder_layout(settings, document, pages) if remind else ((), 0)
    tokens, reminder_tokens = _prompt_tokens(counter, blocks, document, pages, len(after) + leading)
    return PlannedCall(
        stage=stage,
        chunk=chunk,
        pages=tuple(pages),
        reminders_after=after,
        leading_reminders=leading,
        instructions=blocks,
        prompt_tokens=tokens,
        reminder_tokens=reminder_tokens,
        output_tokens=ANSWER_OUTPUT_TOKENS if stage == "answer" else _retrieve_output_tokens(settings.top_k),
        top_k=settings.top_k,
    )


def plan_method(document: Document, question: str, settings: RunSettings, counter: TokenCounter) -> Plan:
    """Plan every call of ``settings.method`` on the document."""
    settings.validate()
    if not question.strip():
        raise ConfigError("Type a question first.")
    method = settings.method
    all_pages = [p.number for p in document.pages]
    make_call = partial(_call, question=question, settings=settings, document=document, counter=counter)
    chunks: tuple[range, ...] = ()
    calls: list[PlannedCall]
    if not method.retrieves:
        calls = [make_call(stage="answer", chunk=None, pages=all_pages, remind=method.reminds)]
    else:
        if method.chunked:
            chunks = tuple(partition_pages(document.page_tokens, settings.chunk_size))
        else:
            chunks = (range(1, len(all_pages) + 1),)
        calls = [
            make_call(
                stage="retrieve",
                chunk=i if method.chunked else None,
                pages=list(chunk),
                remind=method.reminds,
            )
            for i, chunk in enumerate(chunks, start=1)
        ]
        calls.append(_pending_answer(document, question, settings, counter, len(chunks)))
    return Plan(
        method=method,
        question=question,
        settings=settings,
        calls=tuple(calls),
        chunks=chunks if method.chunked else (),
        estimate=_estimate(calls, settings),
    )


def _pending_answer(
    document: Document, question: str, settings: RunSettings, counter: TokenCounter, chunks: int
) -> PlannedCall:
    """The answer call before retrieval: sized as N pages (per chunk) of average length."""
    expected_pages = min(len(document.pages), settings.top_k * chunks)
    average = document.total_tokens / max(len(document.pages), 1)
    blocks = instructions("answer", question, top_k=settings.top_k)
    fixed, _ = _prompt_tokens(counter, blocks, document, [], 0)
    per_page = average + _tag_tokens(counter, len(document.pages))
    return PlannedCall(
        stage="answer",
        chunk=None,
        pages=(),
        reminders_after=(),
        leading_reminders=0,
        instructions=blocks,
        prompt_tokens=fixed + math.ceil(expected_pages * per_page),
        reminder_tokens=0,
        output_tokens=ANSWER_OUTPUT_TOKENS,
        top_k=settings.top_k,
        pending=True,
    )


def plan_answer(
    document: Document,
    question: str,
    settings: RunSettings,
    counter: TokenCounter,
    retrieved_pages: Sequence[int],
) -> PlannedCall:
    """The answer call over the retrieved pages, in document order (no reminders)."""
    pages = sorted(set(retrieved_pages))
    return _call(
        stage="answer",
        chunk=None,
        pages=pages,
        remind=False,
        question=question,
        settings=settings,
        document=document,
        counter=counter,
    )


def _estimate(calls: Sequence[PlannedCall], settings: RunSettings) -> Estimate:
    input_tokens = sum(c.prompt_tokens for c in calls)
    output_tokens = sum(c.output_tokens for c in calls)
    return Estimate(
        calls=len(calls),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reminder_tokens=sum(c.reminder_tokens for c in calls),
        # Per call: long-context tiers price each call on its own prompt length.
        cost=sum(
            (estimate_cost(c.prompt_tokens, c.output_tokens, *settings.pricing) for c in calls[1:]),
            estimate_cost(calls[0].prompt_tokens, calls[0].output_tokens, *settings.pricing),
        ),
    )


def render_prompt(document: Document, call: PlannedCall) -> str:
    """The exact prompt text of a planned (not pending) call."""
    if call.pending:
        raise ConfigError("This call waits for the retrieval phase; its prompt is not known yet.")
    return build_prompt(
        call.instructions,
        [(n, document.pages[n - 1].text) for n in call.pages],
        reminders_after=call.reminders_after,
        reminders_before_document=call.leading_reminders,
    )


def plan_all(
    document: Document,
    question: str,
    settings: RunSettings,
    counter: TokenCounter,
    methods: Sequence[Method] = tuple(Method),
) -> dict[Method, Plan]:
    """Plans for several methods that share the other settings."""
    return {m: plan_method(document, question, replace(settings, method=m), counter) for m in methods}
