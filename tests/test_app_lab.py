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
from rr_core.lab.report import SENT
from rr_core.lab.sweep import SweepPlan, plan_sweep
from rr_core.methods import parse_spec
from rr_core.settings import LAYOUTS, RunSettings
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
    """The statistics' table (under its expander): counts, calls and tokens per method."""
    tables = [d.value for d in at.dataframe if "Frontier" in d.value.columns and "Trials" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def summary_table(at: AppTest) -> pd.DataFrame:
    """The first view's table: right, interval, cost and frontier."""
    tables = [d.value for d in at.dataframe if "Right" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def test_the_estimate_is_planned_again_only_when_a_choice_it_is_planned_from_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rr_core import workbench

    planned: list[int] = []
    real = workbench.plan_measurement

    def counted(*args: Any, **kwargs: Any) -> Any:
        trials, plan = real(*args, **kwargs)
        planned.append(len(plan.jobs))
        return trials, plan

    monkeypatch.setattr(workbench, "plan_measurement", counted)
    at = open_lab()
    small_grid(at)
    before = summary(at)
    runs = len(planned)
    at.run()  # a click elsewhere on the screen: the same choices
    at.run()
    assert len(planned) == runs and summary(at) == before
    at.number_input(key="w.lab_repeats").set_value(2).run()  # a choice the trials are made from
    assert len(planned) == runs + 1 and planned[-1] == 2 * planned[-2]
    assert summary(at) != before and "6 trials" in summary(at)
    at.checkbox(key="w.lab_bounds").check().run()  # one the jobs are made from
    assert len(planned) == runs + 2 and planned[-1] > planned[-2]
    at.checkbox(key="w.lab_bounds").uncheck().run()
    assert len(planned) == runs + 3 and summary(at) != before and "6 trials" in summary(at)


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
    assert len(plan.trials) == 3 and len(plan.jobs) == 15  # baseline, the three cheap baselines, R&R
    text = summary(at)
    assert (
        f"**Before running:** 3 trials × methods = 15 runs, about {plan.calls} calls and "
        f"{plan.input_tokens:,} input tokens ({plan.cacheable_tokens:,} in prefixes shared with another "
        f"call): **~${plan.usd:.2f}** now as {md(PRICE_MODEL)}"
    ) in text
    assert "free here (not an LLM)" in text and "not paid again" in text
    assert any(
        c.startswith(
            "Lengths 40,000; depths 0%, 50%, 100%; methods: Baseline, Question last, Prompt repeated, Self"
        )
        for c in (x.value for x in at.caption)
    )
    facts, redrawn = plan.planted_facts
    assert any(
        f"Planted facts: {facts}, {redrawn} drawn again because the document itself" in x.value
        for x in at.caption
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
    # The accuracy table: one row per method, baseline lower, n as trials and questions.
    table = lab_table(at)
    assert "Would cost (USD)" in table.columns and "Cost (USD)" not in table.columns  # a free engine
    assert "Effective length" not in table.columns  # one length: nothing to say
    rows = {r["Method"].split(" (")[0]: r for r in table.to_dict("records")}
    assert set(rows) == {"Baseline", "Question last", "Prompt repeated", "Self-Route", "R&R"}
    assert rows["Baseline"]["Trials"] == rows["R&R"]["Trials"] == 3
    assert rows["Baseline"]["Questions"] == rows["R&R"]["Questions"] == 1  # one fact, at every depth
    assert rows["Baseline"]["Accuracy"] == "67%" and rows["R&R"]["Accuracy"] == "100%"
    assert rows["R&R"]["Calls / trial"] == 2.0 and rows["Baseline"]["Calls / trial"] == 1.0
    # One fact: too few for the paired difference to be shown, and the screen says so.
    paired = next(d.value for d in at.dataframe if "Against" in d.value.columns).to_dict("records")
    assert len(paired) == 10 and {r["Questions"] for r in paired} == {1}  # every pair of five methods
    said = " ".join(m.value for m in at.markdown)
    verdicts = [c.sentence() for c in result.comparisons]
    assert all(v.startswith("No difference shown") for v in verdicts)
    assert all(md(v) in said for v in verdicts) and "answered more right than" not in said
    # Plain words first: one sentence per comparison, the primary (R&R against Baseline) first.
    assert result.comparisons[0].primary and result.comparisons[0].series.startswith("R&R")
    plain = next(m.value for m in at.markdown if m.value.startswith("**In plain words**"))
    asked = result.comparisons[0].questions  # too few to ever show a difference, and it says so
    assert md(result.comparisons[0].plain()) in plain and f"with {asked} question" in plain and asked < 6
    first = summary_table(at)
    assert list(first.columns) == ["Method", "Right", "95% interval", "Would cost (USD)", "Frontier"]
    # The charts: accuracy by depth beside distance to the end, cost against accuracy, and the
    # failure split of the method that picks pages (the baseline picks none).
    assert chart_ids(at) == ["lab_depth", "lab_cost", "lab_failures"]  # one length: no heatmap
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    for spec in charts.values():
        assert "simulated reader — not an LLM" in spec["layout"]["title"]["text"]
    depth = charts["lab_depth"]
    lines = {
        t["name"].split(" (")[0]: t
        for t in depth["data"]
        if t.get("xaxis", "x") == "x" and t["y"][0] is not None
    }
    assert {k: v["y"] for k, v in lines.items()} == {
        "Baseline": [100, 0, 100],
        "Question last": [0, 0, 100],
        "Prompt repeated": [100, 0, 100],
        "Self-Route": [100, 100, 100],  # its passages are short: all in view
        "R&R": [100, 100, 100],
    }
    # Dodged: at each depth the methods' points (and error bars) stand apart, in order.
    xs = [lines[name]["x"] for name in ("Baseline", "Question last", "Prompt repeated", "Self-Route", "R&R")]
    assert all(a < b for left, right in zip(xs, xs[1:]) for a, b in zip(left, right, strict=True))
    assert [d[0] for d in lines["R&R"]["customdata"]] == list(DEPTHS)  # the hover says the true depth
    by_distance = [t for t in depth["data"] if t.get("xaxis") == "x2"]
    assert len(by_distance) == 5 and depth["layout"]["xaxis2"]["title"]["text"].startswith(
        "tokens to the end"
    )
    failures = charts["lab_failures"]
    assert {x.split(" (")[0] for t in failures["data"] for x in t["x"]} == {"Self-Route", "R&R"}
    with_n = next(d.value for d in at.dataframe if "Tokens to the end" in d.value.columns)
    assert set(with_n["Trials"]) == {1} and set(with_n["Questions"]) == {1} and len(with_n) == 15
    assert [b.label for b in at.download_button] == [
        "Download JSON",
        "Download CSV (cells)",
        "Download CSV (every trial)",
        "Download report (Markdown)",
    ]
    plan = expected_plan()
    done = next(c.value for c in at.caption if "calls made" in c.value)
    # Self-Route's long call, counted in the estimate (the most it can cost), was never needed: its
    # passages answered each of the 3 trials.
    assert f"{plan.calls - 3} calls made, 0 found in the store" in done
    assert "nothing paid (the engine is free); the same calls would cost $" in done


def test_several_lengths_draw_heatmaps_with_n_and_say_what_effective_length_means() -> None:
    at = open_lab()
    at.text_input(key="w.lab_lengths").input("10000, 20000").run()
    at.text_input(key="w.lab_depths").input("0, 50, 100").run()
    at.number_input(key="w.lab_repeats").set_value(2).run()
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Effective length" in lab_table(at).columns
    assert any("Effective length: the longest length" in c.value for c in at.caption)
    assert chart_ids(at) == ["lab_depth", "lab_heatmap", "lab_cost", "lab_failures"]
    heat = json.loads(
        next(c for c in at.get("plotly_chart") if c.proto.id.endswith("lab_heatmap")).proto.spec
    )
    assert heat["layout"]["xaxis"]["type"] == "category" and heat["layout"]["yaxis"]["type"] == "category"
    assert heat["data"][0]["y"] == ["10,000", "20,000"] and heat["data"][0]["x"] == ["0%", "50%", "100%"]
    assert all(text.endswith("2 questions × 1 repeat") for row in heat["data"][0]["text"] for text in row)
    assert not any("n=" in text for trace in heat["data"] for row in trace["text"] for text in row)
    assert "simulated reader — not an LLM" in heat["layout"]["title"]["text"]
    trials = next(b for b in at.download_button if b.label == "Download CSV (every trial)")
    assert trials.proto.label == "Download CSV (every trial)"


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
    assert set(rows) == {
        "Baseline",
        "Question last",
        "Prompt repeated",
        "Self-Route",
        "R&R",
        "Closed-book",
        "Oracle",
    }
    assert rows["Closed-book"]["Accuracy"] == "0%" and rows["Oracle"]["Accuracy"] == "100%"
    depth = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [t["name"] for t in depth["data"]]
    assert any(n.startswith("Closed-book: 0%") for n in names) and any(
        n.startswith("Oracle: 100%") for n in names
    )
    assert "offline engine — not an LLM" in depth["layout"]["title"]["text"]


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
    assert at.selectbox(key="w.lab_layout").value == "question-after"
    # The layouts offered are rr_core's list, the same as ``lab --layout``'s.
    assert at.selectbox(key="w.lab_layout").options == [p.label[0].upper() + p.label[1:] for p in LAYOUTS]
    why = next(c.value for c in at.caption if c.value.startswith("**Where the question goes**"))
    assert f"({md('question-after')})" in why and "001 §4" in why and "after the pairs" in why
    assert any("exact match on the value" in c.value for c in at.caption)
    # R&R cannot take it (its reminders carry the question): it keeps its own, and the screen says so.
    assert any(
        "R&R" in (text := c.value.replace("\\", "")).split(":")[0] and "does not take question-after" in text
        for c in at.caption
    ), [c.value for c in at.caption]
    # One key per position, not the preset's 50: the placements are the plan's, whatever its size.
    at.number_input(key="w.lab_repeats").set_value(1).run()
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    plan = at.session_state["lab_result"]["plan"]
    placements = {job.settings.method: job.settings.question_placement.value for job in plan.jobs}
    assert placements["baseline"] == placements["closed-book"] == "question-after"
    assert placements["rr"] == "before-and-after"
    assert placements["question-last"] == "document-first" and placements["repeat"] == "repeated"
    # The user may place it otherwise; the sweep follows.
    at.selectbox(key="w.lab_layout").set_value("query-aware").run()
    at.button(key="lab_run").click().run()
    plan = at.session_state["lab_result"]["plan"]
    assert {j.settings.question_placement.value for j in plan.jobs if j.settings.method == "baseline"} == {
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


def test_methods_of_the_same_cost_stand_apart_in_the_cost_chart() -> None:
    from pages.common.labcharts import cost_accuracy
    from rr_core.lab.stats import SeriesSummary

    def summary(name: str, accuracy: float) -> SeriesSummary:
        return SeriesSummary(
            series=name, method=name, trials=10, accuracy=accuracy, ci=(accuracy - 0.3, accuracy + 0.1),
            cost_usd=0.2, calls_per_trial=1, input_per_trial=100, output_per_trial=10, effective=None,
            retrieval_misses=0, reading_misses=0, questions=2,
        )  # fmt: skip

    spec = json.loads(
        cost_accuracy([summary("A", 0.4), summary("B", 0.5)], note="offline engine — not an LLM").to_json()
    )
    points = [t for t in spec["data"] if t["mode"] == "markers"]
    assert points[0]["x"][0] < points[1]["x"][0]  # one cost, two separate intervals
    assert [p["customdata"][0] for p in points] == [0.02, 0.02]  # the hover keeps the true cost
    assert "offline engine — not an LLM" in spec["layout"]["title"]["text"]


def test_a_method_whose_every_run_failed_is_n_a_in_the_charts() -> None:
    """No counted trial: no point in the cost chart (not a free 0%), an empty heatmap cell
    saying n/a and how many failed."""
    from pages.common.labcharts import cost_accuracy, heatmaps
    from rr_core.lab.stats import Score, cells, summarise

    def run(series: str, question: str, depth: float, *, failed: bool) -> Score:
        return Score(
            series=series, method=series, length=1_000, depth=depth, trial=f"{question}-{depth:g}",
            question_id=question, correct=not failed, em=not failed, retrieves=False, recalled=False,
            cited_gold=False, cost_usd=0.0, calls=1, input_tokens=10, output_tokens=1, failed=failed,
        )  # fmt: skip

    scores = [run("A", f"q{q}", d, failed=False) for q in range(2) for d in (0.0, 100.0)]
    scores += [run("B", f"q{q}", d, failed=d == 100.0) for q in range(2) for d in (0.0, 100.0)]
    scores += [run("C", f"q{q}", d, failed=True) for q in range(2) for d in (0.0, 100.0)]
    spec = json.loads(cost_accuracy(summarise(scores), note="n").to_json())
    assert [t["name"] for t in spec["data"] if t["mode"] == "markers"] == ["A", "B"]
    heat = json.loads(heatmaps(cells(scores), note="n").to_json())
    b_panel = heat["data"][1]  # one panel per series, in order: A, B, C
    assert b_panel["z"][0] == [100.0, None]
    assert b_panel["text"][0][1] == "n/a<br>2 failed"


def test_the_budget_cap_stops_a_sweep_whose_bills_run_above_the_estimate() -> None:
    from tests.stub_server import Reply

    with StubServer() as stub:
        at = open_lab(provider="openai", model=PRICE_MODEL, base_url=stub.url, api_key="sk-lab-test")
        small_grid(at)
        plan = expected_plan("openai", PRICE_MODEL)
        cap = round(plan.usd * 2 + 0.01, 2)
        # Each reply bills a third of the cap: gpt-4.1-mini input costs $0.40 per million tokens.
        billed = int(cap / 3 / 0.40e-6)
        usage = {"input_tokens": billed, "output_tokens": 10, "total_tokens": billed + 10}
        stub.responder = lambda path, body: Reply(usage=usage)
        at.number_input(key="w.lab_budget").set_value(cap).run()
        at.button(key="lab_run").click().run()
        assert not at.exception
        result = at.session_state["lab_result"]["result"]
        assert result.paid_usd() <= cap and 0 < len(stub.requests) < plan.calls
        stopped = [w.value for w in at.warning if "Stopped" in w.value]
        assert len(stopped) == 1 and md(f"budget cap of ${cap:.2f} was reached") in stopped[0]
        assert any(f"${result.paid_usd():.4f} paid" in c.value for c in at.caption)


def test_a_compatible_server_with_no_price_refuses_a_budget_until_priced() -> None:
    with StubServer() as stub:
        at = open_lab(provider="openai-compatible", model="llama3.1", base_url=stub.url)
        small_grid(at)
        assert "no price known" in summary(at)
        assert any("could be passed unseen" in w.value for w in at.warning)
        at.button(key="lab_run").click().run()
        assert not at.exception
        assert any("Nothing was sent" in e.value for e in at.error)
        assert len(stub.requests) == 0 and "lab_result" not in at.session_state
        # Named as the model whose prices it charges, the sweep is priced and the cap is kept.
        at.sidebar.selectbox(key="w.compat_price_model").set_value(PRICE_MODEL).run()
        assert not any("could be passed unseen" in w.value for w in at.warning)
        assert "no price known" not in summary(at)
        at.button(key="lab_run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        result = at.session_state["lab_result"]["result"]
        assert len(stub.requests) == result.calls_made > 0 and result.paid_usd() > 0


def estimates(at: AppTest) -> dict[str, str]:
    """The estimate boxes: label and figure."""
    boxes = [m.value.split("\n\n#### \\") for m in at.markdown if "\n\n#### \\$" in m.value]
    return {label: figure for label, figure in boxes}


def test_a_batching_engine_offers_batches_with_three_estimates_and_checks_the_chosen_one() -> None:
    with StubServer() as stub:
        at = open_lab(provider="openai", model=PRICE_MODEL, base_url=stub.url, api_key="sk-lab-test")
        small_grid(at)
        send = at.radio(key="w.lab_mode")
        assert send.options == [
            "Now (every call at once, list price)",
            "In batches (half price, within 24 h)",
        ]
        assert send.value == "now"
        plan = expected_plan("openai", PRICE_MODEL)
        assert (
            plan.batch_cost.total_usd < plan.cached_cost.total_usd <= plan.cost.total_usd + 1e-9
        )  # sums in floats
        assert estimates(at) == {
            "Now, list price, no cache — the ceiling": f"${plan.cost.total_usd:.2f}",
            "Now, with prompt cache (expected)": f"${plan.cached_cost.total_usd:.2f}",
            "In batches, with prompt cache (expected)": f"${plan.batch_cost.total_usd:.2f}",
        }
        assert f"**~${plan.cost.total_usd:.2f}** now" in summary(at)
        send.set_value("batch").run()
        assert f"**~${plan.batch_cost.total_usd:.2f}** in batches" in summary(at)
        # The budget is checked against the batch estimate: a cap between the two figures
        # refuses now and lets a batch sweep through the check.
        cap = round((plan.batch_cost.total_usd + plan.cost.total_usd) / 2, 2)
        assert plan.batch_cost.total_usd < cap < plan.cost.total_usd
        at.radio(key="w.lab_mode").set_value("now").run()
        at.number_input(key="w.lab_budget").set_value(cap).run()
        at.button(key="lab_run").click().run()
        assert any("above the budget of" in e.value for e in at.error)
        assert not stub.requests


def test_a_server_without_batches_sends_now_and_says_so() -> None:
    with StubServer() as stub:
        at = open_lab(provider="openai-compatible", model="llama3.1", base_url=stub.url)
        assert not at.radio
        assert any("sells no batches" in c.value for c in at.caption)


def test_a_free_engine_explains_its_batches_run_here_and_the_batches_outlive_the_tab() -> None:
    at = open_lab()
    at.selectbox(key="w.lab_engine").set_value("offline").run()
    small_grid(at)
    assert any("in this process" in c.value and "saves nothing" in c.value for c in at.caption)
    assert all("(would cost)" in label for label in estimates(at))
    assert any("No batches in the run store yet" in c.value for c in at.caption)
    at.radio(key="w.lab_mode").set_value("batch").run()
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    result = at.session_state["lab_result"]["result"]
    assert result.calls_made > 0 and not result.failures
    assert any("sent in batches" in c.value and "nothing paid" in c.value for c in at.caption)
    # A fresh session (the tab closed and opened again) reads the batches from the run store.
    reopened = open_lab()
    listed = [d.value for d in reopened.dataframe if "Batch" in d.value.columns]
    assert len(listed) == 1
    rows = listed[0].to_dict("records")
    assert rows and all(r["Label"].startswith("Lab sweep · quick") and r["State"] == "ended" for r in rows)
    counts = [tuple(int(n.replace(",", "")) for n in r["Done"].split(" of ")) for r in rows]
    assert all(done == total > 0 for done, total in counts)
    assert any("Every batch here has ended" in c.value for c in reopened.caption)


def test_a_paid_batch_sweep_pays_the_batch_price_and_says_how_it_was_sent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    paid = {}
    with StubServer() as stub:
        stub.batch_auto_complete = True  # answered as submitted: the first poll collects it
        for mode in ("now", "batch"):
            # Each mode with its own run store, so neither finds the other's calls.
            monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / f"{mode}.sqlite3"))
            at = open_lab(provider="openai", model=PRICE_MODEL, base_url=stub.url, api_key="sk-lab-test")
            small_grid(at)
            at.radio(key="w.lab_mode").set_value(mode).run()
            at.button(key="lab_run").click().run()
            assert not at.exception and not at.error, [e.value for e in at.error]
            result = at.session_state["lab_result"]["result"]
            assert result.calls_made > 0 and not result.failures
            assert at.session_state["lab_result"]["mode"] == mode
            assert any(f"sent {md(SENT[mode])}" in c.value for c in at.caption)
            paid[mode] = result.paid_usd()
    # Batches cost less than the same calls sent now (the calls sent in batches at half price).
    assert 0 < paid["batch"] < paid["now"]


def test_the_prompts_choice_runs_the_papers_protocol_and_says_so() -> None:
    at = open_lab()
    assert at.selectbox(key="w.lab_protocol").value == "json"  # the analyst's default
    small_grid(at)
    at.selectbox(key="w.lab_protocol").set_value("paper").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(
        c.value.startswith("**Prompt protocol:** paper") and "counted as wrong" in c.value for c in at.caption
    )
    at.button(key="lab_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    plan = at.session_state["lab_result"]["plan"]
    assert {job.settings.protocol.value for job in plan.jobs} == {"paper"}
    result = at.session_state["lab_result"]["result"]
    assert {s.protocol for s in result.scores} == {"paper"}
    assert all("protocol: paper" in s.series for s in result.summaries)
