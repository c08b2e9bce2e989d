"""The kinds of long work: a new kind is one module and one registry line, and the generic runner
(``run_work``) runs it as it runs the grid and the sweep: its spec read through its kind, planned
once a run, each finished job recorded as it arrives, a resumed run asking only what is missing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

import rr_core.kinds as kinds
from rr_core.errors import ConfigError
from rr_core.kinds.base import SPEC_VERSION, Ended, Kind, WorkContext, calls_key, check_spec
from rr_core.store import Store, open_store
from rr_core.work import run_work, submit_work

PLANNED: list[int] = []  # how often each run planned the work


@dataclass(frozen=True, slots=True)
class CountWork:
    """A toy kind: ``n`` jobs, job i records the square of i; ``fail_at`` raises on that job."""

    n: int
    fail_at: int = -1
    kind: ClassVar[str] = "count"

    @property
    def title(self) -> str:
        return f"Count · {self.n}"

    def to_dict(self) -> dict[str, Any]:
        return {"spec_version": SPEC_VERSION, "n": self.n, "fail_at": self.fail_at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CountWork:
        check_spec("count", data, ("n", "fail_at"))
        return cls(int(data["n"]), int(data.get("fail_at", -1)))

    def calls_key(self) -> str:
        return calls_key("count", self.to_dict())

    def prepare(self, store: Store) -> PlannedCount:
        PLANNED.append(self.n)
        return PlannedCount(self)


@dataclass(frozen=True, slots=True)
class PlannedCount:
    work: CountWork
    unit: str = "squares"

    @property
    def total(self) -> int:
        return self.work.n

    def run(self, context: WorkContext) -> Ended:
        done = {str(r["i"]) for r in context.recorded()}
        for i in range(self.work.n):
            if str(i) in done:
                continue
            if i == self.work.fail_at:
                return Ended("failed", {"squares": len(done)}, f"job {i} broke")
            context.record([(str(i), {"i": i, "square": i * i})])
            done.add(str(i))
            context.progress(len(done), self.total)
        return Ended("done", {"squares": len(done)})


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setitem(kinds.KINDS, "count", Kind("count", CountWork.from_dict))  # the one registry line
    PLANNED.clear()
    return open_store(tmp_path / "runs.sqlite3")


def test_a_new_kind_runs_through_the_generic_runner_planned_once(store: Store) -> None:
    work_id = submit_work(store, CountWork(5))
    assert PLANNED == [5]  # submitting plans it (its total)
    ended = run_work(store, work_id)
    assert ended is not None and ended.state == "done" and ended.done == 5 and ended.total == 5
    assert PLANNED == [5, 5]  # the run planned it once more, once
    assert [r["square"] for r in store.work_results(work_id)] == [0, 1, 4, 9, 16]
    assert ended.result == {"squares": 5}


def test_a_kind_that_fails_ends_failed_and_resumes_with_only_the_rest(store: Store) -> None:
    from rr_core.work import resume_work

    work_id = submit_work(store, CountWork(4, fail_at=2))
    ended = run_work(store, work_id)
    assert ended is not None and ended.state == "failed" and ended.error == "job 2 broke"
    assert [r["i"] for r in store.work_results(work_id)] == [0, 1]
    # The same spec without the failure (a fixed build), resumed: only jobs 2 and 3 are run.
    assert resume_work(store, work_id)
    seen: list[int] = []
    original = PlannedCount.run

    def watched(self: PlannedCount, context: WorkContext) -> Ended:
        seen.extend(int(r["i"]) for r in context.recorded())
        return original(PlannedCount(CountWork(4)), context)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PlannedCount, "run", watched)
        again = run_work(store, work_id)
    assert seen == [0, 1]
    assert again is not None and again.state == "done"
    assert [r["i"] for r in store.work_results(work_id)] == [0, 1, 2, 3]


def test_a_kind_this_build_does_not_register_or_a_newer_spec_never_runs(store: Store) -> None:
    unknown = store.submit_work("nothing-known", "?", {"spec_version": SPEC_VERSION}, 1)
    with pytest.raises(Exception, match="cannot run a 'nothing-known' work; it runs: review, sweep"):
        run_work(store, unknown)
    newer = store.submit_work("count", "Count · 1", {"spec_version": SPEC_VERSION + 1, "n": 1}, 1)
    ended = run_work(store, newer)
    assert ended is not None and ended.state == "failed"
    assert (
        f"spec version {SPEC_VERSION + 1}" in ended.error and f"versions 1 to {SPEC_VERSION}" in ended.error
    )
    assert store.work_results(newer) == []


def test_a_kind_loads_with_its_first_work_and_a_review_never_loads_the_lab() -> None:
    """The registry names each kind's module: the use cases, the runner and a review's kind load
    without the Lab's modules, which load when a sweep is first read."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import rr_core.cli, rr_core.workbench, rr_core.work\n"
        "from rr_core.kinds import KINDS, get_kind\n"
        "assert get_kind('review').name == 'review'\n"
        "print(sorted(m for m in sys.modules if m.startswith('rr_core.lab') or m == 'rr_core.kinds.sweep'))\n"
        "assert get_kind('sweep').name == 'sweep' and KINDS['sweep'] is get_kind('sweep')\n"
        "from rr_core.workbench import SweepWork, plan_measurement\n"
        "print(SweepWork.kind, plan_measurement.__module__, 'rr_core.lab' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=Path(__file__).resolve().parent.parent,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "sweep rr_core.kinds.sweep True"]


def test_a_registered_module_that_defines_another_kind_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(kinds.KINDS, "count", "rr_core.kinds.review")  # a registry line gone wrong
    with pytest.raises(ConfigError, match="defines the kind 'review', registered as 'count'"):
        kinds.get_kind("count")
