"""Document: what the model saw. Pages, the plan's reminders and chunks, the page itself, the prompts."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import streamlit as st

from pages.common import docs, results, sidebar, user, views
from pages.common import state as S
from pages.common.text import md, plural, short, table
from rr_core.documents import Document
from rr_core.errors import RRError
from rr_core.methods import get_method, plan_questions
from rr_core.plans import Call, Citation, Plan
from rr_core.questions import Question
from rr_core.settings import RunSettings
from rr_core.stages import stage_label
from rr_core.tokens import TokenCounter
from rr_core.traces import CallTrace, RunTrace
from rr_core.viewer import (
    StripPage,
    chunk_breaks,
    page_strip,
    plan_marks,
    reminder_offsets,
    reminder_pages,
)

sidebar.page_setup()
state = st.session_state
st.title("What the model saw")


def _leave_focus() -> None:
    S.session().doc_focus = None
    state.pop("w.doc_show", None)


# Opened from a Review cell: that document (from the document store, by hash) and the run that
# answered the cell; otherwise the active document of the session and its last run.
focus = S.session().doc_focus
try:
    document: Document = docs.focused_document() or docs.active_document()
except RRError as exc:
    results.show_rr_error(exc)
    if focus is not None:
        st.button("Back to the active document", key="doc_unfocus", on_click=_leave_focus)
    st.page_link("pages/ask.py", label="Open the document on the Ask screen")
    st.stop()

tokens = S.counter()
last = state.get("results")
traces: list[RunTrace] = list(last["traces"]) if last and last["document_sha256"] == document.sha256 else []
if focus is not None:
    traces = [focus.trace] if focus.trace is not None else []
    last = {"batch": focus.key} if traces else None
    back_col, note_col = st.columns([1, 3], vertical_alignment="center")
    back_col.button("Back to the active document", key="doc_unfocus", on_click=_leave_focus)
    note_col.info(
        f"Opened from {focus.origin}: **{md(focus.name)}** from the document store"
        + (f", at the cited {docs.page_ref(None, focus.page)}" if focus.page else "")
        + (" with its quote highlighted." if focus.quote else ".")
    )
st.caption(
    f"**{md(document.name)}** — {plural(len(document.pages), 'page')}, {document.total_tokens:,} tokens "
    f"({md(document.tokenizer)})."
)

# ---- Which run (or plan) to show -----------------------------------------------------------

docs.prefill_question()  # opened first, this screen shows the sample question's plans too
question = " ".join(str(state.get("question") or "").split())
Option = tuple[str, int]  # ("run", index into traces) or ("plan", index into chosen settings)
options: list[Option] = [("run", i) for i in range(len(traces))]
try:
    chosen = S.chosen_settings()
except RRError:
    chosen = []
options += [("plan", i) for i in range(len(chosen))] if question else []
if not options:
    st.info("Type a question and choose methods on the Ask screen: this screen shows what each would send.")
    st.page_link("pages/ask.py", label="Go to Ask")
    st.stop()


def _asked_line(t: RunTrace) -> str:
    """What a run asked: its first question, and how many more it asked with it."""
    more = len(t.questions) - 1
    return f"“{short(t.question, 50)}”" + (
        f" (+{more} more {'question' if more == 1 else 'questions'})" if more else ""
    )


def _option_label(option: Option) -> str:
    kind, index = option
    if kind == "run":
        t = traces[index]
        return f"Last run: {results.title(t)} — {_asked_line(t)}"
    s = chosen[index]
    method = get_method(s.method)
    settings = method.describe(s)
    return f"Plan at the current settings: {method.label}" + (f" ({settings})" if settings else "")


def _worth_opening(trace: RunTrace) -> tuple[bool, bool, bool]:
    """How much a run shows here: pages it picked (retrieval), then a method that reminds (its
    reminders, where the document is long enough for any: R&R over ICR), then a cited page."""
    retrieved = any(o.retrieved_pages for o in trace.outcomes)
    try:
        reminds = get_method(trace.method).reminds
    except RRError:  # a method no longer registered
        reminds = False
    cited = any(o.stated and any(c.page is not None for c in o.citations) for o in trace.outcomes)
    return retrieved, reminds, cited


# Open on the last run (its reminders or not: a short document gets none), the one that picked
# pages with reminders and cites one first (R&R); before any run, on the plan of a method that
# reminds.
runs = [i for i, (kind, _) in enumerate(options) if kind == "run"]
default = (
    max(runs, key=lambda i: _worth_opening(traces[options[i][1]]))  # the first of the best
    if runs
    else next(
        (
            i
            for i, (kind, ix) in enumerate(options)
            if kind == "plan" and get_method(chosen[ix].method).reminds
        ),
        0,
    )
)
batch = (last or {}).get("batch") if traces else None
if S.session().doc_batch != batch:  # a new run: open on it, not on what was picked before
    S.session().doc_batch = batch
    state.pop("w.doc_show", None)
if not traces:
    info_col, link_col = st.columns([4, 1], vertical_alignment="center")
    info_col.info(
        f"Nothing has run yet on this document. Below is what each method would send for “{md(short(question, 90))}”: "
        "where its reminders and chunk breaks fall, and each prompt. Run it on the Ask screen to see the pages "
        "each method picks and the page its answer cites."
    )
    link_col.page_link("pages/ask.py", label="Run it on Ask →")
picked: Option = st.selectbox("Show", options, index=default, format_func=_option_label, key="w.doc_show")
shown: RunTrace | None = traces[picked[1]] if picked[0] == "run" else None

# A run that answered several questions: one question at a time (its citations, the pages
# retrieved for it), the first with a cited page to start with.
asked_index = 0
if shown is not None and len(shown.outcomes) > 1:
    answered = shown.outcomes

    def _question_label(i: int) -> str:
        o = answered[i]
        said = (
            plural(len(o.cited_pages), "cited page")
            if o.stated and o.cited_pages
            else ("not stated" if o.answer is not None and not o.found else "no page cited")
        )
        return f"Q{i + 1} of {len(answered)}. {short(o.question, 80)} — {said}"

    asked_index = st.selectbox(
        "Question",
        range(len(answered)),
        index=(
            focus.question
            if focus is not None and shown is focus.trace and focus.question < len(answered)
            else next((i for i, o in enumerate(answered) if o.stated and o.cited_pages), 0)
        ),
        format_func=_question_label,
        key=f"w.doc_question_{shown.run_id}",
    )
outcome = shown.outcomes[asked_index] if shown is not None and shown.outcomes else None


@st.cache_resource(max_entries=16, show_spinner=False)
def _plan(
    sha256: str,
    tokenizer: str,
    settings: str,
    questions: tuple[str, ...],
    as_run: bool,
    _document: Document,
    _tokens: TokenCounter,
) -> Plan:
    """A plan made once per document, settings and questions, kept for every rerun (planning
    is pure, and a 3,000-page plan takes tens of milliseconds): a run's plan stays put as the
    sliders move, and other widgets on this screen redraw without planning again."""
    chosen_settings = RunSettings.from_dict(json.loads(settings))
    if as_run:  # the run's own plan, made again from its settings: the same plan
        return get_method(chosen_settings.method).plan(_document, list(questions), chosen_settings, _tokens)
    return plan_questions(_document, [Question(q) for q in questions], chosen_settings, _tokens)[0]


# The run's own plan, made again from its settings (planning is pure: the same plan), or the
# plan the chosen method would make at the current settings.
plan_settings, plan_questions_, as_run = (
    (shown.settings, tuple(shown.questions), True)
    if shown is not None
    else (chosen[picked[1]], (question,), False)
)
settings_json = json.dumps(plan_settings.to_dict(), sort_keys=True)
try:
    plan: Plan = _plan(
        document.sha256, tokens.label, settings_json, plan_questions_, as_run, document, tokens
    )
except RRError as exc:
    results.show_rr_error(exc)
    st.stop()

marks = plan_marks(plan)
strip = page_strip(
    document.page_tokens,
    reminders_after=marks.reminders_after,
    chunks=marks.chunks,
    retrieved=outcome.retrieved_pages if outcome is not None else (),
    cited=outcome.cited_pages if outcome is not None and outcome.stated else (),
)
ranked = sum(1 for p in strip if p.rank)


LONG_STRIP = 300  # pages: above this, the strip draws an outline instead of one bar a page


def strip_figure(strip: list[StripPage]) -> dict[str, Any]:
    """Tokens per page; the plan's reminders and chunk breaks, retrieved ranks, the cited page.

    A plain figure dict: building ``go.Figure`` validates every bar, and ``st.plotly_chart``
    validates the figure again anyway (30-50 ms at 300 pages, against 3 ms for a dict).
    """
    colours = [
        results.hex_colour(results.rank_colour(p.rank, ranked)) if p.rank else "#C9D3E3" for p in strip
    ]
    top = max((p.tokens for p in strip), default=1) * 1.08
    hover = "page %{x}: %{y:,} tokens · chunk %{customdata[0]} · retrieved #%{customdata[1]}<extra></extra>"
    pages: dict[str, Any] = {
        # Arrays, not lists: plotly checks a list element by element (80-260 ms for a 3,000-page
        # screen's charts, against 10-20 ms for arrays) and sends arrays as packed binary.
        "x": np.fromiter((p.number for p in strip), dtype=np.int64, count=len(strip)),
        "y": np.fromiter((p.tokens for p in strip), dtype=np.int64, count=len(strip)),
        "customdata": np.array([[p.chunk, p.rank or "—"] for p in strip], dtype=object),
        "hovertemplate": hover,
        "showlegend": False,
    }
    long = len(strip) > LONG_STRIP
    if long:
        # Bars under a pixel wide hide the retrieved pages (and cost the browser 0.5-0.8 s at
        # 3,000 pages): the sizes as one filled outline, the retrieved pages as markers on it.
        traces: list[dict[str, Any]] = [
            {
                **pages,
                "type": "scatter",
                "mode": "lines",
                "fill": "tozeroy",
                "line": {"width": 1, "color": "#9AA9C2"},
            }
        ]
        picked = sorted((p for p in strip if p.rank), key=lambda p: p.rank or 0, reverse=True)
        if picked:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [p.number for p in picked],
                    "y": [p.tokens for p in picked],
                    "customdata": [[p.chunk, p.rank] for p in picked],
                    "hovertemplate": hover,
                    "marker": {
                        "symbol": "square",
                        "size": 9,
                        "color": [colours[p.number - 1] for p in picked],
                        "line": {"width": 1, "color": "#1B2A4A"},
                    },
                    "showlegend": False,
                }
            )
    else:
        traces = [{**pages, "type": "bar", "marker": {"color": colours}}]
    reminders = [p.number + 0.5 for p in strip if p.reminder_after]
    if reminders:
        dense = len(reminders) > 60  # triangles would run together: thin ticks show the rhythm
        traces.append(
            {
                "type": "scatter",
                "x": reminders,
                "y": [top] * len(reminders),
                "mode": "markers",
                "marker": (
                    {"symbol": "line-ns", "size": 9, "line": {"width": 1, "color": "#E08A00"}}
                    if dense
                    else {"symbol": "triangle-down", "size": 10, "color": "#F2A541"}
                ),
                "name": "reminder",
                "hovertemplate": "reminder after page %{x:.0f}<extra></extra>",
            }
        )
    breaks = chunk_breaks(strip)
    if breaks:
        traces.append(
            {
                "type": "scatter",
                "x": [None],
                "y": [None],
                "mode": "lines",
                "line": {"dash": "dash", "color": "#7A7A7A"},
                "name": "chunk boundary",
            }
        )
    cited = [p for p in strip if p.cited]
    if cited:
        traces.append(
            {
                "type": "scatter",
                "x": [p.number for p in cited],
                "y": [p.tokens * 1.02 + top * 0.06 for p in cited],
                "mode": "markers",
                "marker": {"symbol": "star", "size": 15, "color": results.CITED_COLOUR},
                "name": "cited page" if len(cited) == 1 else "cited pages",
                "hovertemplate": "cited: page %{x}<extra></extra>",
            }
        )
    if ranked:
        traces.append(
            {
                "type": "scatter",
                "x": [None],
                "y": [None],
                "mode": "markers",
                "marker": {
                    "symbol": "square",
                    "size": 10,
                    "color": results.hex_colour(results.rank_colour(1, ranked)),
                },
                "name": "retrieved (darker = higher rank)",
            }
        )
    layout: dict[str, Any] = {
        "height": 280,
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        # Pages 1 to n and no further: the cited stars and reminder marks would widen it by one.
        "xaxis": {
            "title": {"text": "page"},
            "range": [0.4, len(strip) + 0.6],
            # Every page numbered up to 20 pages; beyond, 40 labels crowd a 1024-px screen's
            # strip and turn on their side: Plotly's own steps.
            **({"dtick": 1} if len(strip) <= 20 else {}),
        },
        "yaxis": {"title": {"text": "tokens"}, "range": [0, top * 1.15]},
        "bargap": 0.1,
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.3},
        "shapes": [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": after + 0.5,
                "x1": after + 0.5,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dash", "color": "#7A7A7A", "width": 1},
            }
            for after in breaks
        ],
    }
    return {"data": traces, "layout": layout}


st.subheader("Pages")
st.plotly_chart(strip_figure(strip), width="stretch", key="page_strip", config={"displayModeBar": False})
reminder_count = len(marks.reminders_after) + marks.leading_reminders
chunk_note = f" in {plural(len(marks.chunks), 'chunk')}" if marks.chunks else ""
st.caption(
    f"{md(plan.label)} sends {plural(reminder_count, 'reminder')}{chunk_note}"
    + (f" ({md(plan.describe)})" if plan.describe else "")
    + (f"; {plural(ranked, 'page')} retrieved, darker first." if shown else ".")
    + " Markers come from the plan of the run shown, not from the sliders."
)

# ---- The page on screen -----------------------------------------------------------------


# Each citation of the question shown that names a page: what the viewer steps through, each
# on its page, framed, with its quote highlighted.
Cited = tuple[int, Citation]  # (index of the question's outcome, the citation)
cited_list: list[Cited] = (
    [(asked_index, c) for c in outcome.citations if c.page is not None]
    if outcome is not None and outcome.stated
    else []
)


def _go_to_citation(index: int) -> None:
    """Focus a citation and turn to its page (a button's callback: before the rerun draws)."""
    S.session().view_citation = index
    state["view_page"] = cited_list[index][1].page


def _focus(number: int) -> int | None:
    """The citation in focus: the one last stepped to, or (after turning to a page by number)
    the first citation on that page; None when there are none."""
    if not cited_list:
        return None
    index = min(max(S.session().view_citation, 0), len(cited_list) - 1)
    if cited_list[index][1].page != number:
        index = next((i for i, (_, c) in enumerate(cited_list) if c.page == number), index)
    S.session().view_citation = index
    return index


def citation_label(index: int) -> str:
    """``Citation 2 of 4 · p. 26`` (and the question, for a run of several)."""
    q, citation = cited_list[index]
    asked = f" · Q{q + 1}" if shown is not None and len(shown.outcomes) > 1 else ""
    return f"Citation {index + 1} of {len(cited_list)} · {docs.page_ref(document, citation.page)}{asked}"


def citation_stepper(number: int) -> int | None:
    """Previous / next citation, and which one is in focus; returns its index."""
    index = _focus(number)
    if index is None:
        return None
    row = st.container(horizontal=True, vertical_alignment="center", key="citation_steps")
    row.button(
        "Previous citation",
        icon=":material/arrow_back:",
        key="prev_citation",
        disabled=index == 0,
        on_click=_go_to_citation,
        args=(index - 1,),
    )
    here = cited_list[index][1].page == number
    row.markdown(f"**{md(citation_label(index))}**" + ("" if here else " (not this page)"))
    row.button(
        "Next citation",
        icon=":material/arrow_forward:",
        key="next_citation",
        disabled=index == len(cited_list) - 1,
        on_click=_go_to_citation,
        args=(index + 1,),
    )
    if not here:
        row.button("Back to it", key="back_to_citation", on_click=_go_to_citation, args=(index,))
    return index


def citation_notes(citation: Citation, shown_page: docs.ShownPage) -> None:
    """The quote in focus, where it stands (provenance), and what the highlight marks."""
    quote = " ".join(citation.quote.split())
    if not quote:
        st.caption("This citation gives no quote to highlight.")
        return
    st.markdown(f"> {md(quote)}")
    check = results.quote_caption(citation, document)
    placed = shown_page.placed
    if placed is None:
        st.caption(
            ":orange[:material/warning: Could not place the quote on the page: no run of its words "
            "matches it closely enough, so nothing is highlighted.]" + (f"  \n{check}" if check else "")
        )
        return
    how = "word for word" if placed.score >= 100 else f"nearly ({placed.score:.0f}% match)"
    twice = (
        f" These words stand {placed.occurrences} times on the page; the first is highlighted."
        if placed.occurrences > 1
        else ""
    )
    st.caption(f"Highlighted: the quoted words only, {how}.{twice}" + (f"  \n{check}" if check else ""))


@st.fragment
def page_viewer() -> None:
    """One rendered page at a time: paging reruns only this fragment."""
    pages = len(document.pages)
    state["view_page"] = min(max(int(state["view_page"]), 1), pages)
    first_cited = cited_list[0][1].page if cited_list else None
    top = outcome.retrieved_pages[0] if outcome is not None and outcome.retrieved_pages else None
    viewing = (batch, shown.run_id if shown is not None else None, asked_index)
    if batch is not None and S.session().doc_viewing != viewing:
        # A new run, another run of it or another question shown: open on its first citation
        # (or the page it ranked first).
        S.session().doc_viewing = viewing
        S.session().view_citation = 0
        if first_cited or top:
            state["view_page"] = first_cited or top
    if top and top not in {c.page for _, c in cited_list}:
        st.button(
            f"Go to the top retrieved page ({top})",
            key="go_top",
            on_click=state.__setitem__,
            args=("view_page", top),
        )
    labelled = any(docs.printed_label(document, n) for n in range(1, pages + 1))
    picker = "PDF page (printed labels differ)" if labelled else "Page"
    number = int(S.bound(st.number_input, picker, "view_page", min_value=1, max_value=pages, step=1))
    focus = citation_stepper(number)
    info = strip[number - 1]
    citation = cited_list[focus][1] if focus is not None and cited_list[focus][1].page == number else None
    frame = (
        results.CITED_RGB
        if citation is not None
        else results.rank_colour(info.rank, ranked)
        if info.rank
        else None
    )
    notes = [f"{info.tokens:,} tokens"]
    if marks.chunks:
        notes.append(f"chunk {info.chunk}")
    if info.rank:
        notes.append(f"retrieved #{info.rank}" + ("" if citation is not None else " (framed)"))
    if citation is not None and focus is not None:
        notes.append(f"citation {focus + 1} of {len(cited_list)} (framed)")
    elif info.cited:
        notes.append("cited")
    if info.reminder_after:
        notes.append("a reminder follows this page")
    if not document.page(number).has_text:
        notes.append("no text on this page")
    try:
        shown_page = docs.page_png(document, number, quote=citation.quote if citation else "", frame=frame)
    except RRError as exc:
        results.show_rr_error(exc)
        return
    if citation is not None:
        notes.append("its quote highlighted" if shown_page.placed else "its quote could not be placed")
    if citation is not None:  # what is cited, above the page: in view as one steps through
        citation_notes(citation, shown_page)
    st.image(
        shown_page.rendered.png,
        caption=f"{docs.page_position(document, number)} · " + " · ".join(notes),
        # Its own width (rendered at PAGE_WIDTH), narrower where the column is (1024 px).
        width="content",
        output_format="PNG",
    )


st.subheader("The page")
if outcome is not None and outcome.answer is not None:
    # How far to trust the answer in view: "check this" with its reason; a reader that found
    # nothing names the pages to read (nothing special for a high or unassessed answer).
    flag = results.confidence_line(outcome.confidence, outcome.confidence_reason, outcome.support_reason)
    if flag and outcome.stated:
        st.markdown(f"**Answer:** {md(outcome.answer)} · {flag}")
    elif not outcome.found and outcome.pages_to_read:
        st.markdown(
            ":gray[:material/search_off:] **Not found**: pages to read, best first: "
            + ", ".join(docs.page_ref(document, p) for p in outcome.pages_to_read)
        )
if document.pdf_bytes is None:
    st.caption(
        "This document has no PDF pages: each page is typeset here from its text, "
        "so line breaks and layout are ours, not the original's."
    )
page_viewer()

# ---- The prompts, exactly as sent ---------------------------------------------------------

st.subheader("The prompt, as sent" if shown else "The prompt the plan would send")
known = {c.id: c for c in plan.known_calls}
Entry = tuple[str, Call | None, CallTrace | None]
entries: list[Entry] = []
if shown is not None:
    for i, sent in enumerate(shown.calls, start=1):
        chunk = f", part {sent.chunk}" if sent.chunk else ""
        entries.append(
            (
                f"{i}. {stage_label(sent.stage)}{chunk} — {plural(len(sent.pages), 'page')}",
                known.get(sent.id),
                sent,
            )
        )
else:
    for i, call in enumerate(plan.calls, start=1):
        chunk = f", part {call.chunk}" if call.chunk else ""
        waits = "" if known.get(call.id) is call else " — waits for the phase before"
        entries.append(
            (
                f"{i}. {stage_label(call.stage)}{chunk}{waits}",
                known.get(call.id),
                None,
            )
        )
if not entries:
    st.info("This run made no call.")
    st.stop()
choice = st.selectbox("Call", range(len(entries)), format_func=lambda i: entries[i][0], key="w.prompt_call")
label, planned, record = entries[choice]
if record is None and planned is None:
    st.info("This call's prompt depends on what the phase before returns: run the method to see it.")
    st.stop()


# The same call of the same run or plan is the same prompt. The cache is the process's, shared
# by every user: a run's id is unique only in its owner's history, so the key says whose.
view_key = (
    f"run {user.cache_scope()} {shown.run_id} call {choice}"
    if shown is not None
    else f"plan {document.sha256} {tokens.label} {settings_json} {plan_questions_} call {choice}"
)
view = views.prompt_view(view_key, record, planned, document, tokens)
text, segments = view.text, view.segments
if not text:
    st.info("This run's prompts were not kept (exports and the history can leave them out).")
    st.stop()
offsets = reminder_offsets(segments)
# 5:4, not 2:1: at 1024 px the reminder table fits its column whole (no sideways scroll).
prompt_col, reminder_col = st.columns([5, 4])
with prompt_col:
    # Pages shortened until the whole structure fits on screen, so every reminder shows.
    condensed = view.condensed
    # Plain text in a scrolling box: st.code would load a syntax highlighter into the browser
    # (0.3-0.45 s of a first visit) to colour nothing.
    with st.container(height=380, key="prompt_box"):
        st.text(
            condensed.text
            + ("\n… (cut here on screen; the download holds it all)" if condensed.cut_off else "")
        )
    st.caption(
        f"Each page is cut to its first {condensed.keep_chars} characters on screen; "
        "tags, instructions and reminders are whole."
    )
    if st.button("Prepare the full prompt for download", key="prepare_prompt"):
        state["prompt_download"] = (label, text)
    prepared = state.get("prompt_download")
    if prepared and prepared[0] == label:
        st.download_button(
            "Download this prompt",
            prepared[1],
            "prompt.txt",
            "text/plain",
            key="dl_prompt",
            on_click="ignore",
        )
with reminder_col:
    st.metric("Prompt tokens (≈)", f"{segments[-1].end:,}" if segments else "—")
    st.metric("Reminders", len(offsets) if segments else "—")
    if offsets:
        rows = [
            [i, str(page) if page is not None else "—", offset]
            for i, (page, offset) in enumerate(zip(reminder_pages(segments), offsets, strict=True), start=1)
        ]
        columns = ("reminder", "after page", "at token")  # short headers: the column is narrow
        # A scrolling box: a 3,000-page prompt has hundreds of reminders.
        with st.container(height=260 if len(rows) > 8 else "content", border=False, key="reminder_table"):
            st.markdown(table(columns, rows, numeric=columns))
    elif segments:
        st.caption("No reminder in this prompt.")
    else:
        st.caption("This prompt was recorded as sent; its layout is shown for the plan's own calls only.")

if segments and any(s.kind == "page" for s in segments):
    st.markdown("**Distance from each page to the nearest copy of the instructions**")
    distances, baseline = view.distances, view.baseline
    lines: list[dict[str, Any]] = []
    if baseline:
        lines.append(
            {
                "type": "scatter",
                "x": np.fromiter(baseline, dtype=np.int64),
                "y": np.fromiter(baseline.values(), dtype=np.int64),
                "mode": "lines",
                "name": "without reminders",
                "line": {"color": "#9AA5B8", "dash": "dot"},
            }
        )
    lines.append(
        {
            "type": "scatter",
            "x": np.fromiter(distances, dtype=np.int64),
            "y": np.fromiter(distances.values(), dtype=np.int64),
            "mode": "lines",
            "name": "this prompt" + (f" ({plural(len(offsets), 'reminder')})" if offsets else ""),
            "line": {"color": "#2F5FD0"},
        }
    )
    highest = max(distances.values(), default=0)
    wide = bool(baseline) and max(baseline.values(), default=0) > 20 * max(highest, 1)
    fig = {
        "data": lines,
        "layout": {
            "height": 260,
            "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
            "xaxis": {"title": {"text": "page (in prompt order)"}},
            # On a long document the line without reminders dwarfs the one with them: a log
            # scale keeps both readable.
            "yaxis": {
                "title": {"text": "tokens, log scale" if wide else "tokens to the nearest instructions"},
                **({"type": "log"} if wide else {}),
            },
            "legend": {"orientation": "h", "y": 1.15},
        },
    }
    st.plotly_chart(fig, width="stretch", key="distance_chart", config={"displayModeBar": False})
    st.caption(
        "Why reprompting works, in the paper's words made visible: repeating the instructions every k tokens "
        "keeps every page close to a copy of them, so the model never reads far past the task. (Distance: "
        "tokens from the middle of a page to the nearest opening, reminder or closing instructions.)"
    )
