"""The Lab sweep as a kind of long work: trials × methods, each run one job.

- ``SweepWork``: the sweep as plain data (the preset, the trials' spec, the series, the engine
  without its key, the document by content hash or a sample by name), versioned;
- ``plan_measurement``: the trials' recipes and the sweep's plan before any call; ``sweep``: its
  jobs run through the store as call cache (the use case, through ``rr_core.workbench``);
- ``PlannedSweep``: the sweep planned once where it runs; it records each finished run (one
  method on one trial: its score and the calls it took, ``TrialRecord``) as it arrives, and a
  resumed sweep runs only the runs not recorded (paying only for calls the store does not hold);
  its result is the sweep's JSON (any replica shows it);
- ``SweepWork.stored``: the sweep as its work recorded it, rebuilt from its stored runs (no call).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from rr_core.batching import BatchProgress
from rr_core.costs import Mode
from rr_core.documents import Document
from rr_core.engine import Engine, open_runner, spent_under, work_ledger
from rr_core.errors import ConfigError, LedgerError
from rr_core.kinds.base import SPEC_VERSION, Ended, Kind, WorkContext, calls_key, check_spec
from rr_core.lab import TrialSpec, trial_recipes, trial_spec
from rr_core.lab.haystacks import TrialRecipe
from rr_core.lab.presets import Preset, get_preset
from rr_core.lab.report import sweep_json
from rr_core.lab.sweep import (
    Progress,
    SweepPlan,
    SweepResult,
    TrialRecord,
    plan_sweep,
    run_sweep,
    stored_sweep,
)
from rr_core.llm import LLMClient
from rr_core.methods import parse_spec
from rr_core.questions import Question
from rr_core.review.corpus import StoredDocuments
from rr_core.runs import CallCache, Executor
from rr_core.settings import QuestionPlacement, RunSettings
from rr_core.sources import sample_document
from rr_core.store import LOCAL_OWNER, Store, WorkPart, open_store
from rr_core.tokens import TokenCounter, counter_for_model

SWEEP = "sweep"


@dataclass(frozen=True, slots=True)
class SweepWork:
    """A Lab sweep as plain data: the preset, the trials' spec, the series, the engine (no key),
    and the document by content hash (a sample by name). What runs it plans it again, the same
    trials and jobs (planning is deterministic), and pays only for calls not in the store."""

    kind: ClassVar[str] = SWEEP

    preset: str
    series: tuple[str, ...]  # method specs, as the CLI writes them ("rr", "rr:k=5000")
    provider: str
    model: str
    price_model: str = ""
    base_url: str | None = None
    task: str = ""
    lengths: tuple[int, ...] | None = None
    repeats: int | None = None
    seed: int = 0
    paraphrase: bool = False
    distracters: int = 0
    questions: tuple[tuple[str, tuple[str, ...], tuple[int, ...]], ...] = ()
    depths: tuple[float, ...] | None = None
    bounds: bool = True
    layout: str = ""
    document_sha256: str = ""  # the document in the document store ("" : a sample, or none)
    sample: str = ""  # a sample's name
    mode: Mode = "now"
    max_usd: float | None = None
    concurrency: int = 4

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {"spec_version": SPEC_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepWork:
        """Read ``to_dict``'s output (``ConfigError`` for a spec of another version)."""
        check_spec(SWEEP, data, (f.name for f in fields(cls)))
        values = {k: v for k, v in data.items() if k != "spec_version"}
        for name in ("series", "lengths", "depths"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        values["questions"] = tuple(
            (str(q), tuple(a), tuple(int(p) for p in g)) for q, a, g in values.get("questions", ())
        )
        return cls(**values)

    def calls_key(self) -> str:
        """What its calls are, as ``ReviewWork.calls_key``."""
        return calls_key(SWEEP, self.to_dict())

    @property
    def title(self) -> str:
        """How lists name it."""
        return f"Lab sweep · {self.preset} · {', '.join(self.series)}"

    def planned(self, store: Store) -> tuple[Document | None, SweepPlan, Engine]:
        """(the document, the sweep's plan, the engine), planned again here."""
        engine = Engine(self.provider, self.model, self.price_model, base_url=self.base_url)
        counter = counter_for_model(engine.counting_model())
        preset = get_preset(self.preset)
        document: Document | None = None
        if self.document_sha256:
            document = StoredDocuments(store, counter).document(self.document_sha256)
        elif self.sample:
            document = sample_document(self.sample, counter)
        layout = QuestionPlacement(self.layout) if self.layout else preset.layout
        spec = trial_spec(
            preset, document, task=self.task or None, lengths=self.lengths, repeats=self.repeats, seed=self.seed,
            paraphrase=self.paraphrase, distracters=self.distracters,
            questions=tuple(Question(q, a, g) for q, a, g in self.questions),
        )  # fmt: skip
        base = engine.settings(question_placement=layout)
        series = [parse_spec(m, base) for m in self.series]
        _, plan = plan_measurement(
            spec, preset, document, series, counter, depths=self.depths, bounds=self.bounds, layout=layout,
            tokenizer=engine.counting_model(),
        )  # fmt: skip
        return document, plan, engine

    def prepare(self, store: Store) -> PlannedSweep:
        """The sweep planned where it runs (once a run), ready to run."""
        _, plan, engine = self.planned(store)
        return PlannedSweep(self, plan, engine)

    def parts(self) -> tuple[str, ...]:
        """None: a sweep is one job (its trials share the document and the series' budget)."""
        return ()

    def part(self, name: str) -> SweepWork:
        """A sweep has no parts."""
        raise ConfigError(f"a Lab sweep is run as one job; it has no part {name!r}")

    def summarize(self, store: Store, work_id: str, parts: Sequence[WorkPart]) -> Ended:
        """A sweep has no parts."""
        raise ConfigError("a Lab sweep is run as one job; it has no parts to sum up")

    def stored(
        self, store: Store, work_id: str, summary: Mapping[str, Any] | None = None
    ) -> tuple[Document | None, SweepPlan, SweepResult]:
        """(the document, the plan, the result) of this sweep as its work ``work_id`` recorded
        it: planned again (no call), the result rebuilt from the runs it stored (one read) and
        what its last run said of itself (``summary``: the work's result). No client is made."""
        document, plan, engine = self.planned(store)
        run = {"is_llm": engine.is_llm, "engine": _who(self, engine.is_llm, self.provider), **(summary or {})}
        return document, plan, stored_sweep(plan, store.work_results(work_id), run)


def _who(work: SweepWork, is_llm: bool, name: str) -> str:
    """Who answered, as ``SweepResult.engine`` says it."""
    return f"{work.provider} / {work.model}" if is_llm else f"{name} (not an LLM)"


def plan_measurement(
    spec: TrialSpec,
    preset: Preset,
    document: Document | None,
    series: Sequence[RunSettings],
    counter: TokenCounter,
    *,
    depths: Sequence[float] | None = None,
    bounds: bool = True,
    layout: QuestionPlacement | None = None,
    tokenizer: str = "",
) -> tuple[list[TrialRecipe], SweepPlan]:
    """The trials' recipes of a spec and the sweep's plan over them, before any call
    (``ConfigError`` for a grid that cannot work or is too large). Each trial is built, planned
    and dropped in turn; its job keeps its recipe (``tokenizer``: the model ``counter`` counts
    as, for a worker that runs the jobs elsewhere)."""
    recipes = trial_recipes(spec, preset, document, counter, depths=depths)
    plan = plan_sweep(
        recipes,
        series,
        counter,
        bounds=bounds,
        layout=layout,
        documents=(document,) if document is not None else (),
        tokenizer=tokenizer,
    )
    return recipes, plan


def sweep(
    plan: SweepPlan,
    client: LLMClient,
    *,
    concurrency: int,
    window: int | None = None,
    max_usd: float | None = None,
    store: CallCache | None = None,
    on_progress: Progress | None = None,
    mode: Mode = "now",
    label: str = "Lab sweep",
    on_batch: Callable[[BatchProgress], None] | None = None,
    owner: str = LOCAL_OWNER,
    on_runner: Callable[[Executor], None] | None = None,
    work_id: str = "",
    skip: Collection[str] = (),
    on_trial: Callable[[TrialRecord], None] | None = None,
) -> SweepResult:
    """Run every job of the sweep through the run store as call cache (``store``, or
    ``owner``'s history opened here): an interrupted or repeated sweep pays only for what is missing. A
    budget cap sends no call that would pass ``max_usd``. ``mode`` "batch": each phase's calls
    go out as provider batches at the batch price; a sweep started again after a stop polls
    the batches it had submitted instead of paying again. ``skip``:
    ids of jobs recorded before (not run); ``on_trial``: each finished run, as work records it.
    ``work_id``: the work this run is one run of: its replies are recorded under the work's own
    ledger, and ``max_usd`` is the work's, over all its runs (what earlier runs paid counts)."""
    cache = store if store is not None else open_store(owner=owner)
    ledger = work_ledger(plan.ledger_key(), work_id)
    spent = spent_under(cache, ledger) if work_id and max_usd is not None else 0.0
    with open_runner(
        client,
        concurrency=concurrency,
        cache=cache,
        window=window,
        max_usd=max_usd,
        mode=mode,
        label=f"{label} · {ledger[6:14]}",
        ledger=ledger,
        spent_usd=spent,
    ) as runner:
        if on_runner is not None:  # whoever may stop it (a stop asked for from another process)
            on_runner(runner)
        result = run_sweep(
            plan, runner, on_progress=on_progress, on_batch=on_batch, skip=skip, on_trial=on_trial
        )
    # The sweep's results are written now: its replies are recorded (a later run finds them
    # in the store, paid before).
    try:
        cache.account(ledger)
    except (LedgerError, OSError) as exc:
        result.save_error = result.save_error or str(exc)
    return result


@dataclass(frozen=True, slots=True)
class PlannedSweep:
    """A sweep planned where it runs (once a run)."""

    work: SweepWork
    plan: SweepPlan
    engine: Engine
    unit: str = "runs"

    @property
    def total(self) -> int:
        """Its runs."""
        return len(self.plan.jobs)

    def run(self, context: WorkContext) -> Ended:
        """Run the runs not recorded yet through the store as call cache (what the store holds
        is not paid again), recording each as it arrives; the summary is the whole sweep's, as
        its recorded runs give it."""
        work, plan, engine, stop = self.work, self.plan, self.engine, context.stop
        ids = {job.id for job in plan.jobs}
        earlier = {r.key: r for r in map(TrialRecord.from_dict, context.recorded()) if r.key in ids}
        # A run stopped before its calls were sent is asked again; every other stays as recorded.
        kept = {key for key, r in earlier.items() if not r.not_asked}
        done = len(kept)
        total = self.total
        context.progress(done, total)
        counted = [0, 0, 0, 0]  # calls made, cached and shared that this run's records count; failed runs

        def keep(record: TrialRecord) -> None:
            nonlocal done
            counted[0] += record.calls_made
            counted[1] += record.calls_cached
            counted[2] += record.calls_shared
            counted[3] += bool(record.score.error)
            before = earlier.get(record.key)
            if before is not None:  # recorded not asked: what it paid then stays counted
                record = record.after(before)
            context.record([(record.key, record.to_dict())])
            earlier[record.key] = record
            if not record.not_asked:
                done += 1
            context.progress(done, total)
            stop.check()  # a stop asked for while the run went on: nothing further is sent

        client = context.client
        result: SweepResult | None = None
        if done < total:
            if client is None:
                client = engine.client(counter_for_model(engine.counting_model()))
            with stop.guard_open() as runners:
                result = sweep(
                    plan, client, concurrency=work.concurrency, window=engine.window(), max_usd=work.max_usd,
                    work_id=context.work_id, store=context.store, mode=work.mode, label=work.title, on_runner=runners, skip=kept,
                    on_trial=keep,
                )  # fmt: skip
        if result is not None:
            run: dict[str, Any] = {
                "engine": result.engine,
                "is_llm": result.is_llm,
                "cancelled": result.cancelled,
                "stopped": result.stopped,
                "save_error": result.save_error,
                "possibly_billed": result.possibly_billed,
                "possibly_usd": round(result.possibly_usd, 6),
                # What the runner counted after the last run arrived (none, as runs go).
                "calls_unrecorded": [
                    result.calls_made - counted[0],
                    result.calls_cached - counted[1],
                    result.calls_shared - counted[2],
                ],
                # Problems of the provider batches, listed after the failed runs.
                "batch_problems": result.failures[counted[3] :],
            }
        else:  # every run recorded before: nothing sent, no client made
            is_llm = client.is_llm if client is not None else engine.is_llm
            run = {"engine": _who(work, is_llm, client.name if client is not None else work.provider)}
            run["is_llm"] = is_llm
        whole = stored_sweep(plan, context.recorded(), run)
        summary = {
            **sweep_json(plan, whole, context={"preset": work.preset, "mode": work.mode}),
            **run,
            "ledger": work_ledger(plan.ledger_key(), context.work_id),  # all its runs': `work --show`
        }
        leaving = result is not None and result.cancelled and stop.left
        if leaving:  # its runner is going away: the next takes the work up
            return Ended("queued", done=done)
        failed_all = bool(plan.jobs) and len(whole.failures) >= len(plan.jobs)
        if failed_all:
            return Ended("failed", summary, whole.failures[0] if whole.failures else None)
        return Ended("cancelled" if whole.cancelled else "done", summary)


KIND = Kind(SWEEP, SweepWork.from_dict)
