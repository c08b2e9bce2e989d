"""Who uses the app and where their history is: the sign-in gate (team mode), the user's line
in the sidebar, and the first-run notice (single-user mode).

**Team mode** is on when the secrets have an ``[auth]`` section: Streamlit's own OIDC sign-in
(``st.login``). Nothing but the sign-in screen is drawn until a user is signed in, and every
screen opens the run store as that user (``rr_core.signin``: the issuer and the ``sub``
claim). Streamlit copies the identity token's claims into ``st.user`` when a session starts
and never checks their expiry: ``require`` does, on every run, and shows the sign-in screen
again once ``exp`` has passed (or when there is none). Signing out ends the sign-in in the store
too: a session that carries it (a copy of the cookie from before, another tab) gets the sign-in
screen at its next run, until the user signs in again.

**Single-user mode** (no ``[auth]``): one user, the store's local owner, and no sign-in, as the
embedded default always was; the sidebar says so, and the first time the app opens on an empty
store a notice says where the history is kept and offers a per-project file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import streamlit as st

from pages.common import state as S
from pages.common.text import md
from rr_core import workbench
from rr_core.errors import RRError
from rr_core.privacy import PROJECT_STORE, dismiss_notice, notice_due, project_store
from rr_core.signin import SINGLE_USER, Identity, NoSignIn, identity_of, one_check_time, sign_in_id
from rr_core.store import DB_ENV, Store

IDENTITY_KEY = "rr.identity"  # the identity the session's state belongs to


def team_mode() -> bool:
    """Whether sign-in is configured (an ``[auth]`` section in the secrets)."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file, or an unreadable one: no sign-in configured
        return False


# What app.py wraps each run in: every sign-in check of the run is made at the run's start.
checked_once = one_check_time


def may_enter() -> bool:
    """Whether the screens may be drawn: single-user mode, or a current sign-in (not ended)."""
    if not team_mode():
        return True
    claims = st.user.to_dict()
    found = identity_of(claims)
    return isinstance(found, Identity) and not _signed_out(found, claims)


def require() -> Identity:
    """The user this run works for. In team mode without a (current) sign-in: the sign-in
    screen, and the run stops there."""
    if not team_mode():
        return _adopt(SINGLE_USER)
    claims = st.user.to_dict()
    found = identity_of(claims)
    if isinstance(found, Identity):
        if not _signed_out(found, claims):
            return _adopt(found)
        found = NoSignIn.SIGNED_OUT
    if IDENTITY_KEY in st.session_state:
        # A sign-in that expired in this session: what it left (results, uploads) is not kept
        # for whoever signs in next.
        _forget_session()
    _sign_in_screen(found)


def _signed_out(identity: Identity, claims: Mapping[str, Any]) -> bool:
    """Whether this sign-in was ended by signing out (in any session: the cookie may be a copy)."""
    try:
        return workbench.open_history(identity.owner, url=store_url()).sign_in_ended(sign_in_id(claims))
    except RRError:
        return False  # a store that cannot open: the screens say so, and show nothing of it


def current() -> Identity:
    """The user the screens work for (``require`` has run at the top of the screen)."""
    known = st.session_state.get(IDENTITY_KEY)
    return known if isinstance(known, Identity) else require()


def _adopt(identity: Identity) -> Identity:
    previous = st.session_state.get(IDENTITY_KEY)
    if isinstance(previous, Identity) and previous.owner != identity.owner:
        _forget_session()  # the session's state is the previous user's
    if identity.email and previous != identity:  # a new sign-in: its email names its owner (--user EMAIL)
        _note_email(identity)
    st.session_state[IDENTITY_KEY] = identity
    return identity


def _note_email(identity: Identity) -> None:
    try:
        store = workbench.open_history(identity.owner, url=store_url())
        store.note_email(identity.email)
    except RRError:  # a store that cannot open: the screens say so; recorded at the next sign-in
        return


def _forget_session() -> None:
    for key in list(st.session_state.keys()):
        del st.session_state[key]


def _sign_in_screen(reason: NoSignIn) -> NoReturn:
    st.set_page_config(page_title="R&R Studio · sign in", layout="centered")
    st.title("R&R Studio")
    if reason is NoSignIn.EXPIRED:
        st.warning("Your sign-in expired. Sign in again to go on.")
    elif reason is NoSignIn.NO_SUBJECT:
        st.error("The sign-in named no user (no sub or email claim): ask your administrator.")
    st.markdown(
        "Sign in to work on your documents. Your questions, runs and grids are yours: "
        "no one else who signs in sees them."
    )
    if st.button("Sign in", type="primary", key="sign_in"):
        st.login()
    st.stop()


# ---- The user's history -------------------------------------------------------------------


def store_url() -> str | None:
    """The store this session chose (a per-project file), or None: ``RR_STUDIO_DB``'s."""
    return S.session().store_url


def history() -> Store:
    """The run store as the current user (``LedgerError`` or ``ConfigError`` when it cannot open)."""
    return workbench.open_history(current().owner, url=store_url())


def cache_scope() -> str:
    """What a cache key needs besides a run's id for a value read from the user's history: whose
    history, and which store (run ids are unique per owner and store, not across them)."""
    return f"{current().owner}|{store_url() or ''}"


def whose_runs(location: str) -> str:
    """The History screen's line: whose runs it shows, and where they are kept."""
    return f"Runs of {md(current().name)} in {md(location)}."


def sidebar_line() -> None:
    """Who is signed in (and the way out), or that the app is in single-user mode."""
    identity = current()
    if identity.signed_in:
        st.caption(
            f"Signed in as **{md(identity.name)}**.", help=f"Your runs are kept as `{identity.owner}`."
        )
        if st.button("Sign out", key="sign_out", type="tertiary"):
            # Ended on the server too: a copy of this session's cookie no longer signs anyone in.
            try:
                history().end_sign_in(sign_in_id(st.user.to_dict()))
            except RRError as exc:
                st.error(f"Could not end the sign-in on the server ({md(exc)}); signing out of this browser.")
            _forget_session()  # nothing of the session is left for whoever uses this browser next
            st.logout()  # the browser goes to the provider's sign-out, then a new session
            st.stop()  # nothing more is drawn for the user who left (a rerun would drop the redirect)
        return
    try:
        where = md(history().location)
    except RRError as exc:
        where = f"a store that cannot open ({md(exc)})"
    st.caption(f"Single-user mode: no sign-in; history in {where}.")


# ---- The first-run notice (single-user mode) -------------------------------------------------


def _use_project_store(seen: str) -> None:
    session = S.session()
    try:
        session.store_url = str(project_store(Path.cwd()))
    except RRError as exc:
        session.notice_error = str(exc)
        return
    _dismiss(seen)


def _dismiss(seen: str) -> None:
    S.session().notice_seen = True
    dismiss_notice(seen)


def first_run_notice() -> None:
    """Once per store, on a store with no runs: where the history is kept, that it holds the
    pages' text unencrypted, and a per-project file instead (single-user mode only)."""
    session = S.session()
    if current().signed_in or session.notice_seen:
        return
    try:
        store = history()
        due = notice_due(store)
    except RRError:
        return  # the screens say why the store cannot open
    if not due:  # runs already, or seen before: not due again in this session
        session.notice_seen = True
        return
    location = store.location
    with st.container(border=True, key="privacy_notice"):
        st.markdown(
            f"**Where your history is kept.** Every question is saved with its prompts (the pages' "
            f"text), **unencrypted**, in `{location}`: whoever can read that file can read them."
        )
        st.markdown(f"To keep this matter's history with its project instead: `./{PROJECT_STORE}`.")
        if session.notice_error:
            st.error(md(session.notice_error))
            session.notice_error = ""
        st.button(
            "Use the project folder",
            key="notice_project",
            on_click=_use_project_store,
            args=(location,),
            width="stretch",
        )
        st.button(
            "Got it", key="notice_ok", on_click=_dismiss, args=(location,), type="primary", width="stretch"
        )
        st.caption(f"To make the project's file the default, start the app with `{DB_ENV}={PROJECT_STORE}`.")
