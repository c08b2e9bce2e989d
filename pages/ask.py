"""Ask: a document and a question → the methods side by side → answers, pages and cost."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from pages import ui
from rr_core.documents import Document
from rr_core.errors import LedgerError, PasswordRequired, RRError, WrongPassword
from rr_core.exports import to_csv, to_json, to_markdown
from rr_core.ledger import Ledger
from rr_core.methods import METHOD_LABELS, Method, Plan, plan_all
from rr_core.runs import CallEvent, RunTrace, stream_runs

ui.page_setup()
state = st.session_state
st.title("Ask a long document")
st.caption("Choose a document, ask a question, compare the methods: answers, cited pages and cost.")

# ---- 1. The document --------------------------------------------------------------------

source_col, pick_col = st.columns([1, 3])
def _source_changed() -> None:
    # A sample's question means nothing for the user's own file.
    if state["source"] == "upload" and state["question"] in ui.sample_questions(state["sample"]):
        state["question"] = ""


with source_col:
    ui.bound(
        st.radio,
        "Document",
        "source",
        options=["sample", "upload"],
        format_func={"sample": "A sample", "upload": "My file"}.get,
        on_change=_source_changed,
    )
with pick_col:
    if state["source"] == "sample":

        def _sample_changed() -> None:
            # A new sample: start from its first question rather than the last sample's.
            questions = ui.sample_questions(state["sample"])
            state["question"] = questions[0] if questions else ""

        ui.bound(
            st.selectbox,
            "Sample",
            "sample",
            options=ui.sample_names(),
            format_func=ui.sample_title,
            on_change=_sample_changed,
        )
        st.caption(ui.sample_description(state["sample"]))
    else:
        uploaded = st.file_uploader(
            "Upload a PDF, DOCX, TXT, HTML or Markdown file", type=ui.UPLOAD_TYPES, key="w.upload"
        )
        if uploaded is not None:
            ui.remember_upload(uploaded)
        elif state.get("upload") is not None:
            st.caption(f"Using **{ui.md(state['upload'].name)}** (upload another file to replace it).")
        else:
            st.info("Upload a document to ask about it, or switch to a sample.")
            st.stop()


def _password_field(message: str) -> None:
    st.warning(message)
    ui.bound(st.text_input, "PDF password", "upload_password", type="password")
    st.stop()


try:
    document: Document = ui.active_document()
except PasswordRequired as exc:
    _password_field(f"{exc} It is used for this session only.")
except WrongPassword as exc:
    _password_field(f"{exc} Try again.")
except RRError as exc:
    ui.show_rr_error(exc)
    st.stop()

state["document_sha256"] = document.sha256
approx = " (approximate)" if document.approximate_tokens else ""
st.caption(
    f"**{ui.md(document.name)}** — {ui.plural(len(document.pages), 'page')}, {document.total_tokens:,} tokens "
    f"({document.tokenizer}{approx})."
)
for warning in document.warnings:
    st.warning(warning)

# ---- 2. The question and the methods ----------------------------------------------------

questions = ui.sample_questions(state["sample"]) if state["source"] == "sample" else []
if questions and not state.get("question_prefilled"):
    # The first visit opens ready to run: the sample's first question is filled in.
    state["question_prefilled"] = True
    if not state["question"].strip():
        state["question"] = questions[0]
if questions:

    def _pick() -> None:
        if state.get("w.quick"):
            state["question"] = state["w.quick"]

    st.selectbox(
        "Sample questions",
        questions,
        index=None,
        placeholder="Pick one of the sample's questions…",
        key="w.quick",
        on_change=_pick,
    )
ui.bound(st.text_area, "Question", "question", height=80, placeholder="What do you want to know?")
ui.bound(
    st.multiselect,
    "Methods to compare",
    "methods",
    options=[m.value for m in Method],
    format_func=lambda v: METHOD_LABELS[Method(v)],
    help="Baseline reads the whole document once; R&R retrieves pages with reminders, then answers.",
)

question = state["question"].strip()
methods = ui.selected_methods()
if not question:
    st.info("Type a question to see what each method would send.")
    st.stop()
if not methods:
    st.info("Choose at least one method.")
    st.stop()

# ---- 3. The plan: what each method will send, before any money is spent ------------------

tokens = ui.counter()
try:
    plans: dict[Method, Plan] = plan_all(document, question, ui.settings_for(methods[0]), tokens, methods)
except RRError as exc:
    ui.show_rr_error(exc)
    st.stop()

priced_as = ui.settings_for(methods[0]).pricing[0]
st.subheader("Before running")
plan_rows = [
    {
        "Method": METHOD_LABELS[m],
        "Calls": p.estimate.calls,
        "Input tokens": p.estimate.input_tokens,
        "Reminders": p.reminders,
        "Chunks": len(p.chunks) or 1,
        "Reminder tokens": p.estimate.reminder_tokens,
        "Estimated cost (USD)": round(p.estimate.usd, 5),
    }
    for m, p in plans.items()
]
st.dataframe(
    pd.DataFrame(plan_rows),
    hide_index=True,
    width="stretch",
    column_config={
        "Input tokens": st.column_config.NumberColumn(format="localized"),
        "Reminder tokens": st.column_config.NumberColumn(format="localized"),
        "Estimated cost (USD)": st.column_config.NumberColumn(format="$%.5f"),
    },
)
unknown = not all(p.estimate.cost.known for p in plans.values())
st.caption(
    f"Priced as **{ui.md(priced_as)}**"
    + (" — no price data for this model, so costs show as 0" if unknown else "")
    + ". Retrieval methods' answer call is estimated as N average pages until retrieval has run."
)

# ---- 4. Run -------------------------------------------------------------------------------


def _line(event: CallEvent) -> str:
    where = "retrieval" if event.stage == "retrieve" else "answer"
    chunk = f", chunk {event.chunk}" if event.chunk else ""
    icon = {
        "started": ":material/hourglass_top:",
        "done": ":green[:material/check_circle:]",
        "failed": ":red[:material/error:]",
    }.get(event.status, "•")
    text = f"{icon} **{ui.label(event.method)}** — {where}{chunk} ({event.pages} pages): {event.status}"
    if event.message:
        text += f" — {ui.md(event.message)}"
    return text


def run(document: Document, question: str, methods: list[Method]) -> None:
    """Run the methods with progress per call, keep the results, save them to the ledger."""
    settings = [ui.settings_for(m) for m in methods]
    try:
        client = ui.new_client()
    except RRError as exc:
        ui.show_rr_error(exc)
        return
    finished: dict[str, RunTrace] = {}
    calls = sum(p.estimate.calls for p in plans.values())
    with st.status(f"Running {ui.plural(len(methods), 'method')}, about {ui.plural(calls, 'call')}…", expanded=True) as status:
        lines: dict[tuple[str, str, int | None], Any] = {}
        try:
            for item in stream_runs(document, question, settings, client, ui.counter()):
                if isinstance(item, RunTrace):
                    finished[item.method] = item
                    continue
                key = (item.method, item.stage, item.chunk)
                if key not in lines:
                    lines[key] = st.empty()
                lines[key].markdown(_line(item))
        except RRError as exc:
            status.update(label="The run could not start", state="error")
            ui.show_rr_error(exc)
            return
        failed = [t for t in finished.values() if t.error]
        status.update(
            label=f"Done: {len(finished) - len(failed)} of {ui.plural(len(finished), 'method')} answered",
            state="error" if failed and len(failed) == len(finished) else "complete",
            expanded=False,
        )
    traces = [finished[s.method.value] for s in settings if s.method.value in finished]
    batch = "unsaved"
    try:
        batch = Ledger().save_batch(traces)
    except LedgerError as exc:
        st.warning(f"The results could not be saved to the history ({exc}); they are still shown below.")
    state["results"] = {
        "batch": batch,
        "document_sha256": document.sha256,
        "document": document.name,
        "question": question,
        "traces": traces,
    }


if st.button("Run", type="primary", key="run", icon=":material/play_arrow:"):
    run(document, question, methods)

# ---- 5. Results ---------------------------------------------------------------------------

results = ui.last_results()
if results is None:
    st.stop()
traces: list[RunTrace] = results["traces"]
st.subheader("Results")
current_doc = document if results["document_sha256"] == document.sha256 else None
st.caption(
    f"Question: **{ui.md(results['question'])}** on {ui.md(results['document'])} · "
    + (f"{traces[0].provider} / {traces[0].model}" if traces[0].is_llm else "offline engine (not an LLM)")
    + f" · batch `{results['batch']}`"
)
per_row = min(len(traces), 3)  # three columns fit a laptop screen; more methods wrap
for start in range(0, len(traces), per_row):
    columns = st.columns(per_row)
    for column, trace in zip(columns, traces[start : start + per_row], strict=False):
        with column, st.container(border=True):
            ui.result_column(trace, current_doc)

st.markdown("**Cost by method and stage**")
st.plotly_chart(ui.cost_chart(traces), width="stretch", key="cost_chart")
if not traces[0].is_llm:
    st.caption(
        f"The offline engine is free: these are the costs of the same tokens priced as {traces[0].settings.get('price_model') or traces[0].model}."
    )

downloads = st.container(horizontal=True)
downloads.download_button(
    "Download JSON", to_json(traces), "rr-results.json", "application/json", key="dl_json"
)
downloads.download_button("Download CSV", to_csv(traces), "rr-results.csv", "text/csv", key="dl_csv")
downloads.download_button(
    "Download report (Markdown)", to_markdown(traces), "rr-report.md", "text/markdown", key="dl_md"
)
if current_doc is not None:
    downloads.page_link("pages/document.py", label="See what the model saw →")
