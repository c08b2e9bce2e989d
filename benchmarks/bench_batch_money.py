"""Money in batch mode, measured on the loopback stub through the CLI (real SDKs):

- overspend: a capped batch Lab sweep against a server billing 1x, 2x and 50x the usage it
  should; what was paid over the cap (``paid / cap``; at most 1 is the goal);
- the accept window: a batch created whose reply is lost; the same command again; calls paid
  twice;
- kill and resume: ``kill -9`` at a random moment while a batch is in flight, the same command
  again, N times; hangs (a rerun not done within the limit) and calls submitted twice.

    .venv/bin/python benchmarks/bench_batch_money.py [--loops 50] [--providers openai,anthropic]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from conftest import planted_texts  # noqa: E402

import tests.stub_server as stub_server  # noqa: E402
from tests.stub_server import StubServer  # noqa: E402

SWEEP = ["--methods", "baseline,rr", "--depths", "0,25,50,75,100", "--repeats", "1", "--lengths", "3000"]
LIMIT_S = 180.0  # a rerun not finished within this is counted as hung
# The cap, in what an honest server bills the whole sweep: room for the worst cases every batch
# call holds (its whole output allowance), so an honest sweep finishes under it.
CAP_TIMES = 8.0


def environment(provider: str, stub: StubServer, db: Path) -> dict[str, str]:
    env = dict(os.environ, RR_STUDIO_DB=str(db), RR_BATCH_POLL_S="0.2")
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    if provider == "openai":
        env.update(OPENAI_API_KEY="sk-test-batch", OPENAI_BASE_URL=stub.url)
    else:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-batch", ANTHROPIC_BASE_URL=stub.anthropic_url)
    return env


def argv(provider: str, document: Path, *extra: str, mode: str = "batch") -> list[str]:
    return [sys.executable, "-m", "rr_core", "--json", "lab", str(document), "--provider", provider,
            *SWEEP, "--mode", mode, *extra]  # fmt: skip


def lab(
    provider: str, stub: StubServer, db: Path, document: Path, *extra: str, mode: str = "batch"
) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        argv(provider, document, *extra, mode=mode), cwd=ROOT, env=environment(provider, stub, db),
        capture_output=True, text=True, timeout=LIMIT_S,
    )  # fmt: skip
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = {}
    return done.returncode, data, done.stderr


def billed_usd(stub: StubServer, provider: str, data: dict[str, Any]) -> float:
    """What the grid paid, as the CLI reports it (the provider's billed usage at its prices)."""
    return float(data.get("paid_usd", 0.0))


def long_replies(path: str, body: Any) -> stub_server.Reply:
    """An honest server whose replies use 90% of their output allowance (billed as written)."""
    allowance = int(body.get("max_output_tokens") or body.get("max_tokens") or 1_000)
    read = stub_server._tokens(stub_server.prompt_of(body))
    written = int(0.9 * allowance)
    if "max_tokens" in body:  # Anthropic Messages
        usage = {"input_tokens": read, "output_tokens": written}
    else:
        usage = {"input_tokens": read, "output_tokens": written, "total_tokens": read + written}
    return stub_server.Reply(usage=usage)


def overspend(provider: str, document: Path, work: Path, mode: str = "batch") -> dict[str, float]:
    """Paid / cap for a capped sweep against a server billing 1x, 2x and 50x (``mode`` now: the
    sweep's calls sent at once, eight in flight)."""
    stub_server.BILLING_FACTOR = 1.0
    with StubServer() as stub:
        stub.batch_auto_complete = True
        _, honest, _ = lab(provider, stub, work / f"honest-{provider}-{mode}.db", document, mode=mode)
    cap = round(CAP_TIMES * honest["paid_usd"], 6)
    ratios: dict[str, float] = {"honest_paid_usd": honest["paid_usd"], "cap_usd": cap}
    for factor in (1.0, 2.0, 50.0):
        stub_server.BILLING_FACTOR = factor
        with StubServer() as stub:
            stub.batch_auto_complete = True
            code, data, err = lab(
                provider, stub, work / f"capped-{provider}-{mode}-{factor}.db", document,
                "--max-usd", str(cap), mode=mode,
            )  # fmt: skip
        stub_server.BILLING_FACTOR = 1.0
        paid = data.get("paid_usd")
        if paid is None:  # refused or stopped: what it said it paid, else nothing was recorded
            paid = 0.0
        ratios[f"paid/cap at {factor:g}x"] = round(float(paid) / cap, 4)
        ratios[f"exit at {factor:g}x"] = code
    if mode == "now":  # honest bills, replies far longer than estimated (their whole allowance, near)
        with StubServer(long_replies) as stub:
            code, data, err = lab(
                provider, stub, work / f"capped-{provider}-{mode}-long.db", document,
                "--max-usd", str(cap), mode=mode,
            )  # fmt: skip
        ratios["paid/cap, long replies"] = round(float(data.get("paid_usd") or 0.0) / cap, 4)
        ratios["exit, long replies"] = code
    return ratios


def lost_reply(provider: str, document: Path, work: Path) -> dict[str, int]:
    db = work / f"lost-{provider}.db"
    with StubServer() as stub:
        stub.batch_auto_complete = True
        stub.lose_create_replies = 1
        first, _, _ = lab(provider, stub, db, document)
        for batch in list(stub.batches.values()):  # the batch the provider had goes on and ends
            if batch.open:
                stub.release_batch_items()
        second, data, err = lab(provider, stub, db, document)
        twice = sum(n - 1 for n in stub.batch_submissions.values() if n > 1)
    return {"first exit": first, "second exit": second, "calls paid twice": twice}


def kill_loop(provider: str, document: Path, work: Path, loops: int, seed: int = 7) -> dict[str, int]:
    rng = random.Random(seed)
    hangs = twice = failures = 0
    for loop in range(loops):
        db = work / f"kill-{provider}-{loop}.db"
        with StubServer() as stub:
            env = environment(provider, stub, db)
            first = subprocess.Popen(argv(provider, document), cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            end = time.monotonic() + LIMIT_S
            while not stub.batches and time.monotonic() < end and first.poll() is None:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.6))  # kill at a random moment while the batch is in flight
            if stub.batches:
                batch = next(iter(stub.batches.values()))
                stub.release_batch_items(rng.randint(0, len(batch.items)))
            time.sleep(rng.uniform(0.0, 0.4))
            first.kill()
            first.wait()
            stub.batch_auto_complete = True
            stub.release_batch_items()
            try:
                done = subprocess.run(argv(provider, document), cwd=ROOT, env=env, capture_output=True,
                                      text=True, timeout=LIMIT_S)  # fmt: skip
                failures += done.returncode != 0
            except subprocess.TimeoutExpired:
                hangs += 1
            twice += sum(n - 1 for n in stub.batch_submissions.values() if n > 1)
    return {"loops": loops, "hangs": hangs, "calls submitted twice": twice, "reruns not ok": failures}


def _gated(release: Any, answer_first: int, answered: list[str]) -> Any:
    """A responder answering the first ``answer_first`` calls at once and holding the rest until
    ``release`` is set (in flight when the process is killed)."""
    import threading

    lock = threading.Lock()

    def gated(path: str, body: Any) -> stub_server.Reply:
        with lock:
            now = len(answered) < answer_first
            if now:
                answered.append(stub_server.prompt_of(body))
        if not now:
            release.wait(LIMIT_S)
        return stub_server.Reply()

    return gated


def now_kill(provider: str, document: Path, work: Path, loops: int, seed: int = 11) -> dict[str, int]:
    """``kill -9`` of a Lab sweep in now mode with some replies stored and calls at the provider,
    then the same command again: calls paid twice (sent in both runs), and how many of them the
    second run reported as possibly billed."""
    import re
    import threading

    rng = random.Random(seed)
    twice = reported = stored_asked_again = hangs = 0
    for loop in range(loops):
        db = work / f"now-kill-{provider}-{loop}.db"
        release = threading.Event()
        answer_first = rng.randint(1, 6)
        answered: list[str] = []
        gated = _gated(release, answer_first, answered)
        with StubServer(gated) as stub:
            env = environment(provider, stub, db)
            first = subprocess.Popen(argv(provider, document, mode="now"), cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            end = time.monotonic() + LIMIT_S
            while len(stub.requests) < answer_first + 2 and time.monotonic() < end and first.poll() is None:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.3))
            first.kill()
            first.wait()
            release.set()
            sent_first = {stub_server.prompt_of(r.body) for r in stub.requests}
            count = len(stub.requests)
            stub.responder = None
            try:
                done = subprocess.run(argv(provider, document, mode="now"), cwd=ROOT, env=env,
                                      capture_output=True, text=True, timeout=LIMIT_S)  # fmt: skip
                data = json.loads(done.stdout or "{}")
            except subprocess.TimeoutExpired:
                hangs += 1
                continue
            again = [stub_server.prompt_of(r.body) for r in stub.requests[count:]]
            twice += len(sent_first & set(again))
            stored_asked_again += len(set(answered) & set(again))
            said = re.search(
                r"([\d,]+) calls? sent before the interruption", data.get("possibly_billed") or ""
            )
            reported += int(said.group(1).replace(",", "")) if said else 0
    return {
        "loops": loops, "calls paid twice": twice, "of them reported as possibly billed": reported,
        "answered calls asked again": stored_asked_again, "hangs": hangs,
    }  # fmt: skip


def main() -> None:
    global LIMIT_S, CAP_TIMES
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loops", type=int, default=50)
    parser.add_argument("--providers", default="openai,anthropic")
    parser.add_argument(
        "--only", choices=["overspend", "lost", "kill", "now-overspend", "now-kill"], default=None
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="trials per cell of the swept grid (a bigger grid)"
    )
    parser.add_argument(
        "--limit", type=float, default=180.0, help="seconds after which a rerun counts as hung"
    )
    parser.add_argument(
        "--cap-times", type=float, default=CAP_TIMES, help="the cap, in what an honest server bills"
    )
    args = parser.parse_args()
    LIMIT_S = args.limit
    CAP_TIMES = args.cap_times
    SWEEP[SWEEP.index("--repeats") + 1] = str(args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        document = work / "planted.txt"
        document.write_text("\f".join(planted_texts()))
        for provider in args.providers.split(","):
            if args.only in (None, "overspend"):
                print(provider, "overspend", overspend(provider, document, work), flush=True)
            if args.only in (None, "now-kill"):
                print(
                    provider,
                    "now-mode kill and resume",
                    now_kill(provider, document, work, args.loops),
                    flush=True,
                )
            if args.only in (None, "now-overspend"):
                print(provider, "now-mode overspend", overspend(provider, document, work, "now"), flush=True)
            if args.only in (None, "lost"):
                print(provider, "lost reply", lost_reply(provider, document, work), flush=True)
            if args.only in (None, "kill"):
                print(
                    provider, "kill and resume", kill_loop(provider, document, work, args.loops), flush=True
                )


if __name__ == "__main__":
    main()
