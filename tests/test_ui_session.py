"""Session state set-up, sign in/out, idle timeout and page roles, without Streamlit."""

from __future__ import annotations

import pytest

from deid_core.ui.session import (
    PAGE_ROLES,
    SessionUser,
    can_open,
    check_idle,
    current_user,
    idle_timeout_seconds,
    init_state,
    sign_in,
    sign_out,
    take_flash,
)


def test_init_keeps_existing_values():
    state = {"drafts": {"d1": "x"}}
    init_state(state)
    assert state["drafts"] == {"d1": "x"} and state["user"] is None and state["editor_rev"] == 0


@pytest.mark.parametrize(
    "idle, expired",
    [(0, False), (59, False), (60, False), (61, True), (10_000, True)],
)
def test_idle_timeout(idle, expired):
    state: dict = {}
    sign_in(state, "rita", "reviewer", now=1000.0)
    state["drafts"]["d1"] = "draft"
    assert check_idle(state, now=1000.0 + idle, timeout=60) is expired
    assert (current_user(state) is None) is expired
    if expired:
        assert state["drafts"] == {}
        assert take_flash(state) == [("info", "You were signed out after a period of inactivity.")]
    else:
        assert state["last_seen"] == 1000.0 + idle  # activity resets the clock


def test_switching_user_drops_previous_drafts():
    state: dict = {}
    sign_in(state, "rita", "reviewer", now=0)
    state["drafts"]["d1"] = "rita's work"
    sign_in(state, "sam", "admin", now=1)
    assert state["drafts"] == {} and current_user(state) == SessionUser("sam", "admin")
    sign_in(state, "sam", "admin", now=2)
    with pytest.raises(ValueError):
        sign_in(state, "x", "root")
    sign_out(state)
    assert current_user(state) is None


@pytest.mark.parametrize(
    "role, page, allowed",
    [
        ("reviewer", "queue", True),
        ("reviewer", "review", True),
        ("reviewer", "account", True),
        *[("reviewer", p, False) for p in ("bias", "model", "import", "users", "export")],
        *[("admin", p, True) for p in PAGE_ROLES],
    ],
)
def test_page_roles(role, page, allowed):
    assert can_open(SessionUser("u", role), page) is allowed
    assert can_open(None, page) is False


@pytest.mark.parametrize("raw, seconds", [("", 1800.0), ("5", 300.0), ("junk", 1800.0)])
def test_idle_timeout_from_env(monkeypatch, raw, seconds):
    monkeypatch.setenv("DEID_IDLE_MINUTES", raw)
    assert idle_timeout_seconds() == seconds
