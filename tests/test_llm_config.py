"""The key rule (rr_core/llm/config.py): one for the CLI and the app.

A configured OpenAI or Anthropic key goes only to its official server or the server configured
beside it; a server URL given for the run gets only a key given with it; an OpenAI-compatible
server gets only a key given for it (or RR_COMPAT_API_KEY for the configured one).
"""

from __future__ import annotations

import pytest

from rr_core.errors import ConfigError, MissingKeyError
from rr_core.llm import make_client
from rr_core.llm.config import ProviderConfig, same_server
from tests.llm_fixtures import answer_request
from tests.stub_server import StubServer

ENV_OPENAI = "sk-env-openai-DO-NOT-SEND-0123456789"
ENV_ANTHROPIC = "sk-ant-env-DO-NOT-SEND-0123456789"
COMPAT = "compat-key-0123456789"


def lookup(values: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda name: values.get(name)


@pytest.mark.parametrize(
    ("provider", "variable", "key"),
    [("openai", "OPENAI_API_KEY", ENV_OPENAI), ("anthropic", "ANTHROPIC_API_KEY", ENV_ANTHROPIC)],
)
def test_the_configured_key_never_goes_to_a_given_server_url(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch, provider: str, variable: str, key: str
) -> None:
    monkeypatch.setenv(variable, key)
    url = stub.url if provider == "openai" else stub.anthropic_url
    with pytest.raises(MissingKeyError) as info:
        make_client(provider, model="m", base_url=url)
    message = str(info.value)
    assert "needs a key given with it" in message and f"configured {variable} is never sent" in message
    assert key not in message
    assert stub.requests == []


def test_a_given_server_url_gets_the_key_given_with_it(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_OPENAI)
    make_client("openai", model="m", base_url=stub.url, api_key="sk-given-for-this-server").complete(
        answer_request()
    )
    assert stub.last.headers["authorization"] == "Bearer sk-given-for-this-server"


def test_the_configured_key_goes_to_the_server_configured_beside_it(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_OPENAI)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    make_client("openai", model="m").complete(answer_request())
    # The same server given again (as the app passes its configured URL) is still its own.
    make_client("openai", model="m", base_url=stub.url + "/").complete(answer_request())
    assert [r.headers["authorization"] for r in stub.requests] == [f"Bearer {ENV_OPENAI}"] * 2


def test_the_official_url_given_by_hand_may_use_the_configured_key() -> None:
    config = ProviderConfig("openai", "m", base_url="https://api.openai.com/v1/")
    resolved = config.resolve(lookup({"OPENAI_API_KEY": ENV_OPENAI}))
    assert resolved.api_key == ENV_OPENAI and resolved.base_url == "https://api.openai.com/v1/"


def test_the_apps_secrets_count_as_configured() -> None:
    resolved = ProviderConfig("anthropic", "m").resolve(lookup({"ANTHROPIC_API_KEY": ENV_ANTHROPIC}))
    assert resolved.api_key == ENV_ANTHROPIC and resolved.base_url is None
    with pytest.raises(MissingKeyError, match="set ANTHROPIC_API_KEY"):
        ProviderConfig("anthropic", "m").resolve(lookup({}))


def test_a_compatible_server_never_gets_the_openai_key_nor_a_placeholder(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_OPENAI)
    make_client("openai-compatible", model="llama", base_url=stub.url).complete(answer_request())
    assert "authorization" not in stub.last.headers


def test_a_compatible_server_gets_the_key_given_for_it(stub: StubServer) -> None:
    make_client("openai-compatible", model="llama", base_url=stub.url, api_key=COMPAT).complete(
        answer_request()
    )
    assert stub.last.headers["authorization"] == f"Bearer {COMPAT}"


def test_the_compat_key_goes_to_the_configured_compatible_server_only(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RR_COMPAT_API_KEY", COMPAT)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    make_client("openai-compatible", model="llama").complete(answer_request())
    assert stub.last.headers["authorization"] == f"Bearer {COMPAT}"
    other = ProviderConfig("openai-compatible", "llama", base_url="http://elsewhere.example/v1")
    resolved = other.resolve(lookup({"RR_COMPAT_API_KEY": COMPAT, "OPENAI_BASE_URL": stub.url}))
    assert resolved.api_key is None


def test_a_compatible_server_needs_a_url() -> None:
    with pytest.raises(ConfigError, match="--base-url URL or OPENAI_BASE_URL"):
        ProviderConfig("openai-compatible", "llama").resolve(lookup({}))


def test_unknown_provider_and_offline() -> None:
    with pytest.raises(ConfigError, match="unknown provider"):
        ProviderConfig("acme", "m").resolve(lookup({}))
    assert ProviderConfig("offline", "offline", api_key="x").resolve(lookup({})).api_key is None


def test_the_key_is_not_in_the_repr() -> None:
    assert ENV_OPENAI not in repr(ProviderConfig("openai", "m", api_key=ENV_OPENAI))


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/", True),
        ("https://API.openai.com:443/v1", "https://api.openai.com/v1", True),
        ("http://api.openai.com/v1", "https://api.openai.com/v1", False),
        ("https://api.openai.com.evil.example/v1", "https://api.openai.com/v1", False),
        ("https://api.openai.com/v1/../x", "https://api.openai.com/v1", False),
        ("https://api.openai.com/v1", None, False),
        ("http://[::1", "http://[::1", False),
    ],
)
def test_same_server(a: str, b: str | None, same: bool) -> None:
    assert same_server(a, b) is same
