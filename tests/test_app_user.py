"""Who uses the app: single-user mode (its sidebar line, the first-run notice, History's line)
and team mode (the sign-in gate, the identity token's expiry, each user's own history).

AppTest sets the secrets a run reads (``at.secrets``) and what ``st.user`` holds
(``at.user``: the identity token's claims, as Streamlit copies them from its cookie), so the
gate is driven here without a provider; ``tests/test_browser_signin.py`` signs in for real.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from pages.common.text import md
from rr_core.llm.offline import OfflineEngine
from rr_core.methods import parse_spec, plan_questions
from rr_core.privacy import NOTICE_SUFFIX
from rr_core.questions import Question
from rr_core.runs import Executor
from rr_core.samples import questions_middle_first
from rr_core.settings import RunSettings
from rr_core.signin import Identity, NoSignIn, identity_of, sign_in_id
from rr_core.sources import sample_document
from rr_core.store import LOCAL_OWNER, open_store
from rr_core.tokens import counter_for_model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 240
PRICE_MODEL = "gpt-4.1-mini"
ISSUER = "https://id.example.org"
# What a configured [auth] section looks like to the app (never used to reach a provider here).
AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "not-a-secret",
    "client_id": "rr-studio",
    "client_secret": "not-a-secret",
    "server_metadata_url": f"{ISSUER}/.well-known/openid-configuration",
}
NOTICE = "Where your history is kept"


def claims(who: str, *, expires_in: float = 3_600, **more: Any) -> dict[str, Any]:
    """``st.user`` of a signed-in user whose identity token expires in ``expires_in`` seconds."""
    now = time.time()
    return {
        "is_logged_in": True,
        "iss": ISSUER,
        "sub": f"{who}-0001",
        "email": f"{who}@example.org",
        "iat": int(now) - 60,
        "exp": int(now + expires_in),
    } | more


def app(*, team: bool = False, user: dict[str, Any] | None = None, **state: Any) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if team:
        at.secrets["auth"] = dict(AUTH)
    if user is not None:
        at.user = user
    for key, value in state.items():
        at.session_state[key] = value
    return at


def ran(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(elements: Any) -> list[str]:
    return [e.value for e in elements]


def notice_shown(at: AppTest) -> bool:
    return any(NOTICE in m for m in texts(at.sidebar.markdown))


def save_run(owner: str = LOCAL_OWNER, url: Path | None = None) -> str:
    """A question asked on the contract sample with the offline engine, saved as ``owner``."""
    counter = counter_for_model(PRICE_MODEL)
    document = sample_document("contract", counter)
    question = Question(questions_middle_first("contract")[0].question)
    base = RunSettings(method="baseline", model="offline", provider="offline", price_model=PRICE_MODEL)
    plans = plan_questions(document, [question], parse_spec("baseline", base), counter)
    with Executor(OfflineEngine(counter), concurrency=1) as executor:
        traces = executor.run(document, plans)
    return open_store(url, owner=owner).save_batch(traces)


# ---- Who the claims sign in ------------------------------------------------------------------


def test_the_identity_is_the_issuer_and_subject_until_the_token_expires() -> None:
    now = time.time()
    found = identity_of(claims("ann"), now)
    assert found == Identity(f"{ISSUER}#ann-0001", "ann@example.org", signed_in=True)
    # The same person signed in again later (a new token) is the same owner.
    assert identity_of(claims("ann", expires_in=60, iat=int(now)), now) == found
    assert identity_of(claims("ann", expires_in=-1), now) is NoSignIn.EXPIRED
    assert identity_of(claims("ann", expires_in=0.5), now + 1) is NoSignIn.EXPIRED
    # Streamlit does not check expiry; a token without one is not taken as never expiring.
    no_exp = {k: v for k, v in claims("ann").items() if k != "exp"}
    assert identity_of(no_exp, now) is NoSignIn.EXPIRED
    assert identity_of(claims("ann", exp="soon"), now) is NoSignIn.EXPIRED
    assert identity_of({"email": "test@example.com"}, now) is NoSignIn.SIGNED_OUT
    assert identity_of(claims("ann", is_logged_in=False), now) is NoSignIn.SIGNED_OUT
    assert identity_of(claims("ann", sub="", email=""), now) is NoSignIn.NO_SUBJECT
    by_email = identity_of(claims("ann", sub=""), now)
    assert isinstance(by_email, Identity) and by_email.owner == "ann@example.org"


# ---- Single-user mode --------------------------------------------------------------------------


def test_a_sign_in_id_is_the_same_for_every_copy_of_its_cookie_and_new_at_the_next_sign_in() -> None:
    first = claims("ann", nonce="n-1")
    assert sign_in_id(first) == sign_in_id(copy.deepcopy(first)) == sign_in_id({**first, "name": "Ann"})
    assert sign_in_id(first) != sign_in_id({**first, "nonce": "n-2"})
    assert sign_in_id(first) != sign_in_id({**first, "iat": first["iat"] + 1})
    assert sign_in_id(first) != sign_in_id({**first, "sub": "bob-0001"})


def test_single_user_mode_says_so_and_the_first_run_notice_shows_once(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite3"
    at = ran(app())
    assert f"Single-user mode: no sign-in; history in {md(store)}." in texts(at.sidebar.caption)
    assert not [b for b in at.button if b.key in ("sign_in", "sign_out")]
    notice = next(m for m in texts(at.sidebar.markdown) if NOTICE in m)
    assert f"`{store}`" in notice and "unencrypted" in notice
    assert "`./.rr_studio/runs.sqlite3`" in " ".join(texts(at.sidebar.markdown))
    assert any("RR_STUDIO_DB=.rr_studio/runs.sqlite3" in c for c in texts(at.sidebar.caption))
    # Another screen of the same session, before dismissing: still there.
    at.switch_page("pages/history.py").run()
    assert notice_shown(at)
    at.button(key="notice_ok").click().run()
    assert not notice_shown(at)
    assert (tmp_path / f"runs.sqlite3{NOTICE_SUFFIX}").is_file()  # remembered beside the store
    # A new session (another browser, the app started again): not shown again.
    assert not notice_shown(ran(app()))


def test_no_notice_on_a_store_that_already_has_runs() -> None:
    save_run()
    assert not notice_shown(ran(app()))


def test_the_notice_switches_the_session_to_a_per_project_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "matter"
    project.mkdir()
    monkeypatch.chdir(project)
    at = ran(app())
    at.button(key="notice_project").click().run()
    assert not at.exception and not notice_shown(at)
    chosen = project / ".rr_studio" / "runs.sqlite3"
    assert f"Single-user mode: no sign-in; history in {md(chosen)}." in texts(at.sidebar.caption)
    assert (chosen.parent / ".gitignore").read_text().splitlines()[-1] == "*"
    # The session's runs go to the project's file, not to RR_STUDIO_DB's.
    at.button(key="run").click().run()
    assert not at.exception
    assert open_store(chosen).count() == 2 and open_store().count() == 0
    at.switch_page("pages/history.py").run()
    assert f"Runs of this machine's single user in {md(chosen)}." in " ".join(texts(at.caption))
    # The notice was for the default store: it is not shown again there.
    assert (tmp_path / f"runs.sqlite3{NOTICE_SUFFIX}").is_file()


def test_history_says_whose_runs_it_shows(tmp_path: Path) -> None:
    save_run()
    at = ran(app())
    at.switch_page("pages/history.py").run()
    assert not at.exception
    line = f"Runs of this machine's single user in {md(tmp_path / 'runs.sqlite3')}."
    assert any(c.startswith(line) for c in texts(at.caption))


# ---- Team mode ---------------------------------------------------------------------------------


def _nothing_but_sign_in(at: AppTest) -> None:
    assert [b.key for b in at.button] == ["sign_in"]
    assert texts(at.title) == ["R&R Studio"]
    assert not at.sidebar.children  # no engine, no parameters, no history's location
    assert not at.text_area and not at.selectbox and not at.dataframe and not notice_shown(at)


def test_with_auth_configured_nothing_but_sign_in_is_drawn_until_signed_in() -> None:
    save_run()  # the local user's runs: never shown to anyone in team mode
    at = ran(app(team=True))
    _nothing_but_sign_in(at)
    assert not at.warning
    at.switch_page("pages/history.py").run()  # a screen opened by its address: the same gate
    _nothing_but_sign_in(at)
    at.user = claims("ann")
    ran(at)
    assert texts(at.title) == ["History"]
    assert "Signed in as **ann@\u2060example\\.org**." in texts(at.sidebar.caption)
    assert at.sidebar.button(key="sign_out")
    assert not notice_shown(at)  # the first-run notice is single-user mode's
    assert any("No runs yet" in i for i in texts(at.info))  # not the local user's run


def test_an_expired_sign_in_shows_the_sign_in_screen_again() -> None:
    at = ran(app(team=True, user=claims("ann")))
    at.button(key="run").click().run()
    assert "results" in at.session_state
    at.user = claims("ann", expires_in=-5)  # the token's exp has passed since the session began
    ran(at)
    _nothing_but_sign_in(at)
    assert texts(at.warning) == ["Your sign-in expired. Sign in again to go on."]
    assert "results" not in at.session_state  # nothing of the session is kept for the next user
    no_exp = {k: v for k, v in claims("ann").items() if k != "exp"}
    at = ran(app(team=True, user=no_exp))
    _nothing_but_sign_in(at)
    assert texts(at.warning) == ["Your sign-in expired. Sign in again to go on."]


def test_a_token_that_expires_during_a_run_is_current_for_all_of_that_run_and_expired_at_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run checks the sign-in for the screens' links (app.py), then for the screen: a token
    expiring between the two checks once left the links beside the sign-in screen (seen on a
    loaded machine). The run's checks are now made at one time: its start."""
    import rr_core.signin as signin

    user = claims("ann")
    exp = float(user["exp"])
    reads: list[float] = []

    class Clock:  # the sign-in checks' clock only: the token's exp passes right after the first read
        @staticmethod
        def time() -> float:
            reads.append(exp - 1 if not reads else exp + 1)
            return reads[-1]

    monkeypatch.setattr(signin, "time", Clock)
    at = ran(app(team=True, user=user))
    assert texts(at.title) == ["Ask a long document"] and at.sidebar.children  # current, for the whole run
    assert reads == [exp - 1]  # read once, at the run's start
    ran(at)  # the next run: expired, for all of it
    _nothing_but_sign_in(at)
    assert texts(at.warning) == ["Your sign-in expired. Sign in again to go on."]


def test_signing_out_shows_the_sign_in_screen() -> None:
    ann = claims("ann", nonce="n-1")
    at = ran(app(team=True, user=ann))
    elsewhere = ran(app(team=True, user=dict(ann)))  # the same cookie, copied to another browser
    assert texts(elsewhere.title) == ["Ask a long document"]
    at.button(key="run").click().run()
    assert "results" in at.session_state
    at.sidebar.button(key="sign_out").click().run()
    assert "results" not in at.session_state
    assert not at.exception and not at.title  # the screen is not drawn for the user who left
    ran(at)  # the session the browser opens after the provider's sign-out
    _nothing_but_sign_in(at)
    # The sign-in ended on the server: the copied cookie's session, at its next run, and a new
    # session opened with it get the sign-in screen; the user's next sign-in opens the app.
    _nothing_but_sign_in(ran(elsewhere))
    _nothing_but_sign_in(ran(app(team=True, user=dict(ann))))
    again = ran(app(team=True, user=claims("ann", nonce="n-2", iat=ann["iat"] + 30)))
    assert texts(again.title) == ["Ask a long document"]
    bob = ran(app(team=True, user=claims("bob", nonce="n-1", iat=ann["iat"])))  # another user's: untouched
    assert texts(bob.title) == ["Ask a long document"]


def test_each_user_sees_only_their_own_runs(tmp_path: Path) -> None:
    at = ran(app(team=True, user=claims("ann")))
    at.button(key="run").click().run()
    assert not at.exception
    ann = open_store(owner=f"{ISSUER}#ann-0001")
    assert ann.count() == 2 and open_store().count() == 0
    at.switch_page("pages/history.py").run()
    line = f"Runs of ann@\u2060example\\.org in {md(tmp_path / 'runs.sqlite3')}."
    assert any(c.startswith(line) for c in texts(at.caption))
    assert len(at.dataframe[0].value) == 1
    bob = ran(app(team=True, user=claims("bob")))
    bob.switch_page("pages/history.py").run()
    assert any("No runs yet" in i for i in texts(bob.info)) and not bob.dataframe


def test_a_prompt_view_cached_for_one_user_is_not_shown_to_another() -> None:
    # The Document screen caches each prompt's view in the process (shared by every session) by
    # the run's id; ids are unique per owner only (a migrated run is "v1-<row>"), so two users'
    # runs may share one. Each must see their own prompt.
    at = ran(app(team=True, user=claims("ann")))
    at.button(key="run").click().run()
    results = at.session_state["results"]
    results["traces"][0].run_id = "v1-1"  # the baseline run; the R&R run keeps its own id
    at = ran(app(team=True, user=claims("ann"), results=results))
    at.switch_page("pages/document.py").run()
    at.selectbox(key="w.doc_show").set_value(("run", 0)).run()
    assert not at.exception and not at.text[0].value.startswith("BOB'S PROMPT")
    theirs = copy.deepcopy(results)
    theirs["traces"][0].calls[0].prompt = "BOB'S PROMPT: " + theirs["traces"][0].calls[0].prompt
    bob = ran(app(team=True, user=claims("bob"), results=theirs))
    bob.switch_page("pages/document.py").run()
    bob.selectbox(key="w.doc_show").set_value(("run", 0)).run()
    assert not bob.exception
    assert bob.text[0].value.startswith("BOB'S PROMPT")
