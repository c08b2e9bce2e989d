"""Long work on the screens: what the user has queued or running (a review grid, a Lab sweep),
read from the store — so it shows the same on any replica and after the tab was closed — with
its progress, and Stop and Resume that work from any replica."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from pages.common import user
from pages.common.text import md
from rr_core import workbench
from rr_core.errors import LedgerError, RRError
from rr_core.store import WorkRecord

REFRESH_S = 2.0  # how often an open work's progress is read again

STATES = {
    "queued": "queued",
    "running": "running",
    "done": "done",
    "failed": "failed",
    "cancelled": "stopped",
}


def _records(kind: str) -> list[WorkRecord]:
    try:
        return user.history().list_work(20, kind=kind)
    except (RRError, LedgerError):
        return []


def submitted_line(record: WorkRecord) -> str:
    """When, by whom and which: two identical grids sent at different times are told apart."""
    me = user.current()
    who = me.name if record.owner in ("", me.owner) else record.owner
    when = record.created_at[:16].replace("T", " ")
    moved = record.updated_at[11:16]
    return f"id {record.work_id} · sent {when} UTC by {who}" + (
        f" · last update {moved} UTC" if moved else ""
    )


def where_it_runs() -> str:
    """Where submitted work runs, in words."""
    return "on the team's workers" if workbench.runs_on_workers(user.store_url()) else "in this app's process"


def work_panel(kind: str, title: str, *, on_show: Callable[[WorkRecord], None] | None = None) -> None:
    """The user's work of ``kind``, newest first; refreshed every ``REFRESH_S`` while any is open."""
    records = _records(kind)
    if not records:
        return
    live = any(r.is_open for r in records)

    @st.fragment(run_every=REFRESH_S if live else None)
    def panel() -> None:
        st.subheader(title)
        st.caption(
            f"Runs {where_it_runs()}, read from the store: it goes on when this tab closes, and any tab "
            "(or replica) shows it. Stop sends no further call; Resume asks only what is missing."
        )
        for record in _records(kind):
            row = st.container(border=True)
            left, right = row.columns([4, 1], vertical_alignment="center")
            unit = "cells" if kind == "review" else "runs"
            shown = STATES.get(record.state, record.state)
            if record.cancel_requested and record.state == "running":
                shown = "stopping"
            left.markdown(
                f"**{md(record.title)}** — {shown}, {record.done:,} of {record.total:,} {unit}"
                + (f" · attempt {record.attempts}" if record.attempts > 1 else "")
                + (f" · {md(record.worker)}" if record.worker else "")
            )
            left.caption(md(submitted_line(record)))
            if record.total:
                left.progress(min(1.0, record.done / record.total))
            if record.error:
                left.caption(f"Why it stopped: {md(record.error)}")
            key = f"work_{record.work_id}"
            if record.is_open and not record.cancel_requested:
                if right.button("Stop", key=f"{key}_stop", width="stretch"):
                    user.history().request_cancel(record.work_id)
                    st.rerun()
            elif record.state in ("cancelled", "failed") and right.button(
                "Resume", key=f"{key}_resume", width="stretch"
            ):
                try:
                    workbench.resume(record.work_id, owner=user.current().owner, url=user.store_url())
                except (RRError, LedgerError) as exc:
                    st.error(md(str(exc)))
                st.rerun()
            if (
                record.state in ("done", "cancelled")
                and on_show is not None
                and right.button("Show results", key=f"{key}_show", width="stretch")
            ):
                on_show(record)

    panel()
