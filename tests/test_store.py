"""The run ledger: a real SQLite file, and no secret in it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import PLANTED_QUESTION, offline_traces, word_counter

from rr_core.documents import Document
from rr_core.ledger import DB_ENV, Ledger, default_path
from rr_core.llm import ScriptedClient
from rr_core.methods import Method, RunSettings
from rr_core.runs import RunTrace, run_methods

SECRET = "sk-test-DO-NOT-STORE-0123456789abcdef"


def traces_for(document: Document, *methods: Method) -> list[RunTrace]:
    return offline_traces(document, *methods)


def test_save_list_get_delete_count(tmp_path: Path, planted_document: Document) -> None:
    ledger = Ledger(tmp_path / "ledger" / "runs.sqlite3")
    assert ledger.path.is_file() and ledger.count() == 0
    traces = traces_for(planted_document, Method.BASELINE, Method.RR)
    ids = [ledger.save(t, batch="batch-1") for t in traces]
    assert len(set(ids)) == 2 and ledger.count() == 2

    rows = ledger.list()
    assert [r.id for r in rows] == sorted(ids, reverse=True)  # newest first
    by_method = {r.method: r for r in rows}
    rr = by_method["rr"]
    trace = traces[1]
    assert (rr.batch, rr.document, rr.question, rr.answer, rr.page) == (
        "batch-1", "planted.txt", PLANTED_QUESTION, trace.answer, trace.page,
    )  # fmt: skip
    assert rr.input_tokens == trace.usage.prompt_tokens and rr.output_tokens == trace.usage.output_tokens
    assert rr.cost_usd == pytest.approx(trace.cost_usd) and rr.error is None
    assert ledger.list(limit=1)[0].id == max(ids)

    restored = ledger.get(ids[1])
    assert restored is not None and restored.to_dict() == trace.to_dict()
    assert ledger.get(99_999) is None

    assert ledger.delete(ids[0]) is True
    assert ledger.delete(ids[0]) is False
    assert ledger.count() == 1 and ledger.get(ids[0]) is None


def test_runs_survive_reopening_the_file(tmp_path: Path, planted_document: Document) -> None:
    path = tmp_path / "runs.sqlite3"
    run_id = Ledger(path).save(traces_for(planted_document, Method.ICR)[0], batch="b")
    again = Ledger(path)
    assert again.count() == 1
    trace = again.get(run_id)
    assert trace is not None and trace.method == "icr" and trace.retrieved_pages


def test_failed_runs_are_stored_with_their_error(tmp_path: Path, planted_document: Document) -> None:
    counter = word_counter()
    trace = run_methods(
        planted_document,
        PLANTED_QUESTION,
        [RunSettings(method=Method.BASELINE)],
        ScriptedClient(["not json"]),
        counter,
    )[0]
    ledger = Ledger(tmp_path / "runs.sqlite3")
    run_id = ledger.save(trace, batch="b")
    (row,) = ledger.list()
    assert row.error and row.answer is None
    stored = ledger.get(run_id)
    assert stored is not None and stored.error_kind == "ResponseParseError"


def test_default_path_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "elsewhere" / "db.sqlite3"
    monkeypatch.setenv(DB_ENV, str(target))
    assert default_path() == target
    assert Ledger().path == target and target.is_file()


def test_concurrent_saves_from_threads(tmp_path: Path, planted_document: Document) -> None:
    ledger = Ledger(tmp_path / "runs.sqlite3")
    trace = traces_for(planted_document, Method.BASELINE)[0]
    threads = [threading.Thread(target=ledger.save, args=(trace, f"b{i}")) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ledger.count() == 8
    assert {r.batch for r in ledger.list()} == {f"b{i}" for i in range(8)}


def test_no_api_key_reaches_the_file(
    tmp_path: Path, planted_document: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET + "-anthropic")
    folder = tmp_path / "store"
    ledger = Ledger(folder / "runs.sqlite3")
    traces = traces_for(planted_document, *Method)
    for trace in traces:
        ledger.save(trace, batch="secret-check")
    from rr_core.exports import to_csv, to_json, to_markdown

    for export in (to_json(traces), to_csv(traces), to_markdown(traces)):
        assert "sk-test" not in export
    assert ledger.count() == len(Method)
    files = list(folder.iterdir())  # the database and any -wal / -shm side files
    assert files
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data, path.name
        assert b"sk-test" not in data, path.name


def test_an_unusable_history_file_is_a_clear_ledger_error(tmp_path) -> None:
    from rr_core.errors import LedgerError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(LedgerError, match="RR_STUDIO_DB"):
        Ledger(blocker / "runs.sqlite3")
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError, match="could not be"):
        Ledger(garbage)
