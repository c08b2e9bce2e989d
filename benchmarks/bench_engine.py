"""Engine benchmarks: ingestion against a floor, the offline engine against ingestion, threads
against one method after another, and planning.

Every comparison runs its two sides in turn (A B A B …), so a load spike on this shared
machine lands on both sides rather than on one; each figure is the median of the rounds and
each ratio the median of the rounds' ratios. Prints; asserts nothing about time.

    python benchmarks/bench_engine.py [--pages 3000] [--rounds 5]

- ingest: the floor is pymupdf open + get_text + tiktoken ``encode_ordinary`` per page;
  ours is ``load_document`` (cleaning, counting, the document's record). Target <= 1.30x.
- offline ask: ``run_methods`` with baseline, R&R and chunked R&R on the offline engine,
  against a plain ingest (``load_document``) of the same PDF; the engine's memories (terms,
  pages) start empty each round, as in a fresh ``python -m rr_core ask``. Target: the ask
  <= 0.30x of an ingest, i.e. ingest + ask <= 1.30x a plain ingest.
- threads: the same three methods through ``run_methods`` (one thread per method, chunks in
  threads) against one ``run_method`` after another. The work holds the GIL.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from longdoc import QUESTION, pdf_path  # noqa: E402

from rr_core import retrieval, tokens  # noqa: E402
from rr_core.documents import Document, load_document  # noqa: E402
from rr_core.llm import OfflineEngine  # noqa: E402
from rr_core.methods import all_methods, get_method  # noqa: E402
from rr_core.runs import run_plans  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.tokens import TokenCounter, counter_for_model  # noqa: E402

THREE = ("baseline", "rr", "chunked-rr")


def plans_for(document: Document, counter: TokenCounter, methods: tuple[str, ...]) -> list:  # type: ignore[type-arg]
    """The plans of the given methods on the document."""
    return [get_method(s.method).plan(document, QUESTION, s, counter) for s in settings_for(methods)]


def plan_all(document: Document, question: str, settings: RunSettings, counter: TokenCounter) -> list:  # type: ignore[type-arg]
    """Every registered method planned with shared settings (gold page 1 for the oracle)."""
    return [
        m.plan(document, question, settings.but(method=m.name, gold_pages=(1,)), counter)
        for m in all_methods()
    ]


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, all threads)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


class Pair:
    """Medians of two sides run in turn, in wall and CPU time, with the median ratios."""

    def __init__(self, a: Callable[[], object], b: Callable[[], object], rounds: int) -> None:
        a()
        b()  # warm-up: imports, encodings, first-use caches
        rows: list[tuple[float, float, float, float]] = []
        for _ in range(rounds):
            (wall_a, cpu_a), (wall_b, cpu_b) = timed(a), timed(b)
            rows.append((wall_a, cpu_a, wall_b, cpu_b))
        self.wall_a, self.cpu_a, self.wall_b, self.cpu_b = (
            statistics.median(r[k] for r in rows) for k in range(4)
        )
        self.wall_ratio = statistics.median(r[0] / r[2] for r in rows)
        self.cpu_ratio = statistics.median(r[1] / r[3] for r in rows)

    def describe(self, a: str, b: str) -> str:
        return (
            f"{a} {self.wall_a * 1000:.0f} ms wall / {self.cpu_a * 1000:.0f} ms CPU, "
            f"{b} {self.wall_b * 1000:.0f} ms wall / {self.cpu_b * 1000:.0f} ms CPU"
        )


def fresh_engine_memory() -> None:
    """Empty what the engine remembers between runs: each round is a first ask. (The
    getattr calls let this file measure the engine before these memories existed.)"""
    for memory in (
        getattr(retrieval, "_PAGES", None),
        getattr(retrieval, "_TERM_OF", None),
        getattr(retrieval, "_TOKENS", None),
    ):
        if memory is not None:
            memory.clear()


def forget_counts() -> None:
    """Forget the token counts remembered at loading, so that every load counts afresh."""
    known = getattr(tokens, "_KNOWN", None)
    if known is not None:
        known.clear()
    keys = getattr(tokens, "_KEY_OF", None)  # the page digests, computed while counting
    if keys is not None:
        keys.clear()


def bench_ingest(path: Path, pages: int, counter: TokenCounter, rounds: int) -> None:
    import pymupdf

    encoding = counter._encoding
    if encoding is None:
        print("tiktoken encoding unavailable: set TIKTOKEN_CACHE_DIR; ingest benchmark skipped")
        return
    data = path.read_bytes()

    def floor() -> None:
        doc = pymupdf.open(stream=data, filetype="pdf")
        for page in doc:
            len(encoding.encode_ordinary(page.get_text()))
        doc.close()

    def ours() -> None:
        forget_counts()
        load_document(data, filename=path.name, counter=counter)

    pair = Pair(ours, floor, rounds)
    print(
        f"ingest {pages}-page PDF: {pair.describe('load_document', 'floor (get_text + encode_ordinary)')}: "
        f"ratio {pair.wall_ratio:.2f}x wall, {pair.cpu_ratio:.2f}x CPU (target <= 1.30x)"
    )


def settings_for(methods: tuple[str, ...]) -> list[RunSettings]:
    return [
        RunSettings(method=m, model="offline", provider="offline", price_model="gpt-4.1-mini")
        for m in methods
    ]


def bench_offline_ask(path: Path, pages: int, counter: TokenCounter, rounds: int) -> None:
    data = path.read_bytes()
    loaded: list[Document] = []

    def ingest() -> None:
        forget_counts()
        loaded[:] = [load_document(data, filename=path.name, counter=counter)]

    def ask() -> None:
        fresh_engine_memory()
        run_plans(loaded[0], plans_for(loaded[0], counter, THREE), OfflineEngine(counter))

    ingest()
    pair = Pair(ask, ingest, rounds)
    print(
        f"offline ask, baseline + R&R + chunked R&R, {pages} pages: {pair.describe('ask', 'plain ingest')}: "
        f"ingest + ask = {1 + pair.wall_ratio:.2f}x wall, {1 + pair.cpu_ratio:.2f}x CPU a plain ingest "
        "(target <= 1.30x)"
    )

    def threads() -> None:
        fresh_engine_memory()
        run_plans(loaded[0], plans_for(loaded[0], counter, THREE), OfflineEngine(counter))

    def serial() -> None:
        fresh_engine_memory()
        for settings in settings_for(THREE):
            run_plans(
                loaded[0],
                [get_method(settings.method).plan(loaded[0], QUESTION, settings, counter)],
                OfflineEngine(counter),
                concurrency=1,
            )

    pair = Pair(threads, serial, rounds)
    print(
        f"the three methods: {pair.describe('in threads', 'one after another')}: threads/serial "
        f"{pair.wall_ratio:.2f}x wall, {pair.cpu_ratio:.2f}x CPU (the work holds the GIL)"
    )


def bench_plan(document: Document, counter: TokenCounter) -> None:
    settings = RunSettings(method="baseline", model="gpt-4.1-mini", provider="openai")
    plan_all(document, QUESTION, settings, counter)  # warm the instruction-count cache
    times = []
    for k in range(10):
        # A new interval each time, as when a slider moves.
        varied = RunSettings(method="baseline", reminder_every=5_000 + 500 * k, chunk_size=20_000 + 1000 * k)
        start = time.perf_counter()
        plan_all(document, QUESTION, varied, counter)
        times.append(time.perf_counter() - start)
    print(
        f"plan all six methods on {len(document.pages)} pages / {document.total_tokens:,} tokens: "
        f"median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms (target < 50 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000, help="pages of the benchmark PDF")
    parser.add_argument("--ingest-pages", type=int, default=400, help="pages for the ingest benchmark")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["ingest", "ask", "plan"], default=None)
    args = parser.parse_args()
    counter = counter_for_model("gpt-4.1-mini")
    if args.only in (None, "ingest"):
        bench_ingest(pdf_path(args.ingest_pages), args.ingest_pages, counter, args.rounds)
    if args.only in (None, "ask"):
        bench_offline_ask(pdf_path(args.pages), args.pages, counter_for_model("offline"), args.rounds)
    if args.only in (None, "plan"):
        bench_plan(load_document(pdf_path(args.ingest_pages), counter=counter), counter)


if __name__ == "__main__":
    main()
