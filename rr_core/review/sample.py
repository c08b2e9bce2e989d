"""A generated sample corpus for the Review screen: a few invented contracts, a playbook that
asks the same five questions of each, and the answer key the generator knows.

Nothing here is a real agreement: the parties, places, dates and sums are drawn from fixed
lists with a seeded generator, so the corpus is the same bytes on every machine (and read once
into the document store, by content hash). The contracts are plain text, pages split by form
feeds, the facts each question asks for stated once, somewhere past the first page, among
pages of invented boilerplate. One file is deliberately damaged (a PDF cut short) to show how a
file that cannot be read is listed while the others go on.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from datetime import date

from rr_core.review.columns import AnswerType, Column
from rr_core.review.corpus import Item

SAMPLE_SEED = 17
SAMPLE_DOCUMENTS = 6
DAMAGED_NAME = "damaged-scan.pdf"

COLUMNS: tuple[Column, ...] = (
    Column("Which jurisdiction's law governs this agreement?", AnswerType.TEXT),
    Column("On what date was this agreement made?", AnswerType.DATE),
    Column("May a party terminate this agreement for convenience, without cause?", AnswerType.YES_NO),
    Column("What is the cap on either party's liability?", AnswerType.AMOUNT),
    Column("Does the agreement restrict assignment without the other party's consent?", AnswerType.YES_NO),
)

_PARTIES = (
    ("Halvorsen Marine Supply AS", "Quillfeather Logistics Ltd"),
    ("Brightwater Analytics Inc.", "Orchard Lane Bakeries LLC"),
    ("Tamsin Robotics GmbH", "Calloway Freight Partners"),
    ("Northfold Paper Mills", "Verity Clinical Software Corp."),
    ("Kestrel Aviation Services", "Marlowe & Pike Textiles"),
    ("Juniper Ridge Energy Co.", "Saltmarsh Data Centres plc"),
    ("Amberline Pharmaceuticals", "Fenwick Harbour Storage Inc."),
    ("Oakhurst Instruments Ltd", "Pellucid Water Systems SA"),
)
_LAWS = (
    "Delaware",
    "New York",
    "England and Wales",
    "California",
    "Ontario",
    "Texas",
    "Illinois",
    "Scotland",
)
_KINDS = ("Supply Agreement", "Services Agreement", "Distribution Agreement", "Licence Agreement")
_CAPS = (250_000, 500_000, 1_000_000, 2_500_000, 750_000, 1_200_000)
_FILLER = (
    "The Supplier shall keep records of every delivery made under this Agreement and shall make them "
    "available to the Customer on reasonable notice during normal business hours.",
    "Each party shall appoint a representative who shall be the first point of contact for day-to-day "
    "matters and who may attend the quarterly review meetings described in the Schedule.",
    "Invoices are payable within forty-five days of receipt. Amounts in dispute may be withheld while "
    "the parties resolve the dispute in good faith under the escalation procedure.",
    "The specifications in the Schedule may be changed only by a written change order signed by both "
    "representatives, stating the effect of the change on price and delivery dates.",
    "Each party shall comply with the laws that apply to its performance, including those on export "
    "control, data protection and the prevention of bribery.",
    "Notices shall be in writing and delivered by hand, by courier or by email to the addresses the "
    "parties give each other, and take effect on receipt.",
    "The Customer may inspect the Supplier's premises once a year, at its own cost, to check that the "
    "quality procedures described in the Schedule are followed.",
    "Neither party is liable for a delay caused by events beyond its reasonable control, provided it "
    "tells the other party promptly and does what it reasonably can to limit the delay.",
    "Confidential information received under this Agreement shall be used only for its purposes and "
    "shall be returned or destroyed when the Agreement ends.",
    "The headings in this Agreement are for convenience only and do not affect its interpretation; the "
    "Schedules form part of it.",
)


@dataclass(frozen=True, slots=True)
class SampleCorpus:
    """The generated files (one damaged), the playbook and the answer key, as CSV texts."""

    items: tuple[Item, ...]
    columns: tuple[Column, ...]
    answers_csv: str
    description: str


def _money(amount: int) -> str:
    return f"${amount:,}"


def _contract(number: int, rng: random.Random) -> tuple[str, str, dict[str, str]]:
    """One contract's file name, text and known answers (by question)."""
    first, second = _PARTIES[number % len(_PARTIES)]
    law = _LAWS[number % len(_LAWS)]
    kind = _KINDS[number % len(_KINDS)]
    made = date(2015 + number % 9, 1 + (number * 5) % 12, 1 + (number * 7) % 27)
    convenience = number % 2 == 0
    cap = _CAPS[number % len(_CAPS)]
    restricts = number % 3 != 1
    pages: list[list[str]] = [[] for _ in range(4 + number % 3)]
    pages[0] = [
        f"{kind.upper()}",
        f'This {kind} is made on {made:%B} {made.day}, {made.year} between {first} (the "Supplier") and '
        f'{second} (the "Customer").',
        "The parties agree as follows.",
    ]
    clauses = [
        f"Governing law. This Agreement and any dispute arising out of it shall be governed by the laws "
        f"of {law}.",
        (
            "Termination for convenience. Either party may terminate this Agreement for convenience, without "
            "cause, by giving the other party ninety days' written notice."
            if convenience
            else "Termination. Either party may terminate this Agreement only for a material breach that the "
            "other party fails to remedy within thirty days of written notice."
        ),
        f"Limitation of liability. Each party's total liability under this Agreement shall not exceed "
        f"{_money(cap)} in the aggregate.",
        (
            "Assignment. Neither party may assign or transfer this Agreement without the prior written consent "
            "of the other party."
            if restricts
            else "Assignment. Either party may assign this Agreement to any of its affiliates or to a buyer of "
            "its business by written notice to the other party."
        ),
    ]
    for clause in clauses:  # each fact once, on a page after the first
        pages[rng.randrange(1, len(pages))].append(clause)
    for page in pages:
        for _ in range(rng.randint(5, 8)):
            page.insert(rng.randrange(0, len(page) + 1) if page is not pages[0] else len(page),
                        rng.choice(_FILLER))  # fmt: skip
    text = "\f".join("\n\n".join(page) for page in pages) + "\n"
    name = f"{number + 1:02d}-{kind.split()[0].lower()}-{first.split()[0].lower()}.txt"
    answers = {
        COLUMNS[0].question: law,
        COLUMNS[1].question: f"{made.isoformat()} | {made:%B} {made.day}, {made.year}",
        COLUMNS[2].question: "Yes" if convenience else "No",
        COLUMNS[3].question: _money(cap),
        COLUMNS[4].question: "Yes" if restricts else "No",
    }
    return name, text, answers


def sample_corpus(documents: int = SAMPLE_DOCUMENTS, *, damaged: bool = True) -> SampleCorpus:
    """The generated sample corpus: ``documents`` contracts (and, with ``damaged``, one PDF cut
    short), the same on every call."""
    rng = random.Random(SAMPLE_SEED)
    items: list[Item] = []
    key = io.StringIO()
    writer = csv.writer(key, lineterminator="\n")
    writer.writerow(["document", "question", "answers"])
    for number in range(documents):
        name, text, answers = _contract(number, rng)
        items.append(Item(name, text.encode("utf-8")))
        for question, accepted in answers.items():
            writer.writerow([name, question, accepted])
    if damaged:
        items.append(
            Item(DAMAGED_NAME, b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<<")
        )
    return SampleCorpus(
        items=tuple(items),
        columns=COLUMNS,
        answers_csv=key.getvalue(),
        description=(
            f"{documents} generated contracts (invented parties, places, dates and sums; plain text)"
            + (", and one PDF cut short to show how a damaged file is listed" if damaged else "")
            + ". The playbook asks five questions of each; the answer key is the generator's own."
        ),
    )
