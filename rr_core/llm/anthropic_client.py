"""Anthropic adapter: the Messages API.

Structured output goes as ``output_config.format`` (a JSON schema) on ``messages.create``;
models or proxies that reject it get the call repeated once without it, and the tolerant
parser of the request's ``Output`` class reads the reply. ``messages.create`` takes no temperature
(anthropic 2.12: passing one is a ``TypeError``), so none is sent and traces say so
(``temperature`` None: the API's default).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import anthropic
from anthropic.types import Message, MessageParam, OutputConfigParam

from rr_core.errors import ContextTooLongError, MissingKeyError, ProviderError
from rr_core.llm import errors_map
from rr_core.llm.base import Completion, LLMRequest, OnWait, Usage
from rr_core.llm.config import OFFICIAL_URLS
from rr_core.llm.deadline import bounded_http_client
from rr_core.llm.structured import HTTPFailure, SDKAdapter, SDKErrors, completion, count
from rr_core.outputs import Output

ANTHROPIC_BASE_URL = OFFICIAL_URLS["anthropic"]
_LABEL = "Anthropic"


class AnthropicClient(SDKAdapter):
    """An ``LLMClient`` over the Anthropic SDK (sync client, one per instance)."""

    name = "anthropic"
    api = "messages"
    is_llm = True
    sdk_errors = SDKErrors(
        base=anthropic.AnthropicError,
        timeout=anthropic.APITimeoutError,
        connection=anthropic.APIConnectionError,
    )
    key_var = "ANTHROPIC_API_KEY"
    _label = _LABEL
    _key_hint = "Check ANTHROPIC_API_KEY or the key entered in the sidebar."

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout_s: float = 120.0,
        on_wait: OnWait | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        key = (api_key or "").strip() or os.environ.get("ANTHROPIC_API_KEY") or None
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not key:
            raise MissingKeyError(
                "No Anthropic API key: set ANTHROPIC_API_KEY (in the app, or enter a key in the sidebar).",
                provider=self.name,
            )
        self.model = model
        self.base_url = url or ANTHROPIC_BASE_URL
        self.timeout_s = timeout_s
        self._secrets = (key,)
        # Flips to False for good once the model or a proxy rejects structured output.
        self._structured = True
        self._init_calls(max_retries=max_retries, on_wait=on_wait, cancel=cancel)
        # An explicit key keeps the SDK from looking for profiles or federation settings.
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=url,
            max_retries=0,  # ours: within the deadline (SDKAdapter.complete)
            timeout=timeout_s,
            http_client=bounded_http_client(anthropic.DefaultHttpxClient()),
        )

    def params(self, request: LLMRequest, model: str, *, structured: bool) -> dict[str, Any]:
        """The body of one call, as the sync call and a batch request both send it."""
        messages: list[MessageParam] = [{"role": "user", "content": request.prompt}]
        body: dict[str, Any] = {"model": model, "max_tokens": request.max_output_tokens, "messages": messages}
        if structured:
            body["output_config"] = _output_config(request.schema)
        return body

    def _send(self, request: LLMRequest, model: str, timeout: float, *, structured: bool) -> Completion:
        message = self._client.messages.create(
            **self.params(request, model, structured=structured), timeout=timeout
        )
        return self._from_message(message, structured)

    def _from_message(self, message: Message, structured: bool) -> Completion:
        if not isinstance(message, Message):
            raise ProviderError(
                f"{_LABEL} sent something that is not a Messages API reply. "
                f"Check the base URL ({errors_map.safe_url(self.base_url)}).",
                provider=self.name,
            )
        blocks = getattr(message, "content", None) or []
        text = "".join(
            str(getattr(block, "text", "") or "")
            for block in blocks
            if getattr(block, "type", None) == "text"
        )
        stop = getattr(message, "stop_reason", None)
        if not text.strip():
            if stop == "model_context_window_exceeded":
                raise ContextTooLongError(
                    "The prompt filled the model's context window before it could answer. "
                    "Try chunked R&R (method chunked-rr) or a smaller chunk size.",
                    provider=self.name,
                )
            why = f"stop reason: {stop or 'none'}"
            if stop == "max_tokens":
                why += "; raise the maximum output tokens"
            raise errors_map.empty_output(provider=self.name, label=_LABEL, why=why)
        return completion(
            message, text, messages_usage, structured=structured, api="messages", stop_reason=stop
        )

    def _http_failure(self, exc: Exception) -> HTTPFailure | None:
        if not isinstance(exc, anthropic.APIStatusError):
            return None
        return HTTPFailure(exc.status_code, _detail(exc), exc.response.headers)


def _output_config(schema: type[Output]) -> OutputConfigParam:
    return {"format": {"type": "json_schema", "schema": schema.WIRE_SCHEMA}}


def _detail(exc: anthropic.APIStatusError) -> str:
    """The provider's own error message, else the SDK's text."""
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(body, str) and body.strip():
        return body
    return exc.message


def messages_usage(usage: Any) -> Usage:
    """Normalise Messages usage: its ``input_tokens`` exclude cache reads and writes."""
    return Usage(
        input_tokens=count(usage, "input_tokens"),
        cached_tokens=count(usage, "cache_read_input_tokens"),
        cache_write_tokens=count(usage, "cache_creation_input_tokens"),
        output_tokens=count(usage, "output_tokens"),
    )
