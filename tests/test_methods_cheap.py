"""The cheap baselines (question last, prompt repeated) and where the question goes in a
prompt: a recorded setting of every method (001 §3 and §5, 000 §3.1)."""

from __future__ import annotations

import pytest
from conftest import FEE_PAGES, fee_document, word_counter

from rr_core.errors import ConfigError
from rr_core.llm.offline import OfflineEngine
from rr_core.llm.simulated import visible_pages
from rr_core.methods import get_method, parse_spec, plan_method, spec_of
from rr_core.plans import Plan
from rr_core.prompts import INSTRUCTION_KINDS
from rr_core.runs import run_plans
from rr_core.settings import QuestionPlacement, RunSettings

QUESTION = "What is the termination fee?"
BASE = RunSettings(provider="offline", model="offline", price_model="gpt-4.1-mini")


def plan_of(spec: str) -> Plan:
    return plan_method(fee_document(), QUESTION, parse_spec(spec, BASE), word_counter())


def kinds(plan: Plan) -> list[str]:
    (call,) = plan.calls
    return [b.kind for b in call.layout.blocks if b.kind != "page"]


def test_question_last_puts_the_document_first_and_the_task_once_at_the_end() -> None:
    plan = plan_of("question-last")
    (call,) = plan.calls
    assert kinds(plan) == ["document_open", "document_close", "closing"]
    prompt = call.render()
    assert prompt.startswith("<DOCUMENT>") and prompt.count(QUESTION) == 1
    closing = call.layout.blocks[-1].text
    assert QUESTION in closing and all(f'"{key}"' in closing for key in ("question", "answer", "page"))
    assert call.pages == tuple(range(1, 25))
    # The layout is the method's: recorded in its settings whatever the base said.
    assert plan.settings.question_placement is QuestionPlacement.DOCUMENT_FIRST
    other = plan_method(
        fee_document(),
        QUESTION,
        BASE.but(method="question-last", question_placement="query-aware"),
        word_counter(),
    )
    assert other.calls[0].render() == prompt
    assert get_method("question-last").group == get_method("repeat").group == "other"


def test_repeat_reads_the_question_and_the_document_twice_and_its_plan_shows_the_cost() -> None:
    baseline, repeat = plan_of("baseline"), plan_of("repeat")
    (call,) = repeat.calls
    assert kinds(repeat) == ["opening", "document_open", "document_close"] * 2
    assert call.pages == tuple(range(1, 25)) * 2
    assert call.render().count(QUESTION) == 2
    # About twice the baseline's input tokens (one set of instructions fewer than 2x baseline).
    assert repeat.calls[0].prompt_tokens > 1.8 * baseline.calls[0].prompt_tokens
    assert repeat.estimate.cost.total_usd > 1.5 * baseline.estimate.cost.total_usd
    assert "twice" in get_method("repeat").summary


def test_the_cheap_baselines_run_end_to_end_and_answer_from_the_document() -> None:
    document = fee_document()
    plans = [plan_of("question-last"), plan_of("repeat")]
    traces = run_plans(document, plans, OfflineEngine(word_counter()))
    for trace in traces:
        assert trace.error is None
        assert trace.outcome.page in FEE_PAGES and "fee" in (trace.outcome.answer or "")
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
        ("question-last", "preamble", "closing", False),
    ],
)
def test_the_question_placement_is_a_setting_of_every_method(
    layout: str, first: str, last: str, question_first: bool
) -> None:
    for method in ("baseline", "rr"):
        plan = plan_of(f"{method}:layout={layout}")
        call = plan.calls[0]
        blocks = call.layout.blocks
        assert (blocks[0].kind, blocks[-1].kind) == (first, last)
        assert (QUESTION in blocks[0].text) is question_first
        assert QUESTION in blocks[-1].text
        assert plan.settings.question_placement is QuestionPlacement(layout)
        # Recorded: the spec reads back, the settings survive a trace's round trip.
        assert parse_spec(spec_of(plan.settings, BASE), BASE) == plan.settings
        assert RunSettings.from_dict(plan.settings.to_dict()) == plan.settings
    # After the document, the query-aware and question-last layouts repeat only the question.
    if layout != "before-and-after":
        closing = plan_of(f"baseline:layout={layout}").calls[0].layout.blocks[-1].text
        assert "Reply with" not in closing and QUESTION in closing
    described = get_method("baseline").describe(BASE.but(question_placement=QuestionPlacement(layout)))
    assert ("layout" in described) is (layout != "before-and-after")


def test_an_unknown_layout_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="query-aware"):
        parse_spec("baseline:layout=sideways", BASE)


def test_a_block_without_the_question_is_not_a_copy_of_the_instructions() -> None:
    """The question-last preamble does not tell a reader what to look for: the simulated reader,
    which sees pages near a copy of the question, sees only the end of the document."""
    assert "preamble" not in INSTRUCTION_KINDS
    counter = word_counter()
    seen = {
        layout: visible_pages(plan_of(f"baseline:layout={layout}").calls[0].layout, counter, reach=600)
        for layout in ("query-aware", "question-last")
    }
    assert 1 in seen["query-aware"] and 1 not in seen["question-last"]
    assert 24 in seen["question-last"] and seen["question-last"] < seen["query-aware"]
