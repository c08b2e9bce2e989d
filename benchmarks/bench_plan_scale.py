"""How long planning and estimating a grid takes at team scale: N documents × 50 questions (10,000
documents by default), each document's reading opened from the store, planned and priced, as the
Review screen and ``review --dry-run`` do before anything is sent. Goal: under 10 s at 10,000 × 50.

    .venv/bin/python benchmarks/bench_plan_scale.py [--docs 10000] [--questions 50] [--method rr]

The documents are generated contracts of 6 to 30 pages, each a different selection of 60 page
texts of different lengths (so no two documents need plan alike): N readings in the store, each
opened, decompressed and planned. Planning is pure and
single-threaded: the figures are the wall and CPU time of ``plan_grid`` (CPU time holds better
on a shared machine), the floor beside it is opening the
same N readings and nothing else (the part no planner can avoid), measured in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rr_core.documents import document_from_texts  # noqa: E402
from rr_core.methods import parse_spec  # noqa: E402
from rr_core.review import Column  # noqa: E402
from rr_core.review.corpus import CorpusFile, StoredDocuments, reading_bytes  # noqa: E402
from rr_core.store import SQLiteStore  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402
from rr_core.workbench import Engine, plan_grid  # noqa: E402

POOL = 60  # distinct page texts
CLAUSE = (
    "The Supplier shall deliver the goods described in Schedule {n} to the Buyer's warehouse within "
    "thirty days of each purchase order, and the Buyer shall pay each invoice within forty-five days. "
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--method", default="rr", help="the grid's method spec (rr, baseline, icr, …)")
    parser.add_argument(
        "--file", action="store_true", help="a SQLite file for the store (default: in memory)"
    )
    args = parser.parse_args()

    engine = Engine.choose("offline", price_model="gpt-4.1-mini")
    counter = counter_for_model(engine.counting_model())
    pool = [f"Page text {p}. " + CLAUSE.format(n=p) * (1 + p % 9) for p in range(POOL)]
    folder = Path(tempfile.mkdtemp(prefix="rr-bench-plan-"))
    store = SQLiteStore(folder / "runs.sqlite3") if args.file else SQLiteStore(":memory:")
    started = time.perf_counter()
    files = []
    for i in range(args.docs):
        pages = 6 + (i * 7) % 25
        texts = [pool[(i * (1 + i % 13) + j * 7) % POOL] for j in range(pages)]
        sha = hashlib.sha256(f"contract {i}".encode()).hexdigest()
        document = document_from_texts(f"contract_{i:05d}.pdf", texts, counter=counter, sha256=sha)
        store.put_reading(sha, counter.label, reading_bytes(document))
        files.append(
            CorpusFile(
                document.name, 10_000, sha256=sha, kind="pdf", pages=pages, tokens=document.total_tokens
            )
        )
    print(f"(stored {args.docs:,} readings in {time.perf_counter() - started:.1f} s)", flush=True)
    columns = [Column(f"What does the agreement say about topic {q}?") for q in range(1, args.questions + 1)]
    settings = parse_spec(args.method, engine.settings())

    started = time.perf_counter()
    opener = StoredDocuments(store, counter)
    for f in files:
        opener.open(f.ref)
    floor = time.perf_counter() - started

    started, cpu_started = time.perf_counter(), time.process_time()
    plan = plan_grid(files, columns, settings, counter, store=store, tokenizer=engine.counting_model())
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    e = plan.estimate
    print(
        f"{args.docs:,} documents × {args.questions} questions ({args.method}): planned and estimated in "
        f"{seconds:.2f} s wall, {cpu:.2f} s CPU ({cpu / args.docs * 1000:.2f} ms CPU a document); {len(plan.jobs):,} jobs, {e.calls:,} "
        f"calls, {e.input_tokens:,} input tokens, ${e.usd('now'):,.2f} now / ${e.usd('batch'):,.2f} batch as "
        f"gpt-4.1-mini"
    )
    print(
        f"floor (opening the {args.docs:,} readings only): {floor:.2f} s; planning is {seconds / floor:.1f}× it"
    )
    load = os.getloadavg()[0]
    if args.docs >= 10_000:
        print(
            f"goal, under 10 s at 10,000 × 50: wall {seconds:.1f} s ({'met' if seconds < 10 else 'not met'}), CPU "
            f"{cpu:.1f} s ({'met' if cpu < 10 else 'not met'}); load average {load:.1f} on {os.cpu_count()} cores "
            "(on a busy machine the wall time is the CPU time stretched by the others' share)"
        )


if __name__ == "__main__":
    main()
