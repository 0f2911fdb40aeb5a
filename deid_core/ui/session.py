"""Per-user session state, set up in one place, with login, roles and idle timeout.

Streamlit's ``st.session_state`` is a per-browser-session mapping; every key the
pages use is created here so that a page never guesses at a missing key. The
functions take the mapping and the clock as arguments, so they are tested
without Streamlit.
"""

from __future__ import annotations

import os
import time
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

ROLES = ("reviewer", "admin")

#: Which role may open which page. Pages not listed are open to every signed-in user.
PAGE_ROLES: dict[str, tuple[str, ...]] = {
    "queue": ("reviewer", "admin"),
    "review": ("reviewer", "admin"),
    "account": ("reviewer", "admin"),
    "bias": ("admin",),
    "model": ("admin",),
    "import": ("admin",),
    "users": ("admin",),
    "export": ("admin",),
}

DEFAULT_IDLE_MINUTES = 30.0


def idle_timeout_seconds() -> float:
    """``DEID_IDLE_MINUTES`` (default 30); a shared workstation must not stay signed in."""
    raw = os.environ.get("DEID_IDLE_MINUTES", "")
    try:
        minutes = float(raw) if raw else DEFAULT_IDLE_MINUTES
    except ValueError:
        minutes = DEFAULT_IDLE_MINUTES
    return max(minutes, 0.05) * 60.0


@dataclass(frozen=True, slots=True)
class SessionUser:
    username: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def _defaults() -> dict[str, Any]:
    return {
        "user": None,  # SessionUser | None
        "project": None,  # name of the project being worked on
        "last_seen": None,  # float seconds
        "session_token": None,  # SessionToken behind the cookie (deid_core.ui.session_token)
        "cookie": None,  # cookie value to write on this run: a token, "" to clear, None: leave
        "flash": [],  # (kind, message) shown once on the next run
        "drafts": {},  # doc id -> EditState: unsaved edits survive reruns
        "opened": {},  # doc id -> store version the reviewer opened (optimistic save base)
        "encoded": {},  # doc id -> (model version, Encoded): re-decode at a new bias fast
        "editor_rev": 0,  # bumps when the server changes the layer (the browser reloads it)
        "editor_seq": None,  # sequence number of the last browser action handled
        "current_doc": None,  # doc id open on the Review page
        "next_docs": [],  # doc ids claimed ahead and sent to the browser with the open note
        "doc_param": None,  # the ?doc= value the Review page last wrote (a different one is a link)
        "review_history": [],  # doc ids accepted in this session, for "B" (back and reopen)
        "session_reviews": [],  # seconds spent on each note saved in this session (pace)
        "patient_phi": {},  # (project, patient, doc) -> PHI strings of the patient's other notes
        "apply_all_plan": None,  # pending apply-to-all preview
        "conflict": None,  # last ReviewConflict for the open document
        "train_job": None,  # background retraining job handle
        "predict_job": None,  # background re-prediction job handle
        "jobs_seen": set(),  # background jobs whose end a full page run has shown
        "import_round": 0,  # bumps after an import: the uploader starts empty again
        "import_report": None,  # what the last import did, shown after its rerun
        "last_export": None,  # the last export's folder and summary: downloads stay on screen
    }


def init_state(state: MutableMapping[str, Any]) -> None:
    """Create every key the pages use; existing values are kept."""
    for key, value in _defaults().items():
        if key not in state:
            state[key] = value


def current_user(state: MutableMapping[str, Any]) -> SessionUser | None:
    user = state.get("user")
    return user if isinstance(user, SessionUser) else None


def sign_in(state: MutableMapping[str, Any], username: str, role: str, now: float | None = None) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    previous = current_user(state)
    if previous is not None and previous.username != username:
        sign_out(state)  # never hand one user's drafts to another
    init_state(state)
    state["user"] = SessionUser(username, role)
    state["last_seen"] = time.time() if now is None else now


def sign_out(state: MutableMapping[str, Any], message: str | None = None) -> None:
    """Forget the user and everything they had open (drafts of other users must not leak)."""
    for key, value in _defaults().items():
        state[key] = value
    if message:
        state["flash"] = [("info", message)]


def check_idle(
    state: MutableMapping[str, Any], now: float | None = None, timeout: float | None = None
) -> bool:
    """Sign out a user idle for longer than ``timeout``; returns True when that happened.

    Otherwise the activity clock is reset: every rerun is user activity.
    """
    now = time.time() if now is None else now
    timeout = idle_timeout_seconds() if timeout is None else timeout
    if current_user(state) is None:
        return False
    last = state.get("last_seen")
    if isinstance(last, (int, float)) and now - last > timeout:
        sign_out(state, "You were signed out after a period of inactivity.")
        return True
    state["last_seen"] = now
    return False


def can_open(user: SessionUser | None, page: str) -> bool:
    if user is None:
        return False
    return user.role in PAGE_ROLES.get(page, ROLES)


def flash(state: MutableMapping[str, Any], kind: str, message: str) -> None:
    state.setdefault("flash", []).append((kind, message))


def take_flash(state: MutableMapping[str, Any]) -> list[tuple[str, str]]:
    items = list(state.get("flash") or [])
    state["flash"] = []
    return items
