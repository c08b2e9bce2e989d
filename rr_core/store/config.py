"""Where the store is: ``RR_STUDIO_DB`` (or the value given) read as a path or a URL.

Accepted: a file path, ``sqlite:///absolute/path``, ``sqlite:relative/path`` and ``:memory:``
(SQLite, the embedded default), and ``postgresql://`` or ``postgres://`` (team mode: the
PostgreSQL store, ``postgres.py``). Any other ``scheme://`` is refused, rather than taken for a
file name. A URL is never shown with its password.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rr_core.errors import ConfigError

DB_ENV = "RR_STUDIO_DB"
DEFAULT_PATH = Path.home() / ".rr_studio" / "runs.sqlite3"
MEMORY = ":memory:"  # a SQLite store that lives as long as the process
SUPPORTED_FORMS = (
    "a file path, sqlite:///absolute/path or sqlite:relative/path (SQLite), "
    "or postgresql://user@host:port/database (PostgreSQL, team mode)"
)
_POSTGRES_SCHEMES = {"postgresql", "postgres"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_SECRET_PARAMETER = re.compile(r"(?i)\b(password|passwd|pwd|pass|sslpassword)=[^&;#]*")


def redact_url(text: str) -> str:
    """``text`` without a password: the ``user:password@`` part and any ``password=`` parameter."""
    found = _SCHEME.match(text)
    if found:
        head, rest = text[: found.end()], text[found.end() :]
        if "@" in rest:  # everything up to the last "@": a password may hold "/" or "@" unencoded
            rest = "***@" + rest.rsplit("@", 1)[1]
        text = head + rest
    return _SECRET_PARAMETER.sub(lambda m: m.group(1) + "=***", text)


def is_postgres(value: str | Path | None = None) -> bool:
    """Whether a store value (``None``: ``$RR_STUDIO_DB``) names a PostgreSQL server."""
    if value is None:
        value = os.environ.get(DB_ENV) or ""
    if isinstance(value, Path):
        return False
    found = _SCHEME.match(value)
    return found is not None and found.group(1).lower().split("+", 1)[0] in _POSTGRES_SCHEMES


def postgres_url(value: str | Path | None = None) -> str:
    """The ``postgresql://`` URL a store value names (``None``: ``$RR_STUDIO_DB``).

    Raises ``ConfigError`` when it names no PostgreSQL server, or one in a form libpq does not
    read (``postgresql+psycopg://``: a driver suffix is SQLAlchemy's, not a URL the server takes).
    """
    from_env = value is None
    if value is None:
        value = os.environ.get(DB_ENV) or ""
    text = str(value)
    shown = f"{DB_ENV}={redact_url(text)}" if from_env else redact_url(text)
    found = _SCHEME.match(text)
    if not is_postgres(value) or not found:
        raise ConfigError(f"{shown}: not a PostgreSQL URL; give {SUPPORTED_FORMS}.")
    if found.group(1).lower() not in _POSTGRES_SCHEMES:
        raise ConfigError(
            f"{shown}: write the URL as postgresql://… (a driver suffix such as +psycopg is not part of"
            f" a PostgreSQL URL); give {SUPPORTED_FORMS}."
        )
    return text


def sqlite_path(value: str | Path | None = None) -> Path:
    """The SQLite file a store value names (``None``: ``$RR_STUDIO_DB``, else the default path).

    Raises ``ConfigError`` for a URL that names no SQLite file (a PostgreSQL server, or a
    scheme no store has), naming the forms accepted.
    """
    from_env = value is None
    if value is None:
        value = os.environ.get(DB_ENV) or DEFAULT_PATH
    if isinstance(value, Path):
        return value
    shown = f"{DB_ENV}={redact_url(value)}" if from_env else redact_url(value)
    found = _SCHEME.match(value)
    if found:
        scheme = found.group(1).lower()
        if scheme == "sqlite":
            return _sqlite_file(value[found.end() :], shown, absolute=True)
        if scheme.split("+", 1)[0] in _POSTGRES_SCHEMES:
            raise ConfigError(f"{shown} names a PostgreSQL server, not a SQLite file.")
        raise ConfigError(f"{shown}: {scheme}:// is not a store R&R Studio has. Give {SUPPORTED_FORMS}.")
    if value.lower().startswith("sqlite:"):
        return _sqlite_file(value[len("sqlite:") :], shown, absolute=False)
    return Path(value)


def _sqlite_file(rest: str, shown: str, *, absolute: bool) -> Path:
    """The file of ``sqlite:`` + ``rest``; ``absolute``: written ``sqlite://`` + ``/path``."""
    if absolute and not rest.startswith("/"):
        raise ConfigError(
            f"{shown}: a SQLite store is a file on this machine, not a server; give {SUPPORTED_FORMS}."
        )
    if "?" in rest or "#" in rest:
        raise ConfigError(f"{shown}: a SQLite store takes no options; give {SUPPORTED_FORMS}.")
    if not rest.strip("/"):
        raise ConfigError(f"{shown}: name the file; give {SUPPORTED_FORMS}.")
    return Path(rest)
