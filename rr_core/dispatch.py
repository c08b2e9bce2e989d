"""The dispatch chain under the runner: call cache → in-flight de-duplication → warm-up order
→ a sender (send now, or collect into a provider batch).

Every call a run makes goes through one ``Dispatcher``:

1. **call cache**: a reply stored under the call's key answers it (paid before, not again);
2. **de-duplication**: the same call already in flight (two methods, two trials sending one
   prompt) is waited for, not paid twice; if that one fails, this one tries for itself;
3. **warm-up order**: calls that share a cacheable prefix (several questions over one
   document) are sent one first and the rest once its reply has arrived: calls sent at the
   same instant all miss the provider's prompt cache;
4. **a sender**: ``send now`` (the executor's own call, in its pool) or a ``BatchSender``
   that collects calls into one provider batch.

The chain knows calls only by key, request and prefix; it never asks which method, stage or
provider made them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from rr_core.errors import RunCancelled
from rr_core.llm.base import Completion, LLMRequest
from rr_core.store.base import CachedCall


@dataclass(slots=True, kw_only=True)
class Outgoing:
    """One call on its way out: its key, the request, and who asked (``owner``: the run, for
    events and the budget; opaque to the chain)."""

    key: str
    request: LLMRequest
    prefix: str | None = None  # the cacheable prefix it shares with other calls (None: none)
    owner: Any = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Delivered:
    """A reply and where it came from: ``provider`` (paid by this call), ``store`` (paid
    before), ``shared`` (paid by the same call in flight for another run) or ``batch`` (paid
    in a provider batch, by this call)."""

    reply: Completion | CachedCall
    source: str
    batch: bool = False  # the reply came from a provider batch (priced as one)

    @property
    def paid_here(self) -> bool:
        """Whether this call pays for the reply."""
        return self.source in ("provider", "batch")


class Sender(Protocol):
    """The last link: gets a call's reply from the provider. The runner tells it when runs
    start, wait for replies and finish (a batch sender submits once every run waits)."""

    def send(self, out: Outgoing) -> Future[Delivered]:
        """Start the call; the future holds its reply or its error."""
        ...

    def run_started(self) -> None:
        """A run may send calls from now on."""
        ...

    def run_finished(self) -> None:
        """A run sends nothing more."""
        ...

    def wait_started(self, futures: Collection[Future[Any]] | None = None) -> None:
        """A run waits for replies (``futures``, when given)."""
        ...

    def wait_finished(self, futures: Collection[Future[Any]] | None = None) -> None:
        """A run has its replies."""
        ...


class Lookup(Protocol):
    """The part of the call cache the chain reads."""

    def find(self, key: str) -> CachedCall | None:
        """The stored reply for this key, or None."""
        ...


def _error_of(future: Future[Any]) -> BaseException | None:
    """A done future's error; a cancelled one (the pool shut down) is a cancelled run."""
    if future.cancelled():
        return RunCancelled("The run was stopped before this call was sent.")
    return future.exception()


class Dispatcher:
    """Runs the chain for every call of an executor. Thread-safe."""

    def __init__(self, sender: Sender, cache: Lookup | None = None, *, warm: Sender | None = None) -> None:
        # ``warm``: where the first call of a shared prefix goes when the sender is a batch
        # (one synchronous call writes the prefix to the provider's cache; the rest read it).
        self.sender, self.cache, self.warm = sender, cache, warm
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[Delivered]] = {}
        self._warm: set[str] = set()  # prefixes whose first call has come back
        self._leaders: dict[str, Future[Delivered]] = {}  # the first call of a prefix, in flight
        self.cached = 0
        self.shared = 0
        self.deferred = 0  # calls held back until their prefix was warm

    def submit(self, out: Outgoing) -> Future[Delivered]:
        """The call's reply, through the chain."""
        mine: Future[Delivered] = Future()
        hit = self.cache.find(out.key) if self.cache is not None else None
        if hit is not None:
            with self._lock:
                self.cached += 1
            mine.set_result(Delivered(hit, "store"))
            return mine
        with self._lock:
            owner = self._inflight.get(out.key)
            if owner is None:
                self._inflight[out.key] = mine
        if owner is not None:
            owner.add_done_callback(lambda done: self._follow(done, out, mine))
            return mine
        self._start(out, mine)
        return mine

    def _follow(self, done: Future[Delivered], out: Outgoing, mine: Future[Delivered]) -> None:
        """The call this one waited for came back: share its reply, or try for itself."""
        if _error_of(done) is None:
            with self._lock:
                self.shared += 1
            first = done.result()
            mine.set_result(Delivered(first.reply, "shared", first.batch))
            return
        with self._lock:
            owner = self._inflight.get(out.key)
            if owner is None:
                self._inflight[out.key] = mine
        if owner is not None:
            owner.add_done_callback(lambda again: self._follow(again, out, mine))
        else:
            self._start(out, mine)

    def _start(self, out: Outgoing, mine: Future[Delivered]) -> None:
        """Send now, or after the first call of its prefix came back."""
        prefix = out.prefix
        leader: Future[Delivered] | None = None
        leads = False
        if prefix is not None:
            with self._lock:
                if prefix not in self._warm:
                    leader = self._leaders.get(prefix)
                    if leader is None:
                        self._leaders[prefix] = mine
                        leads = True
                    else:
                        self.deferred += 1
        if leader is not None:
            leader.add_done_callback(lambda _: self._send(out, mine))
        else:
            self._send(out, mine, leads=leads)

    def _send(self, out: Outgoing, mine: Future[Delivered], *, leads: bool = False) -> None:
        sender = self.warm if leads and self.warm is not None else self.sender
        try:
            sent = sender.send(out)
        except Exception as exc:  # noqa: BLE001 - becomes the call's error
            sent = Future()
            sent.set_exception(exc)
        sent.add_done_callback(lambda done: self._settle(done, out, mine))

    def _settle(self, done: Future[Delivered], out: Outgoing, mine: Future[Delivered]) -> None:
        error = _error_of(done)
        with self._lock:
            if self._inflight.get(out.key) is mine:
                del self._inflight[out.key]
            if out.prefix is not None and self._leaders.get(out.prefix) is mine:
                del self._leaders[out.prefix]
                if error is None:
                    self._warm.add(out.prefix)
        if error is not None:
            mine.set_exception(error)
        else:
            mine.set_result(done.result())


class NowSender:
    """Sends each call at once, in the executor's pool, through ``call`` (which reserves the
    budget, emits events and calls the client)."""

    def __init__(
        self,
        submit: Callable[[Callable[[], Completion]], Future[Completion]],
        call: Callable[[Outgoing], Completion],
    ) -> None:
        self._submit, self._call = submit, call

    def run_started(self) -> None:
        """Nothing to do: each call goes at once."""

    def run_finished(self) -> None:
        """Nothing to do: each call goes at once."""

    def wait_started(self, futures: Collection[Future[Any]] | None = None) -> None:
        """Nothing to do: each call goes at once."""

    def wait_finished(self, futures: Collection[Future[Any]] | None = None) -> None:
        """Nothing to do: each call goes at once."""

    def send(self, out: Outgoing) -> Future[Delivered]:
        """Queue the call in the pool."""
        mine: Future[Delivered] = Future()
        sent = self._submit(lambda: self._call(out))

        def done(f: Future[Completion]) -> None:
            error = _error_of(f)
            if error is not None:
                mine.set_exception(error)
            else:
                mine.set_result(Delivered(f.result(), "provider"))

        sent.add_done_callback(done)
        return mine
