"""The "Check each answer against its quotes" toggle on the Ask and Review screens, driven by
AppTest: through the real OpenAI SDK against the loopback stub, one more call per answer found;
on the offline engine, nothing more."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from pages.common.state import SESSION_KEY, Session
from rr_core.outputs import VERDICTS
from tests.stub_server import Reply, StubServer, json_output, prompt_of, schema_name_of

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 240  # the machine is slow and shared: generous, never a speed check
MODEL = "gpt-4.1-mini"
TOGGLE = "w.verify"


def open_app(page: str = "", **state: Any) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def on_stub(stub: StubServer) -> dict[str, Any]:
    return {"provider": "openai", "model": MODEL, "base_url": stub.url, "api_key": "sk-app-test"}


_PAGE = re.compile(r"^<PAGE (\d+)>\n(.+)$", re.MULTILINE)


def quoting(path: str, body: Any) -> Reply:
    """The stub's own replies, but an answer quotes the first line of the first page it was
    given (a quote that stands on its page: only such quotes are sent to be checked)."""
    if schema_name_of(body) != "answer":
        return Reply()  # the stub's own reply for the shape
    found = _PAGE.search(prompt_of(body))
    page, line = (found.group(1), found.group(2).strip()[:120]) if found else ("1", "")
    # An answer of its own per prompt: two methods' checks are two calls, never one shared.
    answer = f"stub answer from {len(_PAGE.findall(prompt_of(body)))} pages"
    return json_output({"question": "", "answer": answer, "found": True,
                        "citations": [{"page": page, "quote": line}]})  # fmt: skip


def run_ask(at: AppTest) -> list[Any]:
    at.button(key="run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return list(at.session_state["results"]["traces"])


def test_the_ask_toggle_sends_one_check_per_answer_found(stub: StubServer) -> None:
    stub.responder = quoting
    at = open_app(**on_stub(stub))
    assert at.checkbox(key=TOGGLE).label == "Check each answer against its quotes"
    assert not at.checkbox(key=TOGGLE).value
    plain = run_ask(at)
    without = Counter(schema_name_of(b) for b in stub.bodies())
    assert "verification" not in without and all(t.outcome.support == "unchecked" for t in plain)
    stub.requests.clear()

    at.checkbox(key=TOGGLE).check().run()
    at.text_input(key="w.verify_model").input("gpt-4.1-nano").run()
    assert not at.exception, [e.value for e in at.exception]
    checked = run_ask(at)
    found = sum(1 for t in checked for o in t.outcomes if o.stated)
    sent = Counter(schema_name_of(b) for b in stub.bodies())
    assert found == len(checked) and sent == without + Counter({"verification": found})
    assert {b["model"] for b in stub.bodies() if schema_name_of(b) == "verification"} == {"gpt-4.1-nano"}
    for trace in checked:
        assert trace.outcome.support in VERDICTS and trace.outcome.support_by == "verifier gpt-4.1-nano"
        assert "verify" in trace.cost_by_stage()


def test_on_the_offline_engine_the_toggle_sends_nothing_more() -> None:
    at = open_app()
    plain = run_ask(at)
    at.checkbox(key=TOGGLE).check().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [t for t in at.text_input if t.key == "w.verify_model"]  # no model checks
    checked = run_ask(at)
    assert [len(t.calls) for t in checked] == [len(t.calls) for t in plain]
    assert not any(c.stage == "verify" for t in checked for c in t.calls)
    assert all(any("sends nothing" in n for n in t.notes) for t in checked)


def test_the_review_toggle_puts_the_checks_in_the_grids_plan(stub: StubServer) -> None:
    at = open_app("pages/review.py", **on_stub(stub))
    assert at.checkbox(key=TOGGLE).label == "Check each answer against its quotes"
    session = at.session_state[SESSION_KEY]
    assert isinstance(session, Session)
    plain = session.review.plan
    assert plain is not None and not plain.settings.verify
    at.checkbox(key=TOGGLE).check().run()
    assert not at.exception, [e.value for e in at.exception]
    checked = at.session_state[SESSION_KEY].review.plan
    assert checked is not None and checked.settings.verify
    cells = len(checked.documents) * len(checked.columns)
    assert checked.estimate.calls == plain.estimate.calls + cells  # one check per cell, at most
