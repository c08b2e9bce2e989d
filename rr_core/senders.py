"""Who sent a call, and whether that sender is gone.

A call sent now is recorded in the sent-but-unanswered ledger under its sender (one executor)
before it goes out. What a sender left there when its process was stopped (``kill -9``) may be
billed, and the next run of the same calls reports it. A sender still running (a parallel
session, a worker, the Lab screen showing a sweep a worker runs) has its calls in flight: they
are its own to settle, never taken from it.

A sender's id names its machine, its process and itself. A call older than any call can take
(its request's time limit, retries included, plus a margin for clocks that differ) is no longer
in flight, whoever sent it. Before that, a sender of this process is gone once its executor is
closed; one of another process on this machine, once that process has ended; one of another
machine (a worker elsewhere) is taken to be running. One of an older
build (a bare id, no machine in it) is gone: that build was stopped to start this one.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from datetime import UTC, datetime

STALE_MARGIN_S = 300.0  # beyond a call's time limit, for clocks that differ between machines

_HOST = socket.gethostname().replace("/", "_")
_live: set[str] = set()
_lock = threading.Lock()


def new_sender() -> str:
    """A fresh sender id ("host/pid/random"), live until ``ended``."""
    sender = f"{_HOST}/{os.getpid()}/{uuid.uuid4().hex}"
    with _lock:
        _live.add(sender)
    return sender


def ended(sender: str) -> None:
    """The sender's executor is closed: what it left unanswered may be taken by the next."""
    with _lock:
        _live.discard(sender)


def is_gone(sender: str, sent_at: str, *, limit_s: float, now: datetime | None = None) -> bool:
    """Whether ``sender`` (which sent a call at ``sent_at``, ISO UTC) can no longer settle it:
    its calls are then the next sender's to report as possibly billed."""
    if _age_s(sent_at, now) > limit_s + STALE_MARGIN_S:
        return True  # no call is in flight that long (a process id used again says nothing)
    host, slash, rest = sender.partition("/")
    pid_text, _, _ = rest.partition("/")
    if not slash:
        return True
    if host == _HOST and pid_text.isdigit():
        pid = int(pid_text)
        if pid == os.getpid():
            with _lock:
                return sender not in _live
        return not _process_running(pid)
    return False


def _process_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    except OSError:
        return False
    return True


def _age_s(sent_at: str, now: datetime | None) -> float:
    """Seconds since ``sent_at``; unreadable times count as old (their sender is long gone)."""
    try:
        when = datetime.fromisoformat(sent_at)
    except (TypeError, ValueError):
        return float("inf")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return ((now or datetime.now(UTC)) - when).total_seconds()
