"""Run traces as JSON, CSV and a Markdown report with page citations."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence

from rr_core.runs import RunTrace

CSV_COLUMNS = (
    "method", "answer", "page", "retrieved_pages", "input_tokens", "cached_tokens",
    "output_tokens", "calls", "cost_usd", "estimate_usd", "latency_s", "provider", "model",
    "error", "warnings",
)  # fmt: skip


def to_json(traces: Sequence[RunTrace]) -> str:
    """All traces, with every call's prompt and response."""
    return json.dumps({"results": [t.to_dict() for t in traces]}, indent=2, ensure_ascii=False)


def summary_row(trace: RunTrace) -> dict[str, object]:
    """One flat row per method (CSV, tables)."""
    usage = trace.usage
    return {
        "method": trace.method,
        "answer": trace.answer,
        "page": trace.page,
        "retrieved_pages": " ".join(str(p) for p in trace.retrieved_pages),
        "input_tokens": usage.prompt_tokens,
        "cached_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens,
        "calls": len(trace.calls),
        "cost_usd": round(trace.cost_usd, 6),
        "estimate_usd": round(trace.estimate_usd, 6),
        "latency_s": trace.latency_s,
        "provider": trace.provider,
        "model": trace.model,
        "error": trace.error or "",
        "warnings": " | ".join(trace.warnings),
    }


def _csv_safe(value: object) -> object:
    """Text a spreadsheet would run as a formula (=, +, -, @ first) is kept as text."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def to_csv(traces: Sequence[RunTrace]) -> str:
    """One row per method (answers quoted from documents cannot run as spreadsheet formulas)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for trace in traces:
        writer.writerow({k: _csv_safe(v) for k, v in summary_row(trace).items()})
    return out.getvalue()


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~$])")


def md_escape(text: str) -> str:
    """Text from a document or a model, shown literally in Markdown: no links, images or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _label(trace: RunTrace) -> str:
    return trace.label or trace.method


def to_markdown(traces: Sequence[RunTrace]) -> str:
    """A short report: the question, each method's answer with its page, tokens and cost."""
    if not traces:
        return "# R&R Studio report\n\nNo runs.\n"
    first = traces[0]
    lines = [
        "# R&R Studio report",
        "",
        f"- **Document:** {md_escape(first.document)} (sha256 `{first.document_sha256[:12]}…`)",
        f"- **Question:** {md_escape(first.question)}",
        f"- **Provider / model:** {first.provider} / {first.model}"
        + ("" if first.is_llm else " — offline engine, not an LLM"),
        f"- **Run at:** {first.started_at}",
        f"- **Prices:** {first.price_data or 'unknown'}; priced as {first.settings.price_model or first.model}",
        "",
        "| Method | Answer | Cited page | Retrieved pages | Input tokens | Output tokens | Cost (USD) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in traces:
        answer = md_escape(t.answer or f"error: {t.error}")
        cited = f"p. {t.page}" if t.page else "—"
        retrieved = ", ".join(str(p) for p in t.retrieved_pages) or "—"
        lines.append(
            f"| {_label(t)} | {answer} | {cited} | {retrieved} | {t.usage.prompt_tokens:,} "
            f"| {t.usage.output_tokens:,} | {t.cost_usd:.4f} |"
        )
    lines.append("")
    for t in traces:
        if t.warnings or t.error:
            notes = ([t.error] if t.error else []) + t.warnings
            lines.append(f"**{_label(t)}:** " + "; ".join(md_escape(n) for n in notes))
    lines.append("")
    lines.append("Page numbers are those of the document as loaded (PDF pages for PDFs).")
    return "\n".join(lines) + "\n"
