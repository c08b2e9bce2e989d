"""Batches, provider side: OpenAI Batch (Responses and Chat Completions) and Anthropic Message
Batches through the real SDKs against the loopback stub, and ``LocalBatch`` for free engines."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable

import pytest

from rr_core.errors import AuthError, ConfigError, LLMError, MissingKeyError, ProviderError
from rr_core.llm.anthropic_client import AnthropicClient
from rr_core.llm.base import BatchLine, BatchResult, LLMRequest
from rr_core.llm.batch import LocalBatch
from rr_core.llm.fake import ScriptedClient
from rr_core.llm.offline import OfflineEngine
from rr_core.llm.openai_client import OpenAIClient
from rr_core.llm.simulated import SimulatedReader
from rr_core.llm.structured import SDKAdapter
from rr_core.outputs import AnswerOut
from rr_core.prompts import build_layout, instructions
from tests.conftest import word_counter
from tests.stub_server import Reply, StubServer, rejects_structured, server_error, unauthorized

KEY = "sk-test-0123456789abcdefBATCHSECRET"
ANT_KEY = "sk-ant-test-0123456789abcdefBATCHSECRET"
KINDS = ("responses", "chat", "anthropic")


def make_client(kind: str, stub: StubServer) -> SDKAdapter:
    if kind == "responses":
        return OpenAIClient(model="gpt-4.1-mini", api_key=KEY, base_url=stub.url, max_retries=0)
    if kind == "chat":
        return OpenAIClient(model="llama-test", api_key=KEY, base_url=stub.url, api="chat", max_retries=0)
    return AnthropicClient(model="claude-test", api_key=ANT_KEY, base_url=stub.anthropic_url, max_retries=0)


def wire(kind: str) -> str:
    """The wire format of a kind of client (what the stub records batch lines under)."""
    return "messages" if kind == "anthropic" else kind


def key_of(i: int) -> str:
    """A call key as the runner makes them: sha256 hex, 64 characters."""
    return hashlib.sha256(f"call {i}".encode()).hexdigest()


def request(i: int) -> LLMRequest:
    prompt = f"Pages follow.\n<PAGE 1>\nThe sky is blue.\n</PAGE 1>\nQuestion: what is fact number {i}?\n"
    return LLMRequest(prompt=prompt, schema=AnswerOut, model="")


def lines(n: int) -> list[BatchLine]:
    return [BatchLine(key_of(i), request(i)) for i in range(n)]


def by_id(results: list[BatchResult]) -> dict[str, BatchResult]:
    ids = [r.custom_id for r in results]
    assert len(ids) == len(set(ids)), "a custom_id came back twice"
    return {r.custom_id: r for r in results}


def result_file_order(stub: StubServer, batch_id: str) -> list[str]:
    """The custom_ids in the order the stub wrote its result lines."""
    batch = stub.batches[batch_id]
    if batch.provider == "anthropic":
        data = batch.results or b""
    else:
        data = b"".join(stub.files[f][1] for f in (batch.output_file_id, batch.error_file_id) if f)
    return [json.loads(line)["custom_id"] for line in data.decode().splitlines() if line.strip()]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- submit, status, results -------------------------------------------------------------------


def test_a_batch_round_trip_gives_what_the_sync_calls_give(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(5), label="sweep 1")
    first = client.batch.status(batch_id)
    assert (first.state, first.total, first.done, first.failed) == ("in_progress", 5, 0, 0)
    assert not first.finished
    with pytest.raises(ProviderError, match="not"):
        list(client.batch.results(batch_id))

    assert stub.release_batch_items(2) == 2
    partway = client.batch.status(batch_id)
    assert partway.state == "in_progress"
    # OpenAI counts calls as they finish; Anthropic only once the whole batch has ended.
    assert partway.done == (0 if kind == "anthropic" else 2)

    stub.release_batch_items()
    final = client.batch.status(batch_id)
    assert (final.state, final.total, final.done, final.failed) == ("ended", 5, 5, 0)
    assert final.finished and final.provider_state in ("completed", "ended")

    results = by_id(list(client.batch.results(batch_id)))
    assert set(results) == {key_of(i) for i in range(5)}
    sync = make_client(kind, stub).complete(request(3))
    got = results[key_of(3)]
    assert got.kind == "succeeded" and got.error is None and got.completion is not None
    assert got.completion.text == sync.text
    assert got.completion.usage == sync.usage and got.completion.usage.output_tokens > 0
    assert got.completion.structured is sync.structured is True
    assert got.completion.temperature == sync.temperature
    assert stub.batch_submissions == {key_of(i): 1 for i in range(5)}


def test_each_line_is_the_body_the_sync_call_sends(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    client.batch.submit(lines(3), label="bodies")
    sent = stub.batch_lines(wire(kind))
    model = client.model
    assert [cid for cid, _ in sent] == [key_of(i) for i in range(3)]
    assert [body for _, body in sent] == [client.params(request(i), model, structured=True) for i in range(3)]  # type: ignore[attr-defined]


def test_every_responses_batch_body_sends_store_false(stub: StubServer) -> None:
    client = make_client("responses", stub)
    assert client.batch is not None
    client.batch.submit(lines(4), label="store")
    bodies = [body for _, body in stub.batch_lines("responses")]
    assert len(bodies) == 4 and all(body["store"] is False for body in bodies)
    upload = next(r for r in stub.requests if r.path.startswith("/v1/files"))
    assert b'"store":false' in upload.raw and b"purpose" in upload.raw


def test_openai_batches_go_to_the_endpoint_of_the_clients_api(stub: StubServer) -> None:
    for kind, endpoint in (("responses", "/v1/responses"), ("chat", "/v1/chat/completions")):
        client = make_client(kind, stub)
        assert client.batch is not None
        batch_id = client.batch.submit(lines(1), label=kind)
        create = [r for r in stub.requests if r.path == "/v1/batches"][-1].body
        assert create["endpoint"] == endpoint and create["completion_window"] == "24h"
        assert create["metadata"] == {"label": kind}
        assert stub.batches[batch_id].endpoint == endpoint


def test_no_api_key_in_any_recorded_body_file_or_metadata(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    secret = ANT_KEY if kind == "anthropic" else KEY
    batch_id = client.batch.submit(lines(2), label=f"run with {secret} in its name")
    stub.release_batch_items()
    list(client.batch.results(batch_id))
    for recorded in stub.requests:
        assert secret.encode() not in recorded.raw
    for _, data in stub.files.values():
        assert secret.encode() not in data
    assert secret not in json.dumps(stub.batches[batch_id].metadata)


def test_out_of_order_results_are_matched_by_custom_id(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(8), label="order")
    stub.release_batch_items()
    order = result_file_order(stub, batch_id)
    assert sorted(order) == sorted(key_of(i) for i in range(8))
    assert order != [key_of(i) for i in range(8)], "the stub should have shuffled the lines"
    results = by_id(list(client.batch.results(batch_id)))
    for i in range(8):
        completion = results[key_of(i)].completion
        assert completion is not None
        assert json.loads(completion.text)["question"] == f"what is fact number {i}?"


def test_one_errored_call_carries_the_providers_message(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    stub.fail_batch_item(key_of(2), Reply(status=400, error_message="max_tokens is too large for this model"))
    batch_id = client.batch.submit(lines(4), label="partial")
    stub.release_batch_items()
    status = client.batch.status(batch_id)
    assert (status.state, status.done, status.failed) == ("ended", 3, 1)
    results = by_id(list(client.batch.results(batch_id)))
    failed = results[key_of(2)]
    assert failed.kind == "errored" and failed.completion is None
    assert failed.error is not None and "max_tokens is too large for this model" in failed.error
    assert "HTTP 400" in failed.error
    assert [r.kind for k, r in results.items() if k != key_of(2)] == ["succeeded"] * 3


def test_an_expired_batch_keeps_the_released_calls_and_names_the_rest_expired(
    stub: StubServer, kind: str
) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(5), label="expiry")
    stub.release_batch_items(2)
    stub.expire_batches()
    status = client.batch.status(batch_id)
    assert status.state == "expired" and status.finished
    results = by_id(list(client.batch.results(batch_id)))
    assert set(results) == {key_of(i) for i in range(5)}
    kinds = {cid: r.kind for cid, r in results.items()}
    assert kinds == {key_of(i): "succeeded" if i < 2 else "expired" for i in range(5)}
    assert all(results[key_of(i)].error for i in range(2, 5))


def test_a_new_client_reads_the_results_of_a_batch_another_submitted(stub: StubServer, kind: str) -> None:
    """A restarted process: nothing in memory, the batch id only."""
    batch_id = make_client(kind, stub).batch.submit(lines(4), label="restart")  # type: ignore[union-attr]
    stub.release_batch_items(3)
    stub.expire_batches()
    fresh = make_client(kind, stub)
    assert fresh.batch is not None
    results = by_id(list(fresh.batch.results(batch_id)))
    assert {cid: r.kind for cid, r in results.items()} == {
        key_of(i): "succeeded" if i < 3 else "expired" for i in range(4)
    }
    completion = results[key_of(0)].completion
    assert completion is not None and completion.structured is True
    assert completion.temperature == make_client(kind, stub).complete(request(0)).temperature


def test_cancel_ends_the_batch_with_the_unanswered_calls_canceled(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(3), label="cancel")
    stub.release_batch_items(1)
    client.batch.cancel(batch_id)
    assert stub.batches[batch_id].state == "cancelling"
    status = client.batch.status(batch_id)
    assert status.state == "canceled" and status.finished
    results = by_id(list(client.batch.results(batch_id)))
    assert {cid: r.kind for cid, r in results.items()} == {
        key_of(i): "succeeded" if i == 0 else "canceled" for i in range(3)
    }


def test_cancel_works_after_the_run_was_stopped(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(2), label="stopped")
    client._cancel.set()
    client.batch.cancel(batch_id)  # not refused: stopping a run must be able to stop its batch
    assert stub.batches[batch_id].cancel_at is not None


# -- broken lines and failures --------------------------------------------------------------------


def test_a_malformed_result_line_errors_that_call_only(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    stub.corrupt_batch_item(key_of(1))  # names the call, carries no reply
    stub.corrupt_batch_item(key_of(2), '{"custom_id": "' + key_of(2) + '", "respo')  # cut off
    stub.corrupt_batch_item(key_of(3), "}{ not json, names nothing")
    batch_id = client.batch.submit(lines(5), label="malformed")
    stub.release_batch_items()
    results = by_id(list(client.batch.results(batch_id)))
    assert set(results) == {key_of(i) for i in range(5)}
    assert results[key_of(0)].kind == results[key_of(4)].kind == "succeeded"
    assert results[key_of(1)].kind == "errored" and "not a" in (results[key_of(1)].error or "")
    assert results[key_of(2)].kind == "errored" and "could not be read" in (results[key_of(2)].error or "")
    # A line that names no call leaves its call without a result: named, for the caller to redo.
    # (OpenAI: known from the input file; Anthropic: known to the client that submitted it.)
    assert results[key_of(3)].kind == "expired"


def test_a_call_openai_never_ran_is_expired_not_errored(stub: StubServer) -> None:
    client = make_client("responses", stub)
    assert client.batch is not None
    never = {
        "custom_id": key_of(1),
        "response": None,
        "error": {"code": "batch_expired", "message": "Not run."},
    }
    stub.corrupt_batch_item(key_of(1), json.dumps(never))
    batch_id = client.batch.submit(lines(2), label="never run")
    stub.release_batch_items()
    results = by_id(list(client.batch.results(batch_id)))
    assert results[key_of(1)].kind == "expired" and results[key_of(0)].kind == "succeeded"


def test_a_call_rejected_for_structured_output_is_resubmitted_without_it(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    word = "output_config" if kind == "anthropic" else "response_format 'json_schema'"
    stub.fail_batch_item(key_of(0), rejects_structured(f"{word} is not supported"))
    batch_id = client.batch.submit(lines(1), label="structured")
    stub.release_batch_items()
    assert [r.kind for r in client.batch.results(batch_id)] == ["errored"]
    client.batch.submit([BatchLine("again", request(0))], label="again")
    _, body = stub.batch_lines(wire(kind))[-1]
    assert not {"text", "response_format", "output_config"} & set(body)


def test_a_rejected_key_is_an_auth_error_and_creates_no_batch(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    stub.enqueue_batch_api(unauthorized())
    with pytest.raises(AuthError) as info:
        client.batch.submit(lines(2), label="auth")
    assert "rejected the API key" in str(info.value)
    assert KEY not in str(info.value) and ANT_KEY not in str(info.value)
    assert stub.batches == {} and not stub.batch_submissions


def test_no_key_at_all_is_a_missing_key_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingKeyError):
        OpenAIClient(model="gpt-4.1-mini", api_key=None)
    with pytest.raises(MissingKeyError):
        AnthropicClient(model="claude-test", api_key=None)


def test_a_server_error_while_polling_is_a_provider_error(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(1), label="poll")
    stub.enqueue_batch_api(server_error(503, "overloaded"))
    with pytest.raises(ProviderError, match="HTTP 503"):
        client.batch.status(batch_id)
    assert client.batch.status(batch_id).state == "in_progress"  # the next poll is fine


def test_an_unreachable_server_is_a_provider_error(refused_port: int) -> None:
    client = OpenAIClient(
        model="gpt-4.1-mini", api_key=KEY, base_url=f"http://127.0.0.1:{refused_port}/v1", max_retries=0
    )
    assert client.batch is not None
    with pytest.raises(ProviderError, match="Could not reach"):
        client.batch.submit(lines(1), label="down")


def test_a_server_without_the_batch_api_says_so(stub: StubServer) -> None:
    client = make_client("chat", stub)
    assert client.batch is not None
    stub.enqueue_batch_api(Reply(status=404, error_message="Not Found"))
    with pytest.raises(ProviderError, match="does not offer the Batch API"):
        client.batch.submit(lines(1), label="ollama")


def test_a_batch_openai_refuses_errors_every_call_with_its_reason(stub: StubServer) -> None:
    client = make_client("responses", stub)
    assert client.batch is not None
    bad = "".join(
        json.dumps({"custom_id": key_of(i), "method": "POST", "url": "/v1/embeddings", "body": {}}) + "\n"
        for i in range(2)
    )
    sdk = client._client
    uploaded = sdk.files.create(file=("bad.jsonl", bad.encode(), "application/jsonl"), purpose="batch")
    batch = sdk.batches.create(input_file_id=uploaded.id, endpoint="/v1/responses", completion_window="24h")
    assert client.batch.status(batch.id).state == "failed"
    results = by_id(list(client.batch.results(batch.id)))
    assert {r.kind for r in results.values()} == {"errored"} and set(results) == {key_of(0), key_of(1)}
    assert "OpenAI refused the batch" in (results[key_of(0)].error or "")
    assert "line 1" in (results[key_of(0)].error or "")


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ([], "at least one"),
        ([BatchLine("a b", request(0))], "letters"),
        ([BatchLine("x" * 65, request(0))], "letters"),
        ([BatchLine("same", request(0)), BatchLine("same", request(1))], "twice"),
    ],
)
def test_a_batch_the_provider_would_refuse_is_refused_before_sending(
    stub: StubServer, kind: str, bad: list[BatchLine], why: str
) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    with pytest.raises(ConfigError, match=why):
        client.batch.submit(bad, label="bad")
    assert stub.requests == []


# -- the stub itself --------------------------------------------------------------------------------


def test_the_stub_counts_submissions_from_many_threads(stub: StubServer) -> None:
    client = make_client("responses", stub)
    assert client.batch is not None
    batch = client.batch
    errors: list[BaseException] = []

    def submit(start: int) -> None:
        try:
            batch.submit([BatchLine(key_of(i), request(i)) for i in range(start, start + 5)], label="t")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(s,)) for s in (0, 3, 6, 9)]
    for t in threads:
        t.start()
    assert stub.wait_for_batches(4, timeout_s=60)
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    expected: dict[str, int] = {}
    for s in (0, 3, 6, 9):
        for i in range(s, s + 5):
            expected[key_of(i)] = expected.get(key_of(i), 0) + 1
    assert stub.batch_submissions == expected
    assert stub.pending_batch_items() == 20 and stub.release_batch_items() == 20
    assert stub.wait_until(lambda: all(b.state == "completed" for b in stub.batches.values()), 10)


def test_auto_complete_answers_a_batch_as_it_is_created(stub: StubServer, kind: str) -> None:
    stub.batch_auto_complete = True
    client = make_client(kind, stub)
    assert client.batch is not None
    batch_id = client.batch.submit(lines(3), label="auto")
    assert client.batch.status(batch_id).state == "ended"
    assert [r.kind for r in client.batch.results(batch_id)] == ["succeeded"] * 3


# -- free engines: LocalBatch ---------------------------------------------------------------------


def planted_request(question: str) -> LLMRequest:
    pages = [(1, "Cats sleep a lot."), (2, "The termination fee is 4.2 million euros."), (3, "Dogs bark.")]
    layout = build_layout(instructions("answer", question, top_k=2), pages, questions=[question], limit=2)
    return LLMRequest(prompt=layout.render(), schema=AnswerOut, model="offline", layout=layout)


@pytest.mark.parametrize(
    "make",
    [lambda: OfflineEngine(word_counter()), lambda: SimulatedReader(reach=10_000, counter=word_counter())],
)
def test_a_free_engine_batches_in_process_and_ends_at_once(make: Callable[[], OfflineEngine]) -> None:
    engine = make()
    assert isinstance(engine.batch, LocalBatch)
    questions = ["What is the termination fee?", "What do dogs do?"]
    batch_id = engine.batch.submit(
        [BatchLine(key_of(i), planted_request(q)) for i, q in enumerate(questions)], label="free"
    )
    assert batch_id.startswith("local-")
    status = engine.batch.status(batch_id)
    assert (status.state, status.total, status.done, status.failed) == ("ended", 2, 2, 0)
    assert "not a provider batch" in status.provider_state
    results = by_id(list(engine.batch.results(batch_id)))
    for i, question in enumerate(questions):
        completion = results[key_of(i)].completion
        assert completion is not None
        assert completion.text == engine.complete(planted_request(question)).text
    engine.batch.cancel(batch_id)  # nothing to stop
    assert engine.batch.status(batch_id).state == "ended"


def test_a_local_batch_another_process_held_is_expired_with_no_results() -> None:
    engine = OfflineEngine(word_counter())
    assert engine.batch is not None
    status = engine.batch.status("local-0000")
    assert status.state == "expired" and status.total == 0
    assert list(engine.batch.results("local-0000")) == []


def test_a_local_batch_records_a_failed_call_as_errored() -> None:
    client = ScriptedClient(
        ['{"answer": "x"}', ProviderError("scripted failure", provider="scripted")], batches=True
    )
    assert client.batch is not None
    batch_id = client.batch.submit([BatchLine("a", request(0)), BatchLine("b", request(1))], label="fake")
    results = by_id(list(client.batch.results(batch_id)))
    assert results["a"].kind == "succeeded" and results["b"].kind == "errored"
    assert results["b"].error == "scripted failure"
    assert client.batch.status(batch_id).failed == 1


def test_every_client_declares_whether_it_can_batch(stub: StubServer) -> None:
    assert ScriptedClient().batch is None
    for kind in KINDS:
        assert make_client(kind, stub).batch is not None
    # Declared on the type or set by the constructor: read, never probed.
    for client in (
        OfflineEngine(word_counter()),
        ScriptedClient(batches=True),
        make_client("responses", stub),
    ):
        assert "batch" in vars(client) or "batch" in vars(type(client))


def test_llm_errors_are_the_only_failures_a_batch_raises(stub: StubServer) -> None:
    client = make_client("anthropic", stub)
    assert client.batch is not None
    with pytest.raises(LLMError):
        client.batch.status("msgbatch_nope")


def test_every_batched_call_carries_temperature_0_as_the_sync_call_does(stub: StubServer, kind: str) -> None:
    client = make_client(kind, stub)
    assert client.batch is not None
    client.batch.submit(lines(3), label="sweep")
    sent = stub.batch_lines()
    assert len(sent) == 3 and all(body["temperature"] == 0 for _, body in sent)


def test_a_call_rejected_for_its_temperature_is_resubmitted_without_one(stub: StubServer, kind: str) -> None:
    """As the sync call does: a model that rejects a temperature is not sent one again (both
    providers' batches; Anthropic's said the call failed and went on sending it)."""
    client = make_client(kind, stub)
    assert client.batch is not None
    rejected = Reply(
        status=400,
        error_message="temperature is not supported with this model",
        error_type="invalid_request_error",
    )
    stub.fail_batch_item(key_of(0), rejected)
    batch_id = client.batch.submit(lines(1), label="temperature")
    stub.release_batch_items()
    assert [r.kind for r in client.batch.results(batch_id)] == ["errored"]
    client.batch.submit([BatchLine("again", request(0))], label="again")
    _, body = stub.batch_lines(wire(kind))[-1]
    assert "temperature" not in body
