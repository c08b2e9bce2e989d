"""Cheap baselines: one call over the whole document, laid out so that the model knows the
question when it matters, with no reminders and no retrieval.

Recent work finds that putting the question after the document, or repeating the prompt,
recovers much of what reminders recover; an R&R gain counts only over the strongest of these.

- ``question-last``: the document, then the task, the question and the reply format once at
  the end (no instructions before the document). Also the prompt caching rewards: the
  document is a prefix shared by every question.
- ``repeat``: the baseline prompt twice (instructions, document, instructions; then all of it
  again, ending with the instructions and the reply format): prompt repetition, every token of
  the document is read the second time with the question already seen, at about twice the
  input tokens.

Each is one prompt layout, so neither takes a ``layout=`` setting; and those two layouts are
not offered to other methods (the baseline in them would be these methods under another name).
"""

from __future__ import annotations

from rr_core.methods.building import Method
from rr_core.methods.paper import one_pass
from rr_core.settings import QuestionPlacement

_IS_LAYOUT = "the method is this prompt layout"

QUESTION_LAST = Method(
    name="question-last",
    label="Question last",
    group="other",
    summary="Reads the whole document, then the task and question once at the end; no instructions before the document.",
    layouts=(QuestionPlacement.DOCUMENT_FIRST,),
    layout_note=_IS_LAYOUT,
    planner=lambda ctx: one_pass(ctx, remind=False),
)
REPEAT = Method(
    name="repeat",
    label="Prompt repeated",
    group="other",
    summary="The baseline prompt twice (instructions, document, instructions, then all again): about twice the input tokens of the baseline.",
    layouts=(QuestionPlacement.REPEATED,),
    layout_note=_IS_LAYOUT,
    planner=lambda ctx: one_pass(ctx, remind=False),
)

METHODS = (QUESTION_LAST, REPEAT)
