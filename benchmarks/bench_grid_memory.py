"""Review grid memory benchmark: the peak resident size *while a grid runs*, at two corpus sizes.

Each size runs in a process of its own: generated 20-page contracts are read into a fresh store
(a SQLite file in a temporary folder), then the grid (R&R, 10 questions, the offline engine, as
the app's background runner does: cells recorded, traces saved) runs while a thread samples
the process's resident size every 20 ms. Printed per size: the peak over the resident size just
before the grid started (what the run itself holds), the time of the run; then the ratios of the
larger size to the smaller. The goal is judged on the whole resident size (VmRSS); its anonymous
part (RssAnon: the program's own memory) and its file-backed part (RssFile: mapped files, here
the libraries; the store is read with read(), not mapped) are printed beside it. Measured, the
file-backed part does not move while the grid runs (+0.1 MB): the growth is the program's. Memory that does not grow with the corpus gives a peak ratio near 1;
time that grows linearly gives a time ratio near the size ratio (1000 / 300 = 3.33).

    .venv/bin/python benchmarks/bench_grid_memory.py [--sizes 300 1000] [--columns 10]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

PAGES = 20
QUESTIONS = [
    "Which state's law governs this agreement?",
    "When does the agreement expire?",
    "What is the notice period for termination?",
    "Who are the parties to the agreement?",
    "Is either party's liability capped?",
    "May the agreement be assigned without consent?",
    "What are the payment terms?",
    "Where are disputes resolved?",
    "Is there a non-compete clause?",
    "What is the effective date?",
]
STATES = ["Texas", "New York", "Ohio", "Utah", "Delaware", "California"]
FILLER = (
    "The supplier shall deliver the goods described in the schedule on the dates agreed in writing, "
    "and the buyer shall inspect them within a reasonable time after delivery. "
)


def _rss_kb() -> tuple[int, int, int]:
    """The resident size, and its anonymous and file-backed parts (kB, /proc/self/status)."""
    found = dict.fromkeys(("VmRSS", "RssAnon", "RssFile"), 0)
    for line in Path("/proc/self/status").read_text().splitlines():
        name = line.split(":", 1)[0]
        if name in found:
            found[name] = int(line.split()[1])
    return found["VmRSS"], found["RssAnon"], found["RssFile"]


def _contract(i: int) -> list[str]:
    pages = [f"Supply agreement {i}, page {p + 1}. " + FILLER * 12 for p in range(PAGES)]
    pages[0] = (
        f"This Supply Agreement is made as of March {1 + i % 28}, 2021 between Acme {i} Inc. and Beta LLC. "
        + pages[0]
    )
    pages[7] += f" This Agreement shall be governed by the laws of the State of {STATES[i % len(STATES)]}."
    pages[11] += " Either party may terminate this Agreement on sixty (60) days' written notice."
    if i % 2:
        pages[15] += " In no event shall either party's liability exceed the fees paid in the prior year."
    return pages


def _measure(size: int, columns: int) -> dict[str, object]:
    from rr_core.documents import pdf_from_texts
    from rr_core.review import items_from_uploads, parse_columns
    from rr_core.store import open_store
    from rr_core.work import InProcessQueue, ReviewWork, submit_review
    from rr_core.workbench import Engine, read_review_corpus

    folder = tempfile.mkdtemp(prefix="rr-bench-memory-")
    path = str(Path(folder) / "runs.sqlite3")
    store = open_store(path)
    engine = Engine.choose("offline")
    uploads = [(f"c{i}.pdf", pdf_from_texts(_contract(i), title=f"Contract {i}")) for i in range(size)]
    files = read_review_corpus(
        items_from_uploads(uploads)[0], model=engine.counting_model(), store=store, processes=2
    )
    del uploads
    text = "question,type\n" + "".join(f"{q},text\n" for q in QUESTIONS[:columns])
    work = ReviewWork(
        tuple(files), tuple(parse_columns(text)), engine.settings(method="rr"), engine.provider, engine.model,
        engine.price_model, concurrency=2,
    )  # fmt: skip
    work_id = submit_review(store, work)
    gc.collect()
    floor = _rss_kb()
    peak = list(floor)
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            peak[:] = map(max, peak, _rss_kb())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    queue = InProcessQueue(lambda: open_store(path))  # the app's background runner
    queue.submit(work_id)
    queue.wait(work_id, 24 * 3600)
    seconds = time.perf_counter() - started
    running.clear()
    sampler.join()
    record = store.get_work(work_id)
    assert record is not None and record.state == "done", record
    return {
        "documents": size,
        "columns": columns,
        "cells": record.done,
        "peak_over_start_mb": round((peak[0] - floor[0]) / 1024, 1),
        "anon_peak_over_start_mb": round((peak[1] - floor[1]) / 1024, 1),
        "file_peak_over_start_mb": round((peak[2] - floor[2]) / 1024, 1),
        "start_mb": round(floor[0] / 1024, 1),
        "start_anon_mb": round(floor[1] / 1024, 1),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=(300, 1000), metavar=("SMALL", "LARGE"))
    parser.add_argument("--columns", type=int, default=10)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.columns)))
        return
    found = []
    for size in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--columns", str(args.columns), "--child", str(size)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        found.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(found[-1]))
    small, large = found
    size_ratio = large["documents"] / small["documents"]  # type: ignore[operator]
    peak_ratio = large["peak_over_start_mb"] / max(small["peak_over_start_mb"], 0.1)  # type: ignore[operator]
    time_ratio = large["seconds"] / max(small["seconds"], 0.01)  # type: ignore[operator]
    print(
        f"grid of {small['documents']} → {large['documents']} documents × {small['columns']} questions "
        f"(size ×{size_ratio:.2f}): peak while running {small['peak_over_start_mb']} → {large['peak_over_start_mb']} MB "
        f"(×{peak_ratio:.2f}; goal ≤ 1.3), time {small['seconds']} → {large['seconds']} s (×{time_ratio:.2f}; "
        f"linear ×{size_ratio:.2f}, goal ≤ {size_ratio * 1.08:.2f})"
    )


if __name__ == "__main__":
    main()
