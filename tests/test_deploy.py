"""Team mode's nginx, for real but without the app: ``deploy/nginx.conf.in`` filled in as
``deploy/team.sh`` fills it, in front of a small loopback server standing in for a replica.

- The access log holds no query string (st.login's callback carries the provider's one-time
  code in it), nor a referrer's; the callback still reaches the replica whole.
- Streamlit's ``/_stcore/metrics`` is not served through nginx (the replicas listen on loopback).

Skipped, saying why, without nginx (unless ``RR_REQUIRE_TEAM=1``).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.browser_kit import free_port
from tests.test_team import REQUIRE_TEAM, ROOT, nginx_path, render_nginx_conf


class _Replica(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


def _get(url: str, **headers: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[tuple[str, Path, ThreadingHTTPServer]]:
    binary = nginx_path()
    if binary is None:
        if os.environ.get(REQUIRE_TEAM) == "1":
            pytest.fail(f"{REQUIRE_TEAM}=1 but nginx is not installed", pytrace=False)
        pytest.skip("nginx is not installed (Debian: apt-get install nginx)")
    replica = ThreadingHTTPServer(("127.0.0.1", 0), _Replica)
    threading.Thread(target=replica.serve_forever, daemon=True).start()
    run, logs = tmp_path / "run", tmp_path / "logs"
    run.mkdir()
    logs.mkdir()
    os.chmod(tmp_path, 0o755)  # nginx's workers (nobody, under root) reach its temp folders
    port = free_port()
    conf = tmp_path / "nginx.conf"
    conf.write_text(render_nginx_conf(port=port, replicas=[replica.server_address[1]], run=run, logs=logs))
    process = subprocess.Popen(
        [binary, "-p", str(tmp_path), "-c", str(conf), "-e", str(logs / "nginx-error.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _get(f"{url}/_stcore/health") == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"nginx did not start: {process.stderr.read() if process.stderr else ''!r}"
                )
            time.sleep(0.1)
        yield url, logs, replica
    finally:
        process.terminate()
        process.wait(30)
        replica.shutdown()
        replica.server_close()


def _when(read: Callable[[], str], ready: Callable[[str], bool], limit: float = 120.0) -> str:
    """What ``read`` gives once ``ready`` says so (a log written after the response)."""
    end = time.monotonic() + limit
    while True:
        text = read()
        if ready(text) or time.monotonic() > end:
            return text
        time.sleep(0.05)


def test_the_access_log_holds_no_query_string_and_the_callback_still_gets_its_code(
    nginx: tuple[str, Path, ThreadingHTTPServer],
) -> None:
    url, logs, _ = nginx
    _Replica.seen.clear()
    code = "c0de-7Hq2xPz"
    assert _get(f"{url}/oauth2callback?code={code}&state=st4te-9") == 200
    assert _get(f"{url}/", Referer=f"{url}/oauth2callback?code=ref-{code}") == 200
    assert f"/oauth2callback?code={code}&state=st4te-9" in _Replica.seen  # the replica gets it whole
    # nginx writes a request's access line after its response: wait for the second request's.
    log = _when(
        lambda: (logs / "nginx-access.log").read_text(), lambda text: f'"{url}/oauth2callback"' in text
    )
    assert "GET /oauth2callback HTTP/1.1" in log and f'"{url}/oauth2callback"' in log
    assert code not in log and "st4te" not in log and "?" not in log


def test_streamlit_metrics_are_not_served_through_nginx(nginx: tuple[str, Path, ThreadingHTTPServer]) -> None:
    url, _, _ = nginx
    _Replica.seen.clear()
    for path in (
        "/_stcore/metrics",
        "/_stcore/metrics?format=text",
        "/_stcore//metrics",
        "/_stcore/%6detrics",
    ):
        assert _get(url + path) == 404, path
    assert _get(f"{url}/_stcore/health") == 200
    assert _Replica.seen == ["/_stcore/health"]


def test_a_callback_that_fails_leaves_its_code_out_of_the_error_log(
    nginx: tuple[str, Path, ThreadingHTTPServer],
) -> None:
    url, logs, replica = nginx
    replica.shutdown()
    replica.server_close()  # the replica is down: nginx logs an error for each request it passes on
    assert _get(f"{url}/oauth2callback?code=c0de-Err9&state=st4te-1") == 502
    assert _get(f"{url}/page?seen=1") == 502  # another path's error is logged, as before
    errors = _when(lambda: (logs / "nginx-error.log").read_text(), lambda text: "/page?seen=1" in text)
    assert "/page?seen=1" in errors and "c0de-Err9" not in errors and "oauth2callback" not in errors


def test_the_replicas_listen_on_loopback_only() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "localhost"
    script = (ROOT / "deploy" / "team.sh").read_text()
    assert "--server.address 127.0.0.1" in script and "0.0.0.0" not in script
