"""The surrogate mapping in the database: HMAC key of an original -> the surrogate used.

Surrogates are a pure function of the project secret and the original (see
``deid_core.protect.surrogates``), so the table does not decide anything: it records
what exports used, so that an admin can audit or export it and a changed
secret (or Faker version) is caught as a ``MappingConflict`` instead of
silently giving one patient two names across releases. Rows hold the HMAC key,
the opaque scope, kind, label and surrogate; never the original or the patient
key.

Concurrent exports of one project insert overlapping keys: every insert is
``INSERT ... ON CONFLICT (project_id, key) DO NOTHING`` (SQLite and PostgreSQL
constructs), in key order so two PostgreSQL transactions waiting on each
other's uncommitted keys always wait in the same direction (no deadlock).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from deid_core.errors import MappingConflict, PermissionDenied
from deid_core.protect.surrogate_map import MappingEntry, export_mapping, normalise
from deid_core.store.audit import record_event
from deid_core.store.authz import Actor, actor_name
from deid_core.store.engine import read_session, write_session
from deid_core.store.models import SurrogateMappingRow, utcnow

_TABLE = SurrogateMappingRow.__table__
_CHUNK = 500  # keys per statement: well under SQLite's bound-parameter limit
_PAGE = 2000  # rows per page when iterating


@dataclass(frozen=True, slots=True)
class RecordResult:
    """What one ``record`` did: rows added, and entries already stored (same surrogate)."""

    inserted: int
    existing: int


def _unique(entries: Iterable[MappingEntry]) -> list[MappingEntry]:
    """One entry per key, in key order; two different surrogates for one key conflict."""
    by_key: dict[str, MappingEntry] = {}
    for e in entries:
        old = by_key.get(e.key)
        if old is None:
            by_key[e.key] = e
        elif normalise(old.surrogate) != normalise(e.surrogate):
            raise _conflict(e)
    return [by_key[k] for k in sorted(by_key)]


def _conflict(entry: MappingEntry) -> MappingConflict:
    return MappingConflict(
        f"mapping key {entry.key[:12]}... ({entry.label}) already maps to another surrogate:"
        " was the project secret or the Faker version changed?"
    )


_COLUMNS = ("key", "scope", "kind", "label", "surrogate")


def _pg_chunk(session: Session, project_id: int, chunk: Sequence[MappingEntry]) -> tuple[int, dict[str, str]]:
    """PostgreSQL: rows passed as five arrays and unnested, in key order.

    A multi-row VALUES statement has 7 parameters per row, and psycopg parses
    such long statements afresh on every call (about 2 of the 5 s for 17,000
    entries); five array parameters keep the statement short and prepared.
    The lookup joins with unnest too: on a freshly filled table (no statistics
    yet) "key IN (500 parameters)" was planned as a filter over all the
    project's rows, comparing each with every key (0.3 s per chunk).
    """
    arrays = [
        bindparam(f"{c}s", [getattr(e, c) for e in chunk], type_=postgresql.ARRAY(String))
        for c in _COLUMNS
    ]
    given = func.unnest(*arrays).table_valued(*_COLUMNS, with_ordinality="n").render_derived(name="given")
    source = select(
        bindparam("project_id", project_id), *(given.c[c] for c in _COLUMNS), bindparam("now", utcnow())
    ).order_by(given.c.n)
    stmt = (
        postgresql.insert(_TABLE)
        .from_select(["project_id", *_COLUMNS, "created_at"], source)
        .on_conflict_do_nothing(index_elements=["project_id", "key"])
        .returning(_TABLE.c.key)
    )
    inserted = len(session.execute(stmt).all())
    keys = func.unnest(arrays[0]).table_valued("key").render_derived(name="wanted")
    lookup = select(_TABLE.c.key, _TABLE.c.surrogate).join_from(
        keys, _TABLE, (_TABLE.c.project_id == project_id) & (_TABLE.c.key == keys.c.key)
    )
    return inserted, dict(session.execute(lookup).all())


def _sqlite_chunk(session: Session, project_id: int, chunk: Sequence[MappingEntry]) -> tuple[int, dict[str, str]]:
    """SQLite: one cached INSERT run as executemany; the (project_id, key) index serves IN."""
    now = utcnow()
    stmt = (
        sqlite.insert(_TABLE)
        .on_conflict_do_nothing(index_elements=["project_id", "key"])
        .returning(_TABLE.c.key)
    )
    rows = [{"project_id": project_id, "created_at": now, **{c: getattr(e, c) for c in _COLUMNS}} for e in chunk]
    inserted = len(session.execute(stmt, rows).all())
    lookup = select(_TABLE.c.key, _TABLE.c.surrogate).where(
        _TABLE.c.project_id == project_id, _TABLE.c.key.in_([e.key for e in chunk])
    )
    return inserted, dict(session.execute(lookup).all())


def _insert(session: Session, project_id: int, entries: Sequence[MappingEntry]) -> RecordResult:
    """Insert inside the caller's transaction, then compare stored surrogates with ours.

    RETURNING counts the rows actually inserted (rowcount is -1 on psycopg here).
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        write_chunk: Any = _pg_chunk
    elif dialect == "sqlite":
        write_chunk = _sqlite_chunk
    else:  # pragma: no cover - the store supports these two
        raise NotImplementedError(f"surrogate mapping on {dialect}")
    inserted = 0
    for i in range(0, len(entries), _CHUNK):
        chunk = entries[i : i + _CHUNK]
        n, stored = write_chunk(session, project_id, chunk)
        inserted += n
        for e in chunk:
            # Surrogates copy the original's case and spacing: compare folded.
            if normalise(stored[e.key]) != normalise(e.surrogate):
                raise _conflict(e)
    return RecordResult(inserted, len(entries) - inserted)


class DbSurrogateMapping:
    """``SurrogateMapping`` over the ``surrogate_mappings`` table of one project.

    Thread-safe (each call is its own transaction). ``record`` commits at once;
    ``staged`` keeps the transaction open while the caller finishes the export,
    so a failed export leaves no rows behind.
    """

    def __init__(self, engine: Engine, project_id: int) -> None:
        self.engine = engine
        self.project_id = int(project_id)

    def __len__(self) -> int:
        with read_session(self.engine) as s:
            return int(
                s.scalar(select(func.count()).select_from(_TABLE).where(_TABLE.c.project_id == self.project_id))
                or 0
            )

    def record(self, entries: Iterable[MappingEntry]) -> RecordResult:
        """Add new entries (idempotent); ``MappingConflict`` (nothing added) if a key's stored
        surrogate differs."""
        unique = _unique(entries)
        if not unique:
            return RecordResult(0, 0)
        with write_session(self.engine) as s:
            return _insert(s, self.project_id, unique)

    @contextmanager
    def staged(self, entries: Iterable[MappingEntry]) -> Iterator[StagedRecord]:
        """Insert ``entries`` in a transaction that commits only if the block succeeds.

        Conflicts are raised on entry, before the block runs. On SQLite the
        block holds the write lock: keep it short and do not write to the
        store from inside it.
        """
        unique = _unique(entries)
        with write_session(self.engine) as s:
            result = _insert(s, self.project_id, unique) if unique else RecordResult(0, 0)
            yield StagedRecord(result, _collisions(s, self.project_id))

    def get(self, key: str) -> MappingEntry | None:
        with read_session(self.engine) as s:
            row = s.execute(
                select(_TABLE.c.key, _TABLE.c.scope, _TABLE.c.kind, _TABLE.c.label, _TABLE.c.surrogate)
                .where(_TABLE.c.project_id == self.project_id, _TABLE.c.key == key)
            ).first()
        return None if row is None else MappingEntry(*row)

    def entries(self) -> Iterator[MappingEntry]:
        """Every entry in key order, read in pages (no transaction held between pages)."""
        last = ""
        while True:
            with read_session(self.engine) as s:
                rows = s.execute(
                    select(_TABLE.c.key, _TABLE.c.scope, _TABLE.c.kind, _TABLE.c.label, _TABLE.c.surrogate)
                    .where(_TABLE.c.project_id == self.project_id, _TABLE.c.key > last)
                    .order_by(_TABLE.c.key)
                    .limit(_PAGE)
                ).all()
            for row in rows:
                yield MappingEntry(*row)
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]

    def collisions(self) -> list[tuple[str, str, str]]:
        """``(scope, kind, surrogate)`` drawn by more than one original (folded surrogate)."""
        with read_session(self.engine) as s:
            return _collisions(s, self.project_id)


@dataclass(frozen=True, slots=True)
class StagedRecord:
    result: RecordResult
    collisions: list[tuple[str, str, str]]


def _collisions(session: Session, project_id: int) -> list[tuple[str, str, str]]:
    # Folded in Python: SQL lower() is not str.casefold() (ß, final sigma...).
    counts: dict[tuple[str, str, str], int] = {}
    rows = session.execute(
        select(_TABLE.c.scope, _TABLE.c.kind, _TABLE.c.surrogate).where(_TABLE.c.project_id == project_id)
    )
    for scope, kind, surrogate in rows:
        ident = (scope, kind, normalise(surrogate))
        counts[ident] = counts.get(ident, 0) + 1
    return sorted(k for k, n in counts.items() if n > 1)


def require_mapping_admin(engine: Engine, username: Actor | None) -> None:
    """``PermissionDenied`` unless ``username`` is an active admin (or a proven local admin)."""
    from deid_core.store.authz import require

    if not username:
        raise PermissionDenied("only an active admin may export the surrogate mapping")
    try:
        require(engine, username, "admin", "export the surrogate mapping")
    except PermissionDenied:
        raise PermissionDenied("only an active admin may export the surrogate mapping") from None


def check_mapping_export(engine: Engine, project: str, actor_username: Actor | None) -> int:
    """The project's id if ``actor_username`` may export its mapping; else the refusal is
    audited (``export_mapping_refused``) and ``PermissionDenied`` raised."""
    from deid_core.store.repository import get_project

    info = get_project(engine, project)
    try:
        require_mapping_admin(engine, actor_username)
    except PermissionDenied:
        with write_session(engine) as s:
            record_event(s, actor_name(actor_username) if actor_username else "unknown",
                         "export_mapping_refused", "project", info.id,
                         project_id=info.id, after={"reason": "not an active admin"})
        raise
    return info.id


def export_surrogate_mapping(
    engine: Engine, project: str, actor_username: Actor, path: str | os.PathLike[str]
) -> int:
    """Write ``project``'s mapping from the database as JSONL (atomically); admins only.

    The attempt is audited either way: ``export_mapping`` with the entry count,
    or ``export_mapping_refused`` before ``PermissionDenied`` is raised.
    Returns the number of entries written.
    """
    project_id = check_mapping_export(engine, project, actor_username)
    n = export_mapping(DbSurrogateMapping(engine, project_id), path, role="admin")
    with write_session(engine) as s:
        record_event(s, actor_name(actor_username), "export_mapping", "project", project_id, project_id=project_id,
                     after={"entries": n, "path": os.fspath(path)})
    return n
