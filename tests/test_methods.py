"""Plans of the paper's six methods: calls, reminder and chunk layout, estimates, several
questions and the ablations (METHOD.md §3–§9). RAG, BriefContext and the bounds are in
``test_methods_other.py``."""

from __future__ import annotations

import dataclasses
import math
import random
import re

import pytest
from conftest import PAPER_METHODS, planted_texts, word_counter
from hypothesis import given
from hypothesis import strategies as st

from rr_core.chunking import partition_pages, plan_reminders
from rr_core.documents import Document, document_from_texts
from rr_core.errors import ConfigError
from rr_core.methods import GROUP_LABELS, REGISTRY, all_methods, get_method, method_names, plan_method
from rr_core.outputs import NOT_STATED, AnswerOut, MultiRetrievalOut, QuestionPages, RetrievalOut
from rr_core.plans import Call, Plan, StepResult
from rr_core.prompts import REMINDER_TAGS_ONLY, split_tagged
from rr_core.settings import ReminderPlacement, ReminderStyle, RunSettings

QUESTION = "What is the termination fee?"
REMINDER_OPEN = "<INSTRUCTIONS_REMINDER>"
ONE_CALL = ("baseline", "reprompt")
RETRIEVING = ("icr", "rr", "chunked-icr", "chunked-rr")
REMINDING = ("reprompt", "rr", "chunked-rr")
CHUNKED = ("chunked-icr", "chunked-rr")


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


def settings(method: str, **changes: object) -> RunSettings:
    return RunSettings(method=method, reminder_every=2_000, chunk_size=8_000).but(**changes)


def plan_of(document: Document, method: str, question: str | list[str] = QUESTION, **changes: object) -> Plan:
    return plan_method(document, question, settings(method, **changes), word_counter())


def retrieved(plan: Plan, *replies: list[int]) -> dict[str, StepResult]:
    """Results of the retrieval phase: each retrieval call returned the given pages."""
    calls = plan.phases[0].calls
    assert len(calls) == len(replies)
    return {
        c.id: StepResult(c, RetrievalOut(question=QUESTION, pages=r))
        for c, r in zip(calls, replies, strict=True)
    }


def resolved_answers(plan: Plan, *replies: list[int]) -> tuple[Call, ...]:
    phase = plan.phases[1]
    assert phase.estimated and phase.resolve is not None
    return phase.resolve([retrieved(plan, *replies)]).calls


# ---- The registry -----------------------------------------------------------------------


def test_the_registry_lists_every_method_once_in_display_order() -> None:
    names = method_names()
    assert names == [
        "baseline", "reprompt", "icr", "rr", "chunked-icr", "chunked-rr", "reprompt-before-answer", "rag",
        "self-route", "briefcontext", "question-last", "repeat", "closed-book", "oracle",
    ]  # fmt: skip
    assert list(REGISTRY) == names and [m.name for m in all_methods()] == names
    assert {m.group for m in all_methods()} == set(GROUP_LABELS)
    assert [m.name for m in all_methods() if m.group == "paper"] == [*PAPER_METHODS, "reprompt-before-answer"]
    assert [m.name for m in all_methods() if m.group == "other"] == [
        "rag",
        "self-route",
        "briefcontext",
        "question-last",
        "repeat",
    ]
    assert [m.name for m in all_methods() if m.group == "bounds"] == ["closed-book", "oracle"]
    assert [m.name for m in all_methods() if m.reminds] == [*REMINDING, "reprompt-before-answer"]
    assert [m.name for m in all_methods() if m.several_questions] == list(RETRIEVING)
    assert [m.name for m in all_methods() if m.needs_gold] == ["reprompt-before-answer", "oracle"]
    assert get_method("rr").label == "R&R" and get_method(" chunked-rr ").label == "Chunked R&R"
    for method in all_methods():
        assert method.summary.endswith(".") and method.label
        assert set(method.params) <= set(RunSettings.__dataclass_fields__)
    with pytest.raises(ConfigError, match="telepathy.*baseline"):
        get_method("telepathy")


def test_every_method_plans_with_shared_settings() -> None:
    document = varied_document()
    for name in method_names():
        plan = plan_of(document, name, top_k=3, gold_pages=(4,))
        assert plan.method == name and plan.settings.method == name
        assert plan.settings.top_k == 3 and plan.question == QUESTION and plan.questions == (QUESTION,)
        assert plan.document_sha256 == document.sha256 and plan.label == get_method(name).label
        assert plan.estimate.calls == len(plan.calls) >= 1


def test_describe_names_only_the_settings_a_method_reads() -> None:
    s = RunSettings(reminder_every=5_000, top_k=3, chunk_size=20_000, gold_pages=(3, 4))
    assert get_method("baseline").describe(s) == ""
    assert get_method("rr").describe(s) == "k = 5,000 · N = 3"
    assert get_method("chunked-icr").describe(s) == "N = 3 · c = 20,000"
    assert get_method("rag").describe(s) == "w = 300 · top = 5"
    assert get_method("oracle").describe(s) == "gold pages 3, 4"
    ablated = s.but(reminder_style=ReminderStyle.TAGS_ONLY, reminder_placement=ReminderPlacement.BEGINNING)
    assert (
        get_method("rr").describe(ablated) == "k = 5,000 · N = 3 · reminder: tags-only · placement: beginning"
    )
    assert get_method("icr").describe(ablated) == "N = 3"  # ablations apply to reminding methods only


# ---- Calls, stages and estimated phases ---------------------------------------------------


@pytest.mark.parametrize("method", ONE_CALL)
def test_one_call_methods_answer_over_the_whole_document(method: str) -> None:
    document = varied_document()
    plan = plan_of(document, method)
    assert len(plan.calls) == 1 and plan.estimate.calls == 1
    assert [(p.stage, p.estimated) for p in plan.phases] == [("answer", False)]
    call = plan.calls[0]
    assert (call.id, call.stage, call.chunk, call.schema) == ("answer", "answer", None, AnswerOut)
    assert call.pages == tuple(range(1, len(document.pages) + 1))
    assert plan.chunks == ()
    expected = plan_reminders(document.page_tokens, 2_000) if method == "reprompt" else []
    assert list(call.reminders_after) == expected
    assert call.leading_reminders == 0
    if method == "reprompt":
        assert expected and call.reminder_tokens > 0
    else:
        assert call.reminder_tokens == 0


@pytest.mark.parametrize("method", ("icr", "rr"))
def test_icr_and_rr_retrieve_over_everything_then_answer_estimated(method: str) -> None:
    document = varied_document()
    plan = plan_of(document, method)
    assert [(p.stage, p.estimated) for p in plan.phases] == [("retrieve", False), ("answer", True)]
    retrieve, answer = plan.calls
    assert (retrieve.id, retrieve.schema, retrieve.chunk) == ("retrieve.1", RetrievalOut, None)
    assert retrieve.pages == tuple(range(1, 61))
    assert answer.pages == () and answer.prompt_tokens > 0 and answer.reminders_after == ()
    assert plan.known_calls == (retrieve,)
    if method == "rr":
        assert list(retrieve.reminders_after) == plan_reminders(document.page_tokens, 2_000)
        assert retrieve.reminders_after
    else:
        assert retrieve.reminders_after == () and retrieve.reminder_tokens == 0
    assert plan.reminders == retrieve.reminder_count


@pytest.mark.parametrize("method", CHUNKED)
def test_chunked_methods_make_one_call_per_chunk_plus_one(method: str) -> None:
    document = varied_document()
    plan = plan_of(document, method)
    chunks = partition_pages(document.page_tokens, 8_000)
    assert len(chunks) > 2
    assert plan.chunks == tuple(chunks)
    assert len(plan.calls) == len(chunks) + 1 == plan.estimate.calls
    retrievals = plan.phases[0].calls
    assert not plan.phases[0].estimated and plan.phases[1].estimated
    assert [c.chunk for c in retrievals] == list(range(1, len(chunks) + 1))
    assert [c.id for c in retrievals] == [f"retrieve.{i}" for i in range(1, len(chunks) + 1)]
    assert [c.pages for c in retrievals] == [tuple(c) for c in chunks]
    assert plan.calls[-1].stage == "answer"
    for call, chunk in zip(retrievals, chunks, strict=True):
        if method == "chunked-icr":
            assert call.reminders_after == ()
        else:
            # Reminders inside a chunk, counted from the chunk's own start.
            positions = plan_reminders([document.page_tokens[p - 1] for p in chunk], 2_000)
            assert list(call.reminders_after) == [chunk[i - 1] for i in positions]
            assert set(call.reminders_after) <= set(chunk[:-1])
    if method == "chunked-rr":
        assert plan.reminders > 0


def test_chunked_rr_adds_no_reminder_to_chunks_smaller_than_k() -> None:
    document = uniform_document(40, 100)  # 4,000 tokens
    plan = plan_of(document, "chunked-rr", reminder_every=5_000, chunk_size=1_000)
    assert len(plan.phases[0].calls) == 4
    assert plan.reminders == 0


# ---- Rendered prompts -----------------------------------------------------------------


def reminder_offsets(prompt: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(REMINDER_OPEN), prompt)]


def test_rendered_reprompt_prompt_has_reminders_exactly_after_the_planned_pages() -> None:
    document = varied_document()
    call = plan_of(document, "reprompt").calls[0]
    prompt = call.render()
    assert len(reminder_offsets(prompt)) == len(call.reminders_after)
    for page in call.reminders_after:
        assert f"</PAGE {page}>\n\n{REMINDER_OPEN}" in prompt
    assert split_tagged(prompt) == [(p.number, p.text) for p in document.pages]


def test_baseline_and_icr_prompts_have_no_reminders() -> None:
    document = varied_document()
    for method in ("baseline", "icr", "chunked-icr"):
        for call in plan_of(document, method).known_calls:
            assert REMINDER_OPEN not in call.render()


@pytest.mark.parametrize("method", ("rr", "chunked-rr"))
def test_the_answer_phase_uses_the_retrieved_pages_in_document_order_without_reminders(method: str) -> None:
    document = varied_document()
    plan = plan_of(document, method)
    chunks = plan.phases[0].calls
    # Each retrieval call names pages of its own context; the first call repeats one.
    replies = [[p for p in (41, 7, 19, 7, 3) if p in c.pages] or [c.pages[0]] for c in chunks]
    (call,) = resolved_answers(plan, *replies)
    expected = sorted({p for r in replies for p in r})
    assert call.pages == tuple(expected)
    assert (call.id, call.stage, call.reminders_after, call.leading_reminders) == ("answer", "answer", (), 0)
    prompt = call.render()
    assert REMINDER_OPEN not in prompt
    assert split_tagged(prompt) == [(n, document.page(n).text) for n in expected]
    assert '"answer"' in prompt and call.schema is AnswerOut  # the answer task, not the retrieval one


def test_retrieved_pages_outside_the_context_never_reach_the_answer_prompt() -> None:
    document = varied_document()
    plan = plan_of(document, "chunked-icr", top_k=2)
    chunks = plan.phases[0].calls
    first = chunks[0].pages
    replies = [[999, chunks[-1].pages[0], first[1], first[0], first[2]]] + [[] for _ in chunks[1:]]
    (call,) = resolved_answers(plan, *replies)
    assert call.pages == (first[0], first[1])  # the first N valid ones of that chunk, nothing from elsewhere


def test_no_valid_page_means_no_answer_call() -> None:
    plan = plan_of(varied_document(), "rr")
    assert resolved_answers(plan, [0, 999]) == ()


def test_the_estimated_answer_is_n_average_pages() -> None:
    document = uniform_document(100, 400)
    plan = plan_of(document, "icr", top_k=5)
    (real,) = resolved_answers(plan, [10, 20, 30, 40, 50])
    assert abs(plan.calls[-1].prompt_tokens - real.prompt_tokens) <= 0.05 * real.prompt_tokens


def test_an_estimated_call_is_laid_out_in_its_own_protocol_whatever_was_planned_before() -> None:
    """The estimated answer's instructions are laid out once and kept for the next document
    with the same question and settings: the paper's plain-text protocol is one of those
    settings (a sweep comparing the two protocols in one process got the other one's layout,
    and its estimate; the suite failed on it when a paper-protocol plan came first)."""
    from rr_core.settings import PromptProtocol

    document = uniform_document(100, 400)
    paper = plan_of(document, "icr", top_k=5, protocol=PromptProtocol.PAPER)
    plain = plan_of(document, "icr", top_k=5)
    assert "Reply in plain text" in paper.calls[-1].layout.blocks[-1].text
    assert "Reply in plain text" not in plain.calls[-1].layout.blocks[-1].text
    (real,) = resolved_answers(plain, [10, 20, 30, 40, 50])
    assert abs(plain.calls[-1].prompt_tokens - real.prompt_tokens) <= 0.05 * real.prompt_tokens


# ---- Several questions in one retrieval pass (000 §9) ---------------------------------------

QUESTIONS = ["What is the termination fee?", "Which law governs the contract?", "When does the lease end?"]


@pytest.mark.parametrize("method", ("icr", "rr"))
def test_several_questions_share_one_retrieval_call_then_answer_one_by_one(method: str) -> None:
    document = varied_document()
    plan = plan_of(document, method, QUESTIONS)
    assert plan.questions == tuple(QUESTIONS)
    (retrieve,) = plan.phases[0].calls
    assert retrieve.schema is MultiRetrievalOut and retrieve.layout.questions == tuple(QUESTIONS)
    prompt = retrieve.render()
    for number, question in enumerate(QUESTIONS, start=1):
        assert f"Question {number}: {question}" in prompt
    if method == "rr":  # the reminders repeat every question
        reminder = prompt.split(REMINDER_OPEN)[1]
        assert all(q in reminder for q in QUESTIONS)
    estimated = plan.phases[1].calls
    assert [(c.id, c.question) for c in estimated] == [("answer.1", 0), ("answer.2", 1), ("answer.3", 2)]
    assert plan.estimate.calls == 1 + len(QUESTIONS)


def test_several_questions_in_chunked_rr_make_one_call_per_chunk_not_per_question() -> None:
    document = varied_document()
    one = plan_of(document, "chunked-rr")
    several = plan_of(document, "chunked-rr", QUESTIONS)
    assert len(several.phases[0].calls) == len(one.phases[0].calls) == len(several.chunks)
    assert all(c.schema is MultiRetrievalOut for c in several.phases[0].calls)
    assert several.estimate.calls == len(several.chunks) + len(QUESTIONS)

    # One pass over the document instead of three: the long calls cost about what one question's do.
    def long_tokens(plan: Plan) -> int:
        return sum(c.prompt_tokens for c in plan.phases[0].calls)

    assert long_tokens(one) < long_tokens(several) < 1.1 * long_tokens(one)


def test_several_questions_answer_calls_carry_only_their_question_and_its_pages() -> None:
    document = varied_document()
    plan = plan_of(document, "rr", QUESTIONS)
    (retrieve,) = plan.phases[0].calls
    reply = MultiRetrievalOut(
        results=[
            QuestionPages(question=3, pages=[30, 12]),
            QuestionPages(question=1, pages=[5, 999]),
            QuestionPages(question=9, pages=[1]),  # no such question
        ]
    )
    done = [{retrieve.id: StepResult(retrieve, reply)}]
    calls = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    assert [(c.id, c.question, c.pages) for c in calls] == [("answer.1", 0, (5,)), ("answer.3", 2, (12, 30))]
    for call in calls:
        assert call.layout.questions == (QUESTIONS[call.question],)  # type: ignore[index]
        assert all(q not in call.render() for i, q in enumerate(QUESTIONS) if i != call.question)
    answers = {
        c.id: StepResult(
            c, AnswerOut(question=QUESTIONS[c.question], answer=f"a{c.question}", page=c.pages[0])
        )  # type: ignore[index]
        for c in calls
    }
    conclusion = plan.conclude([*done, answers])
    outcomes = conclusion.outcomes
    assert [o.question for o in outcomes] == QUESTIONS
    assert [(o.answer, o.found, o.page, o.retrieved_pages) for o in outcomes] == [
        ("a0", True, 5, [5]), (NOT_STATED, False, None, []), ("a2", True, 12, [30, 12]),
    ]  # fmt: skip
    assert outcomes[0].dropped_pages == [999]
    warnings = " ".join(conclusion.warnings)
    assert "no entry for question(s) 2" in warnings and "unknown question number(s) 9" in warnings


@pytest.mark.parametrize("method", ("baseline", "reprompt", "rag", "briefcontext", "closed-book", "oracle"))
def test_methods_that_answer_one_question_refuse_a_list(method: str) -> None:
    with pytest.raises(ConfigError, match="one question at a time"):
        plan_of(varied_document(), method, QUESTIONS, gold_pages=(2,))
    assert plan_of(varied_document(), method, [QUESTIONS[0]], gold_pages=(2,)).questions == (QUESTIONS[0],)


# ---- Ablations (METHOD.md §8) ------------------------------------------------------------


def test_tags_only_reminders_do_not_repeat_the_question() -> None:
    document = varied_document()
    call = plan_of(document, "rr", reminder_style=ReminderStyle.TAGS_ONLY).calls[0]
    reminders = [b.text for b in call.layout.blocks if b.kind == "reminder"]
    assert reminders and all(r == REMINDER_TAGS_ONLY for r in reminders)
    prompt = call.render()
    blocks = re.findall(r"<INSTRUCTIONS_REMINDER>.*?</INSTRUCTIONS_REMINDER>", prompt, re.DOTALL)
    assert len(blocks) == len(call.reminders_after) > 0
    assert all("termination" not in b and "Question:" not in b for b in blocks)
    full = plan_of(document, "rr").calls[0]
    assert full.reminders_after == call.reminders_after
    assert call.reminder_tokens < full.reminder_tokens


def test_beginning_placement_puts_the_same_number_of_reminders_before_page_one() -> None:
    document = varied_document()
    interval = plan_of(document, "reprompt").calls[0]
    call = plan_of(document, "reprompt", reminder_placement=ReminderPlacement.BEGINNING).calls[0]
    assert call.reminders_after == ()
    assert call.leading_reminders == len(interval.reminders_after) > 0
    assert call.reminder_tokens == interval.reminder_tokens
    prompt = call.render()
    offsets = reminder_offsets(prompt)
    assert len(offsets) == call.leading_reminders
    assert max(offsets) < prompt.index("<PAGE 1>")
    assert min(offsets) > prompt.index("<DOCUMENT>")


def test_before_pages_placement_puts_one_reminder_right_before_each_page() -> None:
    document = varied_document()
    chosen = (1, 7, 33, 999)  # 999 is not a page: ignored
    call = plan_of(
        document, "reprompt", reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=chosen
    ).calls[0]
    assert call.leading_reminders == 1 and call.reminders_after == (6, 32)
    prompt = call.render()
    assert len(reminder_offsets(prompt)) == 3
    reminder_end = "</INSTRUCTIONS_REMINDER>\n\n"
    for page in (1, 7, 33):
        assert f"{reminder_end}<PAGE {page}>" in prompt
    assert f"{reminder_end}<PAGE 2>" not in prompt


def test_before_pages_in_chunked_rr_lands_in_the_chunk_holding_the_page() -> None:
    document = varied_document()
    plan = plan_of(
        document, "chunked-rr", reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=(20,)
    )
    holding = [c for c in plan.phases[0].calls if 20 in c.pages]
    assert len(holding) == 1
    assert plan.reminders == 1
    call = holding[0]
    if call.pages[0] == 20:
        assert call.leading_reminders == 1
    else:
        assert call.reminders_after == (19,)


@pytest.mark.parametrize("method", ("baseline", "icr", "chunked-icr"))
def test_ablations_do_not_add_reminders_to_methods_that_do_not_remind(method: str) -> None:
    document = varied_document()
    for changes in (
        {"reminder_style": ReminderStyle.TAGS_ONLY},
        {"reminder_placement": ReminderPlacement.BEGINNING},
        {"reminder_placement": ReminderPlacement.BEFORE_PAGES, "reminder_pages": (1, 5)},
    ):
        assert plan_of(document, method, **changes).reminders == 0


# ---- Property tests: what each call holds, in order --------------------------------------

page_sizes = st.lists(st.integers(1, 900), min_size=1, max_size=40)
plan_settings = st.fixed_dictionaries(
    {
        "reminder_every": st.integers(1, 40).map(lambda x: x * 100),
        "top_k": st.integers(1, 8),
        "chunk_size": st.integers(1, 16).map(lambda x: x * 500),
    }
)


def sized_document(sizes: list[int]) -> Document:
    texts = [" ".join(["word"] * n) for n in sizes]
    return document_from_texts("sized.txt", texts, counter=word_counter())


@given(page_sizes, plan_settings, st.sampled_from(PAPER_METHODS))
def test_every_paper_plan_holds_each_page_once_in_order(
    sizes: list[int], changes: dict[str, int], method: str
) -> None:
    document = sized_document(sizes)
    plan = plan_method(document, QUESTION, RunSettings(method=method, **changes), word_counter())
    pages = list(range(1, len(sizes) + 1))
    first = plan.phases[0].calls
    # The long-context phase reads every page exactly once, in order, across its calls.
    assert [p for c in first for p in c.pages] == pages
    expected_chunks = (
        partition_pages(sizes, changes["chunk_size"]) if method in CHUNKED else [range(1, len(sizes) + 1)]
    )
    assert [list(c.pages) for c in first] == [list(r) for r in expected_chunks]
    assert [c.chunk for c in first] == (list(range(1, len(first) + 1)) if method in CHUNKED else [None])
    for call in first:
        # Reminders: where the method reminds, every k tokens of the call's own pages.
        if method in REMINDING:
            positions = plan_reminders([sizes[p - 1] for p in call.pages], changes["reminder_every"])
            assert list(call.reminders_after) == [call.pages[i - 1] for i in positions]
        else:
            assert call.reminders_after == () and call.reminder_tokens == 0
        kinds = [b.kind for b in call.layout.blocks]
        assert kinds[0] == "opening" and kinds[-1] == "closing"
        assert QUESTION in call.layout.blocks[0].text and QUESTION in call.layout.blocks[-1].text
        assert call.layout.limit == changes["top_k"]
    if method in ONE_CALL:
        assert len(plan.phases) == 1 and first[0].schema is AnswerOut
    else:
        assert [p.stage for p in plan.phases] == ["retrieve", "answer"]
        assert all(c.schema is RetrievalOut for c in first)
    assert plan.estimate.calls == len(plan.calls)
    assert plan.estimate.input_tokens == sum(c.prompt_tokens for c in plan.calls)
    assert plan.estimate.reminder_tokens == sum(c.reminder_tokens for c in plan.calls)


@given(st.integers(2, 40), st.integers(1, 8), st.lists(st.integers(-3, 45), max_size=15))
def test_the_answer_call_reads_the_first_n_valid_retrieved_pages(
    pages: int, top_k: int, reply: list[int]
) -> None:
    document = sized_document([50] * pages)
    plan = plan_method(document, QUESTION, RunSettings(method="rr", top_k=top_k), word_counter())
    calls = resolved_answers(plan, reply)
    valid = list(dict.fromkeys(p for p in reply if 1 <= p <= pages))[:top_k]
    if not valid:
        assert calls == ()
    else:
        (call,) = calls
        assert list(call.pages) == sorted(valid)
        assert call.layout.pages() == [(n, document.page(n).text) for n in sorted(valid)]


# ---- Estimates ------------------------------------------------------------------------


def estimate_cases() -> list[RunSettings]:
    cases = [settings(m) for m in PAPER_METHODS]
    cases.append(settings("rr", reminder_style=ReminderStyle.TAGS_ONLY))
    cases.append(settings("reprompt", reminder_placement=ReminderPlacement.BEGINNING))
    cases.append(
        settings("chunked-rr", reminder_placement=ReminderPlacement.BEFORE_PAGES, reminder_pages=(1, 9, 30))
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
            document, QUESTION, run_settings.but(chunk_size=3_000, reminder_every=1_000), count
        )
        assert plan.estimate.input_tokens == sum(c.prompt_tokens for c in plan.calls)
        assert plan.estimate.output_tokens == sum(c.output_tokens for c in plan.calls)
        for call in plan.known_calls:
            rendered = count.count(call.render())
            assert abs(call.prompt_tokens - rendered) <= 0.02 * rendered, (run_settings.method, call.chunk)
        if len(plan.phases) > 1:
            chunks = plan.phases[0].calls
            replies = [[p for p in (27, 5, 2) if p in c.pages] for c in chunks]
            (answer,) = resolved_answers(plan, *replies)
            rendered = count.count(answer.render())
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
    for method in ("baseline", "reprompt", "chunked-rr"):
        plan = plan_method(document, QUESTION, settings(method, reminder_every=500, chunk_size=1_000), count)
        for call in plan.known_calls:
            rendered = count.count(call.render())
            assert abs(call.prompt_tokens - rendered) <= 0.02 * rendered, (method, call.chunk)


def test_estimate_prices_every_call_when_a_price_model_is_given() -> None:
    document = varied_document()
    cheap = plan_of(document, "baseline", price_model="gpt-4.1-mini")
    more = plan_of(document, "chunked-rr", price_model="gpt-4.1-mini")
    assert cheap.estimate.cost.known and cheap.estimate.usd > 0
    assert more.estimate.usd > cheap.estimate.usd  # more calls, more tokens


def test_reprompt_overhead_at_80k_tokens_is_small() -> None:
    # The paper's setting (METHOD.md §4): 80k tokens, k = 10,000, N = 5.
    document = uniform_document(160, 500)
    assert document.total_tokens == 80_000
    base = RunSettings(method="reprompt", reminder_every=10_000, top_k=5)
    plan = plan_method(document, QUESTION, base, word_counter())
    call = plan.calls[0]
    assert call.reminder_count == plan.reminders == 7
    assert call.reminders_after == (20, 40, 60, 80, 100, 120, 140)
    overhead = call.reminder_tokens / (call.prompt_tokens - call.reminder_tokens)
    assert 0 < overhead < 0.05
    baseline = plan_method(document, QUESTION, base.but(method="baseline"), word_counter())
    assert call.prompt_tokens - baseline.calls[0].prompt_tokens == call.reminder_tokens
    rr = plan_method(document, QUESTION, base.but(method="rr"), word_counter())
    assert rr.reminders == 7


@pytest.mark.parametrize(
    ("chunk_size", "calls", "reminders"), [(10_000, 9, 0), (20_000, 5, 4), (40_000, 3, 6), (80_000, 2, 7)]
)
def test_chunked_call_counts_match_the_papers_cost_table(chunk_size: int, calls: int, reminders: int) -> None:
    document = uniform_document(160, 500)
    base = RunSettings(method="chunked-icr", reminder_every=10_000, top_k=5, chunk_size=chunk_size)
    icr = plan_method(document, QUESTION, base, word_counter())
    rr = plan_method(document, QUESTION, base.but(method="chunked-rr"), word_counter())
    assert icr.estimate.calls == rr.estimate.calls == calls
    assert rr.reminders == reminders and icr.reminders == 0
    assert rr.estimate.input_tokens - icr.estimate.input_tokens == rr.estimate.reminder_tokens


def test_largest_prompt_is_the_longest_call() -> None:
    document = varied_document()
    baseline = plan_of(document, "baseline")
    chunked = plan_of(document, "chunked-icr")
    assert baseline.largest_prompt == baseline.calls[0].prompt_tokens
    assert chunked.largest_prompt == max(c.prompt_tokens for c in chunked.calls) < baseline.largest_prompt


# ---- Configuration errors -------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"reminder_every": 99},
        {"reminder_every": 0},
        {"top_k": 0},
        {"top_k": 101},
        {"chunk_size": 499},
        {"rag_chunk_words": 10},
        {"brief_partition": 0},
        {"brief_iou_threshold": 1.5},
        {"brief_iou_threshold": math.nan},
        {"top_k": True},
        {"max_output_tokens": 10},
        {"reminder_placement": ReminderPlacement.BEFORE_PAGES},
    ],
)
def test_settings_that_cannot_work_raise_config_error(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        plan_of(varied_document(), "rr", **changes)


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_question_raises_config_error(question: str) -> None:
    with pytest.raises(ConfigError, match="question"):
        plan_of(varied_document(), "baseline", question)
    with pytest.raises(ConfigError, match="question"):
        plan_of(varied_document(), "rr", [question, " "])


def test_questions_are_planned_with_their_whitespace_collapsed() -> None:
    plan = plan_of(varied_document(), "icr", ["  What is the\ttermination\nfee? ", "", "Who?"])
    assert plan.questions == ("What is the termination fee?", "Who?")


def test_a_document_without_pages_cannot_be_planned() -> None:
    empty = dataclasses.replace(varied_document(), pages=())
    for method in method_names():
        with pytest.raises(ConfigError, match="no pages"):
            plan_of(empty, method, gold_pages=(1,))
