"""A sweep: methods × lengths × depths × repeats on test documents with known answers.

``plan_sweep`` makes every run a job (plain data: a trial recipe, the method's settings and
the question) and prices it before any call, building one trial at a time and dropping it
once planned; it refuses to start above a budget. ``run_sweep`` runs the jobs through one
executor (``Executor.stream_jobs``), each trial built again where its job runs, with the run
store as call cache: every call is looked up by its key first and kept as soon as it returns,
so an interrupted or repeated sweep pays only for what is missing. The jobs can be written
out (``SweepPlan.jobs_jsonl``) and run elsewhere (``read_jobs``, ``run_jobs``). Closed-book
and oracle run once per question, as the lower and upper bounds. Each finished run can be
handed on as a ``TrialRecord`` (small plain JSON, what long work stores as it arrives), and
``stored_sweep`` rebuilds the sweep's result from those records alone, with no call.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from rr_core.batching import BatchProgress
from rr_core.costs import Cost, Mode, assumed_free, estimate_cost
from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.jobs import DocumentRef, Documents, Job, JSONValue, Material, Source, plan_job
from rr_core.lab.haystacks import Trial, TrialFacts, TrialRecipe
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
from rr_core.runs import CallEvent, Executor, RunTrace
from rr_core.settings import QuestionPlacement, RunSettings
from rr_core.tokens import TokenCounter

MAX_JOBS = 20_000
# The lower and upper bounds run once per question: the methods of the "bounds" group.
BOUNDS = tuple(m.name for m in methods_in("bounds"))


@dataclass(frozen=True, slots=True)
class LabJob:
    """What the Lab keeps in a job's ``meta``: its series, whether it is a bound (closed-book
    or oracle: run once per question, drawn as lines), its trial and its place in the sweep."""

    series: str
    bound: bool
    trial: str  # the trial's id (``SweepPlan.trial`` gives its facts)
    position: int

    def meta(self) -> dict[str, JSONValue]:
        """The job's ``meta``."""
        return {"series": self.series, "bound": self.bound, "trial": self.trial, "position": self.position}

    @classmethod
    def of(cls, job: Job) -> LabJob:
        """The Lab's view of one of its jobs."""
        meta = job.meta
        return cls(
            series=str(meta.get("series", job.settings.method)),
            bound=bool(meta.get("bound", False)),
            trial=str(meta.get("trial", "")),
            position=int(str(meta.get("position", -1))),
        )


class TrialMaker:
    """Builds trials from their recipes where jobs run, and opens ``"trial"`` sources for a
    runner: ``documents`` are the documents recipes are built on (the user's, for planted
    facts and own questions); ``built``, trials a caller already holds (used as they are)."""

    def __init__(
        self, counter: TokenCounter, documents: Sequence[Document] = (), *, built: Sequence[Trial] = ()
    ) -> None:
        self.counter = counter
        self.documents = Documents(documents)
        self._built = {t.recipe.key: t for t in built if t.recipe is not None}

    def build(self, recipe: TrialRecipe) -> Trial:
        """The recipe's trial."""
        held = self._built.get(recipe.key)
        if held is not None:
            return held
        host = None
        if recipe.host_sha256:
            host = self.documents.open(DocumentRef(sha256=recipe.host_sha256, name=recipe.host_name)).document
        return recipe.build(self.counter, host)

    def open(self, source: Source) -> Material:
        """A trial source opened: its document, gold pages, and the facts scoring reads."""
        if not isinstance(source, TrialRecipe):
            raise ConfigError(f"Not a trial recipe: a {source.kind!r} source.")
        trial = self.build(source)
        return Material(trial.document, trial.gold_pages, trial.facts.to_dict())

    def resolver(self) -> Documents:
        """A resolver that opens trial recipes by building them (and the documents given)."""
        resolver = Documents()
        resolver.register(TrialRecipe.kind, self.open)
        return resolver


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """Every job of a sweep and what it is expected to cost, before any call. Jobs are plain
    data (``rr_core.jobs.Job``: a trial recipe, the settings, the question; ``LabJob.of`` reads
    the Lab's part): each trial is built again where its job runs."""

    trials: tuple[TrialFacts, ...]
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
    # The same calls with the prompt cache as expected (the first call of a shared prefix
    # writes it, the rest read it): sent now, and sent as provider batches.
    cached_cost: Cost = field(default_factory=Cost)
    batch_cost: Cost = field(default_factory=Cost)
    cacheable_tokens: int = 0  # input tokens expected to be read from the prompt cache (shared prefixes)
    # Builds the trials where the jobs run (in this process), with the counter they were planned by.
    maker: TrialMaker | None = field(default=None, compare=False, repr=False)
    by_id: Mapping[str, TrialFacts] = field(default_factory=dict, compare=False, repr=False)

    @property
    def usd(self) -> float:
        """Estimated total in US dollars (sent now, no prompt cache: the most it should cost)."""
        return self.cost.total_usd

    def usd_for(self, mode: Mode) -> float:
        """The estimate for a mode: ``now`` with no prompt cache (the ceiling), ``batch`` at the
        batch price with the prompt cache as expected."""
        return self.batch_cost.total_usd if mode == "batch" else self.cost.total_usd

    @property
    def protocols(self) -> dict[str, str]:
        """The prompt protocol of each series (``settings.PromptProtocol``), bounds included."""
        return {LabJob.of(job).series: job.settings.protocol.value for job in self.jobs}

    def trial(self, trial_id: str) -> TrialFacts | None:
        """The facts of the trial with this id."""
        return self.by_id.get(trial_id)

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
            "jobs": len(self.jobs),
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "usd": round(self.usd, 6),
            "usd_with_cache": round(self.cached_cost.total_usd, 6),
            "usd_batch": round(self.batch_cost.total_usd, 6),
            "cacheable_input_tokens": self.cacheable_tokens,
            "priced_as": self.priced_as,
            "price_known": self.cost.known and not self.price_assumed,
            **planted,
        }

    def ledger_key(self) -> str:
        """The sweep's own name in the run store: replies it paid for are recorded under it
        until its results are written (so a sweep killed and started again records them once)."""
        return "sweep-" + hashlib.sha256(self.jobs_jsonl().encode()).hexdigest()[:24]

    def jobs_jsonl(self) -> str:
        """The jobs, one JSON object a line: what a worker elsewhere runs (``read_jobs``)."""
        return "".join(json.dumps(job.to_dict(), ensure_ascii=False) + "\n" for job in self.jobs)


def read_jobs(text: str) -> list[Job]:
    """Jobs from ``SweepPlan.jobs_jsonl``'s text (``ConfigError`` names a line that is not one)."""
    jobs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            jobs.append(Job.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"Line {number} is not a job ({exc}).") from None
    return jobs


def series_name(settings: RunSettings) -> str:
    """A series' name: the method and the settings it reads, e.g. ``R&R (k = 5,000 · N = 5)``."""
    method = get_method(settings.method)
    described = method.describe(settings)
    return method.label + (f" ({described})" if described else "")


def _as_run(settings: RunSettings) -> RunSettings:
    """The settings as the method runs them (a method that cannot take the layout asked for
    keeps its own): what the job records."""
    method = get_method(settings.method)
    return settings.but(method=method.name, question_placement=method.layout_for(settings))


def plan_sweep(
    trials: Sequence[TrialRecipe | Trial],
    series: Sequence[RunSettings],
    counter: TokenCounter,
    *,
    bounds: bool = True,
    layout: QuestionPlacement | None = None,
    documents: Sequence[Document] = (),
    tokenizer: str = "",
) -> SweepPlan:
    """Every method on every trial as a job, and each bound once per question. ``layout``: the
    sweep's question placement (default: the first series'), which the bounds take too.

    Trials are recipes (built here one at a time, planned, priced, and dropped: the estimate
    holds a few documents at a time, never all) or trials already built (kept as they are).
    ``documents``: what the recipes are built on; ``tokenizer``: the model whose tokenizer
    ``counter`` is, for a worker planning the jobs elsewhere."""
    if not trials:
        raise ConfigError("The sweep has no trial: choose at least one length and one depth.")
    if not series:
        raise ConfigError("Choose at least one method to measure.")
    built = [t for t in trials if isinstance(t, Trial)]
    recipes = [t if isinstance(t, TrialRecipe) else t.recipe for t in trials]
    if any(r is None for r in recipes):
        raise ConfigError("A trial made by hand has no recipe to run it from.")
    maker = TrialMaker(counter, documents, built=built)
    main = [(s, _as_run(s), series_name(s)) for s in series if s.method not in BOUNDS]
    layout = series[0].question_placement if layout is None else layout
    base = series[0].but(question_placement=layout)
    limits = [(_as_run(base.but(method=name)), get_method(name).label) for name in BOUNDS] if bounds else []
    questions = len({r.question_id for r in recipes if r is not None})
    total = len(recipes) * len(main) + questions * len(limits)
    if total > MAX_JOBS:
        raise ConfigError(
            f"The sweep would make {total:,} runs; at most {MAX_JOBS:,} at a time. Use fewer lengths, depths or repeats."
        )
    pricing = series[0].pricing
    jobs: list[Job] = []
    bound_jobs: list[Job] = []
    facts: list[TrialFacts] = []
    # Priced call by call in the order of the jobs (bounds last), as one list of calls would be.
    cost, bound_costs = Cost(), []
    # With the prompt cache (the first call of a shared prefix writes it, the rest read it),
    # now and in provider batches.
    cached_cost, batch_cost = Cost(), Cost()
    prefixes: set[str] = set()
    calls = input_tokens = output_tokens = cacheable_tokens = 0
    seen: set[str] = set()
    for recipe in recipes:
        assert recipe is not None
        trial = maker.build(recipe)
        material = Material(trial.document, trial.gold_pages)
        facts.append(trial.facts)
        todo = [(settings, name, False) for _, settings, name in main]
        if limits and trial.question_id not in seen:
            seen.add(trial.question_id)
            todo += [(settings, name, True) for settings, name in limits]
        for settings, name, bound in todo:
            position = len(recipes) * len(main) + len(bound_jobs) if bound else len(jobs)
            job = Job(
                id=f"{trial.id}#{position}",
                source=recipe,
                settings=settings,
                questions=(trial.question,),
                tokenizer=tokenizer,
                meta=LabJob(name, bound, trial.id, position).meta(),
            )
            planned = plan_job(job, material, counter)
            for call in planned.calls:
                calls += 1
                input_tokens += call.prompt_tokens
                output_tokens += call.output_tokens
                priced = estimate_cost(call.prompt_tokens, call.output_tokens, *pricing)
                hint = call.cache_hint(planned.document_sha256)
                read = write = 0
                if hint is not None:
                    digest = call.prefix_digest()
                    read, write = (hint.tokens, 0) if digest in prefixes else (0, hint.tokens)
                    cacheable_tokens += read  # a prefix pays off only when another call shares it
                    prefixes.add(digest)
                for mode in ("now", "batch"):
                    with_cache = estimate_cost(
                        call.prompt_tokens,
                        call.output_tokens,
                        *pricing,
                        cached_tokens=read,
                        cache_write_tokens=write,
                        mode="now" if write else mode,  # a prefix's writer is sent ahead of its batch
                    )
                    if mode == "now":
                        cached_cost = cached_cost + with_cache
                    else:
                        batch_cost = batch_cost + with_cache
                if bound:
                    bound_costs.append(priced)
                else:
                    cost = cost + priced
            (bound_jobs if bound else jobs).append(job)
        del trial, material  # the next trial is built in its place
    for priced in bound_costs:
        cost = cost + priced
    priced_as, provider = pricing
    assumed = assumed_free(priced_as, provider)
    return SweepPlan(
        trials=tuple(facts),
        jobs=(*jobs, *bound_jobs),
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        cached_cost=cached_cost,
        batch_cost=batch_cost,
        cacheable_tokens=cacheable_tokens,
        priced_as=(
            f"{priced_as} (no price known: counted as free on the {provider or 'local'} server)"
            if assumed
            else priced_as
            if cost.known
            else f"{priced_as} (no price known)"
        ),
        price_assumed=assumed,
        layout=layout,
        maker=maker,
        by_id={t.id: t for t in facts},
    )


def plan_from_jobs(
    jobs: Sequence[Job], counter: TokenCounter, *, documents: Sequence[Document] = ()
) -> SweepPlan:
    """A plan of jobs written out before (``SweepPlan.jobs_jsonl``, read with ``read_jobs``):
    each trial built again from its recipe (on ``documents`` where it plants in one), every job
    planned and priced as the sweep that wrote it would (no prompt cache assumed: the ceiling),
    so the budget cap, the run store and the report work as for a sweep planned here."""
    if not jobs:
        raise ConfigError("The jobs file holds no job.")
    maker = TrialMaker(counter, documents)
    facts: dict[str, TrialFacts] = {}
    materials: dict[str, Material] = {}
    cost, batch_cost = Cost(), Cost()
    calls = input_tokens = output_tokens = 0
    for job in jobs:
        recipe = job.source
        if not isinstance(recipe, TrialRecipe):
            raise ConfigError(
                f"The job {job.id} is not a Lab trial's: run it with `rr-studio` jobs, not `lab`."
            )
        material = materials.get(recipe.trial_id)
        if material is None:
            trial = maker.build(recipe)
            facts[trial.id] = trial.facts
            material = materials[recipe.trial_id] = Material(trial.document, trial.gold_pages)
        for call in plan_job(job, material, counter).calls:
            calls += 1
            input_tokens += call.prompt_tokens
            output_tokens += call.output_tokens
            cost = cost + estimate_cost(call.prompt_tokens, call.output_tokens, *job.settings.pricing)
            batch_cost = batch_cost + estimate_cost(
                call.prompt_tokens, call.output_tokens, *job.settings.pricing, mode="batch"
            )
    priced_as, provider = jobs[0].settings.pricing
    assumed = assumed_free(priced_as, provider)
    trials = tuple(facts.values())
    return SweepPlan(
        trials=trials,
        jobs=tuple(jobs),
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        cached_cost=cost,
        batch_cost=batch_cost,
        priced_as=priced_as if cost.known and not assumed else f"{priced_as} (no price known)",
        price_assumed=assumed,
        layout=jobs[0].settings.question_placement,
        maker=maker,
        by_id={t.id: t for t in trials},
    )


def check_budget(plan: SweepPlan, max_usd: float | None, mode: Mode = "now") -> None:
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
    usd = plan.usd_for(mode)
    if usd > max_usd:
        how = " in provider batches" if mode == "batch" else ""
        raise ConfigError(
            f"The sweep is estimated at ${usd:.2f}{how} ({plan.calls:,} calls, {plan.input_tokens:,} input tokens), "
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
    possibly_billed: str = ""  # "up to $X possibly billed for N calls …" ("": none may be)
    possibly_usd: float = 0.0  # that X

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
        """Cells with a failed trial left out, named (the results there are incomplete; in the
        paper's protocol a failed trial is counted, as wrong, and its cell is complete)."""
        left_out = {(x.series, x.length, x.depth) for x in self.scores if not x.counted}
        return [
            f"{c.series} at {c.length:,} tokens, depth {c.depth:g}%"
            for c in self.cells
            if (c.series, c.length, c.depth) in left_out
        ]

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

# A run stopped before its calls were sent (the user's stop, the budget cap, a reply that could not
# be kept): not a failure of the method or the provider. Its trial is left for a resumed sweep to ask.
NOT_ASKED = frozenset({"RunCancelled", "BudgetReached", "SaveFailed"})


@dataclass(frozen=True, slots=True)
class TrialRecord:
    """One finished run of a sweep (one method on one trial) as its work stores it, small and
    plain: its score (no prompt, no document text), whether it is a bound, and the calls the
    sweep made, found in the store and shared while it ran (counted as the runner counts them,
    between this run's arrival and the one before: summed over the records, the sweep's).
    ``not_asked``: stopped before its calls were sent (a resumed sweep asks it)."""

    key: str  # the job's id in its plan
    score: Score
    bound: bool
    calls_made: int = 0
    calls_cached: int = 0
    calls_shared: int = 0
    not_asked: bool = False

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "key": self.key,
            "bound": self.bound,
            "not_asked": self.not_asked,
            "calls": [self.calls_made, self.calls_cached, self.calls_shared],
            "score": asdict(self.score),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialRecord:
        """Read ``to_dict``'s output."""
        score = dict(data["score"])
        score["retrieved"] = tuple(int(p) for p in score.get("retrieved") or ())
        score["temperatures"] = tuple(
            None if t is None else float(t) for t in score.get("temperatures") or ()
        )
        made, cached, shared = (int(n) for n in data.get("calls") or (0, 0, 0))
        return cls(
            key=str(data["key"]),
            score=Score(**{k: v for k, v in score.items() if k in _SCORE_FIELDS}),
            bound=bool(data.get("bound", False)),
            calls_made=made,
            calls_cached=cached,
            calls_shared=shared,
            not_asked=bool(data.get("not_asked", False)),
        )

    def after(self, earlier: TrialRecord) -> TrialRecord:
        """This record in place of an earlier one of the same run that was stopped before all
        its calls were sent: what that one paid and the calls it made stay counted."""
        score = replace(
            self.score,
            paid_usd=self.score.paid_usd + earlier.score.paid_usd,
            would_cost_usd=self.score.would_cost_usd + earlier.score.would_cost_usd,
        )
        return replace(
            self,
            score=score,
            calls_made=self.calls_made + earlier.calls_made,
            calls_cached=self.calls_cached + earlier.calls_cached,
            calls_shared=self.calls_shared + earlier.calls_shared,
        )


_SCORE_FIELDS = frozenset(f.name for f in fields(Score))


def failure_line(score: Score) -> str:
    """How a failed run is listed among the sweep's failures."""
    return f"{score.series} on {score.trial}: {score.error}"


def stored_sweep(
    plan: SweepPlan, records: Iterable[Mapping[str, Any]], run: Mapping[str, Any] | None = None
) -> SweepResult:
    """The sweep's result rebuilt from its stored trial records (``TrialRecord.to_dict``, in the
    order they arrived; a record of a job the plan does not hold is left out, and of one job
    the last counts) and what its last run said of itself (``run``: the work's summary, its
    ``engine``, ``is_llm``, ``cancelled``, ``stopped``, ``save_error``, ``possibly_billed``,
    ``possibly_usd``, ``batch_problems`` and ``calls_unrecorded``). No call, no client."""
    run = run or {}
    ids = {job.id for job in plan.jobs}
    kept: dict[str, TrialRecord] = {}
    for data in records:
        record = TrialRecord.from_dict(data)
        if record.key in ids:
            kept.pop(record.key, None)  # in the order of its last arrival
            kept[record.key] = record
    first = plan.jobs[0].settings if plan.jobs else None
    is_llm = bool(run.get("is_llm", True))
    engine = str(run.get("engine") or (f"{first.provider} / {first.model}" if first is not None else ""))
    result = SweepResult(is_llm=is_llm, engine=engine)
    for record in kept.values():
        (result.bound_scores if record.bound else result.scores).append(record.score)
        if record.score.error:
            result.failures.append(failure_line(record.score))
        result.calls_made += record.calls_made
        result.calls_cached += record.calls_cached
        result.calls_shared += record.calls_shared
    made, cached, shared = (int(n) for n in run.get("calls_unrecorded") or (0, 0, 0))
    result.calls_made += made
    result.calls_cached += cached
    result.calls_shared += shared
    result.scores.sort(key=lambda s: s.job)
    result.bound_scores.sort(key=lambda s: s.job)
    result.cancelled = bool(run.get("cancelled", False))
    result.stopped = run.get("stopped") or None
    result.save_error = run.get("save_error") or None
    result.possibly_billed = str(run.get("possibly_billed") or "")
    result.possibly_usd = float(run.get("possibly_usd") or 0.0)
    result.failures.extend(str(p) for p in run.get("batch_problems") or ())
    return result


def score_trace(job: Job, trace: RunTrace, position: int = -1) -> Score:
    """A job's trace scored against its trial's known answer, from the job and the trace alone
    (the trial's facts are in ``trace.details["source"]``; a run that failed before its trial
    was built has only its recipe's). ``position``: the job's place in its sweep, so the
    per-trial records can name its settings."""
    info = LabJob.of(job)
    facts = _facts(job, trace)
    outcome = trace.outcome
    usage = trace.usage
    method = get_method(job.settings.method)
    sent = tuple(dict.fromkeys(c.temperature for c in trace.calls if c.response or c.cached))
    scored = score(
        series=info.series,
        method=method.name,
        length=facts.length,
        depth=facts.depth,
        trial=facts.id,
        question_id=facts.question_id,
        answer=outcome.compared_answer,
        answers=facts.answers,
        gold_pages=facts.gold_pages,
        retrieved=outcome.retrieved_pages,
        cited=outcome.page,
        retrieves=method.retrieves,
        cost_usd=trace.cost_usd,
        calls=len(trace.calls),
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.output_tokens,
        failed=trace.error is not None,
        paid_usd=trace.paid_usd,
        exact=facts.exact,
        repeat=facts.repeat,
        tokens_after=facts.tokens_after,
        built_tokens=facts.tokens,
        gold_depth=facts.gold_depth,
        job=position,
        error=trace.error or "",
        would_cost_usd=trace.would_cost_usd,
        protocol=job.settings.protocol.value,
    )
    return replace(scored, temperatures=sent)


def _facts(job: Job, trace: RunTrace) -> TrialFacts:
    """The trial's facts the run recorded, or what the job's recipe says of its trial."""
    recorded = trace.details.get("source")
    if isinstance(recorded, Mapping) and "question_id" in recorded:
        return TrialFacts.from_dict(recorded)
    recipe = job.source
    if not isinstance(recipe, TrialRecipe):
        raise ConfigError(f"The job {job.id} is not a Lab trial's.")
    return TrialFacts(
        id=recipe.trial_id,
        task=recipe.task,
        length=recipe.length,
        depth=recipe.depth,
        repeat=recipe.repeat,
        question_id=recipe.question_id,
        question=job.questions[0] if job.questions else "",
        answers=recipe.answers,
        gold_pages=recipe.gold_pages,
        exact=get_task(recipe.task).pairs,
        gold_depth=recipe.depth,
    )


def run_sweep(
    plan: SweepPlan,
    executor: Executor,
    *,
    on_progress: Progress | None = None,
    on_event: Callable[[CallEvent], None] | None = None,
    on_batch: Callable[[BatchProgress], None] | None = None,
    skip: Collection[str] = (),
    on_trial: Callable[[TrialRecord], None] | None = None,
) -> SweepResult:
    """Run every job of the plan, each trial built again where its job runs; scores arrive as
    runs finish. A failed run is kept as a failure (its cell says so); a cancelled sweep keeps
    what finished. ``skip``: ids of jobs not to run (recorded before: the result holds only the
    rest); ``on_trial``: each finished run as its work records it (``TrialRecord``)."""
    maker = plan.maker
    if maker is None:
        raise ConfigError("This sweep plan cannot build its trials here: plan it again.")
    todo = [(place, job) for place, job in enumerate(plan.jobs) if job.id not in skip]
    return run_jobs(
        [job for _, job in todo], executor, maker, on_progress=on_progress, on_event=on_event, on_batch=on_batch,
        places=[place for place, _ in todo], on_trial=on_trial,
    )  # fmt: skip


def run_jobs(
    jobs: Sequence[Job],
    executor: Executor,
    maker: TrialMaker,
    *,
    on_progress: Progress | None = None,
    on_event: Callable[[CallEvent], None] | None = None,
    on_batch: Callable[[BatchProgress], None] | None = None,
    places: Sequence[int] | None = None,
    on_trial: Callable[[TrialRecord], None] | None = None,
) -> SweepResult:
    """Run a sweep's jobs (``SweepPlan.jobs``, or read back with ``read_jobs``) through the
    executor, trials built by ``maker`` and planned with its counter, and score them.
    ``places``: each job's place in its sweep's plan (default: its place in ``jobs``);
    ``on_trial``: each finished run as a ``TrialRecord``, with the calls counted since the last."""
    client = executor.client
    first = jobs[0].settings if jobs else None
    who = f"{first.provider} / {first.model}" if first is not None else client.name
    result = SweepResult(is_llm=client.is_llm, engine=who if client.is_llm else f"{client.name} (not an LLM)")
    done = 0
    counted = (0, 0, 0)  # the runner's calls made, cached and shared when the last run arrived
    for item in executor.stream_jobs(jobs, resolver=maker.resolver(), counter=maker.counter):
        if isinstance(item, BatchProgress):
            if on_batch is not None:
                on_batch(item)
            continue
        if isinstance(item, CallEvent):
            if on_event is not None:
                on_event(item)
            continue
        job = jobs[item.position]
        info = LabJob.of(job)
        scored = score_trace(job, item, item.position if places is None else places[item.position])
        (result.bound_scores if info.bound else result.scores).append(scored)
        if item.error:
            result.failures.append(failure_line(scored))
        done += 1
        result.calls_made, result.calls_cached = executor.calls_made, executor.calls_cached
        result.calls_shared = executor.calls_shared
        if on_trial is not None:
            now = (result.calls_made, result.calls_cached, result.calls_shared)
            made, cached, shared = (n - before for n, before in zip(now, counted, strict=True))
            counted = now
            on_trial(
                TrialRecord(
                    job.id, scored, info.bound, made, cached, shared, not_asked=item.error_kind in NOT_ASKED
                )
            )
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
    result.possibly_billed, result.possibly_usd = executor.possibly_billed_note, executor.possibly_billed_usd
    result.failures.extend(executor.batch_problems)
    return result
