"""The Anthropic adapter through the real SDK, over HTTP, against the loopback stub."""

from __future__ import annotations

import pytest

from rr_core.errors import (
    AuthError,
    ContextTooLongError,
    MissingKeyError,
    NotConnected,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ResponseParseError,
)
from rr_core.llm.anthropic_client import AnthropicClient
from rr_core.llm.base import LLMRequest, Usage
from rr_core.outputs import OUTPUTS, AnswerOut, Output, RetrievalOut
from tests.llm_fixtures import PROMPT, answer_request, raised, retrieve_request
from tests.stub_server import (
    Reply,
    StubServer,
    bare_usage,
    context_too_long,
    json_output,
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

KEY = "sk-ant-test-0123456789abcdefSECRET"


def client_for(stub: StubServer, timeout_s: float = 120.0) -> AnthropicClient:
    return AnthropicClient(
        model="claude-test", api_key=KEY, base_url=stub.anthropic_url, max_retries=0, timeout_s=timeout_s
    )


def message_body(content: list[dict[str, object]], stop_reason: str = "end_turn") -> dict[str, object]:
    return {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


# -- success ---------------------------------------------------------------------------------


def test_answer_sends_messages_request_with_output_schema(stub: StubServer) -> None:
    client = client_for(stub)
    completion = client.complete(answer_request(max_output_tokens=300))

    sent = stub.last
    assert client.name == "anthropic"
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "claude-test"
    assert sent.body["max_tokens"] == 300
    assert sent.body["messages"] == [{"role": "user", "content": PROMPT}]
    assert sent.body["output_config"] == {"format": {"type": "json_schema", "schema": ANSWER_SCHEMA}}
    # A raw body field: anthropic 2.12's messages.create has no temperature parameter.
    assert sent.body["temperature"] == 0
    assert completion.temperature == 0.0 and client.identity()["temperature"] == 0.0
    assert completion.structured is True
    assert completion.model == "claude-test"
    answer = parse_answer(completion.text)
    assert (answer.answer, answer.page_number, answer.question) == (
        "stub answer",
        1,
        "What colour is the sky?",
    )


def test_retrieval_uses_retrieval_schema(stub: StubServer) -> None:
    completion = client_for(stub).complete(retrieve_request())
    assert stub.last.body["output_config"]["format"]["schema"] == RETRIEVAL_SCHEMA
    assert parse_retrieval(completion.text).pages == [1, 2]


def test_text_blocks_are_concatenated_and_other_blocks_ignored(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            body=message_body(
                [
                    {"type": "thinking", "thinking": "hmm {not json}", "signature": "s"},
                    {"type": "text", "text": '{"question": "q", "answer": '},
                    {"type": "text", "text": '"blue", "page": "3"}'},
                ]
            )
        )
    )
    completion = client_for(stub).complete(answer_request())
    assert completion.text == '{"question": "q", "answer": "blue", "page": "3"}'
    assert parse_answer(completion.text).page_number == 3


def test_key_and_base_url_come_from_environment(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.anthropic_url)
    AnthropicClient(model="claude-test", max_retries=0).complete(answer_request())
    assert stub.last.headers["authorization"] == f"Bearer {KEY}"


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(MissingKeyError, match="ANTHROPIC_API_KEY") as info:
        AnthropicClient(model="claude-test")
    assert info.value.provider == "anthropic"


def test_falls_back_when_structured_output_is_rejected(stub: StubServer) -> None:
    stub.enqueue(rejects_structured("output_config.format: this model does not support structured outputs"))
    client = client_for(stub)

    first = client.complete(answer_request())
    second = client.complete(answer_request())

    bodies = stub.bodies("messages")
    assert "output_config" in bodies[0]
    assert "output_config" not in bodies[1] and "output_config" not in bodies[2]
    assert first.structured is False and second.structured is False
    assert parse_answer(first.text).answer == "stub answer"


def test_temperature_is_dropped_once_the_model_rejects_it(stub: StubServer) -> None:
    client = client_for(stub)
    stub.enqueue(
        Reply(
            status=400,
            error_message="`temperature` is deprecated for this model.",
            error_type="invalid_request_error",
        )
    )
    first = client.complete(answer_request())
    second = client.complete(answer_request())
    bodies = stub.bodies("messages")
    assert len(bodies) == 3 and bodies[0]["temperature"] == 0
    assert "temperature" not in bodies[1] and "temperature" not in bodies[2]  # remembered
    assert first.temperature is None and second.temperature is None
    assert "output_config" in bodies[1]  # structured output was not the problem
    # The cache identity is the configuration: the rejection changes what is sent, not the key.
    assert client.identity() == client_for(stub).identity()


def test_a_batch_request_carries_temperature_zero() -> None:
    client = AnthropicClient(model="claude-test", api_key=KEY, max_retries=0)
    body = client.params(answer_request(), "claude-test", structured=True)
    assert body["temperature"] == 0


def test_a_plain_text_reply_asks_for_no_structured_output(stub: StubServer) -> None:
    from rr_core.outputs import PlainAnswerOut

    stub.enqueue(Reply(text="Answer: blue\nPage: 3"))
    completion = client_for(stub).complete(LLMRequest(prompt=PROMPT, schema=PlainAnswerOut, model=""))
    assert "output_config" not in stub.last.body and stub.last.body["temperature"] == 0
    assert completion.structured is False
    parsed = PlainAnswerOut.parse(completion.text)
    assert (parsed.answer, parsed.page_number) == ("blue", 3)


# -- usage -----------------------------------------------------------------------------------


def test_cache_reads_and_writes_are_added_to_uncached_input(stub: StubServer) -> None:
    stub.enqueue(
        Reply(
            usage={
                "input_tokens": 200,
                "cache_read_input_tokens": 800,
                "cache_creation_input_tokens": 100,
                "output_tokens": 40,
            }
        )
    )
    usage = client_for(stub).complete(answer_request()).usage
    assert usage == Usage(input_tokens=200, cached_tokens=800, cache_write_tokens=100, output_tokens=40)
    assert usage.prompt_tokens == 1100


def test_missing_cache_fields_give_zeros(stub: StubServer) -> None:
    stub.enqueue(
        bare_usage(), Reply(usage={"input_tokens": 30, "output_tokens": 2, "cache_read_input_tokens": None})
    )
    client = client_for(stub)
    bare = client.complete(answer_request()).usage
    assert bare.cached_tokens == 0 and bare.cache_write_tokens == 0 and bare.input_tokens > 0
    assert client.complete(answer_request()).usage == Usage(input_tokens=30, output_tokens=2)


def test_null_usage_gives_zeros(stub: StubServer) -> None:
    stub.enqueue(Reply(usage=None))
    assert client_for(stub).complete(answer_request()).usage == Usage()


# -- faults ----------------------------------------------------------------------------------


def test_rate_limit_says_to_wait_and_passes_on_retry_after(stub: StubServer) -> None:
    stub.enqueue(rate_limited(retry_after=30))
    err = raised(client_for(stub))
    assert isinstance(err, RateLimitError)
    assert (err.status, err.provider) == (429, "anthropic")
    assert "30 s" in str(err) and "lower concurrency" in str(err)


@pytest.mark.parametrize("status", [500, 529])
def test_server_errors_are_provider_errors_with_status(stub: StubServer, status: int) -> None:
    stub.enqueue(server_error(status, "Overloaded"))
    err = raised(client_for(stub))
    assert type(err) is ProviderError
    assert err.status == status
    assert "Overloaded" in str(err)


def test_rejected_key_is_an_auth_error(stub: StubServer) -> None:
    stub.enqueue(unauthorized("invalid x-api-key"))
    err = raised(client_for(stub))
    assert isinstance(err, AuthError)
    assert err.status == 401
    assert str(err).startswith("Anthropic rejected the API key (HTTP 401") and "ANTHROPIC_API_KEY" in str(err)


def test_prompt_too_long_suggests_chunked_rr(stub: StubServer) -> None:
    stub.enqueue(context_too_long("anthropic"))
    err = raised(client_for(stub))
    assert isinstance(err, ContextTooLongError)
    assert err.status == 400 and "chunked-rr" in str(err)
    assert len(stub.requests) == 1


def test_context_window_stop_reason_without_text(stub: StubServer) -> None:
    stub.enqueue(Reply(body=message_body([], stop_reason="model_context_window_exceeded")))
    assert isinstance(raised(client_for(stub)), ContextTooLongError)


def test_empty_output_at_token_limit_says_to_raise_it(stub: StubServer) -> None:
    stub.enqueue(Reply(body=message_body([], stop_reason="max_tokens")))
    err = raised(client_for(stub))
    assert isinstance(err, ProviderError)
    assert "returned no text" in str(err) and "maximum output tokens" in str(err)


def test_slow_server_is_a_timeout(stub: StubServer) -> None:
    stub.enqueue(slow(3.0))
    err = raised(client_for(stub, timeout_s=0.3))
    assert isinstance(err, ProviderTimeout)
    assert "0.3 s" in str(err)


def test_connection_refused_names_the_url(refused_port: int) -> None:
    url = f"http://127.0.0.1:{refused_port}"
    err = raised(AnthropicClient(model="claude-test", api_key=KEY, base_url=url, max_retries=0))
    assert type(err) is NotConnected  # nothing sent: nothing billed
    assert f"Could not reach {url}" in str(err)


def test_malformed_output_passes_through_for_the_parser(stub: StubServer) -> None:
    stub.enqueue(malformed("I think it is blue."))
    completion = client_for(stub).complete(answer_request())
    assert completion.text == "I think it is blue."
    with pytest.raises(ResponseParseError):
        parse_answer(completion.text)


def test_out_of_range_pages_are_returned_as_sent(stub: StubServer) -> None:
    # Range checks belong to the method layer; the adapter must not alter the output.
    stub.enqueue(json_output({"question": "q", "pages": [999, 2]}))
    completion = client_for(stub).complete(retrieve_request())
    assert parse_retrieval(completion.text).pages == [999, 2]


def test_reply_that_is_not_the_api_is_a_provider_error(stub: StubServer) -> None:
    stub.enqueue(Reply(body="<html>Welcome to nginx</html>"))
    err = raised(client_for(stub))
    assert isinstance(err, ProviderError) and "base URL" in str(err)


@pytest.mark.parametrize("body", ['{"id": "msg_1", "content": [', "", "Bad gateway"])
def test_a_reply_that_says_json_and_is_not_is_a_provider_error(stub: StubServer, body: str) -> None:
    stub.enqueue(not_json(body))
    err = raised(client_for(stub))
    assert isinstance(err, ProviderError) and "not valid JSON" in str(err) and "base URL" in str(err)
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        unauthorized(f"invalid x-api-key: {KEY}"),
        Reply(status=403, error_message=f"key {KEY} lacks permission"),
        server_error(529, f"overloaded for {KEY}"),
        rate_limited(message=f"limit for {KEY}"),
        Reply(status=400, error_message=f"prompt is too long for {KEY}"),
    ],
)
def test_api_key_never_appears_in_errors(stub: StubServer, reply: Reply) -> None:
    stub.enqueue(reply)
    err = raised(client_for(stub))
    assert KEY not in str(err) and KEY[:14] not in str(err)
    assert KEY not in repr(err)
    assert err.__cause__ is None and err.__suppress_context__


# -- every output shape ------------------------------------------------------------------------

SHAPE_PROMPT = "<INSTRUCTIONS>\nQuestions:\nQuestion 1: Who?\nQuestion 2: Where?\n</INSTRUCTIONS>\n\n<PAGE 4>\ntext\n</PAGE 4>"


@pytest.mark.parametrize("schema", OUTPUTS, ids=lambda s: s.WIRE_NAME)
def test_every_output_shape_is_sent_as_its_schema(stub: StubServer, schema: type[Output]) -> None:
    completion = client_for(stub).complete(LLMRequest(prompt=SHAPE_PROMPT, schema=schema, model=""))
    assert stub.last.body["output_config"] == {
        "format": {"type": "json_schema", "schema": schema.WIRE_SCHEMA}
    }
    schema.parse(completion.text)  # the reply comes back in the shape asked
