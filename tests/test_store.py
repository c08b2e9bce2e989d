"""The run store: runs and call replies, atomic batches, documents, owners, old files, no secret.

The contract tests take ``open_backend`` and run against both backends: a real SQLite file and a
real PostgreSQL database (``tests/pg_kit.py``; skipped, saying why, where PostgreSQL is not
installed). What only one backend has (old SQLite files, row-level security) is tested on its own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from conftest import PAPER_METHODS, PLANTED_QUESTION, offline_traces, word_counter

from rr_core.documents import Document
from rr_core.errors import BatchConflict, ConfigError, LedgerError, RRError
from rr_core.llm import ScriptedClient
from rr_core.llm.base import Usage
from rr_core.methods import plan_method
from rr_core.runs import CachedCall, RunTrace, run_plans
from rr_core.settings import RunSettings
from rr_core.store import (
    DB_ENV,
    LOCAL_OWNER,
    MIGRATIONS,
    SCHEMA_VERSION,
    BatchRecord,
    CallCache,
    DocumentStore,
    ReviewDecision,
    RunStore,
    SentCall,
    SQLiteStore,
    Store,
    StoredRun,
    close_stores,
    default_path,
    open_store,
    redact_url,
)

SECRET = "sk-test-DO-NOT-STORE-0123456789abcdef"

Backend = Callable[..., Store]  # open_backend(owner="local"): a store of the test's own database


@pytest.fixture(params=["sqlite", "postgresql"])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Opens a store of this test's own database as an owner; every call opens the same database
    again (a reopened file, another process's store), so what one store wrote the next reads."""
    if request.param == "sqlite":
        path = tmp_path / "store" / "runs.sqlite3"
        return lambda owner=LOCAL_OWNER: SQLiteStore(path, owner=owner)
    from rr_core.store.postgres import PostgresStore

    url = request.getfixturevalue("pg_url")
    return lambda owner=LOCAL_OWNER: PostgresStore(url, owner=owner)


def test_save_list_get_delete_count(open_backend: Backend, planted_document: Document) -> None:
    store = open_backend()
    assert store.count() == 0
    traces = offline_traces(planted_document, "baseline", "rr")
    batch = store.save_batch(traces)
    assert store.count() == 2

    rows = store.list()
    assert all(isinstance(r, StoredRun) for r in rows)
    assert [r.run_id for r in rows] == [t.run_id for t in reversed(traces)]  # newest first
    rr = next(r for r in rows if r.method == "rr")
    trace = traces[1]
    assert (rr.batch, rr.document, rr.question, rr.answer, rr.page, rr.label) == (
        batch, "planted.txt", PLANTED_QUESTION, trace.answer, trace.page, "R&R",
    )  # fmt: skip
    assert rr.input_tokens == trace.usage.prompt_tokens and rr.output_tokens == trace.usage.output_tokens
    assert rr.cost_usd == pytest.approx(trace.cost_usd) and rr.error is None
    assert [r.run_id for r in store.list(limit=1)] == [traces[1].run_id]

    restored = store.get(trace.run_id)
    assert restored is not None and restored.to_dict() == trace.to_dict()
    assert restored == trace
    assert store.get("no-such-run") is None

    assert store.delete([traces[0].run_id]) == 1
    assert store.delete([traces[0].run_id]) == 0
    assert store.count() == 1 and store.get(traces[0].run_id) is None


def test_delete_many_at_once(open_backend: Backend, planted_document: Document) -> None:
    store = open_backend()
    traces = offline_traces(planted_document, *PAPER_METHODS)
    store.save_batch(traces[:3])
    store.save_batch(traces[3:])
    gone = [traces[0].run_id, traces[4].run_id, "not-there", traces[5].run_id]
    assert store.delete(gone) == 3
    assert sorted(r.run_id for r in store.list()) == sorted(
        t.run_id for t in (traces[1], traces[2], traces[3])
    )
    assert store.delete([]) == 0


def test_many_runs_read_back_at_once_in_the_order_asked(
    open_backend: Backend, planted_document: Document
) -> None:
    """``get_runs``: a grid's traces in one read (600 of them: past SQLite's bound on one
    statement's parameters), in the order asked, each once, those gone or another owner's left out."""
    store = open_backend()
    (trace,) = offline_traces(planted_document, "rr")
    many = [dataclasses.replace(trace, run_id=f"run-{i:04d}", position=i) for i in range(600)]
    store.save_batch(many)
    open_backend(owner="someone-else").save_batch([dataclasses.replace(trace, run_id="theirs")])
    asked = (
        [f"run-{i:04d}" for i in (599, 3, 250, 3, 598)]
        + ["gone", "theirs"]
        + [f"run-{i:04d}" for i in range(600)]
    )
    got = store.get_runs(iter(asked))  # any iterable, read once
    expected = list(dict.fromkeys(r for r in asked if r.startswith("run-")))
    assert [t.run_id for t in got] == expected and len(got) == 600
    assert got[0] == many[599] and got[2].position == 250
    assert store.get_runs([]) == []


def test_a_works_results_are_read_a_page_at_a_time_in_the_order_they_arrived(open_backend: Backend) -> None:
    """``iter_work_results`` gives what ``work_results`` does, a page at a time (pages of 2
    over 7 results, one kept again: it moves to the end, read once), another owner's unseen."""
    store = open_backend()
    work_id = store.submit_work("review", "t", {}, 7)
    store.add_results(work_id, [(f"k{i}", {"i": i}) for i in range(7)])
    store.add_results(work_id, [("k2", {"i": 2, "again": True})])
    listed = store.work_results(work_id)
    assert [r["i"] for r in listed] == [0, 1, 3, 4, 5, 6, 2]
    for page in (1, 2, 6, 7, 500):
        assert list(store.iter_work_results(work_id, page=page)) == listed, page
    reading = store.iter_work_results(work_id, page=2)
    assert next(reading) == {"i": 0}  # lazy: a page read, the rest when asked for
    assert list(open_backend(owner="someone-else").iter_work_results(work_id)) == []
    assert list(store.iter_work_results("no-such-work")) == []


def test_a_part_reads_its_own_results_and_the_work_reads_all(open_backend: Backend) -> None:
    """A work run in parts (a grid's documents): each part's results kept as its own, so a
    part reads its own (not the grid's, which grew its time with the square of the grid), the
    work all of them, in the order they arrived."""
    store = open_backend()
    work_id = store.submit_work("review", "t", {}, 9)
    store.add_results(work_id, [("main:a:0", {"a": 0}), ("main:a:1", {"a": 1})], "a")
    store.add_results(work_id, [("main:b:0", {"b": 0})], "b")
    store.add_results(work_id, [("main:a:1", {"a": 1, "again": True})], "a")
    store.add_results(work_id, [("whole:0", {"w": 0})])  # a work run whole: no part
    assert list(store.iter_work_results(work_id, part="a", page=1)) == [{"a": 0}, {"a": 1, "again": True}]
    assert list(store.iter_work_results(work_id, part="b")) == [{"b": 0}]
    assert list(store.iter_work_results(work_id, part="c")) == []
    assert list(store.iter_work_results(work_id, part="")) == [{"w": 0}]
    assert list(store.iter_work_results(work_id)) == [{"a": 0}, {"b": 0}, {"a": 1, "again": True}, {"w": 0}]
    assert store.count_results(work_id) == 4


def test_a_works_results_written_together_fail_together(open_backend: Backend) -> None:
    """``add_results`` is one transaction: when the database refuses the third of a document's
    cells (a trigger standing for a failure mid-write), none of them is kept, and the work's
    earlier results stay."""
    store = open_backend()
    work_id = store.submit_work("review", "a grid", {"files": []}, 8)
    store.add_results(work_id, [("main:doc-a:0", {"answer": "kept before"})])
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON work_results WHEN NEW.result_key = 'main:doc-b:2'"
                " BEGIN SELECT RAISE(ABORT, 'refused mid-write'); END"
            )
    else:
        with store.transaction() as db:  # type: ignore[attr-defined]
            db.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF NEW.result_key = 'main:doc-b:2' THEN RAISE EXCEPTION 'refused mid-write'; END IF;"
                " RETURN NEW; END $$"
            )
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON work_results FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
    document_b = [(f"main:doc-b:{c}", {"answer": f"b{c}"}) for c in range(4)]
    with pytest.raises(LedgerError, match="refused mid-write"):
        store.add_results(work_id, document_b)
    assert store.work_results(work_id) == [{"answer": "kept before"}]
    store.add_results(work_id, [(f"main:doc-c:{c}", {"answer": f"c{c}"}) for c in range(4)])  # still usable
    assert [r["answer"] for r in store.work_results(work_id)] == ["kept before", "c0", "c1", "c2", "c3"]


def test_a_works_last_result_is_found_from_an_index_not_by_reading_every_result(tmp_path: Path) -> None:
    """``add_results`` asks for the work's last seq each time a document's cells are recorded:
    read from an index, not by visiting every result the work has (which made a grid's time
    grow with the square of its size: 10 rows read per cell at 1 document, 10,000 at 1,000)."""
    store = SQLiteStore(tmp_path / "runs.db")
    work_id = store.submit_work("review", "a grid", {"files": []}, 8)
    store.add_results(work_id, [("main:doc-a:0", {"answer": "a"})])
    with sqlite3.connect(store.path) as db:
        last = db.execute(
            "EXPLAIN QUERY PLAN SELECT COALESCE(MAX(seq), 0) FROM work_results WHERE owner = ? AND work_id = ?",
            (LOCAL_OWNER, work_id),
        ).fetchall()
        ordered = db.execute(
            "EXPLAIN QUERY PLAN SELECT data FROM work_results WHERE owner = ? AND work_id = ? ORDER BY seq",
            (LOCAL_OWNER, work_id),
        ).fetchall()
    assert "COVERING INDEX work_results_seq" in str(last), last
    assert "work_results_seq" in str(ordered) and "TEMP B-TREE" not in str(ordered), ordered


def test_each_batch_gets_its_own_id(open_backend: Backend, planted_document: Document) -> None:
    store = open_backend()
    traces = offline_traces(planted_document, "baseline", "icr", "rr")
    first = store.save_batch(traces[:2])
    second = store.save_batch(traces[2:])
    assert first != second
    assert {r.run_id: r.batch for r in store.list()} == {
        traces[0].run_id: first, traces[1].run_id: first, traces[2].run_id: second,
    }  # fmt: skip


def test_save_batch_is_atomic(open_backend: Backend, planted_document: Document) -> None:
    store = open_backend()
    good = offline_traces(planted_document, "baseline", "rr")
    # The third run of the batch cannot be stored (a document name is required).
    broken = dataclasses.replace(offline_traces(planted_document, "icr")[0], document=None)  # type: ignore[arg-type]
    with pytest.raises(LedgerError, match="could not be read or written"):
        store.save_batch([*good, broken])
    assert store.count() == 0 and store.list() == []
    assert all(store.get(t.run_id) is None for t in good)
    store.save_batch(good)  # the store is still usable
    assert store.count() == 2


def test_saving_a_run_again_replaces_it(open_backend: Backend, planted_document: Document) -> None:
    store = open_backend()
    (trace,) = offline_traces(planted_document, "rr")
    store.save_batch([trace])
    trace.warnings.append("looked at again")
    store.save_batch([trace])
    assert store.count() == 1
    assert store.get(trace.run_id).warnings[-1] == "looked at again"  # type: ignore[union-attr]


def test_runs_survive_reopening_the_file(open_backend: Backend, planted_document: Document) -> None:
    (trace,) = offline_traces(planted_document, "icr")
    open_backend().save_batch([trace])
    again = open_backend()
    assert again.count() == 1
    stored = again.get(trace.run_id)
    assert stored is not None and stored.method == "icr" and stored.retrieved_pages


def test_failed_runs_are_stored_with_their_error(open_backend: Backend, planted_document: Document) -> None:
    counter = word_counter()
    plan = plan_method(planted_document, PLANTED_QUESTION, RunSettings(method="baseline"), counter)
    (trace,) = run_plans(planted_document, [plan], ScriptedClient(["not json"]))
    store = open_backend()
    store.save_batch([trace])
    (row,) = store.list()
    assert row.error and row.answer is None
    stored = store.get(trace.run_id)
    assert stored is not None and stored.error_kind == "ResponseParseError"


def test_several_question_runs_keep_every_outcome(open_backend: Backend, planted_document: Document) -> None:
    questions = [PLANTED_QUESTION, "What does the harbor crane shelter?"]
    (trace,) = offline_traces(planted_document, "rr", question=questions)
    store = open_backend()
    store.save_batch([trace])
    (row,) = store.list()
    assert row.question == PLANTED_QUESTION
    stored = store.get(trace.run_id)
    assert stored is not None and [o.question for o in stored.outcomes] == questions
    assert stored.outcomes == trace.outcomes


def test_the_call_cache_finds_what_was_put(open_backend: Backend) -> None:
    store = open_backend()
    assert store.find("k1") is None and store.calls_cached() == 0
    usage = Usage(input_tokens=900, cached_tokens=100, output_tokens=12)
    store.put("k1", CachedCall('{"pages": [3]}', usage, "gpt-4.1-mini"))
    assert store.find("k1") == CachedCall('{"pages": [3]}', usage, "gpt-4.1-mini")
    store.put("k1", CachedCall("a later reply", Usage(), "other"))  # the first reply for a key stays
    assert store.find("k1").text == '{"pages": [3]}'  # type: ignore[union-attr]
    store.put("k2", CachedCall("x", Usage(), ""))
    assert store.calls_cached() == 2 and store.count() == 0  # cached calls are not runs
    assert open_backend().find("k2") == CachedCall("x", Usage(), "")


def test_an_ended_sign_in_is_ended_for_its_owner_only(open_backend: Backend) -> None:
    ann, bob = open_backend("ann"), open_backend("bob")
    assert not ann.sign_in_ended("s-1")
    ann.end_sign_in("s-1")
    ann.end_sign_in("s-1")  # twice is once
    assert ann.sign_in_ended("s-1") and open_backend("ann").sign_in_ended("s-1")  # another replica's view
    assert not ann.sign_in_ended("s-2") and not bob.sign_in_ended("s-1")


def test_an_email_names_the_owners_who_signed_in_with_it(open_backend: Backend) -> None:
    ann, other_ann, bob = (
        open_backend("https://id.one#ann"),
        open_backend("https://id.two#a-9"),
        open_backend("bob"),
    )
    assert bob.owners_with_email("ann@example.com") == []
    ann.note_email("Ann@Example.com")  # case aside
    ann.note_email("ann@example.com")  # twice is once
    assert bob.owners_with_email("ann@example.com") == ["https://id.one#ann"]  # any owner may ask
    other_ann.note_email("ann@example.com")  # another provider, the same email: two people to choose from
    assert open_backend().owners_with_email("ANN@example.com") == ["https://id.one#ann", "https://id.two#a-9"]
    ann.note_email("ann@new.example")  # an owner's latest email is the one kept
    assert bob.owners_with_email("ann@example.com") == ["https://id.two#a-9"]
    assert bob.owners_with_email("ann@new.example") == ["https://id.one#ann"]


def test_the_sqlite_store_is_a_store() -> None:
    def runs(store: RunStore) -> RunStore:
        return store

    def calls(store: CallCache) -> CallCache:
        return store

    def documents(store: DocumentStore) -> DocumentStore:
        return store

    def whole(store: Store) -> Store:
        return store

    store = open_store()  # a static check as much as a runtime one (mypy)
    assert runs(store) is calls(store) is documents(store) is whole(store) is store
    assert store.owner == LOCAL_OWNER and store.location == str(default_path())
    for protocol in (RunStore, CallCache, DocumentStore, Store):
        members = [n for n in vars(protocol) if not n.startswith("_")]
        assert members and all(hasattr(SQLiteStore, n) for n in members), protocol
    store.close()


def test_default_path_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "elsewhere" / "db.sqlite3"
    monkeypatch.setenv(DB_ENV, str(target))
    assert default_path() == target
    assert open_store().location == str(target) and target.is_file()
    assert SQLiteStore().path == target


def test_concurrent_saves_from_threads(open_backend: Backend, planted_document: Document) -> None:
    store = open_backend()
    traces = [offline_traces(planted_document, "baseline")[0] for _ in range(8)]
    batches: list[str] = []
    threads = [threading.Thread(target=lambda t=t: batches.append(store.save_batch([t]))) for t in traces]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count() == 8
    assert {r.batch for r in store.list()} == set(batches) and len(set(batches)) == 8


def test_no_api_key_reaches_the_file(
    tmp_path: Path, planted_document: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET + "-anthropic")
    folder = tmp_path / "store"
    store = SQLiteStore(folder / "runs.sqlite3")
    traces = offline_traces(planted_document, *PAPER_METHODS, "rag", "briefcontext")
    store.save_batch(traces)
    for trace in traces:
        for call in trace.calls:
            store.put(call.cache_key, CachedCall(call.response, call.usage, trace.model))
    from rr_core.exports import to_csv, to_json, to_markdown

    for export in (to_json(traces), to_csv(traces), to_markdown(traces)):
        assert "sk-test" not in export
    assert store.count() == len(traces) and store.calls_cached() > 0
    files = list(folder.iterdir())  # the database and any -wal / -shm side files
    assert files
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data, path.name
        assert b"sk-test" not in data, path.name


def test_an_unusable_history_file_is_a_clear_ledger_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(LedgerError, match="RR_STUDIO_DB"):
        SQLiteStore(blocker / "runs.sqlite3")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError, match="could not be"):
        SQLiteStore(garbage)


def test_an_unreadable_trace_is_a_ledger_error_naming_the_run(
    tmp_path: Path, planted_document: Document
) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    (trace,) = offline_traces(planted_document, "baseline")
    store.save_batch([trace])
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET trace = ? WHERE run_id = ?", ("{not json", trace.run_id))
    with pytest.raises(LedgerError, match=trace.run_id):
        store.get(trace.run_id)


# ---- A history file written by the first version ------------------------------------------------

# The first version's table (git show 41bdccb:rr_core/ledger.py): integer ids, no run ids.
V1_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    batch TEXT NOT NULL,
    created_at TEXT NOT NULL,
    document TEXT NOT NULL,
    document_sha256 TEXT NOT NULL,
    question TEXT NOT NULL,
    method TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    answer TEXT,
    page INTEGER,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_s REAL NOT NULL,
    error TEXT,
    trace TEXT NOT NULL
);
CREATE INDEX runs_created ON runs (created_at DESC);
"""


def v1_trace(
    method: str, answer: str | None, page: int | None, error: str | None = None
) -> dict[str, object]:
    """A trace as the first version's ``RunTrace.to_dict`` wrote it."""
    usage = {"input_tokens": 1200, "cached_tokens": 0, "cache_write_tokens": 0, "output_tokens": 30}
    call = {
        "stage": "answer", "chunk": None, "pages": [1, 2, 3], "reminders_after": [], "leading_reminders": 0,
        "reminder_tokens": 0, "prompt": "<INSTRUCTIONS>…", "response": json.dumps({"answer": answer}),
        "usage": usage, "cost_usd": 0.0005, "output_cost_usd": 0.0001, "price_known": True, "latency_s": 1.2,
        "retrieved": [], "error": error,
    }  # fmt: skip
    return {
        "method": method, "question": "What is the fee?", "document": "old.pdf", "document_sha256": "a" * 64,
        "provider": "openai", "model": "gpt-4.1-mini", "is_llm": True,
        "settings": {"method": method, "reminder_every": 10000, "top_k": 5, "chunk_size": 20000,
                     "model": "gpt-4.1-mini", "provider": "openai", "reminder_style": "full",
                     "reminder_placement": "interval", "reminder_pages": [], "max_output_tokens": 512,
                     "price_model": ""},
        "calls": [call], "retrieved_pages": [2] if method == "rr" else [], "dropped_pages": [],
        "answer": answer, "page": page, "warnings": [], "error": error,
        "error_kind": "ProviderError" if error else None, "estimate_usd": 0.0006, "price_known": True,
        "price_source": "genai-prices", "price_data": "2026-01", "latency_s": 1.3,
        "started_at": "2026-01-05T10:00:00+00:00", "usage": usage, "cost_usd": 0.0005,
        "cost_by_stage": {"answer": 0.0005},
    }  # fmt: skip


def write_v1_file(path: Path) -> None:
    rows = [
        ("baseline", "4.2 million euros", 3, None),
        ("rr", "4.2 million", 2, None),
        ("icr", None, None, "HTTP 500"),
    ]
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
        for method, answer, page, error in rows:
            db.execute(
                "INSERT INTO runs (batch, created_at, document, document_sha256, question, method, provider, model,"
                " answer, page, input_tokens, output_tokens, cost_usd, latency_s, error, trace)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                ("oldbatch", "2026-01-05T10:00:00+00:00", "old.pdf", "a" * 64, "What is the fee?", method, "openai",
                 "gpt-4.1-mini", answer, page, 1200, 30, 0.0005, 1.3, error,
                 json.dumps(v1_trace(method, answer, page, error))),
            )  # fmt: skip
    db.close()


def test_a_version_one_history_file_opens_and_its_runs_read_back(
    tmp_path: Path, planted_document: Document
) -> None:
    path = tmp_path / "old.sqlite3"
    write_v1_file(path)
    store = SQLiteStore(path)
    rows = store.list()
    assert [(r.run_id, r.method, r.label) for r in rows] == [
        ("v1-3", "icr", "icr"), ("v1-2", "rr", "rr"), ("v1-1", "baseline", "baseline"),
    ]  # fmt: skip
    assert rows[1].answer == "4.2 million" and rows[1].page == 2 and rows[0].error == "HTTP 500"
    rr = store.get("v1-2")
    assert rr is not None and rr.schema_version == 1 and rr.run_id == "v1-2"
    assert (rr.method, rr.question, rr.answer, rr.page, rr.retrieved_pages) == (
        "rr",
        "What is the fee?",
        "4.2 million",
        2,
        [2],
    )
    assert rr.settings.reminder_every == 10_000 and rr.usage.input_tokens == 1200
    assert rr.calls[0].stage == "answer" and rr.cost_usd == pytest.approx(0.0005)
    failed = store.get("v1-3")
    assert failed is not None and failed.error == "HTTP 500" and failed.error_kind == "ProviderError"
    # New runs go into the same file beside the old ones; old runs can be deleted.
    (trace,) = offline_traces(planted_document, "rr")
    store.save_batch([trace])
    assert store.list(limit=1)[0].run_id == trace.run_id and store.count() == 4
    assert store.delete(["v1-1"]) == 1
    reopened = SQLiteStore(path)  # opening it again changes nothing
    assert sorted(r.run_id for r in reopened.list()) == sorted(["v1-2", "v1-3", trace.run_id])
    assert isinstance(reopened.get("v1-2"), RunTrace)


def _save_many(path: str, traces_json: str, times: int) -> None:
    """A separate process saving runs (as concurrent `ask --save` commands do)."""
    import json as _json

    from rr_core.runs import RunTrace as _Trace
    from rr_core.store import SQLiteStore as _Store

    store = _Store(path)
    for _ in range(times):
        trace = _Trace.from_dict(_json.loads(traces_json))
        trace.run_id = __import__("uuid").uuid4().hex
        store.save_batch([trace])


def test_concurrent_writers_in_separate_processes_lose_nothing(
    tmp_path: Path, planted_document: Document
) -> None:
    import json as _json
    import multiprocessing

    (trace,) = offline_traces(planted_document, "baseline")
    path = str(tmp_path / "shared.sqlite3")
    SQLiteStore(path)  # the file exists before the writers race
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_save_many, args=(path, _json.dumps(trace.to_dict()), 10)) for _ in range(4)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)
        assert writer.exitcode == 0
    assert SQLiteStore(path).count() == 40


# ---- Owners: a store opened as one owner sees nothing of another's -------------------------------


def test_a_store_opened_as_another_owner_sees_none_of_the_first_owners_runs(
    open_backend: Backend, planted_document: Document
) -> None:
    alice, bob = open_backend("alice"), open_backend("bob")
    traces = offline_traces(planted_document, "baseline", "rr")
    alice.save_batch(traces)
    assert alice.count() == 2 and bob.count() == 0 and bob.list() == []
    assert all(bob.get(t.run_id) is None for t in traces)
    assert bob.delete([t.run_id for t in traces]) == 0 and alice.count() == 2  # nor delete them
    # The same run id saved by bob is bob's own row: alice's run is not replaced.
    (mine,) = offline_traces(planted_document, "icr")
    mine.run_id = traces[0].run_id
    bob.save_batch([mine])
    assert alice.get(traces[0].run_id).method == "baseline"  # type: ignore[union-attr]
    assert bob.get(traces[0].run_id).method == "icr"  # type: ignore[union-attr]
    assert (alice.count(), bob.count()) == (2, 1)
    assert open_backend().count() == 0  # the local user is a third owner
    assert (alice.owner, bob.owner, open_backend().owner) == ("alice", "bob", LOCAL_OWNER)


def test_cached_replies_are_the_owners_own(open_backend: Backend) -> None:
    alice, bob = open_backend("alice"), open_backend("bob")
    alice.put("k", CachedCall("alice's reply: the prompt held her document", Usage(input_tokens=5), "m"))
    assert bob.find("k") is None and bob.calls_cached() == 0
    bob.put("k", CachedCall("bob's reply", Usage(), "m"))
    assert alice.find("k").text.startswith("alice's")  # type: ignore[union-attr]
    assert bob.find("k").text == "bob's reply"  # type: ignore[union-attr]
    assert alice.calls_cached() == bob.calls_cached() == 1


def test_an_owner_must_be_a_name(open_backend: Backend) -> None:
    for owner in ("", " alice", "bob\n"):
        with pytest.raises(ConfigError, match="owner"):
            open_backend(owner)


# ---- Versioned migrations ------------------------------------------------------------------------

# The exact schema of a file written by the store before versioned migrations (the statements
# SQLite recorded for it: its CREATE TABLE, and the columns it added since the first version).
UNVERSIONED_SCHEMA = [
    """CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    batch TEXT NOT NULL,
    created_at TEXT NOT NULL,
    document TEXT NOT NULL,
    document_sha256 TEXT NOT NULL,
    question TEXT NOT NULL,
    method TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    answer TEXT,
    page INTEGER,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_s REAL NOT NULL,
    error TEXT,
    trace TEXT NOT NULL
, run_id TEXT, label TEXT, cache_key TEXT, questions INTEGER)""",
    "CREATE INDEX runs_created ON runs (created_at DESC)",
    """CREATE TABLE calls (
    cache_key TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    usage TEXT NOT NULL,
    sent TEXT
)""",
    "CREATE UNIQUE INDEX runs_run_id ON runs (run_id)",
]


def write_unversioned_file(path: Path, trace: RunTrace) -> None:
    """A history file as the store wrote it before migrations were versioned: one run, one reply."""
    usage = trace.usage
    with sqlite3.connect(path) as db:
        for statement in UNVERSIONED_SCHEMA:
            db.execute(statement)
        db.execute(
            "INSERT OR REPLACE INTO runs (run_id, batch, created_at, document, document_sha256, question,"
            " questions, method, label, provider, model, answer, page, input_tokens, output_tokens,"
            " cost_usd, latency_s, error, cache_key, trace) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (trace.run_id, "oldbatch", trace.started_at, trace.document, trace.document_sha256, trace.question,
             len(trace.questions), trace.method, trace.label, trace.provider, trace.model, trace.answer, trace.page,
             usage.prompt_tokens, usage.output_tokens, trace.cost_usd, trace.latency_s, trace.error,
             trace.cache_key, json.dumps(trace.to_dict(), ensure_ascii=False)),
        )  # fmt: skip
        db.execute(
            "INSERT OR IGNORE INTO calls (cache_key, created_at, model, response, usage, sent) VALUES (?,?,?,?,?,?)",
            ("key-1", "2026-11-01T10:00:00+00:00", "gpt-4.1-mini", '{"answer": "x"}',
             json.dumps({"input_tokens": 900, "cached_tokens": 0, "cache_write_tokens": 0, "output_tokens": 7}),
             json.dumps({"temperature": 0.0})),
        )  # fmt: skip
    db.close()


def _migrations(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT version, applied_at, description FROM schema_migrations ORDER BY version")
        found = [tuple(row) for row in rows]
    db.close()
    return found  # type: ignore[return-value]


def test_a_file_from_before_versioned_migrations_is_upgraded_in_place_keeping_everything(
    tmp_path: Path, planted_document: Document
) -> None:
    path = tmp_path / "today.sqlite3"
    (trace,) = offline_traces(planted_document, "rr")
    write_unversioned_file(path, trace)
    store = SQLiteStore(path)  # as the local user
    assert store.schema_version() == SCHEMA_VERSION == len(MIGRATIONS)
    (row,) = store.list()
    assert (row.run_id, row.batch, row.method, row.answer) == (trace.run_id, "oldbatch", "rr", trace.answer)
    assert store.get(trace.run_id) == trace
    assert store.find("key-1") == CachedCall(
        '{"answer": "x"}', Usage(input_tokens=900, output_tokens=7), "gpt-4.1-mini", 0.0, True
    )
    assert SQLiteStore(path, owner="someone else").count() == 0  # the old rows are the local user's
    applied = _migrations(path)
    assert [v for v, _, _ in applied] == [m.version for m in MIGRATIONS]
    assert all(when and description for _, when, description in applied)
    # New rows go beside the old ones; opening again applies nothing more.
    (again,) = offline_traces(planted_document, "baseline")
    store.save_batch([again])
    store.put("key-2", CachedCall("y", Usage(), "m"))
    reopened = SQLiteStore(path)
    assert reopened.count() == 2 and reopened.calls_cached() == 2 and _migrations(path) == applied


def test_a_new_file_starts_at_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    assert SQLiteStore(path).schema_version() == SCHEMA_VERSION
    assert [v for v, _, _ in _migrations(path)] == list(range(1, SCHEMA_VERSION + 1))


def test_a_file_newer_than_the_code_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    SQLiteStore(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_migrations VALUES (?, '2030-01-01T00:00:00+00:00', 'from the future')",
                   (SCHEMA_VERSION + 1,))  # fmt: skip
    db.close()
    with pytest.raises(LedgerError, match=f"schema version {SCHEMA_VERSION + 1}.*newer R&R Studio"):
        SQLiteStore(path)


def test_a_migration_that_fails_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rr_core.store.sqlite as backend

    path = tmp_path / "runs.sqlite3"
    SQLiteStore(path).put("k", CachedCall("kept", Usage(), "m"))

    def half_done(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half (x)")
        db.execute("DELETE FROM calls")
        raise sqlite3.OperationalError("disk I/O error")

    broken = backend.Migration(SCHEMA_VERSION + 1, "a change that fails half way", half_done)
    monkeypatch.setattr(backend, "MIGRATIONS", (*backend.MIGRATIONS, broken))
    monkeypatch.setattr(backend, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(LedgerError, match="could not be read or written"):
        SQLiteStore(path)
    monkeypatch.undo()
    store = SQLiteStore(path)
    assert store.schema_version() == SCHEMA_VERSION and store.find("k") is not None
    with sqlite3.connect(path) as db:
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'half'").fetchone()
    db.close()


# ---- Documents by content hash -------------------------------------------------------------------


def test_documents_are_kept_once_by_content_hash_and_are_the_owners_own(open_backend: Backend) -> None:
    store = open_backend()
    data = b"%PDF-1.7 a contract\x00\xff with binary bytes"
    digest = store.put_document(data, "contract.pdf")
    assert digest == hashlib.sha256(data).hexdigest()
    assert store.get_document(digest) == data and store.document_name(digest) == "contract.pdf"
    assert store.put_document(data, "renamed.pdf") == digest  # the same bytes: kept once, first name stays
    assert store.document_name(digest) == "contract.pdf"
    assert store.get_document("0" * 64) is None and store.document_name("0" * 64) is None
    other = open_backend("bob")
    assert other.get_document(digest) is None and other.document_name(digest) is None
    assert other.put_document(data, "bob.pdf") == digest and other.document_name(digest) == "bob.pdf"
    assert store.document_name(digest) == "contract.pdf"  # one row per owner: alice's stays hers


def test_a_documents_reading_is_kept_per_tokenizer_replaced_when_kept_again_and_the_owners_own(
    open_backend: Backend,
) -> None:
    store = open_backend()
    digest = store.put_document(b"%PDF-1.7 a contract", "contract.pdf")
    assert store.get_reading(digest, "o200k_base") is None
    store.put_reading(digest, "o200k_base", b"\x00pages counted by o200k\xff")
    store.put_reading(digest, "cl100k_base", b"pages counted by cl100k")
    assert store.get_reading(digest, "o200k_base") == b"\x00pages counted by o200k\xff"
    assert store.get_reading(digest, "cl100k_base") == b"pages counted by cl100k"
    store.put_reading(digest, "o200k_base", b"read again")  # a newer reading replaces the older
    assert store.get_reading(digest, "o200k_base") == b"read again"
    assert open_backend().get_reading(digest, "o200k_base") == b"read again"  # opened again: kept
    bob = open_backend("bob")
    assert bob.get_reading(digest, "o200k_base") is None
    bob.put_reading(digest, "o200k_base", b"bob's")
    assert store.get_reading(digest, "o200k_base") == b"read again"


# ---- Provider batches ----------------------------------------------------------------------------


def _batch(batch_id: str, keys: list[str], **changes: object) -> BatchRecord:
    fields: dict[str, object] = {
        "provider": "openai",
        "label": "Lab sweep · planted facts",
        "state": "submitted",
    }
    return BatchRecord(batch_id=batch_id, total=len(keys), **(fields | changes))  # type: ignore[arg-type]


def test_a_review_decision_is_kept_per_document_and_question_replaced_and_the_owners_own(
    open_backend: Backend,
) -> None:
    store = open_backend()
    assert store.decisions_for(["doc-a"]) == []
    first = store.put_decision(
        ReviewDecision(document_sha256="doc-a", question="Governing law?", decision="accepted", role="main",
                       document="a.pdf", answer="Delaware", owner="someone else", decided_at="1999")
    )  # fmt: skip
    # The store says who and when: its owner, now (not what the caller claimed).
    assert first.owner == LOCAL_OWNER and first.decided_at.startswith(str(datetime.now().year))
    again = open_backend()  # reopened: the decision was kept
    assert again.decisions_for(["doc-a", "doc-b"]) == [first]
    # The same cell decided again (its question spaced and cased otherwise) replaces the decision.
    corrected = again.put_decision(
        ReviewDecision(document_sha256="doc-a", question="  governing LAW? ", decision="corrected",
                       role="compare", document="a.pdf", answer="New York", page=3, quote="laws of New York")
    )  # fmt: skip
    other = again.put_decision(
        ReviewDecision(document_sha256="doc-b", question="Governing law?", decision="absent")
    )
    assert again.decisions_for(["doc-a"]) == [corrected]
    assert (corrected.answer, corrected.page, corrected.quote, corrected.role) == (
        "New York",
        3,
        "laws of New York",
        "compare",
    )
    assert {d.document_sha256 for d in again.decisions_for(["doc-a", "doc-b", "doc-c"])} == {"doc-a", "doc-b"}
    # Another owner sees none of them, and keeps their own on the same cell apart.
    bob = open_backend(owner="bob")
    assert bob.decisions_for(["doc-a", "doc-b"]) == []
    bobs = bob.put_decision(
        ReviewDecision(document_sha256="doc-a", question="Governing law?", decision="absent")
    )
    assert bob.decisions_for(["doc-a"]) == [bobs] and bobs.owner == "bob"
    assert again.decisions_for(["doc-a"]) == [corrected]
    assert not bob.delete_decision("doc-b", "Governing law?")  # not bob's: nothing to undo
    assert again.delete_decision("doc-b", "governing law?") and again.decisions_for(["doc-b"]) == []
    assert other.decision == "absent" and again.decisions_for([]) == []
    with pytest.raises(ValueError, match="a decision is one of"):
        ReviewDecision(document_sha256="doc-a", question="q", decision="maybe")


def test_a_batch_is_recorded_with_its_items_and_found_by_key(open_backend: Backend) -> None:
    store = open_backend()
    assert store.pending_batch("k1") is None and store.open_batches() == [] and store.batches() == []
    store.add_batch(_batch("batch_1", ["k1", "k2", "k3"]), ["k1", "k2", "k3"])
    found = store.pending_batch("k2")
    assert found is not None and (found.batch_id, found.provider, found.state, found.total) == (
        "batch_1", "openai", "submitted", 3,
    )  # fmt: skip
    assert found.label == "Lab sweep · planted facts" and found.owner == LOCAL_OWNER
    assert found.created_at and found.created_at == found.updated_at and (found.done, found.failed) == (0, 0)
    assert datetime.fromisoformat(found.created_at).tzinfo is not None  # UTC, stated
    assert store.pending_batch("k4") is None
    assert store.open_batches() == store.batches() == [found]
    assert open_backend().pending_batch("k1") == found  # a restarted process finds it


def test_a_batch_recorded_before_sending_is_confirmed_under_the_providers_id(open_backend: Backend) -> None:
    store = open_backend()
    store.add_batch(_batch("rr-ours", ["k1", "k2"], state="submitting"), ["k1", "k2"])
    waiting = store.pending_batch("k1")
    assert waiting is not None and (waiting.batch_id, waiting.state) == ("rr-ours", "submitting")
    store.confirm_batch("rr-ours", "batch_theirs")
    found = open_backend().pending_batch("k2")
    assert found is not None and (found.batch_id, found.state, found.total) == (
        "batch_theirs",
        "submitted",
        2,
    )
    assert found.created_at == waiting.created_at  # when it was recorded, before it was sent
    assert [b.batch_id for b in store.batches()] == ["batch_theirs"]
    with pytest.raises(LedgerError):
        store.confirm_batch("rr-ours", "batch_again")  # confirmed once


def test_a_call_waiting_in_one_batch_is_refused_by_another_and_nothing_of_that_batch_is_kept(
    open_backend: Backend,
) -> None:
    store = open_backend()
    store.add_batch(_batch("batch_1", ["k1", "k2"]), ["k1", "k2"])
    with pytest.raises(BatchConflict, match=r"still waiting in batch batch_1 \(Lab sweep · planted facts\)"):
        store.add_batch(_batch("batch_2", ["k3", "k2"]), ["k3", "k2"])
    assert store.pending_batch("k3") is None and [b.batch_id for b in store.batches()] == ["batch_1"]
    with pytest.raises(BatchConflict, match="twice"):
        store.add_batch(_batch("batch_3", ["k5", "k5"]), ["k5", "k5"])
    with pytest.raises(BatchConflict, match="already recorded"):
        store.add_batch(_batch("batch_1", ["k6"]), ["k6"])
    assert store.pending_batch("k5") is None and store.pending_batch("k6") is None
    # Far more keys than one statement looks up: the one waiting key is still found.
    many = [f"key-{i}" for i in range(1_234)] + ["k1"]
    with pytest.raises(BatchConflict, match="batch_1"):
        store.add_batch(_batch("batch_4", many), many)
    assert store.pending_batch("key-0") is None
    assert isinstance(BatchConflict("x"), RRError)
    # Another owner's waiting call is not this owner's: bob may submit his own.
    bob = open_backend("bob")
    assert bob.pending_batch("k1") is None and bob.batches() == []
    bob.add_batch(_batch("batch_b", ["k1"]), ["k1"])
    assert bob.pending_batch("k1").batch_id == "batch_b"  # type: ignore[union-attr]
    assert store.pending_batch("k1").batch_id == "batch_1"  # type: ignore[union-attr]


def test_settling_items_releases_the_failed_ones_and_recounts_the_batch(open_backend: Backend) -> None:
    store = open_backend()
    keys = ["k1", "k2", "k3", "k4", "k5"]
    store.add_batch(_batch("batch_1", keys), keys)
    store.update_batch("batch_1", state="in_progress", done=2)
    (batch,) = store.open_batches()
    assert (batch.state, batch.done, batch.failed) == ("in_progress", 2, 0)
    # "done" only for a reply that is stored: otherwise it would be paid for again.
    with pytest.raises(LedgerError, match="no stored reply"):
        store.settle_items("batch_1", {"k1": "done", "k2": "errored"})
    assert store.pending_batch("k2") is not None  # nothing was settled
    store.put("k1", CachedCall("reply 1", Usage(output_tokens=3), "m"))
    store.settle_items("batch_1", {"k1": "done", "k2": "errored", "k3": "expired", "k4": "canceled"})
    assert [store.pending_batch(k) for k in ("k1", "k2", "k3", "k4")] == [None] * 4
    assert store.pending_batch("k5").batch_id == "batch_1"  # type: ignore[union-attr]
    (batch,) = store.batches()
    assert (batch.state, batch.done, batch.failed) == ("in_progress", 1, 3)  # recounted from the items
    store.settle_items("batch_1", {"k1": "errored"})  # settled already: stays done
    assert (store.batches()[0].done, store.batches()[0].failed) == (1, 3)
    # The released calls go out again, alone, in a new batch; the waiting one may not.
    store.add_batch(_batch("batch_2", ["k2", "k3", "k4"]), ["k2", "k3", "k4"])
    with pytest.raises(BatchConflict):
        store.add_batch(_batch("batch_3", ["k5"]), ["k5"])
    store.update_batch("batch_1", state="ended")
    assert [b.batch_id for b in store.open_batches()] == ["batch_2"]
    assert [b.batch_id for b in store.batches()] == ["batch_2", "batch_1"]  # newest first
    assert store.pending_batch("k5").state == "ended"  # type: ignore[union-attr]  # its result is still to be read


def test_batch_states_and_outcomes_are_checked(open_backend: Backend) -> None:
    store = open_backend()
    store.add_batch(_batch("batch_1", ["k1"]), ["k1"])
    with pytest.raises(ValueError, match="state 'finished'"):
        store.update_batch("batch_1", state="finished")
    with pytest.raises(ValueError, match="outcome"):
        store.settle_items("batch_1", {"k1": "ok"})
    with pytest.raises(ValueError, match="state"):
        _batch("batch_x", ["k"], state="done")
    with pytest.raises(ValueError, match="items"):
        store.add_batch(_batch("batch_2", ["k2", "k3"]), ["k2"])
    with pytest.raises(LedgerError, match="No batch nope"):
        store.update_batch("nope", state="ended")
    with pytest.raises(LedgerError, match="No batch nope"):
        store.settle_items("nope", {"k1": "errored"})
    with pytest.raises(LedgerError, match="No batch batch_1"):
        open_backend("bob").update_batch("batch_1", state="canceled")
    assert store.batches()[0].state == "submitted"


def test_open_batches_come_oldest_first(open_backend: Backend) -> None:
    store = open_backend()
    for n, when in enumerate(
        ["2026-11-25T10:00:02+00:00", "2026-11-25T10:00:01+00:00", "2026-11-25T10:00:03+00:00"]
    ):
        store.add_batch(_batch(f"b{n}", [f"k{n}"], created_at=when), [f"k{n}"])
    assert [b.batch_id for b in store.open_batches()] == ["b1", "b0", "b2"]
    assert [b.batch_id for b in store.batches(limit=2)] == ["b2", "b0"]


def test_two_processes_adding_the_same_call_to_batches_at_once_submit_it_once(open_backend: Backend) -> None:
    open_backend()
    outcomes: list[str] = []

    def submit(n: int) -> None:
        store = open_backend()  # a store (and transaction) of its own: only the database keeps them apart
        try:
            store.add_batch(_batch(f"b{n}", ["shared", f"own-{n}"]), ["shared", f"own-{n}"])
            outcomes.append("added")
        except BatchConflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["added"] + ["refused"] * 7
    winner = open_backend().pending_batch("shared")
    assert winner is not None and [b.batch_id for b in open_backend().batches()] == [winner.batch_id]


# ---- Where the store is: paths and URLs ----------------------------------------------------------


def test_open_store_takes_paths_and_sqlite_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted_document: Document
) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = tmp_path / "abs" / "runs.sqlite3"
    assert open_store(f"sqlite://{absolute}").location == str(absolute) and absolute.is_file()
    assert open_store("sqlite:rel/runs.sqlite3").location == "rel/runs.sqlite3"
    assert (tmp_path / "rel" / "runs.sqlite3").is_file()
    assert open_store(tmp_path / "plain.sqlite3").location == str(tmp_path / "plain.sqlite3")
    assert open_store("plain2.sqlite3", owner="bob").owner == "bob"
    monkeypatch.setenv(DB_ENV, f"sqlite://{tmp_path}/env.sqlite3")
    assert default_path() == tmp_path / "env.sqlite3" and open_store().location == str(
        tmp_path / "env.sqlite3"
    )
    # In memory: one store, as long as it is open; two are two.
    memory = open_store(":memory:")
    memory.save_batch(offline_traces(planted_document, "baseline"))
    assert memory.count() == 1 and open_store("sqlite::memory:").count() == 0
    memory.close()
    assert not (tmp_path / ":memory:").exists()


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("postgresql+psycopg://db.example.com/rr?password=s3cret-pw", "write the URL as postgresql://"),
        ("mysql://analyst:s3cret-pw@db.example.com/rr", "mysql:// is not a store R&R Studio has"),
        ("sqlite://db.example.com/rr.sqlite3", "a file on this machine"),
        ("sqlite:///tmp/rr.sqlite3?mode=ro&password=s3cret-pw", "takes no options"),
        ("sqlite:", "name the file"),
    ],
)
def test_a_store_url_no_backend_serves_is_a_config_error_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, needle: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=re.escape(needle)) as given:
        open_store(url)
    monkeypatch.setenv(DB_ENV, url)
    with pytest.raises(ConfigError, match=re.escape(needle)) as from_env:
        open_store()
    with pytest.raises(ConfigError):
        SQLiteStore()
    for error in (given.value, from_env.value):
        assert "s3cret" not in str(error) and "sqlite:///absolute/path" in str(error)
        assert "postgresql://user@host" in str(error)  # the forms accepted, both backends
    assert str(from_env.value).startswith(f"{DB_ENV}=")
    assert list(tmp_path.iterdir()) == []  # no folder named "postgresql:", no file: nothing made


def test_redact_url_hides_every_form_of_password() -> None:
    assert redact_url("postgresql://u:pw@host/db") == "postgresql://***@host/db"
    assert redact_url("postgresql://u:p@ss/w0rd@host:5432/db") == "postgresql://***@host:5432/db"
    assert redact_url("postgresql://host/db?user=u&password=pw&sslmode=require") == (
        "postgresql://host/db?user=u&password=***&sslmode=require"
    )
    assert redact_url("/home/u/runs.sqlite3") == "/home/u/runs.sqlite3"


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_a_postgresql_url_opens_the_postgresql_store_and_a_server_that_is_down_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused_port: int, scheme: str
) -> None:
    """Before team mode, such a value made a folder named "postgresql:"; now it is a server, and
    one that cannot be reached is a LedgerError naming it, never showing the password."""
    monkeypatch.chdir(tmp_path)
    url = f"{scheme}://analyst:s3cret-pw@127.0.0.1:{refused_port}/rr"
    with pytest.raises(LedgerError, match=rf"127\.0\.0\.1:{refused_port}/rr could not be opened") as given:
        open_store(url)
    monkeypatch.setenv(DB_ENV, url)
    with pytest.raises(LedgerError, match="could not be opened") as from_env:
        open_store(owner="alice")
    for error in (given.value, from_env.value):
        assert "s3cret" not in str(error) and "analyst" not in str(error)
        assert "the server is up" in str(error) and DB_ENV in str(error)
    with pytest.raises(ConfigError, match="names a PostgreSQL server, not a SQLite file"):
        SQLiteStore()
    with pytest.raises(ConfigError, match="names a PostgreSQL server"):
        default_path()
    assert list(tmp_path.iterdir()) == []  # nothing made: no folder named "postgresql:"


def test_calls_sent_and_not_answered_are_kept_per_sender_and_handed_on_once(open_backend: Backend) -> None:
    """The sent-but-unanswered ledger: recorded before a call is sent, cleared by its sender once
    answered; what an interrupted process left is handed to the next sender of the same key, once,
    and never to another owner."""
    store = open_backend()
    for key, sender, usd in (("k1", "killed", 0.25), ("k2", "killed", 0.5), ("k3", "live", 1.0)):
        store.mark_sent(
            SentCall(key=key, provider="openai", model="gpt-4.1-mini", reserved_usd=usd, sender=sender)
        )
    assert [(c.key, c.sender, c.reserved_usd) for c in store.unanswered()] == [
        ("k1", "killed", 0.25), ("k2", "killed", 0.5), ("k3", "live", 1.0),
    ]  # fmt: skip
    assert all(c.sent_at and c.model == "gpt-4.1-mini" for c in store.unanswered())
    store.clear_sent("k3", "someone else")  # only its own sender clears it
    store.clear_sent("k3", "live")
    assert [c.key for c in store.unanswered()] == ["k1", "k2"]

    def gone(call: SentCall) -> bool:
        return call.sender == "killed"

    assert open_backend(owner="bob").take_unanswered(["k1", "k2"], "bob's run", gone) == []  # not bob's
    assert store.take_unanswered(["k1"], "killed", gone) == []  # a sender's own calls are its own to clear
    store.mark_sent(SentCall(key="k1", provider="openai", model="m", reserved_usd=2.0, sender="in flight"))
    taken = store.take_unanswered(["k1", "k2", "k9"], "resumed", gone)
    assert sorted((c.key, c.reserved_usd) for c in taken) == [("k1", 0.25), ("k2", 0.5)]
    # A live sender's call (a parallel run's, in flight) stays its own.
    assert [(c.key, c.sender) for c in store.unanswered()] == [("k1", "in flight")]
    assert store.take_unanswered(["k1", "k2"], "again", gone) == []
    assert [c.sender for c in store.take_unanswered(["k1"], "again", lambda call: True)] == ["in flight"]
    assert store.unanswered() == []


def test_calls_held_against_a_shared_cap_are_refused_past_it_and_settle_to_their_bill(
    open_backend: Backend,
) -> None:
    """A work's parts (on several workers) hold each call's worst case in the store against the
    work's cap before sending it: a hold that would pass the cap is refused, a settled hold counts
    at its bill, and another owner's ledger of the same name is not counted."""
    store, other = open_backend(), open_backend(owner="someone-else")
    assert store.hold_spend("grid-w1", "h1", 0.40, 1.0) and store.hold_spend("grid-w1", "h2", 0.40, 1.0)
    assert not store.hold_spend("grid-w1", "h3", 0.40, 1.0)  # 1.20 would pass 1.00
    assert store.ledger_spent("grid-w1") == pytest.approx(0.80)
    store.settle_hold("grid-w1", "h1", "call-1", 0.05)  # billed far under its worst case
    assert store.ledger_spent("grid-w1") == pytest.approx(0.45)
    assert store.hold_spend("grid-w1", "h3", 0.40, 1.0)
    assert other.ledger_spent("grid-w1") == 0 and other.hold_spend("grid-w1", "x", 1.0, 1.0)
    assert open_backend().ledger_spent("grid-w1") == pytest.approx(0.85)  # a reopened store reads it


# ---- SQLite: one connection; what is synced to disk before a write returns -----------------------


def test_a_sqlite_store_opens_its_file_once_for_many_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []
    connect = sqlite3.connect

    def counting(*args: object, **kwargs: object) -> sqlite3.Connection:
        opened.append(args[0])
        return connect(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite3, "connect", counting)
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    for i in range(50):
        store.put(f"k{i}", CachedCall("a reply", Usage(input_tokens=3), "gpt-4.1-mini"))
        assert store.find(f"k{i}") is not None
    assert len(opened) == 1, (
        opened
    )  # (each transaction opened its own connection: a WAL checkpoint at each close)
    store.close()
    assert store.find("k7") is not None  # a closed store opens again on its next use
    assert len(opened) == 2


def test_what_money_follows_is_synced_to_disk_and_what_can_be_had_again_is_not(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")

    def synchronous() -> int:  # the setting the last commit ran under: 2 FULL (an fsync), 1 NORMAL
        connection = store._connection
        assert connection is not None
        return int(connection.execute("PRAGMA synchronous").fetchone()[0])

    sent = SentCall(key="k", provider="openai", model="gpt-4.1-mini", reserved_usd=0.02, sender="s")
    synced = {
        "a call entered in the sent ledger before it is sent": lambda: store.mark_sent(sent),
        "a spend held against a cap": lambda: store.hold_spend("work", "hold-1", 0.01, 1.0),
        "a spend recorded": lambda: store.add_spend("work", "k", 0.01),
    }
    relaxed = {
        "a reply stored": lambda: store.put(
            "k", CachedCall("a reply", Usage(input_tokens=3), "gpt-4.1-mini")
        ),
        "the call taken off the sent ledger": lambda: store.clear_sent("k", "s"),
        "a document's bytes": lambda: store.put_document(b"%PDF-1.7 bytes", "a.pdf"),
        "a reading": lambda: store.put_reading("0" * 64, "o200k_base", b"{}"),
    }
    for name, write in synced.items():
        store.put_reading("1" * 64, "o200k_base", b"{}")  # the connection at NORMAL before it
        write()
        assert synchronous() == 2, name
    for name, write in relaxed.items():
        store.mark_sent(sent)  # at FULL before it
        write()
        assert synchronous() == 1, name


def test_close_stores_closes_a_store_only_the_collector_would_have_freed(tmp_path: Path) -> None:
    """``python -m rr_core`` freezes its objects before it exits (no last collection pass): a
    store held in a reference cycle is closed by ``close_stores`` instead, its WAL written back."""
    path = tmp_path / "runs.sqlite3"
    store = open_store(path)
    store.put_document(b"%PDF-1.4 kept", "kept.pdf")
    assert Path(f"{path}-wal").exists()  # the connection is open, in WAL mode
    holder: dict[str, object] = {"store": store}
    holder["self"] = holder  # a cycle: refcounting alone never frees it
    del store
    close_stores()
    assert not Path(f"{path}-wal").exists()  # closed: the last connection wrote the WAL back
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT count(*) FROM documents").fetchone() == (1,)
    finally:
        db.close()
    reopened = holder["store"]
    assert isinstance(reopened, SQLiteStore) and reopened.document_name(
        hashlib.sha256(b"%PDF-1.4 kept").hexdigest()
    )
    close_stores()  # a store used again after it was closed opens again, and closes again
    assert not Path(f"{path}-wal").exists()
