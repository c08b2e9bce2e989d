"""Anthropic adapter: the Messages API.

Structured output goes as ``output_config.format`` (a JSON schema) on ``messages.create``;
models or proxies that reject it get the call repeated once without it, and the tolerant
parser of the request's ``Output`` class reads the reply. Every call sends ``temperature: 0``
as a raw body field (anthropic 2.12's ``messages.create`` has no such parameter: passing one is
a ``TypeError``, so it goes through ``extra_body``; a batch request's params carry it as they
are). A model that rejects it (Anthropic's newer models answer "temperature is deprecated for
this model" with a 400) gets the call repeated once without it, and the client stops sending
it; each call's trace records what was sent (None: none, the API's default).

``AnthropicBatch`` (the client's ``batch``) sends many calls as one Message Batch: the very
bodies the sync calls send, answered within 24 hours at the batch price.

A request's cache hint becomes a ``cache_control`` breakpoint after the stable prefix (the
prompt split into two text blocks); usage reads cache reads and writes, the one-hour writes
apart (``cache_creation.ephemeral_1h_input_tokens``), which cost more.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
from anthropic.types import Message, MessageParam, OutputConfigParam, TextBlockParam
from anthropic.types.messages import MessageBatch

from rr_core.errors import ConfigError, ContextTooLongError, LLMError, MissingKeyError, ProviderError
from rr_core.llm import errors_map
from rr_core.llm.base import (
    BatchAPI,
    BatchLine,
    BatchResult,
    BatchStatus,
    Completion,
    LLMRequest,
    OnWait,
    Usage,
)
from rr_core.llm.batch import check_lines, custom_id_in, every_call
from rr_core.llm.config import OFFICIAL_URLS
from rr_core.llm.deadline import bounded_http_client
from rr_core.llm.structured import HTTPFailure, SDKAdapter, SDKErrors, completion, count
from rr_core.outputs import Output

ANTHROPIC_BASE_URL = OFFICIAL_URLS["anthropic"]
TEMPERATURE = 0.0
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
        # Flip to False for good once the model or a proxy rejects structured output, or a temperature.
        self._structured = True
        self._temperature = True
        self._init_calls(max_retries=max_retries, on_wait=on_wait, cancel=cancel)
        self.batch: BatchAPI | None = AnthropicBatch(self)
        # An explicit key keeps the SDK from looking for profiles or federation settings.
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=url,
            max_retries=0,  # ours: within the deadline (SDKAdapter.complete)
            timeout=timeout_s,
            http_client=bounded_http_client(anthropic.DefaultHttpxClient()),
        )

    def temperature_for(self, model: str) -> float | None:
        """0: sent with every call (a model that rejects it changes what is sent, not this)."""
        return TEMPERATURE

    def _temperature_to_send(self) -> float | None:
        """What this call sends: 0, unless the model or a proxy rejected a temperature."""
        return TEMPERATURE if self._temperature else None

    def _rejects_temperature(self, failure: HTTPFailure) -> bool:
        if self._temperature and failure.status == 400 and "temperature" in failure.detail.lower():
            self._temperature = False
            return True
        return False

    def params(self, request: LLMRequest, model: str, *, structured: bool) -> dict[str, Any]:
        """The body of one call, as the sync call and a batch request both send it.

        With a cache hint, the user message is two text blocks: the stable prefix, marked as a
        cache breakpoint with the hinted lifetime, and the rest (together, the same text)."""
        structured = structured and request.schema.STRUCTURED  # a plain-text reply asks for none
        messages: list[MessageParam] = [{"role": "user", "content": _content(request)}]
        body: dict[str, Any] = {"model": model, "max_tokens": request.max_output_tokens, "messages": messages}
        temperature = self._temperature_to_send()
        if temperature is not None:
            body["temperature"] = temperature  # a raw field: see the module's docstring
        if structured:
            body["output_config"] = _output_config(request.schema)
        return body

    def _send(self, request: LLMRequest, model: str, timeout: float, *, structured: bool) -> Completion:
        structured = structured and request.schema.STRUCTURED  # a plain-text reply asks for none
        body = self.params(request, model, structured=structured)
        temperature = body.pop("temperature", None)
        extra = {"temperature": temperature} if temperature is not None else None
        message = self._client.messages.create(**body, timeout=timeout, extra_body=extra)
        return self._from_message(
            message,
            structured,
            hinted=not isinstance(body["messages"][0]["content"], str),
            temperature=temperature,
        )

    def _from_message(
        self, message: Message, structured: bool, *, hinted: bool = False, temperature: float | None = None
    ) -> Completion:
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
            usage = getattr(message, "usage", None)  # billed all the same
            billed = messages_usage(usage) if usage is not None else None
            raise errors_map.empty_output(provider=self.name, label=_LABEL, why=why, usage=billed)
        return completion(
            message,
            text,
            messages_usage,
            structured=structured,
            api="messages",
            temperature=temperature,
            cache_hint_sent=hinted,
            stop_reason=stop,
        )

    def _http_failure(self, exc: Exception) -> HTTPFailure | None:
        if not isinstance(exc, anthropic.APIStatusError):
            return None
        return HTTPFailure(exc.status_code, _detail(exc), exc.response.headers)


# -- Message Batches -------------------------------------------------------------------------

# Anthropic's limits for one Message Batch: requests and bytes.
BATCH_MAX_LINES = 100_000
BATCH_MAX_BYTES = 256 * 1024 * 1024
# Sending or reading a whole batch may take longer than one call's deadline.
_BULK_TIMEOUT_S = 900.0
# An errored result names its error's type, not an HTTP status: the status that type comes with.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicBatch:
    """Anthropic's Message Batches for one ``AnthropicClient`` (``BatchAPI``).

    Each request's ``params`` are ``client.params``, exactly what the sync call sends; results
    come back as JSONL in any order, each call once (succeeded, errored, canceled or expired),
    and each reply is read by the sync path's own code. Anthropic counts a batch's calls
    only once it has ended: until then ``status`` says 0 done.
    """

    def __init__(self, client: AnthropicClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        # What this object submitted: batch id -> call -> sent with structured output.
        self._sent: dict[str, dict[str, bool]] = {}

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        """Create a Message Batch of the lines (``label`` and ``marker`` are not sent: Anthropic
        keeps no metadata; ``find`` matches a batch by its time and size instead)."""
        client = self._client
        check_lines(lines, label="Anthropic's Message Batches", max_lines=BATCH_MAX_LINES)
        structured = client._structured
        requests: list[dict[str, Any]] = [
            {
                "custom_id": line.custom_id,
                "params": client.params(
                    line.request, line.request.model or client.model, structured=structured
                ),
            }
            for line in lines
        ]
        size = len(json.dumps({"requests": requests}, ensure_ascii=False).encode("utf-8"))
        if size > BATCH_MAX_BYTES:
            raise ConfigError(
                f"This batch is {size / 2**20:,.0f} MB; Anthropic takes at most "
                f"{BATCH_MAX_BYTES / 2**20:,.0f} MB in one batch. Split it into several batches."
            )
        sdk = client._client
        batch = client.sdk_call(
            # params() is a plain dict; the SDK types each request as its TypedDict.
            lambda t: sdk.messages.batches.create(requests=requests, timeout=t),  # type: ignore[arg-type]
            timeout_s=max(client.timeout_s, _BULK_TIMEOUT_S),
        )
        with self._lock:
            self._sent[batch.id] = {line.custom_id: structured for line in lines}
        return batch.id

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's state and counts, as Anthropic reports them."""
        batch = self._retrieve(batch_id)
        counts = batch.request_counts
        return BatchStatus(
            batch_id=batch_id,
            state=_state(batch),
            total=counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired,
            done=counts.succeeded,
            failed=counts.errored + counts.canceled + counts.expired,
            provider_state=batch.processing_status,
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """Every call's result, read from the batch's results file (any order)."""
        client = self._client
        batch = self._retrieve(batch_id)
        state = _state(batch)
        if state == "in_progress":
            raise ProviderError(
                f"Anthropic batch {batch_id} has not ended ({batch.processing_status}): "
                "its results are not ready.",
                provider=client.name,
            )
        sdk = client._client
        data = client.sdk_call(
            lambda t: sdk.messages.batches.with_raw_response.results(batch_id, timeout=t).read(),
            timeout_s=max(client.timeout_s, _BULK_TIMEOUT_S),
        )
        with self._lock:
            sent = self._sent.get(batch_id)
        found = [
            result
            for raw in data.decode("utf-8", errors="replace").splitlines()
            if raw.strip() and (result := self._read_line(raw, sent)) is not None
        ]
        # Anthropic gives every request a line; a call this object sent and finds none for
        # is still named (after a restart the caller knows its own calls).
        return every_call(found, sent, missing="canceled" if state == "canceled" else "expired")

    def cancel(self, batch_id: str) -> None:
        """Ask Anthropic to cancel the batch (it goes through "canceling"); works after a stop."""
        sdk = self._client._client
        self._client.sdk_call(lambda t: sdk.messages.batches.cancel(batch_id, timeout=t), cancellable=False)

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        """The batch a lost submission created: Anthropic's listing carries no metadata, so the
        oldest batch created from ``since`` (less a minute of clock skew) to ten minutes after,
        holding exactly ``total`` requests."""
        sdk = self._client._client
        page = self._client.sdk_call(lambda t: sdk.messages.batches.list(limit=100, timeout=t))
        found: list[tuple[float, str]] = []
        for batch in page.data:
            created = batch.created_at.timestamp()
            counts = batch.request_counts
            size = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if since - 60 <= created <= since + 600 and size == total:
                found.append((created, batch.id))
        return min(found)[1] if found else None

    def _retrieve(self, batch_id: str) -> MessageBatch:
        sdk = self._client._client
        return self._client.sdk_call(lambda t: sdk.messages.batches.retrieve(batch_id, timeout=t))

    def _read_line(self, raw: str, sent: dict[str, bool] | None) -> BatchResult | None:
        """One line of the results file; None when it names no call."""
        client = self._client
        try:
            line = json.loads(raw)
        except ValueError:
            custom_id = custom_id_in(raw)
            if custom_id is None:
                return None
            return BatchResult(
                custom_id=custom_id,
                kind="errored",
                error=f"{_LABEL}'s result line for this call could not be read.",
            )
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str):
            return None
        result = line.get("result")
        result = result if isinstance(result, dict) else {}
        kind = result.get("type")
        if kind in ("canceled", "expired"):
            return BatchResult(
                custom_id=custom_id,
                kind=str(kind),
                error="The batch was canceled before this call was answered."
                if kind == "canceled"
                else "Anthropic did not answer this call before the batch expired.",
            )
        if kind == "succeeded":
            structured = sent.get(custom_id, client._structured) if sent is not None else client._structured
            try:
                completion = client._from_message(
                    Message.model_validate(result.get("message")),
                    structured,
                    temperature=client._temperature_to_send(),
                )
            except ValueError:  # pydantic's ValidationError: not a Messages reply
                return BatchResult(
                    custom_id=custom_id,
                    kind="errored",
                    error=f"{_LABEL} sent something that is not a Messages API reply for this call.",
                )
            except LLMError as exc:
                return BatchResult(custom_id=custom_id, kind="errored", error=str(exc), usage=exc.usage)
            return BatchResult(custom_id=custom_id, kind="succeeded", completion=completion)
        return BatchResult(custom_id=custom_id, kind="errored", error=self._errored(result.get("error")))

    def _errored(self, response: Any) -> str:
        """What an errored result says, worded as the sync call's error would be."""
        client = self._client
        error = response.get("error") if isinstance(response, dict) else None
        error = error if isinstance(error, dict) else {}
        detail = str(error.get("message") or "")
        status = _ERROR_STATUS.get(str(error.get("type") or ""))
        if status is None:
            said = errors_map.clean_detail(detail, client._secrets) or "no reason given"
            return f"{_LABEL} could not run this call ({said})."
        # As the sync path does: a model or proxy that rejects structured output or a
        # temperature is sent neither again, so this call resubmitted can succeed.
        if errors_map.rejects_structured_output(status, detail):
            client._structured = False
        client._rejects_temperature(HTTPFailure(status, detail, {}))
        return str(
            errors_map.from_status(
                provider=client.name,
                label=_LABEL,
                key_hint=client._key_hint,
                status=status,
                detail=detail,
                secrets=client._secrets,
            )
        )


def _state(batch: MessageBatch) -> str:
    """The normalised state: an ended batch is "canceled" when a cancel was asked for,
    "expired" when calls expired, else "ended"."""
    if batch.processing_status != "ended":
        return "in_progress"
    if batch.cancel_initiated_at is not None:
        return "canceled"
    return "expired" if batch.request_counts.expired else "ended"


def _content(request: LLMRequest) -> str | list[TextBlockParam]:
    """The user message's content: the prompt as one string, or, with a cache hint, as the
    cached prefix (a breakpoint with the hinted lifetime) and the rest."""
    hint, prompt = request.cache, request.prompt
    if hint is None or not 0 < hint.prefix_chars <= len(prompt):
        return prompt
    prefix: TextBlockParam = {
        "type": "text",
        "text": prompt[: hint.prefix_chars],
        "cache_control": {"type": "ephemeral", "ttl": hint.ttl},
    }
    rest = prompt[hint.prefix_chars :]
    return [prefix, {"type": "text", "text": rest}] if rest else [prefix]


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
    split = getattr(usage, "cache_creation", None) if usage is not None else None
    one_hour = count(split, "ephemeral_1h_input_tokens")
    # The split by lifetime is part of the writes; a server that reports only the split
    # still wrote what it lists.
    written = max(
        count(usage, "cache_creation_input_tokens"), one_hour + count(split, "ephemeral_5m_input_tokens")
    )
    return Usage(
        input_tokens=count(usage, "input_tokens"),
        cached_tokens=count(usage, "cache_read_input_tokens"),
        cache_write_tokens=written,
        output_tokens=count(usage, "output_tokens"),
        cache_write_1h_tokens=one_hour,
    )
