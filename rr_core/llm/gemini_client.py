"""Gemini adapter: Google's Gemini API (``generateContent``) through the ``google-genai`` SDK.

Each call sends the prompt as one user turn with ``temperature=0`` and structured output: the
request's JSON schema as ``responseJsonSchema`` with ``responseMimeType: application/json``.
A model or endpoint that rejects the schema gets the call repeated once without it, and the
tolerant parser of the request's ``Output`` class reads the reply (``SDKAdapter``).

Usage: ``promptTokenCount`` *includes* ``cachedContentTokenCount`` (Gemini's implicit prompt
cache, automatic on its current models: nothing is sent to ask for it); the thinking tokens
(``thoughtsTokenCount``) are billed as output and counted there. Prices come from genai-prices.

Not offered in this version: Gemini's batch mode (``client.batches``) and explicit context
caches (``client.caches``); ``batch`` is None, so a run in batch mode is refused before anything
is sent, and the screens offer "now" only.

The key goes only to the server it is given for (``rr_core.llm.config``'s rule); the SDK's own
environment lookups (``GOOGLE_API_KEY``, Vertex AI settings) are bypassed: the client is built
with an explicit key, server and ``vertexai=False``. The SDK's retries are off (no retry
options): the deadline, retries and cancellation are ``SDKAdapter``'s, over an HTTP client whose
sockets are bounded by each call's deadline.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from rr_core.errors import MissingKeyError, ProviderError
from rr_core.llm import errors_map
from rr_core.llm.base import BatchAPI, Completion, LLMRequest, OnWait, Usage
from rr_core.llm.config import OFFICIAL_URLS
from rr_core.llm.deadline import bounded_http_client
from rr_core.llm.structured import HTTPFailure, SDKAdapter, SDKErrors, completion, count

GEMINI_BASE_URL = OFFICIAL_URLS["gemini"]
API_VERSION = "v1beta"
TEMPERATURE = 0.0
_LABEL = "Gemini"
# The Gemini API's error status for a request that stopped on the length limit.
_MAX_TOKENS = "MAX_TOKENS"


class GeminiClient(SDKAdapter):
    """An ``LLMClient`` over the google-genai SDK (sync client, one per instance)."""

    name = "gemini"
    api = "generate_content"
    is_llm = True
    # The SDK raises its own errors for HTTP statuses and lets the HTTP stack's through.
    sdk_errors = SDKErrors(
        base=(genai_errors.APIError, httpx2.HTTPError),
        timeout=httpx2.TimeoutException,
        connection=httpx2.TransportError,
    )
    key_var = "GEMINI_API_KEY"
    _label = _LABEL
    _key_hint = "Check GEMINI_API_KEY or the key entered in the sidebar."

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
        key = (api_key or "").strip() or os.environ.get("GEMINI_API_KEY") or None
        url = base_url or os.environ.get("GEMINI_BASE_URL") or GEMINI_BASE_URL
        if not key:
            raise MissingKeyError(
                "No Gemini API key: set GEMINI_API_KEY (in the app, or enter a key in the sidebar).",
                provider=self.name,
            )
        self.model = model
        self.base_url = url
        self.timeout_s = timeout_s
        self._secrets = (key,)
        self._structured = True
        self._init_calls(max_retries=max_retries, on_wait=on_wait, cancel=cancel)
        self.batch: BatchAPI | None = None  # Gemini batch mode: not offered in this version
        self._client = genai.Client(
            api_key=key,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=url,
                # Named, not left to the SDK's default or GOOGLE_GENAI_API_VERSION: v1beta
                # takes every field sent here (responseJsonSchema included).
                api_version=API_VERSION,
                timeout=int(timeout_s * 1000),  # milliseconds
                httpx_client=bounded_http_client(httpx2.Client(timeout=timeout_s)),
            ),
        )

    def temperature_for(self, model: str) -> float | None:
        """0: every Gemini model takes a temperature."""
        return TEMPERATURE

    def config(self, request: LLMRequest, timeout: float, *, structured: bool) -> types.GenerateContentConfig:
        """The generation config of one call: temperature 0, the output limit and, when
        asked, the JSON schema of the reply."""
        structured = structured and request.schema.STRUCTURED  # a plain-text reply asks for none
        config = types.GenerateContentConfig(
            temperature=TEMPERATURE,
            max_output_tokens=request.max_output_tokens,
            http_options=types.HttpOptions(timeout=max(1, int(timeout * 1000))),
        )
        if structured:
            config.response_mime_type = "application/json"
            config.response_json_schema = request.schema.WIRE_SCHEMA
        if "flash" in request.model or "flash" in self.model:
            # Gemini 2.5 Flash thinks by default, and its thoughts count against the output
            # limit: a reply left empty was still billed. The reading here is extractive: off.
            config.thinking_config = types.ThinkingConfig(thinking_budget=0)
        return config

    def _send(self, request: LLMRequest, model: str, timeout: float, *, structured: bool) -> Completion:
        structured = structured and request.schema.STRUCTURED  # a plain-text reply asks for none
        config = self.config(request, timeout, structured=structured)
        try:
            response = self._client.models.generate_content(
                model=model, contents=request.prompt, config=config
            )
        except genai_errors.UnknownApiResponseError:  # a body that is not JSON (a proxy's page)
            raise errors_map.not_json(provider=self.name, label=self._label, base_url=self.base_url) from None
        return self._from_response(response, structured)

    def _from_response(self, response: Any, structured: bool) -> Completion:
        if not isinstance(response, types.GenerateContentResponse):
            raise ProviderError(
                f"{_LABEL} sent something that is not a generateContent reply. "
                f"Check the base URL ({errors_map.safe_url(self.base_url)}).",
                provider=self.name,
            )
        candidates = response.candidates or []
        first = candidates[0] if candidates else None
        parts = (first.content.parts if first is not None and first.content is not None else None) or []
        # Thought summaries are not the answer.
        text = "".join(part.text or "" for part in parts if not part.thought)
        finish = str(first.finish_reason.value if first is not None and first.finish_reason else "") or None
        if not text.strip():
            blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
            why = f"finish reason: {finish or 'none'}"
            if blocked:
                why = f"the prompt was blocked: {blocked.value}"
            elif finish == _MAX_TOKENS:
                why += "; raise the maximum output tokens (a thinking model spends them on thoughts too)"
            # Billed all the same (thoughts, a cut-off reply): its usage goes with the error.
            billed = gemini_usage(response.usage_metadata) if response.usage_metadata is not None else None
            raise errors_map.empty_output(provider=self.name, label=_LABEL, why=why, usage=billed)
        return completion(
            _Reply(response),
            text,
            gemini_usage,
            structured=structured,
            api=self.api,
            temperature=TEMPERATURE,
            finish_reason=finish,
            thoughts_tokens=count(response.usage_metadata, "thoughts_token_count"),
        )

    def _http_failure(self, exc: Exception) -> HTTPFailure | None:
        if not isinstance(exc, genai_errors.APIError):
            return None
        headers = getattr(exc.response, "headers", None) or {}
        return HTTPFailure(int(exc.code or 0), str(exc.message or exc.status or ""), headers)


class _Reply:
    """A generateContent reply as ``completion`` reads one: ``usage``, ``model``, ``id``."""

    def __init__(self, response: types.GenerateContentResponse) -> None:
        self.usage = response.usage_metadata
        self.model = response.model_version or ""
        self.id = response.response_id or ""


def gemini_usage(usage: Any) -> Usage:
    """Normalise Gemini usage: its prompt count includes the cached tokens; thinking is output."""
    prompt = count(usage, "prompt_token_count")
    cached = min(count(usage, "cached_content_token_count"), prompt)
    return Usage(
        input_tokens=prompt - cached,
        cached_tokens=cached,
        output_tokens=count(usage, "candidates_token_count") + count(usage, "thoughts_token_count"),
    )
