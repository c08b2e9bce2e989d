"""A sweep: methods × lengths × depths × repeats on test documents with known answers.

``plan_sweep`` makes every plan before any call, with the total calls, tokens and estimated
cost, and refuses to start above a budget. ``run_sweep`` runs the plans through one
executor whose call cache is the run store: every call is looked up by its key first and
kept as soon as it returns, so an interrupted or repeated sweep pays only for what is
missing. Closed-book and oracle run once per question, as the lower and upper bounds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rr_core.costs import Cost, assumed_free
from rr_core.errors import ConfigError
from rr_core.lab.haystacks import Trial
from rr_core.lab.stats import (
    Cell,
    Comparison,
    Point,
    Score,
    SeriesSummary,
    by_depth,
    by_distance,
    cells,
    comparisons,
    score,
    summarise,
)
from rr_core.lab.tasks import get_task
from rr_core.methods import get_method, methods_in
from rr_core.plans import Plan, estimate_calls
from rr_core.runs import CallEvent, Executor, RunTrace
from rr_core.settings import QuestionPlacement, RunSettings
from rr_core.tokens import TokenCounter

MAX_JOBS = 20_000
# The lower and upper bounds run once per question: the methods of the "bounds" group.
BOUNDS = tuple(m.name for m in methods_in("bounds"))


@dataclass(frozen=True, slots=True)
class Job:
    """One plan on one trial's document."""

    trial: Trial
    plan: Plan
    series: str
    bound: bool  # closed-book or oracle: run once per question, drawn as lines

    @property
    def retrieves(self) -> bool:
        """The method answers from pages it picked first (the method says so)."""
        return get_method(self.plan.method).retrieves

    @property
    def tokens_after(self) -> int:
        """Tokens from the start of the answer's page to the end of the trial's document."""
        pages = self.trial.document.pages
        first = min(self.trial.gold_pages, default=len(pages) + 1)
        return sum(p.tokens for p in pages[max(first - 1, 0) :])


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """Every job of a sweep and what it is expected to cost, before any call."""

    trials: tuple[Trial, ...]
    jobs: tuple[Job, ...]
    calls: int
    input_tokens: int
    output_tokens: int
    cost: Cost
    priced_as: str
    # The price is 0 because the server is counted as free (a compatible or local server
    # with no price model), not because a price is known.
    price_assumed: bool = False
    # Where the sweep puts the question (a method that cannot take it keeps its own, and the
    # protocol says so).
    layout: QuestionPlacement = QuestionPlacement.BEFORE_AND_AFTER

    @property
    def usd(self) -> float:
        """Estimated total in US dollars."""
        return self.cost.total_usd

    @property
    def planted_facts(self) -> tuple[int, int]:
        """Planted facts used, and how many of them replace a candidate the document itself
        could answer (it stated an accepted answer or named the fact's subject)."""
        facts = {t.question_id: t.replanted for t in self.trials if get_task(t.task).plants}
        return len(facts), sum(1 for n in facts.values() if n)

    def summary(self) -> dict[str, Any]:
        """The plan as JSON: what running it will send and cost."""
        facts, regenerated = self.planted_facts
        planted = {"planted_facts": facts, "facts_regenerated": regenerated} if facts else {}
        return {
            "trials": len(self.trials),
            "runs": len(self.jobs),
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "usd": round(self.usd, 6),
            "priced_as": self.priced_as,
            "price_known": self.cost.known and not self.price_assumed,
            **planted,
        }


def series_name(settings: RunSettings) -> str:
    """A series' name: the method and the settings it reads, e.g. ``R&R (k = 5,000 · N = 5)``."""
    method = get_method(settings.method)
    described = method.describe(settings)
    return method.label + (f" ({described})" if described else "")


def plan_sweep(
    trials: Sequence[Trial],
    series: Sequence[RunSettings],
    counter: TokenCounter,
    *,
    bounds: bool = True,
    layout: QuestionPlacement | None = None,
) -> SweepPlan:
    """Plan every method on every trial, and each bound once per question. ``layout``: the
    sweep's question placement (default: the first series'), which the bounds take too."""
    if not trials:
        raise ConfigError("The sweep has no trial: choose at least one length and one depth.")
    if not series:
        raise ConfigError("Choose at least one method to measure.")
    jobs: list[Job] = []
    for trial in trials:
        for settings in series:
            if settings.method in BOUNDS:
                continue
            own = settings.but(gold_pages=trial.gold_pages)
            plan = get_method(settings.method).plan(trial.document, trial.question, own, counter)
            jobs.append(Job(trial, plan, series_name(settings), bound=False))
    layout = series[0].question_placement if layout is None else layout
    if bounds:
        base = series[0].but(question_placement=layout)
        seen: set[str] = set()
        for trial in trials:
            if trial.question_id in seen:
                continue
            seen.add(trial.question_id)
            for name in BOUNDS:
                settings = base.but(method=name, gold_pages=trial.gold_pages)
                plan = get_method(name).plan(trial.document, trial.question, settings, counter)
                jobs.append(Job(trial, plan, get_method(name).label, bound=True))
    if len(jobs) > MAX_JOBS:
        raise ConfigError(
            f"The sweep would make {len(jobs):,} runs; at most {MAX_JOBS:,} at a time. Use fewer lengths, depths or repeats."
        )
    calls = [c for job in jobs for c in job.plan.calls]
    estimate = estimate_calls(calls, series[0])
    priced_as, provider = series[0].pricing
    assumed = assumed_free(priced_as, provider)
    return SweepPlan(
        trials=tuple(trials),
        jobs=tuple(jobs),
        calls=estimate.calls,
        input_tokens=estimate.input_tokens,
        output_tokens=estimate.output_tokens,
        cost=estimate.cost,
        priced_as=(
            f"{priced_as} (no price known: counted as free on the {provider or 'local'} server)"
            if assumed
            else priced_as
            if estimate.cost.known
            else f"{priced_as} (no price known)"
        ),
        price_assumed=assumed,
        layout=layout,
    )


def check_budget(plan: SweepPlan, max_usd: float | None) -> None:
    """Refuse, before any call, a sweep estimated above the budget, or one with a budget and
    no known price to check it against (until a price model is given)."""
    if max_usd is None:
        return
    if plan.price_assumed or not plan.cost.known:
        raise ConfigError(
            f"A budget of ${max_usd:.2f} was set, but the sweep is priced as {plan.priced_as}, so it "
            "could pass the budget unseen. Nothing was sent: name the model whose prices the server "
            "charges as the price model (--price-model MODEL), or leave the budget out."
        )
    if plan.usd > max_usd:
        raise ConfigError(
            f"The sweep is estimated at ${plan.usd:.2f} ({plan.calls:,} calls, {plan.input_tokens:,} input tokens), "
            f"above the budget of ${max_usd:.2f}. Nothing was sent: raise the budget or measure less."
        )


@dataclass(slots=True)
class SweepResult:
    """What a sweep measured, and what it cost."""

    scores: list[Score] = field(default_factory=list)
    bound_scores: list[Score] = field(default_factory=list)
    calls_made: int = 0
    calls_cached: int = 0  # found in the store
    calls_shared: int = 0  # the same call in flight for another run (never in the store)
    failures: list[str] = field(default_factory=list)
    cancelled: bool = False
    # Why the sweep stopped itself (the budget cap, a store that could not keep a reply).
    stopped: str | None = None
    save_error: str | None = None
    is_llm: bool = True  # False: a free engine (offline, simulated) that pays nothing
    engine: str = ""  # who answered: "openai / gpt-4.1", "simulated (not an LLM)"

    @property
    def cells(self) -> list[Cell]:
        """Accuracy per series × length × depth."""
        return cells(self.scores)

    @property
    def closed_book(self) -> float | None:
        """The closed-book accuracy (the floor of effective length), if it was measured."""
        return next((b.accuracy for b in self.bounds if get_method(b.method).floor and b.trials), None)

    @property
    def summaries(self) -> list[SeriesSummary]:
        """One line per series: accuracy, cost, effective length, failure split, frontier."""
        return summarise(self.scores, closed_book=self.closed_book)

    @property
    def bounds(self) -> list[SeriesSummary]:
        """Closed-book and oracle over the questions asked (once per question: no length curve)."""
        return [
            replace(b, effective=None, by_length={}, on_frontier=False) for b in summarise(self.bound_scores)
        ]

    @property
    def comparisons(self) -> list[Comparison]:
        """Every method against every method before it, paired by trial."""
        return comparisons(self.scores)

    @property
    def by_depth(self) -> list[Point]:
        """Accuracy per method and depth, over every length."""
        return by_depth(self.scores)

    @property
    def by_distance(self) -> list[Point]:
        """Accuracy per method against the tokens from the answer to the end of the document."""
        return by_distance(self.scores)

    @property
    def lengths(self) -> list[int]:
        """The lengths measured."""
        return sorted({s.length for s in self.scores})

    @property
    def failure_reasons(self) -> list[tuple[str, int]]:
        """Why runs failed: each reason once, with how many runs it stopped, most first."""
        counts = Counter(s.error or "unknown error" for s in (*self.scores, *self.bound_scores) if s.failed)
        return counts.most_common()

    @property
    def missing_cells(self) -> list[str]:
        """Cells with a failed trial, named (the results there are incomplete)."""
        return [f"{c.series} at {c.length:,} tokens, depth {c.depth:g}%" for c in self.cells if c.failed]

    def cost_usd(self) -> float:
        """What this sweep paid (calls found in the store cost nothing again; a free engine
        pays nothing)."""
        return self.paid_usd()

    def paid_usd(self) -> float:
        """What this sweep paid (calls found in the store cost nothing again; a free engine
        pays nothing)."""
        return sum(s.paid_usd for s in (*self.scores, *self.bound_scores))

    def would_cost_usd(self) -> float:
        """What this sweep's new calls cost at the price it is priced at, paid or not."""
        return sum(s.would_cost_usd for s in (*self.scores, *self.bound_scores))


Progress = Callable[[int, int, SweepResult], None]


def score_trace(job: Job, trace: RunTrace, position: int = -1) -> Score:
    """A job's trace scored against its trial's known answer (``position``: the job's
    place in its plan, so the per-trial records can name its settings)."""
    outcome = trace.outcome
    usage = trace.usage
    sent = tuple(dict.fromkeys(c.temperature for c in trace.calls if c.response or c.cached))
    scored = score(
        series=job.series,
        method=job.plan.method,
        length=job.trial.length,
        depth=job.trial.depth,
        trial=job.trial.id,
        question_id=job.trial.question_id,
        answer=outcome.compared_answer,
        answers=job.trial.answers,
        gold_pages=job.trial.gold_pages,
        retrieved=outcome.retrieved_pages,
        cited=outcome.page,
        retrieves=job.retrieves,
        cost_usd=trace.cost_usd,
        calls=len(trace.calls),
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.output_tokens,
        failed=trace.error is not None,
        paid_usd=trace.paid_usd,
        exact=job.trial.exact,
        repeat=job.trial.repeat,
        tokens_after=job.tokens_after,
        built_tokens=job.trial.tokens,
        gold_depth=job.trial.gold_depth,
        job=position,
        error=trace.error or "",
        would_cost_usd=trace.would_cost_usd,
    )
    return replace(scored, temperatures=sent)


def run_sweep(
    plan: SweepPlan,
    executor: Executor,
    *,
    on_progress: Progress | None = None,
    on_event: Callable[[CallEvent], None] | None = None,
) -> SweepResult:
    """Run every job; scores arrive as runs finish. A failed run is kept as a failure (its
    cell says so); a cancelled sweep keeps what finished."""
    client = executor.client
    first = plan.jobs[0].plan.settings if plan.jobs else None
    who = f"{first.provider} / {first.model}" if first is not None else client.name
    result = SweepResult(is_llm=client.is_llm, engine=who if client.is_llm else f"{client.name} (not an LLM)")
    jobs = plan.jobs
    done = 0
    for item in executor.stream_plans([(job.trial.document, job.plan) for job in jobs]):
        if isinstance(item, CallEvent):
            if on_event is not None:
                on_event(item)
            continue
        job = jobs[item.position]
        scored = score_trace(job, item, item.position)
        (result.bound_scores if job.bound else result.scores).append(scored)
        if item.error:
            result.failures.append(f"{job.series} on {job.trial.id}: {item.error}")
        done += 1
        result.calls_made, result.calls_cached = executor.calls_made, executor.calls_cached
        result.calls_shared = executor.calls_shared
        if on_progress is not None:
            on_progress(done, len(jobs), result)
    result.calls_made, result.calls_cached = executor.calls_made, executor.calls_cached
    result.calls_shared = executor.calls_shared
    result.cancelled = executor.cancelled
    # Runs finish in any order; the results read in the plan's (series and cells in the order
    # the methods were chosen, the same on every run of the same sweep).
    result.scores.sort(key=lambda s: s.job)
    result.bound_scores.sort(key=lambda s: s.job)
    result.stopped, result.save_error = executor.stopped, executor.save_error
    return result
