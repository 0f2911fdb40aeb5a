"""Who may change what: the library checks the acting user itself, against the database.

Every state-changing store function takes ``actor``. A username is never
trusted as given: ``require`` re-reads that user's role and active flag in
the same transaction as the change and raises ``PermissionDenied``
(``E_FORBIDDEN``) for an unknown, inactive or under-privileged account. So a
page that passes a reviewer's name cannot change settings, activate models,
manage users, import or export, however it was reached.

Two principals are not users:

- ``SYSTEM``: code in the same process that already holds the database
  credentials (tests, the demo builder, the first-admin bootstrap). It is the
  default of the library's ``actor=`` parameters; the app and the CLI always
  pass a user or a ``LocalAdmin``.
- ``LocalAdmin``: the command line acting for an operating-system user who
  proved they can read the workbench's admin secret. The store keeps only the
  secret's fingerprint (``store_settings``); ``local_admin`` compares it. The
  CLI's ``--actor`` is recorded beside the OS user as a declared name, never
  as a credential.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from deid_core.errors import PermissionDenied
from deid_core.store.audit import record_event
from deid_core.store.engine import read_session, write_session
from deid_core.store.models import StoreSetting, User, utcnow

ADMIN_SECRET_KEY = "admin_secret_fingerprint"
LEVELS = ("reviewer", "admin")


@dataclass(frozen=True, slots=True)
class Principal:
    """A trusted non-user actor; ``name`` is what the audit trail records."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class LocalAdmin(Principal):
    """The CLI for an OS user who can read the admin secret (see ``local_admin``)."""


SYSTEM = Principal("system")
Actor = str | Principal


def actor_name(actor: Actor) -> str:
    """The audit trail's "who" for an actor (at most 100 characters, the column's width)."""
    return (actor.name if isinstance(actor, Principal) else str(actor))[:100]


def check(s: Session, actor: Actor, role: str, action: str) -> str:
    """Raise ``PermissionDenied`` unless ``actor`` may do ``action`` with ``role``; return the name.

    Reads the user row inside the caller's transaction, so a deactivation or
    demotion committed before the change takes effect at once.
    """
    if role not in LEVELS:
        raise ValueError(f"unknown role level {role!r}")
    if isinstance(actor, Principal):
        return actor_name(actor)
    row = s.execute(select(User.role, User.active).where(User.username == str(actor))).first()
    if row is None:
        raise PermissionDenied(f"{action}: {str(actor)[:100]!r} is not a user of this workbench")
    if not row.active:
        raise PermissionDenied(f"{action}: account {str(actor)!r} is deactivated")
    if role == "admin" and row.role != "admin":
        raise PermissionDenied(f"{action}: needs an administrator; {str(actor)!r} is a {row.role}")
    return str(actor)


def require(engine: Engine, actor: Actor, role: str, action: str) -> str:
    """``check`` in its own read transaction, for callers outside the store (export, pages)."""
    with read_session(engine) as s:
        return check(s, actor, role, action)


def is_admin(engine: Engine, actor: Actor) -> bool:
    try:
        require(engine, actor, "admin", "check")
    except PermissionDenied:
        return False
    return True


def local_admin(engine: Engine, fingerprint: str, os_user: str, *, declared: str | None = None) -> LocalAdmin:
    """The CLI's principal, if ``fingerprint`` is that of the admin secret this store recorded.

    The first call on a store records the fingerprint (trust on first use,
    like the app's first admin) and audits it; later calls must match it.
    ``declared`` (the CLI's ``--actor``) is only written into the name.
    """
    name = f"local-admin:{os_user}" + (f" as {declared}" if declared else "")
    with write_session(engine) as s:
        row = s.get(StoreSetting, ADMIN_SECRET_KEY)
        if row is None:
            s.add(StoreSetting(key=ADMIN_SECRET_KEY, value={"fingerprint": fingerprint},
                               updated_at=utcnow()))
            record_event(s, name[:100], "store.admin_secret", "store", ADMIN_SECRET_KEY,
                         after={"fingerprint": fingerprint, "os_user": os_user})
        elif row.value.get("fingerprint") != fingerprint:
            raise PermissionDenied(
                "this admin secret is not the one this database was set up with: only an"
                " operating-system user who can read the workbench's admin secret acts as a"
                " local administrator"
            )
    return LocalAdmin(name[:100])
