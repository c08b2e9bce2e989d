"""Support: does the quoted text state this answer to this question? Pure: no I/O.

Provenance (a quote stands on its page, ``rr_core.quotes``) is not support. The offline
reader's support is computed from its own evidence, for free (README "How sure is an
answer"), from three tests:

- **in the quote**: the answer's words stand in one of its quotes (a yes/no answer has no
  span: its quote is the clause that says so);
- **on the subject**: that quote shares the question's content words (at least a third of
  them, and at least one);
- **of the asked kind**: the answer is what the question asks for, as the reader types the
  question (``rr_core.reader.answer_type``): a date has a year, a figure a number, a
  governing law names a state or a country (not a county, a company or "Source").

``supported`` when all three hold, ``partial`` when the answer is in a quote but another test
fails, ``unsupported`` when the answer is in none of its quotes. An answer that is not there
(not found) is ``unchecked``: there is nothing to support.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rr_core.reader import Want, answer_type
from rr_core.retrieval import terms

SUPPORTED, PARTIAL, UNSUPPORTED, UNCHECKED = "supported", "partial", "unsupported", "unchecked"
VERDICTS = (SUPPORTED, PARTIAL, UNSUPPORTED, UNCHECKED)
SUBJECT_SHARE = 1 / 3  # of the question's content words the quote must carry
# A yes or a no has no span to find in its quote: the clause itself must be about the question,
# so it carries more of its words (calibrated on the review contracts with their key).
CLAUSE_SHARE = 0.6

# Where a governing law can come from: the US states (and DC) and the world's countries, with
# the other names contracts use for them. Lower case.
US_STATES = frozenset(
    """alabama alaska arizona arkansas california colorado connecticut delaware florida georgia
    hawaii idaho illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts
    michigan minnesota mississippi missouri montana nebraska nevada ohio oklahoma oregon
    pennsylvania tennessee texas utah vermont virginia washington wisconsin wyoming""".split()
) | frozenset(
    {"new hampshire", "new jersey", "new mexico", "new york", "north carolina", "north dakota",
     "rhode island", "south carolina", "south dakota", "west virginia", "district of columbia"}
)  # fmt: skip
COUNTRIES = frozenset(
    """afghanistan albania algeria andorra angola argentina armenia australia austria azerbaijan
    bahamas bahrain bangladesh barbados belarus belgium belize benin bermuda bhutan bolivia
    botswana brazil brunei bulgaria burundi cambodia cameroon canada chad chile china colombia
    croatia cuba cyprus czechia denmark djibouti dominica ecuador egypt eritrea estonia eswatini
    ethiopia fiji finland france gabon gambia germany ghana greece grenada guatemala guinea guyana
    haiti honduras hungary iceland india indonesia iran iraq ireland israel italy jamaica japan
    jordan kazakhstan kenya kiribati kuwait kyrgyzstan laos latvia lebanon lesotho liberia libya
    liechtenstein lithuania luxembourg madagascar malawi malaysia maldives mali malta mauritania
    mauritius mexico micronesia moldova monaco mongolia montenegro morocco mozambique myanmar
    namibia nauru nepal netherlands nicaragua niger nigeria norway oman pakistan palau panama
    paraguay peru philippines poland portugal qatar romania russia rwanda samoa senegal serbia
    seychelles singapore slovakia slovenia somalia spain sudan suriname sweden switzerland syria
    taiwan tajikistan tanzania thailand togo tonga tunisia turkey turkmenistan tuvalu uganda
    ukraine uruguay uzbekistan vanuatu venezuela vietnam yemen zambia zimbabwe england scotland
    wales ontario quebec alberta""".split()
) | frozenset(
    {"united states", "united states of america", "usa", "u.s.", "u.s.a.", "united kingdom", "uk",
     "u.k.", "great britain", "hong kong", "south africa", "south korea", "korea", "new zealand",
     "saudi arabia", "united arab emirates", "sri lanka", "costa rica", "el salvador", "ivory coast",
     "dominican republic", "czech republic", "british columbia", "cayman islands", "british virgin islands",
     "puerto rico", "people's republic of china", "republic of korea", "the netherlands", "nova scotia",
     "manitoba", "saskatchewan", "new brunswick", "newfoundland"}
)  # fmt: skip
JURISDICTIONS = US_STATES | COUNTRIES
_NOT_A_JURISDICTION = re.compile(
    r"\b(county|city of|inc\b|corp|corporation|llc|ltd|limited|company|source|court|arbitration)",
    re.IGNORECASE,
)
_GOVERNING = re.compile(r"\b(govern\w*|jurisdiction\w*|laws?|choice of law)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]|20)\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")
_NUMBER = re.compile(
    r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|sixty|ninety|hundred|thousand|million|billion)\b",
    re.IGNORECASE,
)
_YES_NO = frozenset({"yes", "no"})
# What a question says of its answer's form ("Answer yes or no; ...", as the review grid words
# its columns): not its subject.
_ASKS_FORM = re.compile(r"(?:^|(?<=[.?!]))\s*Answer (?:yes or no|with)\b[^.?!]*[.?!]?", re.IGNORECASE)
_ORDINALS = {w: str(i) for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth".split(), start=1)}  # fmt: skip


def _words(text: str) -> set[str]:
    """Content words, stemmed as retrieval does, a plural's "s" dropped ("laws": "law")."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in terms(text)
        if len(w) > 1
    }


_GENERIC = frozenset(_words("agreement contract document party parties this that any either other"))


def _flat(text: str) -> str:
    """Lower case, letters and digits only, single spaces (so punctuation and line breaks do
    not hide a span)."""
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def _date_words(text: str) -> set[str]:
    """A date's words as a quote may write them: "1st" and "first" as "1"."""
    out = set()
    for w in _flat(text).split():
        w = _ORDINALS.get(w, w)
        out.add(re.sub(r"^(\d+)(st|nd|rd|th)$", r"\1", w))
    return out


def _holds(quote: str, answer: str, want: Want) -> bool:
    """Whether the answer's words stand in the quote: as one span, or for a date (which the
    reader writes in one form) every one of its words, ordinals read as numbers."""
    span = _flat(answer)
    if not span:
        return False
    if span in _flat(quote):
        return True
    return want is Want.DATE and _date_words(answer) <= _date_words(quote)


def jurisdiction_in(answer: str) -> bool:
    """Whether ``answer`` names a US state or a country (and not a county, company or court)."""
    flat = _flat(answer)
    if not flat or _NOT_A_JURISDICTION.search(answer):
        return False
    padded = f" {flat} "
    return any(f" {_flat(name)} " in padded for name in JURISDICTIONS)


def kind_fits(question: str, answer: str, wanted: Want | None = None) -> bool:
    """Whether ``answer`` is of the kind ``question`` asks for (``wanted``: its type, when the
    caller knows it better than the wording does)."""
    want = wanted if wanted is not None else answer_type(question)
    text = answer.strip()
    if not text:
        return False
    if want is Want.YES_NO:
        return _flat(text).split(" ")[0] in _YES_NO
    if want is Want.PLACE and _GOVERNING.search(question):
        return jurisdiction_in(text)
    if want is Want.PLACE or want is Want.NAME:
        return any(c.isupper() for c in text) and _flat(text) not in ("source", "n a")
    if want is Want.DATE:
        return bool(_YEAR.search(text))
    if want in (Want.DURATION, Want.PERCENT, Want.FIGURE, Want.COUNT, Want.RATIO, Want.CODE):
        return bool(_NUMBER.search(text))
    return True


def on_subject(question: str, quote: str, share: float = SUBJECT_SHARE) -> bool:
    """Whether ``quote`` is about the question's subject: it carries at least ``share`` of the
    question's content words (and at least one)."""
    wanted = _words(_ASKS_FORM.sub(" ", question)) - _GENERIC
    if not wanted:
        return True
    have = _words(quote)
    shared = len(wanted & have)
    return shared >= 1 and shared >= share * len(wanted)


def offline_support(
    question: str, answer: str | None, quotes: Sequence[str], wanted: Want | None = None
) -> tuple[str, str]:
    """The reader's verdict on its own answer (supported | partial | unsupported, or unchecked
    when there is no answer) and the reason, in plain words."""
    if answer is None or not answer.strip():
        return UNCHECKED, "no answer to support"
    quotes = [q for q in quotes if q.strip()]
    if not quotes:
        return UNSUPPORTED, "no quote is given for the answer"
    want = wanted if wanted is not None else answer_type(question)
    fits = kind_fits(question, answer, want)
    # The clause that says yes or no holds no "yes" span: it is the evidence itself.
    holding = list(quotes) if want is Want.YES_NO else [q for q in quotes if _holds(q, answer, want)]
    if not holding:
        return UNSUPPORTED, "the quote does not contain the answer"
    share = CLAUSE_SHARE if want is Want.YES_NO else SUBJECT_SHARE
    about = any(on_subject(question, q, share) for q in holding)
    if about and fits:
        return SUPPORTED, "the quote contains the answer and is about the question's subject"
    if not fits:
        kind = "a state or a country" if want is Want.PLACE and _GOVERNING.search(question) else want.value
        return PARTIAL, f"the answer is not of the asked kind ({kind})"
    return PARTIAL, "the quote is not about the question's subject"
