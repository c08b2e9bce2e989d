"""Planted facts: a fictional fact sentence to place in a document, with its questions.

The Lab plants facts at controlled depths of a user's document and checks whether each method
finds them. A planted fact comes with two questions — one in the fact's own words, one
paraphrased so that lexical matching has little to hold on to — the answers a grader should
accept, and distracters: sentences on the same subject with other values, to plant elsewhere
so that the right page is not simply the one page about the subject.

Everything is built from a seed, deterministically, from invented names and values.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from rr_core.retrieval import terms


@dataclass(frozen=True, slots=True, kw_only=True)
class PlantedFact:
    """A fact to plant, the questions that ask for it and the sentences that compete with it."""

    kind: str
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
        sentence=f"The new {city} plant of {company} is scheduled to open on {day} {month} {year}.",
        question=f"On what date is the new {city} plant of {company} scheduled to open?",
        paraphrase=f"When will production start at the {city} site?",
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
        sentence=(
            f"Either party may end the distribution agreement with {company} by giving at least "
            f"{_NUMBER_WORDS[days]} ({days}) days' written notice."
        ),
        question=f"How many days' written notice ends the distribution agreement with {company}?",
        paraphrase="How far ahead must someone warn the other side before quitting the arrangement?",
        answers=(f"{_NUMBER_WORDS[days]} ({days}) days", f"{days} days", f"{_NUMBER_WORDS[days]} days"),
        distracters=(
            f"A change to the delivery schedule needs {_NUMBER_WORDS[int(other[0])]} ({other[0]}) days' notice.",
            f"Price lists may be revised on {_NUMBER_WORDS[int(other[1])]} ({other[1]}) days' notice to {company}.",
        ),
    )


def _rate(rng: random.Random) -> PlantedFact:
    company = rng.choice(_COMPANIES)
    tenths = rng.randrange(11, 49)
    rate = f"{tenths / 10:.1f}"
    others = [f"{t / 10:.1f}" for t in rng.sample([t for t in range(11, 49) if t != tenths], 2)]
    return PlantedFact(
        kind="rate",
        sentence=f"Overdue invoices from {company} bear interest at {rate} percent per month.",
        question=f"What interest rate applies to overdue invoices from {company}?",
        paraphrase="What does paying a bill late add each month?",
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
        sentence=f"Disputes with {company} are finally settled by arbitration seated in {city}.",
        question=f"Where is the seat of arbitration for disputes with {company}?",
        paraphrase="In which city would a tribunal hear a disagreement between the parties?",
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
