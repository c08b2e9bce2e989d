"""The Lab's tasks as registered values: what each measures on, what it needs, how its trials
are made (``recipes``: one ``TrialRecipe`` per trial, nothing built) and how one trial is built
from its recipe (``build``). ``trial_recipes`` and ``TrialRecipe.build`` dispatch through the
registry and the Lab screen lists it, so a new task is one ``LabTask`` here (and its builder in
``haystacks``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.lab.haystacks import (
    PageCounts,
    PassagePool,
    Trial,
    TrialRecipe,
    build_kv,
    build_passages,
    build_planted,
    build_question,
    building,
    check_kv_sizes,
    check_trial_count,
    choose_rows,
    file_sha256,
    kv_picks,
    kv_rows,
    kv_sizes,
    qa_items,
    question_recipes,
    register_builders,
    shared_counts,
    shared_pool,
    spreads,
    unique_depths,
)
from rr_core.questions import Question
from rr_core.tokens import TokenCounter

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
    unanswerable: bool = False  # SQuAD v2: keep unanswerable questions, scored as abstention ("n/a")


# A task's recipes from a spec (its needs already checked), the document (or None), the
# depths of each length and the token counter: one per trial, in the trials' order (nothing
# built; a QA file's rows are counted, to choose rows that make the lengths asked).
RecipeMaker = Callable[[TrialSpec, Document | None, DepthList, TokenCounter], list[TrialRecipe]]
# Builds one trial from its recipe, with a page-count cache and the document it is on (or None).
OneBuilder = Callable[[TrialRecipe, PageCounts, Document | None], Trial]


@dataclass(frozen=True, slots=True)
class LabTask:
    """One kind of measurement."""

    name: str
    label: str
    recipes: RecipeMaker
    build: OneBuilder
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


def _planted(
    spec: TrialSpec, document: Document | None, depths: DepthList, counter: TokenCounter
) -> list[TrialRecipe]:
    if document is None:
        raise ConfigError(TASKS["planted"].missing)
    lengths = list(dict.fromkeys(spec.lengths))
    check_trial_count(spec.repeats, sum(len(unique_depths(depths, n)) for n in lengths))
    if not any(p.has_text for p in document.pages):
        raise ConfigError("The document has no text to build test documents from.")
    grid = tuple(lengths), tuple(len(unique_depths(depths, n)) for n in lengths)
    return [
        TrialRecipe(
            task="planted",
            length=length,
            depth=depth,
            repeat=repeat,
            seed=spec.seed,
            slot=slot,
            lengths=grid[0],
            depth_counts=grid[1],
            paraphrase=spec.paraphrase,
            distracters=spec.distracters,
            host_sha256=document.sha256,
            host_name=document.name,
        )
        for repeat in range(spec.repeats)
        for length in lengths
        for slot, depth in enumerate(unique_depths(depths, length))
    ]


def _passages(
    spec: TrialSpec, document: Document | None, depths: DepthList, counter: TokenCounter
) -> list[TrialRecipe]:
    path = spec.qa_file
    if path is None:
        raise ConfigError(TASKS["passages"].missing)
    items = qa_items(path, unanswerable=spec.unanswerable)
    lengths = list(dict.fromkeys(spec.lengths))
    spread = spreads(items)

    def points(length: int) -> list[float]:
        return [0.0] if spread else unique_depths(depths, length)  # HotpotQA: golds at regular intervals

    check_trial_count(min(spec.repeats, len(items)), sum(len(points(n)) for n in lengths))
    sha = file_sha256(path)
    longest = max(lengths)

    def recipe(picked: int, length: int = longest, depth: float = 0.0, repeat: int = 0) -> TrialRecipe:
        return TrialRecipe(
            task="passages",
            length=length,
            depth=depth,
            repeat=repeat,
            seed=spec.seed,
            lengths=(longest,),
            pick=picked,
            file=str(path),
            file_sha256=sha,
            unanswerable=spec.unanswerable,
        )

    def pool_of(picked: int) -> PassagePool:
        with building():
            return shared_pool(path, recipe(picked), items, shared_counts(counter))

    rows = choose_rows(items, spec.repeats, spec.seed, lengths, pool_of, path.name)
    return [
        recipe(picked, length, depth, repeat)
        for repeat, picked in enumerate(rows)
        for length in lengths
        for depth in points(length)
    ]


def _kv(
    spec: TrialSpec, document: Document | None, depths: DepthList, counter: TokenCounter
) -> list[TrialRecipe]:
    rows = kv_rows(spec.qa_file) if spec.qa_file is not None else []
    lengths = list(dict.fromkeys(spec.lengths))
    points = unique_depths(depths(0), 0)
    check_trial_count(min(spec.repeats, len(rows)) if rows else spec.repeats, len(lengths) * len(points))
    check_kv_sizes(lengths, rows)
    sha = file_sha256(spec.qa_file) if spec.qa_file is not None else ""
    picks = kv_picks(len(rows), spec.repeats, spec.seed) if rows else []
    recipes = []
    for repeat in range(len(picks) if rows else spec.repeats):
        row = rows[picks[repeat]] if rows else None
        for n in kv_sizes(lengths, row):
            for depth in points:
                recipes.append(
                    TrialRecipe(
                        task="kv",
                        length=n,
                        depth=depth,
                        repeat=repeat,
                        seed=spec.seed,
                        lengths=() if rows else tuple(lengths),
                        pick=picks[repeat] if rows else -1,
                        file=str(spec.qa_file) if rows else "",
                        file_sha256=sha,
                    )
                )
    return recipes


def _questions(
    spec: TrialSpec, document: Document | None, depths: DepthList, counter: TokenCounter
) -> list[TrialRecipe]:
    if document is None:
        raise ConfigError(TASKS["questions"].missing)
    return question_recipes(document, spec.questions)


TASKS: dict[str, LabTask] = {
    task.name: task
    for task in (
        LabTask(
            name="planted",
            label="Your document, with planted facts",
            recipes=_planted,
            build=build_planted,
            needs_document=True,
            plants=True,
            missing="Planted facts need a document to plant them in.",
        ),
        LabTask(
            name="passages",
            label="The papers' protocol: passages from a QA file",
            recipes=_passages,
            build=build_passages,
            reads_file=True,
            needs_file=True,
            drops_passages=True,
            missing="The passages protocol needs a QA file: the Lost-in-the-Middle release's (JSONL), SQuAD v2, "
            "HotpotQA or PubMed.",
            file_prompt="QA file (JSON, JSONL or gzipped): the Lost-in-the-Middle release (ctxs marked isgold / "
            "hasanswer: a 10-, 20- or 30-document file, an oracle file, or the NQ retrieval results with "
            "nq_annotated_gold, as the R&R paper used), SQuAD v2, HotpotQA (distractor setting), or PubMed "
            "questions (question, answer, abstract id, abstract; PubMedQA's layout too)",
        ),
        LabTask(
            name="kv",
            label="Key–value retrieval (generated pairs, or a file of the Lost-in-the-Middle release)",
            recipes=_kv,
            build=build_kv,
            reads_file=True,
            pairs=True,
            file_prompt="Optional: a key–value file of the Lost-in-the-Middle release "
            "(kv-retrieval-75/140/300_keys.jsonl.gz); without one, the pairs are generated",
        ),
        LabTask(
            name="questions",
            label="Your own questions (CSV)",
            recipes=_questions,
            build=build_question,
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


register_builders(lambda name: get_task(name).build)  # what ``TrialRecipe.build`` runs
