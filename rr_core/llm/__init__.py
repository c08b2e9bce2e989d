"""Provider clients behind one seam (``LLMClient``) and the factory that picks one."""

from __future__ import annotations

import importlib
import os
import threading
from typing import TYPE_CHECKING, Any

# Only the seam's light modules: the adapters (and the HTTP stack they bring) load when a
# client is made, so the offline engine and the screens never import them.
from rr_core.llm.base import Completion, LLMClient, LLMRequest, OnWait, Usage
from rr_core.llm.config import KEY_VARIABLES, PROVIDERS, Lookup, ProviderConfig, environment
from rr_core.llm.providers import (
    ALL_PROVIDERS,
    DEFAULT_PRICE_MODEL,
    REGISTRY,
    PriceAs,
    ProviderInfo,
    describe_provider,
    get_provider,
    starting_provider,
)

if TYPE_CHECKING:
    from rr_core.llm.fake import ScriptedClient
    from rr_core.llm.offline import OFFLINE_LABEL, OfflineEngine
    from rr_core.tokens import TokenCounter

# The engine and the fake load on first use, so that what only needs the seam's types (costs,
# the CLI's `pages`) does not load the BM25 reader.
_LAZY = {
    "OFFLINE_LABEL": "rr_core.llm.offline",
    "OfflineEngine": "rr_core.llm.offline",
    "ScriptedClient": "rr_core.llm.fake",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


# Each engine's default model (the registry's; kept as a mapping for callers that index it).
DEFAULT_MODELS = {name: info.default_model for name, info in REGISTRY.items()}

__all__ = [
    "ALL_PROVIDERS",
    "DEFAULT_MODELS",
    "DEFAULT_PRICE_MODEL",
    "KEY_VARIABLES",
    "OFFLINE_LABEL",
    "PROVIDERS",
    "REGISTRY",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "OfflineEngine",
    "OnWait",
    "PriceAs",
    "ProviderConfig",
    "ProviderInfo",
    "ScriptedClient",
    "Usage",
    "client_for",
    "default_provider",
    "describe_provider",
    "engine_client",
    "get_provider",
    "make_client",
    "starting_provider",
]


def default_provider() -> str:
    """The provider to start with: a paid one only when its key is in the environment."""
    return starting_provider(os.environ.get).name


def make_client(
    provider: str,
    *,
    model: str,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float = 120.0,
    max_retries: int = 2,
    on_wait: OnWait | None = None,
    cancel: threading.Event | None = None,
    configured: Lookup = environment,
) -> LLMClient:
    """A fresh client for the provider (clients are made per run, never cached).

    ``api_key`` and ``base_url`` are those given for this run (typed, or named on the command
    line); the configured ones come from ``configured`` (the environment by default; the app
    passes its environment-or-secrets lookup) as the key rule in ``rr_core.llm.config`` allows.
    ``timeout_s`` is each call's deadline, retries included; ``on_wait(seconds, reason)`` hears
    of waits before a retry; a set ``cancel`` event stops calls in flight.
    """
    config = ProviderConfig(provider, model, api_key=api_key, base_url=base_url)
    return client_for(
        config,
        timeout_s=timeout_s,
        max_retries=max_retries,
        on_wait=on_wait,
        cancel=cancel,
        configured=configured,
    )


def engine_client(
    provider: str,
    *,
    model: str,
    counter: TokenCounter | None = None,
    reach: int = 4_000,
    **options: Any,
) -> LLMClient:
    """A client for any registered engine, the Lab's simulated reader included: the free
    engines count with ``counter`` (None: their default; the simulated reader sees pages ``reach`` tokens from a
    copy of the instructions); a provider's client is ``make_client``'s, with ``options``."""
    if provider == "simulated":
        from rr_core.llm.simulated import SimulatedReader

        return SimulatedReader(reach=reach, counter=counter)
    if provider == "offline":
        from rr_core.llm.offline import OfflineEngine

        return OfflineEngine(counter)
    return make_client(provider, model=model, **options)


def client_for(
    config: ProviderConfig,
    *,
    timeout_s: float = 120.0,
    max_retries: int = 2,
    on_wait: OnWait | None = None,
    cancel: threading.Event | None = None,
    configured: Lookup = environment,
) -> LLMClient:
    """A fresh client for ``config``, its key and server resolved by the key rule."""
    resolved = config.resolve(configured)
    if resolved.provider == "offline":
        from rr_core.llm.offline import OfflineEngine

        return OfflineEngine()
    if resolved.provider in ("openai", "openai-compatible"):
        from rr_core.llm.openai_client import OpenAIClient

        return OpenAIClient(
            model=resolved.model,
            api_key=resolved.api_key,
            base_url=resolved.base_url,
            api="responses" if resolved.provider == "openai" else "chat",
            max_retries=max_retries,
            timeout_s=timeout_s,
            on_wait=on_wait,
            cancel=cancel,
        )
    if resolved.provider == "gemini":
        from rr_core.llm.gemini_client import GeminiClient

        return GeminiClient(
            model=resolved.model,
            api_key=resolved.api_key,
            base_url=resolved.base_url,
            max_retries=max_retries,
            timeout_s=timeout_s,
            on_wait=on_wait,
            cancel=cancel,
        )
    from rr_core.llm.anthropic_client import AnthropicClient

    return AnthropicClient(
        model=resolved.model,
        api_key=resolved.api_key,
        base_url=resolved.base_url,
        max_retries=max_retries,
        timeout_s=timeout_s,
        on_wait=on_wait,
        cancel=cancel,
    )
