"""The team store: one PostgreSQL database shared by every user and replica (``RR_STUDIO_DB=postgresql://…``).

It implements ``Store`` (``base.py``) as ``SQLiteStore`` does — runs, call replies and the
provider batches they wait in, documents by content hash — through psycopg 3 and a
``psycopg_pool.ConnectionPool``. One pool per database URL and process is shared by the stores
of every owner: the owner is not a property of a connection but of each transaction.

**Owners, enforced by the database.** Every table of owned rows has an ``owner`` column and
row-level security, enabled and *forced* (so it applies to the role that owns the tables too),
with one policy: a row is visible, and may be written, only when ``owner`` equals the setting
``rr.owner``. Each transaction of the store begins with ``set_config('rr.owner', owner, true)``:
local to that transaction, so a pooled connection handed to another owner, or used outside the
store's transactions, sees nothing at all. The store's own queries carry no owner filter; a
query that forgets one cannot read, change or delete another owner's row.

Row-level security does not apply to superusers nor to roles with ``BYPASSRLS``: the store
refuses to run as either. Connect as an ordinary role that owns the database, e.g.::

    CREATE ROLE rr_app LOGIN PASSWORD '…' NOSUPERUSER NOBYPASSRLS;
    CREATE DATABASE rr_studio OWNER rr_app;

What this protects against is a query without its owner filter (the common bug); it does not
protect against code that sets ``rr.owner`` itself, nor against a role allowed to alter the
tables (``NO FORCE ROW LEVEL SECURITY``) — the application is trusted to say who is signed in.

**Migrations.** ``MIGRATIONS`` is the ordered list of SQL changes; ``schema_version`` records
which were applied. Opening a database applies the missing ones, each in one transaction under a
transaction-level advisory lock, so replicas starting together apply each exactly once. A
database newer than this code is refused.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from rr_core.errors import BatchConflict, ConfigError, LedgerError
from rr_core.llm.base import Usage
from rr_core.store.base import (
    BATCH_STATES,
    DECISION_COLUMNS,
    ITEM_OUTCOMES,
    LOCAL_OWNER,
    OPEN_BATCH_STATES,
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
from rr_core.store.config import DB_ENV, postgres_url, redact_url
from rr_core.traces import RunTrace

OWNER_SETTING = "rr.owner"  # the transaction-local setting every policy compares ``owner`` with
CONNECT_TIMEOUT_S = 10  # a server that does not answer is an error after this, not a hang
POOL_SIZE = 8  # connections per database and process at most
_MIGRATION_LOCK = 0x5252_5354  # the advisory lock key migrations are applied under ("RRST")


# ---- Migrations ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Migration:
    """One change of the schema: SQL statements applied once, in one transaction."""

    version: int
    description: str
    statements: tuple[str, ...]


_OWNER = f"owner TEXT NOT NULL DEFAULT current_setting('{OWNER_SETTING}')"


_MINE = f"owner = current_setting('{OWNER_SETTING}', true)"


def _owned(table: str) -> tuple[str, ...]:
    """Row-level security on ``table``: forced, one policy comparing ``owner`` with the setting."""
    mine = _MINE
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY {table}_owner ON {table} USING ({mine}) WITH CHECK ({mine})",
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs, call replies, documents and provider batches, every row owned, under row-level security",
        (
            f"""CREATE TABLE runs (
                {_OWNER},
                run_id TEXT NOT NULL,
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                batch TEXT NOT NULL,
                created_at TEXT NOT NULL,
                document TEXT NOT NULL,
                document_sha256 TEXT NOT NULL,
                question TEXT NOT NULL,
                questions INTEGER NOT NULL DEFAULT 1,
                method TEXT NOT NULL,
                label TEXT,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                answer TEXT,
                page INTEGER,
                input_tokens BIGINT NOT NULL,
                output_tokens BIGINT NOT NULL,
                cost_usd DOUBLE PRECISION NOT NULL,
                latency_s DOUBLE PRECISION NOT NULL,
                error TEXT,
                cache_key TEXT,
                trace TEXT NOT NULL,
                PRIMARY KEY (owner, run_id)
            )""",
            "CREATE INDEX runs_owner_seq ON runs (owner, seq DESC)",
            *_owned("runs"),
            f"""CREATE TABLE calls (
                {_OWNER},
                cache_key TEXT NOT NULL,
                created_at TEXT NOT NULL,
                model TEXT NOT NULL,
                response TEXT NOT NULL,
                usage TEXT NOT NULL,
                sent TEXT,
                mode TEXT NOT NULL DEFAULT 'now',
                ledger TEXT NOT NULL DEFAULT '',
                accounted BOOLEAN NOT NULL DEFAULT TRUE,
                PRIMARY KEY (owner, cache_key)
            )""",
            "CREATE INDEX calls_unaccounted ON calls (owner, ledger) WHERE NOT accounted",
            *_owned("calls"),
            f"""CREATE TABLE documents (
                {_OWNER},
                sha256 TEXT NOT NULL,
                name TEXT NOT NULL,
                size BIGINT NOT NULL,
                created_at TEXT NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (owner, sha256)
            )""",
            *_owned("documents"),
            f"""CREATE TABLE batches (
                {_OWNER},
                batch_id TEXT NOT NULL,
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                provider TEXT NOT NULL,
                label TEXT NOT NULL,
                state TEXT NOT NULL,
                total INTEGER NOT NULL,
                done INTEGER NOT NULL DEFAULT 0,
                failed INTEGER NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (owner, batch_id)
            )""",
            "CREATE INDEX batches_owner_created ON batches (owner, created_at, seq)",
            *_owned("batches"),
            f"""CREATE TABLE batch_items (
                {_OWNER},
                batch_id TEXT NOT NULL,
                cache_key TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'submitted',
                settled_at TEXT,
                PRIMARY KEY (owner, batch_id, cache_key),
                FOREIGN KEY (owner, batch_id) REFERENCES batches (owner, batch_id) ON DELETE CASCADE
            )""",
            # The rule that keeps a call from being submitted twice, kept by the database itself.
            "CREATE UNIQUE INDEX batch_items_one_pending ON batch_items (owner, cache_key)"
            " WHERE state = 'submitted'",
            *_owned("batch_items"),
        ),
    ),
    Migration(
        2,
        "documents' readings (pages and tokens), so a document is parsed once",
        (
            f"""CREATE TABLE readings (
                {_OWNER},
                sha256 TEXT NOT NULL,
                tokenizer TEXT NOT NULL,
                created_at TEXT NOT NULL,
                data BYTEA NOT NULL,
                PRIMARY KEY (owner, sha256, tokenizer)
            )""",
            *_owned("readings"),
        ),
    ),
    Migration(
        3,
        "long work (review grids, sweeps): its spec, progress, results and stop requests",
        (
            f"""CREATE TABLE work (
                {_OWNER},
                work_id TEXT NOT NULL,
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                kind TEXT NOT NULL,
                title TEXT NOT NULL,
                state TEXT NOT NULL,
                spec TEXT NOT NULL,
                done INTEGER NOT NULL DEFAULT 0,
                total INTEGER NOT NULL DEFAULT 0,
                result TEXT,
                error TEXT,
                cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
                worker TEXT NOT NULL DEFAULT '',
                attempts INTEGER NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (owner, work_id)
            )""",
            "CREATE INDEX work_owner_seq ON work (owner, seq DESC)",
            *_owned("work"),
            f"""CREATE TABLE work_results (
                {_OWNER},
                work_id TEXT NOT NULL,
                result_key TEXT NOT NULL,
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                data TEXT NOT NULL,
                PRIMARY KEY (owner, work_id, result_key),
                FOREIGN KEY (owner, work_id) REFERENCES work (owner, work_id) ON DELETE CASCADE
            )""",
            "CREATE INDEX work_results_seq ON work_results (owner, work_id, seq)",
            *_owned("work_results"),
        ),
    ),
    Migration(
        4,
        "what a work's calls are (so the same calls are not run twice at once)",
        ("ALTER TABLE work ADD COLUMN calls_key TEXT NOT NULL DEFAULT ''",),
    ),
    Migration(
        5,
        "sign-ins ended by signing out (a copied session cookie signs no one in)",
        (
            f"""CREATE TABLE sign_outs (
                {_OWNER},
                sign_in TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (owner, sign_in)
            )""",
            *_owned("sign_outs"),
        ),
    ),
    Migration(
        6,
        "reviewers' decisions on review cells (accepted, corrected, not in the document)",
        (
            f"""CREATE TABLE review_decisions (
                {_OWNER},
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
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                PRIMARY KEY (owner, document_sha256, question_key)
            )""",
            *_owned("review_decisions"),
        ),
    ),
    Migration(
        7,
        "the email each owner signed in with (--user finds the owner by it); every owner may read"
        " the emails, each writes only its own",
        (
            f"""CREATE TABLE owner_emails (
                {_OWNER} PRIMARY KEY,
                email TEXT NOT NULL,
                seen_at TEXT NOT NULL
            )""",
            "CREATE INDEX owner_emails_email ON owner_emails (email)",
            "ALTER TABLE owner_emails ENABLE ROW LEVEL SECURITY",
            "ALTER TABLE owner_emails FORCE ROW LEVEL SECURITY",
            "CREATE POLICY owner_emails_read ON owner_emails FOR SELECT USING (true)",
            f"CREATE POLICY owner_emails_insert ON owner_emails FOR INSERT WITH CHECK ({_MINE})",
            f"CREATE POLICY owner_emails_update ON owner_emails FOR UPDATE USING ({_MINE}) WITH CHECK ({_MINE})",
            f"CREATE POLICY owner_emails_delete ON owner_emails FOR DELETE USING ({_MINE})",
        ),
    ),
    Migration(
        8,
        "calls sent now and not answered yet (possibly billed if their process was stopped)",
        (
            f"""CREATE TABLE sent_calls (
                {_OWNER},
                key TEXT NOT NULL,
                sender TEXT NOT NULL,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                reserved_usd DOUBLE PRECISION NOT NULL,
                sent_at TEXT NOT NULL,
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                PRIMARY KEY (owner, key, sender)
            )""",
            *_owned("sent_calls"),
        ),
    ),
    Migration(
        9,
        "what each work's calls were billed, as billed (its budget cap over all its runs)",
        (
            f"""CREATE TABLE ledger_spend (
                {_OWNER},
                ledger TEXT NOT NULL,
                key TEXT NOT NULL,
                usd DOUBLE PRECISION NOT NULL,
                at TEXT NOT NULL
            )""",
            "CREATE INDEX ledger_spend_ledger ON ledger_spend (owner, ledger)",
            *_owned("ledger_spend"),
        ),
    ),
    Migration(
        10,
        "a work's parts, each run as its own job (a review grid's documents in team mode)",
        (
            f"""CREATE TABLE work_parts (
                {_OWNER},
                work_id TEXT NOT NULL,
                part TEXT NOT NULL,
                state TEXT NOT NULL,
                worker TEXT NOT NULL DEFAULT '',
                updated_at TEXT NOT NULL,
                result TEXT,
                error TEXT,
                PRIMARY KEY (owner, work_id, part),
                FOREIGN KEY (owner, work_id) REFERENCES work (owner, work_id) ON DELETE CASCADE
            )""",
            *_owned("work_parts"),
        ),
    ),
    Migration(
        11,
        "calls held in flight against a work's cap by its runners at once (a grid's parts)",
        ("ALTER TABLE ledger_spend ADD COLUMN hold TEXT NOT NULL DEFAULT ''",),
    ),
    Migration(
        12,
        # Each part read every result of the work (a 10,000-document grid's time grew with its
        # square). Results kept before have none: a part resumed asks its cells again, from the
        # stored replies (nothing paid again).
        "a work's results by part (a part reads its own)",
        (
            "ALTER TABLE work_results ADD COLUMN part TEXT NOT NULL DEFAULT ''",
            "CREATE INDEX work_results_part ON work_results (owner, work_id, part, seq)",
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def submit_lock(owner: str) -> str:
    """The advisory lock an owner's work submissions take in turn (hashed to its key)."""
    return f"rr.work:{owner}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


_BATCH_COLUMNS = "batch_id, provider, label, state, total, done, failed, created_at, updated_at, owner"
_RUN_COLUMNS = (
    "run_id, batch, created_at, document, question, method, COALESCE(label, method), provider, model,"
    " answer, page, input_tokens, output_tokens, cost_usd, latency_s, error, questions"
)


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


# ---- Pools: one per database and process, shared by every owner ---------------------------------


class _Shared:
    """A pool and how many open stores use it (it closes with the last)."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]]) -> None:
        self.pool = pool
        self.users = 0


_POOLS: dict[str, _Shared] = {}
_POOLS_LOCK = threading.Lock()


def _scrub(text: str, password: str | None) -> str:
    """``text`` without the password, however the driver quoted the URL or its parameters."""
    text = redact_url(text)
    return text.replace(password, "***") if password else text


# ---- The store ----------------------------------------------------------------------------------


class PostgresStore:
    """One owner's runs, call replies, batches and documents in a PostgreSQL database shared with
    other owners; safe to share between threads (each transaction takes a pooled connection)."""

    def __init__(self, url: str | None = None, owner: str = LOCAL_OWNER) -> None:
        if not owner or owner != owner.strip():
            raise ConfigError(f"the store's owner must be a name without surrounding spaces (got {owner!r})")
        self._url = postgres_url(url)
        self._owner = owner
        self._location = redact_url(self._url)
        try:
            password = conninfo_to_dict(self._url).get("password")
        except psycopg.Error as exc:
            raise ConfigError(f"{self._location} is not a PostgreSQL URL libpq can read ({exc}).") from None
        self._password = str(password) if password else None
        self._closed = False
        self._pool = self._acquire()

    @property
    def owner(self) -> str:
        """Whose rows this store reads and writes."""
        return self._owner

    @property
    def location(self) -> str:
        """The database URL, for display (without its password)."""
        return self._location

    def close(self) -> None:
        """Release this store's use of the pool (the pool closes when its last store does)."""
        with _POOLS_LOCK:
            if self._closed:
                return
            self._closed = True
            shared = _POOLS.get(self._url)
            if shared is None:
                return
            shared.users -= 1
            if shared.users <= 0:
                del _POOLS[self._url]
                shared.pool.close()

    # ---- Connections ----------------------------------------------------------------------------

    def _error(self, verb: str, exc: BaseException) -> LedgerError:
        # libpq's messages run over several lines: one line, so that the error is one line.
        reason = _scrub(" ".join(str(exc).split()) or type(exc).__name__, self._password)
        hint = (
            f" Check that the server is up and the role, password and database in {DB_ENV} are right."
            if verb == "opened"
            else ""
        )
        return LedgerError(f"The run history at {self._location} could not be {verb} ({reason}).{hint}")

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        """A direct connection (migrations, the role check); a clear error when there is none."""
        try:
            return psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise self._error("opened", exc) from None

    def _acquire(self) -> ConnectionPool[psycopg.Connection[tuple[Any, ...]]]:
        """The pool of this database, made (after checking the role and migrating) on first use."""
        with _POOLS_LOCK:
            shared = _POOLS.get(self._url)
            if shared is None:
                with self._connect() as db:
                    self._check_role(db)
                    self._migrate(db)
                pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
                    self._url,
                    min_size=1,
                    max_size=POOL_SIZE,
                    kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
                    check=ConnectionPool.check_connection,  # a connection the server dropped is replaced
                    open=False,
                    name="rr-store",
                )
                try:
                    pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 3)
                except PoolTimeout as exc:
                    pool.close()
                    raise self._error("opened", exc) from None
                shared = _POOLS[self._url] = _Shared(pool)
            shared.users += 1
            return shared.pool

    def _check_role(self, db: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Refuse a role row-level security does not apply to: every owner would see every row."""
        row = db.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if row and (row[1] or row[2]):
            what = "a superuser" if row[1] else "a role with BYPASSRLS"
            raise ConfigError(
                f"{self._location} connects as {row[0]}, {what}: row-level security would not apply to it and"
                " every user would see every other's runs. Connect as an ordinary role that owns the database"
                " (NOSUPERUSER NOBYPASSRLS; see the README's team mode)."
            )

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """One transaction as this store's owner, committed whole or rolled back.

        Whatever runs on the connection inside sees only this owner's rows (row-level security
        and ``rr.owner``, set for this transaction only). For the store's own queries, and for
        maintenance and tests that query the tables directly.
        """
        if self._closed:
            raise LedgerError(f"The run history at {self._location} was closed.")
        try:
            with self._pool.connection(timeout=CONNECT_TIMEOUT_S * 3) as db, db.transaction():
                db.execute("SELECT set_config(%s, %s, true)", (OWNER_SETTING, self._owner))
                yield db
        except (BatchConflict, LedgerError, ConfigError):
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error("read or written", exc) from exc

    # ---- Migrations -----------------------------------------------------------------------------

    def _migrate(self, db: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Apply the migrations the database lacks, each in one transaction under the lock."""
        try:
            for migration in MIGRATIONS:
                with db.transaction():
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
                        " applied_at TEXT NOT NULL, description TEXT NOT NULL)"
                    )
                    version = self._version(db)
                    self._refuse_newer(version)
                    if migration.version <= version:
                        continue  # applied already (maybe by a replica that held the lock first)
                    for statement in migration.statements:
                        db.execute(statement)
                    db.execute(
                        "INSERT INTO schema_version (version, applied_at, description) VALUES (%s, %s, %s)",
                        (migration.version, _now(), migration.description),
                    )
            with db.transaction():
                self._refuse_newer(self._version(db))
        except psycopg.Error as exc:
            raise self._error("prepared", exc) from None

    @staticmethod
    def _version(db: psycopg.Connection[tuple[Any, ...]]) -> int:
        row = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"The run history at {self._location} is at schema version {version}, written by a newer"
                f" R&R Studio (this one knows up to version {SCHEMA_VERSION}). Update R&R Studio."
            )

    def schema_version(self) -> int:
        """The last migration applied to the database."""
        with self.transaction() as db:
            return self._version(db)

    # ---- Runs ------------------------------------------------------------------------------------

    def save_batch(self, traces: Sequence[RunTrace], batch: str | None = None) -> str:
        """Store the traces of one question (its methods) under a new batch id (or ``batch``), atomically; a run
        saved again replaces the owner's earlier row (and is listed as the newest)."""
        batch = batch or uuid.uuid4().hex[:12]
        rows = [
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
                trace.usage.prompt_tokens,
                trace.usage.output_tokens,
                trace.cost_usd,
                trace.latency_s,
                trace.error,
                trace.cache_key,
                json.dumps(trace.to_dict(), ensure_ascii=False),
            )
            for trace in traces
        ]
        with self.transaction() as db, db.cursor() as cursor:
            cursor.execute("DELETE FROM runs WHERE run_id = ANY(%s)", ([row[0] for row in rows],))
            cursor.executemany(
                "INSERT INTO runs (run_id, batch, created_at, document, document_sha256, question, questions,"
                " method, label, provider, model, answer, page, input_tokens, output_tokens, cost_usd,"
                " latency_s, error, cache_key, trace)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                rows,
            )
        return batch

    def list(self, limit: int = 200, offset: int = 0) -> list[StoredRun]:
        """The newest runs first (``offset``: see ``RunStore.list``)."""
        with self.transaction() as db:
            rows = db.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT %s OFFSET %s",
                (limit, max(0, offset)),
            ).fetchall()
        return [StoredRun(*row) for row in rows]

    def get(self, run_id: str) -> RunTrace | None:
        """The full trace of a run, or None if it is gone (or another owner's)."""
        with self.transaction() as db:
            row = db.execute("SELECT trace FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        return self._trace(run_id, row[0]) if row else None

    def get_runs(self, run_ids: Iterable[str]) -> builtins.list[RunTrace]:
        """The full traces of these runs, in the order asked (each once; those gone left out), in one query."""
        ids = builtins.list(dict.fromkeys(run_ids))
        if not ids:
            return []
        with self.transaction() as db:
            found = dict(
                db.execute("SELECT run_id, trace FROM runs WHERE run_id = ANY(%s)", (ids,)).fetchall()
            )
        return [self._trace(run_id, found[run_id]) for run_id in ids if run_id in found]

    def _trace(self, run_id: str, text: str) -> RunTrace:
        try:
            data = json.loads(text)
            data.setdefault("run_id", run_id)
            return RunTrace.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerError(f"Run {run_id} in {self._location} is unreadable ({exc}).") from exc

    def delete(self, run_ids: Iterable[str]) -> int:
        """Delete runs, all in one transaction; returns how many existed."""
        ids = builtins.list(dict.fromkeys(run_ids))
        if not ids:
            return 0
        with self.transaction() as db:
            return db.execute("DELETE FROM runs WHERE run_id = ANY(%s)", (ids,)).rowcount

    def count(self) -> int:
        """How many runs are stored."""
        with self.transaction() as db:
            row = db.execute("SELECT COUNT(*) FROM runs").fetchone()
        return int(row[0]) if row else 0

    # ---- Call replies ----------------------------------------------------------------------------

    def find(self, key: str) -> CachedCall | None:
        """The stored reply of a call, by its cache key."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT response, usage, model, sent, mode, ledger, accounted FROM calls WHERE cache_key = %s",
                (key,),
            ).fetchone()
        if not row:
            return None
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

    def put(self, key: str, call: CachedCall) -> None:
        """Keep a call's reply under its key (the first reply for a key stays)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO calls (cache_key, created_at, model, response, usage, sent, mode, ledger, accounted)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (owner, cache_key) DO NOTHING",
                (
                    key,
                    _now(),
                    call.model,
                    call.text,
                    json.dumps(asdict(call.usage)),
                    json.dumps({"temperature": call.temperature}) if call.temperature_known else None,
                    call.mode,
                    call.ledger,
                    call.accounted,
                ),
            )

    def account(self, ledger: str) -> int:
        """Mark a ledger's replies as recorded (its work finished); how many were not yet."""
        if not ledger:
            return 0
        with self.transaction() as db:
            return db.execute(
                "UPDATE calls SET accounted = TRUE WHERE ledger = %s AND NOT accounted", (ledger,)
            ).rowcount

    def add_spend(self, ledger: str, key: str, usd: float) -> None:
        """Record what a call of ``ledger``'s work was billed (or may have been), as it is billed."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO ledger_spend (ledger, key, usd, at) VALUES (%s,%s,%s,%s)",
                (ledger, key, usd, _now()),
            )

    def ledger_spent(self, ledger: str) -> float:
        """What ``ledger``'s work has been billed over all its runs."""
        if not ledger:
            return 0.0
        with self.transaction() as db:
            row = db.execute(
                "SELECT COALESCE(SUM(usd), 0) FROM ledger_spend WHERE ledger = %s", (ledger,)
            ).fetchone()
        return float(row[0]) if row else 0.0

    def hold_spend(self, ledger: str, hold: str, usd: float, cap_usd: float) -> bool:
        """Hold a call's worst case against the work's cap, atomically (see ``CallCache``)."""
        with self.transaction() as db:
            db.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"rr-ledger:{self._owner}:{ledger}",),
            )
            row = db.execute(
                "SELECT COALESCE(SUM(usd), 0) FROM ledger_spend WHERE ledger = %s", (ledger,)
            ).fetchone()
            if float(row[0] if row else 0.0) + usd > cap_usd + 1e-9:
                return False
            db.execute(
                "INSERT INTO ledger_spend (ledger, key, usd, at, hold) VALUES (%s,'',%s,%s,%s)",
                (ledger, usd, _now(), hold),
            )
        return True

    def settle_hold(self, ledger: str, hold: str, key: str, usd: float) -> None:
        """What the held call holds becomes what it was billed."""
        with self.transaction() as db:
            db.execute(
                "UPDATE ledger_spend SET usd = %s, key = %s, at = %s WHERE ledger = %s AND hold = %s",
                (usd, key, _now(), ledger, hold),
            )

    def calls_cached(self) -> int:
        """How many call replies are kept."""
        with self.transaction() as db:
            row = db.execute("SELECT COUNT(*) FROM calls").fetchone()
        return int(row[0]) if row else 0

    # ---- Provider batches ------------------------------------------------------------------------

    def add_batch(self, batch: BatchRecord, keys: Sequence[str]) -> None:
        """Record a submitted batch and one waiting item per call key, atomically.

        Raises ``BatchConflict`` if a key is still waiting in another batch (or twice in this
        one), or the batch is already recorded: then nothing is recorded. Two processes adding
        the same call at once: the unique index on waiting items lets one through.
        """
        if batch.owner not in ("", self._owner):
            raise ValueError(f"a batch of {batch.owner!r} cannot be recorded by the store of {self._owner!r}")
        unique = builtins.list(dict.fromkeys(keys))
        if len(unique) != len(keys):
            raise BatchConflict(
                f"Batch {batch.batch_id} lists {len(keys) - len(unique)} call(s) twice; a call is submitted once."
            )
        if batch.total != len(unique):
            raise ValueError(f"batch {batch.batch_id} says {batch.total} items but lists {len(unique)} calls")
        created = batch.created_at or _now()
        try:
            with self.transaction() as db:
                known = db.execute("SELECT 1 FROM batches WHERE batch_id = %s", (batch.batch_id,)).fetchone()
                if known:
                    raise BatchConflict(
                        f"Batch {batch.batch_id} is already recorded; its calls were not added again."
                    )
                waiting = db.execute(
                    "SELECT i.cache_key, b.batch_id, b.label FROM batch_items i JOIN batches b USING (owner, batch_id)"
                    " WHERE i.state = 'submitted' AND i.cache_key = ANY(%s) ORDER BY b.seq",
                    (unique,),
                ).fetchall()
                if waiting:
                    key, other, label = waiting[0]
                    more = f" (and {len(waiting) - 1} more)" if len(waiting) > 1 else ""
                    raise BatchConflict(
                        f"Call {key[:16]}…{more} is still waiting in batch {other} ({label}); it is not"
                        f" submitted again in batch {batch.batch_id} until that batch settles it."
                    )
                db.execute(
                    "INSERT INTO batches (batch_id, provider, label, state, total, done, failed, created_at,"
                    " updated_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
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
                    ),
                )
                db.execute(
                    "INSERT INTO batch_items (batch_id, cache_key) SELECT %s, k FROM unnest(%s::text[]) AS k",
                    (batch.batch_id, unique),
                )
        except LedgerError as exc:
            # Another process recorded the batch, or one of its calls, between the checks above
            # and the inserts: the database's unique keys refused this one whole.
            if isinstance(exc.__cause__, pg_errors.UniqueViolation):
                raise BatchConflict(
                    f"Batch {batch.batch_id}: a call of it (or the batch itself) was recorded by another process"
                    " at the same moment; nothing of this batch was recorded, and no call is submitted twice."
                ) from None
            raise

    def pending_batch(self, key: str) -> BatchRecord | None:
        """The batch this key's call is still waiting in (its item neither done nor released)."""
        columns = ", ".join(f"b.{c.strip()}" for c in _BATCH_COLUMNS.split(","))
        with self.transaction() as db:
            row = db.execute(
                f"SELECT {columns} FROM batch_items i JOIN batches b USING (owner, batch_id)"
                " WHERE i.cache_key = %s AND i.state = 'submitted'",
                (key,),
            ).fetchone()
        return _batch(row) if row else None

    def confirm_batch(self, marker: str, batch_id: str) -> None:
        """A "submitting" batch recorded under ``marker`` is the provider's ``batch_id`` (see
        ``CallCache.confirm_batch``): copied under that id, its items moved, the first removed."""
        with self.transaction() as db:
            moved = db.execute(
                "INSERT INTO batches (batch_id, provider, label, state, total, done, failed, created_at,"
                " updated_at) SELECT %s, provider, label, 'submitted', total, done, failed, created_at, %s"
                " FROM batches WHERE batch_id = %s AND state = 'submitting'",
                (batch_id, _now(), marker),
            ).rowcount
            if not moved:
                raise self._no_batch(marker)
            db.execute("UPDATE batch_items SET batch_id = %s WHERE batch_id = %s", (batch_id, marker))
            db.execute("DELETE FROM batches WHERE batch_id = %s", (marker,))

    def update_batch(
        self, batch_id: str, *, state: str, done: int | None = None, failed: int | None = None
    ) -> None:
        """Record a batch's new state, and its counts where given."""
        if state not in BATCH_STATES:
            raise ValueError(f"batch state {state!r} is not one of {', '.join(BATCH_STATES)}")
        if min(done or 0, failed or 0) < 0:
            raise ValueError("a batch's counts cannot be negative")
        with self.transaction() as db:
            changed = db.execute(
                "UPDATE batches SET state = %s, done = COALESCE(%s, done), failed = COALESCE(%s, failed),"
                " updated_at = %s WHERE batch_id = %s",
                (state, done, failed, _now(), batch_id),
            ).rowcount
            if not changed:
                raise self._no_batch(batch_id)

    def settle_items(self, batch_id: str, outcomes: Mapping[str, str]) -> None:
        """Settle items by call key (see ``SQLiteStore.settle_items``): "done" needs a stored reply;
        the batch's done and failed counts are recounted from its items."""
        wrong = sorted({o for o in outcomes.values() if o not in ITEM_OUTCOMES})
        if wrong:
            raise ValueError(f"item outcome(s) {', '.join(wrong)} not one of {', '.join(ITEM_OUTCOMES)}")
        now = _now()
        with self.transaction() as db:
            if not db.execute("SELECT 1 FROM batches WHERE batch_id = %s", (batch_id,)).fetchone():
                raise self._no_batch(batch_id)
            done = [key for key, outcome in outcomes.items() if outcome == "done"]
            stored = {
                row[0]
                for row in db.execute(
                    "SELECT cache_key FROM calls WHERE cache_key = ANY(%s)", (done,)
                ).fetchall()
            }
            missing = [key for key in done if key not in stored]
            if missing:
                raise LedgerError(
                    f"Batch {batch_id}: {len(missing)} item(s) marked done have no stored reply"
                    f" (first: {missing[0][:16]}…); nothing was settled."
                )
            db.execute(
                "UPDATE batch_items i SET state = o.outcome, settled_at = %s"
                " FROM unnest(%s::text[], %s::text[]) AS o(key, outcome)"
                " WHERE i.batch_id = %s AND i.cache_key = o.key AND i.state = 'submitted'",
                (now, builtins.list(outcomes), builtins.list(outcomes.values()), batch_id),
            )
            db.execute(
                "UPDATE batches b SET"
                " done = (SELECT COUNT(*) FROM batch_items i WHERE i.owner = b.owner"
                " AND i.batch_id = b.batch_id AND i.state = 'done'),"
                " failed = (SELECT COUNT(*) FROM batch_items i WHERE i.owner = b.owner"
                " AND i.batch_id = b.batch_id AND i.state = ANY(%s)),"
                " updated_at = %s WHERE b.batch_id = %s",
                (builtins.list(RELEASED_OUTCOMES), now, batch_id),
            )

    def open_batches(self) -> builtins.list[BatchRecord]:
        """Batches still submitted or in progress, oldest first (a restarted process polls these)."""
        with self.transaction() as db:
            rows = db.execute(
                f"SELECT {_BATCH_COLUMNS} FROM batches WHERE state = ANY(%s) ORDER BY created_at, seq",
                (builtins.list(OPEN_BATCH_STATES),),
            ).fetchall()
        return [_batch(row) for row in rows]

    def batches(self, limit: int = 50) -> builtins.list[BatchRecord]:
        """The newest batches first (the progress view)."""
        with self.transaction() as db:
            rows = db.execute(
                f"SELECT {_BATCH_COLUMNS} FROM batches ORDER BY created_at DESC, seq DESC LIMIT %s", (limit,)
            ).fetchall()
        return [_batch(row) for row in rows]

    def _no_batch(self, batch_id: str) -> LedgerError:
        return LedgerError(f"No batch {batch_id} is recorded in the run history at {self._location}.")

    # ---- Calls sent now, not answered yet -------------------------------------------------------

    def mark_sent(self, call: SentCall) -> None:
        """Record a call about to be sent now (its reply not stored yet)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sent_calls (key, sender, provider, model, reserved_usd, sent_at)"
                " VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (owner, key, sender) DO UPDATE SET"
                " reserved_usd = EXCLUDED.reserved_usd, sent_at = EXCLUDED.sent_at",
                (call.key, call.sender, call.provider, call.model, call.reserved_usd, call.sent_at or _now()),
            )

    def clear_sent(self, key: str, sender: str) -> None:
        """The call ``sender`` sent under ``key`` was answered."""
        with self.transaction() as db:
            db.execute("DELETE FROM sent_calls WHERE key = %s AND sender = %s", (key, sender))

    def take_unanswered(
        self, keys: Sequence[str], sender: str, gone: Callable[[SentCall], bool]
    ) -> builtins.list[SentCall]:
        """Calls under ``keys`` a sender now ``gone`` sent and never saw answered, handed to ``sender``."""
        with self.transaction() as db:
            rows = db.execute(
                f"SELECT {_SENT_COLUMNS}, seq FROM sent_calls WHERE sender != %s AND key = ANY(%s)"
                " ORDER BY sent_at, seq FOR UPDATE",
                (sender, builtins.list(dict.fromkeys(keys))),
            ).fetchall()
            left = [call for call in (_sent(row[:-1]) for row in rows) if gone(call)]
            if left:
                db.execute(
                    "DELETE FROM sent_calls WHERE (key, sender) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                    ([c.key for c in left], [c.sender for c in left]),
                )
        return left

    def unanswered(self) -> builtins.list[SentCall]:
        """Every call sent and never answered, oldest first."""
        with self.transaction() as db:
            rows = db.execute(f"SELECT {_SENT_COLUMNS} FROM sent_calls ORDER BY sent_at, seq").fetchall()
        return [_sent(row) for row in rows]

    # ---- Documents -------------------------------------------------------------------------------

    def put_document(self, data: bytes, name: str) -> str:
        """Keep the bytes once per content and owner (the first name given stays); their sha256."""
        digest = hashlib.sha256(data).hexdigest()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO documents (sha256, name, size, created_at, data) VALUES (%s,%s,%s,%s,%s)"
                " ON CONFLICT (owner, sha256) DO NOTHING",
                (digest, name, len(data), _now(), data),
            )
        return digest

    def get_document(self, sha256: str) -> bytes | None:
        """The bytes with this digest, or None."""
        with self.transaction() as db:
            row = db.execute("SELECT data FROM documents WHERE sha256 = %s", (sha256,)).fetchone()
        return bytes(row[0]) if row else None

    def document_name(self, sha256: str) -> str | None:
        """The file name the bytes were first kept under, or None."""
        with self.transaction() as db:
            row = db.execute("SELECT name FROM documents WHERE sha256 = %s", (sha256,)).fetchone()
        return str(row[0]) if row else None

    # ---- ended sign-ins ----

    def end_sign_in(self, sign_in: str) -> None:
        """Record that this sign-in ended (signing out)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sign_outs (sign_in, created_at) VALUES (%s,%s) ON CONFLICT (owner, sign_in) DO NOTHING",
                (sign_in, _now()),
            )

    def sign_in_ended(self, sign_in: str) -> bool:
        """Whether this sign-in was ended."""
        with self.transaction() as db:
            row = db.execute("SELECT 1 FROM sign_outs WHERE sign_in = %s", (sign_in,)).fetchone()
        return row is not None

    def note_email(self, email: str) -> None:
        """Record the email the store's owner signed in with (its latest)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO owner_emails (email, seen_at) VALUES (%s,%s)"
                " ON CONFLICT (owner) DO UPDATE SET email = EXCLUDED.email, seen_at = EXCLUDED.seen_at",
                (email.strip().lower(), _now()),
            )

    def owners_with_email(self, email: str) -> builtins.list[str]:
        """Every owner who signed in with this email (case aside): the policy lets every owner read them."""
        with self.transaction() as db:
            rows = db.execute(
                "SELECT owner FROM owner_emails WHERE email = %s ORDER BY owner", (email.strip().lower(),)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def put_reading(self, sha256: str, tokenizer: str, data: bytes) -> None:
        """Keep what reading a document gave (its pages, counted by ``tokenizer``); replaces an older one."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO readings (sha256, tokenizer, created_at, data) VALUES (%s,%s,%s,%s)"
                " ON CONFLICT (owner, sha256, tokenizer)"
                " DO UPDATE SET created_at = EXCLUDED.created_at, data = EXCLUDED.data",
                (sha256, tokenizer, _now(), data),
            )

    def get_reading(self, sha256: str, tokenizer: str) -> bytes | None:
        """The reading kept for this document and tokenizer, or None."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT data FROM readings WHERE sha256 = %s AND tokenizer = %s", (sha256, tokenizer)
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
        with self.transaction() as db:
            if calls_key:
                self._lock_submits(db)
                row = db.execute(
                    "SELECT work_id FROM work WHERE kind = %s AND calls_key = %s AND NOT cancel_requested"
                    " AND state IN ('queued', 'running') ORDER BY created_at DESC LIMIT 1",
                    (kind, calls_key),
                ).fetchone()
                if row is not None:
                    return str(row[0])
            db.execute(
                "INSERT INTO work (work_id, kind, title, state, spec, total, created_at, updated_at, calls_key)"
                " VALUES (%s,%s,%s,'queued',%s,%s,%s,%s,%s)",
                (work_id, kind, title, json.dumps(dict(spec)), total, now, now, calls_key),
            )
            if parts:
                with db.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO work_parts (work_id, part, state, updated_at) VALUES (%s,%s,'queued',%s)",
                        [(work_id, part, now) for part in parts],
                    )
            if enqueue is not None:
                enqueue(db, work_id, tuple(parts))
        return work_id

    def _lock_submits(self, db: psycopg.Connection[tuple[Any, ...]]) -> None:
        """One submit or resume at a time per owner (two replicas, two tabs): the lock is
        released when the transaction ends, after its row is committed."""
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (submit_lock(self._owner),))

    def get_work(self, work_id: str) -> WorkRecord | None:
        """The work with this id, or None."""
        with self.transaction() as db:
            row = db.execute(f"SELECT {WORK_COLUMNS} FROM work WHERE work_id = %s", (work_id,)).fetchone()
        return work_from_row(row) if row else None

    def list_work(self, limit: int = 50, kind: str | None = None) -> builtins.list[WorkRecord]:
        """The newest work first."""
        with self.transaction() as db:
            if kind is None:
                rows = db.execute(
                    f"SELECT {WORK_COLUMNS} FROM work ORDER BY seq DESC LIMIT %s", (limit,)
                ).fetchall()
            else:
                rows = db.execute(
                    f"SELECT {WORK_COLUMNS} FROM work WHERE kind = %s ORDER BY seq DESC LIMIT %s",
                    (kind, limit),
                ).fetchall()
        return [work_from_row(r) for r in rows]

    def finished_work(self, kind: str, calls_key: str) -> WorkRecord | None:
        """The newest done work of this kind with this calls key, or None."""
        if not calls_key:
            return None
        with self.transaction() as db:
            row = db.execute(
                f"SELECT {WORK_COLUMNS} FROM work WHERE kind = %s AND calls_key = %s AND state = 'done'"
                " ORDER BY seq DESC LIMIT 1",
                (kind, calls_key),
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
        sets = ", ".join("attempts = attempts + 1" if n == "attempts" else f"{n} = %s" for n in names)
        with self.transaction() as db:
            db.execute(f"UPDATE work SET {sets} WHERE work_id = %s", (*values, work_id))

    def request_cancel(self, work_id: str) -> bool:
        """Ask the work to stop; False when it is not open. Queued work ends at once, and so do
        its parts not started (a work whose parts none runs ends cancelled)."""
        now = _now()
        with self.transaction() as db:
            db.execute("SELECT 1 FROM work WHERE work_id = %s FOR UPDATE", (work_id,))
            db.execute(
                "UPDATE work_parts SET state = 'cancelled', updated_at = %s WHERE work_id = %s AND state = 'queued'",
                (now, work_id),
            )
            changed = db.execute(
                "UPDATE work SET cancel_requested = TRUE, updated_at = %s,"
                " state = CASE WHEN state = 'queued' OR (EXISTS (SELECT 1 FROM work_parts p"
                " WHERE p.work_id = work.work_id) AND NOT EXISTS (SELECT 1 FROM work_parts p"
                " WHERE p.work_id = work.work_id AND p.state = 'running')) THEN 'cancelled' ELSE state END"
                " WHERE work_id = %s AND state IN ('queued', 'running')",
                (now, work_id),
            ).rowcount
        return changed > 0

    def reopen_work(self, work_id: str, *, enqueue: Enqueue | None = None) -> bool:
        """Queue ended work again (stop request cleared); False when it is open or unknown, or
        when other open work makes the same calls (it would run them twice at once); ``enqueue``: see
        ``WorkStore``."""
        with self.transaction() as db:
            self._lock_submits(db)
            changed = db.execute(
                "UPDATE work SET state = 'queued', cancel_requested = FALSE, error = NULL, updated_at = %s"
                " WHERE work_id = %s AND state NOT IN ('queued', 'running')"
                " AND (calls_key = '' OR NOT EXISTS (SELECT 1 FROM work AS other WHERE other.owner = work.owner"
                " AND other.kind = work.kind AND other.calls_key = work.calls_key AND NOT other.cancel_requested"
                " AND other.state IN ('queued', 'running') AND other.work_id <> work.work_id))",
                (_now(), work_id),
            ).rowcount
            if not changed:
                return False
            reopened = [
                str(r[0])
                for r in db.execute(
                    "UPDATE work_parts SET state = 'queued', error = NULL, updated_at = %s"
                    " WHERE work_id = %s AND state <> 'done' RETURNING part",
                    (_now(), work_id),
                ).fetchall()
            ]
            if enqueue is not None:
                enqueue(db, work_id, sorted(reopened))
        return True

    def work_parts(self, work_id: str) -> builtins.list[WorkPart]:
        """A work's parts (none: it runs as one job)."""
        with self.transaction() as db:
            rows = db.execute(
                f"SELECT {PART_COLUMNS} FROM work_parts WHERE work_id = %s ORDER BY part", (work_id,)
            ).fetchall()
        return [part_from_row(r) for r in rows]

    def start_part(self, work_id: str, part: str, worker: str) -> None:
        """A runner takes the part up: the part and its work are running."""
        now = _now()
        with self.transaction() as db:
            db.execute("SELECT 1 FROM work WHERE work_id = %s FOR UPDATE", (work_id,))
            db.execute(
                "UPDATE work_parts SET state = 'running', worker = %s, updated_at = %s"
                " WHERE work_id = %s AND part = %s",
                (worker, now, work_id, part),
            )
            db.execute(
                "UPDATE work SET state = 'running', worker = %s, updated_at = %s, attempts = attempts + 1,"
                " error = NULL WHERE work_id = %s AND state IN ('queued', 'running')",
                (worker, now, work_id),
            )

    def touch_part(self, work_id: str, part: str) -> None:
        """The part's runner is alive (its lease, and its work's, renewed)."""
        now = _now()
        with self.transaction() as db:
            db.execute(
                "UPDATE work_parts SET updated_at = %s WHERE work_id = %s AND part = %s", (now, work_id, part)
            )
            db.execute("UPDATE work SET updated_at = %s WHERE work_id = %s", (now, work_id))

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
        with self.transaction() as db:
            db.execute("SELECT 1 FROM work WHERE work_id = %s FOR UPDATE", (work_id,))
            changed = db.execute(
                "UPDATE work_parts SET state = %s, result = %s, error = %s, updated_at = %s"
                " WHERE work_id = %s AND part = %s AND state NOT IN ('done', 'failed', 'cancelled')",
                (state, json.dumps(dict(result)) if result is not None else None, error, now, work_id, part),
            ).rowcount
            rows = db.execute(
                f"SELECT {PART_COLUMNS} FROM work_parts WHERE work_id = %s ORDER BY part", (work_id,)
            ).fetchall()
            parts = [part_from_row(r) for r in rows]
            if state == "queued":
                if not any(p.state == "running" for p in parts):
                    db.execute(
                        "UPDATE work SET state = 'queued', updated_at = %s WHERE work_id = %s AND state = 'running'",
                        (now, work_id),
                    )
                return None
        return parts if changed and all(p.ended for p in parts) else None

    def count_results(self, work_id: str) -> int:
        """How many results the work has kept."""
        with self.transaction() as db:
            row = db.execute("SELECT count(*) FROM work_results WHERE work_id = %s", (work_id,)).fetchone()
        return int(row[0]) if row else 0

    def add_results(
        self, work_id: str, results: Sequence[tuple[str, Mapping[str, Any]]], part: str = ""
    ) -> None:
        """Keep results under their keys (a key kept again is replaced, and moves last)."""
        if not results:
            return
        with self.transaction() as db:
            for key, data in results:
                db.execute("DELETE FROM work_results WHERE work_id = %s AND result_key = %s", (work_id, key))
                db.execute(
                    "INSERT INTO work_results (work_id, result_key, data, part) VALUES (%s,%s,%s,%s)",
                    (work_id, key, json.dumps(dict(data)), part),
                )

    def work_results(self, work_id: str) -> builtins.list[dict[str, Any]]:
        """The results kept so far, in the order they arrived."""
        with self.transaction() as db:
            rows = db.execute(
                "SELECT data FROM work_results WHERE work_id = %s ORDER BY seq", (work_id,)
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def iter_work_results(
        self, work_id: str, page: int = 500, part: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The results kept so far (``part``: that part's only), in the order they arrived, read
        ``page`` at a time."""
        after = 0
        mine = "" if part is None else " AND part = %s"
        while True:
            with self.transaction() as db:
                rows = db.execute(
                    f"SELECT seq, data FROM work_results WHERE work_id = %s{mine} AND seq > %s ORDER BY seq LIMIT %s",
                    (work_id, *(() if part is None else (part,)), after, page),
                ).fetchall()
            yield from (json.loads(r[1]) for r in rows)
            if len(rows) < page:
                return
            after = int(rows[-1][0])

    # ---- Review decisions --------------------------------------------------------------------------

    def put_decision(self, decision: ReviewDecision) -> ReviewDecision:
        """Keep a decision as the store's owner, now (replacing the last one on that cell)."""
        kept = replace(decision, owner=self._owner, decided_at=_now())
        with self.transaction() as db:
            db.execute(
                "INSERT INTO review_decisions (document_sha256, question_key, question, decision, role, document,"
                " answer, page, quote, decided_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
                " ON CONFLICT (owner, document_sha256, question_key) DO UPDATE SET question = EXCLUDED.question,"
                " decision = EXCLUDED.decision, role = EXCLUDED.role, document = EXCLUDED.document,"
                " answer = EXCLUDED.answer, page = EXCLUDED.page, quote = EXCLUDED.quote,"
                " decided_at = EXCLUDED.decided_at",
                (
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
        if not wanted:
            return []
        with self.transaction() as db:
            rows = db.execute(
                f"SELECT {DECISION_COLUMNS} FROM review_decisions WHERE document_sha256 = ANY(%s)"
                " ORDER BY decided_at, seq",
                (wanted,),
            ).fetchall()
        return [decision_from_row(r) for r in rows]

    def delete_decision(self, document_sha256: str, question: str) -> bool:
        """Forget a decision (undo); False when there was none."""
        with self.transaction() as db:
            changed = db.execute(
                "DELETE FROM review_decisions WHERE document_sha256 = %s AND question_key = %s",
                (document_sha256, " ".join(question.lower().split())),
            ).rowcount
        return changed > 0


def close_pools() -> None:
    """Close every pool of this process (its stores cannot be used afterwards): at shutdown, and
    between tests that drop their database."""
    with _POOLS_LOCK:
        pools = builtins.list(_POOLS.values())
        _POOLS.clear()
    for shared in pools:
        shared.pool.close()
