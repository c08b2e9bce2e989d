"""Checking answers against their quotes (``--verify``) through the real OpenAI and Anthropic SDKs,
over HTTP, against the loopback stub: exactly one more call per answer found, sending only the
question, the answer and the quotes; its verdict on the outcome and through the trace's round
trip and the store; batches; the call cache; the budget; a reply that cannot be read; nothing
more without it, and nothing at all on the offline engine."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import FEE_PAGES, fee_document, word_counter

from rr_core.cli import main
from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.llm.anthropic_client import AnthropicClient
from rr_core.llm.offline import OfflineEngine
from rr_core.llm.openai_client import OpenAIClient
from rr_core.methods import plan_method
from rr_core.outputs import VERDICTS, VerificationOut
from rr_core.plans import Plan, estimate_calls
from rr_core.runs import Executor, RunTrace
from rr_core.settings import RunSettings
from rr_core.stages import stage_label
from rr_core.store import SQLiteStore
from rr_core.traces import RunTrace as StoredTrace
from rr_core.workbench import check_ask_budget
from tests.stub_server import Reply, StubServer, json_output, prompt_of, schema_name_of

FEE = "What is the termination fee?"
SKY = "What colour is the sky above the harbour?"  # the document does not say
MODELS = {"openai": ("gpt-4.1-mini", "gpt-4.1-nano"), "anthropic": ("claude-sonnet-5-5", "claude-haiku-4-5")}
PROVIDERS = tuple(MODELS)
WAIT_S = 120.0  # a generous limit on every wait


def client_for(provider: str, stub: StubServer) -> OpenAIClient | AnthropicClient:
    model = MODELS[provider][0]
    if provider == "openai":
        return OpenAIClient(model=model, api_key="sk-test-stub", base_url=stub.url, max_retries=0)
    return AnthropicClient(model=model, api_key="sk-ant-stub", base_url=stub.anthropic_url, max_retries=0)


def plan_for(
    document: Document, provider: str, questions: str | list[str] = FEE, *, verify: bool, method: str = "rr"
) -> Plan:
    model, cheaper = MODELS[provider]
    settings = RunSettings(
        method=method, provider=provider, model=model, verify=verify, verify_model=cheaper if verify else ""
    )
    return plan_method(document, questions, settings, word_counter())


def reader(path: str, body: Any) -> Reply:
    """Retrieves pages 3 and 11; answers the fee question from page 3, quoting it, and says the
    document does not state anything else; the check's verdict is the stub's own."""
    shape = schema_name_of(body)
    prompt = prompt_of(body)
    if shape == "retrieval":
        return json_output({"question": "", "pages": [3, 11]})
    if shape == "retrieval_per_question":
        return json_output({"results": [{"question": i, "pages": [3, 11]} for i in (1, 2)]})
    if shape == "answer" and FEE in prompt:
        cited = [{"page": "3", "quote": FEE_PAGES[3]}]
        return json_output(
            {"question": FEE, "answer": "4.2 million euros", "found": True, "citations": cited}
        )
    if shape == "answer":
        return json_output(
            {"question": SKY, "answer": "not stated in the document", "found": False, "citations": []}
        )
    return Reply()


def run(
    stub: StubServer, provider: str, plans: list[Plan], document: Document, **executor: Any
) -> list[RunTrace]:
    with Executor(client_for(provider, stub), **executor) as ex:
        return ex.run(document, plans)


def shapes(stub: StubServer) -> Counter[str]:
    return Counter(schema_name_of(body) or "?" for body in stub.bodies())


@pytest.fixture(scope="module")
def document() -> Document:
    return fee_document()


# ---- One more call per answer found, and only the question, the answer and the quotes ----------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_verify_adds_one_call_per_answer_found_carrying_no_page_text(
    stub: StubServer, document: Document, provider: str
) -> None:
    stub.responder = reader
    (plain,) = run(stub, provider, [plan_for(document, provider, verify=False)], document)
    without = shapes(stub)
    assert without == Counter({"retrieval": 1, "answer": 1})  # without --verify: nothing more
    assert plain.outcome.support == "unchecked" and plain.outcome.support_by == ""
    stub.requests.clear()

    (trace,) = run(stub, provider, [plan_for(document, provider, verify=True)], document)
    assert trace.ok, trace.error
    assert shapes(stub) == without + Counter({"verification": 1})  # exactly one more call
    outcome = trace.outcome
    assert outcome.answer == "4.2 million euros" and outcome.found
    assert outcome.support in VERDICTS and outcome.support_reason
    assert outcome.support_by == f"verifier {MODELS[provider][1]}"
    (check,) = [c for c in trace.calls if c.stage == "verify"]
    assert check.schema == "verification" and not check.error
    (body,) = [b for b in stub.bodies() if schema_name_of(b) == "verification"]
    assert body["model"] == MODELS[provider][1]  # the cheaper model of the same provider
    assert body["temperature"] == 0  # both providers: the Messages API as a raw body field
    assert (
        body["text" if provider == "openai" else "output_config"]["format"]["schema"]
        == VerificationOut.WIRE_SCHEMA
    )
    sent = prompt_of(body)
    assert FEE in sent and "4.2 million euros" in sent and FEE_PAGES[3] in sent
    assert "<PAGE" not in sent and all(page.text not in sent for page in document.pages)
    assert len(sent) < 3_000  # a few hundred tokens, never the document
    # Its own stage, with its own cost, in the breakdown.
    assert stage_label("verify") == "Check answers"
    assert trace.cost_by_stage()["verify"] == pytest.approx(check.cost_usd) and check.cost_usd > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_answer_not_found_is_not_checked(stub: StubServer, document: Document, provider: str) -> None:
    stub.responder = reader
    plan = plan_for(document, provider, [FEE, SKY], verify=True)
    assert plan.estimate.calls == 1 + 2 + 2  # the worst case: one check per question
    (trace,) = run(stub, provider, [plan], document)
    assert shapes(stub) == Counter({"retrieval_per_question": 1, "answer": 2, "verification": 1})
    fee, sky = trace.outcomes
    assert fee.support in VERDICTS and fee.support_by.startswith("verifier ")
    assert not sky.found and sky.support == "unchecked" and sky.support_by == ""


def test_a_quote_not_on_its_page_is_not_sent_and_its_answer_is_unsupported(
    stub: StubServer, document: Document
) -> None:
    """A made-up quote supports nothing, whatever a verifier would say of it: no check is sent
    for an answer none of whose quotes stands on its cited page, and it reads unsupported."""

    def inventing(path: str, body: Any) -> Reply:
        if schema_name_of(body) == "answer":
            cited = [{"page": "3", "quote": "The fee is forty-two million euros, payable at once."}]
            return json_output(
                {"question": FEE, "answer": "42 million euros", "found": True, "citations": cited}
            )
        return reader(path, body)

    stub.responder = inventing
    (trace,) = run(stub, "openai", [plan_for(document, "openai", verify=True)], document)
    assert shapes(stub)["verification"] == 0
    (fee,) = trace.outcomes
    assert fee.citations[0].quote_check == "not-found"
    assert fee.support == "unsupported" and "stands on its cited page" in fee.support_reason
    assert fee.confidence == "check"


def test_a_verdict_is_read_strictly_and_its_reason_kept_to_one_line() -> None:
    said = VerificationOut.parse(
        '{"verdict": " Partial ", "reason": "It states\\nthe amount,\\n not the term."}'
    )
    assert said.verdict == "partial" and said.reason == "It states the amount, not the term."
    for bad in ('{"verdict": "probably", "reason": "x"}', '{"reason": "x"}', "Looks supported to me."):
        with pytest.raises(Exception, match="verdict|JSON|json"):
            VerificationOut.parse(bad)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_malformed_verdict_leaves_the_answer_unchecked_saying_why(
    stub: StubServer, document: Document, provider: str
) -> None:
    def garbled(path: str, body: Any) -> Reply:
        if schema_name_of(body) == "verification":
            return Reply(text='{"verdict": "maybe", "reason": "unsure"}')
        return reader(path, body)

    stub.responder = garbled
    (trace,) = run(stub, provider, [plan_for(document, provider, verify=True)], document)
    assert trace.ok and trace.error is None  # the run does not fail
    outcome = trace.outcome
    assert outcome.answer == "4.2 million euros" and outcome.found  # the answer stays
    assert outcome.support == "unchecked" and outcome.support_reason.startswith("Not checked")
    assert "verdict" in outcome.support_reason  # what was wrong with the reply
    assert outcome.support_by == f"verifier {MODELS[provider][1]}"


def test_a_failed_check_call_leaves_the_answer_unchecked(stub: StubServer, document: Document) -> None:
    def refusing(path: str, body: Any) -> Reply:
        if schema_name_of(body) == "verification":
            return Reply(status=400, error_message="bad request", error_type="invalid_request_error")
        return reader(path, body)

    stub.responder = refusing
    (trace,) = run(stub, "openai", [plan_for(document, "openai", verify=True)], document)
    assert trace.ok and trace.outcome.answer == "4.2 million euros"
    assert trace.outcome.support == "unchecked" and "bad request" in trace.outcome.support_reason


# ---- The trace, the store, the cache, batches, the budget -------------------------------------


def test_the_verdict_survives_the_traces_round_trip_and_the_store(
    stub: StubServer, document: Document, tmp_path: Path
) -> None:
    stub.responder = reader
    (trace,) = run(stub, "openai", [plan_for(document, "openai", verify=True)], document)
    again = StoredTrace.from_dict(json.loads(json.dumps(trace.to_dict())))
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    store.save_batch([trace])
    stored = store.get(trace.run_id)
    assert stored is not None
    for read in (again, stored):
        assert (read.outcome.support, read.outcome.support_reason, read.outcome.support_by) == (
            trace.outcome.support,
            trace.outcome.support_reason,
            trace.outcome.support_by,
        )
        assert read.settings.verify and read.settings.verify_model == "gpt-4.1-nano"


def test_settings_without_the_check_keep_their_form() -> None:
    plain = RunSettings(method="rr")
    assert "verify" not in plain.to_dict() and "verify_model" not in plain.to_dict()
    checked = plain.but(verify=True, verify_model="gpt-4.1-nano")
    assert RunSettings.from_dict(checked.to_dict()) == checked
    assert checked.verifier == "gpt-4.1-nano" and plain.but(verify=True).verifier == plain.model


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_second_identical_run_pays_nothing(
    stub: StubServer, document: Document, provider: str, tmp_path: Path
) -> None:
    stub.responder = reader
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = plan_for(document, provider, verify=True)
    (first,) = run(stub, provider, [plan], document, cache=store)
    sent = len(stub.requests)
    assert sent == 3 and first.paid_usd > 0
    (second,) = run(stub, provider, [plan], document, cache=store)
    assert len(stub.requests) == sent  # not one request more
    assert second.paid_usd == 0 and all(c.cached for c in second.calls)
    assert [c.stage for c in second.calls] == ["retrieve", "answer", "verify"]
    assert second.outcome.support == first.outcome.support in VERDICTS


@pytest.mark.parametrize("provider", PROVIDERS)
def test_checks_go_in_a_provider_batch(
    stub: StubServer, document: Document, provider: str, tmp_path: Path
) -> None:
    stub.responder = reader
    stub.batch_auto_complete = True
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    plan = plan_for(document, provider, [FEE, SKY], verify=True)
    (trace,) = run(stub, provider, [plan], document, cache=store, mode="batch", poll_s=0.05)
    assert trace.ok, trace.error
    synchronous = [r for r in stub.requests if r.path.split("?")[0] in ("/v1/responses", "/v1/messages")]
    assert synchronous == []  # every call went in a batch, the check too
    assert sum(stub.batch_submissions.values()) == 1 + 2 + 1
    assert [c.mode for c in trace.calls] == ["batch"] * 4
    assert trace.outcomes[0].support in VERDICTS and trace.outcomes[1].support == "unchecked"


def test_the_estimate_counts_the_check_and_the_budget_cap_covers_it(document: Document) -> None:
    plain, checked = (plan_for(document, "openai", verify=v) for v in (False, True))
    assert checked.estimate.calls == plain.estimate.calls + 1
    assert checked.estimate.usd > plain.estimate.usd
    (verify_phase,) = [p for p in checked.phases if p.stage == "verify"]
    assert verify_phase.estimated and verify_phase.optional
    # Priced as the cheaper model it asks, not as the run's.
    (sized,) = verify_phase.calls
    nano = estimate_calls([sized], checked.settings)
    mini = estimate_calls([replace(sized, model="")], checked.settings)
    assert 0 < nano.usd < mini.usd
    between = (plain.estimate.usd + checked.estimate.usd) / 2
    check_ask_budget([plain], plain.settings, between)  # fits without the check
    with pytest.raises(ConfigError, match="above the budget"):
        check_ask_budget([checked], checked.settings, between)


def test_a_check_not_sent_leaves_the_answer_unchecked(stub: StubServer, document: Document) -> None:
    with Executor(client_for("openai", stub)) as ex:

        def stop_while_answering(path: str, body: Any) -> Reply:
            if schema_name_of(body) == "answer":  # stopped before the answer comes back: no check after it
                ex.cancel()
            return reader(path, body)

        stub.responder = stop_while_answering
        (trace,) = ex.run(document, [plan_for(document, "openai", verify=True)])
    assert "verification" not in shapes(stub)  # never sent
    assert trace.outcome.answer == "4.2 million euros" and trace.outcome.support == "unchecked"
    assert trace.outcome.support_reason.startswith("Not checked") and "sent" in trace.outcome.support_reason


# ---- Not an LLM: nothing more is sent ----------------------------------------------------------


def test_the_offline_engine_sends_nothing_more_and_says_so(document: Document) -> None:
    settings = RunSettings(method="rr", provider="offline", model="offline")
    plain = plan_method(document, FEE, settings, word_counter())
    checked = plan_method(document, FEE, settings.but(verify=True), word_counter())
    assert [p.stage for p in checked.phases] == [p.stage for p in plain.phases]
    assert checked.estimate.calls == plain.estimate.calls
    assert any("sends nothing" in n for n in checked.notes)
    with Executor(OfflineEngine(word_counter())) as ex:
        (a,) = ex.run(document, [plain])
        (b,) = ex.run(document, [checked])
    assert len(a.calls) == len(b.calls) and not any(c.stage == "verify" for c in b.calls)
    assert b.outcome.support_by != "verifier offline"


# ---- The command line --------------------------------------------------------------------------


@pytest.fixture
def fee_txt(tmp_path: Path, document: Document) -> Path:
    path = tmp_path / "fee.txt"
    path.write_text("\f".join(page.text for page in document.pages), encoding="utf-8")
    return path


def test_cli_ask_verify_sends_one_more_call_and_prints_the_verdict(
    capsys: pytest.CaptureFixture[str], stub: StubServer, fee_txt: Path
) -> None:
    stub.responder = reader
    engine = ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "llama"]
    ask = ["ask", str(fee_txt), "-q", FEE, "--methods", "rr", *engine]
    assert main(["--json", *ask]) == 0
    (plain,) = json.loads(capsys.readouterr().out)["results"]
    assert len(stub.requests) == 2 and plain["outcomes"][0]["support"] == "unchecked"
    assert main(["--json", *ask, "--verify"]) == 0
    (checked,) = json.loads(capsys.readouterr().out)["results"]
    assert len(stub.requests) == 2 + 3  # the same two, and the check
    outcome = checked["outcomes"][0]
    assert outcome["support"] in VERDICTS and outcome["support_by"] == "verifier llama"
    assert "verify" in checked["cost_by_stage"]
    assert main([*ask, "--verify"]) == 0
    assert "checked against its quotes by verifier llama: supported" in capsys.readouterr().out


def test_cli_verify_model_without_verify_is_a_mistake(
    capsys: pytest.CaptureFixture[str], fee_txt: Path
) -> None:
    assert main(["plan", str(fee_txt), "-q", FEE, "-m", "rr", "--verify-model", "gpt-4.1-nano"]) == 2
    assert "add --verify" in capsys.readouterr().err


def test_cli_plan_on_the_offline_engine_says_the_check_sends_nothing(
    capsys: pytest.CaptureFixture[str], fee_txt: Path
) -> None:
    data = cli_json(capsys, "plan", str(fee_txt), "-q", FEE, "-m", "rr", "--verify")
    (plan,) = data["plans"]
    assert [p["stage"] for p in plan["phases"]] == ["retrieve", "answer"]
    assert any("sends nothing" in note for note in plan["notes"])
    data = cli_json(
        capsys,
        "plan",
        str(fee_txt),
        "-q",
        FEE,
        "-m",
        "rr",
        "--verify",
        "--provider",
        "openai-compatible",
        "--model",
        "llama",
    )
    (plan,) = data["plans"]
    assert [p["stage"] for p in plan["phases"]] == ["retrieve", "answer", "verify"]
    assert plan["estimate"]["calls"] == 3


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]
