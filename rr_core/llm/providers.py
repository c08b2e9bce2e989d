"""The engines as registered values: everything a caller asks about a provider by its name.

Screens, the CLI, the Lab and the price and token modules ask a ``ProviderInfo`` (is it an
LLM, what it starts with, which variables hold its key and server, how it is priced, what
the UI calls it) instead of comparing provider names. Adding a provider is one entry here
(plus its adapter in ``rr_core.llm.client_for``); nothing else names it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from rr_core.errors import ConfigError

# The one default model of OpenAI, and the model a free engine's tokens are priced as (and
# counted with) until the user names another.
_GPT_DEFAULT = "gpt-4.1-mini"
DEFAULT_PRICE_MODEL = _GPT_DEFAULT


class PriceAs(StrEnum):
    """How a run on the engine is priced."""

    OWN = "own"  # the model's own published price
    REQUIRED = "required"  # free engine: what the same tokens would cost on a named model
    OPTIONAL = "optional"  # a server of one's own: a named model's price, or counted as free


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """One engine, as callers ask about it."""

    name: str
    label: str  # the sidebar's choice
    is_llm: bool  # False: a free engine that reads without a model (never paid)
    default_model: str
    reader: str  # who answered, in a sentence ("the model", "the offline engine")
    engine_label: str = ""  # the Lab's "Measure with" choice, for an engine that is not a model
    note: str = ""  # the second line of a chart's title for an engine that is not a model
    lab_info: str = ""  # what the Lab says of measuring with it (an engine that is not a model)
    key_variable: str | None = None
    base_url_variable: str | None = None
    official_url: str | None = None
    needs_base_url: bool = False  # no default server: a URL must be given or configured
    # Sends a key only when one is given for it (``RR_COMPAT_API_KEY`` on the command line).
    optional_key: bool = False
    # Runs one model whatever is asked (``--model`` is ignored).
    fixed_model: bool = False
    # Counts tokens with this model's tokenizer rather than the model it runs ("": its own).
    counting_model: str = ""
    url_placeholder: str = "the provider's default"
    price_as: PriceAs = PriceAs.OWN
    local: bool = False  # runs on the user's own server: its price is an assumption (free)
    exact_tokens: bool = False  # its model's tokenizer is bundled, so counts are exact
    can_batch: bool = False  # sells batches at a discount
    # The share of the list price a provider batch saves, as the provider publishes it, for
    # models whose price data has no batch rates (OpenAI Batch, Anthropic Message Batches: 50%).
    batch_discount: float = 0.0
    # Cache writes as multiples of the input rate (5-minute, one-hour lifetimes), for models
    # whose price data lists none (None: written at the input rate).
    cache_write_multiples: tuple[float, float] | None = None
    known_window: bool = False  # the price data knows its models' context windows
    model_prefixes: tuple[str, ...] = ()  # which known (priced) models it serves, by prefix
    concurrency: int = 4  # calls in flight at once to start with
    in_app: bool = True  # offered in the sidebar and by ``ask``/``plan`` (else: the Lab only)

    @property
    def free(self) -> bool:
        """Whether the engine never costs anything (not an LLM)."""
        return not self.is_llm

    @property
    def default_price_model(self) -> str:
        """The model a run is priced as until the user names one ("": the model itself)."""
        return _GPT_DEFAULT if self.price_as is PriceAs.REQUIRED else ""

    def model_or_default(self, model: str | None) -> str:
        """The model to run: the one given, else the default (or the one it always runs)."""
        if self.fixed_model:
            return self.default_model
        return (model or "").strip() or self.default_model

    def counter_model(self, model: str) -> str:
        """The model whose tokenizer counts for a run of ``model`` on this engine."""
        return self.counting_model or model

    def token_model(self, model: str, price_model: str = "") -> str:
        """The model whose tokenizer counts a document for this engine: a free engine counts
        with the model its tokens are priced as."""
        if self.is_llm:
            return model
        return price_model or _GPT_DEFAULT

    def engine_name(self, model: str) -> str:
        """How a run's engine is named in records: ``provider / model``, or what it is."""
        return f"{self.name} / {model}" if self.is_llm else f"{self.name} (not an LLM)"


OFFLINE = ProviderInfo(
    name="offline",
    label="Offline engine (no key)",
    is_llm=False,
    default_model="offline",
    reader="the offline engine",
    engine_label="Offline engine (BM25 ranking; not an LLM)",
    note="offline engine — not an LLM",
    lab_info=(
        "**Not an LLM.** The offline engine finds pages by the question's words wherever they sit, so it has no "
        "middle to lose: every preset runs end to end for free, showing the machinery, not a model's behaviour."
    ),
    price_as=PriceAs.REQUIRED,
    concurrency=1,
)
OPENAI = ProviderInfo(
    name="openai",
    label="OpenAI",
    is_llm=True,
    default_model=_GPT_DEFAULT,
    reader="the model",
    key_variable="OPENAI_API_KEY",
    base_url_variable="OPENAI_BASE_URL",
    official_url="https://api.openai.com/v1",
    exact_tokens=True,
    can_batch=True,
    batch_discount=0.5,
    known_window=True,
    model_prefixes=("gpt", "o", "chatgpt"),
    concurrency=8,
)
ANTHROPIC = ProviderInfo(
    name="anthropic",
    label="Anthropic",
    is_llm=True,
    default_model="claude-sonnet-5-5",
    reader="the model",
    key_variable="ANTHROPIC_API_KEY",
    base_url_variable="ANTHROPIC_BASE_URL",
    official_url="https://api.anthropic.com",
    can_batch=True,
    batch_discount=0.5,
    cache_write_multiples=(1.25, 2.0),
    known_window=True,
    model_prefixes=("claude",),
    concurrency=4,
)
GEMINI = ProviderInfo(
    name="gemini",
    label="Google Gemini",
    is_llm=True,
    default_model="gemini-2.5-flash",
    reader="the model",
    key_variable="GEMINI_API_KEY",
    base_url_variable="GEMINI_BASE_URL",
    official_url="https://generativelanguage.googleapis.com",
    # Gemini's batch mode is not offered in this version (its adapter has no batch API).
    known_window=True,
    model_prefixes=("gemini",),
    concurrency=4,
)
COMPATIBLE = ProviderInfo(
    name="openai-compatible",
    label="OpenAI-compatible server",
    is_llm=True,
    default_model="llama3.1",
    reader="the model",
    base_url_variable="OPENAI_BASE_URL",
    needs_base_url=True,
    optional_key=True,
    url_placeholder="http://localhost:11434/v1",
    price_as=PriceAs.OPTIONAL,
    local=True,
    concurrency=2,
)
SIMULATED = ProviderInfo(
    name="simulated",
    label="Simulated reader that loses the middle (demonstration; not an LLM)",
    is_llm=False,
    default_model="simulated",
    reader="the simulated reader",
    engine_label="Simulated reader that loses the middle (demonstration; not an LLM)",
    note="simulated reader — not an LLM",
    lab_info=(
        "**A demonstration, not a model.** This reader can only see pages within a few thousand tokens of a "
        "copy of the instructions, so it loses the middle of long documents by construction. It shows what "
        "the measurement looks like and how reminders change it; to learn how *your* model reads, choose it "
        "in the sidebar."
    ),
    fixed_model=True,
    counting_model=_GPT_DEFAULT,
    price_as=PriceAs.REQUIRED,
    concurrency=1,
    in_app=False,
)

REGISTRY: dict[str, ProviderInfo] = {
    p.name: p for p in (OFFLINE, OPENAI, ANTHROPIC, GEMINI, COMPATIBLE, SIMULATED)
}
# The engines a run of the app or of ``ask``/``plan`` may choose (the simulated reader is the Lab's).
APP_PROVIDERS: tuple[str, ...] = tuple(p.name for p in REGISTRY.values() if p.in_app)
ALL_PROVIDERS: tuple[str, ...] = tuple(REGISTRY)
# Paid providers, in the order a configured key picks the one to start with.
PAID_PROVIDERS: tuple[ProviderInfo, ...] = tuple(p for p in REGISTRY.values() if p.key_variable)


def get_provider(name: str) -> ProviderInfo:
    """The registered engine ``name`` (``ConfigError`` for an unknown one)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown provider {name!r}; choose one of: {', '.join(APP_PROVIDERS)}") from None


def describe_provider(name: str) -> ProviderInfo:
    """The registered engine, or for a name not registered (a stored run of an engine this
    version does not know) a paid LLM under that name: never a crash, never 'free'."""
    known = REGISTRY.get(name)
    if known is not None:
        return known
    return ProviderInfo(name=name, label=name, is_llm=True, default_model="", reader="the model")


def find_provider(name: str | None) -> ProviderInfo | None:
    """The registered engine by a possibly missing or odd-cased name, or None."""
    return REGISTRY.get((name or "").strip().lower()) if name else None


def starting_provider(has_key: Callable[[str], object]) -> ProviderInfo:
    """The engine to start with: the first paid one whose key variable ``has_key`` finds
    (called with the variable's name), else the offline engine."""
    for info in PAID_PROVIDERS:
        if info.key_variable and has_key(info.key_variable):
            return info
    return OFFLINE
