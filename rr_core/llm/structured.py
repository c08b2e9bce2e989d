"""What the SDK adapters share: the call with its structured-output fallback, and error mapping.

Each call asks for structured output until a server rejects it; that call is then repeated
once without it, and the adapter stops asking for good. Every SDK error becomes the
``LLMError`` a user can act on, raised ``from None``: the SDK error holds the request, headers
and key included.

Knows no SDK: an adapter names its SDK's exception classes (``SDKErrors``; the OpenAI and
Anthropic SDKs share that hierarchy) and supplies ``_send`` and ``_http_failure``. Also here:
building a ``Completion`` from an SDK reply, and reading its token counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

from rr_core.errors import LLMError, ProviderError
from rr_core.llm import errors_map
from rr_core.llm.base import Completion, LLMRequest, Usage


class SDKErrors(NamedTuple):
    """An SDK's exception classes."""

    base: type[Exception]  # everything the SDK raises
    timeout: type[Exception]  # no answer in time (a kind of connection error: checked first)
    connection: type[Exception]  # could not connect


class HTTPFailure(NamedTuple):
    """What an SDK's HTTP status error says: the status, the provider's message, the headers."""

    status: int
    detail: str
    headers: Mapping[str, str]


class SDKAdapter:
    """Base of the SDK adapters: ``complete`` and the error it raises."""

    sdk_errors: ClassVar[SDKErrors]
    key_var: ClassVar[str]  # the environment variable that holds the key
    name: str
    model: str
    base_url: str
    timeout_s: float
    _label: str  # the provider as messages name it ("OpenAI")
    _secrets: tuple[str | None, ...]
    # Flips to False for good once the server rejects structured output.
    _structured: bool

    def complete(self, request: LLMRequest) -> Completion:
        """Send one request and return the completion, or raise an ``LLMError``."""
        model = request.model or self.model
        timeout = min(request.timeout_s, self.timeout_s)
        structured = self._structured
        try:
            try:
                return self._send(request, model, timeout, structured=structured)
            except self.sdk_errors.base as exc:
                failure = self._http_failure(exc)
                if not (
                    structured
                    and failure is not None
                    and errors_map.rejects_structured_output(failure.status, failure.detail)
                ):
                    raise
                self._structured = False
                return self._send(request, model, timeout, structured=False)
        except self.sdk_errors.base as exc:
            raise self._error(exc, timeout) from None

    def _send(self, request: LLMRequest, model: str, timeout: float, *, structured: bool) -> Completion:
        """One call through the SDK, with or without structured output."""
        raise NotImplementedError

    def _http_failure(self, exc: Exception) -> HTTPFailure | None:
        """What ``exc`` says when it is the SDK's HTTP status error, else None."""
        raise NotImplementedError

    def _error(self, exc: Exception, timeout: float) -> LLMError:
        if isinstance(exc, self.sdk_errors.timeout):
            return errors_map.timed_out(provider=self.name, label=self._label, timeout_s=timeout)
        if isinstance(exc, self.sdk_errors.connection):
            return errors_map.unreachable(provider=self.name, base_url=self.base_url)
        failure = self._http_failure(exc)
        if failure is not None:
            return errors_map.from_status(
                provider=self.name,
                label=self._label,
                key_var=self.key_var,
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
        raw={"id": getattr(reply, "id", ""), "api": api, **notes},
    )


def count(obj: Any, name: str) -> int:
    """``obj.name`` as an int; 0 when the object, the field or its value is missing."""
    value = getattr(obj, name, None) if obj is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
