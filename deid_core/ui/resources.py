"""Process-wide resources for the app, and the page guard every page starts with.

``st.cache_resource`` holds only thread-safe objects without PHI: the database
engine and loaded models (weights, no notes). Everything per user lives in
``st.session_state`` (see :mod:`deid_core.ui.session`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine

from deid_core.ui import boundary
from deid_core.ui.bootstrap import ensure_first_admin
from deid_core.ui.session import SessionUser, can_open, take_flash

log = logging.getLogger(__name__)
# Every page imports this module: the error boundary holds even when a page runs on its own.
boundary.install()

@st.cache_resource(show_spinner=False)
def get_engine(url: str | None) -> Engine:
    from deid_core.protect.cleanup import clean_debris
    from deid_core.store.engine import open_store
    from deid_core.ui.exporting import data_dir

    engine = open_store(url)
    ensure_first_admin(engine)
    # Once per process: what a killed export or training run left behind.
    clean_debris([data_dir() / "exports"])
    return engine


def database_url() -> str | None:
    return os.environ.get("DEID_DATABASE_URL") or None


def engine() -> Engine:
    return get_engine(database_url())


@st.cache_resource(show_spinner=False, max_entries=4)
def load_model(path: str, mtime: float) -> Any:
    """A loaded ``DeidModel``; ``mtime`` in the key reloads a directory that changed."""
    from deid_core.engine.model import DeidModel

    return DeidModel.load(path)


def model_at(path: str) -> Any:
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        mtime = 0.0
    return load_model(path, mtime)


def session_cookie_value() -> str | None:
    """The session cookie the browser sent when this session started (a reload sends it)."""
    from deid_core.ui.session_token import COOKIE_NAME

    value = st.context.cookies.get(COOKIE_NAME)
    return value if isinstance(value, str) else None  # AppTest has no real cookies


@dataclass(frozen=True)
class PageContext:
    engine: Engine
    user: SessionUser
    project: Any  # ProjectInfo | None

    def need_project(self) -> Any:
        if self.project is None:
            st.info("There is no project yet. An admin creates one on the Import page.")
            st.stop()
        return self.project


def current_project(engine: Engine) -> Any:
    """The project picked in the sidebar (the first one by name until one is picked)."""
    from deid_core.store.repository import list_projects

    projects = list_projects(engine)
    if not projects:
        return None
    wanted = st.session_state.get("project")
    for p in projects:
        if p.name == wanted:
            return p
    st.session_state["project"] = projects[0].name
    return projects[0]


def guard(page: str) -> PageContext:
    """Start of every page: state set up, idle timeout, role re-read from the database, role
    check, flashed messages. ``app.py`` did the same a moment earlier in a normal run; doing
    it again here also covers a page script run on its own."""
    from deid_core.ui.auth import authorise

    state = st.session_state
    user = authorise(state, engine(), session_cookie_value())
    if user is None:
        st.warning("Please sign in.")
        st.stop()
    if not can_open(user, page):
        log.warning("user %s refused page %s (role %s)", user.username, page, user.role)
        st.error("This page is for administrators.")
        st.stop()
    for kind, message in take_flash(state):
        getattr(st, kind if kind in ("info", "success", "warning", "error") else "info")(message)
    eng = engine()
    return PageContext(eng, user, current_project(eng))
