"""The cheap baselines (question last, prompt repeated) and where the question goes in a
prompt: a recorded setting of the methods that can take it (001 §3 and §5, 000 §3.1)."""

from __future__ import annotations

import pytest
from conftest import FEE_PAGES, fee_document, word_counter

from rr_core.errors import ConfigError
from rr_core.llm.offline import OfflineEngine
from rr_core.llm.simulated import visible_pages
from rr_core.methods import get_method, method_names, parse_spec, plan_method, spec_of
from rr_core.plans import Plan
from rr_core.prompts import INSTRUCTION_KINDS
from rr_core.runs import run_plans
from rr_core.settings import LAYOUTS, QuestionPlacement, RunSettings

QUESTION = "What is the termination fee?"
BASE = RunSettings(provider="offline", model="offline", price_model="gpt-4.1-mini")


def plan_of(spec: str) -> Plan:
    return plan_method(fee_document(), QUESTION, parse_spec(spec, BASE), word_counter())


def kinds(plan: Plan) -> list[str]:
    (call,) = plan.calls
    return [b.kind for b in call.layout.blocks if b.kind != "page"]


FORMAT_KEYS = ('"question"', '"answer"', '"found"', '"citations"')


def test_question_last_puts_the_document_first_and_the_task_once_at_the_end() -> None:
    plan = plan_of("question-last")
    (call,) = plan.calls
    assert kinds(plan) == ["document_open", "document_close", "closing"]
    prompt = call.render()
    assert prompt.startswith("<DOCUMENT>") and prompt.count(QUESTION) == 1
    closing = call.layout.blocks[-1].text
    assert QUESTION in closing and all(key in closing for key in FORMAT_KEYS)
    assert closing.startswith("<INSTRUCTIONS>\nNow, answer the question")  # the task, not the question alone
    assert call.pages == tuple(range(1, 25))
    # The layout is the method's: recorded in its settings whatever the base said.
    assert plan.settings.question_placement is QuestionPlacement.DOCUMENT_FIRST
    other = plan_method(
        fee_document(),
        QUESTION,
        BASE.but(method="question-last", question_placement=QuestionPlacement.QUERY_AWARE),
        word_counter(),
    )
    assert other.calls[0].render() == prompt
    assert get_method("question-last").group == get_method("repeat").group == "other"


def test_repeat_is_the_baseline_prompt_twice_and_its_plan_shows_the_cost() -> None:
    baseline, repeat = plan_of("baseline"), plan_of("repeat")
    (call,) = repeat.calls
    assert kinds(repeat) == ["opening", "document_open", "document_close", "closing"] * 2
    assert call.render() == baseline.calls[0].render() + "\n\n" + baseline.calls[0].render()
    # It ends with the instructions and the reply format, as the baseline does.
    assert call.layout.blocks[-1].text == baseline.calls[0].layout.blocks[-1].text
    assert all(key in call.layout.blocks[-1].text for key in FORMAT_KEYS)
    assert call.pages == tuple(range(1, 25)) * 2
    assert repeat.calls[0].prompt_tokens > 1.9 * baseline.calls[0].prompt_tokens
    assert repeat.estimate.cost.total_usd > 1.5 * baseline.estimate.cost.total_usd
    assert "twice" in get_method("repeat").summary


def test_the_cheap_baselines_run_end_to_end_and_answer_from_the_document() -> None:
    document = fee_document()
    plans = [plan_of("question-last"), plan_of("repeat")]
    traces = run_plans(document, plans, OfflineEngine(word_counter()))
    for trace in traces:
        assert trace.error is None
        # The reader's short span, its sentence quoted from a page about the fee.
        assert trace.outcome.page in FEE_PAGES and trace.outcome.answer
        assert "fee" in trace.outcome.quote and trace.outcome.answer in trace.outcome.quote
        assert trace.settings.question_placement in (
            QuestionPlacement.DOCUMENT_FIRST,
            QuestionPlacement.REPEATED,
        )
        assert trace.to_dict()["settings"]["question_placement"] in ("document-first", "repeated")


@pytest.mark.parametrize(
    ("layout", "first", "last", "question_first"),
    [
        ("before-and-after", "opening", "closing", True),
        ("query-aware", "opening", "closing", True),
        ("question-after", "preamble", "closing", False),
    ],
)
def test_the_question_placement_is_a_setting_of_the_methods_that_take_it(
    layout: str, first: str, last: str, question_first: bool
) -> None:
    for method in ("baseline", "icr", "rag"):
        plan = plan_of(f"{method}:layout={layout}")
        call = plan.calls[0]
        blocks = call.layout.blocks
        assert (blocks[0].kind, blocks[-1].kind) == (first, last)
        assert (QUESTION in blocks[0].text) is question_first
        # The final block carries the question and the reply format.
        assert QUESTION in blocks[-1].text and all(key in blocks[-1].text for key in FORMAT_KEYS[:1])
        assert plan.settings.question_placement is QuestionPlacement(layout)
        # Recorded: the spec reads back, the settings survive a trace's round trip.
        assert parse_spec(spec_of(plan.settings, BASE), BASE) == plan.settings
        assert RunSettings.from_dict(plan.settings.to_dict()) == plan.settings
    final = plan_of(f"baseline:layout={layout}").calls[0].layout.blocks[-1].text
    assert all(key in final for key in FORMAT_KEYS) and "Reply with one JSON object" in final
    described = get_method("baseline").describe(BASE.but(question_placement=QuestionPlacement(layout)))
    assert ("layout" in described) is (layout != "before-and-after")


def test_an_unknown_layout_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="query-aware"):
        parse_spec("baseline:layout=sideways", BASE)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("question-last:layout=query-aware", "question-last has its own prompt layout"),
        ("repeat:layout=before-and-after", "repeat has its own prompt layout"),
        # The cheap baselines' prompts are methods, not layouts of other methods.
        ("baseline:layout=repeated", "the layout is one of before-and-after, query-aware, question-after"),
        ("baseline:layout=document-first", "the layout is one of"),
        (
            "rr:layout=question-after",
            "rr takes only before-and-after, query-aware, cache-aware (its reminders",
        ),
        ("briefcontext:layout=question-after", "004 asks each group of passages with the question first"),
    ],
)
def test_a_layout_a_method_cannot_take_is_refused(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_spec(spec, BASE)


def test_one_name_one_concept() -> None:
    """``question-last`` names the method only; the layout that asks after the document is
    ``question-after``; the cheap baselines' prompts are not offered as layouts."""
    assert "question-last" not in {p.value for p in QuestionPlacement}
    assert "question-last" in method_names()
    assert set(LAYOUTS) == {
        QuestionPlacement.BEFORE_AND_AFTER,
        QuestionPlacement.QUERY_AWARE,
        QuestionPlacement.QUESTION_AFTER,
        QuestionPlacement.CACHE_AWARE,
    }
    # A trace written before the rename reads back as what it meant.
    old = {**BASE.to_dict(), "question_placement": "question-last"}
    assert RunSettings.from_dict(old).question_placement is QuestionPlacement.QUESTION_AFTER


def test_a_method_keeps_its_own_layout_where_a_sweeps_layout_would_change_what_it_is() -> None:
    """Reminders carry the question inside the document, and 004 asks each group with the
    question first: under question-after they keep the R&R skeleton, and say why."""
    after = BASE.but(question_placement=QuestionPlacement.QUESTION_AFTER)
    document, counter = fee_document(), word_counter()
    for name in ("reprompt", "rr", "chunked-rr", "briefcontext"):
        method = get_method(name)
        plan = plan_method(document, QUESTION, after.but(method=name), counter)
        assert plan.settings.question_placement is QuestionPlacement.BEFORE_AND_AFTER
        assert "layout" not in plan.describe
        assert "does not take question-after" in method.layout_reason(QuestionPlacement.QUESTION_AFTER)
        for call in plan.calls:
            assert call.layout.blocks[0].kind == "opening" and QUESTION in call.layout.blocks[0].text
    # The map calls of BriefContext ask with the question first, also once they are resolved.
    plan = plan_method(document, QUESTION, after.but(method="briefcontext"), counter)
    (trace,) = run_plans(document, [plan], OfflineEngine(counter))
    maps = [c for c in trace.calls if c.stage == "map"]
    assert maps and all(
        c.prompt.startswith("<INSTRUCTIONS>\nYour task is to read")
        and QUESTION in c.prompt.split("<DOCUMENT>")[0]
        for c in maps
    )
    # Methods that can take it do.
    for name in ("baseline", "icr", "rag", "closed-book"):
        plan = plan_method(document, QUESTION, after.but(method=name), counter)
        assert plan.settings.question_placement is QuestionPlacement.QUESTION_AFTER


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_closed_book_never_speaks_of_a_document_that_is_not_there(layout: QuestionPlacement) -> None:
    plan = plan_method(
        fee_document(), QUESTION, BASE.but(method="closed-book", question_placement=layout), word_counter()
    )
    prompt = plan.calls[0].render()
    assert "<DOCUMENT>" not in prompt and "follows the document" not in prompt
    assert "No document is given." in prompt and QUESTION in prompt
    assert all(key in plan.calls[0].layout.blocks[-1].text for key in FORMAT_KEYS)


def test_a_block_without_the_question_is_not_a_copy_of_the_instructions() -> None:
    """The question-after preamble does not tell a reader what to look for: the simulated reader,
    which sees pages near a copy of the question, sees only the end of the document."""
    assert "preamble" not in INSTRUCTION_KINDS
    counter = word_counter()
    seen = {
        layout: visible_pages(plan_of(f"baseline:layout={layout}").calls[0].layout, counter, reach=600)
        for layout in ("query-aware", "question-after")
    }
    assert 1 in seen["query-aware"] and 1 not in seen["question-after"]
    assert 24 in seen["question-after"] and seen["question-after"] < seen["query-aware"]
