"""Login page: wrong and right passwords, first admin, sign out, idle timeout."""

from __future__ import annotations

import io

import pytest
from app_support import PASSWORD, app_as, seed_store, texts

from deid_core.store.engine import open_store
from deid_core.ui.bootstrap import ensure_first_admin


@pytest.fixture
def url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    seed_store(url)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    return url


@pytest.mark.parametrize(
    "username, password, signed_in",
    [("rita", PASSWORD, True), ("rita", "wrong password", False), ("nobody", PASSWORD, False)],
)
def test_sign_in(url, username, password, signed_in):
    at = app_as(None)
    assert not at.exception and texts(at.title) == ["deid-workbench"]
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    at.button[0].click().run()
    assert not at.exception
    user = at.session_state["user"]
    assert (user is not None and user.username == username) is signed_in
    if not signed_in:
        assert any("Wrong username or password" in e for e in texts(at.error))


def test_sign_out_and_idle_timeout(url):
    at = app_as("rita", page="account")
    assert texts(at.title) == ["Account"]
    at.button(key="account_sign_out").click().run()
    assert at.session_state["user"] is None
    at = app_as("rita", page="queue")
    at.session_state["last_seen"] = 0.0  # long ago
    at.run()
    assert at.session_state["user"] is None


def test_first_admin_is_created_once_and_printed(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path / 'fresh.db'}")
    out = io.StringIO()
    password = ensure_first_admin(engine, out=out)
    assert password and password in out.getvalue() and "username: admin" in out.getvalue()
    assert ensure_first_admin(engine, out=out) is None
