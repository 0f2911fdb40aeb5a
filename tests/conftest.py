"""Shared fixtures. Tests never read ../shared/data: they use generated or shipped fixtures."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

POSTGRES_ENV = "DEID_TEST_POSTGRES_URL"
REQUIRE_POSTGRES_ENV = "DEID_REQUIRE_POSTGRES"
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
# Session cookies are signed with this in tests, so no test writes a key file into the
# per-user data directory of whoever runs them.
os.environ.setdefault("DEID_SESSION_SECRET", "tests only: not a real session secret")


@pytest.fixture(autouse=True, scope="session")
def _starter_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test builds the full-size starter model or writes to the user's data directory.

    Tests that resolve the starter get the real code path at the test-only size
    (``DEID_STARTER_SIZE=tiny``) in a cache private to the session.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEID_STARTER_DIR", str(tmp_path_factory.mktemp("starter-session")))
        mp.setenv("DEID_STARTER_SIZE", "tiny")
        yield


def _postgres_base() -> str:
    """The PostgreSQL URL from the environment; skip (or, in CI, fail) without one."""
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        message = f"{POSTGRES_ENV} is not set: PostgreSQL store tests skipped"
        if os.environ.get(REQUIRE_POSTGRES_ENV) == "1":
            pytest.fail(f"{REQUIRE_POSTGRES_ENV}=1 but {POSTGRES_ENV} is not set")
        pytest.skip(message)
    return base


@contextmanager
def _postgres_schema(base: str) -> Iterator[str]:
    """A fresh schema, dropped afterwards, so repeated and concurrent runs never collide."""
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


@pytest.fixture(autouse=True)
def _admin_secret(tmp_path_factory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The CLI's admin secret lives in a temporary folder, never in the tester's home."""
    monkeypatch.setenv("DEID_ADMIN_SECRET", str(tmp_path_factory.getbasetemp() / "admin.secret"))


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A database URL for an EMPTY database: a SQLite file, or a fresh PostgreSQL schema.

    PostgreSQL comes from ``DEID_TEST_POSTGRES_URL``; when it is unset the
    PostgreSQL cases skip, unless ``DEID_REQUIRE_POSTGRES=1`` (CI), where they fail.
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with _postgres_schema(_postgres_base()) as url:
        yield url


@pytest.fixture(scope="module", params=BACKENDS)
def _migrated_store(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[tuple[str, object]]:  # type: ignore[no-untyped-def]
    """Run the migrations once per module and backend; ``store`` hands out clean copies."""
    from deid_core.store import open_store

    if request.param == "sqlite":
        template = tmp_path_factory.mktemp("store-template") / "template.db"
        open_store(f"sqlite:///{template}").dispose()  # closing checkpoints the WAL into the file
        yield "sqlite", template
        return
    with _postgres_schema(_postgres_base()) as url:
        engine = open_store(url)
        try:
            yield "postgresql", engine
        finally:
            engine.dispose()


@pytest.fixture
def store(_migrated_store, tmp_path) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """An upgraded, empty store on each backend (an SQLAlchemy Engine).

    SQLite: a copy of the migrated template file. PostgreSQL: the module's
    migrated schema, emptied after each test (TRUNCATE fires no row triggers,
    so the append-only audit table can be reset).
    """
    from sqlalchemy import text

    from deid_core.store import open_store
    from deid_core.store.models import Base

    kind, handle = _migrated_store
    if kind == "sqlite":
        copy = tmp_path / "store.db"
        shutil.copyfile(handle, copy)
        engine = open_store(f"sqlite:///{copy}")
        try:
            yield engine
        finally:
            engine.dispose()
        return
    try:
        yield handle
    finally:
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        with handle.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
