"""Checking a model's quote against the page it cites: verified, approximate or not found.

What this checks is narrow and the UI must say so: that the quoted sentence stands on the
cited page. It does not check that the sentence answers the question.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

VERIFIED = "verified"
APPROXIMATE = "approximate"
NOT_FOUND = "not-found"
NO_QUOTE = "no-quote"
NO_PAGE = "no-page"
UNCHECKED = "unchecked"  # not (yet) checked: before the run concluded, or made by hand
APPROXIMATE_AT = 90.0  # rapidfuzz partial_ratio from which a quote counts as approximately there


@dataclass(frozen=True, slots=True)
class QuoteCheck:
    """The verdict and, for approximate matches, how close (0–100)."""

    status: str
    score: float = 0.0


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def check_quote(quote: str, page_text: str | None) -> QuoteCheck:
    """Whether ``quote`` stands on the page, word for word or nearly."""
    if not quote.strip():
        return QuoteCheck(NO_QUOTE)
    if page_text is None:
        return QuoteCheck(NO_PAGE)
    needle, hay = _flat(quote), _flat(page_text)
    if needle in hay:
        return QuoteCheck(VERIFIED, 100.0)
    # Quotes may drop a line-break hyphen or a footnote mark: a near match counts as approximate.
    score = (
        float(fuzz.partial_ratio(needle, hay)) if len(needle) <= len(hay) else float(fuzz.ratio(needle, hay))
    )
    if score >= APPROXIMATE_AT:
        return QuoteCheck(APPROXIMATE, round(score, 1))
    return QuoteCheck(NOT_FOUND, round(score, 1))


# What each verdict says, in the same words on every screen and in every export. "Found" is
# where the sentence stands, never that the answer is right: that is only said against a
# known answer.
_CHECK_WORDS = {
    VERIFIED: "quote found on {page}",
    APPROXIMATE: "quote found on {page} with small differences ({score:.0f}% match)",
    NOT_FOUND: "quote not found on {page}",
    NO_QUOTE: "no quote given for {page}",
    NO_PAGE: "no page cited, so the quote could not be checked",
    UNCHECKED: "the quote for {page} was not checked",
}
# Verdicts that ask the reader to look before relying on the quote (shown in amber).
DOUBTFUL = frozenset({APPROXIMATE, NOT_FOUND, NO_PAGE})
CHECK_MEANING = (
    "A quote check says where the quoted sentence stands (found on its page word for word, "
    "nearly, or not at all), not whether the answer is right."
)


def check_words(status: str, page: str, score: float = 0.0) -> str:
    """A verdict in words (``page`` as the reader cites it, e.g. "p. 26"); "" when unchecked."""
    template = _CHECK_WORDS.get(status, "")
    return template.format(page=page, score=score)
