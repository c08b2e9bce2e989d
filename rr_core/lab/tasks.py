"""The Lab's tasks as registered values: what each measures on, what it needs, how its trials
are built. ``build_trials`` dispatches through the registry and the Lab screen lists it, so a
new task is one ``LabTask`` here (and its builder in ``haystacks``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.lab.haystacks import (
    PageCounts,
    Trial,
    kv_trials,
    passage_trials,
    planted_trials,
    question_trials,
    read_kv_jsonl,
    read_qa_jsonl,
)
from rr_core.questions import Question

# The depths (in % of the document) of one length; a key–value task asks with length 0.
DepthList = Callable[[int], Sequence[float]]


@dataclass(frozen=True, slots=True)
class TrialSpec:
    """What to build trials from, and the grid."""

    task: str
    lengths: tuple[int, ...]
    repeats: int
    seed: int = 0
    paraphrase: bool = False
    distracters: int = 0
    qa_file: Path | None = None
    questions: tuple[Question, ...] = ()


# Builds a task's trials from a spec (its needs already checked), the document (or None),
# a page-count cache and the depths of each length.
Builder = Callable[[TrialSpec, Document | None, PageCounts, DepthList], list[Trial]]


@dataclass(frozen=True, slots=True)
class LabTask:
    """One kind of measurement."""

    name: str
    label: str
    build: Builder
    needs_document: bool = False  # plants in, or asks of, the active document
    reads_file: bool = False  # reads a QA or key–value file of the Lost-in-the-Middle release
    needs_file: bool = False  # ... and cannot run without one
    needs_questions: bool = False  # the user's own questions
    grid: bool = True  # lengths × depths × repeats (False: the document and its questions as they are)
    pairs: bool = False  # lengths count key–value pairs, not tokens; a file's rows may be taken whole
    plants: bool = False  # plants facts (some drawn again where the document already answered)
    drops_passages: bool = False  # leaves out passages that held an accepted answer
    missing: str = ""  # what to say when what it needs is missing
    file_prompt: str = ""  # the screen's upload label for its file


def _planted(spec: TrialSpec, document: Document | None, cache: PageCounts, depths: DepthList) -> list[Trial]:
    if document is None:
        raise ConfigError(TASKS["planted"].missing)
    return planted_trials(
        document,
        cache,
        lengths=spec.lengths,
        depths=depths,
        repeats=spec.repeats,
        seed=spec.seed,
        paraphrase=spec.paraphrase,
        distracters=spec.distracters,
    )


def _passages(
    spec: TrialSpec, document: Document | None, cache: PageCounts, depths: DepthList
) -> list[Trial]:
    if spec.qa_file is None:
        raise ConfigError(TASKS["passages"].missing)
    items = read_qa_jsonl(spec.qa_file)
    return passage_trials(
        items, cache, lengths=spec.lengths, depths=depths, repeats=spec.repeats, seed=spec.seed
    )


def _kv(spec: TrialSpec, document: Document | None, cache: PageCounts, depths: DepthList) -> list[Trial]:
    rows = read_kv_jsonl(spec.qa_file) if spec.qa_file is not None else ()
    return kv_trials(
        cache, pairs=spec.lengths, depths=depths(0), repeats=spec.repeats, seed=spec.seed, rows=rows
    )


def _questions(
    spec: TrialSpec, document: Document | None, cache: PageCounts, depths: DepthList
) -> list[Trial]:
    if document is None:
        raise ConfigError(TASKS["questions"].missing)
    return question_trials(document, spec.questions)


TASKS: dict[str, LabTask] = {
    task.name: task
    for task in (
        LabTask(
            name="planted",
            label="Your document, with planted facts",
            build=_planted,
            needs_document=True,
            plants=True,
            missing="Planted facts need a document to plant them in.",
        ),
        LabTask(
            name="passages",
            label="The papers' protocol: passages from a QA file",
            build=_passages,
            reads_file=True,
            needs_file=True,
            drops_passages=True,
            missing="The passages protocol needs a QA file in the Lost-in-the-Middle format (JSONL).",
            file_prompt="QA file of the Lost-in-the-Middle release (JSONL or .jsonl.gz: question, answers, ctxs "
            "marked isgold / hasanswer; a 10-, 20- or 30-document file, or an oracle file with one passage per "
            "question)",
        ),
        LabTask(
            name="kv",
            label="Key–value retrieval (generated pairs, or a file of the Lost-in-the-Middle release)",
            build=_kv,
            reads_file=True,
            pairs=True,
            file_prompt="Optional: a key–value file of the Lost-in-the-Middle release "
            "(kv-retrieval-75/140/300_keys.jsonl.gz); without one, the pairs are generated",
        ),
        LabTask(
            name="questions",
            label="Your own questions (CSV)",
            build=_questions,
            needs_document=True,
            needs_questions=True,
            grid=False,
            missing="Your own questions need the document and a CSV of question, answers, gold_pages.",
        ),
    )
}


def get_task(name: str) -> LabTask:
    """The task of this name (``ConfigError`` names the choices otherwise)."""
    try:
        return TASKS[name]
    except KeyError:
        raise ConfigError(f"unknown task {name!r}; choose from: {', '.join(TASKS)}") from None
