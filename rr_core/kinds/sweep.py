"""The Lab sweep as a kind of long work: trials × methods, each run one job.

- ``SweepWork``: the sweep as plain data (the preset, the trials' spec, the series, the engine
  without its key, the document by content hash or a sample by name), versioned;
- ``plan_measurement``: the trials' recipes and the sweep's plan before any call; ``sweep``: its
  jobs run through the store as call cache (the use case, through ``rr_core.workbench``);
- ``PlannedSweep``: the sweep planned once where it runs; a resumed sweep pays only for the
  calls the store does not hold, and its result is the sweep's JSON (any replica shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from rr_core.batching import BatchProgress
from rr_core.costs import Mode
from rr_core.documents import Document
from rr_core.engine import Engine, open_runner, spent_under
from rr_core.errors import LedgerError
from rr_core.kinds.base import SPEC_VERSION, Ended, Kind, WorkContext, calls_key, check_spec
from rr_core.lab import TrialSpec, trial_recipes, trial_spec
from rr_core.lab.haystacks import TrialRecipe
from rr_core.lab.presets import Preset, get_preset
from rr_core.lab.report import sweep_json
from rr_core.lab.sweep import Progress, SweepPlan, SweepResult, plan_sweep, run_sweep
from rr_core.llm import LLMClient
from rr_core.methods import parse_spec
from rr_core.questions import Question
from rr_core.review.corpus import StoredDocuments
from rr_core.runs import CallCache, Executor
from rr_core.settings import QuestionPlacement, RunSettings
from rr_core.sources import sample_document
from rr_core.store import LOCAL_OWNER, Store, open_store
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
    replay: bool = False,
    work_id: str = "",
) -> SweepResult:
    """Run every job of the sweep through the run store as call cache (``store``, or
    ``owner``'s history opened here): an interrupted or repeated sweep pays only for what is missing. A
    budget cap sends no call that would pass ``max_usd``. ``mode`` "batch": each phase's calls
    go out as provider batches at the batch price; a sweep started again after a stop polls
    the batches it had submitted instead of paying again. ``replay``: a finished sweep shown
    again from the store (calls it finds in flight are their sender's to report).
    ``work_id``: the work this run is one run of: its replies are recorded under the work's own
    ledger, and ``max_usd`` is the work's, over all its runs (what earlier runs paid counts)."""
    cache = store if store is not None else open_store(owner=owner)
    ledger = plan.ledger_key() + (f"-{work_id}" if work_id else "")
    pricing = plan.jobs[0].settings.pricing if plan.jobs else None
    spent = (
        spent_under(cache, ledger, pricing)
        if work_id and max_usd is not None and pricing is not None
        else 0.0
    )
    with open_runner(
        client,
        concurrency=concurrency,
        cache=cache,
        window=window,
        max_usd=max_usd,
        mode=mode,
        label=f"{label} · {ledger[6:14]}",
        ledger=ledger,
        replay=replay,
        spent_usd=spent,
    ) as runner:
        if on_runner is not None:  # whoever may stop it (a stop asked for from another process)
            on_runner(runner)
        result = run_sweep(plan, runner, on_progress=on_progress, on_batch=on_batch)
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
        """Run the sweep through the store as call cache (what the store holds is not paid again)."""
        work, plan, engine, stop = self.work, self.plan, self.engine, context.stop
        client = context.client
        if client is None:
            client = engine.client(counter_for_model(engine.counting_model()))

        def progress(done: int, total: int, partial: SweepResult) -> None:
            context.progress(done, total)
            stop.check()

        with stop.guard_open() as runners:
            result = sweep(
                plan, client, concurrency=work.concurrency, window=engine.window(), max_usd=work.max_usd,
                work_id=context.work_id, store=context.store, on_progress=progress, mode=work.mode, label=work.title,
                on_runner=runners,
            )  # fmt: skip
        summary = {
            **sweep_json(plan, result, context={"preset": work.preset, "mode": work.mode}),
            "is_llm": client.is_llm,
            "possibly_billed": result.possibly_billed,
            "possibly_usd": round(result.possibly_usd, 6),
        }
        if result.cancelled and stop.left:  # the runner is going away: the next one takes the work up
            return Ended("queued")
        failed_all = bool(plan.jobs) and len(result.failures) >= len(plan.jobs)
        if failed_all:
            return Ended("failed", summary, result.failures[0] if result.failures else None)
        return Ended("cancelled" if result.cancelled else "done", summary)


KIND = Kind(SWEEP, SweepWork.from_dict)
