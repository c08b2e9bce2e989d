"""The user's choices as one value, with every default and bound in one place.

``PARAMS`` describes each numeric setting once (label, default, bounds, step, a plain
sentence): validation, the CLI's defaults and the app's sliders all read it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum
from typing import Any

from rr_core.errors import ConfigError
from rr_core.llm.providers import DEFAULT_PRICE_MODEL, OFFLINE


@dataclass(frozen=True, slots=True)
class Param:
    """One numeric setting: how it is named, shown and bounded."""

    name: str
    label: str
    symbol: str
    default: int | float
    minimum: int | float
    maximum: int | float
    step: int | float
    help: str
    unit: str = ""


PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param(
            "reminder_every",
            "Reprompt interval",
            "k",
            10_000,
            100,
            100_000,
            100,
            "How often a reminder of the task is repeated inside a long prompt: after every k tokens of "
            "pages. Smaller means more reminders (a little more cost).",
            "tokens",
        ),
        Param(
            "top_k",
            "Pages to retrieve",
            "N",
            5,
            1,
            50,
            1,
            "How many pages the model picks before it answers (per chunk for the chunked methods).",
            "pages",
        ),
        Param(
            "chunk_size",
            "Chunk size",
            "c",
            20_000,
            500,
            400_000,
            500,
            "Chunked methods split the document into parts of about c tokens and pick pages in each part "
            "separately; smaller chunks mean more, shorter calls.",
            "tokens",
        ),
        Param(
            "rag_chunk_words",
            "Passage size",
            "w",
            300,
            50,
            2_000,
            50,
            "RAG and BriefContext cut pages into passages of about this many words and search them.",
            "words",
        ),
        Param(
            "rag_top_k",
            "Passages kept (RAG)",
            "top",
            5,
            1,
            50,
            1,
            "How many of the best-matching passages RAG puts in front of the model.",
            "passages",
        ),
        Param(
            "brief_top_n",
            "Passages kept (BriefContext)",
            "n",
            8,
            2,
            64,
            1,
            "How many passages BriefContext retrieves before splitting them into small groups.",
            "passages",
        ),
        Param(
            "brief_partition",
            "Passages per group",
            "g",
            4,
            1,
            16,
            1,
            "BriefContext reads its passages in groups of this size, in parallel, then combines the notes.",
            "passages",
        ),
        Param(
            "brief_iou_threshold",
            "Agreement threshold",
            "IoU",
            0.2,
            0.0,
            1.0,
            0.05,
            "BriefContext answers directly when two rankings agree on their top 3 more than this (overlap).",
        ),
        Param(
            "max_output_tokens",
            "Longest reply",
            "out",
            512,
            64,
            8_192,
            64,
            "The most tokens a model may write in one reply.",
            "tokens",
        ),
    )
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


class PromptProtocol(StrEnum):
    """How the prompts ask and the replies answer.

    - ``json``: the analyst's default: a JSON reply whose answer cites each page with a quote
      copied word for word (what the screens check against the page);
    - ``paper``: the R&R paper's own prompts (000 §3, App. A): the same skeleton of
      instructions, ``<PAGE n>`` blocks and ``INSTRUCTIONS_REMINDER`` blocks, but a plain-text
      reply: the answer and its page (retrieval: the page numbers), no JSON and no quote. The Lab
      scores it with the reference metric beside the strict one, and counts failed runs as wrong.
    """

    JSON = "json"
    PAPER = "paper"

    @property
    def label(self) -> str:
        """How the protocol is shown."""
        return PROTOCOL_LABELS[self]


PROTOCOL_LABELS: dict[PromptProtocol, str] = {
    PromptProtocol.JSON: "JSON answers with a quote per cited page (the analyst's default)",
    PromptProtocol.PAPER: "the R&R paper's prompts: plain-text answer and page, no quote "
    "(reference metric beside the strict one; failed runs count as wrong)",
}


class QuestionPlacement(StrEnum):
    """Where the task and the question stand around the document (the prompt's layout).

    The layouts a user chooses (``LAYOUTS``) apply to every method that can take them:

    - ``before-and-after``: the R&R paper's skeleton (000 §3.1): the full instructions, the
      document, the instructions again opening with "Now, …";
    - ``query-aware``: the instructions with the question, the document, then the question and
      the reply format again (001 §5, "query-aware contextualization");
    - ``question-after``: the task without the question, the document, then the question and
      the reply format (001 §3's headline setup: the model reads the data before it knows what
      to look for);
    - ``cache-aware``: the question-after layout with the reminders kept: the task without the
      question, the document with tags-only reminders (000 Table 6's ablation: they point back to
      the instructions and carry no question), then the question and the reply format. Everything
      before the question is the same for every question over a document: one prefix the
      providers' prompt caches reuse. Not the paper's R&R, whose reminders repeat the question.

    The other two are not layouts a user picks: each is the whole prompt of one cheap
    baseline (a method), recorded so that a trace says what was sent:

    - ``document-first``: the ``question-last`` method: the document, then the task, question
      and format once;
    - ``repeated``: the ``repeat`` method: the baseline prompt twice.
    """

    BEFORE_AND_AFTER = "before-and-after"
    QUERY_AWARE = "query-aware"
    QUESTION_AFTER = "question-after"
    CACHE_AWARE = "cache-aware"
    DOCUMENT_FIRST = "document-first"
    REPEATED = "repeated"

    @property
    def label(self) -> str:
        """How the layout is shown."""
        return PLACEMENT_LABELS[self]

    @property
    def reminder_style(self) -> ReminderStyle | None:
        """The reminder style the layout imposes (None: the settings choose): the cache-aware
        layout's reminders carry no question, or the prefix would end at the first of them."""
        return ReminderStyle.TAGS_ONLY if self is QuestionPlacement.CACHE_AWARE else None


LAYOUTS: tuple[QuestionPlacement, ...] = (
    QuestionPlacement.BEFORE_AND_AFTER,
    QuestionPlacement.QUERY_AWARE,
    QuestionPlacement.QUESTION_AFTER,
    QuestionPlacement.CACHE_AWARE,
)
"""The layouts a user chooses (the Lab's selector, ``lab --layout``, ``method:layout=…``)."""

QUESTION_FIRST: tuple[QuestionPlacement, ...] = (
    QuestionPlacement.BEFORE_AND_AFTER,
    QuestionPlacement.QUERY_AWARE,
)
"""The layouts that state the question before the document (methods that need it there)."""

PLACEMENT_LABELS: dict[QuestionPlacement, str] = {
    QuestionPlacement.BEFORE_AND_AFTER: "instructions before and after the document (the R&R paper, 000 §3.1)",
    QuestionPlacement.QUERY_AWARE: "question before and after the document (query-aware, 001 §5)",
    QuestionPlacement.QUESTION_AFTER: "the task before the document, the question after it (Lost in the Middle, 001 §3)",
    QuestionPlacement.CACHE_AWARE: "the task before the document, tags-only reminders inside it, the question "
    "after it: one cacheable prefix (the paper's tags-only ablation with the question last, not the paper's R&R)",
    QuestionPlacement.DOCUMENT_FIRST: "the document first, the task once at the end (the question-last method)",
    QuestionPlacement.REPEATED: "the baseline prompt twice (the repeat method)",
}

# Settings ``to_dict`` leaves out at their default (added later; see there).
_ONLY_WHEN_SET = ("verify", "verify_model")

# Traces written before the rename: "question-last" was the layout now called question-after.
_RENAMED = {"question-last": QuestionPlacement.QUESTION_AFTER.value}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """The user's choices for one method, carried into the core as one value."""

    method: str = "rr"
    reminder_every: int = int(PARAMS["reminder_every"].default)
    top_k: int = int(PARAMS["top_k"].default)
    chunk_size: int = int(PARAMS["chunk_size"].default)
    rag_chunk_words: int = int(PARAMS["rag_chunk_words"].default)
    rag_top_k: int = int(PARAMS["rag_top_k"].default)
    brief_top_n: int = int(PARAMS["brief_top_n"].default)
    brief_partition: int = int(PARAMS["brief_partition"].default)
    brief_iou_threshold: float = float(PARAMS["brief_iou_threshold"].default)
    max_output_tokens: int = int(PARAMS["max_output_tokens"].default)
    reminder_style: ReminderStyle = ReminderStyle.FULL
    reminder_placement: ReminderPlacement = ReminderPlacement.INTERVAL
    reminder_pages: tuple[int, ...] = ()
    # Where the task and question stand around the document (every call of the method).
    question_placement: QuestionPlacement = QuestionPlacement.BEFORE_AND_AFTER
    # The oracle reads only these pages (the upper bound; the user or the Lab names them).
    gold_pages: tuple[int, ...] = ()
    model: str = DEFAULT_PRICE_MODEL
    provider: str = OFFLINE.name
    # Price the run as this model (the offline engine is free, but shows what a paid model
    # would cost for the same tokens). Empty: the model itself.
    price_model: str = ""
    # Check each answer found against its quotes: one more small call per answer (the question,
    # the answer and the quotes only), by ``verify_model`` ("": the run's model). An LLM's
    # option: a free engine's reader judges support itself and sends nothing more.
    verify: bool = False
    verify_model: str = ""
    # The paper's prompts and plain-text replies, or the analyst's JSON with quotes.
    protocol: PromptProtocol = PromptProtocol.JSON

    @property
    def verifier(self) -> str:
        """The model that checks answers against their quotes ("" when none does)."""
        return (self.verify_model.strip() or self.model) if self.verify else ""

    @property
    def pricing(self) -> tuple[str, str | None]:
        """(model, provider) that prices this run."""
        if self.price_model:
            return self.price_model, None
        return self.model, self.provider

    def validate(self) -> None:
        """Raise ``ConfigError`` for values that cannot work."""
        for name, param in PARAMS.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ConfigError(f"{param.label} ({param.symbol}) must be a number.")
            if not param.minimum <= value <= param.maximum:
                unit = f" {param.unit}" if param.unit else ""
                raise ConfigError(
                    f"{param.label} ({param.symbol}) must be between {param.minimum:,} and "
                    f"{param.maximum:,}{unit}; it is {value:,}."
                )
        if self.reminder_placement is ReminderPlacement.BEFORE_PAGES and not self.reminder_pages:
            raise ConfigError("Reminders 'before pages' need the page numbers to put them before.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-native values (enums as strings, tuples as lists); ``from_dict`` reverses it."""
        data = asdict(self)
        # Written only when set: settings without the check keep the form (and the run and call
        # keys) they had before it existed.
        for name in _ONLY_WHEN_SET:
            if not data[name]:
                del data[name]
        if data["protocol"] is PromptProtocol.JSON:
            del data["protocol"]  # as ``_ONLY_WHEN_SET``: JSON runs keep their keys
        return {
            k: (v.value if isinstance(v, StrEnum) else list(v) if isinstance(v, tuple) else v)
            for k, v in data.items()
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSettings:
        """Rebuild settings from ``to_dict`` output; unknown keys are ignored (older traces)."""
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        if "reminder_style" in values:
            values["reminder_style"] = ReminderStyle(values["reminder_style"])
        if "reminder_placement" in values:
            values["reminder_placement"] = ReminderPlacement(values["reminder_placement"])
        if "protocol" in values:
            values["protocol"] = PromptProtocol(values["protocol"])
        if "question_placement" in values:
            placement = str(values["question_placement"])
            values["question_placement"] = QuestionPlacement(_RENAMED.get(placement, placement))
        for name in ("reminder_pages", "gold_pages"):
            if name in values:
                values[name] = tuple(int(p) for p in values[name])
        return cls(**values)

    def but(self, **changes: Any) -> RunSettings:
        """A copy with some fields changed."""
        return replace(self, **changes)


DEFAULTS = RunSettings()
