"""The grid as it leaves the app: JSON (with the traces), CSV, and an Excel workbook.

Every row says what it answers (the question and its type), from which document (its name
and SHA-256), by which method and engine, and how far it was checked: "right"/"wrong" only
against the answer key; otherwise the quote check of its citations (a quote located on its page
is provenance, not support nor correctness). A cell with nothing found reads "Not found" with
the pages to read, never "not stated" or "No". Text from documents cannot run as a spreadsheet formula: the CSV
puts an apostrophe before it, the workbook types every text cell as text (``rr_core.workbook``).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

from rr_core.exports import csv_text
from rr_core.plans import Citation
from rr_core.quotes import check_words
from rr_core.review.grid import COMPARE, Cell, ReviewPlan, scores
from rr_core.traces import RunTrace
from rr_core.workbook import cell_text, finish_workbook

CELL_COLUMNS = (
    "document", "document_sha256", "question", "type", "method", "answer", "answer_as_given", "found",
    "pages_to_read", "checked", "correct", "accepted_answers", "citation", "page", "page_label", "quote",
    "quote_check", "support", "support_reason", "confidence", "score", "confidence_reason", "cost_usd",
    "paid_usd", "engine", "error",
)  # fmt: skip


def _page(c: Citation) -> str:
    if c.page is None:
        return ""
    return f"p. {c.page}" + (
        f" (printed {c.page_label})" if c.page_label and c.page_label != str(c.page) else ""
    )


def _citations(cell: Cell) -> str:
    return " · ".join(f"{_page(c)}: “{c.quote}” [{_located(c)}]" for c in cell.citations)


def _located(c: Citation) -> str:
    """Where the quote stands, in the screens' words (provenance, never approval)."""
    return check_words(c.quote_check, _page(c) or "no page", c.quote_score)


def _absent(cell: Cell) -> str:
    return "no (the model says not stated)" if cell.absent_by == "model" else "no (not found)"


def _checked(cell: Cell) -> str:
    if cell.correct is not None:
        return "against the answer key"
    if cell.error:
        return "failed"
    return "quote check only (no known answer)" if cell.citations else "not checked (no known answer)"


def _engine(plan: ReviewPlan, cell: Cell) -> str:
    settings = plan.settings_of(cell.role)
    return f"{settings.provider} {settings.model}" + ("" if cell.is_llm else " (not an LLM)")


def cell_row(plan: ReviewPlan, cell: Cell) -> dict[str, object]:
    """One cell as a flat row (CSV, the workbook's answers sheet)."""
    first = cell.citations[0] if cell.citations else None
    return {
        "document": cell.document,
        "document_sha256": cell.document_sha256,
        "question": cell.question,
        "type": cell.type,
        "method": cell.method,
        "answer": cell.answer if not cell.error else "",
        "answer_as_given": cell.raw,
        "found": "yes" if cell.found else ("" if cell.error else _absent(cell)),
        "pages_to_read": " ".join(str(p) for p in cell.pages_to_read),
        "checked": _checked(cell),
        "correct": "" if cell.correct is None else ("right" if cell.correct else "wrong"),
        "accepted_answers": " | ".join(cell.accepted),
        "citation": _citations(cell),
        "page": "" if first is None or first.page is None else first.page,
        "page_label": first.page_label if first else "",
        "quote": first.quote if first else "",
        "quote_check": _located(first) if first else "",
        "support": cell.support if cell.found else "",
        "support_reason": cell.support_reason if cell.found else "",
        "confidence": cell.confidence,
        "score": "" if cell.score is None else cell.score,
        "confidence_reason": cell.confidence_reason,
        "cost_usd": round(cell.cost_usd, 8),
        "paid_usd": round(cell.paid_usd, 8),
        "engine": _engine(plan, cell),
        "error": cell.error or "",
    }


def _ordered(plan: ReviewPlan, cells: Sequence[Cell]) -> list[Cell]:
    order = {d.sha256: i for i, d in enumerate(plan.documents)}
    return sorted(cells, key=lambda c: (c.role == COMPARE, order.get(c.document_sha256, 0), c.column))


def review_csv(plan: ReviewPlan, cells: Sequence[Cell]) -> str:
    """One row per cell (document × question × method)."""
    return csv_text(CELL_COLUMNS, [cell_row(plan, c) for c in _ordered(plan, cells)])


def review_json(
    plan: ReviewPlan,
    cells: Sequence[Cell],
    *,
    traces: Sequence[RunTrace] = (),
    context: dict[str, Any] | None = None,
    skipped: Sequence[Any] = (),
) -> dict[str, Any]:
    """The grid as JSON: documents (those not read with their problem), columns, cells, scores,
    the plan's estimate, and with ``traces`` every call (prompts left out)."""
    e = plan.estimate
    data: dict[str, Any] = {
        **(context or {}),
        "documents": [d.to_dict() for d in [*plan.documents, *skipped]],
        "columns": [
            {
                "index": i,
                "question": c.question,
                "type": c.type.value,
                "instruction": c.instruction,
                "choices": list(c.choices),
                "sent_as": c.prompt,
            }
            for i, c in enumerate(plan.columns)
        ],  # fmt: skip
        "methods": {role: plan.method_label(role) for role in plan.roles},
        "estimate": estimate_json(plan),
        "cells": [c.to_dict() for c in _ordered(plan, cells)],
        "scores": scores_json(plan, cells),
    }
    if e.alone_ratio is not None:
        data["estimate"]["several_questions_input_share"] = round(e.alone_ratio, 4)
    if traces:
        data["traces"] = [t.to_dict(prompts=False) for t in traces]
    return data


def scores_json(plan: ReviewPlan, cells: Iterable[Cell]) -> dict[str, Any]:
    """The scores against the answer key, by method: ``main`` (the grid's method), and with a
    comparison ``compare`` and ``main-on-sample`` (the grid's method on the comparison's rows);
    each with its method's label, one entry per column and ``all`` columns together."""
    out: dict[str, Any] = {}
    for s in scores(plan, cells):
        entry = {k: v for k, v in s.to_dict().items() if k not in ("method", "role")}
        group = out.setdefault(s.role, {"method": s.method, "columns": [], "all": None})
        if s.column is None:
            group["all"] = entry
        else:
            group["columns"].append(entry)
    return out


def estimate_json(plan: ReviewPlan) -> dict[str, Any]:
    """The grid's estimate before any call."""
    e = plan.estimate
    priced_as, provider = plan.settings.pricing
    return {
        "documents": len(plan.documents),
        "questions": len(plan.columns),
        "jobs": len(plan.jobs),
        "calls": e.calls,
        "input_tokens": e.input_tokens,
        "output_tokens": e.output_tokens,
        "usd_now": round(e.usd("now"), 6),
        "usd_now_with_cache": round(e.usd("now", cached=True), 6),
        "usd_batch": round(e.usd("batch"), 6),
        "price_known": e.cost.known,
        "priced_as": priced_as,
        "provider": provider,
        "cacheable_input_tokens": e.cacheable_tokens,
        "cacheable_share": round(e.cacheable_share, 4),
        "sample_documents": e.sample_documents,
        "sample_input_tokens": e.sample_input_tokens,
        "each_question_alone_input_tokens": e.alone_input_tokens,
        "compare_rows": len(plan.compare_documents),
        "too_long": list(plan.too_long),
    }


def review_xlsx(plan: ReviewPlan, cells: Sequence[Cell], *, context: dict[str, Any] | None = None) -> bytes:
    """An Excel workbook: "Answers" (a row per document, each question's answer with its
    citation beside it), "Quotes" (each citation and its check), "Costs and settings"."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font

    book = Workbook()
    answers = book.active
    assert answers is not None
    answers.title = "Answers"
    bold = Font(bold=True)
    # One table (the Method column tells a comparison's rows apart), so that filters take it whole.
    header: list[object] = ["Document", "SHA-256", "Method"]
    for c in plan.columns:
        header += [_safe(f"{c.question} [{c.type.value}]"), "Citation", "Checked", "Confidence"]
    answers.append(header)
    for role in plan.roles:
        label = plan.method_label(role)
        by = {(c.document_sha256, c.column): c for c in cells if c.role == role}
        rows = (
            plan.documents
            if role != COMPARE
            else [d for d in plan.documents if d.sha256 in plan.compare_documents]
        )
        for d in rows:
            line: list[object] = [_safe(d.name), d.sha256, _safe(label)]
            for i in range(len(plan.columns)):
                cell = by.get((d.sha256, i))
                if cell is None:
                    line += ["(not run)", "", "", ""]
                    continue
                line += [
                    _safe(cell.answer if not cell.error else f"failed: {cell.error}"),
                    _safe(_citations(cell)),
                    cell.status,
                    _safe(_sureness(cell)),
                ]
            answers.append(line)
    quotes = book.create_sheet("Quotes")
    quotes.append(["Document", "SHA-256", "Question", "Method", "Page", "Printed label", "Quote", "Quote check",
                   "Answer", "Correct"])  # fmt: skip
    for cell in _ordered(plan, cells):
        for cited in cell.citations:
            quotes.append([
                _safe(cell.document), cell.document_sha256, _safe(cell.question), _safe(cell.method),
                cited.page, _safe(cited.page_label), _safe(cited.quote), _located(cited), _safe(cell.answer),
                "" if cell.correct is None else ("right" if cell.correct else "wrong"),
            ])  # fmt: skip
    graded = book.create_sheet("Scores")
    graded.append(["Method", "Question", *SCORE_COLUMNS])
    for score in scores(plan, cells):
        entry = score.to_dict()
        at = entry.pop("precision_at_coverage")
        graded.append(
            [_safe(score.method), _safe(score.question), *[_cell_value(entry, at, k) for k in SCORE_COLUMNS]]
        )
    costs = book.create_sheet("Costs and settings")
    costs.append(["Document", "SHA-256", "Question", "Method", "Engine", "Cost (USD, at the run's price)",
                  "Paid (USD)", "Price known", "Error"])  # fmt: skip
    for cell in _ordered(plan, cells):
        costs.append([
            _safe(cell.document), cell.document_sha256, _safe(cell.question), _safe(cell.method),
            _engine(plan, cell), round(cell.cost_usd, 8), round(cell.paid_usd, 8),
            "yes" if cell.price_known else "no", _safe(cell.error or ""),
        ])  # fmt: skip
    costs.append([])
    for key, value in {**(context or {}), **estimate_json(plan)}.items():
        costs.append([key, _safe(str(value))])
    for role in plan.roles:
        costs.append([f"settings ({role})", _safe(str(plan.settings_of(role).to_dict()))])
    for sheet in (answers, quotes, graded, costs):
        for cell in sheet[1]:
            cell.font = bold
        for column in sheet.columns:
            letter = column[0].column_letter
            sheet.column_dimensions[letter].width = min(60, max(10, *(len(str(c.value or ""))
                                                                     for c in column[:50])))  # fmt: skip
            for c in column:
                c.alignment = Alignment(wrap_text=True, vertical="top")
    finish_workbook(book)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# The scores sheet's and CSV's columns (README "How sure is an answer").
SCORE_COLUMNS = (
    "cells", "marked", "answered", "right", "precision", "coverage", "base_rate", "high", "high_share",
    "high_precision", "precision_at_50%", "precision_at_80%", "precision_at_100%", "failed", "not_stated",
)  # fmt: skip


def _cell_value(entry: dict[str, Any], at: dict[str, Any], column: str) -> object:
    if column.startswith("precision_at_"):
        value = at.get(column.removeprefix("precision_at_"))
    else:
        value = entry.get(column)
    return "" if value is None else value


def scores_csv(plan: ReviewPlan, cells: Sequence[Cell]) -> str:
    """The scores as CSV: one row per method and column (and all columns)."""
    rows = []
    for score in scores(plan, cells):
        entry = score.to_dict()
        at = entry.pop("precision_at_coverage")
        rows.append(
            {"method": score.method, "role": score.role, "question": score.question}
            | {k: _cell_value(entry, at, k) for k in SCORE_COLUMNS}
        )
    return csv_text(("method", "role", "question", *SCORE_COLUMNS), rows)


def _sureness(cell: Cell) -> str:
    """A cell's confidence in words: "high", "check this: <reason>", "none (not found)"."""
    if cell.error or not cell.confidence:
        return ""
    if cell.confidence == "check":
        return f"check this: {cell.confidence_reason}" if cell.confidence_reason else "check this"
    if cell.confidence == "none":
        return "none (no answer)"
    return cell.confidence


def _safe(value: str) -> object:
    """Text from a document as a cell holds it, verbatim (``finish_workbook`` types it as text)."""
    return cell_text(value)
