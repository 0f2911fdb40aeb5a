"""surrogate mappings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 12:00:00

The export's consistency mapping: HMAC key of an original -> the surrogate
used, per project. The original value is never stored.
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('surrogate_mappings',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('scope', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=50), nullable=False),
    sa.Column('label', sa.String(length=100), nullable=False),
    sa.Column('surrogate', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_surrogate_mappings_project_id_projects'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_surrogate_mappings')),
    sa.UniqueConstraint('project_id', 'key', name='uq_surrogate_mappings_project_key')
    )


def downgrade() -> None:
    op.drop_table('surrogate_mappings')
