"""The Ask screen as a user meets it, driven by AppTest on the offline engine.

Expected values come from the engine itself (the same plans, the sample's known answers),
so the tests check that the screen shows what the engine says, not a copy of the screen.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import markdown_table
from streamlit.testing.v1 import AppTest

from pages.common.text import md
from rr_core.llm.fake import ScriptedClient
from rr_core.llm.offline import OfflineEngine
from rr_core.methods import all_methods, get_method, parse_spec, plan_questions
from rr_core.questions import Question
from rr_core.samples import get_sample, questions_middle_first
from rr_core.settings import RunSettings
from rr_core.sources import sample_document
from rr_core.store import open_store
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 240  # the machine is slow and shared: generous, never a speed check
PRICE_MODEL = "gpt-4.1-mini"
SAMPLE = get_sample("contract")
KNOWN = questions_middle_first("contract")
FIRST = KNOWN[0]  # what the screen prefills: the sample question nearest the middle
OTHER_SAMPLE = "protocol"
EVIL_LINK = "[click](https://evil.example)"


# ---- helpers --------------------------------------------------------------------------------


def open_app(**state: Any) -> AppTest:
    """The app on the Ask screen, with session state set before the first run."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def run(at: AppTest) -> list:
    at.button(key="run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return list(at.session_state["results"]["traces"])


def markdown(node: Any) -> list[str]:
    return [m.value for m in node.markdown]


def captions(node: Any) -> list[str]:
    return [c.value for c in node.caption]


def plan_table(at: AppTest) -> pd.DataFrame:
    """The "What each method will send" table, numbers as numbers and blank cells as None."""
    rows = markdown_table(at, "Method")
    assert list(rows[0])[:2] == ["Method", "Settings"]

    def value(column: str, text: str) -> object:
        if column in ("Method", "Settings", "Cost (est.)"):
            return text
        return int(text.replace(",", "")) if text else None

    return pd.DataFrame([{k: value(k, v) for k, v in row.items()} for row in rows])


def answers_table(at: AppTest) -> pd.DataFrame:
    """The answers by question and method (st.dataframe keys are not exposed to AppTest
    for tables without selection, so it is found by its first column)."""
    tables = [d.value for d in at.dataframe if list(d.value.columns)[:1] == ["Question"]]
    assert len(tables) == 1
    return tables[0]


def expected_plans(specs: list[str], questions: list[Question], gold: str = "") -> list:
    """The plans the engine makes for the screen's default settings."""
    counter = counter_for_model(PRICE_MODEL)
    document = sample_document("contract", counter)
    base = RunSettings(
        method="baseline",
        model="offline",
        provider="offline",
        price_model=PRICE_MODEL,
        gold_pages=tuple(int(p) for p in gold.split(",") if p.strip()),
    )
    return [p for spec in specs for p in plan_questions(document, questions, parse_spec(spec, base), counter)]


def cards(at: AppTest) -> list[Any]:
    """Result cards, in screen order: the bordered containers that start with a ``####`` title."""
    found = []
    for column in at.columns:
        titles = [m for m in markdown(column) if m.startswith("#### ")]
        if len(titles) == 1:
            found.append(column)
    return found


def card_titles(at: AppTest) -> list[str]:
    return [next(m for m in markdown(c) if m.startswith("#### "))[5:] for c in cards(at)]


def answer_json(question: str, answer: str, page: int | str, quote: str = "") -> str:
    return json.dumps({"question": question, "answer": answer, "page": str(page), "quote": quote})


# ---- first open -----------------------------------------------------------------------------


def test_first_open_without_a_key_is_ready_to_run_on_the_sample() -> None:
    at = open_app()
    # No key anywhere: the offline engine, said plainly to be no LLM.
    assert at.session_state["provider"] == "offline"
    note = " ".join(i.value for i in at.sidebar.info)
    assert "offline engine is not an LLM" in note and "BM25" in note
    # The contract sample is loaded…
    document = sample_document("contract", counter_for_model(PRICE_MODEL))
    assert at.selectbox(key="w.sample").value == "contract"
    assert any(
        f"{md(SAMPLE.title)}** — {len(SAMPLE.pages)} pages, {document.total_tokens:,} tokens" in c
        for c in captions(at)
    )
    # …with the question nearest the middle filled in, and its gold page for the oracle.
    assert at.text_area(key="w.question").value == FIRST.question
    assert at.session_state["gold_pages"] == str(FIRST.page)
    assert at.pills(key="w.methods_paper").value == ["baseline", "rr"]
    assert at.pills(key="w.methods_other").value == []
    # Before running: runs, calls, input tokens and dollars, equal to the engine's plans.
    plans = expected_plans(["baseline", "rr"], [Question(FIRST.question)], str(FIRST.page))
    calls = sum(p.estimate.calls for p in plans)
    tokens = sum(p.estimate.input_tokens for p in plans)
    usd = sum(p.estimate.usd for p in plans)
    summary = next(m for m in markdown(at) if m.startswith("**Before running:**"))
    assert f"2 runs, about {calls} calls, {tokens:,} input tokens, **~${usd:.4f}** priced as" in summary
    assert md(PRICE_MODEL) in summary and calls == 3 and usd > 0
    table = plan_table(at)
    assert list(table["Method"]) == ["Baseline", "R&R"]
    assert list(table["Calls"]) == [p.estimate.calls for p in plans]
    assert list(table["Input tokens"]) == [p.estimate.input_tokens for p in plans]
    assert list(table["Reminders"]) == [0, plans[1].reminders] and plans[1].reminders > 0
    # Nothing has run yet, and nothing is stale.
    assert "results" not in at.session_state and not at.warning and not at.error
    assert any("No key needed" in c for c in captions(at))
    assert not at.get("plotly_chart") and not at.download_button


def test_the_plan_table_counts_chunks_as_whole_numbers_and_leaves_the_others_blank() -> None:
    at = open_app(methods=["baseline", "chunked-rr"])
    rows = {r["Method"]: r for r in markdown_table(at, "Method")}
    plan = expected_plans(["chunked-rr"], [Question(FIRST.question)])[0]
    assert rows["Chunked R&R"]["Chunks"] == str(len(plan.chunks)) and len(plan.chunks) > 1
    assert rows["Baseline"]["Chunks"] == ""
    assert rows["Chunked R&R"]["Input tokens"] == f"{plan.estimate.input_tokens:,}"
    assert rows["Chunked R&R"]["Cost (est.)"] == f"${plan.estimate.usd:.5f}"
    assert "Questions" not in rows["Baseline"]  # one question: the column would say 1 on every row


# ---- one question, baseline and R&R ------------------------------------------------------


def test_run_shows_a_card_per_method_with_answer_page_mark_quote_check_and_retrieved_pages() -> None:
    at = open_app()
    traces = run(at)
    assert not at.error
    assert at.status[0].label == "Done: 2 of 2 runs answered"
    assert [t.method for t in traces] == ["baseline", "rr"]
    assert card_titles(at) == ["Baseline", md("R&R")]
    for card, trace in zip(cards(at), traces, strict=True):
        texts = markdown(card)
        notes = captions(card)
        assert trace.error is None
        # The answer, shown as text, and the page it cites (the sample's known page).
        assert f"**Answer:** {md(trace.answer)}" in texts
        assert any(a.lower() in trace.answer.lower() for a in FIRST.answers)
        assert trace.page == FIRST.page
        assert f"**Cited page:** p. {FIRST.page}" in texts
        # Right or wrong against the sample's known answer.
        assert trace.outcome.correct is True
        verdict = next(m for m in texts if "**Right**" in m)
        assert md(FIRST.answers[0]) in verdict and f"on p. {FIRST.page}" in verdict
        # The quote check says where the quote stands, in a neutral style: provenance is
        # not correctness (green is for the "Right" above, against the known answer).
        assert trace.outcome.quote_check == "verified"
        check = next(c for c in notes if "Quote located" in c)
        assert check.startswith(":gray[:material/location_on:] ") and ":green[" not in check
        assert md(f"Quote located on p. {FIRST.page}") in check and ":material/check" not in check
        assert md("not whether the answer is right") in check
        assert f"${trace.cost_usd:.4f}" in "\n".join(texts)
    rr = traces[1]
    ranked = " → ".join(str(p) for p in rr.retrieved_pages)
    assert FIRST.page in rr.retrieved_pages and len(rr.retrieved_pages) == 5
    assert f"**Retrieved:** 5 pages, best first: {ranked}" in markdown(cards(at)[1])
    assert not any(
        m.startswith("**Retrieved:**") for m in markdown(cards(at)[0])
    )  # baseline retrieves nothing
    # The runs are in the history, as one batch.
    stored = open_store().list()
    assert {r.run_id for r in stored} == {t.run_id for t in traces}
    assert {r.batch for r in stored} == {at.session_state["results"]["batch"]}


def test_a_wrong_answer_is_marked_wrong_with_the_known_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    import pages.common.state as state_module

    def wrong(request: Any) -> str:
        return answer_json(FIRST.question, "thirty days", 3)

    monkeypatch.setattr(state_module, "new_client", lambda: ScriptedClient(responder=wrong))
    at = open_app(methods=["baseline"])
    traces = run(at)
    assert traces[0].outcome.correct is False
    verdict = next(m for m in markdown(cards(at)[0]) if "**Wrong**" in m)
    assert f"the known answer is {md(FIRST.answers[0])}" in verdict and f"on p. {FIRST.page}" in verdict
    assert any(md("No quote given for p. 3") in c for c in captions(cards(at)[0]))


def test_a_wrong_answer_whose_quote_stands_on_its_page_is_wrong_not_green(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was: every wrong answer carried a green "quoted sentence stands word for word"."""
    import pages.common.state as state_module

    elsewhere = " ".join(
        sample_document("contract", counter_for_model("gpt-4.1-mini")).page(3).text.split()[:12]
    )
    reply = {"question": FIRST.question, "answer": "thirty days", "found": True,
             "citations": [{"page": "3", "quote": elsewhere}]}  # fmt: skip
    monkeypatch.setattr(
        state_module, "new_client", lambda: ScriptedClient(responder=lambda r: json.dumps(reply))
    )
    at = open_app(methods=["baseline"])
    traces = run(at)
    assert traces[0].outcome.correct is False and traces[0].outcome.quote_check == "verified"
    card = cards(at)[0]
    assert any(m.startswith(":red[:material/cancel: **Wrong**]") for m in markdown(card))
    notes = "\n".join(captions(card))
    assert ":gray[:material/location_on:] " + md("Quote located on p. 3") in notes
    assert ":green[" not in notes and "word for word" not in notes


def test_not_stated_is_shown_as_such_and_scored_against_the_known_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pages.common.state as state_module

    reply = {
        "question": FIRST.question,
        "answer": "not stated in the document",
        "found": False,
        "citations": [],
    }
    monkeypatch.setattr(
        state_module, "new_client", lambda: ScriptedClient(responder=lambda r: json.dumps(reply))
    )
    at = open_app(methods=["baseline"])
    traces = run(at)
    outcome = traces[0].outcome
    assert outcome.found is False and outcome.correct is False  # the sample's document states it
    texts = markdown(cards(at)[0])
    assert any(
        "**The model says the document does not state it** (its claim, not checked)" in m for m in texts
    )
    assert not any(m.startswith("**Answer:**") or m.startswith("**Cited page") for m in texts)
    assert any("**Wrong**" in m for m in texts)
    assert not any("Quote" in c or "quote" in c for c in captions(cards(at)[0]))


def test_the_offline_engines_not_stated_is_said_of_the_engine_not_of_a_model() -> None:
    at = open_app(methods=["baseline"])
    traces = run(at)
    assert not traces[0].is_llm
    traces[0].outcomes[0].not_stated()
    at.run()
    said = "\n".join(markdown(cards(at)[0]))
    assert "**Not found** (the offline engine found no answer)" in said and "Not stated" not in said
    assert "the model" not in said


def test_the_offline_engines_not_found_lists_the_pages_to_read() -> None:
    at = open_app(methods=["baseline"], question="What was Apple's iPhone revenue in 2021?")
    traces = run(at)
    outcome = traces[0].outcome
    assert not outcome.found and outcome.pages_to_read
    said = "\n".join(markdown(cards(at)[0]))
    assert "**Not found** (the offline engine found no answer). Pages to read, best first: p. " in said
    assert "Not stated in the document" not in said


def test_a_free_engines_card_says_would_cost_never_cost() -> None:
    at = open_app(methods=["baseline"])
    traces = run(at)
    assert not traces[0].is_llm and traces[0].paid_usd == 0
    said = "\n".join(markdown(cards(at)[0]))
    assert f"**Would cost:** ${traces[0].cost_usd:.4f} on the priced model (nothing paid)" in said
    assert "**Cost:**" not in said
    assert "**Cost by method and stage**" not in markdown(at)
    assert any(m.startswith("**What the same tokens would cost, by method and stage**") for m in markdown(at))


def test_the_downloads_are_offered_after_a_run(downloads) -> None:
    at = open_app()
    traces = run(at)
    assert [b.label for b in at.download_button] == [
        "Download JSON",
        "Download CSV",
        "Download report (Markdown)",
    ]
    assert at.checkbox(key="w.json_prompts").value is False
    files = dict(downloads)
    results = json.loads(files["rr-results.json"])["results"]
    assert [r["run_id"] for r in results] == [t.run_id for t in traces]
    assert all(call["prompt"] is None for r in results for call in r["calls"])  # prompts only when asked
    rows = list(csv.DictReader(io.StringIO(files["rr-results.csv"].decode())))
    assert [(r["method"], r["answer"], r["page"]) for r in rows] == [
        (t.method, t.answer, str(t.page)) for t in traces
    ]
    assert files["rr-report.md"].decode().startswith("# R&R Studio report")
    at.checkbox(key="w.json_prompts").check().run()
    with_prompts = json.loads(dict(downloads)["rr-results.json"])["results"]
    assert with_prompts[1]["calls"][0]["prompt"] == traces[1].calls[0].prompt
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert {bar["name"] for bar in spec["data"]} >= {"retrieval", "answer", "reminder overhead"}


# ---- every method, and a method at two settings -----------------------------------------


def test_every_method_at_once() -> None:
    groups: dict[str, list[str]] = {}
    for m in all_methods():
        groups.setdefault(m.group, []).append(m.name)
    assert sum(len(v) for v in groups.values()) == 14
    at = open_app(**{f"methods_{g}": names for g, names in groups.items()})
    for group, names in groups.items():
        assert at.pills(key=f"w.methods_{group}").value == names
    labels = [m.label for m in all_methods()]
    assert list(plan_table(at)["Method"]) == labels  # the plan follows what the screen shows
    # The oracle reads only the gold pages: the sample question's page is filled in.
    assert at.text_input(key="w.gold_pages").value == str(FIRST.page)
    oracle = plan_table(at).set_index("Method").loc["Oracle"]
    assert oracle["Settings"] == f"gold pages {FIRST.page}"
    traces = run(at)
    assert not at.error
    assert at.status[0].label == "Done: 14 of 14 runs answered"
    assert [t.label for t in traces] == labels
    assert card_titles(at) == [md(label) for label in labels]
    by_method = {t.method: t for t in traces}
    assert by_method["oracle"].page == FIRST.page and by_method["oracle"].outcome.correct
    assert by_method["closed-book"].outcome.correct is False  # no document, no answer
    assert all(t.error is None for t in traces)


def test_the_oracle_without_gold_pages_says_what_it_needs() -> None:
    at = open_app(methods=["baseline", "oracle"], question="Who signs the agreement?")
    at.text_input(key="w.gold_pages").set_value("").run()
    assert not at.exception
    assert any("gold" in e.value.lower() and "What to do" in e.value for e in at.error)
    with pytest.raises(KeyError):  # nothing to run until the oracle has its pages
        at.button(key="run")


def test_a_variant_runs_the_same_method_again_at_its_own_settings_in_plan_order() -> None:
    at = open_app(variants=["rr:k=5000"])
    table = plan_table(at)
    assert list(table["Method"]) == ["Baseline", "R&R", "R&R"]
    assert list(table["Settings"])[1:] == ["k = 10,000 · N = 5", "k = 5,000 · N = 5"]
    reminders = list(table["Reminders"])
    assert reminders[2] > reminders[1] > 0  # reminders twice as often
    traces = run(at)
    assert [(t.method, t.settings.reminder_every) for t in traces] == [
        ("baseline", 10_000),
        ("rr", 10_000),
        ("rr", 5_000),
    ]
    assert [t.run_id for t in traces] == list(dict.fromkeys(t.run_id for t in traces))  # distinct runs
    assert card_titles(at) == ["Baseline", md("R&R"), md("R&R")]
    settings_shown = [captions(c)[0] for c in cards(at)[1:]]
    assert settings_shown == [md("k = 10,000 · N = 5"), md("k = 5,000 · N = 5")]
    retrieval = [next(c for c in t.calls if c.stage == "retrieve") for t in traces[1:]]
    assert len(retrieval[1].reminders_after) > len(retrieval[0].reminders_after)


def test_a_variant_added_with_the_widgets_is_listed_and_removable() -> None:
    at = open_app()
    at.selectbox(key="w.variant_method").set_value("rr")
    at.text_input(key="w.variant_settings").input("k=5000")
    at.button(key="add_variant").click().run()
    assert at.session_state["variants"] == ["rr:k=5000"]
    assert list(plan_table(at)["Method"]) == ["Baseline", "R&R", "R&R"]
    at.button(key="remove_variant_0").click().run()
    assert at.session_state["variants"] == []
    assert list(plan_table(at)["Method"]) == ["Baseline", "R&R"]


def test_a_variant_outside_a_settings_bounds_is_refused_at_add_naming_it() -> None:
    at = open_app()
    # The method to vary starts on R&R (the method with settings worth varying).
    assert at.selectbox(key="w.variant_method").value == "rr"
    at.text_input(key="w.variant_settings").input("k=2").run()
    at.button(key="add_variant").click().run()
    assert not at.exception
    assert at.session_state["variants"] == []
    (error,) = [e.value for e in at.error]
    # Named by the method's label, never by its internal spec ("'k=2' in 'rr:k=2'").
    assert md("'k=2' for R&R") in error and "between 100 and 100,000" in error
    assert "rr:k=2" not in error
    assert "sidebar" not in error  # the variant is at fault, not the sidebar
    assert at.button(key="run")  # the screen goes on with the methods chosen
    assert list(plan_table(at)["Method"]) == ["Baseline", "R&R"]


def test_an_invalid_variant_already_listed_is_pointed_at_and_the_rest_still_run() -> None:
    at = open_app(variants=["rr:k=2", "rr:k=5000"])
    (error,) = [e.value for e in at.error]
    assert error.startswith(f"**{md('R&R k=2')}** cannot run") and "between 100 and 100,000" in error
    assert "sidebar" not in error
    assert list(plan_table(at)["Method"]) == ["Baseline", "R&R", "R&R"]  # the valid variant stays
    traces = run(at)
    assert [(t.method, t.settings.reminder_every) for t in traces] == [
        ("baseline", 10_000),
        ("rr", 10_000),
        ("rr", 5_000),
    ]
    at.button(key="remove_variant_0").click().run()
    assert at.session_state["variants"] == ["rr:k=5000"] and not at.error


def test_a_bad_variant_is_refused_with_what_to_write() -> None:
    at = open_app()
    at.selectbox(key="w.variant_method").set_value("rr")
    at.text_input(key="w.variant_settings").input("k=lots")
    at.button(key="add_variant").click().run()
    assert not at.exception
    assert at.session_state["variants"] == []
    assert any("not a number" in e.value for e in at.error)


# ---- several questions --------------------------------------------------------------------


def test_several_questions_share_one_retrieval_pass_and_show_an_answers_table() -> None:
    asked = KNOWN[:3]
    text = "\n".join(q.question for q in asked)
    at = open_app(ask_mode="several", questions_text=text)
    assert at.text_area(key="w.questions_text").value == text
    table = plan_table(at)
    # Baseline asks one question a call; R&R retrieves for all three in one long call.
    assert list(table["Method"]) == ["Baseline"] * 3 + ["R&R"]
    rr_row = table.iloc[3]
    assert rr_row["Questions"] == 3 and rr_row["Calls"] == 4
    questions = [Question(q.question, q.answers, (q.page,)) for q in asked]
    counter = counter_for_model(PRICE_MODEL)
    document = sample_document("contract", counter)
    settings = RunSettings(method="rr", model="offline", provider="offline", price_model=PRICE_MODEL)
    together = sum(p.estimate.usd for p in plan_questions(document, questions, settings, counter))
    alone = sum(get_method("rr").plan(document, q.text, settings, counter).estimate.usd for q in questions)
    saving = next(c for c in captions(at) if "one retrieval pass" in c)
    assert saving.startswith(md(f"R&R: ${together:.4f} for all 3 questions in one retrieval pass"))
    assert md(f"against ${alone:.4f} asked one at a time") in saving
    assert together < alone

    traces = run(at)
    assert not at.error
    answers = answers_table(at)
    assert list(answers["Question"]) == [q.question for q in asked]
    rr_column = next(c for c in answers.columns if c.startswith("R&R"))
    assert list(answers.columns) == ["Question", "Baseline", rr_column]
    for row, q in zip(answers.to_dict("records"), asked, strict=True):
        for cell in (row["Baseline"], row[rr_column]):
            # Right or wrong, then the page, then the answer: a narrow column cuts the answer only.
            assert cell.startswith(f"✓ right · p. {q.page} · ")
    rr = traces[-1]
    assert rr.method == "rr" and [o.question for o in rr.outcomes] == [q.question for q in asked]
    assert [c.stage for c in rr.calls].count("retrieve") == 1


def test_several_questions_give_the_oracle_each_its_own_gold_page_and_a_score_per_method() -> None:
    asked = KNOWN[:4]
    at = open_app(
        ask_mode="several",
        questions_text="\n".join(q.question for q in asked),
        methods_paper=["baseline"],
        methods_bounds=["oracle"],
    )
    # The field would hold the first question's page; each sample question carries its own.
    assert at.session_state["gold_pages"] == str(asked[0].page)
    with pytest.raises(KeyError):
        at.text_input(key="w.gold_pages")
    assert any(
        "each question's own gold page" in c and ", ".join(f"p. {q.page}" for q in asked) in c
        for c in captions(at)
    )
    oracle_rows = plan_table(at).query("Method == 'Oracle'")
    assert list(oracle_rows["Settings"]) == [f"gold pages {q.page}" for q in asked]
    traces = run(at)
    oracle = [t for t in traces if t.method == "oracle"]
    assert [t.calls[0].pages for t in oracle] == [[q.page] for q in asked]
    # One column per method (not one per question's gold page), and a score row per method.
    answers = answers_table(at)
    assert list(answers.columns) == ["Question", "Baseline", "Oracle"]
    right = {
        label: sum(1 for t in traces if t.label == label for o in t.outcomes if o.correct)
        for label in ("Baseline", "Oracle")
    }
    assert right["Oracle"] >= 3 and right["Oracle"] >= right["Baseline"]
    score = markdown_table(at, "Method and settings")
    assert score == [
        {"Method and settings": name, "Right": f"{right[name]}/4"} for name in ("Baseline", "Oracle")
    ]


def test_a_typed_question_among_sample_ones_gives_the_oracle_the_fields_pages() -> None:
    typed = "Who signs the agreement?"
    at = open_app(
        ask_mode="several",
        questions_text=f"{KNOWN[0].question}\n{typed}",
        methods_paper=[],
        methods_bounds=["oracle"],
    )
    field = at.text_input(key="w.gold_pages")
    assert "for the questions you typed" in field.label
    field.set_value("3").run()
    oracle_rows = plan_table(at)
    assert list(oracle_rows["Settings"]) == [f"gold pages {KNOWN[0].page}", "gold pages 3"]


def test_the_exports_of_several_questions_hold_every_answer(downloads) -> None:
    asked = KNOWN[:3]
    at = open_app(ask_mode="several", questions_text="\n".join(q.question for q in asked), methods=["rr"])
    traces = run(at)
    assert len(traces) == 1 and len(traces[0].outcomes) == 3
    files = dict(downloads)
    runs = json.loads(files["rr-results.json"])["results"]
    assert len(runs[0]["outcomes"]) == 3  # the JSON has them all
    table = files["rr-results.csv"].decode()
    report = files["rr-report.md"].decode()
    for outcome in traces[0].outcomes:
        assert outcome.question in table and outcome.question in report


def test_typed_several_questions_get_no_marks() -> None:
    at = open_app(
        ask_mode="several", questions_text="Who is the Supplier?\nWho is the Customer?", methods=["baseline"]
    )
    run(at)
    answers = answers_table(at)
    assert len(answers) == 2
    assert all(cell.startswith(("p. ", "no page")) for cell in answers["Baseline"])
    assert "**Right against the known answers**" not in markdown(at)  # nothing known, no score


# ---- stale results, switching sample -------------------------------------------------------


def test_results_go_stale_when_the_question_changes_and_clear_removes_them() -> None:
    at = open_app()
    run(at)
    assert not at.warning
    at.text_area(key="w.question").input(KNOWN[1].question).run()
    stale = [w.value for w in at.warning]
    assert len(stale) == 1
    assert "belong to an earlier run" in stale[0] and md(FIRST.question[:60]) in stale[0]
    assert cards(at)  # still shown, under the banner
    at.button(key="clear_results").click().run()
    assert "results" not in at.session_state
    assert not at.warning and not cards(at)
    # Going back to the first question does not bring the cleared results back.
    at.text_area(key="w.question").input(FIRST.question).run()
    assert not cards(at)


def test_results_go_stale_when_a_setting_changes() -> None:
    at = open_app()
    run(at)
    at.sidebar.slider(key="w.reminder_every").set_value(5_000).run()
    assert any("belong to an earlier run" in w.value for w in at.warning)
    at.sidebar.button(key="reset_params").click().run()
    assert not at.warning  # back at the settings the results answer


def test_switching_sample_replaces_the_question_and_the_results_go_stale() -> None:
    at = open_app()
    run(at)
    at.selectbox(key="w.sample").set_value(OTHER_SAMPLE).run()
    assert not at.exception
    other = questions_middle_first(OTHER_SAMPLE)[0]
    assert at.text_area(key="w.question").value == other.question
    assert at.session_state["gold_pages"] == str(other.page)
    assert at.selectbox(key="w.quick").options == [q.question for q in questions_middle_first(OTHER_SAMPLE)]
    assert any(md(get_sample(OTHER_SAMPLE).title) in c for c in captions(at))
    assert any("belong to an earlier run" in w.value for w in at.warning)


def test_switching_to_my_file_clears_the_sample_question() -> None:
    at = open_app()
    at.radio(key="w.source").set_value("upload").run()
    assert at.session_state["question"] == "" and at.session_state["gold_pages"] == ""
    assert any("Upload a document" in i.value for i in at.info)
    at.file_uploader(key="w.upload").set_value(
        ("notes.txt", b"The vault combination is 31-7-42.\n\n" + b"Weather talk.\n\n" * 40, "text/plain")
    ).run()
    assert at.text_area(key="w.question").value == ""
    assert any("Type a question" in i.value for i in at.info)


# ---- untrusted text is shown as text --------------------------------------------------------


def _no_live_link(at: AppTest) -> None:
    """No element renders the evil link as Markdown (its brackets are escaped everywhere)."""
    shown = [
        str(e.value)
        for kind in ("markdown", "caption", "error", "warning", "info", "success")
        for e in at.get(kind)
    ]
    assert not any(EVIL_LINK in text for text in shown), [t for t in shown if EVIL_LINK in t]


def test_a_model_answer_with_a_link_is_shown_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import pages.common.state as state_module

    def replies(request: Any) -> str:
        if request.schema.WIRE_NAME == "retrieval":
            return json.dumps({"question": "", "pages": [FIRST.page, 2]})
        return answer_json(FIRST.question, f"See {EVIL_LINK} now", FIRST.page, quote=f"{EVIL_LINK} quoted")

    client = ScriptedClient(responder=replies)
    monkeypatch.setattr(state_module, "new_client", lambda: client)
    at = open_app()
    traces = run(at)
    assert len(client.requests) == 3  # baseline's answer, R&R's retrieval and answer
    assert all(EVIL_LINK in t.answer for t in traces)
    texts = markdown(at)
    assert texts.count(f"**Answer:** {md(f'See {EVIL_LINK} now')}") == 2
    assert f"> {md(f'{EVIL_LINK} quoted')}" in texts
    assert "\\[click\\]\\(https\u2060\\:" in md(EVIL_LINK)
    _no_live_link(at)


PLAIN_URLS = "Go to https://evil.example/a or WWW.evil.example/b, or write to x@evil.example"
# What GFM's autolink-literal extension links once escapes are resolved (what Streamlit's
# Markdown does in the browser: tests/test_browser_links.py checks the rendered page).
_AUTOLINK = re.compile(r"(?i)(https?://|(?<![\w])www\.)[\w-]|[\w.+-]@[\w-]+\.\w")


def _autolinks(at: AppTest) -> list[str]:
    shown = [
        re.sub(r"\\(.)", r"\1", str(e.value))
        for kind in ("markdown", "caption", "error", "warning", "info", "success")
        for e in at.get(kind)
    ]
    return [text for text in shown if _AUTOLINK.search(text)]


def test_plain_urls_in_an_answer_and_in_the_earlier_run_notice_are_no_links(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pages.common.state as state_module

    def replies(request: Any) -> str:
        if request.schema.WIRE_NAME == "retrieval":
            return json.dumps({"question": "", "pages": [FIRST.page, 2]})
        return answer_json(FIRST.question, PLAIN_URLS, FIRST.page, quote=f"{PLAIN_URLS} quoted")

    client = ScriptedClient(responder=replies)
    monkeypatch.setattr(state_module, "new_client", lambda: client)
    at = open_app()
    question = f"{FIRST.question} (see https://evil.example/q and www.evil.example)"
    at.text_area(key="w.question").input(question).run()
    traces = run(at)
    assert all(t.answer == PLAIN_URLS for t in traces)
    assert any(md(PLAIN_URLS) in m for m in markdown(at))  # shown, as text
    at.text_area(key="w.question").input(KNOWN[1].question).run()
    (stale,) = [w.value for w in at.warning]
    assert "belong to an earlier run" in stale and md("evil.example/q") in stale
    assert _autolinks(at) == []
    assert _AUTOLINK.search(PLAIN_URLS) and _AUTOLINK.search(question)  # the check can see them


def test_a_page_with_a_link_in_an_uploaded_document_is_shown_as_text() -> None:
    text = f"The portal is at {EVIL_LINK} for every request.\n\n" + "Weather talk about rain.\n\n" * 40
    at = open_app()
    at.radio(key="w.source").set_value("upload").run()
    at.file_uploader(key="w.upload").set_value((f"{EVIL_LINK}.txt", text.encode(), "text/plain")).run()
    at.text_area(key="w.question").input("What is the portal?").run()
    traces = run(at)
    assert any(EVIL_LINK in (t.answer or "") for t in traces)  # the offline engine quotes the page
    assert any(md(EVIL_LINK) in m for m in markdown(at))
    _no_live_link(at)


def test_a_failing_provider_message_is_shown_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import pages.common.state as state_module
    from rr_core.errors import ProviderError

    error = ProviderError(f"The server said {EVIL_LINK} (HTTP 500).", provider="stub", status=500)
    offline = OfflineEngine(counter_for_model(PRICE_MODEL))

    def replies(request: Any) -> str:
        if request.schema.WIRE_NAME == "retrieval":
            raise error
        return offline.complete(request).text

    monkeypatch.setattr(state_module, "new_client", lambda: ScriptedClient(responder=replies))
    at = open_app()
    traces = run(at)
    assert traces[0].error is None and traces[1].error_kind == "ProviderError"
    assert at.status[0].label == "Done: 1 of 2 runs answered"
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and md(EVIL_LINK) in errors[0] and "What to do" in errors[0]
    _no_live_link(at)


def _scanned_pdf(sentence: str) -> bytes:
    """A PDF whose only page is a picture of text: no text layer, as a scan."""
    import pymupdf

    text_doc = pymupdf.open()
    page = text_doc.new_page(width=400, height=200)
    page.insert_text((20, 80), sentence, fontsize=18)
    picture = page.get_pixmap(dpi=200)
    scanned = pymupdf.open()
    target = scanned.new_page(width=400, height=200)
    target.insert_image(target.rect, pixmap=picture)
    return scanned.tobytes()


def test_a_scanned_upload_offers_ocr_and_reads_the_page_once_asked() -> None:
    import shutil

    if shutil.which("tesseract") is None:
        pytest.skip("Tesseract is not installed (apt-get install tesseract-ocr)")
    at = open_app(source="upload")
    at.file_uploader(key="w.upload").set_value(
        ("scan.pdf", _scanned_pdf("The deposit is nine hundred euros."), "application/pdf")
    ).run()
    assert any("OCR" in e.value for e in at.error)  # it says what is wrong and how to fix it
    box = at.checkbox(key="w.upload_ocr")
    box.check().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    assert any("1 page" in c for c in captions(at))


# ---- the sidebar's parameters ---------------------------------------------------------------


def test_a_number_box_beside_k_n_and_c_sets_them_exactly_and_the_slider_follows() -> None:
    at = open_app(methods=["rr", "chunked-rr"])
    for name in ("reminder_every", "top_k", "chunk_size"):
        assert at.sidebar.number_input(key=f"w.{name}.box").value == at.sidebar.slider(key=f"w.{name}").value
    at.sidebar.number_input(key="w.reminder_every.box").set_value(5_000).run()
    assert not at.exception
    assert at.session_state["reminder_every"] == 5_000
    assert at.sidebar.slider(key="w.reminder_every").value == 5_000
    assert list(plan_table(at)["Settings"])[0] == "k = 5,000 · N = 5"
    # And the other way: the slider moves, the box shows its value.
    at.sidebar.slider(key="w.top_k").set_value(7).run()
    assert at.sidebar.number_input(key="w.top_k.box").value == 7
    at.sidebar.number_input(key="w.chunk_size.box").set_value(12_000).run()
    assert at.sidebar.slider(key="w.chunk_size").value == 12_000
    assert "c = 12,000" in list(plan_table(at)["Settings"])[1]
    # The reset puts both back.
    at.sidebar.button(key="reset_params").click().run()
    assert at.sidebar.number_input(key="w.reminder_every.box").value == 10_000
    assert at.sidebar.slider(key="w.reminder_every").value == 10_000


def test_an_answer_with_several_citations_shows_each_quote_and_where_it_stands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pages.common.state as state_module

    pages = sample_document("contract", counter_for_model("gpt-4.1-mini")).pages
    on_3, on_10 = (" ".join(pages[n - 1].text.split()[:10]) for n in (3, 10))
    reply = {"question": FIRST.question, "answer": FIRST.answers[0], "found": True,
             "citations": [{"page": "3", "quote": on_3}, {"page": "10", "quote": on_10},
                           {"page": "10", "quote": "Words that stand on no page of this contract."}]}  # fmt: skip
    monkeypatch.setattr(
        state_module, "new_client", lambda: ScriptedClient(responder=lambda r: json.dumps(reply))
    )
    at = open_app(methods=["baseline"])
    traces = run(at)
    assert [(c.page, c.quote_check) for c in traces[0].outcome.citations] == [
        (3, "verified"), (10, "verified"), (10, "not-found"),
    ]  # fmt: skip
    card = cards(at)[0]
    texts, notes = markdown(card), captions(card)
    assert "**Cited pages:** p. 3 · p. 10" in texts
    assert f"> {md('1. p. 3: ')}{md(on_3)}" in texts and f"> {md('2. p. 10: ')}{md(on_10)}" in texts
    assert [n.split(" ", 1)[0] for n in notes if "Quote" in n and "p\\." in n] == [
        ":gray[:material/location_on:]", ":gray[:material/location_on:]", ":orange[:material/warning:]",
    ]  # fmt: skip
    assert sum("nor whether the answer is right" in n for n in notes) == 1  # said once, not per quote


def test_the_answers_table_fits_three_methods_at_1024_px_or_shows_one_in_full() -> None:
    asked = KNOWN[:3]
    at = open_app(
        ask_mode="several",
        questions_text="\n".join(q.question for q in asked),
        methods=["baseline", "rr", "rag"],
    )
    run(at)

    def widths() -> dict[str, Any]:
        (found,) = [d for d in at.dataframe if list(d.value.columns)[:1] == ["Question"]]
        config = json.loads(found.proto.columns)
        return {name: config[name].get("width") for name in found.value.columns}

    shown = widths()
    assert len(shown) == 4
    # The main column beside the sidebar is about 560 px at a 1024-px window: the question and
    # three methods fit in it (the question column no longer takes 200 px of it).
    assert sum(shown.values()) <= 560 and shown["Question"] < 200
    methods = list(shown)[1:]
    picker = at.selectbox(key="w.answers_table_methods")
    assert picker.options[1:] == methods
    picker.set_value(methods[1]).run()
    assert widths() == {"Question": shown["Question"], methods[1]: "large"}


def test_an_answer_to_check_reads_check_this_with_its_reason_and_a_settled_one_reads_as_before() -> None:
    """The look of how far to trust an answer (filled in by the engine's triage; set here by hand):
    "check this" in amber with the reason; nothing added for high or not assessed; "Not found" with
    the pages to read; a quote on its page is "located", without a tick."""
    from pages.common import results
    from rr_core.plans import Citation, Outcome
    from rr_core.traces import RunTrace

    def trace(**outcome: Any) -> RunTrace:
        return RunTrace(
            run_id="r", method="baseline", label="Baseline", describe="", questions=["Q?"], document="d.pdf",
            document_sha256="a" * 64, provider="openai", model="gpt-4.1-mini", is_llm=True,
            settings=RunSettings(method="baseline"),
            outcomes=[Outcome(question="Q?", answer="Ottawa", citations=[Citation(page=4, quote="in Ottawa",
                                                                                  quote_check="verified")], **outcome)],
            started_at="2026-11-28T10:00:00+00:00",
        )  # fmt: skip

    check = trace(confidence="check", score=0.3, confidence_reason="R&R says Toronto")
    high = trace(confidence="high", score=0.9)
    unassessed = trace()
    flag = results.confidence_line("check", "R&R says Toronto")
    assert flag.startswith(":orange-background[") and "check this" in flag and md("R&R says Toronto") in flag
    assert ":green[" not in flag and ":red[" not in flag
    assert results.confidence_line("high", "") == results.confidence_line("", "") == ""
    assert results.confidence_line("check", "", "the quote does not contain the answer").endswith(
        md("the quote does not contain the answer") + "]"
    )
    assert results.outcome_cell(check, check.outcomes[0]) == "check this · p. 4 · Ottawa"
    assert results.outcome_cell(high, high.outcomes[0]) == results.outcome_cell(
        unassessed, unassessed.outcomes[0]
    )
    assert results.outcome_cell(high, high.outcomes[0]) == "p. 4 · Ottawa"
    not_found = trace(found=False, absent_by="reader", pages_to_read=[7, 2, 9, 11])
    not_found.outcomes[0].citations = []
    assert results.outcome_cell(not_found, not_found.outcomes[0]) == "Not found · read p. 7, 2, 9"
    caption = results.quote_caption(check.outcomes[0].citations[0], None)
    assert md("Quote located on p. 4") in caption and ":material/check" not in caption


def test_the_answers_table_shows_whole_questions() -> None:
    """Its rows are tall enough for the longest question to wrap in full in its column (it was
    cut to about 22 characters: "What was Uber's total r…")."""
    import textwrap

    from pages.common.results import LINE_PX, ROW_PAD_PX, line_chars, question_layout

    asked = KNOWN[:3]
    at = open_app(ask_mode="several", questions_text="\n".join(q.question for q in asked))
    run(at)
    (table,) = [d for d in at.dataframe if list(d.value.columns)[:1] == ["Question"]]
    width, row_height = question_layout([q.question for q in asked])
    assert table.proto.row_height == row_height > 35
    assert all(
        ROW_PAD_PX + LINE_PX * len(textwrap.wrap(q.question, line_chars(width))) <= row_height for q in asked
    )


def test_a_very_long_question_widens_its_column_rather_than_growing_rows_without_end() -> None:
    from pages.common.results import LINE_PX, MAX_QUESTION_LINES, QUESTION_WIDTH, ROW_PAD_PX, question_layout

    assert question_layout(["Short?"]) == (QUESTION_WIDTH, 35)
    long = "What does the agreement say about the obligations of the supplier after termination " * 2
    width, row_height = question_layout([long])
    assert width > QUESTION_WIDTH and row_height <= ROW_PAD_PX + LINE_PX * MAX_QUESTION_LINES
