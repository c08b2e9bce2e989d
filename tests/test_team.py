"""Team mode deployed, for real: PostgreSQL (started by the tests), a worker (``python -m rr_core
worker``), two Streamlit replicas of app.py and nginx in front of them with cookie affinity, made
from ``deploy/nginx.conf.in`` as ``deploy/team.sh`` makes it; Debian's chromium through Playwright.

- A browser keeps hitting the replica it first reached (nginx's ``X-RR-Replica`` on every
  response), its upload included.
- 20 browser sessions across the two replicas ask at once: each sees its own question's answer,
  no page errors; the time to results against a single session's is printed.
- A replica killed (-9) during a grid submitted to the worker: the grid goes on, its progress read
  by another process from the database; the browser that was on the dead replica is served by the
  other; no cell lost, no call sent twice (counted at the stub).

Skipped, saying why, without nginx (unless ``RR_REQUIRE_TEAM=1``, which ``.ci/run`` sets), without
chromium (unless ``RR_REQUIRE_BROWSER=1``) or PostgreSQL (unless ``RR_REQUIRE_POSTGRES=1``).
Screenshots go to ``artifacts/team/`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import browser_kit as kit
from tests.browser_kit import STARTUP_TIMEOUT_S, settle
from tests.stub_server import StubServer, prompt_of, slow

pytestmark = pytest.mark.browser

ROOT = kit.ROOT
ARTIFACTS = ROOT / "artifacts" / "team"
TEMPLATE = ROOT / "deploy" / "nginx.conf.in"
REQUIRE_TEAM = "RR_REQUIRE_TEAM"
SESSIONS = 20
CALL_DELAY_S = 0.4  # each stub reply: the grid lasts long enough to kill a replica in its middle
GRID_DOCUMENTS = 8
COLUMNS = "question,type\nWhich state's law governs this agreement?,text\nIs either party's liability capped?,yes-no\n"


def _unavailable(reason: str, required_by: str) -> None:
    """Skip, or fail where the part is required (CI)."""
    if os.environ.get(required_by) == "1":
        pytest.fail(f"{required_by}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


NGINX_ENV = "RR_NGINX"  # the nginx to use, instead of looking (PATH, then Debian's /usr/sbin/nginx)


def nginx_path() -> str | None:
    chosen = os.environ.get(NGINX_ENV)
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def render_nginx_conf(*, port: int, replicas: list[int], run: Path, logs: Path) -> str:
    """``deploy/nginx.conf.in`` filled in as ``deploy/team.sh`` fills it."""
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in replicas)
    return (
        TEMPLATE.read_text()
        .replace("@RUN@", str(run))
        .replace("@LOGS@", str(logs))
        .replace("@PORT@", str(port))
        .replace("@SERVERS@", servers)
    )


def _wait(condition: Any, what: str, limit: float = 120.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {limit:.0f} s for {what}")
        time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(20)


# ---- The deployment ------------------------------------------------------------------------------


@dataclass
class Team:
    url: str  # nginx's
    db_url: str
    replicas: dict[str, subprocess.Popen[bytes]]  # by "127.0.0.1:port", as X-RR-Replica names them
    worker: subprocess.Popen[bytes] | None
    logs: Path

    def log_tails(self) -> str:
        return "\n".join(f"--- {p.name}\n{kit.tail(p, 30)}" for p in sorted(self.logs.glob("*.log")))


@pytest.fixture(scope="module")
def chromium() -> str:
    """nginx, chromium and Playwright, checked before anything is started."""
    if nginx_path() is None:
        _unavailable("nginx is not installed (Debian: apt-get install nginx)", REQUIRE_TEAM)
    try:
        return kit.chromium_path()
    except kit.BrowserUnavailable as exc:
        _unavailable(str(exc), "RR_REQUIRE_BROWSER")
        raise AssertionError("unreachable") from exc


@contextlib.contextmanager
def deployment(
    base: Path, db_url: str, *, worker_env: dict[str, str] | None = None, secrets: str = ""
) -> Iterator[Team]:
    """Two replicas (and a worker with ``worker_env`` when given) on ``db_url``, nginx in front
    (its configuration made from ``deploy/nginx.conf.in``); ``secrets`` (a secrets file's text,
    where ``@URL@`` stands for nginx's address) is given to the replicas. Stopped on exit."""
    logs, run = base / "logs", base / "run"
    logs.mkdir(parents=True)
    run.mkdir()
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (logs / f"{name}.log").open("wb") as out:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        started.append(process)
        return process

    try:
        port = kit.free_port()
        url = f"http://127.0.0.1:{port}"
        app_env = {**kit.app_environment(base), "RR_STUDIO_DB": db_url, "PYTHONPATH": str(ROOT)}
        options: list[str] = []
        if secrets:
            (base / "secrets.toml").write_text(secrets.replace("@URL@", url))
            options = ["--secrets.files", str(base / "secrets.toml")]
            app_env["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # the mock provider speaks plain HTTP on loopback
        worker = None
        if worker_env is not None:
            worker = start(
                "worker",
                [sys.executable, "-m", "rr_core", "worker", "--concurrency", "1", "--heartbeat", "1"],
                {**app_env, **worker_env},
            )
        ports = [kit.free_port(), kit.free_port()]
        replicas = {}
        for replica_port in ports:
            command = [
                sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(replica_port),
                "--server.address", "127.0.0.1", "--server.headless", "true",
                "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false", *options,
            ]  # fmt: skip
            replicas[f"127.0.0.1:{replica_port}"] = start(f"replica-{replica_port}", command, app_env)
        conf = base / "nginx.conf"
        conf.write_text(render_nginx_conf(port=port, replicas=ports, run=run, logs=logs))
        nginx = [str(nginx_path()), "-p", str(base), "-c", str(conf), "-e", str(logs / "nginx-error.log")]
        checked = subprocess.run([*nginx, "-t", "-q"], capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, f"nginx refused the generated configuration: {checked.stderr}"
        start("nginx", nginx, dict(os.environ))
        deployed = Team(url, db_url, replicas, worker, logs)

        def healthy() -> bool:
            for process in started:
                if process.poll() is not None:
                    raise AssertionError(f"a part exited with {process.returncode}:\n{deployed.log_tails()}")
            return all(kit._healthy(f"http://{name}") for name in replicas) and kit._healthy(deployed.url)

        _wait(healthy, "the replicas and nginx to be healthy", STARTUP_TIMEOUT_S)
        yield deployed
    finally:
        for process in reversed(started):
            _stop(process)


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    """The provider for the worker: each reply a little slow, so that a grid lasts a while."""
    with StubServer(responder=lambda path, body: slow(CALL_DELAY_S)) as server:
        yield server


@pytest.fixture(scope="module")
def team(
    chromium: str, postgres_server: Any, stub: StubServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Team]:
    """The deployment in single-user mode (no sign-in), with a worker whose provider is the stub."""
    database = postgres_server.new_database()
    try:
        # The worker's own key and server (the stub): a submitted grid names neither.
        worker_env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": stub.url}
        with deployment(
            tmp_path_factory.mktemp("team"), postgres_server.url(database), worker_env=worker_env
        ) as t:
            yield t
    finally:
        from rr_core.store.postgres import close_pools

        close_pools()
        postgres_server.drop_database(database)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    try:
        with kit.launch_chromium(chromium) as launched:
            yield launched
    except kit.BrowserUnavailable as exc:
        _unavailable(str(exc), "RR_REQUIRE_BROWSER")


class Session:
    """One browser (a fresh context: its own cookies) on the deployment, noting which replica
    answered each of its requests and any error in its page."""

    def __init__(self, browser: Any, url: str) -> None:
        from playwright.sync_api import expect

        expect.set_options(timeout=kit.UI_TIMEOUT_MS)
        self.context = browser.new_context(viewport=kit.VIEWPORT, device_scale_factor=1)
        self.context.set_default_timeout(kit.UI_TIMEOUT_MS)
        kit.count_script_runs(self.context)
        self.page = self.context.new_page()
        self.url = url
        self.seen: list[tuple[float, str]] = []  # (when the request started, epoch s; the replica)
        self.failed: list[str] = []  # responses of 400 and over, and errors in the page
        self.page.on("response", self._saw)
        self.page.on("pageerror", lambda exc: self.failed.append(f"page error: {exc}"))

    def _saw(self, response: Any) -> None:
        if not response.url.startswith(self.url):
            return
        replica = response.headers.get("x-rr-replica")
        # Only Streamlit's endpoints (health, host config, uploads): the page and its static files
        # may come from the browser's cache, with the headers of their first load.
        if replica and "/_stcore/" in response.url:
            # Playwright hands events over late (on the next call): the request's own start time.
            self.seen.append((float(response.request.timing["startTime"]) / 1000, replica))
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.url}")

    @property
    def replicas(self) -> list[str]:
        return [replica for _, replica in self.seen]

    def replicas_since(self, epoch_s: float) -> list[str]:
        return [replica for when, replica in self.seen if when >= epoch_s]

    def open(self) -> None:
        self.page.goto(self.url)

    def opened(self) -> None:
        from playwright.sync_api import expect

        expect(self.page.get_by_role("heading", name="Ask a long document")).to_be_visible(
            timeout=STARTUP_TIMEOUT_S * 1000
        )

    def close(self) -> None:
        self.context.close()


def _question(i: int) -> Any:
    from rr_core.samples import get_sample

    questions = get_sample("contract").questions
    return questions[i % len(questions)]


def _type_question(session: Session, text: str) -> None:
    box = kit.main_area(session.page).get_by_label("Question", exact=True)
    box.fill(text)
    box.press("Control+Enter")


def _results_for(session: Session, question: Any) -> Any:
    """Where the results say this question's own known answer and its page (another session's
    question would show another page)."""
    return (
        kit.main_area(session.page)
        .get_by_text(re.compile(r"known answer"))
        .filter(has_text=re.compile(rf"on p\. {question.page}\b"))
        .first
    )


# ---- The tests ---------------------------------------------------------------------------------


def test_a_browser_keeps_to_one_replica_its_upload_included(team: Team, browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from rr_core.documents import pdf_from_texts

    pdf = tmp_path / "memo.pdf"
    pdf.write_bytes(
        pdf_from_texts([f"Memo page {p}. The budget is 12 units." * 20 for p in range(3)], title="Memo")
    )
    seen: set[str] = set()
    for attempt in range(4):  # fresh browsers land on either replica
        session = Session(browser, team.url)
        try:
            session.open()
            session.opened()
            settle(session.page)
            if attempt == 0:  # an upload goes to the replica holding the session, or fails
                # Without [auth], every browser is the same user: the app says so.
                sidebar = session.page.locator('[data-testid="stSidebar"]')
                expect(sidebar.get_by_text(re.compile(r"Single-user mode"))).to_be_visible()
                main = kit.main_area(session.page)
                main.locator('[data-testid="stRadio"]').get_by_text("My file", exact=True).click()
                main.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(pdf))
                expect(main.get_by_text(re.compile(r"memo\.pdf\s*— 3 pages"))).to_be_visible(
                    timeout=kit.RUN_TIMEOUT_MS
                )
                settle(session.page)
                kit.shot(session.page, ARTIFACTS / "00_upload_through_nginx.png", full=False)
            session.page.reload()
            session.opened()
            settle(session.page)
            assert session.failed == [], session.failed
            assert len(session.replicas) >= 3, session.replicas
            assert set(session.replicas) <= set(team.replicas), session.replicas
            assert len(set(session.replicas)) == 1, (
                f"one browser reached both replicas: {Counter(session.replicas)}"
            )
            seen |= set(session.replicas)
        finally:
            session.close()
    print(f"\nfresh browsers landed on: {sorted(seen)}")


# Timed in the page, by the browser's clock: from the click on Run to this question's known
# answer shown (a driver clicking 20 busy pages one after another would time itself instead).
# The text is read as laid out (innerText) only once the words are there: laying out 20 pages
# 50 times a second kept the machine's two cores busy.
_ARM = """([pattern, words]) => {
    const re = new RegExp(pattern);
    window.__rr = {click: null, done: null};
    document.addEventListener('click', () => { if (window.__rr.click === null) window.__rr.click = Date.now(); }, true);
    const timer = setInterval(() => {
        const main = document.querySelector('[data-testid="stMain"]');
        if (window.__rr.click !== null && main && main.textContent.includes(words) && re.test(main.innerText)) {
            window.__rr.done = Date.now();
            clearInterval(timer);
        }
    }, 20);
}"""


# Click the main area's Run button at ``at`` (epoch ms; at once if that has passed), the button
# looked up again then (a rerun may have drawn it anew); the number of Run buttons found now.
_CLICK_RUN_AT = r"""at => {
    const runs = () => [...document.querySelectorAll('[data-testid="stMain"] button')]
        .filter(b => /(^|\n)Run$/.test(b.innerText.trim()));  // its icon's name, then "Run"
    setTimeout(() => runs()[0].click(), Math.max(0, at - Date.now()));
    return runs().length;
}"""
CLICK_AFTER_S = 2.0  # time enough to arm the 20 pages' clicks; a page armed late clicks at once


def _arm(session: Session, question: Any) -> None:
    session.page.evaluate(_ARM, [rf"known answer[^\n]*on p\. {question.page}\b", "known answer"])


def _seconds_to_results(session: Session) -> float:
    timing = session.page.evaluate("() => window.__rr")
    assert timing["click"] is not None and timing["done"] is not None, timing
    return float(timing["done"] - timing["click"]) / 1000


def test_20_sessions_ask_at_once_each_gets_its_own_answer(team: Team, browser: Any) -> None:
    from playwright.sync_api import expect

    # One session alone: the time from Run to its results.
    alone = Session(browser, team.url)
    try:
        alone.open()
        alone.opened()
        settle(alone.page)
        _type_question(alone, _question(2).question)
        settle(alone.page)
        _arm(alone, _question(2))
        kit.main_area(alone.page).get_by_role("button", name="Run").click()
        expect(_results_for(alone, _question(2))).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        _wait(lambda: alone.page.evaluate("() => window.__rr.done") is not None, "the page's own timing")
        single_s = _seconds_to_results(alone)
        assert alone.failed == [], alone.failed
    finally:
        alone.close()

    sessions = [Session(browser, team.url) for _ in range(SESSIONS)]
    try:
        for s in sessions:
            s.open()
        for s in sessions:
            s.opened()
        # Ctrl+Enter sends each question to its replica before Run is clicked (one websocket, in
        # order): the results show which question each session's run answered.
        for i, s in enumerate(sessions):
            _type_question(s, _question(i).question)
            _arm(s, _question(i))
        for s in sessions:
            expect(kit.main_area(s.page).get_by_role("button", name="Run")).to_be_enabled()
        # Each page clicks its own Run at the same moment, by the machine's clock (a driver
        # clicking 20 busy pages one after another spread the clicks over 20 s: not at once).
        at_ms = (time.time() + CLICK_AFTER_S) * 1000
        for s in sessions:
            assert s.page.evaluate(_CLICK_RUN_AT, at_ms) == 1, "not one Run button in the main area"
        for i, s in enumerate(sessions):
            expect(_results_for(s, _question(i))).to_be_visible(timeout=kit.RUN_TIMEOUT_MS)
        burst_s = time.time() - at_ms / 1000
        for s in sessions:
            _wait(lambda s=s: s.page.evaluate("() => window.__rr.done") is not None, "the page's own timing")
        took = sorted(_seconds_to_results(s) for s in sessions)
        clicks_ms = [s.page.evaluate("() => window.__rr.click") for s in sessions]
        clicked_s = (max(clicks_ms) - min(clicks_ms)) / 1000
        kit.shot(sessions[0].page, ARTIFACTS / "01_one_of_20_sessions.png", full=False)
        kit.shot(sessions[-1].page, ARTIFACTS / "02_another_of_20_sessions.png", full=False)
        errors = [f"session {i}: {e}" for i, s in enumerate(sessions) for e in s.failed]
        assert errors == [], errors
        per_replica = Counter(s.replicas[0] for s in sessions)
        assert all(len(set(s.replicas)) == 1 for s in sessions), "a session reached both replicas"
    finally:
        for s in sessions:
            s.close()
    median = statistics.median(took)
    print(
        f"\n{SESSIONS} sessions at once across {dict(per_replica)}: Run to results per session (in the page) "
        f"median {median:.1f} s, slowest {took[-1]:.1f} s; one session alone {single_s:.1f} s; "
        f"ratio median {median / single_s:.1f}x, slowest {took[-1] / single_s:.1f}x (target <= 2.5x); "
        f"the 20 clicks spread over {clicked_s:.1f} s, all results seen {burst_s:.1f} s after the clicks"
    )
    # No bound on the ratio: each replica is one Python process sharing 2 cores with 21 browser tabs.
    assert len(per_replica) == 2, f"every session landed on one replica: {dict(per_replica)}"


def _contract(i: int) -> bytes:
    from rr_core.documents import pdf_from_texts

    pages = [f"Supply agreement {i}, schedule page {p}. Deliveries are weekly. " * 25 for p in range(3)]
    pages[1] += f" This Agreement is governed by the laws of the State of {['Texas', 'Ohio', 'Utah'][i % 3]}."
    return pdf_from_texts(pages, title=f"Agreement {i}")


def _cli(team: Team, *args: str) -> Any:
    env = {
        **{k: v for k, v in os.environ.items() if k not in kit.PROVIDER_VARIABLES},
        "RR_STUDIO_DB": team.db_url,
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "rr_core", "--json", "--user", "ana", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_replica_killed_during_a_grid_the_worker_goes_on_nothing_lost_or_paid_twice(
    team: Team, stub: StubServer, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    from rr_core.store import open_store
    from rr_core.work import review_cells

    files = []
    for i in range(GRID_DOCUMENTS):
        path = tmp_path / f"agreement_{i}.pdf"
        path.write_bytes(_contract(i))
        files.append(str(path))
    columns = tmp_path / "columns.csv"
    columns.write_text(COLUMNS)
    stub.clear()

    # A browser on one of the replicas: that replica is the one killed.
    session = Session(browser, team.url)
    try:
        session.open()
        session.opened()
        settle(session.page)
        victim = session.replicas[-1]
        survivor = next(name for name in team.replicas if name != victim)

        # Four calls are answered (two documents: a document's cells are recorded together), then
        # the stub holds the rest until the replica is killed and the grid is seen part done
        # (however fast the machine runs it; the grid is submitted once the browser is up, so
        # the held call waits only for the kill and one CLI call).
        stub.hold_after(4)
        submitted = _cli(
            team, "review", *files, "--questions", str(columns), "--provider", "openai", "--model", "gpt-4.1-mini",
            "--method", "baseline", "--concurrency", "1", "--processes", "1", "--submit",
        )  # fmt: skip
        work_id = submitted["work_id"]
        total = GRID_DOCUMENTS * 2

        watcher = open_store(team.db_url, owner="ana")

        def done() -> int:
            if team.worker is None or team.worker.poll() is not None:
                raise AssertionError(f"the worker exited:\n{team.log_tails()}")
            record = watcher.get_work(work_id)
            return 0 if record is None else int(record.done)

        _wait(lambda: done() >= 3, "three cells from the worker")
        team.replicas[victim].kill()  # -9, mid-grid
        team.replicas[victim].wait(30)
        before = {c.key: c.run_id for c in review_cells(watcher, work_id)}
        shown = _cli(team, "work", "--show", work_id)  # another process, from the database
        assert shown["state"] == "running" and 3 <= shown["done"] < total, shown
        assert len(before) >= 3
        stub.release_calls()

        # The browser that was on the dead replica: nginx sends it to the other one.
        killed_at = time.time()
        session.failed.clear()
        session.page.reload()
        session.opened()
        settle(session.page)
        assert set(session.replicas_since(killed_at)) == {survivor}, (victim, session.seen)
        assert session.failed == [], session.failed
        kit.shot(session.page, ARTIFACTS / "03_after_a_replica_died.png", full=False)

        progress = [shown["done"]]

        def finished() -> bool:
            now = _cli(team, "work", "--show", work_id)
            progress.append(now["done"])
            return bool(now["state"] == "done")

        _wait(finished, "the worker to finish the grid", 240)
        expect(kit.main_area(session.page).get_by_role("heading", name="Ask a long document")).to_be_visible()
    finally:
        session.close()
    cells = review_cells(watcher, work_id)
    assert len(cells) == total and all(c.ok for c in cells), [c.error for c in cells if c.error]
    after = {c.key: c.run_id for c in cells}
    assert all(after[key] == run for key, run in before.items()), "a cell recorded before the kill was redone"
    assert progress == sorted(progress) and progress[-1] == total
    sent = Counter(
        prompt_of(r.body) for r in stub.requests if r.path.endswith(("/responses", "/chat/completions"))
    )
    assert sum(sent.values()) >= total and all(n == 1 for n in sent.values()), "a call was sent twice"
    print(
        f"\ngrid of {total} cells: {len(before)} recorded when a replica was killed; progress seen {progress}"
    )


# ---- Signed in: two users on the two replicas ----------------------------------------------------


@pytest.fixture(scope="module")
def signed_in_team(
    chromium: str, postgres_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Team]:
    """Another deployment (no worker) with sign-in: a mock OpenID provider and the same ``[auth]``
    secrets on both replicas, whose redirect URI is nginx's address."""
    from tests.test_browser_signin import mock_provider

    base = tmp_path_factory.mktemp("signed-in")
    database = postgres_server.new_database()
    try:
        with mock_provider(base / "provider") as provider:
            secrets_text = (
                "[auth]\n"
                'redirect_uri = "@URL@/oauth2callback"\n'
                f'cookie_secret = "{secrets.token_hex(32)}"\n'
                'client_id = "rr-studio-team-test"\n'
                f'client_secret = "{secrets.token_hex(16)}"\n'
                f'server_metadata_url = "{provider.url}/.well-known/openid-configuration"\n'
            )
            with deployment(base / "app", postgres_server.url(database), secrets=secrets_text) as t:
                yield t
    finally:
        from rr_core.store.postgres import close_pools

        close_pools()
        postgres_server.drop_database(database)


def _affinity_key(team: Team, replica: str) -> str:
    """A value of the affinity cookie that nginx sends to ``replica``."""
    for i in range(200):
        key = f"key-{i}"
        request = urllib.request.Request(
            f"{team.url}/_stcore/health", headers={"Cookie": f"rr_replica={key}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            if response.headers.get("X-RR-Replica") == replica:
                return key
    raise AssertionError(f"no affinity key found for {replica}")


def _pinned(browser: Any, team: Team, replica: str) -> Session:
    """A fresh browser whose affinity cookie sends it to ``replica``."""
    session = Session(browser, team.url)
    session.context.add_cookies(
        [{"name": "rr_replica", "value": _affinity_key(team, replica), "url": team.url}]
    )
    return session


def test_two_users_signed_in_on_the_two_replicas_each_see_only_their_own_history(
    signed_in_team: Team, browser: Any
) -> None:
    from playwright.sync_api import expect

    from tests.test_browser_signin import email, open_history, sign_in

    first, second = sorted(signed_in_team.replicas)
    ann = _pinned(browser, signed_in_team, first)
    try:
        sign_in(ann.page, signed_in_team.url, "ann")
        kit.main_area(ann.page).get_by_role("button", name="Run").click()
        expect(kit.main_area(ann.page).get_by_role("heading", name="Results")).to_be_visible(
            timeout=kit.RUN_TIMEOUT_MS
        )
        settle(ann.page)
        open_history(ann.page)
        expect(
            kit.main_area(ann.page).get_by_text(re.compile(rf"^Runs of {email('ann')} in "))
        ).to_be_visible()
        expect(kit.main_area(ann.page).get_by_text(re.compile(r"1 question, 2 runs stored"))).to_be_visible()
        kit.shot(ann.page, ARTIFACTS / "04_ann_history_replica_1.png", full=False)
        assert set(ann.replicas) == {first} and ann.failed == [], (ann.seen, ann.failed)
    finally:
        ann.close()

    bob = _pinned(browser, signed_in_team, second)
    try:
        sign_in(bob.page, signed_in_team.url, "bob")
        open_history(bob.page)
        expect(
            kit.main_area(bob.page).get_by_text(re.compile(rf"^Runs of {email('bob')} in "))
        ).to_be_visible()
        expect(kit.main_area(bob.page).get_by_text("No runs yet.", exact=False)).to_be_visible()
        expect(kit.main_area(bob.page).get_by_text(re.compile(r"runs? stored"))).to_have_count(0)
        kit.shot(bob.page, ARTIFACTS / "05_bob_history_replica_2.png", full=False)
        assert set(bob.replicas) == {second} and bob.failed == [], (bob.seen, bob.failed)
    finally:
        bob.close()

    # Ann again, on the other replica: her run is there (one database), Bob's screen showed none.
    again = _pinned(browser, signed_in_team, second)
    try:
        sign_in(again.page, signed_in_team.url, "ann")
        open_history(again.page)
        expect(
            kit.main_area(again.page).get_by_text(re.compile(r"1 question, 2 runs stored"))
        ).to_be_visible()
        assert set(again.replicas) == {second} and again.failed == [], (again.seen, again.failed)
    finally:
        again.close()


@pytest.mark.parametrize("required", [False, True])
def test_without_nginx_the_team_tests_skip_saying_why_unless_required(tmp_path: Path, required: bool) -> None:
    """A machine without nginx: skipped, with the command that installs it; under ``.ci/run``
    (``RR_REQUIRE_TEAM=1``) the same is a failure. Nothing is started either way."""
    env = dict(os.environ) | {NGINX_ENV: str(tmp_path / "no-nginx-here")}
    env.pop(REQUIRE_TEAM, None)
    if required:
        env[REQUIRE_TEAM] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/test_team.py::test_a_browser_keeps_to_one_replica_its_upload_included"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if required:
        assert done.returncode == 1 and "1 error" in done.stdout, done.stdout
        assert "RR_REQUIRE_TEAM=1 but nginx is not installed (Debian: apt-get install nginx)" in done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
        assert "nginx is not installed (Debian: apt-get install nginx)" in done.stdout
