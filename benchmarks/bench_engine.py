"""Engine benchmarks: ingestion against a floor, planning, and chunk concurrency.

Prints ratios against floors measured in the same run; asserts nothing about time.

    python benchmarks/bench_engine.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rr_core.documents import load_document, pdf_from_texts  # noqa: E402
from rr_core.methods import method_names, plan_method  # noqa: E402
from rr_core.samples import get_sample  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402

PAGES = 400


def best_of(n: int, fn) -> float:  # type: ignore[no-untyped-def]
    """Best wall time of n runs (seconds)."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def make_pdf() -> bytes:
    """A 400-page PDF from the generated samples' pages (contract, then protocol, repeated)."""
    texts = list(get_sample("contract").pages) + list(get_sample("protocol").pages)
    pages = [texts[i % len(texts)] for i in range(PAGES)]
    return pdf_from_texts(pages, title="Benchmark document")


def bench_ingest(pdf: bytes) -> None:
    import pymupdf

    counter = counter_for_model("gpt-4.1-mini")
    encoding = counter._encoding
    if encoding is None:
        print("tiktoken encoding unavailable: set TIKTOKEN_CACHE_DIR; ingest benchmark skipped")
        return

    def floor() -> None:
        doc = pymupdf.open(stream=pdf, filetype="pdf")
        for page in doc:
            encoding.encode_ordinary(page.get_text())
        doc.close()

    def ours() -> None:
        load_document(pdf, filename="bench.pdf", counter=counter)

    floor()
    ours()  # warm imports and caches
    t_floor = best_of(5, floor)
    t_ours = best_of(5, ours)
    ratio = t_ours / t_floor
    print(
        f"ingest {PAGES}-page PDF: floor {t_floor * 1000:.0f} ms (get_text + encode_ordinary), "
        f"load_document {t_ours * 1000:.0f} ms, ratio {ratio:.2f}x (target <= 1.30x)"
    )


def plan_all(document, question, settings, counter) -> None:  # type: ignore[no-untyped-def]
    """Plan every registered method with the same settings (the Ask screen's live plan)."""
    for name in method_names():
        plan_method(document, question, settings.but(method=name), counter)


def bench_plan(pdf: bytes) -> None:
    counter = counter_for_model("gpt-4.1-mini")
    document = load_document(pdf, filename="bench.pdf", counter=counter)
    settings = RunSettings(model="gpt-4.1-mini", provider="openai", gold_pages=(3,))
    question = "What monthly interest rate applies to late payments?"
    plan_all(document, question, settings, counter)  # warm the instruction-count cache
    times = []
    for k in range(10):
        # A new interval each time, as when a slider moves.
        varied = settings.but(reminder_every=5_000 + 500 * k, chunk_size=20_000 + 1000 * k)
        start = time.perf_counter()
        plan_all(document, question, varied, counter)
        times.append(time.perf_counter() - start)
    print(
        f"plan all {len(method_names())} methods on {len(document.pages)} pages / {document.total_tokens:,} tokens: "
        f"median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms (target < 50 ms)"
    )


def main() -> None:
    pdf = make_pdf()
    bench_ingest(pdf)
    bench_plan(pdf)


if __name__ == "__main__":
    main()
