"""The engine a piece of work runs on, and the runner it runs through: the narrow points that the
use cases (``rr_core.workbench``) and the kinds of long work (``rr_core.kinds``) share.

- ``Engine``: provider, model, the model it is priced as, a key or server given for the run,
  every default taken from the provider registry;
- ``open_runner``: the in-process executor every use case runs through (call cache, budget,
  batches), so a change to the runner lands here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from rr_core.costs import Mode, context_window
from rr_core.jobs import Job
from rr_core.llm import LLMClient, OnWait, ProviderInfo, default_provider, engine_client, get_provider
from rr_core.llm.config import Lookup, environment
from rr_core.runs import Budget, CallCache, Executor
from rr_core.settings import RunSettings
from rr_core.tokens import TokenCounter

# How often a batch is polled at most (it starts at a second and doubles up to this);
# ``RR_BATCH_POLL_S`` sets it (tests against a local stub poll faster).
BATCH_POLL_S = 30.0


def batch_poll_s() -> float:
    """The longest wait between two polls of a batch (``RR_BATCH_POLL_S``, else 30 s)."""
    try:
        value = float(os.environ.get("RR_BATCH_POLL_S", "") or BATCH_POLL_S)
    except ValueError:
        return BATCH_POLL_S
    return value if 0 < value <= 3_600 else BATCH_POLL_S


def open_runner(
    client: LLMClient,
    *,
    concurrency: int,
    cache: CallCache | None = None,
    window: int | None = None,
    max_usd: float | None = None,
    mode: Mode = "now",
    label: str = "",
    ledger: str = "",
    cache_lone_prefixes: bool | Callable[[Job | None], bool] = True,
    spent_usd: float = 0.0,
    shared_cap: bool = False,
) -> Executor:
    """The runner every use case runs through (the in-process executor), with the store as
    call cache when given and a budget cap when ``max_usd`` is set; ``mode`` "batch" sends
    each phase's calls as provider batches (recorded in the store, ``label`` naming them);
    ``cache_lone_prefixes`` False (or False for a job): work that knows all its calls marks for
    the prompt cache only the prefixes two of them share (see ``Executor``);
    ``spent_usd``: what earlier runs of the same work paid, inside ``max_usd`` (``spent_under``);
    ``shared_cap``: other runners spend against ``ledger``'s cap at the same time (a grid's parts):
    each call is held in the store against it before it is sent."""
    budget = Budget(max_usd, spent_usd) if max_usd is not None else None
    return Executor(
        client,
        concurrency=concurrency,
        cache=cache,
        context_window=window,
        budget=budget,
        mode=mode,
        batch_label=label,
        poll_s=batch_poll_s(),
        ledger=ledger,
        cache_lone_prefixes=cache_lone_prefixes,
        shared_cap=shared_cap,
    )


def work_ledger(name: str, work_id: str = "") -> str:
    """The ledger a run's calls are billed under: ``name`` (a plan's ledger key, or the name all
    of a grid's parts share), and the work's id for a run of a work (all its runs share it)."""
    return name + (f"-{work_id}" if work_id else "")


def spent_under(cache: CallCache, ledger: str) -> float:
    """What a work's runs have been billed so far (every call, as billed, priced at its own
    model's price: kept or not, parsed or not; calls possibly billed at what they held)."""
    return cache.ledger_spent(ledger)


@dataclass(frozen=True, slots=True)
class Engine:
    """The engine a use case runs on. ``api_key`` and ``base_url`` are those *given* for the
    run; the configured ones are looked up when the client is made (the key rule of
    ``rr_core.llm.config``). The key is never shown in the repr."""

    provider: str
    model: str
    price_model: str = ""
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None

    @classmethod
    def choose(
        cls,
        provider: str | None = None,
        model: str | None = None,
        price_model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
    ) -> Engine:
        """An engine with the registry's defaults for what is not given: the provider whose
        key is configured (else the offline engine), its default model, and the model a free
        engine is priced as."""
        info = get_provider(provider or default_provider())
        return cls(
            info.name,
            info.model_or_default(model),
            price_model or info.default_price_model,
            api_key=api_key,
            base_url=base_url,
        )

    @property
    def info(self) -> ProviderInfo:
        """The provider as the registry describes it."""
        return get_provider(self.provider)

    @property
    def is_llm(self) -> bool:
        """Whether a model reads (False: a free engine, never paid)."""
        return self.info.is_llm

    def counting_model(self) -> str:
        """The model whose tokenizer counts for a run on this engine."""
        return self.info.counter_model(self.model)

    def window(self) -> int | None:
        """The model's context window, where the price data knows it."""
        return context_window(self.model, self.provider)

    def settings(self, **values: Any) -> RunSettings:
        """Run settings on this engine (the method and its parameters from ``values``)."""
        return RunSettings(model=self.model, provider=self.provider, price_model=self.price_model, **values)

    def client(
        self,
        counter: TokenCounter | None = None,
        *,
        reach: int = 4_000,
        timeout_s: float = 120.0,
        on_wait: OnWait | None = None,
        configured: Lookup = environment,
    ) -> LLMClient:
        """A fresh client (never cached: clients hold connections). A free engine counts with
        ``counter``; the simulated reader sees ``reach`` tokens from its instructions."""
        return engine_client(
            self.provider,
            model=self.model,
            counter=counter,
            reach=reach,
            api_key=self.api_key,
            base_url=self.base_url,
            timeout_s=timeout_s,
            on_wait=on_wait,
            configured=configured,
        )


# Wraps a run with the runner in hand (the CLI's signal handling stops it).
Guard = Callable[[Executor], AbstractContextManager[object]]
