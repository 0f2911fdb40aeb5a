"""hardening: store settings, sign-in attempts, import batch status

Revision ID: 0003_17
Revises: 0002
Create Date: 2026-11-24 02:40:00

``store_settings`` holds store-wide values such as the fingerprint of the
local administrators' secret (never the secret). ``login_attempts`` feeds
sign-in throttling: username, client, outcome and time; never a password.
``import_batches.status`` (``importing`` / ``complete``) hides the notes of an
unfinished SQLite import, which commits in chunks; ``owner`` (host-pid) lets
cleanup remove the batch of a killed import.
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003_17'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('store_settings',
    sa.Column('key', sa.String(length=100), nullable=False),
    sa.Column('value', sa.JSON(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_store_settings'))
    )
    op.create_table('login_attempts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('username', sa.String(length=100), nullable=False),
    sa.Column('client', sa.String(length=100), nullable=False),
    sa.Column('success', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_login_attempts'))
    )
    op.create_index('ix_login_attempts_username_at', 'login_attempts', ['username', 'at'])
    op.create_index('ix_login_attempts_client_at', 'login_attempts', ['client', 'at'])
    with op.batch_alter_table('import_batches') as batch_op:
        batch_op.add_column(sa.Column('status', sa.String(length=20), nullable=False,
                                      server_default='complete'))
        batch_op.add_column(sa.Column('owner', sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('import_batches') as batch_op:
        batch_op.drop_column('owner')
        batch_op.drop_column('status')
    op.drop_index('ix_login_attempts_client_at', table_name='login_attempts')
    op.drop_index('ix_login_attempts_username_at', table_name='login_attempts')
    op.drop_table('login_attempts')
    op.drop_table('store_settings')
