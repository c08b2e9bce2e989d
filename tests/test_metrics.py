"""Scoring (METHOD.md §11): fuzzy match, best-subspan exact match, page recall and accuracy."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr_core.metrics import (
    best_subspan_em,
    fuzzy_match,
    fuzzy_normalize,
    page_accuracy,
    page_recall,
    squad_normalize,
)


@pytest.mark.parametrize(
    ("prediction", "gold", "score"),
    [
        ("4.2 million euros", "4.2 million euros", 1.0),
        ("The fee is 4.2 million euros.", "4.2 million euros", 1.0),  # gold words ⊂ prediction
        ("euros", "4.2 million euros", 1.0),  # prediction words ⊂ gold
        ("MILLION, euros!", "4.2 million euros", 1.0),  # case and punctuation dropped
        ("euros million", "4.2 million euros", 1.0),  # a word set, not a sequence
        ("Paris, France", "paris", 1.0),
        ("Lyon", "Paris", 0.0),
        ("4.2 million dollars", "4.2 million euros", 0.0),  # neither set holds the other
        ("New   York\nCity", "new york city", 1.0),  # whitespace collapsed
        ("", "Paris", 0.0),  # an empty prediction matches nothing
        ("!!!", "Paris", 0.0),
    ],
)
def test_fuzzy_match(prediction: str, gold: str, score: float) -> None:
    assert fuzzy_match(prediction, [gold]) == score


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("1", "1901"),  # a number inside a longer number
        ("a", "Paris"),  # a letter inside a word
        ("ashing", "Washington"),  # part of a word
        ("Washing", "Washington DC"),
        ("8f14e45f", "8f14e45f-ceea-467f-a0e6-5d9e3c5b1a2e"),  # 8 hex digits of a UUID
        ("4.2", "14.25 million"),
        ("day", "30 days"),
    ],
)
def test_fuzzy_match_is_by_words_never_inside_a_word(prediction: str, gold: str) -> None:
    # METHOD.md §11: words, never characters (the old rule counted a substring either way).
    assert fuzzy_match(prediction, [gold]) == 0.0
    assert fuzzy_match(gold, [prediction]) == 0.0


def test_fuzzy_match_word_containment_either_way() -> None:
    assert fuzzy_match("Washington", ["washington dc"]) == 1.0
    assert fuzzy_match("1901", ["in 1901"]) == 1.0
    assert (
        fuzzy_match("8f14e45f-ceea-467f-a0e6-5d9e3c5b1a2e", ["8f14e45f-ceea-467f-a0e6-5d9e3c5b1a2e"]) == 1.0
    )
    assert fuzzy_normalize("  The U.S.-Navy, 4.2%! ") == "the usnavy 42"


def test_an_empty_answer_matches_nothing_and_is_compared_as_n_a() -> None:
    # The empty word set is a subset of every set: it must not count as right.
    assert fuzzy_match("", ["Paris"]) == 0.0
    assert fuzzy_match("Paris", [""]) == 0.0
    assert fuzzy_match("", [""]) == 0.0
    assert fuzzy_match("...", ["Paris"]) == 0.0


@pytest.mark.parametrize(
    ("prediction", "gold", "score"),
    [
        ("n/a", "n/a", 1.0),
        ("N/A", "n/a", 1.0),
        (" n/a ", "N/A", 1.0),
        ("n/a", "Paris", 0.0),
        ("Paris", "n/a", 0.0),
        ("na", "n/a", 0.0),
    ],
)
def test_na_is_compared_as_is(prediction: str, gold: str, score: float) -> None:
    assert fuzzy_match(prediction, [gold]) == score


def test_fuzzy_keeps_letters_of_any_script_and_any_whitespace() -> None:
    assert fuzzy_match("서울", ["서울"]) == 1.0
    assert fuzzy_match("서울특별시 중구", ["서울특별시"]) == 1.0
    assert fuzzy_match("부산", ["서울"]) == 0.0
    assert fuzzy_match("Zürich", ["zürich!"]) == 1.0
    assert fuzzy_match("4.2\u00a0million euros", ["4.2 million"]) == 1.0  # a no-break space is a space
    assert fuzzy_match("snake_case", ["snakecase"]) == 1.0  # underscores are punctuation


def test_fuzzy_takes_the_best_of_several_golds() -> None:
    assert fuzzy_match("Lyon", ["Paris", "Lyon, France", "Marseille"]) == 1.0
    assert fuzzy_match("Nice", ["Paris", "Lyon"]) == 0.0
    assert fuzzy_match("anything", []) == 0.0


@given(st.text(alphabet="abcdefg XYZ.,!", min_size=1), st.text(alphabet="abcdefg XYZ.,!", min_size=1))
def test_fuzzy_is_symmetric_and_reflexive(a: str, b: str) -> None:
    assert fuzzy_match(a, [b]) == fuzzy_match(b, [a])
    if any(ch.isalnum() for ch in a):
        assert fuzzy_match(a, [a]) == 1.0


# ---- Best-subspan exact match ---------------------------------------------------------------


def test_squad_normalisation() -> None:
    assert squad_normalize("The  Eiffel Tower!") == "eiffel tower"
    assert squad_normalize("An apple, a pear; the END.") == "apple pear end"
    assert squad_normalize("theatre anthem") == "theatre anthem"  # articles only as whole words


@pytest.mark.parametrize(
    ("prediction", "golds", "score"),
    [
        ("It is the Eiffel Tower, in Paris.", ["Eiffel Tower"], 1.0),
        ("eiffel tower", ["The Eiffel Tower"], 1.0),  # articles dropped on both sides
        ("The tower", ["Eiffel Tower"], 0.0),  # the gold must be inside the prediction
        ("U.S. Navy", ["US Navy"], 1.0),  # punctuation stripped
        ("born in 1879", ["1879", "March 14"], 1.0),
        ("born in March", ["1879", "March 14"], 0.0),
        ("anything", ["", "!!"], 0.0),  # an empty normalised gold never matches
    ],
)
def test_best_subspan_em(prediction: str, golds: list[str], score: float) -> None:
    assert best_subspan_em(prediction, golds) == score


# ---- Pages -----------------------------------------------------------------------------------


def test_page_recall_and_accuracy() -> None:
    assert page_recall([4, 27, 9], 27) == 1.0
    assert page_recall([4, 9], 27) == 0.0
    assert page_recall([], 27) == 0.0
    assert page_accuracy(27, 27) == 1.0
    assert page_accuracy(26, 27) == 0.0
    assert page_accuracy(None, 27) == 0.0


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_the_ascii_fast_path_normalises_as_the_rule_says(text: str) -> None:
    # Lowercase, drop what is not a letter, digit or space, collapse spaces (the general path).
    assert fuzzy_normalize(text) == " ".join(re.sub(r"[^\w ]|_", "", " ".join(text.lower().split())).split())
