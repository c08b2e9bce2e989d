"""Chunked R&R's fan-out against a loopback stub that answers after 0.5 s.

The chunks' retrieval calls are independent and run concurrently, so the retrieval phase
should take about one call's time, not one per chunk. Measured with 8 chunks at a limit of
8 calls in flight, and 16 chunks at 16 (issue 9: <= 1.2x one call). Prints ratios; asserts
nothing about time.

    python benchmarks/bench_concurrency.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from stub_server import Reply, StubServer  # noqa: E402

from rr_core.documents import document_from_texts  # noqa: E402
from rr_core.llm import make_client  # noqa: E402
from rr_core.llm.base import LLMRequest  # noqa: E402
from rr_core.methods import plan_method  # noqa: E402
from rr_core.runs import CallEvent, run_plans  # noqa: E402
from rr_core.samples import get_sample  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402

DELAY = 0.5
CASES = ((8, 8), (16, 16))  # (chunks, calls in flight at most)
TARGET = 1.2


def fan_out(chunks_wanted: int, concurrency: int) -> tuple[int, float, float, float]:
    """(chunks, one call's seconds, the retrieval phase's, the whole run's)."""
    counter = counter_for_model("gpt-4.1-mini")
    pages = get_sample("contract").pages
    document = document_from_texts("bench", pages, counter=counter)
    chunk_size = document.total_tokens // chunks_wanted + 1
    settings = RunSettings(
        method="chunked-rr", chunk_size=chunk_size, model="gpt-4.1-mini", provider="openai"
    )
    question = "What monthly interest rate applies to late payments?"
    plan = plan_method(document, question, settings, counter)
    chunks = len(plan.chunks)

    with StubServer(responder=lambda path, body: Reply(delay_s=DELAY)) as stub:
        client = make_client(
            "openai", model="gpt-4.1-mini", api_key="sk-bench", base_url=stub.url, max_retries=0
        )
        # One call alone, as the unit of comparison (a warm connection, like the run's).
        first = plan.phases[0].calls[0]
        request = LLMRequest(
            prompt=first.render(), schema=first.schema, model="gpt-4.1-mini", layout=first.layout
        )
        client.complete(request)
        start = time.perf_counter()
        client.complete(request)
        single = time.perf_counter() - start

        marks: dict[str, float] = {}

        def on_event(event: CallEvent) -> None:
            now = time.perf_counter()
            if event.stage == "retrieve":
                marks.setdefault("first_start", now)
                if event.status != "started":
                    marks["last_done"] = now

        start = time.perf_counter()
        [trace] = run_plans(document, [plan], client, on_event=on_event, concurrency=concurrency)
        total = time.perf_counter() - start
    if trace.error:
        raise SystemExit(f"run failed: {trace.error}")
    return chunks, single, marks["last_done"] - marks["first_start"], total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"stub delay {DELAY} s; medians of {args.rounds} rounds")
    for wanted, concurrency in CASES:
        rounds = [fan_out(wanted, concurrency) for _ in range(args.rounds)]
        chunks = rounds[0][0]
        single = statistics.median(r[1] for r in rounds)
        ratio = statistics.median(r[2] / r[1] for r in rounds)
        whole = statistics.median(r[3] / r[1] for r in rounds)
        print(
            f"chunked R&R, {chunks} chunks, at most {concurrency} calls in flight: one call {single:.2f} s; "
            f"retrieval phase {ratio:.2f}x one call (target <= {TARGET}x; one after another would be "
            f"{chunks}x); whole run (retrieval phase + answer call) {whole:.2f}x (two phases: at least 2x)"
        )


if __name__ == "__main__":
    main()
