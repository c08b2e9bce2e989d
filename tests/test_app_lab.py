"""The Lab screen: the simulated reader and the offline engine, the cost shown before running,
the accuracy table and charts, the store's call cache, and the budget cap before any call.

The simulated reader sees only pages within a few thousand tokens of a copy of the
instructions, so on the contract cut to 40,000 tokens the baseline finds a fact planted at
the start or the end and misses one in the middle, while R&R's reminders reach it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from pages.common.text import md
from rr_core.lab import build_trials, trial_spec
from rr_core.lab.presets import PRESETS
from rr_core.lab.sweep import SweepPlan, plan_sweep
from rr_core.methods import parse_spec
from rr_core.settings import RunSettings
from rr_core.sources import sample_document
from rr_core.store import open_store
from rr_core.tokens import counter_for_model
from tests.stub_server import StubServer

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 300
PRICE_MODEL = "gpt-4.1-mini"
LENGTH = 40_000
DEPTHS = (0.0, 50.0, 100.0)


def open_lab(**state: Any) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("pages/lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def small_grid(at: AppTest, *, bounds: bool = False) -> None:
    """The contract at 40,000 tokens, facts at 0, 50 and 100%, once each: what a user types."""
    at.text_input(key="w.lab_lengths").input(str(LENGTH)).run()
    at.text_input(key="w.lab_depths").input(", ".join(f"{d:g}" for d in DEPTHS)).run()
    at.number_input(key="w.lab_repeats").set_value(1).run()
    if not bounds:
        at.checkbox(key="w.lab_bounds").uncheck().run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def expected_plan(provider: str = "offline", model: str = "offline", *, bounds: bool = False) -> SweepPlan:
    """The sweep the screen should plan for ``small_grid`` (the same engine calls)."""
    counter = counter_for_model(PRICE_MODEL)
    document = sample_document("contract", counter)
    preset = PRESETS["quick"]
    base = RunSettings(
        method="baseline",
        model=model,
        provider=provider,
        price_model=PRICE_MODEL if provider == "offline" else "",
    )
    series = [parse_spec(m, base) for m in preset.series]
    spec = trial_spec(
        preset, document, task="planted", lengths=(LENGTH,), repeats=1, paraphrase=False, distracters=0
    )
    trials = build_trials(spec, preset, document, counter, depths=DEPTHS)
    return plan_sweep(trials, series, counter, bounds=bounds)


def summary(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Before running:**"))


def test_a_local_server_sweep_is_priced_free() -> None:
    with StubServer() as stub:
        at = open_lab(provider="openai-compatible", model="llama3.1", base_url=stub.url)
        assert at.selectbox(key="w.lab_engine").options[-1] == (
            "The model chosen in the sidebar: openai-compatible / llama3.1"
        )
        small_grid(at)
        assert "**~$0.00**" in summary(at)
        assert not stub.requests


def chart_ids(at: AppTest) -> list[str]:
    return [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]


def lab_table(at: AppTest) -> pd.DataFrame:
    tables = [d.value for d in at.dataframe if "Accuracy" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def test_the_lab_opens_on_the_simulated_reader_with_the_cost_before_running() -> None:
    at = open_lab()
    assert at.selectbox(key="w.lab_engine").value == "simulated"
    assert at.selectbox(key="w.lab_engine").options == [
        "Simulated reader that loses the middle (demonstration; not an LLM)",
        "Offline engine (BM25 ranking; not an LLM)",
    ]  # no paid model without a key
    assert any("A demonstration, not a model" in i.value for i in at.info)
    assert at.selectbox(key="w.lab_preset").value == "quick"
    small_grid(at)
    plan = expected_plan()
    assert len(plan.trials) == 3 and len(plan.jobs) == 12  # baseline, the two cheap baselines, R&R
    text = summary(at)
    assert (
        f"**Before running:** 3 trials × methods = 12 runs, about {plan.calls} calls and "
        f"{plan.input_tokens:,} input tokens: **~${plan.usd:.2f}** as {md(PRICE_MODEL)}"
    ) in text
    assert "free here (not an LLM)" in text and "not paid again" in text
    assert any(
        c.startswith(
            "Lengths 40,000; depths 0%, 50%, 100%; methods: Baseline, Question last, Prompt repeated, R"
        )
        for c in (x.value for x in at.caption)
    )
    assert "lab_result" not in at.session_state and not at.get("plotly_chart")
    assert open_store().calls_cached() == 0  # planning sent nothing


def test_the_simulated_reader_loses_the_middle_and_rr_does_not() -> None:
    at = open_lab()
    small_grid(at)
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    result = at.session_state["lab_result"]["result"]
    by_cell = {(c.method, c.depth): c for c in result.cells}
    assert [by_cell[("baseline", d)].correct for d in DEPTHS] == [1, 0, 1]
    assert [by_cell[("rr", d)].correct for d in DEPTHS] == [1, 1, 1]
    # The question once at the end: only the end is near it. Repeated: the second copy of the
    # instructions stands after the first copy's end and before the second copy's start.
    assert [by_cell[("question-last", d)].correct for d in DEPTHS] == [0, 0, 1]
    assert [by_cell[("repeat", d)].correct for d in DEPTHS] == [1, 0, 1]
    assert by_cell[("baseline", 50.0)].reading_misses == 1  # the page was in view, the middle lost
    # The accuracy table: one row per method, baseline lower.
    rows = {r["Method"].split(" (")[0]: r for r in lab_table(at).to_dict("records")}
    assert set(rows) == {"Baseline", "Question last", "Prompt repeated", "R&R"}
    assert rows["Baseline"]["Trials"] == rows["R&R"]["Trials"] == 3
    assert rows["Baseline"]["Accuracy"] == "67%" and rows["R&R"]["Accuracy"] == "100%"
    assert rows["R&R"]["Calls / trial"] == 2.0 and rows["Baseline"]["Calls / trial"] == 1.0
    # The charts: accuracy by depth (one line per method), cost against accuracy, failures.
    assert chart_ids(at) == ["lab_depth", "lab_cost", "lab_failures"]  # one length: no heatmap
    depth = json.loads(at.get("plotly_chart")[0].proto.spec)
    lines = {t["name"].split(" (")[0]: t["y"] for t in depth["data"]}
    assert lines == {
        "Baseline": [100, 0, 100],
        "Question last": [0, 0, 100],
        "Prompt repeated": [100, 0, 100],
        "R&R": [100, 100, 100],
    }
    assert [b.label for b in at.download_button] == [
        "Download JSON",
        "Download CSV (cells)",
        "Download report (Markdown)",
    ]
    plan = expected_plan()
    done = next(c.value for c in at.caption if "calls made" in c.value)
    assert f"{plan.calls} calls made, 0 found in the store" in done
    assert "(what it would cost: the engine is free)" in done


def test_running_again_takes_every_call_from_the_store() -> None:
    at = open_lab()
    small_grid(at)
    at.button(key="lab_run").click().run()
    first = at.session_state["lab_result"]["result"]
    at.button(key="lab_run").click().run()
    again = at.session_state["lab_result"]["result"]
    assert first.calls_made > 0
    assert (again.calls_made, again.calls_cached) == (0, first.calls_made)
    assert [c.correct for c in again.cells] == [c.correct for c in first.cells]
    assert any(f"0 calls made, {first.calls_made} found in the store" in c.value for c in at.caption)


def test_the_offline_engine_with_bounds_runs_end_to_end() -> None:
    at = open_lab()
    at.selectbox(key="w.lab_engine").set_value("offline").run()
    assert any("Not an LLM" in i.value for i in at.info)
    small_grid(at, bounds=True)
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error
    rows = {r["Method"].split(" (")[0]: r for r in lab_table(at).to_dict("records")}
    assert set(rows) == {"Baseline", "Question last", "Prompt repeated", "R&R", "Closed-book", "Oracle"}
    assert rows["Closed-book"]["Accuracy"] == "0%" and rows["Oracle"]["Accuracy"] == "100%"
    depth = json.loads(at.get("plotly_chart")[0].proto.spec)
    annotations = [a["text"] for a in depth["layout"].get("annotations", [])]
    assert any(a.startswith("Closed-book") for a in annotations) and any(
        a.startswith("Oracle") for a in annotations
    )


def test_each_preset_states_where_the_question_goes_and_why_and_the_sweep_uses_it() -> None:
    at = open_lab()
    assert at.selectbox(key="w.lab_layout").value == "before-and-after"
    assert any(
        c.value.startswith(f"**Where the question goes** ({md('before-and-after')})")
        and md("000 §3.1") in c.value
        for c in at.caption
    )
    at.selectbox(key="w.lab_preset").set_value("key-value").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="w.lab_layout").value == "question-last"
    why = next(c.value for c in at.caption if c.value.startswith("**Where the question goes**"))
    assert f"({md('question-last')})" in why and "001 §4" in why and "after the pairs" in why
    assert any("exact match on the value" in c.value for c in at.caption)
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    plan = at.session_state["lab_result"]["plan"]
    placements = {job.plan.method: job.plan.settings.question_placement.value for job in plan.jobs}
    assert placements["baseline"] == placements["rr"] == "question-last"
    assert placements["question-last"] == "document-first" and placements["repeat"] == "repeated"
    # The user may place it otherwise; the sweep follows.
    at.selectbox(key="w.lab_layout").set_value("query-aware").run()
    at.button(key="lab_run").click().run()
    plan = at.session_state["lab_result"]["plan"]
    assert {j.plan.settings.question_placement.value for j in plan.jobs if j.plan.method == "baseline"} == {
        "query-aware"
    }
    at.selectbox(key="w.lab_preset").set_value("lost-in-the-middle").run()
    assert any("Lost-in-the-Middle release" in u.label for u in at.get("file_uploader"))
    assert any("ranked by BM25" in i.value for i in at.info)


def test_a_bad_grid_is_an_error_not_a_traceback() -> None:
    at = open_lab()
    at.text_input(key="w.lab_lengths").input("forty thousand").run()
    assert not at.exception
    assert any("lists separated by commas" in e.value for e in at.error)
    with pytest.raises(KeyError):
        at.button(key="lab_run")


def test_the_budget_cap_refuses_a_paid_sweep_before_any_call() -> None:
    # The stub speaks OpenAI's wire format; as "openai" the sweep is priced (an
    # OpenAI-compatible server is priced as a free local model, so no cap could refuse it).
    with StubServer() as stub:
        at = open_lab(provider="openai", model=PRICE_MODEL, base_url=stub.url, api_key="sk-lab-test")
        assert at.selectbox(key="w.lab_engine").value == "provider"
        small_grid(at)
        plan = expected_plan("openai", PRICE_MODEL)
        assert plan.usd > 0.01 and plan.cost.known
        assert f"**~${plan.usd:.2f}**" in summary(at) and "free here" not in summary(at)
        at.number_input(key="w.lab_budget").set_value(0.01).run()
        at.button(key="lab_run").click().run()
        assert not at.exception
        refused = [e.value for e in at.error]
        assert len(refused) == 1
        assert "above the budget of" in refused[0] and "Nothing was sent" in refused[0]
        assert len(stub.requests) == 0
        assert "lab_result" not in at.session_state
        # Under a budget that covers it, the same sweep goes to the server.
        at.number_input(key="w.lab_budget").set_value(5.0).run()
        at.button(key="lab_run").click().run()
        assert not at.exception
        made = at.session_state["lab_result"]["result"].calls_made
        # Identical calls (the same pages of the same text) are sent once and shared.
        assert len(stub.requests) == made and 0 < made <= plan.calls
        assert all(r.headers["authorization"] == "Bearer sk-lab-test" for r in stub.requests)
        assert all(r.body["store"] is False for r in stub.requests)
