"""Plans of RAG, BriefContext, closed-book and oracle, and the passages they search
(METHOD.md §10, papers 001, 002, 004)."""

from __future__ import annotations

import math
import re

import pytest
from conftest import FEE_PAGES, fee_document, word_counter
from hypothesis import given
from hypothesis import strategies as st

from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.methods import plan_method
from rr_core.methods.briefcontext import ONE_RANKER
from rr_core.outputs import NOT_STATED, AnswerOut, Extract, ExtractionOut
from rr_core.passages import Passage, Ranked, rank_passages, split_passages
from rr_core.plans import Call, LocalStep, Plan, StepResult
from rr_core.settings import RunSettings

QUESTION = "What is the termination fee?"


def plan_of(document: Document, method: str, **changes: object) -> Plan:
    return plan_method(document, QUESTION, RunSettings(method=method).but(**changes), word_counter())


def rank(plan: Plan) -> dict[str, StepResult]:
    """Run the plan's ranking step (a local step: free, no LLM)."""
    (step,) = plan.phases[0].steps
    assert isinstance(step, LocalStep) and step.stage == "rank"
    return {step.id: StepResult(step, step.run())}


# ---- Passages ------------------------------------------------------------------------------

page_texts = st.lists(
    st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=7), max_size=120).map(" ".join), max_size=8
)


@given(page_texts, st.integers(1, 40))
def test_passages_cover_every_word_of_every_page_once_and_map_to_their_page(
    texts: list[str], words: int
) -> None:
    pages = [(n, t) for n, t in enumerate(texts, start=1)]
    passages = split_passages(pages, words)
    for number, text in pages:
        mine = [p for p in passages if p.page == number]
        # Every word of the page, in order, exactly once, and nothing else.
        assert [w for p in mine for w in p.text.split()] == text.split()
        assert [p.index for p in mine] == list(range(len(mine)))
        for passage in mine:
            assert passage.text in text  # a verbatim span of its own page
            assert len(passage.text.split()) <= 1.5 * words + 1
    assert [p.page for p in passages] == sorted(p.page for p in passages)  # document order


def test_a_page_shorter_than_a_passage_is_one_passage_and_empty_pages_none() -> None:
    passages = split_passages([(1, "short page here"), (2, "   "), (3, "x " * 700)], 300)
    assert [(p.page, p.index) for p in passages] == [(1, 0), (3, 0), (3, 1)]
    assert passages[0].text == "short page here"


def test_ranking_keeps_the_best_passages_with_positive_scores_best_first() -> None:
    passages = [
        Passage(1, 0, "weather and trains"),
        Passage(2, 0, "the termination fee is due"),
        Passage(2, 1, "termination fee termination fee"),
        Passage(5, 0, "a fee"),
    ]
    ranked = rank_passages(passages, QUESTION, top=3)
    assert [r.rank for r in ranked] == [1, 2, 3]
    assert [(r.passage.page, r.passage.index) for r in ranked] == [(2, 1), (2, 0), (5, 0)]
    assert all(r.score > 0 for r in ranked) and ranked[0].score >= ranked[1].score >= ranked[2].score
    assert rank_passages(passages, "zebra keeper", top=3) == []
    assert rank_passages([], QUESTION, top=3) == []


# ---- RAG ---------------------------------------------------------------------------------------


def test_rag_ranks_locally_then_answers_from_the_passages_most_relevant_first() -> None:
    document = fee_document()
    plan = plan_of(document, "rag", rag_chunk_words=50, rag_top_k=4)
    assert [(p.stage, p.estimated) for p in plan.phases] == [("rank", False), ("answer", True)]
    assert plan.estimate.calls == 1 and plan.calls[0].schema is AnswerOut
    assert any("BM25" in n for n in plan.notes)
    done = [rank(plan)]
    ranked: list[Ranked] = done[0]["rank"].value
    assert len(ranked) == 4 and all(r.passage.page in FEE_PAGES for r in ranked)
    (call,) = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    # The passages stand in rank order (not page order), each tagged with its own page.
    assert call.layout.pages() == [(r.passage.page, r.passage.text) for r in ranked]
    for r in ranked:
        assert r.passage.text in document.page(r.passage.page).text
        assert f"<PAGE {r.passage.page}>\n{r.passage.text}\n</PAGE {r.passage.page}>" in call.render()
    assert call.prompt_tokens > 0 and call.reminder_count == 0
    cited = ranked[1].passage.page
    answers = {"answer": StepResult(call, AnswerOut(answer="4.2 million euros", page=cited, quote="q"))}
    conclusion = plan.conclude([*done, answers])
    (outcome,) = conclusion.outcomes
    assert outcome.page == cited and outcome.answer == "4.2 million euros"
    assert outcome.retrieved_pages == list(dict.fromkeys(r.passage.page for r in ranked))
    details = conclusion.details
    assert details["retriever"] == "BM25"
    assert [(p["rank"], p["page"], p["text"]) for p in details["passages"]] == [
        (r.rank, r.passage.page, r.passage.text) for r in ranked
    ]


def test_rag_with_no_matching_passage_makes_no_call_and_says_so() -> None:
    document = fee_document()
    plan = plan_method(document, "Who keeps the zebras?", RunSettings(method="rag"), word_counter())
    done = [rank(plan)]
    assert plan.phases[1].resolve(done).calls == ()  # type: ignore[misc]
    conclusion = plan.conclude([*done, {}])
    assert conclusion.outcomes[0].answer == NOT_STATED and conclusion.outcomes[0].found is False
    assert any("nothing to answer from" in w for w in conclusion.warnings)


def test_rag_drops_a_citation_of_a_page_it_did_not_read() -> None:
    document = fee_document()
    plan = plan_of(document, "rag", rag_chunk_words=50, rag_top_k=2)
    done = [rank(plan)]
    (call,) = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    unread = next(n for n in range(1, 25) if n not in call.pages)
    conclusion = plan.conclude([*done, {"answer": StepResult(call, AnswerOut(answer="x", page=unread))}])
    assert conclusion.outcomes[0].page is None
    assert any(f"page {unread}" in w for w in conclusion.warnings)


def test_rag_estimate_is_sized_as_the_kept_passages() -> None:
    document = fee_document()
    plan = plan_of(document, "rag", rag_chunk_words=50, rag_top_k=5)
    (call,) = plan.phases[1].resolve([rank(plan)]).calls  # type: ignore[misc]
    estimate = plan.calls[0].prompt_tokens
    assert 0.5 * call.prompt_tokens <= estimate <= 2 * call.prompt_tokens


# ---- BriefContext --------------------------------------------------------------------------------


def brief_plan(**changes: object) -> tuple[Document, Plan]:
    document = fee_document()
    settings = {"rag_chunk_words": 50, "brief_top_n": 6, "brief_partition": 2, **changes}
    return document, plan_of(document, "briefcontext", **settings)


def extraction(
    call: Call, answer: str, *, relevant: bool = True, pages: list[object] | None = None
) -> StepResult:
    """What a map call returned: an extract from each given page (default: its own pages)."""
    pages = list(dict.fromkeys(call.pages)) if pages is None else pages
    extracts = [Extract(page=p, text=f"extract of page {p}") for p in pages] if relevant else []
    return StepResult(
        call, ExtractionOut(relevant=relevant, extracts=extracts, answer=answer if relevant else "n/a")
    )


def test_briefcontext_plans_rank_map_and_reduce() -> None:
    _, plan = brief_plan(brief_top_n=8, brief_partition=3)
    assert [(p.stage, p.estimated) for p in plan.phases] == [("rank", False), ("map", True), ("reduce", True)]
    assert [c.id for c in plan.phases[1].calls] == ["map.1", "map.2", "map.3"]  # ceil(8 / 3) groups
    assert all(c.schema is ExtractionOut for c in plan.phases[1].calls)
    assert [c.schema for c in plan.phases[2].calls] == [AnswerOut]
    assert plan.estimate.calls == 4
    assert ONE_RANKER in plan.notes and plan.phases[0].note == ONE_RANKER


@given(st.integers(2, 12), st.integers(1, 5))
def test_briefcontext_partitions_the_ranked_passages_in_order(top_n: int, size: int) -> None:
    _, plan = brief_plan(brief_top_n=top_n, brief_partition=size)
    done = [rank(plan)]
    ranked: list[Ranked] = done[0]["rank"].value
    calls = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    assert len(calls) == math.ceil(len(ranked) / size)
    assert [c.chunk for c in calls] == list(range(1, len(calls) + 1))
    # Together the groups hold every ranked passage once, in rank order, g at a time.
    assert [p for c in calls for p in c.layout.pages()] == [(r.passage.page, r.passage.text) for r in ranked]
    assert all(len(c.layout.pages()) <= size for c in calls)
    for call in calls:
        # The question first: the opening instructions, then the passages.
        assert call.layout.blocks[0].kind == "opening" and QUESTION in call.layout.blocks[0].text
        assert '"extracts"' in call.layout.blocks[0].text


def test_briefcontext_reduce_reads_the_relevant_extracts_with_their_pages() -> None:
    _, plan = brief_plan()
    done = [rank(plan)]
    maps = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    assert len(maps) == 3
    own = list(dict.fromkeys(maps[0].pages))
    results = {
        maps[0].id: extraction(maps[0], "4.2 million euros", pages=[*own, 999]),  # 999 is not in its group
        maps[1].id: extraction(maps[1], "n/a", relevant=False),
        maps[2].id: extraction(maps[2], "4.2 million euros"),
    }
    (reduce,) = plan.phases[2].resolve([*done, results]).calls  # type: ignore[misc]
    expected = [(p, f"extract of page {p}") for p in own] + [
        (p, f"extract of page {p}") for p in dict.fromkeys(maps[2].pages)
    ]
    assert reduce.layout.pages() == expected  # extracts, with pages, from relevant groups only
    assert "extracts above" in reduce.render() and reduce.schema is AnswerOut
    cited = expected[0][0]
    conclusion = plan.conclude(
        [*done, results, {"reduce": StepResult(reduce, AnswerOut(answer="4.2 million euros", page=cited))}]
    )
    (outcome,) = conclusion.outcomes
    assert outcome.answer == "4.2 million euros" and outcome.page == cited
    details = conclusion.details
    assert details["preflight"] == {"decision": "map-reduce", "iou": None, "note": ONE_RANKER}
    assert [p["partition"] for p in details["partitions"]] == [1, 2, 3]
    assert [p["relevant"] for p in details["partitions"]] == [True, False, True]
    assert not any(p.get("disagrees") for p in details["partitions"])
    assert not any("disagree" in w for w in conclusion.warnings)


def test_briefcontext_flags_groups_that_disagree() -> None:
    _, plan = brief_plan()
    done = [rank(plan)]
    maps = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    results = {
        maps[0].id: extraction(maps[0], "4.2 million euros"),
        maps[1].id: extraction(maps[1], "9 million dollars"),
        maps[2].id: extraction(maps[2], "4.2 million euros"),
    }
    (reduce,) = plan.phases[2].resolve([*done, results]).calls  # type: ignore[misc]
    conclusion = plan.conclude(
        [*done, results, {"reduce": StepResult(reduce, AnswerOut(answer="4.2 million euros"))}]
    )
    flags = {p["partition"]: p["disagrees"] for p in conclusion.details["partitions"]}
    assert flags == {1: False, 2: True, 3: False}  # the minority group is flagged
    (warning,) = [w for w in conclusion.warnings if "disagree" in w]
    assert "9 million dollars" in warning and "4.2 million euros" in warning


def test_briefcontext_with_nothing_relevant_makes_no_reduce_call() -> None:
    _, plan = brief_plan()
    done = [rank(plan)]
    maps = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    results = {c.id: extraction(c, "n/a", relevant=False) for c in maps}
    assert plan.phases[2].resolve([*done, results]).calls == ()  # type: ignore[misc]
    conclusion = plan.conclude([*done, results, {}])
    assert conclusion.outcomes[0].answer == NOT_STATED and conclusion.outcomes[0].found is False
    assert any("nothing to combine" in w for w in conclusion.warnings)


def test_briefcontext_reports_a_failed_group_and_goes_on() -> None:
    _, plan = brief_plan()
    done = [rank(plan)]
    maps = plan.phases[1].resolve(done).calls  # type: ignore[misc]
    results = {
        maps[0].id: StepResult(maps[0], error=RuntimeError("502 bad gateway")),
        maps[1].id: extraction(maps[1], "4.2 million euros"),
        maps[2].id: extraction(maps[2], "4.2 million euros"),
    }
    (reduce,) = plan.phases[2].resolve([*done, results]).calls  # type: ignore[misc]
    assert set(reduce.pages) <= set(maps[1].pages) | set(maps[2].pages)
    conclusion = plan.conclude([*done, results, {"reduce": StepResult(reduce, AnswerOut(answer="x"))}])
    assert any("502" in w and "skipped" in w for w in conclusion.warnings)
    assert conclusion.details["partitions"][0]["error"] == "502 bad gateway"


# ---- Bounds: closed-book and oracle -------------------------------------------------------------


def test_closed_book_sends_the_question_and_no_page() -> None:
    document = fee_document()
    plan = plan_of(document, "closed-book")
    (call,) = plan.calls
    assert call.pages == () and call.schema is AnswerOut
    assert [b.kind for b in call.layout.blocks] == ["opening", "closing"]
    prompt = call.render()
    assert QUESTION in prompt and "<DOCUMENT>" not in prompt and "<PAGE" not in prompt
    assert "4.2 million" not in prompt and "payable on notice" not in prompt
    assert call.prompt_tokens < 300
    conclusion = plan.conclude([{"answer": StepResult(call, AnswerOut(answer="I think 5 million", page=3))}])
    assert conclusion.outcomes[0].page is None  # it read no page, so it can cite none


def test_oracle_reads_only_the_gold_pages_in_order() -> None:
    document = fee_document()
    plan = plan_of(document, "oracle", gold_pages=(11, 3, 11))
    (call,) = plan.calls
    assert call.pages == (3, 11)
    assert call.layout.pages() == [(3, document.page(3).text), (11, document.page(11).text)]
    assert re.findall(r"<PAGE (\d+)>", call.render()) == ["3", "11"]
    conclusion = plan.conclude([{"answer": StepResult(call, AnswerOut(answer="4.2 million euros", page=11))}])
    assert conclusion.outcomes[0].page == 11 and conclusion.outcomes[0].retrieved_pages == [3, 11]


@pytest.mark.parametrize(("gold", "needle"), [((), "gold pages"), ((3, 25), "25"), ((0,), "0")])
def test_oracle_needs_gold_pages_inside_the_document(gold: tuple[int, ...], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        plan_of(fee_document(), "oracle", gold_pages=gold)


@given(st.sets(st.integers(1, 24), min_size=1, max_size=6), st.sampled_from(["closed-book", "oracle"]))
def test_the_bounds_send_exactly_the_pages_they_name(gold: set[int], method: str) -> None:
    document = fee_document()
    plan = plan_of(document, method, gold_pages=tuple(gold))
    (call,) = plan.calls
    expected = sorted(gold) if method == "oracle" else []
    assert list(call.pages) == expected
    assert call.layout.pages() == [(n, document.page(n).text) for n in expected]
    assert re.findall(r"^<PAGE (\d+)>$", call.render(), re.MULTILINE) == [str(n) for n in expected]


# ---- Specs and several questions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("rr:k=2", r"'k=2' for R&R: Reprompt interval \(k\) must be between 100 and 100,000 tokens"),
        ("chunked-rr:c=10", r"'c=10' for Chunked R&R: Chunk size \(c\) must be between 500"),
        ("rr:N=0", r"'N=0' for R&R: Pages to retrieve \(N\) must be between 1 and 50"),
        ("rr:k=nan", r"'k=nan' for R&R"),
    ],
)
def test_a_spec_outside_a_settings_bounds_is_refused_naming_the_part_at_fault(spec: str, needle: str) -> None:
    from rr_core.methods import parse_spec

    with pytest.raises(ConfigError, match=needle):
        parse_spec(spec, RunSettings())


def test_a_spec_inside_the_bounds_reads_back_its_settings() -> None:
    from rr_core.methods import parse_spec

    settings = parse_spec("rr:k=100:N=50", RunSettings())
    assert (settings.method, settings.reminder_every, settings.top_k) == ("rr", 100, 50)
    settings.validate()


def test_several_questions_each_give_the_oracle_their_own_gold_pages() -> None:
    from rr_core.methods import plan_questions
    from rr_core.questions import Question

    questions = [Question("What is the fee?", gold_pages=(11,)), Question("Who signs?", gold_pages=(3, 4))]
    plans = plan_questions(fee_document(), questions, RunSettings(method="oracle"), word_counter())
    assert [p.calls[0].pages for p in plans] == [(11,), (3, 4)]


# ---- Self-Route ------------------------------------------------------------------------------


def test_self_route_plans_rag_then_the_whole_document_as_its_ceiling() -> None:
    document = fee_document()
    plan = plan_of(document, "self-route")
    rag = plan_of(document, "rag")
    baseline = plan_of(document, "baseline")
    assert [p.stage for p in plan.phases] == ["rank", "answer", "answer"]
    assert all(p.estimated for p in plan.phases[1:])
    # The estimate counts the long call too: the most the run can cost, never less.
    long_call = plan.phases[2].steps[0]
    assert isinstance(long_call, Call)
    assert long_call.prompt_tokens >= 0.9 * baseline.phases[0].steps[0].prompt_tokens
    assert plan.phases[1].steps[0].prompt_tokens == rag.phases[1].steps[0].prompt_tokens


def test_self_route_reads_the_whole_document_only_when_the_passages_do_not_state_it() -> None:
    from conftest import offline_traces

    document = fee_document()
    (answered,) = offline_traces(document, "self-route", question=QUESTION)
    assert [c.id for c in answered.calls] == ["answer"] and answered.outcome.found
    assert answered.details["routed_to"] == "passages"
    (rag,) = offline_traces(document, "rag", question=QUESTION)
    assert answered.cost_usd == pytest.approx(rag.cost_usd)  # one short call: RAG's cost
    (routed,) = offline_traces(document, "self-route", question="Which zeppelin crossed the Andes?")
    # RAG's reader found nothing in its passages (if any matched), so the whole document was read.
    assert [c.id for c in routed.calls][-1:] == ["answer.whole"] and len(routed.calls) <= 2
    assert routed.details["routed_to"] == "whole document"
    assert routed.outcome.retrieved_pages == list(range(1, len(document.pages) + 1))
    assert any("Self-Route" in w for w in routed.warnings)


def test_self_route_through_a_model_pays_the_long_call_only_after_not_found(stub) -> None:  # type: ignore[no-untyped-def]
    import json

    from rr_core.llm.openai_client import OpenAIClient
    from rr_core.runs import run_plans
    from tests.stub_server import Reply, prompt_of

    document = fee_document()
    client = OpenAIClient(model="gpt-4.1-mini", api_key="sk-test-stub", base_url=stub.url, max_retries=0)
    stub.enqueue(
        Reply(text=json.dumps({"answer": "not stated in the document", "found": False, "citations": []}))
    )
    stub.enqueue(
        Reply(text=json.dumps({"answer": "4.2 million euros", "citations": [{"page": "3", "quote": "x"}]}))
    )
    (trace,) = run_plans(document, [plan_of(document, "self-route")], client)
    bodies = stub.bodies("responses")
    assert len(bodies) == 2 and len(prompt_of(bodies[1])) > 2 * len(prompt_of(bodies[0]))
    assert "<PAGE 24>" in prompt_of(bodies[1]) and trace.outcome.answer == "4.2 million euros"
    assert [c.id for c in trace.calls] == ["answer", "answer.whole"]
    # An answer from the passages sends nothing more.
    stub.enqueue(
        Reply(text=json.dumps({"answer": "4.2 million euros", "citations": [{"page": "3", "quote": "x"}]}))
    )
    (direct,) = run_plans(document, [plan_of(document, "self-route")], client)
    assert len(stub.bodies("responses")) == 3 and [c.id for c in direct.calls] == ["answer"]


def test_self_route_is_offered_wherever_methods_are_listed() -> None:
    from rr_core.lab.presets import PRESETS
    from rr_core.methods import methods_in

    assert "self-route" in [m.name for m in methods_in("other")]  # Ask's method choices read the registry
    for name in ("quick", "paper-grid", "lost-in-the-middle", "key-value"):
        assert "self-route" in PRESETS[name].series


# ---- Reminders before the answer only (000 Table 6) --------------------------------------------


def test_before_answer_only_puts_one_reminder_right_before_each_gold_page() -> None:
    document = fee_document()
    plan = plan_of(document, "reprompt-before-answer", gold_pages=(11,), reminder_every=200)
    (call,) = plan.phases[0].steps
    kinds = [(b.kind, b.page) for b in call.layout.blocks]
    reminders = [i for i, (kind, _) in enumerate(kinds) if kind == "reminder"]
    assert len(reminders) == 1 and kinds[reminders[0] + 1] == ("page", 11)  # none every k tokens
    assert "Question: What is the termination fee?" in call.layout.blocks[reminders[0]].text
    first = plan_of(document, "reprompt-before-answer", gold_pages=(1, 5))
    blocks = [(b.kind, b.page) for b in first.phases[0].steps[0].layout.blocks]
    assert blocks[1:4] == [("document_open", None), ("reminder", None), ("page", 1)]
    assert sum(1 for kind, _ in blocks if kind == "reminder") == 2


def test_before_answer_only_needs_the_gold_pages() -> None:
    with pytest.raises(ConfigError, match="gold pages"):
        plan_of(fee_document(), "reprompt-before-answer")
    with pytest.raises(ConfigError, match="not in the document"):
        plan_of(fee_document(), "reprompt-before-answer", gold_pages=(99,))
