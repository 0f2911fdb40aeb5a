"""Signed, expiring session tokens: a page reload keeps the reviewer signed in.

Streamlit's ``st.session_state`` dies with the browser tab's websocket, so a
reload used to sign the user out. The app now also keeps a token in a cookie
(written by a tiny component, read back with ``st.context.cookies`` when the
next session starts). The token proves only *who* signed in and *when they were
last active*; it carries no role. The role is re-read from the database on
every page run, so a deactivated or demoted user loses access on their next
click, whatever their cookie says.

Format: ``v1~<username>~<session id>~<issued>~<seen>~<hmac>`` (times in whole
seconds), HMAC-SHA256 over everything before the last ``~`` with a server secret
(``DEID_SESSION_SECRET``, else a 0600 file ``secrets/session.key`` in the data
directory). A token is refused when its signature is wrong, when ``seen`` is
older than the idle timeout, when ``issued`` is older than ``MAX_AGE_SECONDS``,
or when its session id was signed out (kept in memory until it would expire
anyway; a server restart forgets sign-outs, which the idle timeout bounds).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

COOKIE_NAME = "deid_session"
#: However active the user, a token older than this is refused: sign in again once a day.
MAX_AGE_SECONDS = 12 * 3600
#: The cookie is rewritten when its activity stamp is older than this (not on every run).
REFRESH_SECONDS = 60
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")  # as the store allows; no "~"
_REVOKED: dict[str, float] = {}  # session id -> when the token would have expired anyway
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class SessionToken:
    username: str
    sid: str
    issued: int
    seen: int


def session_secret() -> bytes:
    """``DEID_SESSION_SECRET``, else ``<data dir>/secrets/session.key`` (created 0600)."""
    explicit = os.environ.get("DEID_SESSION_SECRET")
    if explicit:
        return explicit.encode("utf-8")
    from deid_core.protect.surrogate_map import load_or_create_secret
    from deid_core.ui.exporting import data_dir

    return load_or_create_secret(Path(data_dir()) / "secrets" / "session.key")[0]


def _sign(body: str, secret: bytes) -> str:
    return hmac.new(secret, body.encode("utf-8"), hashlib.sha256).hexdigest()


def issue(username: str, secret: bytes, *, now: float | None = None, sid: str | None = None,
          issued: int | None = None) -> str:
    if not _USERNAME.match(username):
        raise ValueError("username cannot be put in a session token")
    t = int(time.time() if now is None else now)
    body = f"v1~{username}~{sid or secrets.token_hex(16)}~{issued if issued is not None else t}~{t}"
    return f"{body}~{_sign(body, secret)}"


def read(token: str | None, secret: bytes, *, idle_seconds: float, now: float | None = None
         ) -> SessionToken | None:
    """The token's content when it is genuine, fresh and not signed out; else ``None``."""
    if not token or len(token) > 400:
        return None
    body, _, mac = token.rpartition("~")
    if not hmac.compare_digest(mac, _sign(body, secret)):
        return None
    parts = body.split("~")
    if len(parts) != 5 or parts[0] != "v1":
        return None
    try:
        issued, seen = int(parts[3]), int(parts[4])
    except ValueError:
        return None
    t = time.time() if now is None else now
    if t - seen > idle_seconds or t - issued > MAX_AGE_SECONDS or seen > t + 60:
        return None
    with _LOCK:
        if parts[2] in _REVOKED:
            return None
    return SessionToken(parts[1], parts[2], issued, seen)


def refreshed(token: SessionToken, secret: bytes, *, now: float | None = None) -> str | None:
    """A new cookie value when the activity stamp is stale, else ``None`` (cookie unchanged)."""
    t = int(time.time() if now is None else now)
    if t - token.seen < REFRESH_SECONDS:
        return None
    return issue(token.username, secret, now=t, sid=token.sid, issued=token.issued)


def revoke(token: SessionToken, *, now: float | None = None) -> None:
    """Sign a session out: its token is refused from now on, even if a copy survives."""
    t = time.time() if now is None else now
    with _LOCK:
        for sid, until in list(_REVOKED.items()):
            if until < t:
                del _REVOKED[sid]
        _REVOKED[token.sid] = token.issued + MAX_AGE_SECONDS
