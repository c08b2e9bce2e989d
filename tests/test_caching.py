"""Prompt caching end to end: where a prompt's stable prefix ends, the hint on the request, the
bodies both SDKs send for it, what the stubs bill, how reads and writes (and batches) are
priced, the expected-cache estimate, and the trace's warning when an expected hit is missing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import genai_prices
import pytest
from conftest import fee_document, word_counter
from genai_prices import calc_price
from genai_prices import data as price_data
from genai_prices.data_snapshot import DataSnapshot

from rr_core.costs import BATCH_DISCOUNT, estimate_cost, price_for, price_usage
from rr_core.documents import Document
from rr_core.llm.anthropic_client import AnthropicClient, messages_usage
from rr_core.llm.base import BatchLine, LLMRequest, Usage
from rr_core.llm.offline import OfflineEngine
from rr_core.llm.openai_client import OpenAIClient
from rr_core.methods import parse_spec, plan_method
from rr_core.outputs import AnswerOut
from rr_core.plans import Call, Plan, estimate_calls, expected_cache, prefix_key
from rr_core.prompts import REMINDER_TAGS_ONLY, SEPARATOR, PromptLayout, build_layout, instructions
from rr_core.runs import Executor, RunTrace
from rr_core.settings import QuestionPlacement, ReminderStyle, RunSettings
from tests.stub_server import PromptCache, Reply, StubServer

QUESTIONS = ("What is the termination fee?", "Who signs the side letter?", "When does the lease end?")
PAGES = [(n, f"Page {n} says something plain about clause {n}.") for n in range(1, 6)]
BASE = RunSettings(reminder_every=400, model="claude-sonnet-5-5", provider="anthropic")
BUNDLED = DataSnapshot(providers=price_data.providers, from_auto_update=False)


def layout_of(
    placement: QuestionPlacement,
    question: str = QUESTIONS[0],
    *,
    tags_only: bool = False,
    shared_pages: bool = True,
    reminders_after: Sequence[int] = (2, 4),
) -> PromptLayout:
    return build_layout(
        instructions("answer", question, tags_only_reminder=tags_only),
        PAGES,
        reminders_after=reminders_after,
        questions=(question,),
        placement=placement,
        shared_pages=shared_pages,
    )


def prefix(layout: PromptLayout) -> str:
    return layout.render()[: layout.prefix_chars()]


# ---- 1. Where the stable prefix ends ---------------------------------------------------------


@pytest.mark.parametrize(
    "placement",
    [QuestionPlacement.BEFORE_AND_AFTER, QuestionPlacement.QUERY_AWARE, QuestionPlacement.REPEATED],
)
def test_a_layout_that_opens_with_the_question_has_no_cacheable_prefix(placement: QuestionPlacement) -> None:
    for tags_only in (False, True):
        layout = layout_of(placement, tags_only=tags_only)
        assert layout.blocks[0].per_question
        assert layout.prefix_chars() == 0 and layout.prefix_blocks() == 0


def test_the_cache_aware_layout_caches_everything_up_to_the_question() -> None:
    layout = layout_of(QuestionPlacement.CACHE_AWARE)
    text = layout.render()
    assert [b.kind for b in layout.blocks][-1] == "closing"
    assert layout.prefix_blocks() == len(layout.blocks) - 1
    # The rest of the prompt is exactly the final block: the question and the reply format.
    assert text[layout.prefix_chars() :] == layout.blocks[-1].text
    assert layout.total_chars() == len(text)
    # Its reminders are the tags-only ones, whatever the instructions said, and carry no question.
    reminders = [b for b in layout.blocks if b.kind == "reminder"]
    assert len(reminders) == 2 and all(b.text == REMINDER_TAGS_ONLY and not b.per_question for b in reminders)
    # The same prefix for every question, byte for byte; the prompts differ after it.
    others = [layout_of(QuestionPlacement.CACHE_AWARE, q) for q in QUESTIONS[1:]]
    assert all(prefix(o) == prefix(layout) for o in others)
    assert all(o.render() != text for o in others)


def test_the_cache_aware_prompt_states_no_question_before_its_final_block() -> None:
    plan = plan_method(
        fee_document(),
        QUESTIONS[0],
        BASE.but(method="rr", question_placement=QuestionPlacement.CACHE_AWARE),
        word_counter(),
    )
    for call in plan.calls:
        text = call.render()
        final = call.layout.blocks[-1].text
        assert text.endswith(final) and QUESTIONS[0] in final
        assert QUESTIONS[0] not in text[: -len(final)] and "Question" not in text[: -len(final)]
    # The trace records what the reminders said.
    assert plan.settings.reminder_style is ReminderStyle.TAGS_ONLY
    assert "reminder: tags-only" in plan.describe and "layout: cache-aware" in plan.describe


def test_question_after_and_document_first_cache_the_document() -> None:
    after = layout_of(QuestionPlacement.QUESTION_AFTER, reminders_after=())
    assert after.blocks[after.prefix_blocks()].kind == "closing"
    first = layout_of(QuestionPlacement.DOCUMENT_FIRST, reminders_after=())
    assert prefix(first).startswith("<DOCUMENT>") and prefix(first).endswith("</DOCUMENT>" + SEPARATOR)


def test_a_reminder_that_states_the_question_ends_the_prefix() -> None:
    layout = layout_of(QuestionPlacement.QUESTION_AFTER, reminders_after=(2,))
    assert layout.blocks[layout.prefix_blocks()].kind == "reminder"
    assert QUESTIONS[0] not in prefix(layout)
    assert prefix(layout).endswith(f"</PAGE 2>{SEPARATOR}")


def test_pages_picked_for_the_question_are_not_part_of_the_prefix() -> None:
    layout = layout_of(QuestionPlacement.CACHE_AWARE, shared_pages=False)
    assert layout.blocks[layout.prefix_blocks()].kind == "page"
    assert prefix(layout).endswith("<DOCUMENT>" + SEPARATOR)


def test_rr_in_the_papers_layout_gives_no_hint_and_in_the_cache_aware_one_hints_the_whole_document() -> None:
    document = fee_document()
    paper = plan_method(document, QUESTIONS[0], BASE.but(method="rr"), word_counter())
    assert all(c.cache_hint(document.sha256) is None for c in paper.calls)
    cached = plan_method(
        document,
        QUESTIONS[0],
        BASE.but(method="rr", question_placement=QuestionPlacement.CACHE_AWARE),
        word_counter(),
    )
    retrieval, answer = cached.phases[0].calls[0], cached.phases[1].calls[0]
    hint = retrieval.cache_hint(document.sha256, "1h")
    assert hint is not None and hint.ttl == "1h"
    assert hint.key == prefix_key(document.sha256, "cache-aware") and len(hint.key) == 32
    assert hint.prefix_chars == retrieval.layout.prefix_chars() > 0.9 * len(retrieval.render())
    assert 1_024 <= hint.tokens <= retrieval.prompt_tokens
    # The answer call's pages are picked per question (estimated here): no hint.
    assert answer.cache_hint(document.sha256) is None
    # A prefix under the providers' minimum gets none.
    assert retrieval.cache_hint(document.sha256, min_tokens=retrieval.prompt_tokens + 1) is None


# ---- 2-3. The hint on the wire, through the real SDKs ------------------------------------------


def hinted_request(ttl: str = "5m") -> tuple[LLMRequest, Call]:
    document = fee_document()
    plan = plan_method(
        document,
        QUESTIONS[0],
        BASE.but(method="baseline", question_placement=QuestionPlacement.CACHE_AWARE),
        word_counter(),
    )
    call = plan.calls[0]
    hint = call.cache_hint(document.sha256, "1h" if ttl == "1h" else "5m")
    assert hint is not None
    request = LLMRequest(prompt=call.render(), schema=AnswerOut, model="claude-sonnet-5-5", cache=hint)
    return request, call


def test_anthropic_sends_the_prefix_as_a_cache_breakpoint(stub: StubServer) -> None:
    request, call = hinted_request("1h")
    assert request.cache is not None
    client = AnthropicClient(
        model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=stub.anthropic_url, max_retries=0
    )
    completion = client.complete(request)
    head, tail = request.prompt[: request.cache.prefix_chars], request.prompt[request.cache.prefix_chars :]
    assert stub.last.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": head, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                {"type": "text", "text": tail},
            ],
        }
    ]
    assert head + tail == call.render() and tail == call.layout.blocks[-1].text
    assert completion.cache_hint_sent
    # Without a hint: the prompt as one string, as before.
    plain = client.complete(LLMRequest(prompt=request.prompt, schema=AnswerOut, model="claude-sonnet-5-5"))
    assert stub.last.body["messages"] == [{"role": "user", "content": request.prompt}]
    assert not plain.cache_hint_sent


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_stubs_batch_items_read_the_prompt_cache_a_sync_call_wrote(provider: str) -> None:
    request, _ = hinted_request("1h")
    with StubServer(prompt_cache=True) as stub:
        if provider == "anthropic":
            client: OpenAIClient | AnthropicClient = AnthropicClient(
                model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=stub.anthropic_url, max_retries=0
            )
        else:
            client = OpenAIClient(model="gpt-4.1-mini", api_key="sk-test", base_url=stub.url, max_retries=0)
        assert client.batch is not None
        warm = client.complete(request)  # the warming call: writes the prefix, reads nothing
        assert warm.usage.cached_tokens == 0
        batch_id = client.batch.submit(
            [BatchLine("a" * 64, request), BatchLine("b" * 64, request)], label="c"
        )
        stub.release_batch_items()
        results = list(client.batch.results(batch_id))
    assert len(results) == 2
    for result in results:
        assert result.completion is not None
        assert result.completion.usage.cached_tokens > 0.9 * request.cache.tokens  # type: ignore[union-attr]


def test_openai_responses_send_the_cache_key_and_the_prompt_unchanged(stub: StubServer) -> None:
    request, _ = hinted_request()
    assert request.cache is not None
    client = OpenAIClient(model="gpt-4.1-mini", api_key="sk-test", base_url=stub.url, max_retries=0)
    assert client.complete(request).cache_hint_sent
    body = stub.last.body
    assert body["prompt_cache_key"] == request.cache.key and body["input"] == request.prompt
    client.complete(LLMRequest(prompt=request.prompt, schema=AnswerOut, model="gpt-4.1-mini"))
    assert "prompt_cache_key" not in stub.last.body


def test_a_compatible_server_gets_nothing_new(stub: StubServer) -> None:
    request, _ = hinted_request()
    client = OpenAIClient(model="llama3", base_url=stub.url, api="chat", max_retries=0)
    assert not client.complete(request).cache_hint_sent
    body = stub.last.body
    assert "prompt_cache_key" not in body and body["messages"] == [
        {"role": "user", "content": request.prompt}
    ]


def test_anthropic_usage_keeps_one_hour_writes_apart(stub: StubServer) -> None:
    reported = {
        "input_tokens": 50,
        "output_tokens": 7,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 3_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_000, "ephemeral_1h_input_tokens": 2_000},
    }
    stub.enqueue(Reply(usage=reported))
    client = AnthropicClient(
        model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=stub.anthropic_url, max_retries=0
    )
    usage = client.complete(hinted_request("1h")[0]).usage
    assert usage == Usage(
        input_tokens=50, cache_write_tokens=3_000, output_tokens=7, cache_write_1h_tokens=2_000
    )
    assert usage.prompt_tokens == 3_050
    assert (usage + usage).cache_write_1h_tokens == 4_000
    # No split reported: no one-hour writes; a split without the total still counts.
    assert messages_usage(None) == Usage()


# ---- 4. Pricing ---------------------------------------------------------------------------------


def library(usage: Usage, model: str, provider: str, context: dict[str, str] | None = None) -> float:
    """genai-prices' own price of our usage (its input_tokens is the whole prompt)."""
    kwargs = {"cache_write_1h_tokens": usage.cache_write_1h_tokens} if usage.cache_write_1h_tokens else {}
    result = calc_price(
        genai_prices.Usage(
            input_tokens=usage.prompt_tokens,
            cache_read_tokens=usage.cached_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
            **kwargs,
        ),
        model,
        provider_id=provider,
        price_context=context,  # type: ignore[arg-type]
    )
    return float(result.total_price)


MIXED = Usage(
    input_tokens=20_000,
    cached_tokens=90_000,
    cache_write_tokens=30_000,
    output_tokens=500,
    cache_write_1h_tokens=10_000,
)


@pytest.mark.parametrize(
    ("model", "provider"),
    [("claude-sonnet-4-5", "anthropic"), ("claude-haiku-4-5", "anthropic"), ("gpt-4.1-mini", "openai")],
)
def test_reads_writes_and_one_hour_writes_price_as_the_library_does(model: str, provider: str) -> None:
    usage = (
        MIXED
        if provider == "anthropic"
        else Usage(input_tokens=20_000, cached_tokens=90_000, output_tokens=500)
    )
    assert price_usage(usage, model, provider).total_usd == pytest.approx(library(usage, model, provider))
    cost = price_usage(usage, model, provider)
    price = price_for(model, provider)
    assert price is not None and cost.cached_usd == pytest.approx(
        usage.cached_tokens * price.cached_input / 1e6
    )


def test_anthropic_write_multiples_apply_where_the_data_has_no_write_rate() -> None:
    _, info = BUNDLED.find_provider_model("claude-2", None, "anthropic", None)
    listed = info.get_prices(datetime.now(UTC))
    assert listed.cache_write_mtok is None and listed.input_mtok is not None  # the case at hand
    price = price_for("claude-2", "anthropic")
    assert price is not None
    assert price.cache_write == pytest.approx(1.25 * price.input)
    assert price.cache_write_1h == pytest.approx(2.0 * price.input)
    # Where the data has a one-hour rate it is used (it is 2x the input rate there too).
    sonnet = price_for("claude-sonnet-4-5", "anthropic")
    assert sonnet is not None and sonnet.cache_write_1h == float(
        info_rate("claude-sonnet-4-5", "cache_write_1h_mtok")
    )


def info_rate(model: str, key: str) -> float:
    _, info = BUNDLED.find_provider_model(model, None, None, None)
    value = getattr(info.get_prices(datetime.now(UTC)), key)
    return float(getattr(value, "base", value))


@pytest.mark.parametrize(
    ("model", "provider"), [("claude-sonnet-4-5", "anthropic"), ("gpt-4.1-mini", "openai")]
)
def test_batch_uses_the_datas_batch_rates_where_it_has_them(model: str, provider: str) -> None:
    usage = (
        MIXED
        if provider == "anthropic"
        else Usage(input_tokens=20_000, cached_tokens=90_000, output_tokens=500)
    )
    batch = price_usage(usage, model, provider, mode="batch")
    assert batch.total_usd == pytest.approx(library(usage, model, provider, {"processing": "batch"}))
    assert batch.total_usd < price_usage(usage, model, provider).total_usd
    assert "batch" in batch.source


def test_batch_takes_the_published_discount_where_the_data_has_no_batch_rates() -> None:
    _, info = BUNDLED.find_provider_model("claude-opus-4-1", None, "anthropic", None)
    now = datetime.now(UTC)
    assert info.get_prices(now, {"processing": "batch"}) == info.get_prices(now)  # no batch rates
    batch = price_usage(MIXED, "claude-opus-4-1", "anthropic", mode="batch")
    assert batch.total_usd == pytest.approx(
        (1 - BATCH_DISCOUNT["anthropic"]) * library(MIXED, "claude-opus-4-1", "anthropic")
    )
    # Free engines cost nothing either way; estimates take the mode too.
    for provider in ("offline", "openai-compatible"):
        assert price_usage(MIXED, "llama3", provider, mode="batch").total_usd == 0.0
    now_cost = estimate_cost(100_000, 500, "claude-opus-4-1", "anthropic")
    assert estimate_cost(
        100_000, 500, "claude-opus-4-1", "anthropic", mode="batch"
    ).total_usd == pytest.approx(now_cost.total_usd * (1 - BATCH_DISCOUNT["anthropic"]))


def test_an_estimate_with_expected_cache_tokens_prices_them_as_usage() -> None:
    expected = estimate_cost(
        120_000,
        500,
        "claude-sonnet-4-5",
        "anthropic",
        cached_tokens=90_000,
        cache_write_tokens=10_000,
        cache_ttl="1h",
    )
    usage = Usage(
        input_tokens=20_000,
        cached_tokens=90_000,
        cache_write_tokens=10_000,
        output_tokens=500,
        cache_write_1h_tokens=10_000,
    )
    assert expected == price_usage(usage, "claude-sonnet-4-5", "anthropic")
    # The default counts all input as uncached, as before.
    plain = estimate_cost(120_000, 500, "claude-sonnet-4-5", "anthropic")
    assert plain.cached_usd == plain.cache_write_usd == 0.0
    assert plain == price_usage(
        Usage(input_tokens=120_000, output_tokens=500), "claude-sonnet-4-5", "anthropic"
    )


# ---- 5. Expected caching in estimates ------------------------------------------------------------


def cache_aware_plans(
    document: Document, method: str = "baseline", questions: Sequence[str] = QUESTIONS
) -> list[Plan]:
    settings = BASE.but(method=method, question_placement=QuestionPlacement.CACHE_AWARE)
    return [plan_method(document, q, settings, word_counter()) for q in questions]


def test_the_first_call_with_a_prefix_writes_it_and_later_ones_read_it() -> None:
    document = fee_document()
    calls = [p.calls[0] for p in cache_aware_plans(document)]
    tokens = calls[0].prefix_tokens
    assert tokens >= 1_024
    assert expected_cache(calls, document.sha256) == [(0, tokens), (tokens, 0), (tokens, 0)]
    # Work that marks only shared prefixes (a review grid): the same for calls that share one,
    # nothing for a call alone with its prefix (it is sent unmarked).
    assert expected_cache(calls, document.sha256, lone_prefixes=False) == expected_cache(
        calls, document.sha256
    )
    assert expected_cache(calls[:1], document.sha256) == [(0, tokens)]
    assert expected_cache(calls[:1], document.sha256, lone_prefixes=False) == [(0, 0)]
    # The paper's layout: nothing is expected either way.
    paper = [
        plan_method(document, q, BASE.but(method="baseline"), word_counter()).calls[0] for q in QUESTIONS
    ]
    assert expected_cache(paper, document.sha256) == [(0, 0)] * 3
    # A prefix under the minimum: neither.
    assert expected_cache(calls, min_tokens=10**9) == [(0, 0)] * 3


def test_estimate_calls_with_caching_and_batch() -> None:
    calls = [p.calls[0] for p in cache_aware_plans(fee_document())]
    settings = BASE
    plain = estimate_calls(calls, settings)
    # Today's default numbers, unchanged: every call priced as all-uncached input.
    assert plain.cost == sum(
        (estimate_cost(c.prompt_tokens, c.output_tokens, *settings.pricing) for c in calls[1:]),
        estimate_cost(calls[0].prompt_tokens, calls[0].output_tokens, *settings.pricing),
    )
    assert (plain.cached_tokens, plain.cache_write_tokens) == (0, 0)
    cached = estimate_calls(calls, settings, caching=True)
    tokens = calls[0].prefix_tokens
    assert (cached.cached_tokens, cached.cache_write_tokens) == (2 * tokens, tokens)
    assert cached.input_tokens == plain.input_tokens
    price = price_for("claude-sonnet-5-5", "anthropic")
    assert price is not None
    saved = 2 * tokens * (price.input - price.cached_input) - tokens * (price.cache_write - price.input)
    assert plain.usd - cached.usd == pytest.approx(saved / 1e6)
    batch = estimate_calls(calls, settings, caching=True, mode="batch")
    assert batch.usd < cached.usd


# ---- 6-8. Runs against the caching stubs ----------------------------------------------------


def run_one_after_another(client: object, document: Document, plans: Sequence[Plan]) -> list[RunTrace]:
    """Each plan once the one before has its reply (what the runner's dispatch order does)."""
    with Executor(client) as executor:  # type: ignore[arg-type]
        return [executor.run(document, [plan])[0] for plan in plans]


def anthropic_on(stub: StubServer) -> AnthropicClient:
    return AnthropicClient(
        model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=stub.anthropic_url, max_retries=0
    )


def test_a_repeated_prefix_is_read_from_the_cache_and_priced_lower() -> None:
    document = fee_document()
    plans = cache_aware_plans(document)
    with StubServer(prompt_cache=True) as stub:
        first, second, third = run_one_after_another(anthropic_on(stub), document, plans)
        cache = stub.prompt_cache
        assert cache is not None and (cache.writes, cache.reads) == (1, 2)
    tokens = plans[0].calls[0].prefix_tokens
    assert first.calls[0].usage.cache_write_tokens > 0 and first.calls[0].usage.cached_tokens == 0
    for trace in (second, third):
        call = trace.calls[0]
        assert call.usage.cached_tokens == first.calls[0].usage.cache_write_tokens
        assert call.expected_cached_tokens == tokens
        assert call.cached_cost_usd > 0 and trace.cost_by_stage()["cached"] == pytest.approx(
            call.cached_cost_usd
        )
        assert sum(trace.cost_by_stage().values()) == pytest.approx(trace.cost_usd)
        assert call.cost_usd < 0.5 * first.calls[0].cost_usd
        assert not trace.warnings
    assert first.calls[0].expected_cached_tokens == 0
    # The cost chart shows the cached input as a segment of its own, the stages without it.
    from pages.common.results import CACHED_NAME, cost_chart

    bars = {bar.name: list(bar.y) for bar in cost_chart([second]).data}
    assert bars[CACHED_NAME] == [pytest.approx(second.calls[0].cached_cost_usd)]
    assert sum(v[0] for v in bars.values()) == pytest.approx(second.cost_usd)


def test_questions_run_together_write_the_prefix_once_and_read_it_after() -> None:
    """All plans at once, 8 calls in flight: the dispatch chain sends the first call of the
    shared prefix alone, the others once its reply is back, so one write and the rest reads."""
    document = fee_document()
    questions = [f"What does page {n} say about the fee?" for n in range(1, 9)]
    plans = cache_aware_plans(document, questions=questions)
    with StubServer(prompt_cache=True) as stub, Executor(anthropic_on(stub), concurrency=8) as executor:
        traces = executor.run(document, plans)
        cache = stub.prompt_cache
        assert cache is not None and (cache.writes, cache.reads) == (1, len(questions) - 1)
    assert sum(1 for t in traces if t.calls[0].expected_cached_tokens) == len(questions) - 1
    assert not any(t.warnings for t in traces)


def test_a_missing_expected_hit_is_reported_on_the_run(stub: StubServer) -> None:
    """The plain stub reports no cache reads: the second call's expected hit is missing."""
    document = fee_document()
    plans = cache_aware_plans(document, questions=QUESTIONS[:2])
    first, second = run_one_after_another(anthropic_on(stub), document, plans)
    assert not first.warnings
    tokens = plans[1].calls[0].prefix_tokens
    assert second.calls[0].expected_cached_tokens == tokens
    assert any(
        w.startswith(f"Call answer: a cache hit on ~{tokens:,} tokens was expected")
        and "none was reported" in w
        for w in second.warnings
    )


def test_free_engines_and_the_papers_layout_expect_nothing() -> None:
    document = fee_document()
    traces = run_one_after_another(OfflineEngine(word_counter()), document, cache_aware_plans(document))
    assert all(c.expected_cached_tokens == 0 and not t.warnings for t in traces for c in t.calls)


def test_openai_stub_reads_by_key_and_identical_prefix() -> None:
    document = fee_document()
    plans = cache_aware_plans(document)
    with StubServer(prompt_cache=True) as stub:
        client = OpenAIClient(model="gpt-4.1-mini", api_key="sk-test", base_url=stub.url, max_retries=0)
        traces = run_one_after_another(client, document, plans)
        bodies = stub.bodies("responses")
    assert len({b["prompt_cache_key"] for b in bodies}) == 1
    first, *later = (t.calls[0].usage for t in traces)
    assert first.cached_tokens == 0 and first.cache_write_tokens > 0
    for usage in later:
        assert usage.cached_tokens >= 1_024 and usage.cached_tokens % 128 == 0
        # Nearly the whole prefix (in the stub's 4-character tokens, rounded down to 128).
        assert usage.cached_tokens > 0.9 * len(prefix(plans[0].calls[0].layout)) // 4 - 128


def test_the_stub_cache_needs_a_reply_before_it_serves_a_prefix() -> None:
    cache = PromptCache()
    body = {
        "model": "claude-sonnet-4-5",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "x" * 8_000, "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": "q"},
                ],
            }
        ],
    }
    usage = {"input_tokens": 2_000, "output_tokens": 1}
    assert cache.usage("messages", body, usage)["cache_creation_input_tokens"] == 2_000
    assert (
        cache.usage("messages", body, usage)["cache_creation_input_tokens"] == 2_000
    )  # sent together: both miss
    cache.replied("messages", body)
    assert cache.usage("messages", body, usage)["cache_read_input_tokens"] == 2_000
    # Under the minimum (2,048 for Haiku models): neither.
    haiku = {**body, "model": "claude-haiku-4-5"}
    assert "cache_read_input_tokens" not in cache.usage("messages", haiku, usage)


# ---- 7. The Lab preset ---------------------------------------------------------------------------


def test_the_cache_aware_preset_compares_the_layouts_on_the_same_trials() -> None:
    from rr_core.lab.presets import get_preset

    preset = get_preset("cache-aware")
    assert preset.layout is QuestionPlacement.BEFORE_AND_AFTER and "tags-only" in preset.description
    series = [parse_spec(s, BASE) for s in preset.series]
    layouts = {(s.method, s.question_placement) for s in series}
    for method in ("reprompt", "rr"):
        assert (method, QuestionPlacement.BEFORE_AND_AFTER) in layouts
        assert (method, QuestionPlacement.CACHE_AWARE) in layouts
