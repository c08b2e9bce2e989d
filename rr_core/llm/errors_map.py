"""Turning what a provider said into the ``LLMError`` a user can act on.

Shared by the provider adapters; knows no SDK. Every message passes through ``redact`` so an
API key never reaches the UI, a log or the ledger.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

from rr_core.errors import (
    AuthError,
    ContextTooLongError,
    LLMError,
    NotConnected,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)
from rr_core.llm.base import Usage

# Statuses a provider uses for "this request is too big for the model".
_CONTEXT_STATUSES = frozenset({400, 413, 422})
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window|size|limit)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|input too long|exceed_context_size|input tokens exceed"
    r"|exceeds the maximum number of tokens",  # Gemini
    re.IGNORECASE,
)
# A server that cannot do structured output says so in terms of the parameter we sent.
_STRUCTURED_WORDS = re.compile(
    r"response_format|json_schema|json schema|text\.format|structured output|output_config"
    r"|output_format|guided_json|grammar|response_?(json_?)?schema|response_?mime_?type",
    re.IGNORECASE,
)
# Key-shaped strings (OpenAI sk-..., sk-proj-..., Anthropic sk-ant-..., Google AIza...), masked or not.
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_*\-.]{4,}|\bAIza[A-Za-z0-9_\-]{20,}")
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


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a 429 or 503 asks for, in seconds (``retry-after-ms``, ``retry-after`` in
    seconds or as an HTTP date), or None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # only for a Retry-After given as a date

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def retry_after(headers: Mapping[str, str]) -> str | None:
    """The wait a 429 asks for, as text (``"20 s"``), or None."""
    seconds = retry_after_seconds(headers)
    if seconds is not None:
        return f"{seconds:g} s" if seconds < 100 else f"{seconds:.0f} s"
    value = headers.get("retry-after")
    return value.strip()[:60] if value and value.strip() else None


def from_status(
    *,
    provider: str,
    label: str,
    key_hint: str,
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
            f"{label} rejected the API key (HTTP {status}{tail}). {key_hint}",
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


def timed_out(*, provider: str, label: str, timeout_s: float, attempts: int = 1) -> ProviderTimeout:
    """The error for a call that got no answer within its ``timeout_s`` deadline."""
    tries = f" ({attempts} attempts)" if attempts > 1 else ""
    return ProviderTimeout(
        f"{label} did not answer within {timeout_s:g} s{tries}. Try again, raise the timeout, "
        "or use a smaller chunk size.",
        provider=provider,
    )


def out_of_time(error: LLMError, *, label: str, wait: float, left: float, timeout_s: float) -> LLMError:
    """``error`` for a server that asked to wait longer than the call's deadline allows."""
    status = f" (HTTP {error.status})" if error.status else ""
    message = (
        f"{label} asked to wait {wait:.0f} s before a retry{status}: longer than the "
        f"{max(left, 0):.0f} s left of this call's {timeout_s:g} s timeout, so the call was not "
        "retried. Try again later, lower concurrency, or raise the timeout."
    )
    return type(error)(message, provider=error.provider, status=error.status)


def retry_reason(error: LLMError) -> str:
    """Why a call is waiting to retry, in a few words (for progress)."""
    if isinstance(error, RateLimitError):
        return "rate limited (HTTP 429)"
    if error.status:
        return f"server error (HTTP {error.status})"
    return "could not connect"


def unreachable(*, provider: str, base_url: str, sent_nothing: bool = False) -> ProviderError:
    """The error for a call that could not connect to ``base_url``; ``sent_nothing``: no attempt
    made a connection (every one refused or its name not found), so nothing can have been billed:
    ``NotConnected``."""
    kind = NotConnected if sent_nothing else ProviderError
    return kind(
        f"Could not reach {safe_url(base_url)}. Check the base URL, that the server is running, "
        "and the network connection.",
        provider=provider,
    )


def sent_nothing(exc: BaseException) -> bool:
    """Whether a transport error says no connection was made (refused, or the host's name not
    found): the request never left. Read from the chain of causes the SDKs' errors wrap, down to
    the operating system's error (no HTTP library is imported here)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionRefusedError | socket.gaierror):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def empty_output(*, provider: str, label: str, why: str, usage: Usage | None = None) -> ProviderError:
    """The error for a reply that carried no text (``usage``: what the provider billed for it)."""
    return ProviderError(f"{label} returned no text ({why}).", provider=provider, usage=usage)


def not_json(*, provider: str, label: str, base_url: str) -> ProviderError:
    """The error for a reply whose body is not the JSON it says it is (a proxy's error page,
    a cut-off body)."""
    return ProviderError(
        f"{label} sent a reply that is not valid JSON. Check the base URL ({safe_url(base_url)}) "
        "and any proxy in between, then try again.",
        provider=provider,
    )
