"""The real app in real Chromium: what the browser test and the browser benchmark share.

``serve_app`` starts ``streamlit run app.py`` on a free port (offline engine only: provider
variables removed, the run store in a folder of the caller's) and waits for its health check;
``launch_chromium`` starts Debian's chromium through Playwright, which cannot download a
browser of its own here, with flags that keep it off the network. ``settle`` waits for
Streamlit's script run to end; ``shot`` takes a screenshot of the whole screen.

Nothing here knows pytest: a missing browser raises ``BrowserUnavailable`` and a server that
will not start raises ``ServerFailed``, and the caller decides whether that skips or fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ADMIN_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_PROFILE",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_API_VERSION",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1440, "height": 900}  # a laptop
SMALL = {"width": 1024, "height": 768}  # a small laptop or a projector
# Every wait is for a condition, with limits generous enough for a loaded 2-core machine.
STARTUP_TIMEOUT_S = 120
RUN_TIMEOUT_MS = 240_000  # reading a PDF and running every method, on a slow CI machine
UI_TIMEOUT_MS = 90_000  # anything else the app draws
RERUN_START_MS = 2_000  # how long a rerun may take to start after an input, before we stop looking

STAPP = '[data-testid="stApp"]'
STATUS_WIDGET = '[data-testid="stStatusWidget"]'


class BrowserUnavailable(Exception):
    """No chromium, no Playwright, or a chromium that will not start."""


class ServerFailed(Exception):
    """``streamlit run`` exited or never became healthy; the message ends with its log."""


# ---- The app -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppServer:
    """A running ``streamlit run app.py``."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    healthy_after_s: float  # from starting the process to the first "ok" from /_stcore/health


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on (at the time of asking)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log, for an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def app_environment(scratch: Path) -> dict[str, str]:
    """This process's environment without provider settings, with the run store in ``scratch``."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    env["RR_STUDIO_DB"] = str(scratch / "runs.sqlite3")
    if (SHARED / "tiktoken").is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(SHARED / "tiktoken")
    return env


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return bool(response.read().decode().strip() == "ok")
    except OSError:
        return False


@contextlib.contextmanager
def serve_app(
    scratch: Path,
    *,
    script: Path = ROOT / "app.py",
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    port: int | None = None,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[AppServer]:
    """Start the app (or another ``script``) on a free port (or ``port``), wait until it is
    healthy, stop it on exit. ``options`` are more ``streamlit run`` options (a secrets file:
    ``--secrets.files PATH``), ``env`` more environment variables.

    ``scratch`` holds the run store and the server's log. Raises ``ServerFailed`` with the
    log's tail when the server exits or is not healthy within ``startup_timeout_s``.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = scratch / "streamlit.log"
    command = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        *options,
    ]  # fmt: skip
    started = time.monotonic()
    with log.open("wb") as out:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=app_environment(scratch) | dict(env or {}),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = started + startup_timeout_s
        while not _healthy(url):
            if server.poll() is not None:
                raise ServerFailed(f"streamlit exited with {server.returncode}:\n{tail(log)}")
            if time.monotonic() > deadline:
                raise ServerFailed(f"streamlit not healthy after {startup_timeout_s:.0f} s:\n{tail(log)}")
            time.sleep(0.1)
        yield AppServer(url=url, process=server, log=log, healthy_after_s=time.monotonic() - started)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


# ---- The browser -----------------------------------------------------------------------------


def chromium_path() -> str:
    """Debian's chromium, and Playwright to drive it; ``BrowserUnavailable`` if either is missing."""
    executable = next(filter(None, (shutil.which(n) for n in ("chromium", "chromium-browser"))), None)
    if executable is None:
        raise BrowserUnavailable("no chromium on PATH (Debian: apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        raise BrowserUnavailable(
            "the playwright package is not installed (pip install -r requirements-dev.txt)"
        ) from None
    return executable


@contextlib.contextmanager
def launch_chromium(executable: str) -> Iterator[Any]:
    """A headless Playwright ``Browser`` on ``executable``, closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        except Exception as exc:  # a browser that will not start is the same as none
            raise BrowserUnavailable(f"chromium at {executable} did not start: {exc}") from exc
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def new_tab(browser: Any, *, viewport: dict[str, int] = VIEWPORT) -> Iterator[Any]:
    """A page in a fresh context (no cookies, no cache), with the generous default limits."""
    from playwright.sync_api import expect

    # set_default_timeout covers actions and waits; expect() assertions have their own default
    # (Playwright's is 5 s).
    expect.set_options(timeout=UI_TIMEOUT_MS)
    context = browser.new_context(viewport=viewport, device_scale_factor=1)
    context.set_default_timeout(UI_TIMEOUT_MS)
    count_script_runs(context)
    try:
        yield context.new_page()
    finally:
        context.close()


# ---- Driving the page ------------------------------------------------------------------------


# Counts, in each page of a context, the script runs that have started (the app's
# data-test-script-state turning to "running"); ``settle`` notes the count it saw last.
_COUNT_RUNS = """(() => {
    window.__rrRuns = 0;
    window.__rrSettled = 0;
    new MutationObserver(records => {
        const states = records.map(r => r.oldValue);
        states.push(records[records.length - 1].target.getAttribute('data-test-script-state'));
        window.__rrRuns += states.slice(1).filter(s => s === 'running').length;
    }).observe(document, {
        subtree: true, attributes: true, attributeOldValue: true, attributeFilter: ['data-test-script-state'],
    });
})()"""


def count_script_runs(context: Any) -> None:
    """Count the script runs started in ``context``'s pages, so that ``settle`` need not wait
    for a rerun that has already started (and may have ended)."""
    context.add_init_script(_COUNT_RUNS)


def settle(page: Any, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Wait until Streamlit's script run (rerun or fragment) has finished."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # The rerun an input triggers may not have started yet: wait for it to start (a short
    # rerun may already be over, so not seeing it start within the limit is fine), then end.
    # In a page that counts its runs (``count_script_runs``), a run started since the last
    # settle needs no such wait: it is over, or the wait below sees it end. (A page that is
    # navigating cannot be asked: it waits as before.)
    counted = False
    with contextlib.suppress(PlaywrightError):
        counted = page.evaluate("() => window.__rrRuns > window.__rrSettled")
    if not counted:
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_selector(
                f'{STAPP}[data-test-script-state="running"]', state="attached", timeout=RERUN_START_MS
            )
    page.wait_for_selector(
        f'{STAPP}[data-test-script-state="notRunning"], {STAPP}[data-test-script-state="initial"]',
        state="attached",
        timeout=timeout_ms,
    )
    page.locator(STATUS_WIDGET).wait_for(state="hidden", timeout=timeout_ms)
    with contextlib.suppress(PlaywrightError):
        page.evaluate("() => { if (window.__rrRuns !== undefined) window.__rrSettled = window.__rrRuns; }")


def main_area(page: Any) -> Any:
    """The main area (not the sidebar)."""
    return page.locator('[data-testid="stMain"]')


def shot(page: Any, path: Path, *, full: bool = True) -> Path:
    """A screenshot: of what the window shows (``full=False``: what a user sees first), or of
    the whole screen (Streamlit scrolls the main area and the sidebar inside the window, so the
    window is made as tall as their content for the shot, then restored)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    if not full:
        page.screenshot(path=str(path))
        return path
    tall = """() => ['stMain', 'stSidebarContent']
        .map(id => document.querySelector(`[data-testid="${id}"]`))
        .filter(Boolean).map(e => (e.scrollTop = 0, e.scrollHeight))"""
    for _ in range(2):  # charts reflow once the window grows
        height = max([size["height"], *page.evaluate(tall)])
        page.set_viewport_size({"width": size["width"], "height": height})
        page.wait_for_selector(STAPP, state="attached")
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path
