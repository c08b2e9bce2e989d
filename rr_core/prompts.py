"""The prompt templates (our own words, METHOD.md §2–§8) and the page tagging.

Everything here is pure string work: no tokenizer, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# ---- Tag neutralisation --------------------------------------------------------------
#
# Page text may contain strings that look like our tags ("</PAGE 3>", "<INSTRUCTIONS>").
# Before tagging, the "<" of each such string becomes "‹" (U+2039), which no tag uses, and
# any "‹" already in the text is doubled so that the change can be undone exactly.

_GUARD = "\u2039"
_TAG_LIKE = re.compile(r"<(?=\s*/?\s*(?:page|document|instructions))", re.IGNORECASE)
_UNESCAPE = re.compile(_GUARD + "{1,2}")


def neutralize(text: str) -> str:
    """Make tag-like strings in page text inert; ``restore`` undoes it exactly."""
    if "<" not in text and _GUARD not in text:
        return text
    return _TAG_LIKE.sub(_GUARD, text.replace(_GUARD, _GUARD * 2))


def restore(text: str) -> str:
    """Undo ``neutralize``."""
    if _GUARD not in text:
        return text
    return _UNESCAPE.sub(lambda m: _GUARD if len(m.group()) == 2 else "<", text)


def page_open(number: int) -> str:
    """The opening tag of a page."""
    return f"<PAGE {number}>"


def page_close(number: int) -> str:
    """The closing tag of a page."""
    return f"</PAGE {number}>"


def tag_page(number: int, text: str) -> str:
    """One page wrapped in its tags, its text neutralised."""
    return f"{page_open(number)}\n{neutralize(text)}\n{page_close(number)}"


_PAGE_BLOCK = re.compile(r"<PAGE (\d+)>\n(.*?)\n</PAGE \1>", re.DOTALL)


def split_tagged(prompt: str) -> list[tuple[int, str]]:
    """The (number, original text) of every page in a prompt: the inverse of tagging."""
    return [(int(m.group(1)), restore(m.group(2))) for m in _PAGE_BLOCK.finditer(prompt)]


# ---- Templates -----------------------------------------------------------------------

ANSWER_FORMAT = (
    "Reply with one JSON object and nothing else, with three keys: "
    '"question" (the question, repeated), '
    '"answer" (a short answer in words taken from the document, or "n/a" if the document '
    "does not contain the answer), and "
    '"page" (the number of the page that contains the answer, or "n/a").'
)

RETRIEVE_FORMAT = (
    "Reply with one JSON object and nothing else, with two keys: "
    '"question" (the question, repeated) and '
    '"pages" (a list of at most {top_k} page numbers, most relevant first).'
)

ANSWER_TASK = (
    "answer a question using only the document below. The document is divided into pages; "
    "each page is enclosed in <PAGE n> and </PAGE n> tags, where n is its page number."
)

RETRIEVE_TASK = (
    "find the pages of the document below that are most relevant to a question. The document "
    "is divided into pages; each page is enclosed in <PAGE n> and </PAGE n> tags, where n is "
    "its page number. Identify up to {top_k} page numbers, most relevant first."
)

OPENING = "<INSTRUCTIONS>\nYour task is to {task}\n\nQuestion: {question}\n\n{format}\n</INSTRUCTIONS>"
CLOSING = "<INSTRUCTIONS>\nNow, {task_now}\n\nQuestion: {question}\n\n{format}\n</INSTRUCTIONS>"
REMINDER = (
    "<INSTRUCTIONS_REMINDER>\nRemember, your task is to {task}\n\nQuestion: {question}\n\n"
    "{format}\n</INSTRUCTIONS_REMINDER>"
)
# The paper's "tags only" ablation (Table 6): the reminder only points back.
REMINDER_TAGS_ONLY = (
    "<INSTRUCTIONS_REMINDER>\nRemember, your task is to follow the instructions under the "
    '"<INSTRUCTIONS>" tag.\n</INSTRUCTIONS_REMINDER>'
)

ANSWER_NOW = "answer the question using only the document above, citing the page."
RETRIEVE_NOW = "identify up to {top_k} pages of the document above most relevant to the question."


@dataclass(frozen=True, slots=True)
class Instructions:
    """The three instruction texts of one prompt: opening, reminder and closing."""

    opening: str
    reminder: str
    closing: str


def _clean_question(question: str) -> str:
    # The question sits inside our instruction tags: it must not be able to close them.
    return neutralize(" ".join(question.split()))


def instructions(
    task: str, question: str, *, top_k: int = 5, tags_only_reminder: bool = False
) -> Instructions:
    """The instruction blocks for an ``answer`` or ``retrieve`` prompt."""
    q = _clean_question(question)
    if task == "retrieve":
        what = RETRIEVE_TASK.format(top_k=top_k)
        fmt = RETRIEVE_FORMAT.format(top_k=top_k)
        now = RETRIEVE_NOW.format(top_k=top_k)
    else:
        what, fmt, now = ANSWER_TASK, ANSWER_FORMAT, ANSWER_NOW
    reminder = (
        REMINDER_TAGS_ONLY if tags_only_reminder else REMINDER.format(task=what, question=q, format=fmt)
    )
    return Instructions(
        opening=OPENING.format(task=what, question=q, format=fmt),
        reminder=reminder,
        closing=CLOSING.format(task_now=now, question=q, format=fmt),
    )


def build_prompt(
    blocks: Instructions,
    pages: Sequence[tuple[int, str]],
    *,
    reminders_after: Iterable[int] = (),
    reminders_before_document: int = 0,
) -> str:
    """The full prompt: opening instructions, tagged pages with reminders, closing instructions.

    ``reminders_after`` holds page numbers after which a reminder block goes.
    """
    after = set(reminders_after)
    parts = [blocks.opening, "<DOCUMENT>"]
    parts.extend([blocks.reminder] * reminders_before_document)
    for number, text in pages:
        parts.append(tag_page(number, text))
        if number in after:
            parts.append(blocks.reminder)
    parts.append("</DOCUMENT>")
    parts.append(blocks.closing)
    return "\n\n".join(parts)
