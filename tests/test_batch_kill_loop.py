"""Kill and resume, in a loop: ``kill -9`` a batch sweep at set moments (its batch just created;
partly answered and polled; its reply lost on the way back), run the same command again; every
rerun ends (no hang) and no call is submitted twice. The full 50-loop version is
``benchmarks/bench_batch_money.py``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rr_core.store import SQLiteStore
from tests.stub_server import StubServer
from tests.test_batch_e2e import PROVIDERS, ROOT, WAIT_S, document, environment, lab_argv, wait_for  # noqa: F401

# (what the stub does, the share of the first batch answered before the kill)
MOMENTS = [("created", 0.0), ("polled", 0.4), ("reply lost", 0.0)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_kill_and_resume_in_a_loop_never_hangs_and_never_submits_twice(
    provider: str,
    tmp_path: Path,
    document: Path,  # noqa: F811
) -> None:
    for loop, (moment, share) in enumerate(MOMENTS):
        db = tmp_path / f"loop{loop}.sqlite3"
        with StubServer() as stub:
            env = environment(provider, stub, db)
            if moment == "reply lost":
                stub.lose_create_replies = 1
            first = subprocess.Popen(
                lab_argv(provider, document, "batch"), cwd=ROOT, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                wait_for(lambda: len(stub.batches) == 1, f"loop {loop}: the first batch was created")
                if share:
                    (batch_id, batch), seen = next(iter(stub.batches.items())), len(stub.requests)
                    assert stub.release_batch_items(int(len(batch.items) * share)) > 0

                    def polled() -> bool:
                        after = list(stub.requests)[seen:]
                        return any(
                            r.method == "GET" and r.path.split("?")[0].endswith(batch_id) for r in after
                        )

                    wait_for(polled, f"loop {loop}: the process polled the partly done batch", first)
                if moment == "reply lost":
                    wait_for(lambda: bool(SQLiteStore(db).batches()), f"loop {loop}: the batch was recorded")
            finally:
                first.kill()
                first.wait(WAIT_S)
            stub.batch_auto_complete = True
            stub.release_batch_items()  # the batch the provider holds ends
            again = subprocess.run(
                lab_argv(provider, document, "batch"), cwd=ROOT, env=env, capture_output=True, text=True,
                timeout=WAIT_S,
            )  # fmt: skip
            assert again.returncode == 0, f"loop {loop} ({moment}): {again.stderr[-2000:]}"
            assert max(stub.batch_submissions.values()) == 1, (
                f"loop {loop} ({moment}): a call submitted twice"
            )
            assert not SQLiteStore(db).open_batches()
