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
