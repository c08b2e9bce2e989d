"""The OpenAI adapter through the real SDK, over HTTP, against the loopback stub."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import DroppingServer

from rr_core.errors import (
    AuthError,
    ConfigError,
    ContextTooLongError,
    MissingKeyError,
    NotConnected,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ResponseParseError,
)
from rr_core.llm.base import LLMRequest, Usage
from rr_core.llm.openai_client import OpenAIClient
from rr_core.outputs import OUTPUTS, AnswerOut, Output, RetrievalOut
from tests.llm_fixtures import PROMPT, answer_request, raised, retrieve_request
from tests.stub_server import (
    Reply,
    StubServer,
    bare_usage,
    context_too_long,
    malformed,
    not_json,
    rate_limited,
    rejects_structured,
    server_error,
    slow,
    unauthorized,
)

ANSWER_SCHEMA = AnswerOut.WIRE_SCHEMA
RETRIEVAL_SCHEMA = RetrievalOut.WIRE_SCHEMA
parse_answer = AnswerOut.parse
parse_retrieval = RetrievalOut.parse

KEY = "sk-test-0123456789abcdefSECRET"


def responses_client(stub: StubServer, timeout_s: float = 120.0) -> OpenAIClient:
    return OpenAIClient(model="gpt-test", api_key=KEY, base_url=stub.url, max_retries=0, timeout_s=timeout_s)


def chat_client(stub: StubServer, timeout_s: float = 120.0) -> OpenAIClient:
    return OpenAIClient(model="llama-test", base_url=stub.url, api="chat", max_retries=0, timeout_s=timeout_s)


MakeClient = Callable[[StubServer], OpenAIClient]


# -- Responses API ---------------------------------------------------------------------------


def test_responses_answer_sends_structured_request_with_store_false(stub: StubServer) -> None:
    completion = responses_client(stub).complete(answer_request(max_output_tokens=300))

    sent = stub.last
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["store"] is False
    assert sent.body["input"] == PROMPT
    assert sent.body["model"] == "gpt-test"
    assert sent.body["max_output_tokens"] == 300
    assert sent.body["text"]["format"] == {
        "type": "json_schema",
        "name": "answer",
        "schema": ANSWER_SCHEMA,
        "strict": True,
    }
    assert sent.body["temperature"] == 0
    assert completion.temperature == 0.0  # what was sent, for the trace
    assert completion.structured is True
    assert completion.model == "gpt-test"
    answer = parse_answer(completion.text)
    assert (answer.answer, answer.page_number, answer.question) == (
        "stub answer",
        1,
        "What colour is the sky?",
    )


def test_responses_retrieval_uses_retrieval_schema(stub: StubServer) -> None:
    completion = responses_client(stub).complete(retrieve_request())

    fmt = stub.last.body["text"]["format"]
    assert fmt["name"] == "retrieval"
    assert fmt["schema"] == RETRIEVAL_SCHEMA
    assert stub.last.body["store"] is False
    assert parse_retrieval(completion.text).pages == [1, 2]


def test_request_model_overrides_the_clients(stub: StubServer) -> None:
    chat_client(stub).complete(answer_request(model="gpt-test"))
    assert stub.last.body["model"] == "gpt-test"


def test_model_reported_by_server_is_kept(stub: StubServer) -> None:
    stub.enqueue(Reply(model="gpt-test-2026-01-01"))
    assert responses_client(stub).complete(answer_request()).model == "gpt-test-2026-01-01"


def test_key_and_base_url_come_from_environment(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    OpenAIClient(model="gpt-test", max_retries=0).complete(answer_request())
    assert stub.last.headers["authorization"] == f"Bearer {KEY}"


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY") as info:
        OpenAIClient(model="gpt-test")
    assert info.value.provider == "openai"


def test_blank_key_counts_as_missing() -> None:
    with pytest.raises(MissingKeyError):
        OpenAIClient(model="gpt-test", api_key="")


def test_unknown_api_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        OpenAIClient(model="gpt-test", api_key=KEY, api="completions")  # type: ignore[arg-type]


# -- Chat Completions (OpenAI-compatible servers) ----------------------------------------------


def test_chat_needs_no_key_and_sends_json_schema(stub: StubServer) -> None:
    client = chat_client(stub)
    completion = client.complete(answer_request(max_output_tokens=200))

    sent = stub.last
    assert client.name == "openai-compatible"
    assert sent.path == "/v1/chat/completions"
    assert "authorization" not in sent.headers  # no key: no Authorization header at all
    assert sent.body["messages"] == [{"role": "user", "content": PROMPT}]
    assert sent.body["max_tokens"] == 200
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA, "strict": True},
    }
    assert "store" not in sent.body
    assert completion.structured is True
    assert parse_answer(completion.text).answer == "stub answer"


def test_chat_retrieval(stub: StubServer) -> None:
    completion = chat_client(stub).complete(retrieve_request())
    assert stub.last.body["response_format"]["json_schema"]["name"] == "retrieval"
    assert parse_retrieval(completion.text).pages == [1, 2]


def test_chat_requires_a_base_url() -> None:
    with pytest.raises(ConfigError, match="base URL"):
        OpenAIClient(model="llama-test", api="chat")


@pytest.mark.parametrize("model", ["o3-mini", "o1", "gpt-5", "gpt-5.5", "gpt-6.1-sol", "o4-mini-2025-04-16"])
def test_reasoning_models_get_no_temperature(stub: StubServer, model: str) -> None:
    client = OpenAIClient(model=model, api_key=KEY, base_url=stub.url, max_retries=0)
    completion = client.complete(answer_request())
    assert "temperature" not in stub.last.body
    assert completion.temperature is None and client.identity()["temperature"] is None


@pytest.mark.parametrize("model", ["gpt-4.1-mini", "gpt-4o", "gpt-5-chat-latest"])
def test_models_that_take_a_temperature_get_zero(stub: StubServer, model: str) -> None:
    client = OpenAIClient(model=model, api_key=KEY, base_url=stub.url, max_retries=0)
    client.complete(answer_request())
    assert stub.last.body["temperature"] == 0 and client.identity()["temperature"] == 0.0


def test_chat_sends_temperature_zero_and_drops_it_once_the_server_rejects_it(stub: StubServer) -> None:
    client = chat_client(stub)
    stub.enqueue(
        Reply(
            status=400,
            error_message="Unsupported value: 'temperature' does not support 0 with this model. "
            "Only the default (1) value is supported.",
            error_type="invalid_request_error",
            error_code="unsupported_value",
        )
    )
    first = client.complete(answer_request())
    second = client.complete(answer_request())
    bodies = stub.bodies("chat")
    assert len(bodies) == 3 and bodies[0]["temperature"] == 0
    assert "temperature" not in bodies[1] and "temperature" not in bodies[2]  # remembered
    assert first.temperature is None and second.temperature is None
    assert "response_format" in bodies[1]  # structured output was not the problem
    # The cache identity is the configuration: the rejection changes what is sent, not the key.
    assert client.identity() == chat_client(stub).identity() and client.identity()["temperature"] == 0.0


def test_chat_falls_back_when_server_rejects_structured_output(stub: StubServer) -> None:
    client = chat_client(stub)
    stub.enqueue(rejects_structured())

    first = client.complete(answer_request())
    second = client.complete(answer_request())

    bodies = stub.bodies("chat")
    assert len(bodies) == 3
    assert "response_format" in bodies[0]
    # The retry and every later call go without it: the client remembers.
    assert "response_format" not in bodies[1]
    assert "response_format" not in bodies[2]
    assert first.structured is False and second.structured is False
    assert parse_answer(first.text).answer == "stub answer"


def test_structured_fallback_happens_at_most_once_per_call(stub: StubServer) -> None:
    stub.enqueue(rejects_structured(), rejects_structured())
    err = raised(chat_client(stub))
    assert isinstance(err, ProviderError) and err.status == 400
    assert len(stub.requests) == 2


# -- usage -----------------------------------------------------------------------------------


def test_responses_cached_tokens_are_split_out_of_input(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            usage={
                "input_tokens": 1000,
                "input_tokens_details": {"cached_tokens": 800, "cache_write_tokens": 0},
                "output_tokens": 40,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 1040,
            }
        )
    )
    usage = responses_client(stub).complete(answer_request()).usage
    assert usage == Usage(input_tokens=200, cached_tokens=800, output_tokens=40)
    assert usage.prompt_tokens == 1000


def test_responses_cache_writes_are_split_out_of_input(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            usage={
                "input_tokens": 1000,
                "input_tokens_details": {"cached_tokens": 300, "cache_write_tokens": 600},
                "output_tokens": 5,
            }
        )
    )
    usage = responses_client(stub).complete(answer_request()).usage
    assert usage == Usage(input_tokens=100, cached_tokens=300, cache_write_tokens=600, output_tokens=5)


def test_chat_cached_tokens_are_split_out_of_prompt(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            usage={
                "prompt_tokens": 1000,
                "completion_tokens": 30,
                "total_tokens": 1030,
                "prompt_tokens_details": {"cached_tokens": 800},
            }
        )
    )
    usage = chat_client(stub).complete(answer_request()).usage
    assert usage == Usage(input_tokens=200, cached_tokens=800, output_tokens=30)


@pytest.mark.parametrize("make_client", [responses_client, chat_client])
def test_usage_without_details_counts_all_input_as_uncached(
    stub: StubServer, make_client: MakeClient
) -> None:
    stub.enqueue(bare_usage())
    completion = make_client(stub).complete(answer_request())
    assert completion.usage.cached_tokens == 0
    assert completion.usage.cache_write_tokens == 0
    assert completion.usage.input_tokens > 0 and completion.usage.output_tokens > 0


def test_null_details_and_null_usage_give_zeros(stub: StubServer) -> None:
    stub.enqueue(
        Reply(usage={"input_tokens": 70, "input_tokens_details": None, "output_tokens": 9}),
        Reply(usage=None),
    )
    client = responses_client(stub)
    assert client.complete(answer_request()).usage == Usage(input_tokens=70, output_tokens=9)
    assert client.complete(answer_request()).usage == Usage()


def test_chat_null_prompt_details_and_null_usage(stub: StubServer) -> None:
    stub.enqueue(
        Reply(usage={"prompt_tokens": 50, "completion_tokens": 4, "prompt_tokens_details": None}),
        Reply(usage=None),
    )
    client = chat_client(stub)
    assert client.complete(answer_request()).usage == Usage(input_tokens=50, output_tokens=4)
    assert client.complete(answer_request()).usage == Usage()


# -- faults ----------------------------------------------------------------------------------


def test_rate_limit_says_to_wait_and_passes_on_retry_after(stub: StubServer) -> None:
    stub.enqueue(rate_limited(retry_after=17))
    err = raised(responses_client(stub))
    assert isinstance(err, RateLimitError)
    assert (err.status, err.provider) == (429, "openai")
    assert "17 s" in str(err)
    assert "lower concurrency" in str(err)


def test_server_error_is_a_provider_error_with_status(stub: StubServer) -> None:
    stub.enqueue(server_error(500))
    err = raised(responses_client(stub))
    assert type(err) is ProviderError
    assert err.status == 500
    assert "HTTP 500" in str(err)


def test_rejected_key_is_an_auth_error(stub: StubServer) -> None:
    stub.enqueue(unauthorized())
    err = raised(responses_client(stub))
    assert isinstance(err, AuthError)
    assert err.status == 401
    assert str(err).startswith("OpenAI rejected the API key (HTTP 401")
    assert "OPENAI_API_KEY" in str(err)


@pytest.mark.parametrize("make_client", [responses_client, chat_client])
def test_context_too_long_suggests_chunked_rr(stub: StubServer, make_client: MakeClient) -> None:
    stub.enqueue(context_too_long("openai"))
    err = raised(make_client(stub))
    assert isinstance(err, ContextTooLongError)
    assert err.status == 400
    assert "chunked-rr" in str(err)


def test_context_too_long_is_not_mistaken_for_structured_rejection(stub: StubServer) -> None:
    # A window error must not trigger the retry without response_format.
    stub.enqueue(context_too_long("openai"))
    with pytest.raises(ContextTooLongError):
        chat_client(stub).complete(answer_request())
    assert len(stub.requests) == 1


def test_slow_server_is_a_timeout(stub: StubServer) -> None:
    stub.enqueue(slow(3.0))
    err = raised(responses_client(stub, timeout_s=0.3))
    assert isinstance(err, ProviderTimeout)
    assert "0.3 s" in str(err)


def test_request_timeout_shorter_than_client_timeout_wins(stub: StubServer) -> None:
    stub.enqueue(slow(3.0))
    with pytest.raises(ProviderTimeout):
        responses_client(stub).complete(answer_request(timeout_s=0.3))


def test_connection_refused_names_the_url(refused_port: int) -> None:
    url = f"http://127.0.0.1:{refused_port}/v1"
    client = OpenAIClient(model="llama-test", base_url=url, api="chat", max_retries=0)
    err = raised(client)
    # No connection was made: nothing was sent, so nothing can have been billed.
    assert type(err) is NotConnected and isinstance(err, ProviderError)
    assert f"Could not reach {url}" in str(err)


def test_a_connection_dropped_after_sending_may_have_been_billed(dropping_server: DroppingServer) -> None:
    """The request reached a server that closed without answering: it may have been billed, so it
    is not the "nothing sent" error (and a refusal on a retry after it does not make it unsent)."""
    url = f"http://127.0.0.1:{dropping_server.port}/v1"
    err = raised(OpenAIClient(model="m", base_url=url, api="chat", max_retries=0))
    assert type(err) is ProviderError and "Could not reach" in str(err)
    client = OpenAIClient(model="m", base_url=url, api="chat", max_retries=1)
    waited: list[float] = []
    client._on_wait = lambda seconds, reason: (waited.append(seconds), dropping_server.close())
    err = raised(client)  # the first attempt dropped, the retry refused (the server closed)
    assert waited and type(err) is ProviderError


def test_credentials_in_base_url_are_not_shown(refused_port: int) -> None:
    url = f"http://user:hunter2pass@127.0.0.1:{refused_port}/v1"
    err = raised(OpenAIClient(model="m", base_url=url, api="chat", max_retries=0))
    assert "hunter2pass" not in str(err)


def test_malformed_output_passes_through_for_the_parser(stub: StubServer) -> None:
    stub.enqueue(malformed("The answer is blue, on page one."))
    completion = responses_client(stub).complete(answer_request())
    assert completion.text == "The answer is blue, on page one."
    with pytest.raises(ResponseParseError):
        parse_answer(completion.text)


@pytest.mark.parametrize("make_client", [responses_client, chat_client])
def test_empty_output_is_a_clear_error(stub: StubServer, make_client: MakeClient) -> None:
    stub.enqueue(Reply(text=""))
    err = raised(make_client(stub))
    assert isinstance(err, ProviderError)
    assert "returned no text" in str(err)


@pytest.mark.parametrize("make_client", [responses_client, chat_client])
def test_reply_that_is_not_the_api_is_a_provider_error(stub: StubServer, make_client: MakeClient) -> None:
    stub.enqueue(Reply(body="<html>Welcome to nginx</html>"))
    err = raised(make_client(stub))
    assert isinstance(err, ProviderError)
    assert "base URL" in str(err)


@pytest.mark.parametrize("body", ['{"id": "resp_1", "output": [', "", "Bad gateway"])
@pytest.mark.parametrize("make_client", [responses_client, chat_client])
def test_a_reply_that_says_json_and_is_not_is_a_provider_error(
    stub: StubServer, make_client: MakeClient, body: str
) -> None:
    # The SDK parses an application/json body unchecked: it raised JSONDecodeError, which the
    # run reported as "Internal error: JSONDecodeError".
    stub.enqueue(not_json(body))
    err = raised(make_client(stub))
    assert isinstance(err, ProviderError) and "not valid JSON" in str(err) and "base URL" in str(err)
    assert len(stub.requests) == 1  # not retried: the same server would say the same


@pytest.mark.parametrize(
    "reply",
    [
        unauthorized(f"Incorrect API key provided: {KEY}."),
        Reply(status=403, error_message=f"key {KEY} lacks access"),
        server_error(500, f"upstream said {KEY}"),
        rate_limited(message=f"limit for {KEY}"),
        Reply(status=400, error_message=f"bad request from {KEY}"),
        Reply(status=400, error_message=f"maximum context length exceeded for {KEY}"),
    ],
)
def test_api_key_never_appears_in_errors(stub: StubServer, reply: Reply) -> None:
    stub.enqueue(reply)
    err = raised(responses_client(stub))
    assert KEY not in str(err)
    assert KEY[:12] not in str(err)
    assert KEY not in repr(err)
    # The SDK error (which holds the request headers) is not chained on.
    assert err.__cause__ is None and err.__suppress_context__


def test_client_serves_concurrent_calls(stub: StubServer) -> None:
    calls = 4
    # Each request waits at the server until all four have arrived: the test passes only if
    # the one client really has them in flight at once.
    barrier = threading.Barrier(calls, timeout=10)

    def all_at_once(path: str, body: Any) -> Reply:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return server_error(500, f"the {calls} requests were never in flight at once")
        return Reply()

    stub.responder = all_at_once
    client = responses_client(stub)
    with ThreadPoolExecutor(max_workers=calls) as pool:
        results = list(pool.map(lambda _: client.complete(answer_request()), range(calls)))
    assert len(results) == calls
    assert stub.max_in_flight == calls


# -- every output shape ------------------------------------------------------------------------

SHAPE_PROMPT = "<INSTRUCTIONS>\nQuestions:\nQuestion 1: Who?\nQuestion 2: Where?\n</INSTRUCTIONS>\n\n<PAGE 4>\ntext\n</PAGE 4>"


@pytest.mark.parametrize("schema", OUTPUTS, ids=lambda s: s.WIRE_NAME)
@pytest.mark.parametrize("make_client", [responses_client, chat_client])
def test_every_output_shape_is_sent_as_its_strict_schema(
    stub: StubServer, make_client: MakeClient, schema: type[Output]
) -> None:
    completion = make_client(stub).complete(LLMRequest(prompt=SHAPE_PROMPT, schema=schema, model=""))
    body = stub.last.body
    if "text" in body:  # Responses
        assert body["text"]["format"] == {
            "type": "json_schema", "name": schema.WIRE_NAME, "schema": schema.WIRE_SCHEMA, "strict": True,
        }  # fmt: skip
        assert body["store"] is False
    else:
        assert body["response_format"]["json_schema"] == {
            "name": schema.WIRE_NAME, "schema": schema.WIRE_SCHEMA, "strict": True,
        }  # fmt: skip
    schema.parse(completion.text)  # the reply comes back in the shape asked


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_a_plain_text_reply_asks_for_no_structured_output(stub: StubServer, api: str) -> None:
    from rr_core.outputs import PlainRetrievalOut

    client = (
        chat_client(stub)
        if api == "chat"
        else OpenAIClient(model="gpt-4.1-mini", api_key=KEY, base_url=stub.url, max_retries=0)
    )
    stub.enqueue(Reply(text="Pages: 4, 2"))
    completion = client.complete(LLMRequest(prompt=PROMPT, schema=PlainRetrievalOut, model=""))
    body = stub.last.body
    assert "text" not in body and "response_format" not in body
    assert body["temperature"] == 0 and completion.temperature == 0.0 and completion.structured is False
    assert PlainRetrievalOut.parse(completion.text).pages == [4, 2]
