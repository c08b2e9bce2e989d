"""A simulated reader with a known positional bias: not an LLM, for tests and demonstrations.

It reads a prompt the way the offline engine does, but only the pages whose middle lies
within ``reach`` tokens of a copy of the instructions (the opening, a reminder or the
closing); the rest it cannot see. On a long document without reminders it therefore loses
the middle — the paper's "lost in the middle", by construction — and reminders every k ≤
reach tokens bring every page back into view. Its curve is known exactly, so the Lab can be
checked against it, and a demo can show the effect without a key.
"""

from __future__ import annotations

import json
import time

from rr_core.errors import ConfigError, ProviderError
from rr_core.llm.base import BatchAPI, Completion, Identity, LLMRequest, Usage
from rr_core.llm.batch import LocalBatch
from rr_core.llm.offline import _FILLERS, OfflineEngine
from rr_core.llm.providers import SIMULATED
from rr_core.prompts import INSTRUCTION_KINDS, SEPARATOR, PromptLayout
from rr_core.tokens import TokenCounter, counter_for_model

SIMULATED_LABEL = SIMULATED.label


def visible_pages(layout: PromptLayout, count: TokenCounter, reach: int) -> set[int]:
    """Pages whose middle is within ``reach`` tokens of a block of instructions."""
    spans: list[tuple[str, int, int, int | None]] = []
    offset = 0
    for block in layout.blocks:
        n = count.count(block.text + SEPARATOR)
        spans.append((block.kind, offset, offset + n, block.page))
        offset += n
    copies = [(a, b) for kind, a, b, _ in spans if kind in INSTRUCTION_KINDS]
    seen: set[int] = set()
    for kind, a, b, page in spans:
        if kind != "page" or page is None:
            continue
        middle = (a + b) / 2
        gap = min((max(start - middle, middle - end, 0.0) for start, end in copies), default=float("inf"))
        if gap <= reach:
            seen.add(page)
    return seen


class SimulatedReader:
    """Answers like the offline engine over only the pages it can 'see' (see the module doc)."""

    name = "simulated"
    is_llm = False
    max_concurrency: int | None = 1  # local Python work: calls_at_once

    def __init__(self, reach: int = 4_000, counter: TokenCounter | None = None) -> None:
        if isinstance(reach, bool) or not isinstance(reach, int) or reach < 1:
            raise ConfigError(
                f"Reach {reach}: give the tokens the simulated reader sees around instructions, 1 or more."
            )
        self.reach = reach
        self.counter = counter or counter_for_model()
        self._engine = OfflineEngine(self.counter)
        # Not a provider batch: every call answered here, at once (``LocalBatch``).
        self.batch: BatchAPI | None = LocalBatch(self)

    def identity(self) -> Identity:
        """The reach and the tokenizer decide which pages it sees: both change its replies."""
        return {"provider": self.name, "reach": self.reach, "tokenizer": self.counter.label}

    def complete(self, request: LLMRequest) -> Completion:
        """Fill the requested shape from the visible pages only."""
        started = time.perf_counter()
        layout = request.layout
        if layout is None:
            raise ProviderError("The simulated reader needs the prompt's layout.", provider=self.name)
        fill = _FILLERS.get(request.schema)
        if fill is None:
            raise ProviderError(
                f"The simulated reader cannot produce a {request.schema.WIRE_NAME!r} reply.",
                provider=self.name,
            )
        seen = visible_pages(layout, self.counter, self.reach)
        pages = [(n, text) for n, text in layout.pages() if n in seen]
        payload = fill(self._engine, list(layout.questions), pages, layout.limit or 5)
        text = json.dumps(payload, ensure_ascii=False)
        usage = Usage(input_tokens=self.counter.count(request.prompt), output_tokens=self.counter.count(text))
        raw = {"engine": "simulated", "reach": self.reach, "seconds": round(time.perf_counter() - started, 4)}
        return Completion(text=text, usage=usage, model="simulated", structured=True, raw=raw)
