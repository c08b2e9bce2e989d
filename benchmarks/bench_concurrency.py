"""Chunked R&R with 8 chunks against a loopback stub that answers after 0.5 s.

The chunks' retrieval calls are independent and run concurrently, so the retrieval phase
should take about one call's time, not eight. Prints ratios; asserts nothing about time.

    python benchmarks/bench_concurrency.py
"""

from __future__ import annotations

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
CHUNKS = 8


def main() -> None:
    counter = counter_for_model("gpt-4.1-mini")
    pages = get_sample("contract").pages
    document = document_from_texts("bench", pages, counter=counter)
    chunk_size = document.total_tokens // CHUNKS + 1
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
        [trace] = run_plans(document, [plan], client, on_event=on_event)
        total = time.perf_counter() - start
    if trace.error:
        raise SystemExit(f"run failed: {trace.error}")
    retrieval = marks["last_done"] - marks["first_start"]
    print(f"one call: {single:.2f} s (stub delay {DELAY} s)")
    print(
        f"chunked R&R, {chunks} chunks: retrieval phase {retrieval:.2f} s = {retrieval / single:.2f}x one call "
        f"(target <= 1.5x; sequential would be {chunks}x)"
    )
    print(
        f"whole run (retrieval phase + answer call): {total:.2f} s = {total / single:.2f}x one call "
        "(two phases: at least 2x)"
    )


if __name__ == "__main__":
    main()
