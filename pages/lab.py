"""Lab: measure whether R&R helps *your* model on *your* document, with the cost shown first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pages.common import docs, labcharts, results, sidebar, user
from pages.common import state as S
from pages.common.text import md, plural
from pages.common.work import work_panel
from rr_core import workbench
from rr_core.batching import BatchProgress, batch_line
from rr_core.costs import Mode, price_day
from rr_core.documents import Document
from rr_core.errors import LedgerError, RRError
from rr_core.lab import TASKS, get_task, keep_qa_file, trial_notes, trial_spec
from rr_core.lab.haystacks import CONSTRUCTIONS
from rr_core.lab.presets import PRESETS, default_lengths
from rr_core.lab.report import (
    INTERVAL_RULE,
    METRIC_RULE,
    PAIRED_RULE,
    SENT,
    dumps,
    plain_lines,
    plan_power,
    protocol,
    reminder_notes,
    sweep_csv,
    sweep_json,
    sweep_markdown,
    trials_csv,
)
from rr_core.lab.stats import EFFECTIVE_MARGIN, EFFECTIVE_RULE, MDD_RULE, PRIMARY_RULE, percent, percent_range
from rr_core.lab.sweep import SweepPlan, SweepResult
from rr_core.llm import DEFAULT_PRICE_MODEL, REGISTRY, get_provider
from rr_core.llm.base import temperature_sent
from rr_core.methods import all_methods, get_method, parse_spec
from rr_core.questions import Question, parse_questions
from rr_core.settings import LAYOUTS, PromptProtocol, QuestionPlacement
from rr_core.store import WorkRecord
from rr_core.tokens import counter_for_model
from rr_core.workbench import SweepWork

sidebar.page_setup()
state = st.session_state
st.title("Lab: does R&R help here?")
st.caption(
    "The papers behind R&R are measurements: accuracy by where the answer sits and by how long the document "
    "is. The Lab runs that measurement on your document and your model: it plants facts no model can know at "
    "chosen depths, asks for them, and scores every method — cost shown first, never paid twice."
)

# ---- Engine ----------------------------------------------------------------------------------

# "provider": the model chosen in the sidebar; otherwise a free engine of the registry (the
# simulated reader first: it is the one with a middle to lose).
PROVIDER = "provider"
FREE_ENGINES = sorted((p for p in REGISTRY.values() if p.free), key=lambda p: p.in_app)
ENGINES = {PROVIDER: "The model chosen in the sidebar"} | {p.name: p.engine_label for p in FREE_ENGINES}
engine_options = [p.name for p in FREE_ENGINES] + ([PROVIDER] if S.provider_info().is_llm else [])
lab = S.session().lab
if not lab.engine:
    lab.engine = PROVIDER if S.provider_info().is_llm else FREE_ENGINES[0].name
if lab.engine not in engine_options:
    lab.engine = engine_options[0]
engine_col, preset_col = st.columns(2)
with engine_col:
    S.bind(
        st.selectbox,
        "Measure with",
        lab,
        "engine",
        key="lab_engine",
        options=engine_options,
        # Labels made now: a format function that read the session later would fail where
        # it is called outside a script run (AppTest formats values that way).
        format_func={
            e: ENGINES[e] + (f": {S.provider()} / {S.model()}" if e == PROVIDER else "")
            for e in engine_options
        }.__getitem__,
    )
    engine = lab.engine
    # The engine that measures: the sidebar's provider, or a free engine of the registry.
    measured = S.provider_info() if engine == PROVIDER else get_provider(engine)
    if measured.lab_info:
        st.info(measured.lab_info)
with preset_col:
    S.bind(
        st.selectbox,
        "Measurement",
        lab,
        "preset",
        key="lab_preset",
        options=list(PRESETS),
        format_func=lambda p: PRESETS[p].title,
    )
    preset = PRESETS[lab.preset]
    st.caption(md(preset.description))
    st.caption(f"**Measured on:** {md(get_task(preset.task).label)}.")
    st.caption(f"**Where the question goes** ({md(preset.layout.value)}): {md(preset.why)}")

# ---- What to measure on ----------------------------------------------------------------------

document: Document | None = None
qa_path: Path | None = None
qa_digest = ""  # the QA file's content
own_questions: tuple[Question, ...] = ()
task = preset.task
lab_task = get_task(task)
if lab_task.needs_document:
    try:
        document = docs.active_document()
    except RRError as exc:
        results.show_rr_error(exc)
        st.stop()
    st.caption(
        f"Facts are planted in **{md(document.name)}** ({plural(len(document.pages), 'page')}, "
        f"{document.total_tokens:,} tokens; choose another on the Ask screen), cut or repeated to each length."
    )
    own = st.file_uploader(
        "Or measure on your own questions about it (CSV: question, answers, gold_pages)",
        type=["csv"],
        key="w.lab_csv",
    )
    if own is not None:
        try:
            own_questions = tuple(parse_questions(own.getvalue().decode("utf-8-sig"), name=own.name))
        except (RRError, UnicodeDecodeError) as exc:
            st.error(md(exc))
            st.stop()
        task = next(t.name for t in TASKS.values() if t.needs_questions)
        lab_task = get_task(task)
        st.caption(
            f"{plural(len(own_questions), 'question')} read from {md(own.name)}: each is asked of the whole document."
        )
elif lab_task.reads_file:
    qa = st.file_uploader(
        lab_task.file_prompt,
        type=["jsonl", "gz", "json"],
        key=f"w.lab_{task}_file",
    )
    if qa is None and lab_task.needs_file:
        st.info(
            "The product ships no third-party data: point it at a QA file (for example NaturalQuestions-Open's "
            "20-document file; with the oracle file, the distracters are other questions' passages ranked by BM25)."
        )
        st.stop()
    if qa is not None:
        try:
            qa_path, qa_digest = keep_qa_file(qa.name, qa.getvalue())
        except (RRError, OSError) as exc:  # a temp folder another user owns, a full disk
            st.error(f"{md(qa.name)} could not be kept for the sweep: {md(exc)}")
            st.stop()
        if lab_task.pairs and lab.kv_file != qa.name:
            lab.kv_file = qa.name
            lab.lengths = ""  # each row's own number of pairs, unless the user cuts it

# ---- The grid --------------------------------------------------------------------------------

if lab.grid_for != preset.name:
    # A new preset starts from its own methods, grid and question placement.
    lab.grid_for = preset.name
    lab.layout = preset.layout.value
    lab.methods = ", ".join(preset.series)
    start = preset.lengths or (default_lengths(document.total_tokens) if document else (10_000,))
    lab.lengths = "" if lab_task.pairs and qa_path else ", ".join(f"{n}" for n in start)
    lab.depths = "" if preset.depth_step_tokens else ", ".join(f"{d:g}" for d in preset.depths)
    lab.repeats = preset.repeats
with st.expander("Methods and grid", expanded=True):
    S.bind(
        st.text_input,
        "Methods (a method may carry its own settings: rr:k=5000)",
        lab,
        "methods",
        key="lab_methods",
        help="Names: "
        + ", ".join(m.name for m in all_methods() if m.group != "bounds")
        + ". Closed-book and oracle run once per question as the bounds.",
    )
    grid_cols = st.columns(3)
    with grid_cols[0]:
        S.bind(
            st.text_input,
            "Lengths ("
            + ("key–value pairs" if lab_task.pairs else "tokens")
            + ("; empty: all of the file's" if lab_task.pairs and qa_path else "")
            + ")",
            lab,
            "lengths",
            key="lab_lengths",
            disabled=not lab_task.grid,
        )
    with grid_cols[1]:
        S.bind(
            st.text_input,
            "Depths (% of the document)",
            lab,
            "depths",
            key="lab_depths",
            placeholder="every 10k tokens (the paper's grid)"
            if preset.depth_step_tokens
            else "0, 25, 50, 75, 100",
            disabled=not lab_task.grid,
        )
    with grid_cols[2]:
        S.bind(
            st.number_input,
            "Repeats per cell",
            lab,
            "repeats",
            key="lab_repeats",
            min_value=1,
            max_value=100,
            step=1,
        )
    option_cols = st.columns(3)
    paraphrase = option_cols[0].checkbox(
        "Paraphrased questions",
        key="w.lab_paraphrase",
        help="Little word overlap with the fact: lexical search cannot shortcut it.",
        disabled=not lab_task.plants,
    )
    distracters = option_cols[1].slider(
        "Distracters",
        0,
        3,
        0,
        key="w.lab_distracters",
        help="Near-copies of the fact with other values, elsewhere in the document.",
        disabled=not lab_task.plants,
    )
    with_bounds = option_cols[2].checkbox(
        "Closed-book and oracle bounds", value=preset.bounds, key="w.lab_bounds"
    )
    S.bind(
        st.selectbox,
        "Where the question goes",
        lab,
        "layout",
        key="lab_layout",
        options=[p.value for p in LAYOUTS],
        format_func={p.value: p.label[0].upper() + p.label[1:] for p in LAYOUTS}.__getitem__,
        help="The preset's choice and its reason are stated under the preset. A method that cannot take "
        "it (the cheap baselines are a layout each; reminders and BriefContext need the question first) "
        "keeps its own, as stated before running.",
    )
    S.bind(
        st.selectbox,
        "Prompts",
        lab,
        "protocol",
        key="lab_protocol",
        options=[p.value for p in PromptProtocol],
        format_func={p.value: p.label[0].upper() + p.label[1:] for p in PromptProtocol}.__getitem__,
        help="JSON with quotes is what the Ask and Review screens send. The paper's protocol reproduces the "
        "R&R paper's measurement: its prompt structure with a plain-text answer, scored by the reference "
        "metric of its Table 1 beside the strict one, with failed runs counted as wrong.",
    )
    S.bind(
        st.number_input,
        "Budget cap (USD): refuse to start above it, and send no call that would pass it (0: no cap)",
        lab,
        "budget",
        key="lab_budget",
        min_value=0.0,
        step=1.0,
        format="%.2f",
    )


def _numbers(text: str, kind: type) -> tuple[Any, ...]:
    return tuple(kind(x.strip().replace("_", "")) for x in str(text).split(",") if x.strip())


prompts = PromptProtocol(lab.protocol or PromptProtocol.JSON.value)
base = S.base_settings().but(question_placement=QuestionPlacement(lab.layout), protocol=prompts)
try:
    specs = [m.strip() for m in lab.methods.split(",") if m.strip()]
    if prompts is not PromptProtocol.JSON:  # in each spec, so that a queued sweep keeps it too
        specs = [m if "protocol=" in m else f"{m}:protocol={prompts.value}" for m in specs]
    series = [parse_spec(m, base) for m in specs]
    lengths: tuple[int, ...] | None = _numbers(lab.lengths, int) or None
    depth_text = lab.depths.strip()
    depths = _numbers(depth_text, float) if depth_text else None
except (ValueError, RRError) as exc:
    st.error(f"Methods, lengths and depths must be lists separated by commas ({md(exc)}).")
    st.stop()

token_model = S.token_model() if engine == PROVIDER else DEFAULT_PRICE_MODEL
counter = S.counter() if engine == PROVIDER else counter_for_model(token_model)
try:
    spec = trial_spec(
        preset,
        document,
        task=task,
        lengths=lengths,
        repeats=int(lab.repeats),
        paraphrase=bool(paraphrase),
        distracters=int(distracters),
        qa_file=qa_path,
        questions=own_questions,
    )
    # Planned again only when something it is planned from changed (the day too: its prices).
    made_from = (
        spec, qa_digest, preset, document.sha256 if document is not None else "", tuple(series), counter,
        depths, bool(with_bounds), lab.layout, price_day(),
    )  # fmt: skip
    planned = S.session().lab_planned
    if planned is None or planned.made_from != made_from:
        planned = S.LabPlanned(
            made_from,
            *workbench.plan_measurement(
                spec,
                preset,
                document,
                series,
                counter,
                depths=depths,
                bounds=with_bounds,
                layout=QuestionPlacement(lab.layout),
            ),
        )
        S.session().lab_planned = planned
    trials, plan = planned.trials, planned.plan
except RRError as exc:
    results.show_rr_error(exc)
    st.stop()

# ---- Before running ----------------------------------------------------------------------------

free = measured.free
# Batches: a provider that sells them at a discount, or a free engine (answered in this process).
batchable = measured.can_batch or free
if not batchable:
    lab.mode = "now"
MODES = {"now": "Now (every call at once, list price)", "batch": "In batches (half price, within 24 h)"}
if batchable:
    S.bind(
        st.radio,
        "Send",
        lab,
        "mode",
        key="lab_mode",
        options=list(MODES),
        format_func=MODES.__getitem__,
        horizontal=True,
        help="A batch sweep sends each phase's calls as one provider batch and waits for it: the provider "
        "answers within 24 hours at half the price. Stopped and started again, it polls the batches it "
        "submitted instead of paying again.",
    )
    if free:
        st.caption(
            "A free engine has no provider batch: 'in batches' answers every call here, in this process, to "
            "show the machinery. It saves nothing — nothing is paid either way."
        )
else:
    st.caption(
        f"Sent now: batches are not offered for {md(measured.label)} in this version"
        + (" (this engine sells no batches)." if measured.local else ".")
    )
mode: Mode = "batch" if lab.mode == "batch" else "now"
would = "would cost" if free else "expected"
# Three figures side by side, each in a box whose label wraps (a metric's label is cut short
# on a small screen).
ESTIMATES = (
    ("Now, list price, no cache" + (" (would cost)" if free else " — the ceiling"), plan.cost),
    (f"Now, with prompt cache ({would})", plan.cached_cost),
    (f"In batches, with prompt cache ({would})", plan.batch_cost),
)
for column, (label, figure) in zip(st.columns(3), ESTIMATES, strict=True):
    column.container(border=True).markdown(f"{label}\n\n#### \\${figure.total_usd:.2f}")
run_col, summary_col = st.columns([3, 7], vertical_alignment="center")
# Team mode: a sweep runs on the workers (it outlives the tab and the replica); here, in the page.
on_workers = workbench.runs_on_workers(user.store_url())
clicked = run_col.button(
    "Send to the workers" if on_workers else "Run the measurement",
    type="primary",
    key="lab_run",
    width="stretch",
)
summary_col.markdown(
    f"**Before running:** {plural(len(plan.trials), 'trial')} × methods = {plural(len(plan.jobs), 'run')}, "
    f"about {plural(plan.calls, 'call')} and {plan.input_tokens:,} input tokens "
    f"({plan.cacheable_tokens:,} in prefixes shared with another call): **~${plan.usd_for(mode):.2f}** "
    f"{'in batches' if mode == 'batch' else 'now'} as {md(plan.priced_as)}"
    + (" — free here (not an LLM); that is what the same tokens would cost." if free else ".")
    + (" The budget cap is checked against this figure." if not free else "")
    + " Calls already in the run store are not paid again."
)
power = plan_power(plan)
st.caption(f"**Can show:** {md(power['text'])}", help=MDD_RULE)
made = protocol(plan)
for name in made["construction"]:
    st.caption(f"**Distracters** ({md(name)}): {md(CONSTRUCTIONS[name])}.")
if made["answer_passages_dropped"]:
    dropped = made["answer_passages_dropped"]
    st.caption(
        f"**Answer-bearing passages left out:** {dropped['passages']:,} over "
        f"{plural(dropped['questions'], 'question')} (each held an accepted answer but was not the gold)."
    )
for note in trial_notes(spec, plan.trials):
    st.caption(f"**Note:** {md(note)}")
for series_label, used in made["question_placement"].items():
    if used != made["layout"]:
        st.caption(
            f"**{md(series_label)}** uses {md(used)}: {md(made['question_placement_why'][series_label])}."
        )
for name, means in made["prompt_protocol_means"].items():
    st.caption(f"**Prompt protocol:** {md(name)}: {md(means)}; failed runs {md(made['failed_runs'])}.")
if made["scored_by"].startswith("exact"):
    st.caption("**Scored by** exact match on the value: the whole value must come back.")
lengths_used = sorted({t.length for t in plan.trials})
st.caption(
    f"Lengths {', '.join(f'{n:,}' for n in lengths_used)}; depths "
    + ", ".join(f"{d:g}%" for d in sorted({t.depth for t in plan.trials}))
    + (f" (every {preset.depth_step_tokens:,} tokens)" if preset.depth_step_tokens and depths is None else "")
    + f"; methods: {md(', '.join(get_method(s.method).label + ('' if not get_method(s.method).describe(s) else ' (' + get_method(s.method).describe(s) + ')') for s in series))}."
    + (
        f" Planted facts: {plan.planted_facts[0]:,}, {plan.planted_facts[1]:,} drawn again because the "
        "document itself stated an answer or named the fact's subject."
        if plan.planted_facts[0]
        else ""
    )
)


def _client() -> Any:
    if engine == PROVIDER:
        return S.new_client()
    return workbench.Engine.choose(engine).client(counter)


unpriced = not free and (plan.price_assumed or not plan.cost.known) and float(lab.budget) > 0
if unpriced:
    st.warning(
        f"No price is known for {md(plan.priced_as)}, so the budget cap could be passed unseen: name the "
        "model whose prices the server charges under 'Price as' in the sidebar, or set the budget to 0 "
        "(no cap) to run anyway."
    )


def _submit() -> None:
    """Queue the sweep for the workers, as plain data (the document by hash, or the sample)."""
    if qa_path is not None or (document is not None and document.password):
        st.error(
            "The workers read documents from the store and cannot take a Lost-in-the-Middle file or an "
            "encrypted PDF: run this one from the command line on a machine that has the file."
        )
        return
    session = S.session()
    store = user.history()
    sha, sample = "", ""
    if document is not None and st.session_state.get("source") == "upload" and session.upload is not None:
        sha = store.put_document(session.upload.data, session.upload.name)
    elif document is not None:
        sample = session.sample
    settings = engine_choice()
    work = SweepWork(
        preset=preset.name, series=tuple(specs), provider=settings.provider, model=settings.model,
        price_model=settings.price_model, base_url=settings.base_url, task=task, lengths=lengths,
        repeats=int(lab.repeats), paraphrase=bool(paraphrase), distracters=int(distracters),
        questions=tuple((q.text, q.answers, q.gold_pages) for q in own_questions), depths=depths,
        bounds=with_bounds, layout=lab.layout, document_sha256=sha, sample=sample, mode=mode,
        max_usd=float(lab.budget) if not free and float(lab.budget) > 0 else None, concurrency=S.concurrency(),
    )  # fmt: skip
    sent = workbench.submit_measurement(work, store=store, owner=user.current().owner, url=user.store_url())
    if not sent.new:
        st.info(
            "The same measurement (these trials, methods and model) is already queued or running: it was "
            "not sent again, since it would ask, and pay for, the same calls twice. Its progress is below."
        )
        return
    st.success("Sent to the workers: its progress is below, and stays there when this tab closes.")


def engine_choice() -> workbench.Engine:
    """The engine the sweep runs on, without a key (the workers use theirs)."""
    if engine == PROVIDER:
        chosen = S.engine()
        return workbench.Engine(chosen.provider, chosen.model, chosen.price_model, base_url=chosen.base_url)
    return workbench.Engine.choose(engine, price_model=DEFAULT_PRICE_MODEL)


def _show_work(record: WorkRecord) -> None:
    """A finished sweep's results, from the runs its work stored as they finished (one read; no
    call, no client)."""
    work = SweepWork.from_dict(record.spec)
    try:
        shown_document, shown_plan, finished = work.stored(user.history(), record.work_id, record.result)
    except (RRError, LedgerError) as exc:
        results.show_rr_error(exc)
        return
    if not finished.scores and not finished.bound_scores:
        st.info(
            "This sweep recorded no finished run to show. Resume it, or run the same sweep again here: "
            "calls already answered come from the store, paid nothing twice."
        )
        return
    state["lab_result"] = {
        "plan": shown_plan,
        "result": finished,
        "engine": f"{work.provider} / {work.model}" + ("" if finished.is_llm else " (not an LLM)"),
        "note": f"{work.provider} / {work.model} — run on the workers",
        "records": {
            "engine": work.provider,
            "is_llm": int(finished.is_llm),
            "seed": work.seed,
            # Each trial's row says what its calls were sent with; a free engine is deterministic.
            "temperature": "" if finished.is_llm else "deterministic engine",
        },  # fmt: skip
        "document": shown_document.name
        if shown_document is not None
        else get_task(work.task or "planted").label,
        "title": PRESETS[work.preset].title,
        "mode": work.mode,
        # What the work paid, as it recorded it.
        "paid": _paid_by_work(record),
    }
    st.rerun()


def _paid_by_work(record: WorkRecord) -> tuple[float, str] | None:
    """What a work recorded it paid and may have been billed; None when it recorded nothing."""
    stored = record.result or {}
    paid = stored.get("paid_usd")
    if not isinstance(paid, (int, float)):
        return None
    return float(paid), str(stored.get("possibly_billed") or "")


if clicked and on_workers:
    try:
        workbench.check_sweep_budget(
            plan, float(lab.budget) if not free and float(lab.budget) > 0 else None, mode
        )
        _submit()
    except (RRError, LedgerError) as exc:
        results.show_rr_error(exc)
    clicked = False
work_panel("sweep", "Sweeps on the workers", on_show=_show_work)

if clicked:
    # A free engine pays nothing: no budget to keep (0: no cap).
    max_usd = float(lab.budget) if not free and float(lab.budget) > 0 else None
    try:
        workbench.check_sweep_budget(plan, max_usd, mode)  # refuses an unknown price too
        client = _client()
        store = user.history()
    except (RRError, LedgerError) as exc:
        results.show_rr_error(exc)
        st.stop()
    bar = st.progress(0.0, text="Starting…")
    live = st.empty()

    def progress(done: int, total: int, partial: SweepResult) -> None:
        bar.progress(
            done / total,
            text=f"{done} of {total} runs · {partial.calls_made} calls made, "
            f"{partial.calls_cached} found in the store",
        )

    st.caption(
        "Leaving this screen or pressing Stop in the top corner stops the sweep; everything finished is kept."
    )

    def batch_progress(progress: BatchProgress) -> None:
        live.info(
            md(batch_line(progress))
            + (
                " — Anthropic counts a batch's answers only when it ends, so 0 done while in progress is normal."
                if progress.state == "in_progress" and not progress.done
                else ""
            )
        )

    window = S.engine().window() if engine == PROVIDER else None
    finished = workbench.sweep(
        plan,
        client,
        concurrency=S.concurrency(),
        window=window,
        max_usd=max_usd,
        store=store,
        on_progress=progress,
        mode=mode,
        label=f"Lab sweep · {preset.name}",
        on_batch=batch_progress,
    )
    bar.empty()
    live.empty()
    state["lab_result"] = {
        "plan": plan,
        "result": finished,
        "engine": ENGINES[engine] + (f": {S.provider()} / {S.model()}" if engine == PROVIDER else ""),
        # The second line of every chart's title: a saved picture of a free engine cannot pass for a model's.
        "note": measured.note or f"{S.provider()} / {S.model()}",
        "records": {
            "engine": measured.name,
            "is_llm": int(client.is_llm),
            "seed": spec.seed,
            "temperature": temperature_sent(client),
        },
        "document": document.name if document else lab_task.label,
        "title": preset.title,
        "mode": mode,
    }

# ---- Batches in the run store ------------------------------------------------------------------


def _batch_rows() -> list[dict[str, Any]]:
    try:
        return workbench.batch_records(store=user.history())
    except (RRError, LedgerError):
        return []


def _show_batches() -> None:
    records = _batch_rows()
    if not records:
        st.caption("No batches in the run store yet: a sweep sent in batches records each one here.")
        return
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "State": str(b["state"]).replace("_", " "),
                    "Done": f"{b['done']:,} of {b['total']:,}",
                    "Failed": b["failed"],
                    "Label": b["label"],
                    "Waited": b["waited"],
                    "Submitted": str(b["created_at"])[:19].replace("T", " "),
                    "Batch": b["batch_id"],
                }
                for b in records
            ]
        ),
        hide_index=True,
        width="stretch",
        key="lab_batches",
    )
    still_open = sum(1 for b in records if b["open"])
    if still_open:
        st.caption(
            f"{plural(still_open, 'batch')} still open (this list refreshes itself). Some providers count a "
            "batch's answers only when it ends. To collect an open batch, run the same sweep again: it polls "
            "the recorded batch and pays nothing twice."
        )
    else:
        st.caption("Every batch here has ended; a sweep run again finds its answers in the run store.")


with st.expander("Batches in the run store", expanded=any(b["open"] for b in _batch_rows())):
    st.caption(
        "Read from the run store, so closing this tab loses nothing: batches keep going at the provider, "
        "and this list shows where each stands whenever the Lab is opened again."
    )
    st.fragment(_show_batches, run_every=5 if any(b["open"] for b in _batch_rows()) else None)()

# ---- Results ---------------------------------------------------------------------------------

saved = state.get("lab_result")
if saved is None:
    st.stop()
plan_done: SweepPlan = saved["plan"]
result: SweepResult = saved["result"]
st.subheader(md(saved["title"]))
# A sweep run on the workers and shown again here: what they paid, as they recorded it.
paid_usd, possibly_billed = saved.get("paid") or (result.paid_usd(), result.possibly_billed)
st.caption(
    f"{md(saved['engine'])} on {md(saved['document'])} · sent {md(SENT[saved.get('mode', 'now')])} · "
    f"{plural(result.calls_made, 'call')} made, "
    f"{result.calls_cached} found in the store · "
    + (f"{result.calls_shared} shared with a call in flight · " if result.calls_shared else "")
    + (
        "paid: price unknown (no price is known for this model)"
        if result.is_llm and not plan_done.summary()["price_known"]
        else f"${paid_usd:.4f} paid" + (f", and {md(possibly_billed)}" if possibly_billed else "")
        if result.is_llm
        else f"nothing paid (the engine is free); the same calls would cost ${result.would_cost_usd():.4f}"
    )
)
if result.stopped:
    st.warning(f"**Stopped:** {md(result.stopped)}")
if result.failures:
    st.warning(
        f"{plural(len(result.failures), 'run')} failed and are left out of the cells they belong to: "
        + md("; ".join(result.missing_cells[:8]))
        + ". Run again to fill them in (finished calls are not paid again)."
    )
summaries = result.summaries
bounds = result.bounds
note = str(saved.get("note", ""))
several_lengths = len(result.lengths) > 1
plain = plain_lines(plan_done, result)
if plain:
    st.markdown("**In plain words**\n\n" + "\n".join(f"- {md(line)}" for line in plain))
# The first view: what each method got right, what it cost, and whether it is worth its cost;
# counts, calls, tokens and effective length are under the statistics. Widths are set: auto
# widths sized to long series names pushed cost and frontier out of a 1024-pixel window.
COST = "Would cost (USD)" if free else "Cost (USD)"
st.dataframe(
    pd.DataFrame(
        [
            {
                "Method": s.series,
                "Right": percent(s.accuracy),
                "95% interval": percent_range(s.accuracy, s.ci),
                COST: round(s.cost_usd, 4),
                "Frontier": "yes" if s.on_frontier else "",
            }
            for s in [*summaries, *bounds]
        ]
    ),
    hide_index=True,
    width="stretch",
    key="lab_summary",
    column_config={
        "Method": st.column_config.TextColumn(width=190),
        "Right": st.column_config.TextColumn(width=60),
        "95% interval": st.column_config.TextColumn(width=100),
        COST: st.column_config.NumberColumn(width=125),
        "Frontier": st.column_config.TextColumn(width=70),
    },
)
st.caption(
    "Frontier: no other method scored at least as high for less (point estimates: the sentences above say "
    "which differences could be chance)."
)
st.plotly_chart(
    labcharts.accuracy_by_position(result.by_depth, result.by_distance, bounds, note=note),
    width="stretch",
    key="lab_depth",
)
st.caption(
    "Lines: closed-book and oracle, once per question. Points of different methods at one depth are set "
    "slightly apart so their intervals do not overlap. " + INTERVAL_RULE
)
with st.expander("The statistics: counts, intervals and paired tests"):
    table = pd.DataFrame(
        [
            {
                "Method": s.series,
                "Trials": s.trials,
                "Questions": s.questions,
                "Accuracy": percent(s.accuracy),
                "95% interval": percent_range(s.accuracy, s.ci),
                **(
                    {"Effective length": s.effective.text() if s.effective is not None else "—"}
                    if several_lengths
                    else {}
                ),
                "Calls / trial": round(s.calls_per_trial, 1),
                "Tokens in / trial": round(s.input_per_trial),
                ("Would cost (USD)" if free else "Cost (USD)"): round(s.cost_usd, 5),
                "Frontier": "yes" if s.on_frontier else "",
            }
            for s in [*summaries, *bounds]
        ]
    )
    st.dataframe(table, hide_index=True, width="stretch", key="lab_table")
    notes = [METRIC_RULE]
    if several_lengths:
        floor = result.closed_book
        notes.append(
            EFFECTIVE_RULE
            + (
                f" Closed-book here: {floor:.0%}, so the floor is {floor + EFFECTIVE_MARGIN:.0%}."
                if floor is not None
                else " Closed-book not measured here: the floor is 20%."
            )
            + "".join(f" {s.series}: {s.effective.why()}." for s in summaries if s.effective is not None)
        )
    st.caption(" ".join(notes))
    compared = result.comparisons
    if compared:
        st.markdown("**Paired differences** (the same trials, method against method)")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "Method": c.series,
                        "Against": c.against,
                        "Primary": "yes" if c.primary else "",
                        "Paired trials": c.trials,
                        "Questions": c.questions,
                        "Difference": c.difference_points(),
                        "95% interval": c.interval_points(),
                        "Only this right": c.only_series,
                        "Only the other right": c.only_against,
                        "McNemar p (questions)": f"{c.p_value:.3g}",
                        "Holm p": "" if c.p_adjusted is None else f"{c.p_adjusted:.3g}",
                    }
                    for c in compared
                ]
            ),
            hide_index=True,
            width="stretch",
            key="lab_paired",
        )
        st.markdown("\n".join(f"- {md(c.sentence())}" for c in compared))
        st.caption(PAIRED_RULE + " " + PRIMARY_RULE)
cell_reminders = reminder_notes(plan_done)
with st.expander("Every cell: accuracy, interval and n"):
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "Method": c.series,
                    "Length": c.length,
                    "Depth (%)": c.depth,
                    "Tokens to the end": round(c.distance),
                    "Trials": c.trials,
                    "Questions": c.questions,
                    "Accuracy": percent(c.accuracy),
                    "95% interval": percent_range(c.accuracy, c.interval),
                    "Failed": c.failed,
                    "Reminders": cell_reminders.get((c.series, c.length), ""),
                }
                for c in result.cells
            ]
        ),
        hide_index=True,
        width="stretch",
        key="lab_cells",
    )
if several_lengths:
    st.plotly_chart(
        labcharts.heatmaps(result.cells, note=note, reminders=cell_reminders),
        width="stretch",
        key="lab_heatmap",
    )
st.plotly_chart(labcharts.cost_accuracy(summaries, note=note), width="stretch", key="lab_cost")
if any(s.retrieves for s in summaries):
    st.plotly_chart(labcharts.failure_split(summaries, note=note), width="stretch", key="lab_failures")
else:
    st.caption(
        "No method here picks pages before answering, so its wrong answers have no retrieval/reading split."
    )
sent: Mode = "batch" if saved.get("mode") == "batch" else "now"
data = sweep_json(
    plan_done, result, context={"engine": saved["engine"], "document": saved["document"], "mode": sent}
)
downloads = st.container(horizontal=True)
downloads.download_button(
    "Download JSON", dumps(data), "rr-lab.json", "application/json", key="lab_json", on_click="ignore"
)
downloads.download_button(
    "Download CSV (cells)", sweep_csv(result), "rr-lab.csv", "text/csv", key="lab_csv_dl", on_click="ignore"
)
downloads.download_button(
    "Download CSV (every trial)",
    trials_csv(plan_done, result, context=saved.get("records")),
    "rr-lab-trials.csv",
    "text/csv",
    key="lab_trials_dl",
    on_click="ignore",
)
downloads.download_button(
    "Download report (Markdown)",
    sweep_markdown(
        plan_done,
        result,
        title=saved["title"],
        engine=saved["engine"],
        document=saved["document"],
        mode=sent,
    ),
    "rr-lab.md",
    "text/markdown",
    key="lab_md",
    on_click="ignore",
)
