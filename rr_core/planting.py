"""Planted facts: a fictional fact sentence to place in a document, with its questions.

The Lab plants facts at controlled depths of a user's document and checks whether each method
finds them. A planted fact comes with two questions — one in the fact's own words, one
paraphrased so that lexical matching has little to hold on to — the answers a grader should
accept, and distracters: sentences on the same subject with other values, to plant elsewhere
so that the right page is not simply the one page about the subject.

Everything is built from a seed, deterministically, from invented names and values. A fact is
only planted in a document that cannot answer it by itself (``plant_fact``): none of its accepted
answers is already in the document, as the grader reads answers, and both questions name its
invented subject, which the document does not; otherwise the next candidate is drawn.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rr_core.errors import ConfigError
from rr_core.metrics import fuzzy_normalize
from rr_core.retrieval import terms


@dataclass(frozen=True, slots=True, kw_only=True)
class PlantedFact:
    """A fact to plant, the questions that ask for it and the sentences that compete with it."""

    kind: str
    subject: str  # the invented name both questions ask about: only the fact can answer for it
    sentence: str
    question: str
    paraphrase: str
    answers: tuple[str, ...]
    distracters: tuple[str, ...]


_COMPANIES = (
    "Brightwater Tiles Ltd", "Quillon Freight GmbH", "Marrowby Foods plc", "Tessaly Optics Inc",
    "Oakhurst Pumps SA", "Velliner Textiles BV", "Caddington Rail Ltd", "Ostrava Glassworks AS",
    "Pemberly Chemicals Inc", "Lunwick Ceramics Ltd", "Harcastle Biotech AG", "Sorrel Bay Shipping Co",
)  # fmt: skip
_PEOPLE = (
    "Ines Valdemar", "Tobias Ferrante", "Aiko Brannigan", "Rufus Okonkwo-Hale", "Greta Lindqvist",
    "Matteo Achterberg", "Priya Vanterpool", "Ewan Stroud", "Noor Castellane", "Hollis Meriwether",
    "Dagny Ruiz-Farrow", "Cyprian Oduya",
)  # fmt: skip
# Each role with a way of saying it that shares no word with it.
_ROLES = {
    "chief financial officer": "finance chief",
    "head of procurement": "lead buyer",
    "general counsel": "top lawyer",
    "plant manager": "factory boss",
}
_CITIES = (
    "Trondheim", "Valparaiso", "Ljubljana", "Winnipeg", "Porto", "Gdansk", "Tampere", "Leipzig",
    "Hobart", "Cork", "Bergamo", "Aarhus",
)  # fmt: skip
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_CURRENCIES = ("EUR", "USD", "GBP", "CHF")
_NUMBER_WORDS = {
    30: "thirty", 45: "forty-five", 60: "sixty", 75: "seventy-five", 90: "ninety",
    120: "one hundred twenty", 150: "one hundred fifty", 180: "one hundred eighty",
}  # fmt: skip


def _amount(rng: random.Random) -> tuple[str, float]:
    value = rng.randrange(12, 96) * 100_000
    return f"{value:,}", value / 1_000_000


def _others(rng: random.Random, options: list[str], value: str, count: int) -> list[str]:
    rest = [o for o in options if o != value]
    return rng.sample(rest, count)


def _fee(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    currency = rng.choice(_CURRENCIES)
    figure, millions = _amount(rng)
    wrong = {figure}
    distracter_figures: list[str] = []
    while len(distracter_figures) < 2:
        other, _ = _amount(rng)
        if other not in wrong:
            wrong.add(other)
            distracter_figures.append(other)
    return PlantedFact(
        kind="fee",
        subject=company.split()[0],
        sentence=(
            f"If the supply agreement ends early at its request, {company} must pay a termination "
            f"fee of {currency} {figure} within thirty days."
        ),
        question=f"What termination fee must {company} pay if it ends the supply agreement early?",
        paraphrase=f"How much would it cost {company.split()[0]} to walk away from the deal before it runs out?",
        answers=(f"{currency} {figure}", figure, f"{currency} {millions:g} million", f"{millions:g} million"),
        distracters=(
            f"{company} paid a relocation fee of {currency} {distracter_figures[0]} when it moved its warehouse.",
            f"The termination fee under the previous agreement, now superseded, was {currency} "
            f"{distracter_figures[1]}.",
        ),
    )


def _date(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    city = rng.choice(_CITIES)
    month = rng.choice(_MONTHS)
    day, year = rng.randrange(2, 28), rng.randrange(2027, 2034)
    other_months = _others(rng, list(_MONTHS), month, 2)
    return PlantedFact(
        kind="date",
        subject=company.split()[0],
        sentence=f"The new {city} plant of {company} is scheduled to open on {day} {month} {year}.",
        question=f"On what date is the new {city} plant of {company} scheduled to open?",
        paraphrase=f"When will production start at {company.split()[0]}'s {city} site?",
        answers=(f"{day} {month} {year}", f"{month} {day}, {year}"),
        distracters=(
            f"The {city} warehouse of {company} opened on {day} {other_months[0]} {year - 3}.",
            f"A second plant near {city} is planned for {other_months[1]} {year + 2}, subject to financing.",
        ),
    )


def _notice(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    days = rng.choice(list(_NUMBER_WORDS))
    other = _others(rng, [str(d) for d in _NUMBER_WORDS], str(days), 2)
    return PlantedFact(
        kind="notice",
        subject=company.split()[0],
        sentence=(
            f"Either party may end the distribution agreement with {company} by giving at least "
            f"{_NUMBER_WORDS[days]} ({days}) days' written notice."
        ),
        question=f"How many days' written notice ends the distribution agreement with {company}?",
        paraphrase=f"How far ahead must someone warn the other side before quitting the {company.split()[0]} arrangement?",
        answers=(f"{_NUMBER_WORDS[days]} ({days}) days", f"{days} days", f"{_NUMBER_WORDS[days]} days"),
        distracters=(
            f"A change to the delivery schedule needs {_NUMBER_WORDS[int(other[0])]} ({other[0]}) days' notice.",
            f"Price lists may be revised on {_NUMBER_WORDS[int(other[1])]} ({other[1]}) days' notice to {company}.",
        ),
    )


def _rate(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    # Hundredths ending in 5 (1.05 … 4.95): normalised, "1.2%" is the word "12", which almost
    # any document contains; "1.25%" is "125", far rarer.
    choices = range(105, 500, 10)
    hundredths = rng.choice(choices)
    rate = f"{hundredths / 100:.2f}"
    others = [f"{h / 100:.2f}" for h in rng.sample([h for h in choices if h != hundredths], 2)]
    return PlantedFact(
        kind="rate",
        subject=company.split()[0],
        sentence=f"Overdue invoices from {company} bear interest at {rate} percent per month.",
        question=f"What interest rate applies to overdue invoices from {company}?",
        paraphrase=f"What does paying a {company.split()[0]} bill late add each month?",
        answers=(f"{rate} percent per month", f"{rate}% per month", f"{rate} percent", f"{rate}%"),
        distracters=(
            f"Refunds owed to {company} carry interest at {others[0]} percent per month.",
            f"Amounts in dispute accrue interest at {others[1]} percent a year once the dispute is resolved.",
        ),
    )


def _person(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    person, *others = rng.sample(_PEOPLE, 3)
    role = rng.choice(sorted(_ROLES))
    other_role = rng.choice([r for r in sorted(_ROLES) if r != role])
    return PlantedFact(
        kind="person",
        subject=company.split()[0],
        sentence=f"{person} is the current {role} of {company}, appointed at the start of the year.",
        question=f"Who is the current {role} of {company}?",
        paraphrase=f"Who is {company.split()[0]}'s {_ROLES[role]} these days?",
        answers=(person, person.split()[-1]),
        distracters=(
            f"{others[0]} served as {role} of {company} until the end of last year.",
            f"{others[1]} is the {other_role} of {company}.",
        ),
    )


def _place(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    city, *others = rng.sample(_CITIES, 3)
    return PlantedFact(
        kind="place",
        subject=company.split()[0],
        sentence=f"Disputes with {company} are finally settled by arbitration seated in {city}.",
        question=f"Where is the seat of arbitration for disputes with {company}?",
        paraphrase=f"In which city would a tribunal hear a disagreement with {company.split()[0]}?",
        answers=(city,),
        distracters=(
            f"Before arbitration, the parties meet for a mediation in {others[0]}.",
            f"{company} keeps its registered office in {others[1]}.",
        ),
    )


FACT_KINDS: dict[str, Callable[[random.Random], PlantedFact]] = {
    "fee": _fee,
    "date": _date,
    "notice": _notice,
    "rate": _rate,
    "person": _person,
    "place": _place,
}


def build_fact(seed: int, kind: str | None = None) -> PlantedFact:
    """A planted fact from ``seed`` (of ``kind``, or one chosen by the seed): the same seed
    always gives the same fact."""
    rng = random.Random(seed)
    if kind is None:
        kind = rng.choice(sorted(FACT_KINDS))
    try:
        maker = FACT_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown fact kind {kind!r}; choose one of: {', '.join(FACT_KINDS)}") from None
    return maker(rng)


def word_overlap(question: str, sentence: str) -> float:
    """The share of a question's content words (stemmed) that the sentence also uses."""
    asked = set(terms(question))
    return len(asked & set(terms(sentence))) / len(asked) if asked else 0.0


_WORDS = re.compile(r"[^\W_]+")


class HostText:
    """The text a fact would be planted in, read as the grader reads answers (METHOD.md §11),
    and as plain words (a subject named as "Brightwater's" is still named)."""

    def __init__(self, texts: Iterable[str]) -> None:
        texts = list(dict.fromkeys(texts))  # a document extended by repetition: each page once
        self._graded = " " + " ".join(fuzzy_normalize(t) for t in texts) + " "
        self._lowered = "\n".join(t.lower() for t in texts)

    def states(self, answer: str) -> bool:
        """The answer, normalised, occurs as whole words: an answer taken from here would score."""
        words = fuzzy_normalize(answer)
        return bool(words) and f" {words} " in self._graded

    def names(self, name: str) -> bool:
        """Every word of the name occurs somewhere as a word."""
        words = _WORDS.findall(name.lower())
        return bool(words) and all(self._has_word(w) for w in words)

    def _has_word(self, word: str) -> bool:
        text, at = self._lowered, self._lowered.find(word)
        while at >= 0:
            end = at + len(word)
            if not (at and _is_wordy(text[at - 1])) and not (end < len(text) and _is_wordy(text[end])):
                return True
            at = text.find(word, at + 1)
        return False


def _is_wordy(ch: str) -> bool:
    return ch.isalnum()


def host_conflicts(fact: PlantedFact, host: HostText) -> list[str]:
    """Why the host document could answer this fact without it (empty: it cannot)."""
    reasons = [
        f"the {label} does not name {fact.subject}"
        for label, question in (("question", fact.question), ("paraphrase", fact.paraphrase))
        if not HostText([question]).names(fact.subject)
    ]
    if host.names(fact.subject):
        reasons.append(f"the document already names {fact.subject}")
    planted_elsewhere = HostText(fact.distracters)
    for answer in fact.answers:
        if host.states(answer):
            reasons.append(f"the document already states {answer!r}")
        elif planted_elsewhere.states(answer):
            reasons.append(f"a distracter states {answer!r}")
    return reasons


ATTEMPTS_PER_KIND = 60


def _candidate_seed(seed: int, kind: str, attempt: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{kind}:{attempt}".encode()).digest()[:6], "big")


def plant_fact(host: HostText, seed: int) -> tuple[PlantedFact, int]:
    """The fact of ``seed`` if the host cannot answer it, else the first candidate that it cannot
    (same kind first, then the other kinds, each drawn deterministically from ``seed``); with
    how many candidates were rejected."""
    first = build_fact(seed)
    rejected = 0
    for kind in (first.kind, *sorted(k for k in FACT_KINDS if k != first.kind)):
        for attempt in range(ATTEMPTS_PER_KIND):
            fact = (
                first
                if (kind, attempt) == (first.kind, 0)
                else build_fact(_candidate_seed(seed, kind, attempt), kind)
            )
            if not host_conflicts(fact, host):
                return fact, rejected
            rejected += 1
    raise ConfigError(
        "No fact can be planted in this document: it already states every candidate's answer or names its "
        "subject. Measure it with your own questions instead."
    )
