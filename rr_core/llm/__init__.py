"""Provider clients behind one seam (``LLMClient``) and the factory that picks one."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from rr_core.errors import ConfigError
from rr_core.llm.base import Completion, LLMClient, LLMRequest, Usage

if TYPE_CHECKING:
    from rr_core.llm.fake import ScriptedClient
    from rr_core.llm.offline import OFFLINE_LABEL, OfflineEngine

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


PROVIDERS = ("offline", "openai", "anthropic", "openai-compatible")

DEFAULT_MODELS = {
    "offline": "offline",
    "openai": "gpt-4.1-mini",
    "anthropic": "claude-sonnet-5-5",
    "openai-compatible": "llama3.1",
}

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

__all__ = [
    "DEFAULT_MODELS",
    "KEY_VARIABLES",
    "OFFLINE_LABEL",
    "PROVIDERS",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "OfflineEngine",
    "ScriptedClient",
    "Usage",
    "default_provider",
    "make_client",
]


def default_provider() -> str:
    """The provider to start with: a paid one only when its key is in the environment."""
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    return "offline"


def make_client(
    provider: str,
    *,
    model: str,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float = 120.0,
    max_retries: int = 2,
) -> LLMClient:
    """A fresh client for the provider (clients are made per run, never cached)."""
    if provider == "offline":
        from rr_core.llm.offline import OfflineEngine

        return OfflineEngine()
    if provider in ("openai", "openai-compatible"):
        from rr_core.llm.openai_client import OpenAIClient

        if provider == "openai-compatible" and not api_key:
            # Never send the environment's OpenAI key to some other server.
            api_key = "not-needed"
        return OpenAIClient(
            model=model,
            api_key=api_key or None,
            base_url=base_url or None,
            api="responses" if provider == "openai" else "chat",
            max_retries=max_retries,
            timeout_s=timeout_s,
        )
    if provider == "anthropic":
        from rr_core.llm.anthropic_client import AnthropicClient

        return AnthropicClient(
            model=model,
            api_key=api_key or None,
            base_url=base_url or None,
            max_retries=max_retries,
            timeout_s=timeout_s,
        )
    raise ConfigError(f"unknown provider {provider!r}; choose one of: {', '.join(PROVIDERS)}")
