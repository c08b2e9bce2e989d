"""Memory that does not grow with the work: the runner keeps no run once its trace is handed
on, and a grid saves its traces to the history as they arrive instead of holding them all
(``benchmarks/bench_grid_memory.py`` measures the peak at two corpus sizes)."""

from __future__ import annotations

import gc

from conftest import PLANTED_QUESTION, small_settings, word_counter

import rr_core.kinds.review as review_kind
import rr_core.runs as runs_module
import rr_core.workbench as workbench
from rr_core.jobs import DocumentRef, Documents, Job
from rr_core.llm import OfflineEngine
from rr_core.runs import Executor, RunTrace
from rr_core.store import open_store
from rr_core.work import review_cells, run_work, submit_review
from tests.test_work import setup  # noqa: F401  (the fixture: a store, a 4-contract grid)


def _alive_runs() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, runs_module._Run))


def test_the_runner_drops_each_run_once_its_trace_is_handed_on(planted_document) -> None:  # type: ignore[no-untyped-def]
    counter = word_counter()
    jobs = [
        Job(id=f"job-{i}", source=DocumentRef.of(planted_document), settings=small_settings("baseline"),
            questions=(PLANTED_QUESTION,), tokenizer="words")
        for i in range(12)
    ]  # fmt: skip
    before = _alive_runs()
    finished = 0
    alive_seen = []
    with Executor(
        OfflineEngine(counter), resolver=Documents([planted_document]), counter=counter
    ) as executor:
        for item in executor.stream_jobs(jobs):
            if isinstance(item, RunTrace):
                finished += 1
                del item
                alive_seen.append(_alive_runs() - before)
    assert finished == len(jobs)
    # Alive: the runs waiting or running, never a finished one (before, all twelve stayed until
    # the stream ended, their documents, plans and prompts with them).
    assert all(alive <= len(jobs) - n for n, alive in enumerate(alive_seen, 1)), alive_seen
    assert alive_seen[-1] == 0


def test_a_grid_saves_its_traces_as_they_arrive_and_holds_none_when_asked(setup, monkeypatch) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    path, store, work = setup
    monkeypatch.setattr(review_kind, "SAVE_EVERY", 2)  # where the grid runs (the review kind)
    saved: list[int] = []
    real_open = open_store

    class Counting:
        """The store, counting the traces of each history save."""

        def __init__(self, inner):  # type: ignore[no-untyped-def]
            self._inner = inner

        def __getattr__(self, name):  # type: ignore[no-untyped-def]
            return getattr(self._inner, name)

        def save_batch(self, traces, batch=None):  # type: ignore[no-untyped-def]
            saved.append(len(traces))
            return self._inner.save_batch(traces, batch=batch)

    counted = Counting(real_open(path))
    work_id = submit_review(store, work)
    record = run_work(counted, work_id)  # type: ignore[arg-type]
    assert record is not None and record.state == "done"
    assert saved == [2, 2]  # four documents' traces, saved two at a time as they came
    runs = store.list(50)
    assert len(runs) == 4 and len({r.batch for r in runs}) == 1  # one history batch
    assert len(review_cells(store, work_id)) == 8

    plan = work.plan(store)
    held = workbench.review(plan, OfflineEngine(word_counter()), concurrency=1, store=store, keep=False)
    assert held.cells == [] and held.traces == [] and held.batch is not None
    kept = workbench.review(plan, OfflineEngine(word_counter()), concurrency=1, store=store)
    assert len(kept.cells) == 8 and len(kept.traces) == 4


def test_stored_documents_are_safe_across_the_run_threads(setup) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """Many threads opening documents through one resolver that keeps one: no KeyError or
    RuntimeError from two evictions at once, and every open gives its document."""
    import sys
    import threading

    from rr_core.review import StoredDocuments
    from rr_core.tokens import counter_for_model

    _, store, work = setup
    resolver = StoredDocuments(store, counter_for_model("gpt-4.1-mini"), keep=1)
    shas = [f.sha256 for f in work.files]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def open_many(offset: int) -> None:
        try:
            start.wait(timeout=60)
            for n in range(200):
                sha = shas[(n + offset) % len(shas)]
                assert resolver.document(sha).sha256 == sha
        except BaseException as exc:  # noqa: BLE001 - the test reports any
            errors.append(exc)

    threads = [threading.Thread(target=open_many, args=(i,)) for i in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: races show, if any
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]


def test_the_page_digest_memory_holds_no_text() -> None:
    """``text_key`` remembers digests by the text's hash and length, not by the text: the page
    texts the offline engine parses out of every prompt are not kept (they were, 6,000 at a
    time, about 12 MB that a grid's run filled as its corpus went by)."""
    import rr_core.tokens as tokens

    text = "The supplier shall deliver the goods on the dates agreed in writing. " * 40 + "page 7"
    key = tokens.text_key(text)
    copy = "".join(list(text))  # an equal text, another string
    assert copy is not text and tokens.text_key(copy) == key
    assert tokens.text_key(text + ".") != key
    kept = list(tokens._KEY_OF)
    assert kept and not any(
        isinstance(part, str) for k in kept for part in (k if isinstance(k, tuple) else (k,))
    )


def test_the_page_memory_holds_the_documents_in_flight_not_the_corpus() -> None:
    """The offline engine's page memory keeps a page while one of the last few reads used it:
    a grid going through 100 documents holds the last few documents' pages (before, every page
    up to 6,000: a 300-contract grid filled it), and a document read again and again keeps all
    its pages, however many reads of others come between, so long as fewer than ``recent``."""
    from rr_core.retrieval import _PageMemory

    memory = _PageMemory(capacity=1_000, recent=4)
    kept = memory.read([f"Contract 0, page {p}: the supplier shall deliver the goods." for p in range(5)])
    for doc in range(1, 101):
        memory.read([f"Contract {doc}, page {p}: the supplier shall deliver the goods." for p in range(5)])
        assert len(memory) <= 4 * 5
        if doc % 3 == 0:  # contract 0 read again every third document: it stays
            again = memory.read(
                [f"Contract 0, page {p}: the supplier shall deliver the goods." for p in range(5)]
            )
            assert all(a is b for a, b in zip(again, kept, strict=True))
    assert len(memory) <= 4 * 5
    big = _PageMemory(capacity=1_000, recent=4)
    pages = [f"Annual report, page {p}: revenue grew." for p in range(800)]
    first = big.read(pages)
    assert len(big) == 800 and all(a is b for a, b in zip(big.read(pages), first, strict=True))
