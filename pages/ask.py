"""Ask: a document and a question (or several) → methods side by side → answers, pages, cost."""

from __future__ import annotations

from typing import Any

import streamlit as st

from pages.common import docs, results, sidebar, user
from pages.common import state as S
from pages.common.text import md, plural, short, table
from rr_core import workbench
from rr_core.documents import Document
from rr_core.errors import NoTextError, PasswordRequired, RRError, WrongPassword
from rr_core.exports import to_csv, to_json, to_markdown
from rr_core.methods import GROUP_LABELS, all_methods, get_method, parse_spec, plan_questions
from rr_core.plans import Plan
from rr_core.questions import Question
from rr_core.runs import CallEvent, RunTrace
from rr_core.settings import DEFAULTS, PARAMS
from rr_core.stages import stage_label

sidebar.page_setup()
state = st.session_state
st.title("Ask a long document")

# ---- 1. The document --------------------------------------------------------------------

source_col, pick_col = st.columns([1, 3])


def _source_changed() -> None:
    # A sample's question means nothing for the user's own file, and the other way round.
    state["question"] = ""
    state["questions_text"] = ""
    state["gold_pages"] = ""


def _sample_changed() -> None:
    # A new sample: start from its middle question rather than the last sample's.
    questions = docs.sample_questions(S.session().sample)
    state["question"] = questions[0].text if questions else ""
    state["questions_text"] = ""
    state["gold_pages"] = str(questions[0].page) if questions else ""


with source_col:
    S.bound(
        st.radio,
        "Document",
        "source",
        options=["sample", "upload"],
        format_func={"sample": "A sample", "upload": "My file"}.get,
        on_change=_source_changed,
    )
with pick_col:
    if state["source"] == "sample":
        S.bind(
            st.selectbox,
            "Sample",
            S.session(),
            "sample",
            key="sample",
            options=docs.sample_names(),
            format_func=docs.sample_title,
            on_change=_sample_changed,
            help=docs.sample_description(S.session().sample),
        )
    else:
        uploaded = st.file_uploader(
            "Upload a PDF, DOCX, TXT, HTML or Markdown file", type=docs.UPLOAD_TYPES, key="w.upload"
        )
        if uploaded is not None:
            docs.remember_upload(uploaded)
        elif (kept := S.session().upload) is not None:
            st.caption(f"Using **{md(kept.name)}** (upload another file to replace it).")
        else:
            st.info("Upload a document to ask about it, or switch to a sample.")
            st.stop()


def _password_field(message: str) -> None:
    st.warning(md(message))
    S.bind(
        st.text_input, "PDF password", S.session(), "upload_password", key="upload_password", type="password"
    )
    st.caption("The password is used for this session only; it is never stored.")
    st.stop()


def _ocr_choice() -> None:
    """Opt-in OCR for pages without a text layer (slow: seconds a page)."""
    missing = docs.ocr_missing()
    if missing:
        st.caption(f"OCR is not available here: {md(missing)}.")
        return
    S.bind(
        st.checkbox,
        "Read pages without text by OCR (Tesseract; a few seconds a page)",
        S.session(),
        "upload_ocr",
        key="upload_ocr",
        help="Scanned pages have no text for a model to read; OCR turns their images into text. It runs on this machine.",
    )


try:
    document: Document = docs.active_document()
except PasswordRequired as exc:
    _password_field(str(exc))
except WrongPassword as exc:
    _password_field(f"{exc} Try again.")
except NoTextError as exc:
    results.show_rr_error(exc)
    _ocr_choice()
    st.stop()
except RRError as exc:
    results.show_rr_error(exc)
    st.stop()

st.caption(
    f"**{md(document.name)}** — {plural(len(document.pages), 'page')}, {document.total_tokens:,} tokens "
    f"({md(document.tokenizer)})."
)
for warning in document.warnings:
    st.warning(md(warning))
if state["source"] == "upload" and any(not p.has_text for p in document.pages):
    _ocr_choice()

# ---- 2. The question(s) and the methods ----------------------------------------------------

known = docs.sample_questions(S.session().sample) if state["source"] == "sample" else []
docs.prefill_question()  # the first visit opens ready to run

mode_col, helper_col = st.columns([3, 5], vertical_alignment="bottom")
S.bound(
    mode_col.segmented_control,
    "Questions",
    "ask_mode",
    options=["one", "several"],
    required=True,
    format_func={"one": "One question", "several": "Several"}.get,
    help="Several questions: ICR and R&R pick pages for all of them in one long call, then answer each "
    "in a short call — cheaper than asking one at a time.",
)
several = state["ask_mode"] == "several"
if not several:
    if known:

        def _pick() -> None:
            picked = state.get("w.quick")
            if picked:
                state["question"] = picked
                page = next((q.page for q in known if q.text == picked), None)
                state["gold_pages"] = str(page) if page else ""

        helper_col.selectbox(
            "Sample questions (answers known: results marked right or wrong)",
            [q.text for q in known],
            index=None,
            placeholder="Pick one of the sample's questions…",
            key="w.quick",
            on_change=_pick,
        )
    S.bound(st.text_area, "Question", "question", height=68, placeholder="What do you want to know?")
else:
    if known and helper_col.button("Use all of the sample's questions", key="all_sample_questions"):
        state["questions_text"] = "\n".join(q.text for q in known)
    S.bound(
        st.text_area,
        "Questions, one per line",
        "questions_text",
        height=140,
        placeholder="One question per line",
    )

group_columns = st.columns([5, 3, 3])  # the paper's six methods need the room
for column, (group, group_label) in zip(group_columns, GROUP_LABELS.items(), strict=True):
    members = [m for m in all_methods() if m.group == group]
    key = S.method_key(group)

    def _methods_changed() -> None:
        state["methods"] = S.chosen_methods()

    with column:
        # Pills, not a multiselect: every chosen method stays on screen, by its whole name,
        # at any width (a multiselect's chips are cut to "Bri…" and scroll out of the box).
        S.bound(
            st.pills,
            group_label,
            key,
            options=[m.name for m in members],
            selection_mode="multi",
            wrap=True,
            format_func=lambda name: get_method(name).label,
            on_change=_methods_changed,
            help="\n\n".join(f"**{m.label}**: {m.summary}" for m in members),
        )


def _variant_name(spec: str) -> str:
    """``R&R k=2`` for ``rr:k=2``: the variant as the user wrote it, by the method's label."""
    method, *changes = spec.split(":")
    try:
        label = get_method(method).label
    except RRError:
        label = method
    return " ".join([label, *changes])


VARIANT_HINT = (
    "Write each setting as k=5000, N=3 or c=40000 ("
    + "; ".join(
        f"{p.symbol}: {p.label.lower()}, {p.minimum:,}–{p.maximum:,}" + (f" {p.unit}" if p.unit else "")
        for p in (PARAMS["reminder_every"], PARAMS["top_k"], PARAMS["chunk_size"])
    )
    + ")."
)
bad_variants = [spec for spec in state["variants"] if S.variant_problem(spec) is not None]
with st.expander("Compare a method with itself at other settings", expanded=bool(bad_variants)):
    st.caption(
        "Add the same method again with its own settings, e.g. R&R at k = 5,000 beside R&R at k = 20,000. "
        + VARIANT_HINT
    )
    add_col, spec_col, button_col = st.columns([2, 2, 1], vertical_alignment="bottom")
    variable = [m.name for m in all_methods() if m.params]
    variant_method = add_col.selectbox(
        "Method",
        variable,
        # The default method that has settings (R&R): the one a variant is usually of.
        index=next((variable.index(n) for n in S.DEFAULT_METHODS if n in variable), 0),
        format_func=lambda n: get_method(n).label,
        key="w.variant_method",
    )
    variant_settings = spec_col.text_input("Settings", placeholder="k=5000", key="w.variant_settings")
    if button_col.button("Add", key="add_variant"):
        spec = ":".join(
            [variant_method, *[p.strip() for p in variant_settings.replace(",", ":").split(":") if p.strip()]]
        )
        problem = S.variant_problem(spec)
        if problem is not None:
            st.error(f"Not added: {md(problem)}.\n\n**What to do:** {VARIANT_HINT}")
        else:
            state["variants"] = [*state["variants"], spec]
    try:  # a variant is shown at the sidebar's settings, as it will run
        around = S.base_settings()
    except RRError:  # a sidebar fault is said where the plans are made
        around = DEFAULTS
    for i, spec in enumerate(list(state["variants"])):
        row = st.columns([4, 1], vertical_alignment="center")
        problem = S.variant_problem(spec)
        if problem is not None:
            row[0].error(
                f"**{md(_variant_name(spec))}** cannot run: {md(problem)}.\n\n**What to do:** remove it and "
                f"add it again with valid settings. {VARIANT_HINT}"
            )
        else:
            variant = parse_spec(spec, around)
            method = get_method(variant.method)
            row[0].markdown(f"{md(method.label)} ({md(method.describe(variant))})")
        if row[1].button("Remove", key=f"remove_variant_{i}"):
            state["variants"] = [v for j, v in enumerate(state["variants"]) if j != i]
            st.rerun()

if several:
    texts = [" ".join(line.split()) for line in str(state["questions_text"]).splitlines() if line.strip()]
else:
    texts = [" ".join(str(state["question"]).split())] if str(state["question"]).strip() else []
known_by_text = {q.text: q for q in known}
specs = S.runnable_specs()  # a variant with bad settings is pointed at above
needs_gold = any(get_method(s.split(":")[0]).needs_gold for s in specs)
typed = [t for t in texts if t not in known_by_text]
if needs_gold and (not several or typed):
    S.bound(
        st.text_input,
        "Gold pages for the Oracle (the page numbers that hold the answer)"
        if not several
        else "Gold pages for the Oracle, for the questions you typed (each sample question uses its own)",
        "gold_pages",
        placeholder="e.g. 62",
        help="The Oracle reads only these pages: the best any method could do. For sample questions they are "
        "filled in"
        + (
            "; with several questions, each sample question's own page is used and these pages serve the "
            "others."
            if several
            else "."
        ),
    )
elif needs_gold and texts:
    pages = [f"p. {known_by_text[t].page}" for t in texts]
    st.caption(
        "The Oracle reads each question's own gold page (where its known answer stands)"
        + (": " + ", ".join(pages) + "." if len(pages) <= 6 else "; the plan below lists them.")
    )
try:
    field_pages = S.base_settings().gold_pages
except RRError as exc:
    results.show_rr_error(exc)
    st.stop()
# With several questions each carries its own gold pages: a sample question its known page, a
# typed one the field's. With one, the field (filled in with a sample question's page) decides.
questions = [
    Question(t, known_by_text[t].answers, (known_by_text[t].page,))
    if t in known_by_text
    else Question(t, (), field_pages if several else ())
    for t in texts
]
if not questions:
    st.info(
        "Type a question to see what each method would send."
        if not several
        else "Type one question per line."
    )
    st.stop()
if not specs:
    st.info("Choose at least one method.")
    st.stop()

# ---- 3. The plans: what each method will send, before any money is spent -------------------

tokens = S.counter()
# The answer check's choice, as last set (its toggle is drawn under the Run row: on a small
# screen Run stays in view on the first open).
verify = S.verify_choice()
try:
    chosen = [s.but(**verify) for s in S.chosen_settings()]
    if several:  # each question's own gold pages, not the field's for all of them
        chosen = [s.but(gold_pages=()) for s in chosen]
    asked = workbench.plan_ask(document, questions, chosen, tokens, window=S.engine().window())
except RRError as exc:
    results.show_rr_error(exc)
    st.stop()

plans: list[Plan] = list(asked.plans)
calls, input_tokens, usd, priced_as = asked.calls, asked.input_tokens, asked.usd, asked.priced_as
run_col, summary_col = st.columns([1, 5], vertical_alignment="center")
clicked = run_col.button("Run", type="primary", key="run", icon=":material/play_arrow:", width="stretch")
summary_col.markdown(
    f"**Before running:** {plural(len(plans), 'run')}, about {plural(calls, 'call')}, "
    f"{input_tokens:,} input tokens, **~${usd:.4f}** priced as {md(priced_as)}"
    + (" (no price data for this model: shown as $0)" if not asked.price_known else "")
    + "."
)
S.verify_widgets()


def _plan_table() -> str:
    """What each method will send, one row a plan, narrow enough for a 1024-pixel window."""
    columns = [
        "Method",
        "Settings",
        "Questions",
        "Calls",
        "Input tokens",
        "Reminders",
        "Chunks",
        "Cost (est.)",
    ]
    rows: list[list[object]] = [
        [
            p.label,
            p.describe,
            len(p.questions),
            p.estimate.calls,
            p.estimate.input_tokens,
            p.reminders,
            len(p.chunks) or None,
            f"${p.estimate.usd:.5f}",
        ]
        for p in plans
    ]
    # A column that would say the same on every row (1 question, no chunks) is left out.
    keep = [i for i, c in enumerate(columns) if not (c == "Questions" and not several)]
    keep = [i for i in keep if not (columns[i] == "Chunks" and not any(p.chunks for p in plans))]
    return table([columns[i] for i in keep], [[row[i] for i in keep] for row in rows], numeric=columns[2:])


window = asked.window
too_long = asked.too_long
if too_long and window:
    st.warning(
        f"{md(', '.join(dict.fromkeys(p.label for p in too_long)))}: the longest prompt is about "
        f"{max(p.largest_prompt for p in too_long):,} tokens, and {md(S.model())} reads at most {window:,}. "
        "These will be refused before anything is sent. A chunked method (Chunked R&R) with a chunk size c "
        f"under {window // 2:,} tokens fits."
    )

with st.expander("What each method will send", expanded=len(plans) <= 4):
    st.markdown(_plan_table())
    estimated = [ph.note for p in plans for ph in p.phases if ph.estimated and ph.note]
    if estimated:
        st.caption(
            "Later phases depend on earlier ones (the pages retrieved, the passages found), so they are "
            "estimated until they run: " + md("; ".join(dict.fromkeys(estimated))) + "."
        )
    if several:
        savings = []
        for s in chosen:
            method = get_method(s.method)
            if not method.several_questions or len(questions) < 2:
                continue
            together = sum(p.estimate.usd for p in plan_questions(document, questions, s, tokens))
            alone = sum(method.plan(document, q.text, s, tokens).estimate.usd for q in questions)
            savings.append(
                f"{method.label}: ${together:.4f} for all {len(questions)} questions in one retrieval pass, "
                f"against ${alone:.4f} asked one at a time ({(1 - together / alone) * 100 if alone else 0:.0f}% less)."
            )
        for line in savings:
            st.caption(md(line))

# ---- 4. Run -------------------------------------------------------------------------------


def _line(event: CallEvent) -> str:
    chunk = f", part {event.chunk}" if event.chunk else ""
    icon = {
        "started": ":material/hourglass_top:",
        "done": ":green[:material/check_circle:]",
        "cached": ":green[:material/inventory_2:]",
        "failed": ":red[:material/error:]",
        "skipped": ":material/block:",
    }.get(event.status, "•")
    text = f"{icon} **{md(event.label)}** — {stage_label(event.stage)}{chunk} ({plural(event.pages, 'page')}): {event.status}"
    if event.message:
        text += f" — {md(short(event.message, 160))}"
    return text


def _signature() -> dict[str, Any]:
    """What the results on screen answer: a change to any of it makes them stale."""
    return {
        "document": document.sha256,
        "questions": [q.text for q in questions],
        "specs": S.chosen_specs(),
        "settings": S.base_settings().but(**S.verify_choice()).to_dict(),
    }


def run() -> None:
    """Run the plans that were shown, with progress per call; keep and store the results."""
    try:
        client = S.new_client()
    except RRError as exc:
        results.show_rr_error(exc)
        return
    with st.status(
        f"Running {plural(len(plans), 'method')}, about {plural(calls, 'call')}…", expanded=True
    ) as status:
        lines: dict[tuple[int, str, int | None], Any] = {}

        def progress(event: CallEvent) -> None:
            key = (event.run, event.stage, event.chunk)
            if key not in lines:
                lines[key] = st.empty()
            lines[key].markdown(_line(event))

        # The plans that were shown are the plans that run; traces come back in their order.
        done = workbench.ask(
            asked,
            client,
            concurrency=S.concurrency(),
            on_event=progress,
            owner=user.current().owner,
            url=user.store_url(),
        )
        traces = done.traces
        failed = [t for t in traces if t.error]
        status.update(
            label=f"Done: {len(traces) - len(failed)} of {plural(len(traces), 'run')} answered",
            state="error" if failed and len(failed) == len(traces) else "complete",
            expanded=False,
        )
    if done.save_error is not None:
        st.warning(
            f"The results could not be saved to the history ({md(done.save_error)}); they are still shown below."
        )
    state["results"] = {
        "batch": done.batch or "unsaved",
        "document_sha256": document.sha256,
        "document": document.name,
        "questions": [q.text for q in questions],
        "signature": _signature(),
        "traces": traces,
    }
    S.session().scroll_to_results = True
    S.session().doc_focus = None  # the Document screen shows this run, not a Review cell


if clicked:
    run()

# ---- 5. Results ---------------------------------------------------------------------------

last: dict[str, Any] | None = state.get("results")
if last is None:
    if not S.provider_info().is_llm:
        st.caption(
            "No key needed: the offline engine runs every method here for free. It is not an LLM, "
            "so it shows how the methods work and what they cost, not how well a model reads."
        )
    st.stop()
traces: list[RunTrace] = last["traces"]
st.subheader("Results", anchor="results")
if last["signature"] != _signature():
    stale_col, clear_col = st.columns([5, 1], vertical_alignment="center")
    stale_col.warning(
        "These results belong to an earlier run: “"
        + md(short(" / ".join(last["questions"]), 120))
        + f"” on {md(last['document'])}. The document, question or settings have changed since; run again to update them."
    )
    if clear_col.button("Clear", key="clear_results"):
        del state["results"]
        st.rerun()
current_doc = document if last["document_sha256"] == document.sha256 else None
engine = (
    f"{traces[0].provider} / {traces[0].model}"
    if traces and traces[0].is_llm
    else "offline engine (not an LLM)"
)
st.caption(f"{md(engine)} · saved to the history as batch `{last['batch']}`")

if len(last["questions"]) > 1:
    results.answers_table(traces, last["questions"], key="answers_table")
    with st.expander("Each answer in full, by question"):
        results.answers_by_question(traces, last["questions"], current_doc)
    with st.expander("Each run: tokens, cost and time"):
        for t in traces:
            with st.container(border=True):
                st.markdown(f"**{md(results.title(t))}** · {plural(len(t.questions), 'question')}")
                if t.error:
                    results.show_trace_error(t)
                results.run_facts(t)
else:
    per_row = min(len(traces), 3)  # three columns fit a laptop screen; more runs wrap
    for start in range(0, len(traces), per_row):
        columns = st.columns(per_row)
        for column, trace in zip(columns, traces[start : start + per_row], strict=False):
            with column, st.container(border=True):
                results.result_card(trace, current_doc)

st.markdown(
    "**Cost by method and stage**"
    if any(t.is_llm for t in traces)
    else "**What the same tokens would cost, by method and stage** (nothing was paid: not an LLM)"
)
st.plotly_chart(
    results.cost_chart(traces), width="stretch", key="cost_chart", config={"displayModeBar": False}
)
if traces and not traces[0].is_llm:
    st.info(
        "**What this comparison can and cannot show.** The offline engine is not a language model: it finds "
        "pages by the question's words, wherever they sit, so it has no 'lost in the middle' for R&R to fix, "
        "and its answers say nothing about how well a model reads. What it does show is the mechanism (how the "
        "reminders keep every page close to the instructions, on the Document screen) and what each method "
        "costs. Whether R&R helps *your* model on *your* document is measured in the Lab, with a real model."
    )
    link_cols = st.columns(2)
    link_cols[0].page_link("pages/document.py", label="See the reminders on the Document screen →")
    link_cols[1].page_link("pages/lab.py", label="Measure it in the Lab →")

downloads = st.container(horizontal=True)
include_prompts = downloads.checkbox("Include prompts in the JSON", key="w.json_prompts")
downloads.download_button(
    "Download JSON",
    to_json(traces, include_prompts=include_prompts),
    "rr-results.json",
    "application/json",
    key="dl_json",
    on_click="ignore",
)
downloads.download_button(
    "Download CSV", to_csv(traces), "rr-results.csv", "text/csv", key="dl_csv", on_click="ignore"
)
downloads.download_button(
    "Download report (Markdown)",
    to_markdown(traces),
    "rr-report.md",
    "text/markdown",
    key="dl_md",
    on_click="ignore",
)
if current_doc is not None:
    downloads.page_link("pages/document.py", label="See what the model saw →")
if S.session().scroll_to_results:
    S.session().scroll_to_results = False
    # Bring the results into view after a run (the page does not scroll by itself).
    st.html(
        "<script>window.parent.document.getElementById('results')?.scrollIntoView({behavior: 'smooth'});</script>",
        unsafe_allow_javascript=True,
    )
