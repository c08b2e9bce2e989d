"""The store: runs, call replies and provider batches, documents — each owned, behind protocols.

Callers are typed against the seams in ``base.py`` (``Store``, ``RunStore``, ``CallCache``,
``DocumentStore``) and get a store from ``open_store``, which picks the backend from a path or
URL (``$RR_STUDIO_DB`` when none is given): SQLite (``sqlite.py``), the embedded default, or
PostgreSQL (``postgres.py``, team mode: imported only when asked for). See ``config.py`` for the
forms accepted.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from rr_core.store.base import (
    BATCH_STATES,
    ITEM_OUTCOMES,
    LOCAL_OWNER,
    OPEN_BATCH_STATES,
    BatchRecord,
    CachedCall,
    CallCache,
    DocumentStore,
    Enqueue,
    ReviewDecision,
    ReviewDecisionStore,
    RunStore,
    SentCall,
    Store,
    StoredRun,
    WorkPart,
    WorkRecord,
    WorkStore,
)
from rr_core.store.config import (
    DB_ENV,
    DEFAULT_PATH,
    SUPPORTED_FORMS,
    is_postgres,
    redact_url,
    sqlite_path,
)
from rr_core.store.sqlite import MIGRATIONS, SCHEMA_VERSION, SQLiteStore

__all__ = [
    "BATCH_STATES",
    "DB_ENV",
    "DEFAULT_PATH",
    "ITEM_OUTCOMES",
    "LOCAL_OWNER",
    "MIGRATIONS",
    "OPEN_BATCH_STATES",
    "SCHEMA_VERSION",
    "SUPPORTED_FORMS",
    "BatchRecord",
    "CachedCall",
    "CallCache",
    "DocumentStore",
    "ReviewDecision",
    "ReviewDecisionStore",
    "RunStore",
    "SQLiteStore",
    "SentCall",
    "Store",
    "StoredRun",
    "Enqueue",
    "WorkPart",
    "WorkRecord",
    "WorkStore",
    "close_stores",
    "default_path",
    "is_postgres",
    "open_store",
    "redact_url",
]


def default_path() -> Path:
    """The SQLite file of the default store: ``$RR_STUDIO_DB`` or ``~/.rr_studio/runs.sqlite3``.

    Raises ``ConfigError`` when ``$RR_STUDIO_DB`` names a store that is not a SQLite file.
    """
    return sqlite_path(None)


def open_store(url: str | Path | None = None, *, owner: str = LOCAL_OWNER) -> Store:
    """The store at ``url`` (``None``: ``$RR_STUDIO_DB``, else the default file), as ``owner``.

    A path, ``sqlite:///absolute/path``, ``sqlite:relative/path`` or ``:memory:``: SQLite.
    ``postgresql://…`` or ``postgres://…``: PostgreSQL (team mode; ``LedgerError`` when the
    server cannot be reached, without the password). Any other ``scheme://``: ``ConfigError``.
    """
    store: Store
    if is_postgres(url):
        from rr_core.store.postgres import PostgresStore

        store = PostgresStore(None if url is None else str(url), owner=owner)
    else:
        store = SQLiteStore(sqlite_path(url), owner=owner)
    _OPENED.add(store)
    return store


# The stores ``open_store`` gave out that are still referenced somewhere (see ``close_stores``).
_OPENED: weakref.WeakSet[Store] = weakref.WeakSet()


def close_stores() -> None:
    """Close every store ``open_store`` gave out that is still alive, at a process's end.

    A store held in a reference cycle is otherwise closed only when the collector finds it,
    at interpreter exit: a command that ends by freezing its objects out of the collector's
    sight (``python -m rr_core``) calls this first, so its SQLite file still has its WAL
    written back and removed, as a store closed any other way."""
    for store in list(_OPENED):
        store.close()
