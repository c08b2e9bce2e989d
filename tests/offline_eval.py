"""The offline engine's evaluation set: questions with known answers and pages, scored.

``tests/data/offline_eval.csv`` holds questions written for this evaluation, on the bundled
samples (``sample:<name>``), on the real documents in ``../shared/data/documents`` (a file's
name) and on the review contracts (``review/contracts/<file>``, a path under ``../shared/data``;
``RR_SHARED_DATA`` names another place for that folder). A row with no answers asks for
something the document does not say; rows whose document is absent are left out. Each question is put to the
engine as the baseline method's answer call over the whole document, and its reply scored:

- right: an answer that matches a known answer (``fuzzy_match``) cited on a known page; for a
  question the document does not answer, saying "not found";
- not found: "not found" (``found`` false, or an ``n/a`` answer from an engine that predates
  ``found``) to a question the document answers;
- wrong: any other answer, including one given to a question the document does not answer.

Also a measuring tool: ``python tests/offline_eval.py`` prints the counts and each miss
(``--before [REV]``: for the engine as it was at a git revision, main's ``05f8425`` by default,
checked out into a temporary folder and run on the same set).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The engine measured: this checkout's, or another revision's (``--before``).
CODE = os.environ.get("RR_EVAL_CODE") or str(ROOT)
if CODE not in sys.path:
    sys.path.insert(0, CODE)

from rr_core.documents import Document, document_from_texts, load_document  # noqa: E402
from rr_core.llm.base import LLMClient, LLMRequest  # noqa: E402
from rr_core.methods import plan_method  # noqa: E402
from rr_core.metrics import fuzzy_match  # noqa: E402
from rr_core.samples import get_sample  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.tokens import TokenCounter, counter_for_model  # noqa: E402

EVAL_CSV = ROOT / "tests" / "data" / "offline_eval.csv"
SHARED_DATA = Path(os.environ.get("RR_SHARED_DATA") or ROOT.parent / "shared" / "data")
SHARED_DOCUMENTS = SHARED_DATA / "documents"
BEFORE = "05f8425"  # main's engine before issue 23's reader work


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

    @property
    def on_contract(self) -> bool:
        return self.source.startswith("review/")

    def available(self) -> bool:
        """Whether its document is here (a sample always is)."""
        return self.on_sample or source_path(self.source).is_file()


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


def source_path(source: str) -> Path:
    """Where a question's document is: a path under ../shared/data, or a bare file name in
    its documents folder."""
    return SHARED_DATA / source if "/" in source else SHARED_DOCUMENTS / source


@lru_cache(maxsize=64)
def document_of(source: str, counter: TokenCounter) -> Document:
    """The document a question is asked of: a sample, or a file under ../shared/data."""
    if source.startswith("sample:"):
        sample = get_sample(source.split(":", 1)[1])
        return document_from_texts(sample.title, list(sample.pages), counter=counter)
    path = source_path(source)
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


def band(item: EvalQuestion, reply: dict[str, Any], counter: TokenCounter) -> str:
    """The confidence band the runner would give this reply (quotes checked on their pages, the
    reader's own support, ``rr_core.confidence``): high, check or none."""
    from rr_core.confidence import rate
    from rr_core.plans import Citation, Outcome
    from rr_core.quotes import check_quote
    from rr_core.support import offline_support

    document = document_of(item.source, counter)
    citations = []
    for cited in reply.get("citations", []):
        page = int(cited["page"]) if str(cited.get("page")).isdigit() else None
        text = (
            document.pages[page - 1].text if page is not None and 1 <= page <= len(document.pages) else None
        )
        citations.append(Citation(page=page, quote=str(cited.get("quote", "")),
                                  quote_check=check_quote(str(cited.get("quote", "")), text).status))  # fmt: skip
    outcome = Outcome(question=item.question, answer=str(reply.get("answer", "")), found=found(reply),
                      citations=citations, absent_by="" if found(reply) else "reader")  # fmt: skip
    if outcome.found:
        outcome.support, outcome.support_reason = offline_support(
            item.question, outcome.answer, [c.quote for c in citations]
        )
    return rate(outcome)[0]


def high_band(scored: list[Scored], counter: TokenCounter) -> str:
    """How many answers are in the high band, and how many of them are right."""
    high = [s for s in scored if band(s.item, s.reply, counter) == "high"]
    right = sum(1 for s in high if s.verdict == "right")
    share = f"{right / len(high):.0%}" if high else "n/a"
    return f"high band {len(high)} of {len(scored)} questions, {right} right ({share})"


def counts(scored: list[Scored]) -> dict[str, int]:
    tally = Counter(s.verdict for s in scored)
    return {key: tally.get(key, 0) for key in ("right", "not found", "wrong")}


def run_before(revision: str) -> None:
    """This script again, on the engine as it was at ``revision`` (its ``rr_core`` checked out
    into a temporary folder), on this checkout's evaluation set."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "rr_core"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        argv = [a for a in sys.argv[1:] if a not in ("--before", revision)]
        env = {**os.environ, "RR_EVAL_CODE": folder}
        subprocess.run([sys.executable, __file__, *argv], env=env, check=True)


def main() -> None:
    """``python tests/offline_eval.py [-v] [--before [REV]]``: the counts, each miss (every
    question with -v); --before scores the engine as it was at REV (main's 05f8425 by default)."""
    if "--before" in sys.argv:
        at = sys.argv.index("--before") + 1
        revision = sys.argv[at] if at < len(sys.argv) and not sys.argv[at].startswith("-") else BEFORE
        print(f"the engine at {revision}:")
        run_before(revision)
        return
    from rr_core.llm import OfflineEngine

    counter = counter_for_model("offline")
    engine: LLMClient = OfflineEngine(counter)
    items = [i for i in load_set() if i.available()]
    everything: list[Scored] = []
    for title, chosen in (
        ("evaluation set, bundled samples", [i for i in items if i.on_sample]),
        ("evaluation set, ../shared documents", [i for i in items if not i.on_sample and not i.on_contract]),
        ("evaluation set, review contracts", [i for i in items if i.on_contract]),
        ("the samples' own questions", sample_questions()),
    ):
        if not chosen:
            continue
        scored = evaluate(engine, chosen, counter)
        if title.startswith("evaluation set"):
            everything += scored
        print(f"{title}: {len(scored)} questions: {counts(scored)}")
        for s in scored:
            if s.verdict != "right" or "-v" in sys.argv:
                answer = str(s.reply.get("answer", ""))[:110]
                print(f"  [{s.verdict}] {s.item.question[:70]} -> {answer!r} p.{s.reply.get('page')}")
    print(
        f"evaluation set, all {len(everything)} questions: {counts(everything)}; {high_band(everything, counter)}"
    )


if __name__ == "__main__":
    main()
