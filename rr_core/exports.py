"""Run traces as JSON, CSV and a Markdown report that say what each run answers.

Every CSV row names its question, document (and its hash), provider, model and time; the
report files each run under its own document and question. Fields are read through
``RunTrace.to_dict()``, so a renamed trace field is a one-line change in ``_record``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rr_core.methods import Method
from rr_core.runs import RunTrace

CSV_COLUMNS = (
    "run_at", "run_id", "document", "document_sha256", "question", "method", "answer", "page",
    "retrieved_pages", "input_tokens", "cached_tokens", "output_tokens", "calls", "cost_usd",
    "estimate_usd", "latency_s", "provider", "model", "is_llm", "error", "warnings",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Record:
    """What the exports read of a trace, in one place."""

    data: dict[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        value = self.data.get(key, default)
        return default if value is None else value

    @property
    def run_id(self) -> str:
        return str(self.get("run_id", ""))

    @property
    def group(self) -> tuple[str, str, str]:
        """What a run answers: (document name, document hash, question)."""
        return (self.get("document", ""), self.get("document_sha256", ""), self.get("question", ""))


def _prompt_tokens(usage: dict[str, int]) -> int:
    """All input tokens, cached or not (``Usage.prompt_tokens`` from its stored fields)."""
    return sum(usage.get(k, 0) for k in ("input_tokens", "cached_tokens", "cache_write_tokens"))


def _record(trace: RunTrace) -> _Record:
    return _Record(trace.to_dict())


def to_json(traces: Sequence[RunTrace], *, include_prompts: bool = False) -> str:
    """All traces as JSON. Prompts (the document's text, many times over) only when asked."""
    results = []
    for trace in traces:
        data = trace.to_dict()
        if not include_prompts:
            for call in data.get("calls", []):
                call.pop("prompt", None)
        results.append(data)
    return json.dumps({"prompts_included": include_prompts, "results": results}, indent=2, ensure_ascii=False)


def summary_row(trace: RunTrace) -> dict[str, object]:
    """One flat row per run of a method: what it answers, the answer, tokens, cost (CSV, tables)."""
    r = _record(trace)
    usage = r.get("usage", {})
    return {
        "run_at": r.get("started_at", ""),
        "run_id": r.run_id,
        "document": r.get("document", ""),
        "document_sha256": r.get("document_sha256", ""),
        "question": r.get("question", ""),
        "method": r.get("method", ""),
        "answer": r.get("answer", ""),
        "page": r.get("page", ""),
        "retrieved_pages": " ".join(str(p) for p in r.get("retrieved_pages", [])),
        "input_tokens": _prompt_tokens(usage),
        "cached_tokens": usage.get("cached_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "calls": len(r.get("calls", [])),
        "cost_usd": round(float(r.get("cost_usd", 0.0)), 6),
        "estimate_usd": round(float(r.get("estimate_usd", 0.0)), 6),
        "latency_s": r.get("latency_s", 0.0),
        "provider": r.get("provider", ""),
        "model": r.get("model", ""),
        "is_llm": bool(r.get("is_llm", False)),
        "error": r.get("error", ""),
        "warnings": " | ".join(r.get("warnings", [])),
    }


# Characters that make a spreadsheet read a cell as a formula, once look-alikes (fullwidth
# ＝＋－＠, small and superscript forms) are folded by NFKC. Minus signs NFKC leaves alone
# are added by hand.
_FORMULA_STARTS = frozenset("=+-@\t\r\n") | frozenset("\u2212\u2796\u2795\ufe63\uff0d")


def _csv_safe(value: object) -> object:
    """Text a spreadsheet would run as a formula is kept as text (a leading apostrophe)."""
    if not isinstance(value, str) or not value:
        return value
    folded = unicodedata.normalize("NFKC", value).lstrip(" \u00a0\u3000")
    if value[:1] in _FORMULA_STARTS or folded[:1] in _FORMULA_STARTS:
        return "'" + value
    return value


def to_csv(traces: Sequence[RunTrace]) -> str:
    """One row per run of a method (text from documents cannot run as spreadsheet formulas)."""
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


def _label(method: str) -> str:
    try:
        return Method(method).label
    except ValueError:
        return method


def _when(started_at: str) -> str:
    """An ISO time as a reader writes it: ``2026-11-23 10:35 UTC``."""
    if len(started_at) >= 16 and started_at[10:11] == "T":
        zone = " UTC" if started_at.endswith(("+00:00", "Z")) else ""
        return f"{started_at[:10]} {started_at[11:16]}{zone}"
    return started_at or "—"


def _engine(r: _Record) -> str:
    who = f"{r.get('provider', '')} / {r.get('model', '')}"
    return who if r.get("is_llm", False) else f"{who} (offline engine, not an LLM)"


def _group_lines(number: int, records: list[_Record]) -> list[str]:
    first = records[0]
    document, sha, question = first.group
    settings = first.get("settings", {})
    lines = [
        f"## {number}. {md_escape(question) or '(no question)'}",
        "",
        f"- **Document:** {md_escape(document)} (sha256 `{sha[:12]}…`)",
        f"- **Question:** {md_escape(question)}",
        f"- **Prices:** {first.get('price_data', '') or 'unknown'}; priced as "
        f"{md_escape(str(settings.get('price_model') or first.get('model', '')))}",
        "",
        "| Method | Provider / model | Run at | Answer | Cited page | Retrieved pages "
        "| Input tokens | Output tokens | Cost (USD) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        usage = r.get("usage", {})
        answer = md_escape(r.get("answer", "") or f"error: {r.get('error', '')}")
        cited = f"p. {r.get('page')}" if r.get("page") else "—"
        retrieved = ", ".join(str(p) for p in r.get("retrieved_pages", [])) or "—"
        lines.append(
            f"| {_label(r.get('method', ''))} | {md_escape(_engine(r))} | {_when(r.get('started_at', ''))} "
            f"| {answer} | {cited} | {retrieved} | {_prompt_tokens(usage):,} "
            f"| {usage.get('output_tokens', 0):,} | {float(r.get('cost_usd', 0.0)):.4f} |"
        )
    notes = []
    for r in records:
        problems = ([r.get("error")] if r.get("error") else []) + list(r.get("warnings", []))
        if problems:
            notes.append(f"**{_label(r.get('method', ''))}:** " + "; ".join(md_escape(n) for n in problems))
    return [*lines, "", *notes, *([""] if notes else [])]


def to_markdown(traces: Sequence[RunTrace]) -> str:
    """A report: each (document, question) under its own heading, with every method's answer,
    cited page, tokens and cost."""
    if not traces:
        return "# R&R Studio report\n\nNo runs.\n"
    groups: dict[tuple[str, str, str], list[_Record]] = {}
    for trace in traces:
        record = _record(trace)
        groups.setdefault(record.group, []).append(record)
    documents = {sha or name for name, sha, _ in groups}
    questions = len(groups)
    lines = [
        "# R&R Studio report",
        "",
        f"{len(traces)} run{'s' if len(traces) != 1 else ''}: "
        f"{questions} question{'s' if questions != 1 else ''} on "
        f"{len(documents)} document{'s' if len(documents) != 1 else ''}.",
        "",
    ]
    for number, records in enumerate(groups.values(), start=1):
        lines.extend(_group_lines(number, records))
    lines.append("Page numbers are those of the document as loaded (PDF pages for PDFs).")
    return "\n".join(lines) + "\n"
