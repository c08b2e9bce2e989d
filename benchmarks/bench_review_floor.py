"""Review against a one-process reading floor, whole commands timed from outside (issue 24).

A Review of N generated 20-page contracts × 10 questions on the offline engine
(``python -m rr_core review --provider offline``: reading, storing, planning, the grid, its
table) is timed as a whole process against the floor: one process that opens the same PDFs with
pymupdf, takes every page's text and counts its tokens with tiktoken, keeping nothing (the least
any tool must do before it can answer anything about them). The two commands run in turn,
A B A B ..., and the ratio is taken pair by pair (the machine's speed drifts between runs);
printed: each command's median wall and CPU seconds, the pairs' median ratio and its spread.
Target: Review ≤ 2.0× the floor on 30 contracts. Asserts nothing.

    .venv/bin/python benchmarks/bench_review_floor.py [--docs 30] [--runs 5] [--processes N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

_SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

FLOOR = """
import sys
sys.modules["pymupdf.layout"] = None
sys.modules["pymupdf4llm"] = None
import pymupdf, tiktoken
encoding = tiktoken.get_encoding("o200k_base")
total = 0
for path in sys.argv[1:]:
    with pymupdf.open(path) as doc:
        for page in doc:
            total += len(encoding.encode_ordinary(page.get_text()))
print(total)
"""


def _write_corpus(folder: Path, docs: int) -> list[Path]:
    from bench_grid_memory import _contract

    from rr_core.documents import pdf_from_texts

    paths = []
    for i in range(docs):
        path = folder / f"contract-{i:03d}.pdf"
        path.write_bytes(pdf_from_texts(_contract(i), title=f"Contract {i}"))
        paths.append(path)
    return paths


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one whole run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    from bench_grid_memory import QUESTIONS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--processes", type=int, default=None, help="Review's reading processes (default: as a user runs it)"
    )
    args = parser.parse_args()
    # rr_core compiled, as an installed package is (the floor's pymupdf and tiktoken are): where
    # PYTHONDONTWRITEBYTECODE is set, every Review would compile it again.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "rr_core")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    with tempfile.TemporaryDirectory(prefix="rr-bench-floor-") as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus"
        corpus.mkdir()
        paths = _write_corpus(corpus, args.docs)
        questions = folder / "questions.csv"
        questions.write_text("question,type\n" + "".join(f"{q},text\n" for q in QUESTIONS))
        floor = [sys.executable, "-c", FLOOR, *map(str, paths)]
        from rr_core.tokens import BUNDLED_TIKTOKEN

        # The floor loads the encoding from the files R&R Studio ships (no download).
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TIKTOKEN_CACHE_DIR": str(BUNDLED_TIKTOKEN)}
        env.pop("OPENAI_API_KEY", None)
        env.pop("ANTHROPIC_API_KEY", None)
        rows: list[tuple[float, float, float, float]] = []
        for run in range(args.runs + 1):  # the first pair warms the disk cache: not counted
            store = folder / f"runs-{run}.sqlite3"  # a fresh store each run: nothing read before
            review = [
                sys.executable, "-m", "rr_core", "review", "--provider", "offline", "--questions",
                str(questions), *(["--processes", str(args.processes)] if args.processes else []), str(corpus),
            ]  # fmt: skip
            review_wall, review_cpu = _timed(review, {**env, "RR_STUDIO_DB": str(store)})
            floor_wall, floor_cpu = _timed(floor, env)
            if run:
                rows.append((review_wall, review_cpu, floor_wall, floor_cpu))
    ratios = sorted(r[0] / r[2] for r in rows)
    cpu_ratios = sorted(r[1] / r[3] for r in rows)
    median = statistics.median
    print(
        f"{args.docs} contracts × 20 pages, {len(QUESTIONS)} questions, offline engine, {args.runs} pairs "
        f"(Review read on {f'{args.processes} processes' if args.processes else 'its default processes'}):"
    )
    print(
        f"  Review (python -m rr_core review): wall {median([r[0] for r in rows]):.2f} s, "
        f"CPU {median([r[1] for r in rows]):.2f} s"
    )
    print(
        f"  floor (pymupdf text + tiktoken count, one process): wall {median([r[2] for r in rows]):.2f} s, "
        f"CPU {median([r[3] for r in rows]):.2f} s"
    )
    print(
        f"Review / floor, pair by pair: wall ×{median(ratios):.2f} (spread {ratios[0]:.2f}–{ratios[-1]:.2f}), "
        f"CPU ×{median(cpu_ratios):.2f} (spread {cpu_ratios[0]:.2f}–{cpu_ratios[-1]:.2f}); target ≤ 2.0"
    )


if __name__ == "__main__":
    main()
