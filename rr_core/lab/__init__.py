"""The Lab: measure whether R&R helps *your* model on *your* document (METHOD.md §12–§13).

- ``haystacks``: test documents with a known answer (planted facts, passages, key–value pairs,
  the user's own questions);
- ``sweep``: every run planned and priced before any call, run through one executor whose
  cache is the run store (never pay twice);
- ``stats``: Wilson intervals, effective length, the failure split, the cost frontier;
- ``presets`` and ``report``.
"""

from __future__ import annotations

import hashlib
import math
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.lab.haystacks import (
    LENGTH_TOLERANCE,
    MAX_TRIALS,
    OTHER_QUESTIONS_SPREAD,
    Trial,
    TrialFacts,
    TrialRecipe,
    file_format,
)
from rr_core.lab.presets import Preset, default_lengths, depths_for
from rr_core.lab.tasks import TASKS, LabTask, TrialSpec, get_task
from rr_core.tokens import TokenCounter

# Bounds on a grid, checked before any trial is built (a million repeats would take minutes
# and gigabytes just to plan): lengths in tokens (key-value: pairs), repeats, trials in all.
MAX_LENGTH_TOKENS = 2_000_000
MAX_KV_PAIRS = 10_000
MAX_REPEATS = 100
MAX_DISTRACTERS = 10
# The tokens of all test documents together (trials × length): each trial is a document in
# memory, about 5.5 bytes a token (2,000,000 tokens × 500 trials took 37 s and 5.5 GB).
MAX_BUILT_TOKENS = 50_000_000
# A key–value pair (two UUIDs as JSON) is about 40 tokens; a file's rows (length 0) hold a
# few hundred pairs at most.
KV_PAIR_TOKENS = 40
KV_FILE_ROW_PAIRS = 300
# A question's own passages (length 0): the Lost-in-the-Middle release's 30-document rows make
# about 4,500 tokens.
ALL_PASSAGES_TOKENS = 5_000


def keep_qa_file(name: str, data: bytes, folder: Path | None = None) -> tuple[Path, str]:
    """An uploaded QA or key–value file written where a sweep reads it, with its content's
    SHA-256: under ``folder`` (default: ``uploads_folder()``), in a folder of its content, by its
    own name. Another file of the same name (another session on a team's server) is another
    path: never this one overwritten. Written whole or not at all (a temporary file, readable by
    this user only, renamed), and written again whenever the file there differs from the upload."""
    digest = hashlib.sha256(data).hexdigest()
    place = (folder or uploads_folder()) / digest[:32]
    place.mkdir(parents=True, exist_ok=True)
    leaf = Path(name).name
    path = place / (leaf if leaf not in ("", ".", "..") else "questions")  # a name, never a folder
    try:
        kept = path.is_file() and path.read_bytes() == data
    except OSError:
        kept = False
    if not kept:
        handle, temporary = tempfile.mkstemp(dir=place, prefix=".upload-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return path, digest


def uploads_folder() -> Path:
    """This user's folder for the Lab's uploaded files, in the temp folder, readable by this user
    only: ``ConfigError`` when another user owns it (a shared ``/tmp``: their files, or a folder
    set up to read or swap this user's uploads, are never used)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    folder = Path(tempfile.gettempdir()) / (f"rr_studio_lab-{uid}" if uid is not None else "rr_studio_lab")
    folder.mkdir(mode=0o700, exist_ok=True)
    if uid is not None:
        found = folder.lstat()
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != uid:
            raise ConfigError(
                f"{folder} is not a folder of this user's: the Lab keeps uploaded files there. Remove it, "
                "or set TMPDIR to a folder of your own."
            )
        if found.st_mode & 0o077:
            folder.chmod(0o700)
    return folder


def trial_spec(preset: Preset, document: Document | None, **overrides: object) -> TrialSpec:
    """The trial spec of a preset on a document (lengths from the document where the preset
    leaves them open), with overrides."""
    lengths = preset.lengths or (default_lengths(document.total_tokens) if document else (10_000,))
    values: dict[str, object] = {"task": preset.task, "lengths": lengths, "repeats": preset.repeats}
    values.update({k: v for k, v in overrides.items() if v is not None})
    qa_file = values.get("qa_file")
    if isinstance(qa_file, Path) and values["task"] == "planted" and file_format(qa_file) != "kv":
        # A grid of planted facts (paper-grid, quick ...) given a QA file: the file's questions,
        # built the paper's way, at the preset's lengths and depths.
        values["task"] = "passages"
    if get_task(str(values["task"])).pairs and values.get("qa_file") and overrides.get("lengths") is None:
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
    """The trials of a spec, all built: their test documents, questions and gold pages (a
    sweep builds them one at a time from ``trial_recipes`` instead)."""
    return [r.build(counter, document) for r in trial_recipes(spec, preset, document, counter, depths=depths)]


def trial_recipes(
    spec: TrialSpec,
    preset: Preset,
    document: Document | None,
    counter: TokenCounter,
    *,
    depths: Sequence[float] | None = None,
) -> list[TrialRecipe]:
    """The recipes of a spec's trials, in the order the trials read (``ConfigError``, before
    any work, for a grid that cannot work or is too large: ``check_grid``). Nothing is built:
    a file is read (once per process), a document's pages are checked."""

    def depth_list(length: int) -> Sequence[float]:
        return depths if depths is not None else depths_for(preset, length)

    task = get_task(spec.task)
    if spec.qa_file is not None and not task.reads_file:
        raise ConfigError(
            f"{spec.qa_file.name} would not be read: a QA or key–value file is for the lost-in-the-middle "
            "and key-value presets."
        )
    check_grid(spec, depth_list)
    if (
        (task.needs_document and document is None)
        or (task.needs_file and spec.qa_file is None)
        or (task.needs_questions and not spec.questions)
    ):
        raise ConfigError(task.missing)
    recipes = task.recipes(spec, document, depth_list, counter)
    ids = [r.trial_id for r in recipes]
    if len(set(ids)) != len(ids):
        raise RuntimeError("bug: two test documents share a trial id")
    return recipes


def check_grid(spec: TrialSpec, depth_list: Callable[[int], Sequence[float]]) -> None:
    """One-line ``ConfigError`` for lengths, depths, repeats or distracters that cannot work,
    or a grid of more than ``MAX_TRIALS`` trials or ``MAX_BUILT_TOKENS`` tokens of test
    documents; cheap (nothing is built)."""
    task = get_task(spec.task)
    if not task.grid:
        return  # the document and its questions: no grid
    kv = task.pairs
    unit, most = ("key–value pairs", MAX_KV_PAIRS) if kv else ("tokens", MAX_LENGTH_TOKENS)
    # A key–value file's rows may be taken whole: 0 pairs means all of a row's; 0 tokens, all of
    # a question's own passages.
    least = 0 if task.reads_file and spec.qa_file is not None else 1
    if not spec.lengths:
        raise ConfigError("Give at least one length.")
    for length in spec.lengths:
        if not least <= length <= most:
            whole = (
                (" (0: all of the file's pairs)" if kv else " (0: all of each question's passages)")
                if least == 0
                else ""
            )
            raise ConfigError(f"Length {length:,}: give {unit} from {least} to {most:,}{whole}.")
    if not 1 <= spec.repeats <= MAX_REPEATS:
        raise ConfigError(f"Repeats {spec.repeats:,}: give 1 to {MAX_REPEATS} trials per cell.")
    if not 0 <= spec.distracters <= MAX_DISTRACTERS:
        raise ConfigError(f"Distracters {spec.distracters}: give 0 to {MAX_DISTRACTERS}.")
    total = built = 0
    for length in spec.lengths:
        points = depth_list(0 if kv else length)
        if not points:
            raise ConfigError("Give at least one depth.")
        for depth in points:
            if not (math.isfinite(depth) and 0 <= depth <= 100):
                raise ConfigError(f"Depth {depth:g}: give a percentage of the document from 0 to 100.")
        total += len(points) * spec.repeats
        tokens = (length or KV_FILE_ROW_PAIRS) * KV_PAIR_TOKENS if kv else (length or ALL_PASSAGES_TOKENS)
        built += len(points) * spec.repeats * tokens
    if total > MAX_TRIALS:
        raise ConfigError(
            f"The grid makes {total:,} trials; at most {MAX_TRIALS:,} at a time. "
            "Use fewer lengths, depths or repeats."
        )
    if built > MAX_BUILT_TOKENS:
        raise ConfigError(
            f"The grid builds about {built:,} tokens of test documents (trials × length); at most "
            f"{MAX_BUILT_TOKENS:,} at a time. Use shorter lengths, or fewer depths or repeats."
        )


def trial_notes(spec: TrialSpec, trials: Sequence[Trial | TrialRecipe | TrialFacts]) -> list[str]:
    """What the built trials differ in from what was asked: repeats capped to a file's rows (that
    make the lengths), depths not varied (HotpotQA)."""
    notes: list[str] = []
    if any(getattr(t, "construction", "") == OTHER_QUESTIONS_SPREAD for t in trials):
        notes.append(
            "HotpotQA: each question's supporting paragraphs are spread at regular intervals, so the depths "
            "asked are not varied (000 §4.1); every gold page is on the trial."
        )
    off = sorted(
        {
            (t.length, tokens)
            for t in trials
            if t.task == "planted"
            and (tokens := getattr(t, "tokens", 0))
            and abs(tokens - t.length) > LENGTH_TOLERANCE * t.length
        }
    )
    if off:
        shown = ", ".join(f"{n:,} tokens built for {length:,}" for length, n in off[:3])
        notes.append(
            f"The document's pages are never split, so some lengths cannot be made within "
            f"{LENGTH_TOLERANCE:.0%}: {shown}{' …' if len(off) > 3 else ''} (each trial records its built "
            "tokens; ask longer lengths for cells that are what they say)."
        )
    used = len({t.repeat for t in trials})
    if spec.qa_file is not None and 0 < used < spec.repeats:
        notes.append(
            f"{spec.repeats:,} repeats asked, but {spec.qa_file.name} has {used:,} questions that make these "
            f"lengths: {used:,} repeats were built (each repeat asks another question of the file)."
        )
    return notes


__all__ = [
    "MAX_BUILT_TOKENS",
    "MAX_TRIALS",
    "TASKS",
    "LabTask",
    "Trial",
    "TrialFacts",
    "TrialRecipe",
    "TrialSpec",
    "build_trials",
    "check_grid",
    "get_task",
    "trial_notes",
    "trial_recipes",
    "trial_spec",
]
