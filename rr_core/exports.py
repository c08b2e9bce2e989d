"""Run traces as JSON, CSV and a Markdown report that say what each answer answers.

One CSV row per answer (a run of several questions gives one row each), naming its question,
document (and its hash), method and settings, provider, model and time; the report files each
answer under its own document and question. What was checked is said as checked: the quote
check is where the quoted sentence stands, not whether it answers the question; an answer the
document does not state is written "not stated in the document", with no citation.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence

from rr_core.plans import Citation, Outcome
from rr_core.quotes import CHECK_MEANING, check_words
from rr_core.traces import RunTrace
from rr_core.untrusted import unlinked

CSV_COLUMNS = (
    "run_at", "run_id", "document", "document_sha256", "question", "method", "settings", "answer",
    "found", "pages_to_read", "page", "page_label", "quote", "quote_check", "citations", "support", "support_reason",
    "confidence", "score", "confidence_reason", "correct", "retrieved_pages", "input_tokens",
    "cached_tokens", "output_tokens", "calls", "cost_usd", "paid_usd", "estimate_usd", "latency_s",
    "provider", "model", "engine", "is_llm", "error", "warnings",
)  # fmt: skip


def to_json(traces: Sequence[RunTrace], *, include_prompts: bool = False) -> str:
    """All traces as JSON (the one trace shape). Prompts (the document's text, many times
    over) only when asked."""
    results = [t.to_dict(prompts=include_prompts) for t in traces]
    return json.dumps(
        {"prompts_included": include_prompts, "quote_check": CHECK_MEANING, "results": results},
        indent=2,
        ensure_ascii=False,
    )


def _answers(trace: RunTrace) -> Iterator[Outcome]:
    """Each answer of a run; a run that failed before answering still gets its row."""
    yield from trace.outcomes or [Outcome(question=trace.question, error=trace.error)]


def _absent(outcome: Outcome) -> str:
    """Who says an answer is not there: "no (not found)" or "no (the model says not stated)"."""
    return "no (the model says not stated)" if outcome.absent_by == "model" else "no (not found)"


def _correct(outcome: Outcome) -> str:
    return "" if outcome.correct is None else ("right" if outcome.correct else "wrong")


def _page(citation: Citation) -> str:
    if citation.page is None:
        return "—"
    label = citation.page_label
    return f"p. {citation.page}" + (f" (printed {label})" if label and label != str(citation.page) else "")


def _check(citation: Citation) -> str:
    """Where a citation's quote stands, in the screens' words (never "verified")."""
    return check_words(citation.quote_check, _page(citation), citation.quote_score)


def _citation(citation: Citation) -> str:
    quote = " ".join(citation.quote.split())
    return (
        f"{_page(citation)}: “{quote}” ({_check(citation)})"
        if quote
        else f"{_page(citation)} ({_check(citation)})"
    )


def answer_rows(trace: RunTrace) -> list[dict[str, object]]:
    """One flat row per answer of a run: what it answers, the answer, tokens and cost (the
    run's totals are repeated on each of its rows)."""
    usage = trace.usage
    rows: list[dict[str, object]] = []
    for outcome in _answers(trace):
        rows.append(
            {
                "run_at": trace.started_at,
                "run_id": trace.run_id,
                "document": trace.document,
                "document_sha256": trace.document_sha256,
                "question": outcome.question,
                "method": trace.method,
                "settings": trace.describe,
                "answer": outcome.answer_text,
                "found": "" if outcome.answer is None else ("yes" if outcome.found else _absent(outcome)),
                "pages_to_read": " ".join(str(p) for p in outcome.pages_to_read),
                "page": outcome.page if outcome.page is not None else "",
                "page_label": outcome.page_label,
                "quote": outcome.quote,
                "quote_check": _check(outcome.first) if outcome.first else "",
                "citations": " | ".join(_citation(c) for c in outcome.citations),
                "support": outcome.support if outcome.stated else "",
                "support_reason": outcome.support_reason if outcome.stated else "",
                "confidence": outcome.confidence,
                "score": "" if outcome.score is None else outcome.score,
                "confidence_reason": outcome.confidence_reason,
                "correct": _correct(outcome),
                "retrieved_pages": " ".join(str(p) for p in outcome.retrieved_pages),
                "input_tokens": usage.prompt_tokens,
                "cached_tokens": usage.cached_tokens,
                "output_tokens": usage.output_tokens,
                "calls": len(trace.calls),
                "cost_usd": round(trace.cost_usd, 6),
                "paid_usd": round(trace.paid_usd, 6),
                "estimate_usd": round(trace.estimate_usd, 6),
                "latency_s": trace.latency_s,
                "provider": trace.provider,
                "model": trace.model,
                "engine": _engine(trace),
                "is_llm": trace.is_llm,
                "error": outcome.error or trace.error or "",
                "warnings": " | ".join(trace.warnings),
            }
        )
    return rows


# Characters that make a spreadsheet read a cell as a formula, once look-alikes (fullwidth
# ＝＋－＠, small and superscript forms) are folded by NFKC. Minus signs NFKC leaves alone
# are added by hand.
_FORMULA_STARTS = frozenset("=+-@\t\r\n") | frozenset("\u2212\u2796\u2795\ufe63\uff0d")


def formula_like(text: str) -> bool:
    """Whether a spreadsheet would read this text, typed into a cell, as a formula."""
    folded = unicodedata.normalize("NFKC", text).lstrip(" \u00a0\u3000")
    return text[:1] in _FORMULA_STARTS or folded[:1] in _FORMULA_STARTS


def _csv_safe(value: object) -> object:
    """Text a spreadsheet would run as a formula is kept as text (a leading apostrophe: CSV
    has no other way to say so)."""
    if isinstance(value, str) and value and formula_like(value):
        return "'" + value
    return value


def csv_text(columns: Sequence[str], rows: Sequence[Mapping[str, object]]) -> str:
    """Rows as CSV with a header (text cannot run as a spreadsheet formula); empty with no columns."""
    out = io.StringIO()
    if columns:
        writer = csv.DictWriter(out, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_safe(v) for k, v in row.items()})
    return out.getvalue()


def to_csv(traces: Sequence[RunTrace]) -> str:
    """One row per answer (text from documents cannot run as spreadsheet formulas)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for trace in traces:
        for row in answer_rows(trace):
            writer.writerow({k: _csv_safe(v) for k, v in row.items()})
    return out.getvalue()


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~$])")


def md_escape(text: str) -> str:
    """Text from a document or a model, shown literally in Markdown: no links, images or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", unlinked(" ".join(text.split())))


def _when(started_at: str) -> str:
    """An ISO time as a reader writes it: ``2026-11-23 10:35 UTC``."""
    if len(started_at) >= 16 and started_at[10:11] == "T":
        zone = " UTC" if started_at.endswith(("+00:00", "Z")) else ""
        return f"{started_at[:10]} {started_at[11:16]}{zone}"
    return started_at or "—"


def _engine(trace: RunTrace) -> str:
    who = f"{trace.provider} / {trace.model}"
    return who if trace.is_llm else f"{who} (offline engine, not an LLM)"


def _cited(outcome: Outcome) -> str:
    """Each citation's page and where its quote stands: "quote located on p. 26; quote not located on p. 27"."""
    if not outcome.stated:
        return "—"
    return "; ".join(_check(c) for c in outcome.citations) or "no page cited"


def to_markdown(traces: Sequence[RunTrace]) -> str:
    """A report: each (document, question) under its own heading, with every method's answer,
    cited page, quote check, tokens and cost."""
    if not traces:
        return "# R&R Studio report\n\nNo runs.\n"
    groups: dict[tuple[str, str, str], list[tuple[RunTrace, Outcome]]] = {}
    for trace in traces:
        for outcome in _answers(trace):
            key = (trace.document, trace.document_sha256, outcome.question)
            groups.setdefault(key, []).append((trace, outcome))
    documents = {sha or name for name, sha, _ in groups}
    lines = [
        "# R&R Studio report",
        "",
        f"{len(traces)} run{'s' if len(traces) != 1 else ''}: {len(groups)} question"
        f"{'s' if len(groups) != 1 else ''} on {len(documents)} document{'s' if len(documents) != 1 else ''}.",
        "",
    ]
    for number, ((document, sha, question), answers) in enumerate(groups.items(), start=1):
        first = answers[0][0]
        lines += [
            f"## {number}. {md_escape(question) or '(no question)'}",
            "",
            f"- **Document:** {md_escape(document)} (sha256 `{sha[:12]}…`)",
            f"- **Question:** {md_escape(question)}",
            f"- **Prices:** {md_escape(first.price_data or 'unknown')}; priced as "
            f"{md_escape(first.settings.price_model or first.model)}",
            "",
            "| Method | Provider / model | Run at | Answer | Citations | Known answer "
            "| Retrieved pages | Input tokens | Output tokens | "
            + ("Cost (USD)" if any(t.is_llm for t, _ in answers) else "Would cost (USD), nothing paid")
            + " | Settings |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        notes = []
        for trace, outcome in answers:
            name = trace.label
            answer = md_escape(
                outcome.answer_text
                if outcome.answer is not None
                else f"error: {outcome.error or trace.error or ''}"
            )
            retrieved = ", ".join(str(p) for p in outcome.retrieved_pages) or "—"
            lines.append(
                f"| {md_escape(name)} | {md_escape(_engine(trace))} | {_when(trace.started_at)} | {answer} "
                f"| {md_escape(_cited(outcome))} | {_correct(outcome) or '—'} "
                f"| {retrieved} | {trace.usage.prompt_tokens:,} | {trace.usage.output_tokens:,} | {trace.cost_usd:.4f} "
                f"| {md_escape(trace.describe) or '—'} |"
            )
            problems = ([trace.error] if trace.error else []) + trace.warnings
            if problems:
                settings = f" ({md_escape(trace.describe)})" if trace.describe else ""
                notes.append(f"**{md_escape(name)}:**{settings} " + "; ".join(md_escape(n) for n in problems))
        lines += ["", *notes, *([""] if notes else [])]
    lines.append(
        "Page numbers are those of the document as loaded (PDF pages for PDFs; the printed page label beside "
        "them where the PDF has one). "
        + CHECK_MEANING
        + " Right and wrong are said only where the answer is "
        "known."
    )
    return "\n".join(lines) + "\n"
