"""The Document screen: page strip, rendered page, prompts with reminders, distances."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from rr_core.chunking import partition_pages, plan_reminders
from rr_core.documents import load_document
from rr_core.samples import get_sample
from rr_core.sources import sample_document
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SAMPLE = get_sample("contract")
NOTICE = next(q for q in SAMPLE.questions if "convenience" in q.question)


def page_tokens() -> list[int]:
    return sample_document("contract", counter_for_model("gpt-4.1-mini")).page_tokens


def open_document_screen(run_first: bool = False, question: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if question:
        at.selectbox(key="w.quick").set_value(question).run()
    if run_first:
        at.button(key="run").click().run()
    at.switch_page("pages/document.py").run()
    assert not at.exception and not at.error
    return at


def strip_spec(at: AppTest) -> dict:
    return json.loads(at.get("plotly_chart")[0].proto.spec)


def reminder_rows(at: AppTest) -> list[dict]:
    assert len(at.dataframe) == 1  # the reminder table is the screen's only table
    return at.dataframe[0].value.to_dict("records")


def test_before_any_run_it_shows_pages_reminders_and_the_planned_prompt() -> None:
    at = open_document_screen()
    tokens = page_tokens()
    expected = plan_reminders(tokens, 10_000)
    # The strip: one bar per page with its tokens, a marker after each reminder page.
    spec = strip_spec(at)
    bars = spec["data"][0]
    assert bars["x"] == list(range(1, len(SAMPLE.pages) + 1)) and bars["y"] == tokens
    markers = next(t for t in spec["data"] if t.get("name", "").startswith("reminder"))
    assert markers["x"] == [p + 0.5 for p in expected]
    chunk_lines = [s for s in spec["layout"].get("shapes", []) if s.get("line", {}).get("dash") == "dash"]
    assert len(chunk_lines) == len(partition_pages(tokens, 20_000)) - 1
    assert any(f"carries {len(expected)} reminders" in c.value for c in at.caption)
    # The page on screen is rendered as an image.
    assert at.image[0].value[0].endswith(".png")
    assert at.image[0].captions[0].startswith(f"Page 1 of {len(SAMPLE.pages)}")
    # R&R's retrieval prompt, from the plan: reminders listed with their token offsets.
    assert at.selectbox(key="w.prompt_method").value == "rr"
    assert any("Not run yet" in c.value for c in at.caption)
    rows = reminder_rows(at)
    assert [r["after page"] for r in rows] == [str(p) for p in expected]
    offsets = [r["token offset"] for r in rows]
    assert offsets == sorted(offsets) and offsets[0] > sum(tokens[: expected[0]])
    code = at.code[0].value
    assert code.count("<INSTRUCTIONS_REMINDER>") == len(expected)
    assert "<PAGE 1>" in code and f"</PAGE {len(SAMPLE.pages)}>" in code
    assert {m.label: m.value for m in at.metric}["Reminders"] == str(len(expected))
    # Distances: with reminders every page is closer to a copy of the instructions.
    distance = json.loads(at.get("plotly_chart")[1].proto.spec)["data"]
    without, with_reminders = distance[0]["y"], distance[1]["y"]
    assert max(with_reminders) < max(without) / 3
    assert any("paper's explanation of why reprompting works" in c.value for c in at.caption)


def test_moving_k_and_c_redraws_markers_and_chunk_bounds() -> None:
    at = open_document_screen()
    tokens = page_tokens()
    at.sidebar.slider(key="w.reminder_every").set_value(3_000).run()
    at.sidebar.slider(key="w.chunk_size").set_value(8_000).run()
    assert not at.exception
    spec = strip_spec(at)
    markers = next(t for t in spec["data"] if t.get("name", "").startswith("reminder"))
    assert markers["x"] == [p + 0.5 for p in plan_reminders(tokens, 3_000)]
    chunk_lines = [s for s in spec["layout"].get("shapes", []) if s.get("line", {}).get("dash") == "dash"]
    assert len(chunk_lines) == len(partition_pages(tokens, 8_000)) - 1
    assert len(reminder_rows(at)) == len(plan_reminders(tokens, 3_000))


def test_paging_renders_only_the_page_on_screen() -> None:
    at = open_document_screen()
    at.number_input(key="w.view_page").set_value(7).run()
    assert not at.exception
    assert at.image[0].captions[0].startswith(f"Page 7 of {len(SAMPLE.pages)}")
    assert at.session_state["view_page"] == 7
    at.number_input(key="w.view_page").increment().run()
    assert at.image[0].captions[0].startswith("Page 8 of")


def test_after_a_run_retrieved_pages_are_coloured_and_the_cited_page_highlighted() -> None:
    at = open_document_screen(run_first=True, question=NOTICE.question)
    rr = {t.method: t for t in at.session_state["results"]["traces"]}["rr"]
    assert at.selectbox(key="w.doc_method").value == "rr"
    spec = strip_spec(at)
    colours = spec["data"][0]["marker"]["color"]
    grey = colours[[p for p in range(1, len(SAMPLE.pages) + 1) if p not in rr.retrieved_pages][0] - 1]
    assert all(colours[p - 1] != grey for p in rr.retrieved_pages)
    cited = next(t for t in spec["data"] if t.get("name") == "cited page")
    assert cited["x"] == [NOTICE.page]
    # Jump to the cited page: framed, with the supporting text highlighted.
    at.button(key="go_cited").click().run()
    caption = at.image[0].captions[0]
    assert caption.startswith(f"Page {NOTICE.page} of")
    assert "retrieved #" in caption and "supporting text highlighted" in caption
    # The prompts now come from the run, exactly as sent.
    assert any("exactly as they were sent" in c.value for c in at.caption)
    calls = at.selectbox(key="w.prompt_call").options
    assert calls == [
        f"1. retrieval — {len(SAMPLE.pages)} pages",
        f"2. answer — {len(rr.retrieved_pages)} pages",
    ]
    assert at.code[0].value.count("<INSTRUCTIONS_REMINDER>") == len(rr.calls[0].reminders_after)
    at.selectbox(key="w.prompt_call").set_value(calls[1]).run()
    assert "<INSTRUCTIONS_REMINDER>" not in at.code[0].value
    assert f"<PAGE {NOTICE.page}>" in at.code[0].value
    assert any("No reminder in this prompt" in c.value for c in at.caption)


def test_changed_settings_after_a_run_show_the_plan_instead() -> None:
    at = open_document_screen(run_first=True)
    at.sidebar.slider(key="w.reminder_every").set_value(5_000).run()
    assert any("settings changed since the last run" in c.value for c in at.caption)
    assert len(reminder_rows(at)) == len(plan_reminders(page_tokens(), 5_000))


def test_the_pending_answer_call_explains_itself() -> None:
    at = open_document_screen()
    options = at.selectbox(key="w.prompt_call").options
    assert options[1] == "2. answer — waits for the retrieved pages"
    at.selectbox(key="w.prompt_call").set_value(options[1]).run()
    assert not at.exception
    assert any("depends on the pages the retrieval phase returns" in i.value for i in at.info)


def test_a_reflowed_text_upload_is_rendered_too() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.radio(key="w.source").set_value("upload").run()
    text = "\n\n".join(f"Paragraph {i} about rivers and their deltas." for i in range(200))
    at.file_uploader(key="w.upload").set_value(("rivers.md", text.encode(), "text/markdown")).run()
    at.switch_page("pages/document.py").run()
    assert not at.exception and not at.error
    assert any("no PDF pages" in c.value for c in at.caption)
    expected = load_document(text.encode(), filename="rivers.md", counter=counter_for_model("gpt-4.1-mini"))
    assert len(expected.pages) > 1
    assert strip_spec(at)["data"][0]["y"] == expected.page_tokens
    assert at.image[0].captions[0].startswith(f"Page 1 of {len(expected.pages)}")


def test_a_parameter_changed_on_ask_is_seen_on_document_and_back() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.sidebar.slider(key="w.reminder_every").set_value(6_000).run()
    at.switch_page("pages/document.py").run()
    assert at.sidebar.slider(key="w.reminder_every").value == 6_000
    assert any("k = 6,000 tokens" in c.value for c in at.caption)
    at.sidebar.slider(key="w.top_k").set_value(3).run()
    at.switch_page("pages/ask.py").run()
    assert at.sidebar.slider(key="w.top_k").value == 3
    assert at.sidebar.slider(key="w.reminder_every").value == 6_000
