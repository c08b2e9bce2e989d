"""The History screen: the ledger listed, one run opened, two compared, exported, deleted."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from rr_core.ledger import Ledger
from rr_core.llm.offline import OfflineEngine
from rr_core.methods import Method, RunSettings
from rr_core.runs import RunTrace, run_methods
from rr_core.samples import get_sample, questions_middle_first
from rr_core.sources import sample_document
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SAMPLE = get_sample("contract")
FIRST_QUESTION = questions_middle_first("contract")[0].question  # what the app prefills


def stored_runs(questions: int = 2) -> list[tuple[int, RunTrace]]:
    """Runs saved straight through the engine: baseline and R&R for the first questions."""
    counter = counter_for_model("gpt-4.1-mini")
    document = sample_document("contract", counter)
    ledger = Ledger()
    saved = []
    for index, question in enumerate(SAMPLE.questions[:questions]):
        settings = [
            RunSettings(method=m, model="offline", provider="offline", price_model="gpt-4.1-mini")
            for m in (Method.BASELINE, Method.RR)
        ]
        for trace in run_methods(document, question.question, settings, OfflineEngine(), counter):
            saved.append((ledger.save(trace, f"batch-{index}"), trace))
    return saved


def open_history() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/history.py").run()
    assert not at.exception and not at.error
    return at


def test_no_runs_yet_says_where_they_come_from() -> None:
    at = open_history()
    assert any("No runs yet" in i.value for i in at.info)


def test_runs_asked_on_the_ask_screen_are_listed() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.button(key="run").click().run()
    batch = at.session_state["results"]["batch"]
    at.switch_page("pages/history.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert len(table) == 2
    assert set(table["method"]) == {"Baseline", "R&R"}
    assert set(table["batch"]) == {batch}
    assert set(table["question"]) == {FIRST_QUESTION}
    assert (table["input tokens"] > 50_000).all() and (table["cost (USD)"] > 0).all()


def test_open_a_run_shows_its_answer_pages_and_calls() -> None:
    saved = stored_runs()
    rr_id, rr = next((i, t) for i, t in saved if t.method == "rr")
    at = open_history()
    assert len(at.dataframe[0].value) == len(saved)
    at.selectbox(key="w.history_open").set_value(rr_id).run()
    texts = "\n".join(m.value for m in at.markdown)
    assert "#### R&R" in texts
    assert f"**Cited page:** {rr.page}" in texts
    assert "**Retrieved pages** (rank order): " + " → ".join(map(str, rr.retrieved_pages)) in texts
    calls = at.dataframe[1].value
    assert list(calls["stage"]) == ["retrieval", "answer"]
    assert list(calls["input tokens"]) == [c.usage.prompt_tokens for c in rr.calls]
    assert calls["reminders"][0] == len(rr.calls[0].reminders_after) > 0


def test_compare_two_runs_side_by_side() -> None:
    saved = stored_runs()
    (base_id, base), (rr_id, rr) = saved[0], saved[1]
    at = open_history()
    at.selectbox(key="w.history_a").set_value(base_id).run()
    at.selectbox(key="w.history_b").set_value(rr_id).run()
    assert not at.exception
    compare = at.dataframe[2].value  # list, calls of the opened run, then the comparison
    facts = {row[""]: row for row in compare.to_dict("records")}
    assert facts["method"][f"A: #{base_id}"] == "Baseline" and facts["method"][f"B: #{rr_id}"] == "R&R"
    assert facts["input tokens"][f"A: #{base_id}"] == f"{base.usage.prompt_tokens:,}"
    assert facts["input tokens"][f"B: #{rr_id}"] == f"{rr.usage.prompt_tokens:,}"
    assert facts["k / N / c"]["same"] == "✓"
    assert facts["method"]["same"] == ""


def test_export_offers_json_csv_and_markdown_of_the_chosen_runs() -> None:
    saved = stored_runs()
    at = open_history()
    chosen = at.multiselect(key="w.history_export").value
    assert sorted(chosen) == sorted(i for i, _ in saved[-2:])  # the opened (newest) run's batch
    assert [b.label for b in at.download_button] == [
        "Download JSON", "Download CSV", "Download report (Markdown)",
    ]  # fmt: skip
    at.multiselect(key="w.history_export").set_value([]).run()
    assert not at.download_button
    assert any("Choose one or more runs" in c.value for c in at.caption)


def test_delete_asks_for_confirmation_then_deletes() -> None:
    saved = stored_runs(questions=1)
    target = saved[0][0]
    at = open_history()
    at.selectbox(key="w.history_delete").set_value(target).run()
    at.button(key="delete_ask").click().run()
    assert any(f"Delete run #{target} for good?" in w.value for w in at.warning)
    at.button(key="delete_no").click().run()
    assert Ledger().count() == 2  # cancelled: nothing deleted
    at.selectbox(key="w.history_delete").set_value(target).run()
    at.button(key="delete_ask").click().run()
    at.button(key="delete_yes").click().run()
    assert not at.exception
    assert Ledger().count() == 1 and Ledger().get(target) is None
    assert any(f"Deleted run #{target}." in s.value for s in at.success)
    assert list(at.dataframe[0].value["id"]) == [saved[1][0]]
