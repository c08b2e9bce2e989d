"""The planted-fact builder the Lab uses: a fact, its questions, its answers, its distracters."""

from __future__ import annotations

import pytest

from rr_core.planting import FACT_KINDS, PlantedFact, build_fact, word_overlap
from rr_core.retrieval import BM25

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
