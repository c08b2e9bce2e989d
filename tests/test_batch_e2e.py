"""Batch sweeps end to end: the CLI in a fresh interpreter, the real SDKs, the loopback stub.

``lab --mode batch`` against the stub's batch endpoints (OpenAI files + batches, Anthropic
message batches): one batch per phase, no synchronous call, half the now price; a process
killed with a batch in flight resumes it (polls, never submits again) and ends with the same
ledger as an uninterrupted run; expiry, a failed item and the budget refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, planted_texts

from rr_core.store import SQLiteStore
from tests.stub_server import StubServer

WAIT_S = 120.0  # a generous limit for every condition: the machine may be busy
PROVIDERS = ["openai", "anthropic"]
SWEEP = ["--methods", "baseline,rr", "--depths", "0,25,50,75,100", "--repeats", "1", "--lengths", "3000"]


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture
def document(tmp_path: Path) -> Path:
    path = tmp_path / "planted.txt"
    path.write_text("\f".join(planted_texts()))
    return path


def environment(provider: str, stub: StubServer, db: Path) -> dict[str, str]:
    env = dict(os.environ, RR_STUDIO_DB=str(db), RR_BATCH_POLL_S="0.2")
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    if provider == "openai":
        env.update(OPENAI_API_KEY="sk-test-batch", OPENAI_BASE_URL=stub.url)
    else:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-batch", ANTHROPIC_BASE_URL=stub.anthropic_url)
    return env


def lab_argv(provider: str, document: Path, mode: str, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "rr_core", "--json", "lab", str(document), "--provider", provider]
    return [*argv, *SWEEP, "--mode", mode, *extra]


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT_S)


def lab(provider: str, stub: StubServer, db: Path, document: Path, mode: str, *extra: str) -> dict[str, Any]:
    done = run(lab_argv(provider, document, mode, *extra), environment(provider, stub, db))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def batches_json(provider: str, stub: StubServer, db: Path) -> list[dict[str, Any]]:
    done = run([sys.executable, "-m", "rr_core", "--json", "batches"], environment(provider, stub, db))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["batches"]  # type: ignore[no-any-return]


def created_batches(stub: StubServer) -> int:
    return sum(
        1
        for r in stub.requests
        if r.method == "POST" and r.path.split("?")[0] in ("/v1/batches", "/v1/messages/batches")
    )


def sync_calls(stub: StubServer) -> int:
    return sum(
        1
        for r in stub.requests
        if r.path.split("?")[0] in ("/v1/responses", "/v1/chat/completions", "/v1/messages")
    )


def ledger(data: dict[str, Any]) -> dict[str, Any]:
    """What a sweep's JSON says it found and paid, without times and ids."""
    return {
        "cells": data["cells"],
        "series": data["series"],
        "comparisons": data["comparisons"],
        "failed_runs": data["failed_runs"],
        "calls_made": data["calls_made"],
        "paid_usd": data["paid_usd"],
        "would_cost_usd": data["would_cost_usd"],
        "mode": data["mode"],
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batch_sweep_sends_one_batch_per_phase_and_pays_half_the_now_price(
    provider: str, tmp_path: Path, document: Path
) -> None:
    with StubServer() as stub:
        stub.batch_auto_complete = True
        data = lab(provider, stub, tmp_path / "batch.sqlite3", document, "batch")
        listed = batches_json(provider, stub, tmp_path / "batch.sqlite3")
        # R&R retrieves then answers: two phases (baseline's calls go with R&R's first)
        assert created_batches(stub) == 2 and len(listed) == 2
        assert sync_calls(stub) == 0  # nothing batched went out synchronously
        assert sum(stub.batch_submissions.values()) == data["calls_made"] > 0
        assert max(stub.batch_submissions.values()) == 1
    with StubServer() as stub:
        now = lab(provider, stub, tmp_path / "now.sqlite3", document, "now")
        assert created_batches(stub) == 0 and sync_calls(stub) == now["calls_made"] == data["calls_made"]
    assert data["mode"] == "batch" and now["mode"] == "now"
    assert data["failed_runs"] == 0 and not data["missing_cells"]
    # the same replies, at half the price (rounded to the micro-dollar in the JSON)
    assert data["paid_usd"] > 0
    assert data["paid_usd"] == pytest.approx(now["paid_usd"] / 2, abs=2e-6)
    assert [c["cost_usd"] for c in data["cells"]] == pytest.approx(
        [c["cost_usd"] / 2 for c in now["cells"]], abs=2e-6
    )
    assert all(b["state"] == "ended" and b["done"] == b["total"] and not b["open"] for b in listed)
    assert sum(b["total"] for b in listed) == data["calls_made"]


def wait_for(condition: Any, what: str, process: subprocess.Popen[str] | None = None) -> None:
    """Wait on ``condition()`` with a generous limit (checked every 50 ms); fails saying ``what``."""
    import time

    limit = time.monotonic() + WAIT_S
    while not condition():
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the process ended before {what}: {err[-2000:]}")
        if time.monotonic() > limit:
            pytest.fail(f"not within {WAIT_S:.0f} s: {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_killed_mid_batch_resumes_polling_never_submits_twice_and_ends_with_the_same_ledger(
    provider: str, tmp_path: Path, document: Path
) -> None:
    """kill -9 with the first phase's batch 40% done; the same command again polls the
    recorded batch (no second submission) and ends with an uninterrupted run's ledger."""
    db = tmp_path / "killed.sqlite3"
    with StubServer() as stub:
        env = environment(provider, stub, db)
        first = subprocess.Popen(
            lab_argv(provider, document, "batch"), cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: len(stub.batches) == 1, "the first batch was submitted", first)
            batch_id, batch = next(iter(stub.batches.items()))
            total = len(batch.items)
            seen = len(stub.requests)
            released = stub.release_batch_items(total * 2 // 5)
            assert 0 < released < total

            def polled() -> bool:  # a status read after the release, recorded in the store
                after = list(stub.requests)[seen:]
                asked = any(r.method == "GET" and r.path.split("?")[0].endswith(batch_id) for r in after)
                return asked and len(SQLiteStore(db).open_batches()) == 1

            wait_for(polled, "the process polled the partly done batch", first)
        finally:
            first.kill()  # SIGKILL: no chance to tidy up
            first.communicate(timeout=WAIT_S)
        assert first.returncode == -9
        recorded = SQLiteStore(db).open_batches()
        assert [(b.batch_id, b.total) for b in recorded] == [(batch_id, total)]
        submissions_before = created_batches(stub)

        second = subprocess.Popen(
            lab_argv(provider, document, "batch"), cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        said: list[str] = []
        assert second.stderr is not None
        reader = threading.Thread(target=lambda: said.extend(iter(second.stderr.readline, "")), daemon=True)
        reader.start()
        try:

            def resumed() -> bool:
                return any("submitted earlier, polled again" in line for line in list(said))

            wait_for(resumed, "the second process said it polls the earlier batch", second)
            assert created_batches(stub) == submissions_before  # it polls, it does not submit
            stub.batch_auto_complete = True  # the next phases end as they are submitted
            assert stub.release_batch_items() == total - released
            out = second.stdout.read() if second.stdout is not None else ""
            second.wait(timeout=WAIT_S)
            reader.join(WAIT_S)
            err = ""
        finally:
            if second.poll() is None:
                second.kill()
                second.communicate()
        assert second.returncode == 0, "".join(said) + err
        resumed_data = json.loads(out)
        assert max(stub.batch_submissions.values()) == 1  # 0 duplicate submissions
        assert sum(stub.batch_submissions.values()) == resumed_data["calls_made"]
        assert sync_calls(stub) == 0
        kill_counts = (created_batches(stub), sum(stub.batch_submissions.values()))

    with StubServer() as fresh:  # the uninterrupted run: a fresh stub and a fresh store
        fresh.batch_auto_complete = True
        whole = lab(provider, fresh, tmp_path / "whole.sqlite3", document, "batch")
        # The same calls submitted, each once. The batches may number one more after a kill:
        # runs whose first replies were stored before it reach the next phase while the others
        # still wait for the polled batch, and their calls can go out as a batch of their own.
        assert sum(fresh.batch_submissions.values()) == kill_counts[1]
        assert created_batches(fresh) <= kill_counts[0] <= created_batches(fresh) + 1
    assert ledger(resumed_data) == ledger(whole)
    assert not SQLiteStore(db).open_batches()


def test_batch_budget_refuses_before_submitting(tmp_path: Path, document: Path) -> None:
    """``--max-usd`` below the batch estimate's worst case: refused, nothing submitted."""
    with StubServer() as stub:
        stub.batch_auto_complete = True
        argv = lab_argv("openai", document, "batch", "--max-usd", "0.0001")
        done = run(argv, environment("openai", stub, tmp_path / "budget.sqlite3"))
        assert done.returncode != 0
        assert "0.0001" in done.stderr or "budget" in done.stderr.lower() or "max-usd" in done.stderr
        assert created_batches(stub) == 0 and not stub.batch_submissions and sync_calls(stub) == 0
