"""Who a sign-in names: the identity token's claims (as Streamlit's ``st.user`` holds them) read
into the owner of a run store, with the token's expiry checked.

Streamlit copies the ID token's claims when a session starts and never checks ``exp``: a token
that has expired, or that has no ``exp`` at all, signs no one in here. The owner is
``<issuer>#<sub>``: ``sub`` is the provider's stable, never reassigned id of the user (an email
can change hands), and the issuer keeps two providers' ids apart.

Signing out ends the sign-in on the server too: its id (``sign_in_id``: a digest of the claims
that tell one sign-in from another, ``iat``, ``nonce``, ``sid``…) is kept in the store as ended,
and a session whose claims carry an ended sign-in is signed out, whatever cookie it came with.
"""

from __future__ import annotations

import enum
import hashlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rr_core.store import LOCAL_OWNER


@dataclass(frozen=True, slots=True)
class Identity:
    """The user the screens work for."""

    owner: str  # whose rows the run store reads and writes
    name: str  # how the screens name them
    signed_in: bool  # False: single-user mode (no sign-in)
    # The email the sign-in carried ("": none), recorded so that ``--user EMAIL`` finds the owner;
    # not part of who the user is (an email can change hands; the owner cannot).
    email: str = field(default="", compare=False)


SINGLE_USER = Identity(LOCAL_OWNER, "this machine's single user", signed_in=False)


class NoSignIn(enum.Enum):
    """Why a session with sign-in configured has no user to work for."""

    SIGNED_OUT = "signed out"
    EXPIRED = "expired"  # the identity token's ``exp`` has passed, or it has none
    NO_SUBJECT = "no subject"  # the provider named no one (no ``sub``, no ``email``)


def _text(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(name)
    return value.strip() if isinstance(value, str) else ""


def _expiry(claims: Mapping[str, Any]) -> float | None:
    value = claims.get("exp")
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


_CHECKED_AT = threading.local()  # the time a thread's sign-in checks are made at, while one is pinned


@contextmanager
def one_check_time() -> Iterator[float]:
    """Within the block, this thread's sign-in checks (``identity_of`` without ``now``) are
    all made at the time it began: one app run decides once, so the screens' links and the
    screen agree (a token that expires during the run is expired from the next run on; checked
    twice, it could be current for the links and expired for the screen)."""
    outer = getattr(_CHECKED_AT, "now", None)
    _CHECKED_AT.now = now = time.time() if outer is None else outer
    try:
        yield now
    finally:
        _CHECKED_AT.now = outer


def identity_of(claims: Mapping[str, Any], now: float | None = None) -> Identity | NoSignIn:
    """The user these claims sign in at ``now`` (seconds since the epoch; None: the time
    pinned by ``one_check_time``, else the clock's), or why there is none. Without a ``sub``,
    the email is the owner."""
    if claims.get("is_logged_in") is not True:
        return NoSignIn.SIGNED_OUT
    expires = _expiry(claims)
    if now is None:
        now = getattr(_CHECKED_AT, "now", None)
    if expires is None or (time.time() if now is None else now) >= expires:
        return NoSignIn.EXPIRED
    subject, issuer, email = _text(claims, "sub"), _text(claims, "iss"), _text(claims, "email")
    if subject:
        owner = f"{issuer}#{subject}" if issuer else subject
    elif email:
        owner = email
    else:
        return NoSignIn.NO_SUBJECT
    name = email or _text(claims, "name") or _text(claims, "preferred_username") or subject
    return Identity(owner, name, signed_in=True, email=email)


# The claims that tell one sign-in from the next of the same user: when the token was issued,
# the nonce of its request, the provider's session, and the user's own.
_SIGN_IN_CLAIMS = ("iss", "sub", "email", "iat", "auth_time", "nonce", "sid", "exp")


def sign_in_id(claims: Mapping[str, Any]) -> str:
    """The id of the sign-in these claims come from (the same for every copy of its cookie, a
    new one at the next sign-in)."""
    picked = {name: claims.get(name) for name in _SIGN_IN_CLAIMS if claims.get(name) is not None}
    return hashlib.sha256(json.dumps(picked, sort_keys=True, default=str).encode()).hexdigest()
