"""Alembic migrations: up from empty matches the models, down and up again, idempotent start."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from deid_core.errors import StoreError
from deid_core.store.engine import (
    alembic_config,
    create_store_engine,
    current_revision,
    head_revision,
    migrations_dir,
    upgrade_schema,
)
from deid_core.store.models import Base


def _diff(engine) -> list:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(ctx, Base.metadata)


def test_upgrade_from_empty_matches_models(db_url: str) -> None:
    engine = create_store_engine(db_url)
    try:
        assert current_revision(engine) is None
        assert inspect(engine).get_table_names() == []
        upgrade_schema(engine)
        assert current_revision(engine) == head_revision()
        tables = set(inspect(engine).get_table_names())
        assert tables == set(Base.metadata.tables) | {"alembic_version"}
        assert _diff(engine) == []
        upgrade_schema(engine)  # a second start is a no-op
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_downgrade_to_base_and_up_again(db_url: str) -> None:
    engine = create_store_engine(db_url)
    try:
        upgrade_schema(engine)
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade_schema(engine)
        assert _diff(engine) == []
    finally:
        engine.dispose()


def test_migrations_dir_found_and_overridable(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert (migrations_dir() / "env.py").is_file()
    monkeypatch.setenv("DEID_MIGRATIONS_DIR", str(tmp_path))
    # An override without env.py falls back to the checkout's db/ ...
    assert migrations_dir().name == "db"
    monkeypatch.setattr("deid_core.store.engine.Path.is_file", lambda self: False)
    with pytest.raises(StoreError, match="cannot find the Alembic migrations"):
        migrations_dir()
