"""Sessions that survive a reload: signed, expiring tokens; role and account read every run."""

from __future__ import annotations

import pytest
from people import add_users

from deid_core.store.engine import open_store
from deid_core.store.users import create_user, set_active, set_role
from deid_core.ui import session_token as tokens
from deid_core.ui.auth import authorise, end_session, start_session
from deid_core.ui.session import current_user, init_state

SECRET = b"k" * 32
PASSWORD = "correct horse battery"


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.setenv("DEID_IDLE_MINUTES", "30")
    engine = open_store(f"sqlite:///{tmp_path / 'auth.db'}")
    create_user(engine, "ada", PASSWORD, role="admin")
    create_user(engine, "rita.b@x", PASSWORD, role="reviewer")
    add_users(engine, admins=("root",))  # the admin who demotes them (the library checks actors)
    return engine


def fresh() -> dict:
    state: dict = {}
    init_state(state)
    return state


def test_token_round_trip_and_tampering():
    value = tokens.issue("rita.b@x", SECRET, now=1000)
    tok = tokens.read(value, SECRET, idle_seconds=60, now=1030)
    assert tok is not None and tok.username == "rita.b@x" and tok.issued == tok.seen == 1000
    assert tokens.read(value, b"other secret", idle_seconds=60, now=1030) is None
    forged = value.replace("rita.b@x", "ada")
    assert tokens.read(forged, SECRET, idle_seconds=60, now=1030) is None
    assert tokens.read(value[:-1] + ("0" if value[-1] != "0" else "1"), SECRET, idle_seconds=60,
                       now=1030) is None
    assert tokens.read("garbage", SECRET, idle_seconds=60, now=1030) is None
    assert tokens.read(value, SECRET, idle_seconds=60, now=1061) is None  # idle
    with pytest.raises(ValueError):
        tokens.issue("bad~name", SECRET)


def test_activity_refreshes_the_cookie_but_not_the_maximum_age():
    value = tokens.issue("ada", SECRET, now=0)
    tok = tokens.read(value, SECRET, idle_seconds=600, now=30)
    assert tokens.refreshed(tok, SECRET, now=30) is None  # fresh enough: no rewrite
    again = tokens.refreshed(tok, SECRET, now=500)
    tok2 = tokens.read(again, SECRET, idle_seconds=600, now=1000)
    assert tok2.sid == tok.sid and tok2.issued == 0 and tok2.seen == 500
    late = tokens.issue("ada", SECRET, now=tokens.MAX_AGE_SECONDS + 5, sid=tok.sid, issued=0)
    assert tokens.read(late, SECRET, idle_seconds=600, now=tokens.MAX_AGE_SECONDS + 6) is None


def test_a_reload_resumes_the_session_from_the_cookie(engine):
    tab = fresh()
    start_session(tab, "ada", "admin", secret=SECRET, now=1000)
    cookie = tab["cookie"]
    assert cookie and authorise(tab, engine, None, secret=SECRET, now=1001).role == "admin"
    reloaded = fresh()  # a reload: new websocket, empty session state, the cookie comes back
    user = authorise(reloaded, engine, cookie, secret=SECRET, now=1100)
    assert user is not None and user.username == "ada" and user.role == "admin"
    # without the cookie, or with someone else's secret, nobody is signed in
    assert authorise(fresh(), engine, None, secret=SECRET, now=1100) is None
    assert authorise(fresh(), engine, cookie, secret=b"x" * 32, now=1100) is None


def test_idle_timeout_applies_to_the_cookie(engine):
    tab = fresh()
    start_session(tab, "ada", "admin", secret=SECRET, now=1000)
    late = 1000 + 30 * 60 + 1
    reloaded = fresh()
    assert authorise(reloaded, engine, tab["cookie"], secret=SECRET, now=late) is None
    assert reloaded["cookie"] == ""  # the stale cookie is cleared
    # and an open tab left idle is signed out too, with its token revoked
    assert authorise(tab, engine, None, secret=SECRET, now=late) is None
    assert tab["cookie"] == "" and tab["flash"]


def test_sign_out_revokes_the_token_everywhere(engine):
    tab = fresh()
    start_session(tab, "ada", "admin", secret=SECRET, now=1000)
    copy = tab["cookie"]
    end_session(tab, "Signed out.")
    assert current_user(tab) is None and tab["cookie"] == ""
    assert authorise(fresh(), engine, copy, secret=SECRET, now=1001) is None


def test_demoted_or_deactivated_user_loses_access_on_the_next_run(engine):
    tab = fresh()
    start_session(tab, "ada", "admin", secret=SECRET, now=1000)
    set_role(engine, "ada", "reviewer", actor="root")
    assert authorise(tab, engine, None, secret=SECRET, now=1001).role == "reviewer"
    set_role(engine, "ada", "admin", actor="root")
    assert authorise(tab, engine, None, secret=SECRET, now=1002).role == "admin"
    set_active(engine, "ada", False, actor="root")
    assert authorise(tab, engine, None, secret=SECRET, now=1003) is None
    assert "deactivated" in tab["flash"][0][1]
    # a copy of the cookie does not bring the account back
    other = fresh()
    start_session(other, "rita.b@x", "reviewer", secret=SECRET, now=1000)
    set_active(engine, "rita.b@x", False, actor="root")
    assert authorise(fresh(), engine, other["cookie"], secret=SECRET, now=1004) is None


def test_session_secret_file_is_private(tmp_path, monkeypatch):
    import stat

    monkeypatch.delenv("DEID_SESSION_SECRET", raising=False)
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path))
    first = tokens.session_secret()
    assert first == tokens.session_secret() and len(first) >= 32
    key = tmp_path / "secrets" / "session.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
