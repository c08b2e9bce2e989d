"""The provider seam: one request in, one completion out.

A request carries the *shape* of the reply it expects (an ``Output`` class), never the
method or stage that asked: adapters and the offline engine stay method-blind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # types only: reading a document needs neither pydantic nor the prompts
    from rr_core.outputs import Output
    from rr_core.prompts import PromptLayout

# Called before a client waits to retry: the seconds it will wait and why.
OnWait = Callable[[float, str], None]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens as the provider billed them, normalised.

    ``input_tokens`` counts *uncached* input; ``cached_tokens`` were read from the prompt
    cache and ``cache_write_tokens`` written to it. Their sum is the whole prompt.
    """

    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """All input tokens, cached or not."""
        return self.input_tokens + self.cached_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMRequest:
    """One call: the whole prompt as a single user message, and the shape expected back.

    ``layout`` is the same prompt as blocks: adapters send ``prompt``; the offline engine
    reads the layout instead of re-parsing the text.
    """

    prompt: str
    schema: type[Output]
    model: str
    max_output_tokens: int = 1024
    timeout_s: float = 120.0
    layout: PromptLayout | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """The model's text and what it cost in tokens."""

    text: str
    usage: Usage
    model: str = ""
    # Set when the provider returned schema-validated output.
    structured: bool = False
    # The temperature sent with the call; None when none was sent (the API's default).
    temperature: float | None = None
    raw: dict[str, object] = field(default_factory=dict)


# What a client says of itself for the call cache: every setting that changes its replies.
Identity = Mapping[str, str | int | float | bool | None]


class LLMClient(Protocol):
    """Anything that can complete a request: a provider adapter, the offline engine, a fake.

    ``identity()`` is the client's part of a call's cache key: who answers (provider,
    normalised server URL, model) and every setting that changes its replies (temperature,
    the simulated reader's reach, the tokenizer that counts its usage...). A stored reply is
    found again only by a client with the same identity. ``max_concurrency`` is how many calls
    it takes at once (None: as many as the caller wants; see ``calls_at_once``).
    """

    name: str
    is_llm: bool
    max_concurrency: int | None

    def identity(self) -> Identity:
        """Who answers and every setting that changes the reply (the call cache keys on it)."""
        ...

    def complete(self, request: LLMRequest) -> Completion:
        """Send one request and return the completion, or raise an ``LLMError``."""
        ...


def temperature_sent(client: LLMClient) -> str | float:
    """What a record says of the temperature: the one the client sends (each call's trace
    records it too), or why none is sent."""
    if not client.is_llm:
        return "deterministic engine"
    sent = client.identity().get("temperature")
    if isinstance(sent, (int, float)) and not isinstance(sent, bool):
        return float(sent)
    return "provider default (not sent)"


def calls_at_once(client: LLMClient, wanted: int) -> int:
    """How many of ``wanted`` calls to send at once through ``client``.

    A client whose work is Python in this process (the offline engine, the simulated reader)
    says ``max_concurrency = 1``: its calls hold the GIL, so threads only add switching (three
    methods in threads took 1.2-1.3x the time of one after another). Any other client: ``wanted``.
    """
    limit = client.max_concurrency
    return max(1, min(int(wanted), limit) if limit is not None and limit > 0 else int(wanted))
