"""Turning what a provider said into the ``LLMError`` a user can act on.

Shared by the provider adapters; knows no SDK. Every message passes through ``redact`` so an
API key never reaches the UI, a log or the ledger.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from rr_core.errors import (
    AuthError,
    ContextTooLongError,
    LLMError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)

# Statuses a provider uses for "this request is too big for the model".
_CONTEXT_STATUSES = frozenset({400, 413, 422})
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window|size|limit)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|input too long|exceed_context_size|input tokens exceed",
    re.IGNORECASE,
)
# A server that cannot do structured output says so in terms of the parameter we sent.
_STRUCTURED_WORDS = re.compile(
    r"response_format|json_schema|json schema|text\.format|structured output|output_config"
    r"|output_format|guided_json|grammar",
    re.IGNORECASE,
)
# Key-shaped strings (OpenAI sk-..., sk-proj-..., Anthropic sk-ant-...), masked or not.
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_*\-.]{4,}")
_MAX_DETAIL = 300


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with the given secrets and anything key-shaped replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return _KEY_SHAPED.sub("[redacted]", text)


def safe_url(url: str) -> str:
    """``url`` without user info or query string, fit to show."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured base URL"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def clean_detail(detail: str, secrets: Iterable[str | None] = ()) -> str:
    """A provider's error text, redacted, on one line and not too long."""
    text = " ".join(redact(detail, secrets).split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def is_context_too_long(status: int, detail: str) -> bool:
    """Whether an HTTP error says the prompt does not fit the model's window."""
    # 413 is a request body over the provider's byte limit: far past any context window.
    return status == 413 or (status in _CONTEXT_STATUSES and bool(_CONTEXT_WORDS.search(detail)))


def rejects_structured_output(status: int, detail: str) -> bool:
    """Whether an HTTP error says the server cannot do the structured output we asked for."""
    return (
        status in (400, 422)
        and not is_context_too_long(status, detail)
        and bool(_STRUCTURED_WORDS.search(detail))
    )


def retry_after(headers: Mapping[str, str]) -> str | None:
    """The wait a 429 asks for, as text (``"20 s"``), or None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return f"{float(ms) / 1000:g} s"
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return f"{float(value):g} s"
    except ValueError:
        return value.strip()[:60]


def from_status(
    *,
    provider: str,
    label: str,
    key_var: str,
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
) -> LLMError:
    """The error for an HTTP error status from ``label`` (e.g. "OpenAI")."""
    said = clean_detail(detail, secrets).rstrip(". ")
    tail = f": {said}" if said else ""
    if status in (401, 403):
        return AuthError(
            f"The {label} API key was rejected (HTTP {status}{tail}). "
            f"Check {key_var} or the key entered in the sidebar.",
            provider=provider,
            status=status,
        )
    if status == 429:
        wait = retry_after(headers or {})
        asked = f" The server asked to retry after {wait}." if wait else ""
        return RateLimitError(
            f"{label} is rate limiting these requests (HTTP 429{tail}).{asked} "
            "Wait a minute or lower concurrency, then try again.",
            provider=provider,
            status=status,
        )
    if is_context_too_long(status, said):
        return ContextTooLongError(
            f"The prompt is longer than the model's context window ({label}, HTTP {status}{tail}). "
            "Try chunked R&R (method chunked-rr) or a smaller chunk size.",
            provider=provider,
            status=status,
        )
    if status >= 500:
        return ProviderError(
            f"{label} had a server error (HTTP {status}{tail}). Try again in a moment.",
            provider=provider,
            status=status,
        )
    if status == 404:
        return ProviderError(
            f"{label} answered HTTP 404{tail}. Check the model name and the base URL.",
            provider=provider,
            status=status,
        )
    return ProviderError(
        f"{label} rejected the request (HTTP {status}{tail}).",
        provider=provider,
        status=status,
    )


def timed_out(*, provider: str, label: str, timeout_s: float) -> ProviderTimeout:
    """The error for a call that got no answer in ``timeout_s`` seconds."""
    return ProviderTimeout(
        f"{label} did not answer within {timeout_s:g} s. Try again, raise the timeout, "
        "or use a smaller chunk size.",
        provider=provider,
    )


def unreachable(*, provider: str, base_url: str) -> ProviderError:
    """The error for a call that could not connect to ``base_url``."""
    return ProviderError(
        f"Could not reach {safe_url(base_url)}. Check the base URL, that the server is running, "
        "and the network connection.",
        provider=provider,
    )


def empty_output(*, provider: str, label: str, why: str) -> ProviderError:
    """The error for a reply that carried no text."""
    return ProviderError(f"{label} returned no text ({why}).", provider=provider)
