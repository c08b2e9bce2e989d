"""The offline engine's evaluation set: questions with known answers and pages, scored.

``tests/data/offline_eval.csv`` holds questions written for this evaluation, on the bundled
samples (``sample:<name>``) and on the real documents in ``../shared/data/documents``. A row
with no answers asks for something the document does not say. Each question is put to the
engine as the baseline method's answer call over the whole document, and its reply scored:

- right: an answer that matches a known answer (``fuzzy_match``) cited on a known page; for a
  question the document does not answer, saying "not found";
- not found: "not found" (``found`` false, or an ``n/a`` answer from an engine that predates
  ``found``) to a question the document answers;
- wrong: any other answer, including one given to a question the document does not answer.

Also a measuring tool: ``python tests/offline_eval.py`` prints the counts and each miss
(``--before``: for the engine before issue 15, as ``tests/offline_reference.py`` keeps it).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rr_core.documents import Document, document_from_texts, load_document  # noqa: E402
from rr_core.llm.base import LLMClient, LLMRequest  # noqa: E402
from rr_core.methods import plan_method  # noqa: E402
from rr_core.metrics import fuzzy_match  # noqa: E402
from rr_core.samples import get_sample  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.tokens import TokenCounter, counter_for_model  # noqa: E402

EVAL_CSV = ROOT / "tests" / "data" / "offline_eval.csv"
SHARED_DOCUMENTS = ROOT.parent / "shared" / "data" / "documents"


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One question: where it is asked, its accepted answers (none: not in the document)
    and the pages that state them."""

    source: str
    question: str
    kind: str
    answers: tuple[str, ...]
    pages: tuple[int, ...]

    @property
    def on_sample(self) -> bool:
        return self.source.startswith("sample:")


@dataclass(frozen=True, slots=True)
class Scored:
    """A question, the engine's reply and its verdict: "right", "not found" or "wrong"."""

    item: EvalQuestion
    reply: dict[str, Any]
    verdict: str


def load_set(path: Path = EVAL_CSV) -> list[EvalQuestion]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [
            EvalQuestion(
                source=row["source"],
                question=row["question"],
                kind=row["kind"],
                answers=tuple(a for a in row["answers"].split("|") if a),
                pages=tuple(int(p) for p in row["pages"].split("|") if p),
            )
            for row in csv.DictReader(handle)
        ]


def sample_questions() -> list[EvalQuestion]:
    """The samples' own questions (each answered on one page), scored the same way."""
    return [
        EvalQuestion(f"sample:{name}", q.question, "", q.answers, (q.page,))
        for name in ("contract", "protocol")
        for q in get_sample(name).questions
    ]


@lru_cache(maxsize=16)
def document_of(source: str, counter: TokenCounter) -> Document:
    """The document a question is asked of: a sample, or a file in ../shared/data/documents."""
    if source.startswith("sample:"):
        sample = get_sample(source.split(":", 1)[1])
        return document_from_texts(sample.title, list(sample.pages), counter=counter)
    path = SHARED_DOCUMENTS / source
    return load_document(path.read_bytes(), filename=path.name, counter=counter)


def ask(engine: LLMClient, item: EvalQuestion, counter: TokenCounter) -> dict[str, Any]:
    """The engine's reply to the baseline answer call (the whole document in one prompt)."""
    document = document_of(item.source, counter)
    plan = plan_method(document, item.question, RunSettings(method="baseline"), counter)
    (call,) = plan.calls
    request = LLMRequest(prompt=call.render(), schema=call.schema, model="offline", layout=call.layout)
    reply: dict[str, Any] = json.loads(engine.complete(request).text)
    return reply


def found(reply: dict[str, Any]) -> bool:
    if "found" in reply:
        return bool(reply["found"])
    return str(reply.get("answer", "n/a")).strip().lower() != "n/a"


def cited_pages(reply: dict[str, Any]) -> set[int]:
    pages = [c.get("page") for c in reply.get("citations", [])] or [reply.get("page")]
    return {int(p) for p in pages if str(p).isdigit()}


def verdict(item: EvalQuestion, reply: dict[str, Any]) -> str:
    if not found(reply):
        return "not found" if item.answers else "right"
    if not item.answers:
        return "wrong"
    matches = bool(fuzzy_match(str(reply.get("answer", "")), item.answers))
    on_page = not item.pages or bool(cited_pages(reply) & set(item.pages))
    return "right" if matches and on_page else "wrong"


def evaluate(engine: LLMClient, items: list[EvalQuestion], counter: TokenCounter) -> list[Scored]:
    out = []
    for item in items:
        reply = ask(engine, item, counter)
        out.append(Scored(item, reply, verdict(item, reply)))
    return out


def counts(scored: list[Scored]) -> dict[str, int]:
    tally = Counter(s.verdict for s in scored)
    return {key: tally.get(key, 0) for key in ("right", "not found", "wrong")}


def main() -> None:
    """``python tests/offline_eval.py [-v] [--before]``: the counts, each miss (every question
    with -v); --before scores the engine as it was before issue 15 (``offline_reference``)."""
    from rr_core.llm import OfflineEngine

    counter = counter_for_model("offline")
    engine: LLMClient = OfflineEngine(counter)
    if "--before" in sys.argv:
        sys.path.insert(0, str(ROOT / "tests"))
        from offline_reference import ReferenceEngine

        engine = ReferenceEngine(counter)
    items = load_set()
    if not SHARED_DOCUMENTS.is_dir():
        items = [i for i in items if i.on_sample]
    for title, chosen in (
        ("evaluation set, bundled samples", [i for i in items if i.on_sample]),
        ("evaluation set, ../shared documents", [i for i in items if not i.on_sample]),
        ("the samples' own questions", sample_questions()),
    ):
        if not chosen:
            continue
        scored = evaluate(engine, chosen, counter)
        print(f"{title}: {len(scored)} questions: {counts(scored)}")
        for s in scored:
            if s.verdict != "right" or "-v" in sys.argv:
                answer = str(s.reply.get("answer", ""))[:110]
                print(f"  [{s.verdict}] {s.item.question[:70]} -> {answer!r} p.{s.reply.get('page')}")


if __name__ == "__main__":
    main()
