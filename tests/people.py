"""Workbench accounts for store tests, inserted directly (no argon2 work: they never sign in).

The library checks every actor against the users table, so a test that acts
as ``alice`` needs an active ``alice``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select

from deid_core.store.engine import write_session
from deid_core.store.models import User, utcnow

NO_LOGIN = "$argon2id$v=19$m=65536,t=3,p=4$bm8tbG9naW4$bm8tbG9naW4tbm8tbG9naW4"


def add_users(engine: Any, *, admins: tuple[str, ...] = (), reviewers: tuple[str, ...] = ()) -> None:
    """Active accounts that cannot sign in; names already present are left alone."""
    with write_session(engine) as s:
        have = set(s.scalars(select(User.username)))
        rows = [{"username": n, "password_hash": NO_LOGIN, "role": role, "active": True,
                 "created_at": utcnow(), "password_changed_at": utcnow()}
                for role, names in (("admin", admins), ("reviewer", reviewers))
                for n in names if n not in have]
        if rows:
            s.execute(insert(User), rows)
