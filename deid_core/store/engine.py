"""Engines and sessions, with SQLite made safe for a team and the schema upgraded on start.

SQLite: foreign keys ON (off by default), WAL so readers do not block the
writer, a busy timeout, and ``BEGIN IMMEDIATE`` for write transactions so two
writers queue up instead of one failing mid-transaction with "database is
locked". pysqlite's own transaction handling is switched off so these BEGINs
are ours (the SQLAlchemy-documented recipe).

Migrations are Alembic's, in ``db/`` at the repository root; ``upgrade_schema``
runs them programmatically so the app and the CLI never start on an old schema.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from deid_core.errors import StoreError
from deid_core.store.config import database_url, redacted
from deid_core.store.dberrors import translate

ENV_MIGRATIONS = "DEID_MIGRATIONS_DIR"
_WRITE = "deid_write"


def migrations_dir() -> Path:
    """``db/`` beside the package: works for a clone and an editable install."""
    explicit = os.environ.get(ENV_MIGRATIONS)
    candidates = [Path(explicit)] if explicit else []
    candidates.append(Path(__file__).resolve().parents[2] / "db")
    for c in candidates:
        if (c / "env.py").is_file() and (c / "versions").is_dir():
            return c
    raise StoreError(
        "cannot find the Alembic migrations (db/env.py); install the project from a checkout"
        f" (pip install -e .) or set {ENV_MIGRATIONS}"
    )


def _sqlite_listeners(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=60000")
        if engine.url.database not in (None, "", ":memory:"):
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def create_store_engine(url: str | None = None, **kwargs: Any) -> Engine:
    """An engine for ``url`` (default: ``config.database_url()``), without touching the schema."""
    resolved = database_url(url)
    try:
        parsed = make_url(resolved)
    except Exception:  # noqa: BLE001
        raise StoreError(f"not a database URL: {redacted(resolved)}") from None
    if parsed.get_backend_name() == "sqlite":
        connect_args = {"check_same_thread": False, "timeout": 60}
        connect_args.update(kwargs.pop("connect_args", {}))
        engine = create_engine(resolved, connect_args=connect_args, **kwargs)
        _sqlite_listeners(engine)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(resolved, **kwargs)


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def alembic_config(connection: Connection | None = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade_schema(engine: Engine, revision: str = "head") -> None:
    """Run Alembic migrations up to ``revision``; a no-op when already there.

    Two processes starting at once are serialised: an advisory lock on
    PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite.
    """
    from alembic import command

    if revision == "head" and current_revision(engine) == head_revision():
        return
    with engine.connect().execution_options(**{_WRITE: True}) as conn:
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(727274)"))
            command.upgrade(alembic_config(conn), revision)


def refresh_statistics(engine: Engine, tables: tuple[str, ...]) -> None:
    """Update planner statistics after a bulk change, so the queue keeps using its indexes.

    PostgreSQL plans a freshly bulk-loaded table as if it were empty until
    autovacuum gets to it (a 100,000-note queue query went from 25 ms to over a
    second), so big imports analyse right away. SQLite gets ``PRAGMA optimize``.
    """
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text(f"ANALYZE {', '.join(tables)}"))
        elif conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA optimize")
        conn.commit()


def open_store(url: str | None = None, *, upgrade: bool = True, **kwargs: Any) -> Engine:
    """The one way the app and CLI get a database: resolve the URL, connect, upgrade the schema."""
    engine = create_store_engine(url, **kwargs)
    if upgrade:
        upgrade_schema(engine)
    return engine


@contextmanager
def database_errors() -> Iterator[None]:
    """Re-raise SQLAlchemy errors as coded ``DatabaseError``s without their parameters.

    ``from None`` drops the original from tracebacks: its text lists the
    statement's parameters, which are note text.
    """
    try:
        yield
    except SQLAlchemyError as exc:
        translated = translate(exc)
        assert translated is not None
        raise translated from None


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with database_errors(), Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One transaction that commits on success and rolls back on any error."""
    with database_errors(), engine.connect().execution_options(**{_WRITE: True}) as conn:
        with Session(bind=conn, expire_on_commit=False) as session, session.begin():
            yield session
