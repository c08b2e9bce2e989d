"""The Document screen: what the model saw, drawn from the plan of the run (or plan) shown.

The reminder markers and chunk lines are compared with ``rr_core.viewer.plan_marks`` of the
same plan, made by the engine; the page viewer, the prompt selector, the distance chart and
the prompt download are driven as a user would.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
from conftest import markdown_table
from streamlit.testing.v1 import AppTest

from pages.common.text import md
from rr_core.methods import get_method, parse_spec, plan_questions
from rr_core.plans import Citation
from rr_core.questions import Question
from rr_core.runs import RunTrace
from rr_core.samples import get_sample, questions_middle_first
from rr_core.settings import RunSettings
from rr_core.sources import sample_document
from rr_core.tokens import counter_for_model
from rr_core.viewer import PlanMarks, plan_marks

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 240
PRICE_MODEL = "gpt-4.1-mini"
SAMPLE = get_sample("contract")
PAGES = len(SAMPLE.pages)
FIRST = questions_middle_first("contract")[0]
REMINDER_TAG = "<INSTRUCTIONS_REMINDER>"


def counter():  # type: ignore[no-untyped-def]
    return counter_for_model(PRICE_MODEL)


def document():  # type: ignore[no-untyped-def]
    return sample_document("contract", counter())


def open_app(**state: Any) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def to_document(at: AppTest) -> AppTest:
    at.switch_page("pages/document.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def run_then_document(methods: list[str]) -> tuple[AppTest, list[RunTrace]]:
    at = open_app(methods=methods)
    at.button(key="run").click().run()
    assert not at.exception
    traces = list(at.session_state["results"]["traces"])
    assert all(t.error is None for t in traces)
    return to_document(at), traces


def chart(at: AppTest, key: str) -> dict[str, Any]:
    """The chart's figure as the browser gets it, packed arrays read back into lists."""
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    assert len(found) == 1, [c.proto.id for c in at.get("plotly_chart")]
    spec: dict[str, Any] = _unpacked(json.loads(found[0].proto.spec))
    return spec


def _unpacked(value: Any) -> Any:
    # Plotly sends a numeric array as {"dtype": "i8", "bdata": base64 of its bytes[, "shape"]}.
    if isinstance(value, dict) and set(value) >= {"dtype", "bdata"}:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
        return array.tolist()
    if isinstance(value, dict):
        return {k: _unpacked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unpacked(v) for v in value]
    return value


def strip_marks(at: AppTest) -> tuple[list[float], list[float]]:
    """(reminder marker x positions, chunk line x positions) on the page strip."""
    spec = chart(at, "page_strip")
    markers = next((t["x"] for t in spec["data"] if t.get("name") == "reminder"), [])
    lines = [s["x0"] for s in spec["layout"].get("shapes", []) if s.get("line", {}).get("dash") == "dash"]
    return markers, lines


def expected_marks(marks: PlanMarks) -> tuple[list[float], list[float]]:
    reminders = [p + 0.5 for p in sorted(marks.reminders_after)]
    breaks = [chunk[-1] + 0.5 for chunk in marks.chunks[:-1]]
    return reminders, breaks


def run_plan_marks(trace: RunTrace) -> PlanMarks:
    """The marks of the plan the run was made from (planning is pure: same plan again)."""
    plan = get_method(trace.method).plan(document(), trace.questions, trace.settings, counter())
    return plan_marks(plan)


# ---- before any run: the plans at the current settings ------------------------------------


def test_before_a_run_the_strip_shows_the_chosen_plan_of_rr() -> None:
    at = to_document(open_app())
    options = at.selectbox(key="w.doc_show").options
    assert options == [
        "Plan at the current settings: Baseline",
        "Plan at the current settings: R&R (k = 10,000 · N = 5)",
    ]
    # It opens on the plan of the method that reminds; Baseline's plan sends no reminder: no marker.
    assert at.selectbox(key="w.doc_show").value == ("plan", 1)
    at.selectbox(key="w.doc_show").set_value(("plan", 0)).run()
    assert strip_marks(at) == ([], [])
    at.selectbox(key="w.doc_show").set_value(("plan", 1)).run()
    base = RunSettings(method="rr", model="offline", provider="offline", price_model=PRICE_MODEL)
    plan = plan_questions(document(), [Question(FIRST.question)], base, counter())[0]
    marks = plan_marks(plan)
    assert strip_marks(at) == expected_marks(marks)
    assert len(marks.reminders_after) > 3
    spec = chart(at, "page_strip")
    assert spec["data"][0]["x"] == list(range(1, PAGES + 1))
    assert spec["data"][0]["y"] == document().page_tokens
    assert any(f"R\\&R sends {len(marks.reminders_after)} reminders" in c.value for c in at.caption)
    # The planned retrieval prompt, with its reminders listed by page and token offset.
    calls = at.selectbox(key="w.prompt_call").options
    assert calls == ["1. retrieval", "2. answer — waits for the phase before"]
    # Every reminder is on screen: pages are shortened, the structure is whole.
    assert at.text[0].value.count(REMINDER_TAG) == len(marks.reminders_after)
    assert "cut here on screen" not in at.text[0].value
    assert any("Each page is cut to its first 200 characters" in c.value for c in at.caption)
    assert {m.label: m.value for m in at.metric}["Reminders"] == str(len(marks.reminders_after))


def test_moving_k_moves_the_planned_markers() -> None:
    at = to_document(open_app())
    at.selectbox(key="w.doc_show").set_value(("plan", 1)).run()
    before, _ = strip_marks(at)
    at.sidebar.slider(key="w.reminder_every").set_value(4_000).run()
    after, _ = strip_marks(at)
    base = RunSettings(
        method="rr", reminder_every=4_000, model="offline", provider="offline", price_model=PRICE_MODEL
    )
    plan = plan_questions(document(), [Question(FIRST.question)], base, counter())[0]
    assert after == expected_marks(plan_marks(plan))[0]
    assert len(after) > len(before)


# ---- after a run: the run's own plan ------------------------------------------------------


def test_chunked_rr_markers_restart_in_every_chunk_as_its_plan_says() -> None:
    at, traces = run_then_document(["baseline", "rr", "chunked-rr"])
    labels = at.selectbox(key="w.doc_show").options
    assert labels[:3] == [
        f"Last run: Baseline — “{FIRST.question[:49]}…”",
        f"Last run: R&R (k = 10,000 · N = 5) — “{FIRST.question[:49]}…”",
        f"Last run: Chunked R&R (k = 10,000 · N = 5 · c = 20,000) — “{FIRST.question[:49]}…”",
    ]
    # R&R's run is shown first.
    assert at.selectbox(key="w.doc_show").value == ("run", 1)
    rr_marks = run_plan_marks(traces[1])
    assert strip_marks(at) == expected_marks(rr_marks)

    at.selectbox(key="w.doc_show").set_value(("run", 2)).run()
    chunked = traces[2]
    marks = run_plan_marks(chunked)
    reminders, lines = strip_marks(at)
    assert (reminders, lines) == expected_marks(marks)
    assert len(marks.chunks) >= 3 and len(lines) == len(marks.chunks) - 1
    # Reminders restart with each chunk: every chunk has its own, counted from its start,
    # so they are not the unchunked run's reminders.
    for chunk in marks.chunks:
        assert any(p in chunk for p in marks.reminders_after)
    assert set(marks.reminders_after) != set(rr_marks.reminders_after)
    sent = {p for c in chunked.calls for p in c.reminders_after}
    assert sent == set(marks.reminders_after)  # the plan says what the run sent
    caption = next(c.value for c in at.caption if "Markers come from the plan" in c.value)
    assert f"sends {len(marks.reminders_after)} reminders in {len(marks.chunks)} chunks" in caption
    # Retrieved pages are coloured, the cited page starred.
    spec = chart(at, "page_strip")
    cited = next(t for t in spec["data"] if t.get("name") == "cited page")
    assert cited["x"] == [chunked.page] == [FIRST.page]


def test_the_markers_stay_the_runs_when_the_sliders_move() -> None:
    at, traces = run_then_document(["baseline", "rr"])
    expected = expected_marks(run_plan_marks(traces[1]))
    at.sidebar.slider(key="w.reminder_every").set_value(3_000).run()
    assert at.selectbox(key="w.doc_show").value == ("run", 1)
    assert strip_marks(at) == expected


def test_the_page_viewer_opens_on_the_cited_page() -> None:
    at, traces = run_then_document(["baseline", "rr"])
    rr = traces[1]
    assert at.session_state["view_page"] == rr.page == FIRST.page
    caption = at.image[0].captions[0]
    assert caption.startswith(f"p. {FIRST.page} of {PAGES} · ")
    assert "citation 1 of 1 (framed) · its quote highlighted" in caption
    assert f"retrieved #{rr.retrieved_pages.index(FIRST.page) + 1}" in caption
    assert "Highlighted: the quoted words only, word for word." in texts(at.caption)
    # Paging away and back to the citation.
    at.number_input(key="w.view_page").set_value(3).run()
    assert at.image[0].captions[0].startswith(f"p. 3 of {PAGES}")
    assert "(not this page)" in texts(at.markdown)
    at.button(key="back_to_citation").click().run()
    assert at.image[0].captions[0].startswith(f"p. {FIRST.page} of {PAGES}")


def texts(elements: Any) -> str:
    return "\n".join(str(e.value) for e in elements)


def first_sentence(number: int, skip: int = 0) -> str:
    """A sentence that stands on a page of the sample (after its heading lines)."""
    body = " ".join(document().page(number).text.split("\n\n", 2)[-1].split())
    return body.split(". ")[skip].rstrip(".") + "."


def cited_run(citations: list[Citation]) -> AppTest:
    """The Document screen on a run whose answer cites these passages (a batch of its own)."""
    at = open_app(methods=["baseline"])
    at.button(key="run").click().run()
    results = at.session_state["results"]
    trace = results["traces"][0]
    trace.outcomes[0].citations = citations
    results["batch"] = "several-citations"
    return to_document(at)


def test_the_viewer_steps_through_an_answers_citations_each_framed_and_highlighted() -> None:
    on_3, on_10, on_57 = first_sentence(3), first_sentence(10), first_sentence(57)
    citations = [
        Citation(page=10, quote=on_10, quote_check="verified", quote_score=100.0),
        Citation(page=57, quote=on_57, quote_check="verified", quote_score=100.0),
        Citation(
            page=3,
            quote="A sentence the model made up about penalties.",
            quote_check="not-found",
            quote_score=41.0,
        ),
        Citation(page=3, quote=on_3, quote_check="verified", quote_score=100.0),
    ]
    at = cited_run(citations)

    def where() -> tuple[int, str, str]:
        return at.session_state["view_page"], at.image[0].captions[0], texts(at.markdown) + texts(at.caption)

    page, caption, said = where()
    assert page == 10 and "citation 1 of 4 (framed) · its quote highlighted" in caption
    assert md("Citation 1 of 4 · p. 10") in said and md(on_10) in said
    assert at.button(key="prev_citation").disabled and not at.button(key="next_citation").disabled
    # Provenance in a neutral style: found, never green (nothing here is known to be right).
    assert ":gray[:material/location_on:] " + md("Quote located on p. 10") in said and ":green[" not in said
    at.button(key="next_citation").click().run()
    page, caption, said = where()
    assert page == 57 and "citation 2 of 4 (framed) · its quote highlighted" in caption
    assert md("Citation 2 of 4 · p. 57") in said
    at.button(key="next_citation").click().run()
    page, caption, said = where()
    assert page == 3 and "citation 3 of 4 (framed) · its quote could not be placed" in caption
    assert "Could not place the quote on the page" in said
    assert ":orange[:material/warning:] :orange[" + md("Quote not located on p. 3: check the page") in said
    at.button(key="next_citation").click().run()
    page, caption, said = where()
    assert page == 3 and "citation 4 of 4 (framed) · its quote highlighted" in caption
    assert at.button(key="next_citation").disabled
    # Turning to a cited page by its number focuses that page's citation.
    at.number_input(key="w.view_page").set_value(57).run()
    page, caption, said = where()
    assert md("Citation 2 of 4 · p. 57") in said and "citation 2 of 4 (framed)" in caption
    at.button(key="prev_citation").click().run()
    assert where()[0] == 10
    # Every cited page is starred on the strip.
    spec = chart(at, "page_strip")
    stars = next(t for t in spec["data"] if t.get("name") == "cited pages")
    assert sorted(stars["x"]) == [3, 10, 57]


def test_a_not_stated_answer_has_no_citation_to_step_through() -> None:
    at = open_app(methods=["baseline"])
    at.button(key="run").click().run()
    results = at.session_state["results"]
    results["traces"][0].outcomes[0].not_stated()
    results["batch"] = "not-stated"
    at = to_document(at)
    assert not [b for b in at.button if b.key in ("prev_citation", "next_citation")]
    assert "citation" not in at.image[0].captions[0]


def test_the_prompt_selector_lists_the_runs_calls_and_shows_each_as_sent() -> None:
    at, traces = run_then_document(["baseline", "chunked-rr"])
    at.selectbox(key="w.doc_show").set_value(("run", 1)).run()
    chunked = traces[1]
    expected = []
    for i, call in enumerate(chunked.calls, start=1):
        stage = {"retrieve": "retrieval", "answer": "answer"}[call.stage]
        part = f", part {call.chunk}" if call.chunk else ""
        expected.append(f"{i}. {stage}{part} — {len(call.pages)} pages")
    box = at.selectbox(key="w.prompt_call")
    assert box.options == expected
    assert len(expected) == len(chunked.calls) >= 4 and expected[-1].startswith(f"{len(expected)}. answer")
    # Each call's prompt as sent: a chunk's reminders, then the answer call without any.
    first = chunked.calls[0]
    assert at.text[0].value.count(REMINDER_TAG) == len(first.reminders_after) + first.leading_reminders
    assert f"<PAGE {first.pages[0]}>" in at.text[0].value
    rows = markdown_table(at, "reminder")
    assert [int(r["after page"]) for r in rows] == first.reminders_after
    last = len(chunked.calls) - 1
    box.set_value(last).run()
    answer = chunked.calls[last]
    assert REMINDER_TAG not in at.text[0].value
    assert all(f"<PAGE {p}>" in at.text[0].value for p in answer.pages)
    # The answer call's layout depended on the retrieval, so it is shown as recorded.
    assert any("recorded as sent" in c.value for c in at.caption)
    assert {m.label: m.value for m in at.metric}["Reminders"] == "—"


def test_the_distance_chart_shows_reminders_bringing_pages_closer() -> None:
    at, traces = run_then_document(["baseline", "rr"])
    call = traces[1].calls[0]
    spec = chart(at, "distance_chart")
    names = [t["name"] for t in spec["data"]]
    count = len(call.reminders_after)
    assert names == ["without reminders", f"this prompt ({count} reminder{'' if count == 1 else 's'})"]
    without, with_reminders = spec["data"][0]["y"], spec["data"][1]["y"]
    assert len(with_reminders) == PAGES
    assert max(with_reminders) < max(without) / 3
    # Baseline's single call has no reminders: one line only.
    at.selectbox(key="w.doc_show").set_value(("run", 0)).run()
    assert [t["name"] for t in chart(at, "distance_chart")["data"]] == ["this prompt"]


def test_the_full_prompt_is_offered_for_download_only_after_prepare() -> None:
    at, traces = run_then_document(["baseline", "rr"])
    assert not at.download_button
    at.button(key="prepare_prompt").click().run()
    assert [b.label for b in at.download_button] == ["Download this prompt"]
    label, text = at.session_state["prompt_download"]
    assert text == traces[1].calls[0].prompt  # the whole prompt, not the condensed view
    assert len(text) > len(at.text[0].value)
    # Another call: the prepared prompt belongs to the first one, so no download until prepared.
    at.selectbox(key="w.prompt_call").set_value(1).run()
    assert not at.download_button
    at.button(key="prepare_prompt").click().run()
    assert at.session_state["prompt_download"][1] == traces[1].calls[1].prompt
    assert [b.label for b in at.download_button] == ["Download this prompt"]


def test_without_a_question_the_screen_says_where_to_start() -> None:
    at = open_app(question="")
    at.text_area(key="w.question").input("").run()
    to_document(at)
    assert any("Type a question" in i.value for i in at.info)


def test_opened_first_it_shows_the_sample_questions_plan_and_says_how_to_run_it() -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page("pages/document.py").run()  # the first screen of the session
    assert not at.exception and not at.error
    assert [t.value for t in at.title] == ["What the model saw"]
    infos = [i.value for i in at.info]
    assert not any("Type a question" in i for i in infos)  # the sample's question is there already
    (note,) = [i for i in infos if i.startswith("Nothing has run yet")]
    assert md(FIRST.question[:60]) in note and "Run it on the Ask screen" in note
    assert at.selectbox(key="w.doc_show").value == ("plan", 1)  # R&R's plan: its reminders
    base = RunSettings(method="rr", model="offline", provider="offline", price_model=PRICE_MODEL)
    plan = plan_questions(document(), [Question(FIRST.question)], base, counter())[0]
    assert strip_marks(at) == expected_marks(plan_marks(plan))
    # The Ask screen then has the same question, ready to run.
    at.switch_page("pages/ask.py").run()
    assert at.text_area(key="w.question").value == FIRST.question


def test_a_variant_appears_as_its_own_plan() -> None:
    at = to_document(open_app(variants=["rr:k=5000"]))
    box = at.selectbox(key="w.doc_show")
    labels = box.options
    assert labels[-1] == "Plan at the current settings: R&R (k = 5,000 · N = 5)"
    box.set_value(("plan", 2)).run()
    base = RunSettings(method="baseline", model="offline", provider="offline", price_model=PRICE_MODEL)
    plan = plan_questions(document(), [Question(FIRST.question)], parse_spec("rr:k=5000", base), counter())[0]
    assert strip_marks(at)[0] == expected_marks(plan_marks(plan))[0]
    assert md("k = 5,000") in " ".join(c.value for c in at.caption)


def test_a_variant_that_cannot_run_leaves_the_other_plans_on_screen() -> None:
    at = to_document(open_app(variants=["rr:k=2", "rr:k=5000"]))
    assert not any("Type a question" in i.value for i in at.info)
    assert at.selectbox(key="w.doc_show").options == [
        "Plan at the current settings: Baseline",
        "Plan at the current settings: R&R (k = 10,000 · N = 5)",
        "Plan at the current settings: R&R (k = 5,000 · N = 5)",
    ]


# ---- which run, which question ---------------------------------------------------------------


def test_a_run_with_no_reminder_opens_on_the_run_at_its_citation_not_on_a_plan() -> None:
    # At k = 100,000 the sample (about 80,000 tokens) gets no reminder, as a short document
    # gets none at the default k: the screen still opens on the run just made.
    at = open_app(methods=["baseline", "icr", "rr"], reminder_every=100_000)
    at.button(key="run").click().run()
    traces = list(at.session_state["results"]["traces"])
    assert not any(c.reminders_after for t in traces for c in t.calls)
    assert [t.method for t in traces] == ["baseline", "icr", "rr"] and traces[1].retrieved_pages
    at = to_document(at)
    assert at.selectbox(key="w.doc_show").value == ("run", 2)  # R&R: its retrieval, its reminders
    rr = traces[2]
    opened_on = (
        rr.outcome.cited_pages[0] if rr.outcome.stated and rr.outcome.cited_pages else rr.retrieved_pages[0]
    )
    assert at.session_state["view_page"] == opened_on


def test_when_every_method_says_not_stated_it_opens_on_the_run_that_retrieved() -> None:
    at = open_app(methods=["baseline", "rr"], reminder_every=100_000)
    at.button(key="run").click().run()
    results = at.session_state["results"]
    for trace in results["traces"]:
        trace.outcomes[0].not_stated()
    results["batch"] = "all-not-stated"
    at = to_document(at)
    rr = results["traces"][1]
    assert at.selectbox(key="w.doc_show").value == ("run", 1)
    assert at.session_state["view_page"] == rr.retrieved_pages[0]


def test_a_several_question_run_is_shown_one_question_at_a_time() -> None:
    asked = [q.question for q in questions_middle_first("contract")[:3]]
    at = open_app(methods=["baseline", "rr"], ask_mode="several", questions_text="\n".join(asked))
    at.button(key="run").click().run()
    assert not at.exception
    traces = list(at.session_state["results"]["traces"])
    rr_index, rr = next((i, t) for i, t in enumerate(traces) if t.method == "rr")
    at = to_document(at)
    show = at.selectbox(key="w.doc_show")
    assert "(+2 more questions)" in show.format_func(show.value)
    at.selectbox(key="w.doc_show").set_value(("run", rr_index)).run()
    picker = at.selectbox(key=f"w.doc_question_{rr.run_id}")
    assert len(picker.options) == 3
    for index, outcome in enumerate(rr.outcomes):
        at.selectbox(key=f"w.doc_question_{rr.run_id}").set_value(index).run()
        assert not at.exception
        assert picker.format_func(index).startswith(f"Q{index + 1} of 3. ")
        spec = chart(at, "page_strip")
        ranks = {x: c[1] for x, c in zip(spec["data"][0]["x"], spec["data"][0]["customdata"], strict=True)}
        # The strip marks the pages retrieved for this question, in its own order.
        assert [x for x, _ in sorted(((x, r) for x, r in ranks.items() if r != "—"), key=lambda p: p[1])] == (
            outcome.retrieved_pages
        )
        stars = [t for t in spec["data"] if str(t.get("name", "")).startswith("cited page")]
        cited = outcome.cited_pages if outcome.stated else []
        assert (sorted(stars[0]["x"]) if stars else []) == sorted(cited)
        # The viewer turns to this question's first citation (or the page ranked first for it).
        expected = cited[0] if cited else outcome.retrieved_pages[0]
        assert at.session_state["view_page"] == expected
        if cited:
            assert f"Q{index + 1}" in texts(at.markdown)


def test_the_strip_spans_the_documents_pages_and_no_more() -> None:
    at, _ = run_then_document(["baseline", "rr"])
    spec = chart(at, "page_strip")
    assert spec["layout"]["xaxis"]["range"] == [0.4, PAGES + 0.6]


def _labelled_pdf() -> bytes:
    """Twelve pages: two front-matter pages printed i and ii, then 1 to 10 (PDF pages 3-12)."""
    import pymupdf

    from rr_core.documents import pdf_from_texts

    texts = [f"Front matter {n}." for n in ("one", "two")] + [
        f"Body page {n}. The deposit on this page is {n * 100} euros." for n in range(1, 11)
    ]
    doc = pymupdf.open(stream=pdf_from_texts(texts), filetype="pdf")
    doc.set_page_labels(
        [{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
         {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1}]
    )  # fmt: skip
    data: bytes = doc.tobytes()
    return data


def test_printed_page_labels_are_shown_with_the_pdf_page_beside_them() -> None:
    at = open_app(source="upload")
    at.file_uploader(key="w.upload").set_value(("labelled.pdf", _labelled_pdf(), "application/pdf")).run()
    at.text_area(key="w.question").input("What is the deposit on printed page 8?").run()
    assert not at.exception, [e.value for e in at.exception]
    to_document(at)
    picker = at.number_input(key="w.view_page")
    assert picker.label.startswith("PDF page")
    picker.set_value(10).run()
    assert at.image[0].captions[0].startswith("p. 8 (PDF page 10 of 12) · ")
    at.number_input(key="w.view_page").set_value(2).run()
    assert at.image[0].captions[0].startswith("p. ii (PDF page 2 of 12) · ")


def test_a_pdf_without_printed_labels_shows_its_page_numbers_only() -> None:
    at = to_document(open_app())
    assert at.number_input(key="w.view_page").label == "Page"
    at.number_input(key="w.view_page").set_value(3).run()
    assert at.image[0].captions[0].startswith(f"p. 3 of {PAGES} · ")
