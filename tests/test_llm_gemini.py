"""The Gemini adapter through the real google-genai SDK, over HTTP, against the loopback stub
(``POST /v1beta/models/{model}:generateContent``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import PLANTED_QUESTION, planted_texts

from rr_core.cli import main
from rr_core.costs import price_usage
from rr_core.errors import (
    AuthError,
    ContextTooLongError,
    MissingKeyError,
    NotConnected,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)
from rr_core.llm import make_client
from rr_core.llm.base import Usage
from rr_core.llm.gemini_client import GeminiClient
from rr_core.outputs import OUTPUTS, AnswerOut, Output
from tests.llm_fixtures import PROMPT, answer_request, raised
from tests.review_kit import COLUMNS_CSV, write_contracts
from tests.stub_server import (
    Reply,
    StubServer,
    json_output,
    malformed,
    not_json,
    prompt_of,
    rate_limited,
    rejects_structured,
    schema_name_of,
    server_error,
    slow,
    unauthorized,
)

KEY = "AIzaSyTEST-0123456789abcdefSECRETxyz"
MODEL = "gemini-2.5-flash"
PATH = f"/v1beta/models/{MODEL}:generateContent"


def client_for(stub: StubServer, timeout_s: float = 120.0, max_retries: int = 0, **kw: Any) -> GeminiClient:
    return GeminiClient(
        model=MODEL, api_key=KEY, base_url=stub.root, max_retries=max_retries, timeout_s=timeout_s, **kw
    )


def gemini_body(text: str = "", finish: str = "STOP", usage: dict[str, int] | None = None) -> dict[str, Any]:
    parts = [{"text": text}] if text else []
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": usage or {"promptTokenCount": 10, "candidatesTokenCount": 0},
        "modelVersion": MODEL,
    }


# -- success ---------------------------------------------------------------------------------


def test_an_answer_goes_as_generate_content_with_the_schema_and_temperature_0(stub: StubServer) -> None:
    client = client_for(stub)
    completion = client.complete(answer_request(max_output_tokens=300))

    sent = stub.last
    assert client.name == "gemini" and client.batch is None
    assert sent.path == PATH
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": PROMPT}]}]
    config = sent.body["generationConfig"]
    assert config["temperature"] == 0
    assert config["maxOutputTokens"] == 300
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == AnswerOut.WIRE_SCHEMA
    if "flash" in MODEL:  # thoughts would count against the output limit (a billed, empty reply)
        # (the SDK sends the field's proto name; the API's JSON reads either spelling)
        assert config["thinkingConfig"] in ({"thinkingBudget": 0}, {"thinking_budget": 0})
    assert completion.structured is True and completion.temperature == 0.0
    assert client.identity()["temperature"] == 0.0 and client.identity()["provider"] == "gemini"
    assert completion.model == MODEL
    answer = AnswerOut.parse(completion.text)
    assert answer.answer == "stub answer"


@pytest.mark.parametrize("schema", OUTPUTS, ids=lambda s: s.__name__)
def test_every_output_shape_is_sent_as_its_schema(stub: StubServer, schema: type[Output]) -> None:
    request = answer_request()
    client_for(stub).complete(type(request)(prompt=PROMPT, schema=schema, model=""))
    assert stub.last.body["generationConfig"]["responseJsonSchema"] == schema.WIRE_SCHEMA


def test_usage_counts_cached_tokens_apart_and_thinking_as_output(stub: StubServer) -> None:
    usage = {
        "promptTokenCount": 5000,
        "cachedContentTokenCount": 4096,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 60,
        "totalTokenCount": 5100,
    }
    stub.enqueue(Reply(text='{"answer": "blue", "page": "1"}', usage=usage))
    completion = client_for(stub).complete(answer_request())
    assert completion.usage == Usage(input_tokens=904, cached_tokens=4096, output_tokens=100)
    assert completion.raw["thoughts_tokens"] == 60
    # Priced by genai-prices as a Gemini model: cache reads at the cache-read rate.
    cost = price_usage(completion.usage, MODEL, "gemini")
    assert cost.known and cost.cached_usd < cost.input_usd * 4096 / 904
    assert cost.total_usd > 0


def test_missing_usage_gives_zeros(stub: StubServer) -> None:
    stub.enqueue(Reply(text='{"answer": "x"}', usage=None))
    assert client_for(stub).complete(answer_request()).usage == Usage()


def test_the_key_comes_from_gemini_api_key_and_its_server_from_gemini_base_url(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_BASE_URL", stub.root)
    client = make_client("gemini", model=MODEL, max_retries=0)
    assert isinstance(client, GeminiClient)
    client.complete(answer_request())
    assert stub.last.headers["x-goog-api-key"] == KEY


def test_a_missing_key_names_the_variable() -> None:
    with pytest.raises(MissingKeyError, match="GEMINI_API_KEY"):
        make_client("gemini", model=MODEL)


def test_the_configured_key_never_goes_to_a_server_given_for_the_run(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with pytest.raises(MissingKeyError, match="never sent to another server"):
        make_client("gemini", model=MODEL, base_url=stub.root)
    assert stub.requests == []


def test_falls_back_when_the_schema_is_rejected(stub: StubServer) -> None:
    stub.enqueue(rejects_structured("Invalid JSON payload: unknown field responseJsonSchema"))
    client = client_for(stub)
    completion = client.complete(answer_request())
    first, second = stub.bodies()
    assert "responseJsonSchema" in first["generationConfig"]
    assert "responseJsonSchema" not in second["generationConfig"]
    assert completion.structured is False


def test_malformed_output_passes_through_for_the_parser(stub: StubServer) -> None:
    stub.enqueue(malformed())
    assert "page three" in client_for(stub).complete(answer_request()).text


# -- errors, retries, deadlines --------------------------------------------------------------


def test_a_429_is_a_rate_limit_that_passes_on_retry_after(stub: StubServer) -> None:
    stub.enqueue(rate_limited(retry_after=20))
    error = raised(client_for(stub))
    assert isinstance(error, RateLimitError) and error.status == 429
    assert "retry after 20 s" in str(error)


def test_a_429_is_retried_and_the_wait_is_reported(stub: StubServer) -> None:
    waits: list[tuple[float, str]] = []
    stub.enqueue(rate_limited(retry_after=0.05), json_output({"answer": "blue", "page": "1"}))
    client = client_for(stub, max_retries=2, timeout_s=60, on_wait=lambda s, why: waits.append((s, why)))
    completion = client.complete(answer_request())
    assert AnswerOut.parse(completion.text).answer == "blue"
    assert len(stub.requests) == 2
    assert waits == [(0.05, "rate limited (HTTP 429); retry 1 of 2")]


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_provider_errors_with_their_status(stub: StubServer, status: int) -> None:
    stub.enqueue(server_error(status))
    error = raised(client_for(stub))
    assert type(error) is ProviderError and error.status == status
    assert "server error" in str(error)


def test_a_rejected_key_is_an_auth_error(stub: StubServer) -> None:
    stub.enqueue(unauthorized("API key not valid. Please pass a valid API key."))
    error = raised(client_for(stub))
    assert isinstance(error, AuthError) and "GEMINI_API_KEY" in str(error)


def test_a_prompt_too_long_suggests_chunked_rr(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            status=400,
            error_message="The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        )
    )
    assert isinstance(raised(client_for(stub)), ContextTooLongError)


def test_a_slow_server_is_a_timeout_within_the_deadline(stub: StubServer) -> None:
    stub.enqueue(slow(30))
    error = raised(client_for(stub, timeout_s=1))
    assert isinstance(error, ProviderTimeout) and "1 s" in str(error)


def test_a_refused_connection_names_the_url(refused_port: int) -> None:
    client = GeminiClient(
        model=MODEL, api_key=KEY, base_url=f"http://127.0.0.1:{refused_port}", max_retries=0
    )
    error = raised(client)
    assert type(error) is NotConnected and f"127.0.0.1:{refused_port}" in str(error)


def test_empty_output_at_the_token_limit_says_to_raise_it(stub: StubServer) -> None:
    stub.enqueue(Reply(body=gemini_body(finish="MAX_TOKENS")))
    error = raised(client_for(stub))
    assert "raise the maximum output tokens" in str(error)


def test_a_reply_left_empty_by_thoughts_is_billed_in_the_budget_and_the_cost(stub: StubServer) -> None:
    """Thoughts used the output limit and no text came: the call was billed all the same. Its
    usage settles the budget and is the call's cost, like any billed reply's (not $0, and not
    counted as 'possibly billed' at its worst case)."""
    from conftest import fee_document, word_counter

    from rr_core.methods import plan_method
    from rr_core.runs import Budget, Executor
    from rr_core.settings import RunSettings

    usage = {"promptTokenCount": 1_500, "candidatesTokenCount": 0, "thoughtsTokenCount": 1_024}
    stub.enqueue(Reply(body=gemini_body(finish="MAX_TOKENS", usage=usage)))
    document = fee_document()
    settings = RunSettings(method="baseline", provider="gemini", model=MODEL)
    plan = plan_method(document, PLANTED_QUESTION, settings, word_counter())
    budget = Budget(1.0)
    with Executor(client_for(stub), budget=budget) as executor:
        (trace,) = executor.run(document, [plan])
    (call,) = trace.calls
    billed = Usage(input_tokens=1_500, output_tokens=1_024)
    cost = price_usage(billed, MODEL, "gemini").total_usd
    assert "returned no text" in (call.error or "") and "possibly billed" not in (call.error or "")
    assert cost > 0 and call.usage == billed and call.cost_usd == pytest.approx(cost)
    assert trace.paid_usd == pytest.approx(cost)
    assert budget.settled_usd == pytest.approx(cost) and budget.possibly_usd == 0.0 and budget.held_usd == 0.0
    assert executor.calls_made == 1 and executor.possibly_billed_note == ""


@pytest.mark.parametrize("reply", [not_json(), Reply(body={"unexpected": True})])
def test_a_reply_that_is_not_the_api_is_a_provider_error(stub: StubServer, reply: Reply) -> None:
    stub.enqueue(reply)
    assert type(raised(client_for(stub))) is ProviderError


@pytest.mark.parametrize(
    "reply",
    [
        unauthorized(f"API key not valid: {KEY}"),
        server_error(500, f"internal error for key {KEY}"),
        rate_limited(message=f"quota for {KEY}"),
    ],
)
def test_the_key_never_appears_in_errors(stub: StubServer, reply: Reply) -> None:
    stub.enqueue(reply)
    error = raised(client_for(stub))
    assert KEY not in str(error) and "[redacted]" in str(error)
    assert KEY not in repr(client_for(stub).identity())


# -- a whole R&R run, from the command line ----------------------------------------------------


def test_an_rr_run_on_gemini_from_the_cli_is_billed_as_reported_and_keeps_no_key(
    capsys: pytest.CaptureFixture[str], stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = tmp_path / "planted.txt"
    document.write_text("\f".join(planted_texts()), encoding="utf-8")
    monkeypatch.setenv("MY_GEMINI_KEY", KEY)
    code = main(
        ["--json", "ask", str(document), "-q", PLANTED_QUESTION, "--methods", "rr", "--provider", "gemini",
         "--model", MODEL, "--base-url", stub.root, "--api-key-env", "MY_GEMINI_KEY", "--save"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    (result,) = json.loads(out)["results"]
    # R&R: one retrieval call over the whole document, then one answer call over its pages.
    assert [schema_name_of(body) for body in stub.bodies()] == ["retrieval", "answer"]
    assert {r.path for r in stub.requests} == {PATH}
    assert result["provider"] == "gemini" and result["answer"] == "stub answer" and result["error"] is None
    # Usage as the stub reported it (four characters a token), priced by genai-prices.
    assert result["usage"]["input_tokens"] == sum(_stub_tokens(prompt_of(b)) for b in stub.bodies())
    usage = Usage(**result["usage"])
    assert result["price_known"] and result["cost_usd"] == pytest.approx(
        price_usage(usage, MODEL, "gemini").total_usd
    )
    assert result["cost_usd"] > 0
    # The key went to the server in its header, and nowhere else.
    assert {r.headers["x-goog-api-key"] for r in stub.requests} == {KEY}
    assert KEY not in out + err
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p != document)
    assert stored and KEY.encode() not in stored


def _stub_tokens(text: str) -> int:
    return max(1, len(text) // 4)  # the stub's count (tests/stub_server.py, no TOKENIZER set)


def test_batches_are_not_offered_for_gemini_and_the_plan_says_so(
    capsys: pytest.CaptureFixture[str], stub: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_contracts(tmp_path / "contracts")
    (tmp_path / "questions.csv").write_text(COLUMNS_CSV, encoding="utf-8")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_BASE_URL", stub.root)
    argv = ["review", str(tmp_path / "contracts"), "--questions", str(tmp_path / "questions.csv"),
            "--processes", "1", "--provider", "gemini", "--model", MODEL]  # fmt: skip
    assert main([*argv, "--mode", "batch"]) == 2
    err = capsys.readouterr().err
    assert "batches are not offered for Google Gemini in this version; use --mode now" in err
    assert main([*argv, "--dry-run"]) == 0
    assert "batches not offered for this provider" in capsys.readouterr().err
    assert stub.requests == []


def test_a_plain_text_reply_asks_for_no_json_and_keeps_temperature_0(stub: StubServer) -> None:
    from rr_core.llm.base import LLMRequest
    from rr_core.outputs import PlainAnswerOut

    stub.enqueue(Reply(text="Answer: blue\nPage: 3"))
    completion = client_for(stub).complete(LLMRequest(prompt="Q?", schema=PlainAnswerOut, model=""))
    config = stub.last.body["generationConfig"]
    assert config["temperature"] == 0 and "responseJsonSchema" not in config
    assert "responseMimeType" not in config and completion.structured is False
    assert PlainAnswerOut.parse(completion.text).page_number == 3
