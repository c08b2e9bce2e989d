"""The Review screen on the offline engine: the generated sample corpus read (its damaged file
listed), the estimate before running, the grid filled and scored against the answer key, a
cell's citations opened on the Document screen, the playbook as CSV both ways, a failed cell
retried alone, and a second run answered from the run store."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from pages.common import reviewgrid
from pages.common.state import SESSION_KEY, Session
from rr_core import workbench
from rr_core.errors import ConfigError, ContextTooLongError
from rr_core.llm import offline
from rr_core.plans import Citation
from rr_core.review import MAIN, Cell, columns_csv, columns_from_rows, parse_answer_key, parse_columns, scores
from rr_core.review.sample import DAMAGED_NAME, sample_corpus
from rr_core.store import open_store
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 300
PRICE_MODEL = "gpt-4.1-mini"  # the offline engine's "Price as" by default


def open_review(**state: Any) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def session(at: AppTest) -> Session:
    value = at.session_state[SESSION_KEY]
    assert isinstance(value, Session)
    return value


def frame(at: AppTest, column: str) -> Any:
    """The table on screen with this column (AppTest keeps no key of a read-only table)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with {column!r} on screen"
    return found[-1]


def grid(at: AppTest) -> Any:
    found = [d.value for d in at.dataframe if list(d.value.index.names) == ["Document"]]
    assert found, "no grid on screen"
    return found[-1]


def expected_cells() -> tuple[list[Cell], Any]:
    """The sample grid run straight through the engine, with the screen's settings (its own store)."""
    sample = sample_corpus()
    store = open_store()
    files = workbench.read_review_corpus(list(sample.items), model=PRICE_MODEL, store=store, processes=1)
    engine = workbench.Engine.choose("offline")
    counter = counter_for_model(PRICE_MODEL)
    plan = workbench.plan_grid(files, sample.columns, engine.settings(method="rr"), counter, store=store)
    done = workbench.review(
        plan, engine.client(counter), concurrency=1, key=parse_answer_key(sample.answers_csv), store=store
    )
    return done.cells, plan


def test_the_sample_corpus_runs_end_to_end_with_scores_and_its_damaged_file_listed() -> None:
    at = open_review()
    corpus = frame(at, "Problem")
    assert len(corpus) == len(sample_corpus().items)
    damaged = corpus[corpus["File"] == DAMAGED_NAME].iloc[0]
    assert damaged["Read"] == "no" and damaged["Problem"] == "damaged" and "cut short" in damaged["Message"]
    assert any(DAMAGED_NAME.replace("-", "\\-").replace(".", "\\.") in w.value for w in at.warning)
    assert (corpus[corpus["File"] != DAMAGED_NAME]["Pages"] > 0).all()
    shown = "\n".join(m.value for m in at.markdown)
    # The estimate before running: three figures (a free engine's "would cost"), the
    # several-questions share and the cacheable share.
    assert shown.count("(would cost)") == 3
    assert "One pass for all questions:" in shown and "Cacheable share:" in shown
    assert "not an LLM" in shown
    assert not [d for d in at.dataframe if list(d.value.index.names) == ["Document"]]

    at.button(key="review_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = grid(at)
    cells, plan = expected_cells()
    assert table.shape == (len(plan.documents), len(plan.columns))
    want = {(c.document, c.column): reviewgrid.cell_text(c) for c in cells}
    for name, row in table.iterrows():
        for column, value in enumerate(row):
            assert value == want[(str(name), column)]
    # Scores per column and method, as the engine scores the same cells.
    score_table = frame(at, "Marked")
    assert list(score_table["Right"]) == [s.right for s in scores(plan, cells)]
    assert list(score_table["Marked"]) == [s.marked for s in scores(plan, cells)]
    # what to rely on: answered, precision, coverage and the base rate beside the accuracy
    assert list(score_table["Answered"]) == [s.answered for s in scores(plan, cells)]
    assert {"Precision", "Coverage", "Base rate", "High band"} <= set(score_table.columns)
    assert list(score_table["Base rate"]) == [
        "—" if s.base_rate is None else f"{s.base_rate:.0%}" for s in scores(plan, cells)
    ]
    captions = "\n".join(c.value for c in at.caption)
    assert "nothing paid: the engine is free (not an LLM)" in captions
    assert "Green: right against the answer key" in captions


def test_a_comparison_method_runs_on_sample_rows_sent_in_batches() -> None:
    at = open_review()
    at.selectbox(key="w.review_compare").set_value("baseline").run()
    at.number_input(key="w.review_compare_rows").set_value(2).run()
    at.radio(key="w.review_mode").set_value("batch").run()
    at.button(key="review_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = session(at).review.run
    assert run is not None and run.mode == "batch" and run.plan.compare is not None
    compared = {c.document_sha256 for c in run.cells if c.role == "compare"}
    assert compared == set(run.plan.compare_documents) and len(compared) == 2
    methods = set(frame(at, "Marked")["Method"])
    assert {run.plan.method_label("main"), run.plan.method_label("compare")} <= methods
    assert any(m.endswith("on the same rows") for m in methods)
    at.radio(key="w.review_role").set_value("compare").run()
    assert grid(at).shape == (2, len(run.plan.columns))


def test_a_second_run_is_answered_from_the_run_store() -> None:
    at = open_review()
    at.button(key="review_run").click().run()
    first = session(at).review.run
    assert first is not None and first.traces
    assert any(not call.cached for t in first.traces for call in t.calls)
    at.button(key="review_run").click().run()
    second = session(at).review.run
    assert second is not None and second is not first and second.traces
    assert all(call.cached for t in second.traces for call in t.calls)
    assert [reviewgrid.cell_text(c) for c in sorted(second.cells, key=lambda c: (c.document, c.column))] == [
        reviewgrid.cell_text(c) for c in sorted(first.cells, key=lambda c: (c.document, c.column))
    ]


def test_a_cell_shows_its_citations_and_opens_on_the_document_screen_at_the_cited_page() -> None:
    at = open_review()
    at.button(key="review_run").click().run()
    run = session(at).review.run
    assert run is not None
    cited = next(c for c in run.cells if c.citations and c.citations[0].page and c.citations[0].quote)
    row = [f.sha256 for f in run.plan.documents].index(cited.document_sha256)
    header = reviewgrid.headers(run.plan)[cited.column]
    at.session_state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": [[row, header]]}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert session(at).review.selected == (cited.document_sha256, cited.column, MAIN)
    citations = frame(at, "Quote check")
    assert list(citations["Page"]) == [c.page for c in cited.citations]
    assert list(citations["Quote"]) == [c.quote for c in cited.citations]
    assert any("share of the calls" in c.value and "nothing paid (not an LLM)" in c.value for c in at.caption)

    at.button(key="review_open_doc").click().run()
    assert not at.exception, [e.value for e in at.exception]
    focus = session(at).doc_focus
    assert focus is not None and focus.sha256 == cited.document_sha256
    assert any("Opened from the Review grid" in i.value for i in at.info)
    assert at.number_input(key="w.view_page").value == cited.citations[0].page
    page_caption = at.image[0].captions[0]
    assert "citation 1 of" in page_caption and "its quote highlighted" in page_caption

    at.button(key="doc_unfocus").click().run()
    assert session(at).doc_focus is None
    assert not any("Opened from the Review grid" in i.value for i in at.info)


def test_a_cells_details_open_once_per_click_and_stay_closed_once_dismissed() -> None:
    at = open_review()
    at.button(key="review_run").click().run()
    run = session(at).review.run
    assert run is not None
    header = reviewgrid.headers(run.plan)[1]
    at.session_state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": [[0, header]]}}
    at.run()
    assert session(at).review.details_open
    assert at.button(key="review_open_doc")  # the details, in the dialog
    assert any("Confidence:" in m.value or "check this" in m.value for m in at.markdown)
    # Another rerun (any widget) keeps it open; dismissed, it is closed and the selection let go.
    at.run()
    assert session(at).review.details_open and at.button(key="review_open_doc")
    session(at).review.details_open = False  # as the dialog's on_dismiss leaves it
    session(at).review.picked = None
    at.session_state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": []}}
    at.run()
    assert not session(at).review.details_open
    assert not [b for b in at.button if b.key == "review_open_doc"]
    # The same cell clicked again opens it again.
    at.session_state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": [[0, header]]}}
    at.run()
    assert session(at).review.details_open and at.button(key="review_open_doc")


def test_a_failed_cell_says_why_and_is_retried_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    real = offline.OfflineEngine.complete
    failing = {"on": True}

    def complete(self: Any, request: Any) -> Any:
        if failing["on"] and "terminate this agreement for convenience" in request.prompt:
            raise ContextTooLongError("The prompt does not fit (a test's failure).")
        return real(self, request)

    monkeypatch.setattr(offline.OfflineEngine, "complete", complete)
    at = open_review()
    # One question a column: the method that asks each question alone fails only that column.
    at.selectbox(key="w.review_method").set_value("baseline").run()
    at.button(key="review_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = session(at).review.run
    assert run is not None
    failed = [c for c in run.cells if c.error]
    assert failed and {c.column for c in failed} == {2}
    assert (grid(at).iloc[:, 2] == "failed").all()
    assert any("a test's failure" in w.value for w in at.warning)

    failing["on"] = False
    at.button(key="review_retry").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = session(at).review.run
    assert run is not None and not [c for c in run.cells if c.error]
    assert len(run.cells) == len(run.plan.documents) * len(run.plan.columns)
    assert "failed" not in set(grid(at).iloc[:, 2])


def test_the_playbook_goes_out_and_comes_back_as_csv(downloads: list[tuple[str | None, bytes]]) -> None:
    at = open_review()
    sent = dict(downloads)["playbook.csv"].decode()
    assert parse_columns(sent) == list(sample_corpus().columns)
    mine = (
        "question,type,instruction,choices\n"
        "Which party supplies the goods?,text,Name the company.,\n"
        "What kind of agreement is this?,choice,,Supply | Services | Distribution | Licence\n"
    )
    downloads.clear()
    at.file_uploader(key="w.review_playbook").set_value(("mine.csv", mine.encode(), "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    back = dict(downloads)["playbook.csv"].decode()
    assert back == columns_csv(parse_columns(mine))
    assert session(at).review.plan is not None
    assert [c.question for c in session(at).review.plan.columns] == [c.question for c in parse_columns(mine)]
    # Saved for the session, and used again after other questions were loaded.
    at.text_input(key="w.review_playbook_name").input("kinds").run()
    at.button(key="review_save_playbook").click().run()
    assert list(session(at).review.playbooks) == ["kinds"]


def test_uploaded_files_and_a_zip_are_read_and_the_bad_ones_listed() -> None:
    sample = sample_corpus(3)
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for item in sample.items[1:3]:
            archive.writestr(f"deal/{item.name}", item.data or b"")
    at = open_review()
    at.radio(key="w.review_source").set_value("upload").run()
    at.file_uploader(key="w.review_files").set_value(
        [
            (sample.items[0].name, sample.items[0].data, "text/plain"),
            ("deal.zip", packed.getvalue(), "application/zip"),
            (DAMAGED_NAME, sample.items[-1].data, "application/pdf"),
        ]
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    corpus = frame(at, "Problem")
    assert list(corpus["Read"]).count("yes") == 3
    assert list(corpus[corpus["Read"] == "no"]["Problem"]) == ["damaged"]
    # The sample's answer key is not applied to uploads.
    assert session(at).review.key_csv == ""
    at.button(key="review_run").click().run()
    assert grid(at).shape == (3, len(sample.columns))
    assert not any(c.correct is not None for c in (session(at).review.run.cells or []))  # type: ignore[union-attr]


def _cell(correct: bool | None, *, found: bool = True, error: str | None = None) -> Cell:
    return Cell(
        document="a.txt", document_sha256="0" * 64, column=0, question="q", type="text", role=MAIN,
        method="R&R", answer="Delaware", raw="Delaware", typed=True, found=found,
        citations=(Citation(page=2, quote="governed by the laws of Delaware", quote_check="verified"),),
        correct=correct, error=error,
    )  # fmt: skip


def test_only_a_right_answer_against_the_key_is_green() -> None:
    verified_unkeyed = _cell(None)
    assert reviewgrid.cell_style(verified_unkeyed, keyed=False) == ""
    assert reviewgrid.cell_style(verified_unkeyed, keyed=True) == ""
    assert reviewgrid.cell_style(_cell(True), keyed=True) == reviewgrid.RIGHT_STYLE
    assert reviewgrid.cell_style(_cell(False), keyed=True) == reviewgrid.WRONG_STYLE
    assert reviewgrid.cell_style(_cell(True), keyed=False) != reviewgrid.RIGHT_STYLE
    assert reviewgrid.cell_text(verified_unkeyed) == "Delaware  · p. 2"
    assert reviewgrid.cell_text(_cell(None, error="boom")) == "failed"
    assert reviewgrid.cell_text(None) == reviewgrid.PENDING


def test_a_cell_that_arrives_again_takes_its_place_and_the_others_stay() -> None:
    """The session's grid as cells arrive: one per place (role, document, column), a retry's
    cell in place of the failed one, however the list was set before."""
    from dataclasses import replace

    from pages.common.state import ReviewRun

    run = ReviewRun(plan=None)  # type: ignore[arg-type]  # the plan is not read here
    cells = [replace(_cell(None), document_sha256=f"{i:064d}", column=c) for i in range(50) for c in range(3)]
    for cell in cells:
        run.put_cell(replace(cell, error="boom", found=False))
    assert len(run.cells) == 150
    for cell in cells[::7]:  # the retry answers some
        run.put_cell(cell)
    assert len(run.cells) == 150 and {c.key for c in run.cells} == {c.key for c in cells}
    assert sum(1 for c in run.cells if c.error is None) == len(cells[::7])
    assert all(run.cells[i].error is None for i in range(0, 150, 7))  # in their places
    run.cells = list(reversed(run.cells))  # set whole elsewhere: still one per place
    run.put_cell(cells[1])
    assert len(run.cells) == 150 and run.cells[148] == cells[1]


def test_the_editor_rows_are_read_as_a_playbook_is() -> None:
    rows = [
        {"question": "Which law governs?", "type": "text", "instruction": None, "choices": ""},
        {"question": "  ", "type": "text", "instruction": "", "choices": ""},  # a new row, not filled in
        {"question": "Which kind?", "type": "choice", "instruction": "", "choices": "Supply | Services"},
    ]
    assert columns_from_rows(rows) == parse_columns(
        "question,type,instruction,choices\nWhich law governs?,text,,\nWhich kind?,choice,,Supply | Services\n"
    )
    with pytest.raises(ConfigError, match="line 3"):
        columns_from_rows([rows[0], {"question": "Which kind?", "type": "choice", "choices": ""}])


def test_review_hands_each_trace_over_before_its_cells() -> None:
    sample = sample_corpus(2, damaged=False)
    store = open_store()
    files = workbench.read_review_corpus(list(sample.items), model=PRICE_MODEL, store=store, processes=1)
    engine = workbench.Engine.choose("offline")
    counter = counter_for_model(PRICE_MODEL)
    plan = workbench.plan_grid(files, sample.columns, engine.settings(method="rr"), counter, store=store)
    seen: list[tuple[str, str]] = []
    done = workbench.review(
        plan, engine.client(counter), concurrency=1, store=store,
        on_trace=lambda t: seen.append(("trace", t.run_id)), on_cell=lambda c: seen.append(("cell", c.run_id)),
    )  # fmt: skip
    assert [run_id for kind, run_id in seen if kind == "trace"] == [t.run_id for t in done.traces]
    for index, (kind, run_id) in enumerate(seen):
        if kind == "cell":
            assert ("trace", run_id) in seen[:index]


# ---- Triage: the look, sort and filter, the To-check queue, decisions ----------------------------


def _triaged(at: AppTest) -> tuple[Any, list[Cell]]:
    """The run on screen with three cells of the first column marked as the engine would (the
    confidence fields are filled by the engine's triage; here by hand): two to check, one not found.
    The rest high. Returns the run and the three, in the order the queue walks them."""
    from dataclasses import replace

    run = session(at).review.run
    assert run is not None
    first_column = sorted(
        (c for c in run.cells if c.column == 0 and c.role == MAIN), key=lambda c: c.document
    )
    marked = {
        first_column[0].key: dict(confidence="check", score=0.2, confidence_reason="the quote does not contain the answer"),
        first_column[1].key: dict(confidence="check", score=0.4, confidence_reason="Baseline says Ohio"),
        first_column[2].key: dict(confidence="none", score=0.0, found=False, absent_by="reader", pages_to_read=(2, 1),
                                  answer="not stated in the document", citations=()),
    }  # fmt: skip
    run.cells = [replace(c, **marked.get(c.key, {"confidence": "high", "score": 0.9})) for c in run.cells]
    order = [next(c for c in run.cells if c.key == k) for k in marked]
    return run, order


def test_a_cell_to_check_looks_different_and_the_grid_sorts_and_filters_by_confidence() -> None:
    at = open_review()
    at.button(key="review_run").click().run()
    run, (check, other_check, not_found) = _triaged(at)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = grid(at)
    assert table.loc[check.document].iloc[0].startswith("check this · ")
    assert table.loc[not_found.document].iloc[0] == "Not found · read p. 2, 1"
    others = [
        v for name, row in table.iterrows() for v in row if "check this" not in v and "Not found" not in v
    ]
    assert others and not any(v.startswith(("check this", "Not found")) for v in others)
    # The style: amber for the cells to check, and never the green or red of the key for it alone.
    check_style = reviewgrid.cell_style(check, keyed=False)
    assert "#fff1d6" in check_style and reviewgrid.RIGHT_STYLE not in check_style
    assert reviewgrid.cell_style(replace_conf(check, "high"), keyed=False) == ""
    # Filter: only the cells to check; rows without one left out, the other cells blank.
    at.multiselect(key="w.review_show").set_value(["check"]).run()
    table = grid(at)
    assert set(table.index) == {check.document, other_check.document}
    assert all(v == "" or v.startswith("check this") for _, row in table.iterrows() for v in row)
    at.multiselect(key="w.review_show").set_value(["none"]).run()
    assert list(grid(at).index) == [not_found.document]
    # Sort: the least sure rows first.
    at.multiselect(key="w.review_show").set_value(list(reviewgrid.FILTERS)).run()
    at.selectbox(key="w.review_order").set_value("score").run()
    assert list(grid(at).index)[:3] == [not_found.document, check.document, other_check.document]
    # Selecting a cell of the sorted grid opens that cell, its reason beside it.
    header = reviewgrid.headers(run.plan)[0]
    at.session_state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": [[1, header]]}}
    at.run()
    assert session(at).review.selected == (check.document_sha256, 0, MAIN)
    assert any(
        "check this" in m.value and "the quote does not contain the answer" in m.value for m in at.markdown
    )
    # A cell not found opens with the pages to read, best first, and the first of them shown.
    at.session_state["w.review_grid"] = {"selection": {"rows": [], "columns": [], "cells": [[0, header]]}}
    at.run()
    assert session(at).review.selected == (not_found.document_sha256, 0, MAIN)
    assert any(
        m.value.startswith("**Not found**") and "Pages to read, best first: 2, 1." in m.value
        for m in at.markdown
    )
    assert any("the first page to read" in c for i in at.image for c in i.captions)


def replace_conf(cell: Cell, confidence: str) -> Cell:
    from dataclasses import replace

    return replace(cell, confidence=confidence)


def test_the_to_check_queue_keeps_accept_correct_and_absent_and_the_grid_scores_and_exports_follow(
    downloads: list[tuple[str | None, bytes]],
) -> None:
    from rr_core.review.export import review_csv

    at = open_review()
    at.button(key="review_run").click().run()
    run, (check, other_check, not_found) = _triaged(at)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # The queue walks the answers to check (least sure first), then the cell not found.
    said = "\n".join(m.value for m in at.markdown)
    assert (
        "1 of 3" in said
        and md_plain(check.document) in said
        and "the quote does not contain the answer" in said
    )
    # The cell's page, its quote highlighted.
    assert at.number_input(key=f"w.queue_page_{check.key}").value == check.citations[0].page
    # (the page is a chart whose words can be clicked; its caption says what is highlighted)
    assert any("the engine's quote highlighted" in c.value for c in at.caption)
    right_before = sum(s.right for s in scores(run.plan, run.cells) if s.column is None and s.role == MAIN)

    # Accept: the queue goes on to the next.
    at.button(key="queue_accept").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "2 of 3" in "\n".join(m.value for m in at.markdown)
    # Correct the second: a wrong answer, on page 3, with its words.
    at.text_input(key=f"w.queue_answer_{other_check.key}").input("Ohio").run()
    at.number_input(key=f"w.queue_page_{other_check.key}").set_value(3).run()
    at.text_input(key=f"w.queue_quote_{other_check.key}").input("the laws of Ohio").run()
    at.button(key="queue_correct").click().run()
    assert not at.exception, [e.value for e in at.exception]
    said = "\n".join(m.value for m in at.markdown)
    assert "3 of 3" in said and "Pages to read, best first: 2, 1" in said
    assert at.number_input(key=f"w.queue_page_{not_found.key}").value == 2  # the first page to read
    # Not in the document; then back to the first.
    at.button(key="queue_absent").click().run()
    at.button(key="queue_prev").click().run()
    at.button(key="queue_prev").click().run()
    said = "\n".join(m.value for m in at.markdown)
    assert "1 of 3" in said and md_plain("accepted: reviewed by local") in said

    store = open_store()
    kept = {d.document_sha256: d for d in store.decisions_for(f.sha256 for f in run.plan.documents)}
    assert {k: d.decision for k, d in kept.items()} == {
        check.document_sha256: "accepted", other_check.document_sha256: "corrected", not_found.document_sha256: "absent",
    }  # fmt: skip
    assert (kept[other_check.document_sha256].answer, kept[other_check.document_sha256].page) == ("Ohio", 3)
    assert all(d.owner == "local" and d.decided_at for d in kept.values())

    table = grid(at)
    assert table.loc[check.document].iloc[0].startswith("reviewed · ")
    assert table.loc[other_check.document].iloc[0] == "reviewed · Ohio  · p. 3"
    assert table.loc[not_found.document].iloc[0].startswith("reviewed · not in the document")
    # Scores follow the decisions: the corrected cell is now wrong against the key (it says Ohio).
    score_table = frame(at, "Marked")
    all_main = [i for i, s in enumerate(scores(run.plan, run.cells)) if s.column is None and s.role == MAIN][
        0
    ]
    assert int(score_table["Right"].iloc[all_main]) < right_before
    # The exports say what the grid says, and the reviewed cells come out as an answer key.
    decided = session_cells_after(at)
    assert "Ohio" in review_csv(run.plan, decided)
    key_csv = dict(downloads)["rr-review-key.csv"].decode()
    key = parse_answer_key(key_csv)
    assert len(key) == 3 and key.lookup(other_check.document, other_check.question) == ("Ohio",)
    assert key.lookup(not_found.document, not_found.question) == ("not stated",)


def md_plain(text: str) -> str:
    from pages.common.text import md

    return md(text)


def session_cells_after(at: AppTest) -> list[Cell]:
    """The cells the screen exports: the run's, with the store's decisions applied."""
    from rr_core.review.decisions import apply_decisions

    run = session(at).review.run
    assert run is not None
    return apply_decisions(
        run.plan, run.cells, open_store().decisions_for(f.sha256 for f in run.plan.documents)
    )
