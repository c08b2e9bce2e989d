"""The Lab: measure whether R&R helps *your* model on *your* document (METHOD.md §12–§13).

- ``haystacks``: test documents with a known answer (planted facts, passages, key–value pairs,
  the user's own questions);
- ``sweep``: every run planned and priced before any call, run through one executor whose
  cache is the run store (never pay twice);
- ``stats``: Wilson intervals, effective length, the failure split, the cost frontier;
- ``presets`` and ``report``.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from rr_core.lab.presets import Preset, default_lengths, depths_for
from rr_core.questions import Question
from rr_core.tokens import TokenCounter

TASKS = {
    "planted": "Your document, with planted facts",
    "passages": "The papers' protocol: passages from a QA file",
    "kv": "Key–value retrieval (generated pairs, or a file of the Lost-in-the-Middle release)",
    "questions": "Your own questions (CSV)",
}


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


def trial_spec(preset: Preset, document: Document | None, **overrides: object) -> TrialSpec:
    """The trial spec of a preset on a document (lengths from the document where the preset
    leaves them open), with overrides."""
    lengths = preset.lengths or (default_lengths(document.total_tokens) if document else (10_000,))
    values: dict[str, object] = {"task": preset.task, "lengths": lengths, "repeats": preset.repeats}
    values.update({k: v for k, v in overrides.items() if v is not None})
    if values["task"] == "kv" and values.get("qa_file") and overrides.get("lengths") is None:
        values["lengths"] = (0,)  # a key–value file: each row's own number of pairs
    return TrialSpec(**values)  # type: ignore[arg-type]


def build_trials(
    spec: TrialSpec,
    preset: Preset,
    document: Document | None,
    counter: TokenCounter,
    *,
    depths: Sequence[float] | None = None,
) -> list[Trial]:
    """The trials of a spec: its test documents, questions and gold pages."""
    cache = PageCounts(counter)

    def depth_list(length: int) -> Sequence[float]:
        return depths if depths is not None else depths_for(preset, length)

    if spec.qa_file is not None and spec.task not in ("passages", "kv"):
        raise ConfigError(
            f"{spec.qa_file.name} would not be read: a QA or key–value file is for the lost-in-the-middle "
            "and key-value presets."
        )
    if spec.task == "planted":
        if document is None:
            raise ConfigError("Planted facts need a document to plant them in.")
        return planted_trials(
            document,
            cache,
            lengths=spec.lengths,
            depths=depth_list,
            repeats=spec.repeats,
            seed=spec.seed,
            paraphrase=spec.paraphrase,
            distracters=spec.distracters,
        )
    if spec.task == "passages":
        if spec.qa_file is None:
            raise ConfigError(
                "The passages protocol needs a QA file in the Lost-in-the-Middle format (JSONL)."
            )
        items = read_qa_jsonl(spec.qa_file)
        return passage_trials(
            items, cache, lengths=spec.lengths, depths=depth_list, repeats=spec.repeats, seed=spec.seed
        )
    if spec.task == "kv":
        rows = read_kv_jsonl(spec.qa_file) if spec.qa_file is not None else ()
        return kv_trials(
            cache, pairs=spec.lengths, depths=depth_list(0), repeats=spec.repeats, seed=spec.seed, rows=rows
        )
    if spec.task == "questions":
        if document is None or not spec.questions:
            raise ConfigError(
                "Your own questions need the document and a CSV of question, answers, gold_pages."
            )
        return question_trials(document, spec.questions)
    raise ConfigError(f"unknown task {spec.task!r}; choose from: {', '.join(TASKS)}")


__all__ = ["TASKS", "Trial", "TrialSpec", "build_trials", "trial_spec"]
