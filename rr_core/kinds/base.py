"""What a kind of long work is (``TaskKind``), and what the generic runner (``rr_core.work``) hands
it. The runner knows no kind: it reads the spec through the kind, plans it once, and lets the
planned work run its jobs, recording each finished job through the context.

- a ``TaskKind`` reads its versioned spec from plain data (``read``: another version is refused
  with both versions named, never half-read);
- a ``WorkSpec`` is that spec: plain data (``to_dict``), its title, its calls key (what its calls
  are, for de-duplication: open work with the same key would pay for the same calls) and its
  plan (``prepare``: jobs and estimate, planned from the store alone);
- a ``PlannedWork`` knows its total (what progress counts), and runs: it records what each
  finished job gave (``WorkContext.record``), and says how the work ended and its summary.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rr_core.errors import ConfigError
from rr_core.llm import LLMClient
from rr_core.runs import Executor
from rr_core.store import Store, WorkPart

# The version of the specs this build writes and reads. A spec of another version is refused
# with both versions named (never half-read): a newer build's field could change what is asked.
SPEC_VERSION = 2  # 2: the settings may ask for the answer check (``verify``, ``verify_model``)

# What changes how a work's calls are paid or bounded, not which calls it makes.
_NOT_CALLS = frozenset({"key", "mode", "max_usd", "concurrency", "price_model", "spec_version"})


def check_spec(kind: str, data: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse a spec this build cannot read in full: another version, or fields it does not know."""
    version = data.get("spec_version", 1)
    if not isinstance(version, int) or not 1 <= version <= SPEC_VERSION:
        raise ConfigError(
            f"this {kind} work was written with spec version {version}; this build reads versions 1 to"
            f" {SPEC_VERSION}. Run it with the build that wrote it, or submit it again here."
        )
    unknown = sorted(set(data) - set(known) - {"spec_version"})
    if unknown:
        raise ConfigError(
            f"this {kind} work's spec (version {version}) has fields this build (spec version {SPEC_VERSION})"
            f" does not know: {', '.join(unknown)}. Run it with the build that wrote it, or submit it again here."
        )


def calls_key(kind: str, spec: Mapping[str, Any]) -> str:
    """What a work's calls are (its spec without what only pays for or bounds them), hashed."""
    kept = {name: value for name, value in spec.items() if name not in _NOT_CALLS}
    text = json.dumps([kind, kept], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def progress_step(total: int) -> int:
    """Log progress about ten times a work (every job of a small one)."""
    return max(1, total // 10)


class Stop(Protocol):
    """How a running work learns that it should stop (a stop recorded by any process, or its
    runner leaving: a worker's shutdown)."""

    @property
    def left(self) -> bool:
        """Whether it stopped because its runner is leaving (the work goes back to the queue)."""
        ...

    def check(self) -> bool:
        """Stop the runner if a stop was asked for; whether it was."""
        ...

    def guard(self, runner: Executor) -> AbstractContextManager[None]:
        """Watch for a stop while ``runner`` runs."""
        ...

    def guard_open(self) -> AbstractContextManager[Callable[[Executor], None]]:
        """For a use case that opens its own runner: a callback taking it, watched until the block ends."""
        ...


@dataclass(frozen=True, slots=True)
class WorkContext:
    """What the generic runner hands a planned work: the store, the work's id, the client (None:
    made from the spec's engine where it runs), the stop, and where finished jobs are recorded."""

    store: Store
    work_id: str
    client: LLMClient | None
    stop: Stop
    record: Callable[[list[tuple[str, dict[str, Any]]]], None]  # one finished job's results, by key
    progress: Callable[[int, int], None]  # (done, total), as the work counts them
    part: str = ""  # the part of the work run here ("": the whole work)

    def recorded(self) -> Iterator[dict[str, Any]]:
        """The results recorded so far (a resumed work's; a part's own), in the order they
        arrived, read a page at a time (to be gone through once)."""
        return self.store.iter_work_results(self.work_id, part=self.part or None)


EndState = Literal["done", "cancelled", "failed", "queued"]


@dataclass(frozen=True, slots=True)
class Ended:
    """How a run of a work ended: its state ("queued": its runner left, the next takes it up),
    its summary (``None``: unchanged) and, failed, why."""

    state: EndState
    summary: dict[str, Any] | None = None
    error: str | None = None
    done: int | None = None


class PlannedWork(Protocol):
    """A work planned where it runs (once per run)."""

    @property
    def total(self) -> int:
        """What its progress counts up to."""
        ...

    @property
    def unit(self) -> str:
        """What its progress counts ("cells", "runs")."""
        ...

    def run(self, context: WorkContext) -> Ended:
        """Run what is not recorded yet, recording each finished job; how it ended."""
        ...


class WorkSpec(Protocol):
    """A kind's spec: plain data, never an API key."""

    @property
    def kind(self) -> str:
        """The name of its kind (``TaskKind.name``)."""
        ...

    @property
    def title(self) -> str:
        """How lists name it."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """As JSON (what the store keeps), its spec version included."""
        ...

    def calls_key(self) -> str:
        """What its calls are (for de-duplication)."""
        ...

    def prepare(self, store: Store) -> PlannedWork:
        """Its jobs and estimate, planned from the store (documents by content hash)."""
        ...

    def parts(self) -> tuple[str, ...]:
        """The parts a team's workers may run apart, one job each (none: one job for it all)."""
        ...

    def part(self, name: str) -> WorkSpec:
        """The work cut down to one of its parts (what that part's job plans and runs)."""
        ...

    def summarize(self, store: Store, work_id: str, parts: Sequence[WorkPart]) -> Ended:
        """How the work run in parts ended, once its last part has: from what the parts recorded
        (their results in the store, and each part's own ending)."""
        ...


class TaskKind(Protocol):
    """One kind of long work, as registered in ``rr_core.kinds``."""

    @property
    def name(self) -> str:
        """The kind's name, as the store records it."""
        ...

    def read(self, data: Mapping[str, Any]) -> WorkSpec:
        """The spec from its plain data (``ConfigError`` for another version or unknown fields)."""
        ...


@dataclass(frozen=True, slots=True)
class Kind:
    """A ``TaskKind`` made of its name and its spec's reader."""

    name: str
    reader: Callable[[Mapping[str, Any]], WorkSpec]

    def read(self, data: Mapping[str, Any]) -> WorkSpec:
        """The spec from its plain data."""
        return self.reader(data)
