"""History: every run in the ledger. List, open, compare two, export, delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import ui
from rr_core.errors import LedgerError
from rr_core.exports import to_csv, to_json, to_markdown
from rr_core.ledger import Ledger, LedgerRow
from rr_core.runs import RunTrace

ui.page_setup()
state = st.session_state
st.title("History")
st.caption("Every run is stored with its settings, prompts, tokens and cost — never an API key.")

try:
    ledger = Ledger()
    rows: list[LedgerRow] = ledger.list(limit=500)
except LedgerError as exc:
    st.error(str(exc))
    st.stop()

if not rows:
    st.info("No runs yet. Ask a question on the Ask screen: every run is saved here.")
    st.page_link("pages/ask.py", label="Go to Ask")
    st.stop()

by_id = {row.id: row for row in rows}
ids = list(by_id)


def describe(run_id: int) -> str:
    """A run as one line for menus."""
    row = by_id[run_id]
    question = row.question if len(row.question) <= 60 else row.question[:57] + "…"
    return f"#{row.id} · {ui.label(row.method)} · {question} · {row.created_at}"


table = pd.DataFrame(
    [
        {
            "id": r.id,
            "when": r.created_at.replace("T", " ")[:16],
            "method": ui.label(r.method),
            "question": r.question,
            "answer": r.answer if r.error is None else f"error: {r.error}",
            "page": r.page,
            "cost (USD)": round(r.cost_usd, 6),
            "input tokens": r.input_tokens,
            "output tokens": r.output_tokens,
            "latency (s)": r.latency_s,
            "provider / model": f"{r.provider} / {r.model}",
            "document": r.document,
            "batch": r.batch,
        }
        for r in rows
    ]
)
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    height=min(38 + 35 * len(rows), 320),
    column_config={"cost (USD)": st.column_config.NumberColumn(format="$%.5f")},
    key="history_table",
)
st.caption(f"{ui.plural(len(rows), 'run')} stored in {ledger.path}.")


def load(run_id: int) -> RunTrace | None:
    """A stored run, or None (with a message) when it is gone or unreadable."""
    try:
        trace = ledger.get(run_id)
    except LedgerError as exc:
        st.error(str(exc))
        return None
    if trace is None:
        st.warning(f"Run #{run_id} no longer exists.")
    return trace


document = None
try:
    document = ui.active_document()
except Exception:  # noqa: BLE001 - the supporting text is optional here; the runs still show
    document = None

open_tab, compare_tab, export_tab, delete_tab = st.tabs(
    ["Open a run", "Compare two runs", "Export", "Delete"]
)

with open_tab:
    opened = st.selectbox("Run", ids, format_func=describe, key="w.history_open")
    trace = load(opened) if opened is not None else None
    if trace is not None:
        st.markdown(f"**Question:** {ui.md(trace.question)}  \n**Document:** {ui.md(trace.document)}")
        ui.result_column(trace, document)
        st.markdown("**Calls**")
        st.dataframe(
            pd.DataFrame(ui.calls_rows(trace)), hide_index=True, width="stretch", key="history_calls"
        )
        with st.expander("Settings"):
            st.json(trace.settings)
        with st.expander("Prompts and responses"):
            for i, call in enumerate(trace.calls, start=1):
                stage = "retrieval" if call.stage == "retrieve" else "answer"
                st.markdown(f"**Call {i}: {stage}**" + (f", chunk {call.chunk}" if call.chunk else ""))
                st.code(call.response or "(no response)", language="json", wrap_lines=True)

with compare_tab:
    left_col, right_col = st.columns(2)
    first = left_col.selectbox("Run A", ids, index=0, format_func=describe, key="w.history_a")
    second = right_col.selectbox(
        "Run B", ids, index=1 if len(ids) > 1 else 0, format_func=describe, key="w.history_b"
    )
    pair = [load(first), load(second)] if first is not None and second is not None else []
    if len(pair) == 2 and pair[0] is not None and pair[1] is not None:
        a, b = pair
        facts = {
            "method": (ui.label(a.method), ui.label(b.method)),
            "answer": (a.answer or "", b.answer or ""),
            "cited page": (str(a.page or "—"), str(b.page or "—")),
            "retrieved pages": (
                " ".join(map(str, a.retrieved_pages)) or "—",
                " ".join(map(str, b.retrieved_pages)) or "—",
            ),
            "input tokens": (f"{a.usage.prompt_tokens:,}", f"{b.usage.prompt_tokens:,}"),
            "output tokens": (f"{a.usage.output_tokens:,}", f"{b.usage.output_tokens:,}"),
            "cost (USD)": (f"{a.cost_usd:.5f}", f"{b.cost_usd:.5f}"),
            "latency (s)": (f"{a.latency_s:.2f}", f"{b.latency_s:.2f}"),
            "k / N / c": tuple(
                f"{t.settings.get('reminder_every'):,} / {t.settings.get('top_k')} / {t.settings.get('chunk_size'):,}"
                for t in (a, b)
            ),
            "provider / model": (f"{a.provider} / {a.model}", f"{b.provider} / {b.model}"),
        }
        st.dataframe(
            pd.DataFrame(
                {
                    "": list(facts),
                    f"A: #{first}": [v[0] for v in facts.values()],
                    f"B: #{second}": [v[1] for v in facts.values()],
                    "same": ["✓" if v[0] == v[1] else "" for v in facts.values()],
                }
            ),
            hide_index=True,
            width="stretch",
            key="history_compare",
        )
        left, right = st.columns(2)
        with left, st.container(border=True):
            ui.result_column(a, document)
        with right, st.container(border=True):
            ui.result_column(b, document)

with export_tab:
    batch_of_opened = by_id[opened].batch if opened is not None else None
    default = [i for i in ids if by_id[i].batch == batch_of_opened] or ids[:1]
    chosen = st.multiselect(
        "Runs to export",
        ids,
        default=default,
        format_func=describe,
        key="w.history_export",
        help="By default, the runs asked together with the opened run.",
    )
    exported = [t for t in (load(i) for i in chosen) if t is not None]
    if exported:
        c1, c2, c3 = st.columns(3)
        c1.download_button(
            "Download JSON", to_json(exported), "rr-runs.json", "application/json", key="hx_json"
        )
        c2.download_button("Download CSV", to_csv(exported), "rr-runs.csv", "text/csv", key="hx_csv")
        c3.download_button(
            "Download report (Markdown)", to_markdown(exported), "rr-runs.md", "text/markdown", key="hx_md"
        )
        with st.expander("Preview the Markdown report"):
            st.markdown(to_markdown(exported))
    else:
        st.caption("Choose one or more runs.")


def _ask_delete(run_id: int) -> None:
    state["confirm_delete"] = run_id


def _cancel_delete() -> None:
    state.pop("confirm_delete", None)


def _delete(run_id: int) -> None:
    try:
        gone = ledger.delete(run_id)
    except LedgerError as exc:
        state["delete_message"] = ("error", f"Run #{run_id} could not be deleted ({exc}).")
    else:
        state["delete_message"] = (
            "success",
            f"Deleted run #{run_id}." if gone else f"Run #{run_id} was already gone.",
        )
    state.pop("confirm_delete", None)


with delete_tab:
    message = state.pop("delete_message", None)
    if message:
        getattr(st, message[0])(message[1])
    target = st.selectbox("Run to delete", ids, format_func=describe, key="w.history_delete")
    pending = state.get("confirm_delete")
    if pending is not None and pending in by_id:
        st.warning(f"Delete run #{pending} for good? This cannot be undone.")
        yes, no = st.columns(2)
        yes.button("Yes, delete it", type="primary", key="delete_yes", on_click=_delete, args=(pending,))
        no.button("Cancel", key="delete_no", on_click=_cancel_delete)
    elif target is not None:
        st.button(f"Delete run #{target}…", key="delete_ask", on_click=_ask_delete, args=(target,))
