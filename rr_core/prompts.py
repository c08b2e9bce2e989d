"""The prompt templates (our own words, METHOD.md §2–§8) and the page tagging.

Everything here is pure string work: no tokenizer, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rr_core.settings import QuestionPlacement

# ---- Tag neutralisation --------------------------------------------------------------
#
# Page text may contain strings that look like our tags ("</PAGE 3>", "<INSTRUCTIONS>"),
# also in disguise: an invisible character after the bracket or inside the word
# ("<\u200b/PAGE 3>", "</PA\u00adGE 3>"), a look-alike bracket or letters ("\uff1c/PAGE 3\uff1e",
# "\ufe64/PAGE", "\u276e/PAGE\u276f", "\u02c2PAGE\u02c3", Cyrillic "Р"), or a special-token
# opener ("<|endoftext|>"). Bidirectional overrides (U+202E...) can make text read as
# something else. Before tagging:
#
# - a "<" that opens such a string becomes "‹" (U+2039, which no tag uses);
# - a look-alike bracket that opens one, and every bidi control, becomes "‹U+XXXX›";
# - any "‹" already in the text is doubled,
#
# so that ``restore`` undoes it exactly. Tag-likeness is judged on a folded view of the text:
# invisible characters skipped, compatibility forms (fullwidth) normalised, case and a few
# Cyrillic/Greek look-alike letters folded.

_GUARD = "\u2039"
_CODE_END = "\u203a"
# The brackets that can open a look-alike tag, as a class: "<", Unicode's confusables of it
# (UTS #39 confusables.txt: \u276e \u02c2 \U0001d236 \u1438 \u16b2, and the guard \u2039, which
# has a rule of its own), the angle brackets that read as it (\u2329 \u3008 \u27e8), and every
# character whose compatibility form (NFKC) is one of these. Closing brackets (">" and its
# look-alikes) need no rule: whether a string reads as our tag is settled at its opening.
LESS_THAN_LIKE = frozenset("<\uff1c\ufe64\u276e\u02c2\U0001d236\u1438\u16b2\u2329\u3008\ufe3f\u27e8")
# "/" and its confusables (UTS #39), with their NFKC forms: what may follow the bracket of a
# look-alike closing tag.
SOLIDUS_LIKE = frozenset(
    "/\uff0f\u1735\u2041\u2215\u2044\u2571\u27cb\u29f8\U0001d23a\u31d3\u3033\u2cc6"
    "\u30ce\u32e8\uff89\u4e3f\u2f03"
)
_BRACKETS = LESS_THAN_LIKE
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SPECIAL_CHARS = tuple(sorted({_GUARD, *_BRACKETS, *_BIDI}))
_SPECIAL = re.compile("[" + re.escape("".join(_SPECIAL_CHARS)) + "]")
_UNESCAPE = re.compile(f"{_GUARD}{_GUARD}|{_GUARD}U\\+([0-9A-F]{{4,6}}){_CODE_END}|{_GUARD}")
_KEYWORDS = ("page", "document", "instructions")
_PIPES = frozenset("|\uff5c")
# Lower-case look-alikes of the letters in our tag names.
_LOOKALIKES = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0456\u0455\u0442\u043c\u0501\u0261\u03b1\u03b5\u03bf\u03c1\u03c4\u03b9\u03bc\u03ba",
    "aeopcistmdgaeoptimk",
)
# A bracket followed by more invisible characters than this is treated as a tag.
_MAX_SKIP = 32


def _invisible(ch: str) -> bool:
    """Whitespace, or a character that draws nothing (format controls, joiners, fillers)."""
    return ch.isspace() or unicodedata.category(ch) == "Cf" or ch in "\u034f\u115f\u1160\u3164\uffa0"


def _fold(ch: str) -> str:
    return unicodedata.normalize("NFKC", ch).casefold().translate(_LOOKALIKES)


def _opens_tag(text: str, at: int) -> bool:
    """Whether the bracket at ``text[at]`` opens something a model could read as our tag."""
    n = len(text)
    i, skipped, slash = at + 1, 0, False
    letters = ""
    while i < n and len(letters) < len("instructions"):
        ch = text[i]
        i += 1
        if _invisible(ch):
            skipped += 1
            if letters and ch.isspace():
                break  # whitespace ends the word; invisible format characters do not
            if skipped > _MAX_SKIP:
                return True
            continue
        folded = _fold(ch)
        if not letters and not slash and (ch in SOLIDUS_LIKE or folded in SOLIDUS_LIKE):
            slash = True
            continue
        if not letters and (ch in _PIPES or folded == "|"):
            return True  # a special token: <|endoftext|>
        if not folded.isalpha():
            break
        letters += folded
        if not any(k.startswith(letters) or letters.startswith(k) for k in _KEYWORDS):
            return False
    return any(letters.startswith(k) for k in _KEYWORDS)


def _code(ch: str) -> str:
    return f"{_GUARD}U+{ord(ch):04X}{_CODE_END}"


def neutralize(text: str) -> str:
    """Make tag-like strings, special tokens and bidi overrides in page text inert;
    ``restore`` undoes it exactly."""
    # Most pages hold none of these: one substring search per character settles them, 20x
    # faster than the character-class regex (whose every match is looked at below); in ASCII
    # text only "<" can be one.
    if ("<" not in text) if text.isascii() else not any(ch in text for ch in _SPECIAL_CHARS):
        return text
    out: list[str] = []
    last = 0
    for match in _SPECIAL.finditer(text):
        at = match.start()
        ch = text[at]
        if ch == _GUARD:
            piece = _GUARD * 2
        elif ch in _BIDI:
            piece = _code(ch)
        elif _opens_tag(text, at):
            # A lone guard must not be followed by another guard's code ("‹" + "‹U+202E›").
            plain = ch == "<" and not (at + 1 < len(text) and text[at + 1] in _BIDI)
            piece = _GUARD if plain else _code(ch)
        else:
            continue
        out.append(text[last:at])
        out.append(piece)
        last = at + 1
    out.append(text[last:])
    return "".join(out)


def _unescape(match: re.Match[str]) -> str:
    if match.group(1):
        code = int(match.group(1), 16)
        return chr(code) if code <= 0x10FFFF else match.group()
    return _GUARD if len(match.group()) == 2 else "<"


def restore(text: str) -> str:
    """Undo ``neutralize``."""
    if _GUARD not in text:
        return text
    return _UNESCAPE.sub(_unescape, text)


def page_open(number: int) -> str:
    """The opening tag of a page."""
    return f"<PAGE {number}>"


def page_close(number: int) -> str:
    """The closing tag of a page."""
    return f"</PAGE {number}>"


def tag_page(number: int, text: str) -> str:
    """One page wrapped in its tags, its text neutralised."""
    return f"{page_open(number)}\n{neutralize(text)}\n{page_close(number)}"


_PAGE_OPEN = re.compile(r"<PAGE (\d+)>\n")


def page_spans(prompt: str) -> list[tuple[int, int, int]]:
    """(number, start, end) of every tagged page's body in a prompt, in order.

    Each opening tag's own closing tag is looked for with ``str.find``, not by a lazy regex
    trying every character (40x faster on a 3,000-page prompt). An opening tag without its
    closing tag is not a page.
    """
    out = []
    position = 0
    while (start := prompt.find("<PAGE ", position)) >= 0:
        opening = _PAGE_OPEN.match(prompt, start)
        end = -1 if opening is None else prompt.find(f"\n</PAGE {opening.group(1)}>", opening.end())
        if opening is None or end < 0:
            position = start + 1
            continue
        out.append((int(opening.group(1)), opening.end(), end))
        position = end + len(opening.group(1)) + 9  # past "\n</PAGE n>"
    return out


def split_tagged(prompt: str) -> list[tuple[int, str]]:
    """The (number, original text) of every page in a prompt: the inverse of tagging."""
    return [(number, restore(prompt[start:end])) for number, start, end in page_spans(prompt)]


# ---- Templates -----------------------------------------------------------------------
#
# One skeleton for every call (000 §3.1): instructions, the document, the instructions again
# opening with "Now, …". What changes between calls is the task sentence, the reply format
# and what stands in the document block (pages, passages, extracts, or nothing at all).

PAGES_NOTE = "The document is divided into pages; each page is enclosed in <PAGE n> and </PAGE n> tags, where n is its page number."

ANSWER_FORMAT = (
    "Reply with one JSON object and nothing else, with four keys: "
    '"question" (the question, repeated), '
    '"answer" (a short answer in words taken from the {source}, or "not stated in the document" '
    "if the answer is not stated in the {source}), "
    '"found" (true if the answer is stated in the {source}, false if it is not), and '
    '"citations" (one object for each passage the answer rests on, with the keys "page" (the '
    'number of the page that holds the passage) and "quote" (the passage\'s sentence, copied word '
    "for word); several passages when the answer gathers several, such as a list; an empty list "
    'when "found" is false). '
    "Never answer with a heading, a blank to be filled in, or a sentence that does not state the answer."
)
RETRIEVE_FORMAT = (
    "Reply with one JSON object and nothing else, with two keys: "
    '"question" (the question, repeated) and '
    '"pages" (a list of at most {top_k} page numbers, most relevant first).'
)
RETRIEVE_MANY_FORMAT = (
    "Reply with one JSON object and nothing else, with one key, "
    '"results": a list with one entry per question, each an object with the keys '
    '"question" (the question\'s number) and "pages" (a list of at most {top_k} page numbers, '
    "most relevant first)."
)
EXTRACT_FORMAT = (
    "Reply with one JSON object and nothing else, with three keys: "
    '"relevant" (true if the pages say anything that bears on the question, else false), '
    '"extracts" (a list of objects with the keys "page" and "text": the sentences that bear on '
    "the question, copied word for word with their page number; an empty list if none), and "
    '"answer" (the answer these pages support, or "n/a").'
)
CLOSED_BOOK_FORMAT = (
    "Reply with one JSON object and nothing else, with four keys: "
    '"question" (the question, repeated), "answer" (a short answer, or "not stated in the document" '
    'if you do not know), "found" (true if you know the answer, false if you do not) and '
    '"citations" (an empty list: there is no document to cite).'
)

TASKS: dict[str, tuple[str, str, str]] = {
    # task: (what the task is, what "Now, …" asks, the reply format)
    "answer": (
        "answer a question using only the document below. " + PAGES_NOTE,
        "answer the question using only the document above, citing the page of each passage the "
        "answer rests on, or say that the document does not state it.",
        ANSWER_FORMAT.replace("{source}", "document"),
    ),
    "retrieve": (
        "find the pages of the document below that are most relevant to a question. "
        + PAGES_NOTE
        + " Identify up to {top_k} page numbers, most relevant first.",
        "identify up to {top_k} pages of the document above most relevant to the question.",
        RETRIEVE_FORMAT,
    ),
    "retrieve_many": (
        "find, for each of several numbered questions, the pages of the document below that are "
        "most relevant to it. " + PAGES_NOTE + " Identify up to {top_k} page numbers per question, "
        "most relevant first.",
        "identify, for each numbered question, up to {top_k} pages of the document above most relevant to it.",
        RETRIEVE_MANY_FORMAT,
    ),
    "extract": (
        "read the pages below and pick out what bears on a question. " + PAGES_NOTE,
        "pick out, word for word, what the pages above say that bears on the question.",
        EXTRACT_FORMAT,
    ),
    "reduce": (
        "answer a question using only the extracts below, which were taken word for word from a "
        "longer document. " + PAGES_NOTE.replace("document", "set of extracts"),
        "answer the question using only the extracts above, citing the page of each passage the "
        "answer rests on, or say that the extracts do not state it.",
        ANSWER_FORMAT.replace("{source}", "extracts"),
    ),
    "closed_book": (
        "answer a question from what you know. No document is given.",
        "answer the question from what you know.",
        CLOSED_BOOK_FORMAT,
    ),
}

# The paper's protocol (000 §3, App. A; METHOD.md §2–§6): the same skeleton, reminders and
# pages, but the reply is plain text: the answer and the page that contains it (retrieval: the
# page numbers), with no JSON and no quote. Our own words. Only the tasks the paper's methods
# and the Lab's bounds use have this form; the others keep their JSON one.
PAPER_ANSWER_FORMAT = (
    "Reply in plain text, not JSON, in exactly two lines:\n"
    "Answer: <a short answer, in words taken from the {source}>\n"
    "Page: <the number of the page that contains the answer>\n"
    'If the {source} does not contain the answer, reply "Answer: n/a" and "Page: n/a".'
)
PAPER_RETRIEVE_FORMAT = (
    "Reply in plain text, not JSON, in one line:\n"
    "Pages: <up to {top_k} page numbers separated by commas, most relevant first>"
)
PAPER_CLOSED_BOOK_FORMAT = (
    "Reply in plain text, not JSON, in one line:\n"
    'Answer: <a short answer>, or "Answer: n/a" if you do not know it.'
)
PAPER_TASKS: dict[str, tuple[str, str, str]] = {
    "answer": (
        "answer a question based on the document below. " + PAGES_NOTE,
        "answer the question based on the document above, and give the page that contains the answer.",
        PAPER_ANSWER_FORMAT.replace("{source}", "document"),
    ),
    "retrieve": (
        "find the pages of the document below that are most relevant to answering a question. "
        + PAGES_NOTE
        + " Identify up to {top_k} page numbers, most relevant first.",
        "identify up to {top_k} page numbers of the document above most relevant to answering the question.",
        PAPER_RETRIEVE_FORMAT,
    ),
    "closed_book": (
        "answer a question from what you know. No document is given.",
        "answer the question from what you know.",
        PAPER_CLOSED_BOOK_FORMAT,
    ),
}

OPENING = "<INSTRUCTIONS>\nYour task is to {task}\n\n{questions}\n\n{format}\n</INSTRUCTIONS>"
CLOSING = "<INSTRUCTIONS>\nNow, {task_now}\n\n{questions}\n\n{format}\n</INSTRUCTIONS>"
# The question-after layout (001 §3): the task before the document without the question, and
# the question with the reply format after it; the query-aware layout (001 §5) ends with the
# same question-and-format block after the full instructions.
PREAMBLE = "<INSTRUCTIONS>\nYour task is to {task}\n\n{follows}\n</INSTRUCTIONS>"
FOLLOWS_DOCUMENT = "The question and the reply format follow the document."
FOLLOWS = "The question and the reply format follow."
FINAL = "<INSTRUCTIONS>\n{questions}\n\n{format}\n</INSTRUCTIONS>"
# Tasks whose prompt carries no document (the preamble must not speak of one).
NO_DOCUMENT = frozenset({"closed_book"})
REMINDER = (
    "<INSTRUCTIONS_REMINDER>\nRemember, your task is to {task}\n\n{questions}\n\n"
    "{format}\n</INSTRUCTIONS_REMINDER>"
)
# The paper's "tags only" ablation (Table 6): the reminder only points back.
REMINDER_TAGS_ONLY = (
    "<INSTRUCTIONS_REMINDER>\nRemember, your task is to follow the instructions under the "
    '"<INSTRUCTIONS>" tag.\n</INSTRUCTIONS_REMINDER>'
)


@dataclass(frozen=True, slots=True)
class Instructions:
    """The instruction texts of one prompt: opening, reminder and closing; and, for the other
    layouts, the opening without the question (``preamble``) and the question with the reply
    format (``final``)."""

    opening: str
    reminder: str
    closing: str
    preamble: str = ""
    final: str = ""
    # False for the tags-only reminder, which points back without stating the question.
    reminder_has_question: bool = True


def _clean_question(question: str) -> str:
    # The question sits inside our instruction tags: it must not be able to close them.
    return neutralize(" ".join(question.split()))


def _questions_text(questions: Sequence[str]) -> str:
    if len(questions) == 1:
        return f"Question: {_clean_question(questions[0])}"
    lines = [f"Question {i}: {_clean_question(q)}" for i, q in enumerate(questions, start=1)]
    return "Questions:\n" + "\n".join(lines)


def instructions(
    task: str,
    question: str | Sequence[str],
    *,
    top_k: int = 5,
    tags_only_reminder: bool = False,
    plain: bool = False,
) -> Instructions:
    """The instruction blocks of a prompt for one of ``TASKS`` and its question(s); ``plain``:
    the paper's plain-text form of the task (``PAPER_TASKS``)."""
    questions = [question] if isinstance(question, str) else list(question)
    if plain and task not in PAPER_TASKS:
        raise ValueError(f"bug: the task {task!r} has no plain-text form")
    what, now, fmt = (part.format(top_k=top_k) for part in (PAPER_TASKS if plain else TASKS)[task])
    q = _questions_text(questions)
    reminder = (
        REMINDER_TAGS_ONLY if tags_only_reminder else REMINDER.format(task=what, questions=q, format=fmt)
    )
    return Instructions(
        opening=OPENING.format(task=what, questions=q, format=fmt),
        reminder=reminder,
        closing=CLOSING.format(task_now=now, questions=q, format=fmt),
        preamble=PREAMBLE.format(task=what, follows=FOLLOWS if task in NO_DOCUMENT else FOLLOWS_DOCUMENT),
        final=FINAL.format(questions=q, format=fmt),
        reminder_has_question=not tags_only_reminder,
    )


# ---- The layout of a prompt ------------------------------------------------------------
#
# A prompt is a sequence of blocks joined by blank lines. The layout is the one place that
# knows where the instructions, reminders and pages sit: the plan counts it, the runner
# renders it, the viewer draws it and the offline engine reads it, none by re-parsing text.

# "preamble": the task without the question (question-after layout); it is not counted as a copy
# of the instructions, which carry the question.
BlockKind = Literal["opening", "preamble", "document_open", "reminder", "page", "document_close", "closing"]
INSTRUCTION_KINDS: frozenset[str] = frozenset({"opening", "reminder", "closing"})
SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a prompt. Page blocks keep their page's original text in ``source``.

    ``per_question``: the block's text changes with the question asked (it states the question,
    or it is one of the pages picked for it); set by ``build_layout``. The blocks before the
    first such block are the same for every question over the document: the cacheable prefix.
    """

    kind: BlockKind
    text: str
    page: int | None = None
    source: str = field(default="", repr=False)
    per_question: bool = False


@dataclass(frozen=True, slots=True)
class PromptLayout:
    """A prompt as blocks, with the question(s) and page limit its instructions state, and
    the layout (``placement``) that arranged them."""

    blocks: tuple[Block, ...]
    questions: tuple[str, ...] = ()
    limit: int = 0
    placement: QuestionPlacement = QuestionPlacement.BEFORE_AND_AFTER

    def render(self) -> str:
        """The exact prompt text."""
        return SEPARATOR.join(b.text for b in self.blocks)

    def prefix_blocks(self) -> int:
        """How many leading blocks are the same for every question (none is per question)."""
        for i, block in enumerate(self.blocks):
            if block.per_question:
                return i
        return len(self.blocks)

    def prefix_chars(self) -> int:
        """Characters of the rendered prompt that are the same for every question over the
        document: the leading question-free blocks with the separator after each (so that the
        rest of the prompt starts at the next block). 0 when the prompt opens with the question
        (the R&R paper's layout)."""
        shared = self.prefix_blocks()
        if shared == len(self.blocks):
            return len(self.render())
        return sum(len(b.text) for b in self.blocks[:shared]) + shared * len(SEPARATOR)

    def total_chars(self) -> int:
        """Characters of the rendered prompt (without rendering it)."""
        return sum(len(b.text) for b in self.blocks) + max(len(self.blocks) - 1, 0) * len(SEPARATOR)

    def pages(self) -> list[tuple[int, str]]:
        """(page number, original text) of every page block, in prompt order."""
        return [(b.page, b.source) for b in self.blocks if b.kind == "page" and b.page is not None]

    @property
    def reminder_count(self) -> int:
        """Reminder blocks in the prompt."""
        return sum(1 for b in self.blocks if b.kind == "reminder")


def build_layout(
    blocks: Instructions,
    pages: Sequence[tuple[int, str]] | None,
    *,
    reminders_after: Iterable[int] = (),
    reminders_before_document: int = 0,
    questions: Sequence[str] = (),
    limit: int = 0,
    placement: QuestionPlacement = QuestionPlacement.BEFORE_AND_AFTER,
    shared_pages: bool = False,
) -> PromptLayout:
    """The instructions and the tagged pages (with reminders), placed as ``placement`` says:
    by default opening instructions, the document, closing instructions (000 §3.1).

    ``reminders_after`` holds page numbers after which a reminder block goes; ``pages=None``
    leaves the document out entirely (closed-book). ``shared_pages``: the pages are the same
    whatever the question (the whole document, or a fixed chunk of it), not ones picked for
    it, so they can belong to the cacheable prefix. The cache-aware layout's reminders are the
    tags-only ones whatever ``blocks`` says: a reminder with the question would end the prefix.
    """
    after = set(reminders_after)
    reminder_text, reminder_asks = blocks.reminder, blocks.reminder_has_question
    if placement is QuestionPlacement.CACHE_AWARE:
        reminder_text, reminder_asks = REMINDER_TAGS_ONLY, False
    picked = not shared_pages
    document: list[Block] = []
    if pages is not None:
        document.append(Block("document_open", "<DOCUMENT>"))
        reminder = Block("reminder", reminder_text, per_question=reminder_asks)
        document.extend(reminder for _ in range(reminders_before_document))
        for number, text in pages:
            document.append(Block("page", tag_page(number, text), number, text, per_question=picked))
            if number in after:
                document.append(reminder)
        document.append(Block("document_close", "</DOCUMENT>"))
    opening = Block("opening", blocks.opening, per_question=True)
    arranged: list[Block]
    closing = Block("closing", blocks.closing, per_question=True)
    final = Block("closing", blocks.final, per_question=True)  # the question and the reply format
    if placement is QuestionPlacement.QUERY_AWARE:
        arranged = [opening, *document, final]
    elif placement in (QuestionPlacement.QUESTION_AFTER, QuestionPlacement.CACHE_AWARE):
        arranged = [Block("preamble", blocks.preamble), *document, final]
    elif placement is QuestionPlacement.DOCUMENT_FIRST:
        arranged = [*document, closing]
    elif placement is QuestionPlacement.REPEATED:
        arranged = [opening, *document, closing] * 2  # the baseline prompt, twice
    else:
        arranged = [opening, *document, closing]
    return PromptLayout(tuple(arranged), tuple(questions), limit, placement)


def build_prompt(
    blocks: Instructions,
    pages: Sequence[tuple[int, str]],
    *,
    reminders_after: Iterable[int] = (),
    reminders_before_document: int = 0,
) -> str:
    """The full prompt text (see ``build_layout``)."""
    return build_layout(
        blocks, pages, reminders_after=reminders_after, reminders_before_document=reminders_before_document
    ).render()


# ---- Checking an answer against its quotes ---------------------------------------------------
#
# A short prompt of its own (METHOD.md §14): the question, the answer and the quoted passages,
# never the document, in the paper's skeleton (instructions, the quotes as the document,
# instructions again opening with "Now, …"). Everything quoted is neutralised like page text.

VERIFY_FORMAT = (
    "Reply with one JSON object and nothing else, with two keys: "
    '"verdict" ("supported" if the quotes state this answer to this question, "partial" if they '
    'state part of it or something close to it, "unsupported" if they do not state it) and '
    '"reason" (one short sentence saying why).'
)
VERIFY_OPENING = (
    "<INSTRUCTIONS>\nYour task is to check an answer against the passages quoted for it. The quotes "
    "below were copied from a document you do not see. Judge only whether the quoted text states "
    "this answer to this question; do not use what you know, and do not judge whether the answer "
    "is true.\n\n{case}\n\n{format}\n</INSTRUCTIONS>"
)
VERIFY_CLOSING = (
    "<INSTRUCTIONS>\nNow, judge whether the quotes above state this answer to this question.\n\n"
    "{case}\n\n{format}\n</INSTRUCTIONS>"
)
NO_QUOTE = "(no passage was quoted for this answer)"


def verify_blocks(question: str, answer: str, quotes: Sequence[tuple[int | None, str]]) -> tuple[Block, ...]:
    """The blocks of one check: the instructions with the question and the answer, the quotes
    (each with its page, where it has one) as the document, the instructions again."""
    case = f"{_questions_text([question])}\nAnswer: {neutralize(' '.join(answer.split()))}"
    lines = [
        f"Quote {i}{f' (page {page})' if page is not None else ''}: {neutralize(' '.join(quote.split()))}"
        for i, (page, quote) in enumerate(((p, q) for p, q in quotes if q.strip()), start=1)
    ]
    quoted = "<DOCUMENT>\n" + ("\n".join(lines) or NO_QUOTE) + "\n</DOCUMENT>"
    return (
        Block("opening", VERIFY_OPENING.format(case=case, format=VERIFY_FORMAT), per_question=True),
        Block("document_open", quoted, per_question=True),
        Block("closing", VERIFY_CLOSING.format(case=case, format=VERIFY_FORMAT), per_question=True),
    )
