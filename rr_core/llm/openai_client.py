"""OpenAI adapter: the Responses API, or Chat Completions for OpenAI-compatible servers.

Responses is OpenAI's primary API; every call sends ``store=False`` so documents are not kept
server side, and ``temperature=0`` where the model takes one: OpenAI's reasoning models (the
o-series, GPT-5 and later, except their ``-chat`` variants) answer a temperature with a 400
("Only the default (1) value is supported"), so none is sent to them; a server that rejects it
for any other model gets the call repeated once without it, and the client stops sending it. Chat Completions is for servers that speak the older wire format (Ollama, vLLM,
llama.cpp) through ``base_url``; they often need no key, and some reject structured output,
in which case the call is repeated once without it and the client stops asking.

``OpenAIBatch`` (the client's ``batch``) sends many calls through OpenAI's Batch API: a JSONL
file of the very bodies the sync calls send, answered within 24 hours at the batch price.

Caching is automatic on OpenAI from 1,024 tokens; a request's cache hint adds
``prompt_cache_key`` (Responses only: compatible servers may reject unknown fields, so a Chat
Completions body gets nothing new).

A compatible server gets only the key given to the client: never ``OPENAI_API_KEY``, and no
``Authorization`` header at all without one. The deadline, retries and cancellation are
``SDKAdapter``'s (the SDK's own retries are off).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import openai
from openai.types import Batch
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat
from openai.types.responses import Response, ResponseTextConfigParam

from rr_core.errors import ConfigError, LLMError, MissingKeyError, ProviderError
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
        self.batch: BatchAPI | None = OpenAIBatch(self)
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
        structured = structured and request.schema.STRUCTURED  # a plain-text reply asks for none
        temperature = self._temperature_to_send(model)
        body: dict[str, Any] = {"model": model}
        if self.api == "responses":
            body.update(input=request.prompt, store=False, max_output_tokens=request.max_output_tokens)
            if temperature is not None:
                body["temperature"] = temperature
            if structured:
                body["text"] = _text_format(request.schema)
            if request.cache is not None:
                # Routes calls that share the prefix to the same cache; the prompt itself is
                # unchanged (its prefix is byte-identical across them by construction).
                body["prompt_cache_key"] = request.cache.key
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
        structured = structured and request.schema.STRUCTURED  # a plain-text reply asks for none
        body = self.params(request, model, structured=structured)
        temperature = body.get("temperature")
        if self.api == "responses":
            response = self._client.responses.create(**body, timeout=timeout)
            return self._from_response(response, structured, temperature, hinted="prompt_cache_key" in body)
        chat = self._client.chat.completions.create(**body, timeout=timeout, extra_headers=self._auth or None)
        return self._from_chat(chat, structured, temperature)

    def _from_response(
        self, response: Response, structured: bool, temperature: float | None, *, hinted: bool = False
    ) -> Completion:
        try:
            text = response.output_text or ""
        except (AttributeError, TypeError):  # not a Responses reply at all
            raise self._not_a_reply("Responses API") from None
        if not text.strip():
            raise errors_map.empty_output(
                provider=self.name, label=self._label, why=_why_empty_response(response),
                usage=_billed(response, responses_usage),
            )  # fmt: skip
        return completion(
            response,
            text,
            responses_usage,
            structured=structured,
            api="responses",
            temperature=temperature,
            cache_hint_sent=hinted,
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
            raise errors_map.empty_output(
                provider=self.name, label=self._label, why=why, usage=_billed(chat, chat_usage)
            )
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


# -- the Batch API ---------------------------------------------------------------------------

# OpenAI's limits for one batch (input file): lines and bytes.
BATCH_MAX_LINES = 50_000
BATCH_MAX_BYTES = 200 * 1024 * 1024
# Uploading or downloading a batch file may take longer than one call's deadline.
_FILE_TIMEOUT_S = 900.0
_BATCH_STATES = {
    "validating": "in_progress",
    "in_progress": "in_progress",
    "finalizing": "in_progress",
    "cancelling": "in_progress",
    "completed": "ended",
    "expired": "expired",
    "failed": "failed",
    "cancelled": "canceled",
}
# Codes of a result line's `error` that say the call was never run.
# The metadata field that carries our own id for a batch (``find``).
MARKER_FIELD = "rr_batch"
_NOT_RUN = {"batch_expired": "expired", "batch_cancelled": "canceled", "batch_canceled": "canceled"}


class _Sent(NamedTuple):
    """How one call of a batch was sent: with structured output, and which temperature."""

    structured: bool
    temperature: float | None


class OpenAIBatch:
    """OpenAI's Batch API for one ``OpenAIClient`` (``BatchAPI``).

    Each line's body is ``client.params``, exactly what the sync call sends (``store=False``
    for Responses), to ``/v1/responses`` or ``/v1/chat/completions`` as the client's API is.
    Results come back as the output and error files, in any order; each reply is read by the
    sync path's own code. The calls submitted are known from the batch's input file, so a new
    process reads the results of a batch an old one submitted.
    """

    def __init__(self, client: OpenAIClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        # What this object submitted (saves reading the input file back): batch id -> call -> how.
        self._sent: dict[str, dict[str, _Sent]] = {}

    @property
    def endpoint(self) -> Literal["/v1/responses", "/v1/chat/completions"]:
        """The endpoint every line of a batch goes to."""
        return "/v1/responses" if self._client.api == "responses" else "/v1/chat/completions"

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        """Upload the lines as a JSONL file and create a 24-hour batch of it (``marker`` goes in
        its metadata, so ``find`` knows it again)."""
        client = self._client
        check_lines(lines, label="OpenAI's Batch API", max_lines=BATCH_MAX_LINES)
        structured = client._structured
        sent: dict[str, _Sent] = {}
        rows: list[str] = []
        for line in lines:
            body = client.params(line.request, line.request.model or client.model, structured=structured)
            temperature = body.get("temperature")
            sent[line.custom_id] = _Sent(structured, temperature if isinstance(temperature, float) else None)
            row = {"custom_id": line.custom_id, "method": "POST", "url": self.endpoint, "body": body}
            rows.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        data = ("\n".join(rows) + "\n").encode("utf-8")
        if len(data) > BATCH_MAX_BYTES:
            raise ConfigError(
                f"This batch is {len(data) / 2**20:,.0f} MB; OpenAI takes at most "
                f"{BATCH_MAX_BYTES / 2**20:,.0f} MB in one batch. Split it into several batches."
            )
        sdk, auth = client._client, client._auth or None
        metadata = {"label": errors_map.redact(label, client._secrets)[:500]}
        if marker:
            metadata[MARKER_FIELD] = marker
        try:
            uploaded = client.sdk_call(
                lambda t: sdk.files.create(
                    file=("rr-batch.jsonl", data, "application/jsonl"),
                    purpose="batch",
                    timeout=t,
                    extra_headers=auth,
                ),
                timeout_s=max(client.timeout_s, _FILE_TIMEOUT_S),
            )
            batch = client.sdk_call(
                lambda t: sdk.batches.create(
                    input_file_id=uploaded.id,
                    endpoint=self.endpoint,
                    completion_window="24h",
                    metadata=metadata,
                    timeout=t,
                    extra_headers=auth,
                )
            )
        except ProviderError as exc:
            raise self._no_batch_api(exc) from None
        with self._lock:
            self._sent[batch.id] = sent
        return batch.id

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's state and counts, as OpenAI reports them."""
        batch = self._retrieve(batch_id)
        counts = batch.request_counts
        with self._lock:
            known = len(self._sent.get(batch_id, ()))
        return BatchStatus(
            batch_id=batch_id,
            state=_BATCH_STATES.get(batch.status, "in_progress"),
            total=counts.total if counts is not None and counts.total else known,
            done=counts.completed if counts is not None else 0,
            failed=counts.failed if counts is not None else 0,
            provider_state=batch.status,
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """Every call's result, read from the output and error files (any order)."""
        client = self._client
        batch = self._retrieve(batch_id)
        state = _BATCH_STATES.get(batch.status, "in_progress")
        if state == "in_progress":
            raise ProviderError(
                f"OpenAI batch {batch_id} has not finished ({batch.status}): its results are not ready.",
                provider=client.name,
            )
        with self._lock:
            sent = self._sent.get(batch_id)
        if sent is None:
            sent = self._read_input(batch.input_file_id)
        found: list[BatchResult] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for raw in self._download(file_id).splitlines():
                if raw.strip():
                    result = self._read_line(raw, sent)
                    if result is not None:
                        found.append(result)
        if state == "failed":
            why = f"OpenAI refused the batch: {_batch_errors(batch, client._secrets)}"
            return every_call(found, sent, missing="errored", why=why)
        return every_call(found, sent, missing="canceled" if state == "canceled" else "expired")

    def cancel(self, batch_id: str) -> None:
        """Ask OpenAI to cancel the batch (it goes through "cancelling"); works after a stop."""
        client, sdk = self._client, self._client._client
        client.sdk_call(
            lambda t: sdk.batches.cancel(batch_id, timeout=t, extra_headers=client._auth or None),
            cancellable=False,
        )

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        """The batch created with ``marker`` in its metadata, among the most recent ones."""
        client, sdk = self._client, self._client._client
        page = client.sdk_call(
            lambda t: sdk.batches.list(limit=100, timeout=t, extra_headers=client._auth or None)
        )
        for batch in page.data:
            if batch.metadata and batch.metadata.get(MARKER_FIELD) == marker:
                return batch.id
        return None

    def _retrieve(self, batch_id: str) -> Batch:
        client, sdk = self._client, self._client._client
        return client.sdk_call(
            lambda t: sdk.batches.retrieve(batch_id, timeout=t, extra_headers=client._auth or None)
        )

    def _download(self, file_id: str) -> str:
        client, sdk = self._client, self._client._client
        content = client.sdk_call(
            lambda t: sdk.files.content(file_id, timeout=t, extra_headers=client._auth or None),
            timeout_s=max(client.timeout_s, _FILE_TIMEOUT_S),
        )
        return content.content.decode("utf-8", errors="replace")

    def _read_input(self, file_id: str) -> dict[str, _Sent]:
        """The calls of a batch another process submitted, from its input file."""
        sent: dict[str, _Sent] = {}
        for raw in self._download(file_id).splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            body = line.get("body") if isinstance(line, dict) else None
            if isinstance(body, dict) and isinstance(line.get("custom_id"), str):
                temperature = body.get("temperature")
                sent[line["custom_id"]] = _Sent(
                    "text" in body or "response_format" in body,
                    float(temperature) if isinstance(temperature, (int, float)) else None,
                )
        return sent

    def _read_line(self, raw: str, sent: Mapping[str, _Sent]) -> BatchResult | None:
        """One line of an output or error file; None when it names no call."""
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
                error="OpenAI's result line for this call could not be read.",
            )
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str):
            return None
        response = line.get("response")
        response = response if isinstance(response, dict) else {}
        status, body, error = response.get("status_code"), response.get("body"), line.get("error")
        if error or status != 200:
            return self._failed(custom_id, status, body, error)
        how = sent.get(custom_id) or _Sent(client._structured, client._temperature_to_send(client.model))
        try:
            if client.api == "responses":
                completion = client._from_response(Response.model_validate(body), *how)
            else:
                completion = client._from_chat(ChatCompletion.model_validate(body), *how)
        except ValueError:  # pydantic's ValidationError: not the reply it should be
            kind = "Responses API" if client.api == "responses" else "Chat Completions"
            return BatchResult(custom_id=custom_id, kind="errored", error=str(client._not_a_reply(kind)))
        except LLMError as exc:
            return BatchResult(custom_id=custom_id, kind="errored", error=str(exc), usage=exc.usage)
        return BatchResult(custom_id=custom_id, kind="succeeded", completion=completion)

    def _failed(self, custom_id: str, status: Any, body: Any, error: Any) -> BatchResult:
        """The result of a line that carries an error: its HTTP status and the provider's word."""
        client = self._client
        error = error if isinstance(error, dict) else {}
        not_run = _NOT_RUN.get(str(error.get("code") or ""))
        if not_run is not None:
            said = errors_map.clean_detail(str(error.get("message") or ""), client._secrets)
            return BatchResult(custom_id=custom_id, kind=not_run, error=said or None)
        inner = body.get("error") if isinstance(body, dict) else None
        detail = _said(inner) or _said(error) or (str(body) if isinstance(body, str) else "")
        if not isinstance(status, int) or status < 400:
            said = errors_map.clean_detail(detail, client._secrets) or "no reason given"
            message = f"{client._label} could not run this call ({said})."
            return BatchResult(custom_id=custom_id, kind="errored", error=message)
        failure = HTTPFailure(status, detail, {})
        # As the sync path does: a server that rejects structured output or a temperature
        # is sent neither again, so this call resubmitted can succeed.
        if errors_map.rejects_structured_output(status, detail):
            client._structured = False
        client._rejects_temperature(failure)
        reason = errors_map.from_status(
            provider=client.name,
            label=client._label,
            key_hint=client._key_hint,
            status=status,
            detail=detail,
            secrets=client._secrets,
        )
        return BatchResult(custom_id=custom_id, kind="errored", error=str(reason))

    def _no_batch_api(self, exc: ProviderError) -> ProviderError:
        """A 404 or 405 to a batch call: the server has no Batch API (a compatible server)."""
        if exc.status not in (404, 405):
            return exc
        return ProviderError(
            f"{self._client._label} does not offer the Batch API (HTTP {exc.status} at "
            f"{errors_map.safe_url(self._client.base_url)}): send these calls now instead.",
            provider=exc.provider,
            status=exc.status,
        )


def _said(error: Any) -> str:
    """The message (with its code) of an error object in a result line."""
    if not isinstance(error, dict) or not error.get("message"):
        return ""
    message, code = str(error["message"]), error.get("code")
    return f"{message} ({code})" if code and str(code) not in message else message


def _batch_errors(batch: Batch, secrets: tuple[str | None, ...]) -> str:
    """What OpenAI said of a batch it refused (the first few of its errors)."""
    errors = batch.errors.data if batch.errors is not None and batch.errors.data else []
    parts = [
        (f"line {e.line}: " if e.line is not None else "") + (e.message or e.code or "no reason given")
        for e in errors[:3]
    ]
    return errors_map.clean_detail("; ".join(parts) or "no reason given", secrets)


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


def _billed(reply: Any, read: Callable[[Any], Usage]) -> Usage | None:
    """What a reply left empty was billed, where it says (None: no usage in it)."""
    usage = getattr(reply, "usage", None)
    return read(usage) if usage is not None else None


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
