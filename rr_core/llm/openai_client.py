"""OpenAI adapter: the Responses API, or Chat Completions for OpenAI-compatible servers.

Responses is OpenAI's primary API; every call sends ``store=False`` so documents are not kept
server side, and ``temperature=0`` where the model takes one: OpenAI's reasoning models (the
o-series, GPT-5 and later, except their ``-chat`` variants) answer a temperature with a 400
("Only the default (1) value is supported"), so none is sent to them; a server that rejects it
for any other model gets the call repeated once without it, and the client stops sending it. Chat Completions is for servers that speak the older wire format (Ollama, vLLM,
llama.cpp) through ``base_url``; they often need no key, and some reject structured output,
in which case the call is repeated once without it and the client stops asking.

A compatible server gets only the key given to the client: never ``OPENAI_API_KEY``, and no
``Authorization`` header at all without one. The deadline, retries and cancellation are
``SDKAdapter``'s (the SDK's own retries are off).
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat
from openai.types.responses import Response, ResponseTextConfigParam

from rr_core.errors import ConfigError, MissingKeyError, ProviderError
from rr_core.llm import errors_map
from rr_core.llm.base import Completion, LLMRequest, OnWait, Usage
from rr_core.llm.config import COMPAT_KEY_VAR, OFFICIAL_URLS
from rr_core.llm.deadline import bounded_http_client
from rr_core.llm.structured import HTTPFailure, SDKAdapter, SDKErrors, completion, count
from rr_core.outputs import Output

Api = Literal["responses", "chat"]

OPENAI_BASE_URL = OFFICIAL_URLS["openai"]
# The SDK will not build a client without a key: without one this stands in, and the
# Authorization header is left out of every request (``_NO_AUTH``), so it is never sent.
_PLACEHOLDER_KEY = "unused"
_NO_AUTH = {"Authorization": openai.omit}
# OpenAI's reasoning models, which take no temperature but the default: o1, o3-mini, o4-mini,
# gpt-5, gpt-5.5, gpt-6.1-sol... (their "-chat" variants take one).
_REASONING = re.compile(r"^(?:openai/)?(?:o\d+(?:-|$)|gpt-(?:[5-9]|\d{2,})(?:[.-]|$))")
TEMPERATURE = 0.0


class OpenAIClient(SDKAdapter):
    """An ``LLMClient`` over the OpenAI SDK (sync client, one per instance)."""

    is_llm = True
    sdk_errors = SDKErrors(
        base=openai.OpenAIError, timeout=openai.APITimeoutError, connection=openai.APIConnectionError
    )
    key_var = "OPENAI_API_KEY"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        api: Api = "responses",
        max_retries: int = 2,
        timeout_s: float = 120.0,
        on_wait: OnWait | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        if api not in ("responses", "chat"):
            raise ConfigError(f"Unknown OpenAI API {api!r}: use 'responses' or 'chat'.")
        # A compatible server gets only a key given for it, never OpenAI's.
        key = (
            (api_key or "").strip()
            or (os.environ.get("OPENAI_API_KEY") if api == "responses" else None)
            or None
        )
        url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        if api == "chat" and not url:
            raise ConfigError(
                "Chat Completions mode is for OpenAI-compatible servers: set a base URL "
                "(e.g. http://localhost:11434/v1 for Ollama) or OPENAI_BASE_URL."
            )
        if api == "responses" and not key:
            raise MissingKeyError(
                "No OpenAI API key: set OPENAI_API_KEY (in the app, or enter a key in the sidebar).",
                provider="openai",
            )
        self.name = "openai" if api == "responses" else "openai-compatible"
        self.model = model
        self.api: Api = api
        self.base_url = url or OPENAI_BASE_URL
        self.timeout_s = timeout_s
        where = errors_map.safe_url(self.base_url)
        self._label = "OpenAI" if api == "responses" else f"The server at {where}"
        self._key_hint = (
            "Check OPENAI_API_KEY or the key entered in the sidebar."
            if api == "responses"
            else f"Give the key this server expects: in {COMPAT_KEY_VAR}, or name its variable with "
            "--api-key-env (in the app: the API key field). OPENAI_API_KEY is never sent to it."
        )
        self._secrets = (key,)
        # Flips to False for good once the server rejects structured output, or a temperature.
        self._structured = True
        self._temperature = True
        self._auth: dict[str, Any] = {} if key else dict(_NO_AUTH)
        self._init_calls(max_retries=max_retries, on_wait=on_wait, cancel=cancel)
        self._client = openai.OpenAI(
            api_key=key or _PLACEHOLDER_KEY,
            base_url=url,
            max_retries=0,  # ours: within the deadline (SDKAdapter.complete)
            timeout=timeout_s,
            http_client=bounded_http_client(openai.DefaultHttpxClient()),
        )

    def temperature_for(self, model: str) -> float | None:
        """0 unless the model is one of OpenAI's reasoning models (the configuration: a server
        that rejects it changes what is sent, ``_temperature_to_send``, not this)."""
        if _REASONING.match(model.strip().lower()) and "-chat" not in model:
            return None
        return TEMPERATURE

    def _temperature_to_send(self, model: str) -> float | None:
        """What this call sends: the configured temperature, unless the server rejected it."""
        return self.temperature_for(model) if self._temperature else None

    def _rejects_temperature(self, failure: HTTPFailure) -> bool:
        if self._temperature and failure.status == 400 and "temperature" in failure.detail.lower():
            self._temperature = False
            return True
        return False

    def params(self, request: LLMRequest, model: str, *, structured: bool) -> dict[str, Any]:
        """The body of one call, as the sync call and a batch line both send it (JSON-ready:
        no SDK sentinels)."""
        temperature = self._temperature_to_send(model)
        body: dict[str, Any] = {"model": model}
        if self.api == "responses":
            body.update(input=request.prompt, store=False, max_output_tokens=request.max_output_tokens)
            if temperature is not None:
                body["temperature"] = temperature
            if structured:
                body["text"] = _text_format(request.schema)
            return body
        # `max_tokens`, not `max_completion_tokens`: every compatible server knows the former.
        # No `store`: it defaults to off on OpenAI and means nothing to other servers.
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": request.prompt}]
        body.update(messages=messages, max_tokens=request.max_output_tokens)
        if temperature is not None:
            body["temperature"] = temperature
        if structured:
            body["response_format"] = _response_format(request.schema)
        return body

    def _send(self, request: LLMRequest, model: str, timeout: float, *, structured: bool) -> Completion:
        body = self.params(request, model, structured=structured)
        temperature = body.get("temperature")
        if self.api == "responses":
            response = self._client.responses.create(**body, timeout=timeout)
            return self._from_response(response, structured, temperature)
        chat = self._client.chat.completions.create(**body, timeout=timeout, extra_headers=self._auth or None)
        return self._from_chat(chat, structured, temperature)

    def _from_response(self, response: Response, structured: bool, temperature: float | None) -> Completion:
        try:
            text = response.output_text or ""
        except (AttributeError, TypeError):  # not a Responses reply at all
            raise self._not_a_reply("Responses API") from None
        if not text.strip():
            raise errors_map.empty_output(
                provider=self.name, label=self._label, why=_why_empty_response(response)
            )
        return completion(
            response,
            text,
            responses_usage,
            structured=structured,
            api="responses",
            temperature=temperature,
            status=getattr(response, "status", None),
        )

    def _from_chat(self, chat: ChatCompletion, structured: bool, temperature: float | None) -> Completion:
        if not isinstance(chat, ChatCompletion):
            raise self._not_a_reply("Chat Completions")
        choices = getattr(chat, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = (getattr(message, "content", None) or "") if message is not None else ""
        finish = getattr(choices[0], "finish_reason", None) if choices else None
        if not text.strip():
            refusal = getattr(message, "refusal", None)
            why = f"refused: {refusal}" if refusal else f"finish reason: {finish or 'none'}"
            if finish == "length":
                why += "; raise the maximum output tokens"
            raise errors_map.empty_output(provider=self.name, label=self._label, why=why)
        return completion(
            chat,
            text,
            chat_usage,
            structured=structured,
            api="chat",
            temperature=temperature,
            finish_reason=finish,
        )

    def _not_a_reply(self, api: str) -> ProviderError:
        return ProviderError(
            f"{self._label} sent something that is not a {api} reply. "
            f"Check the base URL ({errors_map.safe_url(self.base_url)}) and the API mode.",
            provider=self.name,
        )

    def _http_failure(self, exc: Exception) -> HTTPFailure | None:
        if not isinstance(exc, openai.APIStatusError):
            return None
        return HTTPFailure(exc.status_code, _detail(exc), exc.response.headers)


def _text_format(schema: type[Output]) -> ResponseTextConfigParam:
    return {
        "format": {
            "type": "json_schema",
            "name": schema.WIRE_NAME,
            "schema": schema.WIRE_SCHEMA,
            "strict": True,
        }
    }


def _response_format(schema: type[Output]) -> ResponseFormat:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": schema.WIRE_NAME,
            "schema": schema.WIRE_SCHEMA,
            "strict": True,
        },
    }


def _detail(exc: openai.APIStatusError) -> str:
    """The provider's own error message, with its code, else the SDK's text."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail") or body.get("error")
        code = body.get("code")
        if message:
            return f"{message} ({code})" if code and str(code) not in str(message) else str(message)
    if isinstance(body, str) and body.strip():
        return body
    return exc.message


def _why_empty_response(response: Response) -> str:
    error = getattr(response, "error", None)
    if error is not None:
        return f"error: {getattr(error, 'message', error)}"
    for item in getattr(response, "output", None) or []:
        for part in getattr(item, "content", None) or []:
            if getattr(part, "type", None) == "refusal":
                return f"refused: {getattr(part, 'refusal', '')}"
    details = getattr(response, "incomplete_details", None)
    reason = getattr(details, "reason", None)
    if reason == "max_output_tokens":
        return "stopped at the output token limit; raise the maximum output tokens"
    if reason:
        return f"incomplete: {reason}"
    return f"status: {getattr(response, 'status', None) or 'unknown'}"


def responses_usage(usage: Any) -> Usage:
    """Normalise Responses usage: its ``input_tokens`` include cache reads and writes."""
    return _split_prompt(usage, "input_tokens", "input_tokens_details", "output_tokens")


def chat_usage(usage: Any) -> Usage:
    """Normalise Chat Completions usage: its ``prompt_tokens`` include cache reads and writes."""
    return _split_prompt(usage, "prompt_tokens", "prompt_tokens_details", "completion_tokens")


def _split_prompt(usage: Any, prompt_field: str, details_field: str, output_field: str) -> Usage:
    """Split a prompt count that includes cache reads and writes into its three parts."""
    prompt = count(usage, prompt_field)
    details = getattr(usage, details_field, None)
    # Clamp: a server that reports details inconsistently must not yield negative counts.
    cached = min(count(details, "cached_tokens"), prompt)
    written = min(count(details, "cache_write_tokens"), prompt - cached)
    return Usage(
        input_tokens=prompt - cached - written,
        cached_tokens=cached,
        cache_write_tokens=written,
        output_tokens=count(usage, output_field),
    )
