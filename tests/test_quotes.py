"""The quote check: does the quoted sentence stand on the cited page?"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr_core.quotes import APPROXIMATE, APPROXIMATE_AT, NO_PAGE, NO_QUOTE, NOT_FOUND, VERIFIED, check_quote

PAGE = (
    "Section 12. Termination.\nEither party may end this agreement on ninety days' notice. The termi-\n"
    "nation fee is 4.2 million euros, payable within thirty days of notice.¹"
)


@pytest.mark.parametrize(
    "quote",
    [
        "Either party may end this agreement on ninety days' notice.",
        "either party MAY end this agreement",  # case does not matter
        "payable within thirty\n   days of notice",  # nor line breaks and spacing
    ],
)
def test_a_quote_on_the_page_is_verified(quote: str) -> None:
    assert (
        check_quote(quote, PAGE) == check_quote(quote, PAGE) and check_quote(quote, PAGE).status == VERIFIED
    )
    assert check_quote(quote, PAGE).score == 100.0


def test_a_quote_with_a_dropped_hyphen_or_typo_is_approximate_with_its_score() -> None:
    check = check_quote("The termination fee is 4.2 million euros, payable within thirty days", PAGE)
    assert check.status == APPROXIMATE and APPROXIMATE_AT <= check.score < 100
    typo = check_quote("Either party may end this agreement on ninety day notice.", PAGE)
    assert typo.status == APPROXIMATE


@pytest.mark.parametrize(
    "quote",
    [
        "The termination fee is 9 million dollars, payable at once.",
        "Nothing of the sort is said here at all.",
    ],
)
def test_a_quote_the_page_does_not_say_is_not_found(quote: str) -> None:
    check = check_quote(quote, PAGE)
    assert check.status == NOT_FOUND and check.score < APPROXIMATE_AT


def test_a_quote_longer_than_the_page_is_compared_whole() -> None:
    assert check_quote(PAGE + " And a long addition the page never held.", "Short page.").status == NOT_FOUND


def test_no_quote_or_no_cited_page_is_said_plainly() -> None:
    assert check_quote("", PAGE).status == NO_QUOTE
    assert check_quote("   ", PAGE).status == NO_QUOTE
    assert check_quote("Either party may end this agreement", None).status == NO_PAGE


# Letters, digits, punctuation and whitespace (lower-casing some scripts depends on context,
# e.g. a Greek final sigma, so a span's case would not be the page's).
page_text = st.text(alphabet=st.characters(min_codepoint=9, max_codepoint=126), min_size=1, max_size=300)


@given(page_text, st.integers(0, 300), st.integers(1, 80))
def test_any_span_of_the_page_is_verified(page: str, start: int, length: int) -> None:
    span = page[start : start + length]
    if span.strip():
        assert check_quote(span, page).status == VERIFIED
