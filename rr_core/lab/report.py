"""A sweep's results as JSON (the shape scripts read), CSV (one row per cell) and a Markdown
report with the plots' numbers."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rr_core.exports import md_escape
from rr_core.lab.haystacks import CONSTRUCTIONS
from rr_core.lab.stats import SeriesSummary
from rr_core.lab.sweep import SweepPlan, SweepResult


def protocol(plan: SweepPlan) -> dict[str, Any]:
    """How the sweep's test documents and prompts were made: the distracters' construction
    (where the task has one), where each series puts the question, and the scoring rule."""
    constructions = list(dict.fromkeys(t.construction for t in plan.trials if t.construction))
    placements: dict[str, str] = {}
    for job in plan.jobs:
        placements.setdefault(job.series, job.plan.settings.question_placement.value)
    exact = any(t.exact for t in plan.trials)
    return {
        "construction": constructions,
        "construction_means": {c: CONSTRUCTIONS[c] for c in constructions},
        "question_placement": placements,
        "scored_by": "exact match on the value" if exact else "fuzzy match (000 §4.3)",
    }


def _summary_dict(s: SeriesSummary) -> dict[str, Any]:
    return {
        "method": s.series,
        "method_name": s.method,
        "trials": s.trials,
        "accuracy": round(s.accuracy, 4),
        "ci_low": round(s.ci[0], 4),
        "ci_high": round(s.ci[1], 4),
        "cost_usd": round(s.cost_usd, 6),
        "calls_per_trial": round(s.calls_per_trial, 2),
        "input_tokens_per_trial": round(s.input_per_trial),
        "output_tokens_per_trial": round(s.output_per_trial),
        "effective_length": s.effective_length,
        "accuracy_by_length": {str(k): round(v, 4) for k, v in s.by_length.items()},
        "retrieval_misses": s.retrieval_misses,
        "reading_misses": s.reading_misses,
        "on_cost_accuracy_frontier": s.on_frontier,
    }


def sweep_json(
    plan: SweepPlan, result: SweepResult, *, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The sweep as one JSON object: plan, calls made and cached, cells, series, bounds."""
    return {
        **(context or {}),
        "protocol": protocol(plan),
        "plan": plan.summary(),
        "calls_made": result.calls_made,
        "calls_cached": result.calls_cached,
        "cost_usd": round(result.cost_usd(), 6),
        "cancelled": result.cancelled,
        "cells": [c.as_dict() for c in result.cells],
        "series": [_summary_dict(s) for s in result.summaries],
        "bounds": [_summary_dict(s) for s in result.bounds],
        "missing_cells": result.missing_cells,
        "failures": result.failures[:50],
    }


def sweep_csv(result: SweepResult) -> str:
    """One row per cell (series × length × depth)."""
    rows = [c.as_dict() for c in result.cells]
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def sweep_markdown(plan: SweepPlan, result: SweepResult, *, title: str, engine: str, document: str) -> str:
    """A report: what was measured, on what, the accuracy by series and by depth, and the cost."""
    lines = [
        f"# R&R Studio Lab: {md_escape(title)}",
        "",
        f"- **Document:** {md_escape(document)}",
        f"- **Engine:** {md_escape(engine)}",
        f"- **Trials:** {len(plan.trials):,}; runs {len(plan.jobs):,}; calls made {result.calls_made:,}, "
        f"found in the store {result.calls_cached:,}; cost ${result.cost_usd():.4f} (estimated ${plan.usd:.4f} "
        f"as {md_escape(plan.priced_as)})",
        *_protocol_lines(plan),
        "",
        f"## Accuracy by method ({'exact match' if any(t.exact for t in plan.trials) else 'fuzzy match'}, 95% Wilson interval)",
        "",
        "| Method | Trials | Accuracy | 95% interval | Effective length | Retrieval misses | Reading misses | Calls / trial | Input tokens / trial | Cost (USD) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in (*result.summaries, *result.bounds):
        eff = f"{s.effective_length:,}" if s.effective_length else "—"
        lines.append(
            f"| {md_escape(s.series)} | {s.trials} | {s.accuracy:.0%} | {s.ci[0]:.0%}–{s.ci[1]:.0%} | {eff} "
            f"| {s.retrieval_misses} | {s.reading_misses} | {s.calls_per_trial:.1f} | {s.input_per_trial:,.0f} | {s.cost_usd:.4f} |"
        )
    lines += [
        "",
        "## Accuracy by depth and length",
        "",
        "| Method | Length | Depth | Trials | Accuracy | 95% interval |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in result.cells:
        low, high = c.interval
        lines.append(
            f"| {md_escape(c.series)} | {c.length:,} | {c.depth:g}% | {c.trials} | {c.accuracy:.0%} | {low:.0%}–{high:.0%} |"
        )
    if result.missing_cells:
        lines += [
            "",
            "**Incomplete cells** (a run failed): " + md_escape("; ".join(result.missing_cells[:30])),
        ]
    lines += [
        "",
        "Effective length: the longest length at which a method keeps at least 85% of its own shortest-length accuracy.",
        "Retrieval miss: the page holding the answer was not among the pages the method picked; reading miss: it was, and the answer was still wrong.",
    ]
    return "\n".join(lines) + "\n"


def _protocol_lines(plan: SweepPlan) -> list[str]:
    made = protocol(plan)
    lines = [
        f"- **Distracters:** {md_escape(c)}: {md_escape(CONSTRUCTIONS[c])}" for c in made["construction"]
    ]
    layouts = sorted(set(made["question_placement"].values()))
    lines.append("- **Question placement:** " + md_escape(", ".join(layouts)))
    lines.append(f"- **Scored by:** {made['scored_by']}")
    return lines


def dumps(data: dict[str, Any]) -> str:
    """JSON text."""
    return json.dumps(data, indent=2, ensure_ascii=False)
