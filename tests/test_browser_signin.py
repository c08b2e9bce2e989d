"""Sign-in for real, in Chromium: Streamlit's OIDC login (``st.login``) against a mock OpenID
provider, two users, each seeing only their own History.

``oidc-provider-mock`` (requirements-dev.txt) runs as a provider on a loopback port with two
predefined users; the app is started with a secrets file whose ``[auth]`` section points at
it. Ann signs in, asks on the sample and finds the run in History; Bob signs in in a fresh
browser context (no cookies) and his History is empty. Skipped when chromium, Playwright or
the mock cannot start, unless ``RR_REQUIRE_BROWSER=1`` (``.ci/run``): then that fails.
Screenshots go to ``artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import browser_kit as kit
from tests.browser_kit import RUN_TIMEOUT_MS, STARTUP_TIMEOUT_S, UI_TIMEOUT_MS, settle

pytestmark = pytest.mark.browser

ARTIFACTS = kit.ROOT / "artifacts" / "browser"
USERS = {
    "ann": {"sub": "ann", "email": "ann@example.org", "name": "Ann Analyst"},
    "bob": {"sub": "bob", "email": "bob@example.org", "name": "Bob Reviewer"},
}
main = kit.main_area
UI_TIMEOUT_S = UI_TIMEOUT_MS / 1000


def _unavailable(reason: str) -> None:
    """Skip, or fail where the browser is required (CI)."""
    if os.environ.get("RR_REQUIRE_BROWSER") == "1":
        pytest.fail(f"RR_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


# ---- The provider, the app, the browser ---------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    url: str  # the issuer
    log: Path


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        return kit.chromium_path()
    except kit.BrowserUnavailable as exc:
        _unavailable(str(exc))
        raise AssertionError("unreachable") from exc


@contextlib.contextmanager
def mock_provider(scratch: Path, *, token_max_age_s: int = 3_600) -> Iterator[Provider]:
    """``oidc-provider-mock`` on a free loopback port, with Ann and Bob as predefined users and
    ID tokens that expire ``token_max_age_s`` after they are issued."""
    try:
        import oidc_provider_mock  # noqa: F401
    except ImportError:
        _unavailable("oidc-provider-mock is not installed (pip install -r requirements-dev.txt)")
    scratch.mkdir(parents=True, exist_ok=True)
    log = scratch / "provider.log"
    port = kit.free_port()
    command = [
        sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", str(port),
        "--token-max-age", str(token_max_age_s),
    ]  # fmt: skip
    for claims in USERS.values():
        command += ["--user-claims", json.dumps(claims)]
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _answers(f"{url}/.well-known/openid-configuration"):
            if process.poll() is not None or time.monotonic() > deadline:
                _unavailable(f"oidc-provider-mock did not start:\n{kit.tail(log)}")
            time.sleep(0.1)
        yield Provider(url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def signin_app(scratch: Path, provider: Provider) -> Iterator[str]:
    """The app with sign-in configured: an ``[auth]`` section pointing at the mock provider."""
    scratch.mkdir(parents=True, exist_ok=True)
    port = kit.free_port()
    secrets_file = scratch / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "rr-studio-test"\n'
        f'client_secret = "{secrets.token_hex(16)}"\n'
        f'server_metadata_url = "{provider.url}/.well-known/openid-configuration"\n'
    )
    try:
        with kit.serve_app(
            scratch,
            port=port,
            options=["--secrets.files", str(secrets_file)],
            # The mock provider speaks plain HTTP on loopback; Authlib refuses it otherwise.
            env={"AUTHLIB_INSECURE_TRANSPORT": "1"},
        ) as server:
            yield server.url
    except kit.ServerFailed as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def app_url(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app and its provider (ID tokens valid for an hour), for the module's tests."""
    scratch = tmp_path_factory.mktemp("signin")
    with mock_provider(scratch / "provider") as provider, signin_app(scratch / "server", provider) as url:
        yield url


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    try:
        with kit.launch_chromium(chromium) as launched:
            yield launched
    except kit.BrowserUnavailable as exc:
        _unavailable(str(exc))


# ---- Driving -----------------------------------------------------------------------------------


def sidebar(page: Any) -> Any:
    return page.locator('[data-testid="stSidebar"]')


def sign_in(page: Any, app_url: str, who: str, *, shot_as: str = "") -> None:
    """Open the app, sign in at the provider as ``who``, and wait for the signed-in app."""
    from playwright.sync_api import expect

    page.goto(app_url)
    button = page.get_by_role("button", name="Sign in")
    expect(button).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
    settle(page)
    # Nothing but the sign-in screen: no screens' links, no sidebar.
    expect(page.locator('[data-testid="stSidebarNav"]')).to_have_count(0)
    expect(sidebar(page)).to_have_count(0)
    if shot_as:
        kit.shot(page, ARTIFACTS / shot_as, full=False)
    button.click()
    # The provider's form, then back to the app through /oauth2callback.
    page.get_by_role("button", name=USERS[who]["sub"], exact=True).click()
    expect(sidebar(page).get_by_text(re.compile(rf"^Signed in as {email(who)}"))).to_be_visible()
    settle(page)


def email(who: str) -> str:
    """A pattern of the user's email as the app writes it (Markdown-escaped, with a word joiner
    after the "@" that keeps it from being turned into a mail link)."""
    name, domain = USERS[who]["email"].split("@")
    return re.escape(name) + "@\u2060?" + re.escape(domain)


def open_history(page: Any) -> None:
    from playwright.sync_api import expect

    sidebar(page).locator('[data-testid="stSidebarNav"]').get_by_role("link", name="History").click()
    expect(main(page).get_by_role("heading", name="History")).to_be_visible()
    settle(page)


# ---- The test ------------------------------------------------------------------------------------


def test_two_users_sign_in_and_each_sees_only_their_own_history(app_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    with kit.new_tab(browser) as page:
        sign_in(page, app_url, "ann", shot_as="signin_00_sign_in.png")
        expect(main(page).get_by_role("heading", name="Ask a long document")).to_be_visible()
        kit.shot(page, ARTIFACTS / "signin_01_signed_in.png", full=False)
        main(page).get_by_role("button", name="Run").click()
        expect(main(page).get_by_role("heading", name="Results")).to_be_visible(timeout=RUN_TIMEOUT_MS)
        settle(page)
        open_history(page)
        expect(main(page).get_by_text(re.compile(rf"^Runs of {email('ann')} in "))).to_be_visible()
        expect(main(page).get_by_text(re.compile(r"1 question, 2 runs stored"))).to_be_visible()
        kit.shot(page, ARTIFACTS / "signin_02_history_ann.png", full=False)

    with kit.new_tab(browser) as page:  # a fresh context: no cookie of Ann's
        sign_in(page, app_url, "bob")
        open_history(page)
        expect(main(page).get_by_text(re.compile(rf"^Runs of {email('bob')} in "))).to_be_visible()
        expect(main(page).get_by_text("No runs yet.", exact=False)).to_be_visible()
        expect(main(page).get_by_text(re.compile(r"runs? stored"))).to_have_count(0)
        kit.shot(page, ARTIFACTS / "signin_03_history_bob.png", full=False)
        # Signing out: the provider's end of session (the mock asks to confirm it), then the
        # sign-in screen again.
        sidebar(page).get_by_role("button", name="Sign out").click()
        page.get_by_role("button", name="End session").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        expect(sidebar(page)).to_have_count(0)


def test_after_signing_out_a_copy_of_the_session_cookie_signs_no_one_in(app_url: str, browser: Any) -> None:
    """Signing out ends the sign-in on the server: the cookie copied before (to another browser)
    gets the sign-in screen, though Streamlit would still accept its signature."""
    from playwright.sync_api import expect

    with kit.new_tab(browser) as page:
        sign_in(page, app_url, "ann")
        copied = page.context.cookies()
        assert any(c["name"].startswith("_streamlit_user") for c in copied), [c["name"] for c in copied]
        with kit.new_tab(browser) as other:  # the copy works while the sign-in lasts
            other.context.add_cookies(copied)
            other.goto(app_url)
            expect(sidebar(other).get_by_text(re.compile(rf"^Signed in as {email('ann')}"))).to_be_visible()
        sidebar(page).get_by_role("button", name="Sign out").click()
        page.get_by_role("button", name="End session").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    with kit.new_tab(browser) as page:
        page.context.add_cookies(copied)
        page.goto(app_url)
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=STARTUP_TIMEOUT_S * 1000)
        settle(page)
        expect(sidebar(page)).to_have_count(0)
        expect(page.get_by_text(re.compile("Signed in as"))).to_have_count(0)
        kit.shot(page, ARTIFACTS / "signin_05_copied_cookie_after_sign_out.png", full=False)


def test_a_sign_in_whose_token_expired_asks_to_sign_in_again(
    chromium: str, browser: Any, tmp_path: Path
) -> None:
    """Streamlit keeps the claims in its cookie and never checks ``exp``: the app does. With ID
    tokens valid for a few seconds, the first rerun after ``exp`` shows the sign-in screen."""
    from playwright.sync_api import expect

    lifetime_s = 8
    with (
        mock_provider(tmp_path / "provider", token_max_age_s=lifetime_s) as provider,
        signin_app(tmp_path / "server", provider) as url,
        kit.new_tab(browser) as page,
    ):
        before = time.time()  # the token is issued after this (its exp: whole seconds)
        sign_in(page, url, "ann")
        expect(main(page).get_by_role("heading", name="Ask a long document")).to_be_visible()

        # Until the token expires, a rerun (the document's source switched) keeps the screen; the
        # first rerun after it shows the sign-in screen.
        def choose(source: str) -> None:
            main(page).locator('[data-testid="stRadio"]').get_by_text(source, exact=True).click()

        expired = page.get_by_text("Your sign-in expired. Sign in again to go on.")
        limit = time.time() + lifetime_s + UI_TIMEOUT_S
        while not expired.count():
            assert time.time() < limit, "the expired sign-in was still accepted"
            choose("My file")
            settle(page)
            if expired.count():
                break
            choose("A sample")
            settle(page)
        assert time.time() >= before + lifetime_s - 1, "signed out before the token expired"
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        kit.shot(page, ARTIFACTS / "signin_04_expired.png", full=False)
        # Nothing left in the sidebar (its empty panel may stay, with only its collapse arrow).
        words = sidebar(page).get_by_text(re.compile(r"\S"))
        expect(words.and_(page.locator(':not([data-testid="stIconMaterial"])'))).to_have_count(0)
        # Signing in again (a new token) opens the app again.
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="ann", exact=True).click()
        expect(sidebar(page).get_by_text(re.compile(rf"^Signed in as {email('ann')}"))).to_be_visible()
