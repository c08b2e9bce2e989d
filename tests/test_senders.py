"""Whether the sender of a call left in the sent-but-unanswered ledger is gone (its calls are
then the next run's to report as possibly billed) or still running (they are in flight: its own)."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from rr_core import senders

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
LIMIT_S = 120.0


def _ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).isoformat(timespec="seconds")


def test_a_sender_of_this_process_is_live_until_its_executor_is_closed() -> None:
    sender = senders.new_sender()
    assert not senders.is_gone(sender, _ago(LIMIT_S), limit_s=LIMIT_S, now=NOW)
    # A call older than any call can take has ended (timed out, and counted by its sender).
    assert senders.is_gone(sender, _ago(LIMIT_S + senders.STALE_MARGIN_S + 1), limit_s=LIMIT_S, now=NOW)
    senders.ended(sender)
    assert senders.is_gone(sender, _ago(0), limit_s=LIMIT_S, now=NOW)


def test_a_sender_of_another_process_of_this_machine_is_gone_once_that_process_ended() -> None:
    host = socket.gethostname()
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        running = f"{host}/{process.pid}/abc"
        assert not senders.is_gone(running, _ago(LIMIT_S), limit_s=LIMIT_S, now=NOW)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=120)
    assert senders.is_gone(f"{host}/{process.pid}/abc", _ago(0), limit_s=LIMIT_S, now=NOW)


def test_a_sender_elsewhere_is_gone_once_its_call_is_older_than_any_call_can_take() -> None:
    elsewhere = "worker-7.example/4242/abc"
    margin = senders.STALE_MARGIN_S
    assert not senders.is_gone(elsewhere, _ago(LIMIT_S + margin - 1), limit_s=LIMIT_S, now=NOW)
    assert senders.is_gone(elsewhere, _ago(LIMIT_S + margin + 1), limit_s=LIMIT_S, now=NOW)
    assert senders.is_gone(elsewhere, "not a time", limit_s=LIMIT_S, now=NOW)


def test_a_bare_id_of_an_older_build_is_gone() -> None:
    assert senders.is_gone("0123456789abcdef", _ago(0), limit_s=LIMIT_S, now=NOW)
