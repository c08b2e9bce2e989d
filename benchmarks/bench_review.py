"""Review benchmark (issue 17, "Scale and speed"): a grid of many generated documents × 20 typed
questions on the offline engine, each figure printed as a ratio against a floor measured in the
same run (asserts nothing):

1. reading: ``read_corpus`` on N worker processes against the pages floor (pymupdf alone, one
   process, taking the text of every page, divided by the N cores used); target ≤ 1.2×;
2. memory: the reading parent's peak (RSS high-water over its size before reading, and the
   Python heap's peak by tracemalloc) against the corpus's text and against its largest
   document (PDF bytes + text): a few documents, not the corpus;
3. tokens: the input tokens of R&R's several-questions pass over asking each question alone,
   measured on every document (target ≤ 25%), beside the engine's own figure (its sample); the
   cacheable share and the dollars (now, now with the prompt cache, batch) in the paper's
   layout and in the cache-aware one, priced as gpt-4.1-mini and claude-sonnet-4-5;
4. planning time of the grid against opening every document's stored reading (the least a
   plan must do), and the grid's run on the offline engine (per cell, per call).

A second part runs the real corpus in ``../shared/data/review/`` (24 CUAD contracts, 6
questions, CUAD's answers; skipped when absent): scores per column and method (R&R, the
baseline, the question-last method) on the offline engine and the simulated reader, the wall
time, and the estimate priced as gpt-4.1-mini and claude-sonnet-4-5, now and batch, printed as
a markdown table.

    python benchmarks/bench_review.py [--quick] [--docs 200] [--part scale|cuad|all]

Documents are generated once (``pdf_from_texts``) into the temporary folder and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

CUAD = ROOT.parent / "shared" / "data" / "review"
PRICE_AS = ("gpt-4.1-mini", "claude-sonnet-4-5")
LAYOUTS = (("paper's layout", "rr"), ("cache-aware layout", "rr:layout=cache-aware"))

# The playbook: 20 typed columns over the generated contracts (the facts page answers some;
# the sample contract's own pages answer others; some are not stated anywhere).
PLAYBOOK = """question,type,instruction,choices
Which jurisdiction's law governs this agreement?,text,,
On what date does the agreement take effect?,date,,
What is the total contract value?,amount,,
Is either party's liability capped?,yes-no,,
What fixed dollar amount is used in each Party's annual liability cap?,amount,,
May the Customer terminate the agreement for convenience?,yes-no,,
How much prior written notice must the Customer give to terminate for convenience?,text,,
What interest rate applies to undisputed amounts paid after the due date?,text,,
What is the cap on Service Credits in a month?,text,,
How many days does the Customer have to pay an invoice?,number,,
Where is the seat of arbitration for disputes?,text,,
Who is the Supplier's Account Executive?,text,,
Which insurance policies must the Supplier carry?,list,,
Does a change of control of a party give the other party a right to terminate?,yes-no,,
Does the agreement restrict assignment without consent?,yes-no,,
How long may the Supplier take to report a suspected security breach?,text,,
What Recovery Time Objective applies to Tier 1 Applications?,text,,
What minimum monthly availability must Tier 1 Applications achieve?,text,,
What is the agreement's renewal term?,choice,,one year|two years|three years|none
Which currency are the charges stated in?,choice,,CAD|USD|EUR|GBP
"""

STATES = ("Ontario", "New York", "Delaware", "California", "Texas", "England and Wales", "Quebec")
CURRENCIES = ("CAD", "USD", "EUR", "GBP")


def _rss_kb() -> int:
    """This process's resident size now (Linux: /proc), in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---- the generated corpus --------------------------------------------------------------------------


def _facts_page(index: int, rng: random.Random) -> str:
    state = STATES[index % len(STATES)]
    day, month, year = rng.randint(1, 28), rng.randint(1, 12), rng.choice((2021, 2022, 2023, 2024, 2025))
    value = rng.randint(2, 90) * 250_000
    currency = CURRENCIES[index % len(CURRENCIES)]
    return (
        f"SCHEDULE Z — PARTICULARS OF AGREEMENT NO. {index + 1:04d}\n\n"
        f"This Agreement is governed by the laws of {state}. It takes effect on "
        f"{year}-{month:02d}-{day:02d}. The total contract value is {currency} {value:,}. "
        f"The Customer shall pay each invoice within {rng.choice((30, 45, 60))} days of receipt. "
        f"The renewal term is {rng.choice(('one year', 'two years', 'three years'))}.\n\n"
        f"Particulars recorded for binder {index + 1:04d}; they prevail over the general terms."
    )


def document_texts(index: int, pages: int) -> list[str]:
    """The page texts of generated document ``index``: a run of the sample contract's pages,
    from an offset of its own, paragraphs turned, a facts page somewhere, every page distinct."""
    from rr_core.samples import get_sample

    base = list(get_sample("contract").pages)
    rng = random.Random(index)
    start = rng.randrange(len(base))
    out = []
    for i in range(pages):
        paragraphs = base[(start + i) % len(base)].split("\n\n")
        turn = (index + i // len(base)) % len(paragraphs)
        paragraphs = paragraphs[turn:] + paragraphs[:turn]
        paragraphs.append(f"Binder {index + 1:04d}, sheet {i + 1} of {pages}.")
        out.append("\n\n".join(paragraphs))
    out[rng.randrange(pages)] = _facts_page(index, rng)
    return out


def corpus(docs: int, low: int, high: int) -> list[Path]:
    """``docs`` PDFs of ``low``–``high`` pages, written on first use into the temporary folder."""
    from rr_core.documents import pdf_from_texts

    folder = Path(tempfile.gettempdir()) / f"rr-bench-review-v1-{low}-{high}"
    folder.mkdir(exist_ok=True)
    paths = []
    made = 0
    started = time.perf_counter()
    for index in range(docs):
        path = folder / f"agreement-{index + 1:04d}.pdf"
        if not path.exists():
            pages = random.Random(10_000 + index).randint(low, high)
            data = pdf_from_texts(document_texts(index, pages), title=f"Agreement {index + 1:04d}")
            partial = path.with_suffix(".part")
            partial.write_bytes(data)
            partial.replace(path)
            made += 1
        paths.append(path)
    if made:
        print(f"(generated {made} PDFs in {time.perf_counter() - started:.0f} s into {folder})", flush=True)
    return paths


# ---- 1 and 2: reading, in child processes ----------------------------------------------------------


def floor(paths: list[Path]) -> dict[str, Any]:
    """The pages floor: pymupdf alone, one process, the text of every page (nothing kept but
    sizes); the time to count each page's tokens (what the reader adds) timed apart."""
    sys.modules["pymupdf.layout"] = None  # type: ignore[assignment]  # add-ons this work never uses
    sys.modules["pymupdf4llm"] = None  # type: ignore[assignment]
    import pymupdf
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    pages = chars = text_bytes = largest = 0
    extracting = counting = 0.0
    cpu_extracting = cpu_counting = 0.0
    for path in paths:
        started, cpu_started = time.perf_counter(), time.process_time()
        doc = pymupdf.open(str(path))
        texts = [page.get_text() for page in doc]
        doc.close()
        middle, cpu_middle = time.perf_counter(), time.process_time()
        for text in texts:
            len(encoding.encode_ordinary(text))
        counting += time.perf_counter() - middle
        cpu_counting += time.process_time() - cpu_middle
        extracting += middle - started
        cpu_extracting += cpu_middle - cpu_started
        pages += len(texts)
        chars += sum(len(t) for t in texts)
        encoded = sum(len(t.encode()) for t in texts)
        text_bytes += encoded
        largest = max(largest, path.stat().st_size + encoded)
    return {
        "pages": pages,
        "chars": chars,
        "text_bytes": text_bytes,
        "pdf_bytes": sum(p.stat().st_size for p in paths),
        "largest_document_bytes": largest,
        "seconds": extracting,
        "seconds_with_tokens": extracting + counting,
        "cpu_s": cpu_extracting,
        "cpu_s_with_tokens": cpu_extracting + cpu_counting,
    }


def read_child(paths: list[str], store_path: str, processes: int, trace: bool) -> dict[str, Any]:
    """Read the corpus into a store at ``store_path`` (a fresh one), as the review does; the
    time, the parent's RSS high-water over its size before, and (``trace``) the heap's peak."""
    import tracemalloc

    from rr_core.review import items_from_paths, read_corpus
    from rr_core.review.corpus import _fields
    from rr_core.store import SQLiteStore
    from rr_core.tokens import counter_for_model

    store = SQLiteStore(store_path)
    items, problems = items_from_paths(paths)
    assert not problems, problems
    # The review's parent has its tokenizer loaded before it reads (the CLI and the screen
    # plan with it); loaded here first, so that the peak is the reading's, not the tokenizer's.
    counter_for_model("gpt-4.1-mini").count("warm")
    before = _rss_kb()
    if trace:
        tracemalloc.start()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    files = read_corpus(items, store, model="gpt-4.1-mini", processes=processes)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    heap_peak = tracemalloc.get_traced_memory()[1] if trace else 0
    if trace:
        tracemalloc.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": seconds,
        "parent_cpu_s": after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime,
        "workers_cpu_s": workers.ru_utime + workers.ru_stime,
        "files": [{**_fields(f), "warnings": list(f.warnings)} for f in files],
        "rss_before_kb": before,
        "rss_peak_kb": peak,
        "heap_peak_bytes": heap_peak,
    }


def _child(mode: str, payload: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, json.dumps(payload)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ---- 3 and 4: the grid -----------------------------------------------------------------------------


@dataclass
class Grid:
    files: list[Any]
    columns: list[Any]
    store: Any


def alone_on_all(grid: Grid, settings: Any, counter: Any) -> tuple[int, int, int]:
    """(documents, input tokens of the several-questions pass, of asking each question alone),
    planned for every document of the corpus."""
    from rr_core.jobs import Job, plan_job
    from rr_core.workbench import review_resolver

    resolver = review_resolver(counter, grid.store)
    questions = tuple(c.prompt for c in grid.columns)
    together = alone = 0
    for f in grid.files:
        material = resolver.open(f.ref)
        job = Job(id="all", source=f.ref, settings=settings, questions=questions)
        together += plan_job(job, material, counter).estimate.input_tokens
        for q in questions:
            one = Job(id="one", source=f.ref, settings=settings, questions=(q,))
            alone += plan_job(one, material, counter).estimate.input_tokens
    return len(grid.files), together, alone


def alone_cached(grid: Grid, settings: Any, counter: Any) -> dict[str, Any]:
    """Asking each question alone in ``settings``'s layout, its calls over a document sent in
    turn with the prompt cache: input tokens, the share read from the cache, and dollars now
    with the cache, per price model (what the several-questions pass is weighed against)."""
    from rr_core.jobs import Job, plan_job
    from rr_core.plans import estimate_calls
    from rr_core.workbench import review_resolver

    resolver = review_resolver(counter, grid.store)
    tokens = cached = 0
    usd = dict.fromkeys(PRICE_AS, 0.0)
    for f in grid.files:
        material = resolver.open(f.ref)
        calls = []
        for column in grid.columns:
            one = Job(id="one", source=f.ref, settings=settings, questions=(column.prompt,))
            calls.extend(plan_job(one, material, counter).calls)
        for price in PRICE_AS:
            e = estimate_calls(calls, settings.but(price_model=price), caching=True)
            usd[price] += e.cost.total_usd
        tokens += e.input_tokens
        cached += e.cached_tokens
    return {"input_tokens": tokens, "cached_tokens": cached, "usd": usd}


def open_floor(grid: Grid, counter: Any) -> float:
    """Seconds to open every document's stored reading (what any plan must do first)."""
    from rr_core.review import StoredDocuments

    resolver = StoredDocuments(grid.store, counter)
    started = time.perf_counter()
    for f in grid.files:
        resolver.document(f.sha256, f.name)
    return time.perf_counter() - started


def scale(args: argparse.Namespace) -> list[str]:
    """Part one: the generated corpus. Returns the README lines."""
    from rr_core.methods import parse_spec
    from rr_core.review import parse_columns
    from rr_core.review.corpus import CorpusFile
    from rr_core.store import SQLiteStore
    from rr_core.tokens import counter_for_model
    from rr_core.workbench import Engine, plan_grid, review

    low, high = (30, 100) if not args.quick else (30, 60)
    paths = corpus(args.docs, low, high)
    cores = min(args.processes or _cores(), len(paths))
    print(f"\n## Scale: {len(paths)} generated documents ({low}–{high} pages) × 20 questions, offline engine")
    names = [str(p) for p in paths]
    work = Path(tempfile.mkdtemp(prefix="rr-bench-review-"))
    # The floor and the reading in turn, ``repeats`` times (the machine is shared: the ratio of
    # each pair, and their median, hold better than single times).
    pairs = []
    for run in range(args.repeats):
        fl = _child("floor", {"paths": names})
        timed = _child(
            "read", {"paths": names, "store": str(work / f"r{run}.db"), "processes": cores, "trace": False}
        )
        pairs.append((fl, timed))
        print(
            f"   run {run + 1}: floor {fl['seconds']:.1f} s (1 process; + {fl['seconds_with_tokens'] - fl['seconds']:.1f} s "
            f"counting tokens), reading {timed['seconds']:.1f} s on {cores} processes (CPU: workers "
            f"{timed['workers_cpu_s']:.1f} s, parent {timed['parent_cpu_s']:.1f} s)",
            flush=True,
        )
    ratios = sorted(t["seconds"] / (f["seconds"] / cores) for f, t in pairs)
    ratios_tokens = sorted(t["seconds"] / (f["seconds_with_tokens"] / cores) for f, t in pairs)
    ratio, ratio_tokens = statistics.median(ratios), statistics.median(ratios_tokens)
    # CPU seconds (the work itself, whatever else the machine runs): all processes of the
    # reading against the floor's own process.
    cpu_ratio = statistics.median((t["workers_cpu_s"] + t["parent_cpu_s"]) / f["cpu_s"] for f, t in pairs)
    cpu_ratio_tokens = statistics.median(
        (t["workers_cpu_s"] + t["parent_cpu_s"]) / f["cpu_s_with_tokens"] for f, t in pairs
    )
    fl = min((f for f, _ in pairs), key=lambda f: f["seconds"])
    timed = pairs[0][1]
    read_s = statistics.median(t["seconds"] for _, t in pairs)
    floor_s = statistics.median(f["seconds"] for f, _ in pairs) / cores
    floor_tokens_s = statistics.median(f["seconds_with_tokens"] for f, _ in pairs) / cores
    traced = _child("read", {"paths": names, "store": str(work / "t.db"), "processes": cores, "trace": True})
    quarter = names[: max(1, len(names) // 4)]
    traced_quarter = _child(
        "read", {"paths": quarter, "store": str(work / "q.db"), "processes": cores, "trace": True}
    )
    files = [CorpusFile(**{**f, "warnings": tuple(f["warnings"])}) for f in timed["files"]]
    read_ok = sum(1 for f in files if f.ok)
    lines = []
    print(
        f"1. reading: {fl['pages']:,} pages in {read_ok}/{len(files)} files on {cores} processes: {read_s:.1f} s "
        f"(median of {len(pairs)}); floor (pymupdf alone, one process, ÷ {cores} cores) {floor_s:.1f} s → "
        f"{ratio:.2f}× the floor (median of the pairs' ratios {', '.join(f'{r:.2f}' for r in ratios)}; target ≤ 1.2×). "
        f"With each page's tokens counted (the reader counts them) the floor is {floor_tokens_s:.1f} s → {ratio_tokens:.2f}×. "
        f"In CPU seconds (all the reading's processes against the floor's): {cpu_ratio:.2f}× the floor, "
        f"{cpu_ratio_tokens:.2f}× with tokens counted"
    )
    lines.append(
        f"| Reading {fl['pages']:,} pages ({len(files)} PDFs) on {cores} processes | {read_s:.1f} s | "
        f"pymupdf alone, 1 process, ÷ {cores} cores: {floor_s:.1f} s (with tokens counted: {floor_tokens_s:.1f} s) | "
        f"**{ratio:.2f}×** ({ratio_tokens:.2f}×); CPU {cpu_ratio:.2f}× ({cpu_ratio_tokens:.2f}×) | ≤ 1.2× |"
    )
    rss = (timed["rss_peak_kb"] - timed["rss_before_kb"]) * 1024
    heap, heap_quarter = traced["heap_peak_bytes"], traced_quarter["heap_peak_bytes"]
    one, text = fl["largest_document_bytes"], fl["text_bytes"]
    mb = 1024**2
    print(
        f"2. memory of the reading parent (tokenizer loaded before): Python heap peak {heap / mb:.2f} MB "
        f"({heap_quarter / mb:.2f} MB reading a quarter of the corpus: ×{heap / max(heap_quarter, 1):.2f} for 4× the "
        f"files); RSS high-water over its size before reading {rss / mb:.1f} MB. Corpus text {text / mb:.1f} MB "
        f"(+ {fl['pdf_bytes'] / mb:.1f} MB of PDF); largest document {one / mb:.2f} MB (PDF + text) → heap peak = "
        f"{heap / text:.3f}× the corpus text, {heap / one:.1f}× one document; RSS rise = {rss / text:.2f}× the "
        f"corpus text, {rss / one:.1f}× one document"
    )
    lines.append(
        f"| Parent's peak memory while reading | heap peak {heap / mb:.2f} MB (a quarter of the corpus: "
        f"{heap_quarter / mb:.2f} MB); RSS rise {rss / mb:.1f} MB | corpus text {text / mb:.0f} MB; largest "
        f"document {one / mb:.2f} MB | heap **{heap / text:.3f}×** the corpus, **{heap / one:.1f}×** one document; "
        f"RSS {rss / text:.2f}× the corpus, {rss / one:.1f}× one document | a few documents |"
    )

    store = SQLiteStore(work / "r0.db")
    columns = parse_columns(PLAYBOOK, name="playbook")
    grid = Grid(files=[f for f in files if f.ok], columns=columns, store=store)
    engine = Engine.choose("offline", price_model=PRICE_AS[0])
    counter = counter_for_model(engine.counting_model())
    rr = parse_spec("rr", engine.settings())
    started = time.perf_counter()
    n, together, alone = alone_on_all(grid, rr, counter)
    alone_s = time.perf_counter() - started
    opened = open_floor(grid, counter)
    estimates: dict[tuple[str, str], Any] = {}
    plan_seconds: dict[tuple[str, str], float] = {}
    plans: dict[tuple[str, str], Any] = {}
    for price in PRICE_AS:
        priced = Engine.choose("offline", price_model=price)
        for name, spec in LAYOUTS:
            settings = parse_spec(spec, priced.settings())
            started = time.perf_counter()
            plan = plan_grid(
                grid.files, columns, settings, counter, store=store, tokenizer=priced.counting_model()
            )
            plan_seconds[(price, name)] = time.perf_counter() - started
            estimates[(price, name)] = plan.estimate
            plans[(price, name)] = plan
    e = estimates[(PRICE_AS[0], LAYOUTS[0][0])]
    aware = parse_spec(LAYOUTS[1][1], engine.settings())
    each = alone_cached(grid, aware, counter)
    print(
        f"3. tokens: the several-questions pass over asking each of the {len(columns)} questions alone, on all "
        f"{n} documents: {together:,} / {alone:,} = {together / alone:.1%} (target ≤ 25%; planned in {alone_s:.1f} s); "
        f"the engine's own figure on its sample of {e.sample_documents} documents: {e.alone_ratio:.1%}"
    )
    lines.append(
        f"| Input tokens, {len(columns)} questions in one pass vs each alone (all {n} documents) | "
        f"{together:,} | {alone:,} | **{together / alone:.1%}** (engine's 3-document sample: {e.alone_ratio:.1%}) | ≤ 25% |"
    )
    cost_rows = []
    for (price, name), est in estimates.items():
        print(
            f"   {name}, priced as {price}: {est.calls:,} calls, {est.input_tokens:,} input tokens, cacheable "
            f"share {est.cacheable_share:.1%}; ${est.usd('now'):.2f} now, ${est.usd('now', cached=True):.2f} now "
            f"with the prompt cache, ${est.usd('batch'):.2f} batch"
        )
        cost_rows.append(
            f"| {name} | {price} | {est.calls:,} | {est.input_tokens:,} | {est.cacheable_share:.1%} | "
            f"${est.usd('now'):.2f} | ${est.usd('now', cached=True):.2f} | ${est.usd('batch'):.2f} |"
        )
    share = each["cached_tokens"] / max(each["input_tokens"], 1)
    print(
        f"   for comparison, each question alone in the cache-aware layout, a document's calls in turn: "
        f"{each['input_tokens']:,} input tokens, cacheable share {share:.1%}; "
        + "; ".join(
            f"${each['usd'][p]:.2f} now with the cache as {p} (the one-pass grid: "
            f"${estimates[(p, LAYOUTS[1][0])].usd('now', cached=True):.2f})"
            for p in PRICE_AS
        )
    )
    cost_rows.append(
        f"| each question alone, cache-aware (comparison) | {' / '.join(PRICE_AS)} | — | {each['input_tokens']:,} | "
        f"{share:.1%} | — | " + " / ".join(f"${each['usd'][p]:.2f}" for p in PRICE_AS) + " | — |"
    )
    plan = plans[(PRICE_AS[0], LAYOUTS[0][0])]
    seconds = plan_seconds[(PRICE_AS[0], LAYOUTS[0][0])]
    client = engine.client(counter)
    started = time.perf_counter()
    result = review(plan, client, concurrency=engine.info.concurrency, store=store)
    run_s = time.perf_counter() - started
    cells = len(result.cells)
    failed = sum(1 for c in result.cells if c.error)
    print(
        f"4. planning the grid ({len(plan.jobs)} jobs, {plan.estimate.calls:,} calls): {seconds:.2f} s; floor "
        f"(opening every stored reading) {opened:.2f} s → {seconds / opened:.1f}×; per document "
        f"{1000 * seconds / len(grid.files):.0f} ms. Running on the offline engine: {run_s:.1f} s for {cells:,} cells "
        f"({failed} failed), {1000 * run_s / max(cells, 1):.1f} ms a cell, "
        f"{1000 * run_s / max(plan.estimate.calls, 1):.1f} ms a call; {run_s / seconds:.1f}× the planning"
    )
    lines.append(
        f"| Planning the grid ({len(plan.jobs)} jobs, {plan.estimate.calls:,} calls) | {seconds:.2f} s | "
        f"opening every stored reading: {opened:.2f} s | {seconds / opened:.1f}× | — |"
    )
    lines.append(
        f"| Running it on the offline engine ({cells:,} cells, {failed} failed) | {run_s:.1f} s | "
        f"— | {1000 * run_s / max(cells, 1):.1f} ms a cell, {1000 * run_s / max(plan.estimate.calls, 1):.1f} ms a call | — |"
    )
    table = [
        "| Figure | Measured | Floor / alone | Ratio | Target |",
        "|---|---|---|---|---|",
        *lines,
        "",
        "| Layout | Priced as | Calls | Input tokens | Cacheable share | Now | Now, prompt cache | Batch |",
        "|---|---|---|---|---|---|---|---|",
        *cost_rows,
    ]
    print("\n" + "\n".join(table))
    return table


# ---- part two: the CUAD contracts ------------------------------------------------------------------


def cuad(args: argparse.Namespace) -> list[str]:
    """Part two: the real corpus with its answer key. Returns the README lines."""
    if not (CUAD / "contracts").is_dir():
        print(f"\n## CUAD: skipped ({CUAD} is absent)")
        return []
    from rr_core.methods import parse_spec
    from rr_core.review import items_from_paths, parse_answer_key, parse_columns, scores
    from rr_core.store import SQLiteStore
    from rr_core.tokens import counter_for_model
    from rr_core.workbench import Engine, plan_grid, read_review_corpus, review

    columns = parse_columns((CUAD / "questions.csv").read_text(encoding="utf-8-sig"), name="questions.csv")
    key = parse_answer_key((CUAD / "answers.csv").read_text(encoding="utf-8-sig"), name="answers.csv")
    work = Path(tempfile.mkdtemp(prefix="rr-bench-cuad-"))
    store = SQLiteStore(work / "cuad.db")
    items, _ = items_from_paths([CUAD / "contracts"])
    started = time.perf_counter()
    files = read_review_corpus(items, model="gpt-4.1-mini", store=store)
    read_s = time.perf_counter() - started
    ok = [f for f in files if f.ok]
    pages = sum(f.pages for f in ok)
    print(
        f"\n## CUAD: {len(ok)} contracts ({pages} pages) × {len(columns)} questions; read in {read_s:.1f} s"
    )
    methods = ("rr", "baseline", "question-last")
    results: dict[tuple[str, str], list[Any]] = {}
    walls: dict[tuple[str, str], float] = {}
    estimates: dict[tuple[str, str], Any] = {}
    for provider in ("offline", "simulated"):
        engine = Engine.choose(provider, price_model=PRICE_AS[0])
        counter = counter_for_model(engine.counting_model())
        for method in methods:
            started = time.perf_counter()
            plan = plan_grid(ok, columns, parse_spec(method, engine.settings()), counter, store=store,
                             tokenizer=engine.counting_model())  # fmt: skip
            result = review(
                plan, engine.client(counter), concurrency=engine.info.concurrency, key=key, store=store
            )
            walls[(provider, method)] = time.perf_counter() - started
            results[(provider, method)] = [s for s in scores(plan, result.cells) if s.role == "main"]
            if provider == "offline":
                for price in PRICE_AS:
                    priced = Engine.choose("offline", price_model=price)
                    estimates[(method, price)] = plan_grid(
                        ok, columns, parse_spec(method, priced.settings()), counter, store=store,
                        tokenizer=priced.counting_model(),
                    ).estimate  # fmt: skip
    short = {
        "Which jurisdiction's law governs this agreement?": "Governing law",
        "On what date was this agreement made?": "Date",
        "May a party terminate this agreement for convenience, without cause?": "Termination for convenience",
        "Does a change of control of a party give the other party a right such as consent or termination?":
            "Change of control",
        "Is either party's liability capped?": "Liability cap",
        "Does the agreement restrict assignment without the other party's consent?": "Assignment",
    }  # fmt: skip
    head = [
        "Engine",
        "Method",
        *(short.get(c.question, c.question[:24]) for c in columns),
        "All",
        "Wall time",
    ]
    table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (provider, method), score_list in results.items():
        cells = [
            f"{s.right}/{s.marked}"
            if s.column is not None
            else f"**{s.right}/{s.marked} ({s.accuracy:.0%})**"
            for s in score_list
        ]
        table.append(
            f"| {provider} | {method} | " + " | ".join(cells) + f" | {walls[(provider, method)]:.1f} s |"
        )
    cost = [
        "",
        "| Method | Priced as | Calls | Input tokens | Now | Now, prompt cache | Batch |",
        "|---|---|---|---|---|---|---|",
    ]
    for (method, price), est in estimates.items():
        cost.append(
            f"| {method} | {price} | {est.calls:,} | {est.input_tokens:,} | ${est.usd('now'):.3f} | "
            f"${est.usd('now', cached=True):.3f} | ${est.usd('batch'):.3f} |"
        )
    out = table + cost
    print("\n".join(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 documents of 30–60 pages: a quick look")
    parser.add_argument(
        "--docs", type=int, default=None, help="documents in the generated corpus (default 200)"
    )
    parser.add_argument("--processes", type=int, default=None, help="reading processes (default: the cores)")
    parser.add_argument("--repeats", type=int, default=3, help="floor/reading pairs timed (default 3)")
    parser.add_argument("--part", choices=("scale", "cuad", "all"), default="all")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, payload = args.child[0], json.loads(args.child[1])
        if mode == "floor":
            print(json.dumps(floor([Path(p) for p in payload["paths"]])))
        else:
            print(
                json.dumps(
                    read_child(payload["paths"], payload["store"], payload["processes"], payload["trace"])
                )
            )
        return
    if args.docs is None:
        args.docs = 24 if args.quick else 200
    print(f"machine: {_cores()} cores; python {sys.version.split()[0]}")
    started = time.perf_counter()
    if args.part in ("scale", "all"):
        scale(args)
    if args.part in ("cuad", "all"):
        cuad(args)
    print(f"\n(whole benchmark: {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
