"""The run store: every run, and every paid call by its key. Never holds a key (traces carry none).

``RunStore`` is the small interface the screens, the CLI and the Lab use; ``SQLiteStore`` is
the embedded default (one file, ``$RR_STUDIO_DB`` or ``~/.rr_studio/runs.sqlite3``). A
server database for several app replicas would implement the same five methods.

- ``save_batch``: the runs of one question (its methods), atomically, under a new batch id;
- ``list``, ``get``, ``delete``: the History screen;
- ``find`` / ``put``: the call cache, so that a repeated or interrupted Lab sweep never pays
  twice for the same call.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from rr_core.errors import LedgerError
from rr_core.llm.base import Usage
from rr_core.runs import CachedCall, RunTrace

DB_ENV = "RR_STUDIO_DB"
DEFAULT_PATH = Path.home() / ".rr_studio" / "runs.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
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
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC);
CREATE TABLE IF NOT EXISTS calls (
    cache_key TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    usage TEXT NOT NULL,
    sent TEXT
);
"""
# Columns added after the first version; an older file gains them when opened.
_ADDED_COLUMNS = {"run_id": "TEXT", "label": "TEXT", "cache_key": "TEXT", "questions": "INTEGER"}
_ADDED_CALL_COLUMNS = {"sent": "TEXT"}  # what a call's request was sent with (its temperature)


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One stored run, as listed (the trace itself is loaded on demand)."""

    run_id: str
    batch: str
    created_at: str
    document: str
    question: str
    method: str
    label: str
    provider: str
    model: str
    answer: str | None
    page: int | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_s: float
    error: str | None
    questions: int = 1  # how many questions the run asked (``question`` is the first)


class RunStore(Protocol):
    """Where runs and paid calls are kept."""

    def save_batch(self, traces: Sequence[RunTrace]) -> str:
        """Store the traces atomically under a new batch id; returns it."""
        ...

    def list(self, limit: int = 200) -> list[StoredRun]:
        """The newest runs first."""
        ...

    def get(self, run_id: str) -> RunTrace | None:
        """The full trace of a run, or None if it is gone."""
        ...

    def delete(self, run_ids: Iterable[str]) -> int:
        """Delete runs; returns how many existed."""
        ...

    def find(self, key: str) -> CachedCall | None:
        """The stored reply of a call by its cache key."""
        ...

    def put(self, key: str, call: CachedCall) -> None:
        """Keep a call's reply under its cache key."""
        ...


def default_path() -> Path:
    """Where the store lives: ``$RR_STUDIO_DB`` or ``~/.rr_studio/runs.sqlite3``."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_PATH)


def open_store(path: str | Path | None = None) -> SQLiteStore:
    """The configured store (SQLite, the embedded default)."""
    return SQLiteStore(path)


class SQLiteStore:
    """A SQLite file of run traces and call replies; safe to share between threads."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error("created", exc) from exc
        with self._connect() as db:
            db.executescript(_SCHEMA)
            have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for column, kind in _ADDED_COLUMNS.items():
                if column not in have:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
            have = {row[1] for row in db.execute("PRAGMA table_info(calls)")}
            for column, kind in _ADDED_CALL_COLUMNS.items():
                if column not in have:
                    db.execute(f"ALTER TABLE calls ADD COLUMN {column} {kind}")
            # Runs stored before run ids existed get one from their row number.
            db.execute("UPDATE runs SET run_id = 'v1-' || id WHERE run_id IS NULL")
            db.execute("CREATE UNIQUE INDEX IF NOT EXISTS runs_run_id ON runs (run_id)")

    def _error(self, verb: str, exc: Exception) -> LedgerError:
        return LedgerError(
            f"The run history at {self.path} could not be {verb} ({exc}). Point {DB_ENV} at a writable file."
        )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                db = sqlite3.connect(self.path, timeout=30)
            except (sqlite3.Error, OSError) as exc:
                raise self._error("opened", exc) from exc
            try:
                db.execute("PRAGMA journal_mode=WAL")
                with db:  # one transaction: committed whole, or rolled back
                    yield db
            except sqlite3.Error as exc:
                raise self._error("read or written", exc) from exc
            finally:
                db.close()

    def save_batch(self, traces: Sequence[RunTrace]) -> str:
        """Store the traces of one question (its methods) under a new batch id, atomically."""
        batch = uuid.uuid4().hex[:12]
        rows = []
        for trace in traces:
            usage = trace.usage
            rows.append(
                (
                    trace.run_id,
                    batch,
                    trace.started_at,
                    trace.document,
                    trace.document_sha256,
                    trace.question,
                    len(trace.questions),
                    trace.method,
                    trace.label,
                    trace.provider,
                    trace.model,
                    trace.answer,
                    trace.page,
                    usage.prompt_tokens,
                    usage.output_tokens,
                    trace.cost_usd,
                    trace.latency_s,
                    trace.error,
                    trace.cache_key,
                    json.dumps(trace.to_dict(), ensure_ascii=False),
                )
            )
        with self._connect() as db:
            db.executemany(
                "INSERT OR REPLACE INTO runs (run_id, batch, created_at, document, document_sha256, question,"
                " questions, method, label, provider, model, answer, page, input_tokens, output_tokens,"
                " cost_usd, latency_s, error, cache_key, trace) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
        return batch

    def list(self, limit: int = 200) -> list[StoredRun]:
        """The newest runs first."""
        columns = (
            "run_id, batch, created_at, document, question, method, COALESCE(label, method), provider, model,"
            " answer, page, input_tokens, output_tokens, cost_usd, latency_s, error, COALESCE(questions, 1)"
        )
        with self._connect() as db:
            rows = db.execute(f"SELECT {columns} FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [StoredRun(*row) for row in rows]

    def get(self, run_id: str) -> RunTrace | None:
        """The full trace of a run, or None if it is gone."""
        with self._connect() as db:
            row = db.execute("SELECT trace FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if not row:
            return None
        try:
            data = json.loads(row[0])
            data.setdefault("run_id", run_id)
            return RunTrace.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerError(f"Run {run_id} in {self.path} is unreadable ({exc}).") from exc

    def delete(self, run_ids: Iterable[str]) -> int:
        """Delete runs, all in one transaction; returns how many existed."""
        ids = list(run_ids)
        with self._connect() as db:
            return sum(db.execute("DELETE FROM runs WHERE run_id = ?", (i,)).rowcount for i in ids)

    def count(self) -> int:
        """How many runs are stored."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def find(self, key: str) -> CachedCall | None:
        """The stored reply of a call, by its cache key."""
        with self._connect() as db:
            row = db.execute(
                "SELECT response, usage, model, sent FROM calls WHERE cache_key = ?", (key,)
            ).fetchone()
        if not row:
            return None
        # ``sent``: what the request was sent with (NULL in rows stored before it was kept).
        sent = json.loads(row[3]) if row[3] else None
        temperature = sent.get("temperature") if isinstance(sent, dict) else None
        return CachedCall(
            text=row[0],
            usage=Usage(**json.loads(row[1])),
            model=row[2],
            temperature=float(temperature) if isinstance(temperature, (int, float)) else None,
            temperature_known=isinstance(sent, dict),
        )

    def put(self, key: str, call: CachedCall) -> None:
        """Keep a call's reply under its key (the first reply for a key stays)."""
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO calls (cache_key, created_at, model, response, usage, sent)"
                " VALUES (?,?,?,?,?,?)",
                (
                    key,
                    datetime.now(UTC).isoformat(timespec="seconds"),
                    call.model,
                    call.text,
                    json.dumps(asdict(call.usage)),
                    json.dumps({"temperature": call.temperature}) if call.temperature_known else None,
                ),
            )

    def calls_cached(self) -> int:
        """How many call replies are kept."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
