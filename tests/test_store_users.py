"""Accounts: argon2 hashes, roles, deactivation, password reset, audit events."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher
from people import add_users
from sqlalchemy import select

from deid_core.errors import AlreadyExists, NotFound, StoreError
from deid_core.store import users
from deid_core.store.audit import list_events
from deid_core.store.models import User

CHEAP = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@pytest.fixture(autouse=True)
def cheap_hashing(monkeypatch):  # type: ignore[no-untyped-def]
    """Production argon2 parameters cost ~0.3 s a hash; the logic under test is the same."""
    monkeypatch.setattr(users, "_HASHER", CHEAP)
    monkeypatch.setattr(users, "_DUMMY_HASH", CHEAP.hash("dummy-password"))


def test_user_lifecycle(store) -> None:  # type: ignore[no-untyped-def]
    add_users(store, admins=("root",))
    info = users.create_user(store, "alice", "s3cret-pass", role="admin", actor="root")
    assert info.role == "admin" and info.active
    with store.connect() as conn:
        stored = conn.execute(select(User.password_hash)
                              .where(User.username == "alice")).scalar_one()
    assert stored.startswith("$argon2id$") and "s3cret-pass" not in stored
    assert users.authenticate(store, "alice", "s3cret-pass") == users.get_user(store, "alice")
    assert users.authenticate(store, "alice", "wrong-pass") is None
    assert users.authenticate(store, "nobody", "s3cret-pass") is None
    users.reset_password(store, "alice", "another-pass", actor="root")
    assert users.authenticate(store, "alice", "s3cret-pass") is None
    assert users.authenticate(store, "alice", "another-pass") is not None
    users.deactivate_user(store, "alice", actor="root")
    assert users.authenticate(store, "alice", "another-pass") is None
    assert [u.username for u in users.list_users(store, include_inactive=False)] == ["root"]
    users.set_active(store, "alice", True, actor="root")
    assert users.authenticate(store, "alice", "another-pass") is not None
    users.set_role(store, "alice", "reviewer", actor="root")
    assert users.get_user(store, "alice").role == "reviewer"
    actions = [e.action for e in list_events(store, entity_type="user", entity_id="alice")]
    assert actions == ["user.role", "user.activate", "user.deactivate", "user.reset_password",
                       "user.create"]
    assert all(e.actor == "root" for e in list_events(store, entity_type="user"))


@pytest.mark.parametrize(
    "username,password,role,error",
    [
        ("bob", "short", "reviewer", "at least 8"),
        ("bob", "long-enough", "owner", "unknown role"),
        ("bad name", "long-enough", "reviewer", "usernames"),
        ("", "long-enough", "reviewer", "usernames"),
    ],
)
def test_user_validation(store, username, password, role, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match=error):
        users.create_user(store, username, password, role=role)
    assert users.list_users(store) == []


def test_user_duplicates_and_missing(store) -> None:  # type: ignore[no-untyped-def]
    users.create_user(store, "bob", "long-enough")
    with pytest.raises(AlreadyExists):
        users.create_user(store, "bob", "long-enough")
    with pytest.raises(NotFound):
        users.deactivate_user(store, "carol")
    with pytest.raises(NotFound):
        users.reset_password(store, "carol", "long-enough")


def test_weak_hash_is_upgraded_on_sign_in(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    users.create_user(store, "dana", "long-enough")
    with store.connect() as conn:
        weak = conn.execute(select(User.password_hash)).scalar_one()
    monkeypatch.setattr(users, "_HASHER", PasswordHasher(time_cost=2, memory_cost=2048,
                                                         parallelism=1))
    assert users.authenticate(store, "dana", "long-enough") is not None
    with store.connect() as conn:
        upgraded = conn.execute(select(User.password_hash)).scalar_one()
    assert upgraded != weak and "m=2048,t=2" in upgraded
    assert users.authenticate(store, "dana", "long-enough") is not None
