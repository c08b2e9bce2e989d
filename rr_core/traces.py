"""Traces: what a run did, as one typed, versioned record — every call (prompt, reply,
usage, cost, how it was sent), every local step, the outcomes. The UI, the store, the exports
and the CLI read this and nothing else; ``to_dict``/``from_dict`` are its one JSON shape (and
read every earlier version).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

from rr_core.costs import Mode
from rr_core.llm.base import Usage
from rr_core.outputs import says_not_stated
from rr_core.plans import Citation, Outcome
from rr_core.settings import RunSettings

# 3: an answer carries ``found`` and a list of ``citations`` (page, quote, check each); the
# first citation is also written as the outcome's ``page``/``quote`` for readers of 2.
TRACE_SCHEMA_VERSION = 3

# ---- Traces ---------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class CallTrace:
    """One call as it happened: what was sent, what came back, what it cost."""

    id: str
    stage: str
    chunk: int | None = None
    question: int | None = None
    pages: list[int] = field(default_factory=list)
    reminders_after: list[int] = field(default_factory=list)
    leading_reminders: int = 0
    reminder_tokens: int = 0
    planned_prompt_tokens: int = 0
    schema: str = ""
    prompt: str = ""
    response: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    output_cost_usd: float = 0.0
    cached_cost_usd: float = 0.0  # of cost_usd: the input read from the provider's prompt cache
    # Prompt-cache tokens this call was expected to read (its prefix was sent before, within
    # the cache's lifetime, and the hint went out); 0: no hit expected.
    expected_cached_tokens: int = 0
    price_known: bool = True
    latency_s: float = 0.0
    cache_key: str = ""
    # "now" (sent at once, at the list price) or "batch" (in a provider batch, at its price).
    mode: Mode = "now"
    cached: bool = False  # not paid by this call: found in the store, or ``shared``
    shared: bool = False  # the reply of the same call another run had in flight (never in the store)
    # The temperature this call's request was sent with (None: none, the API's default; a
    # server that rejects it gets the call again without); for a stored reply, the one its
    # request was sent with.
    temperature: float | None = None
    retrieved: list[int] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True, kw_only=True)
class StepTrace:
    """A local step (not an LLM call) as it ran."""

    id: str
    stage: str
    description: str
    latency_s: float = 0.0
    error: str | None = None


@dataclass(slots=True, kw_only=True)
class RunTrace:
    """A plan's whole run: the one record the UI, the store, the exports and the CLI read."""

    run_id: str
    method: str
    label: str
    describe: str
    questions: list[str]
    document: str
    document_sha256: str
    provider: str
    model: str
    is_llm: bool
    settings: RunSettings
    cache_key: str = ""
    position: int = 0  # index of its plan among the plans run together
    job_id: str = ""  # the job it ran, where it ran one
    schema_version: int = TRACE_SCHEMA_VERSION
    calls: list[CallTrace] = field(default_factory=list)
    steps: list[StepTrace] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the method says of itself (e.g. which ranker)
    error: str | None = None
    error_kind: str | None = None
    estimate_usd: float = 0.0
    price_known: bool = True
    price_source: str = ""
    price_data: str = ""
    latency_s: float = 0.0
    started_at: str = ""

    # The first (usually only) question's outcome, for one-question screens.
    @property
    def outcome(self) -> Outcome:
        """The first question's outcome (an empty one before the run concluded)."""
        return self.outcomes[0] if self.outcomes else Outcome(question=self.question)

    @property
    def question(self) -> str:
        """The first question."""
        return self.questions[0] if self.questions else ""

    @property
    def answer(self) -> str | None:
        """The first question's answer."""
        return self.outcome.answer

    @property
    def page(self) -> int | None:
        """The page the first answer cites."""
        return self.outcome.page

    @property
    def retrieved_pages(self) -> list[int]:
        """Pages retrieved for the first question, best first."""
        return self.outcome.retrieved_pages

    @property
    def dropped_pages(self) -> list[int]:
        """Page numbers the model returned that were not in its context."""
        return self.outcome.dropped_pages

    @property
    def usage(self) -> Usage:
        """Tokens over all calls (cached ones as they were first billed)."""
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        return total

    @property
    def cost_usd(self) -> float:
        """What the method's calls cost: the figure to compare methods by."""
        return sum(c.cost_usd for c in self.calls)

    @property
    def paid_usd(self) -> float:
        """What this run paid: a call already made (stored, or in flight for another run) is
        not paid again, and a free engine (offline, simulated) pays nothing."""
        return self.would_cost_usd if self.is_llm else 0.0

    @property
    def would_cost_usd(self) -> float:
        """What this run's new calls cost at the run's price, paid or not (a free engine's
        calls are priced as the model it is priced as)."""
        return sum(c.cost_usd for c in self.calls if not c.cached)

    @property
    def cached_calls(self) -> int:
        """Calls answered from the store instead of the provider (not those shared with the
        same call in flight for another run)."""
        return sum(1 for c in self.calls if c.cached and not c.shared)

    @property
    def ok(self) -> bool:
        """True when the method produced an outcome without an error."""
        return self.error is None

    def cost_by_stage(self) -> dict[str, float]:
        """Cost by stage (``retrieve``, ``answer``, ``map``, ``reduce``…) plus ``reminders``
        and ``cached`` (input read from the provider's prompt cache, apart)."""
        out: dict[str, float] = {}
        reminders = cached = 0.0
        for call in self.calls:
            prompt = call.usage.prompt_tokens
            share = call.reminder_tokens / prompt if prompt and call.reminder_tokens else 0.0
            # Reminders are input tokens: their share of the call's uncached input cost.
            cached += call.cached_cost_usd
            input_cost = call.cost_usd - call.output_cost_usd - call.cached_cost_usd
            reminders += input_cost * min(share, 1.0)
            out[call.stage] = (
                out.get(call.stage, 0.0) + call.cost_usd - call.cached_cost_usd - input_cost * min(share, 1.0)
            )
        if reminders:
            out["reminders"] = reminders
        if cached:
            out["cached"] = cached
        return out

    def to_dict(self, *, prompts: bool = True) -> dict[str, Any]:
        """The one JSON shape (CLI, exports, store); ``prompts=False`` leaves prompts out."""
        data: dict[str, Any] = {
            f.name: self.settings.to_dict() if f.name == "settings" else _plain(getattr(self, f.name))
            for f in fields(self)
        }
        if not prompts:
            for call in data["calls"]:
                call["prompt"] = None
        for outcome, out in zip(self.outcomes, data["outcomes"], strict=True):
            out.update(_first_citation(outcome))
        data["usage"] = _plain(self.usage)
        data["cost_usd"] = self.cost_usd
        data["paid_usd"] = self.paid_usd
        data["cost_by_stage"] = self.cost_by_stage()
        data["question"] = self.question
        data["answer"] = self.answer
        data["page"] = self.page
        data["retrieved_pages"] = self.retrieved_pages
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunTrace:
        """Rebuild a trace from ``to_dict`` output (also reads the first version's shape)."""
        names = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in names}
        settings = dict(values.get("settings") or {})
        values["settings"] = RunSettings.from_dict(settings)
        calls = []
        for raw in values.pop("calls", []):
            raw = {k: v for k, v in raw.items() if k in CallTrace.__dataclass_fields__}
            raw["usage"] = Usage(**raw.get("usage", {}))
            raw["prompt"] = raw.get("prompt") or ""
            raw.setdefault("id", raw.get("stage", "call"))
            calls.append(CallTrace(**raw))
        values["calls"] = calls
        values["steps"] = [StepTrace(**s) for s in values.get("steps", [])]
        if "outcomes" in data:
            values["outcomes"] = [_outcome_from_dict(o) for o in data["outcomes"]]
        else:  # version 1: one question, its answer at the top level
            values["outcomes"] = [
                _outcome_from_dict(
                    {
                        "question": data.get("question", ""),
                        "answer": data.get("answer"),
                        "page": data.get("page"),
                        "retrieved_pages": list(data.get("retrieved_pages", [])),
                        "dropped_pages": list(data.get("dropped_pages", [])),
                    }
                )
            ]
        values.setdefault("questions", [data.get("question", "")])
        values.setdefault("run_id", f"v1-{uuid.uuid4().hex[:12]}")
        values.setdefault("label", data.get("method", ""))
        values.setdefault("describe", "")
        values["schema_version"] = int(data.get("schema_version", 1))
        return cls(**values)


_AS_IS = (str, int, float, bool, type(None))  # immutable: ``asdict`` copies them for nothing
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """``dataclasses.asdict`` of a trace's values, without copying strings and numbers: a
    trace's prompts are most of its bytes, and ``asdict`` walked each through ``deepcopy``
    (a 30-document Review spent as long converting its traces as writing their JSON)."""
    if isinstance(value, _AS_IS):
        return value
    kind = type(value)
    names = _FIELD_NAMES.get(kind)
    if names is None and hasattr(kind, "__dataclass_fields__"):
        names = _FIELD_NAMES.setdefault(kind, tuple(f.name for f in fields(value)))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if kind is list:
        return [_plain(v) for v in value]
    if kind is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(_plain(v) for v in value)
    return copy.deepcopy(value)  # anything else, as ``asdict`` does


def _first_citation(outcome: Outcome) -> dict[str, Any]:
    """The first citation as schema 2 wrote an outcome's one citation."""
    return {
        "page": outcome.page,
        "quote": outcome.quote,
        "page_label": outcome.page_label,
        "quote_check": outcome.quote_check,
        "quote_score": outcome.quote_score,
    }


def _outcome_from_dict(data: dict[str, Any]) -> Outcome:
    """An outcome from a trace of any version: schema 3's citations, or the one page and quote
    of versions 1 and 2 as one citation (and an ``n/a`` answer as not stated)."""
    values = {k: v for k, v in data.items() if k in Outcome.__dataclass_fields__}
    if "citations" in data:
        fields = Citation.__dataclass_fields__
        values["citations"] = [
            Citation(**{k: v for k, v in c.items() if k in fields}) for c in data["citations"]
        ]
    else:
        page, quote = data.get("page"), data.get("quote") or ""
        values["citations"] = (
            [
                Citation(
                    page=page,
                    quote=quote,
                    page_label=data.get("page_label", ""),
                    quote_check=data.get("quote_check", "unchecked"),
                    quote_score=data.get("quote_score", 0.0),
                )
            ]
            if page is not None or quote
            else []
        )
    if "found" not in data:
        answer = data.get("answer")
        values["found"] = answer is None or not says_not_stated(answer)
        if not values["found"]:
            values["citations"] = []
    return Outcome(**values)
