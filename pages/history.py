"""History: every question asked, with its runs. Open, compare two runs, export, delete several."""

from __future__ import annotations

from collections import OrderedDict

import pandas as pd
import streamlit as st

from pages.common import docs, results, sidebar, user
from pages.common import state as S
from pages.common.state import DocFocus
from pages.common.text import md, plural, short, when
from rr_core.documents import Document
from rr_core.errors import ConfigError, LedgerError, RRError
from rr_core.exports import to_csv, to_json, to_markdown
from rr_core.llm import describe_provider
from rr_core.plans import Outcome
from rr_core.store import StoredRun
from rr_core.traces import RunTrace

sidebar.page_setup()
state = st.session_state
st.title("History")
PAGE = 1_000  # runs a page of the history lists (a long history is read a page at a time)
page = S.session().history_page
try:
    store = user.history()
    total = store.count()
    page = min(page, max(0, (total - 1) // PAGE))
    rows: list[StoredRun] = store.list(limit=PAGE, offset=page * PAGE)
except (LedgerError, ConfigError) as exc:  # a file it cannot use, or a store this build does not have
    st.error(md(exc))
    st.stop()
st.caption(
    f"{user.whose_runs(store.location)} Every run is stored with its settings, prompts, responses, "
    "tokens and cost — never an API key."
)


def _turn_to(page: int) -> None:
    """Another page: what was selected on this one (rows, runs to compare) is let go."""
    S.session().history_page = page
    for key in ("history_table", "w.history_a", "w.history_b", "history_compare"):
        state.pop(key, None)


if total > PAGE:
    shown_from, shown_to = page * PAGE + 1, min(total, (page + 1) * PAGE)
    newer, where_, older = st.columns([1, 3, 1], vertical_alignment="center")
    where_.markdown(f"Runs **{shown_from:,}–{shown_to:,}** of {total:,}, newest first")
    newer.button("Newer runs", disabled=page == 0, width="stretch", on_click=_turn_to, args=(page - 1,))
    older.button(
        "Older runs", disabled=shown_to >= total, width="stretch", on_click=_turn_to, args=(page + 1,)
    )

if not rows:
    st.info("No runs yet. Ask a question on the Ask screen: every run is saved here.")
    st.page_link("pages/ask.py", label="Go to Ask")
    st.stop()

# One row per question asked (a batch: the methods run together), newest first.
batches: OrderedDict[str, list[StoredRun]] = OrderedDict()
for row in rows:
    batches.setdefault(row.batch, []).append(row)
batch_ids = list(batches)
by_run = {row.run_id: row for row in rows}


def _asked(runs: list[StoredRun]) -> tuple[str, int]:
    """What a batch asked: its first question, and how many questions in all (a run that asks
    several at once lists the first)."""
    asked = list(dict.fromkeys(r.question for r in reversed(runs)))  # oldest run first
    return asked[0], max(len(asked), *(r.questions for r in runs))


# A free engine's runs (offline, simulated) paid nothing: their money is what it would cost.
PAID, UNPAID = "cost (USD)", "would cost (USD), nothing paid"


def _money(runs: list[StoredRun]) -> dict[str, float | None]:
    """A batch's money column: paid, or (a free engine's) what the same tokens would cost."""
    total = round(sum(r.cost_usd for r in runs), 6)
    free = not any(describe_provider(r.provider).is_llm for r in runs)
    return {PAID: None, UNPAID: total} if free else {PAID: total, UNPAID: None}


def _cost_text(run: RunTrace) -> str:
    if run.is_llm:
        return f"{run.cost_usd:.5f}"
    return f"would cost {run.cost_usd:.5f}, nothing paid"


listed = [_asked(runs) for runs in batches.values()]
table = pd.DataFrame(
    [
        {
            "when": when(runs[0].created_at),
            # The count before the question: a long question cut at the column's edge would hide it.
            "questions": count,
            "question": first,
            "document": runs[0].document,
            "methods": ", ".join(dict.fromkeys(r.label for r in reversed(runs))),
            "answers": sum(1 for r in runs if r.error is None),
            **_money(runs),
            "provider / model": f"{runs[0].provider} / {runs[0].model}",
        }
        for runs, (first, count) in zip(batches.values(), listed, strict=True)
    ]
)
# Only the money columns that hold something: a list of free runs shows no "cost" at all.
table = table.drop(columns=[c for c in (PAID, UNPAID) if table[c].isna().all()])
st.markdown("**Questions asked** — select rows to open, export or delete them.")
event = st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    height=min(38 + 35 * len(batches), 320),
    column_config={
        **{c: st.column_config.NumberColumn(format="$%.5f") for c in (PAID, UNPAID) if c in table.columns},
        "questions": st.column_config.NumberColumn(
            width=80, help="How many questions were asked together (the first is shown)"
        ),
    },
    on_select="rerun",
    selection_mode="multi-row",
    key="history_table",
)
selected = [batch_ids[i] for i in event.selection.rows if i < len(batch_ids)]
st.caption(
    f"{plural(sum(count for _, count in listed), 'question')}, {plural(len(rows), 'run')} stored in {md(store.location)}."
)


def load(run_id: str) -> RunTrace | None:
    """A stored run, or None (with a message) when it is gone or unreadable."""
    try:
        trace = store.get(run_id)
    except LedgerError as exc:
        st.error(md(exc))
        return None
    if trace is None:
        st.warning(f"That run no longer exists ({md(run_id)}).")
    return trace


document: Document | None
try:
    document = docs.active_document()
except RRError:
    document = None


def _doc_for(trace: RunTrace) -> object:
    return document if document is not None and document.sha256 == trace.document_sha256 else None


open_tab, compare_tab, export_tab, delete_tab = st.tabs(["Open", "Compare two runs", "Export", "Delete"])


def _calls(trace: RunTrace) -> None:
    """A run's calls, then each prompt and response."""
    st.dataframe(pd.DataFrame(results.calls_rows(trace)), hide_index=True, width="stretch")
    for call in trace.calls:
        st.markdown(f"**{md(call.id)}** — prompt ({len(call.prompt):,} characters), then the response")
        st.code(
            call.prompt[:3_000] + ("\n…" if len(call.prompt) > 3_000 else ""),
            language=None,
            wrap_lines=True,
            height=160,
        )
        st.code(call.response or "(no response)", language="json", wrap_lines=True)


def _open_in_document(trace: RunTrace, question: int = 0) -> None:
    """A button that opens the run's document on the Document screen, from the document store
    (any run saved with its document: not only the one open now), at its cited page."""
    if not st.button("Open in the Document screen", key=f"hist_doc_{trace.run_id}_{question}"):
        return
    outcome = trace.outcomes[question] if question < len(trace.outcomes) else None
    first = outcome.first if outcome is not None and outcome.stated else None
    S.session().doc_focus = DocFocus(
        sha256=trace.document_sha256, name=trace.document, page=first.page if first else None,
        quote=first.quote if first else "", trace=trace, question=question, key=f"history:{trace.run_id}",
        origin="the History",
    )  # fmt: skip
    S.session().view_citation = 0
    if first is not None and first.page is not None:
        st.session_state["view_page"] = first.page
    st.session_state.pop("w.doc_show", None)
    st.switch_page("pages/document.py")


def _open_one_question(runs: list[RunTrace]) -> None:
    """One question asked of several methods: a card per method, side by side."""
    st.markdown(
        f"**Question:** {md(runs[0].question)}  \n**Document:** {md(runs[0].document)} · {md(when(runs[0].started_at))}"
    )
    columns = st.columns(min(len(runs), 3))
    for i, trace in enumerate(runs):
        with columns[i % len(columns)], st.container(border=True):
            results.result_card(trace, _doc_for(trace))  # type: ignore[arg-type]
            _open_in_document(trace)
            with st.expander("Calls, prompts and responses"):
                _calls(trace)


def _open_several_questions(batch: str, runs: list[RunTrace], questions: list[str]) -> None:
    """Questions asked together: the question × method table the Ask screen shows, each answer
    under its own question, and the runs (a method that asks one question a call made one run
    per question; one that retrieves for all of them, one run)."""
    st.markdown(
        f"**{len(questions)} questions asked together** of {md(runs[0].document)} · {md(when(runs[0].started_at))}"
    )
    results.answers_table(runs, questions, key=f"history_answers_{batch}")
    document = _doc_for(runs[0])
    with st.expander("Each answer in full, by question"):
        results.answers_by_question(runs, questions, document)  # type: ignore[arg-type]
    with st.expander(f"The {plural(len(runs), 'run')}: tokens, cost, calls, prompts and responses"):
        picked = st.selectbox(
            "Run",
            range(len(runs)),
            format_func=lambda i: (
                f"{results.title(runs[i])} · "
                + (
                    short(runs[i].question, 60)
                    if len(runs[i].questions) == 1
                    else plural(len(runs[i].questions), "question")
                )
            ),
            key=f"w.history_run_{batch}",
        )
        trace = runs[picked or 0]
        if trace.error:
            results.show_trace_error(trace)
        results.run_facts(trace)
        _calls(trace)


with open_tab:
    if not selected:
        st.caption("Select a question in the table above to open its runs.")
    for batch in selected[:3]:
        runs = [t for t in (load(r.run_id) for r in reversed(batches[batch])) if t is not None]
        if not runs:
            continue
        questions = results.asked(runs)
        if len(questions) > 1:
            _open_several_questions(batch, runs, questions)
        else:
            _open_one_question(runs)
    if len(selected) > 3:
        st.caption(f"Showing the first 3 of {len(selected)} selected questions.")

with compare_tab:
    run_ids = [r.run_id for r in rows]

    def _run_line(run_id: str) -> str:
        r = by_run[run_id]
        # The count next to the method, where a narrow picker does not cut it off.
        count = f" ({r.questions} questions)" if r.questions > 1 else ""
        return f"{r.label}{count} · {short(r.question, 50)} · {short(r.document, 25)} · {when(r.created_at)}"

    left_col, right_col = st.columns(2)
    first = left_col.selectbox("Run A", run_ids, index=0, format_func=_run_line, key="w.history_a")
    second = right_col.selectbox(
        "Run B", run_ids, index=1 if len(run_ids) > 1 else 0, format_func=_run_line, key="w.history_b"
    )
    a, b = (load(first), load(second)) if first and second else (None, None)
    if a is not None and b is not None:
        # Two runs of one question each: each its own question, side by side. A run of several
        # questions: one question at a time, the other run's answer to it (if it asked it).
        several = len(a.questions) > 1 or len(b.questions) > 1
        compared = list(dict.fromkeys([*a.questions, *b.questions])) if several else []
        question = compared[0] if compared else ""
        if several:
            number = st.selectbox(
                "Question compared",
                range(len(compared)),
                format_func=lambda i: f"Q{i + 1} of {len(compared)}. {short(compared[i], 90)}",
                key=f"w.history_question_{first}_{second}",
            )
            question = compared[number or 0]

        def _asks(trace: RunTrace) -> bool:
            return not several or question in trace.questions

        def _outcome(trace: RunTrace) -> Outcome | None:
            if not several:
                return trace.outcomes[0] if trace.outcomes else None
            return next((o for o in trace.outcomes if o.question == question), None)

        def _said(trace: RunTrace, outcome: Outcome | None) -> str:
            if not _asks(trace):
                return "— (not asked in this run)"
            if outcome is None:
                return f"— (failed: {trace.error})" if trace.error else "—"
            return outcome.error or outcome.answer_text or "—"

        oa, ob = _outcome(a), _outcome(b)
        whole = " (whole run)" if several else ""
        facts = {
            "question": tuple(
                (question or t.question) if _asks(t) else "— (not asked in this run)" for t in (a, b)
            ),
            "questions in the run": (str(len(a.questions)), str(len(b.questions))),
            "document": (a.document, b.document),
            "asked": (when(a.started_at), when(b.started_at)),
            "method": (results.title(a), results.title(b)),
            "answer": (_said(a, oa), _said(b, ob)),
        }
        if any(o is not None and o.correct is not None for o in (oa, ob)):
            facts["right / wrong"] = tuple(
                "not known" if o is None or o.correct is None else ("✓ right" if o.correct else "✗ wrong")
                for o in (oa, ob)
            )
        facts |= {
            "cited pages": tuple(results.cited_pages(o, None) if o else "—" for o in (oa, ob)),
            "quote check": tuple(results.citation_checks(o, None) if o else "—" for o in (oa, ob)),
            "retrieved pages": tuple(" ".join(map(str, o.retrieved_pages)) if o else "—" for o in (oa, ob)),
            f"input tokens{whole}": (f"{a.usage.prompt_tokens:,}", f"{b.usage.prompt_tokens:,}"),
            f"output tokens{whole}": (f"{a.usage.output_tokens:,}", f"{b.usage.output_tokens:,}"),
            f"cost (USD){whole}": (_cost_text(a), _cost_text(b)),
            f"latency (s){whole}": (f"{a.latency_s:.2f}", f"{b.latency_s:.2f}"),
            "provider / model": (f"{a.provider} / {a.model}", f"{b.provider} / {b.model}"),
        }
        facts = {k: (v[0] or "—", v[1] or "—") for k, v in facts.items()}
        st.dataframe(
            pd.DataFrame(
                {
                    "": list(facts),
                    "A": [v[0] for v in facts.values()],
                    "B": [v[1] for v in facts.values()],
                    "same": ["✓" if v[0] == v[1] else "" for v in facts.values()],
                }
            ),
            hide_index=True,
            width="stretch",
            key="history_compare",
            # Both runs in view beside the sidebar at 1024 px (about 560 px): a long answer is cut,
            # not run B (select a cell to read all of it).
            column_config={
                "": st.column_config.TextColumn(width=140, pinned=True),
                "A": st.column_config.TextColumn(width=180),
                "B": st.column_config.TextColumn(width=180),
                "same": st.column_config.TextColumn(width=50),
            },
        )
        if whole:
            st.caption(
                "The answer, its check and the pages are for the question compared; tokens, cost and "
                "latency are the whole run's (every question it asked)."
            )

with export_tab:
    chosen = selected or batch_ids[:1]
    exported = [t for b in chosen for t in (load(r.run_id) for r in reversed(batches[b])) if t is not None]
    st.caption(
        f"Exporting {plural(len(exported), 'run')} of {plural(len(chosen), 'question')}"
        + ("" if selected else " (the newest; select rows above to choose)")
        + ". Each row and section names its own question and document."
    )
    if exported:
        include_prompts = st.checkbox("Include prompts in the JSON", key="w.hx_prompts")
        c1, c2, c3 = st.columns(3)
        c1.download_button(
            "Download JSON",
            to_json(exported, include_prompts=include_prompts),
            "rr-runs.json",
            "application/json",
            key="hx_json",
            on_click="ignore",
        )
        c2.download_button(
            "Download CSV", to_csv(exported), "rr-runs.csv", "text/csv", key="hx_csv", on_click="ignore"
        )
        c3.download_button(
            "Download report (Markdown)",
            to_markdown(exported),
            "rr-runs.md",
            "text/markdown",
            key="hx_md",
            on_click="ignore",
        )
        with st.expander("Preview the Markdown report"):
            st.text(to_markdown(exported))


def _delete(batch_list: list[str]) -> None:
    run_ids = [r.run_id for b in batch_list for r in batches.get(b, [])]
    try:
        gone = store.delete(run_ids)
    except LedgerError as exc:
        S.session().delete_message = ("error", f"The runs could not be deleted ({exc}).")
    else:
        S.session().delete_message = (
            "success",
            f"Deleted {plural(gone, 'run')} of {plural(len(batch_list), 'question')}.",
        )
        # The selection is by row number: kept, it would select the rows that moved up.
        state["history_table"] = {"selection": {"rows": [], "columns": []}}
    S.session().confirm_delete = None


def _cancel_delete() -> None:
    S.session().confirm_delete = None


with delete_tab:
    message, S.session().delete_message = S.session().delete_message, None
    if message:
        getattr(st, message[0])(md(message[1]))
    if not selected:
        st.caption("Select the questions to delete in the table above (several at once).")
    else:
        runs_count = sum(len(batches[b]) for b in selected)
        if S.session().confirm_delete == selected:
            st.warning(
                f"Delete {plural(len(selected), 'question')} ({plural(runs_count, 'run')}) for good, with their "
                "prompts and responses? This cannot be undone."
            )
            yes, no = st.columns(2)
            yes.button(
                "Yes, delete them", type="primary", key="delete_yes", on_click=_delete, args=(selected,)
            )
            no.button("Cancel", key="delete_no", on_click=_cancel_delete)
        elif st.button(f"Delete {plural(len(selected), 'selected question')}…", key="delete_ask"):
            S.session().confirm_delete = selected
            st.rerun()
