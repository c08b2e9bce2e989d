"""The stages of a run's calls as registered values: what each is called, its colour and place.

A method names the stage of each of its calls (``Phase(stage="retrieve", …)``); the cost chart,
the call tables and the progress lines read this registry for the label, colour and order. A
stage registered here appears in the chart with no change to the screens; a stage nobody
registered still shows, under its own name and a neutral colour (``stage_info``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StageInfo:
    """One stage: its name in plans and traces, and how the screens show it."""

    name: str
    label: str
    colour: str  # "#rrggbb"
    order: int  # where it stands in a stacked chart and a legend (low first)
    description: str


FALLBACK_COLOUR = "#9E9E9E"
_FALLBACK_ORDER = 1_000

_LOCK = threading.Lock()
_STAGES: dict[str, StageInfo] = {}


def register_stage(stage: StageInfo) -> StageInfo:
    """Add (or replace) a stage; returns it."""
    with _LOCK:
        _STAGES[stage.name] = stage
    return stage


def unregister_stage(name: str) -> None:
    """Remove a stage (tests register their own and take them out again)."""
    with _LOCK:
        _STAGES.pop(name, None)


def all_stages() -> list[StageInfo]:
    """Every registered stage, in display order."""
    with _LOCK:
        stages = list(_STAGES.values())
    return sorted(stages, key=lambda s: (s.order, s.name))


def stage_info(name: str) -> StageInfo:
    """The registered stage, or one made up for a name nobody registered (shown as itself)."""
    with _LOCK:
        known = _STAGES.get(name)
    return known or StageInfo(name, name, FALLBACK_COLOUR, _FALLBACK_ORDER, "")


def stage_label(name: str) -> str:
    """The stage as the screens write it."""
    return stage_info(name).label


def ordered(names: Iterable[str]) -> list[StageInfo]:
    """The stages of ``names``, in display order (unregistered ones last, by name)."""
    infos = {name: stage_info(name) for name in names}
    return sorted(infos.values(), key=lambda s: (s.order, s.name))


@dataclass(frozen=True, slots=True)
class StageBars:
    """One stage's part of a stacked chart: its label, colour and a value per bar."""

    stage: str
    label: str
    colour: str
    values: tuple[float, ...]


def stacked(bars: Sequence[Mapping[str, float]]) -> list[StageBars]:
    """Each stage that has a value in any bar (a bar: stage → value), in display order, with
    its value in every bar (0 where it has none). Unregistered stages come last, as themselves."""
    seen = dict.fromkeys(stage for bar in bars for stage in bar)
    out = []
    for info in ordered(seen):
        values = tuple(float(bar.get(info.name, 0.0)) for bar in bars)
        if any(values):
            out.append(StageBars(info.name, info.label, info.colour, values))
    return out


RANK = register_stage(
    StageInfo("rank", "ranking", "#7A7A7A", 10, "Pages or passages ranked without a model call.")
)
RETRIEVE = register_stage(
    StageInfo("retrieve", "retrieval", "#2F5FD0", 20, "The model picks the pages that answer the question.")
)
MAP = register_stage(
    StageInfo("map", "map (read groups)", "#7E57C2", 30, "Each group of passages is read on its own.")
)
REDUCE = register_stage(
    StageInfo("reduce", "reduce (combine)", "#26A69A", 40, "The groups' summaries are read together.")
)
ANSWER = register_stage(
    StageInfo("answer", "answer", "#4CB391", 50, "The model answers from what it was given.")
)
VERIFY = register_stage(
    StageInfo(
        "verify",
        "Check answers",
        "#C2185B",
        55,
        "Each answer found is checked against its quotes (the question, the answer and the quotes only).",
    )
)
REMINDERS = register_stage(
    StageInfo(
        "reminders",
        "reminder overhead",
        "#F2A541",
        60,
        "The input tokens spent on reminders, taken out of the stages they were sent in.",
    )
)
CACHED = register_stage(
    StageInfo(
        "cached",
        "cached input",
        "#A8C5E8",
        70,
        "Input read from the provider's prompt cache (priced as a cache read), shown apart from the "
        "stages it was sent in.",
    )
)
