"""The annotation store: SQLite by default, PostgreSQL for teams, Alembic migrations.

Open a store with ``open_store()`` (URL from ``DEID_DATABASE_URL``, the config
file, or a per-user SQLite file; the schema is upgraded on open), then call the
functions of ``repository``, ``users``, ``audit`` and ``importers``. They take
the engine and return ``Span``/``Document`` and small frozen dataclasses; ORM
objects never leave the package. See docs/store.md.
"""

from __future__ import annotations

from deid_core.store.engine import create_store_engine, open_store, upgrade_schema
from deid_core.store.repository import (
    DocumentLayers,
    ImportResult,
    ModelVersionInfo,
    PredictionInput,
    ProjectInfo,
    QueueRow,
    ReviewConflict,
    ReviewSaved,
)

__all__ = [
    "DocumentLayers",
    "ImportResult",
    "ModelVersionInfo",
    "PredictionInput",
    "ProjectInfo",
    "QueueRow",
    "ReviewConflict",
    "ReviewSaved",
    "create_store_engine",
    "open_store",
    "upgrade_schema",
]
