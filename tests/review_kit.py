"""Small generated contracts, their columns and answer key, and a stub responder that answers
review questions from the pages it was sent (quoting them word for word), for the review tests.

Three contracts of four short pages each (text files, a page per form feed): what each says
of the governing law, the date it was made, termination for convenience and the liability
cap is on pages 1 and 2 (where the stub's default retrieval looks), the rest is filler.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import filler_text

from tests.stub_server import Reply, prompt_of, questions_in, schema_name_of

COLUMNS_CSV = (
    "question,type\n"
    "Which jurisdiction's law governs this agreement?,text\n"
    "On what date was this agreement made?,date\n"
    '"May a party terminate this agreement for convenience, without cause?",yes-no\n'
    "What is the cap on each party's liability?,amount\n"
)

# name -> (law, date as written, terminate sentence or "", cap sentence or "")
CONTRACTS: dict[str, tuple[str, str, str, str]] = {
    "alpha.txt": (
        "Delaware",
        "the 1st day of March, 2020",
        "Either party may terminate this Agreement for convenience upon thirty days written notice.",
        "The aggregate liability of each party is capped at $2,000,000.",
    ),
    "beta.txt": (
        "New York",
        "11/1/02",
        "",
        "The aggregate liability of each party is capped at USD 500,000.",
    ),
    "gamma.txt": (
        "California",
        "June 2, 2008",
        "Either party may terminate this Agreement for convenience upon ninety days written notice.",
        "",
    ),
}

# The key: right for alpha and beta, one wrong law for gamma (the key says Texas), and no row
# at all for gamma's cap (a cell the key does not mark).
ANSWERS_CSV = (
    "document,question,answers\n"
    "alpha.txt,Which jurisdiction's law governs this agreement?,Delaware\n"
    'alpha.txt,On what date was this agreement made?,"3/1/20 | March 1, 2020"\n'
    'alpha.txt,"May a party terminate this agreement for convenience, without cause?",Yes\n'
    'alpha.txt,What is the cap on each party\'s liability?,"$2,000,000"\n'
    "beta.txt,Which jurisdiction's law governs this agreement?,New York\n"
    "beta.txt,On what date was this agreement made?,11/1/02\n"
    'beta.txt,"May a party terminate this agreement for convenience, without cause?",No\n'
    "beta.txt,What is the cap on each party's liability?,500000 dollars\n"
    "gamma.txt,Which jurisdiction's law governs this agreement?,Texas\n"
    "gamma.txt,On what date was this agreement made?,2008-06-02\n"
    'gamma.txt,"May a party terminate this agreement for convenience, without cause?",Yes\n'
)


def contract_pages(name: str, seed: int = 1) -> list[str]:
    """The four pages of one generated contract."""
    import random

    law, made, terminate, cap = CONTRACTS[name]
    rng = random.Random(seed + len(name))
    title = name.split(".")[0].upper()
    first = (
        f"{title} SUPPLY AGREEMENT. This Supply Agreement is made as of {made} between Acme Corp and "
        f"{title.title()} LLC. {filler_text(rng, 6)}"
    )
    second = " ".join(
        part
        for part in (
            f"This Agreement shall be governed by the laws of the State of {law}.",
            filler_text(rng, 4),
            terminate,
            cap,
            filler_text(rng, 4),
        )
        if part
    )
    return [first, second, filler_text(rng, 12), filler_text(rng, 12)]


def write_contracts(folder: Path, names: tuple[str, ...] = tuple(CONTRACTS)) -> list[Path]:
    """The contracts as text files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        path = folder / name
        path.write_text("\f".join(contract_pages(name)), encoding="utf-8")
        paths.append(path)
    return paths


def contract_bytes(name: str) -> bytes:
    return "\f".join(contract_pages(name)).encode()


# ---- the stub's model: answers from the pages it was sent -----------------------------------

_PAGE = re.compile(r"^<PAGE (\d+)>$", re.MULTILINE)
_FACTS = (  # a word of the question -> the sentence that answers it, and the answer in it
    ("governs", re.compile(r"This Agreement shall be governed by the laws of the State of ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\.")),
    ("date", re.compile(r"This Supply Agreement is made as of (.+?) between")),
    ("terminate", re.compile(r"Either party may terminate this Agreement for convenience[^.]*\.")),
    ("cap", re.compile(r"The aggregate liability of each party is capped at ((?:USD |\$)[\d,]+)\.")),
)  # fmt: skip


def page_of(prompt: str, at: int) -> str:
    """The number of the page tag before position ``at`` of the prompt ("n/a" before any)."""
    tags = [m for m in _PAGE.finditer(prompt) if m.start() < at]
    return tags[-1].group(1) if tags else "n/a"


def answer_reply(body: Any) -> str:
    """The answer call's JSON: the fact the question asks for, quoted from the page it is on,
    or "not stated" when no page sent holds it."""
    prompt = prompt_of(body)
    questions = questions_in(prompt)
    question = questions[-1] if questions else ""
    low = question.lower()
    for word, pattern in _FACTS:
        if word not in low:
            continue
        found = pattern.search(prompt)
        if found is None:
            break
        sentence = found.group(0)
        quote = sentence if word != "date" else f"made as of {found.group(1)}"
        answer = "Yes" if word == "terminate" else found.group(1)
        citation = {"page": page_of(prompt, found.start()), "quote": quote.rstrip(".")}
        return json.dumps({"question": question, "answer": answer, "found": True, "citations": [citation]})
    return json.dumps(
        {"question": question, "answer": "not stated in the document", "found": False, "citations": []}
    )


def responder(path: str, body: Any) -> Reply:
    """The stub's replies: the answer shape from the pages sent; retrievals as the default."""
    if schema_name_of(body) == "answer":
        return Reply(text=answer_reply(body))
    return Reply()


MODEL_CALL_PATHS = ("/v1/responses", "/v1/chat/completions", "/v1/messages")


def sync_calls(stub: Any) -> int:
    """Model calls the stub answered one by one (not in a batch)."""
    return sum(
        1
        for r in stub.requests
        if r.path.split("?")[0] in MODEL_CALL_PATHS or r.path.split("?")[0].endswith(":generateContent")
    )


def created_batches(stub: Any) -> int:
    return sum(
        1
        for r in stub.requests
        if r.method == "POST" and r.path.split("?")[0] in ("/v1/batches", "/v1/messages/batches")
    )
