"""Review: many documents × a list of questions (columns), one table of cited answers.

- ``columns``: a column's question, answer type and instruction; playbooks as CSV;
- ``corpus``: files read once, in parallel processes, into the document store;
- ``grid``: the grid planned as jobs and estimated, its traces read into cells, the answer key
  and the scores;
- ``export``: the grid as CSV, an Excel workbook and JSON.

The use cases (plan, budget, run) are in ``rr_core.workbench``; the screen and the CLI call them.
"""

from rr_core.review.columns import (
    AnswerType,
    Column,
    Typed,
    answer_type,
    columns_csv,
    columns_from_rows,
    parse_columns,
    typed_answer,
)
from rr_core.review.corpus import (
    CorpusFile,
    Item,
    StoredDocuments,
    items_from_paths,
    items_from_uploads,
    read_corpus,
)
from rr_core.review.grid import (
    COMPARE,
    MAIN,
    AnswerKey,
    Cell,
    ReviewEstimate,
    ReviewPlan,
    Score,
    agree_cells,
    cells_of,
    iter_grid,
    parse_answer_key,
    plan_review,
    prefix_sharing,
    retry_jobs,
    score_cells,
    scores,
)

__all__ = [
    "COMPARE",
    "MAIN",
    "AnswerKey",
    "AnswerType",
    "Cell",
    "Column",
    "CorpusFile",
    "Item",
    "ReviewEstimate",
    "ReviewPlan",
    "Score",
    "StoredDocuments",
    "Typed",
    "answer_type",
    "agree_cells",
    "cells_of",
    "columns_csv",
    "columns_from_rows",
    "items_from_paths",
    "items_from_uploads",
    "iter_grid",
    "parse_answer_key",
    "parse_columns",
    "plan_review",
    "prefix_sharing",
    "read_corpus",
    "retry_jobs",
    "score_cells",
    "scores",
    "typed_answer",
]
