"""What the SDK adapters share: the call with its deadline, retries and structured-output
fallback, and error mapping.

**Deadline.** ``timeout`` is a deadline per call, retries and slow servers included: every
socket operation is bounded by the time left (``rr_core.llm.deadline``), the SDKs' own
retries are off, and the retry loop here waits only as long as the deadline allows. A server
that asks to wait longer than the time left (``retry-after: 90`` on a 5 s call) fails the call
at once, saying so. Waiting is reported to ``on_wait(seconds, reason)``; a set ``cancel``
event stops a call while it waits or while the server is silent (``RunCancelled``).

**Structured output.** Each call asks for structured output until a server rejects it; that
call is then repeated without it, and the adapter stops asking for good.

**Errors.** Every SDK error becomes the ``LLMError`` a user can act on, raised ``from None``:
the SDK error holds the request, headers and key included.

Knows no SDK: an adapter names its SDK's exception classes (``SDKErrors``; the OpenAI and
Anthropic SDKs share that hierarchy) and supplies ``_send`` and ``_http_failure``. Also here:
building a ``Completion`` from an SDK reply, and reading its token counts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple, TypeVar

from rr_core.errors import LLMError, ProviderError, RunCancelled
from rr_core.llm import errors_map
from rr_core.llm.base import BatchAPI, Completion, Identity, LLMRequest, OnWait, Usage
from rr_core.llm.config import normalise_url
from rr_core.llm.deadline import Deadline, active

# Statuses worth another attempt (as the SDKs' own retry rules have them).
_RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# Waits between attempts when the server names none: 0.5 s, 1 s, 2 s, ... at most 8 s.
_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 8.0

_T = TypeVar("_T")


class SDKErrors(NamedTuple):
    """An SDK's exception classes."""

    # everything the SDK raises (a tuple: an SDK that lets its HTTP stack's errors through)
    base: type[Exception] | tuple[type[Exception], ...]
    timeout: type[Exception]  # no answer in time (a kind of connection error: checked first)
    connection: type[Exception]  # could not connect


class HTTPFailure(NamedTuple):
    """What an SDK's HTTP status error says: the status, the provider's message, the headers."""

    status: int
    detail: str
    headers: Mapping[str, str]


class SDKAdapter:
    """Base of the SDK adapters: ``complete`` and the error it raises.

    An adapter's constructor sets the attributes below and calls ``_init_calls``.
    """

    sdk_errors: ClassVar[SDKErrors]
    key_var: ClassVar[str]  # the environment variable that holds the key
    max_concurrency: int | None = None  # the caller's choice (calls_at_once)
    batch: BatchAPI | None  # the adapter's batch API, set by its constructor
    name: str
    api: str  # the wire format: "responses", "chat", "messages"
    model: str
    base_url: str
    timeout_s: float
    max_retries: int
    _label: str  # the provider as messages name it ("OpenAI")
    _key_hint: str  # what to do when the key is rejected
    _secrets: tuple[str | None, ...]
    # Flips to False for good once the server rejects structured output.
    _structured: bool
    _on_wait: OnWait | None
    _cancel: threading.Event

    def _init_calls(
        self, *, max_retries: int, on_wait: OnWait | None, cancel: threading.Event | None
    ) -> None:
        self.max_retries = max(0, max_retries)
        self._on_wait = on_wait
        self._cancel = cancel if cancel is not None else threading.Event()

    def identity(self) -> Identity:
        """Provider, wire format, normalised server URL, model and the temperature the client
        is configured to send. Fixed for the client's configuration: a server that rejects the
        temperature mid-run changes what is sent (each call records it), never the cache key,
        so a fresh process finds every reply again."""
        return {
            "provider": self.name,
            "api": self.api,
            "base_url": normalise_url(self.base_url),
            "model": self.model,
            "temperature": self.temperature_for(self.model),
        }

    def temperature_for(self, model: str) -> float | None:
        """The temperature the client is configured to send with a call to ``model``; None:
        none (the API or the model takes none)."""
        return None

    def _rejects_temperature(self, failure: HTTPFailure) -> bool:
        """Whether ``failure`` says the model takes no temperature (then it is no longer
        sent, and the call is repeated without it)."""
        return False

    def complete(self, request: LLMRequest) -> Completion:
        """Send one request and return the completion, or raise an ``LLMError``.

        Ends within ``min(request.timeout_s, self.timeout_s)`` seconds, retries included
        (``RunCancelled`` sooner when the cancel event is set).
        """
        model = request.model or self.model
        budget = min(request.timeout_s, self.timeout_s)
        deadline = Deadline(time.monotonic() + budget, self._cancel)
        structured = self._structured
        retries = 0
        reached = False  # whether any attempt made a connection (then it may have been billed)
        with active(deadline):
            while True:
                self._check_cancel()
                left = deadline.remaining()
                if left <= 0:
                    raise errors_map.timed_out(
                        provider=self.name, label=self._label, timeout_s=budget, attempts=retries + 1
                    )
                try:
                    return self._send(request, model, left, structured=structured)
                except json.JSONDecodeError:  # the SDKs parse a JSON content type unchecked
                    raise errors_map.not_json(
                        provider=self.name, label=self._label, base_url=self.base_url
                    ) from None
                except self.sdk_errors.base as exc:
                    self._check_cancel()
                    reached = reached or not errors_map.sent_nothing(exc)
                    failure = self._http_failure(exc)
                    if (
                        structured
                        and failure is not None
                        and errors_map.rejects_structured_output(failure.status, failure.detail)
                    ):
                        self._structured = structured = False
                        continue  # the same call without structured output: not a retry
                    if failure is not None and self._rejects_temperature(failure):
                        continue  # the same call without a temperature: not a retry
                    error = self._error(exc, budget, attempts=retries + 1, reached=reached)
                    wait = self._retry_wait(exc, failure, retries)
                    if wait is None or retries >= self.max_retries:
                        raise error from None
                    left = deadline.remaining()
                    if wait >= left:
                        raise errors_map.out_of_time(
                            error, label=self._label, wait=wait, left=left, timeout_s=budget
                        ) from None
                    retries += 1
                    self._wait(
                        wait, f"{errors_map.retry_reason(error)}; retry {retries} of {self.max_retries}"
                    )

    def sdk_call(
        self, op: Callable[[float], _T], *, timeout_s: float | None = None, cancellable: bool = True
    ) -> _T:
        """``op(timeout)``, one SDK call that is not a completion (a batch upload, a status),
        within a deadline of ``timeout_s`` (default: the client's), its errors mapped as a
        completion's are. Tried once: a retried upload or batch creation could create a
        second batch. ``cancellable`` False: the cancel event does not stop it (cancelling a
        batch must work after a run was stopped)."""
        budget = timeout_s if timeout_s is not None else self.timeout_s
        cancel = self._cancel if cancellable else None
        deadline = Deadline(time.monotonic() + budget, cancel)
        with active(deadline):
            if cancellable:
                self._check_cancel()
            try:
                return op(budget)
            except json.JSONDecodeError:
                raise errors_map.not_json(
                    provider=self.name, label=self._label, base_url=self.base_url
                ) from None
            except self.sdk_errors.base as exc:
                if cancellable:
                    self._check_cancel()
                raise self._error(exc, budget) from None

    def _wait(self, seconds: float, reason: str) -> None:
        if self._on_wait is not None:
            self._on_wait(seconds, reason)
        if self._cancel.wait(seconds):
            self._check_cancel()

    def _check_cancel(self) -> None:
        if self._cancel.is_set():
            raise RunCancelled(f"The call to {self._label} was stopped.")

    def _retry_wait(self, exc: Exception, failure: HTTPFailure | None, retries: int) -> float | None:
        """Seconds to wait before another attempt, or None when the error is final."""
        if failure is not None:
            # The providers' own hint, as both SDKs honour it.
            hint = str(failure.headers.get("x-should-retry", "")).lower()
            if hint == "false" or (failure.status not in _RETRY_STATUSES and hint != "true"):
                return None
            asked = errors_map.retry_after_seconds(failure.headers)
            if asked is not None:
                return asked
        elif isinstance(exc, self.sdk_errors.timeout) or not isinstance(exc, self.sdk_errors.connection):
            return None  # the deadline is spent, or not a transport problem
        return float(min(_BACKOFF_S * 2**retries, _MAX_BACKOFF_S))

    def _send(self, request: LLMRequest, model: str, timeout: float, *, structured: bool) -> Completion:
        """One call through the SDK, with or without structured output."""
        raise NotImplementedError

    def _http_failure(self, exc: Exception) -> HTTPFailure | None:
        """What ``exc`` says when it is the SDK's HTTP status error, else None."""
        raise NotImplementedError

    def _error(self, exc: Exception, timeout: float, attempts: int = 1, *, reached: bool = False) -> LLMError:
        """``exc`` as the project's error; ``reached``: an earlier attempt of the same call made a
        connection (a refusal now does not make the call unsent)."""
        if isinstance(exc, self.sdk_errors.timeout):
            return errors_map.timed_out(
                provider=self.name, label=self._label, timeout_s=timeout, attempts=attempts
            )
        if isinstance(exc, self.sdk_errors.connection):
            return errors_map.unreachable(
                provider=self.name,
                base_url=self.base_url,
                sent_nothing=errors_map.sent_nothing(exc) and not reached,
            )
        failure = self._http_failure(exc)
        if failure is not None:
            return errors_map.from_status(
                provider=self.name,
                label=self._label,
                key_hint=self._key_hint,
                status=failure.status,
                detail=failure.detail,
                headers=failure.headers,
                secrets=self._secrets,
            )
        said = errors_map.clean_detail(str(exc), self._secrets)
        return ProviderError(f"{self._label} call failed: {said}", provider=self.name)


def completion(
    reply: Any,
    text: str,
    usage_of: Callable[[Any], Usage],
    *,
    structured: bool,
    api: str,
    temperature: float | None = None,
    cache_hint_sent: bool = False,
    **notes: object,
) -> Completion:
    """The ``Completion`` for an SDK reply: its usage, model and id read off the reply.

    ``raw`` holds the reply's id, the ``api`` and the ``notes`` (a status, a stop reason).
    """
    return Completion(
        text=text,
        usage=usage_of(getattr(reply, "usage", None)),
        model=str(getattr(reply, "model", "") or ""),
        structured=structured,
        temperature=temperature,
        raw={"id": getattr(reply, "id", ""), "api": api, **notes},
        cache_hint_sent=cache_hint_sent,
    )


def count(obj: Any, name: str) -> int:
    """``obj.name`` as an int; 0 when the object, the field or its value is missing."""
    value = getattr(obj, name, None) if obj is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
