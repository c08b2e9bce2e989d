"""The Ask screen, driven by AppTest with the offline engine: document, plan, run, results."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rr_core.chunking import partition_pages, plan_reminders
from rr_core.errors import RateLimitError
from rr_core.ledger import Ledger
from rr_core.llm import DEFAULT_MODELS
from rr_core.llm.base import Completion, LLMRequest
from rr_core.llm.offline import OfflineEngine
from rr_core.methods import Method, RunSettings, plan_all
from rr_core.samples import get_sample, questions_middle_first
from rr_core.sources import sample_document
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SAMPLE = get_sample("contract")
FIRST_QUESTION = questions_middle_first("contract")[0].question  # what the app prefills
# A question the sample plants on exactly one page.
NOTICE = next(q for q in SAMPLE.questions if "convenience" in q.question)


def open_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def plan_table(at: AppTest) -> dict[str, dict[str, object]]:
    frame = at.dataframe[0].value
    return {row["Method"]: row for row in frame.to_dict("records")}


def markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def expected_plans(k: int = 10_000, n: int = 5, c: int = 20_000, methods=(Method.BASELINE, Method.RR)):
    counter = counter_for_model("gpt-4.1-mini")
    document = sample_document("contract", counter)
    settings = RunSettings(
        method=methods[0],
        reminder_every=k,
        top_k=n,
        chunk_size=c,
        model="offline",
        provider="offline",
        price_model="gpt-4.1-mini",
    )
    return document, plan_all(document, FIRST_QUESTION, settings, counter, methods)


def test_opens_offline_on_the_sample_with_a_note_that_it_is_not_an_llm() -> None:
    at = open_app()
    assert at.session_state["provider"] == "offline"
    assert at.sidebar.selectbox(key="w.provider").value == "offline"
    note = " ".join(i.value for i in at.sidebar.info)
    assert "not an LLM" in note and "BM25" in note
    # The contract sample is loaded and its first question is filled in: ready to run.
    captions = " ".join(c.value for c in at.caption)
    assert f"{len(SAMPLE.pages)} pages" in captions
    assert at.text_area(key="w.question").value == FIRST_QUESTION
    assert at.multiselect(key="w.methods").value == ["baseline", "rr"]
    assert [s.label for s in at.sidebar.slider] == [
        "Reprompt interval k (tokens)", "Pages to retrieve N", "Chunk size c (tokens)",
    ]  # fmt: skip
    assert not at.error


def test_a_key_in_the_environment_selects_its_provider_without_showing_the_key(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    at = open_app()
    assert at.session_state["provider"] == "anthropic"
    assert at.sidebar.selectbox(key="w.model").value == DEFAULT_MODELS["anthropic"]
    key_field = at.sidebar.text_input(key="w.api_key")
    assert key_field.value == ""  # the key is used, never echoed into the page
    assert "ANTHROPIC_API_KEY" in key_field.placeholder
    assert not at.sidebar.info  # no offline note


def test_plan_table_shows_calls_tokens_reminders_and_cost_per_method() -> None:
    at = open_app()
    table = plan_table(at)
    assert list(table) == ["Baseline", "R&R"]
    _, plans = expected_plans()
    for name, method in (("Baseline", Method.BASELINE), ("R&R", Method.RR)):
        estimate = plans[method].estimate
        assert table[name]["Calls"] == estimate.calls
        assert table[name]["Input tokens"] == estimate.input_tokens
        assert table[name]["Reminders"] == plans[method].reminders
        assert table[name]["Estimated cost (USD)"] == pytest.approx(estimate.usd, abs=1e-5)
    assert table["Baseline"]["Calls"] == 1 and table["R&R"]["Calls"] == 2
    assert table["Baseline"]["Reminders"] == 0
    assert table["R&R"]["Input tokens"] > table["Baseline"]["Input tokens"] > 50_000
    assert table["R&R"]["Estimated cost (USD)"] > 0


def test_moving_k_redraws_the_number_of_reminders() -> None:
    at = open_app()
    document, _ = expected_plans()
    before = plan_table(at)["R&R"]["Reminders"]
    assert before == len(plan_reminders(document.page_tokens, 10_000))
    at.sidebar.slider(key="w.reminder_every").set_value(4_000).run()
    after = plan_table(at)["R&R"]["Reminders"]
    assert at.session_state["reminder_every"] == 4_000
    assert after == len(plan_reminders(document.page_tokens, 4_000))
    assert after > before
    assert plan_table(at)["Baseline"]["Reminders"] == 0


def test_chunk_size_and_n_change_the_chunked_plan() -> None:
    at = open_app()
    at.multiselect(key="w.methods").set_value(["baseline", "rr", "chunked-rr"]).run()
    at.sidebar.slider(key="w.chunk_size").set_value(10_000).run()
    document, _ = expected_plans()
    chunks = len(partition_pages(document.page_tokens, 10_000))
    table = plan_table(at)
    assert table["Chunked R&R"]["Chunks"] == chunks > 1
    assert table["Chunked R&R"]["Calls"] == chunks + 1  # one retrieval call per chunk, then the answer
    at.sidebar.slider(key="w.top_k").set_value(2).run()
    assert plan_table(at)["Chunked R&R"]["Calls"] == chunks + 1
    assert at.session_state["top_k"] == 2


def test_a_quick_pick_fills_the_question() -> None:
    at = open_app()
    at.selectbox(key="w.quick").set_value(NOTICE.question).run()
    assert at.session_state["question"] == NOTICE.question
    assert at.text_area(key="w.question").value == NOTICE.question


def test_run_baseline_and_rr_shows_answers_pages_cost_and_saves_them() -> None:
    at = open_app()
    at.selectbox(key="w.quick").set_value(NOTICE.question).run()
    at.button(key="run").click().run()
    assert not at.exception and not at.error
    assert at.status[0].label == "Done: 2 of 2 methods answered"
    # One progress line per call: baseline's answer, R&R's retrieval then answer.
    progress = [m for m in markdown(at) if ("retrieval (" in m or "answer (" in m)]
    assert len(progress) == 3 and all("done" in line for line in progress)

    results = at.session_state["results"]
    traces = {t.method: t for t in results["traces"]}
    assert list(traces) == ["baseline", "rr"]
    texts = "\n".join(markdown(at))
    assert "#### Baseline" in texts and "#### R&R" in texts
    for trace in traces.values():
        assert trace.error is None
        assert any(answer.lower() in trace.answer.lower() for answer in NOTICE.answers)
        assert trace.page == NOTICE.page
        assert trace.cost_usd > 0
    assert f"**Cited page:** {NOTICE.page}" in texts
    rr = traces["rr"]
    assert NOTICE.page in rr.retrieved_pages and len(rr.retrieved_pages) == 5
    assert "**Retrieved pages** (rank order): " + " → ".join(map(str, rr.retrieved_pages)) in texts
    # The offline engine answers with a sentence of the page: shown as a quote, or as supporting text.
    captions = "\n".join(c.value for c in at.caption)
    assert (
        f"**Supporting text on page {NOTICE.page}**" in texts
        or f"quoted word for word from page {NOTICE.page}" in captions
    )
    assert f"${rr.cost_usd:.4f}" in texts and f"{rr.usage.prompt_tokens:,} in" in texts

    # The cost chart stacks retrieval, answer and reminder overhead per method.
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    bars = {bar["name"]: bar["y"] for bar in spec["data"]}
    assert set(bars) == {"retrieval", "answer", "reminder overhead"}
    stages = rr.cost_by_stage()
    assert bars["reminder overhead"][1] == pytest.approx(stages["reminders"]) and stages["reminders"] > 0
    assert bars["retrieval"][0] == 0 and bars["answer"][0] == pytest.approx(traces["baseline"].cost_usd)
    assert [b.label for b in at.download_button] == [
        "Download JSON", "Download CSV", "Download report (Markdown)",
    ]  # fmt: skip

    rows = Ledger().list()
    assert len(rows) == 2 and {r.batch for r in rows} == {results["batch"]}
    assert {r.method for r in rows} == {"baseline", "rr"}


class _RetrievalFails:
    """The offline engine, except that retrieval calls hit a rate limit."""

    name = "flaky"
    is_llm = True

    def complete(self, request: LLMRequest) -> Completion:
        if request.task == "retrieve":
            raise RateLimitError("The provider is rate limiting requests (429).", provider="stub", status=429)
        return OfflineEngine().complete(request)


def test_a_provider_error_shows_in_its_column_and_the_others_stay(monkeypatch) -> None:
    import pages.ui

    monkeypatch.setattr(pages.ui, "new_client", lambda: _RetrievalFails())
    at = open_app()
    at.button(key="run").click().run()
    assert not at.exception
    traces = {t.method: t for t in at.session_state["results"]["traces"]}
    assert traces["baseline"].error is None and traces["baseline"].answer
    assert traces["rr"].error_kind == "RateLimitError"
    errors = [e.value for e in at.error]
    assert len(errors) == 1
    assert "429" in errors[0] and "Wait a minute" in errors[0]
    assert "**Answer:** " in "\n".join(markdown(at))  # baseline's answer is still shown
    assert at.status[0].label == "Done: 1 of 2 methods answered"


def test_a_missing_key_is_an_actionable_error_not_a_traceback() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["provider"] = "openai"
    at.run()
    assert any("No API key" in w.value for w in at.sidebar.warning)
    at.button(key="run").click().run()
    assert not at.exception
    assert any("OPENAI_API_KEY" in e.value and "What to do" in e.value for e in at.error)
    assert "results" not in at.session_state


def test_an_uploaded_text_file_is_parsed_once_and_asked() -> None:
    at = open_app()
    at.radio(key="w.source").set_value("upload").run()
    assert any("Upload a document" in i.value for i in at.info)
    text = ("Chapter one talks about the weather.\n\n" * 30) + "The vault combination is 31-7-42.\n\n"
    at.file_uploader(key="w.upload").set_value(("notes.txt", text.encode(), "text/plain")).run()
    upload = at.session_state["upload"]
    assert upload.name == "notes.txt"
    assert any("notes" in c.value and "tokens" in c.value for c in at.caption)
    at.text_area(key="w.question").set_value("What is the vault combination?").run()
    assert at.session_state["upload"] is upload  # not re-read on rerun
    at.button(key="run").click().run()
    assert not at.exception
    answers = [t.answer for t in at.session_state["results"]["traces"]]
    assert all("31-7-42" in a for a in answers)


def _encrypted_pdf(password: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "The launch code is PINEAPPLE-9.")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "-owner")
    doc.close()
    return data


def test_an_encrypted_pdf_asks_for_its_password() -> None:
    at = open_app()
    at.radio(key="w.source").set_value("upload").run()
    at.file_uploader(key="w.upload").set_value(
        ("secret.pdf", _encrypted_pdf("s3cret"), "application/pdf")
    ).run()
    assert not at.exception
    assert any("encrypted" in w.value for w in at.warning)
    at.text_input(key="w.upload_password").set_value("wrong").run()
    assert any("did not open" in w.value for w in at.warning)
    at.text_input(key="w.upload_password").set_value("s3cret").run()
    assert not at.warning
    assert any("secret" in c.value and "1 page," in c.value for c in at.caption)


def test_the_api_key_is_never_saved_or_exported(tmp_path) -> None:
    secret = "sk-test-NEVER-STORE-0123456789"
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["api_key"] = secret
    at.run()
    at.button(key="run").click().run()
    assert not at.exception
    from rr_core.exports import to_csv, to_json, to_markdown

    traces = at.session_state["results"]["traces"]
    for text in (to_json(traces), to_csv(traces), to_markdown(traces)):
        assert secret not in text
    ledger = Ledger()
    assert ledger.count() == 2
    with sqlite3.connect(ledger.path) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    stored = b"".join(p.read_bytes() for p in ledger.path.parent.glob(ledger.path.name + "*"))
    assert secret.encode() not in stored


def test_keys_in_secrets_toml_are_honoured() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["OPENAI_API_KEY"] = "sk-from-secrets"
    at.secrets["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
    at.run()
    assert not at.exception
    assert at.session_state["provider"] == "openai"
    key_field = at.sidebar.text_input(key="w.api_key")
    assert key_field.value == "" and "OPENAI_API_KEY" in key_field.placeholder
    assert at.sidebar.text_input(key="w.base_url").placeholder == "http://127.0.0.1:9/v1"
    assert not at.sidebar.warning  # a key is configured


def test_provider_model_key_and_base_url_are_settable_for_stub_servers(monkeypatch) -> None:
    import pages.ui

    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["provider"] = "openai-compatible"
    at.session_state["model"] = "stub-model"
    at.session_state["base_url"] = "http://127.0.0.1:9/v1"
    at.session_state["api_key"] = "sk-stub"
    at.run()
    assert not at.exception
    assert at.sidebar.selectbox(key="w.model").value == "stub-model"
    assert at.sidebar.text_input(key="w.base_url").value == "http://127.0.0.1:9/v1"
    seen = {}

    def spy():
        seen.update(
            provider=pages.ui.provider(),
            model=pages.ui.model(),
            url=pages.ui.base_url(),
            key=pages.ui.api_key(),
        )
        return OfflineEngine()

    monkeypatch.setattr(pages.ui, "new_client", spy)
    at.button(key="run").click().run()
    assert seen == {
        "provider": "openai-compatible",
        "model": "stub-model",
        "url": "http://127.0.0.1:9/v1",
        "key": "sk-stub",
    }
    trace = at.session_state["results"]["traces"][0]
    assert (trace.provider, trace.model) == ("openai-compatible", "stub-model")
    # Changing the provider in the sidebar resets the model and forgets the typed key.
    at.sidebar.selectbox(key="w.provider").set_value("anthropic").run()
    assert at.session_state["model"] == DEFAULT_MODELS["anthropic"] and at.session_state["api_key"] == ""


def test_pages_without_text_are_reported() -> None:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The only readable page mentions the harbour master.")
    doc.new_page()  # a page with no text layer, like a scan
    data = doc.tobytes()
    doc.close()
    at = open_app()
    at.radio(key="w.source").set_value("upload").run()
    at.file_uploader(key="w.upload").set_value(("scan.pdf", data, "application/pdf")).run()
    assert not at.exception and not at.error
    assert any("scan.pdf: pages 2 have no text layer" in w.value for w in at.warning)
