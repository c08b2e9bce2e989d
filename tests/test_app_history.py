"""The History screen: one row per question asked, rows selected, opened, compared, exported
and deleted several at a time.

AppTest cannot click rows of a dataframe, but Streamlit lets the selection be set through
session state (``{"selection": {"rows": [...]}}`` under the table's key), which is what a
click sends: the tests select rows that way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import markdown_table
from streamlit.testing.v1 import AppTest

from pages.common.text import md
from rr_core.llm.offline import OfflineEngine
from rr_core.methods import parse_spec, plan_questions
from rr_core.questions import Question, mark_traces
from rr_core.runs import Executor, RunTrace
from rr_core.samples import get_sample, questions_middle_first
from rr_core.settings import RunSettings
from rr_core.sources import sample_document
from rr_core.store import open_store
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 240
PRICE_MODEL = "gpt-4.1-mini"
CONTRACT = questions_middle_first("contract")
PROTOCOL = questions_middle_first("protocol")


def ask(
    sample: str, question: str | list[str] | list[Question], methods: tuple[str, ...] = ("baseline", "rr")
) -> tuple[str, list[RunTrace]]:
    """Runs saved straight through the engine, as the Ask screen saves them: one batch (marked
    right or wrong where the questions carry their answers)."""
    counter = counter_for_model(PRICE_MODEL)
    document = sample_document(sample, counter)
    base = RunSettings(method="baseline", model="offline", provider="offline", price_model=PRICE_MODEL)
    questions = [
        q if isinstance(q, Question) else Question(q)
        for q in ([question] if isinstance(question, str) else question)
    ]
    plans = [p for m in methods for p in plan_questions(document, questions, parse_spec(m, base), counter)]
    with Executor(OfflineEngine(counter), concurrency=2) as executor:
        traces = executor.run(document, plans)
    mark_traces(traces, questions)
    return open_store().save_batch(traces), traces


@pytest.fixture
def three_questions() -> list[tuple[str, list[RunTrace]]]:
    """Three questions asked in order: two on the contract, one on the protocol (newest)."""
    return [
        ask("contract", CONTRACT[0].question),
        ask("contract", CONTRACT[1].question),
        ask("protocol", PROTOCOL[0].question),
    ]


def open_history() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/history.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def select(at: AppTest, *rows: int) -> None:
    """What clicking the rows' checkboxes sends."""
    at.session_state["history_table"] = {"selection": {"rows": list(rows), "columns": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def table(at: AppTest) -> pd.DataFrame:
    return at.dataframe(key="history_table").value


def tab(at: AppTest, label: str) -> Any:
    return next(t for t in at.tabs if t.label == label)


def texts(node: Any, kind: str = "markdown") -> list[str]:
    return [str(e.value) for e in node.get(kind)]


# ---- the list ----------------------------------------------------------------------------------


def test_no_runs_yet_says_where_they_come_from() -> None:
    at = open_history()
    assert any("No runs yet" in i.value for i in at.info)


def test_one_row_per_question_newest_first(three_questions) -> None:
    at = open_history()
    rows = table(at).to_dict("records")
    assert [r["question"] for r in rows] == [PROTOCOL[0].question, CONTRACT[1].question, CONTRACT[0].question]
    assert [r["document"] for r in rows] == [traces[0].document for _, traces in reversed(three_questions)]
    assert rows[0]["document"] != rows[1]["document"] == rows[2]["document"]
    for row, (_, traces) in zip(rows, reversed(three_questions), strict=True):
        assert row["methods"] == "Baseline, R&R"
        assert row["answers"] == 2
        # The offline engine paid nothing: its column says what the same tokens would cost.
        assert "cost (USD)" not in row
        assert row["would cost (USD), nothing paid"] == pytest.approx(
            sum(t.cost_usd for t in traces), abs=1e-6
        )
        assert row["provider / model"] == "offline / offline"
    assert any(c.startswith("3 questions, 6 runs stored in") for c in texts(at, "caption"))
    # Nothing selected: each tab says to select.
    assert any("Select a question in the table above" in c for c in texts(tab(at, "Open"), "caption"))
    assert any("Select the questions to delete" in c for c in texts(tab(at, "Delete"), "caption"))


def test_several_questions_asked_together_are_one_row_named_by_the_first() -> None:
    asked = [q.question for q in CONTRACT[:3]]
    ask("contract", asked)
    at = open_history()
    rows = table(at).to_dict("records")
    assert len(rows) == 1
    # The count in its own column, before the question (a cut-off question cannot hide it).
    assert list(table(at).columns)[:3] == ["when", "questions", "question"]
    assert rows[0]["questions"] == 3 and rows[0]["question"] == asked[0]
    assert any(c.startswith("3 questions, 4 runs stored in") for c in texts(at, "caption"))
    assert rows[0]["methods"] == "Baseline, R&R" and rows[0]["answers"] == 4


def test_a_several_question_batch_opens_by_question_not_as_cards_under_the_first() -> None:
    known = CONTRACT[:3]
    questions = [Question(q.question, tuple(q.answers), (q.page,)) for q in known]
    batch, traces = ask("contract", questions, methods=("baseline", "rr", "oracle"))
    at = open_history()
    select(at, 0)
    opened = tab(at, "Open")
    shown = texts(opened)
    # The header says what was asked: three questions, not the first one alone.
    assert not any(m.startswith("**Question:**") for m in shown)
    assert any(m.startswith("**3 questions asked together**") for m in shown)
    # The Ask screen's question × method table: one row a question, one column a method.
    answers = next(d.value for d in opened.get("dataframe") if list(d.value.columns)[:1] == ["Question"])
    assert list(answers["Question"]) == [q.question for q in known]
    assert list(answers.columns) == [
        "Question",
        "Baseline",
        next(c for c in answers.columns if c.startswith("R&R")),
        "Oracle",
    ]
    for row, q in zip(answers.to_dict("records"), known, strict=True):
        assert row["Oracle"].startswith(f"✓ right · p. {q.page} · ")
    right = {
        label: sum(1 for t in traces if t.label == label for o in t.outcomes if o.correct)
        for label in ("Baseline", "Oracle")
    }
    assert {r["Method and settings"]: r["Right"] for r in markdown_table(opened, "Method and settings")}[
        "Oracle"
    ] == f"{right['Oracle']}/3"
    # Each answer under its own question: no card titled "Baseline" answering an unnamed question.
    assert [m for m in shown if m.startswith("**Q")] == [
        f"**Q{i}.** {md(q.question)}" for i, q in enumerate(known, 1)
    ]
    assert not any(m.startswith("#### ") for m in shown)
    # Every run (three Baseline, one R&R, three Oracle) can be opened with its calls.
    runs = opened.selectbox(key=f"w.history_run_{batch}")
    assert len(runs.options) == 7


def test_runs_asked_on_the_ask_screen_are_one_row() -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.button(key="run").click().run()
    traces = at.session_state["results"]["traces"]
    at.switch_page("pages/history.py").run()
    assert not at.exception
    rows = table(at).to_dict("records")
    assert len(rows) == 1
    assert rows[0]["question"] == CONTRACT[0].question and rows[0]["methods"] == "Baseline, R&R"
    assert open_store().count() == len(traces) == 2


# ---- selecting and opening ---------------------------------------------------------------------


def test_selected_rows_open_with_their_runs(three_questions) -> None:
    at = open_history()
    select(at, 0, 2)
    opened = tab(at, "Open")
    questions = [m for m in texts(opened) if m.startswith("**Question:**")]
    assert [q.split("  \n")[0] for q in questions] == [
        f"**Question:** {md(PROTOCOL[0].question)}",
        f"**Question:** {md(CONTRACT[0].question)}",
    ]
    titles = [m for m in texts(opened) if m.startswith("#### ")]
    assert titles == ["#### Baseline", f"#### {md('R&R')}"] * 2
    _, protocol_runs = three_questions[2]
    assert f"**Cited page:** p. {protocol_runs[1].page}" in texts(opened)
    # Each run's calls, with the prompt as sent and the response.
    calls = [d.value for d in opened.get("dataframe")]
    assert len(calls) == 4
    assert list(calls[1]["stage"]) == ["retrieval", "answer"]
    assert list(calls[1]["input tokens"]) == [c.usage.prompt_tokens for c in protocol_runs[1].calls]


# ---- delete several ----------------------------------------------------------------------------


def test_delete_several_asks_first_then_deletes_only_those(three_questions) -> None:
    at = open_history()
    select(at, 0, 2)
    deleting = tab(at, "Delete")
    assert deleting.button(key="delete_ask").label == "Delete 2 selected questions…"
    at.button(key="delete_ask").click().run()
    warning = [w.value for w in at.warning]
    assert warning == [
        "Delete 2 questions (4 runs) for good, with their prompts and responses? This cannot be undone."
    ]
    at.button(key="delete_no").click().run()
    assert open_store().count() == 6  # cancelled: nothing deleted
    assert not at.warning

    at.button(key="delete_ask").click().run()
    at.button(key="delete_yes").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == [md("Deleted 4 runs of 2 questions.")]
    store = open_store()
    assert store.count() == 2
    kept_batch, kept = three_questions[1]
    assert {r.run_id for r in store.list()} == {t.run_id for t in kept}
    assert list(table(at)["question"]) == [CONTRACT[1].question]


def test_after_deleting_the_remaining_rows_are_not_selected(three_questions) -> None:
    # The selection is by row number: left in place it would select whatever moved up.
    at = open_history()
    select(at, 0, 2)
    at.button(key="delete_ask").click().run()
    at.button(key="delete_yes").click().run()
    assert list(table(at)["question"]) == [CONTRACT[1].question]
    assert not [m for m in texts(tab(at, "Open")) if m.startswith("**Question:**")]
    with pytest.raises(KeyError):
        at.button(key="delete_ask")
    assert open_store().count() == 2


# ---- export ------------------------------------------------------------------------------------


def _export_of_two_questions(downloads) -> tuple[AppTest, dict[str | None, bytes]]:  # type: ignore[no-untyped-def]
    at = open_history()
    select(at, 0, 1)
    return at, dict(downloads)


def test_export_offers_the_selected_questions(three_questions, downloads) -> None:
    at, files = _export_of_two_questions(downloads)
    export = tab(at, "Export")
    assert any(c.startswith("Exporting 4 runs of 2 questions.") for c in texts(export, "caption"))
    assert [b.label for b in export.get("download_button")] == [
        "Download JSON",
        "Download CSV",
        "Download report (Markdown)",
    ]
    assert {"rr-runs.json", "rr-runs.csv", "rr-runs.md"} <= set(files)
    runs = json.loads(files["rr-runs.json"])["results"]
    assert len(runs) == 4
    assert {r["questions"][0] for r in runs} == {PROTOCOL[0].question, CONTRACT[1].question}
    assert len({r["document"] for r in runs}) == 2
    assert CONTRACT[0].question not in files["rr-runs.json"].decode()  # not selected


def test_export_csv_and_report_name_each_question_and_document(three_questions, downloads) -> None:
    at, files = _export_of_two_questions(downloads)
    report = "\n".join(texts(tab(at, "Export"), "text"))
    assert files["rr-runs.md"].decode().rstrip() == report.rstrip()
    csv = files["rr-runs.csv"].decode()
    for question, sample in ((PROTOCOL[0].question, "protocol"), (CONTRACT[1].question, "contract")):
        title = get_sample(sample).title.split(" (")[0]  # the report escapes its brackets
        assert question in report and title in report
        assert question in csv and title in csv


def test_export_without_a_selection_offers_the_newest_question(three_questions) -> None:
    at = open_history()
    export = tab(at, "Export")
    assert any(
        "Exporting 2 runs of 1 question (the newest; select rows above to choose)" in c
        for c in texts(export, "caption")
    )
    report = "\n".join(texts(export, "text"))
    assert PROTOCOL[0].question in report and CONTRACT[0].question not in report


# ---- compare two runs --------------------------------------------------------------------------


def test_compare_two_runs_shows_their_question_and_document(three_questions) -> None:
    (_, first), _, (_, last) = three_questions
    at = open_history()
    at.selectbox(key="w.history_a").set_value(first[0].run_id).run()
    at.selectbox(key="w.history_b").set_value(last[1].run_id).run()
    assert not at.exception
    frames = [d.value for d in at.dataframe if list(d.value.columns) == ["", "A", "B", "same"]]
    assert len(frames) == 1
    facts = {row[""]: row for row in frames[0].to_dict("records")}
    assert facts["question"]["A"] == CONTRACT[0].question
    assert facts["question"]["B"] == PROTOCOL[0].question
    assert facts["question"]["same"] == ""
    assert facts["document"]["A"] == first[0].document and facts["document"]["B"] == last[1].document
    assert facts["document"]["A"] != facts["document"]["B"]
    assert facts["method"]["A"] == "Baseline" and facts["method"]["B"].startswith("R&R (")
    assert facts["input tokens"]["B"] == f"{last[1].usage.prompt_tokens:,}"
    assert facts["provider / model"]["same"] == "✓"
    # Offline runs paid nothing: the money row says what the tokens would cost.
    assert facts["cost (USD)"]["B"] == f"would cost {last[1].cost_usd:.5f}, nothing paid"


def test_a_run_of_several_questions_counts_them_all_though_it_is_one_run() -> None:
    asked = [q.question for q in CONTRACT[:4]]
    ask("contract", asked, methods=("rr",))  # one run answers all four
    at = open_history()
    (row,) = table(at).to_dict("records")
    assert row["questions"] == 4 and row["question"] == asked[0]


def test_compare_runs_of_several_questions_question_by_question() -> None:
    known = CONTRACT[:3]
    questions = [Question(q.question, tuple(q.answers), (q.page,)) for q in known]
    _, traces = ask("contract", questions, methods=("rr", "oracle"))
    rr = next(t for t in traces if t.method == "rr")
    oracle = [t for t in traces if t.method == "oracle"]  # one run a question
    at = open_history()
    a = at.selectbox(key="w.history_a")
    # The pickers say the run asked more than its first question, before it (a narrow picker cuts the end).
    assert a.format_func(rr.run_id).startswith(f"R&R (3 questions) · {known[0].question[:30]}")
    assert a.format_func(oracle[0].run_id).startswith(f"Oracle · {known[0].question[:30]}")
    a.set_value(rr.run_id).run()
    at.selectbox(key="w.history_b").set_value(oracle[1].run_id).run()
    assert not at.exception

    def facts() -> dict[str, Any]:
        frames = [d.value for d in at.dataframe if list(d.value.columns) == ["", "A", "B", "same"]]
        assert len(frames) == 1
        return {row[""]: row for row in frames[0].to_dict("records")}

    picker = at.selectbox(key=f"w.history_question_{rr.run_id}_{oracle[1].run_id}")
    assert len(picker.options) == 3
    for index, q in enumerate(known):
        at.selectbox(key=f"w.history_question_{rr.run_id}_{oracle[1].run_id}").set_value(index).run()
        shown = facts()
        assert shown["question"]["A"] == q.question
        assert shown["answer"]["A"] == rr.outcomes[index].answer_text
        assert shown["questions in the run"]["A"] == "3" and shown["questions in the run"]["B"] == "1"
        if index == 1:  # the Oracle run B asked this question only
            assert shown["question"]["B"] == q.question
            assert shown["answer"]["B"] == oracle[1].outcome.answer_text
        else:
            assert shown["question"]["B"] == shown["answer"]["B"] == "— (not asked in this run)"
        # Right or wrong where the answer is known; green only against a known answer.
        verdict = "✓ right" if rr.outcomes[index].correct else "✗ wrong"
        assert shown["right / wrong"]["A"] == verdict
        assert shown["retrieved pages"]["A"] == " ".join(map(str, rr.outcomes[index].retrieved_pages))
        assert shown["input tokens (whole run)"]["A"] == f"{rr.usage.prompt_tokens:,}"
    assert any("the whole run's" in c for c in texts(at, "caption"))


def test_a_history_in_a_store_that_cannot_be_reached_is_a_message_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, refused_port: int
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RR_STUDIO_DB", f"postgresql://analyst:pw-0123@127.0.0.1:{refused_port}/rr")
    at = open_history()
    (error,) = at.error
    assert "could not be opened" in error.value and "pw-0123" not in error.value
    assert not (tmp_path / "postgresql:").exists()


def test_a_history_in_a_store_no_backend_serves_is_a_message_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RR_STUDIO_DB", "mysql://analyst:pw-0123@db.example.com/rr")
    at = open_history()
    (error,) = at.error
    assert "is not a store" in error.value and "pw-0123" not in error.value  # (markdown-escaped)
    assert list(tmp_path.iterdir()) == []


def test_a_run_opens_on_the_document_screen_from_the_store_when_another_document_is_open() -> None:
    from pages.common.state import SESSION_KEY

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.button(key="run").click().run()  # the contract, saved with its document
    asked = at.session_state["results"]["traces"][0]
    at.session_state[SESSION_KEY].sample = "protocol"  # another document is open now
    at.switch_page("pages/history.py").run()
    select(at, 0)
    opener = next(b for b in at.button if b.key == f"hist_doc_{asked.run_id}_0")
    opener.click().run()
    assert not at.exception, [e.value for e in at.exception]
    caption = " ".join(c.value for c in at.caption)
    assert caption.startswith(f"**{md(asked.document)}**")  # the run's document, not the open one
    assert any("Opened from the History" in i.value and "from the document store" in i.value for i in at.info)


def test_a_history_past_a_thousand_runs_is_read_a_page_at_a_time() -> None:
    """Runs past the first thousand are not lost from view: Older runs shows the next page."""
    from dataclasses import replace

    _, (first,) = ask("contract", CONTRACT[0].question, methods=("baseline",))
    store = open_store()
    for start in range(0, 1004, 251):  # 1,004 runs more, in four batches, after the first
        store.save_batch([replace(first, run_id=f"bulk-{i}") for i in range(start, min(start + 251, 1004))])
    at = open_history()
    assert any("Runs **1–1,000** of 1,005" in str(m.value) for m in at.markdown)
    assert len(table(at)) == 4  # the four batches of the newest thousand runs
    older = next(b for b in at.button if b.label == "Older runs")
    older.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Runs **1,001–1,005** of 1,005" in str(m.value) for m in at.markdown)
    assert len(table(at)) == 2  # the rest of the oldest bulk batch, and the first question
    assert next(b for b in at.button if b.label == "Older runs").disabled
    next(b for b in at.button if b.label == "Newer runs").click().run()
    assert any("Runs **1–1,000** of 1,005" in str(m.value) for m in at.markdown)
