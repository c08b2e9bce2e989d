"""What the method definitions share: the method value, planning context, call building,
and reading retrieval and answer replies into outcomes. Pure: no I/O."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rr_core.chunking import plan_reminders
from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.outputs import PLAIN_FORMS, AnswerOut, Output
from rr_core.plans import Call, Citation, Outcome, PhaseResults, Plan, StepResult, count_layout
from rr_core.prompts import PAPER_TASKS, build_layout, instructions
from rr_core.settings import (
    LAYOUTS,
    PARAMS,
    PromptProtocol,
    QuestionPlacement,
    ReminderPlacement,
    ReminderStyle,
    RunSettings,
)
from rr_core.tokens import TokenCounter
from rr_core.verification import with_verification

Group = Literal["paper", "other", "bounds"]

# Typical output sizes, for estimates before a run (JSON with a short answer and its quote;
# a page list; an extraction).
ANSWER_OUTPUT_TOKENS = 90
RETRIEVE_OUTPUT_TOKENS_BASE = 20
RETRIEVE_OUTPUT_TOKENS_PER_PAGE = 3
EXTRACT_OUTPUT_TOKENS = 160
TOKENS_PER_WORD = 1.35  # English prose, o200k/cl100k: for sizing passages before a run


# Estimated calls' instructions (laid out and counted), by what they depend on: a grid of many
# documents asks the same questions of each (see ``Context.sized_call``); a few thousand kept.
_SIZED: dict[tuple[object, ...], Call] = {}
_SIZED_KEEP = 4_096


@dataclass(frozen=True, slots=True)
class Context:
    """What a planner needs: the document, the question(s), the settings and a counter."""

    method: Method
    document: Document
    questions: tuple[str, ...]
    settings: RunSettings
    counter: TokenCounter

    def page_texts(self, numbers: Sequence[int]) -> list[tuple[int, str]]:
        """(number, text) of the given pages."""
        return [(n, self.document.pages[n - 1].text) for n in numbers]

    def call(
        self,
        *,
        id: str,
        stage: str,
        task: str,
        pages: Sequence[tuple[int, str]] | None,
        schema: type[Output],
        output_tokens: int,
        remind: bool = False,
        chunk: int | None = None,
        question: int | None = None,
        limit: int = 0,
        shared_pages: bool = False,
    ) -> Call:
        """One call over the given pages (or passages), with reminders where the method reminds.

        ``shared_pages``: the pages do not depend on the question (the whole document, a fixed
        chunk), so a layout that asks the question after them has a cacheable prefix."""
        asked = self.questions if question is None else (self.questions[question],)
        s = self.settings
        limit = limit or s.top_k
        # The paper's protocol: the plain-text form of the task and of its reply, where it has one.
        plain = s.protocol is PromptProtocol.PAPER and task in PAPER_TASKS and schema in PLAIN_FORMS
        schema = PLAIN_FORMS[schema] if plain else schema
        blocks = instructions(
            task,
            asked,
            top_k=limit,
            tags_only_reminder=s.reminder_style is ReminderStyle.TAGS_ONLY,
            plain=plain,
        )
        after, leading = reminder_layout(s, self.document, [n for n, _ in pages or ()]) if remind else ((), 0)
        layout = build_layout(
            blocks,
            pages,
            reminders_after=after,
            reminders_before_document=leading,
            questions=asked,
            limit=limit,
            placement=s.question_placement,
            shared_pages=shared_pages,
        )
        tokens, reminder_tokens = count_layout(layout, self.counter, self.document)
        return Call(
            id=id,
            stage=stage,
            layout=layout,
            schema=schema,
            prompt_tokens=tokens,
            reminder_tokens=reminder_tokens,
            output_tokens=min(output_tokens, s.max_output_tokens),
            max_output_tokens=s.max_output_tokens,
            chunk=chunk,
            question=question,
        )

    def sized_call(
        self,
        *,
        id: str,
        stage: str,
        task: str,
        schema: type[Output],
        tokens: int,
        output_tokens: int,
        question: int | None = None,
    ) -> Call:
        """An estimated call: the instructions of the real one, and ``tokens`` of context. Its
        instructions depend on the question and settings, not on the document: they are laid out
        and counted once for every document of a grid (``_SIZED``)."""
        s = self.settings
        asked = self.questions if question is None else (self.questions[question],)
        key = (
            task, schema, output_tokens, asked, s.top_k, s.reminder_style, s.question_placement,
            s.max_output_tokens, s.protocol, self.counter.label,
        )  # fmt: skip
        call = _SIZED.get(key)
        if call is None:
            call = self.call(
                id=id,
                stage=stage,
                task=task,
                pages=[],
                schema=schema,
                output_tokens=output_tokens,
                question=question,
            )
            if len(_SIZED) >= _SIZED_KEEP:
                _SIZED.clear()
            _SIZED[key] = call
        return Call(
            id=id,
            stage=stage,
            layout=call.layout,
            schema=schema,
            prompt_tokens=call.prompt_tokens + tokens,
            reminder_tokens=0,
            output_tokens=call.output_tokens,
            max_output_tokens=call.max_output_tokens,
            question=question,
        )

    def average_page_tokens(self) -> float:
        """Mean tokens a page (tags included, roughly)."""
        pages = max(len(self.document.pages), 1)
        return self.document.total_tokens / pages + 8


def reminder_layout(
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


def retrieve_output_tokens(top_k: int) -> int:
    """Expected output of a retrieval reply asking for ``top_k`` pages."""
    return RETRIEVE_OUTPUT_TOKENS_BASE + RETRIEVE_OUTPUT_TOKENS_PER_PAGE * top_k


def words_to_tokens(words: int) -> int:
    """Tokens of ``words`` words of prose (estimate)."""
    return math.ceil(words * TOKENS_PER_WORD)


# ---- The method value ------------------------------------------------------------------


Planner = Callable[[Context], Plan]


@dataclass(frozen=True, slots=True, kw_only=True)
class Method:
    """A method: its name and plain description, the settings it reads, and its planner."""

    name: str
    label: str
    group: Group
    summary: str  # one plain sentence a lawyer understands
    params: tuple[str, ...] = ()  # the ``RunSettings`` fields it reads (the app shows only these)
    reminds: bool = False  # carries reminders, so the ablation options apply
    several_questions: bool = False  # one plan serves several questions (one retrieval pass)
    needs_gold: bool = False  # reads the gold pages the user names (oracle)
    # The lower bound: what the model knows without reading (the floor of effective length).
    floor: bool = False
    # The layouts the method can be run with; the first is its own, used when the one asked for
    # is not among them (``layout_note`` says why). One layout: the method is that prompt.
    layouts: tuple[QuestionPlacement, ...] = LAYOUTS
    layout_note: str = ""
    # Picks pages (or passages) first and answers from them only: its wrong answers split into
    # retrieval misses (the answer's page not picked) and reading misses.
    retrieves: bool = False
    planner: Planner = field(repr=False, compare=False)

    def plan(
        self,
        document: Document,
        questions: str | Sequence[str],
        settings: RunSettings,
        counter: TokenCounter,
    ) -> Plan:
        """Plan every step of this method on the document."""
        asked = (questions,) if isinstance(questions, str) else tuple(questions)
        asked = tuple(q for q in (" ".join(q.split()) for q in asked) if q)
        if not asked:
            raise ConfigError("Type a question first.")
        if len(asked) > 1 and not self.takes_several(settings):
            raise ConfigError(f"{self.label} answers one question at a time; plan it once per question.")
        layout = self.layout_for(settings)
        settings = settings.but(method=self.name, question_placement=layout)
        if layout.reminder_style is not None and self.reminds:
            # What the layout's reminders say, as the trace records it.
            settings = settings.but(reminder_style=layout.reminder_style)
        settings.validate()
        if not document.pages:
            raise ConfigError("The document has no pages.")
        plan = self.planner(Context(self, document, asked, settings, counter))
        return with_verification(plan, document, counter)

    def takes_several(self, settings: RunSettings) -> bool:
        """One plan serves several questions (one retrieval pass): never in the paper's
        protocol, whose retrieval reply is one plain list of pages."""
        return self.several_questions and settings.protocol is not PromptProtocol.PAPER

    @property
    def own_layout(self) -> bool:
        """The method is one prompt layout (a cheap baseline): no layout can be chosen for it."""
        return len(self.layouts) == 1

    def layout_for(self, settings: RunSettings) -> QuestionPlacement:
        """The layout the method runs with: the one asked for where it can take it, else its own."""
        asked = settings.question_placement
        return asked if asked in self.layouts else self.layouts[0]

    def layout_reason(self, asked: QuestionPlacement) -> str:
        """Why the method runs with its own layout rather than ``asked`` (empty when it takes it)."""
        if asked in self.layouts and not self.own_layout:
            return ""
        own = self.layouts[0].value
        if self.own_layout:
            return f"its own ({own}): {self.layout_note}"
        return f"its own ({own}), it does not take {asked.value}: {self.layout_note}"

    def describe(self, settings: RunSettings) -> str:
        """The settings this method reads, e.g. ``k = 10,000 · N = 5``."""
        parts = []
        for name in self.params:
            param = PARAMS.get(name)
            if param is None:
                continue
            value = getattr(settings, name)
            parts.append(
                f"{param.symbol} = {value:,}" if isinstance(value, int) else f"{param.symbol} = {value:g}"
            )
        layout = self.layout_for(settings)
        style = layout.reminder_style or settings.reminder_style  # what the reminders will say
        if self.reminds and style is not ReminderStyle.FULL:
            parts.append(f"reminder: {style.value}")
        if self.reminds and settings.reminder_placement is not ReminderPlacement.INTERVAL:
            parts.append(f"placement: {settings.reminder_placement.value}")
        if not self.own_layout and layout is not QuestionPlacement.BEFORE_AND_AFTER:
            parts.append(f"layout: {layout.value}")
        if self.needs_gold and settings.gold_pages:
            parts.append("gold pages " + ", ".join(str(p) for p in settings.gold_pages))
        if settings.protocol is not PromptProtocol.JSON:
            parts.append(f"protocol: {settings.protocol.value}")
        return " · ".join(parts)


def make_plan(ctx: Context, **kwargs: object) -> Plan:
    """A ``Plan`` stamped with the context's method, questions, settings and document."""
    return Plan(
        method=ctx.method.name,
        label=ctx.method.label,
        describe=ctx.method.describe(ctx.settings),
        questions=ctx.questions,
        settings=ctx.settings,
        document_sha256=ctx.document.sha256,
        **kwargs,  # type: ignore[arg-type]
    )


# ---- Reading replies ------------------------------------------------------------------


@dataclass(slots=True)
class Kept:
    """Pages a retrieval reply returned, split into kept (valid) and dropped."""

    kept: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def keep_pages(pages: Sequence[int], allowed: Sequence[int], top_k: int) -> Kept:
    """Keep the returned pages that were in the context, at most ``top_k``, first ones first."""
    allowed_set = set(allowed)
    out = Kept()
    for page in pages:
        if page in allowed_set and page not in out.kept:
            out.kept.append(page)
        elif page not in allowed_set:
            out.dropped.append(page)
    if len(out.kept) > top_k:
        out.warnings.append(
            f"The model returned {len(out.kept)} pages where {top_k} were asked; kept the first {top_k}."
        )
        del out.kept[top_k:]
    return out


def merge_ranked(rankings: Sequence[Sequence[int]]) -> list[int]:
    """Interleave per-part rankings: every part's first page, then every second, …"""
    merged: list[int] = []
    seen: set[int] = set()
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank] not in seen:
                seen.add(ranking[rank])
                merged.append(ranking[rank])
    return merged


def failed_parts(results: PhaseResults, what: str) -> list[str]:
    """One warning per failed step of a phase whose other steps succeeded."""
    failed = [r for r in results.values() if not r.ok]
    if not failed or len(failed) == len(results):
        return []
    return [f"{what} {_where(r)} failed and was skipped: {r.error}" for r in failed]


def _where(result: StepResult) -> str:
    step = result.step
    chunk = getattr(step, "chunk", None)
    return f"for chunk {chunk}" if chunk else f"({step.id})"


def answer_outcome(
    result: StepResult | None, question: str, *, allowed: Sequence[int]
) -> tuple[Outcome, list[str]]:
    """The outcome of an answer call: the answer, whether the document states it, and its
    citations (a page outside the context is dropped from its citation, with a warning)."""
    outcome = Outcome(question=question)
    if result is None:
        return outcome, []
    if not result.ok:
        outcome.error = str(result.error)
        return outcome, []
    parsed: AnswerOut = result.value
    outcome.answer = parsed.answer
    outcome.found = parsed.found
    warnings: list[str] = []
    context = set(allowed)
    if not parsed.found:
        outcome.pages_to_read = [p for p in parsed.pages_to_read if p in context]
        # A reader that found nothing says so; anything else is a model's claim of absence.
        outcome.absent_by = "reader" if parsed.absent_by == "reader" else "model"
    for cited in parsed.citations:
        page = cited.page_number
        if cited.page_given:
            warnings.append(
                f"The model cited page {cited.page_given!r}, which is not a page number; no page is cited."
            )
        if page is not None and page not in context:
            warnings.append(f"The model cited page {page}, which was not in its context; citation dropped.")
            page = None
        outcome.citations.append(Citation(page=page, quote=cited.quote))
    if parsed.citations_cut:
        warnings.append(
            f"The model gave {len(parsed.citations) + parsed.citations_cut} citations; "
            f"the first {len(parsed.citations)} are kept."
        )
    return outcome, warnings
