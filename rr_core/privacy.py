"""Where a single user's history is kept, and whether they were told: the first-run notice.

The embedded store is one SQLite file that holds every prompt (the pages' text) unencrypted,
shared by everyone who runs the app as the same OS user. The first time the app opens on such a
file with no runs in it, it says where the file is and offers a per-project file instead. That
the notice was seen is kept in a small file beside the store, not in a cookie: whoever reads
this store was told, whichever browser they use.
"""

from __future__ import annotations

from pathlib import Path

from rr_core.errors import LedgerError
from rr_core.store import Store

PROJECT_STORE = Path(".rr_studio") / "runs.sqlite3"  # under the working directory
NOTICE_SUFFIX = ".notice-seen"


def local_file(location: str) -> Path | None:
    """The store's file when it is a file on this machine (None: a server's URL, or in memory)."""
    if not location or location == ":memory:" or "://" in location:
        return None
    return Path(location)


def notice_record(location: str) -> Path | None:
    """The file beside the store that says the notice was seen (None: no file to keep it beside)."""
    store_file = local_file(location)
    return store_file.with_name(store_file.name + NOTICE_SUFFIX) if store_file is not None else None


def notice_due(store: Store) -> bool:
    """Whether to show the first-run notice: a store file on this machine, no runs of its owner
    in it yet, and no record of the notice having been seen."""
    record = notice_record(store.location)
    return record is not None and not record.exists() and store.count() == 0


def dismiss_notice(location: str) -> bool:
    """Record beside the store that the notice was seen (False: it could not be written, so the
    notice may show again next time)."""
    record = notice_record(location)
    if record is None:
        return True
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text("The first-run notice (where this history is kept) was seen.\n", encoding="utf-8")
    except OSError:
        return False
    return True


def project_store(folder: Path) -> Path:
    """The per-project store under ``folder`` (``.rr_studio/runs.sqlite3``), its folder made with
    a ``.gitignore`` so that a project kept in git does not commit its prompts (``LedgerError``
    when the folder cannot be made)."""
    path = folder / PROJECT_STORE
    ignore = path.parent / ".gitignore"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not ignore.exists():
            ignore.write_text(
                "# R&R Studio's history of this project: prompts in clear text, never committed.\n*\n"
            )
    except OSError as exc:
        raise LedgerError(f"The project's history folder {path.parent} could not be made ({exc}).") from exc
    return path
