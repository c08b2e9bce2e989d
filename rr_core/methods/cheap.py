"""Cheap baselines: one call over the whole document, laid out so that the model knows the
question when it matters, with no reminders and no retrieval.

Recent work finds that putting the question after the document, or repeating the prompt,
recovers much of what reminders recover; an R&R gain counts only over the strongest of these.

- ``question-last``: the document, then the task and question once at the end (no
  instructions before the document). Also the layout prompt caching rewards: the document
  is a prefix shared by every question.
- ``repeat``: the instructions with the question and the document, then both again (prompt
  repetition): every token of the document is read with the question already seen, at about
  twice the input tokens.
"""

from __future__ import annotations

from rr_core.methods.building import Method
from rr_core.methods.paper import one_pass
from rr_core.settings import QuestionPlacement

QUESTION_LAST = Method(
    name="question-last",
    label="Question last",
    group="other",
    summary="Reads the whole document, then the question once at the end; no instructions before the document.",
    placement=QuestionPlacement.DOCUMENT_FIRST,
    planner=lambda ctx: one_pass(ctx, remind=False),
)
REPEAT = Method(
    name="repeat",
    label="Prompt repeated",
    group="other",
    summary="The question and the whole document, then both again: about twice the input tokens of the baseline.",
    placement=QuestionPlacement.REPEATED,
    planner=lambda ctx: one_pass(ctx, remind=False),
)

METHODS = (QUESTION_LAST, REPEAT)
