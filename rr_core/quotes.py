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


# What each verdict says, in the same words on every screen and in every export. "Located" is
# where the sentence stands (provenance), never that it supports the answer or that the answer
# is right: no tick, nothing that reads as approval. The JSON value ``verified`` means only
# "located word for word" (provenance), kept for the readers of earlier exports.
_CHECK_WORDS = {
    VERIFIED: "quote located on {page}",
    APPROXIMATE: "quote located on {page} with small differences ({score:.0f}% match)",
    NOT_FOUND: "quote not located on {page}",
    NO_QUOTE: "no quote given for {page}",
    NO_PAGE: "no page cited, so the quote could not be checked",
    UNCHECKED: "the quote for {page} was not checked",
}
# Verdicts that ask the reader to look before relying on the quote (shown in amber).
DOUBTFUL = frozenset({APPROXIMATE, NOT_FOUND, NO_PAGE})
CHECK_MEANING = (
    "A quote check is provenance: it says where the quoted sentence stands (located on its page "
    "word for word, nearly, or not at all), not whether the quote supports the answer (see support) "
    "nor whether the answer is right."
)


def check_words(status: str, page: str, score: float = 0.0) -> str:
    """A verdict in words (``page`` as the reader cites it, e.g. "p. 26"); "" when unchecked."""
    template = _CHECK_WORDS.get(status, "")
    return template.format(page=page, score=score)
