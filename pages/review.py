"""Review: many documents × a list of questions, one table of cited answers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from pages.common import docs, results, reviewgrid, sidebar, user
from pages.common import state as S
from pages.common.state import DocFocus, ReviewRun
from pages.common.text import md, plural, short
from pages.common.work import where_it_runs, work_panel
from rr_core import workbench
from rr_core.costs import Mode
from rr_core.documents import ocr_available
from rr_core.errors import LedgerError, RRError
from rr_core.jobs import Job
from rr_core.methods import all_methods, parse_spec
from rr_core.review import (
    COMPARE,
    MAIN,
    AnswerKey,
    AnswerType,
    Cell,
    Column,
    CorpusFile,
    ReviewPlan,
    columns_csv,
    columns_from_rows,
    items_from_uploads,
    iter_grid,
    parse_answer_key,
    parse_columns,
    retry_jobs,
    scores,
)
from rr_core.review.columns import COLUMN_FIELDS
from rr_core.review.corpus import Passwords
from rr_core.review.decisions import (
    ABSENT,
    ACCEPTED,
    CORRECTED,
    ReviewDecision,
    answer_key_csv,
    apply_decisions,
    reviewed_words,
    to_check,
)
from rr_core.review.export import review_csv, review_json, review_xlsx
from rr_core.review.sample import sample_corpus
from rr_core.store import WorkRecord
from rr_core.traces import RunTrace
from rr_core.work import ReviewWork, grid_results

sidebar.page_setup()
state = st.session_state
review = S.session().review
st.title("Review: many documents, one table of cited answers")
st.caption(
    "The same questions asked of every document: one row per document, one column per question, each "
    "cell a typed answer with the passage it rests on. R&R asks all the questions in one pass over each "
    "document, then one short call per question, so reading the whole document stays affordable."
)

UPLOAD_TYPES = ["pdf", "docx", "txt", "text", "md", "html", "htm", "zip"]
FIELDS = COLUMN_FIELDS

# ---- 1. The corpus -----------------------------------------------------------------------------

st.subheader("1. Documents")
SOURCES = {
    "sample": "Use the sample corpus (generated contracts, no key needed)",
    "upload": "Upload files (PDF, DOCX, TXT, HTML, or a ZIP of them)",
}
S.bind(
    st.radio,
    "Corpus",
    review,
    "source",
    key="review_source",
    options=list(SOURCES),
    format_func=SOURCES.__getitem__,
    horizontal=True,
    label_visibility="collapsed",
)


def _rows_of(columns: Sequence[Column]) -> list[dict[str, str]]:
    return S.column_rows(columns)


def _read_files(items: Sequence[Any], passwords: Passwords | None = None) -> list[CorpusFile]:
    """Read files into the document store, with a progress bar (OCR as chosen below; a file
    not read says what to do on this screen)."""
    bar = st.progress(0.0, text=f"Reading {plural(len(items), 'file')}…")

    def on_file(done: int, total: int, f: CorpusFile) -> None:
        bar.progress(done / total, text=f"Read {done} of {total}: {f.name}")

    try:
        files = workbench.read_review_corpus(
            list(items),
            model=S.token_model(),
            processes=1 if len(items) < 8 else None,
            on_file=on_file,
            store=user.history(),
            ocr=review.ocr,
            passwords=passwords,
            where="screen",
        )
    except (RRError, LedgerError) as exc:
        bar.empty()
        results.show_rr_error(exc)
        st.stop()
    bar.empty()
    return files


def _read(items: Sequence[Any], problems: Sequence[CorpusFile], read_for: str) -> None:
    """Read the files once into the document store; keep their summaries."""
    files = _read_files(items)
    review.files = (*files, *problems)
    review.read_for = read_for
    review.selected = None
    review.tried, review.ocr_tried = {}, set()


def _read_again(names: set[str], passwords: Passwords | None = None) -> None:
    """Read these files of the corpus again, in their places (a password entered, OCR turned on)."""
    items, _ = items_from_uploads((f.name, f.getvalue()) for f in uploaded or [])
    again = [item for item in items if item.name in names]
    if again:
        read = {f.name: f for f in _read_files(again, passwords)}
        review.files = tuple(read.get(f.name, f) for f in review.files)


uploaded: list[Any] | None = None
if review.source == "sample":
    sample = sample_corpus()
    st.caption(f"**Generated, not real documents:** {md(sample.description)}")
    if review.read_for != "sample":
        _read(sample.items, (), "sample")
        if review.columns_for != "sample":
            review.column_rows = _rows_of(sample.columns)
            review.editor_version += 1
            review.columns_for = "sample"
        review.key_csv, review.key_name = sample.answers_csv, "the generator's answer key (sample corpus)"
else:
    uploaded = st.file_uploader(
        "Documents", type=UPLOAD_TYPES, accept_multiple_files=True, key="w.review_files"
    )
    read_for = ",".join(f.file_id for f in uploaded or [])
    if not uploaded and review.files and review.read_for not in ("", "sample"):
        # The uploader forgets its files when the screen is left; the corpus read stays.
        st.caption(
            f"The {plural(len(review.files), 'file')} read earlier are kept (their documents are in the "
            "store); upload files to review others."
        )
    elif not uploaded:
        st.info("Upload documents, or use the sample corpus.")
        st.stop()
    elif review.read_for != read_for:
        items, problems = items_from_uploads((f.name, f.getvalue()) for f in uploaded)
        if review.key_name.endswith("(sample corpus)"):
            review.key_csv = review.key_name = ""
        _read(items, problems, read_for)

files = review.files
readable = [f for f in files if f.ok]
unread = [f for f in files if not f.ok]
st.dataframe(
    pd.DataFrame(
        [
            {
                "File": f.name,
                "Read": "yes" if f.ok else ("copy" if f.duplicate_of else "no"),
                "Pages": f.pages if f.ok else None,
                "Tokens": f.tokens if f.ok else None,
                "Problem": f.problem or (f"same bytes as {f.duplicate_of}" if f.duplicate_of else ""),
                "Message": f.message or "; ".join(f.warnings),
            }
            for f in files
        ]
    ),
    hide_index=True,
    width="stretch",
    height=min(38 + 35 * len(files), 320),
    key="w.review_corpus",
    column_config={"Message": st.column_config.TextColumn(width="large")},
)
st.caption(
    f"{plural(len(readable), 'document')} read ({sum(f.pages for f in readable):,} pages, "
    f"{sum(f.tokens for f in readable):,} tokens counted as {md(S.token_model())})"
    + (
        f"; {plural(len(unread), 'file')} not read, listed with the reason — the others go on"
        if unread
        else ""
    )
    + ". Each document is kept in the document store by its content hash and read once."
)
ENCRYPTED, SCANNED = "encrypted", "scanned (no text layer)"  # the corpus's words for them
if review.ocr or any(f.problem == SCANNED for f in unread):
    # The same switch, and the same notice when Tesseract is absent, as the Ask screen's.
    missing = ocr_available()
    if missing:
        st.caption(f"OCR is not available here: {md(missing)}.")
    else:
        S.bind(st.toggle, "Read pages without text by OCR (Tesseract; a few seconds a page)", review, "ocr",
               key="review_ocr", help="Scanned pages have no text for a model to read; OCR turns their images "
               "into text. It runs on this machine.")  # fmt: skip
        scanned = {f.name for f in unread if f.problem == SCANNED} - review.ocr_tried
        if review.ocr and scanned and uploaded:
            review.ocr_tried |= scanned
            _read_again(scanned)
            st.rerun()
entered: dict[str, str] = {}
for index, f in enumerate(unread):
    if not f.problem:
        continue
    st.warning(f"**{md(f.name)}** — {md(f.problem)}: {md(f.message)}")
    if f.problem != ENCRYPTED:
        continue
    if not uploaded:
        st.caption("Upload this file again to enter its password (the upload was left).")
        continue
    password = st.text_input(
        f"Password for {f.name}", type="password", key=f"w.review_password_{f.sha256 or index}"
    )
    if password:
        entered[f.name] = password
tried = {name: hashlib.sha256(pw.encode()).hexdigest() for name, pw in entered.items()}
changed = {name for name, digest in tried.items() if review.tried.get(name) != digest}
if changed:
    # Each password is used for this reading only: never kept in the store or the session's records.
    review.tried.update({name: tried[name] for name in changed})
    _read_again(changed, Passwords(by_file={name: entered[name] for name in changed}))
    st.rerun()
if unread and any(f.problem == ENCRYPTED for f in unread):
    st.caption("A password is used to read its file, for this session only; it is never stored.")
if not readable:
    st.stop()

# ---- 2. Columns (the playbook) -------------------------------------------------------------------

st.subheader("2. Questions (columns)")
TYPES = [t.value for t in AnswerType]


def _apply_edits() -> None:
    """The editor's changes into the session's rows (kept when the screen is left)."""
    delta = state.get(f"w.review_columns_{review.editor_version}") or {}
    rows = [dict(r) for r in review.column_rows]
    for index, changes in (delta.get("edited_rows") or {}).items():
        if int(index) < len(rows):
            rows[int(index)].update({k: "" if v is None else str(v) for k, v in changes.items()})
    for added in delta.get("added_rows") or []:
        rows.append(
            {k: "" if added.get(k) is None else str(added.get(k)) for k in FIELDS}
            | {"type": str(added.get("type") or "text")}
        )
    deleted = {int(i) for i in delta.get("deleted_rows") or []}
    review.column_rows = [r for i, r in enumerate(rows) if i not in deleted]
    review.editor_version += 1


st.data_editor(
    pd.DataFrame(review.column_rows, columns=list(FIELDS)),
    num_rows="dynamic",
    hide_index=True,
    width="stretch",
    key=f"w.review_columns_{review.editor_version}",
    on_change=_apply_edits,
    column_config={
        "question": st.column_config.TextColumn("Question", width="large", required=True),
        "type": st.column_config.SelectboxColumn(
            "Answer type",
            options=TYPES,
            required=True,
            default="text",
            help=" · ".join(f"{t.value}: {t.label}" for t in AnswerType),
        ),  # fmt: skip
        "instruction": st.column_config.TextColumn("Instruction (optional)", width="medium"),
        "choices": st.column_config.TextColumn("Choices (for 'choice', separated by |)", width="medium"),
    },
)


try:
    columns = columns_from_rows(review.column_rows, name="The questions")
except RRError as exc:
    st.error(md(exc))
    st.stop()


def _load(columns_given: Sequence[Column]) -> None:
    review.column_rows = _rows_of(columns_given)
    review.editor_version += 1


playbook_cols = st.columns(3)
with playbook_cols[0]:
    imported = st.file_uploader(
        "Import a playbook (CSV: question, type, instruction, choices)", type=["csv"], key="w.review_playbook"
    )
    if imported is not None and review.playbook_for != imported.file_id:
        review.playbook_for = imported.file_id
        try:
            _load(parse_columns(imported.getvalue().decode("utf-8-sig"), name=imported.name))
        except (RRError, UnicodeDecodeError) as exc:
            st.error(md(exc))
        else:
            st.rerun()
with playbook_cols[1]:
    S.bind(
        st.text_input,
        "Save these questions as a playbook named",
        review,
        "playbook_name",
        key="review_playbook_name",
    )
    if st.button("Save playbook", key="review_save_playbook", disabled=not review.playbook_name.strip()):
        review.playbooks[review.playbook_name.strip()] = tuple(columns)
        st.toast(f"Saved the playbook {review.playbook_name.strip()!r} for this session.")
    st.download_button(
        "Download the playbook (CSV)",
        columns_csv(columns),
        "playbook.csv",
        "text/csv",
        key="review_playbook_dl",
        on_click="ignore",
    )
with playbook_cols[2]:
    if review.playbooks:
        chosen_playbook = st.selectbox(
            "Saved playbooks (this session)", list(review.playbooks), key="w.review_playbooks"
        )
        if st.button("Use this playbook", key="review_use_playbook"):
            _load(review.playbooks[chosen_playbook])
            st.rerun()
    else:
        st.caption("Playbooks saved here are kept for this session; download one to keep it.")

# ---- 3. Method, answer key, estimate ----------------------------------------------------------------

st.subheader("3. Method and estimate")
METHODS = [m for m in all_methods() if m.group != "bounds" and not m.needs_gold]  # no gold pages here
LABELS = {m.name: m.label + (" (all questions in one pass)" if m.several_questions else "") for m in METHODS}
method_cols = st.columns(3)
with method_cols[0]:
    S.bind(st.selectbox, "Method for the grid", review, "method", key="review_method", options=list(LABELS),
           format_func=LABELS.__getitem__)  # fmt: skip
with method_cols[1]:
    S.bind(st.selectbox, "Compare with (on sample rows)", review, "compare", key="review_compare",
           options=["", *LABELS], format_func=lambda m: LABELS.get(m, "No comparison"))  # fmt: skip
with method_cols[2]:
    S.bind(st.number_input, "Sample rows compared", review, "compare_rows", key="review_compare_rows",
           min_value=1, max_value=max(1, len(readable)), step=1, disabled=not review.compare)  # fmt: skip
engine = S.engine()
info = S.provider_info()
st.caption(
    f"Engine: **{md(info.name)} / {md(S.model())}** (the sidebar's provider and model)"
    + (
        " — not an LLM: it shows how the grid works and what it would cost, not how well a model reads."
        if not info.is_llm
        else "."
    )
)

key_file = st.file_uploader(
    "Answer key (optional; CSV: document, question, answers): cells are then marked right or wrong",
    type=["csv"], key="w.review_key",
)  # fmt: skip
if key_file is not None and review.key_for != key_file.file_id:
    review.key_for = key_file.file_id
    review.key_csv, review.key_name = key_file.getvalue().decode("utf-8-sig", errors="replace"), key_file.name
answer_key: AnswerKey | None = None
if review.key_csv:
    try:
        answer_key = parse_answer_key(review.key_csv, name=review.key_name)
    except RRError as exc:
        st.error(md(exc))
    else:
        st.caption(f"Marked against **{md(review.key_name)}** ({plural(len(answer_key), 'known answer')}).")

verify = S.verify_widgets()
try:
    base = S.base_settings().but(**verify)
    settings = parse_spec(review.method, base)
    compare = parse_spec(review.compare, base) if review.compare else None
except RRError as exc:
    results.show_rr_error(exc)
    st.stop()
plan_for = json.dumps(
    [[f.sha256 for f in readable], columns_csv(columns), settings.to_dict(),
     compare.to_dict() if compare else None, int(review.compare_rows), S.token_model()],
    sort_keys=True, default=str,
)  # fmt: skip
if review.plan is None or review.plan_for != plan_for:
    with st.spinner("Planning the grid…"):
        try:
            review.plan = workbench.plan_grid(
                readable, columns, settings, S.counter(), compare=compare, compare_rows=int(review.compare_rows),
                window=engine.window(), tokenizer=S.token_model(), store=user.history(),
            )  # fmt: skip
        except (RRError, LedgerError) as exc:
            results.show_rr_error(exc)
            st.stop()
    review.plan_for = plan_for
plan: ReviewPlan = review.plan
e = plan.estimate
free = not info.is_llm
would = " (would cost)" if free else ""
ESTIMATES = (
    (f"Now, list price, no cache{would or ' — the ceiling'}", e.usd("now")),
    (f"Now, with prompt cache{would}", e.usd("now", cached=True)),
    (f"In batches, with prompt cache{would}", e.usd("batch") if info.can_batch or free else None),
)
for box, (label, usd) in zip(st.columns(3), ESTIMATES, strict=True):
    shown = f"\\${usd:.4f}" if usd is not None else f"not offered for {md(info.label)} in this version"
    box.container(border=True).markdown(f"{label}\n\n#### {shown}")
priced_as = plan.settings.pricing[0]
lines = [
    f"**Before running, the whole grid:** {plural(len(plan.documents), 'document')} × "
    f"{plural(len(plan.columns), 'question')} with {md(plan.method_label(MAIN))}"
    + (
        f", and {md(plan.method_label(COMPARE))} on {plural(len(plan.compare_documents), 'sample row')}"
        if plan.compare
        else ""
    )
    + f": about {plural(e.calls, 'call')}, {e.input_tokens:,} input and {e.output_tokens:,} output tokens, "
    f"priced as {md(priced_as)}" + (" — free here (not an LLM): nothing is paid." if free else "."),
]
if e.alone_ratio is not None:
    lines.append(
        f"**One pass for all questions:** {e.alone_ratio:.0%} of the input tokens of asking each question alone "
        f"(measured on the first {plural(e.sample_documents, 'document')})."
    )
lines.append(
    f"**Cacheable share:** {e.cacheable_share:.0%} of the input tokens are expected to be read from the "
    "provider's prompt cache. Cells already answered in the run store are not paid again."
)
if plan.too_long:
    lines.append(f":orange[Longer than the model's context window: {md(', '.join(plan.too_long))}.]")
st.markdown("  \n".join(lines))

batchable = info.can_batch or free
if not batchable:
    review.mode = "now"
MODES = {"now": "Now (every call at once, list price)", "batch": "In batches (half price, within 24 h)"}
send_col, budget_col = st.columns(2)
with send_col:
    S.bind(st.radio, "Send", review, "mode", key="review_mode", options=list(MODES) if batchable else ["now"],
           format_func=MODES.__getitem__, horizontal=True)  # fmt: skip
    if not batchable:
        st.caption(f"Batches are not offered for {md(info.label)} in this version: every call goes now.")
    if free and review.mode == "batch":
        st.caption(
            "A free engine has no provider batch: 'in batches' answers here, in this process; nothing is paid either way."
        )
with budget_col:
    S.bind(st.number_input, "Budget cap (USD; 0: no cap)", review, "budget", key="review_budget",
           min_value=0.0, step=1.0, format="%.2f", disabled=free)  # fmt: skip
mode: Mode = "batch" if review.mode == "batch" else "now"

# ---- 4. Run ----------------------------------------------------------------------------------------

# Team mode: the grid runs on the workers (it outlives the tab and the replica); otherwise here,
# in the page (cells as they arrive), or in the background (a thread of this app's process).
on_workers = workbench.runs_on_workers(user.store_url())
run_col, background_col, cancel_col = st.columns(3, vertical_alignment="center")
note_col = st.container()
clicked = run_col.button(
    "Send to the workers" if on_workers else "Run the grid", type="primary", key="review_run", width="stretch"
)
if on_workers:
    background = clicked
    clicked = False
else:
    background = background_col.button(
        "Run in the background", key="review_background", width="stretch",
        help="Runs in this app's process: it goes on when you close the tab; its progress is below.",
    )  # fmt: skip
    cancel_col.button(
        "Cancel", key="review_cancel", width="stretch", help="Stops the run; finished cells are kept."
    )
note_col.caption(
    "Cells fill in as they arrive. The run store is the call cache: a second run, or a run after a cancel, "
    "pays nothing for cells already finished."
)
if review.message is not None:
    kind, text = review.message
    (st.warning if kind == "warning" else st.info)(text)
    review.message = None


def _engine_label() -> str:
    return f"{info.name} / {S.model()}" + ("" if info.is_llm else " (not an LLM)")


def _execute(run: ReviewRun, jobs: Sequence[Job] | None, what: str) -> None:
    """Run the grid's jobs (or a retry's), cells into the session as they arrive."""
    max_usd = float(review.budget) if not free and float(review.budget) > 0 else None
    try:
        if jobs is None:  # a retry asks a few cells again: the runner's cap still holds it
            workbench.check_review_budget(run.plan, max_usd, mode)
        client = S.new_client()
    except (RRError, LedgerError) as exc:
        results.show_rr_error(exc)
        return
    todo = list(jobs) if jobs is not None else list(run.plan.jobs)
    cells_total = sum(len(list_of) for j in todo if isinstance(list_of := j.meta.get("columns"), list))
    bar = st.progress(0.0, text=f"{what}: starting…")
    live = st.empty()
    arrived = [0]
    every = max(1, cells_total // 20)  # the table redrawn about 20 times a run, not per cell
    run.done = False
    review.message = ("warning", "The run was cancelled: the cells finished before the cancel are kept. "
                      "Run again to fill in the rest — finished cells are not paid again.")  # fmt: skip

    def on_trace(trace: RunTrace) -> None:
        run.put_trace(trace)

    def on_cell(cell: Cell) -> None:
        run.put_cell(cell)
        arrived[0] += 1
        bar.progress(
            min(arrived[0] / max(cells_total, 1), 1.0), text=f"{what}: {arrived[0]} of {cells_total} cells"
        )
        if arrived[0] % every == 0:
            live.dataframe(
                reviewgrid.grid_frame(run.plan, run.cells, MAIN, answer_key is not None)[0],
                width="stretch",
                key=None,
            )

    done = workbench.review(
        run.plan, client, concurrency=S.concurrency(), key=answer_key, jobs=jobs, max_usd=max_usd, mode=mode,
        on_cell=on_cell, on_trace=on_trace, store=user.history(),
    )  # fmt: skip
    bar.empty()
    live.empty()
    review.message = None
    run.done = not done.cancelled
    run.paid_usd += done.paid_usd
    # A run again after a stop adds to what was paid and possibly billed (both stay said).
    run.possibly_billed = "; ".join(n for n in (run.possibly_billed, done.possibly_billed) if n)
    run.save_error = done.save_error or ""
    if done.cancelled:
        review.message = (
            "warning",
            "The run stopped before the end; finished cells are kept. Run again to fill in the rest.",
        )


def _submit(grid: Any, *, again: bool = False) -> None:
    """The grid as work (plain data: documents by hash, no key) for the queue (``again``: even
    when the same grid already finished)."""
    max_usd = float(review.budget) if not free and float(review.budget) > 0 else None
    chosen = S.engine()
    work = ReviewWork(
        files=tuple(review.files), columns=grid.columns, settings=grid.settings, provider=chosen.provider,
        model=chosen.model, price_model=chosen.price_model, base_url=chosen.base_url, compare=grid.compare,
        compare_rows=int(review.compare_rows), key=answer_key, mode=mode, max_usd=max_usd,
        concurrency=S.concurrency(),
    )  # fmt: skip
    try:
        workbench.check_review_budget(grid, max_usd, mode)
        sent = workbench.submit_grid(
            work, grid, store=user.history(), owner=user.current().owner, url=user.store_url(),
            client=None if on_workers else S.new_client(), again=again,
        )  # fmt: skip
    except (RRError, LedgerError) as exc:
        results.show_rr_error(exc)
        return
    review.resend = ""
    if sent.finished is not None:  # the same grid already finished: the user chooses (below)
        review.resend = sent.finished.work_id
        return
    if not sent.new:
        st.info(
            "The same grid (these documents, questions, method and model) is already queued or running: "
            "it was not sent again, since it would ask, and pay for, the same calls twice. Its progress is "
            "below; stop it to send the grid with another budget or mode."
        )
        return
    st.success(
        f"Sent: the grid runs {where_it_runs()}. Its progress is below, and stays when this tab closes."
    )


def _show_work(record: WorkRecord) -> None:
    """A grid run in the background: its cells from the store (and its traces from the history)."""
    store = user.history()
    work = ReviewWork.from_dict(record.spec)
    try:
        grid = work.plan(store)
    except (RRError, LedgerError) as exc:
        results.show_rr_error(exc)
        return
    cells, traces = grid_results(store, record.work_id, work)  # two reads, not one a run
    shown_engine = f"{work.provider} / {work.model}"
    is_llm = any(c.is_llm for c in cells) if cells else True
    review.run = ReviewRun(
        grid, cells=cells, traces=traces, engine=shown_engine + ("" if is_llm else " (not an LLM)"), is_llm=is_llm,
        mode=work.mode, done=record.state == "done", paid_usd=float((record.result or {}).get("paid_usd", 0.0)),
        possibly_billed=str((record.result or {}).get("possibly_billed") or ""), key_name=(work.key.name if work.key else ""),
    )  # fmt: skip
    review.selected = None
    review.queue_at = None
    st.rerun()


def _ask_resend(grid: Any) -> None:
    """The same grid already finished: open it, or run it again (its replies in the store are free)."""
    try:
        finished = user.history().get_work(review.resend)
    except (RRError, LedgerError):
        finished = None
    if finished is None:
        review.resend = ""
        return
    when = finished.updated_at[:16].replace("T", " ")
    st.info(
        f"This grid (these documents, questions, method and model) already ran to the end: work "
        f"`{finished.work_id}`, finished {when} UTC, {finished.done} of {finished.total} cells. Open it, or run it "
        "again (replies kept in the store are not paid again)."
    )
    open_col, again_col = st.columns(2)
    if open_col.button("Open the finished grid", key="review_open_finished", type="primary", width="stretch"):
        review.resend = ""
        _show_work(finished)
    if again_col.button("Run it again", key="review_run_again", width="stretch"):
        review.resend = ""
        _submit(grid, again=True)


if background:
    _submit(plan)
if review.resend:
    _ask_resend(plan)
work_panel("review", "Grids in the background", on_show=_show_work)

if clicked:
    review.run = ReviewRun(
        plan,
        engine=_engine_label(),
        is_llm=info.is_llm,
        mode=mode,
        key_name=review.key_name if answer_key else "",
    )
    review.selected = None
    review.queue_at = None  # the To-check queue starts again, at its first undecided cell
    _execute(review.run, None, "Running the grid")

last_run = review.run
if last_run is None:
    if free:
        st.caption("No key needed: the offline engine runs the grid here for free (not an LLM).")
    st.stop()
run: ReviewRun = last_run


def _decisions() -> list[ReviewDecision]:
    """The reviewer's decisions on this grid's documents (the store's owner's own)."""
    try:
        return user.history().decisions_for(f.sha256 for f in run.plan.documents)
    except LedgerError as exc:
        st.warning(f"The review decisions could not be read: {md(exc)}")
        return []


# The grid as the reviewer left it: a decision wins over the engine's answer everywhere below
# (the grid, the cell, the scores, the exports); ``run.cells`` keep what the engine said.
shown_cells = apply_decisions(run.plan, run.cells, _decisions(), answer_key)

# ---- 5. The grid ----------------------------------------------------------------------------------

if run.plan is not plan and run.plan.ledger_key() != plan.ledger_key():
    st.info(
        "The grid below was run before the documents, questions or method changed; run again to update it."
    )
st.subheader("4. The grid")
roles = run.plan.roles
ROLE_LABELS = {
    MAIN: run.plan.method_label(MAIN),
    COMPARE: run.plan.method_label(COMPARE) + " (sample rows)" if run.plan.compare else "",
}
if len(roles) > 1:
    S.bind(st.radio, "Grid of", review, "role", key="review_role", options=list(roles),
           format_func=ROLE_LABELS.__getitem__, horizontal=True)  # fmt: skip
role = review.role if review.role in roles else MAIN
keyed = any(c.correct is not None for c in shown_cells)
filter_col, order_col = st.columns([3, 2])
shown_bands = filter_col.multiselect(
    "Show cells", list(reviewgrid.FILTERS), default=list(reviewgrid.FILTERS),
    format_func=reviewgrid.FILTERS.__getitem__, key="w.review_show",
    help="By how far to trust them: high (or not assessed), check this, not found, reviewed.",
)  # fmt: skip
grid_order = order_col.selectbox(
    "Rows", list(reviewgrid.ORDERS), format_func=reviewgrid.ORDERS.__getitem__, key="w.review_order"
)
frame, styles, row_shas = reviewgrid.grid_view(
    run.plan, shown_cells, role, keyed, show=shown_bands, order=grid_order
)
main_cells = [c for c in run.cells if c.role == role]
failed = [c for c in run.cells if c.error]
paid = (
    "nothing paid: the engine is free (not an LLM)"
    if not run.is_llm
    else f"${run.paid_usd:.4f} paid by this run (cells found in the run store cost nothing)"
    + (f", and {md(run.possibly_billed)}" if run.possibly_billed else "")
)
st.caption(
    f"{md(ROLE_LABELS[role])} on {md(run.engine)} · {len(main_cells)} of "
    f"{len(run.plan.columns) * len(list(iter_grid(run.plan, [], role)))} cells answered"
    + (f" · {plural(len(failed), 'failed cell')}" if failed else "")
    + f" · {paid}"
    + (" · sent in batches" if run.mode == "batch" else "")
)
legend = (
    "Green: right against the answer key; red: wrong against it. "
    if keyed
    else "No answer key: no cell is marked right or wrong (upload one to score the grid). "
)
st.caption(
    legend
    + "Amber, “check this”: the engine is not sure of the answer (the reason is in the cell and in the "
    "To-check queue below). “Not found · read p. …”: the reader found no answer, and those pages are "
    "worth reading. Grey: not found (with the pages to read) or, from a model, its claim that the document does not say; amber text “failed”: the call failed. “reviewed”: a "
    "reviewer's decision, which wins over the engine's answer. '· p. N': the page the answer cites (where "
    "its quote stands, not whether the answer is right). Click a cell to open its details over the grid."
)
styled = frame.style.apply(
    lambda _: pd.DataFrame(styles, index=frame.index, columns=frame.columns), axis=None
)
event = st.container(key="review_grid_box").dataframe(
    styled,
    width="stretch",
    height=min(38 + 35 * len(frame), 720),
    key="w.review_grid",
    on_select="rerun",
    selection_mode="single-cell",
    # Fixed widths: the grid reads the same on every corpus (the document's name pinned at left).
    column_config={"Document": st.column_config.TextColumn(pinned=True, width=reviewgrid.GRID_FIRST_PX)}
    | {
        h: st.column_config.TextColumn(help=c.question, width=reviewgrid.GRID_COLUMN_PX)
        for h, c in zip(frame.columns, run.plan.columns, strict=True)
    },
)
picked_cells = list(getattr(event, "selection", {}).get("cells", []) or [])
picked = (int(picked_cells[0][0]), str(picked_cells[0][1])) if picked_cells else None
if picked is not None and picked != review.picked:  # a cell newly clicked: its details open
    row_index, header = picked
    if 0 <= row_index < len(frame) and header in list(frame.columns):
        review.selected = (row_shas[row_index], list(frame.columns).index(header), role)
        review.details_open = True
review.picked = picked

# ---- The cell: its details in a dialog, over the grid, where the eye is --------------------------------


def _find(selected: tuple[str, int, str] | None) -> Cell | None:
    if selected is None:
        return None
    sha, column, in_role = selected
    return next(
        (c for c in shown_cells if (c.document_sha256, c.column, c.role) == (sha, column, in_role)), None
    )


def _trace_of(cell: Cell) -> tuple[RunTrace | None, int]:
    prompt = run.plan.columns[cell.column].prompt
    for t in reversed(run.traces):
        if (t.run_id == cell.run_id or t.document_sha256 == cell.document_sha256) and prompt in t.questions:
            return t, list(t.questions).index(prompt)
    return None, 0


def _close_details() -> None:
    """The dialog dismissed: closed, and the grid's selection let go, so that a click on the same
    cell opens it again."""
    review.details_open = False
    review.picked = None
    state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": []}}


DIALOG_NAME = 40  # the longest document name the dialog's title shows whole
SUPPORT_WORDS = {
    "supported": "the quote states the answer",
    "partial": "the quote states part of the answer, or something close",
    "unsupported": "the answer is in none of its quotes",
}


def _cell_page(cell: Cell) -> None:
    """The page the cell rests on (its first cited page, else the first page to read), its quote
    highlighted where it stands."""
    first = next((c for c in cell.citations if c.page is not None), None)
    number = first.page if first is not None else (cell.pages_to_read[0] if cell.pages_to_read else None)
    if number is None:
        st.caption("No page to show: the cell cites none.")
        return
    try:
        shown_doc = docs.stored(cell.document_sha256)
        if not 1 <= int(number) <= len(shown_doc.pages):
            st.caption(f"The cell names page {number}, which the document does not have.")
            return
        quote = first.quote if first is not None else ""
        shown = docs.page_png(shown_doc, int(number), quote=quote, frame=results.CITED_RGB if quote else None)
    except RRError as exc:
        st.caption(f"The page cannot be shown: {md(exc)}")
        return
    what = (
        "its quote highlighted" if shown.placed
        else "the quote could not be placed on it" if first is not None and first.quote
        else "the first page to read" if first is None
        else "no quote given"
    )  # fmt: skip
    st.image(
        shown.rendered.png,
        caption=f"{docs.page_ref(shown_doc, int(number))} of {len(shown_doc.pages):,} · {what}",
        width="stretch",
        output_format="PNG",
    )


def _cell_details(cell: Cell) -> None:
    """A cell in full: its answer, how far to trust it and why, its support, its quotes, the page
    with the quote highlighted (or the pages to read), a reviewer's decision, and its cost."""
    with st.container(key="review_cell"):
        shown_name = (
            "" if len(cell.document) <= DIALOG_NAME else f"{md(cell.document)} · "
        )  # else in the title
        st.markdown(
            f"**{md(cell.question)}**  \n{shown_name}answer type: {md(cell.type)} · {md(cell.method)}"
        )
        words, page_col = st.columns([3, 2])
        with words:
            if cell.error:
                st.error(f"Failed: {md(cell.error)}")
            else:
                verdict = (
                    ":green[Right against the answer key]" if cell.correct is True
                    else ":red[Wrong against the answer key]" if cell.correct is False
                    else "Not checked against a known answer"
                )  # fmt: skip
                st.markdown(f"**Answer:** {md(reviewgrid.cell_text(cell))}  \n{verdict}" + (
                    f" (accepted: {md(' | '.join(cell.accepted))})" if cell.accepted else ""))  # fmt: skip
                if not cell.found and cell.absent_by == "reader" and cell.pages_to_read:
                    st.markdown(
                        "**Not found**: the reader found no answer. Pages to read, best first: "
                        + ", ".join(map(str, cell.pages_to_read))
                        + "."
                    )
                if cell.decision:
                    st.markdown(f":material/rate_review: **{md(reviewed_words(cell))}**")
                confidence = {"high": "high", "check": "check this", "none": "none (not found)"}.get(
                    cell.confidence, "not assessed"
                )
                flag = results.confidence_line(cell.confidence, cell.confidence_reason, cell.support_reason)
                st.markdown(
                    flag
                    or f"**Confidence:** {confidence}"
                    + (f" — {md(cell.confidence_reason)}" if cell.confidence_reason else "")
                )
                if cell.support in SUPPORT_WORDS:
                    st.markdown(
                        f"**Support:** {cell.support} — {md(cell.support_reason or SUPPORT_WORDS[cell.support])}"
                    )
                if cell.raw and cell.raw != cell.answer:
                    st.caption(f"As the model gave it: {md(short(cell.raw, 300))}")
            if cell.citations:
                for c in cell.citations[:2]:  # the quotes in full (the table below cuts them short)
                    if c.quote:
                        st.markdown(f"> {md(' '.join(c.quote.split()))}")
                st.dataframe(
                    pd.DataFrame(
                        [
                            {
                                "Page": c.page,
                                "Printed label": c.page_label,
                                "Quote check": results.check_words(c, None) or c.quote_check,
                                "Quote": c.quote,
                            }
                            for c in cell.citations
                        ]
                    ),
                    hide_index=True,
                    width="stretch",
                    key="w.review_citations",
                )
                st.caption(
                    "The quote check says where the quoted sentence stands, not whether the answer is right."
                )
            elif not cell.error:
                st.caption(
                    "No citation: the document does not state it." if not cell.found else "No citation given."
                )
            st.caption(
                f"Cost of this cell (its share of the calls it rests on): ${cell.cost_usd:.5f}"
                + (
                    " — would cost, nothing paid (not an LLM)"
                    if not cell.is_llm
                    else f"; paid by this run ${cell.paid_usd:.5f}"
                )
                + ("" if cell.price_known else " (no price known)")
            )
            actions = st.container(horizontal=True)
            first = next((c for c in cell.citations if c.page is not None), None)
            if actions.button(
                "Open in the Document screen", key="review_open_doc", icon=":material/description:"
            ):
                trace, question = _trace_of(cell)
                S.session().doc_focus = DocFocus(
                    sha256=cell.document_sha256, name=cell.document, page=first.page if first else None,
                    quote=first.quote if first else "", trace=trace, question=question,
                    key=f"review:{cell.run_id}:{cell.column}",
                )  # fmt: skip
                S.session().view_citation = 0
                if first is not None and first.page is not None:
                    state["view_page"] = first.page
                state.pop("w.doc_show", None)
                review.details_open = False
                st.switch_page("pages/document.py")
            if cell.error and actions.button("Retry this cell", key="review_retry_one"):
                review.details_open = False
                _execute(run, retry_jobs(run.plan, [cell]), "Retrying the cell")
                st.rerun()
        with page_col:
            _cell_page(cell)


cell = _find(review.selected)
if cell is not None and review.details_open:
    st.dialog(
        f"{short(cell.document, DIALOG_NAME)} · question {cell.column + 1}",
        width="large",
        on_dismiss=_close_details,
    )(_cell_details)(cell)
elif cell is None:
    review.details_open = False

if failed:
    st.warning(
        f"{plural(len(failed), 'cell')} failed: "
        + md(
            "; ".join(
                f"{short(c.document, 30)} / Q{c.column + 1}: {short(c.error or '', 90)}" for c in failed[:6]
            )
        )
        + (" …" if len(failed) > 6 else "")
    )
    if st.button(f"Retry the {plural(len(failed), 'failed cell')}", key="review_retry"):
        _execute(run, retry_jobs(run.plan, failed), "Retrying the failed cells")
        st.rerun()

# ---- To check: the cells the engine is not sure of, one at a time ------------------------------------

queue = to_check(run.cells, role)  # as the engine assessed them (a decision does not take a cell out)
now_of = {c.key: c for c in shown_cells}


def _step(by: int) -> None:
    review.queue_at = min(max((review.queue_at or 0) + by, 0), max(len(queue) - 1, 0))


def _decide(item: Cell, decision: str, page_key: str, answer_key_: str, quote_key: str) -> None:
    """Keep the reviewer's decision on the queue's cell (a button's callback), then go on."""
    answer, page, quote = "", None, ""
    if decision == CORRECTED:
        answer = " ".join(str(state.get(answer_key_) or "").split())
        if not answer:
            review.queue_note = "Type the right answer first, then Correct."
            return
        page = int(state.get(page_key) or 1)
        quote = " ".join(str(state.get(quote_key) or "").split())
    elif decision == ACCEPTED and item.found:
        answer = item.raw or item.answer
        first = next((c for c in item.citations if c.page is not None), None)
        page, quote = (first.page, first.quote) if first else (None, "")
    try:
        user.history().put_decision(
            ReviewDecision(
                document_sha256=item.document_sha256, question=item.question, decision=decision, role=item.role,
                document=item.document, answer=answer, page=page, quote=quote,
            )
        )  # fmt: skip
    except LedgerError as exc:
        review.queue_note = f"The decision was not kept: {exc}"
        return
    _step(1)


st.subheader("To check")
if not queue:
    assessed = any(c.confidence for c in main_cells)
    st.caption(
        "Nothing to check: no cell of this grid is marked “check this” or “not found”."
        if assessed
        else "Nothing to check: the engine did not assess how far to trust these cells."
    )
else:
    if review.queue_at is None:  # first shown: at the first cell not decided yet
        review.queue_at = next((i for i, c in enumerate(queue) if not now_of.get(c.key, c).decision), 0)
    at_ = min(max(review.queue_at, 0), len(queue) - 1)
    review.queue_at = at_
    item = queue[at_]
    current = now_of.get(item.key, item)
    decided_count = sum(1 for c in queue if now_of.get(c.key, c).decision)
    st.caption(
        f"The cells the engine marked “check this” or “not found”, least sure first: "
        f"{plural(len(queue), 'cell')}, {decided_count} decided. A decision is kept with who made it and "
        "when, wins over the engine's answer in the grid, the scores and the exports, and holds wherever "
        "this document and question appear. Keys: A accept · Ctrl+Enter correct · N not in the document · "
        "← → previous / next."
    )
    if review.queue_note:
        st.warning(md(review.queue_note))
        review.queue_note = ""
    first_cited = next((c for c in item.citations if c.page is not None), None)
    page_key = f"w.queue_page_{item.key}"
    answer_box, quote_box = f"w.queue_answer_{item.key}", f"w.queue_quote_{item.key}"
    with st.container(border=True, key="review_queue"):
        st.markdown(
            f"**{at_ + 1} of {len(queue)}** · **{md(item.document)}** — {md(item.question)} "
            f"({md(item.type)}; {md(item.method)})"
        )
        left, right = st.columns([2, 3])
        with left:
            if item.found:
                st.markdown(f"**The engine's answer:** {md(item.answer)}")
            elif item.absent_by == "model":
                st.markdown("**The model says the document does not state it** (its claim, not checked).")
            else:
                st.markdown(
                    "**Not found**: the reader found no answer."
                    + (
                        f" Pages to read, best first: {', '.join(map(str, item.pages_to_read))}."
                        if item.pages_to_read
                        else ""
                    )
                )
            flag = results.confidence_line("check", item.confidence_reason, item.support_reason)
            if item.confidence == "check":
                st.markdown(flag)
            if first_cited is not None and first_cited.quote:
                st.markdown(f"> {md(' '.join(first_cited.quote.split()))}")
                st.caption(md(results.check_words(first_cited, None)) or "")
            if current.decision:
                st.markdown(
                    f":material/rate_review: **{md(reviewed_words(current))}**"
                    + (f" — now: {md(reviewgrid.cell_text(current))}" if current.decision != ACCEPTED else "")
                )
            buttons = st.container(horizontal=True, key="queue_decide")
            args = (item, ACCEPTED, page_key, answer_box, quote_box)
            buttons.button(
                "Accept", key="queue_accept", shortcut="A", type="primary", on_click=_decide, args=args
            )
            buttons.button("Not in the document", key="queue_absent", shortcut="N", on_click=_decide,
                           args=(item, ABSENT, page_key, answer_box, quote_box))  # fmt: skip
            st.text_input("The right answer", key=answer_box, placeholder="Type it to correct the cell")
            st.text_input(
                "Its words on the page (click them on the page at right, or type them)",
                key=quote_box,
                placeholder="Click the sentence that states it on the page",
            )
            st.button("Correct", key="queue_correct", shortcut="Ctrl+Enter", on_click=_decide,
                      args=(item, CORRECTED, page_key, answer_box, quote_box))  # fmt: skip
            steps = st.container(horizontal=True, key="queue_steps")
            steps.button("Previous", key="queue_prev", icon=":material/arrow_back:", shortcut="Left",
                         disabled=at_ == 0, on_click=_step, args=(-1,))  # fmt: skip
            steps.button("Next", key="queue_next", icon=":material/arrow_forward:", shortcut="Right",
                         disabled=at_ == len(queue) - 1, on_click=_step, args=(1,))  # fmt: skip
        with right:
            try:
                queued_doc = docs.stored(item.document_sha256)
            except RRError as exc:
                st.caption(f"The page cannot be shown: {md(exc)}")
            else:
                start = (
                    first_cited.page
                    if first_cited is not None and first_cited.page
                    else (item.pages_to_read[0] if item.pages_to_read else 1)
                )
                if page_key not in state:
                    state[page_key] = min(max(int(start), 1), len(queued_doc.pages))
                number = int(
                    st.number_input(
                        "Page (the correction's page)", min_value=1, max_value=len(queued_doc.pages), step=1,
                        key=page_key,
                    )
                )  # fmt: skip
                typed_quote = " ".join(str(state.get(quote_box) or "").split())
                quote = typed_quote or (
                    first_cited.quote if first_cited is not None and first_cited.page == number else ""
                )
                try:
                    page_shown = docs.page_png(
                        queued_doc, number, quote=quote, frame=results.CITED_RGB if quote else None
                    )
                except RRError as exc:
                    results.show_rr_error(exc)
                else:
                    what = (
                        "your words highlighted" if typed_quote else "the engine's quote highlighted"
                    ) if page_shown.placed else ("the quote could not be placed" if quote else "no quote on this page")  # fmt: skip
                    st.caption(
                        f"{docs.page_ref(queued_doc, number)} of {len(queued_doc.pages):,} · {what} · "
                        "click a word to take its sentence as the correction's words"
                    )

                    def _picked(
                        page: int, sentence: str, page_key: str = page_key, quote_box: str = quote_box
                    ) -> None:
                        state[page_key], state[quote_box] = page, sentence

                    docs.clickable_page(
                        queued_doc,
                        number,
                        page_shown,
                        key=f"w.queue_click_{item.key}_{number}",
                        on_pick=_picked,
                    )

# ---- Scores and exports ------------------------------------------------------------------------------


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


if keyed:
    st.subheader("Scores against the answer key")
    st.dataframe(
        pd.DataFrame(
            [
                {  # the figures first: a narrow screen shows them before the long texts
                    "Right": s.right,
                    "Marked": s.marked,
                    "Accuracy": _share(s.accuracy),
                    "Answered": s.answered,
                    "Precision": _share(s.precision),
                    "Coverage": _share(s.coverage),
                    "Base rate": _share(s.base_rate),
                    "High band": f"{s.high_right}/{s.high} right" if s.high else "—",
                    "Not found": s.not_stated,
                    "Failed": s.failed,
                    "Question": s.question,
                    "Method": s.method,
                }
                for s in scores(run.plan, shown_cells)
            ]
        ),
        hide_index=True,
        width="stretch",
        key="w.review_scores",
    )
    st.caption(
        f"Against {md(run.key_name or review.key_name)}: accuracy is right over the cells the key marks (failed "
        "cells are not marked); precision, right over the answered ones; coverage, answered over marked. The base "
        "rate is the accuracy of always giving the column's commonest key answer: a column at or under it is "
        "no better than that. The high band: its cells, and how many of them are right."
    )

st.subheader("Exports")
context = {"engine": run.engine, "mode": run.mode, "engine_is_llm": run.is_llm}
skipped = [f for f in review.files if not f.ok]
exports = st.container(horizontal=True)
grid_run = run
decided_cells = shown_cells  # the exports say what the grid says: reviewers' decisions included
exports.download_button(
    "Download CSV",
    lambda: review_csv(grid_run.plan, decided_cells),
    "rr-review.csv",
    "text/csv",
    key="review_csv",
    on_click="ignore",
)
exports.download_button(
    "Download Excel workbook",
    lambda: review_xlsx(grid_run.plan, decided_cells, context=context),
    "rr-review.xlsx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    key="review_xlsx",
    on_click="ignore",
)
exports.download_button(
    "Download JSON (with traces)",
    lambda: json.dumps(
        review_json(grid_run.plan, decided_cells, traces=grid_run.traces, context=context, skipped=skipped),
        indent=1,
        default=str,
    ),  # fmt: skip
    "rr-review.json",
    "application/json",
    key="review_json",
    on_click="ignore",
)
reviewed = [c for c in shown_cells if c.decision]
exports.download_button(
    "Download the reviewed cells as an answer key (CSV)",
    answer_key_csv(reviewed),
    "rr-review-key.csv",
    "text/csv",
    key="review_key_csv",
    on_click="ignore",
    disabled=not reviewed,
    help="document, question, answers: the reviewers' answers, to score another method or model on "
    "the same corpus (load it as the answer key).",
)
