"""Costs: our prices agree with genai-prices' own, and nothing unknown raises."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import genai_prices
import pytest
from genai_prices import calc_price
from genai_prices import data as price_data
from genai_prices.data_snapshot import DataSnapshot
from genai_prices.types import TieredPrices

from rr_core import costs
from rr_core.costs import (
    OVERRIDES,
    Cost,
    estimate_cost,
    known_models,
    price_data_version,
    price_for,
    price_usage,
)
from rr_core.llm.base import Usage

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = DataSnapshot(providers=price_data.providers, from_auto_update=False)


def library_rates(model: str, provider: str) -> tuple[Decimal, Decimal | None, Decimal]:
    """genai-prices' own base input, cache-read and output rates per million for a model."""
    _, info = BUNDLED.find_provider_model(model, None, provider, None)
    prices = info.get_prices(datetime.now(UTC))
    values = (prices.input_mtok, prices.cache_read_mtok, prices.output_mtok)
    assert not any(isinstance(v, TieredPrices) for v in values), f"{model} is tiered"
    inp, cached, out = values
    assert isinstance(inp, Decimal) and isinstance(out, Decimal)
    assert cached is None or isinstance(cached, Decimal)
    return inp, cached, out


def library_total(usage: Usage, model: str, provider: str) -> float:
    """The library's own price for our usage (its input_tokens is the whole prompt)."""
    result = calc_price(
        genai_prices.Usage(
            input_tokens=usage.prompt_tokens,
            cache_read_tokens=usage.cached_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
        ),
        model,
        provider_id=provider,
    )
    return float(result.total_price)


def test_openai_model_priced_from_library_rates() -> None:
    inp, _, out = library_rates("gpt-4o-mini", "openai")
    cost = price_usage(Usage(input_tokens=2_000_000, output_tokens=500_000), "gpt-4o-mini")
    assert cost.known
    assert cost.source.startswith("genai-prices ")
    assert cost.input_usd == pytest.approx(2 * float(inp))
    assert cost.output_usd == pytest.approx(0.5 * float(out))
    assert cost.total_usd == pytest.approx(2 * float(inp) + 0.5 * float(out))
    # Order of magnitude: gpt-4o-mini is a cheap model, well under $1 per million in.
    assert 0.01 < float(inp) < 1.0
    assert 0.1 < float(out) < 5.0
    price = price_for("gpt-4o-mini", "openai")
    assert price is not None
    assert (price.input, price.output) == (float(inp), float(out))


def test_cached_tokens_cheaper_than_uncached() -> None:
    inp, cached_rate, _ = library_rates("gpt-4.1", "openai")
    assert cached_rate is not None and cached_rate < inp
    cached = price_usage(Usage(cached_tokens=1_000_000), "gpt-4.1", "openai")
    uncached = price_usage(Usage(input_tokens=1_000_000), "gpt-4.1", "openai")
    assert cached.cached_usd == pytest.approx(float(cached_rate))
    assert cached.input_usd == 0.0
    assert 0 < cached.total_usd < uncached.total_usd


def test_anthropic_model_priced_with_cache_read_and_write() -> None:
    usage = Usage(
        input_tokens=10_000,
        cached_tokens=50_000,
        cache_write_tokens=20_000,
        output_tokens=1_000,
    )
    cost = price_usage(usage, "claude-sonnet-4-5-20250929")  # provider inferred
    assert cost.known
    assert cost.cached_usd < usage.cached_tokens / usage.input_tokens * cost.input_usd
    assert cost.cache_write_usd > usage.cache_write_tokens / usage.input_tokens * cost.input_usd
    assert cost.total_usd == pytest.approx(library_total(usage, "claude-sonnet-4-5", "anthropic"))
    assert price_usage(usage, "claude-sonnet-4-5", "anthropic") == cost


def test_unknown_model_costs_nothing_and_says_so() -> None:
    cost = price_usage(Usage(input_tokens=1000, output_tokens=10), "no-such-model-xyz")
    assert cost == Cost(0.0, 0.0, 0.0, 0.0, False, "unknown model 'no-such-model-xyz': no price data")
    assert cost.total_usd == 0.0
    assert not estimate_cost(1000, 10, "gpt-does-not-exist", "openai").known
    assert not estimate_cost(1000, 10, "claude-sonnet-4-5", "openai").known
    assert not estimate_cost(1000, 10, "").known
    assert price_for("no-such-model-xyz") is None


def test_offline_engine_is_free_and_known() -> None:
    usage = Usage(input_tokens=123_456, output_tokens=789)
    for cost in (price_usage(usage, "offline"), price_usage(usage, "bm25", "offline")):
        assert cost.known
        assert cost.total_usd == 0.0
        assert cost.source == "offline engine (free)"
    assert OVERRIDES["offline"].source == "offline engine (free)"


@pytest.mark.parametrize("provider", ["openai-compatible", "ollama", "vllm", "llama.cpp"])
def test_local_servers_are_free(provider: str) -> None:
    # Even a model id genai-prices knows costs nothing when served locally.
    for model in ("llama3.1:8b", "gpt-4o"):
        cost = estimate_cost(100_000, 1_000, model, provider)
        assert cost.known and cost.total_usd == 0.0
        assert cost.source == "local model (free)"


def test_ollama_style_tag_without_provider_is_local() -> None:
    cost = estimate_cost(1000, 100, "deepseek-r1:8b")
    assert cost.known and cost.total_usd == 0.0 and cost.source == "local model (free)"


def test_cost_addition() -> None:
    a = price_usage(Usage(input_tokens=1000, cached_tokens=500, output_tokens=100), "gpt-4o")
    b = price_usage(Usage(input_tokens=3000, cache_write_tokens=200, output_tokens=50), "gpt-4o")
    s = a + b
    assert s.input_usd == pytest.approx(a.input_usd + b.input_usd)
    assert s.cached_usd == pytest.approx(a.cached_usd + b.cached_usd)
    assert s.cache_write_usd == pytest.approx(a.cache_write_usd + b.cache_write_usd)
    assert s.output_usd == pytest.approx(a.output_usd + b.output_usd)
    assert s.total_usd == pytest.approx(a.total_usd + b.total_usd)
    assert s.known and s.source == a.source
    assert sum([a, b]) == s
    assert Cost() + a == a

    unknown = estimate_cost(10, 10, "mystery")
    mixed = a + unknown
    assert not mixed.known
    assert mixed.total_usd == pytest.approx(a.total_usd)
    assert a.source in mixed.source and "mystery" in mixed.source


def test_estimate_counts_all_input_uncached() -> None:
    est = estimate_cost(40_000, 800, "gpt-5", "openai")
    assert est == price_usage(Usage(input_tokens=40_000, output_tokens=800), "gpt-5", "openai")
    assert est.cached_usd == 0.0 and est.cache_write_usd == 0.0


def test_long_context_tier_applies_to_the_whole_call() -> None:
    # claude-sonnet-4-5 bills every token of a prompt over 200k at the higher tier.
    small = estimate_cost(200_000, 1000, "claude-sonnet-4-5")
    large = estimate_cost(200_001, 1000, "claude-sonnet-4-5")
    assert large.input_usd > 1.9 * small.input_usd  # $3 -> $6 per million
    assert large.output_usd > 1.4 * small.output_usd  # $15 -> $22.50 per million
    for tokens in (200_000, 200_001):
        usage = Usage(input_tokens=tokens, output_tokens=1000)
        assert price_usage(usage, "claude-sonnet-4-5").total_usd == pytest.approx(
            library_total(usage, "claude-sonnet-4-5", "anthropic")
        )


USAGES = [
    Usage(input_tokens=1000, output_tokens=200),
    Usage(
        input_tokens=3000,
        cached_tokens=90_000,
        cache_write_tokens=5000,
        output_tokens=700,
    ),
    Usage(input_tokens=150_000, cached_tokens=150_000, output_tokens=2000),
    Usage(input_tokens=250_000, cache_write_tokens=50_000, output_tokens=4000),
]


@pytest.mark.parametrize("model", known_models())
def test_known_models_price_as_genai_prices_does(model: str) -> None:
    provider = "anthropic" if "claude" in model else "google" if "gemini" in model else "openai"
    price = price_for(model)
    assert price is not None and price.input > 0 and price.output > price.input
    assert price.cached_input <= price.input
    for usage in USAGES:
        cost = price_usage(usage, model)
        assert cost.known, model
        assert cost.total_usd == pytest.approx(library_total(usage, model, provider), rel=1e-9), (
            model,
            usage,
        )


def test_known_models_is_curated_and_covers_both_providers() -> None:
    models = known_models()
    assert models == list(costs._KNOWN_MODELS)  # none dropped for want of price data
    for required in ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "gpt-5"):
        assert required in models
    for family in ("opus", "sonnet", "haiku"):
        assert any(m.startswith(f"claude-{family}") for m in models)
    assert all(estimate_cost(1000, 100, m).known for m in models)


def test_price_data_version_names_the_package() -> None:
    version = price_data_version()
    assert version.startswith(f"genai-prices {genai_prices.__version__}")


def test_no_background_price_updates() -> None:
    price_usage(Usage(input_tokens=10), "gpt-4o")
    assert not any(t.name == "genai_prices:update" for t in threading.enumerate())


def test_prices_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("costs tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    costs._rates.cache_clear()
    assert price_usage(Usage(input_tokens=1000), "gpt-4.1-mini").known
    assert price_data_version()


@pytest.mark.parametrize(
    ("model", "provider"), [("gpt-4.1-mini", "openai"), ("claude-sonnet-4-5", "anthropic"), ("llama3", None)]
)
def test_many_calls_priced_together_cost_what_each_priced_alone_adds_up_to(
    model: str, provider: str | None
) -> None:
    """A grid's estimate prices its calls together (flat rates: summed tokens priced once; a
    model with prompt-length tiers, such as claude-sonnet-4-5 above 200k, call by call)."""
    calls: list[costs.CallCost] = [
        (prompt, 40 + i, model, provider, cached, written, ttl, mode)
        for i, (prompt, cached, written, ttl, mode) in enumerate(
            [
                (1_200, 0, 0, "5m", "now"),
                (90_000, 50_000, 0, "5m", "now"),
                (90_000, 0, 80_000, "1h", "now"),
                (250_000, 0, 10_000, "5m", "now"),  # over a 200k tier where the model has one
                (30_000, 900_000, 5, "5m", "batch"),  # more cached than the prompt: clamped
                (4_000, 0, 0, "5m", "batch"),
            ]
        )
    ]
    alone = [
        costs.estimate_cost(p, o, m, pr, cached_tokens=c, cache_write_tokens=w, cache_ttl=t, mode=md)
        for p, o, m, pr, c, w, t, md in calls
    ]
    together = costs.estimate_costs(calls)
    summed = sum(alone[1:], alone[0])
    for part in ("input_usd", "cached_usd", "cache_write_usd", "output_usd", "total_usd"):
        assert getattr(together, part) == pytest.approx(getattr(summed, part), rel=1e-12, abs=1e-15), part
    assert together.known == summed.known
    assert set(together.source.split(" + ")) == set(summed.source.split(" + "))
    assert costs.estimate_costs([]) == Cost()


# ---- The price data's answers, kept per data version --------------------------------------------

_MEMO_MODELS = [
    ("gpt-4.1-mini", "openai"),  # batch: the published discount
    ("gpt-6.1-sol", "openai"),  # long-context tiers
    ("claude-sonnet-4-5", "anthropic"),  # cache writes: Anthropic's multiples or the data's
    ("gemini-2.5-pro", "google"),
    ("no-such-model-anywhere", "openai"),  # not known
]


def _every_answer() -> list[object]:
    return [
        (costs._rates(m, p, costs._today(), mode), costs.context_window(m, p))
        for m, p in _MEMO_MODELS
        for mode in ("now", "batch")
    ]


def _forget_in_process() -> None:
    costs._rates.cache_clear()
    costs._memo.cache_clear()
    costs.context_window.cache_clear()


def test_the_kept_answers_are_the_datas_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(costs.CACHE_ENV, "off")
    _forget_in_process()
    from_data = _every_answer()
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(costs.CACHE_ENV, str(tmp_path))
    _forget_in_process()
    assert _every_answer() == from_data  # read from the data, and kept
    (kept,) = tmp_path.iterdir()
    assert kept.name == f"genai-prices-{genai_prices.__version__}.json"
    _forget_in_process()
    assert _every_answer() == from_data  # read back from the file
    _forget_in_process()


def test_a_file_that_cannot_be_read_is_passed_over_and_written_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(costs.CACHE_ENV, "off")
    _forget_in_process()
    expected = price_for("gpt-4.1-mini")
    monkeypatch.setenv(costs.CACHE_ENV, str(tmp_path))
    kept = tmp_path / f"genai-prices-{genai_prices.__version__}.json"
    for damaged in ("{not json", "[1, 2]", ""):
        kept.write_text(damaged)
        _forget_in_process()
        assert price_for("gpt-4.1-mini") == expected
        assert "rates|openai|gpt-4.1-mini|" in kept.read_text()  # whole again
    _forget_in_process()


def test_a_process_with_the_answers_kept_prices_without_loading_the_data(tmp_path: Path) -> None:
    program = (
        "import sys; from rr_core.costs import price_for, context_window; "
        "print(price_for('gpt-4.1-mini').input, context_window('gpt-4.1-mini'), 'genai_prices' in sys.modules)"
    )
    env = {**os.environ, costs.CACHE_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}

    def run() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    first, second = run(), run()
    assert first[-1] == "True" and second[-1] == "False"  # the first loaded the data, the second did not
    assert first[:-1] == second[:-1]  # and both say the same


def test_answers_not_as_kept_here_are_read_from_the_data_and_old_days_are_dropped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(costs.CACHE_ENV, "off")
    _forget_in_process()
    expected = price_for("gpt-4.1-mini"), costs.context_window("gpt-4.1-mini")
    monkeypatch.setenv(costs.CACHE_ENV, str(tmp_path))
    kept = tmp_path / f"genai-prices-{genai_prices.__version__}.json"
    today = costs._today()
    odd = {"input": "cheap", "cached": [1], "output": None}  # not a kept rate
    kept.write_text(
        json.dumps(
            {
                f"rates|openai|gpt-4.1-mini|{today}|now": odd,
                "window|openai|gpt-4.1-mini": "big",
                f"rates|openai|gpt-4o|{today - 30}|now": None,  # a month old
            }
        )
    )
    _forget_in_process()
    assert (price_for("gpt-4.1-mini"), costs.context_window("gpt-4.1-mini")) == expected
    written = json.loads(kept.read_text())
    assert written[f"rates|openai|gpt-4.1-mini|{today}|now"] != odd
    assert f"rates|openai|gpt-4o|{today - 30}|now" not in written
    _forget_in_process()
