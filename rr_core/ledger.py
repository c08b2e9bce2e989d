"""The run ledger: every run in one SQLite file. Never holds a key (traces carry none)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rr_core.errors import LedgerError
from rr_core.runs import RunTrace

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
"""


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One stored run, as listed (the trace itself is loaded on demand)."""

    id: int
    batch: str
    created_at: str
    document: str
    question: str
    method: str
    provider: str
    model: str
    answer: str | None
    page: int | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_s: float
    error: str | None


def default_path() -> Path:
    """Where the ledger lives: ``$RR_STUDIO_DB`` or ``~/.rr_studio/runs.sqlite3``."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_PATH)


class Ledger:
    """A SQLite file of run traces; safe to share between threads of one process."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error("created", exc) from exc
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def _error(self, verb: str, exc: Exception) -> LedgerError:
        return LedgerError(
            f"The run history at {self.path} could not be {verb} ({exc}). Point {DB_ENV} at a writable file."
        )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                db = sqlite3.connect(self.path, timeout=10)
            except (sqlite3.Error, OSError) as exc:
                raise self._error("opened", exc) from exc
            try:
                db.execute("PRAGMA journal_mode=WAL")
                yield db
                db.commit()
            except sqlite3.Error as exc:
                raise self._error("read or written", exc) from exc
            finally:
                db.close()

    def save(self, trace: RunTrace, batch: str) -> int:
        """Store a trace under a batch id (one question's methods share a batch)."""
        usage = trace.usage
        with self._connect() as db:
            cursor = db.execute(
                "INSERT INTO runs (batch, created_at, document, document_sha256, question, method,"
                " provider, model, answer, page, input_tokens, output_tokens, cost_usd, latency_s,"
                " error, trace) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    batch,
                    trace.started_at,
                    trace.document,
                    trace.document_sha256,
                    trace.question,
                    trace.method,
                    trace.provider,
                    trace.model,
                    trace.answer,
                    trace.page,
                    usage.prompt_tokens,
                    usage.output_tokens,
                    trace.cost_usd,
                    trace.latency_s,
                    trace.error,
                    json.dumps(trace.to_dict()),
                ),
            )
            return int(cursor.lastrowid or 0)

    def save_batch(self, traces: Sequence[RunTrace]) -> str:
        """Store the traces of one question (its methods) under a new batch id; returns it."""
        batch = uuid.uuid4().hex[:12]
        for trace in traces:
            self.save(trace, batch)
        return batch

    def list(self, limit: int = 200) -> list[LedgerRow]:
        """The newest runs first."""
        columns = ", ".join(LedgerRow.__dataclass_fields__)
        with self._connect() as db:
            rows = db.execute(f"SELECT {columns} FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [LedgerRow(*row) for row in rows]

    def get(self, run_id: int) -> RunTrace | None:
        """The full trace of a run, or None if it is gone."""
        with self._connect() as db:
            row = db.execute("SELECT trace FROM runs WHERE id = ?", (run_id,)).fetchone()
        if not row:
            return None
        try:
            return RunTrace.from_dict(json.loads(row[0]))
        except (ValueError, TypeError) as exc:
            raise LedgerError(f"Run #{run_id} in {self.path} is unreadable ({exc}).") from exc

    def delete(self, run_id: int) -> bool:
        """Delete a run; True if it existed."""
        with self._connect() as db:
            return db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def count(self) -> int:
        """How many runs are stored."""
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
