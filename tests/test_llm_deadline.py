"""A provider call ends by its deadline, retries and slow servers included; waits are
reported and can be cancelled. Both adapters, real SDKs, the loopback stub.

No wall-clock assertions: a call that ignores its deadline shows up as a request count, a
body that went out whole, or a worker thread still running after a generous bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from rr_core.errors import AuthError, LLMError, ProviderError, ProviderTimeout, RateLimitError, RunCancelled
from rr_core.llm import errors_map
from rr_core.llm.anthropic_client import AnthropicClient
from rr_core.llm.base import Completion
from rr_core.llm.gemini_client import GeminiClient
from rr_core.llm.openai_client import OpenAIClient
from rr_core.llm.structured import SDKAdapter
from tests.llm_fixtures import answer_request
from tests.stub_server import Reply, StubServer, dripping, hanging, rate_limited, server_error, unauthorized

KEY = "sk-test-deadline-0123456789SECRET"
# Far above any deadline used here: a worker still running after it ignored its deadline.
GUARD_S = 30.0

Waits = list[tuple[float, str]]


def openai_client(stub: StubServer, **kwargs: Any) -> SDKAdapter:
    return OpenAIClient(model="gpt-test", api_key=KEY, base_url=stub.url, **kwargs)


def anthropic_client(stub: StubServer, **kwargs: Any) -> SDKAdapter:
    return AnthropicClient(model="claude-test", api_key=KEY, base_url=stub.anthropic_url, **kwargs)


def gemini_client(stub: StubServer, **kwargs: Any) -> SDKAdapter:
    return GeminiClient(model="gemini-test", api_key=KEY, base_url=stub.root, **kwargs)


MakeClient = Callable[..., SDKAdapter]
CLIENTS = pytest.mark.parametrize(
    "make", [openai_client, anthropic_client, gemini_client], ids=["openai", "anthropic", "gemini"]
)


def call_bounded(client: SDKAdapter, timeout_s: float) -> Completion | BaseException:
    """The call's result or error, from a worker thread that must finish within GUARD_S."""
    outcome: list[Completion | BaseException] = []

    def work() -> None:
        try:
            outcome.append(client.complete(answer_request(timeout_s=timeout_s)))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(GUARD_S)
    assert not worker.is_alive(), f"the call outlived its {timeout_s:g} s deadline by far"
    return outcome[0]


def _recorded(stub: StubServer, limit_s: float = 60.0) -> int:
    """How many requests the stub has recorded, once it has recorded one. The client's thread
    has ended (``call_bounded``): what it sent is sent; the stub reads each request in a
    thread of its own, which on a busy machine may come after the client's 1 s deadline."""
    end = time.monotonic() + limit_s
    while not stub.requests and time.monotonic() < end:
        time.sleep(0.02)
    return len(stub.requests)


@CLIENTS
def test_a_dripping_server_cannot_hold_a_call_past_its_deadline(stub: StubServer, make: MakeClient) -> None:
    # A well-formed reply whose body comes a byte every 50 ms: over two minutes in all.
    stub.enqueue(dripping(0.05, Reply(text="x" * 2_500)))
    result = call_bounded(make(stub, max_retries=2), timeout_s=1)
    assert isinstance(result, ProviderTimeout), result
    assert "did not answer within 1 s" in str(result)
    assert _recorded(stub) == 1  # the deadline was spent: no retry
    assert stub.dripped < 2_500  # the body never went out whole


@CLIENTS
def test_a_hung_server_ends_the_call_at_its_deadline_without_retries(
    stub: StubServer, make: MakeClient
) -> None:
    stub.enqueue(hanging(), hanging(), hanging())
    result = call_bounded(make(stub, max_retries=2), timeout_s=1)
    assert isinstance(result, ProviderTimeout)
    assert "did not answer within 1 s" in str(result)
    assert _recorded(stub) == 1  # not three attempts of 1 s each


@CLIENTS
def test_a_retry_after_longer_than_the_deadline_fails_at_once_saying_so(
    stub: StubServer, make: MakeClient
) -> None:
    waits: Waits = []
    stub.enqueue(rate_limited(retry_after=90), Reply())
    result = call_bounded(make(stub, max_retries=2, on_wait=lambda s, r: waits.append((s, r))), timeout_s=5)
    assert isinstance(result, RateLimitError)
    message = str(result)
    assert "asked to wait 90 s before a retry (HTTP 429)" in message
    assert "5 s timeout" in message and "not retried" in message
    assert len(stub.requests) == 1 and waits == []


@CLIENTS
def test_a_short_retry_after_is_waited_for_and_reported(stub: StubServer, make: MakeClient) -> None:
    waits: Waits = []
    limited = Reply(status=429, headers={"retry-after-ms": "50"}, error_message="slow down")
    stub.enqueue(limited, Reply())
    completion = make(stub, max_retries=2, on_wait=lambda s, r: waits.append((s, r))).complete(
        answer_request()
    )
    assert completion.text
    assert len(stub.requests) == 2
    assert waits == [(0.05, "rate limited (HTTP 429); retry 1 of 2")]


@CLIENTS
def test_a_server_error_is_retried_after_a_backoff_and_reported(stub: StubServer, make: MakeClient) -> None:
    waits: Waits = []
    stub.enqueue(server_error(503), Reply())
    completion = make(stub, max_retries=1, on_wait=lambda s, r: waits.append((s, r))).complete(
        answer_request()
    )
    assert completion.text and len(stub.requests) == 2
    assert waits == [(0.5, "server error (HTTP 503); retry 1 of 1")]


@CLIENTS
def test_retries_stop_at_max_retries(stub: StubServer, make: MakeClient) -> None:
    fast = Reply(status=500, headers={"retry-after-ms": "1"}, error_message="boom")
    stub.enqueue(fast, fast, fast, fast)
    with pytest.raises(ProviderError, match="HTTP 500"):
        make(stub, max_retries=2).complete(answer_request())
    assert len(stub.requests) == 3


@CLIENTS
def test_the_server_can_say_not_to_retry(stub: StubServer, make: MakeClient) -> None:
    stub.enqueue(Reply(status=500, headers={"x-should-retry": "false"}), Reply())
    with pytest.raises(ProviderError):
        make(stub, max_retries=2).complete(answer_request())
    assert len(stub.requests) == 1


@CLIENTS
def test_cancel_stops_a_wait_for_retry(stub: StubServer, make: MakeClient) -> None:
    cancel = threading.Event()
    stub.enqueue(rate_limited(retry_after=30), Reply())
    client = make(stub, max_retries=2, cancel=cancel, on_wait=lambda s, r: cancel.set())
    result = call_bounded(client, timeout_s=60)
    assert isinstance(result, RunCancelled)
    assert len(stub.requests) == 1


@CLIENTS
def test_cancel_stops_a_call_while_the_server_is_silent(make: MakeClient) -> None:
    arrived = threading.Event()

    def respond(path: str, body: Any) -> Reply:
        arrived.set()
        return hanging()

    cancel = threading.Event()
    with StubServer(responder=respond) as stub:
        client = make(stub, max_retries=2, cancel=cancel)
        outcome: list[BaseException] = []

        def work() -> None:
            try:
                client.complete(answer_request(timeout_s=120))
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                outcome.append(exc)

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        assert arrived.wait(GUARD_S)
        cancel.set()
        worker.join(GUARD_S)
        assert not worker.is_alive()
        assert len(stub.requests) == 1
    assert len(outcome) == 1 and isinstance(outcome[0], RunCancelled)


@CLIENTS
def test_a_cancelled_client_sends_nothing(stub: StubServer, make: MakeClient) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RunCancelled):
        make(stub, cancel=cancel).complete(answer_request())
    assert stub.requests == []


def test_the_compatible_servers_401_names_it_once_and_says_which_key_helps(stub: StubServer) -> None:
    stub.enqueue(unauthorized("bad token"))
    client = OpenAIClient(model="llama", base_url=stub.url, api="chat", max_retries=0)
    with pytest.raises(AuthError) as info:
        client.complete(answer_request())
    message = str(info.value)
    assert message.startswith(f"The server at {stub.url} rejected the API key (HTTP 401: bad token).")
    assert "The The" not in message and "Check OPENAI_API_KEY" not in message
    assert "RR_COMPAT_API_KEY" in message and "--api-key-env" in message


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "90"}, 90.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_in_seconds(headers: dict[str, str], seconds: float | None) -> None:
    assert errors_map.retry_after_seconds(headers) == seconds


def test_retry_after_as_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    seconds = errors_map.retry_after_seconds({"retry-after": when})
    assert seconds is not None and 100 < seconds <= 120


def test_errors_keep_their_kind_when_out_of_time() -> None:
    error = RateLimitError("x", provider="openai", status=429)
    late = errors_map.out_of_time(error, label="OpenAI", wait=90, left=4.2, timeout_s=5)
    assert isinstance(late, RateLimitError) and isinstance(late, LLMError)
    assert late.status == 429 and late.provider == "openai"
    assert str(late).startswith(
        "OpenAI asked to wait 90 s before a retry (HTTP 429): longer than the 4 s left"
    )


# -- every connection pool is bounded -----------------------------------------------------------


def test_every_transport_of_the_client_must_be_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2

    from rr_core.llm.deadline import _Backend, bounded_http_client

    class Unpooled(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(200)

    # One transport bounded and one that cannot be was accepted: its requests had no deadline.
    client = httpx2.Client(mounts={"http://proxied.example": Unpooled()})
    with pytest.raises(RuntimeError, match=r"http://proxied\.example.*Unpooled"):
        bounded_http_client(client)
    # A proxy from the environment is a pool of its own: every one is wrapped.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost")
    proxied = bounded_http_client(httpx2.Client())
    pools = [proxied._transport, *(t for t in proxied._mounts.values() if t is not None)]
    assert len(pools) >= 2
    assert all(isinstance(t._pool._network_backend, _Backend) for t in pools)  # type: ignore[attr-defined]
