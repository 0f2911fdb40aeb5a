"""First start: an admin account with a random password, printed once in the terminal."""

from __future__ import annotations

import secrets
import sys
from typing import Any

from sqlalchemy.engine import Engine

from deid_core.errors import AlreadyExists

FIRST_ADMIN = "admin"


def ensure_first_admin(engine: Engine, *, out: Any = None) -> str | None:
    """On an empty user table create ``admin`` with a random password and print it once.

    The password goes to the terminal that started the app, never to a log
    file or the database (only its argon2 hash is stored). Returns it, or
    ``None`` when users already exist.
    """
    from deid_core.store.authz import SYSTEM
    from deid_core.store.users import create_user, list_users

    if list_users(engine):
        return None
    password = secrets.token_urlsafe(12)
    try:
        create_user(engine, FIRST_ADMIN, password, role="admin", actor=SYSTEM)
    except AlreadyExists:
        return None  # another process won the race and printed its own password
    stream = out if out is not None else sys.stdout
    print(
        "\n  deid-workbench: created the first admin account\n"
        f"    username: {FIRST_ADMIN}\n    password: {password}\n"
        "  (shown once; change it on the Account page)\n",
        file=stream,
        flush=True,
    )
    return password
