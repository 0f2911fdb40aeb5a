"""Shared fixtures. Tests never read ../shared/data: they use generated or shipped fixtures."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_ENV = "DEID_TEST_POSTGRES_URL"
REQUIRE_POSTGRES_ENV = "DEID_REQUIRE_POSTGRES"


def _postgres_schema_url(base: str) -> Iterator[str]:
    """A fresh schema per test, dropped afterwards, so repeated and concurrent runs never collide."""
    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001 - reported below with the reason
        admin.dispose()
        message = f"PostgreSQL at {POSTGRES_ENV} is not usable: {type(exc).__name__}: {exc}"
        if os.environ.get(REQUIRE_POSTGRES_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A database URL for an empty database: a SQLite file, or a fresh PostgreSQL schema.

    PostgreSQL comes from ``DEID_TEST_POSTGRES_URL``; when it is unset the
    PostgreSQL cases skip, unless ``DEID_REQUIRE_POSTGRES=1`` (CI), where they fail.
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        message = f"{POSTGRES_ENV} is not set: PostgreSQL store tests skipped"
        if os.environ.get(REQUIRE_POSTGRES_ENV) == "1":
            pytest.fail(f"{REQUIRE_POSTGRES_ENV}=1 but {message.split(':')[0]}")
        pytest.skip(message)
    yield from _postgres_schema_url(base)


@pytest.fixture
def store(db_url: str) -> Iterator[object]:
    """An upgraded, empty store on each database backend (an SQLAlchemy Engine)."""
    from deid_core.store import open_store

    engine = open_store(db_url)
    try:
        yield engine
    finally:
        engine.dispose()
