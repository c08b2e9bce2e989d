"""A real PostgreSQL for the tests: a throwaway cluster in a temporary folder, started once a session.

``find_binaries`` looks for ``initdb`` and ``pg_ctl`` on PATH, then in Debian's
``/usr/lib/postgresql/<version>/bin``. ``PostgresServer`` makes a cluster on a free loopback port
with its unix socket in the same temporary folder, starts it (as the ``postgres`` OS user when
run as root: PostgreSQL refuses to run as root), waits until it takes connections, and creates
the application's role: an ordinary login role (no SUPERUSER, no BYPASSRLS), which row-level
security applies to. Each test gets a database of its own, owned by that role.

Local (socket) connections are trusted, for the set-up done as the superuser; connections over
TCP need a password (scram-sha-256), as a deployment's would.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

INSTALL_HINT = "PostgreSQL not installed: apt-get install postgresql"
REQUIRE_ENV = "RR_REQUIRE_POSTGRES"
BIN_ENV = "RR_POSTGRES_BIN"  # a folder holding initdb and pg_ctl, to use instead of looking
APP_ROLE = "rr_app"
APP_PASSWORD = "app-pw-7f3c9e"  # a test cluster's, on loopback only
READY_LIMIT_S = 120.0  # generous: a loaded CI machine


def find_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: ``$RR_POSTGRES_BIN`` when set (and only it),
    else PATH, then Debian's newest ``/usr/lib/postgresql/<version>/bin``."""
    chosen = os.environ.get(BIN_ENV)
    if chosen:
        folder = Path(chosen)
        return folder if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file() else None
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
    )
    for candidate in reversed(found):
        folder = Path(candidate).parent
        if (folder / "pg_ctl").is_file():
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _postgres_reaches(folder: str) -> bool:
    """Whether the ``postgres`` user can enter ``folder`` (every folder above it included)."""
    try:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", "test", "-x", folder],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _cluster_parent(as_root: bool) -> str | None:
    """Where the cluster's folder is made: the usual temporary folder, unless the tests run as root
    and the ``postgres`` user (who runs the server) cannot reach it, as with a private ``TMPDIR``
    (mode 0700): then the first of /tmp and /var/tmp it can reach."""
    if not as_root:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None  # start() says that the user is missing
    for candidate in dict.fromkeys((tempfile.gettempdir(), "/tmp", "/var/tmp")):
        if os.path.isdir(candidate) and _postgres_reaches(candidate):
            return candidate
    raise RuntimeError(
        f"the 'postgres' user can reach none of {tempfile.gettempdir()}, /tmp and /var/tmp:"
        " PostgreSQL, run as that user, needs a folder it can enter"
    )


class PostgresServer:
    """One throwaway PostgreSQL cluster; ``start`` then ``stop`` (``url`` for the app's role)."""

    def __init__(self, binaries: Path) -> None:
        self.binaries = binaries
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="rr-pg-", dir=_cluster_parent(self.as_root)))
        self.data = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.started_s = 0.0  # how long start() took
        self._options = ""
        self._databases = 0

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        return subprocess.run(
            [*prefix, *args], capture_output=True, text=True, timeout=READY_LIMIT_S, check=False
        )

    def start(self) -> None:
        began = time.monotonic()
        if self.as_root:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "running as root, PostgreSQL must run as another user, and there is no 'postgres'"
                    " user (Debian's postgresql package makes it)"
                ) from None
        self.socket_dir.mkdir()
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        made = self._run(
            str(self.binaries / "initdb"), "-D", str(self.data), "-U", "postgres", "-E", "UTF8",
            "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
        )  # fmt: skip
        if made.returncode:
            raise RuntimeError(f"initdb failed: {made.stderr or made.stdout}")
        options = self._options = (
            f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1"
            " -c fsync=off -c full_page_writes=off"  # the OS does not crash here
        )
        if self.as_root:
            self.log.touch()
            shutil.chown(self.log, "postgres", "postgres")
        started = self._run(
            str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-W", "start"
        )  # fmt: skip
        if started.returncode:
            raise RuntimeError(f"pg_ctl start failed: {started.stderr or started.stdout}\n{self._log_tail()}")
        self._wait_ready(began)
        with self.admin() as db:
            db.execute(
                f"CREATE ROLE {APP_ROLE} LOGIN PASSWORD '{APP_PASSWORD}' NOSUPERUSER NOBYPASSRLS NOCREATEDB"
            )
        self.started_s = time.monotonic() - began

    def restart(self) -> None:
        """Stop the server at once (as a crash would, dropping every connection) and start it again."""
        stopped = self._run(
            str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
        )
        if stopped.returncode:
            raise RuntimeError(f"pg_ctl stop failed: {stopped.stderr or stopped.stdout}")
        began = time.monotonic()
        started = self._run(
            str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", self._options, "-W", "start"
        )  # fmt: skip
        if started.returncode:
            raise RuntimeError(f"pg_ctl start failed: {started.stderr or started.stdout}\n{self._log_tail()}")
        self._wait_ready(began)

    def _wait_ready(self, began: float) -> None:
        """Until the server takes a connection (or its limit passes: then its log says why)."""
        last: Exception | None = None
        while time.monotonic() - began < READY_LIMIT_S:
            try:
                with self.admin():
                    return
            except psycopg.OperationalError as exc:
                last = exc
                time.sleep(0.05)
        raise RuntimeError(
            f"PostgreSQL did not take connections within {READY_LIMIT_S:g} s ({last})\n{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        """A superuser connection over the unix socket (set-up and inspection only)."""
        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user="postgres", dbname=dbname, autocommit=True,
            connect_timeout=5,
        )  # fmt: skip

    def url(self, dbname: str, *, user: str = APP_ROLE, password: str = APP_PASSWORD) -> str:
        """The URL the store connects with, over TCP with a password."""
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{dbname}"

    def ensure_running(self) -> str:
        """Start the server again when it is gone (say why, or "" when it was running).

        Something outside the tests (a clean-up of the temporary folder, a process killing servers
        it did not start) must not fail every later PostgreSQL test of the session: the server is
        started again, on its data when that is still there, else as a new cluster, and the
        tests say so (a warning in pytest's summary, with the old server's log when it is left).
        """
        try:
            with self.admin():
                return ""
        except psycopg.OperationalError as exc:
            gone = f"the test PostgreSQL at {self.socket_dir} stopped taking connections ({exc})"
        log = self._log_tail()
        if self.data.is_dir():
            started = self._run(
                str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", self._options,
                "-W", "start",
            )  # fmt: skip
            if started.returncode == 0:
                self._wait_ready(time.monotonic())
                return f"{gone}; started again on its data. Its log:\n{log}"
        self.root = Path(tempfile.mkdtemp(prefix="rr-pg-", dir=_cluster_parent(self.as_root)))
        self.data, self.socket_dir = self.root / "data", self.root / "socket"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.start()
        return f"{gone}; its folder was gone, a new cluster was started. Its log:\n{log or '(gone)'}"

    def new_database(self) -> str:
        """A fresh database owned by the app's role; its name."""
        self._databases += 1
        name = f"rr_test_{self._databases}"
        with self.admin() as db:
            db.execute(f"CREATE DATABASE {name} OWNER {APP_ROLE} TEMPLATE template0")
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as db:
            db.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        if self.data.is_dir():
            self._run(str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
