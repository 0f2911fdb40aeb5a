"""Reviewer and admin accounts: argon2id password hashes, soft deactivation only.

There is deliberately no delete: a user's annotations, reviews and audit
events name them by username, and deactivating keeps all of that while
refusing sign-in. Passwords are never logged or returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import select
from sqlalchemy.engine import Engine

from deid_core.errors import AlreadyExists, NotFound, StoreError
from deid_core.store.audit import record_event
from deid_core.store.authz import SYSTEM, Actor, Principal, check
from deid_core.store.engine import read_session, write_session
from deid_core.store.models import ROLES, User, utcnow

MIN_PASSWORD_LENGTH = 8
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
_HASHER = PasswordHasher()
# Verifying an unknown user still costs one hash, so timing does not reveal which names exist.
_DUMMY_HASH = _HASHER.hash("not-a-real-password")


@dataclass(frozen=True, slots=True)
class UserInfo:
    username: str
    role: str
    active: bool
    created_at: datetime
    deactivated_at: datetime | None


def _info(u: User) -> UserInfo:
    return UserInfo(u.username, u.role, u.active, u.created_at, u.deactivated_at)


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise StoreError(f"password must be at least {MIN_PASSWORD_LENGTH} characters")


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise StoreError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")


def create_user(
    engine: Engine, username: str, password: str, *, role: str = "reviewer", actor: Actor = SYSTEM
) -> UserInfo:
    if not _USERNAME.match(username):
        raise StoreError(
            "usernames are 1-100 characters of letters, digits and . _ @ -, starting with a"
            " letter or digit"
        )
    _check_role(role)
    _check_password(password)
    hashed = _HASHER.hash(password)
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "create a user")
        if s.scalar(select(User.id).where(User.username == username)) is not None:
            raise AlreadyExists(f"user {username!r} already exists")
        user = User(username=username, password_hash=hashed, role=role, active=True)
        s.add(user)
        s.flush()
        record_event(s, actor, "user.create", "user", username, after={"role": role})
        return _info(user)


def _get(s: object, username: str) -> User:
    user = s.scalar(select(User).where(User.username == username))  # type: ignore[attr-defined]
    if user is None:
        raise NotFound(f"no user {username!r}")
    return user


def get_user(engine: Engine, username: str) -> UserInfo:
    with read_session(engine) as s:
        return _info(_get(s, username))


def list_users(engine: Engine, *, include_inactive: bool = True) -> list[UserInfo]:
    q = select(User).order_by(User.username)
    if not include_inactive:
        q = q.where(User.active.is_(True))
    with read_session(engine) as s:
        return [_info(u) for u in s.scalars(q)]


def set_active(engine: Engine, username: str, active: bool, *, actor: Actor = SYSTEM) -> UserInfo:
    """Deactivate (or reactivate) an account; nothing the user did is touched."""
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "activate or deactivate a user")
        user = _get(s, username)
        before = {"active": user.active}
        user.active = active
        user.deactivated_at = None if active else utcnow()
        record_event(s, actor, "user.activate" if active else "user.deactivate", "user", username,
                     before=before, after={"active": active})
        return _info(user)


def deactivate_user(engine: Engine, username: str, *, actor: Actor = SYSTEM) -> UserInfo:
    return set_active(engine, username, False, actor=actor)


def set_role(engine: Engine, username: str, role: str, *, actor: Actor = SYSTEM) -> UserInfo:
    _check_role(role)
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "change a role")
        user = _get(s, username)
        before = {"role": user.role}
        user.role = role
        record_event(s, actor, "user.role", "user", username, before=before, after={"role": role})
        return _info(user)


def reset_password(engine: Engine, username: str, password: str, *, actor: Actor = SYSTEM) -> None:
    _check_password(password)
    hashed = _HASHER.hash(password)
    with write_session(engine) as s:
        # Anyone active may change their own password; only an admin may set someone else's.
        own = not isinstance(actor, Principal) and str(actor) == username
        actor = check(s, actor, "reviewer" if own else "admin", "reset a password")
        user = _get(s, username)
        user.password_hash = hashed
        user.password_changed_at = utcnow()
        record_event(s, actor, "user.reset_password", "user", username)


def authenticate(engine: Engine, username: str, password: str) -> UserInfo | None:
    """The user if the password matches and the account is active, else None."""
    with read_session(engine) as s:
        user = s.scalar(select(User).where(User.username == username))
        stored = user.password_hash if user is not None else _DUMMY_HASH
        try:
            _HASHER.verify(stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        if user is None or not user.active:
            return None
        info = _info(user)
        needs_rehash = _HASHER.check_needs_rehash(stored)
    if needs_rehash:
        with write_session(engine) as s:
            _get(s, username).password_hash = _HASHER.hash(password)
    return info
