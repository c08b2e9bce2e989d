"""The embedded store: one SQLite file (``$RR_STUDIO_DB`` or ``~/.rr_studio/runs.sqlite3``).

It implements ``Store`` (``base.py``): runs, call replies and the provider batches they wait in,
and documents by content hash, every row owned and every query filtered by the owner the store
was opened as. Never holds a key (traces carry none).

The schema is versioned: ``MIGRATIONS`` is the ordered list of changes, ``schema_migrations``
records which were applied, and opening a file applies the missing ones, each in one
transaction. A file from before versioning (no ``schema_migrations``) is upgraded in place with
every run and reply kept (they become the local user's); a file newer than this code is refused.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rr_core.errors import BatchConflict, ConfigError, LedgerError
from rr_core.llm.base import Usage
from rr_core.store.base import (
    BATCH_STATES,
    DECISION_COLUMNS,
    ITEM_OUTCOMES,
    LOCAL_OWNER,
    OPEN_BATCH_STATES,
    OPEN_WORK_STATES,
    PART_COLUMNS,
    RELEASED_OUTCOMES,
    WORK_COLUMNS,
    BatchRecord,
    CachedCall,
    Enqueue,
    ReviewDecision,
    SentCall,
    StoredRun,
    WorkPart,
    WorkRecord,
    decision_from_row,
    part_from_row,
    work_changes,
    work_from_row,
)
from rr_core.store.base import (
    SENT_COLUMNS as _SENT_COLUMNS,
)
from rr_core.store.base import (
    sent_from_row as _sent,
)
from rr_core.store.config import DB_ENV, MEMORY, sqlite_path
from rr_core.traces import RunTrace

_KEYS_PER_QUERY = 500  # keys looked up per statement (SQLite bounds the parameters of one)


# ---- Migrations ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Migration:
    """One change of the schema, applied once, in one transaction."""

    version: int
    description: str
    apply: Callable[[sqlite3.Connection], None]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _unversioned_schema(db: sqlite3.Connection) -> None:
    """The tables as the store kept them before versioning, from the first version's on.

    Idempotent: creates what is missing in a new file, adds the columns added since the first
    version to an old one, and gives runs stored before run ids existed one from their row number.
    """
    db.execute(
        """CREATE TABLE IF NOT EXISTS runs (
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
        )"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at DESC)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS calls (
            cache_key TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            model TEXT NOT NULL,
            response TEXT NOT NULL,
            usage TEXT NOT NULL,
            sent TEXT
        )"""
    )
    have = _columns(db, "runs")
    for column, kind in {
        "run_id": "TEXT",
        "label": "TEXT",
        "cache_key": "TEXT",
        "questions": "INTEGER",
    }.items():
        if column not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
    if "sent" not in _columns(db, "calls"):  # what a call's request was sent with (its temperature)
        db.execute("ALTER TABLE calls ADD COLUMN sent TEXT")
    db.execute("UPDATE runs SET run_id = 'v1-' || id WHERE run_id IS NULL")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS runs_run_id ON runs (run_id)")


def _owners(db: sqlite3.Connection) -> None:
    """Every run and reply gets an owner; the rows there were become the local user's."""
    db.execute(f"ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '{LOCAL_OWNER}'")
    # A run id is unique per owner: saving a run again replaces only the owner's own row.
    db.execute("DROP INDEX IF EXISTS runs_run_id")
    db.execute("CREATE UNIQUE INDEX runs_owner_run_id ON runs (owner, run_id)")
    db.execute("CREATE INDEX runs_owner_id ON runs (owner, id)")
    # The key of ``calls`` becomes (owner, cache_key): SQLite changes a key by rebuilding.
    db.execute(
        f"""CREATE TABLE calls_owned (
            owner TEXT NOT NULL DEFAULT '{LOCAL_OWNER}',
            cache_key TEXT NOT NULL,
            created_at TEXT NOT NULL,
            model TEXT NOT NULL,
            response TEXT NOT NULL,
            usage TEXT NOT NULL,
            sent TEXT,
            PRIMARY KEY (owner, cache_key)
        )"""
    )
    db.execute(
        "INSERT INTO calls_owned (owner, cache_key, created_at, model, response, usage, sent)"
        f" SELECT '{LOCAL_OWNER}', cache_key, created_at, model, response, usage, sent FROM calls"
    )
    db.execute("DROP TABLE calls")
    db.execute("ALTER TABLE calls_owned RENAME TO calls")


def _documents(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE documents (
            owner TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            name TEXT NOT NULL,
            size INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (owner, sha256)
        )"""
    )


def _batches(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE batches (
            owner TEXT NOT NULL,
            batch_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            label TEXT NOT NULL,
            state TEXT NOT NULL,
            total INTEGER NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (owner, batch_id)
        )"""
    )
    db.execute("CREATE INDEX batches_owner_created ON batches (owner, created_at)")
    db.execute(
        """CREATE TABLE batch_items (
            owner TEXT NOT NULL,
            batch_id TEXT NOT NULL,
            cache_key TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'submitted',
            settled_at TEXT,
            PRIMARY KEY (owner, batch_id, cache_key)
        )"""
    )
    # The rule that keeps a call from being submitted twice, kept by the database itself.
    db.execute(
        "CREATE UNIQUE INDEX batch_items_one_pending ON batch_items (owner, cache_key) WHERE state = 'submitted'"
    )


def _ledgers(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE calls ADD COLUMN mode TEXT NOT NULL DEFAULT 'now'")
    db.execute("ALTER TABLE calls ADD COLUMN ledger TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE calls ADD COLUMN accounted INTEGER NOT NULL DEFAULT 1")
    db.execute("CREATE INDEX calls_unaccounted ON calls (owner, ledger) WHERE accounted = 0")


def _readings(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE readings (
            owner TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            tokenizer TEXT NOT NULL,
            created_at TEXT NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (owner, sha256, tokenizer)
        )"""
    )


def _work(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE work (
            owner TEXT NOT NULL,
            work_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            state TEXT NOT NULL,
            spec TEXT NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            total INTEGER NOT NULL DEFAULT 0,
            result TEXT,
            error TEXT,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            worker TEXT NOT NULL DEFAULT '',
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (owner, work_id)
        )"""
    )
    db.execute("CREATE INDEX work_owner_created ON work (owner, created_at)")
    db.execute(
        """CREATE TABLE work_results (
            owner TEXT NOT NULL,
            work_id TEXT NOT NULL,
            result_key TEXT NOT NULL,
            seq INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (owner, work_id, result_key)
        )"""
    )


def _work_calls(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE work ADD COLUMN calls_key TEXT NOT NULL DEFAULT ''")


def _sign_outs(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE sign_outs (
            owner TEXT NOT NULL,
            sign_in TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (owner, sign_in)
        )"""
    )


def _decisions(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE review_decisions (
            owner TEXT NOT NULL,
            document_sha256 TEXT NOT NULL,
            question_key TEXT NOT NULL,
            question TEXT NOT NULL,
            decision TEXT NOT NULL,
            role TEXT NOT NULL DEFAULT '',
            document TEXT NOT NULL DEFAULT '',
            answer TEXT NOT NULL DEFAULT '',
            page INTEGER,
            quote TEXT NOT NULL DEFAULT '',
            decided_at TEXT NOT NULL,
            PRIMARY KEY (owner, document_sha256, question_key)
        )"""
    )


def _owner_emails(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE owner_emails (
            owner TEXT PRIMARY KEY,
            email TEXT NOT NULL,
            seen_at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX owner_emails_email ON owner_emails (email)")


def _sent_calls(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE sent_calls (
            owner TEXT NOT NULL,
            key TEXT NOT NULL,
            sender TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            reserved_usd REAL NOT NULL,
            sent_at TEXT NOT NULL,
            PRIMARY KEY (owner, key, sender)
        )"""
    )


def _ledger_spend(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE ledger_spend (
            owner TEXT NOT NULL,
            ledger TEXT NOT NULL,
            key TEXT NOT NULL,
            usd REAL NOT NULL,
            at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX ledger_spend_ledger ON ledger_spend (owner, ledger)")


def _work_parts(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE work_parts (
            owner TEXT NOT NULL,
            work_id TEXT NOT NULL,
            part TEXT NOT NULL,
            state TEXT NOT NULL,
            worker TEXT NOT NULL DEFAULT '',
            updated_at TEXT NOT NULL,
            result TEXT,
            error TEXT,
            PRIMARY KEY (owner, work_id, part)
        )"""
    )


def _holds(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE ledger_spend ADD COLUMN hold TEXT NOT NULL DEFAULT ''")


def _work_results_part(db: sqlite3.Connection) -> None:
    # A grid run in parts (one a document) reads its own part's results: without the column, each
    # part read every result of the work (a 10,000-document grid's time grew with its square).
    # Results kept before have none: a part of such a work resumed asks its cells again, from
    # the stored replies (nothing paid again).
    db.execute("ALTER TABLE work_results ADD COLUMN part TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX work_results_part ON work_results (owner, work_id, part, seq)")


def _work_results_seq(db: sqlite3.Connection) -> None:
    # Recording a document's cells asks for the work's last seq: without this index SQLite
    # read every row the work had recorded (a grid's time grew with the square of its size).
    db.execute("CREATE INDEX work_results_seq ON work_results (owner, work_id, seq)")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs and call replies, as kept before versioned migrations", _unversioned_schema),
    Migration(2, "owners: every run and call reply is owned; existing rows are the local user's", _owners),
    Migration(3, "documents by content hash", _documents),
    Migration(4, "provider batches and the calls waiting in them", _batches),
    Migration(5, "how each reply was paid (now or batch), and the ledger that records it", _ledgers),
    Migration(6, "documents' readings (pages and tokens), so a document is parsed once", _readings),
    Migration(7, "long work (review grids, sweeps): its spec, progress, results and stop requests", _work),
    Migration(8, "what a work's calls are (so the same calls are not run twice at once)", _work_calls),
    Migration(9, "sign-ins ended by signing out (a copied session cookie signs no one in)", _sign_outs),
    Migration(
        10, "reviewers' decisions on review cells (accepted, corrected, not in the document)", _decisions
    ),
    Migration(11, "the email each owner signed in with (--user finds the owner by it)", _owner_emails),
    Migration(
        12, "calls sent now and not answered yet (possibly billed if their process was stopped)", _sent_calls
    ),
    Migration(
        13, "what each work's calls were billed, as billed (its budget cap over all its runs)", _ledger_spend
    ),
    Migration(
        14, "a work's parts, each run as its own job (a review grid's documents in team mode)", _work_parts
    ),
    Migration(15, "calls held against a cap that a work's runners share, until billed", _holds),
    Migration(16, "a work's results by arrival (its last one found at once)", _work_results_seq),
    Migration(17, "a work's results by part (a part reads its own)", _work_results_part),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
_IDS_AT_ONCE = 500  # ids in one statement (SQLite bounds its parameters: 999 in older builds)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


_BATCH_COLUMNS = "batch_id, provider, label, state, total, done, failed, created_at, updated_at, owner"


def _batch(row: tuple[Any, ...]) -> BatchRecord:
    batch_id, provider, label, state, total, done, failed, created_at, updated_at, owner = row
    return BatchRecord(
        batch_id=batch_id,
        provider=provider,
        label=label,
        state=state,
        total=int(total),
        done=int(done),
        failed=int(failed),
        created_at=created_at,
        updated_at=updated_at,
        owner=owner,
    )


# ---- The store ----------------------------------------------------------------------------------


class SQLiteStore:
    """A SQLite file of one owner's runs, call replies, batches and documents; safe to share
    between threads (and between processes, through SQLite's own locking)."""

    def __init__(self, path: str | Path | None = None, owner: str = LOCAL_OWNER) -> None:
        if not owner or owner != owner.strip():
            raise ConfigError(f"the store's owner must be a name without surrounding spaces (got {owner!r})")
        self.path = path if isinstance(path, Path) else sqlite_path(path)
        self._owner = owner
        self._lock = threading.Lock()
        # One connection, kept open and used under the lock: ``:memory:`` lives in it; a file's is
        # opened again in a forked child (``_pid``) and after an error. Opening a file's connection
        # for each use cost a WAL checkpoint at every close (the last connection's), i.e. most of
        # a Review's time on the offline engine.
        self._memory: sqlite3.Connection | None = None
        self._connection: sqlite3.Connection | None = None
        self._pid = 0
        self._synced = True  # the connection's synchronous setting: FULL (True) or NORMAL
        if str(self.path) != MEMORY:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._error("created", exc) from exc
        self._migrate()

    @property
    def owner(self) -> str:
        """Whose rows this store reads and writes."""
        return self._owner

    @property
    def location(self) -> str:
        """The file, for display."""
        return str(self.path)

    def close(self) -> None:
        """Close the connection (the in-memory database goes with it); a later use opens again."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None
            self._drop()

    def _drop(self) -> None:
        """Forget a file's connection (closed, unless it belongs to the process this one forked from)."""
        connection, self._connection = self._connection, None
        if connection is not None and self._pid == os.getpid():
            connection.close()

    def _error(self, verb: str, exc: Exception) -> LedgerError:
        return LedgerError(
            f"The run history at {self.path} could not be {verb} ({exc}). Point {DB_ENV} at a writable file."
        )

    def _open(self) -> sqlite3.Connection:
        """The connection, in autocommit mode (transactions are begun explicitly); the caller holds
        the lock."""
        if self._memory is not None:
            return self._memory
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self._drop()
        try:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            if str(self.path) == MEMORY:
                self._memory = db
            else:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                self._connection, self._pid, self._synced = db, os.getpid(), True
        except (sqlite3.Error, OSError) as exc:
            raise self._error("opened", exc) from exc
        return db

    @contextmanager
    def _transaction(self, *, write: bool = False, synced: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction, committed whole or rolled back; ``write`` takes the write lock at once
        (so a read followed by a write cannot be overtaken by another writer).

        ``synced``: the commit reaches the disk before it returns (``synchronous=FULL``: an fsync,
        ~0.4 ms). ``False`` for what can be had again for nothing: a reply stored (a paid one was
        entered in the sent ledger, synced, before it was sent), a reading, a document's bytes, runs
        and results made from stored replies, a lease renewed. Such a commit survives a killed
        process as any other; a power cut may lose the last of them, never an earlier write: the
        WAL is read back in order up to its first incomplete commit, and a synced commit syncs
        every write before it. So a call whose reply was lost reads as sent (possibly billed),
        never as not sent."""
        with self._lock:
            db = self._open()
            try:
                if db is self._connection and synced != self._synced:
                    db.execute(f"PRAGMA synchronous={'FULL' if synced else 'NORMAL'}")
                    self._synced = synced
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                except BaseException:
                    if db.in_transaction:
                        db.rollback()
                    raise
                db.commit()
            except sqlite3.Error as exc:
                if db is self._connection:
                    self._drop()  # a connection in an unknown state is not used again
                raise self._error("read or written", exc) from exc

    def _version(self, db: sqlite3.Connection) -> int:
        if not db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone():
            return 0
        return int(db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])

    def _migrate(self) -> None:
        """Apply the migrations the file lacks, each in its own transaction."""
        with self._transaction() as db:
            version = self._version(db)
        self._refuse_newer(version)
        for migration in MIGRATIONS:
            if migration.version <= version:
                continue
            with self._transaction(write=True) as db:
                # Another process may have applied it while this one waited for the lock.
                db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, description TEXT NOT NULL)"
                )
                version = self._version(db)
                self._refuse_newer(version)
                if migration.version <= version:
                    continue
                migration.apply(db)
                db.execute(
                    "INSERT INTO schema_migrations (version, applied_at, description) VALUES (?,?,?)",
                    (migration.version, _now(), migration.description),
                )
                version = migration.version

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"The run history at {self.path} is at schema version {version}, written by a newer R&R Studio"
                f" (this one knows up to version {SCHEMA_VERSION}). Update R&R Studio, or point {DB_ENV}"
                " at another file."
            )

    def schema_version(self) -> int:
        """The last migration applied to the file."""
        with self._transaction() as db:
            return self._version(db)

    # ---- Runs ------------------------------------------------------------------------------------

    def save_batch(self, traces: Sequence[RunTrace], batch: str | None = None) -> str:
        """Store the traces of one question (its methods) under a new batch id (or ``batch``), atomically."""
        batch = batch or uuid.uuid4().hex[:12]
        rows = []
        for trace in traces:
            usage = trace.usage
            rows.append(
                (
                    self._owner,
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
        with self._transaction(write=True, synced=False) as db:
            db.executemany(
                "INSERT OR REPLACE INTO runs (owner, run_id, batch, created_at, document, document_sha256, question,"
                " questions, method, label, provider, model, answer, page, input_tokens, output_tokens,"
                " cost_usd, latency_s, error, cache_key, trace) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
        return batch

    def list(self, limit: int = 200, offset: int = 0) -> list[StoredRun]:
        """The newest runs first (``offset``: see ``RunStore.list``)."""
        columns = (
            "run_id, batch, created_at, document, question, method, COALESCE(label, method), provider, model,"
            " answer, page, input_tokens, output_tokens, cost_usd, latency_s, error, COALESCE(questions, 1)"
        )
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT {columns} FROM runs WHERE owner = ? ORDER BY id DESC LIMIT ? OFFSET ?",
                (self._owner, limit, max(0, offset)),
            ).fetchall()
        return [StoredRun(*row) for row in rows]

    def get(self, run_id: str) -> RunTrace | None:
        """The full trace of a run, or None if it is gone."""

        with self._transaction() as db:
            row = db.execute(
                "SELECT trace FROM runs WHERE owner = ? AND run_id = ?", (self._owner, run_id)
            ).fetchone()
        return self._trace(run_id, row[0]) if row else None

    def get_runs(self, run_ids: Iterable[str]) -> builtins.list[RunTrace]:
        """The full traces of these runs, in the order asked (each once; those gone left out):
        one query, or one per ``_IDS_AT_ONCE`` ids (SQLite's bound on a statement's parameters),
        in one transaction."""
        ids = builtins.list(dict.fromkeys(run_ids))
        found: dict[str, str] = {}
        with self._transaction() as db:
            for start in range(0, len(ids), _IDS_AT_ONCE):
                part = ids[start : start + _IDS_AT_ONCE]
                found.update(
                    db.execute(
                        f"SELECT run_id, trace FROM runs WHERE owner = ? AND run_id IN ({','.join('?' * len(part))})",
                        (self._owner, *part),
                    ).fetchall()
                )
        return [self._trace(run_id, found[run_id]) for run_id in ids if run_id in found]

    def _trace(self, run_id: str, text: str) -> RunTrace:
        try:
            data = json.loads(text)
            data.setdefault("run_id", run_id)
            return RunTrace.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerError(f"Run {run_id} in {self.path} is unreadable ({exc}).") from exc

    def delete(self, run_ids: Iterable[str]) -> int:
        """Delete runs, all in one transaction; returns how many existed."""
        ids = [(self._owner, run_id) for run_id in run_ids]
        with self._transaction(write=True) as db:
            return sum(db.execute("DELETE FROM runs WHERE owner = ? AND run_id = ?", i).rowcount for i in ids)

    def count(self) -> int:
        """How many runs are stored."""
        with self._transaction() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs WHERE owner = ?", (self._owner,)).fetchone()[0])

    # ---- Call replies ------------------------------------------------------------------------------

    def find(self, key: str) -> CachedCall | None:
        """The stored reply of a call, by its cache key."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT response, usage, model, sent, mode, ledger, accounted FROM calls"
                " WHERE owner = ? AND cache_key = ?",
                (self._owner, key),
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
            mode=row[4],
            ledger=row[5],
            accounted=bool(row[6]),
        )

    def account(self, ledger: str) -> int:
        """Mark a ledger's replies as recorded (its work finished); how many were not yet."""
        if not ledger:
            return 0
        with self._transaction(write=True) as db:
            changed = db.execute(
                "UPDATE calls SET accounted = 1 WHERE owner = ? AND ledger = ? AND accounted = 0",
                (self._owner, ledger),
            ).rowcount
        return int(changed)

    def add_spend(self, ledger: str, key: str, usd: float) -> None:
        """Record what a call of ``ledger``'s work was billed (or may have been), as it is billed."""
        with self._transaction(write=True) as db:
            db.execute(
                "INSERT INTO ledger_spend (owner, ledger, key, usd, at) VALUES (?,?,?,?,?)",
                (self._owner, ledger, key, usd, _now()),
            )

    def ledger_spent(self, ledger: str) -> float:
        """What ``ledger``'s work has been billed over all its runs."""
        if not ledger:
            return 0.0
        with self._transaction() as db:
            row = db.execute(
                "SELECT COALESCE(SUM(usd), 0) FROM ledger_spend WHERE owner = ? AND ledger = ?",
                (self._owner, ledger),
            ).fetchone()
        return float(row[0]) if row else 0.0

    def put(self, key: str, call: CachedCall) -> None:
        """Keep a call's reply under its key (the first reply for a key stays)."""
        with self._transaction(write=True, synced=False) as db:
            db.execute(
                "INSERT OR IGNORE INTO calls (owner, cache_key, created_at, model, response, usage, sent,"
                " mode, ledger, accounted) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    self._owner,
                    key,
                    _now(),
                    call.model,
                    call.text,
                    json.dumps(asdict(call.usage)),
                    json.dumps({"temperature": call.temperature}) if call.temperature_known else None,
                    call.mode,
                    call.ledger,
                    int(call.accounted),
                ),
            )

    def hold_spend(self, ledger: str, hold: str, usd: float, cap_usd: float) -> bool:
        """Hold a call's worst case against the work's cap, atomically (see ``CallCache``)."""
        with self._transaction(write=True) as db:  # the write lock: one hold at a time
            row = db.execute(
                "SELECT COALESCE(SUM(usd), 0) FROM ledger_spend WHERE owner = ? AND ledger = ?",
                (self._owner, ledger),
            ).fetchone()
            if float(row[0] if row else 0.0) + usd > cap_usd + 1e-9:
                return False
            db.execute(
                "INSERT INTO ledger_spend (owner, ledger, key, usd, at, hold) VALUES (?,?,'',?,?,?)",
                (self._owner, ledger, usd, _now(), hold),
            )
        return True

    def settle_hold(self, ledger: str, hold: str, key: str, usd: float) -> None:
        """What the held call holds becomes what it was billed."""
        with self._transaction(write=True) as db:
            db.execute(
                "UPDATE ledger_spend SET usd = ?, key = ?, at = ? WHERE owner = ? AND ledger = ? AND hold = ?",
                (usd, key, _now(), self._owner, ledger, hold),
            )

    def calls_cached(self) -> int:
        """How many call replies are kept."""
        with self._transaction() as db:
            return int(db.execute("SELECT COUNT(*) FROM calls WHERE owner = ?", (self._owner,)).fetchone()[0])

    # ---- Provider batches ----------------------------------------------------------------------------

    def add_batch(self, batch: BatchRecord, keys: Sequence[str]) -> None:
        """Record a submitted batch and one waiting item per call key, atomically.

        Raises ``BatchConflict`` if a key is still waiting in another batch (or twice in this
        one), or the batch is already recorded: then nothing is recorded.
        """
        if batch.owner not in ("", self._owner):
            raise ValueError(f"a batch of {batch.owner!r} cannot be recorded by the store of {self._owner!r}")
        unique = list(dict.fromkeys(keys))
        if len(unique) != len(keys):
            raise BatchConflict(
                f"Batch {batch.batch_id} lists {len(keys) - len(unique)} call(s) twice; a call is submitted once."
            )
        if batch.total != len(unique):
            raise ValueError(f"batch {batch.batch_id} says {batch.total} items but lists {len(unique)} calls")
        created = batch.created_at or _now()
        with self._transaction(write=True) as db:
            known = db.execute(
                "SELECT 1 FROM batches WHERE owner = ? AND batch_id = ?", (self._owner, batch.batch_id)
            ).fetchone()
            if known:
                raise BatchConflict(
                    f"Batch {batch.batch_id} is already recorded; its calls were not added again."
                )
            for start in range(0, len(unique), _KEYS_PER_QUERY):
                part = unique[start : start + _KEYS_PER_QUERY]
                waiting = db.execute(
                    "SELECT i.cache_key, b.batch_id, b.label FROM batch_items i JOIN batches b"
                    " ON b.owner = i.owner AND b.batch_id = i.batch_id"
                    f" WHERE i.owner = ? AND i.state = 'submitted' AND i.cache_key IN ({','.join('?' * len(part))})",
                    (self._owner, *part),
                ).fetchall()
                if waiting:
                    key, other, label = waiting[0]
                    more = f" (and {len(waiting) - 1} more)" if len(waiting) > 1 else ""
                    raise BatchConflict(
                        f"Call {key[:16]}…{more} is still waiting in batch {other} ({label}); it is not"
                        f" submitted again in batch {batch.batch_id} until that batch settles it."
                    )
            db.execute(
                f"INSERT INTO batches ({_BATCH_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    batch.batch_id,
                    batch.provider,
                    batch.label,
                    batch.state,
                    batch.total,
                    batch.done,
                    batch.failed,
                    created,
                    batch.updated_at or created,
                    self._owner,
                ),
            )
            db.executemany(
                "INSERT INTO batch_items (owner, batch_id, cache_key, state) VALUES (?,?,?,'submitted')",
                [(self._owner, batch.batch_id, key) for key in unique],
            )

    def pending_batch(self, key: str) -> BatchRecord | None:
        """The batch this key's call is still waiting in (its item neither done nor released)."""
        columns = ", ".join(f"b.{c.strip()}" for c in _BATCH_COLUMNS.split(","))
        with self._transaction() as db:
            row = db.execute(
                f"SELECT {columns} FROM batch_items i JOIN batches b ON b.owner = i.owner AND b.batch_id = i.batch_id"
                " WHERE i.owner = ? AND i.cache_key = ? AND i.state = 'submitted'",
                (self._owner, key),
            ).fetchone()
        return _batch(row) if row else None

    def confirm_batch(self, marker: str, batch_id: str) -> None:
        """A "submitting" batch recorded under ``marker`` is the provider's ``batch_id`` (see
        ``CallCache.confirm_batch``)."""
        with self._transaction(write=True) as db:
            moved = db.execute(
                f"INSERT INTO batches ({_BATCH_COLUMNS}) SELECT ?, provider, label, 'submitted', total, done,"
                " failed, created_at, ?, owner FROM batches WHERE owner = ? AND batch_id = ? AND state = 'submitting'",
                (batch_id, _now(), self._owner, marker),
            ).rowcount
            if not moved:
                raise self._no_batch(marker)
            db.execute(
                "UPDATE batch_items SET batch_id = ? WHERE owner = ? AND batch_id = ?",
                (batch_id, self._owner, marker),
            )
            db.execute("DELETE FROM batches WHERE owner = ? AND batch_id = ?", (self._owner, marker))

    def update_batch(
        self, batch_id: str, *, state: str, done: int | None = None, failed: int | None = None
    ) -> None:
        """Record a batch's new state, and its counts where given (items stay as they are: a batch
        that ended or expired still holds the replies its items are settled from)."""
        if state not in BATCH_STATES:
            raise ValueError(f"batch state {state!r} is not one of {', '.join(BATCH_STATES)}")
        if min(done or 0, failed or 0) < 0:
            raise ValueError("a batch's counts cannot be negative")
        with self._transaction(write=True) as db:
            changed = db.execute(
                "UPDATE batches SET state = ?, done = COALESCE(?, done), failed = COALESCE(?, failed), updated_at = ?"
                " WHERE owner = ? AND batch_id = ?",
                (state, done, failed, _now(), self._owner, batch_id),
            ).rowcount
            if not changed:
                raise self._no_batch(batch_id)

    def settle_items(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        """Settle items by call key; the batch's done and failed counts are recounted from its items.

        "done": the reply is stored (``put`` it first; a "done" item without a stored reply is
        refused, since it would be paid for again); "errored", "expired", "canceled": the item is
        released, so ``pending_batch(key)`` is None and the call may be submitted again. Items
        already settled stay as they were settled.
        """
        wrong = sorted({o for o in outcomes.values() if o not in ITEM_OUTCOMES})
        if wrong:
            raise ValueError(f"item outcome(s) {', '.join(wrong)} not one of {', '.join(ITEM_OUTCOMES)}")
        now = _now()
        with self._transaction(write=True) as db:
            if not db.execute(
                "SELECT 1 FROM batches WHERE owner = ? AND batch_id = ?", (self._owner, batch_id)
            ).fetchone():
                raise self._no_batch(batch_id)
            done = [key for key, outcome in outcomes.items() if outcome == "done"]
            for start in range(0, len(done), _KEYS_PER_QUERY):
                part = done[start : start + _KEYS_PER_QUERY]
                stored = {
                    row[0]
                    for row in db.execute(
                        f"SELECT cache_key FROM calls WHERE owner = ? AND cache_key IN ({','.join('?' * len(part))})",
                        (self._owner, *part),
                    )
                }
                missing = [key for key in part if key not in stored]
                if missing:
                    raise LedgerError(
                        f"Batch {batch_id}: {len(missing)} item(s) marked done have no stored reply"
                        f" (first: {missing[0][:16]}…); nothing was settled."
                    )
            db.executemany(
                "UPDATE batch_items SET state = ?, settled_at = ?"
                " WHERE owner = ? AND batch_id = ? AND cache_key = ? AND state = 'submitted'",
                [(outcome, now, self._owner, batch_id, key) for key, outcome in outcomes.items()],
            )
            released = ",".join(f"'{o}'" for o in RELEASED_OUTCOMES)
            db.execute(
                "UPDATE batches SET"
                " done = (SELECT COUNT(*) FROM batch_items i WHERE i.owner = batches.owner"
                " AND i.batch_id = batches.batch_id AND i.state = 'done'),"
                " failed = (SELECT COUNT(*) FROM batch_items i WHERE i.owner = batches.owner"
                f" AND i.batch_id = batches.batch_id AND i.state IN ({released})),"
                " updated_at = ? WHERE owner = ? AND batch_id = ?",
                (now, self._owner, batch_id),
            )

    def open_batches(self) -> builtins.list[BatchRecord]:
        """Batches still submitted or in progress, oldest first (a restarted process polls these)."""
        states = ",".join(f"'{s}'" for s in OPEN_BATCH_STATES)
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT {_BATCH_COLUMNS} FROM batches WHERE owner = ? AND state IN ({states})"
                " ORDER BY created_at, rowid",
                (self._owner,),
            ).fetchall()
        return [_batch(row) for row in rows]

    def batches(self, limit: int = 50) -> builtins.list[BatchRecord]:
        """The newest batches first (the progress view)."""
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT {_BATCH_COLUMNS} FROM batches WHERE owner = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (self._owner, limit),
            ).fetchall()
        return [_batch(row) for row in rows]

    def _no_batch(self, batch_id: str) -> LedgerError:
        return LedgerError(f"No batch {batch_id} is recorded in the run history at {self.path}.")

    # ---- Calls sent now, not answered yet ---------------------------------------------------------

    def mark_sent(self, call: SentCall) -> None:
        """Record a call about to be sent now (its reply not stored yet)."""
        with self._transaction(write=True) as db:
            db.execute(
                "INSERT OR REPLACE INTO sent_calls (owner, key, sender, provider, model, reserved_usd, sent_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (self._owner, call.key, call.sender, call.provider, call.model, call.reserved_usd,
                 call.sent_at or _now()),
            )  # fmt: skip

    def clear_sent(self, key: str, sender: str) -> None:
        """The call ``sender`` sent under ``key`` was answered."""
        with self._transaction(write=True, synced=False) as db:
            db.execute(
                "DELETE FROM sent_calls WHERE owner = ? AND key = ? AND sender = ?",
                (self._owner, key, sender),
            )

    def take_unanswered(
        self, keys: Sequence[str], sender: str, gone: Callable[[SentCall], bool]
    ) -> builtins.list[SentCall]:
        """Calls under ``keys`` a sender now ``gone`` sent and never saw answered, handed to ``sender``."""
        taken: builtins.list[SentCall] = []
        unique = builtins.list(dict.fromkeys(keys))
        with self._transaction(write=True) as db:
            for start in range(0, len(unique), _KEYS_PER_QUERY):
                part = unique[start : start + _KEYS_PER_QUERY]
                marks = ",".join("?" * len(part))
                rows = db.execute(
                    f"SELECT {_SENT_COLUMNS} FROM sent_calls WHERE owner = ? AND sender != ? AND key IN ({marks})"
                    " ORDER BY sent_at, rowid",
                    (self._owner, sender, *part),
                ).fetchall()
                left = [call for call in map(_sent, rows) if gone(call)]
                db.executemany(
                    "DELETE FROM sent_calls WHERE owner = ? AND key = ? AND sender = ?",
                    [(self._owner, call.key, call.sender) for call in left],
                )
                taken.extend(left)
        return taken

    def unanswered(self) -> builtins.list[SentCall]:
        """Every call sent and never answered, oldest first."""
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT {_SENT_COLUMNS} FROM sent_calls WHERE owner = ? ORDER BY sent_at, rowid",
                (self._owner,),
            ).fetchall()
        return [_sent(row) for row in rows]

    # ---- Documents -----------------------------------------------------------------------------------

    def put_document(self, data: bytes, name: str) -> str:
        """Keep the bytes once per content (the first name given stays); returns their sha256."""
        digest = hashlib.sha256(data).hexdigest()
        with self._transaction(write=True, synced=False) as db:
            db.execute(
                "INSERT OR IGNORE INTO documents (owner, sha256, name, size, created_at, data) VALUES (?,?,?,?,?,?)",
                (self._owner, digest, name, len(data), _now(), sqlite3.Binary(data)),
            )
        return digest

    def get_document(self, sha256: str) -> bytes | None:
        """The bytes with this digest, or None."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT data FROM documents WHERE owner = ? AND sha256 = ?", (self._owner, sha256)
            ).fetchone()
        return bytes(row[0]) if row else None

    def document_name(self, sha256: str) -> str | None:
        """The file name the bytes were first kept under, or None."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT name FROM documents WHERE owner = ? AND sha256 = ?", (self._owner, sha256)
            ).fetchone()
        return str(row[0]) if row else None

    # ---- ended sign-ins ----

    def end_sign_in(self, sign_in: str) -> None:
        """Record that this sign-in ended (signing out)."""
        with self._transaction(write=True) as db:
            db.execute(
                "INSERT OR IGNORE INTO sign_outs (owner, sign_in, created_at) VALUES (?,?,?)",
                (self._owner, sign_in, _now()),
            )

    def sign_in_ended(self, sign_in: str) -> bool:
        """Whether this sign-in was ended."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT 1 FROM sign_outs WHERE owner = ? AND sign_in = ?", (self._owner, sign_in)
            ).fetchone()
        return row is not None

    def note_email(self, email: str) -> None:
        """Record the email the store's owner signed in with (its latest)."""
        with self._transaction(write=True) as db:
            db.execute(
                "INSERT INTO owner_emails (owner, email, seen_at) VALUES (?,?,?)"
                " ON CONFLICT (owner) DO UPDATE SET email = excluded.email, seen_at = excluded.seen_at",
                (self._owner, email.strip().lower(), _now()),
            )

    def owners_with_email(self, email: str) -> builtins.list[str]:
        """Every owner who signed in with this email (case aside)."""
        with self._transaction() as db:
            rows = db.execute(
                "SELECT owner FROM owner_emails WHERE email = ? ORDER BY owner", (email.strip().lower(),)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def put_reading(self, sha256: str, tokenizer: str, data: bytes) -> None:
        """Keep what reading a document gave (its pages, counted by ``tokenizer``); replaces an older one."""
        with self._transaction(write=True, synced=False) as db:
            db.execute(
                "INSERT OR REPLACE INTO readings (owner, sha256, tokenizer, created_at, data) VALUES (?,?,?,?,?)",
                (self._owner, sha256, tokenizer, _now(), sqlite3.Binary(data)),
            )

    def get_reading(self, sha256: str, tokenizer: str) -> bytes | None:
        """The reading kept for this document and tokenizer, or None."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT data FROM readings WHERE owner = ? AND sha256 = ? AND tokenizer = ?",
                (self._owner, sha256, tokenizer),
            ).fetchone()
        return bytes(row[0]) if row else None

    # ---- Work ------------------------------------------------------------------------------------

    def submit_work(
        self,
        kind: str,
        title: str,
        spec: Mapping[str, Any],
        total: int,
        *,
        calls_key: str = "",
        work_id: str | None = None,
        enqueue: Enqueue | None = None,
        parts: Sequence[str] = (),
    ) -> str:
        """Record new work, queued; returns its id (``calls_key``, ``enqueue``, ``parts``: see ``WorkStore``)."""
        work_id = work_id or uuid.uuid4().hex[:16]
        now = _now()
        with self._transaction(write=True) as db:  # the write lock first: no other submit between
            if calls_key:
                row = db.execute(
                    "SELECT work_id FROM work WHERE owner = ? AND kind = ? AND calls_key = ?"
                    " AND cancel_requested = 0 AND state IN ('queued', 'running') ORDER BY created_at DESC LIMIT 1",
                    (self._owner, kind, calls_key),
                ).fetchone()
                if row is not None:
                    return str(row[0])
            db.execute(
                "INSERT INTO work (owner, work_id, kind, title, state, spec, total, created_at, updated_at,"
                " calls_key) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    self._owner,
                    work_id,
                    kind,
                    title,
                    "queued",
                    json.dumps(dict(spec)),
                    total,
                    now,
                    now,
                    calls_key,
                ),
            )
            db.executemany(
                "INSERT INTO work_parts (owner, work_id, part, state, updated_at) VALUES (?,?,?,'queued',?)",
                [(self._owner, work_id, part, now) for part in parts],
            )
            if enqueue is not None:
                enqueue(db, work_id, tuple(parts))
        return work_id

    def get_work(self, work_id: str) -> WorkRecord | None:
        """The work with this id, or None."""
        with self._transaction() as db:
            row = db.execute(
                f"SELECT {WORK_COLUMNS} FROM work WHERE owner = ? AND work_id = ?", (self._owner, work_id)
            ).fetchone()
        return work_from_row(row) if row else None

    def list_work(self, limit: int = 50, kind: str | None = None) -> builtins.list[WorkRecord]:
        """The newest work first."""
        query = f"SELECT {WORK_COLUMNS} FROM work WHERE owner = ?"
        args: builtins.list[Any] = [self._owner]
        if kind is not None:
            query += " AND kind = ?"
            args.append(kind)
        with self._transaction() as db:
            rows = db.execute(
                query + " ORDER BY created_at DESC, rowid DESC LIMIT ?", (*args, limit)
            ).fetchall()
        return [work_from_row(r) for r in rows]

    def finished_work(self, kind: str, calls_key: str) -> WorkRecord | None:
        """The newest done work of this kind with this calls key, or None."""
        if not calls_key:
            return None
        with self._transaction() as db:
            row = db.execute(
                f"SELECT {WORK_COLUMNS} FROM work WHERE owner = ? AND kind = ? AND calls_key = ? AND state = 'done'"
                " ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (self._owner, kind, calls_key),
            ).fetchone()
        return work_from_row(row) if row is not None else None

    def update_work(
        self,
        work_id: str,
        *,
        state: str | None = None,
        done: int | None = None,
        total: int | None = None,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
        worker: str | None = None,
        started: bool = False,
    ) -> None:
        """Record progress or an end."""
        names, values = work_changes(
            _now(),
            state=state,
            done=done,
            total=total,
            result=result,
            error=error,
            worker=worker,
            started=started,
        )
        sets = ", ".join("attempts = attempts + 1" if n == "attempts" else f"{n} = ?" for n in names)
        with self._transaction(write=True) as db:
            db.execute(
                f"UPDATE work SET {sets} WHERE owner = ? AND work_id = ?", (*values, self._owner, work_id)
            )

    def request_cancel(self, work_id: str) -> bool:
        """Ask the work to stop; False when it is not open. Queued work ends at once."""
        with self._transaction(write=True) as db:
            row = db.execute(
                "SELECT state FROM work WHERE owner = ? AND work_id = ?", (self._owner, work_id)
            ).fetchone()
            if row is None or row[0] not in OPEN_WORK_STATES:
                return False
            db.execute(
                "UPDATE work_parts SET state = 'cancelled', updated_at = ?"
                " WHERE owner = ? AND work_id = ? AND state = 'queued'",
                (_now(), self._owner, work_id),
            )
            states = {
                str(r[0])
                for r in db.execute(
                    "SELECT state FROM work_parts WHERE owner = ? AND work_id = ?", (self._owner, work_id)
                ).fetchall()
            }
            idle = row[0] == "queued" or (bool(states) and "running" not in states)
            db.execute(
                "UPDATE work SET cancel_requested = 1, updated_at = ?, state = ? WHERE owner = ? AND work_id = ?",
                (_now(), "cancelled" if idle else row[0], self._owner, work_id),
            )
        return True

    def reopen_work(self, work_id: str, *, enqueue: Enqueue | None = None) -> bool:
        """Queue ended work again (stop request cleared); False when it is open or unknown, or
        when other open work makes the same calls (it would run them twice at once); ``enqueue``: see
        ``WorkStore``."""
        with self._transaction(write=True) as db:
            changed = db.execute(
                "UPDATE work SET state = 'queued', cancel_requested = 0, error = NULL, updated_at = ?"
                " WHERE owner = ? AND work_id = ? AND state NOT IN ('queued', 'running')"
                " AND (calls_key = '' OR NOT EXISTS (SELECT 1 FROM work AS other WHERE other.owner = work.owner"
                " AND other.kind = work.kind AND other.calls_key = work.calls_key AND other.cancel_requested = 0"
                " AND other.state IN ('queued', 'running') AND other.work_id <> work.work_id))",
                (_now(), self._owner, work_id),
            ).rowcount
            if not changed:
                return False
            reopened = sorted(
                str(r[0])
                for r in db.execute(
                    "SELECT part FROM work_parts WHERE owner = ? AND work_id = ? AND state <> 'done'",
                    (self._owner, work_id),
                ).fetchall()
            )
            db.execute(
                "UPDATE work_parts SET state = 'queued', error = NULL, updated_at = ?"
                " WHERE owner = ? AND work_id = ? AND state <> 'done'",
                (_now(), self._owner, work_id),
            )
            if enqueue is not None:
                enqueue(db, work_id, reopened)
        return True

    def work_parts(self, work_id: str) -> builtins.list[WorkPart]:
        """A work's parts (none: it runs as one job)."""
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT {PART_COLUMNS} FROM work_parts WHERE owner = ? AND work_id = ? ORDER BY part",
                (self._owner, work_id),
            ).fetchall()
        return [part_from_row(r) for r in rows]

    def start_part(self, work_id: str, part: str, worker: str) -> None:
        """A runner takes the part up: the part and its work are running."""
        now = _now()
        with self._transaction(write=True) as db:
            db.execute(
                "UPDATE work_parts SET state = 'running', worker = ?, updated_at = ?"
                " WHERE owner = ? AND work_id = ? AND part = ?",
                (worker, now, self._owner, work_id, part),
            )
            db.execute(
                "UPDATE work SET state = 'running', worker = ?, updated_at = ?, attempts = attempts + 1,"
                " error = NULL WHERE owner = ? AND work_id = ? AND state IN ('queued', 'running')",
                (worker, now, self._owner, work_id),
            )

    def touch_part(self, work_id: str, part: str) -> None:
        """The part's runner is alive (its lease, and its work's, renewed)."""
        now = _now()
        with self._transaction(write=True, synced=False) as db:
            db.execute(
                "UPDATE work_parts SET updated_at = ? WHERE owner = ? AND work_id = ? AND part = ?",
                (now, self._owner, work_id, part),
            )
            db.execute(
                "UPDATE work SET updated_at = ? WHERE owner = ? AND work_id = ?", (now, self._owner, work_id)
            )

    def end_part(
        self,
        work_id: str,
        part: str,
        state: str,
        result: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> builtins.list[WorkPart] | None:
        """Record how a run of the part ended; every part when this ended the last open one (see ``WorkStore``)."""
        now = _now()
        with self._transaction(write=True) as db:  # the write lock: one part's end at a time
            changed = db.execute(
                "UPDATE work_parts SET state = ?, result = ?, error = ?, updated_at = ?"
                " WHERE owner = ? AND work_id = ? AND part = ? AND state NOT IN ('done', 'failed', 'cancelled')",
                (
                    state, json.dumps(dict(result)) if result is not None else None, error, now,
                    self._owner, work_id, part,
                ),
            ).rowcount  # fmt: skip
            rows = db.execute(
                f"SELECT {PART_COLUMNS} FROM work_parts WHERE owner = ? AND work_id = ? ORDER BY part",
                (self._owner, work_id),
            ).fetchall()
            parts = [part_from_row(r) for r in rows]
            if state == "queued":
                if not any(p.state == "running" for p in parts):
                    db.execute(
                        "UPDATE work SET state = 'queued', updated_at = ?"
                        " WHERE owner = ? AND work_id = ? AND state = 'running'",
                        (now, self._owner, work_id),
                    )
                return None
        return parts if changed and all(p.ended for p in parts) else None

    def count_results(self, work_id: str) -> int:
        """How many results the work has kept."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT count(*) FROM work_results WHERE owner = ? AND work_id = ?", (self._owner, work_id)
            ).fetchone()
        return int(row[0]) if row else 0

    def add_results(
        self, work_id: str, results: Sequence[tuple[str, Mapping[str, Any]]], part: str = ""
    ) -> None:
        """Keep results under their keys (replacing a key kept before), atomically."""
        if not results:
            return
        with self._transaction(write=True, synced=False) as db:
            seq = int(
                db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM work_results WHERE owner = ? AND work_id = ?",
                    (self._owner, work_id),
                ).fetchone()[0]
            )
            db.executemany(
                "INSERT OR REPLACE INTO work_results (owner, work_id, result_key, seq, data, part)"
                " VALUES (?,?,?,?,?,?)",
                [
                    (self._owner, work_id, key, seq + i + 1, json.dumps(dict(data)), part)
                    for i, (key, data) in enumerate(results)
                ],
            )

    def work_results(self, work_id: str) -> builtins.list[dict[str, Any]]:
        """The results kept so far, in the order they arrived."""
        with self._transaction() as db:
            rows = db.execute(
                "SELECT data FROM work_results WHERE owner = ? AND work_id = ? ORDER BY seq",
                (self._owner, work_id),
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def iter_work_results(
        self, work_id: str, page: int = 500, part: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The results kept so far (``part``: that part's only), in the order they arrived, read
        ``page`` at a time."""
        after = 0
        mine = "" if part is None else " AND part = ?"
        while True:
            with self._transaction() as db:
                rows = db.execute(
                    f"SELECT seq, data FROM work_results WHERE owner = ? AND work_id = ?{mine} AND seq > ?"
                    " ORDER BY seq LIMIT ?",
                    (self._owner, work_id, *(() if part is None else (part,)), after, page),
                ).fetchall()
            yield from (json.loads(r[1]) for r in rows)
            if len(rows) < page:
                return
            after = int(rows[-1][0])

    # ---- Review decisions --------------------------------------------------------------------------

    def put_decision(self, decision: ReviewDecision) -> ReviewDecision:
        """Keep a decision as the store's owner, now (replacing the last one on that cell)."""
        kept = replace(decision, owner=self._owner, decided_at=_now())
        with self._transaction(write=True) as db:
            db.execute(
                "INSERT OR REPLACE INTO review_decisions (owner, document_sha256, question_key, question,"
                " decision, role, document, answer, page, quote, decided_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    self._owner,
                    kept.document_sha256,
                    kept.key[1],
                    kept.question,
                    kept.decision,
                    kept.role,
                    kept.document,
                    kept.answer,
                    kept.page,
                    kept.quote,
                    kept.decided_at,
                ),
            )
        return kept

    def decisions_for(self, documents: Iterable[str]) -> builtins.list[ReviewDecision]:
        """The owner's decisions on these documents (by content hash), oldest first."""
        wanted = builtins.list(dict.fromkeys(documents))
        out: builtins.list[ReviewDecision] = []
        with self._transaction() as db:
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                part = wanted[start : start + _KEYS_PER_QUERY]
                rows = db.execute(
                    f"SELECT {DECISION_COLUMNS} FROM review_decisions WHERE owner = ? AND document_sha256 IN"
                    f" ({','.join('?' * len(part))}) ORDER BY decided_at, rowid",
                    (self._owner, *part),
                ).fetchall()
                out.extend(decision_from_row(r) for r in rows)
        return out

    def delete_decision(self, document_sha256: str, question: str) -> bool:
        """Forget a decision (undo); False when there was none."""
        with self._transaction(write=True) as db:
            changed = db.execute(
                "DELETE FROM review_decisions WHERE owner = ? AND document_sha256 = ? AND question_key = ?",
                (self._owner, document_sha256, " ".join(question.lower().split())),
            ).rowcount
        return changed > 0
