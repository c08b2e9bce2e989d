"""Long work on the screens, in team mode (a PostgreSQL store): the Lab sends its sweep to the
workers as plain data, shows its progress read from the store (any replica would), and shows
the results of a finished sweep replayed from the store, paying nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rr_core.store import open_store
from rr_core.work import run_work

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 300


def test_the_lab_sends_a_sweep_to_the_workers_and_shows_it_done(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RR_STUDIO_DB", pg_url)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="w.lab_lengths").input("3000").run()
    at.text_input(key="w.lab_depths").input("0, 50").run()
    at.number_input(key="w.lab_repeats").set_value(1).run()
    at.checkbox(key="w.lab_bounds").uncheck().run()
    send = next(b for b in at.button if b.key == "lab_run")
    assert send.label == "Send to the workers"
    send.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Sent to the workers" in s.value for s in at.success)
    store = open_store(pg_url)
    [record] = store.list_work(kind="sweep")
    assert record.state == "queued" and record.total > 0
    assert "api_key" not in str(record.spec) and record.spec["sample"]  # the sample by name, no key
    assert any("queued" in m.value and "Sweeps on the workers" not in m.value for m in at.markdown)

    # A worker (here, this process) runs it; the screen reads its state from the store.
    finished = run_work(store, record.work_id)
    assert finished is not None and finished.state == "done"
    at.run()
    assert any(
        "done" in m.value and f"{finished.total:,} of {finished.total:,} runs" in m.value for m in at.markdown
    )
    show = next(b for b in at.button if b.key == f"work_{record.work_id}_show")
    # Shown from the runs the worker stored: no client is made, nothing is asked of an engine.
    import rr_core.engine
    import rr_core.kinds.sweep

    def no_client(*args: object, **kwargs: object) -> None:
        raise AssertionError("a client was made to show a stored sweep")

    monkeypatch.setattr(rr_core.engine.Engine, "client", no_client)
    monkeypatch.setattr(rr_core.kinds.sweep, "open_runner", no_client)
    show.click().run()
    assert not at.exception, [e.value for e in at.exception]
    result = at.session_state["lab_result"]["result"]
    stored = store.get_work(record.work_id)
    assert stored is not None and stored.result is not None
    runs = store.work_results(record.work_id)
    assert len(runs) == finished.total == len(result.scores) + len(result.bound_scores)
    # The counts the worker made, as its runs recorded them (not a replay's finds in the store).
    assert result.calls_made == stored.result["calls_made"] > 0 and result.calls_cached == 0
    # What is said paid is what the workers recorded they paid.
    assert at.session_state["lab_result"]["paid"] == (stored.result["paid_usd"], "")
    assert [s.series for s in result.summaries] == [s["method"] for s in stored.result["series"]]
    assert len(result.summaries) >= 2


def _wait(condition, what: str, limit: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    import time

    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {limit:.0f} s for {what}")
        time.sleep(0.05)


def _review(at_env: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_grid_run_in_the_background_goes_on_without_the_page_and_shows_its_cells() -> None:
    at = _review()
    at.button(key="review_background").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("in this app's process" in s.value for s in at.success)
    store = open_store()
    [record] = store.list_work(kind="review")
    assert "api_key" not in str(record.spec)
    # The page is not needed: the grid runs in a thread of this process and records its cells.
    _wait(lambda: (store.get_work(record.work_id) or record).state == "done", "the grid to finish")
    done = store.get_work(record.work_id)
    assert done is not None and done.done == done.total > 0
    at.run()
    show = next(b for b in at.button if b.key == f"work_{record.work_id}_show")
    show.click().run()
    assert not at.exception, [e.value for e in at.exception]
    grid = [d.value for d in at.dataframe if list(d.value.index.names) == ["Document"]][-1]
    assert grid.size == done.total  # every cell of the grid, from the store
    assert any("Scores against the answer key" in h.value for h in at.subheader)


def test_team_mode_sends_the_grid_to_the_workers(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RR_STUDIO_DB", pg_url)
    at = _review()
    send = at.button(key="review_run")
    assert send.label == "Send to the workers"
    send.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("on the team's workers" in s.value for s in at.success)
    store = open_store(pg_url)
    [record] = store.list_work(kind="review")
    assert record.state == "queued"  # no worker in this test: it waits for one
    # Sent again while it waits (a second click): the same work, and the screen says so.
    at.button(key="review_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("already queued or running: it was not sent again" in i.value for i in at.info)
    assert [w.work_id for w in store.list_work(kind="review")] == [record.work_id]
    finished = run_work(store, record.work_id)  # a worker picks it up
    assert finished is not None and finished.state == "done"
    at.run()
    assert any(f"{finished.total:,} of {finished.total:,} cells" in m.value for m in at.markdown)


def test_a_finished_grid_sent_again_asks_open_it_or_run_it_again() -> None:
    at = _review()
    at.button(key="review_background").click().run()
    store = open_store()
    [record] = store.list_work(kind="review")
    _wait(lambda: (store.get_work(record.work_id) or record).state == "done", "the grid to finish")
    # The same grid again: nothing is sent; the screen names the finished work and asks.
    at.button(key="review_background").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.work_id for w in store.list_work(kind="review")] == [record.work_id]
    assert any(f"already ran to the end: work `{record.work_id}`" in i.value for i in at.info)
    labels = {b.key: b.label for b in at.button}
    assert (
        labels["review_open_finished"] == "Open the finished grid"
        and labels["review_run_again"] == "Run it again"
    )
    # Open it: the finished grid's cells, from the store; nothing sent.
    at.button(key="review_open_finished").click().run()
    assert not at.exception, [e.value for e in at.exception]
    grid = [d.value for d in at.dataframe if list(d.value.index.names) == ["Document"]][-1]
    assert grid.size == record.total
    assert [w.work_id for w in store.list_work(kind="review")] == [record.work_id]
    assert "review_run_again" not in {b.key for b in at.button}  # asked once
    # Sent again, and this time run again: a second work.
    at.button(key="review_background").click().run()
    at.button(key="review_run_again").click().run()
    assert not at.exception, [e.value for e in at.exception]
    works = store.list_work(kind="review")
    assert len(works) == 2 and works[1].work_id == record.work_id
    _wait(lambda: (store.get_work(works[0].work_id) or works[0]).state == "done", "the second grid to finish")
