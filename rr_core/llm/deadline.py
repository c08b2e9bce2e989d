"""A deadline for each provider call, enforced on every socket operation, and cancellation.

The SDKs' ``timeout`` bounds each read, not the call: a server that sends one byte every
1.5 s holds a 5 s-timeout call for as long as it likes. Here every connect, read and write
of the HTTP stack the SDKs share (httpx2 over httpcore2) is bounded by the time left of the
current call's deadline, and reads wait in short slices so that a cancellation is noticed
while the server is silent.

The deadline of the call running in this thread is a context variable (``active``); the
network backend of an SDK's HTTP client is wrapped once (``bounded_http_client``). A
connection kept alive from an earlier call reads the current call's deadline.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpcore2
import httpx2

# How long a read waits at a time when the call can be cancelled.
_SLICE_S = 0.2


@dataclass(frozen=True, slots=True)
class Deadline:
    """When the current call must end (``time.monotonic()``), and what may cancel it."""

    at: float
    cancel: threading.Event | None = None

    def remaining(self) -> float:
        """Seconds left (negative once past)."""
        return self.at - time.monotonic()

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled."""
        return self.cancel is not None and self.cancel.is_set()


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("rr_call_deadline", default=None)


@contextmanager
def active(deadline: Deadline) -> Iterator[Deadline]:
    """Make ``deadline`` bound the socket operations of this thread until the block ends."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


class CallCancelled(httpcore2.ReadError):
    """Raised inside the HTTP stack when the call's cancel event is set."""


_T = TypeVar("_T")


def _cap(timeout: float | None, deadline: Deadline | None, error: type[Exception]) -> float | None:
    if deadline is None:
        return timeout
    if deadline.cancelled:
        raise CallCancelled("the call was cancelled")
    left = deadline.remaining()
    if left <= 0:
        raise error("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


def _sliced(op: Callable[[float | None], _T], timeout: float | None) -> _T:
    """``op(timeout)`` (a read), bounded by the deadline and retried in short slices while
    nothing arrives, so that a cancellation is seen within a slice."""
    deadline = _CURRENT.get()
    if deadline is None:
        return op(timeout)
    ends = None if timeout is None else time.monotonic() + timeout
    while True:
        if deadline.cancelled:
            raise CallCancelled("the call was cancelled")
        now = time.monotonic()
        left = deadline.at - now if ends is None else min(deadline.at, ends) - now
        if left <= 0:
            raise httpcore2.ReadTimeout("the call's deadline has passed")
        try:
            return op(left if deadline.cancel is None else min(left, _SLICE_S))
        except httpcore2.ReadTimeout:
            continue  # nothing arrived in this slice: check the time and the cancel event again


class _Stream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _sliced(lambda t: self._inner.read(max_bytes, t), timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # Not sliced: a write that timed out may have sent part of the buffer.
        self._inner.write(buffer, _cap(timeout, _CURRENT.get(), httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _Stream:
        capped = _cap(timeout, _CURRENT.get(), httpcore2.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, capped))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        capped = _cap(timeout, _CURRENT.get(), httpcore2.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, capped, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        capped = _cap(timeout, _CURRENT.get(), httpcore2.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, capped, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_http_client(client: httpx2.Client) -> httpx2.Client:
    """``client`` with every connection pool's network backend bounded by the call deadline.

    Proxies from the environment keep working: each transport the client mounted is wrapped.
    Raises ``RuntimeError`` if any transport has no connection pool to bound (a pinned
    dependency changed, or a transport of another kind was mounted), rather than silently
    losing the deadline on the requests it carries.
    """
    # A mount of None means "no proxy here": those requests use the client's own transport.
    mounts = [(str(pattern.pattern), t) for pattern, t in client._mounts.items() if t is not None]  # noqa: SLF001 - see docstring
    transports = [("the client's own transport", client._transport), *mounts]  # noqa: SLF001
    unbounded = []
    for name, transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            unbounded.append(f"{name} ({type(transport).__name__})")
            continue
        if not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]  # noqa: SLF001
    if unbounded:
        raise RuntimeError(
            "the HTTP client has transports without a connection pool to bound: "
            + ", ".join(unbounded)
            + "; check the httpx2 version"
        )
    return client
