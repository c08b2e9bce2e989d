"""The planted-fact builder the Lab uses: a fact, its questions, its answers, its distracters."""

from __future__ import annotations

import pytest

from rr_core.errors import ConfigError
from rr_core.planting import (
    FACT_KINDS,
    HostText,
    PlantedFact,
    build_fact,
    host_conflicts,
    plant_fact,
    word_overlap,
)
from rr_core.retrieval import BM25
from rr_core.samples import get_sample

SEEDS = range(40)


@pytest.mark.parametrize("kind", sorted(FACT_KINDS))
@pytest.mark.parametrize("seed", SEEDS)
def test_a_fact_states_its_answer_and_its_distracters_do_not(kind: str, seed: int) -> None:
    fact = build_fact(seed, kind)
    assert isinstance(fact, PlantedFact) and fact.kind == kind
    assert fact.question.endswith("?") and fact.paraphrase.endswith("?")
    assert fact.answers and len(set(fact.answers)) == len(fact.answers)
    assert fact.answers[0] in fact.sentence
    assert len(fact.distracters) == 2 and len(set(fact.distracters)) == 2
    for distracter in fact.distracters:
        assert fact.answers[0] not in distracter, (fact.answers[0], distracter)
        assert distracter != fact.sentence


@pytest.mark.parametrize("kind", sorted(FACT_KINDS))
def test_the_paraphrase_shares_fewer_words_with_the_fact_than_the_question(kind: str) -> None:
    for seed in SEEDS:
        fact = build_fact(seed, kind)
        assert word_overlap(fact.paraphrase, fact.sentence) < word_overlap(fact.question, fact.sentence)
        assert word_overlap(fact.paraphrase, fact.sentence) <= 0.5


def test_the_plain_question_finds_its_sentence_among_the_distracters() -> None:
    for kind in FACT_KINDS:
        fact = build_fact(7, kind)
        index = BM25([*fact.distracters, fact.sentence])
        assert index.rank(fact.question, 1) == [2], kind


def test_same_seed_same_fact_and_seeds_vary_the_values() -> None:
    assert build_fact(3, "fee") == build_fact(3, "fee")
    assert len({build_fact(seed, "fee").answers[0] for seed in SEEDS}) > 30
    assert {build_fact(seed).kind for seed in SEEDS} == set(FACT_KINDS)


def test_an_unknown_kind_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown fact kind 'x'; choose one of: fee, date"):
        build_fact(1, "x")


def test_word_overlap() -> None:
    assert word_overlap("termination fee amount", "The termination fee is due.") == pytest.approx(2 / 3)
    assert word_overlap("", "anything") == 0.0


# ---- A fact the host document could answer by itself is drawn again -------------------------


def _contract_host() -> HostText:
    return HostText(get_sample("contract").pages)


@pytest.mark.parametrize("kind", sorted(FACT_KINDS))
def test_both_questions_name_the_invented_subject(kind: str) -> None:
    # Without it ("In which city would a tribunal hear a disagreement between the parties?") the
    # host contract answers the paraphrase itself (its own seat of arbitration).
    for seed in SEEDS:
        fact = build_fact(seed, kind)
        assert HostText([fact.question]).names(fact.subject), fact.question
        assert HostText([fact.paraphrase]).names(fact.subject), fact.paraphrase


def test_host_text_reads_answers_as_the_grader_does() -> None:
    host = HostText(["Late payments bear interest at 1.75 percent per month.", "Notice: thirty (30) days."])
    assert host.states("1.75%") and host.states("1.75 percent") and host.states("30 days")
    assert host.states("Thirty (30) days")
    assert not host.states("1.7%") and not host.states("175 days") and not host.states("...")
    assert not host.states("3")  # whole words only: "30" is not "3"
    assert HostText(["Brightwater's plant"]).names("Brightwater")
    assert not HostText(["Brightwatery"]).names("Brightwater")


def test_on_the_sample_contract_many_first_candidates_are_answered_by_the_document() -> None:
    # The count: every rate fact and 70 of 100 notice facts had an accepted answer the
    # contract already states (before rates took two decimals).
    host = _contract_host()
    notice = [build_fact(seed) for seed in range(600)]
    notice = [f for f in notice if f.kind == "notice"]
    assert sum(bool(host_conflicts(f, host)) for f in notice) == 70
    assert any("already states 'thirty (30) days'" in r for f in notice for r in host_conflicts(f, host))


def test_a_planted_fact_is_never_answered_by_its_host() -> None:
    host = _contract_host()
    regenerated = 0
    for seed in range(120):
        fact, rejected = plant_fact(host, seed)
        assert host_conflicts(fact, host) == []
        for answer in fact.answers:
            assert not host.states(answer)
        assert not host.names(fact.subject)
        regenerated += rejected > 0
        # The first candidate is kept when it is clean, and the choice is deterministic.
        assert (rejected == 0) == (fact == build_fact(seed))
        assert plant_fact(host, seed) == (fact, rejected)
    assert 10 <= regenerated <= 60


def test_a_fact_is_kept_as_drawn_in_a_document_that_cannot_answer_it() -> None:
    host = HostText(["The committee met on the usual weekday and reviewed the agenda."])
    assert all(plant_fact(host, seed) == (build_fact(seed), 0) for seed in SEEDS)


def test_a_document_that_answers_every_candidate_is_refused() -> None:
    class Knows(HostText):
        def names(self, name: str) -> bool:
            return True

    with pytest.raises(ConfigError, match="No fact can be planted in this document"):
        plant_fact(Knows([]), 1)
