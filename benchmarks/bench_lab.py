"""The Lab: what the R&R paper's full grid plans to (calls, tokens, dollars) and how long
planning takes, and the Lab's overhead per call against a bare client call on the loopback
stub. Prints figures and ratios; asserts nothing about time.

    python benchmarks/bench_lab.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from stub_server import StubServer  # noqa: E402

from rr_core.jobs import plan_job  # noqa: E402
from rr_core.lab import TrialSpec, build_trials  # noqa: E402
from rr_core.lab.presets import get_preset  # noqa: E402
from rr_core.lab.sweep import plan_sweep, run_sweep  # noqa: E402
from rr_core.llm import make_client  # noqa: E402
from rr_core.llm.base import LLMRequest  # noqa: E402
from rr_core.methods import parse_spec  # noqa: E402
from rr_core.runs import Executor  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.sources import sample_document  # noqa: E402
from rr_core.store import SQLiteStore  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402

ROUNDS = 5


def paper_grid() -> None:
    counter = counter_for_model("gpt-4.1-mini")
    document = sample_document("contract", counter)
    preset = get_preset("paper-grid")
    started = time.perf_counter()
    trials = build_trials(
        TrialSpec(task="planted", lengths=preset.lengths, repeats=1), preset, document, counter
    )
    built = time.perf_counter() - started
    print(
        f"The R&R paper's grid on the sample contract: {len(trials)} trials (lengths 10k-80k, a fact every 10k tokens)"
    )
    for model, provider in (("gpt-4.1-mini", "openai"), ("claude-sonnet-4-5", "anthropic")):
        base = RunSettings(model=model, provider=provider)
        series = [parse_spec(s, base) for s in preset.series]
        started = time.perf_counter()
        plan = plan_sweep(trials, series, counter)
        planned = time.perf_counter() - started
        print(
            f"  {model:<18} {plan.calls:>5,} calls  {plan.input_tokens:>12,} input tokens  "
            f"{plan.output_tokens:>8,} output  ${plan.usd:>8.2f}   planned in {planned:.2f} s "
            f"(trials built in {built:.2f} s)"
        )


def overhead() -> None:
    """Per call: the Lab (plan, executor, store lookup and write, scoring) vs the bare client."""
    counter = counter_for_model("gpt-4.1-mini")
    document = sample_document("contract", counter)
    preset = get_preset("quick")
    trials = build_trials(TrialSpec(task="planted", lengths=(4_000,), repeats=4), preset, document, counter)
    base = RunSettings(model="gpt-4.1-mini", provider="openai")
    plan = plan_sweep(trials, [parse_spec("baseline", base)], counter, bounds=False)
    calls = plan.calls
    with StubServer() as stub:
        client = make_client(
            "openai", model="gpt-4.1-mini", api_key="sk-bench", base_url=stub.url, max_retries=0
        )
        assert plan.maker is not None
        planned = [plan_job(job, plan.maker.open(job.source), counter) for job in plan.jobs]
        requests = [
            LLMRequest(prompt=c.render(), schema=c.schema, model="gpt-4.1-mini", layout=c.layout)
            for p in planned
            for c in p.calls
        ]
        client.complete(requests[0])  # warm the connection
        bare, lab, repeat = [], [], []
        for _ in range(ROUNDS):  # interleaved, so a load spike lands on both sides
            started = time.perf_counter()
            for request in requests:
                client.complete(request)
            bare.append((time.perf_counter() - started) / calls)
            with tempfile.TemporaryDirectory() as folder:
                store = SQLiteStore(Path(folder) / "lab.sqlite3")
                with Executor(client, concurrency=1, cache=store) as executor:
                    started = time.perf_counter()
                    run_sweep(plan, executor)
                    lab.append((time.perf_counter() - started) / calls)
                with Executor(client, concurrency=1, cache=store) as executor:
                    started = time.perf_counter()
                    again = run_sweep(plan, executor)
                    repeat.append((time.perf_counter() - started) / calls)
                    assert again.calls_made == 0
    b, through, r = (statistics.median(x) for x in (bare, lab, repeat))
    print(f"Per call over {calls} calls, {ROUNDS} rounds (median), one call at a time:")
    print(f"  bare client call          {b * 1000:7.1f} ms")
    print(f"  through the Lab           {through * 1000:7.1f} ms   ratio {through / b:.2f}")
    print(f"  repeated sweep (stored)   {r * 1000:7.1f} ms   ratio {r / b:.2f} (no request sent)")


if __name__ == "__main__":
    paper_grid()
    overhead()
