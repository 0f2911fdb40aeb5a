"""Alembic migrations: up from empty matches the models, down and up again, idempotent start."""

from __future__ import annotations

import json

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

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


def test_0004_fills_logprob_span_from_the_latest_prediction(db_url: str) -> None:
    # A store at 0003 with two predictions of one note (the latest has 3 spans) and
    # one note never predicted: after 0004 the first scores log P / (1 + 3), the other stays empty.
    engine = create_store_engine(db_url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0003_17")
        span = {"start": 0, "end": 1, "label": "NAME", "source": "crf:m", "score": 1.0}
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO projects (id, name, lang, scheme, settings, created_at) "
                              "VALUES (1, 'p', 'en', 'i2b2_2014', '{}', CURRENT_TIMESTAMP)"))
            for doc_id, logprob in ((1, -8.0), (2, None)):
                conn.execute(text(
                    "INSERT INTO documents (id, project_id, external_id, text, sha256, n_chars, meta, status,"
                    " version, created_at, updated_at, logprob) VALUES (:i, 1, :e, 'x', :h, 1, '{}', 'new', 0,"
                    " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, :lp)"), {"i": doc_id, "e": f"n{doc_id}",
                                                                     "h": str(doc_id) * 64, "lp": logprob})
            for pid, spans in ((1, [span]), (2, [span] * 3)):
                conn.execute(text(
                    "INSERT INTO predictions (id, document_id, model_version, spans, logprob, bias, created_at)"
                    " VALUES (:p, 1, 'm', :s, -8.0, 0.0, CURRENT_TIMESTAMP)"),
                    {"p": pid, "s": json.dumps(spans)})
        upgrade_schema(engine)
        with engine.connect() as conn:
            got = dict(conn.execute(text("SELECT id, logprob_span FROM documents ORDER BY id")).all())
        assert got == {1: pytest.approx(-2.0), 2: None}
    finally:
        engine.dispose()
