"""What the Document screen shows of a prompt, worked out once per prompt and kept."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from rr_core.documents import Document
from rr_core.plans import Call, block_tokens
from rr_core.tokens import TokenCounter
from rr_core.traces import CallTrace
from rr_core.viewer import (
    Condensed,
    Segment,
    condense_to_fit,
    instruction_distances,
    segments_of,
    without_reminders,
)


@dataclass(frozen=True, slots=True)
class PromptView:
    """What this screen shows of one prompt, worked out once per prompt (a 3,000-page prompt
    is 10 MB of text: rendering, comparing, cutting and measuring it is most of a rerun)."""

    text: str
    condensed: Condensed
    segments: list[Segment]  # empty when the plan's layout does not describe the text
    distances: dict[int, int]
    baseline: dict[int, int]  # the same prompt without its reminders (empty if it has none)


# A 3,000-page prompt is 10 MB of text: a few views at most are kept.
@st.cache_resource(max_entries=4, show_spinner=False)
def prompt_view(
    key: str, _record: CallTrace | None, _planned: Call | None, _document: Document, _tokens: TokenCounter
) -> PromptView:
    """The view of a call's prompt (``key`` names the run or plan and the call), made once."""
    if _record is not None:
        text = _record.prompt
        # The plan's layout describes this prompt only if it renders to exactly what was sent.
        layout_ok = _planned is not None and bool(text) and _planned.render() == text
    else:
        assert _planned is not None
        text, layout_ok = _planned.render(), True
    segments = (
        segments_of(_planned.layout, block_tokens(_planned.layout, _tokens, _document))
        if layout_ok and _planned is not None
        else []
    )
    has_reminders = any(s.kind == "reminder" for s in segments)
    return PromptView(
        text=text,
        condensed=condense_to_fit(text, limit=40_000),
        segments=segments,
        distances=instruction_distances(segments),
        baseline=instruction_distances(without_reminders(segments)) if has_reminders else {},
    )
