"""The sample documents: fictional texts stored as data, with questions whose answers are known.

Each sample is a folder under ``rr_core/data/samples/<name>/``: ``sample.json`` (title,
description and the questions, each with its accepted answers and the one page that states
them) and ``pages-*.txt`` (the page texts, in file-name order, pages separated by a form
feed). Every company, person, drug and number in them is invented. Other pages talk about
the same subjects and state near-miss values, so finding the right page takes more than
matching a keyword.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable

PAGE_BREAK = "\f"


@dataclass(frozen=True, slots=True)
class SampleQuestion:
    """A question whose answer is stated on exactly one page (1-based)."""

    question: str
    answers: tuple[str, ...]
    page: int


@dataclass(frozen=True, slots=True)
class Sample:
    """A sample document: its page texts and the questions planted in it."""

    name: str
    title: str
    description: str
    pages: tuple[str, ...]
    questions: tuple[SampleQuestion, ...]


def _folder() -> Traversable:
    return files("rr_core").joinpath("data", "samples")


def list_samples() -> list[str]:
    """The names of the samples, in display order."""
    return sorted(entry.name for entry in _folder().iterdir() if entry.joinpath("sample.json").is_file())


def split_pages(text: str) -> list[str]:
    """Page texts from a file whose pages are separated by form feeds (blank edges trimmed)."""
    return [page.strip("\n") for page in text.split(PAGE_BREAK) if page.strip()]


@lru_cache(maxsize=4)
def get_sample(name: str) -> Sample:
    """The sample called ``name``; raises ``ValueError`` for an unknown name."""
    names = list_samples()
    if name not in names:
        raise ValueError(f"unknown sample {name!r}; choose one of: {', '.join(names)}")
    folder = _folder().joinpath(name)
    meta = json.loads(folder.joinpath("sample.json").read_text(encoding="utf-8"))
    parts = sorted(
        (
            entry
            for entry in folder.iterdir()
            if entry.name.startswith("pages-") and entry.name.endswith(".txt")
        ),
        key=lambda entry: entry.name,
    )
    pages = tuple(page for part in parts for page in split_pages(part.read_text(encoding="utf-8")))
    questions = tuple(
        SampleQuestion(question=q["question"], answers=tuple(q["answers"]), page=int(q["page"]))
        for q in meta["questions"]
    )
    return Sample(
        name=name, title=meta["title"], description=meta["description"], pages=pages, questions=questions
    )


def questions_middle_first(name: str) -> list[SampleQuestion]:
    """A sample's questions, those deepest in the middle of the document first: where
    long-context models lose details, so where R&R has the most to show."""
    sample = get_sample(name)
    middle = (len(sample.pages) + 1) / 2
    return sorted(sample.questions, key=lambda q: (abs(q.page - middle), q.page))
