"""A sweep's results as JSON (the shape scripts read), CSV (one row per cell, or one row per
trial and method for re-analysis) and a Markdown report with the plots' numbers.

Every cell states its trials and distinct questions; every interval is the clustered one
(``stats.clustered_wilson``); two methods are compared paired, and a sentence says one
answered more right than another only when the difference's interval excludes 0 and McNemar's
exact p < 0.05. A cell or series with no counted trial (every run failed) reads "n/a" (JSON
null), never 0%.

Money is said as it was spent: ``paid_usd`` is what the sweep paid (a free engine, offline or
simulated, pays nothing), ``would_cost_usd`` what its calls cost at the price it is priced at.
A free engine's figures read "would cost" everywhere, and every CSV row names its engine.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any

from rr_core.costs import Mode
from rr_core.exports import csv_text, md_escape
from rr_core.lab.haystacks import CONSTRUCTIONS
from rr_core.lab.stats import (
    EFFECTIVE_KEEP,
    EFFECTIVE_MARGIN,
    EFFECTIVE_RULE,
    MDD_RULE,
    PRIMARY_RULE,
    Score,
    SeriesSummary,
    detectable_text,
    percent,
    percent_range,
    points_text,
)
from rr_core.lab.sweep import LabJob, SweepPlan, SweepResult
from rr_core.lab.tasks import get_task
from rr_core.methods import get_method, spec_of
from rr_core.settings import PromptProtocol, ReminderPlacement, RunSettings

INTERVAL_RULE = (
    "95% intervals treat the question (planted fact, QA item, key) as the unit: the Wilson interval of "
    "the accuracy with the number of distinct questions as its sample size, because trials that reuse a "
    "question are not independent."
)
PAIRED_RULE = (
    "Two methods are compared on the trials both answered: the difference in accuracy with a 95% interval "
    "(Newcombe's paired score interval at the number of distinct questions) and McNemar's exact test over "
    "the questions; a method is said to answer more right (or fewer) only when both the interval excludes 0 "
    "and McNemar's p is below 0.05."
)
METRIC_RULE = (
    "Right means fuzzy match (METHOD.md §11: normalised words of one answer all in the other), or exact "
    "match on the value for key-value retrieval; exact match is best-subspan EM; a failed run is left out "
    "of its cell and named (in the paper's protocol it is counted, as wrong). The reference metric is the "
    "lenient one of the code behind the paper's Table 1: also right when one normalised text contains the "
    "other (a substring), reported beside the strict one to compare with the paper."
)
PAPER_FAILURES = (
    "The paper's protocol counts a failed run as wrong: it stays in its cell's denominator, as the "
    "reference code scores it 0."
)


# What a reminding method is when no reminder fits in what it reads.
WITHOUT_REMINDERS = {"rr": "icr", "reprompt": "baseline", "chunked-rr": "chunked-icr"}


def reminders_at(settings: RunSettings, tokens: float) -> int | None:
    """How many reminders a reminding method's reading span of a ``tokens``-token document
    holds (the whole document, or one chunk of at most ``chunk_size`` tokens for chunked R&R):
    one each time the running count reaches k. None: the method sends no reminders every k
    (it does not remind, or reminds before named pages)."""
    method = get_method(settings.method)
    if not method.reminds or settings.reminder_placement is ReminderPlacement.BEFORE_PAGES:
        return None
    span = min(tokens, settings.chunk_size) if "chunk_size" in method.params else tokens
    return int(span // max(settings.reminder_every, 1))


def reminder_notes(plan: SweepPlan) -> dict[tuple[str, int], str]:
    """Per (series, length): what a reminding method is where no reminder fits ("R&R = ICR
    here: k = 10,000 exceeds the document (2,400 tokens)"), or how many reminders it gets."""
    built: dict[int, list[int]] = {}
    for t in plan.trials:
        built.setdefault(t.length, []).append(t.tokens)
    notes: dict[tuple[str, int], str] = {}
    for job in plan.jobs:
        info = LabJob.of(job)
        if info.bound:
            continue
        trial = plan.trial(info.trial)
        if trial is None or (info.series, trial.length) in notes:
            continue
        sizes = built.get(trial.length) or [trial.tokens]
        tokens = sum(sizes) / len(sizes)
        settings = job.settings
        count = reminders_at(settings, tokens)
        if count is None:
            continue
        method = get_method(settings.method)
        if count == 0:
            same = WITHOUT_REMINDERS.get(method.name)
            label = get_method(same).label if same else f"{method.label} without reminders"
            chunked = "chunk_size" in method.params and settings.chunk_size < tokens
            where = (
                f"each chunk (≤ {settings.chunk_size:,} tokens)"
                if chunked
                else f"the document ({tokens:,.0f} tokens)"
            )
            notes[info.series, trial.length] = (
                f"{method.label} = {label} here: k = {settings.reminder_every:,} exceeds {where}"
            )
        else:
            notes[info.series, trial.length] = (
                f"k = {settings.reminder_every:,} gives {count} reminder{'s' if count != 1 else ''}"
                + (" per chunk" if "chunk_size" in method.params and settings.chunk_size < tokens else "")
            )
    return notes


def effective_sentence(s: SeriesSummary, notes: dict[tuple[str, int], str] | None = None) -> str | None:
    """Effective length in words, naming the weakest length and why: "R&R holds ≥ 85% of its
    accuracy at 10,000 tokens (100%) up to 10,000 tokens, but only 60% at 20,000, where k =
    10,000 gives 1 reminder." None with one length."""
    eff = s.effective
    if eff is None or not eff.measured or not s.by_length:
        return None
    shortest = min(s.by_length)
    weakest = min(s.by_length, key=lambda n: (s.by_length[n], n))
    why = (notes or {}).get((s.series, weakest))
    where = f", where {why}" if why else ""
    at = f"only {s.by_length[weakest]:.0%} at {weakest:,}{where}"
    if eff.length is None:
        return (
            f"{s.series} has no effective length: its accuracy at {shortest:,} tokens ({eff.base:.0%}, 95% "
            f"interval from {eff.base_low:.0%}) is not clearly above the floor of {eff.floor:.0%}; "
            + (f"its lowest: {at}." if weakest != shortest else f"lowest there{where}.")
        )
    held = (
        f"{s.series} holds ≥ {EFFECTIVE_KEEP:.0%} of its accuracy at {shortest:,} tokens ({eff.base:.0%}) "
        f"up to {eff.length:,} tokens"
    )
    if weakest == shortest:
        lowest = f"; at {shortest:,}, {why}" if why else ""
        return f"{held}{' (the longest measured)' if eff.held_to_longest else ''}{lowest}."
    if eff.held_to_longest:
        return f"{held} (the longest measured); its lowest: {at}."
    return f"{held}, but {at}."


def plain_lines(plan: SweepPlan, result: SweepResult) -> list[str]:
    """The results in an analyst's words, first: the primary comparison, then each other
    comparison that showed a difference, then one sentence naming the others (no difference
    shown, each with its points and adjusted p); then the effective length of each series that
    has one (and of the primary's series), naming its weakest length and why."""
    notes = reminder_notes(plan)
    made = result.comparisons
    lines = [c.plain() for c in made if c.primary or c.shown]
    rest = [c for c in made if not (c.primary or c.shown) and c.trials]
    if rest:
        named = "; ".join(
            f"{c.series} against {c.against} {points_text(c.difference)} points (p = {c.p_verdict:.2g})"
            for c in rest
        )
        held = f"after Holm's adjustment for {rest[0].family}, " if rest[0].p_adjusted is not None else ""
        lines.append(
            f"No difference shown in the other comparison{'s' if len(rest) != 1 else ''} ({held}each could be "
            f"chance): {named}."
        )
    if made and made[0].primary and (cheapest := cheapest_match_sentence(made[0].series, result)):
        lines.append(cheapest)
    if len(result.lengths) > 1:
        primary = made[0].series if made and made[0].primary else None
        lines += [
            text
            for s in result.summaries
            if (s.effective_length is not None or s.series == primary)
            and (text := effective_sentence(s, notes))
        ]
    return lines


def cheapest_match_sentence(series: str, result: SweepResult) -> str | None:
    """R&R (the primary comparison's series) against the cheapest method not shown to answer
    fewer questions right than it, in one sentence; "not shown worse" is not "as good", and the
    sentence says how large a difference the sweep could have shown."""
    from rr_core.lab.stats import detectable_difference

    summaries = {s.series: s for s in result.summaries}
    mine = summaries.get(series)
    if mine is None or mine.accuracy is None:
        return None
    cheaper = sorted(
        (
            s
            for s in summaries.values()
            if s.series != series and s.accuracy is not None and s.cost_usd < mine.cost_usd
        ),
        key=lambda s: s.cost_usd,
    )
    if not cheaper:
        return f"No method cost less than {series} in this sweep."
    pairs = {
        (c.series, c.against): c for c in result.comparisons if series in (c.series, c.against) and c.trials
    }
    for s in cheaper:
        c = pairs.get((series, s.series)) or pairs.get((s.series, series))
        if c is None:
            continue
        worse = c.shown > 0 if c.series == series else c.shown < 0
        if worse:
            continue
        can = detectable_difference(c.questions)
        reach = (
            f"this sweep could show differences of about {round(can * 100)} points or more"
            if can is not None
            else "this sweep has too few questions to show any difference"
        )
        return (
            f"The cheapest method not shown to answer fewer questions right than {series}: {s.series}, "
            f"{'costing' if result.is_llm else 'which would cost'} ${s.cost_usd:.4g} against ${mine.cost_usd:.4g} "
            f"for the sweep ({percent(s.accuracy)} right against "
            f"{percent(mine.accuracy)}; {_p_text(c.p_verdict)}). Not shown worse is not shown as good: {reach}."
        )
    return f"Every method cheaper than {series} was shown to answer fewer questions right: none matches it for less."


def _p_text(value: float) -> str:
    return f"p = {value:.2g}" if value >= 0.001 else "p < 0.001"


def plan_power(plan: SweepPlan) -> dict[str, Any]:
    """What the sweep can show before it runs: its distinct questions and the smallest
    difference detectable at 80% power (``stats.detectable_difference``)."""
    from rr_core.lab.stats import detectable_difference

    questions = len({t.question_id for t in plan.trials})
    found = detectable_difference(questions)
    return {
        "questions": questions,
        "detectable_difference": None if found is None else round(found, 4),
        "text": detectable_text(questions),
        "rule": MDD_RULE,
    }


def protocol(plan: SweepPlan) -> dict[str, Any]:
    """How the sweep's test documents and prompts were made: the distracters' construction
    (where the task has one), where each series puts the question, and the scoring rule."""
    constructions = list(dict.fromkeys(t.construction for t in plan.trials if t.construction))
    placements: dict[str, str] = {}
    why: dict[str, str] = {}
    for job in plan.jobs:
        series = LabJob.of(job).series
        if series in placements:
            continue
        used = job.settings.question_placement  # as the method runs it
        placements[series] = used.value
        method = get_method(job.settings.method)
        own = method.layout_reason(plan.layout)
        why[series] = (
            "the sweep's layout"
            if used is plan.layout
            else own or f"set for this series (layout={used.value})"
        )
    exact = any(t.exact for t in plan.trials)
    protocols = plan.protocols
    kinds = sorted(set(protocols.values()))
    dropped = {t.question_id: t.dropped for t in plan.trials if get_task(t.task).drops_passages}
    return {
        "construction": constructions,
        "construction_means": {c: CONSTRUCTIONS[c] for c in constructions},
        # Passages that held an accepted answer and were not shown (a second place to find it).
        "answer_passages_dropped": (
            {"passages": sum(dropped.values()), "questions": len(dropped)} if dropped else None
        ),
        "layout": plan.layout.value,
        "question_placement": placements,
        "question_placement_why": why,
        "scored_by": "exact match on the value" if exact else "fuzzy match (000 §4.3)",
        # Which prompts made the results: the analyst's JSON with quotes, or the paper's own.
        "prompt_protocol": kinds[0] if len(kinds) == 1 else "mixed",
        "prompt_protocol_by_series": protocols,
        "prompt_protocol_means": {p: PromptProtocol(p).label for p in kinds},
        "also_scored_by": "the reference metric of the code behind the paper's Table 1 (substring allowed)",
        "failed_runs": (
            "counted as wrong (the paper's protocol)"
            if kinds == [PromptProtocol.PAPER.value]
            else "left out of their cell"
            if PromptProtocol.PAPER.value not in kinds
            else "counted as wrong in the paper's protocol's series, left out in the others"
        ),
    }


def _cost_key(result: SweepResult) -> str:
    """What a series' or cell's cost is called: paid by an LLM, or what a free engine's
    calls would cost."""
    return "cost_usd" if result.is_llm else "would_cost_usd"


def _summary_dict(s: SeriesSummary, cost_key: str = "cost_usd") -> dict[str, Any]:
    effective = s.effective
    return {
        "method": s.series,
        "method_name": s.method,
        "trials": s.trials,
        "questions": s.questions,
        "accuracy": None if s.accuracy is None else round(s.accuracy, 4),
        "accuracy_paper_metric": None if s.paper_accuracy is None else round(s.paper_accuracy, 4),
        "ci_low": None if s.accuracy is None else round(s.ci[0], 4),
        "ci_high": None if s.accuracy is None else round(s.ci[1], 4),
        cost_key: round(s.cost_usd, 6),
        "calls_per_trial": round(s.calls_per_trial, 2),
        "input_tokens_per_trial": round(s.input_per_trial),
        "output_tokens_per_trial": round(s.output_per_trial),
        "effective_length": s.effective_length,
        "effective_length_text": effective.text() if effective is not None else "—",
        "effective_length_checked": effective.why() if effective is not None and effective.measured else None,
        "accuracy_by_length": {str(k): round(v, 4) for k, v in s.by_length.items()},
        "retrieves": s.retrieves,
        "retrieval_misses": s.retrieval_misses if s.retrieves else None,
        "reading_misses": s.reading_misses if s.retrieves else None,
        "wrong": s.retrieval_misses + s.reading_misses,
        "on_cost_accuracy_frontier": s.on_frontier,
    }


def sweep_json(
    plan: SweepPlan, result: SweepResult, *, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The sweep as one JSON object: plan, calls made and cached, what was paid (and what the
    calls would cost), why it stopped, cells, series, paired comparisons, bounds, and the
    rules the numbers follow."""
    key = _cost_key(result)
    return {
        **(context or {}),
        "engine": result.engine,
        "protocol": protocol(plan),
        "plan": plan.summary(),
        "calls_made": result.calls_made,
        "calls_cached": result.calls_cached,
        "calls_shared": result.calls_shared,
        "paid_usd": round(result.paid_usd(), 6),
        "would_cost_usd": round(result.would_cost_usd(), 6),
        "cancelled": result.cancelled,
        "stopped": result.stopped,
        "save_error": result.save_error,
        "cells": [_cell_dict(c.as_dict(), key) for c in result.cells],
        "series": [_summary_dict(s, key) for s in result.summaries],
        "plain": plain_lines(plan, result),
        "power": plan_power(plan),
        "reminders": {
            f"{series} @ {length}": note for (series, length), note in reminder_notes(plan).items()
        },
        "comparisons": [c.as_dict() for c in result.comparisons],
        "bounds": [_summary_dict(s, key) for s in result.bounds],
        "missing_cells": result.missing_cells,
        "failed_runs": len(result.failures),
        "failures": result.failures[:50],
        "failure_reasons": [{"reason": reason, "runs": n} for reason, n in result.failure_reasons[:20]],
        "rules": {
            "metric": METRIC_RULE,
            "failures": PAPER_FAILURES,
            "interval": INTERVAL_RULE,
            "paired": PAIRED_RULE,
            "primary": PRIMARY_RULE,
            "detectable_difference": MDD_RULE,
            "effective_length": EFFECTIVE_RULE,
            "closed_book_for_floor": result.closed_book,
        },
    }


def _cell_dict(cell: dict[str, object], cost_key: str) -> dict[str, object]:
    return {(cost_key if k == "cost_usd" else k): v for k, v in cell.items()}


def sweep_csv(result: SweepResult) -> str:
    """One row per cell (series × length × depth), with its trials and distinct questions,
    each naming its engine; a free engine's cost column is ``would_cost_usd``."""
    key = _cost_key(result)
    rows = [{"engine": result.engine, **_cell_dict(c.as_dict(), key)} for c in result.cells]
    return csv_text(list(rows[0]) if rows else [], rows)


TRIAL_COLUMNS = (
    "trial_id", "task", "question_id", "question", "accepted_answers", "gold_pages", "length", "depth",
    "built_tokens", "gold_depth", "answer_passages_dropped", "tokens_to_end", "repeat", "seed", "construction", "series", "method_spec", "question_placement", "protocol",
    "bound", "engine", "is_llm", "provider", "model", "temperature", "max_output_tokens", "answer",
    "scored_by", "correct", "correct_paper_metric", "exact_match", "cited_page", "retrieved_pages", "gold_page_retrieved", "failed", "error", "calls", "input_tokens", "output_tokens",
    "would_cost_usd", "paid_usd", "document_sha256",
)  # fmt: skip


def trial_rows(
    plan: SweepPlan, result: SweepResult, *, context: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One row per trial and method (bounds included): the table a reviewer re-analyses.
    ``context`` fills the columns the sweep shares (engine, is_llm, seed, temperature)."""
    shared = context or {}
    rows: list[dict[str, Any]] = []
    defaults = RunSettings()
    for s in sorted((*result.scores, *result.bound_scores), key=lambda s: s.job):
        job = plan.jobs[s.job] if 0 <= s.job < len(plan.jobs) else None
        trial = plan.trial(LabJob.of(job).trial) if job is not None else None
        settings = job.settings if job is not None else None
        rows.append(
            {
                "trial_id": s.trial,
                "task": trial.task if trial else "",
                "question_id": s.question_id,
                "question": trial.question if trial else "",
                "accepted_answers": " | ".join(trial.answers) if trial else "",
                "gold_pages": " ".join(str(p) for p in trial.gold_pages) if trial else "",
                "length": s.length,
                "depth": s.depth,
                "built_tokens": trial.tokens if trial else "",
                "gold_depth": trial.gold_depth if trial else "",
                "answer_passages_dropped": trial.dropped
                if trial and get_task(trial.task).drops_passages
                else "",
                "tokens_to_end": s.tokens_after,
                "repeat": s.repeat,
                "seed": shared.get("seed", ""),
                "construction": trial.construction if trial else "",
                "series": s.series,
                "method_spec": spec_of(settings, defaults) if settings else s.method,
                "question_placement": settings.question_placement.value if settings else "",
                "protocol": s.protocol,
                "bound": int(job is not None and LabJob.of(job).bound),
                "engine": shared.get("engine", ""),
                "is_llm": shared.get("is_llm", ""),
                "provider": settings.provider if settings else "",
                "model": settings.model if settings else "",
                "temperature": _temperatures(s, shared),
                "max_output_tokens": settings.max_output_tokens if settings else "",
                "answer": s.answer,
                "scored_by": "exact match" if trial and trial.exact else "fuzzy match",
                "correct": "" if not s.counted else int(s.correct),
                "correct_paper_metric": "" if not s.counted else int(s.paper_correct),
                "exact_match": "" if s.failed else int(s.em),
                "cited_page": "" if s.cited is None else s.cited,
                "retrieved_pages": " ".join(str(p) for p in s.retrieved),
                "gold_page_retrieved": int(s.recalled) if s.retrieves and not s.failed else "",
                "failed": int(s.failed),
                "error": s.error,
                "calls": s.calls,
                "input_tokens": s.input_tokens,
                "output_tokens": s.output_tokens,
                "would_cost_usd": round(s.cost_usd, 6),
                "paid_usd": round(s.paid_usd, 6),
                "document_sha256": trial.document_sha256 if trial else "",
            }
        )
    return rows


def _shared_text(shared: int) -> str:
    """ ", shared with a call in flight N" when calls waited for the same call of another run."""
    return f", shared with a call in flight {shared:,}" if shared else ""


def _temperatures(s: Score, shared: dict[str, Any]) -> object:
    """What the run's calls were sent with, per call (a server may reject the temperature
    mid-run): ``0``, ``not sent``, or both; a free engine says it is deterministic."""
    if shared.get("is_llm") == 0:
        return shared.get("temperature", "")
    return " / ".join("not sent" if t is None else f"{t:g}" for t in s.temperatures)


def trials_csv(plan: SweepPlan, result: SweepResult, *, context: dict[str, Any] | None = None) -> str:
    """``trial_rows`` as CSV (text from documents and models cannot run as spreadsheet formulas)."""
    return csv_text(list(TRIAL_COLUMNS), trial_rows(plan, result, context=context))


def _pct(x: float | None) -> str:
    return percent(x)


def _planted_line(plan: SweepPlan) -> list[str]:
    facts, regenerated = plan.planted_facts
    if not facts:
        return []
    return [
        f"- **Planted facts:** {facts:,}; {regenerated:,} drawn again because the document itself "
        "stated an accepted answer or named the fact's subject"
    ]


# How a sweep's calls were sent, as reports say it.
SENT: dict[str, str] = {
    "now": "now (every call at once, at the list price)",
    "batch": "in batches (provider batches at the batch price, answered within 24 h; a free engine answers "
    "them in this process, which saves nothing)",
}


def sweep_markdown(
    plan: SweepPlan, result: SweepResult, *, title: str, engine: str, document: str, mode: Mode = "now"
) -> str:
    """A report: what was measured, on what, the accuracy by series and by depth with n and
    intervals, the paired differences, and the cost (estimated for the mode it was sent in)."""
    several_lengths = len(result.lengths) > 1
    if result.is_llm and not plan.summary()["price_known"]:
        money = f"paid: price unknown ({md_escape(plan.priced_as)})"
    elif result.is_llm:
        money = f"paid ${result.paid_usd():.4f} (estimated ${plan.usd_for(mode):.4f} as {md_escape(plan.priced_as)})"
    else:
        money = (
            f"paid $0 (a free engine, not an LLM); the same calls would cost ${result.would_cost_usd():.4f} "
            f"as {md_escape(plan.priced_as)}"
        )
    plain = plain_lines(plan, result)
    lines = [
        f"# R&R Studio Lab: {md_escape(title)}",
        "",
        *(["## In plain words", "", *(f"- {md_escape(line)}" for line in plain), ""] if plain else []),
        f"- **Can detect:** {md_escape(plan_power(plan)['text'])}",
        "",
        "## What was measured",
        "",
        f"- **Document:** {md_escape(document)}",
        f"- **Engine:** {md_escape(engine)}",
        f"- **Sent:** {SENT[mode]}",
        f"- **Trials:** {len(plan.trials):,}; runs {len(plan.jobs):,}; calls made {result.calls_made:,}, "
        f"found in the store {result.calls_cached:,}{_shared_text(result.calls_shared)}; {money}",
        *([f"- **Stopped:** {md_escape(result.stopped)}"] if result.stopped else []),
        *_protocol_lines(plan),
        *_planted_line(plan),
        "",
        f"## Accuracy by method ({'exact match' if any(t.exact for t in plan.trials) else 'fuzzy match'})",
        "",
        METRIC_RULE + " " + INTERVAL_RULE,
        "",
        "| Method | Trials | Questions | Accuracy | 95% interval "
        + ("| Effective length " if several_lengths else "")
        + "| Retrieval misses | Reading misses | Calls / trial | Input tokens / trial | "
        + ("Cost (USD) |" if result.is_llm else "Would cost (USD) |"),
        "| --- | --- | --- | --- | --- "
        + ("| --- " if several_lengths else "")
        + "| --- | --- | --- | --- | --- |",
    ]
    for s in (*result.summaries, *result.bounds):
        eff = f"| {s.effective.text() if s.effective is not None else '—'} " if several_lengths else ""
        retrieval, reading = (s.retrieval_misses, s.reading_misses) if s.retrieves else ("—", "—")
        lines.append(
            f"| {md_escape(s.series)} | {s.trials} | {s.questions} | {_pct(s.accuracy)} | {percent_range(s.accuracy, s.ci)} "
            f"{eff}| {retrieval} | {reading} | {s.calls_per_trial:.1f} | {s.input_per_trial:,.0f} | {s.cost_usd:.4f} |"
        )
    lines += [
        "",
        "Strict and reference metric (the reference is the lenient one of the code behind the paper's "
        "Table 1, for comparing with the paper):",
        "",
        "| Method | Protocol | Strict | Reference metric |",
        "| --- | --- | --- | --- |",
        *(
            f"| {md_escape(s.series)} | {plan.protocols.get(s.series, '')} | {_pct(s.accuracy)} "
            f"| {_pct(s.paper_accuracy)} |"
            for s in (*result.summaries, *result.bounds)
        ),
    ]
    if several_lengths:
        floor = result.closed_book
        checked = "; ".join(
            f"{s.series}: {s.effective.why()}" for s in result.summaries if s.effective is not None
        )
        lines += [
            "",
            EFFECTIVE_RULE
            + (
                f" Closed-book here: {_pct(floor)}, so the floor is {_pct(floor + EFFECTIVE_MARGIN)}."
                if floor is not None
                else " Closed-book was not measured here: the floor is 20%."
            )
            + (f" Checked: {md_escape(checked)}." if checked else ""),
        ]
    compared = result.comparisons
    if compared:
        lines += [
            "",
            "## Paired differences",
            "",
            PAIRED_RULE + " " + PRIMARY_RULE,
            "",
            "| Method | Against | Primary | Paired trials | Questions | Difference | 95% interval | Only this right | Only the other right | McNemar p (questions) | Holm p |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for pair in compared:
            lines.append(
                f"| {md_escape(pair.series)} | {md_escape(pair.against)} | {'yes' if pair.primary else ''} "
                f"| {pair.trials} | {pair.questions} "
                f"| {pair.difference_points()} | {pair.interval_points()} "
                f"| {pair.only_series} | {pair.only_against} | {pair.p_value:.3g} "
                f"| {'' if pair.p_adjusted is None else f'{pair.p_adjusted:.3g}'} |"
            )
        lines += ["", *(f"- {md_escape(pair.sentence())}" for pair in compared)]
    lines += [
        "",
        "## Accuracy by depth and length",
        "",
        "Length and depth are the ones asked for; built tokens and actual depth are the means of the "
        "documents built (page boundaries move the answer a little).",
        "",
        "| Method | Length | Depth | Built tokens | Actual depth | Tokens to the end | Trials | Questions | Accuracy | 95% interval | Reminders |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes = reminder_notes(plan)
    for c in result.cells:
        low, high = c.interval
        lines.append(
            f"| {md_escape(c.series)} | {c.length:,} | {c.depth:g}% | {c.tokens:,.0f} | {c.actual_depth:.1f}% "
            f"| {c.distance:,.0f} | {c.trials} | {c.questions} "
            f"| {_pct(c.accuracy)} | {percent_range(c.accuracy, (low, high))} "
            f"| {md_escape(notes.get((c.series, c.length), ''))} |"
        )
    if result.missing_cells:
        lines += [
            "",
            "**Incomplete cells** (a run failed): " + md_escape("; ".join(result.missing_cells[:30])),
        ]
    lines += [
        "",
        "Retrieval miss: the page holding the answer was not among the pages the method picked; reading miss: "
        "it was, and the answer was still wrong (only for methods that pick pages first).",
    ]
    return "\n".join(lines) + "\n"


def _protocol_lines(plan: SweepPlan) -> list[str]:
    made = protocol(plan)
    lines = [
        f"- **Distracters:** {md_escape(c)}: {md_escape(CONSTRUCTIONS[c])}" for c in made["construction"]
    ]
    dropped = made["answer_passages_dropped"]
    if dropped:
        lines.append(
            f"- **Answer-bearing passages left out:** {dropped['passages']:,} over {dropped['questions']:,} "
            "question(s) (each held an accepted answer but was not the gold)"
        )
    lines.append(f"- **Question placement:** {md_escape(made['layout'])} (the sweep's); by series:")
    for series, used in made["question_placement"].items():
        lines.append(
            f"  - {md_escape(series)}: {md_escape(used)} — {md_escape(made['question_placement_why'][series])}"
        )
    lines.append(f"- **Scored by:** {made['scored_by']}; also by {made['also_scored_by']}")
    for name, means in made["prompt_protocol_means"].items():
        lines.append(f"- **Prompt protocol:** {md_escape(name)}: {md_escape(means)}")
    lines.append(f"- **Failed runs:** {made['failed_runs']}")
    return lines


def dumps(data: dict[str, Any]) -> str:
    """JSON text."""
    return json.dumps(data, indent=2, ensure_ascii=False)


# ---- Every Eval Ever ------------------------------------------------------------------------

EEE_SCHEMA_VERSION = "0.3.0"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def eee_records(
    plan: SweepPlan,
    result: SweepResult,
    *,
    model: str,
    provider: str,
    timestamp: float,
    document: str = "",
    version: str = "unknown",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The sweep in the Every Eval Ever schema (0.3.0): one aggregate record (a result per
    series and bound: accuracy with its clustered 95% interval over the counted trials) and
    one instance record per trial and series (the question, the accepted answers, the answer,
    right or not, tokens). A failed run is an instance scored 0 with its error; it is left out
    of its series' accuracy, as everywhere in the Lab, and the aggregate says how many failed."""
    digest = hashlib.sha256(plan.ledger_key().encode()).digest()
    run_id = str(uuid.UUID(bytes=digest[:16], version=4))
    model_id = model if "/" in model else f"{provider}/{model}"
    name = "rr-studio-lab"
    evaluation_id = f"{name}/{model_id}/{int(timestamp)}"
    samples_path = f"data/{name}/{_slug(provider)}/{_slug(model)}/{run_id}_samples.jsonl"
    results = []
    failed: dict[str, int] = {}
    for s in (*result.scores, *result.bound_scores):
        failed[s.series] = failed.get(s.series, 0) + int(s.failed)
    for summary in (*result.summaries, *result.bounds):
        if summary.accuracy is None:
            continue
        results.append(
            {
                "evaluation_result_id": _slug(summary.series),
                "evaluation_name": f"{name}: {summary.series}",
                "source_data": {
                    "dataset_name": f"R&R Studio Lab test documents ({document or 'generated'})",
                    "source_type": "other",
                    "additional_details": {"protocol": json.dumps(protocol(plan), ensure_ascii=False)},
                },
                "metric_config": {
                    "evaluation_description": METRIC_RULE,
                    "metric_id": "accuracy",
                    "metric_name": "Accuracy",
                    "metric_kind": "accuracy",
                    "metric_unit": "proportion",
                    "lower_is_better": False,
                    "score_type": "continuous",
                    "min_score": 0,
                    "max_score": 1,
                },
                "score_details": {
                    "score": round(summary.accuracy, 6),
                    "details": {
                        "method": summary.series,
                        "method_name": summary.method,
                        "questions": str(summary.questions),
                        "failed_runs_left_out": str(failed.get(summary.series, 0)),
                        "effective_length": summary.effective.text()
                        if summary.effective is not None
                        else "—",
                    },
                    "uncertainty": {
                        "confidence_interval": {
                            "lower": round(summary.ci[0], 6),
                            "upper": round(summary.ci[1], 6),
                            "confidence_level": 0.95,
                            "method": "Wilson interval with the distinct questions as the sample size",
                        },
                        "num_samples": summary.trials,
                    },
                },
            }
        )
    instances = []
    for s in sorted((*result.scores, *result.bound_scores), key=lambda s: s.job):
        trial = plan.trial(s.trial)
        instances.append(
            {
                "schema_version": EEE_SCHEMA_VERSION,
                "evaluation_id": evaluation_id,
                "model_id": model_id,
                "evaluation_name": f"{name}: {s.series}",
                "evaluation_result_id": _slug(s.series),
                "sample_id": s.trial,
                "interaction_type": "single_turn",
                "input": {
                    "raw": trial.question if trial is not None else "",
                    "reference": list(trial.answers) if trial is not None else [],
                },
                "output": {"raw": [s.answer]},
                "answer_attribution": [
                    {
                        "turn_idx": 0,
                        "source": "output.raw",
                        "extracted_value": s.answer,
                        "extraction_method": "exact match on the value"
                        if trial is not None and trial.exact
                        else "fuzzy match (000 §4.3)",
                        "is_terminal": True,
                    }
                ],
                "evaluation": {"score": float(s.correct), "is_correct": bool(s.correct)},
                "token_usage": {
                    "input_tokens": s.input_tokens,
                    "output_tokens": s.output_tokens,
                    "total_tokens": s.input_tokens + s.output_tokens,
                },
                "metadata": {
                    "length": str(s.length),
                    "depth": f"{s.depth:g}",
                    "built_tokens": str(s.built_tokens),
                    "question_id": s.question_id,
                    "calls": str(s.calls),
                    "failed": str(int(s.failed)),
                    "error": s.error,
                },
            }
        )
    aggregate = {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "retrieved_timestamp": str(int(timestamp)),
        "source_metadata": {
            "source_name": "R&R Studio Lab",
            "source_type": "evaluation_run",
            "source_organization_name": "R&R Studio",
            "evaluator_relationship": "third_party",
            "additional_details": {"engine": result.engine, "is_llm": str(result.is_llm).lower()},
        },
        "model_info": {
            "name": model,
            "id": model_id,
            "inference_platform": provider,
            "additional_details": {
                "deployment_type": "unknown" if result.is_llm else "self_deployed",
                "model_availability": "unknown",
            },
        },
        "eval_library": {"name": "rr-studio", "version": version},
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": samples_path,
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(_jsonl(instances).encode()).hexdigest(),
            "total_rows": len(instances),
        },
    }
    return aggregate, instances


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def eee_samples_text(instances: list[dict[str, Any]]) -> str:
    """The instance records as the JSONL file the aggregate's checksum is of."""
    return _jsonl(instances)
