"""Plans: the calls, reminder and chunk layout, and estimates of each method (METHOD.md §3–§8)."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest
from conftest import planted_texts, word_counter

from rr_core.chunking import partition_pages, plan_reminders
from rr_core.documents import Document, document_from_texts
from rr_core.errors import ConfigError
from rr_core.methods import (
    METHOD_LABELS,
    Method,
    ReminderPlacement,
    ReminderStyle,
    RunSettings,
    plan_all,
    plan_answer,
    plan_method,
    render_prompt,
)
from rr_core.prompts import REMINDER_TAGS_ONLY, split_tagged

QUESTION = "What is the termination fee?"
REMINDER_OPEN = "<INSTRUCTIONS_REMINDER>"
ONE_CALL = (Method.BASELINE, Method.REPROMPT)


def uniform_document(pages: int, tokens: int) -> Document:
    """Pages of exactly ``tokens`` words (the word counter makes that ``tokens`` tokens)."""
    counter = word_counter()
    texts = [" ".join(f"w{n}x{i}" for i in range(tokens)) for n in range(1, pages + 1)]
    document = document_from_texts("uniform.txt", texts, counter=counter)
    assert document.page_tokens == [tokens] * pages
    return document


def varied_document() -> Document:
    """Pages of uneven length (60 to 1,500 tokens) so layouts are not all multiples."""
    counter = word_counter()
    texts = [" ".join(["word"] * (60 + (n * 397) % 1_440)) for n in range(1, 61)]
    return document_from_texts("varied.txt", texts, counter=counter)


def settings(method: Method | str, **changes: object) -> RunSettings:
    base = RunSettings(method=Method(method), reminder_every=2_000, chunk_size=8_000)
    return replace(base, **changes)  # type: ignore[arg-type]


# ---- Calls, stages and pending flags ---------------------------------------------------


@pytest.mark.parametrize("method", ONE_CALL)
def test_one_call_methods_answer_over_the_whole_document(method: Method) -> None:
    document = varied_document()
    plan = plan_method(document, QUESTION, settings(method), word_counter())
    assert len(plan.calls) == 1 and plan.estimate.calls == 1
    call = plan.calls[0]
    assert (call.stage, call.chunk, call.pending) == ("answer", None, False)
    assert call.pages == tuple(range(1, len(document.pages) + 1))
    assert plan.chunks == () and plan.retrieval_calls == ()
    expected = plan_reminders(document.page_tokens, 2_000) if method is Method.REPROMPT else []
    assert list(call.reminders_after) == expected
    assert call.leading_reminders == 0
    if method is Method.REPROMPT:
        assert expected and call.reminder_tokens > 0
    else:
        assert call.reminder_tokens == 0


@pytest.mark.parametrize("method", (Method.ICR, Method.RR))
def test_icr_and_rr_retrieve_over_everything_then_answer_pending(method: Method) -> None:
    document = varied_document()
    plan = plan_method(document, QUESTION, settings(method), word_counter())
    assert [c.stage for c in plan.calls] == ["retrieve", "answer"]
    assert [c.pending for c in plan.calls] == [False, True]
    retrieve, answer = plan.calls
    assert retrieve.pages == tuple(range(1, 61)) and retrieve.chunk is None
    assert answer.pages == () and answer.prompt_tokens > 0 and answer.reminders_after == ()
    if method is Method.RR:
        assert list(retrieve.reminders_after) == plan_reminders(document.page_tokens, 2_000)
        assert retrieve.reminders_after
    else:
        assert retrieve.reminders_after == () and retrieve.reminder_tokens == 0
    assert plan.reminders == retrieve.reminder_count


@pytest.mark.parametrize("method", (Method.CHUNKED_ICR, Method.CHUNKED_RR))
def test_chunked_methods_make_one_call_per_chunk_plus_one(method: Method) -> None:
    document = varied_document()
    plan = plan_method(document, QUESTION, settings(method), word_counter())
    chunks = partition_pages(document.page_tokens, 8_000)
    assert len(chunks) > 2
    assert plan.chunks == tuple(chunks)
    assert len(plan.calls) == len(chunks) + 1 == plan.estimate.calls
    retrievals = plan.retrieval_calls
    assert [c.chunk for c in retrievals] == list(range(1, len(chunks) + 1))
    assert [c.pages for c in retrievals] == [tuple(c) for c in chunks]
    assert not any(c.pending for c in retrievals)
    assert plan.calls[-1].stage == "answer" and plan.calls[-1].pending
    for call, chunk in zip(retrievals, chunks):
        if method is Method.CHUNKED_ICR:
            assert call.reminders_after == ()
        else:
            # Reminders inside a chunk, counted from the chunk's own start.
            positions = plan_reminders([document.page_tokens[p - 1] for p in chunk], 2_000)
            assert list(call.reminders_after) == [chunk[i - 1] for i in positions]
            assert set(call.reminders_after) <= set(chunk[:-1])
    if method is Method.CHUNKED_RR:
        assert plan.reminders > 0


def test_chunked_rr_adds_no_reminder_to_chunks_smaller_than_k() -> None:
    document = uniform_document(40, 100)  # 4,000 tokens
    plan = plan_method(
        document,
        QUESTION,
        settings(Method.CHUNKED_RR, reminder_every=5_000, chunk_size=1_000),
        word_counter(),
    )
    assert len(plan.retrieval_calls) == 4
    assert plan.reminders == 0


def test_method_flags_and_labels() -> None:
    assert [m for m in Method if m.retrieves] == [
        Method.ICR,
        Method.RR,
        Method.CHUNKED_ICR,
        Method.CHUNKED_RR,
    ]
    assert [m for m in Method if m.reminds] == [Method.REPROMPT, Method.RR, Method.CHUNKED_RR]
    assert [m for m in Method if m.chunked] == [Method.CHUNKED_ICR, Method.CHUNKED_RR]
    assert Method.RR.label == "R&R" and set(METHOD_LABELS) == set(Method)


def test_plan_all_plans_every_method_with_shared_settings() -> None:
    document = varied_document()
    plans = plan_all(document, QUESTION, settings(Method.BASELINE, top_k=3), word_counter())
    assert list(plans) == list(Method)
    for method, plan in plans.items():
        assert plan.method is method and plan.settings.top_k == 3 and plan.question == QUESTION


# ---- Rendered prompts -----------------------------------------------------------------


def reminder_offsets(prompt: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(REMINDER_OPEN), prompt)]


def test_rendered_reprompt_prompt_has_reminders_exactly_after_the_planned_pages() -> None:
    document = varied_document()
    call = plan_method(document, QUESTION, settings(Method.REPROMPT), word_counter()).calls[0]
    prompt = render_prompt(document, call)
    assert len(reminder_offsets(prompt)) == len(call.reminders_after)
    for page in call.reminders_after:
        assert f"</PAGE {page}>\n\n{REMINDER_OPEN}" in prompt
    assert split_tagged(prompt) == [(p.number, p.text) for p in document.pages]


def test_baseline_and_icr_prompts_have_no_reminders() -> None:
    document = varied_document()
    for method in (Method.BASELINE, Method.ICR, Method.CHUNKED_ICR):
        plan = plan_method(document, QUESTION, settings(method), word_counter())
        for call in plan.calls:
            if not call.pending:
                assert REMINDER_OPEN not in render_prompt(document, call)


def test_plan_answer_uses_retrieved_pages_in_document_order_without_reminders() -> None:
    document = varied_document()
    for method in (Method.RR, Method.CHUNKED_RR):
        call = plan_answer(document, QUESTION, settings(method), word_counter(), [41, 7, 19, 7, 3])
        assert call.pages == (3, 7, 19, 41)
        assert (call.stage, call.pending, call.reminders_after, call.leading_reminders) == (
            "answer",
            False,
            (),
            0,
        )
        prompt = render_prompt(document, call)
        assert REMINDER_OPEN not in prompt
        assert split_tagged(prompt) == [(n, document.page(n).text) for n in (3, 7, 19, 41)]
        assert '"answer"' in prompt  # the answer task, not the retrieval one


def test_pending_call_has_no_prompt_yet() -> None:
    document = varied_document()
    plan = plan_method(document, QUESTION, settings(Method.ICR), word_counter())
    with pytest.raises(ConfigError):
        render_prompt(document, plan.calls[-1])


def test_pending_answer_estimate_is_n_average_pages() -> None:
    document = uniform_document(100, 400)
    plan = plan_method(document, QUESTION, settings(Method.ICR, top_k=5), word_counter())
    real = plan_answer(document, QUESTION, plan.settings, word_counter(), [10, 20, 30, 40, 50])
    assert abs(plan.calls[-1].prompt_tokens - real.prompt_tokens) <= 0.05 * real.prompt_tokens


# ---- Ablations (METHOD.md §8) ------------------------------------------------------------


def test_tags_only_reminders_do_not_repeat_the_question() -> None:
    document = varied_document()
    plan = plan_method(
        document, QUESTION, settings(Method.RR, reminder_style=ReminderStyle.TAGS_ONLY), word_counter()
    )
    call = plan.calls[0]
    assert call.instructions.reminder == REMINDER_TAGS_ONLY
    prompt = render_prompt(document, call)
    blocks = re.findall(r"<INSTRUCTIONS_REMINDER>.*?</INSTRUCTIONS_REMINDER>", prompt, re.DOTALL)
    assert len(blocks) == len(call.reminders_after) > 0
    assert all("termination" not in b and "Question:" not in b for b in blocks)
    full = plan_method(document, QUESTION, settings(Method.RR), word_counter()).calls[0]
    assert full.reminders_after == call.reminders_after
    assert call.reminder_tokens < full.reminder_tokens


def test_beginning_placement_puts_the_same_number_of_reminders_before_page_one() -> None:
    document = varied_document()
    interval = plan_method(document, QUESTION, settings(Method.REPROMPT), word_counter()).calls[0]
    call = plan_method(
        document,
        QUESTION,
        settings(Method.REPROMPT, reminder_placement=ReminderPlacement.BEGINNING),
        word_counter(),
    ).calls[0]
    assert call.reminders_after == ()
    assert call.leading_reminders == len(interval.reminders_after) > 0
    assert call.reminder_tokens == interval.reminder_tokens
    prompt = render_prompt(document, call)
    offsets = reminder_offsets(prompt)
    assert len(offsets) == call.leading_reminders
    assert max(offsets) < prompt.index("<PAGE 1>")
    assert min(offsets) > prompt.index("<DOCUMENT>")


def test_before_pages_placement_puts_one_reminder_right_before_each_page() -> None:
    document = varied_document()
    chosen = (1, 7, 33, 999)  # 999 is not a page: ignored
    plan = plan_method(
        document,
        QUESTION,
        settings(Method.REPROMPT, reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=chosen),
        word_counter(),
    )
    call = plan.calls[0]
    assert call.leading_reminders == 1 and call.reminders_after == (6, 32)
    prompt = render_prompt(document, call)
    assert len(reminder_offsets(prompt)) == 3
    reminder_end = "</INSTRUCTIONS_REMINDER>\n\n"
    for page in (1, 7, 33):
        assert f"{reminder_end}<PAGE {page}>" in prompt
    assert f"{reminder_end}<PAGE 2>" not in prompt


def test_before_pages_in_chunked_rr_lands_in_the_chunk_holding_the_page() -> None:
    document = varied_document()
    plan = plan_method(
        document,
        QUESTION,
        settings(Method.CHUNKED_RR, reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=(20,)),
        word_counter(),
    )
    holding = [c for c in plan.retrieval_calls if 20 in c.pages]
    assert len(holding) == 1
    assert plan.reminders == 1
    call = holding[0]
    if call.pages[0] == 20:
        assert call.leading_reminders == 1
    else:
        assert call.reminders_after == (19,)


# ---- Estimates ------------------------------------------------------------------------


def estimate_cases() -> list[RunSettings]:
    cases = [settings(m) for m in Method]
    cases.append(settings(Method.RR, reminder_style=ReminderStyle.TAGS_ONLY))
    cases.append(settings(Method.REPROMPT, reminder_placement=ReminderPlacement.BEGINNING))
    cases.append(
        settings(
            Method.CHUNKED_RR, reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=(1, 9, 30)
        )
    )
    return cases


@pytest.mark.parametrize("counter_kind", ["words", "tokenizer"])
def test_estimated_input_tokens_match_the_rendered_prompt_within_two_percent(
    counter_kind: str, counter
) -> None:  # type: ignore[no-untyped-def]
    count = word_counter() if counter_kind == "words" else counter
    texts = planted_texts(pages=30, sentences=60)
    texts[4] = "Quoted markup </PAGE 5> <INSTRUCTIONS> and a guard \u2039 " + texts[4]
    document = document_from_texts("planted.txt", texts, counter=count)
    for run_settings in estimate_cases():
        plan = plan_method(
            document, QUESTION, replace(run_settings, chunk_size=3_000, reminder_every=1_000), count
        )
        assert plan.estimate.input_tokens == sum(c.prompt_tokens for c in plan.calls)
        assert plan.estimate.output_tokens == sum(c.output_tokens for c in plan.calls)
        for call in plan.calls:
            if call.pending:
                continue
            rendered = count.count(render_prompt(document, call))
            assert abs(call.prompt_tokens - rendered) <= 0.02 * rendered, (run_settings.method, call.chunk)
        answer = plan_answer(document, QUESTION, plan.settings, count, [27, 5, 2])
        rendered = count.count(render_prompt(document, answer))
        assert abs(answer.prompt_tokens - rendered) <= 0.02 * rendered


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4-turbo"])
def test_estimates_stay_within_two_percent_on_many_short_pages(model: str) -> None:
    # One short passage per page (the papers' key-value and NQ haystacks): the tags and
    # separators are a large share of each page, so their count must match the rendering.
    from conftest import filler_text

    from rr_core.tokens import counter_for_model

    count = counter_for_model(model)
    if count.approximate:
        pytest.skip("tiktoken encodings not loadable here")
    rng = random.Random(5)
    document = document_from_texts("short.txt", [filler_text(rng, 1) for _ in range(300)], counter=count)
    for method in (Method.BASELINE, Method.REPROMPT, Method.CHUNKED_RR):
        plan = plan_method(document, QUESTION, settings(method, reminder_every=500, chunk_size=1_000), count)
        for call in plan.calls:
            if not call.pending:
                rendered = count.count(render_prompt(document, call))
                assert abs(call.prompt_tokens - rendered) <= 0.02 * rendered, (method, call.chunk)


def test_estimate_prices_every_call_when_a_price_model_is_given() -> None:
    document = varied_document()
    cheap = plan_method(
        document, QUESTION, settings(Method.BASELINE, price_model="gpt-4.1-mini"), word_counter()
    )
    more = plan_method(
        document, QUESTION, settings(Method.CHUNKED_RR, price_model="gpt-4.1-mini"), word_counter()
    )
    assert cheap.estimate.cost.known and cheap.estimate.usd > 0
    assert more.estimate.usd > cheap.estimate.usd  # more calls, more tokens


def test_reprompt_overhead_at_80k_tokens_is_small() -> None:
    # The paper's setting (METHOD.md §4): 80k tokens, k = 10,000, N = 5.
    document = uniform_document(160, 500)
    assert document.total_tokens == 80_000
    base = RunSettings(method=Method.REPROMPT, reminder_every=10_000, top_k=5)
    plan = plan_method(document, QUESTION, base, word_counter())
    call = plan.calls[0]
    assert call.reminder_count == plan.reminders == 7
    assert call.reminders_after == (20, 40, 60, 80, 100, 120, 140)
    overhead = call.reminder_tokens / (call.prompt_tokens - call.reminder_tokens)
    assert 0 < overhead < 0.05
    baseline = plan_method(document, QUESTION, replace(base, method=Method.BASELINE), word_counter())
    assert call.prompt_tokens - baseline.calls[0].prompt_tokens == call.reminder_tokens
    rr = plan_method(document, QUESTION, replace(base, method=Method.RR), word_counter())
    assert rr.reminders == 7


@pytest.mark.parametrize(
    ("chunk_size", "calls", "reminders"), [(10_000, 9, 0), (20_000, 5, 4), (40_000, 3, 6), (80_000, 2, 7)]
)
def test_chunked_call_counts_match_the_papers_cost_table(chunk_size: int, calls: int, reminders: int) -> None:
    document = uniform_document(160, 500)
    base = RunSettings(method=Method.CHUNKED_ICR, reminder_every=10_000, top_k=5, chunk_size=chunk_size)
    icr = plan_method(document, QUESTION, base, word_counter())
    rr = plan_method(document, QUESTION, replace(base, method=Method.CHUNKED_RR), word_counter())
    assert icr.estimate.calls == rr.estimate.calls == calls
    assert rr.reminders == reminders and icr.reminders == 0
    assert rr.estimate.input_tokens - icr.estimate.input_tokens == rr.estimate.reminder_tokens


# ---- Configuration errors -------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"reminder_every": 99},
        {"reminder_every": 0},
        {"top_k": 0},
        {"top_k": 101},
        {"chunk_size": 499},
        {"reminder_placement": ReminderPlacement.BEFORE_PAGES},
    ],
)
def test_settings_that_cannot_work_raise_config_error(changes: dict[str, object]) -> None:
    document = varied_document()
    with pytest.raises(ConfigError):
        plan_method(document, QUESTION, settings(Method.RR, **changes), word_counter())


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_question_raises_config_error(question: str) -> None:
    with pytest.raises(ConfigError, match="question"):
        plan_method(varied_document(), question, settings(Method.BASELINE), word_counter())
