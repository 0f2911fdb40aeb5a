"""Alembic environment for deid-workbench.

Run programmatically by ``deid_core.store.engine.upgrade_schema`` (which passes
its own connection), or from the command line with
``alembic -c db/alembic.ini upgrade head`` (URL from ``DEID_DATABASE_URL``,
the config file, or the default per-user SQLite file).
"""

from __future__ import annotations

from alembic import context

from deid_core.store.engine import create_store_engine
from deid_core.store.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_migrations_offline() -> None:
    from deid_core.store.config import database_url

    context.configure(
        url=config.get_main_option("sqlalchemy.url") or database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_store_engine(config.get_main_option("sqlalchemy.url") or None)
    with engine.connect().execution_options(deid_write=True) as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
        conn.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
