"""The run store: a real SQLite file of runs and call replies, atomic batches, old files, no secret."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from pathlib import Path

import pytest
from conftest import PAPER_METHODS, PLANTED_QUESTION, offline_traces, word_counter

from rr_core.documents import Document
from rr_core.errors import LedgerError
from rr_core.llm import ScriptedClient
from rr_core.llm.base import Usage
from rr_core.methods import plan_method
from rr_core.runs import CachedCall, RunTrace, run_plans
from rr_core.settings import RunSettings
from rr_core.store import DB_ENV, RunStore, SQLiteStore, StoredRun, default_path, open_store

SECRET = "sk-test-DO-NOT-STORE-0123456789abcdef"


def test_save_list_get_delete_count(tmp_path: Path, planted_document: Document) -> None:
    store = SQLiteStore(tmp_path / "store" / "runs.sqlite3")
    assert store.path.is_file() and store.count() == 0
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


def test_delete_many_at_once(tmp_path: Path, planted_document: Document) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    traces = offline_traces(planted_document, *PAPER_METHODS)
    store.save_batch(traces[:3])
    store.save_batch(traces[3:])
    gone = [traces[0].run_id, traces[4].run_id, "not-there", traces[5].run_id]
    assert store.delete(gone) == 3
    assert sorted(r.run_id for r in store.list()) == sorted(
        t.run_id for t in (traces[1], traces[2], traces[3])
    )
    assert store.delete([]) == 0


def test_each_batch_gets_its_own_id(tmp_path: Path, planted_document: Document) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    traces = offline_traces(planted_document, "baseline", "icr", "rr")
    first = store.save_batch(traces[:2])
    second = store.save_batch(traces[2:])
    assert first != second
    assert {r.run_id: r.batch for r in store.list()} == {
        traces[0].run_id: first, traces[1].run_id: first, traces[2].run_id: second,
    }  # fmt: skip


def test_save_batch_is_atomic(tmp_path: Path, planted_document: Document) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    good = offline_traces(planted_document, "baseline", "rr")
    # The third run of the batch cannot be stored (a document name is required).
    broken = dataclasses.replace(offline_traces(planted_document, "icr")[0], document=None)  # type: ignore[arg-type]
    with pytest.raises(LedgerError, match="could not be read or written"):
        store.save_batch([*good, broken])
    assert store.count() == 0 and store.list() == []
    assert all(store.get(t.run_id) is None for t in good)
    store.save_batch(good)  # the store is still usable
    assert store.count() == 2


def test_saving_a_run_again_replaces_it(tmp_path: Path, planted_document: Document) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    (trace,) = offline_traces(planted_document, "rr")
    store.save_batch([trace])
    trace.warnings.append("looked at again")
    store.save_batch([trace])
    assert store.count() == 1
    assert store.get(trace.run_id).warnings[-1] == "looked at again"  # type: ignore[union-attr]


def test_runs_survive_reopening_the_file(tmp_path: Path, planted_document: Document) -> None:
    path = tmp_path / "runs.sqlite3"
    (trace,) = offline_traces(planted_document, "icr")
    SQLiteStore(path).save_batch([trace])
    again = SQLiteStore(path)
    assert again.count() == 1
    stored = again.get(trace.run_id)
    assert stored is not None and stored.method == "icr" and stored.retrieved_pages


def test_failed_runs_are_stored_with_their_error(tmp_path: Path, planted_document: Document) -> None:
    counter = word_counter()
    plan = plan_method(planted_document, PLANTED_QUESTION, RunSettings(method="baseline"), counter)
    (trace,) = run_plans(planted_document, [plan], ScriptedClient(["not json"]))
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    store.save_batch([trace])
    (row,) = store.list()
    assert row.error and row.answer is None
    stored = store.get(trace.run_id)
    assert stored is not None and stored.error_kind == "ResponseParseError"


def test_several_question_runs_keep_every_outcome(tmp_path: Path, planted_document: Document) -> None:
    questions = [PLANTED_QUESTION, "What does the harbor crane shelter?"]
    (trace,) = offline_traces(planted_document, "rr", question=questions)
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    store.save_batch([trace])
    (row,) = store.list()
    assert row.question == PLANTED_QUESTION
    stored = store.get(trace.run_id)
    assert stored is not None and [o.question for o in stored.outcomes] == questions
    assert stored.outcomes == trace.outcomes


def test_the_call_cache_finds_what_was_put(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    assert store.find("k1") is None and store.calls_cached() == 0
    usage = Usage(input_tokens=900, cached_tokens=100, output_tokens=12)
    store.put("k1", CachedCall('{"pages": [3]}', usage, "gpt-4.1-mini"))
    assert store.find("k1") == CachedCall('{"pages": [3]}', usage, "gpt-4.1-mini")
    store.put("k1", CachedCall("a later reply", Usage(), "other"))  # the first reply for a key stays
    assert store.find("k1").text == '{"pages": [3]}'  # type: ignore[union-attr]
    store.put("k2", CachedCall("x", Usage(), ""))
    assert store.calls_cached() == 2 and store.count() == 0  # cached calls are not runs
    assert SQLiteStore(store.path).find("k2") == CachedCall("x", Usage(), "")


def test_the_sqlite_store_is_a_run_store() -> None:
    def use(store: RunStore) -> RunStore:
        return store

    assert use(open_store()) is not None  # a static check as much as a runtime one (mypy)
    for name in ("save_batch", "list", "get", "delete", "find", "put"):
        assert callable(getattr(SQLiteStore, name))


def test_default_path_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "elsewhere" / "db.sqlite3"
    monkeypatch.setenv(DB_ENV, str(target))
    assert default_path() == target
    assert open_store().path == target and target.is_file()
    assert SQLiteStore().path == target


def test_concurrent_saves_from_threads(tmp_path: Path, planted_document: Document) -> None:
    store = SQLiteStore(tmp_path / "runs.sqlite3")
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
