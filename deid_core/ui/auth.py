"""Who is signed in, decided afresh on every page run.

``authorise`` runs at the top of ``app.py`` and of every page (through
``guard``): it restores a session from the signed cookie after a reload,
applies the idle timeout, and re-reads the user's role and active flag from the
database, so that a deactivated or demoted user loses access on the next click.
The cookie itself is written by :func:`deid_core.ui.component.session_cookie`
from ``state["cookie"]``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import MutableMapping
from typing import Any

from sqlalchemy.engine import Engine

from deid_core.errors import NotFound
from deid_core.store.users import get_user
from deid_core.ui import session_token as tokens
from deid_core.ui.session import (
    SessionUser,
    check_idle,
    current_user,
    idle_timeout_seconds,
    init_state,
    sign_in,
    sign_out,
)

log = logging.getLogger(__name__)


def start_session(state: MutableMapping[str, Any], username: str, role: str, *,
                  secret: bytes | None = None, now: float | None = None) -> None:
    """Sign in and hand the browser a fresh token (written to the cookie on this run)."""
    t = time.time() if now is None else now
    sign_in(state, username, role, now=t)
    key = tokens.session_secret() if secret is None else secret
    value = tokens.issue(username, key, now=t)
    state["session_token"] = tokens.read(value, key, idle_seconds=idle_timeout_seconds(), now=t)
    state["cookie"] = value


def end_session(state: MutableMapping[str, Any], message: str | None = None) -> None:
    """Sign out here and everywhere this token was copied; the cookie is cleared."""
    token = state.get("session_token")
    if isinstance(token, tokens.SessionToken):
        tokens.revoke(token)
    sign_out(state, message)
    state["cookie"] = ""


def authorise(
    state: MutableMapping[str, Any],
    engine: Engine,
    cookie: str | None,
    *,
    secret: bytes | None = None,
    now: float | None = None,
) -> SessionUser | None:
    """The user this run acts for, or ``None``; ``state`` is updated accordingly."""
    init_state(state)
    t = time.time() if now is None else now
    idle = idle_timeout_seconds()
    if current_user(state) is None and cookie:
        key = tokens.session_secret() if secret is None else secret
        token = tokens.read(cookie, key, idle_seconds=idle, now=t)
        if token is None:
            state["cookie"] = ""  # expired, signed out or forged: drop it
        else:
            sign_in(state, token.username, "reviewer", now=t)  # the role is read just below
            state["session_token"] = token
            log.info("user %s resumed a session", token.username)
    user = current_user(state)
    if user is None:
        return None
    held = state.get("session_token")
    if check_idle(state, now=t, timeout=idle):  # signs out, with a message
        if isinstance(held, tokens.SessionToken):
            tokens.revoke(held)
        state["cookie"] = ""
        return None
    try:
        info = get_user(engine, user.username)
    except NotFound:
        info = None
    if info is None or not info.active:
        log.info("user %s refused: account missing or deactivated", user.username)
        end_session(state, "Your account was deactivated. Ask an administrator.")
        return None
    if info.role != user.role:
        log.info("user %s now has role %s", user.username, info.role)
        state["user"] = user = SessionUser(user.username, info.role)
    token = state.get("session_token")
    if isinstance(token, tokens.SessionToken):
        key = tokens.session_secret() if secret is None else secret
        fresh = tokens.refreshed(token, key, now=t)
        if fresh is not None:
            state["cookie"] = fresh
            state["session_token"] = tokens.read(fresh, key, idle_seconds=idle, now=t)
    return user
