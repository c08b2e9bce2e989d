"""What tokens cost in US dollars, from the bundled genai-prices data, offline.

Prices come from the price data bundled with the pinned ``genai-prices`` package, read
through a snapshot of our own: its ``UpdatePrices`` auto-update (which fetches from GitHub)
is never started, and a snapshot some other library might install process-wide is ignored,
so every figure matches :func:`price_data_version`.

genai-prices counts ``input_tokens`` as the *whole* prompt with cache reads and writes as
parts of it; our :class:`~rr_core.llm.base.Usage` counts uncached input separately. The
rates are resolved once per (model, provider, UTC day) and cached; the arithmetic is ours
(``calc_price`` itself costs ~70 µs a call, too slow for a plan redrawn on every slider
move) and follows the library's rules, which the tests check against ``calc_price``:

- a missing cache-read or cache-write rate means those tokens cost the input rate;
- tiered ("long context") rates are a cliff on the whole prompt: once the prompt exceeds a
  tier's start, *every* token of the call, output included, is billed at that tier's rate;
- cache writes are priced at the default (5-minute) cache-write rate, one-hour writes
  (``Usage.cache_write_1h_tokens``, a part of the writes) at the one-hour rate; where the data
  has no cache-write rate, Anthropic's published multiples of the input rate apply (1.25x for
  5 minutes, 2x for an hour), else the input rate (the library's rule);
- ``mode="batch"`` prices a provider batch: the data's batch rates where it has them (a
  ``processing: batch`` price variant, which overrides only the rates it lists), else the
  provider's published discount (``BATCH_DISCOUNT``: −50% at OpenAI and Anthropic) on every
  rate. No flex or priority variants.

Unknown models cost nothing and say so (``Cost.known`` is False); nothing here raises for a
model it cannot price.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rr_core.llm.base import Usage
from rr_core.llm.providers import OFFLINE, REGISTRY, find_provider

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ModelPrice, TieredPrices

__all__ = [
    "BATCH_DISCOUNT",
    "LOCAL_PROVIDERS",
    "assumed_free",
    "OVERRIDES",
    "Cost",
    "Price",
    "estimate_cost",
    "known_models",
    "price_data_version",
    "price_for",
    "price_usage",
]

_PER = 1_000_000.0

Mode = Literal["now", "batch"]

# The share of the list price a provider batch saves, as the providers publish it (OpenAI
# Batch, Anthropic Message Batches: 50% off), for models whose price data has no batch rates.
# (The provider registry holds each discount; this is the table of them.)
BATCH_DISCOUNT: dict[str, float] = {p.name: p.batch_discount for p in REGISTRY.values() if p.batch_discount}


# genai-prices (0.2 s to import) is loaded on the first price asked for, not with the module:
# `python -m rr_core pages` and the first screen never price anything.
@lru_cache(maxsize=1)
def _snapshot() -> DataSnapshot:
    """Our own snapshot of the bundled data: never the one UpdatePrices may have fetched."""
    from genai_prices import data
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=data.providers, from_auto_update=False)


@lru_cache(maxsize=1)
def _data_version() -> str:
    """The installed genai-prices' version (read from its metadata: importing it costs 0.05 s)."""
    try:
        return importlib.metadata.version("genai-prices")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _genai_source() -> str:
    return f"genai-prices {_data_version()}"


# ---- What the price data says, kept per version of the data --------------------------------
#
# Loading the bundled data costs ~0.15 s (genai-prices and its pydantic models), in every
# process that prices anything: a command, a worker, an app server. What the data says about a
# model (its listed rates on a day, its context window) is kept in a small file per version of
# the data, so that a later process answers without loading it. Only the data's own answers
# are kept: the arithmetic on them (discounts, cache-write multiples) runs each time. The file
# is in $RR_STUDIO_CACHE (default ~/.cache/rr_studio; "off": nothing kept); one that cannot be
# read or written is passed over (the data is read instead).

CACHE_ENV = "RR_STUDIO_CACHE"
_MISSING = object()


class _DataMemo:
    """The data's answers by key, loaded from the version's file on first use, written back
    (whole, by rename: readers never see half a file) when an answer is added."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._answers: dict[str, Any] | None = None

    def _loaded(self) -> dict[str, Any]:
        if self._answers is None:
            self._answers = self._read()
        return self._answers

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            answers = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return answers if isinstance(answers, dict) else {}

    def get(self, key: str) -> Any:
        """The kept answer, or ``_MISSING``."""
        with self._lock:
            return self._loaded().get(key, _MISSING)

    def put(self, key: str, answer: Any) -> None:
        with self._lock:
            self._loaded()[key] = answer
            if self.path is None:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # Another process's answers too; rates of days before yesterday dropped (prices
                # are asked for today's: the file stays a few kilobytes).
                merged = {
                    k: v for k, v in {**self._read(), **self._loaded()}.items() if not _stale(k, _today() - 1)
                }
                handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".prices-", suffix=".tmp")
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(merged, out, separators=(",", ":"))
                os.replace(tmp, self.path)
            except OSError:
                pass  # not kept: the next process reads the data again


def _memo_path() -> Path | None:
    setting = os.environ.get(CACHE_ENV, "").strip()
    version = _data_version()
    if setting == "off" or not version:
        return None
    folder = (
        Path(setting)
        if setting
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rr_studio"
    )
    return folder / f"genai-prices-{version}.json"


def _stale(key: str, first_day: int) -> bool:
    """A kept answer about rates of a day before ``first_day``."""
    parts = key.split("|")
    return parts[0] == "rates" and len(parts) == 5 and parts[3].isdigit() and int(parts[3]) < first_day


@lru_cache(maxsize=1)
def _memo() -> _DataMemo:
    return _DataMemo(_memo_path())


_Listed = dict[str, "_Rate | None"]
_LISTED = ("input", "cached", "cache_write", "cache_write_1h", "output")


def _listed(key: str, prov: str | None, utc_day: int, processing: str) -> _Listed | None:
    """The rates the data lists for a model on a day (``None``: a rate it does not list), or
    ``None`` when it does not know the model."""
    memo_key = f"rates|{prov or ''}|{key}|{utc_day}|{processing}"
    kept = _memo().get(memo_key)
    if kept is None:
        return None
    if kept is not _MISSING:
        try:
            return {name: _rate_from(kept[name]) for name in _LISTED}
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # an answer not as written here: read from the data again
    try:
        _, info = _snapshot().find_provider_model(key, None, prov, None)
    except LookupError:
        _memo().put(memo_key, None)
        return None
    when = datetime.fromtimestamp(utc_day * 86_400 + 43_200, tz=UTC)
    price: ModelPrice = info.get_prices(when, {"processing": "batch"} if processing == "batch" else None)
    values = (price.input_mtok, price.cache_read_mtok, price.cache_write_mtok, price.cache_write_1h_mtok,
              price.output_mtok)  # fmt: skip
    listed = {
        name: None if value is None else _to_rate(value, _ZERO_RATE)
        for name, value in zip(_LISTED, values, strict=True)
    }
    _memo().put(memo_key, {name: _rate_to(rate) for name, rate in listed.items()})
    return listed


def _rate_to(rate: _Rate | None) -> list[Any] | None:
    """A rate as kept: [base, [[start, rate], ...]]."""
    return None if rate is None else [rate.base, [list(tier) for tier in rate.tiers]]


def _rate_from(kept: Any) -> _Rate | None:
    """``_rate_to``'s inverse (``TypeError``/``ValueError``/``IndexError`` on anything else)."""
    if kept is None:
        return None
    base, tiers = kept
    return _Rate(float(base), tuple((int(start), float(rate)) for start, rate in tiers))


@dataclass(frozen=True, slots=True)
class Price:
    """Rates in USD per million tokens (the base rates, below any long-context tier)."""

    input: float
    cached_input: float
    cache_write: float
    output: float
    source: str
    cache_write_1h: float = 0.0  # one-hour cache writes (Anthropic)


@dataclass(frozen=True, slots=True)
class Cost:
    """What a usage cost, split by kind of token; ``Cost()`` is zero and adds as identity."""

    input_usd: float = 0.0
    cached_usd: float = 0.0
    cache_write_usd: float = 0.0
    output_usd: float = 0.0
    known: bool = True
    source: str = ""

    @property
    def total_usd(self) -> float:
        """The whole cost in USD."""
        return self.input_usd + self.cached_usd + self.cache_write_usd + self.output_usd

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.input_usd + other.input_usd,
            self.cached_usd + other.cached_usd,
            self.cache_write_usd + other.cache_write_usd,
            self.output_usd + other.output_usd,
            self.known and other.known,
            _join_sources(self.source, other.source),
        )

    def __radd__(self, other: object) -> Cost:
        # Lets sum() start from 0.
        if other == 0:
            return self
        return NotImplemented


def _join_sources(a: str, b: str) -> str:
    if not a or a == b:
        return b or a
    if not b:
        return a
    parts = a.split(" + ")
    return a if b in parts else f"{a} + {b}"


LOCAL_SOURCE = "local model (free)"
OFFLINE_SOURCE = "offline engine (free)"

# Providers that run on the user's own machine or server: always free (the registered ones,
# and names a stored or hand-written settings file may use for one).
LOCAL_PROVIDERS: frozenset[str] = frozenset(
    {
        *(p.name for p in REGISTRY.values() if p.local),
        "ollama",
        "vllm",
        "llama.cpp",
        "llamacpp",
        "lmstudio",
        "local",
    }
)

# Looked up by lower-cased model id before genai-prices; add models it lacks here.
_FREE_ENGINE_PRICE = Price(0.0, 0.0, 0.0, 0.0, OFFLINE_SOURCE)
OVERRIDES: dict[str, Price] = {OFFLINE.default_model: _FREE_ENGINE_PRICE}
_LOCAL_PRICE = Price(0.0, 0.0, 0.0, 0.0, LOCAL_SOURCE)

# A short list for a model dropdown: current and popular ids, all priced by genai-prices.
_KNOWN_MODELS: tuple[str, ...] = (
    # OpenAI
    "gpt-6.1-sol",
    "gpt-6.1-terra",
    "gpt-6-luna",
    "gpt-5.5",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4o",
    "gpt-4o-mini",
    "o4-mini",
    # Anthropic
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
    "claude-opus-4-1",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    # Google
    "gemini-2.5-flash",
    "gemini-2.5-pro",
    "gemini-2.5-flash-lite",
)

_O_SERIES = re.compile(r"o[134](?:$|[-_.])")


@dataclass(frozen=True, slots=True)
class _Rate:
    """One kind of token's rate per million, with any prompt-length tiers (ascending)."""

    base: float
    tiers: tuple[tuple[int, float], ...] = ()

    def at(self, prompt_tokens: int) -> float:
        for start, rate in reversed(self.tiers):
            if prompt_tokens > start:
                return rate
        return self.base

    def times(self, factor: float) -> _Rate:
        return _Rate(self.base * factor, tuple((start, rate * factor) for start, rate in self.tiers))


_ZERO_RATE = _Rate(0.0)


@dataclass(frozen=True, slots=True)
class _Rates:
    price: Price
    known: bool
    source: str
    input: _Rate = _ZERO_RATE
    cached: _Rate = _ZERO_RATE
    cache_write: _Rate = _ZERO_RATE
    output: _Rate = _ZERO_RATE
    tiered: bool = False
    cache_write_1h: _Rate = _ZERO_RATE


def _infer_provider(model: str) -> str | None:
    if "claude" in model:
        return "anthropic"
    if "gpt" in model or _O_SERIES.match(model):
        return "openai"
    return None


def _to_rate(value: Decimal | TieredPrices | None, fallback: _Rate) -> _Rate:
    from genai_prices.types import TieredPrices

    if value is None:
        return fallback
    if isinstance(value, TieredPrices):
        tiers = tuple(sorted((tier.start, float(tier.price)) for tier in value.tiers))
        return _Rate(float(value.base), tiers)
    return _Rate(float(value))


def _free(price: Price) -> _Rates:
    return _Rates(price=price, known=True, source=price.source)


def _unknown(model: str) -> _Rates:
    source = f"unknown model '{model}': no price data"
    return _Rates(price=Price(0.0, 0.0, 0.0, 0.0, "unknown model"), known=False, source=source)


@lru_cache(maxsize=512)
def _rates(model: str, provider: str | None, utc_day: int, mode: Mode = "now") -> _Rates:
    """Resolve the rates once per (model, provider, UTC day, mode): prices change by date."""
    key = model.strip().lower()
    prov = provider.strip().lower() if provider else None
    if prov in LOCAL_PROVIDERS:
        return _free(_LOCAL_PRICE)
    engine = find_provider(prov)
    if engine is not None and engine.free:
        # A free engine's own model (not a "price as" model) costs nothing.
        return _free(OVERRIDES.get(key, _FREE_ENGINE_PRICE))
    if key in OVERRIDES:
        return _free(OVERRIDES[key])
    if not key:
        return _unknown(model)
    if prov is None:
        prov = _infer_provider(key)
        if prov is None and ":" in key and not key.startswith("ft:"):
            # An Ollama-style "name:tag" id with no provider: a local model.
            return _free(_LOCAL_PRICE)
    listed = _listed(key, prov, utc_day, "now")
    if listed is None:
        return _unknown(model)
    factor = 1.0
    if mode == "batch":
        batch = _listed(key, prov, utc_day, "batch")
        if batch == listed:  # the data has no batch rates: the published discount
            factor = 1.0 - BATCH_DISCOUNT.get(prov or "", 0.0)
        listed = batch or listed
    if listed["input"] is None and listed["output"] is None:
        return _unknown(model)  # priced per image, second or character, not per token
    input_rate = listed["input"] or _ZERO_RATE
    cached = listed["cached"] or input_rate
    # A provider's published cache-write multiples (Anthropic's), where the data lists no price.
    engine = find_provider(prov)
    multiples = engine.cache_write_multiples if engine is not None else None
    write_5m = input_rate.times(multiples[0]) if multiples else input_rate
    cache_write = listed["cache_write"] or write_5m
    write_1h = input_rate.times(multiples[1]) if multiples else cache_write
    cache_write_1h = listed["cache_write_1h"] or write_1h
    output = listed["output"] or _ZERO_RATE
    if factor != 1.0:
        input_rate, cached, cache_write, cache_write_1h, output = (
            rate.times(factor) for rate in (input_rate, cached, cache_write, cache_write_1h, output)
        )
    source = _genai_source() + (" (batch)" if mode == "batch" else "")
    price = Price(input_rate.base, cached.base, cache_write.base, output.base, source, cache_write_1h.base)
    tiered = any(rate.tiers for rate in (input_rate, cached, cache_write, cache_write_1h, output))
    return _Rates(price, True, source, input_rate, cached, cache_write, output, tiered, cache_write_1h)


def price_day() -> int:
    """The UTC day (days since 1970) whose listed prices estimates are made at now: an estimate
    made on another day may differ."""
    return _today()


def _today() -> int:
    return int(time.time() // 86_400)


def price_for(model: str, provider: str | None = None, *, mode: Mode = "now") -> Price | None:
    """The base per-million rates for a model, or None when it has no price data."""
    rates = _rates(model, provider, _today(), mode)
    return rates.price if rates.known else None


def price_usage(usage: Usage, model: str, provider: str | None = None, *, mode: Mode = "now") -> Cost:
    """Price one call's (or a run's summed) usage on a model, sent now or in a provider batch
    (``mode``); unknown models cost 0, known=False."""
    rates = _rates(model, provider, _today(), mode)
    prompt = usage.prompt_tokens
    one_hour = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
    return Cost(
        usage.input_tokens * rates.input.at(prompt) / _PER,
        usage.cached_tokens * rates.cached.at(prompt) / _PER,
        (
            (usage.cache_write_tokens - one_hour) * rates.cache_write.at(prompt)
            + one_hour * rates.cache_write_1h.at(prompt)
        )
        / _PER,
        usage.output_tokens * rates.output.at(prompt) / _PER,
        rates.known,
        rates.source,
    )


def estimate_cost(
    input_tokens: int,
    output_tokens: int,
    model: str,
    provider: str | None = None,
    *,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    cache_ttl: str = "5m",
    mode: Mode = "now",
) -> Cost:
    """Estimate one call's cost before running it. ``input_tokens`` is the whole prompt; of it,
    ``cached_tokens`` are expected to be read from the prompt cache and ``cache_write_tokens``
    written to it (with a ``cache_ttl`` lifetime); by default all input is counted as uncached."""
    cached = max(0, min(cached_tokens, input_tokens))
    written = max(0, min(cache_write_tokens, input_tokens - cached))
    usage = Usage(
        input_tokens=input_tokens - cached - written,
        cached_tokens=cached,
        cache_write_tokens=written,
        output_tokens=output_tokens,
        cache_write_1h_tokens=written if cache_ttl == "1h" else 0,
    )
    return price_usage(usage, model, provider, mode=mode)


# One call's estimate as ``estimate_cost`` takes it: input tokens, output tokens, model, provider,
# cached tokens, cache-write tokens, cache lifetime ("5m" or "1h"), mode.
CallCost = tuple[int, int, str, str | None, int, int, str, Mode]


def estimate_costs(calls: Iterable[CallCost]) -> Cost:
    """The summed estimate of many calls, each as ``estimate_cost`` would price it. At flat rates
    a call's cost is its tokens times the rates: the calls of one model and mode are summed by
    kind of token and priced once (a grid estimates hundreds of thousands of calls); a model
    with prompt-length tiers is priced call by call."""
    sums: dict[tuple[str, str | None, Mode], list[int]] = {}
    found: dict[tuple[str, str | None, Mode], _Rates] = {}
    today = _today()
    total = Cost()
    priced = False
    for input_tokens, output_tokens, model, provider, cached_tokens, write_tokens, ttl, mode in calls:
        key = (model, provider, mode)
        rates = found.get(key) or found.setdefault(key, _rates(model, provider, today, mode))
        cached = max(0, min(cached_tokens, input_tokens))
        written = max(0, min(write_tokens, input_tokens - cached))
        if rates.tiered:
            one = estimate_cost(
                input_tokens, output_tokens, model, provider, cached_tokens=cached_tokens,
                cache_write_tokens=write_tokens, cache_ttl=ttl, mode=mode,
            )  # fmt: skip
            total = total + one if priced else one
            priced = True
            continue
        row = sums.get(key) or sums.setdefault(key, [0, 0, 0, 0, 0])
        row[0] += input_tokens - cached - written
        row[1] += cached
        row[2] += written if ttl != "1h" else 0
        row[3] += written if ttl == "1h" else 0
        row[4] += output_tokens
    for key, (plain, cached, write_5m, write_1h, output) in sums.items():
        rates = found[key]
        one = Cost(
            plain * rates.input.base / _PER,
            cached * rates.cached.base / _PER,
            (write_5m * rates.cache_write.base + write_1h * rates.cache_write_1h.base) / _PER,
            output * rates.output.base / _PER,
            rates.known,
            rates.source,
        )
        total = total + one if priced else one
        priced = True
    return total


def assumed_free(model: str, provider: str | None = None) -> bool:
    """Whether a price of 0 is an assumption rather than a price: a model on an
    OpenAI-compatible or local server (or an Ollama-style ``name:tag`` with no provider) is
    counted as free, though the server may charge. A budget cannot be checked against it."""
    prov = provider.strip().lower() if provider else None
    if prov in LOCAL_PROVIDERS:
        return True
    key = model.strip().lower()
    return (
        prov is None
        and key not in OVERRIDES
        and _infer_provider(key) is None
        and ":" in key
        and not key.startswith("ft:")
    )


def price_data_version() -> str:
    """Which price data the figures come from, for display next to any cost."""
    return f"{_genai_source()} (bundled price data, read offline; no auto-update)"


def known_models() -> list[str]:
    """A short list of popular OpenAI, Anthropic and Gemini model ids that the price data covers."""
    return [model for model in _KNOWN_MODELS if _rates(model, None, _today()).known]


@lru_cache(maxsize=256)
def context_window(model: str, provider: str | None = None) -> int | None:
    """The model's context window in tokens, from the price data; None when unknown (local
    servers, the offline engine, models the data does not list)."""
    key = model.strip().lower()
    prov = provider.strip().lower() if provider else None
    engine = find_provider(prov)
    if (
        not key
        or prov in LOCAL_PROVIDERS
        or (engine is not None and not engine.known_window)
        or key in OVERRIDES
    ):
        return None
    prov = prov or _infer_provider(key)
    memo_key = f"window|{prov or ''}|{key}"
    kept = _memo().get(memo_key)
    if kept is None or isinstance(kept, int):
        return kept
    try:
        _, info = _snapshot().find_provider_model(key, None, prov, None)
    except LookupError:
        window = None
    else:
        window = getattr(info, "context_window", None)
    known = int(window) if isinstance(window, int) and window > 0 else None
    _memo().put(memo_key, known)
    return known
