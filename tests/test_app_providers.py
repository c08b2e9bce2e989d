"""The app against real SDKs talking to the loopback stub: OpenAI, Anthropic, compatible servers.

Each test drives the whole app with AppTest (sidebar, Run button, results) while
``tests/stub_server.py`` plays the provider. The stub answers like a model that reads: a
retrieval call gets the gold page of the question plus two other pages of its prompt, an
answer call gets the gold answer when the gold page is in its prompt. Assertions are on what
the stub received (the prompts as sent, the request bodies and headers) and on what the
app shows and stores.

Faults carry ``x-should-retry: false``, which both SDKs honour: the app keeps the SDKs'
default retries for real providers, and the tests stay fast and see exactly one request
per call.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import markdown_table
from streamlit.testing.v1 import AppTest

from pages.common.text import md
from rr_core.exports import to_csv, to_json, to_markdown
from rr_core.llm import DEFAULT_MODELS
from rr_core.methods import get_method
from rr_core.prompts import split_tagged
from rr_core.runs import RunTrace
from rr_core.samples import get_sample
from rr_core.settings import RunSettings
from rr_core.sources import sample_document
from rr_core.store import open_store
from rr_core.tokens import counter_for_model
from tests.stub_server import (
    Reply,
    StubServer,
    json_output,
    kind_of,
    malformed,
    prompt_of,
    rate_limited,
    schema_name_of,
    server_error,
)

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SECRET = "sk-test-SECRET123"
SAMPLE = get_sample("contract")
TOTAL_PAGES = len(SAMPLE.pages)
# Asked deep in the middle of the contract, where its answer is stated on one page only.
GOLD = next(q for q in SAMPLE.questions if "convenience" in q.question)
K = 5_000  # small enough that R&R's retrieval prompt over ~70k tokens carries many reminders
REMINDER_TAG = "<INSTRUCTIONS_REMINDER>"
TIMEOUT = 240  # the machine is slow and shared: generous, never a speed check


# ---- the stub as a model that reads --------------------------------------------------------


def pages_of(body: Any) -> list[int]:
    """The page numbers tagged in a request's prompt, in prompt order."""
    return [number for number, _ in split_tagged(prompt_of(body))]


def is_retrieval(body: Any) -> bool:
    name = schema_name_of(body)
    return name == "retrieval" or (name is None and '"pages"' in prompt_of(body))


def role_of(body: Any) -> str:
    """``retrieval`` (R&R's first call), ``baseline`` (the whole document) or ``answer`` (R&R's second)."""
    if is_retrieval(body):
        return "retrieval"
    return "baseline" if len(pages_of(body)) == TOTAL_PAGES else "answer"


def ranking_for(pages: list[int]) -> list[int]:
    """The gold page first, then two other pages that are in the prompt."""
    others = [p for p in pages if p != GOLD.page]
    picks = [others[len(others) // 3], others[(2 * len(others)) // 3]]
    return [GOLD.page, *picks] if GOLD.page in pages else others[:3]


def question_in(body: Any) -> str:
    found = re.findall(r"(?m)^Question: (.+)$", prompt_of(body))
    return found[-1] if found else ""


def reads(path: str, body: Any) -> Reply:
    """A realistic model: pages that exist for retrieval, the gold answer when it can see it."""
    pages = pages_of(body)
    question = question_in(body)
    if is_retrieval(body):
        return json_output({"question": question, "pages": ranking_for(pages)})
    if GOLD.page in pages:
        return json_output(
            {
                "question": question,
                "answer": GOLD.answers[0],
                "page": str(GOLD.page),
                "quote": GOLD.answers[0],
            }
        )
    return json_output({"question": question, "answer": "n/a", "page": "n/a", "quote": ""})


def once(reply: Reply) -> Reply:
    """``reply`` with the header that tells both SDKs not to retry it."""
    return replace(reply, headers={**reply.headers, "x-should-retry": "false"})


def failing(role: str, reply: Reply) -> Callable[[str, Any], Reply]:
    """A reader, except that calls in ``role`` get ``reply`` (sent once, no SDK retry)."""

    def respond(path: str, body: Any) -> Reply:
        return once(reply) if role_of(body) == role else reads(path, body)

    return respond


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer(responder=reads) as server:
        yield server


# ---- driving the app --------------------------------------------------------------------


def open_app(provider: str, base_url: str, *, api_key: str = SECRET, model: str | None = None) -> AppTest:
    """The app set up through session state, on the contract sample with the gold question."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    state = at.session_state
    state["provider"] = provider
    state["base_url"] = base_url
    state["api_key"] = api_key
    if model:
        state["model"] = model
    state["reminder_every"] = K
    state["question"] = GOLD.question
    state["methods"] = ["baseline", "rr"]
    at.run()
    assert not at.exception
    return at


def run(at: AppTest) -> dict[str, RunTrace]:
    at.button(key="run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return {t.method: t for t in at.session_state["results"]["traces"]}


def answered(at: AppTest) -> tuple[int, int]:
    """(methods that answered, methods run), from the run's status line."""
    found = re.match(r"Done: (\d+) of (\d+)\b", at.status[0].label)
    assert found, at.status[0].label
    return int(found.group(1)), int(found.group(2))


def texts(node: Any) -> list[str]:
    return [m.value for m in node.markdown]


def column_of(at: AppTest, label: str) -> Any:
    """The results column headed ``#### label``."""
    matches = [c for c in at.columns if f"#### {md(label)}" in texts(c)]
    assert len(matches) == 1, f"no single results column for {label}"
    return matches[0]


def plan_reminders_table(at: AppTest) -> dict[str, int]:
    return {row["Method"]: int(row["Reminders"]) for row in markdown_table(at, "Method")}


def expected_reminders(provider: str, model: str) -> int:
    """The reminder count of R&R's plan for the same document, question and settings."""
    counter = counter_for_model(model)
    document = sample_document("contract", counter)
    settings = RunSettings(method="rr", reminder_every=K, model=model, provider=provider)
    plan = get_method("rr").plan(document, GOLD.question, settings, counter)
    retrieval = [c for c in plan.calls if c.stage == "retrieve"]
    assert len(retrieval) == 1 and retrieval[0].reminder_count == plan.reminders
    return plan.reminders


def by_role(stub: StubServer, kind: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"retrieval": [], "baseline": [], "answer": []}
    for body in stub.bodies(kind):
        out[role_of(body)].append(body)
    return out


def stored_bytes() -> bytes:
    """Everything in the history's files (WAL checkpointed first): what a grep would see."""
    path = Path(open_store().location)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def assert_secret_kept(
    at: AppTest, secret: str, downloads: list[tuple[str | None, bytes]] | None = None
) -> None:
    """The key is in no stored run, no export, no download and no text on screen."""
    store = open_store()
    assert store.count() >= 1
    assert secret.encode() not in stored_bytes()
    stored = [store.get(row.run_id) for row in store.list()]
    traces = [t for t in stored if t is not None]
    for text in (to_json(traces), to_csv(traces), to_markdown(traces)):
        assert secret not in text
    if downloads is not None:
        names = {name for name, _ in downloads}
        assert {"rr-results.json", "rr-results.csv", "rr-report.md"} <= names
        for _, data in downloads:
            assert secret.encode() not in data
    on_screen = [
        e.value
        for kind in ("markdown", "caption", "error", "warning", "info", "code", "text")
        for e in at.get(kind)
    ]
    assert not any(secret in str(v) for v in on_screen)


def assert_rr_prompts(stub: StubServer, kind: str, traces: dict[str, RunTrace], reminders: int) -> None:
    """R&R's retrieval carries the plan's reminders; its answer sees only the retrieved pages."""
    roles = by_role(stub, kind)
    assert [len(roles[r]) for r in ("retrieval", "baseline", "answer")] == [1, 1, 1]
    retrieval, baseline, answer = roles["retrieval"][0], roles["baseline"][0], roles["answer"][0]
    assert reminders > 3
    assert prompt_of(retrieval).count(REMINDER_TAG) == reminders
    assert pages_of(retrieval) == list(range(1, TOTAL_PAGES + 1))
    assert REMINDER_TAG not in prompt_of(baseline)
    assert pages_of(baseline) == list(range(1, TOTAL_PAGES + 1))
    rr = traces["rr"]
    assert rr.retrieved_pages == ranking_for(list(range(1, TOTAL_PAGES + 1)))
    assert pages_of(answer) == sorted(set(rr.retrieved_pages))
    assert REMINDER_TAG not in prompt_of(answer)
    # What the stub received is what the trace (and so the Document screen) says was sent.
    sent = {c.stage: c.prompt for c in rr.calls}
    assert sent == {"retrieve": prompt_of(retrieval), "answer": prompt_of(answer)}


def assert_answers_shown(at: AppTest, traces: dict[str, RunTrace]) -> None:
    assert answered(at) == (2, 2)
    assert not at.error
    for method, label in (("baseline", "Baseline"), ("rr", "R&R")):
        trace = traces[method]
        assert trace.error is None and trace.answer == GOLD.answers[0] and trace.page == GOLD.page
        column = column_of(at, label)
        assert f"**Answer:** {md(GOLD.answers[0])}" in texts(column)
        assert f"**Cited page:** p. {GOLD.page}" in texts(column)
        assert trace.outcome.correct is True  # the sample's known answer
        assert any("**Right**" in m for m in texts(column))
        assert any(md(f"Quote located on p. {GOLD.page}") in c.value for c in column.caption)
    rr_column = texts(column_of(at, "R&R"))
    ranked = " → ".join(str(p) for p in traces["rr"].retrieved_pages)
    assert f"**Retrieved:** 3 pages, best first: {ranked}" in rr_column


# ---- OpenAI (Responses API) -------------------------------------------------------------


def test_openai_via_session_state_sends_reminders_only_in_rr_retrieval(stub, downloads) -> None:
    at = open_app("openai", stub.url)
    reminders = expected_reminders("openai", "gpt-4.1-mini")
    assert plan_reminders_table(at) == {"Baseline": 0, "R&R": reminders}
    traces = run(at)

    assert {kind_of(r.path) for r in stub.requests} == {"responses"}
    assert len(stub.requests) == 3  # baseline answer, R&R retrieval, R&R answer: no retries
    assert_rr_prompts(stub, "responses", traces, reminders)
    for request in stub.requests:
        body = request.body
        assert body["store"] is False
        assert body["model"] == "gpt-4.1-mini"
        fmt = body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["strict"] is True
        assert fmt["name"] == ("retrieval" if is_retrieval(body) else "answer")
        assert ("pages" if fmt["name"] == "retrieval" else "citations") in fmt["schema"]["properties"]
        assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert_answers_shown(at, traces)
    assert traces["rr"].usage.prompt_tokens > 0 and traces["rr"].cost_usd > 0
    assert_secret_kept(at, SECRET, downloads)


def test_openai_via_the_sidebar_widgets(stub) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["question"] = GOLD.question
    at.session_state["methods"] = ["baseline", "rr"]
    at.run()
    assert at.session_state["provider"] == "offline"
    at.sidebar.selectbox(key="w.provider").set_value("openai").run()
    assert any("No API key" in w.value for w in at.sidebar.warning)
    at.sidebar.text_input(key="w.api_key").input(SECRET).run()
    at.sidebar.text_input(key="w.base_url").input(stub.url).run()
    at.sidebar.slider(key="w.reminder_every").set_value(K).run()
    assert not at.sidebar.warning
    assert (at.session_state["api_key"], at.session_state["base_url"]) == (SECRET, stub.url)
    reminders = expected_reminders("openai", "gpt-4.1-mini")
    assert plan_reminders_table(at)["R&R"] == reminders
    assert not stub.requests  # planning sends nothing

    traces = run(at)
    assert_rr_prompts(stub, "responses", traces, reminders)
    assert all(r.body["store"] is False for r in stub.requests)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in stub.requests)
    assert_answers_shown(at, traces)
    assert_secret_kept(at, SECRET)


def test_openai_via_environment_variables(stub, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["question"] = GOLD.question
    at.session_state["reminder_every"] = K
    at.run()
    assert at.session_state["provider"] == "openai"
    assert at.session_state["api_key"] == "" and at.session_state["base_url"] == ""
    assert at.sidebar.text_input(key="w.base_url").placeholder == stub.url
    at.pills(key="w.methods_paper").set_value(["baseline", "rr"]).run()
    traces = run(at)
    assert_rr_prompts(stub, "responses", traces, expected_reminders("openai", "gpt-4.1-mini"))
    assert all(r.body["store"] is False for r in stub.requests)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in stub.requests)
    assert_answers_shown(at, traces)
    assert_secret_kept(at, SECRET)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_configured_key_never_goes_to_a_server_url_typed_in_the_sidebar(
    stub, monkeypatch, provider
) -> None:
    # The deployment's key is in the environment; a visitor types another server's URL.
    monkeypatch.setenv("OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY", SECRET)
    url = stub.url if provider == "openai" else stub.anthropic_url
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["question"] = GOLD.question
    at.run()
    assert at.session_state["provider"] == provider
    at.sidebar.text_input(key="w.base_url").set_value(url).run()
    at.button(key="run").click().run()
    assert not at.exception
    assert stub.requests == []
    assert "results" not in at.session_state
    shown = " ".join(e.value for e in at.error)
    assert "typed in the sidebar" in shown and "never sent to another server" in shown
    assert SECRET not in shown
    # With a key typed for that server, the run goes there with that key only.
    typed = "sk-typed-for-that-server"
    at.sidebar.text_input(key="w.api_key").set_value(typed).run()
    at.button(key="run").click().run()
    assert stub.requests
    for request in stub.requests:
        sent = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix(
            "Bearer "
        )
        assert sent == typed
        assert SECRET not in str(request.headers)
    assert_secret_kept(at, SECRET)
    assert typed.encode() not in stored_bytes()


def test_a_configured_server_url_gets_the_configured_key(stub, monkeypatch) -> None:
    # Both from the deployment: the rule is about typed URLs only.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["question"] = GOLD.question
    at.run()
    run(at)
    assert stub.requests and not at.error
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in stub.requests)


# ---- Anthropic (Messages API) -------------------------------------------------------------


def test_anthropic_sends_reminders_only_in_rr_retrieval_and_temperature_0(stub, downloads) -> None:
    at = open_app("anthropic", stub.anthropic_url)
    assert at.session_state["model"] == DEFAULT_MODELS["anthropic"]
    reminders = expected_reminders("anthropic", DEFAULT_MODELS["anthropic"])
    assert plan_reminders_table(at) == {"Baseline": 0, "R&R": reminders}
    traces = run(at)

    assert {r.path for r in stub.requests} == {"/v1/messages"}
    assert len(stub.requests) == 3
    assert_rr_prompts(stub, "messages", traces, reminders)
    for request in stub.requests:
        body = request.body
        assert body["temperature"] == 0  # a raw body field: the SDK has no parameter for it
        assert body["model"] == DEFAULT_MODELS["anthropic"]
        assert body["output_config"]["format"]["type"] == "json_schema"
        # The SDK sends the key as x-api-key or, in newer versions, as a bearer token.
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        assert (request.headers.get("x-api-key") or bearer) == SECRET
        assert "anthropic-version" in request.headers
    assert_answers_shown(at, traces)
    assert_secret_kept(at, SECRET, downloads)


def test_anthropic_rate_limit_stays_in_its_column(monkeypatch) -> None:
    with StubServer(responder=failing("retrieval", rate_limited(retry_after=30))) as stub:
        at = open_app("anthropic", stub.anthropic_url)
        traces = run(at)
    assert traces["baseline"].error is None and traces["baseline"].page == GOLD.page
    assert traces["rr"].error_kind == "RateLimitError"
    errors = [e.value for e in column_of(at, "R&R").error]
    assert len(errors) == 1 and len(at.error) == 1
    assert "Anthropic is rate limiting" in errors[0] and "HTTP 429" in errors[0]
    assert "retry after 30 s" in errors[0] and "Wait a minute" in errors[0]
    assert SECRET not in errors[0]
    assert f"**Cited page:** p. {GOLD.page}" in texts(column_of(at, "Baseline"))


# ---- OpenAI-compatible servers (Chat Completions) -----------------------------------------


def test_openai_compatible_uses_chat_completions_and_never_sends_the_openai_key(stub, monkeypatch) -> None:
    # A real OpenAI key in the environment must never go to some other server.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key-DO-NOT-SEND")
    at = open_app("openai-compatible", stub.url, api_key="", model="llama3.1")
    reminders = expected_reminders("openai-compatible", "llama3.1")
    assert plan_reminders_table(at)["R&R"] == reminders
    traces = run(at)

    assert {kind_of(r.path) for r in stub.requests} == {"chat"}
    assert len(stub.requests) == 3
    assert_rr_prompts(stub, "chat", traces, reminders)
    for request in stub.requests:
        body = request.body
        assert body["model"] == "llama3.1"
        assert "store" not in body
        assert body["response_format"]["type"] == "json_schema"
        name = body["response_format"]["json_schema"]["name"]
        assert name == ("retrieval" if is_retrieval(body) else "answer")
        assert "authorization" not in request.headers  # no key given: none sent
    assert_answers_shown(at, traces)
    assert_secret_kept(at, "sk-real-openai-key-DO-NOT-SEND")


# ---- failures: each stays in its method's column ----------------------------------------


def test_a_429_for_baseline_is_actionable_and_rr_still_answers() -> None:
    with StubServer(responder=failing("baseline", rate_limited(retry_after=20))) as stub:
        at = open_app("openai", stub.url)
        traces = run(at)
        baseline_calls = [r for r in stub.requests if role_of(r.body) == "baseline"]
    assert len(baseline_calls) == 1  # refused once, not retried
    assert traces["baseline"].error_kind == "RateLimitError" and traces["baseline"].answer is None
    errors = [e.value for e in column_of(at, "Baseline").error]
    assert len(errors) == 1 and len(at.error) == 1
    assert "OpenAI is rate limiting" in errors[0] and "HTTP 429" in errors[0]
    assert "retry after 20 s" in errors[0]
    assert "**What to do:** Wait a minute" in errors[0]
    assert SECRET not in errors[0]
    # R&R's result stays, complete.
    rr = traces["rr"]
    assert rr.error is None and rr.answer == GOLD.answers[0] and rr.page == GOLD.page
    rr_column = texts(column_of(at, "R&R"))
    assert f"**Cited page:** p. {GOLD.page}" in rr_column
    assert not column_of(at, "R&R").error
    assert answered(at) == (1, 2)
    assert not any(m.startswith("**Answer:**") for m in texts(column_of(at, "Baseline")))
    assert open_store().count() == 2  # both outcomes are in the history, the failure too
    assert SECRET.encode() not in stored_bytes()


def test_a_500_shows_the_status_in_rr_and_baseline_stays() -> None:
    with StubServer(responder=failing("retrieval", server_error(500, "The server had an error."))) as stub:
        at = open_app("openai", stub.url)
        traces = run(at)
        roles = [role_of(r.body) for r in stub.requests]
    assert sorted(roles) == ["baseline", "retrieval"]  # no answer call after a failed retrieval
    assert traces["rr"].error_kind == "ProviderError"
    errors = [e.value for e in column_of(at, "R&R").error]
    assert len(errors) == 1 and len(at.error) == 1
    assert "HTTP 500" in errors[0] and "The server had an error" in errors[0]
    assert "**What to do:** Run again in a moment" in errors[0]
    assert traces["baseline"].error is None and traces["baseline"].page == GOLD.page
    assert f"**Cited page:** p. {GOLD.page}" in texts(column_of(at, "Baseline"))
    assert answered(at) == (1, 2)


@pytest.mark.parametrize("role", ["retrieval", "answer"])
def test_model_output_that_is_not_json_is_a_clear_error_in_rr_only(role: str) -> None:
    prose = malformed("Sure! The answer is on page three, I think.")
    with StubServer(responder=failing(role, prose)) as stub:
        at = open_app("openai", stub.url)
        traces = run(at)
        assert len(stub.requests) == (3 if role == "answer" else 2)
    assert not at.exception
    rr = traces["rr"]
    assert rr.error_kind == "ResponseParseError"
    errors = [e.value for e in column_of(at, "R&R").error]
    assert len(errors) == 1 and len(at.error) == 1
    assert "did not return a JSON object" in errors[0]
    assert md("Sure! The answer is on page three") in errors[0]  # what it said, shown as text
    assert "**What to do:** The model did not reply in the requested JSON" in errors[0]
    assert "Traceback" not in errors[0]
    # The failed call is kept with what the model said, so the trace shows why.
    failed = rr.calls[-1]
    assert failed.stage == ("retrieve" if role == "retrieval" else "answer")
    assert failed.error and failed.response.startswith("Sure!")
    if role == "answer":
        # No answer, but the pages retrieved (and paid for) are still on its card.
        picked = ranking_for(list(range(1, TOTAL_PAGES + 1)))
        assert rr.calls[0].retrieved == picked
        shown = "**Retrieved before the failure:** " + " → ".join(str(p) for p in picked)
        assert shown in texts(column_of(at, "R&R"))
    else:
        assert not any("Retrieved" in m for m in texts(column_of(at, "R&R")))
    assert traces["baseline"].error is None and traces["baseline"].page == GOLD.page
    assert f"**Cited page:** p. {GOLD.page}" in texts(column_of(at, "Baseline"))
