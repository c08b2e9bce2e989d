"""Document: what the model saw. Page sizes, reminders, chunks, the page itself, the prompts."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import ui
from rr_core.documents import Document
from rr_core.errors import RRError
from rr_core.methods import METHOD_LABELS, Method, plan_method, render_prompt
from rr_core.runs import RunTrace
from rr_core.viewer import (
    StripPage,
    chunk_breaks,
    condense_prompt,
    instruction_distances,
    layout_prompt,
    page_strip,
    reminder_offsets,
    reminder_pages,
    without_reminders,
)

ui.page_setup()
state = st.session_state
st.title("What the model saw")

try:
    document: Document = ui.active_document()
except RRError as exc:
    ui.show_rr_error(exc)
    st.page_link("pages/ask.py", label="Open the document on the Ask screen")
    st.stop()

k, top_k, chunk_size = int(state["reminder_every"]), int(state["top_k"]), int(state["chunk_size"])
results = ui.last_results(document)
traces: dict[str, RunTrace] = {t.method: t for t in results["traces"]} if results else {}
st.caption(
    f"**{ui.md(document.name)}** — {ui.plural(len(document.pages), 'page')}, {document.total_tokens:,} tokens "
    f"({document.tokenizer}). k = {k:,} tokens, N = {top_k}, c = {chunk_size:,} tokens."
)

# Which run's pages to colour (only once a run on this document exists).
shown: RunTrace | None = None
if traces:
    order = list(traces)
    default = order.index("rr") if "rr" in order else 0
    picked = st.selectbox(
        "Colour the pages retrieved and cited by",
        order,
        index=default,
        format_func=ui.label,
        key="w.doc_method",
    )
    shown = traces[picked]
    st.caption(f"From the last run: “{ui.md(results['question'])}”." if results else "")
else:
    st.caption("Run a question on the Ask screen to see the retrieved and cited pages here.")

strip = page_strip(
    document.page_tokens,
    reminder_every=k,
    chunk_size=chunk_size,
    retrieved=shown.retrieved_pages if shown else (),
    cited=shown.page if shown else None,
)
ranked = sum(1 for p in strip if p.rank)


def strip_figure(strip: list[StripPage]) -> go.Figure:
    """Tokens per page; reminders, chunk breaks, retrieved ranks and the cited page marked."""
    colours = [ui.hex_colour(ui.rank_colour(p.rank, ranked)) if p.rank else "#C9D3E3" for p in strip]
    hover = [
        f"page {p.number}: {p.tokens:,} tokens · chunk {p.chunk}"
        + (f" · retrieved #{p.rank}" if p.rank else "")
        + (" · cited" if p.cited else "")
        + (" · reminder after" if p.reminder_after else "")
        for p in strip
    ]
    fig = go.Figure()
    fig.add_bar(
        x=[p.number for p in strip],
        y=[p.tokens for p in strip],
        marker_color=colours,
        marker_line_color=[ui.CITED_COLOUR if p.cited else "rgba(0,0,0,0)" for p in strip],
        marker_line_width=[3 if p.cited else 0 for p in strip],
        hovertext=hover,
        hoverinfo="text",
        name="tokens",
        showlegend=False,
    )
    top = max((p.tokens for p in strip), default=1) * 1.08
    reminders = [p.number + 0.5 for p in strip if p.reminder_after]
    if reminders:
        fig.add_scatter(
            x=reminders,
            y=[top] * len(reminders),
            mode="markers",
            marker={"symbol": "triangle-down", "size": 11, "color": "#F2A541"},
            name=f"reminder (R&R retrieval, k = {k:,})",
            hovertemplate="reminder after page %{x:.0f}<extra></extra>",
        )
    breaks = chunk_breaks(strip)
    # All lines in one layout update: add_vline copies every shape each call (quadratic).
    fig.update_layout(
        shapes=[
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
        ]
    )
    if breaks:  # a legend entry for the dashed lines
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="lines",
            line={"dash": "dash", "color": "#7A7A7A"},
            name=f"chunk boundary (c = {chunk_size:,})",
        )
    cited = [p for p in strip if p.cited]
    if cited:
        fig.add_scatter(
            x=[cited[0].number],
            y=[cited[0].tokens * 1.02 + top * 0.06],
            mode="markers",
            marker={"symbol": "star", "size": 15, "color": ui.CITED_COLOUR},
            name="cited page",
            hovertemplate="cited: page %{x}<extra></extra>",
        )
    if ranked:
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={"symbol": "square", "size": 10, "color": ui.hex_colour(ui.rank_colour(1, ranked))},
            name="retrieved (darker = higher rank)",
        )
    fig.update_layout(
        height=300,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="page",
        yaxis_title="tokens",
        bargap=0.1,
        legend={"orientation": "h", "y": -0.25},
        yaxis_range=[0, top * 1.15],
        # Every page labelled while the labels fit; plotly picks a step beyond that.
        xaxis={"dtick": 1} if len(strip) <= 40 else {},
    )
    return fig


st.subheader("Pages")
st.plotly_chart(strip_figure(strip), width="stretch", key="page_strip")
reminder_count = sum(p.reminder_after for p in strip)
chunks = max((p.chunk for p in strip), default=1)
st.caption(
    f"At k = {k:,}, R&R's retrieval call carries {ui.plural(reminder_count, 'reminder')} "
    f"(chunked R&R restarts the count in each chunk). At c = {chunk_size:,}, chunked methods read "
    f"{ui.plural(chunks, 'chunk')}."
    + (f" {ui.plural(ranked, 'page')} retrieved by {ui.label(shown.method)}." if shown else "")
)

# ---- The page on screen -----------------------------------------------------------------


@st.fragment
def page_viewer() -> None:
    """One rendered page at a time: paging reruns only this fragment."""
    pages = len(document.pages)
    state["view_page"] = min(max(int(state["view_page"]), 1), pages)
    cited = shown.page if shown is not None else None
    top = shown.retrieved_pages[0] if shown is not None and shown.retrieved_pages else None
    batch = results["batch"] if results else None
    if batch is not None and state.get("viewed_batch") != batch:
        # A new run: open on the page that answers it.
        state["viewed_batch"] = batch
        if cited or top:
            state["view_page"] = cited or top
    if cited or top:
        jumps = st.container(horizontal=True)
        if cited and jumps.button(f"Go to the cited page ({cited})", key="go_cited"):
            state["view_page"] = cited
        if top and top != cited and jumps.button(f"Go to the top retrieved page ({top})", key="go_top"):
            state["view_page"] = top
    number = int(ui.bound(st.number_input, "Page", "view_page", min_value=1, max_value=pages, step=1))
    info = strip[number - 1]
    highlight = None
    if info.cited and shown is not None:
        support = ui.support_for(shown, document)
        highlight = support.passage if support else None
    frame = ui.rank_colour(info.rank, ranked) if info.rank else None
    notes = [f"{info.tokens:,} tokens", f"chunk {info.chunk}"]
    if info.rank:
        notes.append(f"retrieved #{info.rank} (framed)")
    if info.cited:
        notes.append("cited — supporting text highlighted" if highlight else "cited")
    if info.reminder_after:
        notes.append("a reminder follows this page")
    if not document.page(number).has_text:
        notes.append("no text on this page")
    try:
        rendered = ui.page_png(document, number, highlight=highlight, frame=frame)
    except RRError as exc:
        ui.show_rr_error(exc)
        return
    st.image(
        rendered.png,
        caption=f"Page {number} of {pages} · " + " · ".join(notes),
        width=ui.PAGE_WIDTH,
        output_format="PNG",
    )
    if highlight and not rendered.highlight_found:
        st.caption(
            "The supporting text could not be placed on the rendered page; it reads: " + ui.md(highlight)
        )


st.subheader("The page")
if document.pdf_bytes is None:
    st.caption("This document has no PDF pages: each page is shown reflowed from its text.")
page_viewer()

# ---- The prompts, exactly as sent ---------------------------------------------------------

st.subheader("The prompt, as sent")
method_values = [m.value for m in Method]
default_method = shown.method if shown else "rr"
prompt_method = Method(
    st.selectbox(
        "Method",
        method_values,
        index=method_values.index(default_method) if default_method in method_values else 0,
        format_func=lambda v: METHOD_LABELS[Method(v)],
        key="w.prompt_method",
    )
)
tokens = ui.counter()
count = ui.count_function(tokens)
trace = traces.get(prompt_method.value)
current = (k, top_k, chunk_size)
if trace is not None:
    run_settings = (
        trace.settings.get("reminder_every"),
        trace.settings.get("top_k"),
        trace.settings.get("chunk_size"),
    )
    if run_settings != current:
        st.caption(
            "The settings changed since the last run: showing the plan at the current settings. "
            "Run again on the Ask screen to see the prompts of this run."
        )
        trace = None

question = (results["question"] if results else "") or str(state.get("question") or "").strip()
calls: list[tuple[str, str | None]] = []  # (label, prompt or None when pending)
if trace is not None and trace.calls:
    st.caption("From the last run: the prompts exactly as they were sent.")
    for i, call in enumerate(trace.calls, start=1):
        stage = "retrieval" if call.stage == "retrieve" else "answer"
        chunk = f", chunk {call.chunk}" if call.chunk else ""
        calls.append((f"{i}. {stage}{chunk} — {len(call.pages)} pages", call.prompt))
elif question:
    try:
        plan = plan_method(document, question, ui.settings_for(prompt_method), tokens)
    except RRError as exc:
        ui.show_rr_error(exc)
        st.stop()
    st.caption("Not run yet: the prompts the plan would send at the current settings.")
    for i, planned in enumerate(plan.calls, start=1):
        stage = "retrieval" if planned.stage == "retrieve" else "answer"
        chunk = f", chunk {planned.chunk}" if planned.chunk else ""
        if planned.pending:
            calls.append((f"{i}. {stage} — waits for the retrieved pages", None))
        else:
            calls.append(
                (f"{i}. {stage}{chunk} — {len(planned.pages)} pages", render_prompt(document, planned))
            )
else:
    st.info("Type a question on the Ask screen to see the prompts.")
    st.stop()

choice = st.selectbox("Call", range(len(calls)), format_func=lambda i: calls[i][0], key="w.prompt_call")
prompt = calls[choice][1]
if prompt is None:
    st.info("This call's prompt depends on the pages the retrieval phase returns: run to see it.")
    st.stop()

segments = layout_prompt(prompt, count)
offsets = reminder_offsets(segments)
total = segments[-1].end if segments else 0
prompt_col, reminder_col = st.columns([2, 1])
with prompt_col:
    full = st.toggle("Show every page in full", key="w.prompt_full")
    shown_prompt = prompt if full else condense_prompt(prompt)
    st.code(shown_prompt, language="xml", wrap_lines=True, height=420)
    st.download_button("Download this prompt", prompt, "prompt.txt", "text/plain", key="dl_prompt")
with reminder_col:
    st.metric("Prompt tokens (≈)", f"{total:,}")
    st.metric("Reminders", len(offsets))
    if offsets:
        st.dataframe(
            pd.DataFrame(
                {
                    "reminder": range(1, len(offsets) + 1),
                    "after page": [p if p is not None else "—" for p in reminder_pages(segments)],
                    "token offset": offsets,
                }
            ).astype({"after page": str}),
            hide_index=True,
            width="stretch",
            key="reminder_table",
        )
    else:
        st.caption("No reminder in this prompt.")

st.markdown("**Distance from each page to the nearest copy of the instructions**")
distances = instruction_distances(segments)
baseline = instruction_distances(without_reminders(segments)) if offsets else {}
fig = go.Figure()
if baseline:
    fig.add_scatter(
        x=list(baseline),
        y=list(baseline.values()),
        mode="lines",
        name="without reminders",
        line={"color": "#9AA5B8", "dash": "dot"},
    )
fig.add_scatter(
    x=list(distances),
    y=list(distances.values()),
    mode="lines+markers",
    name="this prompt" + (f" ({len(offsets)} reminders)" if offsets else ""),
    line={"color": "#2F5FD0"},
    marker={"size": 4},
)
fig.update_layout(
    height=280,
    margin={"l": 10, "r": 10, "t": 10, "b": 10},
    xaxis_title="page",
    yaxis_title="tokens to the nearest instructions",
    legend={"orientation": "h", "y": 1.15},
)
st.plotly_chart(fig, width="stretch", key="distance_chart")
st.caption(
    "This is the paper's explanation of why reprompting works: repeating the instructions every k "
    "tokens keeps every page close to a copy of them, so the model never reads far past the task it is doing. "
    "(Distance: tokens from the middle of a page to the nearest opening, reminder or closing instructions.)"
)
