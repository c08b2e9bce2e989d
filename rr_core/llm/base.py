"""The provider seam: one request in, one completion out.

A request carries the *shape* of the reply it expects (an ``Output`` class), never the
method or stage that asked: adapters and the offline engine stay method-blind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from rr_core.usage import Usage as Usage  # billed tokens, normalised (re-exported for the adapters)

if TYPE_CHECKING:  # types only: reading a document needs neither pydantic nor the prompts
    from rr_core.outputs import Output
    from rr_core.prompts import PromptLayout

# Called before a client waits to retry: the seconds it will wait and why.
OnWait = Callable[[float, str], None]


CacheTTL = Literal["5m", "1h"]


@dataclass(frozen=True, slots=True)
class CacheHint:
    """Where a request's stable prefix ends, for the provider's prompt cache.

    ``prefix_chars``: the first characters of the prompt that are the same for every question
    over the document (a layout's ``prefix_chars``); ``key``: a short hash of the document and
    the layout, the same for every call that shares the prefix (OpenAI's ``prompt_cache_key``);
    ``ttl``: how long Anthropic keeps the prefix ("5m", or "1h" for batch work); ``tokens``:
    the prefix's estimated size, what a hit would read from the cache.
    """

    prefix_chars: int
    key: str
    ttl: CacheTTL = "5m"
    tokens: int = 0


# The shortest prefix the providers cache, in tokens: OpenAI caches from 1,024 tokens,
# Anthropic from 1,024 (2,048 for its Haiku models).
MIN_CACHED_PREFIX_TOKENS = 1_024


def min_cached_prefix(model: str) -> int:
    """The shortest prefix the provider caches for ``model``, in tokens: 1,024 (OpenAI's
    automatic caching, most Anthropic models), 2,048 for Anthropic's Haiku models."""
    return 2 * MIN_CACHED_PREFIX_TOKENS if "haiku" in model.lower() else MIN_CACHED_PREFIX_TOKENS


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
    # Where the prompt's cacheable prefix ends; None: no hint (adapters send nothing extra).
    cache: CacheHint | None = None


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
    # The request's cache hint went out to the provider (an adapter that cannot send one, or a
    # server that takes none, leaves it False: no cache hit is expected of it).
    cache_hint_sent: bool = False


# What a client says of itself for the call cache: every setting that changes its replies.
Identity = Mapping[str, str | int | float | bool | None]


# -- batches -------------------------------------------------------------------------------

# A batch's states, normalised across providers (``BatchStatus.state``). "in_progress" is the
# only one that is not final; "ended", "expired" and "canceled" have results; "failed" is a
# batch the provider refused as a whole (every call in it "errored").
BATCH_STATES = ("in_progress", "ended", "expired", "failed", "canceled")
# What became of one call in a batch (``BatchResult.kind``).
BATCH_RESULT_KINDS = ("succeeded", "errored", "expired", "canceled")


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One call of a batch: its key and its request.

    ``custom_id`` is the call key (sha256 hex, 64 characters: within Anthropic's
    ``^[a-zA-Z0-9_-]{1,64}$``); the results name each call by it.
    """

    custom_id: str
    request: LLMRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchStatus:
    """Where a submitted batch stands.

    ``state`` is one of ``BATCH_STATES``; ``provider_state`` the provider's own word for it
    (validating, finalizing, canceling...). ``done`` counts the calls that succeeded so far,
    ``failed`` those that errored, expired or were canceled. Anthropic counts each call only
    once the whole batch has ended: until then ``done`` stays 0.
    """

    batch_id: str
    state: str
    total: int
    done: int
    failed: int
    provider_state: str

    @property
    def finished(self) -> bool:
        """Whether the batch is in a final state (its results can be read)."""
        return self.state != "in_progress"


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    """What became of one call of a batch (``kind``: one of ``BATCH_RESULT_KINDS``).

    ``completion`` is set for "succeeded" only; ``error`` says why for the others, in words
    safe to show (keys redacted). ``usage`` is what an errored call was billed when its reply
    said so (a reply left empty is billed like any other).
    """

    custom_id: str
    kind: str
    completion: Completion | None = None
    error: str | None = None
    usage: Usage | None = None


class BatchAPI(Protocol):
    """A client's batch interface: many calls sent as one job, answered later, at the
    provider's batch price.

    ``submit`` sends the lines (each ``custom_id`` once) and returns the provider's batch id;
    it is never retried here (a second attempt could create a second batch). ``results`` is
    for a finished batch (``BatchStatus.finished``) and names every submitted ``custom_id``
    exactly once, in any order; a call the provider gave no result line at all is "expired"
    ("canceled" in a canceled batch). Failures of the batch calls themselves raise
    ``LLMError`` as a sync call does.
    """

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        """Send ``lines`` as one batch named ``label``; the provider's batch id. ``marker`` is our
        own id for it (recorded before it is sent), kept with it where the provider allows."""
        ...

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        """The provider's id of a batch submitted with ``marker`` (of ``total`` calls, at about
        ``since``, a Unix time) whose acceptance never reached us, or None: it was not created."""
        ...

    def status(self, batch_id: str) -> BatchStatus:
        """Where the batch stands now."""
        ...

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The result of every call of a finished batch, each once, in any order."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (calls already answered stay answered)."""
        ...


class LLMClient(Protocol):
    """Anything that can complete a request: a provider adapter, the offline engine, a fake.

    ``identity()`` is the client's part of a call's cache key: who answers (provider,
    normalised server URL, model) and every setting that changes its replies (temperature,
    the simulated reader's reach, the tokenizer that counts its usage...). A stored reply is
    found again only by a client with the same identity. ``max_concurrency`` is how many calls
    it takes at once (None: as many as the caller wants; see ``calls_at_once``). ``batch`` is
    its batch interface, declared by every client (None: it cannot batch); callers read it,
    never probe for it.
    """

    name: str
    is_llm: bool
    max_concurrency: int | None
    batch: BatchAPI | None

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
