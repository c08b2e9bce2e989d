"""A scripted client for tests: queued replies, every request recorded."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

from rr_core.llm.base import BatchAPI, Completion, Identity, LLMRequest, Usage
from rr_core.llm.batch import LocalBatch

Reply = str | Exception | Callable[[LLMRequest], str]


class ScriptedClient:
    """Replies from a queue (text, an exception to raise, or a function of the request).

    When the queue is empty, ``responder`` answers; without one, the call fails loudly.
    ``batches=True`` gives it a ``LocalBatch`` (its replies taken in order during ``submit``);
    by default it cannot batch.
    """

    name = "scripted"
    is_llm = True
    max_concurrency: int | None = None

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        responder: Callable[[LLMRequest], str] | None = None,
        script: str = "scripted",
        batches: bool = False,
    ) -> None:
        # Two scripted clients share stored replies only when they say they play one script.
        self.script = script
        self._replies: deque[Reply] = deque(replies)
        self._responder = responder
        self._lock = threading.Lock()
        self.requests: list[LLMRequest] = []
        self.batch: BatchAPI | None = LocalBatch(self) if batches else None

    def identity(self) -> Identity:
        """The script it plays (``script``): the same name, the same replies."""
        return {"provider": self.name, "script": self.script}

    def complete(self, request: LLMRequest) -> Completion:
        """Record the request and return (or raise) the next scripted reply."""
        with self._lock:
            self.requests.append(request)
            reply: Reply | None = self._replies.popleft() if self._replies else None
        if reply is None:
            if self._responder is None:
                raise AssertionError("ScriptedClient: no scripted reply left")
            reply = self._responder
        if isinstance(reply, Exception):
            raise reply
        text = reply(request) if callable(reply) else reply
        usage = Usage(input_tokens=len(request.prompt) // 4, output_tokens=len(text) // 4)
        return Completion(text=text, usage=usage, model=request.model)
